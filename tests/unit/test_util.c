/* Unit tests for util.c: quantities, rank sets, arena, string builder, and
 * report.c's redaction (pure string functions). */
#include <stdlib.h>

#include "check.h"
#include "ddx/report.h"
#include "ddx/util.h"

static void test_quantity(void) {
  double v;
  CHECK(ddx_parse_quantity("3.91 GiB", &v) && v > 4.19e9 && v < 4.2e9);
  CHECK(ddx_parse_quantity("991.56 MiB", &v) && v > 1.0397e9 && v < 1.0398e9);
  CHECK(ddx_parse_quantity("607.00 KiB", &v) && v == 607.0 * 1024);
  CHECK(ddx_parse_quantity("0 bytes", &v) && v == 0);
  CHECK(ddx_parse_quantity("2 GB", &v) && v == 2e9);
  CHECK(ddx_parse_quantity("42", &v) && v == 42);
  CHECK(!ddx_parse_quantity("GiB", &v));
  CHECK(!ddx_parse_quantity("", &v));
}

static void test_rankset(void) {
  ddx_rankset_t s = {0};
  int in[] = {7, 0, 3, 1, 2, 3, 9, 10, 11, 5};
  for (size_t i = 0; i < sizeof in / sizeof *in; i++)
    ddx_rankset_add(&s, in[i]);
  CHECK_EQ_INT(s.n, 9);
  CHECK(ddx_rankset_has(&s, 10) && !ddx_rankset_has(&s, 4));
  char buf[64];
  ddx_rankset_format(&s, buf, sizeof buf);
  CHECK_EQ_STR(buf, "0-3,5,7,9-11");
  char tiny[8];
  ddx_rankset_format(&s, tiny, sizeof tiny);
  CHECK(strlen(tiny) < sizeof tiny);
  ddx_rankset_free(&s);
  ddx_rankset_t big = {0};
  for (int r = 0; r < 1024; r++)
    if (r != 7) ddx_rankset_add(&big, r);
  ddx_rankset_format(&big, buf, sizeof buf);
  CHECK_EQ_STR(buf, "0-6,8-1023");
  ddx_rankset_free(&big);
}

static void test_arena_and_sb(void) {
  ddx_arena_t a;
  ddx_arena_init(&a);
  char *first = ddx_arena_strdup(&a, "hello");
  for (int i = 0; i < 10000; i++)
    CHECK(ddx_arena_alloc(&a, 100) != NULL);
  CHECK_EQ_STR(first, "hello");
  ddx_arena_free(&a);
  ddx_sb_t b;
  ddx_sb_init(&b);
  for (int i = 0; i < 1000; i++)
    ddx_sb_printf(&b, "%d,", i);
  char *s = ddx_sb_take(&b);
  CHECK(s && !strncmp(s, "0,1,2,", 6) && strlen(s) == 3890);
  free(s);
}

static void test_redact(void) {
  const char *hosts[] = {"gpu-node-07"};
  char *r = ddx_redact(
      "File \"/home/alice/proj/x.py\" on gpu-node-07 from 10.1.2.3 by bob@login1 v1.2.3.4.5", hosts,
      1);
  CHECK(r && !strstr(r, "alice") && !strstr(r, "gpu-node-07") && !strstr(r, "10.1.2.3") &&
        !strstr(r, "bob"));
  CHECK(r && strstr(r, "/home/USER/proj/x.py") && strstr(r, "host-1") && strstr(r, "x.x.x.x"));
  free(r);
  r = ddx_redact("version 2.18.1 and NCCL 2.21.5+cuda12.4", NULL, 0);
  CHECK_EQ_STR(r, "version 2.18.1 and NCCL 2.21.5+cuda12.4");
  free(r);
}

int main(void) {
  test_quantity();
  test_rankset();
  test_arena_and_sb();
  test_redact();
  CHECK_DONE();
}
