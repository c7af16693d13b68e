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

  /* Random literal sets (every length class: short pairs, the strided
   * windows, 8-byte heads, longer tails) on random text over their own
   * alphabet, at every buffer length and alignment up to 300 bytes: each
   * occurrence exactly once, as the naive oracle finds them. */
  srand(11);
  for (int round = 0; round < 200; round++) {
    ddx_prefilter_t *q = ddx_prefilter_new();
    const char *abc = round % 2 ? "ab" : "abc%|d";
    size_t na = strlen(abc), nq = 1 + (size_t)(rand() % 40);
    char qs[40][24];
    for (size_t i = 0; i < nq; i++) {
      size_t l = 2 + (size_t)(rand() % 20);
      for (size_t k = 0; k < l; k++)
        qs[i][k] = abc[rand() % na];
      qs[i][l] = 0;
      CHECK_EQ_INT(ddx_prefilter_add(q, qs[i], l), i);
    }
    CHECK_EQ_INT(ddx_prefilter_build(q), 0);
    char hay[320];
    size_t hn = (size_t)(rand() % 300);
    for (size_t i = 0; i < hn; i++)
      hay[i] = abc[rand() % na];
    found_t *h = calloc(1, sizeof *h);
    ddx_prefilter_scan(q, hay, hn, collect, h);
    size_t want2 = 0;
    for (size_t i = 0; i < nq; i++)
      want2 += naive_count(hay, hn, qs[i]);
    CHECK_EQ_INT(h->n, want2);
    /* each report is a real, distinct occurrence */
    for (size_t k = 0; k < h->n; k++) {
      CHECK(h->pos[k] + strlen(qs[h->ids[k]]) <= hn);
      CHECK(!memcmp(hay + h->pos[k], qs[h->ids[k]], strlen(qs[h->ids[k]])));
      for (size_t z = 0; z < k; z++)
        CHECK(h->ids[z] != h->ids[k] || h->pos[z] != h->pos[k]);
    }
    free(h);
    ddx_prefilter_free(q);
  }

  /* Literals at the very start and end of the buffer. */
  found_t e = {0};
  ddx_prefilter_scan(pf, "SIGTERM", 7, collect, &e);
  CHECK_EQ_INT(e.n, 1);
  CHECK(ddx_prefilter_literal_cost("ab", 2) > ddx_prefilter_literal_cost("ChildFailedError", 16));
  ddx_prefilter_free(pf);
  CHECK_DONE();
}
