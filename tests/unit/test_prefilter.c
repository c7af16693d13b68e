/* Unit tests for the literal prefilter against a naive memmem oracle. */
#include <stdlib.h>

#include "check.h"
#include "ddx/prefilter.h"

typedef struct found {
  size_t n;
  uint32_t ids[4096];
  size_t pos[4096];
} found_t;

static int collect(void *ctx, uint32_t id, size_t pos) {
  found_t *f = ctx;
  if (f->n < 4096) {
    f->ids[f->n] = id;
    f->pos[f->n] = pos;
    f->n++;
  }
  return 0;
}

static size_t naive_count(const char *hay, size_t n, const char *lit) {
  size_t c = 0, l = strlen(lit);
  for (size_t i = 0; i + l <= n; i++)
    if (!memcmp(hay + i, lit, l)) c++;
  return c;
}

int main(void) {
  const char *lits[] = {
      "CUDA out of memory", "Watchdog caught", "SIGTERM", "exitcode", "ab", "aaa", "Error:"};
  const size_t nl = sizeof lits / sizeof *lits;
  ddx_prefilter_t *pf = ddx_prefilter_new();
  for (size_t i = 0; i < nl; i++)
    CHECK_EQ_INT(ddx_prefilter_add(pf, lits[i], strlen(lits[i])), i);
  CHECK_EQ_INT(ddx_prefilter_add(pf, "x", 1), -1); /* too short */
  CHECK_EQ_INT(ddx_prefilter_build(pf), 0);

  const char *text = "torch.OutOfMemoryError: CUDA out of memory. Tried\n"
                     "[Rank 3] Watchdog caught collective operation timeout\rSIGTERM SIGTERM\n"
                     "aaaaab exitcode: -9 RuntimeError: CUDA out of memory";
  size_t n = strlen(text);
  found_t f = {0};
  ddx_prefilter_scan(pf, text, n, collect, &f);
  for (size_t i = 0; i < nl; i++) {
    size_t got = 0;
    for (size_t k = 0; k < f.n; k++)
      if (f.ids[k] == i) {
        got++;
        CHECK(!memcmp(text + f.pos[k], lits[i], strlen(lits[i])));
      }
    CHECK_EQ_INT(got, naive_count(text, n, lits[i]));
  }

  /* Random text over a small alphabet: every occurrence, no more. */
  srand(7);
  char *rnd = malloc(200000);
  const char alpha[] = "abSIGTERMxe :\n";
  for (size_t i = 0; i < 200000; i++)
    rnd[i] = alpha[rand() % (sizeof alpha - 1)];
  found_t *g = calloc(1, sizeof *g);
  ddx_prefilter_scan(pf, rnd, 200000, collect, g);
  size_t want = 0;
  for (size_t i = 0; i < nl; i++)
    want += naive_count(rnd, 200000, lits[i]);
  CHECK_EQ_INT(g->n, want > 4096 ? 4096 : want);
  free(g);
  free(rnd);

  /* Literals at the very start and end of the buffer. */
  found_t e = {0};
  ddx_prefilter_scan(pf, "SIGTERM", 7, collect, &e);
  CHECK_EQ_INT(e.n, 1);
  CHECK(ddx_prefilter_literal_cost("ab", 2) > ddx_prefilter_literal_cost("ChildFailedError", 16));
  ddx_prefilter_free(pf);
  CHECK_DONE();
}
