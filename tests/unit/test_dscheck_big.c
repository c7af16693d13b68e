/* Tests for dscheck.c on big documents: a JSON object with 150,000 members
 * (a tokenizer's vocab.json has 50,000) is checked with the exact findings
 * of a small one. No timing is asserted; checking each member against the
 * members before it (duplicate keys) or walking the object for every
 * member (is the suggested key there already?) made these take minutes.
 * Run from the repository root. */
#include <stdlib.h>

#include "check.h"
#include "ddx/dscheck.h"
#include "ddx/dsconfig.h"

static ddx_dscheck_t *S;

static ddx_dscheck_result_t run(const char *text, size_t len) {
  ddx_dscheck_result_t r;
  ddx_error_t err = {0};
  int rc = ddx_dscheck_run(S, text, len, NULL, &r, &err);
  if (rc) fprintf(stderr, "unexpected refusal: %s\n", err.msg);
  CHECK_EQ_INT(rc, 0);
  return r;
}

static char *span(const char *text, const ddx_dscheck_finding_t *f) {
  size_t n = f->end - f->start;
  char *s = malloc(n + 1);
  memcpy(s, text + f->start, n);
  s[n] = 0;
  return s;
}

/* optimizer.params lets unknown keys through, so duplicates are the only
 * findings: the second and later occurrence of each key, in text order. */
static void test_duplicates(void) {
  enum { N = 150000 };
  ddx_sb_t b;
  ddx_sb_init(&b);
  ddx_sb_puts(&b, "{\"train_micro_batch_size_per_gpu\": 1,\n \"optimizer\": {\"type\": \"AdamW\", "
                  "\"params\": {\"lr\": 0.001");
  size_t at[3];
  for (int i = 0; i < N; i++) {
    ddx_sb_printf(&b, ", \"param_%06d\": %d", i, i);
    if (i == N / 2) { /* param_000007 again, in the middle */
      ddx_sb_puts(&b, ", ");
      at[0] = b.len;
      ddx_sb_puts(&b, "\"param_000007\": 0");
    }
  }
  ddx_sb_puts(&b, ",\n ");
  at[1] = b.len;
  ddx_sb_puts(&b, "\"lr\": 0.002, ");
  at[2] = b.len;
  ddx_sb_puts(&b, "\"param_000007\": 1}}}\n");
  ddx_dscheck_result_t r = run(b.s, b.len);
  CHECK(r.is_deepspeed);
  CHECK_EQ_INT(r.n, 3);
  static const char *const key[] = {"param_000007", "lr", "param_000007"};
  for (size_t i = 0; i < 3 && i < r.n; i++) {
    const ddx_dscheck_finding_t *f = &r.findings[i];
    char path[64], msg[160], quoted[32];
    snprintf(path, sizeof path, "optimizer.params.%s", key[i]);
    snprintf(msg, sizeof msg, "duplicate key `%s`: DeepSpeed refuses a config with duplicate keys",
             path);
    snprintf(quoted, sizeof quoted, "\"%s\"", key[i]);
    CHECK_EQ_STR(f->code, "ds-config.duplicate-key");
    CHECK_EQ_INT(f->severity, DDX_DSCHECK_ERROR);
    CHECK_EQ_STR(f->path, path);
    CHECK_EQ_STR(f->message, msg);
    CHECK_EQ_INT(f->start, at[i]);
    char *s = span(b.s, f);
    CHECK_EQ_STR(s, quoted);
    free(s);
    CHECK(f->patch_json == NULL);
  }
  ddx_dscheck_result_free(&r);
  /* the quick-fix reader refuses the same text at the first duplicate */
  ddx_dsconfig_t *c = NULL;
  ddx_error_t err = {0};
  CHECK_EQ_INT(ddx_dsconfig_parse(&c, b.s, b.len, &err), DDX_EINVAL);
  CHECK(strstr(err.msg, "duplicate key \"param_000007\" (also at line 2)") != NULL);
  ddx_sb_free(&b);
}

/* 50,000 top-level keys that all look like a misspelt train_batch_size: a
 * warning each, with the rename, since train_batch_size is not there; once
 * it is (last), the renames go and only the warnings stay. */
static void test_near_misses(void) {
  enum { N = 50000 };
  for (int with_key = 0; with_key < 2; with_key++) {
    ddx_sb_t b;
    ddx_sb_init(&b);
    ddx_sb_puts(&b, "{\"train_micro_batch_size_per_gpu\": 1");
    for (int i = 0; i < N; i++)
      ddx_sb_printf(&b, ",\n\"train_batch_size%c%c%c%c\": 1", 'a' + i % 26, 'a' + i / 26 % 26,
                    'a' + i / 676 % 26, 'a' + i / 17576 % 26);
    if (with_key) ddx_sb_puts(&b, ",\n\"train_batch_size\": 1");
    ddx_sb_puts(&b, "}\n");
    ddx_dscheck_result_t r = run(b.s, b.len);
    CHECK_EQ_INT(r.n, N);
    size_t renames = 0, hints = 0;
    for (size_t i = 0; i < r.n; i++) {
      renames += r.findings[i].patch_json != NULL;
      hints += strstr(r.findings[i].message, "did you mean `train_batch_size`?") != NULL;
    }
    CHECK_EQ_INT(renames, with_key ? 0 : N);
    CHECK_EQ_INT(hints, with_key ? 0 : N);
    if (r.n == N) {
      const ddx_dscheck_finding_t *f = &r.findings[N - 1];
      CHECK_EQ_STR(f->code, "ds-config.ignored-key");
      CHECK_EQ_STR(f->path, "train_batch_sizebzvc");
      CHECK_EQ_STR(f->message,
                   with_key ? "`train_batch_sizebzvc` is not a DeepSpeed key: DeepSpeed silently "
                              "ignores it"
                            : "`train_batch_sizebzvc` is not a DeepSpeed key: DeepSpeed silently "
                              "ignores it; did you mean `train_batch_size`?");
      if (with_key)
        CHECK(f->patch_json == NULL);
      else
        CHECK_EQ_STR(f->patch_json,
                     "{\"id\":\"rename-key\",\"title\":\"Rename `train_batch_sizebzvc` to "
                     "`train_batch_size`\",\"ops\":[{\"op\":\"rename\",\"path\":\"train_"
                     "batch_sizebzvc\",\"to\":\"train_batch_size\"}]}");
    }
    ddx_dscheck_result_free(&r);
    ddx_sb_free(&b);
  }
}

int main(void) {
  ddx_error_t err = {0};
  if (ddx_dscheck_load(&S, "rules/ds_config.schema.json", &err)) {
    fprintf(stderr, "%s\n", err.msg);
    return 1;
  }
  test_duplicates();
  test_near_misses();
  ddx_dscheck_free(S);
  CHECK_DONE();
}
