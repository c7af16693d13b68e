/* events.c - per-node event files for ddx merge (see ddx/events.h). */
#include "ddx/events.h"

#include <errno.h>
#include <jansson.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ddx/file.h"

#define EVENTS_VERSION 1

/* ---- writing ---- */

/* s as a JSON string; bytes that are not UTF-8 become U+FFFD (jansson
 * refuses them, and a dropped string would shift or lose what follows). */
static json_t *jstr_n(const char *s, size_t n) {
  json_t *j = json_stringn(s, n);
  if (j) return j;
  ddx_sb_t b;
  ddx_sb_init(&b);
  ddx_sb_put_utf8_repaired(&b, s, n);
  char *t = ddx_sb_take(&b);
  j = t ? json_string(t) : NULL;
  free(t);
  return j;
}

static json_t *jstr(const char *s) {
  return jstr_n(s, strlen(s));
}

static json_t *jstr_or_null(const char *s) {
  return s ? jstr(s) : json_null();
}

/* A host as JSON: repaired, then cut at a character boundary so that it
 * fits the reader's DDX_HOST_MAX buffer. */
static json_t *jhost(const char *h) {
  json_t *j = jstr(h);
  if (!j || json_string_length(j) < DDX_HOST_MAX) return j;
  const char *v = json_string_value(j);
  size_t n = DDX_HOST_MAX - 1;
  while (n > 0 && ((unsigned char)v[n] & 0xC0) == 0x80)
    n--;
  json_t *cut = json_stringn(v, n);
  json_decref(j);
  return cut;
}

/* [rank, local_rank, host, ts_ms, pid, stream, level, dialects]; readers
 * also take the first seven alone (files written before dialects). */
static json_t *meta_json(const ddx_line_meta_t *m) {
  return json_pack("[i,i,o,I,I,i,i,I]", m->rank, m->local_rank, jhost(m->host),
                   (json_int_t)m->ts_ms, (json_int_t)m->pid, m->stream, m->level,
                   (json_int_t)m->dialects);
}

static int put_line(FILE *f, json_t *o) {
  if (!o) return DDX_ENOMEM;
  int rc = json_dumpf(o, f, JSON_COMPACT) == 0 && fputc('\n', f) != EOF ? 0 : DDX_EIO;
  json_decref(o);
  return rc;
}

/* Appends v to array a; false (v freed) when v is NULL or out of memory. */
static bool push(json_t *a, json_t *v) {
  return v && json_array_append_new(a, v) == 0;
}

static json_t *header_json(const ddx_scan_t *s) {
  const ddx_catalog_t *cat = s->cat;
  bool ok = true;
  json_t *inputs = json_array();
  const ddx_scan_input_t *in = s->inputs.data;
  for (size_t i = 0; i < s->inputs.len && inputs && ok; i++)
    ok = push(inputs, json_pack("{s:o,s:I,s:I,s:o}", "name", jstr(in[i].name), "bytes",
                                (json_int_t)in[i].bytes, "lines", (json_int_t)in[i].lines,
                                "defaults", meta_json(&in[i].defaults)));
  const ddx_layout_t *l = s->layout;
  json_t *hosts = json_array();
  for (size_t i = 0; i < l->nhosts && hosts && ok; i++)
    ok = push(hosts,
              json_pack("[o,i,i]", jhost(l->hosts[i].name), l->hosts[i].base, l->hosts[i].nlocal));
  json_t *pids = json_array();
  for (size_t i = 0; i < l->npids && pids && ok; i++)
    ok = push(pids, json_pack("[I,i,o]", (json_int_t)l->pids[i].pid, l->pids[i].local_rank,
                              jhost(l->pids[i].host)));
  json_t *counts = json_object(), *progress = json_object();
  for (size_t r = 0; r < cat->nrules && counts && progress && ok; r++) {
    if (s->rule_hits[r])
      ok = json_object_set_new(counts, cat->rules[r].id,
                               json_integer((json_int_t)s->rule_hits[r])) == 0;
    const ddx_rank_progress_t *pr = &s->progress[r];
    json_t *rows = NULL;
    for (size_t k = 0; k < pr->n && ok; k++) {
      if (!pr->line[k]) continue;
      if (!rows && !(rows = json_array())) ok = false;
      ok = ok && push(rows, json_pack("[I,I,I,i]", (json_int_t)k, (json_int_t)pr->line[k],
                                      (json_int_t)pr->ts[k], (int)pr->input[k]));
    }
    if (rows && ok) ok = json_object_set_new(progress, cat->rules[r].id, rows) == 0;
  }
  json_t *layout =
      ok && hosts && pids
          ? json_pack("{s:O,s:i,s:i,s:o,s:i,s:i,s:i,s:O,s:I,s:[o,i],s:i,s:i}", "hosts", hosts,
                      "world_size", l->world_size, "nnodes", l->nnodes, "first_host",
                      jhost(l->first_host), "seen_hosts", l->seen_hosts, "max_global",
                      l->max_global, "max_local", l->max_local, "pids", pids, "dialects",
                      (json_int_t)l->dialects, "srun_failed", jhost(l->srun_failed_host),
                      l->srun_failed_task, "nprocs", l->nprocs, "srun_max_task", l->srun_max_task)
          : NULL;
  json_t *head = ok && inputs && layout && counts && progress
                     ? json_pack("{s:i,s:O,s:O,s:O,s:O}", "ddx_events", EVENTS_VERSION, "inputs",
                                 inputs, "layout", layout, "counts", counts, "progress", progress)
                     : NULL;
  json_decref(inputs);
  json_decref(hosts);
  json_decref(pids);
  json_decref(layout);
  json_decref(counts);
  json_decref(progress);
  return head;
}

static json_t *hit_json(const ddx_catalog_t *cat, const ddx_hit_t *h) {
  json_t *o =
      json_pack("{s:i,s:I,s:I,s:i,s:s,s:i,s:b,s:o}", "i", (int)h->input, "l", (json_int_t)h->line,
                "o", (json_int_t)h->offset, "c", (int)h->column, "r", cat->rules[h->rule].id, "p",
                (int)h->pattern, "x", h->is_ctx, "m", meta_json(&h->meta));
  if (o && h->text && json_object_set_new(o, "t", jstr(h->text))) {
    json_decref(o);
    return NULL;
  }
  if (o && h->nfacts) {
    json_t *fa = json_object();
    bool ok = fa != NULL;
    for (uint16_t k = 0; k < h->nfacts && ok; k++)
      ok = json_object_set_new(fa, h->facts[k].name, jstr(h->facts[k].value)) == 0;
    if (!ok || json_object_set_new(o, "f", fa)) {
      if (ok) fa = NULL; /* set_new consumed it */
      json_decref(fa);
      json_decref(o);
      return NULL;
    }
  }
  return o;
}

int ddx_events_write(const ddx_scan_t *s, FILE *f, ddx_error_t *err) {
  int rc = put_line(f, header_json(s));
  const ddx_hit_t *hits = s->hits.data;
  for (size_t i = 0; i < s->hits.len && !rc; i++)
    rc = put_line(f, hit_json(s->cat, &hits[i]));
  const ddx_frame_t *fr = s->frames.data;
  for (size_t i = 0; i < s->frames.len && !rc; i++) {
    const ddx_frame_t *x = &fr[i];
    rc =
        put_line(f, json_pack("{s:[i,I,i,i,o,b,I,o,o]}", "F", (int)x->input, (json_int_t)x->line,
                              x->rank, x->local_rank, jhost(x->host), x->start,
                              (json_int_t)x->lineno, jstr_or_null(x->file), jstr_or_null(x->func)));
  }
  if (rc == DDX_ENOMEM) return ddx_error_set(err, rc, "cannot write events: out of memory");
  if (rc) return ddx_error_set(err, DDX_EIO, "cannot write events: %s", strerror(errno));
  return 0;
}

/* ---- reading ----
 *
 * An events file comes from another machine and may be cut short, edited,
 * written by another ddx, or not be one at all (a log passed to merge by
 * mistake). Nothing in it is used before it is checked, and the rule for
 * what a bad value costs is:
 *
 * 1. The whole file is refused (DDX_EINVAL; `ddx merge` exits 2 with
 *    "path:line: what") when its form is wrong: the file cannot be opened
 *    or is not a regular file or pipe, is larger than DDX_FILE_CAP_EVENTS,
 *    its first line is not an events header ("not a ddx events file"), the
 *    header names another version, a line is not one complete JSON object
 *    (a truncated last line, NaN, an integer past 64 bits, bad UTF-8,
 *    duplicate keys), a line is longer than DDX_EVENTS_HEADER_MAX (header)
 *    or DDX_EVENTS_LINE_MAX (other lines), the header's parts (inputs,
 *    layout, layout.hosts, layout.pids, counts, progress) have the wrong
 *    JSON type, or an input is damaged (name, bytes, lines, defaults): the
 *    events point into the inputs by index, so a damaged input makes every
 *    event doubtful, and the inputs of one header are at most
 *    DDX_EVENTS_MAX_INPUTS.
 * 2. One item is skipped and counted as damaged, with a warning naming the
 *    file, line, field and range (the first DDX_EVENTS_WARN_SHOWN of a file
 *    one by one, then how many in all), when the form is sound but one of
 *    its values is missing, of the wrong JSON type or out of range. The
 *    items are: an event line (a hit or a frame: everything on the line is
 *    checked, then it is taken whole or not at all), a layout host, a
 *    layout process id, one layout field (world_size, ...; taken as
 *    unknown), a count, a rule's progress table or one progress row.
 * 3. Catalog drift is expected (files survive catalog changes) and only
 *    counted, with one note per file: hits, counts and progress of rules
 *    this catalog does not have (or whose rule no longer tracks progress),
 *    a pattern index past the rule's patterns, a fact that the pattern has
 *    no capture for (that fact alone is dropped).
 * Items past the scan's own caps (stored hits per rule, context hits,
 * frames, layout hosts and pids) are dropped as a scan drops them.
 *
 * Ranges (ddx/events.h): ranks and local ranks -1..DDX_EVENTS_MAX_RANK
 * (a layout host's base + nlocal stays within it too); progress ranks
 * 0..DDX_EVENTS_MAX_PROGRESS_RANK; ts_ms -1..DDX_EVENTS_MAX_TS; a line's pid
 * -1..DDX_EVENTS_MAX_PID; a launcher pid 1..2^63-1; stream 0..2; level 0 or
 * 'A'..'Z'; dialects and layout.dialects 0..2^32-1; bytes, lines and counts
 * 0..DDX_EVENTS_MAX_COUNT, an input's lines at most its bytes + 1; an input
 * index below the header's input count; a line number 1..its input's
 * lines; an offset below its input's bytes; a column 1..DDX_LINE_MAX+1; a
 * frame's source line 0..999999999; hosts at most DDX_HOST_MAX-1 bytes
 * without control characters (a "srun-task-N" host: N of 1 to 9 digits);
 * an input name 1..DDX_EVENTS_NAME_MAX bytes without control characters;
 * a hit's text at most 3 * DDX_SCAN_TEXT_MAX bytes and a fact's value at
 * most 3 * DDX_SCAN_FACT_MAX (the writer turns each byte that is not UTF-8
 * into U+FFFD, three bytes), a frame's file and function at most
 * DDX_EVENTS_STR_MAX. A file may be several event files concatenated: each
 * header starts a section whose events index its own inputs. */

/* The reader's state for one file. */
typedef struct rd {
  ddx_scan_t *s;
  const char *path;
  long line;  /* number of the line being read */
  FILE *warn; /* NULL: silent */
  ddx_events_stats_t *st;
  uint32_t base; /* the current section's first input in the scan */
  uint32_t nin;  /* and its number of inputs */
  char why[320]; /* what is wrong with the value just checked */
  long drift_line;
  char drift_what[200]; /* the first item of catalog drift */
} rd_t;

static bool bad(rd_t *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static bool bad(rd_t *r, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(r->why, sizeof r->why, fmt, ap);
  va_end(ap);
  return false;
}

static const char *type_name(const json_t *v) {
  switch (json_typeof(v)) {
  case JSON_OBJECT:
    return "an object";
  case JSON_ARRAY:
    return "an array";
  case JSON_STRING:
    return "a string";
  case JSON_INTEGER:
    return "an integer";
  case JSON_REAL:
    return "a real number";
  case JSON_TRUE:
  case JSON_FALSE:
    return "a boolean";
  case JSON_NULL:
    return "null";
  }
  return "?";
}

/* A damaged item: counted, and named on warn while few. */
static void skip(rd_t *r, const char *item) {
  r->st->damaged++;
  if (r->warn && r->st->damaged <= DDX_EVENTS_WARN_SHOWN)
    fprintf(r->warn, "ddx: warning: %s:%ld: %s; %s skipped\n", r->path, r->line, r->why, item);
}

/* An item of catalog drift: counted, the first one remembered. */
static void drift(rd_t *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void drift(rd_t *r, const char *fmt, ...) {
  if (r->st->unknown++) return;
  r->drift_line = r->line;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(r->drift_what, sizeof r->drift_what, fmt, ap);
  va_end(ap);
}

static bool get_int(rd_t *r, const json_t *v, const char *what, json_int_t lo, json_int_t hi,
                    json_int_t *out) {
  if (!v) return bad(r, "%s missing", what);
  if (!json_is_integer(v)) return bad(r, "%s is %s, not an integer", what, type_name(v));
  json_int_t x = json_integer_value(v);
  if (x < lo || x > hi)
    return bad(r, "%s %lld out of range (%lld to %lld)", what, (long long)x, (long long)lo,
               (long long)hi);
  *out = x;
  return true;
}

static bool get_bool(rd_t *r, const json_t *v, const char *what, bool *out) {
  if (!v) return bad(r, "%s missing", what);
  if (!json_is_boolean(v)) return bad(r, "%s is %s, not a boolean", what, type_name(v));
  *out = json_is_true(v);
  return true;
}

static bool has_control(const char *s, size_t n) {
  for (size_t i = 0; i < n; i++)
    if ((unsigned char)s[i] < 0x20 || s[i] == 0x7f) return true;
  return false;
}

/* A string of at most max bytes (jansson has checked its UTF-8 and that
 * it holds no NUL); ctl: control characters allowed (log text). */
static bool get_str(rd_t *r, const json_t *v, const char *what, size_t max, bool ctl,
                    const char **out, size_t *len) {
  if (!v) return bad(r, "%s missing", what);
  if (!json_is_string(v)) return bad(r, "%s is %s, not a string", what, type_name(v));
  size_t n = json_string_length(v);
  const char *t = json_string_value(v);
  if (n > max) return bad(r, "%s too long (%zu bytes, at most %zu)", what, n, max);
  if (!ctl && has_control(t, n)) return bad(r, "%s holds a control character", what);
  *out = t;
  if (len) *len = n;
  return true;
}

/* A host ("" unknown) into out[DDX_HOST_MAX]. layout.c reads the node of
 * "srun-task-N" with strtol and multiplies it: N must be a small number. */
static bool get_host(rd_t *r, const json_t *v, const char *what, char *out) {
  const char *h = NULL;
  size_t n = 0;
  if (!get_str(r, v, what, DDX_HOST_MAX - 1, false, &h, &n)) return false;
  if (!strncmp(h, "srun-task-", 10)) {
    size_t d = strspn(h + 10, "0123456789");
    if (d < 1 || d > 9 || h[10 + d]) return bad(r, "%s \"%s\" is not srun-task-<node>", what, h);
  }
  memcpy(out, h, n + 1);
  return true;
}

static bool get_rank(rd_t *r, const json_t *v, const char *what, int32_t *out) {
  json_int_t x = 0;
  if (!get_int(r, v, what, -1, DDX_EVENTS_MAX_RANK, &x)) return false;
  *out = (int32_t)x;
  return true;
}

/* [rank, local_rank, host, ts_ms, pid, stream, level(, dialects)] */
static bool get_meta(rd_t *r, const json_t *a, const char *what, ddx_line_meta_t *m) {
  ddx_line_meta_init(m);
  if (!a) return bad(r, "%s missing", what);
  if (!json_is_array(a)) return bad(r, "%s is %s, not an array", what, type_name(a));
  size_t n = json_array_size(a);
  if (n != 7 && n != 8) return bad(r, "%s has %zu fields, not 7 or 8", what, n);
  json_int_t ts = 0, pid = 0, stream = 0, level = 0, dialects = 0;
  if (!get_rank(r, json_array_get(a, 0), "rank", &m->rank) ||
      !get_rank(r, json_array_get(a, 1), "local rank", &m->local_rank) ||
      !get_host(r, json_array_get(a, 2), "host", m->host) ||
      !get_int(r, json_array_get(a, 3), "time", -1, DDX_EVENTS_MAX_TS, &ts) ||
      !get_int(r, json_array_get(a, 4), "pid", -1, DDX_EVENTS_MAX_PID, &pid) ||
      !get_int(r, json_array_get(a, 5), "stream", 0, 2, &stream) ||
      !get_int(r, json_array_get(a, 6), "level", 0, 'Z', &level) ||
      (n == 8 && !get_int(r, json_array_get(a, 7), "dialects", 0, UINT32_MAX, &dialects)))
    return false;
  if (level && level < 'A') return bad(r, "level %lld is not a letter", (long long)level);
  m->ts_ms = ts;
  m->pid = pid;
  m->stream = (uint8_t)stream;
  m->level = (char)level;
  m->dialects = (uint32_t)dialects;
  return true;
}

static uint64_t add_sat(uint64_t a, uint64_t b) {
  return a > UINT64_MAX - b ? UINT64_MAX : a + b;
}

static int refuse(rd_t *r, ddx_error_t *err, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static int refuse(rd_t *r, ddx_error_t *err, const char *fmt, ...) {
  char what[1024];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(what, sizeof what, fmt, ap);
  va_end(ap);
  return ddx_error_set(err, DDX_EINVAL, "%s:%ld: %s", r->path, r->line, what);
}

/* The header's inputs: all sound, or the file is refused. */
static int read_inputs(rd_t *r, const json_t *inputs, ddx_error_t *err) {
  ddx_scan_t *s = r->s;
  if (!inputs) return refuse(r, err, "the header has no \"inputs\"");
  if (!json_is_array(inputs))
    return refuse(r, err, "the header's \"inputs\" is %s, not an array", type_name(inputs));
  size_t n = json_array_size(inputs);
  if (n > DDX_EVENTS_MAX_INPUTS || n > UINT32_MAX - s->inputs.len)
    return refuse(r, err, "the header names %zu inputs, more than %d", n, DDX_EVENTS_MAX_INPUTS);
  r->base = (uint32_t)s->inputs.len;
  r->nin = 0;
  size_t plen = strlen(r->path);
  for (size_t i = 0; i < n; i++) {
    const json_t *in = json_array_get(inputs, i);
    const char *name;
    size_t nlen;
    json_int_t bytes = 0, lines = 0;
    ddx_line_meta_t defaults;
    if (!json_is_object(in)) {
      bad(r, "it is %s, not an object", type_name(in));
    } else if (get_str(r, json_object_get(in, "name"), "name", DDX_EVENTS_NAME_MAX, false, &name,
                       &nlen) &&
               (nlen || bad(r, "name is empty")) &&
               get_int(r, json_object_get(in, "bytes"), "bytes", 0, DDX_EVENTS_MAX_COUNT, &bytes) &&
               get_int(r, json_object_get(in, "lines"), "lines", 0, bytes + 1, &lines) &&
               get_meta(r, json_object_get(in, "defaults"), "defaults", &defaults)) {
      char *full = malloc(plen + 2 + nlen + 1);
      if (!full) return ddx_error_set(err, DDX_ENOMEM, "out of memory");
      memcpy(full, r->path, plen);
      memcpy(full + plen, ": ", 2);
      memcpy(full + plen + 2, name, nlen + 1);
      uint32_t idx;
      int rc = ddx_scan_add_input(s, full, &defaults, &idx);
      free(full);
      if (rc) return ddx_error_set(err, rc, "out of memory");
      ddx_scan_input_t *si = &DDX_VEC_AT(&s->inputs, ddx_scan_input_t, idx);
      si->bytes = (uint64_t)bytes;
      si->lines = (uint64_t)lines;
      s->bytes = add_sat(s->bytes, si->bytes);
      s->lines = add_sat(s->lines, si->lines);
      r->nin++;
      continue;
    }
    return refuse(r, err,
                  "input %zu: %s; the events point into the inputs, so the file is not read", i,
                  r->why);
  }
  return 0;
}

static const json_t *layout_array(rd_t *r, const json_t *o, const char *key, ddx_error_t *err,
                                  int *rc) {
  const json_t *a = json_object_get(o, key);
  if (!a)
    *rc = refuse(r, err, "the layout has no \"%s\"", key);
  else if (!json_is_array(a))
    *rc = refuse(r, err, "the layout's \"%s\" is %s, not an array", key, type_name(a));
  return *rc ? NULL : a;
}

/* One layout field: absent or bad, it stays unknown (with a warning). */
static bool layout_int(rd_t *r, const json_t *o, const char *key, json_int_t lo, json_int_t hi,
                       json_int_t *out) {
  char what[64];
  snprintf(what, sizeof what, "layout.%s", key);
  if (get_int(r, json_object_get(o, key), what, lo, hi, out)) return true;
  skip(r, "layout field");
  return false;
}

/* Adds the layout of one node's event file to the scan's. */
static int read_layout(rd_t *r, const json_t *o, ddx_error_t *err) {
  ddx_layout_t *l = r->s->layout;
  if (!o) return refuse(r, err, "the header has no \"layout\"");
  if (!json_is_object(o))
    return refuse(r, err, "the header's \"layout\" is %s, not an object", type_name(o));
  int rc = 0;
  const json_t *hosts = layout_array(r, o, "hosts", err, &rc);
  const json_t *pids = hosts ? layout_array(r, o, "pids", err, &rc) : NULL;
  if (rc) return rc;
  size_t i;
  const json_t *h;
  json_array_foreach(hosts, i, h) {
    char name[DDX_HOST_MAX];
    int32_t base, nlocal;
    if (!json_is_array(h) || json_array_size(h) != 3) {
      bad(r, "layout host %zu is %s, not [name, base, nlocal]", i, type_name(h));
    } else if (get_host(r, json_array_get(h, 0), "layout host name", name) &&
               (name[0] || bad(r, "layout host %zu has an empty name", i)) &&
               get_rank(r, json_array_get(h, 1), "layout host base", &base) &&
               get_rank(r, json_array_get(h, 2), "layout host nlocal", &nlocal) &&
               (base < 0 || nlocal < 0 || base + nlocal <= DDX_EVENTS_MAX_RANK + 1 ||
                bad(r, "layout host %s: base %d + nlocal %d past rank %d", name, base, nlocal,
                    DDX_EVENTS_MAX_RANK))) {
      bool known = false;
      for (size_t k = 0; k < l->nhosts && !known; k++)
        known = !strcmp(l->hosts[k].name, name);
      if (known) continue;
      if (l->nhosts >= DDX_LAYOUT_MAX_HOSTS) {
        r->st->capped++;
        continue;
      }
      ddx_layout_host_t *x = &l->hosts[l->nhosts++];
      memcpy(x->name, name, sizeof x->name);
      x->base = base;
      x->nlocal = nlocal;
      continue;
    }
    skip(r, "layout host");
  }
  json_int_t v = 0;
  if (layout_int(r, o, "world_size", -1, DDX_EVENTS_MAX_RANK + 1, &v) && v > l->world_size)
    l->world_size = (int32_t)v;
  if (layout_int(r, o, "nnodes", -1, DDX_EVENTS_MAX_RANK + 1, &v) && v > l->nnodes)
    l->nnodes = (int32_t)v;
  char first[DDX_HOST_MAX] = "";
  bool have_first = get_host(r, json_object_get(o, "first_host"), "layout.first_host", first);
  if (!have_first) skip(r, "layout field");
  if (layout_int(r, o, "seen_hosts", 0, 2, &v)) {
    if (v > 1)
      l->seen_hosts = 2;
    else if (v == 1 && have_first && first[0])
      ddx_layout_note_host(l, first);
  }
  json_int_t mg = -1, ml = -1;
  layout_int(r, o, "max_global", -1, DDX_EVENTS_MAX_RANK, &mg);
  layout_int(r, o, "max_local", -1, DDX_EVENTS_MAX_RANK, &ml);
  ddx_layout_note_ranks(l, (int32_t)mg, (int32_t)ml);
  if (layout_int(r, o, "dialects", 0, UINT32_MAX, &v)) l->dialects |= (uint32_t)v;
  /* srun's first failed task (absent from older files) */
  const json_t *sf = json_object_get(o, "srun_failed");
  char sfh[DDX_HOST_MAX];
  int32_t sft;
  if (sf && json_is_array(sf) && json_array_size(sf) == 2 &&
      get_rank(r, json_array_get(sf, 1), "layout.srun_failed task", &sft) && sft >= 0 &&
      get_host(r, json_array_get(sf, 0), "layout.srun_failed host", sfh) &&
      l->srun_failed_task < 0) {
    l->srun_failed_task = sft;
    memcpy(l->srun_failed_host, sfh, sizeof sfh);
  }
  /* the processes per node a launcher line names, and srun's highest task
   * id (absent from older files: they stay unknown, without a warning) */
  if (json_object_get(o, "nprocs") && layout_int(r, o, "nprocs", -1, DDX_EVENTS_MAX_RANK + 1, &v) &&
      v > 0)
    l->nprocs = (int32_t)v;
  if (json_object_get(o, "srun_max_task") &&
      layout_int(r, o, "srun_max_task", -1, DDX_EVENTS_MAX_RANK, &v) && v > l->srun_max_task)
    l->srun_max_task = (int32_t)v;

  const json_t *p;
  json_array_foreach(pids, i, p) {
    json_int_t pid = 0;
    int32_t local;
    char host[DDX_HOST_MAX];
    if (!json_is_array(p) || json_array_size(p) != 3) {
      bad(r, "layout pid %zu is %s, not [pid, local_rank, host]", i, type_name(p));
    } else if (get_int(r, json_array_get(p, 0), "layout pid", 1, INT64_MAX, &pid) &&
               get_rank(r, json_array_get(p, 1), "layout pid's local rank", &local) &&
               (local >= 0 || bad(r, "layout pid's local rank %d out of range (0 to %d)", local,
                                  DDX_EVENTS_MAX_RANK)) &&
               get_host(r, json_array_get(p, 2), "layout pid's host", host)) {
      if (l->npids >= DDX_LAYOUT_MAX_PIDS) {
        r->st->capped++;
        continue;
      }
      ddx_layout_pid_t *x = &l->pids[l->npids++];
      x->pid = (long)pid;
      x->local_rank = local;
      memcpy(x->host, host, sizeof x->host);
      continue;
    }
    skip(r, "layout pid");
  }
  return 0;
}

static const json_t *header_object(rd_t *r, const json_t *o, const char *key, ddx_error_t *err,
                                   int *rc) {
  const json_t *v = json_object_get(o, key);
  if (!v)
    *rc = refuse(r, err, "the header has no \"%s\"", key);
  else if (!json_is_object(v))
    *rc = refuse(r, err, "the header's \"%s\" is %s, not an object", key, type_name(v));
  return *rc ? NULL : v;
}

static int read_counts(rd_t *r, const json_t *counts) {
  const char *id;
  const json_t *v;
  json_object_foreach((json_t *)counts, id, v) {
    const ddx_rule_t *rule = ddx_catalog_find(r->s->cat, id);
    char what[160];
    snprintf(what, sizeof what, "count of %.100s", id);
    json_int_t c = 0;
    if (!get_int(r, v, what, 0, DDX_EVENTS_MAX_COUNT, &c)) {
      skip(r, "count");
    } else if (!rule) {
      drift(r, "a count of rule \"%.100s\"", id);
    } else {
      r->s->rule_hits[rule->index] = add_sat(r->s->rule_hits[rule->index], (uint64_t)c);
    }
  }
  return 0;
}

/* Progress rows [rank, line, ts_ms, input]. */
static int read_progress(rd_t *r, const json_t *progress) {
  const char *id;
  const json_t *rows;
  json_object_foreach((json_t *)progress, id, rows) {
    const ddx_rule_t *rule = ddx_catalog_find(r->s->cat, id);
    if (!json_is_array(rows)) {
      bad(r, "progress of %.100s is %s, not an array", id, type_name(rows));
      skip(r, "progress table");
      continue;
    }
    if (!rule || !rule->anchor_last) {
      drift(r, "progress of %srule \"%.100s\"", rule ? "the non-progress " : "", id);
      continue;
    }
    size_t k;
    const json_t *row;
    json_array_foreach(rows, k, row) {
      json_int_t rank = 0, line = 0, ts = 0, input = 0;
      if (!json_is_array(row) || json_array_size(row) != 4) {
        bad(r, "progress row %zu of %.100s is %s, not [rank, line, time, input]", k, id,
            type_name(row));
      } else if (get_int(r, json_array_get(row, 0), "progress rank", 0,
                         DDX_EVENTS_MAX_PROGRESS_RANK, &rank) &&
                 get_int(r, json_array_get(row, 3), "progress input", 0, (json_int_t)r->nin - 1,
                         &input) &&
                 get_int(r, json_array_get(row, 1), "progress line", 1,
                         (json_int_t)DDX_VEC_AT(&r->s->inputs, ddx_scan_input_t,
                                                r->base + (uint32_t)input)
                             .lines,
                         &line) &&
                 get_int(r, json_array_get(row, 2), "progress time", -1, DDX_EVENTS_MAX_TS, &ts)) {
        ddx_line_meta_t m;
        ddx_line_meta_init(&m);
        m.ts_ms = ts;
        int rc = ddx_scan_note_progress(r->s, rule->index, rank, (uint64_t)line,
                                        r->base + (uint32_t)input, &m);
        if (rc) return rc;
        continue;
      }
      skip(r, "progress row");
    }
  }
  return 0;
}

static int read_header(rd_t *r, const json_t *o, ddx_error_t *err) {
  const json_t *ver = json_object_get(o, "ddx_events");
  if (!json_is_integer(ver))
    return refuse(r, err, "not a ddx events file (\"ddx_events\" is %s, not a version number)",
                  type_name(ver));
  if (json_integer_value(ver) != EVENTS_VERSION)
    return refuse(r, err, "events format version %lld; this ddx reads version %d",
                  (long long)json_integer_value(ver), EVENTS_VERSION);
  int rc = read_inputs(r, json_object_get(o, "inputs"), err);
  if (!rc) rc = read_layout(r, json_object_get(o, "layout"), err);
  const json_t *counts = rc ? NULL : header_object(r, o, "counts", err, &rc);
  const json_t *progress = rc ? NULL : header_object(r, o, "progress", err, &rc);
  if (!rc) rc = read_counts(r, counts);
  if (!rc) rc = read_progress(r, progress);
  if (rc == DDX_ENOMEM) return ddx_error_set(err, rc, "%s: out of memory", r->path);
  if (!rc) r->st->sections++;
  return rc;
}

/* The checks every event line's input, line and offset pass. */
static bool get_place(rd_t *r, const json_t *vi, const json_t *vl, uint32_t *input,
                      uint64_t *line) {
  json_int_t i = 0, l = 0;
  if (!get_int(r, vi, "input", 0, (json_int_t)r->nin - 1, &i)) return false;
  const ddx_scan_input_t *in = &DDX_VEC_AT(&r->s->inputs, ddx_scan_input_t, r->base + (uint32_t)i);
  if (!get_int(r, vl, "line", 1, (json_int_t)in->lines, &l)) return false;
  *input = r->base + (uint32_t)i;
  *line = (uint64_t)l;
  return true;
}

/* The capture of pattern p named name, as the catalog spells it. */
static const char *capture_name(const ddx_pattern_t *p, const char *name) {
  for (uint32_t g = 1; g <= p->ncaptures; g++)
    if (p->capture_names[g] && !strcmp(p->capture_names[g], name)) return p->capture_names[g];
  return NULL;
}

static int read_hit(rd_t *r, const json_t *o) {
  ddx_scan_t *s = r->s;
  const char *id;
  json_int_t pat = 0, off = 0, col = 0;
  bool is_ctx = false;
  if (!get_str(r, json_object_get(o, "r"), "rule", 200, false, &id, NULL) ||
      !get_int(r, json_object_get(o, "p"), "pattern", 0, UINT16_MAX, &pat) ||
      !get_bool(r, json_object_get(o, "x"), "x", &is_ctx)) {
    skip(r, "event");
    return 0;
  }
  const ddx_rule_t *rule = ddx_catalog_find(s->cat, id);
  if (!rule) {
    drift(r, "a hit of rule \"%s\"", id);
    return 0;
  }
  if ((size_t)pat >= (is_ctx ? rule->nctx : rule->nsigs)) {
    drift(r, "%s %lld of rule \"%s\", which has %zu", is_ctx ? "context" : "signature",
          (long long)pat, id, is_ctx ? rule->nctx : rule->nsigs);
    return 0;
  }
  const ddx_pattern_t *p = is_ctx ? &rule->ctx[pat] : &rule->sigs[pat];
  ddx_hit_t h = {.rule = rule->index, .pattern = (uint16_t)pat, .is_ctx = is_ctx};
  const char *text = NULL;
  size_t tlen = 0;
  const json_t *t = json_object_get(o, "t"), *facts = json_object_get(o, "f");
  bool ok = get_place(r, json_object_get(o, "i"), json_object_get(o, "l"), &h.input, &h.line);
  if (ok) {
    const ddx_scan_input_t *in = &DDX_VEC_AT(&s->inputs, ddx_scan_input_t, h.input);
    ok = get_int(r, json_object_get(o, "o"), "offset", 0, in->bytes ? (json_int_t)in->bytes - 1 : 0,
                 &off) &&
         get_int(r, json_object_get(o, "c"), "column", 1, DDX_LINE_MAX + 1, &col) &&
         get_meta(r, json_object_get(o, "m"), "meta", &h.meta) &&
         (!t || get_str(r, t, "text", 3 * DDX_SCAN_TEXT_MAX, true, &text, &tlen)) &&
         (!facts || json_is_object(facts) ||
          bad(r, "facts are %s, not an object", type_name(facts)));
  }
  size_t nf = 0, unknown = 0;
  const char *k;
  const json_t *v;
  if (ok && facts) {
    json_object_foreach((json_t *)facts, k, v) {
      const char *val;
      char what[160];
      snprintf(what, sizeof what, "fact %.100s", k);
      if (!get_str(r, v, what, 3 * DDX_SCAN_FACT_MAX, true, &val, NULL)) {
        ok = false;
        break;
      }
      if (capture_name(p, k))
        nf++;
      else
        unknown++;
    }
  }
  if (!ok) {
    skip(r, "event");
    return 0;
  }
  if (unknown) drift(r, "a fact that rule \"%s\" does not capture", id);
  r->st->unknown += unknown > 1 ? unknown - 1 : 0;
  if (is_ctx ? s->ctx_stored >= DDX_SCAN_MAX_CTX_HITS
             : s->rule_stored[rule->index] >= DDX_SCAN_MAX_HITS_PER_RULE) {
    r->st->capped++;
    return 0;
  }
  h.offset = (uint64_t)off;
  h.column = (uint32_t)col;
  if (text && !is_ctx && !(h.text = ddx_arena_strndup(&s->arena, text, tlen))) return DDX_ENOMEM;
  if (nf) {
    if (!(h.facts = ddx_arena_alloc(&s->arena, nf * sizeof *h.facts))) return DDX_ENOMEM;
    json_object_foreach((json_t *)facts, k, v) {
      const char *name = capture_name(p, k);
      if (!name) continue;
      h.facts[h.nfacts].name = name;
      if (!(h.facts[h.nfacts].value = ddx_arena_strdup(&s->arena, json_string_value(v))))
        return DDX_ENOMEM;
      h.nfacts++;
    }
  }
  ddx_hit_t *slot = ddx_vec_push(&s->hits);
  if (!slot) return DDX_ENOMEM;
  *slot = h;
  if (is_ctx) {
    s->ctx_stored++;
  } else {
    s->rule_stored[rule->index]++;
    s->rule_last[rule->index] = s->hits.len;
  }
  r->st->events++;
  return 0;
}

/* {"F": [input, line, rank, local_rank, host, start, lineno, file, func]} */
static int read_frame(rd_t *r, const json_t *a) {
  ddx_scan_t *s = r->s;
  ddx_frame_t f = {0};
  json_int_t lineno = 0;
  const char *file = "", *func = NULL;
  const json_t *vf = json_array_get(a, 7), *vu = json_array_get(a, 8);
  if (!json_is_array(a) || json_array_size(a) != 9) {
    bad(r, "frame is %s, not [input, line, rank, local_rank, host, start, lineno, file, func]",
        type_name(a));
  } else if (get_place(r, json_array_get(a, 0), json_array_get(a, 1), &f.input, &f.line) &&
             get_rank(r, json_array_get(a, 2), "rank", &f.rank) &&
             get_rank(r, json_array_get(a, 3), "local rank", &f.local_rank) &&
             get_host(r, json_array_get(a, 4), "host", f.host) &&
             get_bool(r, json_array_get(a, 5), "start", &f.start) &&
             get_int(r, json_array_get(a, 6), "source line", 0, 999999999, &lineno) &&
             (json_is_null(vf) || get_str(r, vf, "file", DDX_EVENTS_STR_MAX, true, &file, NULL)) &&
             (json_is_null(vu) ||
              get_str(r, vu, "function", DDX_EVENTS_STR_MAX, true, &func, NULL))) {
    if (s->frames.len >= DDX_SCAN_MAX_FRAMES) {
      r->st->capped++;
      return 0;
    }
    f.lineno = (uint32_t)lineno;
    if (!(f.file = ddx_arena_strdup(&s->arena, file))) return DDX_ENOMEM;
    if (func && !(f.func = ddx_arena_strdup(&s->arena, func))) return DDX_ENOMEM;
    ddx_frame_t *slot = ddx_vec_push(&s->frames);
    if (!slot) return DDX_ENOMEM;
    *slot = f;
    r->st->events++;
    return 0;
  }
  skip(r, "frame");
  return 0;
}

/* Lines of a descriptor, each at most a given length, the file at most
 * DDX_FILE_CAP_EVENTS bytes (a pipe has no size to check up front). */
typedef struct lines {
  int fd;
  char *buf; /* EVENTS_READ bytes */
  size_t pos, len;
  bool eof;
  uint64_t total;
  ddx_sb_t line; /* the current line, without its '\n' */
  bool newline;  /* it ended with '\n' (else the file ended) */
} lines_t;

#define EVENTS_READ 65536

enum { LINE_EOF = 0, LINE_OK = 1, LINE_LONG = 2 };

/* The next line into lr->line: LINE_OK, LINE_EOF, LINE_LONG (longer than
 * max; not read further) or a negative DDX_E* code with err set. */
static int next_line(lines_t *lr, const char *path, size_t max, ddx_error_t *err) {
  lr->line.len = 0;
  if (lr->line.s) lr->line.s[0] = 0;
  lr->newline = false;
  bool any = false;
  for (;;) {
    if (lr->pos == lr->len) {
      if (lr->eof) return any ? LINE_OK : LINE_EOF;
      ssize_t n = read(lr->fd, lr->buf, EVENTS_READ);
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) return ddx_error_set(err, DDX_EIO, "%s: %s", path, strerror(errno));
      lr->pos = 0;
      lr->len = (size_t)n;
      lr->total += (uint64_t)n;
      if (n == 0) lr->eof = true;
      if (lr->total > DDX_FILE_CAP_EVENTS)
        return ddx_error_set(err, DDX_EINVAL,
                             "%s: larger than the %zu MiB limit for an events file; not read", path,
                             DDX_FILE_CAP_EVENTS >> 20);
      continue;
    }
    any = true;
    const char *start = lr->buf + lr->pos;
    const char *nl = memchr(start, '\n', lr->len - lr->pos);
    size_t n = nl ? (size_t)(nl - start) : lr->len - lr->pos;
    if (lr->line.len + n > max) return LINE_LONG;
    size_t had = lr->line.len;
    ddx_sb_putn(&lr->line, start, n);
    if (!lr->line.s || lr->line.len != had + n)
      return ddx_error_set(err, DDX_ENOMEM, "%s: out of memory", path);
    lr->pos += n + (nl ? 1 : 0);
    if (nl) {
      lr->newline = true;
      return LINE_OK;
    }
  }
}

static bool blank(const char *s, size_t n) {
  for (size_t i = 0; i < n; i++)
    if (s[i] != ' ' && s[i] != '\t' && s[i] != '\r') return false;
  return true;
}

/* The summary of what was skipped, once per file. */
static void report_skipped(const rd_t *r) {
  if (!r->warn) return;
  if (r->st->damaged > DDX_EVENTS_WARN_SHOWN)
    fprintf(r->warn,
            "ddx: warning: %s: %zu damaged items skipped in all (the first %d named above)\n",
            r->path, r->st->damaged, DDX_EVENTS_WARN_SHOWN);
  if (r->st->unknown)
    fprintf(r->warn,
            "ddx: note: %s: %zu item%s of rules or patterns this catalog does not have skipped "
            "(first at line %ld: %s); the file was written with another catalog\n",
            r->path, r->st->unknown, r->st->unknown == 1 ? "" : "s", r->drift_line, r->drift_what);
}

static int read_lines(rd_t *r, lines_t *lr, ddx_error_t *err) {
  for (;;) {
    size_t max = r->st->sections ? DDX_EVENTS_LINE_MAX : DDX_EVENTS_HEADER_MAX;
    int got = next_line(lr, r->path, max, err);
    if (got < 0) return got;
    if (got == LINE_EOF) break;
    r->line++;
    if (got == LINE_LONG) {
      if (!r->st->sections)
        return refuse(r, err, "not a ddx events file (its first line is longer than %zu MiB)",
                      DDX_EVENTS_HEADER_MAX >> 20);
      return refuse(r, err, "line longer than %zu KiB; not an events line, the file is damaged",
                    DDX_EVENTS_LINE_MAX >> 10);
    }
    if (r->st->sections && blank(lr->line.s, lr->line.len)) continue;
    json_error_t jerr;
    json_t *o = json_loadb(lr->line.s, lr->line.len, JSON_REJECT_DUPLICATES, &jerr);
    if (!json_is_object(o)) {
      const char *why = o ? type_name(o) : jerr.text;
      json_decref(o);
      if (!r->st->sections)
        return refuse(r, err,
                      "not a ddx events file (its first line is not the JSON header that "
                      "`ddx diagnose --events-out` writes: %s)",
                      why);
      if (!lr->newline)
        return refuse(r, err,
                      "the last line is cut short (%s); the file is damaged or still being written",
                      why);
      return refuse(r, err, "not a JSON object (%s); the file is damaged", why);
    }
    int rc;
    const json_t *frame = json_object_get(o, "F");
    if (json_object_get(o, "ddx_events")) {
      rc = read_header(r, o, err);
    } else if (!r->st->sections) {
      rc = refuse(r, err,
                  "not a ddx events file (its first line has no \"ddx_events\" header; write "
                  "one with `ddx diagnose --events-out`)");
    } else {
      rc = frame ? read_frame(r, frame) : read_hit(r, o);
      if (rc == DDX_ENOMEM) rc = ddx_error_set(err, rc, "%s: out of memory", r->path);
    }
    json_decref(o);
    if (rc) return rc;
  }
  if (!r->st->sections)
    return ddx_error_set(err, DDX_EINVAL, "%s: empty; not a ddx events file", r->path);
  return 0;
}

int ddx_events_read_ex(ddx_scan_t *s, const char *path, FILE *warn, ddx_events_stats_t *stats,
                       ddx_error_t *err) {
  ddx_events_stats_t local;
  if (!stats) stats = &local;
  memset(stats, 0, sizeof *stats);
  ddx_file_opts_t fo = {
      .max_bytes = DDX_FILE_CAP_EVENTS, .allow_pipe = true, .what = "events file"};
  struct stat st;
  int fd = ddx_file_open(path, &fo, &st, err);
  if (fd < 0) return fd;
  lines_t lr = {.fd = fd, .buf = malloc(EVENTS_READ)};
  ddx_sb_init(&lr.line);
  rd_t r = {.s = s, .path = path, .warn = warn, .st = stats};
  int rc = lr.buf ? read_lines(&r, &lr, err) : ddx_error_set(err, DDX_ENOMEM, "out of memory");
  if (!rc) report_skipped(&r);
  ddx_sb_free(&lr.line);
  free(lr.buf);
  close(fd);
  return rc;
}

int ddx_events_read(ddx_scan_t *s, const char *path, ddx_error_t *err) {
  return ddx_events_read_ex(s, path, stderr, NULL, err);
}
