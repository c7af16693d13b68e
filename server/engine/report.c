/* report.c - text, JSON, SARIF, evidence and explain renderings (see
 * ddx/report.h). The JSON shape is a contract: docs/json-contract.md. */
#include "ddx/report.h"

#include <ctype.h>
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "ddx/dscheck.h"
#include "ddx/hub.h"
#include "ddx/version.h"

/* ---------------------------------------------------------------- helpers */

static const char *input_name(const ddx_diagnosis_t *d, uint32_t input) {
  const ddx_scan_input_t *in = d->scan->inputs.data;
  return input < d->scan->inputs.len ? in[input].name : "?";
}

static json_t *strs_json(const ddx_strs_t *s) {
  json_t *a = json_array();
  for (size_t i = 0; i < s->n; i++)
    json_array_append_new(a, json_string(s->v[i]));
  return a;
}

static json_t *ranks_json(const ddx_rankset_t *r) {
  json_t *a = json_array();
  for (size_t i = 0; i < r->n; i++)
    json_array_append_new(a, json_integer(r->v[i]));
  return a;
}

/* JSON strings must be UTF-8: invalid bytes from a log become U+FFFD. */
static json_t *text_json(const char *s) {
  json_t *j = json_string(s);
  if (j) return j;
  ddx_sb_t b;
  ddx_sb_init(&b);
  ddx_sb_put_utf8_repaired(&b, s, strlen(s));
  char *t = ddx_sb_take(&b);
  j = json_string(t ? t : "");
  free(t);
  return j;
}

/* The JSON text of root for a terminal or a pipe: jansson writes DEL and
 * the C1 controls (U+0080-U+009F) raw inside strings; they become \u007f
 * and \u0080-\u009f, so a JSON report printed on a terminal cannot drive
 * it either (the same JSON value). Returns a malloc'd string or NULL. */
/* Length of DEL or a C1 control (UTF-8 C2 80-C2 9F) at s[i], else 0. */
static size_t del_or_c1(const unsigned char *s, size_t i, size_t n) {
  if (s[i] == 0x7f) return 1;
  return s[i] == 0xc2 && i + 1 < n && s[i + 1] >= 0x80 && s[i + 1] < 0xa0 ? 2 : 0;
}

static char *dump_json(const json_t *root, size_t flags) {
  char *s = json_dumps(root, flags);
  if (!s) return NULL;
  const unsigned char *u = (const unsigned char *)s;
  size_t n = strlen(s), i = 0, k;
  while (i < n && !del_or_c1(u, i, n))
    i++;
  if (i == n) return s;
  ddx_sb_t b;
  ddx_sb_init(&b);
  ddx_sb_putn(&b, s, i);
  for (; i < n; i += k ? k : 1) {
    k = del_or_c1(u, i, n);
    if (k)
      ddx_sb_printf(&b, "\\u%04x", k == 1 ? 0x7fu : (unsigned)u[i + 1]);
    else
      ddx_sb_putn(&b, s + i, 1);
  }
  free(s);
  return ddx_sb_take(&b);
}

static json_t *facts_json(const ddx_fact_t *f, size_t n) {
  json_t *o = json_object();
  for (size_t i = 0; i < n; i++)
    json_object_set_new(o, f[i].name, text_json(f[i].value));
  return o;
}

static json_t *patches_json(const ddx_rule_t *r) {
  if (!r->config_patches_json) return json_array();
  json_t *p = json_loads(r->config_patches_json, 0, NULL);
  return p ? p : json_array();
}

static json_t *frame_json(const ddx_frame_t *f) {
  if (!f) return json_null();
  return json_pack("{s:o,s:I,s:o}", "file", text_json(f->file), "line", (json_int_t)f->lineno,
                   "function", f->func ? text_json(f->func) : json_null());
}

static json_t *words_json(const char *const *v, size_t n) {
  json_t *a = json_array();
  for (size_t i = 0; i < n; i++)
    json_array_append_new(a, text_json(v[i]));
  return a;
}

/* The checkpoint to resume from: its tag, path or step (what the line
 * names), where it was saved, and the failure it precedes. */
static json_t *resume_json(const ddx_diagnosis_t *d) {
  const ddx_hit_t *h = d->resume;
  if (!h) return json_null();
  const char *tag = ddx_hit_fact(h, "tag"), *path = ddx_hit_fact(h, "path");
  const char *step = ddx_hit_fact(h, "step");
  return json_pack("{s:o,s:o,s:o,s:o,s:I}", "tag", tag ? text_json(tag) : json_null(), "path",
                   path ? text_json(path) : json_null(), "step",
                   step ? text_json(step) : json_null(), "file", text_json(input_name(d, h->input)),
                   "line", (json_int_t)h->line);
}

static json_t *differential_json(const ddx_diagnosis_t *d) {
  json_t *a = json_array();
  for (size_t i = 0; i < d->ndifferential; i++) {
    const ddx_candidate_t *c = &d->differential[i];
    json_array_append_new(
        a, json_pack("{s:s,s:s,s:f,s:b,s:o,s:o}", "rule", c->rule->id, "title", c->rule->title,
                     "score", (double)(int)(c->score * 100 + 0.5) / 100.0, "decisive", c->decisive,
                     "for", words_json(c->pro, c->npro), "against", words_json(c->con, c->ncon)));
  }
  return a;
}

static json_t *incident_json(const ddx_diagnosis_t *d, const ddx_incident_t *inc) {
  const ddx_rule_t *r = inc->rule;
  const ddx_hit_t *h = inc->hit;
  json_t *o = json_object();
  json_object_set_new(o, "rule", json_string(r->id));
  json_object_set_new(o, "title", json_string(ddx_incident_title(inc)));
  json_object_set_new(o, "severity", json_string(ddx_severity_name(inc->severity)));
  json_object_set_new(o, "role", json_string(ddx_role_name(inc->role)));
  json_object_set_new(o, "phase", json_string(r->phase));
  json_object_set_new(o, "rank", inc->rank >= 0 ? json_integer(inc->rank) : json_null());
  json_object_set_new(o, "local_rank",
                      inc->local_rank >= 0 ? json_integer(inc->local_rank) : json_null());
  json_object_set_new(o, "host", h->meta.host[0] ? text_json(h->meta.host) : json_null());
  json_object_set_new(o, "file", text_json(input_name(d, h->input)));
  json_object_set_new(o, "line", json_integer((json_int_t)h->line));
  json_object_set_new(o, "column", json_integer(h->column));
  json_object_set_new(o, "text", text_json(h->text ? h->text : ""));
  json_object_set_new(o, "facts", facts_json(inc->facts, inc->nfacts));
  json_t *tb = json_array();
  for (size_t i = 0; i < inc->nframes; i++) {
    const ddx_frame_t *f = inc->frames[i];
    json_array_append_new(tb, json_pack("{s:o,s:I,s:o,s:I}", "file", text_json(f->file), "line",
                                        (json_int_t)f->lineno, "function",
                                        f->func ? text_json(f->func) : json_null(), "log_line",
                                        (json_int_t)f->line));
  }
  json_object_set_new(o, "traceback", tb);
  json_object_set_new(o, "inferred", json_boolean(inc->inferred));
  json_object_set_new(
      o, "lifecycle",
      inc->phase ? json_pack("{s:s,s:s}", "phase", inc->phase->id, "title", inc->phase->title)
                 : json_null());
  json_object_set_new(o, "library_frame", frame_json(inc->library_frame));
  ddx_oom_t oom;
  if (ddx_report_oom(inc, &oom)) {
    char note[512];
    ddx_report_oom_note(inc, note, sizeof note);
    json_t *m = json_object();
    const struct {
      const char *k;
      double v;
    } f[] = {{"tried", oom.tried},
             {"free", oom.free},
             {"total", oom.total},
             {"allocated", oom.allocated},
             {"unallocated", oom.unallocated},
             {"short_by", oom.short_by}};
    /* short_by < 0: free memory covered the request (fragmentation) */
    bool short_known = oom.tried >= 0 && oom.free >= 0;
    for (size_t k = 0; k < sizeof f / sizeof f[0]; k++) {
      bool known = k == 5 ? short_known : f[k].v >= 0;
      json_object_set_new(m, f[k].k, known ? json_real(f[k].v) : json_null());
    }
    json_object_set_new(m, "note", json_string(note));
    json_object_set_new(o, "memory", m);
  }
  if (inc->user_frame)
    json_object_set_new(
        o, "user_frame",
        json_pack("{s:o,s:I,s:o}", "file", text_json(inc->user_frame->file), "line",
                  (json_int_t)inc->user_frame->lineno, "function",
                  inc->user_frame->func ? text_json(inc->user_frame->func) : json_null()));
  else
    json_object_set_new(o, "user_frame", json_null());
  json_object_set_new(o, "ranks", ranks_json(&inc->ranks));
  json_object_set_new(o, "count", json_integer((json_int_t)inc->count));
  json_object_set_new(o, "confidence",
                      json_real((double)(int)(inc->confidence * 100 + 0.5) / 100.0));
  json_object_set_new(o, "fallback", json_boolean(inc->fallback));
  json_object_set_new(o, "rank_note", inc->rank_note ? json_string(inc->rank_note) : json_null());
  if (inc->nrank_evidence) {
    json_t *ev = json_array();
    for (size_t i = 0; i < inc->nrank_evidence; i++) {
      const ddx_rank_evidence_t *e = &inc->rank_evidence[i];
      json_array_append_new(ev, json_pack("{s:s,s:i,s:f,s:b}", "source", e->source, "rank",
                                          (int)e->rank, "weight", e->weight, "consistent",
                                          e->consistent));
    }
    json_object_set_new(o, "rank_evidence", ev);
  }
  if (inc->nrank_candidates) {
    json_t *c = json_array();
    for (size_t i = 0; i < inc->nrank_candidates; i++)
      json_array_append_new(c, json_integer(inc->rank_candidates[i]));
    json_object_set_new(o, "rank_candidates", c);
  }
  if (inc->quiet_first.n) json_object_set_new(o, "quiet_first", ranks_json(&inc->quiet_first));
  json_t *coll = json_array();
  for (size_t i = 0; i < inc->ncollateral; i++) {
    const ddx_collateral_t *c = &inc->collateral[i];
    json_t *co = json_object();
    json_object_set_new(co, "rule", json_string(c->rule->id));
    json_object_set_new(co, "title", json_string(c->rule->title));
    json_object_set_new(co, "role", json_string(ddx_role_name((int)c->rule->role)));
    json_object_set_new(co, "ranks", ranks_json(&c->ranks));
    json_object_set_new(co, "count", json_integer((json_int_t)c->count));
    json_object_set_new(co, "file", text_json(input_name(d, c->first->input)));
    json_object_set_new(co, "first_line", json_integer((json_int_t)c->first->line));
    json_object_set_new(co, "why", json_string(c->why));
    json_array_append_new(coll, co);
  }
  json_object_set_new(o, "collateral", coll);
  json_object_set_new(o, "summary", json_string(r->summary));
  json_object_set_new(o, "mechanism", json_string(r->mechanism));
  json_object_set_new(o, "checklist", strs_json(&r->checklist));
  json_object_set_new(o, "fix", strs_json(&r->fix));
  json_object_set_new(o, "verify", r->verify ? json_string(r->verify) : json_null());
  json_t *miss = json_array();
  for (size_t i = 0; i < inc->nmissing; i++)
    json_array_append_new(miss, json_string(inc->missing[i]));
  json_object_set_new(o, "missing", miss);
  json_object_set_new(o, "references", strs_json(&r->references));
  json_object_set_new(o, "patches", patches_json(r));
  return o;
}

char *ddx_report_json(const ddx_diagnosis_t *d, const ddx_report_opts_t *o) {
  json_t *root = json_object();
  json_object_set_new(root, "version", json_integer(1));
  json_object_set_new(root, "tool", json_string("ddx " DDX_VERSION));
  json_t *inputs = json_array();
  const ddx_scan_input_t *in = d->scan->inputs.data;
  for (size_t i = 0; i < d->scan->inputs.len; i++) {
    json_t *io = json_object();
    json_object_set_new(io, "name", text_json(in[i].name));
    json_object_set_new(io, "bytes", json_integer((json_int_t)in[i].bytes));
    json_object_set_new(io, "lines", json_integer((json_int_t)in[i].lines));
    json_array_append_new(inputs, io);
  }
  json_object_set_new(root, "inputs", inputs);
  json_t *incs = json_array();
  for (size_t i = 0; i < d->n; i++)
    json_array_append_new(incs, incident_json(d, &d->incidents[i]));
  json_object_set_new(root, "incidents", incs);
  json_object_set_new(root, "differential", differential_json(d));
  json_object_set_new(root, "separator", d->separator ? text_json(d->separator) : json_null());
  json_object_set_new(root, "resume_from", resume_json(d));
  json_t *st = json_object();
  json_object_set_new(st, "bytes", json_integer((json_int_t)d->scan->bytes));
  json_object_set_new(st, "lines", json_integer((json_int_t)d->scan->lines));
  json_object_set_new(st, "seconds", json_real(o ? o->seconds : 0));
  json_object_set_new(st, "rules", json_integer((json_int_t)d->scan->cat->nrules));
  json_object_set_new(st, "regex_limit_hits", json_integer((json_int_t)d->scan->regex_errors));
  json_object_set_new(root, "stats", st);
  char *s = dump_json(root, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
  json_decref(root);
  return s;
}

char *ddx_report_sarif(const ddx_diagnosis_t *d, const ddx_report_opts_t *o) {
  const ddx_catalog_t *cat = d->scan->cat;
  json_t *root = json_object();
  json_object_set_new(root, "$schema",
                      json_string("https://json.schemastore.org/sarif-2.1.0.json"));
  json_object_set_new(root, "version", json_string("2.1.0"));
  json_t *run = json_object();
  json_t *driver = json_object();
  json_object_set_new(driver, "name", json_string("ddx"));
  json_object_set_new(driver, "version", json_string(DDX_VERSION));
  /* Links go to the encyclopedia shipped with ddx, never a placeholder. */
  char *home = o ? ddx_hub_uri(o->hub, NULL) : NULL;
  if (home) json_object_set_new(driver, "informationUri", json_string(home));
  free(home);
  json_t *rules = json_array();
  for (size_t i = 0; i < cat->nrules; i++) {
    const ddx_rule_t *r = &cat->rules[i];
    json_t *ro = json_object();
    json_object_set_new(ro, "id", json_string(r->id));
    json_object_set_new(ro, "name", json_string(r->id));
    json_object_set_new(ro, "shortDescription", json_pack("{s:s}", "text", r->title));
    json_object_set_new(ro, "fullDescription", json_pack("{s:s}", "text", r->mechanism));
    ddx_sb_t help;
    ddx_sb_init(&help);
    for (size_t k = 0; k < r->fix.n; k++)
      ddx_sb_printf(&help, "%zu. %s\n", k + 1, r->fix.v[k]);
    char *ht = ddx_sb_take(&help);
    json_object_set_new(ro, "help", json_pack("{s:s}", "text", ht ? ht : ""));
    free(ht);
    if (o && ddx_hub_has_page(o->hub, r->id)) {
      char *u = ddx_hub_uri(o->hub, r->id);
      if (u) json_object_set_new(ro, "helpUri", json_string(u));
      free(u);
    }
    const char *level = r->severity == DDX_SEV_ERROR     ? "error"
                        : r->severity == DDX_SEV_WARNING ? "warning"
                                                         : "note";
    json_object_set_new(ro, "defaultConfiguration", json_pack("{s:s}", "level", level));
    json_object_set_new(ro, "properties",
                        json_pack("{s:o,s:s,s:s}", "tags", strs_json(&r->tags), "phase", r->phase,
                                  "role", ddx_role_name((int)r->role)));
    json_array_append_new(rules, ro);
  }
  json_object_set_new(driver, "rules", rules);
  json_object_set_new(run, "tool", json_pack("{s:o}", "driver", driver));
  json_t *results = json_array();
  for (size_t i = 0; i < d->n; i++) {
    const ddx_incident_t *inc = &d->incidents[i];
    for (size_t k = 0; k <= inc->ncollateral; k++) {
      const ddx_rule_t *r = k == 0 ? inc->rule : inc->collateral[k - 1].rule;
      const ddx_hit_t *h = k == 0 ? inc->hit : inc->collateral[k - 1].first;
      json_t *res = json_object();
      json_object_set_new(res, "ruleId", json_string(r->id));
      json_object_set_new(res, "ruleIndex", json_integer(r->index));
      int sev = k == 0 ? inc->severity : DDX_SEV_INFO;
      json_object_set_new(res, "level",
                          json_string(sev == DDX_SEV_ERROR     ? "error"
                                      : sev == DDX_SEV_WARNING ? "warning"
                                                               : "note"));
      char msg[1024];
      if (k == 0 && inc->rank >= 0)
        snprintf(msg, sizeof msg, "%s on rank %d: %s", ddx_incident_title(inc), inc->rank,
                 r->fix.n ? r->fix.v[0] : "");
      else if (k == 0)
        snprintf(msg, sizeof msg, "%s: %s", ddx_incident_title(inc), r->fix.n ? r->fix.v[0] : "");
      else
        snprintf(msg, sizeof msg, "%s (collateral of %s)", r->title, inc->rule->id);
      json_object_set_new(res, "message", json_pack("{s:o}", "text", text_json(msg)));
      json_t *loc = json_pack("{s:{s:{s:o},s:{s:I,s:I}}}", "physicalLocation", "artifactLocation",
                              "uri", text_json(input_name(d, h->input)), "region", "startLine",
                              (json_int_t)h->line, "startColumn", (json_int_t)h->column);
      json_object_set_new(res, "locations", json_pack("[o]", loc));
      if (k == 0)
        json_object_set_new(res, "properties",
                            json_pack("{s:f,s:o}", "confidence", inc->confidence, "facts",
                                      facts_json(inc->facts, inc->nfacts)));
      json_array_append_new(results, res);
    }
  }
  json_object_set_new(run, "results", results);
  json_object_set_new(root, "runs", json_pack("[o]", run));
  char *s = dump_json(root, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
  json_decref(root);
  return s;
}

/* --------------------------------------------------------------- terminal */

/* Whether the character at u[0..n) may reach a terminal as it is; *len
 * gets its length (1 for a byte that does not start valid UTF-8). */
static bool term_char_ok(const unsigned char *u, size_t n, size_t *len) {
  if (u[0] < 0x80) {
    *len = 1;
    return (u[0] >= 0x20 && u[0] != 0x7f) || u[0] == '\t';
  }
  size_t k = ddx_utf8_len(u, n);
  *len = k ? k : 1;
  return k && !(k == 2 && u[0] == 0xc2 && u[1] < 0xa0); /* C1: U+0080-U+009F */
}

void ddx_sb_put_term(ddx_sb_t *b, const char *s, size_t n) {
  const unsigned char *u = (const unsigned char *)s;
  size_t i = 0, run = 0, len;
  while (i < n) {
    if (term_char_ok(u + i, n - i, &len)) {
      i += len;
      continue;
    }
    ddx_sb_putn(b, s + run, i - run);
    if (len == 2)
      ddx_sb_printf(b, "\\u%04x", (unsigned)u[i + 1]); /* a C1 control, U+0080-U+009F */
    else
      ddx_sb_printf(b, "\\x%02x", (unsigned)u[i]);
    i += len;
    run = i;
  }
  ddx_sb_putn(b, s + run, n - run);
}

char *ddx_term_escape(const char *s) {
  ddx_sb_t b;
  ddx_sb_init(&b);
  ddx_sb_put_term(&b, s ? s : "", s ? strlen(s) : 0);
  return ddx_sb_take(&b);
}

/* ---------------------------------------------------------------- markdown */

static bool md_special(char c) {
  return c && strchr("\\`*_[]()<>!#|~&{}", c) != NULL;
}

void ddx_sb_put_md(ddx_sb_t *b, const char *s, size_t n, bool code_spans) {
  size_t i = 0, run = 0;
  while (i < n) {
    const char *close =
        code_spans && s[i] == '`' && i + 1 < n ? memchr(s + i + 1, '`', n - i - 1) : NULL;
    if (close && close > s + i + 1) { /* a `code` span of the catalog's prose: as it is */
      ddx_sb_put_term(b, s + run, i - run);
      size_t end = (size_t)(close - s) + 1;
      ddx_sb_put_term(b, s + i, end - i);
      i = run = end;
    } else if (md_special(s[i])) {
      ddx_sb_put_term(b, s + run, i - run);
      ddx_sb_putn(b, "\\", 1);
      ddx_sb_putn(b, s + i, 1);
      i = run = i + 1;
    } else {
      i++;
    }
  }
  ddx_sb_put_term(b, s + run, n - run);
}

void ddx_sb_put_md_code(ddx_sb_t *b, const char *s, size_t n) {
  size_t longest = 0, cur = 0;
  for (size_t i = 0; i < n; i++) {
    cur = s[i] == '`' ? cur + 1 : 0;
    if (cur > longest) longest = cur;
  }
  bool pad = n && (s[0] == '`' || s[n - 1] == '`');
  for (size_t k = 0; k <= longest; k++)
    ddx_sb_putn(b, "`", 1);
  if (pad) ddx_sb_putn(b, " ", 1);
  ddx_sb_put_term(b, s, n);
  if (pad) ddx_sb_putn(b, " ", 1);
  for (size_t k = 0; k <= longest; k++)
    ddx_sb_putn(b, "`", 1);
}

/* A rendering for a terminal: the text, the report's own colours (the
 * only escape sequences it writes) and the escaped copies of the text that
 * came from a log or a rule pack, freed with the rendering. */
typedef struct style {
  const char *bold, *red, *yellow, *cyan, *dim, *reset;
} style_t;

typedef struct text_out {
  ddx_sb_t b;
  style_t st;
  ddx_arena_t tmp;
} text_out_t;

static void text_init(text_out_t *t, const ddx_report_opts_t *o) {
  ddx_sb_init(&t->b);
  ddx_arena_init(&t->tmp);
  if (o && o->color)
    t->st = (style_t){"\033[1m", "\033[1;31m", "\033[1;33m", "\033[36m", "\033[2m", "\033[0m"};
  else
    t->st = (style_t){"", "", "", "", "", ""};
}

static char *text_take(text_out_t *t) {
  ddx_arena_free(&t->tmp);
  return ddx_sb_take(&t->b);
}

/* s[0..n) fit for the terminal: s itself when nothing in it needs
 * escaping, else an escaped copy that lives as long as the rendering. */
static const char *txn(text_out_t *t, const char *s, size_t n) {
  size_t i = 0, len;
  while (i < n && term_char_ok((const unsigned char *)s + i, n - i, &len))
    i += len;
  if (i >= n && s[n] == 0) return s;
  ddx_sb_t e;
  ddx_sb_init(&e);
  ddx_sb_put_term(&e, s, n);
  const char *r = e.s ? ddx_arena_strndup(&t->tmp, e.s, e.len) : NULL;
  ddx_sb_free(&e);
  return r ? r : "?";
}

/* Text for the report; "" for a missing one (never NULL, so a Release
 * build's format checks see no null %s argument). */
static const char *tx(text_out_t *t, const char *s) {
  return s ? txn(t, s, strlen(s)) : "";
}

/* The same for an optional field: NULL stays NULL (the caller decides). */
static const char *tx_opt(text_out_t *t, const char *s) {
  return s ? txn(t, s, strlen(s)) : NULL;
}

/* The first n bytes of s at most, cut at a character boundary. */
static size_t utf8_cut(const char *s, size_t len, size_t n) {
  if (len <= n) return len;
  while (n > 0 && ((unsigned char)s[n] & 0xc0) == 0x80)
    n--;
  return n;
}

/* ------------------------------------------------------------------- text */

/* Length of the first n sentences of text (a sentence ends at ". "). */
static size_t first_sentences(const char *text, int n) {
  const char *p = text;
  for (int i = 0; i < n; i++) {
    const char *dot = strstr(p, ". ");
    if (!dot) return strlen(text);
    p = dot + 1;
  }
  return (size_t)(p - text);
}

static void put_facts(text_out_t *t, const ddx_incident_t *inc) {
  for (size_t i = 0; i < inc->nfacts; i++)
    ddx_sb_printf(&t->b, "%s%s=%s", i ? ", " : "", tx(t, inc->facts[i].name),
                  tx(t, inc->facts[i].value));
}

static void put_where(text_out_t *t, const ddx_diagnosis_t *d, const ddx_incident_t *inc) {
  ddx_sb_t *b = &t->b;
  const ddx_hit_t *h = inc->hit;
  if (inc->rank >= 0)
    ddx_sb_printf(b, "rank %d%s", inc->rank, inc->rank_note ? " (inferred)" : "");
  else if (inc->local_rank >= 0)
    ddx_sb_printf(b, "local rank %d", inc->local_rank);
  else
    ddx_sb_puts(b, "rank unknown");
  if (h->meta.host[0]) ddx_sb_printf(b, " on %s", tx(t, h->meta.host));
  if (inc->rank < 0 && inc->nrank_candidates) {
    ddx_rankset_t c = {0};
    for (size_t i = 0; i < inc->nrank_candidates; i++)
      ddx_rankset_add(&c, inc->rank_candidates[i]);
    char rs[128];
    ddx_rankset_format(&c, rs, sizeof rs);
    ddx_sb_printf(b, " (one of ranks %s)", rs);
    ddx_rankset_free(&c);
  }
  ddx_sb_printf(b, ", %s:%llu", tx(t, input_name(d, h->input)), (unsigned long long)h->line);
  if (inc->ranks.n > 1) {
    char rs[256];
    ddx_rankset_format(&inc->ranks, rs, sizeof rs);
    ddx_sb_printf(b, " (seen on ranks %s)", rs);
  }
}

/* The rule's headline template with {fact} replaced by this incident's
 * facts (a catch-all says "KeyError: 'attention_mask'", not its title);
 * the title when there is no template or a fact is missing. */
static void put_headline_text(text_out_t *t, const ddx_incident_t *inc) {
  const char *tpl = inc->rule->headline;
  if (!tpl) {
    ddx_sb_puts(&t->b, tx(t, ddx_incident_title(inc)));
    return;
  }
  ddx_sb_t out;
  ddx_sb_init(&out);
  for (const char *p = tpl; *p;) {
    const char *close = *p == '{' ? strchr(p, '}') : NULL;
    if (!close) {
      ddx_sb_putn(&out, p++, 1);
      continue;
    }
    char name[64];
    size_t n = (size_t)(close - p - 1);
    if (n >= sizeof name) n = sizeof name - 1;
    memcpy(name, p + 1, n);
    name[n] = 0;
    const char *v = ddx_incident_fact(inc, name);
    if (!v) {
      ddx_sb_free(&out);
      ddx_sb_puts(&t->b, tx(t, ddx_incident_title(inc)));
      return;
    }
    ddx_sb_puts(&out, v);
    p = close + 1;
  }
  if (out.s) ddx_sb_put_term(&t->b, out.s, out.len);
  ddx_sb_free(&out);
}

/* One paragraph a senior engineer would write: who failed first, with
 * what, where; what followed only because of it; the first fix. */
static void put_headline(text_out_t *t, const ddx_diagnosis_t *d, const ddx_incident_t *inc) {
  ddx_sb_t *b = &t->b;
  const style_t *st = &t->st;
  const ddx_rule_t *r = inc->rule;
  const ddx_hit_t *h = inc->hit;
  ddx_sb_puts(b, st->bold);
  if (inc->rank >= 0)
    ddx_sb_printf(b, "Rank %d", inc->rank);
  else if (inc->local_rank >= 0)
    ddx_sb_printf(b, "Local rank %d", inc->local_rank);
  else
    ddx_sb_puts(b, "The job");
  bool show_local = inc->local_rank >= 0 && inc->rank >= 0 && inc->local_rank != inc->rank;
  if (h->meta.host[0] || show_local) {
    ddx_sb_puts(b, " (");
    if (show_local) ddx_sb_printf(b, "local rank %d", inc->local_rank);
    if (h->meta.host[0]) ddx_sb_printf(b, "%son %s", show_local ? " " : "", tx(t, h->meta.host));
    ddx_sb_puts(b, ")");
  }
  ddx_sb_printf(b, "%s%s%s: ",
                inc->rank_note && !strncmp(inc->rank_note, "inference", 9) ? " (inferred)" : "",
                inc->inferred ? " (the error line is cut; most likely)" : "", st->reset);
  put_headline_text(t, inc);
  ddx_sb_printf(b, ", at %s:%llu.", tx(t, input_name(d, h->input)), (unsigned long long)h->line);
  uint64_t ncoll = 0;
  for (size_t i = 0; i < inc->ncollateral; i++)
    ncoll += inc->collateral[i].count;
  if (ncoll) {
    ddx_sb_puts(b, " Then, as a consequence:");
    for (size_t i = 0; i < inc->ncollateral && i < 4; i++) {
      const ddx_collateral_t *c = &inc->collateral[i];
      char rs[96] = "";
      ddx_rankset_format(&c->ranks, rs, sizeof rs);
      ddx_sb_printf(b, "%s %s (%llu x%s%s)", i ? ";" : "", tx(t, c->rule->id),
                    (unsigned long long)c->count, rs[0] ? ", ranks " : "", rs);
    }
    if (inc->ncollateral > 4) ddx_sb_printf(b, "; and %zu more", inc->ncollateral - 4);
    ddx_sb_puts(b, ".");
  }
  if (r->fix.n) ddx_sb_printf(b, " Fix first: %s", tx(t, r->fix.v[0]));
  ddx_sb_puts(b, "\n\n");
}

/* "also possible": the differential's other candidates, and the fact
 * that would separate the first two. */
static void put_differential(text_out_t *t, const ddx_diagnosis_t *d) {
  size_t shown = 0;
  for (size_t i = 0; i < d->ndifferential; i++) {
    const ddx_candidate_t *c = &d->differential[i];
    if (c->rule == d->incidents[0].rule || c->score < 0.05) continue;
    ddx_sb_printf(&t->b, "%s %s (%.2f%s%s)", shown ? "," : "  also possible", tx(t, c->rule->id),
                  c->score, c->npro ? ": " : "", c->npro ? tx(t, c->pro[0]) : "");
    if (++shown == 3) break;
  }
  if (shown) ddx_sb_puts(&t->b, "\n");
  if (d->separator)
    ddx_sb_printf(&t->b, "  %stell apart%s %s\n", t->st.bold, t->st.reset, tx(t, d->separator));
}

static void put_resume(text_out_t *t, const ddx_diagnosis_t *d) {
  const ddx_hit_t *h = d->resume;
  if (!h) return;
  const char *tag = tx_opt(t, ddx_hit_fact(h, "tag")), *path = tx_opt(t, ddx_hit_fact(h, "path"));
  const char *step = tx_opt(t, ddx_hit_fact(h, "step"));
  ddx_sb_printf(
      &t->b,
      "  %sresume%s    from %s%s%s%s%s (saved at line %llu, before the failure began), once "
      "the fix is in\n",
      t->st.bold, t->st.reset,
      tag    ? tag
      : step ? "iteration "
             : "",
      tag    ? ""
      : step ? step
             : "",
      path ? (tag || step ? " in " : "") : "", path ? path : "", "", (unsigned long long)h->line);
}

static void put_incident_text(text_out_t *t, const ddx_diagnosis_t *d, const ddx_incident_t *inc,
                              bool primary) {
  ddx_sb_t *b = &t->b;
  const style_t *st = &t->st;
  const ddx_rule_t *r = inc->rule;
  const char *sc = inc->severity == DDX_SEV_ERROR     ? st->red
                   : inc->severity == DDX_SEV_WARNING ? st->yellow
                                                      : st->cyan;
  ddx_sb_printf(b, "%s%s%s %s%s%s  [%s, %s, confidence %.2f]\n", sc,
                ddx_severity_name(inc->severity), st->reset, st->bold,
                tx(t, ddx_incident_title(inc)), st->reset, tx(t, r->id), ddx_role_name(inc->role),
                inc->confidence);
  ddx_sb_puts(b, "  where     ");
  put_where(t, d, inc);
  ddx_sb_puts(b, "\n");
  if (inc->rank_note) ddx_sb_printf(b, "  suspect   %s\n", tx(t, inc->rank_note));
  if (inc->hit->text) {
    size_t tl = strlen(inc->hit->text), cut = utf8_cut(inc->hit->text, tl, 220);
    ddx_sb_printf(b, "  %s>%s %s%s\n", st->dim, st->reset, txn(t, inc->hit->text, cut),
                  cut < tl ? " ..." : "");
  }
  if (inc->nfacts) {
    ddx_sb_puts(b, "  facts     ");
    put_facts(t, inc);
    ddx_sb_puts(b, "\n");
  }
  if (inc->phase) ddx_sb_printf(b, "  phase     %s\n", tx(t, inc->phase->title));
  char oom[512];
  if (ddx_report_oom_note(inc, oom, sizeof oom)) ddx_sb_printf(b, "  memory    %s\n", tx(t, oom));
  if (inc->nframes) {
    const ddx_frame_t *in = inc->frames[inc->nframes - 1];
    ddx_sb_printf(b, "  %s %s:%u in %s", inc->inferred ? "last frame" : "raised in",
                  tx(t, in->file), in->lineno, in->func ? tx(t, in->func) : "?");
    if (inc->user_frame && inc->user_frame != in)
      ddx_sb_printf(b, "\n  your code %s:%u in %s", tx(t, inc->user_frame->file),
                    inc->user_frame->lineno,
                    inc->user_frame->func ? tx(t, inc->user_frame->func) : "?");
    ddx_sb_printf(b, "  %s(%zu frames)%s\n", st->dim, inc->nframes, st->reset);
  }
  if (!primary) return;
  put_differential(t, d);
  put_resume(t, d);
  if (inc->ncollateral) {
    ddx_sb_puts(b, "  collateral\n");
    for (size_t i = 0; i < inc->ncollateral; i++) {
      const ddx_collateral_t *c = &inc->collateral[i];
      char rs[200] = "";
      ddx_rankset_format(&c->ranks, rs, sizeof rs);
      ddx_sb_printf(b, "    %5llu x %-28s %s%s%s (first at line %llu)\n",
                    (unsigned long long)c->count, tx(t, c->rule->id),
                    !rs[0]            ? ""
                    : c->ranks.n == 1 ? "rank "
                                      : "ranks ",
                    rs, rs[0] ? "" : "rank unknown", (unsigned long long)c->first->line);
    }
  }
  ddx_sb_printf(b, "  %swhy%s       %s\n", st->bold, st->reset, tx(t, r->summary));
  ddx_sb_printf(b, "            %s", txn(t, r->mechanism, first_sentences(r->mechanism, 2)));
  ddx_sb_printf(b, " %s(more: ddx explain %s)%s\n", st->dim, tx(t, r->id), st->reset);
  ddx_sb_printf(b, "  %sfix%s\n", st->bold, st->reset);
  for (size_t i = 0; i < r->fix.n; i++)
    ddx_sb_printf(b, "    %zu. %s\n", i + 1, tx(t, r->fix.v[i]));
  if (r->verify) ddx_sb_printf(b, "  %sverify%s    %s\n", st->bold, st->reset, tx(t, r->verify));
  if (r->config_patches_json) {
    json_t *p = json_loads(r->config_patches_json, 0, NULL);
    if (json_array_size(p)) {
      ddx_sb_puts(b, "  quick fixes for ds_config.json (the editor applies them)\n");
      for (size_t i = 0; i < json_array_size(p); i++)
        ddx_sb_printf(b, "    - %s\n",
                      tx(t, json_string_value(json_object_get(json_array_get(p, i), "title"))));
    }
    json_decref(p);
  }
  if (inc->nmissing) {
    ddx_sb_puts(b, "  missing\n");
    for (size_t i = 0; i < inc->nmissing; i++)
      ddx_sb_printf(b, "    - %s\n", tx(t, inc->missing[i]));
  }
}

char *ddx_report_text(const ddx_diagnosis_t *d, const ddx_report_opts_t *o) {
  text_out_t t;
  text_init(&t, o);
  const style_t *st = &t.st;
  if (d->n == 0) {
    ddx_sb_printf(&t.b, "%sno known failure found%s in %llu lines\n", st->bold, st->reset,
                  (unsigned long long)d->scan->lines);
    ddx_sb_puts(&t.b, "  If the job did fail, the error may be outside this excerpt: include the "
                      "first traceback of every rank.\n");
  }
  bool also = false, noted = false;
  for (size_t i = 0; i < d->n; i++) {
    const ddx_incident_t *inc = &d->incidents[i];
    if (i > 0 && inc->severity < DDX_SEV_ERROR) {
      /* Warnings beside a failure: one line each, they are context. */
      if (!noted) ddx_sb_printf(&t.b, "\n%salso noted%s\n", st->bold, st->reset);
      noted = true;
      ddx_sb_printf(&t.b, "  %s %s at %s:%llu (%llu x)\n", ddx_severity_name(inc->severity),
                    tx(&t, inc->rule->id), tx(&t, input_name(d, inc->hit->input)),
                    (unsigned long long)inc->hit->line, (unsigned long long)inc->count);
      continue;
    }
    if (i > 0 && !also)
      ddx_sb_printf(&t.b, "\n%salso found%s (independent of the above)\n", st->bold, st->reset);
    if (i > 0) also = true;
    if (i == 0 && inc->severity == DDX_SEV_ERROR) put_headline(&t, d, inc);
    put_incident_text(&t, d, inc, i == 0);
  }
  ddx_sb_printf(&t.b, "%s%llu bytes, %llu lines, %zu rules, %.3f s%s\n", st->dim,
                (unsigned long long)d->scan->bytes, (unsigned long long)d->scan->lines,
                d->scan->cat->nrules, o ? o->seconds : 0.0, st->reset);
  return text_take(&t);
}

/* --------------------------------------------------------------- evidence */

static bool is_ipv4_at(const char *s, size_t *len) {
  int parts = 0;
  const char *p = s;
  while (parts < 4) {
    int digits = 0;
    while (isdigit((unsigned char)*p) && digits < 4)
      p++, digits++;
    if (digits == 0 || digits > 3) return false;
    parts++;
    if (parts < 4) {
      if (*p != '.') return false;
      p++;
    }
  }
  if (isdigit((unsigned char)*p)) return false;
  *len = (size_t)(p - s);
  return true;
}

char *ddx_redact(const char *text, const char *const *hosts, size_t nhosts) {
  ddx_sb_t b;
  ddx_sb_init(&b);
  const char *p = text;
  while (*p) {
    size_t n;
    bool boundary = p == text || !isalnum((unsigned char)p[-1]);
    if (boundary && isdigit((unsigned char)*p) && is_ipv4_at(p, &n)) {
      ddx_sb_puts(&b, "x.x.x.x");
      p += n;
      continue;
    }
    if (!strncmp(p, "/home/", 6) || !strncmp(p, "/Users/", 7) || !strncmp(p, "/data/home/", 11)) {
      size_t pre = !strncmp(p, "/home/", 6) ? 6 : !strncmp(p, "/Users/", 7) ? 7 : 11;
      ddx_sb_putn(&b, p, pre);
      p += pre;
      while (*p && *p != '/' && *p != ' ' && *p != '"' && *p != '\'')
        p++;
      ddx_sb_puts(&b, "USER");
      continue;
    }
    if (*p == '@' && p > text && isalnum((unsigned char)p[-1]) && isalnum((unsigned char)p[1])) {
      /* user@host: drop the user already written, then the host. */
      size_t k = b.len;
      while (k > 0 && (isalnum((unsigned char)b.s[k - 1]) || b.s[k - 1] == '_' ||
                       b.s[k - 1] == '-' || b.s[k - 1] == '.'))
        k--;
      b.len = k;
      b.s[k] = 0;
      ddx_sb_puts(&b, "USER@HOST");
      p++;
      while (isalnum((unsigned char)*p) || *p == '-' || *p == '.' || *p == '_')
        p++;
      continue;
    }
    bool replaced = false;
    for (size_t h = 0; h < nhosts && !replaced; h++) {
      size_t hl = strlen(hosts[h]);
      if (hl >= 2 && boundary && !strncmp(p, hosts[h], hl) && !isalnum((unsigned char)p[hl])) {
        ddx_sb_printf(&b, "host-%zu", h + 1);
        p += hl;
        replaced = true;
      }
    }
    if (replaced) continue;
    ddx_sb_putn(&b, p, 1);
    p++;
  }
  return ddx_sb_take(&b);
}

char *ddx_report_evidence(const ddx_diagnosis_t *d, const ddx_report_opts_t *o) {
  (void)o;
  /* Collect the hosts the log names so they can be replaced everywhere. */
  const char *hosts[64];
  size_t nhosts = 0;
  const ddx_hit_t *hits = d->scan->hits.data;
  for (size_t i = 0; i < d->scan->hits.len && nhosts < 64; i++) {
    const char *h = hits[i].meta.host;
    if (!h[0]) continue;
    bool seen = false;
    for (size_t k = 0; k < nhosts && !seen; k++)
      seen = !strcmp(hosts[k], h);
    if (!seen) hosts[nhosts++] = h;
  }
  text_out_t t;
  text_init(&t, NULL);
  ddx_sb_puts(&t.b, "ddx evidence (personal data replaced; review before sharing)\n");
  for (size_t i = 0; i < d->n; i++) {
    const ddx_incident_t *inc = &d->incidents[i];
    for (size_t k = 0; k <= inc->ncollateral; k++) {
      const ddx_hit_t *h = k == 0 ? inc->hit : inc->collateral[k - 1].first;
      const ddx_rule_t *r = k == 0 ? inc->rule : inc->collateral[k - 1].rule;
      char *red = ddx_redact(h->text ? h->text : "", hosts, nhosts);
      int32_t rank = k == 0 ? inc->rank : h->meta.rank;
      char where[64] = "";
      if (rank >= 0) snprintf(where, sizeof where, " rank %d", rank);
      ddx_sb_printf(&t.b, "[%s%s%s, line %llu] %s\n", k == 0 ? "" : "collateral ", tx(&t, r->id),
                    where, (unsigned long long)h->line, red ? tx(&t, red) : "");
      free(red);
    }
  }
  return text_take(&t);
}

/* -------------------------------------------------------------- OOM margin */

static double fact_bytes(const ddx_incident_t *inc, const char *name) {
  const char *v = ddx_incident_fact(inc, name);
  double x;
  return v && *v && ddx_parse_quantity(v, &x) && x >= 0 ? x : -1;
}

bool ddx_report_oom(const ddx_incident_t *inc, ddx_oom_t *out) {
  out->tried = fact_bytes(inc, "tried");
  out->free = fact_bytes(inc, "free");
  out->total = fact_bytes(inc, "total");
  out->allocated = fact_bytes(inc, "allocated");
  out->unallocated = fact_bytes(inc, "unallocated");
  out->short_by = out->tried >= 0 && out->free >= 0 ? out->tried - out->free : -1;
  return out->tried >= 0;
}

size_t ddx_report_oom_note(const ddx_incident_t *inc, char *buf, size_t cap) {
  ddx_oom_t o;
  if (cap) buf[0] = 0;
  if (!cap || !ddx_report_oom(inc, &o)) return 0;
  char tried[32], fr[32], total[32], sh[32], un[32];
  ddx_dscheck_format_bytes(o.tried, tried, sizeof tried);
  ddx_dscheck_format_bytes(o.free, fr, sizeof fr);
  ddx_dscheck_format_bytes(o.total, total, sizeof total);
  ddx_dscheck_format_bytes(o.short_by, sh, sizeof sh);
  ddx_dscheck_format_bytes(o.unallocated, un, sizeof un);
  char where[160] = "";
  size_t w = 0;
  if (inc->rank >= 0) w += (size_t)snprintf(where, sizeof where, " on rank %d", inc->rank);
  if (inc->phase && w < sizeof where)
    snprintf(where + w, sizeof where - w, " during the %s", inc->phase->title);
  int n;
  if (o.short_by > 0)
    n = snprintf(buf, cap, "%s short%s: it asked for %s with %s free", sh, where, tried, fr);
  else if (o.free >= 0)
    /* free covered the request: another allocation raced it, or the
     * request was rounded up to a block the segments could not hold */
    n = snprintf(buf, cap, "it asked for %s%s with %s free (fragmented: no block of that size)",
                 tried, where, fr);
  else
    n = snprintf(buf, cap, "it asked for %s%s", tried, where);
  if (n > 0 && (size_t)n < cap && o.total > 0)
    n += snprintf(buf + n, cap - (size_t)n, " of %s", total);
  if (n > 0 && (size_t)n < cap && o.unallocated > 0 && o.unallocated >= o.tried)
    n += snprintf(buf + n, cap - (size_t)n,
                  "; %s sat reserved by PyTorch but unallocated, enough for the request: "
                  "fragmentation (PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True)",
                  un);
  return n > 0 ? strlen(buf) : 0;
}

/* ---------------------------------------------------------------- explain */

char *ddx_report_explain(const ddx_rule_t *r, const ddx_report_opts_t *o, bool as_json) {
  if (as_json) {
    json_t *root = json_load_file(r->file, 0, NULL);
    if (!root) return NULL;
    json_object_del(root, "samples");
    char *s = dump_json(root, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
    json_decref(root);
    return s;
  }
  text_out_t t;
  text_init(&t, o);
  const style_t st = t.st;
  ddx_sb_t *b = &t.b;
  ddx_sb_printf(b, "%s%s%s  (%s)\n", st.bold, tx(&t, r->title), st.reset, tx(&t, r->id));
  ddx_sb_printf(b, "phase %s, severity %s, role %s, priority %d\n\n", tx(&t, r->phase),
                ddx_severity_name((int)r->severity), ddx_role_name((int)r->role), r->priority);
  ddx_sb_printf(b, "%sSummary%s\n  %s\n\n%sMechanism%s\n  %s\n", st.bold, st.reset,
                tx(&t, r->summary), st.bold, st.reset, tx(&t, r->mechanism));
  if (r->nsymptoms) {
    ddx_sb_printf(b, "\n%sSymptoms%s\n", st.bold, st.reset);
    for (size_t i = 0; i < r->nsymptoms; i++)
      ddx_sb_printf(b, "  - %s%s%s\n", tx(&t, r->symptoms[i].text),
                    r->symptoms[i].why ? "\n    why: " : "",
                    r->symptoms[i].why ? tx(&t, r->symptoms[i].why) : "");
  }
  if (r->affects) ddx_sb_printf(b, "\n%sAffects%s\n  %s\n", st.bold, st.reset, tx(&t, r->affects));
  const struct {
    const char *name;
    const ddx_strs_t *list;
    bool numbered;
  } lists[] = {{"Checklist", &r->checklist, false}, {"Fix", &r->fix, true}};
  for (size_t l = 0; l < 2; l++) {
    if (!lists[l].list->n) continue;
    ddx_sb_printf(b, "\n%s%s%s\n", st.bold, lists[l].name, st.reset);
    for (size_t i = 0; i < lists[l].list->n; i++) {
      if (lists[l].numbered)
        ddx_sb_printf(b, "  %zu. %s\n", i + 1, tx(&t, lists[l].list->v[i]));
      else
        ddx_sb_printf(b, "  - %s\n", tx(&t, lists[l].list->v[i]));
    }
  }
  if (r->verify) ddx_sb_printf(b, "\n%sVerify%s\n  %s\n", st.bold, st.reset, tx(&t, r->verify));
  if (r->prevention)
    ddx_sb_printf(b, "\n%sPrevention%s\n  %s\n", st.bold, st.reset, tx(&t, r->prevention));
  if (r->fingerprint)
    ddx_sb_printf(b, "\n%sFingerprint%s\n  %s\n", st.bold, st.reset, tx(&t, r->fingerprint));
  if (r->config_patches_json) {
    json_t *p = json_loads(r->config_patches_json, 0, NULL);
    ddx_sb_printf(b, "\n%sds_config.json quick fixes%s\n", st.bold, st.reset);
    for (size_t i = 0; i < json_array_size(p); i++) {
      json_t *pi = json_array_get(p, i);
      char *ops = json_dumps(json_object_get(pi, "ops"), JSON_COMPACT);
      ddx_sb_printf(b, "  - %s: %s\n", tx(&t, json_string_value(json_object_get(pi, "title"))),
                    ops ? tx(&t, ops) : "");
      free(ops);
    }
    json_decref(p);
  }
  if (r->related.n) {
    ddx_sb_printf(b, "\n%sRelated%s\n  ", st.bold, st.reset);
    for (size_t i = 0; i < r->related.n; i++)
      ddx_sb_printf(b, "%s%s", i ? ", " : "", tx(&t, r->related.v[i]));
    ddx_sb_puts(b, "\n");
  }
  if (r->references.n) {
    ddx_sb_printf(b, "\n%sReferences%s\n", st.bold, st.reset);
    for (size_t i = 0; i < r->references.n; i++)
      ddx_sb_printf(b, "  %s\n", tx(&t, r->references.v[i]));
  }
  return text_take(&t);
}
