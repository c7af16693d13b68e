/* prefilter.c - literal prefilter (see ddx/prefilter.h).
 *
 * Literals of 4+ bytes are indexed by a hash of their rarest 4-byte window
 * (the "anchor"): the scan hashes every 4-byte window of the buffer and
 * tests one bit of a 32 KiB bitmap that stays in L1; only on a set bit does
 * it walk the bucket and compare the anchor word, then the whole literal.
 * Literals of 2-3 bytes use a byte-pair bitmap in a second, rarely needed
 * pass. Both keep memory fixed and do no allocation while scanning. */
#include "ddx/prefilter.h"

#include "bigrams.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#define HASH_BITS 18
#define HASH_SIZE (1u << HASH_BITS)

typedef struct pf_lit {
  const char *bytes; /* owned copy */
  uint32_t len;
  uint32_t anchor; /* offset of the indexed window inside the literal */
  uint32_t word;   /* the 4 anchor bytes (long literals) */
  int32_t next;    /* next literal in the same bucket, -1 ends */
} pf_lit_t;

struct ddx_prefilter {
  pf_lit_t *lits;
  size_t n, cap;
  int32_t *bucket;                 /* HASH_SIZE heads (long literals), -1 empty */
  uint64_t bitmap[HASH_SIZE / 64]; /* hash present */
  int32_t *pair_bucket;            /* 65536 heads (short literals) */
  uint64_t pair_bitmap[1024];
  bool has_short;
  int built;
  struct pf_pairfreq *freq; /* only while literals are added */
};

/* How common a byte pair is in real training logs: the 8-bit log score
 * from bigrams.h (generated from the corpus), 0 for pairs not listed. The
 * table is sorted by (a, b) once per prefilter, so lookups stay cheap. */
typedef struct pf_pairfreq {
  uint8_t score[256][256];
} pf_pairfreq_t;

static void pf_pairfreq_init(pf_pairfreq_t *f) {
  memset(f, 0, sizeof *f);
  for (size_t i = 0; i < sizeof ddx_bigrams / sizeof *ddx_bigrams; i++)
    f->score[ddx_bigrams[i].a][ddx_bigrams[i].b] = ddx_bigrams[i].score;
}

/* The cost of a window: the sum of its byte pairs' scores (a window of
 * common pairs, such as a lowercase word, occurs everywhere). */
static unsigned pf_window_cost(const pf_pairfreq_t *f, const unsigned char *w, size_t n) {
  unsigned c = 0;
  for (size_t i = 0; i + 1 < n; i++)
    c += f->score[w[i]][w[i + 1]];
  return c;
}

static inline uint32_t load32(const unsigned char *p) {
  uint32_t w;
  memcpy(&w, p, 4);
  return w;
}

static inline uint32_t hash32(uint32_t w) {
  return (w * 0x9E3779B1u) >> (32 - HASH_BITS);
}

double ddx_prefilter_literal_cost(const char *lit, size_t len) {
  if (len < 2) return 1e9;
  static const size_t w = 4;
  pf_pairfreq_t *f = malloc(sizeof *f);
  if (!f) return 0;
  pf_pairfreq_init(f);
  const unsigned char *u = (const unsigned char *)lit;
  unsigned best = ~0u;
  size_t win = len >= w ? w : len;
  for (size_t i = 0; i + win <= len; i++) {
    unsigned c = pf_window_cost(f, u + i, win);
    if (c < best) best = c;
  }
  free(f);
  /* Scaled so that a window of three of the most common pairs (a
   * lowercase word) costs about 10000; short literals cost more. */
  return (double)best * 13.0 * (len >= 4 ? 1.0 : 4.0);
}

ddx_prefilter_t *ddx_prefilter_new(void) {
  return calloc(1, sizeof(ddx_prefilter_t));
}

void ddx_prefilter_free(ddx_prefilter_t *pf) {
  if (!pf) return;
  for (size_t i = 0; i < pf->n; i++)
    free((void *)pf->lits[i].bytes);
  free(pf->lits);
  free(pf->bucket);
  free(pf->pair_bucket);
  free(pf->freq);
  free(pf);
}

int32_t ddx_prefilter_add(ddx_prefilter_t *pf, const char *lit, size_t len) {
  if (len < 2 || len > 4096 || pf->built) return -1;
  if (pf->n == pf->cap) {
    size_t cap = pf->cap ? pf->cap * 2 : 64;
    pf_lit_t *nl = realloc(pf->lits, cap * sizeof *nl);
    if (!nl) return -1;
    pf->lits = nl;
    pf->cap = cap;
  }
  char *copy = malloc(len);
  if (!copy) return -1;
  memcpy(copy, lit, len);
  /* The anchor: the window of 4 (or, for short literals, 2) bytes made of
   * the rarest byte pairs, so that it occurs least often in real logs. */
  if (!pf->freq) {
    pf->freq = malloc(sizeof *pf->freq);
    if (!pf->freq) {
      free(copy);
      return -1;
    }
    pf_pairfreq_init(pf->freq);
  }
  size_t w = len >= 4 ? 4 : 2;
  uint32_t anchor = 0;
  unsigned best = ~0u;
  for (size_t i = 0; i + w <= len; i++) {
    unsigned c = pf_window_cost(pf->freq, (const unsigned char *)lit + i, w);
    if (c < best) {
      best = c;
      anchor = (uint32_t)i;
    }
  }
  pf_lit_t *l = &pf->lits[pf->n];
  *l = (pf_lit_t){copy, (uint32_t)len, anchor, 0, -1};
  if (len >= 4)
    l->word = load32((const unsigned char *)copy + anchor);
  else
    pf->has_short = true;
  return (int32_t)pf->n++;
}

int ddx_prefilter_build(ddx_prefilter_t *pf) {
  pf->bucket = malloc(HASH_SIZE * sizeof *pf->bucket);
  pf->pair_bucket = malloc(65536 * sizeof *pf->pair_bucket);
  if (!pf->bucket || !pf->pair_bucket) return -1;
  for (size_t i = 0; i < HASH_SIZE; i++)
    pf->bucket[i] = -1;
  for (size_t i = 0; i < 65536; i++)
    pf->pair_bucket[i] = -1;
  memset(pf->bitmap, 0, sizeof pf->bitmap);
  memset(pf->pair_bitmap, 0, sizeof pf->pair_bitmap);
  /* Insert in reverse so that each bucket lists literals in id order. */
  for (size_t k = pf->n; k-- > 0;) {
    pf_lit_t *l = &pf->lits[k];
    if (l->len >= 4) {
      uint32_t h = hash32(l->word);
      l->next = pf->bucket[h];
      pf->bucket[h] = (int32_t)k;
      pf->bitmap[h >> 6] |= 1ull << (h & 63);
    } else {
      unsigned pair = (unsigned char)l->bytes[l->anchor] |
                      ((unsigned)(unsigned char)l->bytes[l->anchor + 1] << 8);
      l->next = pf->pair_bucket[pair];
      pf->pair_bucket[pair] = (int32_t)k;
      pf->pair_bitmap[pair >> 6] |= 1ull << (pair & 63);
    }
  }
  free(pf->freq);
  pf->freq = NULL;
  pf->built = 1;
  return 0;
}

/* Verifies the literals of one bucket whose anchor window starts at i. */
static inline int pf_check(const ddx_prefilter_t *pf, int32_t k, const unsigned char *b, size_t len,
                           size_t i, uint32_t word, ddx_prefilter_hit_cb cb, void *ctx) {
  for (; k >= 0; k = pf->lits[k].next) {
    const pf_lit_t *l = &pf->lits[k];
    if (l->word != word || i < l->anchor) continue;
    size_t start = i - l->anchor;
    if (start + l->len > len || memcmp(b + start, l->bytes, l->len) != 0) continue;
    int rc = cb(ctx, (uint32_t)k, start);
    if (rc) return rc;
  }
  return 0;
}

int ddx_prefilter_scan(const ddx_prefilter_t *pf, const char *buf, size_t len,
                       ddx_prefilter_hit_cb cb, void *ctx) {
  if (!pf->built || len < 2) return 0;
  const unsigned char *b = (const unsigned char *)buf;
  const uint64_t *bm = pf->bitmap;
  int rc;
  if (len >= 4) {
    size_t last = len - 4, i = 0;
    /* Unrolled by four: the bitmap tests are independent. */
    for (; i + 3 <= last; i += 4) {
      uint32_t w0 = load32(b + i), w1 = load32(b + i + 1), w2 = load32(b + i + 2),
               w3 = load32(b + i + 3);
      uint32_t h0 = hash32(w0), h1 = hash32(w1), h2 = hash32(w2), h3 = hash32(w3);
      uint64_t t0 = bm[h0 >> 6] >> (h0 & 63), t1 = bm[h1 >> 6] >> (h1 & 63),
               t2 = bm[h2 >> 6] >> (h2 & 63), t3 = bm[h3 >> 6] >> (h3 & 63);
      if (!((t0 | t1 | t2 | t3) & 1)) continue;
      if ((t0 & 1) && (rc = pf_check(pf, pf->bucket[h0], b, len, i, w0, cb, ctx))) return rc;
      if ((t1 & 1) && (rc = pf_check(pf, pf->bucket[h1], b, len, i + 1, w1, cb, ctx))) return rc;
      if ((t2 & 1) && (rc = pf_check(pf, pf->bucket[h2], b, len, i + 2, w2, cb, ctx))) return rc;
      if ((t3 & 1) && (rc = pf_check(pf, pf->bucket[h3], b, len, i + 3, w3, cb, ctx))) return rc;
    }
    for (; i <= last; i++) {
      uint32_t w = load32(b + i), h = hash32(w);
      if ((bm[h >> 6] >> (h & 63)) & 1 && (rc = pf_check(pf, pf->bucket[h], b, len, i, w, cb, ctx)))
        return rc;
    }
  }
  if (!pf->has_short) return 0;
  for (size_t i = 0; i + 1 < len; i++) {
    unsigned pair = b[i] | ((unsigned)b[i + 1] << 8);
    if (!(pf->pair_bitmap[pair >> 6] & (1ull << (pair & 63)))) continue;
    for (int32_t k = pf->pair_bucket[pair]; k >= 0; k = pf->lits[k].next) {
      const pf_lit_t *l = &pf->lits[k];
      if (i < l->anchor) continue;
      size_t start = i - l->anchor;
      if (start + l->len > len || memcmp(b + start, l->bytes, l->len) != 0) continue;
      if ((rc = cb(ctx, (uint32_t)k, start))) return rc;
    }
  }
  return 0;
}
