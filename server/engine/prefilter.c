/* prefilter.c - literal prefilter (see ddx/prefilter.h).
 *
 * Literals of 7+ bytes are found with a strided hash filter: each is
 * indexed by STRIDE consecutive windows (the run with fewest windows that
 * other literals share, then whose most common window is rarest by
 * real-log byte-pair frequencies), so that whatever its alignment one of
 * them starts at a multiple of STRIDE; the scan hashes only every
 * STRIDE-th position. Two levels share the pass:
 *   - wide: literals of 11+ bytes, by 8-byte windows. An 8-byte window of
 *     a literal rarely occurs in text except in the literal itself, so a
 *     set bit is nearly always a real candidate;
 *   - narrow: literals of 7-10 bytes, by 4-byte windows, with a second
 *     level of 8 bytes around the window where the literal pins them.
 * A set bit leads by its rank (buckets packed in hash order, so the few
 * bytes a hit touches stay in cache) to the entries of that hash: the
 * window is compared, then the literal's first 8 bytes as one masked
 * word, then the rest. With AVX2 (checked at run time) eight positions
 * are hashed at once and looked up with one gather in a table that holds
 * both levels (pf->both: the narrow bit, and the wide bit under 4 bits of
 * the window's second half), the wide bitmap then tested for the lanes
 * that pass.
 * Short literals (2-6 bytes) are few; a second pass finds the byte pair
 * each is indexed by (its rarest, or a shared one when they would need
 * too many), 32 bytes at a time with AVX2 (nibble lookups, Teddy-style)
 * or 16 with SSE2 (a compare per pair) when there are at most
 * SHORT_SIMD_PAIRS distinct pairs, else with a pair bitmap.
 * Memory is fixed and nothing is allocated while scanning. */
#include "ddx/prefilter.h"

#include "bigrams.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#if defined(__SSE2__)
#include <emmintrin.h>
#endif
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define PF_AVX2 1 /* AVX2 paths, chosen at run time */
#include <immintrin.h>
#endif

#define HASH_BITS 20
#define HASH_SIZE (1u << HASH_BITS)

#define STRIDE 4                                  /* bytes between tested positions */
#define LONG_MIN (4 + STRIDE - 1)                 /* shortest literal of the narrow level */
#define WIDE_MIN (8 + STRIDE - 1)                 /* shortest literal of the wide level */
#define KEY_BITS 16                               /* narrow level: bitmaps of 8-byte keys */
#define SHORT_SIMD_PAIRS DDX_PREFILTER_SIMD_PAIRS /* most distinct short pairs for SIMD */

typedef struct pf_lit {
  const char *bytes; /* owned copy */
  uint32_t len;
  uint32_t anchor;     /* strided: first window of the run; short: the pair */
  uint64_t head, mask; /* the first min(len, 8) bytes, as a masked word */
  int32_t next;        /* short literals: next with the same pair, -1 ends */
} pf_lit_t;

/* One indexed window of a literal. */
typedef struct pf_entry {
  uint64_t key;        /* the window's bytes (4 or 8) */
  uint32_t hash;       /* of key, as its level hashes it */
  uint32_t off;        /* offset of the window inside the literal */
  uint32_t lit, len;   /* the literal and its length */
  uint64_t head, mask; /* the literal's first bytes (pf_lit_t) */
} pf_entry_t;

/* One strided filter level. */
typedef struct pf_level {
  uint64_t bitmap[HASH_SIZE / 64]; /* hash present */
  uint32_t rank[HASH_SIZE / 64];   /* set bits before each bitmap word */
  uint32_t *first;                 /* per set bit (by rank): its first entry */
  pf_entry_t *entries;             /* in hash order */
  size_t n;
} pf_level_t;

struct ddx_prefilter {
  pf_lit_t *lits;
  size_t n, cap;
  pf_level_t wide, narrow;
  uint64_t direct[HASH_SIZE / 64]; /* narrow hash with no 8-byte key */
  /* Both levels in one word per 16 narrow hashes, for one gather per
   * position (pf_scan_strided_avx2): word h >> 4 of the narrow hash h of
   * a window's first 4 bytes has bit h & 15 for a narrow window and bit
   * 16 + (a 4-bit hash of the next 4 bytes) for a wide one. */
  uint32_t both[HASH_SIZE / 16];
  uint64_t key_after[(1u << KEY_BITS) / 64];  /* window + the 4 bytes after */
  uint64_t key_before[(1u << KEY_BITS) / 64]; /* the 4 bytes before + window */
  int32_t *pair_bucket;                       /* 65536 heads (short literals) */
  uint64_t pair_bitmap[1024];
  uint16_t pairs[SHORT_SIMD_PAIRS]; /* distinct short pairs, when few */
  uint8_t teddy[4][16];             /* nibble masks: first byte lo, hi; second lo, hi */
  size_t npairs;                    /* 0: none; > SHORT_SIMD_PAIRS: bitmap pass */
  int built;
  bool avx2;                /* the CPU has AVX2 (checked once, at build) */
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

/* The hash of an 8-byte window from its two halves (32-bit products, as
 * the AVX2 path computes it). */
static inline uint32_t hash_wide(uint32_t lo, uint32_t hi) {
  return ((lo * 0x9E3779B1u) ^ (hi * 0x85EBCA77u)) >> (32 - HASH_BITS);
}

/* Set bits of x (SWAR: no libgcc call on CPUs without popcnt). */
static inline uint32_t popcount64(uint64_t x) {
  x = x - ((x >> 1) & 0x5555555555555555ull);
  x = (x & 0x3333333333333333ull) + ((x >> 2) & 0x3333333333333333ull);
  x = (x + (x >> 4)) & 0x0f0f0f0f0f0f0f0full;
  return (uint32_t)((x * 0x0101010101010101ull) >> 56);
}

/* Bit h of a bitmap of 64-bit words. */
static inline bool bit_get(const uint64_t *bm, uint32_t h) {
  return (bm[h >> 6] >> (h & 63)) & 1;
}

static inline void bit_set(uint64_t *bm, uint32_t h) {
  bm[h >> 6] |= 1ull << (h & 63);
}

/* The 4-bit hash of a wide window's second half in pf->both. */
static inline uint32_t both_hi(uint32_t hi) {
  return (hi * 0x85EBCA77u) >> 28;
}

static inline uint64_t load64(const unsigned char *p) {
  uint64_t w;
  memcpy(&w, p, 8);
  return w;
}

static inline uint32_t hash64(uint64_t w) {
  return (uint32_t)((w * 0x9E3779B97F4A7C15ull) >> (64 - KEY_BITS));
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
  free(pf->wide.entries);
  free(pf->wide.first);
  free(pf->narrow.entries);
  free(pf->narrow.first);
  free(pf->pair_bucket);
  free(pf->freq);
  free(pf);
}

/* The anchor: for a strided literal the run of STRIDE windows with the
 * fewest windows other literals share (shared[i]: the window at i is;
 * see pf_anchor_strided), then whose most common window is rarest (each
 * window lets its own occurrences through; the sum breaks ties); for a
 * short one the rarest byte pair. */
static uint32_t pf_choose_anchor(const pf_pairfreq_t *f, const bool *shared, const unsigned char *u,
                                 size_t len) {
  size_t win = len >= WIDE_MIN ? 8 : len >= LONG_MIN ? 4 : 2;
  size_t span = win == 2 ? 2 : win + STRIDE - 1;
  uint32_t anchor = 0;
  uint64_t best = UINT64_MAX;
  for (size_t i = 0; i + span <= len; i++) {
    uint64_t c;
    if (win == 2) {
      c = pf_window_cost(f, u + i, 2);
    } else {
      unsigned mx = 0, sum = 0, nshared = 0;
      for (size_t k = 0; k < STRIDE; k++) {
        unsigned wc = pf_window_cost(f, u + i + k, win);
        sum += wc;
        if (wc > mx) mx = wc;
        nshared += shared[i + k];
      }
      c = (uint64_t)nshared << 32 | (mx * 8 + sum);
    }
    if (c < best) {
      best = c;
      anchor = (uint32_t)i;
    }
  }
  return anchor;
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
  const unsigned char *u = (const unsigned char *)lit;
  /* strided literals are anchored at build, once all are known */
  uint32_t anchor = len < LONG_MIN ? pf_choose_anchor(pf->freq, NULL, u, len) : 0;
  pf_lit_t *l = &pf->lits[pf->n];
  *l = (pf_lit_t){copy, (uint32_t)len, anchor, 0, 0, -1};
  size_t hn = len < 8 ? len : 8;
  for (size_t k = 0; k < hn; k++) {
    l->head |= (uint64_t)u[k] << (8 * k);
    l->mask |= (uint64_t)0xff << (8 * k);
  }
  return (int32_t)pf->n++;
}

/* Each short literal is anchored on its rarest byte pair (ddx_prefilter_add)
 * while they need at most SHORT_FEW_PAIRS distinct pairs: each pair costs
 * the SIMD pass a few instructions per 32 bytes, but a common pair ("ed"
 * shared by "Killed" and "pinned") costs a verification per occurrence.
 * Past that they are re-anchored on as few pairs as it can (greedy set
 * cover: the pair in most uncovered literals first, the rarer on a tie):
 * every tqdm bar literal starts with "%|". */
#define SHORT_FEW_PAIRS 16
static int pf_cover_short(ddx_prefilter_t *pf) {
  size_t nshort = 0, distinct = 0;
  uint16_t seen[SHORT_FEW_PAIRS + 1];
  for (size_t k = 0; k < pf->n; k++) {
    const pf_lit_t *l = &pf->lits[k];
    if (l->len >= LONG_MIN) continue;
    nshort++;
    const unsigned char *u = (const unsigned char *)l->bytes + l->anchor;
    uint16_t q = (uint16_t)(u[0] | (u[1] << 8));
    bool again = false;
    for (size_t d = 0; d < distinct && !again; d++)
      again = seen[d] == q;
    if (!again && distinct <= SHORT_FEW_PAIRS) seen[distinct++] = q;
  }
  if (!nshort || distinct <= SHORT_FEW_PAIRS) return 0;
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

static int lit_text_cmp(const void *a, const void *b) {
  const pf_lit_t *x = *(const pf_lit_t *const *)a, *y = *(const pf_lit_t *const *)b;
  if (x->len != y->len) return x->len < y->len ? -1 : 1;
  return memcmp(x->bytes, y->bytes, x->len);
}

/* Open-addressing set of windows: the first literal text seen with each,
 * and whether a second, different text has it too. */
typedef struct pf_winslot {
  uint64_t key;
  uint32_t text; /* text id + 1; 0: empty */
  bool shared;
} pf_winslot_t;

static pf_winslot_t *win_slot(pf_winslot_t *t, size_t mask, uint64_t key) {
  size_t h = (size_t)((key * 0x9E3779B97F4A7C15ull) >> 20) & mask;
  while (t[h].text && t[h].key != key)
    h = (h + 1) & mask;
  return &t[h];
}

/* Re-anchors the strided literals once all are known, avoiding windows
 * that another literal (a different text) shares: literals that share a
 * window share structure ("grad_norm': nan", "grad_norm': inf"), the key
 * text of lines that are everywhere, and their own bytes are elsewhere. */
static int pf_anchor_strided(ddx_prefilter_t *pf) {
  size_t total = 0;
  for (size_t k = 0; k < pf->n; k++)
    total += pf->lits[k].len;
  size_t cap = 64;
  while (cap < 2 * total)
    cap *= 2;
  const pf_lit_t **order = malloc((pf->n ? pf->n : 1) * sizeof *order);
  uint32_t *text = malloc((pf->n ? pf->n : 1) * sizeof *text);
  pf_winslot_t *t = malloc(cap * sizeof *t);
  bool *shared = malloc(4096 * sizeof *shared); /* literals are at most 4096 bytes */
  int rc = -1;
  if (!order || !text || !t || !shared) goto out;
  /* text ids: equal literals (one per rule that needs it) are one text */
  for (size_t k = 0; k < pf->n; k++)
    order[k] = &pf->lits[k];
  if (pf->n > 1) qsort(order, pf->n, sizeof *order, lit_text_cmp);
  for (size_t i = 0, id = 0; i < pf->n; i++) {
    if (i && lit_text_cmp(&order[i - 1], &order[i])) id++;
    text[order[i] - pf->lits] = (uint32_t)id;
  }
  for (size_t win = 4; win <= 8; win += 4) {
    memset(t, 0, cap * sizeof *t);
    for (size_t k = 0; k < pf->n; k++) {
      const unsigned char *u = (const unsigned char *)pf->lits[k].bytes;
      for (size_t i = 0; i + win <= pf->lits[k].len; i++) {
        uint64_t key = win == 8 ? load64(u + i) : load32(u + i);
        pf_winslot_t *sl = win_slot(t, cap - 1, key);
        if (!sl->text)
          *sl = (pf_winslot_t){key, text[k] + 1, false};
        else if (sl->text != text[k] + 1)
          sl->shared = true;
      }
    }
    for (size_t k = 0; k < pf->n; k++) {
      pf_lit_t *l = &pf->lits[k];
      size_t lw = l->len >= WIDE_MIN ? 8 : 4;
      if (l->len < LONG_MIN || lw != win) continue;
      const unsigned char *u = (const unsigned char *)l->bytes;
      for (size_t i = 0; i + win <= l->len; i++)
        shared[i] = win_slot(t, cap - 1, win == 8 ? load64(u + i) : load32(u + i))->shared;
      l->anchor = pf_choose_anchor(pf->freq, shared, u, l->len);
    }
  }
  rc = 0;
out:
  free(order);
  free(text);
  free(t);
  free(shared);
  return rc;
}

static int entry_cmp(const void *a, const void *b) {
  const pf_entry_t *x = a, *y = b;
  if (x->hash != y->hash) return x->hash < y->hash ? -1 : 1;
  return x->lit != y->lit ? (x->lit < y->lit ? -1 : 1) : (x->off > y->off) - (x->off < y->off);
}

/* Packs a level's entries in hash order and indexes them by bit rank. */
static int pf_level_pack(pf_level_t *lv) {
  if (lv->n > 1) qsort(lv->entries, lv->n, sizeof *lv->entries, entry_cmp);
  uint32_t bits = 0;
  for (size_t w = 0; w < HASH_SIZE / 64; w++) {
    lv->rank[w] = bits;
    bits += (uint32_t)popcount64(lv->bitmap[w]);
  }
  lv->first = malloc((bits + 1) * sizeof *lv->first);
  if (!lv->first) return -1;
  uint32_t r = 0;
  for (size_t e = 0; e < lv->n; e++)
    if (e == 0 || lv->entries[e].hash != lv->entries[e - 1].hash) lv->first[r++] = (uint32_t)e;
  lv->first[r] = (uint32_t)lv->n;
  return 0;
}

int ddx_prefilter_build(ddx_prefilter_t *pf) {
  size_t nwide = 0, nnarrow = 0;
  for (size_t k = 0; k < pf->n; k++) {
    nwide += pf->lits[k].len >= WIDE_MIN;
    nnarrow += pf->lits[k].len >= LONG_MIN && pf->lits[k].len < WIDE_MIN;
  }
  pf->pair_bucket = malloc(65536 * sizeof *pf->pair_bucket);
  pf->wide.entries = malloc((nwide ? nwide : 1) * STRIDE * sizeof(pf_entry_t));
  pf->narrow.entries = malloc((nnarrow ? nnarrow : 1) * STRIDE * sizeof(pf_entry_t));
  if (!pf->pair_bucket || !pf->wide.entries || !pf->narrow.entries) return -1;
  for (size_t i = 0; i < 65536; i++)
    pf->pair_bucket[i] = -1;
  memset(pf->wide.bitmap, 0, sizeof pf->wide.bitmap);
  memset(pf->narrow.bitmap, 0, sizeof pf->narrow.bitmap);
  memset(pf->direct, 0, sizeof pf->direct);
  memset(pf->both, 0, sizeof pf->both);
  memset(pf->key_after, 0, sizeof pf->key_after);
  memset(pf->key_before, 0, sizeof pf->key_before);
  memset(pf->pair_bitmap, 0, sizeof pf->pair_bitmap);
  pf->wide.n = pf->narrow.n = 0;
  pf->npairs = 0;
  if ((pf->freq && pf_anchor_strided(pf)) || pf_cover_short(pf)) return -1;
  for (size_t k = 0; k < pf->n; k++) {
    pf_lit_t *l = &pf->lits[k];
    const unsigned char *u = (const unsigned char *)l->bytes;
    if (l->len < LONG_MIN) continue;
    bool wide = l->len >= WIDE_MIN;
    pf_level_t *lv = wide ? &pf->wide : &pf->narrow;
    for (size_t w = 0; w < STRIDE; w++) {
      pf_entry_t *e = &lv->entries[lv->n++];
      e->off = l->anchor + (uint32_t)w;
      e->key = wide ? load64(u + e->off) : load32(u + e->off);
      e->lit = (uint32_t)k;
      e->len = l->len;
      e->head = l->head;
      e->mask = l->mask;
      uint32_t h = e->hash =
          wide ? hash_wide(load32(u + e->off), load32(u + e->off + 4)) : hash32((uint32_t)e->key);
      bit_set(lv->bitmap, h);
      uint32_t hl = hash32(load32(u + e->off));
      pf->both[hl >> 4] |= wide ? 1u << (16 + both_hi(load32(u + e->off + 4))) : 1u << (hl & 15);
      if (wide) continue;
      /* The narrow level's second test: 8 literal bytes around the window,
       * so that a common window ("ning", "m': ") costs a bitmap test, not
       * a walk. */
      if (e->off + 8 <= l->len) {
        uint32_t q = hash64(load64(u + e->off));
        bit_set(pf->key_after, q);
      } else if (e->off >= 4) {
        uint32_t q = hash64(load64(u + e->off - 4));
        bit_set(pf->key_before, q);
      } else {
        bit_set(pf->direct, h);
      }
    }
  }
  if (pf_level_pack(&pf->wide) || pf_level_pack(&pf->narrow)) return -1;
  /* Short literals: chained per pair, in id order. */
  for (size_t k = pf->n; k-- > 0;) {
    pf_lit_t *l = &pf->lits[k];
    const unsigned char *u = (const unsigned char *)l->bytes;
    if (l->len >= LONG_MIN) continue;
    unsigned pair = u[l->anchor] | ((unsigned)u[l->anchor + 1] << 8);
    if (!bit_get(pf->pair_bitmap, pair)) {
      if (pf->npairs < SHORT_SIMD_PAIRS) pf->pairs[pf->npairs] = (uint16_t)pair;
      pf->npairs++;
    }
    l->next = pf->pair_bucket[pair];
    pf->pair_bucket[pair] = (int32_t)k;
    bit_set(pf->pair_bitmap, pair);
  }
  /* Teddy buckets (pf_scan_short_avx2): pair p in bucket p % 8. */
  memset(pf->teddy, 0, sizeof pf->teddy);
  for (size_t p = 0; p < pf->npairs && p < SHORT_SIMD_PAIRS; p++) {
    unsigned a = pf->pairs[p] & 0xff, z = pf->pairs[p] >> 8;
    uint8_t bit = (uint8_t)(1u << (p % 8));
    pf->teddy[0][a & 15] |= bit;
    pf->teddy[1][a >> 4] |= bit;
    pf->teddy[2][z & 15] |= bit;
    pf->teddy[3][z >> 4] |= bit;
  }
  free(pf->freq);
  pf->freq = NULL;
  pf->built = 1;
#ifdef PF_AVX2
  pf->avx2 = __builtin_cpu_supports("avx2") && !getenv("DDX_NO_AVX2");
#endif
  return 0;
}

/* Whether lit occurs at b[start..) of n bytes. */
static inline bool pf_equal(const char *bytes, uint32_t len, uint64_t head, uint64_t mask,
                            const unsigned char *b, size_t n, size_t start) {
  if (start + len > n) return false;
  if (start + 8 <= n) {
    if ((load64(b + start) & mask) != head) return false;
    return len <= 8 || memcmp(b + start + 8, bytes + 8, len - 8) == 0;
  }
  return memcmp(b + start, bytes, len) == 0;
}

/* Verifies the entries of hash h of a level (its bit is set) against the
 * window key at i. */
static inline int pf_check(const ddx_prefilter_t *pf, const pf_level_t *lv, uint32_t h,
                           uint64_t key, const unsigned char *b, size_t n, size_t i,
                           ddx_prefilter_hit_cb cb, void *ctx) {
  uint64_t below = lv->bitmap[h >> 6] & ((1ull << (h & 63)) - 1);
  uint32_t r = lv->rank[h >> 6] + (uint32_t)popcount64(below);
  for (uint32_t e = lv->first[r], end = lv->first[r + 1]; e < end; e++) {
    const pf_entry_t *en = &lv->entries[e];
    if (en->key != key || i < en->off) continue;
    size_t start = i - en->off;
    if (!pf_equal(pf->lits[en->lit].bytes, en->len, en->head, en->mask, b, n, start)) continue;
    int rc = cb(ctx, en->lit, start);
    if (rc) return rc;
  }
  return 0;
}

/* The narrow level at i (bit set): its second test, then the entries. */
static inline int pf_check_narrow(const ddx_prefilter_t *pf, uint32_t h, uint32_t lo,
                                  const unsigned char *b, size_t n, size_t i,
                                  ddx_prefilter_hit_cb cb, void *ctx) {
  if (!bit_get(pf->direct, h)) {
    uint32_t qa = i + 8 <= n ? hash64(load64(b + i)) : 0;
    uint32_t qb = i >= 4 ? hash64(load64(b + i - 4)) : 0;
    bool a = i + 8 <= n && bit_get(pf->key_after, qa);
    bool z = i >= 4 && bit_get(pf->key_before, qb);
    if (!a && !z) return 0;
  }
  return pf_check(pf, &pf->narrow, h, lo, b, n, i, cb, ctx);
}

/* The wide level at i (i + 8 <= n), lo the window's first 4 bytes. */
static inline int pf_check_wide(const ddx_prefilter_t *pf, uint32_t lo, const unsigned char *b,
                                size_t n, size_t i, ddx_prefilter_hit_cb cb, void *ctx) {
  uint32_t hi = load32(b + i + 4), hw = hash_wide(lo, hi);
  if (!bit_get(pf->wide.bitmap, hw)) return 0;
  return pf_check(pf, &pf->wide, hw, (uint64_t)lo | (uint64_t)hi << 32, b, n, i, cb, ctx);
}

/* Both levels at one tested position i (i + 4 <= n). */
static inline int pf_test(const ddx_prefilter_t *pf, const unsigned char *b, size_t n, size_t i,
                          ddx_prefilter_hit_cb cb, void *ctx) {
  uint32_t lo = load32(b + i), h = hash32(lo);
  int rc;
  if (bit_get(pf->narrow.bitmap, h) && (rc = pf_check_narrow(pf, h, lo, b, n, i, cb, ctx)))
    return rc;
  return i + 8 <= n ? pf_check_wide(pf, lo, b, n, i, cb, ctx) : 0;
}

/* Verifies the short literals indexed by the byte pair at i. */
static inline int pf_check_short(const ddx_prefilter_t *pf, const unsigned char *b, size_t n,
                                 size_t i, ddx_prefilter_hit_cb cb, void *ctx) {
  unsigned pair = b[i] | ((unsigned)b[i + 1] << 8);
  for (int32_t k = pf->pair_bucket[pair]; k >= 0; k = pf->lits[k].next) {
    const pf_lit_t *l = &pf->lits[k];
    if (i < l->anchor || !pf_equal(l->bytes, l->len, l->head, l->mask, b, n, i - l->anchor))
      continue;
    int rc = cb(ctx, (uint32_t)k, i - l->anchor);
    if (rc) return rc;
  }
  return 0;
}

#ifdef PF_AVX2
/* The strided pass, eight positions per step: with STRIDE 4 the tested
 * positions of 32 bytes are its eight dwords, hashed at once (both levels)
 * and looked up with gathers. Leaves *next where the scalar loop goes on. */
__attribute__((target("avx2"))) static int
pf_scan_strided_avx2(const ddx_prefilter_t *pf, const unsigned char *b, size_t n, size_t *next,
                     ddx_prefilter_hit_cb cb, void *ctx) {
  const int *both = (const int *)pf->both;
  const __m256i k1 = _mm256_set1_epi32((int)0x9E3779B1u), k2 = _mm256_set1_epi32((int)0x85EBCA77u),
                one = _mm256_set1_epi32(1), nib = _mm256_set1_epi32(15),
                sixteen = _mm256_set1_epi32(16);
  size_t i = 0;
  int rc;
  for (; i + 36 <= n; i += 32) {
    __m256i lo = _mm256_loadu_si256((const __m256i *)(b + i));
    __m256i hi = _mm256_loadu_si256((const __m256i *)(b + i + 4));
    __m256i hn = _mm256_srli_epi32(_mm256_mullo_epi32(lo, k1), 32 - HASH_BITS);
    __m256i g = _mm256_i32gather_epi32(both, _mm256_srli_epi32(hn, 4), 4);
    __m256i tn = _mm256_and_si256(_mm256_srlv_epi32(g, _mm256_and_si256(hn, nib)), one);
    __m256i wb = _mm256_add_epi32(_mm256_srli_epi32(_mm256_mullo_epi32(hi, k2), 28), sixteen);
    __m256i tw = _mm256_and_si256(_mm256_srlv_epi32(g, wb), one);
    unsigned mn = (unsigned)_mm256_movemask_ps(_mm256_castsi256_ps(_mm256_cmpeq_epi32(tn, one)));
    unsigned mw = (unsigned)_mm256_movemask_ps(_mm256_castsi256_ps(_mm256_cmpeq_epi32(tw, one)));
    if (!(mw | mn)) continue;
    uint32_t an[8];
    _mm256_storeu_si256((__m256i *)an, hn);
    for (unsigned m = mw | mn; m; m &= m - 1) {
      unsigned k = (unsigned)__builtin_ctz(m);
      size_t at = i + 4 * (size_t)k;
      uint32_t lo32 = load32(b + at);
      if (((mn >> k) & 1) && (rc = pf_check_narrow(pf, an[k], lo32, b, n, at, cb, ctx))) return rc;
      /* the word only knew 4 bits of the second half: the wide bitmap next */
      if (((mw >> k) & 1) && (rc = pf_check_wide(pf, lo32, b, n, at, cb, ctx))) return rc;
    }
  }
  *next = i;
  return 0;
}

/* The short-literal pass, 32 positions per step, Teddy-style (Hyperscan):
 * each distinct pair is in one of 8 buckets; a byte's low and high nibble
 * look up (PSHUFB) the buckets whose pairs may start with it, the next
 * byte's the buckets whose pairs may end with it, and a position is a
 * candidate where some bucket survives all four. The cost does not grow
 * with the number of pairs; pairs sharing a bucket may alias, which the
 * pair chain check rejects. */
__attribute__((target("avx2"))) static int pf_scan_short_avx2(const ddx_prefilter_t *pf,
                                                              const unsigned char *b, size_t n,
                                                              size_t *next, ddx_prefilter_hit_cb cb,
                                                              void *ctx) {
  __m256i t[4];
  for (size_t k = 0; k < 4; k++)
    t[k] = _mm256_broadcastsi128_si256(_mm_loadu_si128((const __m128i *)pf->teddy[k]));
  const __m256i nib = _mm256_set1_epi8(0x0f), zero = _mm256_setzero_si256();
  size_t i = 0;
  int rc;
  for (; i + 33 <= n; i += 32) {
    __m256i v0 = _mm256_loadu_si256((const __m256i *)(b + i));
    __m256i v1 = _mm256_loadu_si256((const __m256i *)(b + i + 1));
    __m256i a = _mm256_and_si256(
        _mm256_shuffle_epi8(t[0], _mm256_and_si256(v0, nib)),
        _mm256_shuffle_epi8(t[1], _mm256_and_si256(_mm256_srli_epi16(v0, 4), nib)));
    __m256i z = _mm256_and_si256(
        _mm256_shuffle_epi8(t[2], _mm256_and_si256(v1, nib)),
        _mm256_shuffle_epi8(t[3], _mm256_and_si256(_mm256_srli_epi16(v1, 4), nib)));
    unsigned bits =
        ~(unsigned)_mm256_movemask_epi8(_mm256_cmpeq_epi8(_mm256_and_si256(a, z), zero));
    while (bits) {
      unsigned k = (unsigned)__builtin_ctz(bits);
      bits &= bits - 1;
      if ((rc = pf_check_short(pf, b, n, i + k, cb, ctx))) return rc;
    }
  }
  *next = i;
  return 0;
}
#endif

static int pf_scan_short(const ddx_prefilter_t *pf, const unsigned char *b, size_t n,
                         ddx_prefilter_hit_cb cb, void *ctx) {
  size_t i = 0;
  int rc;
#ifdef PF_AVX2
  if (pf->avx2 && pf->npairs <= SHORT_SIMD_PAIRS &&
      (rc = pf_scan_short_avx2(pf, b, n, &i, cb, ctx)))
    return rc;
#endif
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
    if (!bit_get(pf->pair_bitmap, pair)) continue;
    if ((rc = pf_check_short(pf, b, n, i, cb, ctx))) return rc;
  }
  return 0;
}

int ddx_prefilter_scan(const ddx_prefilter_t *pf, const char *buf, size_t len,
                       ddx_prefilter_hit_cb cb, void *ctx) {
  if (!pf->built || len < 2) return 0;
  const unsigned char *b = (const unsigned char *)buf;
  int rc;
  if (len >= 4 && (pf->wide.n || pf->narrow.n)) {
    size_t i = 0;
#ifdef PF_AVX2
    if (pf->avx2 && (rc = pf_scan_strided_avx2(pf, b, len, &i, cb, ctx))) return rc;
#endif
    for (; i + 4 <= len; i += STRIDE)
      if ((rc = pf_test(pf, b, len, i, cb, ctx))) return rc;
  }
  return pf->npairs ? pf_scan_short(pf, b, len, cb, ctx) : 0;
}

size_t ddx_prefilter_short_pairs(const ddx_prefilter_t *pf) {
  return pf->npairs;
}
