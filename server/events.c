/* events.c - per-node event files for ddx merge (see ddx/events.h). */
#include "ddx/events.h"

#include <errno.h>
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#define EVENTS_VERSION 1

static json_t *meta_json(const ddx_line_meta_t *m) {
  return json_pack("[i,i,s,I,I,i,i]", m->rank, m->local_rank, m->host, (json_int_t)m->ts_ms,
                   (json_int_t)m->pid, m->stream, m->level);
}

static void meta_from(json_t *a, ddx_line_meta_t *m) {
  ddx_line_meta_init(m);
  if (!json_is_array(a)) return;
  m->rank = (int32_t)json_integer_value(json_array_get(a, 0));
  m->local_rank = (int32_t)json_integer_value(json_array_get(a, 1));
  const char *h = json_string_value(json_array_get(a, 2));
  if (h) snprintf(m->host, sizeof m->host, "%s", h);
  m->ts_ms = json_integer_value(json_array_get(a, 3));
  m->pid = json_integer_value(json_array_get(a, 4));
  m->stream = (uint8_t)json_integer_value(json_array_get(a, 5));
  m->level = (char)json_integer_value(json_array_get(a, 6));
}

static int put_line(FILE *f, json_t *o) {
  int rc = json_dumpf(o, f, JSON_COMPACT) == 0 && fputc('\n', f) != EOF ? 0 : DDX_EIO;
  json_decref(o);
  return rc;
}

int ddx_events_write(const ddx_scan_t *s, FILE *f, ddx_error_t *err) {
  const ddx_catalog_t *cat = s->cat;
  json_t *head = json_object();
  json_object_set_new(head, "ddx_events", json_integer(EVENTS_VERSION));
  json_t *inputs = json_array();
  const ddx_scan_input_t *in = s->inputs.data;
  for (size_t i = 0; i < s->inputs.len; i++)
    json_array_append_new(inputs,
                          json_pack("{s:s,s:I,s:I,s:o}", "name", in[i].name, "bytes",
                                    (json_int_t)in[i].bytes, "lines", (json_int_t)in[i].lines,
                                    "defaults", meta_json(&in[i].defaults)));
  json_object_set_new(head, "inputs", inputs);
  const ddx_layout_t *l = s->layout;
  json_t *hosts = json_array();
  for (size_t i = 0; i < l->nhosts; i++)
    json_array_append_new(
        hosts, json_pack("[s,i,i]", l->hosts[i].name, l->hosts[i].base, l->hosts[i].nlocal));
  json_t *pids = json_array();
  for (size_t i = 0; i < l->npids; i++)
    json_array_append_new(pids, json_pack("[I,i,s]", (json_int_t)l->pids[i].pid,
                                          l->pids[i].local_rank, l->pids[i].host));
  json_object_set_new(head, "layout",
                      json_pack("{s:o,s:i,s:i,s:s,s:i,s:i,s:i,s:o,s:I}", "hosts", hosts,
                                "world_size", l->world_size, "nnodes", l->nnodes, "first_host",
                                l->first_host, "seen_hosts", l->seen_hosts, "max_global",
                                l->max_global, "max_local", l->max_local, "pids", pids, "dialects",
                                (json_int_t)l->dialects));
  json_t *counts = json_object(), *progress = json_object();
  for (size_t r = 0; r < cat->nrules; r++) {
    if (s->rule_hits[r])
      json_object_set_new(counts, cat->rules[r].id, json_integer((json_int_t)s->rule_hits[r]));
    const ddx_rank_progress_t *pr = &s->progress[r];
    json_t *rows = NULL;
    for (size_t k = 0; k < pr->n; k++) {
      if (!pr->line[k]) continue;
      if (!rows) rows = json_array();
      json_array_append_new(rows, json_pack("[I,I,I,i]", (json_int_t)k, (json_int_t)pr->line[k],
                                            (json_int_t)pr->ts[k], (int)pr->input[k]));
    }
    if (rows) json_object_set_new(progress, cat->rules[r].id, rows);
  }
  json_object_set_new(head, "counts", counts);
  json_object_set_new(head, "progress", progress);
  int rc = put_line(f, head);
  const ddx_hit_t *hits = s->hits.data;
  for (size_t i = 0; i < s->hits.len && !rc; i++) {
    const ddx_hit_t *h = &hits[i];
    json_t *o =
        json_pack("{s:i,s:I,s:I,s:i,s:s,s:i,s:b,s:o}", "i", (int)h->input, "l", (json_int_t)h->line,
                  "o", (json_int_t)h->offset, "c", (int)h->column, "r", cat->rules[h->rule].id, "p",
                  (int)h->pattern, "x", h->is_ctx, "m", meta_json(&h->meta));
    if (h->text) {
      json_t *t = json_string(h->text);
      if (t) json_object_set_new(o, "t", t);
    }
    if (h->nfacts) {
      json_t *fa = json_object();
      for (uint16_t k = 0; k < h->nfacts; k++) {
        json_t *v = json_string(h->facts[k].value);
        if (v) json_object_set_new(fa, h->facts[k].name, v);
      }
      json_object_set_new(o, "f", fa);
    }
    rc = put_line(f, o);
  }
  const ddx_frame_t *fr = s->frames.data;
  for (size_t i = 0; i < s->frames.len && !rc; i++) {
    const ddx_frame_t *x = &fr[i];
    rc = put_line(f, json_pack("{s:[i,I,i,i,s,b,i,s?,s?]}", "F", (int)x->input, (json_int_t)x->line,
                               x->rank, x->local_rank, x->host, x->start, (int)x->lineno, x->file,
                               x->func));
  }
  if (rc) return ddx_error_set(err, DDX_EIO, "cannot write events: %s", strerror(errno));
  return 0;
}

static const char *arena_str(ddx_scan_t *s, json_t *v) {
  const char *t = json_string_value(v);
  return t ? ddx_arena_strdup(&s->arena, t) : NULL;
}

static const char *str_or(json_t *v, const char *dflt) {
  const char *t = json_string_value(v);
  return t ? t : dflt;
}

/* Adds the layout of one node's event file to the scan's. */
static void merge_layout(ddx_layout_t *l, json_t *o) {
  json_t *hosts = json_object_get(o, "hosts"), *h;
  size_t i;
  json_array_foreach(hosts, i, h) {
    const char *name = json_string_value(json_array_get(h, 0));
    if (!name || l->nhosts >= DDX_LAYOUT_MAX_HOSTS) continue;
    bool known = false;
    for (size_t k = 0; k < l->nhosts && !known; k++)
      known = !strcmp(l->hosts[k].name, name);
    if (known) continue;
    ddx_layout_host_t *x = &l->hosts[l->nhosts++];
    snprintf(x->name, sizeof x->name, "%s", name);
    x->base = (int32_t)json_integer_value(json_array_get(h, 1));
    x->nlocal = (int32_t)json_integer_value(json_array_get(h, 2));
  }
  int32_t ws = (int32_t)json_integer_value(json_object_get(o, "world_size"));
  if (ws > l->world_size) l->world_size = ws;
  int32_t nn = (int32_t)json_integer_value(json_object_get(o, "nnodes"));
  if (nn > l->nnodes) l->nnodes = nn;
  const char *fh = json_string_value(json_object_get(o, "first_host"));
  int sh = (int)json_integer_value(json_object_get(o, "seen_hosts"));
  if (sh > 1)
    l->seen_hosts = 2;
  else if (sh == 1 && fh)
    ddx_layout_note_host(l, fh);
  ddx_layout_note_ranks(l, (int32_t)json_integer_value(json_object_get(o, "max_global")),
                        (int32_t)json_integer_value(json_object_get(o, "max_local")));
  l->dialects |= (uint32_t)json_integer_value(json_object_get(o, "dialects"));

  json_t *pids = json_object_get(o, "pids"), *p;
  json_array_foreach(pids, i, p) {
    if (l->npids >= DDX_LAYOUT_MAX_PIDS) break;
    ddx_layout_pid_t *x = &l->pids[l->npids++];
    x->pid = (long)json_integer_value(json_array_get(p, 0));
    x->local_rank = (int32_t)json_integer_value(json_array_get(p, 1));
    snprintf(x->host, sizeof x->host, "%s", str_or(json_array_get(p, 2), ""));
  }
}

static int read_hit(ddx_scan_t *s, json_t *o, uint32_t base) {
  const ddx_catalog_t *cat = s->cat;
  const ddx_rule_t *rule = ddx_catalog_find(cat, str_or(json_object_get(o, "r"), ""));
  if (!rule) return 0; /* a rule this catalog does not have */
  int pat = (int)json_integer_value(json_object_get(o, "p"));
  bool is_ctx = json_is_true(json_object_get(o, "x"));
  if (pat < 0 || (size_t)pat >= (is_ctx ? rule->nctx : rule->nsigs)) return 0;
  if (!is_ctx && s->rule_stored[rule->index] >= DDX_SCAN_MAX_HITS_PER_RULE) return 0;
  ddx_hit_t *h = ddx_vec_push(&s->hits);
  if (!h) return DDX_ENOMEM;
  h->rule = rule->index;
  h->pattern = (uint16_t)pat;
  h->is_ctx = is_ctx;
  h->input = base + (uint32_t)json_integer_value(json_object_get(o, "i"));
  h->line = (uint64_t)json_integer_value(json_object_get(o, "l"));
  h->offset = (uint64_t)json_integer_value(json_object_get(o, "o"));
  h->column = (uint32_t)json_integer_value(json_object_get(o, "c"));
  meta_from(json_object_get(o, "m"), &h->meta);
  h->text = arena_str(s, json_object_get(o, "t"));
  json_t *facts = json_object_get(o, "f");
  size_t nf = json_object_size(facts);
  if (nf) {
    h->facts = ddx_arena_alloc(&s->arena, nf * sizeof *h->facts);
    if (!h->facts) return DDX_ENOMEM;
    const char *k;
    json_t *v;
    json_object_foreach(facts, k, v) {
      if (!json_is_string(v) || h->nfacts >= nf) continue;
      h->facts[h->nfacts].name = ddx_arena_strdup(&s->arena, k);
      h->facts[h->nfacts].value = arena_str(s, v);
      h->nfacts++;
    }
  }
  if (is_ctx) {
    s->ctx_stored++;
  } else {
    s->rule_stored[rule->index]++;
    s->rule_last[rule->index] = s->hits.len;
  }
  return 0;
}

static int read_frame(ddx_scan_t *s, json_t *a, uint32_t base) {
  if (s->frames.len >= DDX_SCAN_MAX_FRAMES) return 0;
  ddx_frame_t *f = ddx_vec_push(&s->frames);
  if (!f) return DDX_ENOMEM;
  f->input = base + (uint32_t)json_integer_value(json_array_get(a, 0));
  f->line = (uint64_t)json_integer_value(json_array_get(a, 1));
  f->rank = (int32_t)json_integer_value(json_array_get(a, 2));
  f->local_rank = (int32_t)json_integer_value(json_array_get(a, 3));
  snprintf(f->host, sizeof f->host, "%s", str_or(json_array_get(a, 4), ""));
  f->start = json_is_true(json_array_get(a, 5));
  f->lineno = (uint32_t)json_integer_value(json_array_get(a, 6));
  f->file = arena_str(s, json_array_get(a, 7));
  f->func = arena_str(s, json_array_get(a, 8));
  if (!f->file) f->file = "";
  return 0;
}

int ddx_events_read(ddx_scan_t *s, const char *path, ddx_error_t *err) {
  FILE *f = fopen(path, "rb");
  if (!f) return ddx_error_set(err, DDX_EIO, "%s: %s", path, strerror(errno));
  const ddx_catalog_t *cat = s->cat;
  uint32_t base = (uint32_t)s->inputs.len;
  char *line = NULL;
  size_t cap = 0;
  ssize_t n;
  long lineno = 0;
  int rc = 0;
  while (!rc && (n = getline(&line, &cap, f)) > 0) {
    lineno++;
    json_error_t jerr;
    json_t *o = json_loadb(line, (size_t)n, 0, &jerr);
    if (!json_is_object(o)) {
      json_decref(o);
      rc = ddx_error_set(err, DDX_EINVAL, "%s:%ld: not a ddx event line: %s", path, lineno,
                         jerr.text);
      break;
    }
    if (lineno == 1) {
      if (json_integer_value(json_object_get(o, "ddx_events")) != EVENTS_VERSION) {
        json_decref(o);
        rc = ddx_error_set(err, DDX_EINVAL, "%s: not a ddx event file (version 1 expected)", path);
        break;
      }
      size_t i;
      json_t *in;
      json_array_foreach(json_object_get(o, "inputs"), i, in) {
        uint32_t idx;
        char name[4096];
        snprintf(name, sizeof name, "%s: %s", path, str_or(json_object_get(in, "name"), "?"));
        ddx_line_meta_t defaults;
        meta_from(json_object_get(in, "defaults"), &defaults);
        if ((rc = ddx_scan_add_input(s, name, &defaults, &idx))) break;
        ddx_scan_input_t *si = &((ddx_scan_input_t *)s->inputs.data)[idx];
        si->bytes = (uint64_t)json_integer_value(json_object_get(in, "bytes"));
        si->lines = (uint64_t)json_integer_value(json_object_get(in, "lines"));
        s->bytes += si->bytes;
        s->lines += si->lines;
      }
      merge_layout(s->layout, json_object_get(o, "layout"));
      const char *id;
      json_t *v;
      json_object_foreach(json_object_get(o, "counts"), id, v) {
        const ddx_rule_t *r = ddx_catalog_find(cat, id);
        if (r) s->rule_hits[r->index] += (uint64_t)json_integer_value(v);
      }
      json_object_foreach(json_object_get(o, "progress"), id, v) {
        const ddx_rule_t *r = ddx_catalog_find(cat, id);
        json_t *row;
        size_t k;
        if (!r) continue;
        json_array_foreach(v, k, row) {
          ddx_line_meta_t m;
          ddx_line_meta_init(&m);
          m.ts_ms = json_integer_value(json_array_get(row, 2));
          ddx_scan_note_progress(s, r->index, json_integer_value(json_array_get(row, 0)),
                                 (uint64_t)json_integer_value(json_array_get(row, 1)),
                                 base + (uint32_t)json_integer_value(json_array_get(row, 3)), &m);
        }
      }
    } else if (json_object_get(o, "F")) {
      rc = read_frame(s, json_object_get(o, "F"), base);
    } else {
      rc = read_hit(s, o, base);
    }
    json_decref(o);
  }
  free(line);
  fclose(f);
  if (!rc && lineno == 0) rc = ddx_error_set(err, DDX_EINVAL, "%s: empty event file", path);
  return rc;
}
