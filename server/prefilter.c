/* prefilter.c - rarest-byte-pair literal filter (see ddx/prefilter.h). */
#include "ddx/prefilter.h"

#include <stdlib.h>
#include <string.h>

typedef struct pf_lit {
  const char *bytes; /* owned copy */
  uint32_t len;
  uint32_t anchor;   /* offset of the indexed pair inside the literal */
  int32_t next;      /* next literal in the same pair bucket, -1 ends */
} pf_lit_t;

struct ddx_prefilter {
  pf_lit_t *lits;
  size_t n, cap;
  int32_t *bucket;     /* 65536 heads, -1 empty */
  uint64_t bitmap[1024]; /* 65536 bits: pair present */
  int built;
};

/* Approximate byte frequency rank in English log text (0 rare .. 255 very
 * common): lowercase letters, space and digits are common; upper case,
 * punctuation less so; control bytes and high bytes rare. */
static unsigned pf_byte_freq(unsigned char c) {
  if (c == ' ') return 255;
  if (c == 'e' || c == 't' || c == 'a' || c == 'o' || c == 'i' || c == 'n' || c == 's' ||
      c == 'r')
    return 200;
  if (c >= 'a' && c <= 'z') return 150;
  if (c >= '0' && c <= '9') return 140;
  if (c == '.' || c == '/' || c == '_' || c == ':' || c == ',' || c == '-' || c == '=' ||
      c == '[' || c == ']' || c == '(' || c == ')' || c == '\'')
    return 120;
  if (c >= 'A' && c <= 'Z') return 60;
  if (c >= 0x80) return 40;
  if (c < 0x20) return 10;
  return 50;
}

double ddx_prefilter_literal_cost(const char *lit, size_t len) {
  if (len < 2) return 1e9;
  double best = 1e9;
  for (size_t i = 0; i + 1 < len; i++) {
    double c = (double)pf_byte_freq((unsigned char)lit[i]) *
               (double)pf_byte_freq((unsigned char)lit[i + 1]);
    if (c < best) best = c;
  }
  /* Longer literals verify fewer false pair hits. */
  return best / (len >= 8 ? 4.0 : len >= 4 ? 2.0 : 1.0);
}

ddx_prefilter_t *ddx_prefilter_new(void) {
  ddx_prefilter_t *pf = calloc(1, sizeof *pf);
  return pf;
}

void ddx_prefilter_free(ddx_prefilter_t *pf) {
  if (!pf) return;
  for (size_t i = 0; i < pf->n; i++) free((void *)pf->lits[i].bytes);
  free(pf->lits);
  free(pf->bucket);
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
  uint32_t anchor = 0;
  unsigned best = ~0u;
  for (size_t i = 0; i + 1 < len; i++) {
    unsigned c = pf_byte_freq((unsigned char)lit[i]) * pf_byte_freq((unsigned char)lit[i + 1]);
    if (c < best) {
      best = c;
      anchor = (uint32_t)i;
    }
  }
  pf->lits[pf->n] = (pf_lit_t){copy, (uint32_t)len, anchor, -1};
  return (int32_t)pf->n++;
}

int ddx_prefilter_build(ddx_prefilter_t *pf) {
  pf->bucket = malloc(65536 * sizeof *pf->bucket);
  if (!pf->bucket) return -1;
  for (size_t i = 0; i < 65536; i++) pf->bucket[i] = -1;
  memset(pf->bitmap, 0, sizeof pf->bitmap);
  /* Insert in reverse so that each bucket lists literals in id order. */
  for (size_t k = pf->n; k-- > 0;) {
    pf_lit_t *l = &pf->lits[k];
    unsigned pair = (unsigned char)l->bytes[l->anchor] |
                    ((unsigned)(unsigned char)l->bytes[l->anchor + 1] << 8);
    l->next = pf->bucket[pair];
    pf->bucket[pair] = (int32_t)k;
    pf->bitmap[pair >> 6] |= 1ull << (pair & 63);
  }
  pf->built = 1;
  return 0;
}

int ddx_prefilter_scan(const ddx_prefilter_t *pf, const char *buf, size_t len,
                       ddx_prefilter_hit_cb cb, void *ctx) {
  if (!pf->built || len < 2) return 0;
  const unsigned char *b = (const unsigned char *)buf;
  const uint64_t *bm = pf->bitmap;
  for (size_t i = 0; i + 1 < len; i++) {
    unsigned pair = b[i] | ((unsigned)b[i + 1] << 8);
    if (!(bm[pair >> 6] & (1ull << (pair & 63)))) continue;
    for (int32_t k = pf->bucket[pair]; k >= 0; k = pf->lits[k].next) {
      const pf_lit_t *l = &pf->lits[k];
      if (i < l->anchor) continue;
      size_t start = i - l->anchor;
      if (start + l->len > len) continue;
      if (memcmp(b + start, l->bytes, l->len) == 0) {
        int rc = cb(ctx, (uint32_t)k, start);
        if (rc) return rc;
      }
    }
  }
  return 0;
}
