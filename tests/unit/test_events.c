/* Unit tests for the events file (events.c): a real scan of the bundled
 * example log written and read back field by field, then a fuzz-ish loop
 * that damages that file thousands of ways (a JSON value replaced by a
 * hostile one: negative, past int32/uint32/int64, real, string, null,
 * container; bytes flipped, lines cut, dropped or doubled) and checks that
 * the reader either refuses the file or leaves only in-range values in the
 * scan, which is then diagnosed and rendered (under ASan+UBSan this is the
 * check that nothing downstream trips over what the reader let in). Uses
 * the real catalog (rules/, from the repo root). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>

#include "check.h"
#include "ddx/diagnose.h"
#include "ddx/events.h"
#include "ddx/report.h"
#include "ddx/rules.h"
#include "ddx/scan.h"

#define EXAMPLE "examples/zero3-oom-8gpu.log"

static char *slurp(const char *path, size_t *len) {
  FILE *f = fopen(path, "rb");
  if (!f) return NULL;
  fseek(f, 0, SEEK_END);
  long n = ftell(f);
  fseek(f, 0, SEEK_SET);
  char *b = malloc((size_t)n + 1);
  if (b && fread(b, 1, (size_t)n, f) != (size_t)n) {
    free(b);
    b = NULL;
  }
  fclose(f);
  if (b) b[n] = 0;
  *len = (size_t)n;
  return b;
}

static void spill(const char *path, const char *data, size_t len) {
  FILE *f = fopen(path, "wb");
  CHECK(f != NULL);
  if (!f) return;
  CHECK(fwrite(data, 1, len, f) == len);
  fclose(f);
}

static bool same_meta(const ddx_line_meta_t *a, const ddx_line_meta_t *b) {
  return a->rank == b->rank && a->local_rank == b->local_rank && !strcmp(a->host, b->host) &&
         a->ts_ms == b->ts_ms && a->pid == b->pid && a->stream == b->stream &&
         a->level == b->level && a->dialects == b->dialects;
}

static bool same_str(const char *a, const char *b) {
  return (!a && !b) || (a && b && !strcmp(a, b));
}

/* The events of a real scan come back as they were. */
static void test_round_trip(const ddx_catalog_t *cat, const char *evpath) {
  ddx_scan_t a, b;
  ddx_error_t err = {0};
  CHECK_EQ_INT(ddx_scan_init(&a, cat), 0);
  CHECK_EQ_INT(ddx_scan_path(&a, EXAMPLE, &err), 0);
  FILE *f = fopen(evpath, "w");
  CHECK(f != NULL);
  CHECK_EQ_INT(ddx_events_write(&a, f, &err), 0);
  fclose(f);
  CHECK_EQ_INT(ddx_scan_init(&b, cat), 0);
  ddx_events_stats_t st;
  CHECK_EQ_INT(ddx_events_read_ex(&b, evpath, NULL, &st, &err), 0);
  CHECK_EQ_INT(st.sections, 1);
  CHECK_EQ_INT(st.damaged, 0);
  CHECK_EQ_INT(st.unknown, 0);
  CHECK_EQ_INT(st.events, a.hits.len + a.frames.len);
  CHECK_EQ_INT(b.hits.len, a.hits.len);
  CHECK_EQ_INT(b.frames.len, a.frames.len);
  CHECK_EQ_INT(b.inputs.len, 1);
  size_t diff = 0;
  for (size_t i = 0; i < a.hits.len && i < b.hits.len; i++) {
    const ddx_hit_t *x = &DDX_VEC_AT(&a.hits, ddx_hit_t, i),
                    *y = &DDX_VEC_AT(&b.hits, ddx_hit_t, i);
    bool same = x->rule == y->rule && x->pattern == y->pattern && x->is_ctx == y->is_ctx &&
                x->input == y->input && x->line == y->line && x->offset == y->offset &&
                x->column == y->column && same_meta(&x->meta, &y->meta) &&
                same_str(x->text, y->text) && x->nfacts == y->nfacts;
    for (uint16_t k = 0; same && k < x->nfacts; k++)
      same = !strcmp(x->facts[k].name, y->facts[k].name) &&
             !strcmp(x->facts[k].value, y->facts[k].value);
    if (!same && diff++ < 3) fprintf(stderr, "hit %zu differs after the round trip\n", i);
  }
  for (size_t i = 0; i < a.frames.len && i < b.frames.len; i++) {
    const ddx_frame_t *x = &DDX_VEC_AT(&a.frames, ddx_frame_t, i),
                      *y = &DDX_VEC_AT(&b.frames, ddx_frame_t, i);
    bool same = x->input == y->input && x->line == y->line && x->rank == y->rank &&
                x->local_rank == y->local_rank && !strcmp(x->host, y->host) &&
                x->start == y->start && x->lineno == y->lineno &&
                !strcmp(x->file ? x->file : "", y->file) && same_str(x->func, y->func);
    if (!same && diff++ < 3) fprintf(stderr, "frame %zu differs after the round trip\n", i);
  }
  CHECK_EQ_INT(diff, 0);
  for (size_t r = 0; r < cat->nrules; r++) {
    if (a.rule_hits[r] != b.rule_hits[r] || a.rule_stored[r] != b.rule_stored[r]) {
      diff++;
      fprintf(stderr, "%s: hits %llu/%llu stored %u/%u\n", cat->rules[r].id,
              (unsigned long long)a.rule_hits[r], (unsigned long long)b.rule_hits[r],
              a.rule_stored[r], b.rule_stored[r]);
    }
  }
  CHECK_EQ_INT(diff, 0);
  CHECK_EQ_INT(b.layout->max_global, a.layout->max_global);
  CHECK_EQ_INT(b.layout->dialects, a.layout->dialects);
  CHECK_EQ_INT(b.lines, a.lines);
  CHECK_EQ_INT(b.bytes, a.bytes);
  ddx_scan_free(&a);
  ddx_scan_free(&b);
}

/* Two files concatenated: each header starts its own inputs. */
static void test_concatenated(const ddx_catalog_t *cat, const char *evpath, const char *cpath) {
  size_t n;
  char *t = slurp(evpath, &n);
  CHECK(t != NULL);
  if (!t) return;
  char *two = malloc(2 * n);
  memcpy(two, t, n);
  memcpy(two + n, t, n);
  spill(cpath, two, 2 * n);
  ddx_scan_t s;
  ddx_error_t err = {0};
  ddx_events_stats_t st;
  CHECK_EQ_INT(ddx_scan_init(&s, cat), 0);
  CHECK_EQ_INT(ddx_events_read_ex(&s, cpath, NULL, &st, &err), 0);
  CHECK_EQ_INT(st.sections, 2);
  CHECK_EQ_INT(s.inputs.len, 2);
  size_t in1 = 0;
  for (size_t i = 0; i < s.hits.len; i++)
    in1 += DDX_VEC_AT(&s.hits, ddx_hit_t, i).input == 1;
  CHECK(in1 > 0);
  ddx_scan_free(&s);
  free(two);
  free(t);
}

/* xorshift64*: the loop's own random numbers, seeded, no global state. */
static uint64_t rnd(uint64_t *x) {
  *x ^= *x >> 12;
  *x ^= *x << 25;
  *x ^= *x >> 27;
  return *x * 0x2545F4914F6CDD1DULL;
}

static json_t *hostile(uint64_t *x) {
  static const char *strs[] = {"",           "x",           "srun-task-99999999999999999999",
                               "-5",         "1e999",       "\xc3\xa9t\xc3\xa9",
                               "train.hang", "no.such.rule"};
  switch (rnd(x) % 20) {
  case 0:
    return json_integer(-1);
  case 1:
    return json_integer(-5);
  case 2:
    return json_integer(0);
  case 3:
    return json_integer(1);
  case 4:
    return json_integer(INT32_MAX);
  case 5:
    return json_integer((json_int_t)INT32_MAX + 1);
  case 6:
    return json_integer((json_int_t)UINT32_MAX + 3);
  case 7:
    return json_integer(INT32_MIN);
  case 8:
    return json_integer(INT64_MAX);
  case 9:
    return json_integer(INT64_MIN);
  case 10:
    return json_real(1.5);
  case 11:
    return json_real(1e300);
  case 12:
    return json_string(strs[rnd(x) % (sizeof strs / sizeof *strs)]);
  case 13: {
    char big[5001];
    memset(big, 'a', 5000);
    big[5000] = 0;
    return json_string(big);
  }
  case 14:
    return json_null();
  case 15:
    return json_true();
  case 16:
    return json_array();
  case 17:
    return json_object();
  case 18:
    return json_integer((json_int_t)(rnd(x) % 2000000) - 1000);
  default:
    return json_pack("[i,i,i]", 1, 2, 3);
  }
}

/* Replaces one value somewhere inside v (a random walk down) by a hostile
 * one; returns false when it found nothing to replace. */
static bool damage_value(json_t *v, uint64_t *x) {
  for (int depth = 0; depth < 6; depth++) {
    bool stop = rnd(x) % 3 == 0;
    if (json_is_array(v) && json_array_size(v)) {
      size_t i = rnd(x) % json_array_size(v);
      json_t *c = json_array_get(v, i);
      if (stop || !(json_is_array(c) || json_is_object(c)))
        return json_array_set_new(v, i, hostile(x)) == 0;
      v = c;
    } else if (json_is_object(v) && json_object_size(v)) {
      size_t i = rnd(x) % json_object_size(v), k = 0;
      const char *key;
      json_t *c, *pick = NULL;
      const char *pkey = NULL;
      json_object_foreach(v, key, c) {
        if (k++ == i) {
          pick = c;
          pkey = key;
          break;
        }
      }
      if (!pick) return false;
      if (stop || !(json_is_array(pick) || json_is_object(pick))) {
        if (rnd(x) % 8 == 0) return json_object_del(v, pkey) == 0;
        return json_object_set_new(v, pkey, hostile(x)) == 0;
      }
      v = pick;
    } else {
      return false;
    }
  }
  return false;
}

typedef struct lines {
  char **v;
  size_t n;
} lines_t;

static lines_t split_lines(char *t) {
  lines_t l = {0};
  for (char *p = t; *p;) {
    char *nl = strchr(p, '\n');
    if (!nl) break;
    *nl = 0;
    l.v = realloc(l.v, (l.n + 1) * sizeof *l.v);
    l.v[l.n++] = p;
    p = nl + 1;
  }
  return l;
}

/* One damaged copy of the file's lines into out. */
static void damage(const lines_t *l, ddx_sb_t *out, uint64_t *x) {
  size_t target = rnd(x) % 4 == 0 ? 0 : rnd(x) % l->n; /* the header a quarter of the time */
  unsigned kind = (unsigned)(rnd(x) % 10);
  for (size_t i = 0; i < l->n; i++) {
    const char *line = l->v[i];
    if (i != target || kind >= 7) {
      ddx_sb_puts(out, line);
      ddx_sb_putn(out, "\n", 1);
    } else {
      json_t *o = json_loads(line, 0, NULL);
      if (o && damage_value(o, x)) {
        char *d = json_dumps(o, JSON_COMPACT);
        ddx_sb_puts(out, d ? d : "");
        free(d);
      } else {
        ddx_sb_puts(out, line);
      }
      json_decref(o);
      ddx_sb_putn(out, "\n", 1);
    }
    if (i == target && kind == 7) { /* the line twice */
      ddx_sb_puts(out, line);
      ddx_sb_putn(out, "\n", 1);
    }
  }
  if (kind == 8 && out->len) out->len = rnd(x) % out->len; /* cut anywhere */
  if (kind == 9 && out->len) out->s[rnd(x) % out->len] ^= (char)(1u << (rnd(x) % 8));
}

#define MAX_RANK DDX_EVENTS_MAX_RANK

/* What the reader let into s: all of it in range. Returns the violations. */
static size_t violations(const ddx_scan_t *s) {
  const ddx_catalog_t *cat = s->cat;
  size_t bad = 0;
  for (size_t i = 0; i < s->hits.len; i++) {
    const ddx_hit_t *h = &DDX_VEC_AT(&s->hits, ddx_hit_t, i);
    if (h->rule >= cat->nrules) {
      bad++;
      continue;
    }
    const ddx_rule_t *r = &cat->rules[h->rule];
    const ddx_pattern_t *p = NULL;
    if (h->pattern < (h->is_ctx ? r->nctx : r->nsigs))
      p = h->is_ctx ? &r->ctx[h->pattern] : &r->sigs[h->pattern];
    bool ok = p && h->input < s->inputs.len;
    if (ok) {
      const ddx_scan_input_t *in = &DDX_VEC_AT(&s->inputs, ddx_scan_input_t, h->input);
      ok = h->line >= 1 && h->line <= in->lines && h->offset < in->bytes && h->column >= 1 &&
           h->column <= DDX_LINE_MAX + 1 && h->nfacts <= p->ncaptures;
    }
    ok = ok && h->meta.rank >= -1 && h->meta.rank <= MAX_RANK && h->meta.local_rank >= -1 &&
         h->meta.local_rank <= MAX_RANK && h->meta.stream <= 2 && h->meta.ts_ms >= -1 &&
         h->meta.ts_ms <= DDX_EVENTS_MAX_TS && strlen(h->meta.host) < DDX_HOST_MAX;
    for (uint16_t k = 0; ok && k < h->nfacts; k++)
      ok = h->facts[k].name && h->facts[k].value;
    if (!ok) bad++;
  }
  for (size_t i = 0; i < s->frames.len; i++) {
    const ddx_frame_t *f = &DDX_VEC_AT(&s->frames, ddx_frame_t, i);
    bool ok = f->input < s->inputs.len && f->rank >= -1 && f->rank <= MAX_RANK &&
              f->local_rank >= -1 && f->local_rank <= MAX_RANK && f->file;
    if (ok)
      ok = f->line >= 1 && f->line <= DDX_VEC_AT(&s->inputs, ddx_scan_input_t, f->input).lines;
    if (!ok) bad++;
  }
  const ddx_layout_t *l = s->layout;
  for (size_t i = 0; i < l->nhosts; i++) {
    const ddx_layout_host_t *h = &l->hosts[i];
    if (h->base < -1 || h->nlocal < -1 || h->base > MAX_RANK || h->nlocal > MAX_RANK ||
        (h->base >= 0 && h->nlocal >= 0 && h->base + h->nlocal > MAX_RANK + 1))
      bad++;
  }
  if (l->world_size < -1 || l->world_size > MAX_RANK + 1 || l->max_global > MAX_RANK ||
      l->max_local > MAX_RANK || l->nnodes > MAX_RANK + 1)
    bad++;
  for (size_t i = 0; i < l->npids; i++)
    if (l->pids[i].pid <= 0 || l->pids[i].local_rank < 0 || l->pids[i].local_rank > MAX_RANK) bad++;
  for (size_t r = 0; r < cat->nrules; r++) {
    const ddx_rank_progress_t *pr = &s->progress[r];
    for (size_t k = 0; k < pr->n; k++)
      if (pr->line[k] && (pr->input[k] >= s->inputs.len || pr->ts[k] < -1)) bad++;
  }
  return bad;
}

static void test_damaged(const ddx_catalog_t *cat, const char *evpath, const char *dpath,
                         int rounds) {
  size_t n;
  char *t = slurp(evpath, &n);
  CHECK(t != NULL);
  if (!t) return;
  lines_t l = split_lines(t);
  CHECK(l.n > 10);
  uint64_t x = 0x9E3779B97F4A7C15ULL;
  size_t refused = 0, taken = 0, bad = 0, odd_rc = 0, skipped = 0;
  for (int round = 0; round < rounds; round++) {
    ddx_sb_t b;
    ddx_sb_init(&b);
    damage(&l, &b, &x);
    spill(dpath, b.s ? b.s : "", b.len);
    ddx_sb_free(&b);
    ddx_scan_t s;
    ddx_error_t err = {0};
    ddx_events_stats_t st = {0};
    if (ddx_scan_init(&s, cat)) break;
    int rc = ddx_events_read_ex(&s, dpath, NULL, &st, &err);
    if (rc == DDX_EINVAL) {
      refused++;
      if (!strstr(err.msg, dpath) && odd_rc++ < 3)
        fprintf(stderr, "round %d: refusal without the file's name: %s\n", round, err.msg);
    } else if (rc != 0) {
      if (odd_rc++ < 3) fprintf(stderr, "round %d: rc %d: %s\n", round, rc, err.msg);
    } else {
      taken++;
      skipped += st.damaged + st.unknown;
      size_t v = violations(&s);
      if (v && bad < 3) fprintf(stderr, "round %d: %zu out-of-range values let in\n", round, v);
      bad += v;
      ddx_diagnosis_t d;
      if (ddx_diagnose(&d, &s, &err) == 0) {
        ddx_report_opts_t o = {0};
        free(ddx_report_json(&d, &o));
        free(ddx_report_text(&d, &o));
        free(ddx_report_sarif(&d, &o));
        free(ddx_report_evidence(&d, &o));
        ddx_diagnosis_free(&d);
      }
    }
    ddx_scan_free(&s);
  }
  CHECK_EQ_INT(bad, 0);
  CHECK_EQ_INT(odd_rc, 0);
  CHECK(refused > 0); /* both outcomes are exercised */
  CHECK(taken > 0);
  CHECK(skipped > 0);
  printf("damaged files: %zu refused, %zu read (%zu items skipped)\n", refused, taken, skipped);
  free(l.v);
  free(t);
}

int main(void) {
  ddx_catalog_t *cat = NULL;
  ddx_error_t err = {0};
  const char *dirs[] = {"rules"};
  if (ddx_catalog_load(&cat, dirs, 1, &err)) {
    fprintf(stderr, "rules: %s\n", err.msg);
    return 1;
  }
  char dir[] = "/tmp/ddx-events-XXXXXX";
  CHECK(mkdtemp(dir) != NULL);
  char ev[64], cc[64], dm[64];
  snprintf(ev, sizeof ev, "%s/good.events", dir);
  snprintf(cc, sizeof cc, "%s/two.events", dir);
  snprintf(dm, sizeof dm, "%s/damaged.events", dir);
  test_round_trip(cat, ev);
  test_concatenated(cat, ev, cc);
  test_damaged(cat, ev, dm, 1000);
  unlink(ev);
  unlink(cc);
  unlink(dm);
  rmdir(dir);
  ddx_catalog_free(cat);
  CHECK_DONE();
}
