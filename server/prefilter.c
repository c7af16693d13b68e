/* prefilter.c - literal prefilter (see ddx/prefilter.h).
 *
 * Long literals (7+ bytes) are found with a strided hash filter: each is
 * indexed by STRIDE consecutive 4-byte windows (the run of its rarest byte
 * pairs), so that whatever its alignment one of them starts at a multiple
 * of STRIDE. The scan therefore hashes only every STRIDE-th 4-byte window
 * of the buffer and tests one bit of a 32 KiB bitmap that stays in L1;
 * only on a set bit does it walk the bucket, compare the window word, then
 * the literal's first 8 bytes as one masked word, then the rest.
 * Short literals (2-6 bytes) are few; a second pass finds the byte pair
 * each is indexed by, 16 bytes at a time with SSE2 when there are at most
 * SHORT_SIMD_PAIRS distinct pairs, else with a 64 Kibit pair bitmap.
 * Memory is fixed and nothing is allocated while scanning. */
#include "ddx/prefilter.h"

#include "bigrams.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#define HASH_BITS 18
#define HASH_SIZE (1u << HASH_BITS)

#define STRIDE 4                  /* bytes between tested windows */
#define LONG_MIN (4 + STRIDE - 1) /* shortest literal with STRIDE windows */
#define SHORT_SIMD_PAIRS 16       /* most distinct short-literal pairs for SSE2 */

typedef struct pf_lit {
  const char *bytes; /* owned copy */
  uint32_t len;
  uint32_t anchor;     /* long: first of the STRIDE windows; short: the pair */
  uint64_t head, mask; /* the first min(len, 8) bytes, as a masked word */
  int32_t next;        /* short literals: next with the same pair, -1 ends */
} pf_lit_t;

/* One indexed window of a long literal. */
typedef struct pf_entry {
  uint32_t word; /* the 4 window bytes */
  uint32_t off;  /* offset of the window inside the literal */
  uint32_t lit;
  int32_t next; /* next entry in the same bucket, -1 ends */
} pf_entry_t;

struct ddx_prefilter {
  pf_lit_t *lits;
  size_t n, cap;
  pf_entry_t *entries; /* STRIDE per long literal */
  size_t nentries;
  int32_t *bucket;                 /* HASH_SIZE heads, -1 empty */
  uint64_t bitmap[HASH_SIZE / 64]; /* hash present */
  int32_t *pair_bucket;            /* 65536 heads (short literals) */
  uint64_t pair_bitmap[1024];
  uint16_t pairs[SHORT_SIMD_PAIRS]; /* distinct short pairs, when few */
  size_t npairs;                    /* 0: none; > SHORT_SIMD_PAIRS: bitmap pass */
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
  free(pf->entries);
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
  if (!pf->freq) {
    pf->freq = malloc(sizeof *pf->freq);
    if (!pf->freq) {
      free(copy);
      return -1;
    }
    pf_pairfreq_init(pf->freq);
  }
  /* The anchor: for a long literal the run of STRIDE windows of 4 bytes,
   * for a short one the byte pair, made of the rarest byte pairs (by real
   * log frequencies) so that it occurs least often. */
  const unsigned char *u = (const unsigned char *)lit;
  bool is_long = len >= LONG_MIN;
  size_t span = is_long ? 4 + STRIDE - 1 : 2;
  uint32_t anchor = 0;
  unsigned best = ~0u;
  for (size_t i = 0; i + span <= len; i++) {
    unsigned c = 0;
    if (is_long)
      for (size_t k = 0; k < STRIDE; k++)
        c += pf_window_cost(pf->freq, u + i + k, 4);
    else
      c = pf_window_cost(pf->freq, u + i, 2);
    if (c < best) {
      best = c;
      anchor = (uint32_t)i;
    }
  }
  pf_lit_t *l = &pf->lits[pf->n];
  *l = (pf_lit_t){copy, (uint32_t)len, anchor, 0, 0, -1};
  size_t hn = len < 8 ? len : 8;
  for (size_t k = 0; k < hn; k++) {
    l->head |= (uint64_t)u[k] << (8 * k);
    l->mask |= (uint64_t)0xff << (8 * k);
  }
  return (int32_t)pf->n++;
}

/* Re-anchors the short literals on as few byte pairs as it can (greedy
 * set cover: the pair in most uncovered literals first, the rarer on a
 * tie), so that the SSE2 pass compares few pairs: every tqdm bar literal
 * starts with "%|". */
static int pf_cover_short(ddx_prefilter_t *pf) {
  size_t nshort = 0;
  for (size_t k = 0; k < pf->n; k++)
    nshort += pf->lits[k].len < LONG_MIN;
  if (!nshort) return 0;
  bool *done = calloc(pf->n, sizeof *done);
  uint16_t *count = calloc(65536, sizeof *count);
  if (!done || !count) {
    free(done);
    free(count);
    return -1;
  }
  for (size_t left = nshort; left;) {
    memset(count, 0, 65536 * sizeof *count);
    for (size_t k = 0; k < pf->n; k++) {
      const pf_lit_t *l = &pf->lits[k];
      if (l->len >= LONG_MIN || done[k]) continue;
      const unsigned char *u = (const unsigned char *)l->bytes;
      for (uint32_t a = 0; a + 2 <= l->len; a++) {
        unsigned q = u[a] | ((unsigned)u[a + 1] << 8);
        bool again = false; /* count a pair once per literal */
        for (uint32_t z = 0; z < a && !again; z++)
          again = (u[z] | ((unsigned)u[z + 1] << 8)) == q;
        if (!again && count[q] < UINT16_MAX) count[q]++;
      }
    }
    unsigned best = 0;
    for (unsigned q = 1; q < 65536; q++)
      if (count[q] > count[best] ||
          (count[q] == count[best] && count[q] &&
           pf->freq->score[q & 0xff][q >> 8] < pf->freq->score[best & 0xff][best >> 8]))
        best = q;
    for (size_t k = 0; k < pf->n; k++) {
      pf_lit_t *l = &pf->lits[k];
      if (l->len >= LONG_MIN || done[k]) continue;
      const unsigned char *u = (const unsigned char *)l->bytes;
      for (uint32_t a = 0; a + 2 <= l->len; a++)
        if ((u[a] | ((unsigned)u[a + 1] << 8)) == best) {
          l->anchor = a;
          done[k] = true;
          left--;
          break;
        }
    }
  }
  free(done);
  free(count);
  return 0;
}

int ddx_prefilter_build(ddx_prefilter_t *pf) {
  size_t nlong = 0;
  for (size_t k = 0; k < pf->n; k++)
    nlong += pf->lits[k].len >= LONG_MIN;
  pf->bucket = malloc(HASH_SIZE * sizeof *pf->bucket);
  pf->pair_bucket = malloc(65536 * sizeof *pf->pair_bucket);
  pf->entries = malloc((nlong ? nlong : 1) * STRIDE * sizeof *pf->entries);
  if (!pf->bucket || !pf->pair_bucket || !pf->entries) return -1;
  for (size_t i = 0; i < HASH_SIZE; i++)
    pf->bucket[i] = -1;
  for (size_t i = 0; i < 65536; i++)
    pf->pair_bucket[i] = -1;
  memset(pf->bitmap, 0, sizeof pf->bitmap);
  memset(pf->pair_bitmap, 0, sizeof pf->pair_bitmap);
  pf->nentries = 0;
  pf->npairs = 0;
  if (pf_cover_short(pf)) return -1;
  /* Insert in reverse so that each bucket lists literals in id order. */
  for (size_t k = pf->n; k-- > 0;) {
    pf_lit_t *l = &pf->lits[k];
    const unsigned char *u = (const unsigned char *)l->bytes;
    if (l->len >= LONG_MIN) {
      for (size_t w = STRIDE; w-- > 0;) {
        pf_entry_t *e = &pf->entries[pf->nentries];
        e->off = l->anchor + (uint32_t)w;
        e->word = load32(u + e->off);
        e->lit = (uint32_t)k;
        uint32_t h = hash32(e->word);
        e->next = pf->bucket[h];
        pf->bucket[h] = (int32_t)pf->nentries++;
        pf->bitmap[h >> 6] |= 1ull << (h & 63);
      }
    } else {
      unsigned pair = u[l->anchor] | ((unsigned)u[l->anchor + 1] << 8);
      if (!(pf->pair_bitmap[pair >> 6] & (1ull << (pair & 63)))) {
        if (pf->npairs < SHORT_SIMD_PAIRS) pf->pairs[pf->npairs] = (uint16_t)pair;
        pf->npairs++;
      }
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

/* Whether lit occurs at b[start..) (start + len <= n checked here). */
static inline bool pf_equal(const pf_lit_t *l, const unsigned char *b, size_t n, size_t start) {
  if (start + l->len > n) return false;
  if (start + 8 <= n) {
    uint64_t v;
    memcpy(&v, b + start, 8);
    if ((v & l->mask) != l->head) return false;
    return l->len <= 8 || memcmp(b + start + 8, l->bytes + 8, l->len - 8) == 0;
  }
  return memcmp(b + start, l->bytes, l->len) == 0;
}

/* Verifies the entries of one bucket whose window starts at i. */
static inline int pf_check(const ddx_prefilter_t *pf, int32_t e, const unsigned char *b, size_t n,
                           size_t i, uint32_t word, ddx_prefilter_hit_cb cb, void *ctx) {
  for (; e >= 0; e = pf->entries[e].next) {
    const pf_entry_t *en = &pf->entries[e];
    if (en->word != word || i < en->off) continue;
    size_t start = i - en->off;
    if (!pf_equal(&pf->lits[en->lit], b, n, start)) continue;
    int rc = cb(ctx, en->lit, start);
    if (rc) return rc;
  }
  return 0;
}

/* Verifies the short literals indexed by the byte pair at i. */
static inline int pf_check_short(const ddx_prefilter_t *pf, const unsigned char *b, size_t n,
                                 size_t i, ddx_prefilter_hit_cb cb, void *ctx) {
  unsigned pair = b[i] | ((unsigned)b[i + 1] << 8);
  for (int32_t k = pf->pair_bucket[pair]; k >= 0; k = pf->lits[k].next) {
    const pf_lit_t *l = &pf->lits[k];
    if (i < l->anchor || !pf_equal(l, b, n, i - l->anchor)) continue;
    int rc = cb(ctx, (uint32_t)k, i - l->anchor);
    if (rc) return rc;
  }
  return 0;
}

static int pf_scan_short(const ddx_prefilter_t *pf, const unsigned char *b, size_t n,
                         ddx_prefilter_hit_cb cb, void *ctx) {
  size_t i = 0;
  int rc;
#if defined(__SSE2__)
  if (pf->npairs <= SHORT_SIMD_PAIRS) {
    /* Compare 16 positions with every pair at once; only a match costs. */
    __m128i c0[SHORT_SIMD_PAIRS], c1[SHORT_SIMD_PAIRS];
    for (size_t p = 0; p < pf->npairs; p++) {
      c0[p] = _mm_set1_epi8((char)(pf->pairs[p] & 0xff));
      c1[p] = _mm_set1_epi8((char)(pf->pairs[p] >> 8));
    }
    for (; i + 17 <= n; i += 16) {
      __m128i v0 = _mm_loadu_si128((const __m128i *)(b + i));
      __m128i v1 = _mm_loadu_si128((const __m128i *)(b + i + 1));
      __m128i m = _mm_setzero_si128();
      for (size_t p = 0; p < pf->npairs; p++)
        m = _mm_or_si128(m, _mm_and_si128(_mm_cmpeq_epi8(v0, c0[p]), _mm_cmpeq_epi8(v1, c1[p])));
      unsigned bits = (unsigned)_mm_movemask_epi8(m);
      while (bits) {
        unsigned k = (unsigned)__builtin_ctz(bits);
        bits &= bits - 1;
        if ((rc = pf_check_short(pf, b, n, i + k, cb, ctx))) return rc;
      }
    }
  }
#endif
  for (; i + 1 < n; i++) {
    unsigned pair = b[i] | ((unsigned)b[i + 1] << 8);
    if (!(pf->pair_bitmap[pair >> 6] & (1ull << (pair & 63)))) continue;
    if ((rc = pf_check_short(pf, b, n, i, cb, ctx))) return rc;
  }
  return 0;
}

int ddx_prefilter_scan(const ddx_prefilter_t *pf, const char *buf, size_t len,
                       ddx_prefilter_hit_cb cb, void *ctx) {
  if (!pf->built || len < 2) return 0;
  const unsigned char *b = (const unsigned char *)buf;
  const uint64_t *bm = pf->bitmap;
  int rc;
  if (len >= 4 && pf->nentries) {
    size_t last = len - 4, i = 0;
    /* Four tested windows per step; their bitmap tests are independent. */
    for (; i + 3 * STRIDE <= last; i += 4 * STRIDE) {
      uint32_t w0 = load32(b + i), w1 = load32(b + i + STRIDE), w2 = load32(b + i + 2 * STRIDE),
               w3 = load32(b + i + 3 * STRIDE);
      uint32_t h0 = hash32(w0), h1 = hash32(w1), h2 = hash32(w2), h3 = hash32(w3);
      uint64_t t0 = bm[h0 >> 6] >> (h0 & 63), t1 = bm[h1 >> 6] >> (h1 & 63),
               t2 = bm[h2 >> 6] >> (h2 & 63), t3 = bm[h3 >> 6] >> (h3 & 63);
      if (!((t0 | t1 | t2 | t3) & 1)) continue;
      if ((t0 & 1) && (rc = pf_check(pf, pf->bucket[h0], b, len, i, w0, cb, ctx))) return rc;
      if ((t1 & 1) && (rc = pf_check(pf, pf->bucket[h1], b, len, i + STRIDE, w1, cb, ctx)))
        return rc;
      if ((t2 & 1) && (rc = pf_check(pf, pf->bucket[h2], b, len, i + 2 * STRIDE, w2, cb, ctx)))
        return rc;
      if ((t3 & 1) && (rc = pf_check(pf, pf->bucket[h3], b, len, i + 3 * STRIDE, w3, cb, ctx)))
        return rc;
    }
    for (; i <= last; i += STRIDE) {
      uint32_t w = load32(b + i), h = hash32(w);
      if ((bm[h >> 6] >> (h & 63)) & 1 && (rc = pf_check(pf, pf->bucket[h], b, len, i, w, cb, ctx)))
        return rc;
    }
  }
  return pf->npairs ? pf_scan_short(pf, b, len, cb, ctx) : 0;
}
