/* util.c - errors, arena, vectors, quantities and rank sets (see ddx/util.h). */
#include "ddx/util.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <sys/stat.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int ddx_error_set(ddx_error_t *err, int code, const char *fmt, ...) {
  if (err) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err->msg, sizeof err->msg, fmt, ap);
    va_end(ap);
    err->code = code;
  }
  return code;
}

struct ddx_arena_block {
  ddx_arena_block_t *next;
  size_t cap, used;
  max_align_t data[];
};

void ddx_arena_init(ddx_arena_t *a) {
  a->head = NULL;
  a->used_total = 0;
}

void ddx_arena_free(ddx_arena_t *a) {
  ddx_arena_block_t *b = a->head;
  while (b) {
    ddx_arena_block_t *next = b->next;
    free(b);
    b = next;
  }
  a->head = NULL;
  a->used_total = 0;
}

void *ddx_arena_alloc(ddx_arena_t *a, size_t n) {
  n = (n + 15) & ~(size_t)15;
  ddx_arena_block_t *b = a->head;
  if (!b || b->cap - b->used < n) {
    size_t cap = b ? b->cap * 2 : 16384;
    if (cap > (1u << 22)) cap = 1u << 22;
    if (cap < n) cap = n;
    ddx_arena_block_t *nb = malloc(sizeof *nb + cap);
    if (!nb) return NULL;
    nb->next = b;
    nb->cap = cap;
    nb->used = 0;
    a->head = b = nb;
  }
  void *p = (char *)b->data + b->used;
  b->used += n;
  a->used_total += n;
  memset(p, 0, n);
  return p;
}

void ddx_arena_adopt(ddx_arena_t *dst, ddx_arena_t *src) {
  if (!src->head) return;
  /* dst keeps bumping in its own head block; src's blocks go at the end */
  ddx_arena_block_t **tail = &dst->head;
  while (*tail)
    tail = &(*tail)->next;
  *tail = src->head;
  dst->used_total += src->used_total;
  src->head = NULL;
  src->used_total = 0;
}

char *ddx_arena_strndup(ddx_arena_t *a, const char *s, size_t n) {
  char *p = ddx_arena_alloc(a, n + 1);
  if (!p) return NULL;
  memcpy(p, s, n);
  p[n] = 0;
  return p;
}

char *ddx_arena_strdup(ddx_arena_t *a, const char *s) {
  return s ? ddx_arena_strndup(a, s, strlen(s)) : NULL;
}

void ddx_vec_init(ddx_vec_t *v, size_t elem) {
  v->data = NULL;
  v->len = v->cap = 0;
  v->elem = elem;
}

void ddx_vec_free(ddx_vec_t *v) {
  free(v->data);
  v->data = NULL;
  v->len = v->cap = 0;
}

void *ddx_vec_push(ddx_vec_t *v) {
  if (v->len == v->cap) {
    size_t cap = v->cap ? v->cap * 2 : 16;
    void *d = realloc(v->data, cap * v->elem);
    if (!d) return NULL;
    v->data = d;
    v->cap = cap;
  }
  void *slot = (char *)v->data + v->len * v->elem;
  memset(slot, 0, v->elem);
  v->len++;
  return slot;
}

int ddx_vec_reserve(ddx_vec_t *v, size_t cap) {
  if (cap <= v->cap) return 0;
  void *d = realloc(v->data, cap * v->elem);
  if (!d) return DDX_ENOMEM;
  v->data = d;
  v->cap = cap;
  return 0;
}

bool ddx_parse_quantity(const char *s, double *out) {
  while (*s == ' ')
    s++;
  char *end;
  double v = strtod(s, &end);
  if (end == s) return false;
  while (*end == ' ')
    end++;
  double mul = 1;
  if (!strncmp(end, "KiB", 3))
    mul = 1024.0;
  else if (!strncmp(end, "MiB", 3))
    mul = 1024.0 * 1024;
  else if (!strncmp(end, "GiB", 3))
    mul = 1024.0 * 1024 * 1024;
  else if (!strncmp(end, "TiB", 3))
    mul = 1024.0 * 1024 * 1024 * 1024;
  else if (!strncmp(end, "KB", 2) || !strncmp(end, "kB", 2))
    mul = 1e3;
  else if (!strncmp(end, "MB", 2))
    mul = 1e6;
  else if (!strncmp(end, "GB", 2))
    mul = 1e9;
  else if (!strncmp(end, "TB", 2))
    mul = 1e12;
  *out = v * mul;
  return true;
}

void ddx_rankset_add(ddx_rankset_t *s, int32_t r) {
  size_t lo = 0, hi = s->n;
  while (lo < hi) {
    size_t mid = (lo + hi) / 2;
    if (s->v[mid] < r)
      lo = mid + 1;
    else
      hi = mid;
  }
  if (lo < s->n && s->v[lo] == r) return;
  if (s->n == s->cap) {
    size_t cap = s->cap ? s->cap * 2 : 8;
    int32_t *nv = realloc(s->v, cap * sizeof *nv);
    if (!nv) return; /* a rank set is best-effort evidence: drop on ENOMEM */
    s->v = nv;
    s->cap = cap;
  }
  memmove(s->v + lo + 1, s->v + lo, (s->n - lo) * sizeof *s->v);
  s->v[lo] = r;
  s->n++;
}

bool ddx_rankset_has(const ddx_rankset_t *s, int32_t r) {
  size_t lo = 0, hi = s->n;
  while (lo < hi) {
    size_t mid = (lo + hi) / 2;
    if (s->v[mid] < r)
      lo = mid + 1;
    else if (s->v[mid] > r)
      hi = mid;
    else
      return true;
  }
  return false;
}

void ddx_rankset_free(ddx_rankset_t *s) {
  free(s->v);
  s->v = NULL;
  s->n = s->cap = 0;
}

void ddx_rankset_format(const ddx_rankset_t *s, char *out, size_t cap) {
  size_t w = 0;
  if (cap == 0) return;
  out[0] = 0;
  for (size_t i = 0; i < s->n;) {
    size_t j = i;
    while (j + 1 < s->n && s->v[j + 1] == s->v[j] + 1)
      j++;
    char piece[32];
    if (j == i)
      snprintf(piece, sizeof piece, "%s%d", w ? "," : "", s->v[i]);
    else
      snprintf(piece, sizeof piece, "%s%d-%d", w ? "," : "", s->v[i], s->v[j]);
    size_t pl = strlen(piece);
    if (w + pl + 4 >= cap) {
      if (w + 4 < cap) memcpy(out + w, "...", 4);
      return;
    }
    memcpy(out + w, piece, pl + 1);
    w += pl;
    i = j + 1;
  }
}

void ddx_sb_init(ddx_sb_t *b) {
  b->s = NULL;
  b->len = b->cap = 0;
}

void ddx_sb_free(ddx_sb_t *b) {
  free(b->s);
  ddx_sb_init(b);
}

static bool sb_reserve(ddx_sb_t *b, size_t extra) {
  if (b->len + extra + 1 <= b->cap) return true;
  size_t cap = b->cap ? b->cap : 256;
  while (cap < b->len + extra + 1)
    cap *= 2;
  char *ns = realloc(b->s, cap);
  if (!ns) return false;
  b->s = ns;
  b->cap = cap;
  return true;
}

void ddx_sb_putn(ddx_sb_t *b, const char *s, size_t n) {
  if (!sb_reserve(b, n)) return;
  memcpy(b->s + b->len, s, n);
  b->len += n;
  b->s[b->len] = 0;
}

void ddx_sb_puts(ddx_sb_t *b, const char *s) {
  ddx_sb_putn(b, s, strlen(s));
}

void ddx_sb_printf(ddx_sb_t *b, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(NULL, 0, fmt, ap);
  va_end(ap);
  if (n < 0 || !sb_reserve(b, (size_t)n)) return;
  va_start(ap, fmt);
  vsnprintf(b->s + b->len, (size_t)n + 1, fmt, ap);
  va_end(ap);
  b->len += (size_t)n;
}

char *ddx_sb_take(ddx_sb_t *b) {
  if (!b->s) sb_reserve(b, 0);
  if (b->s) b->s[b->len] = 0;
  char *s = b->s;
  ddx_sb_init(b);
  return s;
}

size_t ddx_utf8_len(const unsigned char *s, size_t n) {
  unsigned c = s[0], cp, min;
  size_t k;
  if (c < 0x80) return 1;
  if (c >= 0xC2 && c <= 0xDF)
    k = 2, cp = c & 0x1F, min = 0x80;
  else if ((c & 0xF0) == 0xE0)
    k = 3, cp = c & 0x0F, min = 0x800;
  else if (c >= 0xF0 && c <= 0xF4)
    k = 4, cp = c & 0x07, min = 0x10000;
  else
    return 0;
  if (n < k) return 0;
  for (size_t i = 1; i < k; i++) {
    if ((s[i] & 0xC0) != 0x80) return 0;
    cp = (cp << 6) | (s[i] & 0x3F);
  }
  if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return 0;
  return k;
}

void ddx_sb_put_utf8_repaired(ddx_sb_t *b, const char *s, size_t n) {
  const unsigned char *p = (const unsigned char *)s, *end = p + n;
  while (p < end) {
    size_t k = ddx_utf8_len(p, (size_t)(end - p));
    if (k) {
      ddx_sb_putn(b, (const char *)p, k);
      p += k;
    } else {
      ddx_sb_puts(b, "\xEF\xBF\xBD");
      p++;
    }
  }
}

size_t ddx_utf8_put(char *d, unsigned cp) {
  if (cp < 0x80) return d[0] = (char)cp, 1;
  if (cp < 0x800) return d[0] = (char)(0xC0 | cp >> 6), d[1] = (char)(0x80 | (cp & 0x3F)), 2;
  if (cp < 0x10000) {
    d[0] = (char)(0xE0 | cp >> 12), d[1] = (char)(0x80 | ((cp >> 6) & 0x3F));
    d[2] = (char)(0x80 | (cp & 0x3F));
    return 3;
  }
  d[0] = (char)(0xF0 | cp >> 18), d[1] = (char)(0x80 | ((cp >> 12) & 0x3F));
  d[2] = (char)(0x80 | ((cp >> 6) & 0x3F)), d[3] = (char)(0x80 | (cp & 0x3F));
  return 4;
}

/* Four hex digits at s (n bytes available) into *out. */
static bool json_hex4(const char *s, size_t n, unsigned *out) {
  unsigned v = 0;
  if (n < 4) return false;
  for (int i = 0; i < 4; i++) {
    char c = s[i];
    unsigned d = c >= '0' && c <= '9'   ? (unsigned)(c - '0')
                 : c >= 'a' && c <= 'f' ? (unsigned)(c - 'a' + 10)
                 : c >= 'A' && c <= 'F' ? (unsigned)(c - 'A' + 10)
                                        : 16u;
    if (d == 16) return false;
    v = v * 16 + d;
  }
  *out = v;
  return true;
}

ddx_jstr_err_t ddx_json_string_check(const char *s, size_t len, size_t from, bool strict,
                                     size_t *end, size_t *at) {
  size_t i = from;
  for (;;) {
    /* plain ASCII runs first: most of a log's text */
    while (i < len && (unsigned char)s[i] >= 0x20 && (unsigned char)s[i] < 0x80 && s[i] != '"' &&
           s[i] != '\\')
      i++;
    *at = i;
    if (i >= len) return DDX_JSTR_UNTERMINATED;
    unsigned char c = (unsigned char)s[i];
    if (c == '"') {
      *end = i;
      return DDX_JSTR_OK;
    }
    if (c < 0x20) return DDX_JSTR_CONTROL;
    if (c >= 0x80) {
      size_t k = strict ? ddx_utf8_len((const unsigned char *)s + i, len - i) : 1;
      if (!k) return DDX_JSTR_UTF8;
      i += k;
      continue;
    }
    /* a backslash */
    if (i + 1 >= len) return DDX_JSTR_UNTERMINATED;
    char e = s[i + 1];
    if (e != 'u') {
      if (!e || !strchr("\"\\/bfnrt", e)) return DDX_JSTR_ESCAPE;
      i += 2;
      continue;
    }
    unsigned u, lo;
    if (!json_hex4(s + i + 2, len - i - 2, &u)) return DDX_JSTR_BAD_U;
    if (strict && u >= 0xDC00 && u <= 0xDFFF) return DDX_JSTR_SURROGATE;
    if (strict && u >= 0xD800 && u <= 0xDBFF) {
      if (i + 12 > len || s[i + 6] != '\\' || s[i + 7] != 'u' ||
          !json_hex4(s + i + 8, len - i - 8, &lo) || lo < 0xDC00 || lo > 0xDFFF)
        return DDX_JSTR_SURROGATE;
      i += 6;
    }
    i += 6;
  }
}

size_t ddx_json_string_decode(const char *s, size_t from, size_t end, char *out) {
  size_t n = 0;
  for (size_t j = from; j < end;) {
    const char *bs = memchr(s + j, '\\', end - j);
    size_t run = (bs ? (size_t)(bs - s) : end) - j;
    memcpy(out + n, s + j, run);
    n += run;
    j += run;
    if (j >= end) break;
    char e = s[j + 1];
    if (e == 'u') {
      unsigned u = 0, lo = 0;
      json_hex4(s + j + 2, end - j - 2, &u);
      j += 6;
      /* a pair becomes one code point; a lone surrogate (lenient) stays */
      if (u >= 0xD800 && u <= 0xDBFF && j + 6 <= end && s[j] == '\\' && s[j + 1] == 'u' &&
          json_hex4(s + j + 2, end - j - 2, &lo) && lo >= 0xDC00 && lo <= 0xDFFF) {
        u = 0x10000 + ((u - 0xD800) << 10) + (lo - 0xDC00);
        j += 6;
      }
      n += ddx_utf8_put(out + n, u);
      continue;
    }
    static const char from_[] = "bfnrt", to[] = "\b\f\n\r\t";
    const char *f = strchr(from_, e);
    out[n++] = f ? to[f - from_] : e;
    j += 2;
  }
  out[n] = 0;
  return n;
}
