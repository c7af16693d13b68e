/* scan.c - streaming line scanner (see ddx/scan.h). */
#define _GNU_SOURCE
#include "ddx/scan.h"

#include "ddx/file.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#if defined(__SSE2__)
#include <emmintrin.h>
#endif
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define SCAN_AVX2 1 /* AVX2 terminator counting, chosen at run time */
#include <immintrin.h>
#endif

typedef struct cand {
  size_t pos;
  uint32_t lit;
} cand_t;

/* One line of a hard-wrapped input joined again: its physical lines
 * [start, end) of the buffer, the first one numbered no. */
typedef struct wrap_group {
  size_t start, end;
  uint64_t no;
} wrap_group_t;

/* A candidate of an anchor-last rule past its storage cap, evaluated after
 * the block's other candidates, newest first (see ddx_rank_progress_t). */
typedef struct deferred {
  size_t ls, le; /* the line (or window) in the block */
  uint64_t line;
  const ddx_literal_ref_t *ref;
} deferred_t;

#define MAX_REFS_PER_LINE 128
#define LONG_LINE_LEAD 1024 /* bytes kept before a literal in an overlong line */
#define LONG_LINE_TAIL 512  /* room a literal needs at the end of a window */
#define MAX_CAPS 32

int ddx_scan_init(ddx_scan_t *s, const ddx_catalog_t *cat) {
  memset(s, 0, sizeof *s);
  s->cat = cat;
#ifdef SCAN_AVX2
  s->avx2 = __builtin_cpu_supports("avx2") && !getenv("DDX_NO_AVX2");
#endif
  ddx_arena_init(&s->arena);
  ddx_vec_init(&s->hits, sizeof(ddx_hit_t));
  ddx_vec_init(&s->inputs, sizeof(ddx_scan_input_t));
  ddx_vec_init(&s->frames, sizeof(ddx_frame_t));
  ddx_vec_init(&s->cands, sizeof(cand_t));
  ddx_vec_init(&s->deferred, sizeof(deferred_t));
  ddx_vec_init(&s->cands_tmp, sizeof(cand_t));
  ddx_vec_init(&s->groups, sizeof(wrap_group_t));
  ddx_vec_init(&s->ctx_ring, sizeof(ddx_hit_t));
  s->ctx_base = calloc(cat->nrules + 1, sizeof *s->ctx_base);
  size_t nctx = 0;
  for (size_t r = 0; s->ctx_base && r < cat->nrules; r++) {
    s->ctx_base[r] = nctx;
    nctx += cat->rules[r].nctx;
    for (size_t c = 0; c < cat->rules[r].nctx; c++) {
      const ddx_pattern_t *cp = &cat->rules[r].ctx[c];
      if (cp->scope_file) continue;
      if (cp->before > s->ctx_before) s->ctx_before = cp->before;
      if (cp->after > s->ctx_after) s->ctx_after = cp->after;
    }
  }
  s->ctx_file_seen = calloc(nctx + 1, sizeof *s->ctx_file_seen);
  s->buf = malloc(DDX_SCAN_BUF);
  s->norm = malloc(DDX_LINE_MAX + 1);
  s->rule_hits = calloc(cat->nrules + 1, sizeof *s->rule_hits);
  s->rule_stored = calloc(cat->nrules + 1, sizeof *s->rule_stored);
  s->rule_last = calloc(cat->nrules + 1, sizeof *s->rule_last);
  s->rule_regex_errors = calloc(cat->nrules + 1, sizeof *s->rule_regex_errors);
  s->pending = calloc(cat->nrules + 1, sizeof *s->pending);
  s->progress = calloc(cat->nrules + 1, sizeof *s->progress);
  s->md = ddx_match_data_new(cat);
  s->layout = malloc(sizeof *s->layout);
  if (s->layout) ddx_layout_init(s->layout);
  if (!s->layout || !s->ctx_base || !s->ctx_file_seen || !s->rule_regex_errors || !s->pending ||
      !s->progress || !s->buf || !s->norm || !s->rule_hits || !s->rule_stored || !s->rule_last ||
      !s->md) {
    ddx_scan_free(s);
    return DDX_ENOMEM;
  }
  return 0;
}

void ddx_scan_free(ddx_scan_t *s) {
  free(s->buf);
  free(s->norm);
  free(s->raw);
  free(s->join);
  ddx_vec_free(&s->groups);
  free(s->rule_hits);
  free(s->rule_stored);
  free(s->rule_last);
  free(s->rule_regex_errors);
  for (size_t r = 0; s->pending && r < s->cat->nrules; r++)
    free(s->pending[r].text);
  free(s->pending);
  for (size_t r = 0; s->progress && r < s->cat->nrules; r++) {
    free(s->progress[r].line);
    free(s->progress[r].ts);
    free(s->progress[r].input);
    free(s->progress[r].block);
  }
  free(s->progress);
  free(s->layout);
  if (s->md) ddx_match_data_free(s->md);
  ddx_vec_free(&s->hits);
  ddx_vec_free(&s->inputs);
  ddx_vec_free(&s->frames);
  ddx_vec_free(&s->cands);
  ddx_vec_free(&s->deferred);
  ddx_vec_free(&s->cands_tmp);
  ddx_vec_free(&s->ctx_ring);
  free(s->ctx_base);
  free(s->ctx_file_seen);
  ddx_arena_free(&s->arena);
  memset(s, 0, sizeof *s);
}

void ddx_scan_trim(ddx_scan_t *s) {
  free(s->buf), s->buf = NULL;
  free(s->norm), s->norm = NULL;
  free(s->raw), s->raw = NULL;
  free(s->join), s->join = NULL;
  ddx_vec_free(&s->groups);
  free(s->layout), s->layout = NULL;
  if (s->md) ddx_match_data_free(s->md);
  s->md = NULL;
  for (size_t r = 0; s->pending && r < s->cat->nrules; r++)
    free(s->pending[r].text);
  free(s->pending), s->pending = NULL;
  for (size_t r = 0; s->progress && r < s->cat->nrules; r++) {
    free(s->progress[r].line);
    free(s->progress[r].ts);
    free(s->progress[r].input);
    free(s->progress[r].block);
  }
  free(s->progress), s->progress = NULL;
  ddx_vec_free(&s->cands);
  ddx_vec_free(&s->cands_tmp);
  ddx_vec_free(&s->deferred);
  ddx_vec_free(&s->ctx_ring);
  free(s->ctx_file_seen), s->ctx_file_seen = NULL;
  /* hits stay where they are: a diagnosis points into them */
}

int ddx_scan_begin(ddx_scan_t *s, const char *name) {
  return ddx_scan_begin_with(s, name, NULL);
}

/* A new input named name, its lines preset with defaults (or nothing). */
static int push_input(ddx_scan_t *s, const char *name, const ddx_line_meta_t *defaults) {
  ddx_scan_input_t *in = ddx_vec_push(&s->inputs);
  if (!in) return DDX_ENOMEM;
  in->name = ddx_arena_strdup(&s->arena, name);
  if (defaults)
    in->defaults = *defaults;
  else
    ddx_line_meta_init(&in->defaults);
  in->line_no = 1;
  in->wrap = s->no_rejoin ? 0 : -1;
  in->html = s->no_rejoin ? 0 : -1;
  return 0;
}

int ddx_scan_begin_with(ddx_scan_t *s, const char *name, const ddx_line_meta_t *defaults) {
  int rc = push_input(s, name, defaults);
  if (rc) return rc;
  s->cur = (uint32_t)(s->inputs.len - 1);
  s->len = 0;
  s->base = 0;
  s->line_no = 1;
  s->count_pos = 0;
  s->open = true;
  return 0;
}

static int collect_cb(void *ctx, uint32_t lit, size_t pos) {
  ddx_scan_t *s = ctx;
  cand_t *c = ddx_vec_push(&s->cands);
  if (!c) return DDX_ENOMEM;
  c->pos = pos;
  c->lit = lit;
  return 0;
}

static int cmp_cand(const void *a, const void *b) {
  const cand_t *x = a, *y = b;
  return x->pos < y->pos ? -1 : x->pos > y->pos ? 1 : (x->lit < y->lit ? -1 : x->lit > y->lit);
}

/* Counts line terminators in buf[from..to) (to <= end, the end of the
 * text): \n, \r\n (once, at the \n) and bare \r; a \r at to-1 counts
 * even if a \n follows at to (a walk that stops there is past it). Sets
 * *last to the position of the last one, if any. Two memchr passes. */
static uint64_t terms_memchr(const char *buf, size_t from, size_t to, size_t end, size_t *last) {
  uint64_t n = 0;
  const char *e = buf + to;
  for (const char *p = buf + from; (p = memchr(p, '\n', (size_t)(e - p))); p++) {
    n++;
    *last = (size_t)(p - buf);
  }
  for (const char *p = buf + from; (p = memchr(p, '\r', (size_t)(e - p))); p++) {
    size_t at = (size_t)(p - buf);
    if (at + 1 >= end || at + 1 == to || buf[at + 1] != '\n') n++; /* \r\n counts at the \n */
    if (*last == SIZE_MAX || at > *last) *last = at;
  }
  return n;
}

#ifdef SCAN_AVX2
/* The same, 64 bytes at a time: a \r counts unless the next byte is \n. */
__attribute__((target("avx2,popcnt"))) static uint64_t
terms_avx2(const char *buf, size_t from, size_t to, size_t end, size_t *last) {
  const __m256i nl = _mm256_set1_epi8('\n'), cr = _mm256_set1_epi8('\r');
  uint64_t n = 0;
  size_t i = from, at = SIZE_MAX;
  for (; i + 65 <= to; i += 64) { /* byte i+64 exists and is before to */
    __m256i v0 = _mm256_loadu_si256((const __m256i *)(buf + i));
    __m256i v1 = _mm256_loadu_si256((const __m256i *)(buf + i + 32));
    uint64_t mn = (uint32_t)_mm256_movemask_epi8(_mm256_cmpeq_epi8(v0, nl)) |
                  (uint64_t)(uint32_t)_mm256_movemask_epi8(_mm256_cmpeq_epi8(v1, nl)) << 32;
    uint64_t mr = (uint32_t)_mm256_movemask_epi8(_mm256_cmpeq_epi8(v0, cr)) |
                  (uint64_t)(uint32_t)_mm256_movemask_epi8(_mm256_cmpeq_epi8(v1, cr)) << 32;
    /* bit j: byte i+j+1 is a \n (the last one from the byte after the block) */
    uint64_t mw = mn >> 1 | (uint64_t)(buf[i + 64] == '\n') << 63;
    n += (uint64_t)__builtin_popcountll(mn) + (uint64_t)__builtin_popcountll(mr & ~mw);
    uint64_t any = mn | mr;
    size_t top = i + 63 - (size_t)__builtin_clzll(any | 1); /* any == 0: not used */
    at = any ? top : at;
  }
  if (at != SIZE_MAX) *last = at;
  return n + terms_memchr(buf, i, to, end, last);
}
#endif

static uint64_t count_terms(bool avx2, const char *buf, size_t from, size_t to, size_t end,
                            size_t *last) {
#ifdef SCAN_AVX2
  if (avx2) return terms_avx2(buf, from, to, end, last);
#endif
  (void)avx2;
  return terms_memchr(buf, from, to, end, last);
}

/* The lines ended in buf[from..to) of a scan's buffer (end: its text's end). */
static uint64_t count_lines(const ddx_scan_t *s, const char *buf, size_t from, size_t to,
                            size_t end) {
  size_t last = SIZE_MAX;
  return count_terms(s->avx2, buf, from, to, end, &last);
}

/* The first line terminator (\n or \r) in buf[from..end), or end. */
static size_t next_term(const char *buf, size_t from, size_t end) {
#if defined(__SSE2__)
  const __m128i nl = _mm_set1_epi8('\n'), cr = _mm_set1_epi8('\r');
  for (; from + 16 <= end; from += 16) {
    __m128i v = _mm_loadu_si128((const __m128i *)(buf + from));
    unsigned m =
        (unsigned)_mm_movemask_epi8(_mm_or_si128(_mm_cmpeq_epi8(v, nl), _mm_cmpeq_epi8(v, cr)));
    if (m) return from + (unsigned)__builtin_ctz(m);
  }
#endif
  while (from < end && buf[from] != '\n' && buf[from] != '\r')
    from++;
  return from;
}

/* Insertion-sorts cs[0..n) by position; false when it kept moving
 * (over 8n + 4096 moves: the input was not nearly sorted). */
/* Walks the lines of buf[lo..hi) forward once: lpos starts the line
 * numbered line, tpos is its terminator (or hi); end bounds a \r\n pair.
 * A candidate at pos is matched in a window of its line: the whole line,
 * or in a line longer than the normaliser's cap DDX_LINE_MAX bytes that
 * start a little before it (so text at the end of a 50 MB line is still
 * matched); candidates share a window while they fit in it. */
typedef struct line_walk {
  bool avx2;
  const char *buf;
  size_t lpos, tpos, hi, end;
  uint64_t line;
  size_t win_line, win_ls, win_le; /* the current window and its line's start */
  uint64_t win_no;                 /* the window's line number */
} line_walk_t;

static void walk_init(line_walk_t *w, bool avx2, const char *buf, size_t lo, size_t hi, size_t end,
                      uint64_t line) {
  *w = (line_walk_t){avx2, buf, lo, next_term(buf, lo, hi), hi, end, line, (size_t)-1, 0, 0, 0};
}

/* Moves to the line holding pos; returns true when pos starts a new window. */
static bool walk_to(line_walk_t *w, size_t pos) {
  if (w->tpos < pos) { /* past this line: count the lines between at once */
    size_t nx = w->tpos + 1, last = SIZE_MAX;
    if (w->buf[w->tpos] == '\r' && nx < w->end && w->buf[nx] == '\n') nx++;
    w->line++;
    w->lpos = nx;
    if (nx < pos) w->line += count_terms(w->avx2, w->buf, nx, pos, w->end, &last);
    if (last != SIZE_MAX) {
      w->lpos = last + 1;
      if (w->buf[last] == '\r' && w->lpos < w->end && w->buf[w->lpos] == '\n') w->lpos++;
    }
    /* no terminator in [lpos, pos) */
    w->tpos = next_term(w->buf, w->lpos > pos ? w->lpos : pos, w->hi);
  }
  if (w->lpos == w->win_line && pos + LONG_LINE_TAIL < w->win_ls + DDX_LINE_MAX) return false;
  w->win_line = w->lpos;
  w->win_no = w->line;
  w->win_ls = pos - w->lpos > LONG_LINE_LEAD ? pos - LONG_LINE_LEAD : w->lpos;
  w->win_le = w->tpos - w->win_ls > DDX_LINE_MAX ? w->win_ls + DDX_LINE_MAX : w->tpos;
  return true;
}

static bool insertion_sort(cand_t *cs, size_t n) {
  size_t moves = 0, limit = 8 * n + 4096;
  for (size_t i = 1; i < n; i++) {
    cand_t x = cs[i];
    size_t j = i;
    while (j > 0 && cmp_cand(&x, &cs[j - 1]) < 0) {
      if (++moves > limit) {
        cs[j] = x;
        return false;
      }
      cs[j] = cs[j - 1];
      j--;
    }
    cs[j] = x;
  }
  return true;
}

/* Sorts a block's candidates by position. The prefilter reports them as a
 * few nearly sorted runs (its strided pass, then its short-literal pass),
 * so each run is insertion-sorted (qsort when that keeps moving, so that
 * no input makes it quadratic) and the runs are merged through tmp. */
static int sort_cands(ddx_vec_t *cands, ddx_vec_t *tmp) {
  enum { MAX_RUNS = 64 };
  cand_t *cs = cands->data;
  size_t n = cands->len, run[MAX_RUNS + 1], nruns = 0;
  run[0] = 0;
  for (size_t i = 1; i <= n; i++) {
    /* a run ends where positions fall back by more than a literal spans */
    if (i < n && cs[i].pos + 4096 >= cs[i - 1].pos) continue;
    if (nruns == MAX_RUNS) { /* not the prefilter's shape: sort it all */
      qsort(cs, n, sizeof *cs, cmp_cand);
      return 0;
    }
    size_t from = run[nruns];
    if (!insertion_sort(cs + from, i - from)) qsort(cs + from, i - from, sizeof *cs, cmp_cand);
    run[++nruns] = i;
  }
  if (nruns < 2) return 0;
  if (ddx_vec_reserve(tmp, n)) return DDX_ENOMEM;
  cand_t *t = tmp->data;
  /* merge run k into the sorted prefix cs[0..run[k]) */
  for (size_t k = 1; k < nruns; k++) {
    size_t x = 0, y = run[k], e = run[k + 1], o = 0;
    while (x < run[k] || y < e)
      t[o++] = (y >= e || (x < run[k] && cmp_cand(&cs[x], &cs[y]) <= 0)) ? cs[x++] : cs[y++];
    memcpy(cs, t, e * sizeof *cs);
  }
  return 0;
}

static size_t line_start_of(const char *buf, size_t pos) {
  size_t lo = pos > 65536 ? pos - 65536 : 0;
  const char *n = memrchr(buf + lo, '\n', pos - lo);
  size_t from = n ? (size_t)(n - buf) + 1 : lo;
  const char *r = memrchr(buf + from, '\r', pos - from);
  return r ? (size_t)(r - buf) + 1 : from;
}

static size_t line_end_of(const char *buf, size_t pos, size_t end) {
  const char *n = memchr(buf + pos, '\n', end - pos);
  size_t stop = n ? (size_t)(n - buf) : end;
  const char *r = memchr(buf + pos, '\r', stop - pos);
  return r ? (size_t)(r - buf) : stop;
}

static const ddx_pattern_t *ref_pattern(const ddx_catalog_t *cat, const ddx_literal_ref_t *r) {
  const ddx_rule_t *rule = &cat->rules[r->rule];
  return r->is_ctx ? &rule->ctx[r->pattern] : &rule->sigs[r->pattern];
}

/* Copies the named captures of a match into h->facts (arena-owned). */
static int fill_facts(ddx_scan_t *s, ddx_hit_t *h, const ddx_pattern_t *p, const char *text,
                      const size_t *ov) {
  uint32_t nf = 0;
  for (uint32_t g = 1; g <= p->ncaptures && g < MAX_CAPS; g++)
    if (p->capture_names[g] && ov[2 * g] != (size_t)-1) nf++;
  if (!nf) return 0;
  h->facts = ddx_arena_alloc(&s->arena, nf * sizeof *h->facts);
  if (!h->facts) return DDX_ENOMEM;
  for (uint32_t g = 1; g <= p->ncaptures && g < MAX_CAPS; g++) {
    if (!p->capture_names[g] || ov[2 * g] == (size_t)-1) continue;
    size_t flen = ov[2 * g + 1] - ov[2 * g];
    h->facts[h->nfacts].name = p->capture_names[g];
    h->facts[h->nfacts].value = ddx_arena_strndup(
        &s->arena, text + ov[2 * g], flen < DDX_SCAN_FACT_MAX ? flen : DDX_SCAN_FACT_MAX);
    h->nfacts++;
  }
  return 0;
}

/* The integer a named capture holds, or -1. */
static int64_t capture_int(const ddx_pattern_t *p, const char *text, const size_t *ov,
                           const char *name) {
  for (uint32_t g = 1; g <= p->ncaptures && g < MAX_CAPS; g++) {
    if (!p->capture_names[g] || strcmp(p->capture_names[g], name) || ov[2 * g] == (size_t)-1)
      continue;
    int64_t v = 0;
    size_t k = ov[2 * g];
    if (k >= ov[2 * g + 1]) return -1;
    for (; k < ov[2 * g + 1]; k++) {
      if (text[k] < '0' || text[k] > '9' || v > 100000000) return -1;
      v = v * 10 + (text[k] - '0');
    }
    return v;
  }
  return -1;
}

#define DDX_PROGRESS_MAX_RANKS (1 << 20)

/* Notes that a rank made progress (an event of an anchor-last rule). */
int ddx_scan_note_progress(ddx_scan_t *s, uint32_t rule, int64_t rank, uint64_t line,
                           uint32_t input, const ddx_line_meta_t *meta) {
  if (rank < 0 || rank >= DDX_PROGRESS_MAX_RANKS) return 0;
  ddx_rank_progress_t *pr = &s->progress[rule];
  if ((size_t)rank >= pr->n) {
    size_t n = pr->n ? pr->n : 8;
    while (n <= (size_t)rank)
      n *= 2;
    uint64_t *l = realloc(pr->line, n * sizeof *l);
    if (l) pr->line = l;
    int64_t *t = l ? realloc(pr->ts, n * sizeof *t) : NULL;
    if (t) pr->ts = t;
    uint32_t *in = t ? realloc(pr->input, n * sizeof *in) : NULL;
    if (in) pr->input = in;
    uint32_t *bl = in ? realloc(pr->block, n * sizeof *bl) : NULL;
    if (!bl) return DDX_ENOMEM;
    pr->block = bl;
    memset(pr->line + pr->n, 0, (n - pr->n) * sizeof *pr->line);
    memset(pr->block + pr->n, 0, (n - pr->n) * sizeof *pr->block);
    pr->n = n;
  }
  if (!pr->line[rank]) pr->known++;
  pr->line[rank] = line;
  pr->ts[rank] = meta->ts_ms;
  pr->input[rank] = input;
  return 0;
}

/* Stores a context hit (up to the overall cap); one of a file-scope
 * context only once per input: only whether it occurs there matters
 * (unless the frames place it: then where it is matters too). */
static int keep_ctx(ddx_scan_t *s, const ddx_hit_t *c) {
  const ddx_pattern_t *cp = &s->cat->rules[c->rule].ctx[c->pattern];
  if (cp->scope_file && !cp->every) {
    uint32_t *seen = &s->ctx_file_seen[s->ctx_base[c->rule] + c->pattern];
    if (*seen == c->input + 1) return 0;
    *seen = c->input + 1;
  }
  if (s->ctx_stored >= DDX_SCAN_MAX_CTX_HITS) return 0;
  ddx_hit_t *h = ddx_vec_push(&s->hits);
  if (!h) return DDX_ENOMEM;
  *h = *c;
  s->ctx_stored++;
  return 0;
}

#define CTX_RING_MAX 8192

/* Holds a window-scope context hit until a signature hit below it comes
 * (or it falls out of every window). */
static int ring_ctx(ddx_scan_t *s, const ddx_hit_t *c) {
  if (s->ctx_ring.len >= CTX_RING_MAX) { /* drop the older half */
    size_t keep = CTX_RING_MAX / 2;
    memmove(s->ctx_ring.data, (ddx_hit_t *)s->ctx_ring.data + (s->ctx_ring.len - keep),
            keep * sizeof(ddx_hit_t));
    s->ctx_ring.len = keep;
  }
  ddx_hit_t *h = ddx_vec_push(&s->ctx_ring);
  if (!h) return DDX_ENOMEM;
  *h = *c;
  return 0;
}

/* A signature hit is stored at line of input: the waiting context hits
 * of that input within ctx_before lines above it are kept, older ones of
 * that input dropped (hits of other live inputs wait on). */
static int promote_ctx(ddx_scan_t *s, uint32_t input, uint64_t line) {
  ddx_hit_t *r = s->ctx_ring.data;
  size_t o = 0;
  uint64_t lo = line > (uint64_t)s->ctx_before ? line - (uint64_t)s->ctx_before : 0;
  for (size_t i = 0; i < s->ctx_ring.len; i++) {
    if (r[i].input != input) {
      r[o++] = r[i];
      continue;
    }
    if (r[i].line < lo) continue;
    int rc = keep_ctx(s, &r[i]);
    if (rc) return rc;
  }
  s->ctx_ring.len = o;
  return 0;
}

/* A hit of ref on the line at line/offset, the match starting at ov[0]. */
static ddx_hit_t make_hit(const ddx_scan_t *s, const ddx_literal_ref_t *ref, uint64_t line,
                          uint64_t offset, const size_t *ov, const ddx_line_meta_t *meta) {
  return (ddx_hit_t){.rule = ref->rule,
                     .pattern = ref->pattern,
                     .is_ctx = ref->is_ctx,
                     .input = s->cur,
                     .line = line,
                     .offset = offset,
                     .column = (uint32_t)(ov[0] + 1),
                     .meta = *meta};
}

/* The newest hit of an anchor-last rule past its cap (e.g. the last
 * progress line before a hang) waits in a fixed per-rule slot and replaces
 * the rule's last stored hit when the input ends: memory stays flat. */
static int set_pending(ddx_scan_t *s, const ddx_hit_t *h, const char *text, size_t tlen) {
  ddx_pending_t *pd = &s->pending[h->rule];
  size_t keep = tlen < DDX_SCAN_TEXT_MAX ? tlen : DDX_SCAN_TEXT_MAX;
  if (!pd->text && !(pd->text = malloc(DDX_SCAN_TEXT_MAX + 1))) return DDX_ENOMEM;
  memcpy(pd->text, text, keep);
  pd->text[keep] = 0;
  pd->len = keep;
  pd->active = true;
  pd->hit = *h;
  return 0;
}

static int record_hit(ddx_scan_t *s, const ddx_literal_ref_t *ref, const ddx_pattern_t *p,
                      uint64_t line, uint64_t offset, const ddx_line_meta_t *meta, const char *text,
                      size_t tlen, const size_t *ov) {
  const ddx_rule_t *rule = &s->cat->rules[ref->rule];
  ddx_hit_t hit = make_hit(s, ref, line, offset, ov, meta);
  if (rule->anchor_last && !ref->is_ctx) {
    int64_t rank = meta->rank >= 0 ? meta->rank : capture_int(p, text, ov, "rank");
    int rc = ddx_scan_note_progress(s, ref->rule, rank, line, s->cur, meta);
    if (rc) return rc;
  }
  if (ref->is_ctx) {
    const ddx_scan_input_t *in = &DDX_VEC_AT(&s->inputs, ddx_scan_input_t, s->cur);
    bool near = p->scope_file || line <= in->last_sig + (uint64_t)s->ctx_after;
    if (!near) return ring_ctx(s, &hit);
    size_t before = s->hits.len;
    int rc = keep_ctx(s, &hit);
    /* a clue's captures are facts of the differential's relations */
    if (!rc && p->clue && p->ncaptures && s->hits.len > before)
      rc = fill_facts(s, &DDX_VEC_AT(&s->hits, ddx_hit_t, s->hits.len - 1), p, text, ov);
    return rc;
  }
  s->rule_hits[ref->rule]++;
  if (s->rule_stored[ref->rule] >= DDX_SCAN_MAX_HITS_PER_RULE)
    return rule->anchor_last ? set_pending(s, &hit, text, tlen) : 0;
  int rc = promote_ctx(s, s->cur, line);
  if (rc) return rc;
  DDX_VEC_AT(&s->inputs, ddx_scan_input_t, s->cur).last_sig = line;
  s->rule_stored[ref->rule]++;
  ddx_hit_t *h = ddx_vec_push(&s->hits);
  if (!h) return DDX_ENOMEM;
  s->rule_last[ref->rule] = s->hits.len;
  *h = hit;
  h->text = ddx_arena_strndup(&s->arena, text, tlen < DDX_SCAN_TEXT_MAX ? tlen : DDX_SCAN_TEXT_MAX);
  if (!h->text) return DDX_ENOMEM;
  /* Captures index the whole normalised line, not the capped copy. */
  return fill_facts(s, h, p, text, ov);
}

/* Moves pending anchor-last hits into their rule's last stored slot. */
static int settle_pending(ddx_scan_t *s) {
  size_t ov[2 * MAX_CAPS];
  for (size_t r = 0; r < s->cat->nrules; r++) {
    ddx_pending_t *pd = &s->pending[r];
    if (!pd->active) continue;
    pd->active = false;
    ddx_hit_t *h = &DDX_VEC_AT(&s->hits, ddx_hit_t, s->rule_last[r] - 1);
    *h = pd->hit;
    h->text = ddx_arena_strndup(&s->arena, pd->text, pd->len);
    if (!h->text) return DDX_ENOMEM;
    const ddx_pattern_t *p = &s->cat->rules[r].sigs[h->pattern];
    if (ddx_pattern_match(p, h->text, pd->len, s->md, ov, MAX_CAPS) == 1) {
      int rc = fill_facts(s, h, p, h->text, ov);
      if (rc) return rc;
    }
  }
  return 0;
}

static int push_frame(ddx_scan_t *s, const ddx_frame_t *f) {
  if (s->frames.len >= DDX_SCAN_MAX_FRAMES) return 0;
  ddx_frame_t *slot = ddx_vec_push(&s->frames);
  if (!slot) return DDX_ENOMEM;
  *slot = *f;
  return 0;
}

/* The function name that starts at p (up to a space, a tab, "(" or a
 * box-drawing bar), arena-copied. */
static const char *frame_func(ddx_scan_t *s, const char *p, const char *end) {
  const char *e = p;
  while (e < end && *e != ' ' && *e != '\t' && *e != '(' && (unsigned char)*e != 0xe2)
    e++;
  return e > p ? ddx_arena_strndup(&s->arena, p, (size_t)(e - p) > 120 ? 120 : (size_t)(e - p))
               : NULL;
}

static uint32_t frame_lineno(const char **q, const char *end) {
  uint32_t n = 0;
  while (*q < end && **q >= '0' && **q <= '9' && n < 100000000)
    n = n * 10 + (uint32_t)(*(*q)++ - '0');
  return n;
}

/* Frames of the plain dialect, `File "path", line N, in func`: every one
 * on the line (a traceback flattened onto one line holds several). */
static int plain_frames(ddx_scan_t *s, ddx_frame_t *f, const char *text, size_t tlen) {
  const char *end = text + tlen, *p = text;
  const char *cut = memmem(text, tlen, ".py\", line ", 11);
  if (cut && !memmem(text, (size_t)(cut - text), "File \"", 6)) {
    /* a frame line cut at its start (`…/arguments.py", line 561, in f`):
     * the path is what is left of it, from the line's first non-blank */
    const char *fs = text;
    while (fs < cut && (*fs == ' ' || *fs == '\t'))
      fs++;
    if (cut - fs >= 1 && !memchr(fs, ' ', (size_t)(cut - fs))) {
      const char *q = cut + 11;
      f->lineno = frame_lineno(&q, end);
      size_t fl = (size_t)(cut + 3 - fs) > 300 ? 300 : (size_t)(cut + 3 - fs);
      f->file = ddx_arena_strndup(&s->arena, fs, fl);
      if (!f->file) return DDX_ENOMEM;
      f->func = end - q > 5 && !memcmp(q, ", in ", 5) ? frame_func(s, q + 5, end) : NULL;
      if (f->func) {
        int rc = push_frame(s, f);
        if (rc) return rc;
      }
      p = q;
    }
  }
  while ((p = memmem(p, (size_t)(end - p), "File \"", 6))) {
    const char *fs = p + 6;
    const char *fe = memchr(fs, '"', (size_t)(end - fs));
    p = fs;
    if (!fe || end - fe < 8 || memcmp(fe, "\", line ", 8)) continue;
    const char *q = fe + 8;
    f->lineno = frame_lineno(&q, end);
    f->file = ddx_arena_strndup(&s->arena, fs, (size_t)(fe - fs) > 300 ? 300 : (size_t)(fe - fs));
    if (!f->file) return DDX_ENOMEM;
    f->func = end - q > 5 && !memcmp(q, ", in ", 5) ? frame_func(s, q + 5, end) : NULL;
    int rc = push_frame(s, f);
    if (rc) return rc;
    p = q;
  }
  return 0;
}

/* Frames of the IPython/notebook dialect (`File /path.py:123, in f(...)`)
 * and of rich (`│ /path.py:123 in f   │`): a path, ":", the line, then
 * ", in " or " in ". */
static int path_colon_frame(ddx_scan_t *s, ddx_frame_t *f, const char *text, size_t tlen,
                            const char *lead, size_t leadlen, const char *next, size_t nlen) {
  const char *end = text + tlen;
  const char *p = memmem(text, tlen, lead, leadlen);
  if (!p) return 0;
  const char *fs = p + leadlen - 1; /* the path starts with the lead's last byte */
  const char *fe = fs;
  while (fe < end && *fe != ' ' && !(*fe == ':' && fe + 1 < end && fe[1] >= '0' && fe[1] <= '9'))
    fe++;
  if (fe - fs >= 3 && fe[-1] == ':' && next) {
    /* rich wraps a long path in a narrow box: `│ /long/path.py: │`, then
     * `│ 891 in f │` on the next line */
    const char *w = memmem(next, nlen, "\xe2\x94\x82 ", 4), *nend = next + nlen;
    if (!w) return 0;
    for (w += 4; w < nend && *w == ' '; w++) {
    }
    if (w >= nend || *w < '0' || *w > '9') return 0;
    uint32_t n = frame_lineno(&w, nend);
    if (nend - w <= 4 || memcmp(w, " in ", 4)) return 0;
    f->lineno = n;
    size_t fl = (size_t)(fe - 1 - fs) > 300 ? 300 : (size_t)(fe - 1 - fs);
    f->file = ddx_arena_strndup(&s->arena, fs, fl);
    if (!f->file) return DDX_ENOMEM;
    f->func = frame_func(s, w + 4, nend);
    return push_frame(s, f);
  }
  if (fe >= end || *fe != ':' || fe - fs < 2) return 0;
  const char *q = fe + 1;
  uint32_t n = frame_lineno(&q, end);
  if (end - q > 5 && !memcmp(q, ", in ", 5))
    q += 5;
  else if (end - q > 4 && !memcmp(q, " in ", 4))
    q += 4;
  else
    return 0;
  f->lineno = n;
  f->file = ddx_arena_strndup(&s->arena, fs, (size_t)(fe - fs) > 300 ? 300 : (size_t)(fe - fs));
  if (!f->file) return DDX_ENOMEM;
  f->func = frame_func(s, q, end);
  return push_frame(s, f);
}

/* Records a traceback start or frame line (parsed by hand: these lines are
 * frequent, a regex would cost more than the rest of the line). */
static int record_frame(ddx_scan_t *s, uint16_t kind, uint64_t line, const ddx_line_meta_t *meta,
                        const char *text, size_t tlen, const char *next, size_t nlen) {
  if (s->frames.len >= DDX_SCAN_MAX_FRAMES) return 0;
  ddx_frame_t f = {
      .input = s->cur, .line = line, .rank = meta->rank, .local_rank = meta->local_rank};
  memcpy(f.host, meta->host, sizeof f.host);
  switch (kind) {
  case DDX_BUILTIN_TB_START:
    if (!memmem(text, tlen, "Traceback (most recent call last)", 33)) return 0;
    f.start = true;
    return push_frame(s, &f);
  case DDX_BUILTIN_TB_FRAME:
    return plain_frames(s, &f, text, tlen);
  case DDX_BUILTIN_TB_NOTEBOOK:
    return memmem(text, tlen, "File /", 6)
               ? path_colon_frame(s, &f, text, tlen, "File /", 6, NULL, 0)
               : path_colon_frame(s, &f, text, tlen, "File ~", 6, NULL, 0);
  default: /* DDX_BUILTIN_TB_RICH: "│ /" or "│ ~" (the bar is 3 bytes) */
    return memmem(text, tlen, "\xe2\x94\x82 /", 5)
               ? path_colon_frame(s, &f, text, tlen, "\xe2\x94\x82 /", 5, next, nlen)
               : path_colon_frame(s, &f, text, tlen, "\xe2\x94\x82 ~", 5, next, nlen);
  }
}

/* Normalises one candidate line and runs the patterns its literals point at. */
/* Normalises text (the line [ls, le) of the buffer, or that line joined
 * with the lines it was wrapped onto) and runs the patterns its literals
 * point at. */
/* Whether a candidate line's literals belong only to file-scope contexts
 * (token clues, "anywhere in the input") already kept for this input:
 * the line can teach nothing, so it is not even normalised (a GPU log's
 * every "NCCL" line once the first was kept). */
static bool only_kept_contexts(const ddx_scan_t *s, const ddx_literal_ref_t **refs, size_t nrefs) {
  for (size_t i = 0; i < nrefs; i++) {
    if (refs[i]->rule == DDX_BUILTIN_RULE || !refs[i]->is_ctx) return false;
    const ddx_pattern_t *p = ref_pattern(s->cat, refs[i]);
    if (!p->scope_file || p->every || !p->clue ||
        s->ctx_file_seen[s->ctx_base[refs[i]->rule] + refs[i]->pattern] != s->cur + 1)
      return false;
  }
  return nrefs > 0;
}

static int eval_text(ddx_scan_t *s, const char *text, size_t len, size_t ls, size_t le,
                     uint64_t line, const ddx_literal_ref_t **refs, size_t nrefs) {
  if (only_kept_contexts(s, refs, nrefs)) return 0;
  ddx_line_meta_t meta;
  meta = ((const ddx_scan_input_t *)s->inputs.data)[s->cur].defaults;
  size_t tlen = ddx_line_normalize(text, len, s->norm, DDX_LINE_MAX + 1, &meta);
  ddx_layout_note_host(s->layout, meta.host);
  ddx_layout_note_ranks(s->layout, meta.rank, meta.local_rank);
  ddx_layout_note_dialects(s->layout, &meta);
  size_t ov[2 * MAX_CAPS];
  for (size_t i = 0; i < nrefs; i++) {
    if (refs[i]->rule == DDX_BUILTIN_RULE && refs[i]->pattern == DDX_BUILTIN_LAYOUT) {
      /* Layout lines (a 128-node WORLD INFO DICT) outgrow the normalised
       * line cap: parse a NUL-terminated copy of the raw line instead. */
      /* the whole line, not the window an overlong line is matched in */
      size_t fs = line_start_of(s->buf, ls), fe = line_end_of(s->buf, le, s->len);
      size_t rl = fe - fs < DDX_LAYOUT_LINE_MAX ? fe - fs : DDX_LAYOUT_LINE_MAX;
      if (!s->raw && !(s->raw = malloc(DDX_LAYOUT_LINE_MAX + 1))) return DDX_ENOMEM;
      memcpy(s->raw, s->buf + fs, rl);
      s->raw[rl] = 0;
      ddx_layout_parse(s->layout, s->raw, rl, &meta);
      continue;
    }
    if (refs[i]->rule == DDX_BUILTIN_RULE) {
      /* the raw next line, for a frame that rich wrapped onto two */
      size_t ns = line_end_of(s->buf, le, s->len);
      if (ns < s->len && s->buf[ns] == '\r') ns++;
      if (ns < s->len && s->buf[ns] == '\n') ns++;
      size_t ne = ns < s->len ? line_end_of(s->buf, ns, s->len) : ns;
      if (ne - ns > 400) ne = ns + 400;
      int rc = record_frame(s, refs[i]->pattern, line, &meta, s->norm, tlen, s->buf + ns, ne - ns);
      if (rc) return rc;
      continue;
    }
    const ddx_pattern_t *p = ref_pattern(s->cat, refs[i]);
    /* a file-scope context already kept for this input: nothing to learn */
    if (refs[i]->is_ctx && p->scope_file && !p->every &&
        s->ctx_file_seen[s->ctx_base[refs[i]->rule] + refs[i]->pattern] == s->cur + 1)
      continue;
    int m = ddx_pattern_match(p, s->norm, tlen, s->md, ov, MAX_CAPS);
    if (m < 0) {
      s->regex_errors++;
      s->rule_regex_errors[refs[i]->rule]++;
      continue;
    }
    if (m == 0) continue;
    int rc = record_hit(s, refs[i], p, line, s->base + ls, &meta, s->norm, tlen, ov);
    if (rc) return rc;
  }
  return 0;
}

static int eval_line(ddx_scan_t *s, size_t ls, size_t le, uint64_t line,
                     const ddx_literal_ref_t **refs, size_t nrefs) {
  return eval_text(s, s->buf + ls, le - ls, ls, le, line, refs, nrefs);
}

static int same_ref(const ddx_literal_ref_t *a, const ddx_literal_ref_t *b) {
  return a->rule == b->rule && a->pattern == b->pattern && a->is_ctx == b->is_ctx;
}

/* Whether a candidate waits for the block's backward pass: a signature of
 * an anchor-last rule that has stored all the hits it may. */
static bool is_deferred(const ddx_scan_t *s, const ddx_literal_ref_t *r) {
  return !r->is_ctx && r->rule != DDX_BUILTIN_RULE && s->cat->rules[r->rule].anchor_last &&
         s->rule_stored[r->rule] >= DDX_SCAN_MAX_HITS_PER_RULE;
}

/* The backward pass over a block's deferred candidates (see
 * ddx_rank_progress_t): newest first, each rule stops once its newest
 * event and the newest event of every rank it knows are found. */
static int eval_deferred(ddx_scan_t *s, uint8_t *state, size_t *done, size_t *openp) {
  const deferred_t *ds = s->deferred.data;
  size_t nd = s->deferred.len, open = *openp;
  size_t ov[2 * MAX_CAPS], norm_ls = (size_t)-1, tlen = 0;
  ddx_line_meta_t meta;
  int rc = 0;
  for (size_t i = nd; i-- > 0 && !rc;) {
    const deferred_t *d = &ds[i];
    uint32_t rule = d->ref->rule;
    ddx_rank_progress_t *pr = &s->progress[rule];
    if (state[rule] == 3) {
      s->rule_hits[rule]++; /* skipped: counted as an event */
      continue;
    }
    if (!open) break;
    if (norm_ls != d->ls) {
      meta = ((const ddx_scan_input_t *)s->inputs.data)[s->cur].defaults;
      tlen = ddx_line_normalize(s->buf + d->ls, d->le - d->ls, s->norm, DDX_LINE_MAX + 1, &meta);
      ddx_layout_note_host(s->layout, meta.host);
      ddx_layout_note_ranks(s->layout, meta.rank, meta.local_rank);
      ddx_layout_note_dialects(s->layout, &meta);
      norm_ls = d->ls;
    }
    const ddx_pattern_t *p = ref_pattern(s->cat, d->ref);
    bool rank_done = meta.rank >= 0 && (size_t)meta.rank < pr->n && pr->block &&
                     pr->block[meta.rank] == s->block;
    bool need = state[rule] == 1 || (meta.rank >= 0 ? !rank_done : p->has_rank);
    if (!need) {
      s->rule_hits[rule]++;
      continue;
    }
    int m = ddx_pattern_match(p, s->norm, tlen, s->md, ov, MAX_CAPS);
    if (m < 0) {
      s->regex_errors++;
      s->rule_regex_errors[rule]++;
    }
    if (m > 0) {
      s->rule_hits[rule]++;
      int64_t rank = meta.rank >= 0 ? meta.rank : capture_int(p, s->norm, ov, "rank");
      bool fresh = rank >= 0 && !((size_t)rank < pr->n && pr->block[rank] == s->block);
      if (fresh) {
        rc = ddx_scan_note_progress(s, rule, rank, d->line, s->cur, &meta);
        if (!rc && (size_t)rank < pr->n) {
          pr->block[rank] = s->block;
          done[rule]++;
        }
      }
      if (state[rule] == 1) {
        ddx_hit_t h = make_hit(s, d->ref, d->line, s->base + d->ls, ov, &meta);
        if (!(rc = set_pending(s, &h, s->norm, tlen))) state[rule] = 2;
      }
    }
    if (state[rule] == 2 && done[rule] >= pr->known) {
      state[rule] = 3;
      open--;
    }
  }
  *openp = open;
  return rc;
}

/* Per-rule state of a block's backward pass: 0 untouched, 1 searching,
 * 2 newest found, 3 done; done[r]: ranks found. */
typedef struct back_state {
  uint8_t *state;
  size_t *done;
  size_t open;
} back_state_t;

static int back_init(ddx_scan_t *s, back_state_t *b) {
  b->state = calloc(s->cat->nrules + 1, 1);
  b->done = calloc(s->cat->nrules + 1, sizeof *b->done);
  b->open = 0;
  if (b->state && b->done) return 0;
  free(b->state);
  free(b->done);
  return DDX_ENOMEM;
}

static void back_free(back_state_t *b) {
  free(b->state);
  free(b->done);
}

/* The deferred candidates of a block where a rule reached its cap. */
static int eval_deferred_block(ddx_scan_t *s) {
  back_state_t b;
  if (back_init(s, &b)) return DDX_ENOMEM;
  const deferred_t *ds = s->deferred.data;
  for (size_t i = 0; i < s->deferred.len; i++)
    if (!b.state[ds[i].ref->rule]) {
      b.state[ds[i].ref->rule] = 1;
      b.open++;
    }
  int rc = eval_deferred(s, b.state, b.done, &b.open);
  back_free(&b);
  return rc;
}

/* Whether every anchor-last rule has stored its cap: then a block's
 * progress literals need not be looked for in all of it. */
static bool progress_saturated(const ddx_scan_t *s) {
  if (!s->cat->pf_last) return false;
  for (size_t r = 0; r < s->cat->nrules; r++)
    if (s->cat->rules[r].anchor_last && s->cat->rules[r].nsigs &&
        s->rule_stored[r] < DDX_SCAN_MAX_HITS_PER_RULE)
      return false;
  return true;
}

static int collect_rest_cb(void *ctx, uint32_t lit, size_t pos) {
  ddx_scan_t *s = ctx;
  return collect_cb(ctx, s->cat->rest_ids[lit], pos);
}

static int collect_last_cb(void *ctx, uint32_t lit, size_t pos) {
  ddx_scan_t *s = ctx;
  return collect_cb(ctx, s->cat->last_ids[lit], pos);
}

#define TAIL_CHUNK (64u << 10)

/* A saturated block's progress: its progress literals are looked for from
 * the end backwards, 64 KiB at a time, each stretch's candidates read
 * newest first, until every anchor-last rule has its newest event and
 * every rank it knows (ddx_rank_progress_t). Lines are numbered back
 * from the block's end. */
static int tail_progress(ddx_scan_t *s, size_t end) {
  back_state_t b;
  if (back_init(s, &b)) return DDX_ENOMEM;
  for (size_t r = 0; r < s->cat->nrules; r++)
    if (s->cat->rules[r].anchor_last && s->cat->rules[r].nsigs) {
      b.state[r] = 1;
      b.open++;
    }
  const char *buf = s->buf;
  uint64_t line_end = s->line_no, terms_hi = 0;
  size_t hi = end;
  int rc = 0;
  while (!rc && hi > 0 && b.open) {
    size_t lo = hi > TAIL_CHUNK ? hi - TAIL_CHUNK : 0;
    if (lo > 0) { /* back to a line start, not between \r and \n */
      while (lo > 0 && buf[lo - 1] != '\n' && buf[lo - 1] != '\r')
        lo--;
      if (lo > 0 && buf[lo - 1] == '\r' && lo < end && buf[lo] == '\n') lo++;
      if (lo >= hi) lo = 0;
    }
    uint64_t terms_lo = terms_hi + count_lines(s, buf, lo, hi, end);
    s->cands.len = 0;
    rc = ddx_prefilter_scan(s->cat->pf_last, buf + lo, hi - lo, collect_last_cb, s);
    cand_t *cs = s->cands.data;
    size_t nc = s->cands.len;
    for (size_t i = 0; i < nc; i++)
      cs[i].pos += lo;
    if (!rc && nc > 1) rc = sort_cands(&s->cands, &s->cands_tmp);
    cs = s->cands.data;
    s->deferred.len = 0;
    line_walk_t w;
    walk_init(&w, s->avx2, buf, lo, hi, end, line_end - terms_lo);
    for (size_t i = 0; !rc && i < nc; i++) {
      walk_to(&w, cs[i].pos);
      deferred_t *d = ddx_vec_push(&s->deferred);
      if (!d) {
        rc = DDX_ENOMEM;
        break;
      }
      *d = (deferred_t){w.win_ls, w.win_le, w.win_no, &s->cat->lit_refs[cs[i].lit]};
    }
    if (!rc) rc = eval_deferred(s, b.state, b.done, &b.open);
    terms_hi = terms_lo;
    hi = lo;
  }
  back_free(&b);
  return rc;
}

/* Processes buf[0..end): every line in it is complete (end is just past a
 * terminator, or the input ended). */
/* ---- hard-wrapped input (a paste from a narrow terminal, fold, e-mail) ----
 * A line broken at width W goes on in the next line, and a signature's
 * words (or its literal) may sit on both sides of the break. An input is
 * wrapped when, in its first buffer with three or more lines of 40+
 * bytes, the longest line is 70-240 bytes and at least three, and a
 * quarter, of the long lines come within WRAP_SLACK of it and are
 * followed by a continuation. Its lines are then joined again before they are matched:
 * a line within WRAP_SLACK of W with the continuations after it (at most
 * WRAP_MAX_LINES), numbered by its first line. */
#define WRAP_SLACK 15
#define WRAP_MAX_LINES 6

static size_t content_end(const char *buf, size_t ls, size_t le) {
  return le > ls && buf[le - 1] == '\r' ? le - 1 : le;
}

/* The lines of buf[pos, end), one by one (see phys_next). */
typedef struct phys_iter {
  const char *buf;
  size_t pos, end;
} phys_iter_t;

/* One of them: its content [ls, ce) (a \r before the \n taken off), and
 * whether a '\n' ends it (the last one may have none). */
typedef struct phys_line {
  size_t ls, ce;
  bool nl;
} phys_line_t;

static phys_iter_t phys_iter(const char *buf, size_t from, size_t end) {
  return (phys_iter_t){buf, from, end};
}

/* The next line into *l; false at the end. */
static bool phys_next(phys_iter_t *it, phys_line_t *l) {
  if (it->pos >= it->end) return false;
  const char *nl = memchr(it->buf + it->pos, '\n', it->end - it->pos);
  size_t le = nl ? (size_t)(nl - it->buf) : it->end;
  l->ls = it->pos;
  l->ce = content_end(it->buf, l->ls, le);
  l->nl = nl != NULL;
  it->pos = nl ? le + 1 : it->end;
  return true;
}

/* Whether the line [ns, ne) goes on the line [ls, le) before it: not
 * blank, not indented, not a record of its own (a log prefix, a bracket,
 * a traceback's lines, an exception, a logger level) and not starting
 * like the line it would continue (a repeated record: tqdm bars, rank
 * lines). */
static bool wrap_continues(const char *buf, char *norm, size_t ls, size_t le, size_t ns, size_t ne,
                           size_t width) {
  const char *t = buf + ns;
  size_t n = ne - ns;
  /* a line of exactly the width broke mid-text, wherever the break fell:
   * its next line may start with a bracket or a sign ("block: [5," then
   * "0,0]", "... shape " then "[4096]") */
  bool exact = le - ls == width;
  /* a box of rich's (│ ╭ ╰ ┃): fixed-width lines, never a wrap */
  if ((n >= 2 && (unsigned char)t[0] == 0xe2 && ((unsigned char)t[1] & 0xfe) == 0x94) ||
      (le - ls >= 2 && (unsigned char)buf[ls] == 0xe2 &&
       ((unsigned char)buf[ls + 1] & 0xfe) == 0x94))
    return false;
  /* one blank: the space a word wrap broke at, moved to the next line */
  if (n > 1 && t[0] == ' ' && t[1] != ' ' && t[1] != '\t') t++, n--;
  if (n == 0 || strchr(exact ? " \t" : " \t[({<|+#>*-", t[0])) return false;
  if (le - ls >= 8 && n >= 8 && !memcmp(buf + ls, t, 8)) return false;
  /* "… options:" then "NCCL_BLOCKING_WAIT: 0": a list, not a wrap */
  const char *colon = memchr(t, ':', n < 64 ? n : 64);
  if (le > ls && buf[le - 1] == ':' && colon && colon + 1 < t + n && colon[1] == ' ' &&
      !memchr(t, ' ', (size_t)(colon - t)))
    return false;
  static const char *const starts[] = {"Traceback",
                                       "During handling",
                                       "The above exception",
                                       "INFO",
                                       "WARNING",
                                       "WARN",
                                       "ERROR",
                                       "DEBUG",
                                       "CRITICAL",
                                       "FATAL",
                                       NULL};
  for (size_t k = 0; starts[k]; k++)
    if (n >= strlen(starts[k]) && !memcmp(t, starts[k], strlen(starts[k]))) return false;
  /* an exception line: a dotted name ending in Error/Exception/Warning and ':' */
  size_t w = 0;
  while (w < n && w < 120 && (isalnum((unsigned char)t[w]) || t[w] == '_' || t[w] == '.'))
    w++;
  if (w < n && t[w] == ':' && w >= 5 &&
      (memmem(t, w, "Error", 5) || memmem(t, w, "Exception", 9) || memmem(t, w, "Warning", 7)))
    return false;
  ddx_line_meta_t meta;
  ddx_line_meta_init(&meta);
  size_t cap = n < DDX_LINE_MAX ? n : DDX_LINE_MAX;
  size_t tlen = ddx_line_normalize(t, cap, norm, DDX_LINE_MAX + 1, &meta);
  return meta.rank < 0 && meta.local_rank < 0 && !meta.host[0] && meta.ts_ms < 0 && !meta.level &&
         tlen + 2 >= cap;
}

/* The width the lines of buf [from, end) were wrapped at: -1 not decided
 * yet, 0 none; *words: wrapped at spaces. */
static int32_t wrap_width(const char *buf, size_t from, size_t end, char *norm, bool *words) {
  size_t max = 0, nlong = 0, near = 0, exact = 0;
  phys_line_t l, next;
  for (phys_iter_t it = phys_iter(buf, from, end); phys_next(&it, &l);) {
    if (memchr(buf + l.ls, '\r', l.ce - l.ls))
      return 0; /* bare \r line ends (a terminal's redraws): not a paste to rejoin */
    size_t n = l.ce - l.ls;
    if (n > max) max = n;
    if (n >= 40) nlong++;
  }
  if (nlong < 3) return -1;            /* not decided: too little to tell */
  if (max < 70 || max > 240) return 0; /* 72-80 columns, up to a wide terminal */
  phys_iter_t it = phys_iter(buf, from, end);
  for (bool more = phys_next(&it, &l); more && phys_next(&it, &next); l = next) {
    if (l.ce - l.ls + WRAP_SLACK >= max &&
        wrap_continues(buf, norm, l.ls, l.ce, next.ls, next.ce, max)) {
      near++;
      exact += l.ce - l.ls == max;
    }
  }
  /* a terminal breaks at exactly the width, mid-word; fold -s and mail at
   * a space, which the join puts back */
  *words = exact * 5 < near * 4;
  return near >= 3 && near * 4 >= nlong ? (int32_t)max : 0;
}

/* The HTML entities a log's text takes when copied from a page's source
 * or an export, and what they stand for. */
static const struct {
  const char *e;
  char c;
} html_entities[] = {{"&quot;", '"'}, {"&#x27;", '\''}, {"&#39;", '\''}, {"&lt;", '<'},
                     {"&gt;", '>'},   {"&#x2F;", '/'},  {"&amp;", '&'},  {NULL, 0}};

/* The entity of html_entities at t[0, n) (its index), or -1. */
static int html_entity_at(const char *t, size_t n) {
  if (!n || t[0] != '&') return -1;
  for (int k = 0; html_entities[k].e; k++) {
    size_t el = strlen(html_entities[k].e);
    if (n >= el && !memcmp(t, html_entities[k].e, el)) return k;
  }
  return -1;
}

/* Whether b[0, len) is HTML-escaped (-1: not decided yet): three or more
 * entities, and more of them than raw double quotes. */
static int8_t html_escaped(const char *b, size_t len) {
  size_t lim = len < 65536 ? len : 65536, ents = 0, quotes = 0;
  for (size_t i = 0; i < lim; i++) {
    if (b[i] == '"') quotes++;
    if (html_entity_at(b + i, lim - i) >= 0) ents++;
  }
  if (ents >= 3 && ents > quotes) return 1;
  return lim >= 4096 ? 0 : -1; /* enough seen to say no */
}

/* Whether an input that starts with data[0, len) has its lines joined or
 * decoded (hard-wrapped, HTML-escaped): split.c scans such a file in one
 * pass, as its parts could decide apart. */
bool ddx_scan_rejoins(const char *data, size_t len) {
  char *norm = malloc(DDX_LINE_MAX + 1);
  if (!norm) return false;
  bool words;
  size_t end = len;
  const char *nl = memrchr(data, '\n', len);
  if (nl) end = (size_t)(nl - data) + 1; /* whole lines only */
  bool r = wrap_width(data, 0, end, norm, &words) > 0 || html_escaped(data, len) == 1;
  free(norm);
  return r;
}

/* Decodes the entities of text[0, n) in place; returns the new length. */
static size_t html_decode(char *t, size_t n) {
  size_t o = 0;
  for (size_t i = 0; i < n;) {
    int k = html_entity_at(t + i, n - i);
    if (k >= 0) {
      t[o++] = html_entities[k].c;
      i += strlen(html_entities[k].e);
    } else {
      t[o++] = t[i++];
    }
  }
  return o;
}

/* The joined lines of the buffer [count_pos, end), in s->groups: a
 * hard-wrapped line with its continuations, and in an HTML-escaped input
 * each line with an entity (matched decoded). */
static int wrap_groups(ddx_scan_t *s, size_t end) {
  s->groups.len = 0;
  ddx_scan_input_t *in = &((ddx_scan_input_t *)s->inputs.data)[s->cur];
  if (in->wrap < 0) in->wrap = wrap_width(s->buf, s->count_pos, end, s->norm, &in->wrap_words);
  if (in->html < 0) in->html = html_escaped(s->buf + s->count_pos, end - s->count_pos);
  if (in->wrap <= 0 && in->html != 1) return 0;
  size_t w = in->wrap > 0 ? (size_t)in->wrap : SIZE_MAX - WRAP_SLACK;
  uint64_t no = s->line_no;
  phys_line_t l, next;
  for (phys_iter_t it = phys_iter(s->buf, s->count_pos, end); phys_next(&it, &l);) {
    size_t start = l.ls, lines = 1;
    uint64_t first = no;
    /* extend while this line reaches the width and the next goes on it */
    while (l.nl && lines < WRAP_MAX_LINES && l.ce - l.ls + WRAP_SLACK >= w) {
      phys_iter_t ahead = it;
      if (!phys_next(&ahead, &next) ||
          !wrap_continues(s->buf, s->norm, l.ls, l.ce, next.ls, next.ce, w))
        break;
      it = ahead, l = next, lines++, no++;
    }
    if (lines > 1 || (in->html == 1 && memchr(s->buf + start, '&', l.ce - start))) {
      wrap_group_t *g = ddx_vec_push(&s->groups);
      if (!g) return DDX_ENOMEM;
      *g = (wrap_group_t){start, l.ce, first};
    }
    no++;
  }
  return 0;
}

typedef struct {
  const ddx_catalog_t *cat;
  const uint32_t *map; /* the prefilter's literal ids to the catalog's (or NULL) */
  const ddx_literal_ref_t *refs[MAX_REFS_PER_LINE];
  size_t n;
} group_refs_t;

static int group_cb(void *ctx, uint32_t lit, size_t pos) {
  (void)pos;
  group_refs_t *g = ctx;
  const ddx_literal_ref_t *r = &g->cat->lit_refs[g->map ? g->map[lit] : lit];
  for (size_t k = 0; k < g->n; k++)
    if (same_ref(g->refs[k], r)) return 0;
  if (g->n < MAX_REFS_PER_LINE) g->refs[g->n++] = r;
  return 0;
}

/* Matches one joined line: its physical lines with the break taken out
 * (a space where a word wrap dropped one, nothing after a break at
 * exactly the width). */
static int eval_group(ddx_scan_t *s, const wrap_group_t *g, bool sat) {
  if (!s->join && !(s->join = malloc(DDX_LINE_MAX + 1))) return DDX_ENOMEM;
  const ddx_scan_input_t *in = &((const ddx_scan_input_t *)s->inputs.data)[s->cur];
  size_t n = 0;
  phys_line_t l;
  for (phys_iter_t it = phys_iter(s->buf, g->start, g->end);
       n < DDX_LINE_MAX && phys_next(&it, &l);) {
    size_t k = l.ce - l.ls < DDX_LINE_MAX - n ? l.ce - l.ls : DDX_LINE_MAX - n;
    memcpy(s->join + n, s->buf + l.ls, k);
    n += k;
    if (!l.nl) break;
    /* a word wrap broke at a space, which it may have dropped; a line of
     * exactly the width was broken there, mid-word (a terminal's wrap in
     * an input that mixes both, or fold -s, which keeps its space) */
    if (in->wrap_words && n && s->join[n - 1] != ' ' && l.ce - l.ls != (size_t)in->wrap &&
        n < DDX_LINE_MAX)
      s->join[n++] = ' ';
  }
  if (in->html == 1) n = html_decode(s->join, n);
  group_refs_t gr = {.cat = s->cat, .map = sat ? s->cat->rest_ids : NULL};
  int rc = ddx_prefilter_scan(sat ? s->cat->pf_rest : s->cat->prefilter, s->join, n, group_cb, &gr);
  if (rc || !gr.n) return rc;
  return eval_text(s, s->join, n, g->start, g->end, g->no, gr.refs, gr.n);
}

static int process(ddx_scan_t *s, size_t end) {
  int rc;
  s->cands.len = 0;
  s->deferred.len = 0;
  s->block++;
  bool sat = progress_saturated(s);
  rc = sat ? ddx_prefilter_scan(s->cat->pf_rest, s->buf, end, collect_rest_cb, s)
           : ddx_prefilter_scan(s->cat->prefilter, s->buf, end, collect_cb, s);
  if (rc) return rc;
  cand_t *cs = s->cands.data;
  size_t nc = s->cands.len;
  if (nc > 1 && (rc = sort_cands(&s->cands, &s->cands_tmp))) return rc;
  if ((rc = wrap_groups(s, end))) return rc;
  const wrap_group_t *gs = s->groups.data;
  size_t ng = s->groups.len, gi = 0;
  if (nc == 0) {
    for (; gi < ng; gi++)
      if ((rc = eval_group(s, &gs[gi], sat))) return rc;
    s->line_no += count_lines(s, s->buf, s->count_pos, end, end);
    s->count_pos = end;
    return sat ? tail_progress(s, end) : 0;
  }
  const ddx_literal_ref_t *refs[MAX_REFS_PER_LINE];
  /* A group is the candidates of one window (line_walk_t). */
  size_t nrefs = 0, ls = 0, le = 0;
  uint64_t no = 0;
  line_walk_t w;
  walk_init(&w, s->avx2, s->buf, s->count_pos, end, end, s->line_no);
  for (size_t i = 0; i < nc; i++) {
    if (walk_to(&w, cs[i].pos)) {
      if (nrefs && (rc = eval_line(s, ls, le, no, refs, nrefs))) return rc;
      nrefs = 0;
      ls = w.win_ls, le = w.win_le, no = w.win_no;
      /* the joined lines before this one, in line order */
      for (; gi < ng && gs[gi].end < ls; gi++)
        if ((rc = eval_group(s, &gs[gi], sat))) return rc;
    }
    /* a line of a joined line is matched with it */
    if (gi < ng && ls >= gs[gi].start && ls <= gs[gi].end) continue;
    const ddx_literal_ref_t *r = &s->cat->lit_refs[cs[i].lit];
    if (is_deferred(s, r)) {
      deferred_t *d = ddx_vec_push(&s->deferred);
      if (!d) return DDX_ENOMEM;
      *d = (deferred_t){ls, le, no, r};
      continue;
    }
    int dup = 0;
    for (size_t k = 0; k < nrefs && !dup; k++)
      dup = same_ref(refs[k], r);
    if (!dup && nrefs < MAX_REFS_PER_LINE) refs[nrefs++] = r;
  }
  if (nrefs && (rc = eval_line(s, ls, le, no, refs, nrefs))) return rc;
  for (; gi < ng; gi++)
    if ((rc = eval_group(s, &gs[gi], sat))) return rc;
  s->line_no = w.line + count_lines(s, s->buf, w.lpos, end, end);
  s->count_pos = end;
  if (sat) return tail_progress(s, end);
  return s->deferred.len ? eval_deferred_block(s) : 0;
}

/* Finds the end of the last complete line in buf[0..len). A trailing \r is
 * incomplete (it may be the first half of \r\n) unless at_eof. */
static size_t complete_end(const char *buf, size_t len, bool at_eof) {
  if (at_eof) return len;
  size_t i = len;
  while (i > 0) {
    char c = buf[i - 1];
    if (c == '\n') return i;
    if (c == '\r') {
      if (i == len) { /* may be half of \r\n */
        i--;
        continue;
      }
      return i;
    }
    i--;
  }
  return 0;
}

static int flush(ddx_scan_t *s, bool at_eof) {
  size_t end = complete_end(s->buf, s->len, at_eof);
  if (end == 0) {
    if (s->len < DDX_SCAN_BUF) return 0;
    end = s->len; /* one line longer than the buffer: scan it in pieces */
  }
  int rc = process(s, end);
  if (rc) return rc;
  /* A piece of an overlong line has no terminator: its continuation keeps
   * the same line number because count_pos only advances past terminators. */
  memmove(s->buf, s->buf + end, s->len - end);
  s->len -= end;
  s->base += end;
  s->count_pos = 0;
  return 0;
}

int ddx_scan_feed(ddx_scan_t *s, const char *data, size_t len) {
  while (len) {
    size_t room = DDX_SCAN_BUF - s->len;
    size_t n = len < room ? len : room;
    memcpy(s->buf + s->len, data, n);
    s->len += n;
    data += n;
    len -= n;
    s->bytes += n;
    s->last_byte = data[-1];
    ((ddx_scan_input_t *)s->inputs.data)[s->cur].bytes += n;
    if (s->len == DDX_SCAN_BUF) {
      int rc = flush(s, false);
      if (rc) return rc;
    }
  }
  return 0;
}

int ddx_scan_end(ddx_scan_t *s) {
  if (!s->open) return 0;
  int rc = flush(s, true);
  if (!rc) rc = settle_pending(s);
  ddx_scan_input_t *in = &((ddx_scan_input_t *)s->inputs.data)[s->cur];
  /* The last line counts even without a terminator. */
  uint64_t lines = s->line_no - 1;
  if (in->bytes > 0 && s->last_byte != '\n' && s->last_byte != '\r') lines++;
  in->lines = lines;
  s->lines += lines;
  s->open = false;
  return rc;
}

int ddx_scan_text(ddx_scan_t *s, const char *name, const char *text, size_t len) {
  int rc = ddx_scan_begin(s, name);
  if (!rc) rc = ddx_scan_feed(s, text, len);
  int rc2 = ddx_scan_end(s);
  return rc ? rc : rc2;
}

/* Scans bytes [from, to) of fd (to UINT64_MAX: to its end; from > 0 only
 * for a file that can seek) as one input named name. */
static int scan_fd(ddx_scan_t *s, int fd, const char *path, const char *name, uint64_t from,
                   uint64_t to, ddx_error_t *err) {
  ddx_line_meta_t defaults;
  ddx_layout_path_meta(path, &defaults);
  int rc = ddx_scan_begin_with(s, name, &defaults);
  s->base = from; /* offsets stay offsets in the whole file */
  uint64_t at = from;
  while (!rc && at < to) {
    /* Read straight into the scan buffer: no second copy. */
    size_t room = DDX_SCAN_BUF - s->len;
    if (to - at < room) room = (size_t)(to - at);
    ssize_t n =
        from ? pread(fd, s->buf + s->len, room, (off_t)at) : read(fd, s->buf + s->len, room);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      rc = ddx_error_set(err, DDX_EIO, "%s: read failed: %s", path, strerror(errno));
      break;
    }
    if (n == 0) break;
    at += (uint64_t)n;
    if (s->on_read && s->on_read(s->on_read_ctx, (size_t)n)) {
      rc = ddx_error_set(err, DDX_EINVAL, "%s: cancelled", path);
      break;
    }
    s->len += (size_t)n;
    s->bytes += (size_t)n;
    s->last_byte = s->buf[s->len - 1];
    ((ddx_scan_input_t *)s->inputs.data)[s->cur].bytes += (size_t)n;
    if (s->len == DDX_SCAN_BUF) {
      rc = flush(s, false);
      if (rc) ddx_error_set(err, rc, "%s: scan stopped", path);
    }
  }
  int rc2 = ddx_scan_end(s);
  return rc ? rc : rc2;
}

int ddx_scan_path(ddx_scan_t *s, const char *path, ddx_error_t *err) {
  if (!strcmp(path, "-")) return scan_fd(s, 0, path, "<stdin>", 0, UINT64_MAX, err);
  ddx_file_opts_t o = {.allow_pipe = true, .what = "log"};
  struct stat st;
  int fd = ddx_file_open(path, &o, &st, err);
  if (fd < 0) return fd;
  int rc = scan_fd(s, fd, path, path, 0, UINT64_MAX, err);
  close(fd);
  return rc;
}

int ddx_scan_fd_range(ddx_scan_t *s, int fd, const char *path, uint64_t from, uint64_t to,
                      ddx_error_t *err) {
  return scan_fd(s, fd, path, path, from, to, err);
}

size_t ddx_scan_plan(int fd, uint64_t size, size_t n, uint64_t *bounds) {
  size_t k = 0;
  bounds[0] = 0;
  char *win = n > 1 ? malloc(65536) : NULL;
  for (size_t i = 1; win && i < n; i++) {
    /* the first \n at or after the nominal cut, looked for within 1 MiB */
    uint64_t at = size / n * i;
    if (at <= bounds[k]) continue;
    uint64_t cut = 0;
    for (uint64_t pos = at; !cut && pos < size && pos < at + (1u << 20); pos += 65536) {
      ssize_t got = pread(fd, win, 65536, (off_t)pos);
      if (got <= 0) break;
      const char *nl = memchr(win, '\n', (size_t)got);
      if (nl) cut = pos + (uint64_t)(nl - win) + 1;
    }
    if (cut && cut < size && cut > bounds[k]) bounds[++k] = cut;
  }
  free(win);
  bounds[++k] = size;
  return k;
}

/* A hit of a later part as the merged scan numbers it. */
static ddx_hit_t rebased(const ddx_hit_t *h, uint32_t input, uint64_t lbase) {
  ddx_hit_t r = *h;
  r.input = input;
  r.line += lbase;
  return r;
}

int ddx_scan_merge(ddx_scan_t *dst, ddx_scan_t *src) {
  if (dst->open || src->open || !dst->inputs.len || src->inputs.len != 1) return DDX_EINVAL;
  const ddx_catalog_t *cat = dst->cat;
  uint32_t di = (uint32_t)(dst->inputs.len - 1);
  ddx_scan_input_t *din = &DDX_VEC_AT(&dst->inputs, ddx_scan_input_t, di);
  const ddx_scan_input_t *sin = &DDX_VEC_AT(&src->inputs, ddx_scan_input_t, 0);
  uint64_t lbase = din->lines;
  /* Signature hits as one scan stores them: each rule's first hits up to
   * the cap; an anchor-last rule's last stored hit is its newest. */
  uint32_t *appended = calloc(cat->nrules + 1, sizeof *appended);
  if (!appended) return DDX_ENOMEM;
  const ddx_hit_t *sh = src->hits.data;
  int rc = 0;
  /* Context hits at the end of dst wait for src's first signature hit. */
  for (size_t i = 0; i < src->hits.len && !rc; i++)
    if (!sh[i].is_ctx) {
      rc = promote_ctx(dst, di, sh[i].line + lbase);
      break;
    }
  for (size_t i = 0; i < src->hits.len && !rc; i++) {
    ddx_hit_t h = rebased(&sh[i], di, lbase);
    if (h.is_ctx) { /* src kept it: it is within reach of a signature hit */
      rc = keep_ctx(dst, &h);
      continue;
    }
    if (dst->rule_stored[h.rule] >= DDX_SCAN_MAX_HITS_PER_RULE) continue;
    ddx_hit_t *slot = ddx_vec_push(&dst->hits);
    if (!slot) {
      rc = DDX_ENOMEM;
      break;
    }
    *slot = h;
    dst->rule_stored[h.rule]++;
    appended[h.rule]++;
    dst->rule_last[h.rule] = dst->hits.len;
  }
  /* src's waiting context hits wait on in dst, for a later part */
  const ddx_hit_t *sr = src->ctx_ring.data;
  for (size_t i = 0; i < src->ctx_ring.len && !rc; i++) {
    ddx_hit_t h = rebased(&sr[i], di, lbase);
    rc = ring_ctx(dst, &h);
  }
  if (rc) {
    free(appended);
    return rc;
  }
  if (sin->last_sig) din->last_sig = sin->last_sig + lbase;
  for (size_t r = 0; r < cat->nrules; r++) {
    if (cat->rules[r].anchor_last && src->rule_stored[r] > appended[r] && src->rule_last[r])
      DDX_VEC_AT(&dst->hits, ddx_hit_t, dst->rule_last[r] - 1) =
          rebased(&sh[src->rule_last[r] - 1], di, lbase);
    dst->rule_hits[r] += src->rule_hits[r];
    dst->rule_regex_errors[r] += src->rule_regex_errors[r];
    /* every rank's newest progress event */
    const ddx_rank_progress_t *sp = &src->progress[r];
    for (size_t k = 0; k < sp->n; k++) {
      if (!sp->line[k]) continue;
      ddx_line_meta_t m;
      ddx_line_meta_init(&m);
      m.ts_ms = sp->ts[k];
      rc = ddx_scan_note_progress(dst, (uint32_t)r, (int64_t)k, sp->line[k] + lbase, di, &m);
      if (rc) {
        free(appended);
        return rc;
      }
    }
  }
  free(appended);
  const ddx_frame_t *sf = src->frames.data;
  for (size_t i = 0; i < src->frames.len && dst->frames.len < DDX_SCAN_MAX_FRAMES; i++) {
    ddx_frame_t *f = ddx_vec_push(&dst->frames);
    if (!f) return DDX_ENOMEM;
    *f = sf[i];
    f->input = di;
    f->line += lbase;
  }
  ddx_layout_merge(dst->layout, src->layout);
  din->bytes += sin->bytes;
  din->lines += sin->lines;
  dst->bytes += src->bytes;
  dst->lines += src->lines;
  dst->regex_errors += src->regex_errors;
  ddx_arena_adopt(&dst->arena, &src->arena);
  return 0;
}

int ddx_scan_add_input(ddx_scan_t *s, const char *name, const ddx_line_meta_t *defaults,
                       uint32_t *index) {
  if (s->open) return DDX_EINVAL; /* finish the streamed input first */
  int rc = push_input(s, name, defaults);
  if (rc) return rc;
  *index = (uint32_t)(s->inputs.len - 1);
  return 0;
}

int ddx_scan_feed_lines(ddx_scan_t *s, uint32_t index, const char *data, size_t len) {
  if (s->open || index >= s->inputs.len) return DDX_EINVAL;
  ddx_scan_input_t *in = &((ddx_scan_input_t *)s->inputs.data)[index];
  s->cur = index;
  while (len) {
    size_t n = len < DDX_SCAN_BUF ? len : DDX_SCAN_BUF;
    if (n < len) { /* cut at the last terminator inside the piece */
      size_t k = n;
      while (k > 0 && data[k - 1] != '\n' && data[k - 1] != '\r')
        k--;
      if (k > 0) n = k;
    }
    memcpy(s->buf, data, n);
    s->len = n;
    s->base = in->bytes;
    s->line_no = in->line_no;
    s->count_pos = 0;
    int rc = process(s, n);
    in->line_no = s->line_no;
    in->bytes += n;
    in->lines = in->line_no - 1;
    s->bytes += n;
    s->len = 0;
    if (rc) return rc;
    data += n;
    len -= n;
  }
  return settle_pending(s);
}
