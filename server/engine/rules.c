/* rules.c - loads, validates and compiles the failure catalog (see ddx/rules.h).
 *
 * Validation is strict and every error names the file and the JSON path of
 * the offending field, e.g. "rules/x.json: $.signatures[1].regex: ...". */
#define PCRE2_CODE_UNIT_WIDTH 8
#include "ddx/rules.h"

#include "ddx/file.h"
#include "ddx/layout.h"

#include <errno.h>
#include <stdarg.h>
#include <jansson.h>
#include <pcre2.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <limits.h>
#include <unistd.h>

/* Limits that stop a catastrophic user regex ((a+)+$ style) on one line
 * instead of hanging the scan; a hit of the limit counts as a regex error. */
#define DDX_MATCH_LIMIT 200000
#define DDX_DEPTH_LIMIT 10000

static int ends_with(const char *s, const char *suffix);

/* Loader state for one file: where we are, for error messages. */
typedef struct load_ctx {
  ddx_catalog_t *cat;
  const char *file;
  char path[256];
  ddx_error_t *err;
} load_ctx_t;

static int fail(load_ctx_t *lc, const char *field, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static int fail(load_ctx_t *lc, const char *field, const char *fmt, ...) {
  char what[1024];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(what, sizeof what, fmt, ap);
  va_end(ap);
  return ddx_error_set(lc->err, DDX_ERULE, "%s: %s%s%s: %s", lc->file, lc->path,
                       field && *field ? "." : "", field ? field : "", what);
}

/* Pushes ".key" or "[i]" onto the path; returns the old length to restore. */
static size_t path_push(load_ctx_t *lc, const char *key, long idx) {
  size_t old = strlen(lc->path);
  if (key)
    snprintf(lc->path + old, sizeof lc->path - old, ".%s", key);
  else
    snprintf(lc->path + old, sizeof lc->path - old, "[%ld]", idx);
  return old;
}

static void path_pop(load_ctx_t *lc, size_t old) {
  lc->path[old] = 0;
}

static int check_keys(load_ctx_t *lc, json_t *obj, const char *const *allowed) {
  const char *key;
  json_t *val;
  json_object_foreach(obj, key, val) {
    int ok = 0;
    for (const char *const *a = allowed; *a; a++)
      if (!strcmp(*a, key)) ok = 1;
    if (!ok) return fail(lc, key, "unknown field (see rules/README.md)");
  }
  return 0;
}

static int get_str(load_ctx_t *lc, json_t *obj, const char *key, bool required, const char **out) {
  json_t *v = json_object_get(obj, key);
  *out = NULL;
  if (!v) return required ? fail(lc, key, "missing required string") : 0;
  if (!json_is_string(v)) return fail(lc, key, "expected a string");
  if (required && json_string_length(v) == 0) return fail(lc, key, "must not be empty");
  *out = ddx_arena_strndup(&lc->cat->arena, json_string_value(v), json_string_length(v));
  return *out ? 0 : ddx_error_set(lc->err, DDX_ENOMEM, "out of memory");
}

static int get_strs(load_ctx_t *lc, json_t *obj, const char *key, bool required, ddx_strs_t *out) {
  json_t *v = json_object_get(obj, key);
  out->v = NULL;
  out->n = 0;
  if (!v) return required ? fail(lc, key, "missing required array of strings") : 0;
  if (!json_is_array(v)) return fail(lc, key, "expected an array of strings");
  size_t n = json_array_size(v);
  if (required && n == 0) return fail(lc, key, "must not be empty");
  out->v = ddx_arena_alloc(&lc->cat->arena, (n + 1) * sizeof *out->v);
  if (!out->v) return ddx_error_set(lc->err, DDX_ENOMEM, "out of memory");
  for (size_t i = 0; i < n; i++) {
    json_t *s = json_array_get(v, i);
    if (!json_is_string(s)) {
      size_t old = path_push(lc, key, -1);
      path_pop(lc, old);
      char f[128];
      snprintf(f, sizeof f, "%s[%zu]", key, i);
      return fail(lc, f, "expected a string");
    }
    out->v[i] = ddx_arena_strndup(&lc->cat->arena, json_string_value(s), json_string_length(s));
    if (!out->v[i]) return ddx_error_set(lc->err, DDX_ENOMEM, "out of memory");
  }
  out->n = n;
  return 0;
}

static int get_enum(load_ctx_t *lc, json_t *obj, const char *key, const char *const *names,
                    int dflt, bool required, int *out) {
  json_t *v = json_object_get(obj, key);
  *out = dflt;
  if (!v) return required ? fail(lc, key, "missing required field") : 0;
  if (json_is_string(v))
    for (int i = 0; names[i]; i++)
      if (!strcmp(names[i], json_string_value(v))) {
        *out = i;
        return 0;
      }
  char list[256] = "";
  for (int i = 0; names[i]; i++) {
    strncat(list, i ? ", " : "", sizeof list - strlen(list) - 1);
    strncat(list, names[i], sizeof list - strlen(list) - 1);
  }
  return fail(lc, key, "expected one of: %s", list);
}

static int get_bool(load_ctx_t *lc, json_t *obj, const char *key, bool dflt, bool *out) {
  json_t *v = json_object_get(obj, key);
  *out = dflt;
  if (!v) return 0;
  if (!json_is_boolean(v)) return fail(lc, key, "expected true or false");
  *out = json_is_true(v);
  return 0;
}

static int get_int(load_ctx_t *lc, json_t *obj, const char *key, long lo, long hi, long dflt,
                   bool required, long *out) {
  json_t *v = json_object_get(obj, key);
  *out = dflt;
  if (!v) return required ? fail(lc, key, "missing required integer") : 0;
  if (!json_is_integer(v)) return fail(lc, key, "expected an integer");
  long x = (long)json_integer_value(v);
  if (x < lo || x > hi) return fail(lc, key, "must be between %ld and %ld", lo, hi);
  *out = x;
  return 0;
}

/* A rule id is printed in reports, SARIF, the editor and file names:
 * "family.name" of lower-case letters, digits and (after the family) '-',
 * as rules/rule.schema.json says. */
#define DDX_RULE_ID_PATTERN "^[a-z0-9]+(\\.[a-z0-9-]+)+$"

static bool id_char(char c, bool family) {
  return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || (!family && c == '-');
}

/* id[0..n) matches DDX_RULE_ID_PATTERN (a NUL inside does not). */
static bool valid_rule_id(const char *id, size_t n) {
  const char *p = id;
  while (id_char(*p, true))
    p++;
  if (p == id || *p != '.') return false;
  while (*p == '.') {
    const char *part = ++p;
    while (id_char(*p, false))
      p++;
    if (p == part) return false;
  }
  return *p == 0 && (size_t)(p - id) == n;
}

/* id[0..n) for an error message: printable ASCII as it is, a backslash as
 * \\, every other byte as \xNN; cut with "..." to fit out (cap >= 8). */
static const char *quote_id(const char *id, size_t n, char *out, size_t cap) {
  size_t k = 0;
  for (size_t i = 0; i < n; i++) {
    if (k + 8 > cap) {
      memcpy(out + k, "...", 4);
      return out;
    }
    unsigned char c = (unsigned char)id[i];
    if (c >= 0x20 && c < 0x7f && c != '\\')
      out[k++] = (char)c;
    else
      k += (size_t)snprintf(out + k, cap - k, c == '\\' ? "\\\\" : "\\x%02x", c);
  }
  out[k] = 0;
  return out;
}

/* Compiles one regex (JIT when available); field names it in errors. */
static int compile_regex(load_ctx_t *lc, const char *regex, const char *field, const char *owner,
                         pcre2_code **out) {
  int errcode;
  PCRE2_SIZE erroff;
  pcre2_code *code =
      pcre2_compile((PCRE2_SPTR)regex, PCRE2_ZERO_TERMINATED, 0, &errcode, &erroff, NULL);
  if (!code) {
    PCRE2_UCHAR buf[256];
    pcre2_get_error_message(errcode, buf, sizeof buf);
    return fail(lc, field, "%s: regex does not compile at offset %zu: %s", owner, (size_t)erroff,
                (char *)buf);
  }
  if (pcre2_jit_compile(code, PCRE2_JIT_COMPLETE) == 0) lc->cat->jit = true;
  *out = code;
  return 0;
}

static int compile_pattern(load_ctx_t *lc, ddx_pattern_t *p, const char *rule_id) {
  char owner[160];
  snprintf(owner, sizeof owner, "rule %s", rule_id);
  pcre2_code *code;
  int rc = compile_regex(lc, p->regex, "regex", owner, &code);
  if (rc) return rc;
  p->code = code;
  pcre2_match_context *mctx = pcre2_match_context_create(NULL);
  if (!mctx) return ddx_error_set(lc->err, DDX_ENOMEM, "out of memory");
  pcre2_set_match_limit(mctx, DDX_MATCH_LIMIT);
  pcre2_set_depth_limit(mctx, DDX_DEPTH_LIMIT);
  p->mctx = mctx;
  uint32_t capcount = 0, namecount = 0, entry = 0;
  PCRE2_SPTR table;
  pcre2_pattern_info(code, PCRE2_INFO_CAPTURECOUNT, &capcount);
  pcre2_pattern_info(code, PCRE2_INFO_NAMECOUNT, &namecount);
  pcre2_pattern_info(code, PCRE2_INFO_NAMEENTRYSIZE, &entry);
  pcre2_pattern_info(code, PCRE2_INFO_NAMETABLE, &table);
  p->ncaptures = capcount;
  p->capture_names = ddx_arena_alloc(&lc->cat->arena, (capcount + 1) * sizeof(char *));
  if (!p->capture_names) return ddx_error_set(lc->err, DDX_ENOMEM, "out of memory");
  for (uint32_t i = 0; i < namecount; i++) {
    const unsigned char *e = table + (size_t)i * entry;
    unsigned group = ((unsigned)e[0] << 8) | e[1];
    if (group <= capcount &&
        !(p->capture_names[group] = ddx_arena_strdup(&lc->cat->arena, (const char *)e + 2)))
      return ddx_error_set(lc->err, DDX_ENOMEM, "out of memory");
    if (!strcmp((const char *)e + 2, "rank")) p->has_rank = true;
  }
  return 0;
}

static int load_condition(load_ctx_t *lc, json_t *o, ddx_condition_t *c) {
  static const char *const keys[] = {"fact", "op", "value", NULL};
  static const char *const ops[] = {"<", "<=", ">", ">=", "==", "!=", "exists", NULL};
  int rc, op;
  if (!json_is_object(o)) return fail(lc, NULL, "expected an object");
  if ((rc = check_keys(lc, o, keys))) return rc;
  if ((rc = get_str(lc, o, "fact", true, &c->fact))) return rc;
  if ((rc = get_enum(lc, o, "op", ops, 0, true, &op))) return rc;
  c->op = ops[op];
  json_t *v = json_object_get(o, "value");
  if (!v) {
    if (op != 6) return fail(lc, "value", "missing (needed by op %s)", ops[op]);
    return 0;
  }
  c->has_value = true;
  if (json_is_number(v)) {
    c->number = json_number_value(v);
  } else if (json_is_string(v)) {
    const char *s = json_string_value(v);
    const char *star = strchr(s, '*');
    if (star) {
      char *end;
      c->ref_factor = strtod(s, &end);
      if (end == s) { /* "fact*fact": a product of two facts */
        c->ref_factor = 1;
        c->ref_fact2 = ddx_arena_strndup(&lc->cat->arena, s, (size_t)(star - s));
        if (star == s || !c->ref_fact2)
          return fail(lc, "value", "expected \"k*fact\", \"fact*fact\", a number or a size");
      } else if (end != star) {
        return fail(lc, "value", "expected \"k*fact\", \"fact*fact\", a number or a size");
      }
      if (!star[1]) return fail(lc, "value", "expected a fact name after \"*\"");
      c->ref_fact = ddx_arena_strdup(&lc->cat->arena, star + 1);
      if (!c->ref_fact) return ddx_error_set(lc->err, DDX_ENOMEM, "out of memory");
    } else if (!ddx_parse_quantity(s, &c->number)) {
      return fail(lc, "value", "expected a number, a size like \"2 GiB\" or \"k*fact\"");
    }
  } else {
    return fail(lc, "value", "expected a number or a string");
  }
  return 0;
}

static int load_conditions(load_ctx_t *lc, json_t *arr, ddx_condition_t **out, size_t *n) {
  *out = NULL;
  *n = 0;
  if (!arr) return 0;
  if (!json_is_array(arr)) return fail(lc, "conditions", "expected an array");
  *n = json_array_size(arr);
  *out = ddx_arena_alloc(&lc->cat->arena, (*n + 1) * sizeof **out);
  if (!*out) return ddx_error_set(lc->err, DDX_ENOMEM, "out of memory");
  for (size_t i = 0; i < *n; i++) {
    size_t old = strlen(lc->path);
    snprintf(lc->path + old, sizeof lc->path - old, ".conditions[%zu]", i);
    int rc = load_condition(lc, json_array_get(arr, i), &(*out)[i]);
    if (rc) return rc;
    path_pop(lc, old);
  }
  return 0;
}

static int load_pattern(load_ctx_t *lc, json_t *o, ddx_pattern_t *p, bool is_ctx,
                        const char *rule_id) {
  static const char *const sig_keys[] = {"id",       "regex",     "literals",   "confidence",
                                         "fallback", "severity",  "conditions", "context",
                                         "title",    "min_count", NULL};
  static const char *const ctx_keys[] = {"regex", "literals",  "before", "after",
                                         "scope", "same_rank", "absent", NULL};
  static const char *const sevs[] = {"info", "warning", "error", NULL};
  static const char *const scopes[] = {"window", "file", NULL};
  int rc;
  if (!json_is_object(o)) return fail(lc, NULL, "expected an object");
  if ((rc = check_keys(lc, o, is_ctx ? ctx_keys : sig_keys))) return rc;
  if ((rc = get_str(lc, o, "regex", true, &p->regex))) return rc;
  if ((rc = get_strs(lc, o, "literals", true, &p->literals))) return rc;
  for (size_t i = 0; i < p->literals.n; i++)
    if (strlen(p->literals.v[i]) < 2) {
      char f[64];
      snprintf(f, sizeof f, "literals[%zu]", i);
      return fail(lc, f, "a literal needs at least 2 bytes");
    }
  p->severity = -1;
  p->confidence = 0.8;
  if (!is_ctx) {
    if ((rc = get_str(lc, o, "id", false, &p->id))) return rc;
    json_t *c = json_object_get(o, "confidence");
    if (c) {
      if (!json_is_number(c) || json_number_value(c) < 0 || json_number_value(c) > 1)
        return fail(lc, "confidence", "expected a number between 0 and 1");
      p->confidence = json_number_value(c);
    }
    if ((rc = get_bool(lc, o, "fallback", false, &p->fallback))) return rc;
    if ((rc = get_str(lc, o, "title", false, &p->title))) return rc;
    long mc;
    if ((rc = get_int(lc, o, "min_count", 1, 1000000, 1, false, &mc))) return rc;
    p->min_count = (uint32_t)mc;
    if (json_object_get(o, "severity") &&
        (rc = get_enum(lc, o, "severity", sevs, -1, false, &p->severity)))
      return rc;
    if ((rc = load_conditions(lc, json_object_get(o, "conditions"), &p->conds, &p->nconds)))
      return rc;
  } else {
    long v;
    int scope;
    if ((rc = get_int(lc, o, "before", 0, 1000000, 40, false, &v))) return rc;
    p->before = (int)v;
    if ((rc = get_int(lc, o, "after", 0, 1000000, 5, false, &v))) return rc;
    p->after = (int)v;
    if ((rc = get_enum(lc, o, "scope", scopes, 0, false, &scope))) return rc;
    p->scope_file = scope == 1;
    if ((rc = get_bool(lc, o, "same_rank", true, &p->same_rank))) return rc;
    if ((rc = get_bool(lc, o, "absent", false, &p->absent))) return rc;
  }
  return compile_pattern(lc, p, rule_id);
}

static int load_samples(load_ctx_t *lc, json_t *arr, ddx_sample_t **out, size_t *n, bool required) {
  static const char *const keys[] = {"text", "source", "why", "facts", NULL};
  int rc;
  *out = NULL;
  *n = 0;
  if (!arr) return 0;
  if (!json_is_array(arr)) return fail(lc, NULL, "expected an array of samples");
  if (required && json_array_size(arr) == 0) return fail(lc, NULL, "needs at least one sample");
  *n = json_array_size(arr);
  *out = ddx_arena_alloc(&lc->cat->arena, (*n + 1) * sizeof **out);
  if (!*out) return ddx_error_set(lc->err, DDX_ENOMEM, "out of memory");
  for (size_t i = 0; i < *n; i++) {
    json_t *o = json_array_get(arr, i);
    size_t old = path_push(lc, NULL, (long)i);
    ddx_sample_t *s = &(*out)[i];
    if (!json_is_object(o)) return fail(lc, NULL, "expected an object");
    if ((rc = check_keys(lc, o, keys))) return rc;
    if ((rc = get_str(lc, o, "text", true, &s->text))) return rc;
    if ((rc = get_str(lc, o, "source", false, &s->source))) return rc;
    if ((rc = get_str(lc, o, "why", false, &s->why))) return rc;
    json_t *facts = json_object_get(o, "facts");
    if (facts) {
      if (!json_is_object(facts)) return fail(lc, "facts", "expected an object of strings");
      size_t nf = json_object_size(facts), k = 0;
      s->fact_names.v = ddx_arena_alloc(&lc->cat->arena, (nf + 1) * sizeof(char *));
      s->fact_values.v = ddx_arena_alloc(&lc->cat->arena, (nf + 1) * sizeof(char *));
      if (!s->fact_names.v || !s->fact_values.v)
        return ddx_error_set(lc->err, DDX_ENOMEM, "out of memory");
      const char *key;
      json_t *val;
      json_object_foreach(facts, key, val) {
        if (!json_is_string(val)) {
          char f[160];
          snprintf(f, sizeof f, "facts.%s", key);
          return fail(lc, f, "expected a string");
        }
        s->fact_names.v[k] = ddx_arena_strdup(&lc->cat->arena, key);
        s->fact_values.v[k] = ddx_arena_strdup(&lc->cat->arena, json_string_value(val));
        if (!s->fact_names.v[k] || !s->fact_values.v[k])
          return ddx_error_set(lc->err, DDX_ENOMEM, "out of memory");
        k++;
      }
      s->fact_names.n = s->fact_values.n = k;
    }
    path_pop(lc, old);
  }
  return 0;
}

/* Validates config_patches structurally; the patch engine interprets them. */
static int check_patches(load_ctx_t *lc, json_t *arr) {
  static const char *const pkeys[] = {"id", "title", "preconditions", "ops", NULL};
  static const char *const okeys[] = {"op", "path", "value", "to", "factor", "min", NULL};
  static const char *const ckeys[] = {"path", "op", "value", NULL};
  static const char *const ops[] = {"set", "remove", "rename", "multiply", NULL};
  static const char *const cops[] = {"exists", "absent", "==", "!=",       "<",
                                     "<=",     ">",      ">=", "not-auto", NULL};
  int rc, e;
  const char *s;
  if (!json_is_array(arr)) return fail(lc, NULL, "expected an array");
  for (size_t i = 0; i < json_array_size(arr); i++) {
    json_t *p = json_array_get(arr, i);
    size_t old = path_push(lc, NULL, (long)i);
    if (!json_is_object(p)) return fail(lc, NULL, "expected an object");
    if ((rc = check_keys(lc, p, pkeys))) return rc;
    if ((rc = get_str(lc, p, "id", true, &s))) return rc;
    if ((rc = get_str(lc, p, "title", true, &s))) return rc;
    json_t *pre = json_object_get(p, "preconditions");
    if (pre) {
      if (!json_is_array(pre)) return fail(lc, "preconditions", "expected an array");
      for (size_t j = 0; j < json_array_size(pre); j++) {
        json_t *c = json_array_get(pre, j);
        size_t o2 = path_push(lc, "preconditions", -1);
        path_pop(lc, o2);
        char f[64];
        snprintf(f, sizeof f, "preconditions[%zu]", j);
        o2 = strlen(lc->path);
        snprintf(lc->path + o2, sizeof lc->path - o2, ".%s", f);
        if (!json_is_object(c)) return fail(lc, NULL, "expected an object");
        if ((rc = check_keys(lc, c, ckeys))) return rc;
        if ((rc = get_str(lc, c, "path", true, &s))) return rc;
        if ((rc = get_enum(lc, c, "op", cops, 0, true, &e))) return rc;
        path_pop(lc, o2);
      }
    }
    json_t *o = json_object_get(p, "ops");
    if (!json_is_array(o) || json_array_size(o) == 0)
      return fail(lc, "ops", "expected a non-empty array of operations");
    for (size_t j = 0; j < json_array_size(o); j++) {
      json_t *op = json_array_get(o, j);
      char f[64];
      snprintf(f, sizeof f, ".ops[%zu]", j);
      size_t o2 = strlen(lc->path);
      snprintf(lc->path + o2, sizeof lc->path - o2, "%s", f);
      if (!json_is_object(op)) return fail(lc, NULL, "expected an object");
      if ((rc = check_keys(lc, op, okeys))) return rc;
      if ((rc = get_str(lc, op, "path", true, &s))) return rc;
      if ((rc = get_enum(lc, op, "op", ops, 0, true, &e))) return rc;
      if (e == 0 && !json_object_get(op, "value")) return fail(lc, "value", "set needs a value");
      if (e == 2 && (rc = get_str(lc, op, "to", true, &s))) return rc;
      if (e == 3 && !json_is_number(json_object_get(op, "factor")))
        return fail(lc, "factor", "multiply needs a numeric factor");
      path_pop(lc, o2);
    }
    path_pop(lc, old);
  }
  return 0;
}

/* The clue's regex under `key` ("frame", or a required token's "regex")
 * compiled into c->frame_code; errors name the rule and the clue. */
static int compile_clue_regex(load_ctx_t *lc, json_t *o, const char *key, const ddx_rule_t *r,
                              ddx_clue_t *c) {
  const char *re;
  int rc = get_str(lc, o, key, true, &re);
  if (rc) return rc;
  char owner[160], cid[100];
  snprintf(owner, sizeof owner, "rule %s clue %s", r->id,
           quote_id(c->id, strlen(c->id), cid, sizeof cid));
  pcre2_code *code = NULL;
  if ((rc = compile_regex(lc, re, key, owner, &code))) return rc;
  c->frame_code = code;
  return 0;
}

/* One clue of a rule (see ddx_clue_t): exactly one of frame, phase,
 * regex (a token, with literals) or conditions (a relation) says its kind.
 * A token clue becomes a file-scope context of the rule marked `clue`. */
static int load_clue(load_ctx_t *lc, json_t *o, ddx_rule_t *r, ddx_clue_t *c) {
  static const char *const keys[] = {"id",          "why",      "weight",   "frame",
                                     "phase",       "regex",    "literals", "conditions",
                                     "after_frame", "required", NULL};
  int rc;
  if (!json_is_object(o)) return fail(lc, NULL, "expected an object");
  if ((rc = check_keys(lc, o, keys))) return rc;
  if ((rc = get_str(lc, o, "id", true, &c->id))) return rc;
  if ((rc = get_str(lc, o, "why", true, &c->why))) return rc;
  json_t *w = json_object_get(o, "weight");
  if (!json_is_number(w) || json_number_value(w) < -10 || json_number_value(w) > 10 ||
      json_number_value(w) == 0)
    return fail(lc, "weight", "expected a non-zero number between -10 and 10");
  c->weight = json_number_value(w);
  int kinds = !!json_object_get(o, "frame") + !!json_object_get(o, "phase") +
              !!json_object_get(o, "regex") +
              (!!json_object_get(o, "conditions") && !json_object_get(o, "regex"));
  if (kinds != 1)
    return fail(lc, NULL,
                "a clue has exactly one of \"frame\", \"phase\", \"regex\" (with optional "
                "\"literals\") or \"conditions\"");
  if (json_object_get(o, "after_frame") && !json_object_get(o, "regex"))
    return fail(lc, "after_frame", "only a token clue (\"regex\") is placed by the frames");
  if (json_object_get(o, "required") && !json_object_get(o, "regex"))
    return fail(lc, "required", "only a token clue (\"regex\") can be required");
  if ((rc = get_bool(lc, o, "required", false, &c->required))) return rc;
  if (c->required) {
    /* a gate: matched on the lines the scan kept, so no literals (a
     * token common in a GPU log would cost the prefilter on every line) */
    if (json_object_get(o, "literals") || json_object_get(o, "after_frame") ||
        json_object_get(o, "conditions"))
      return fail(lc, "required",
                  "a required clue takes only \"regex\" (it is matched on the lines ddx kept)");
    if ((rc = compile_clue_regex(lc, o, "regex", r, c))) return rc;
    c->ctx_index = -1;
    c->kind = DDX_CLUE_TOKEN;
    return 0;
  }
  if (json_object_get(o, "frame")) {
    if ((rc = compile_clue_regex(lc, o, "frame", r, c))) return rc;
    c->kind = DDX_CLUE_FRAME;
  } else if (json_object_get(o, "phase")) {
    json_t *ph = json_object_get(o, "phase");
    if (json_is_string(ph)) {
      c->phases.v = ddx_arena_alloc(&lc->cat->arena, sizeof *c->phases.v);
      if (!c->phases.v) return ddx_error_set(lc->err, DDX_ENOMEM, "out of memory");
      c->phases.v[0] = ddx_arena_strdup(&lc->cat->arena, json_string_value(ph));
      if (!c->phases.v[0]) return ddx_error_set(lc->err, DDX_ENOMEM, "out of memory");
      c->phases.n = 1;
    } else if ((rc = get_strs(lc, o, "phase", true, &c->phases))) {
      return rc;
    }
    c->kind = DDX_CLUE_PHASE;
  } else if (json_object_get(o, "regex")) {
    /* counted before it is compiled: ddx_catalog_free frees its regex on error */
    c->ctx_index = (int)r->nctx;
    ddx_pattern_t *cp = &r->ctx[r->nctx++];
    /* "o" takes the literals' reference: a borrowed one is increfed first,
     * a new empty array is handed over (with "O" it leaked) */
    json_t *lits = json_object_get(o, "literals");
    json_t *pat = json_pack("{s:O,s:o}", "regex", json_object_get(o, "regex"), "literals",
                            lits ? json_incref(lits) : json_array());
    if (!pat) return ddx_error_set(lc->err, DDX_ENOMEM, "out of memory");
    rc = load_pattern(lc, pat, cp, true, r->id);
    json_decref(pat);
    if (rc) return rc;
    cp->owner = -1;
    cp->scope_file = true;
    cp->same_rank = false;
    cp->clue = true;
    long af;
    if ((rc = get_int(lc, o, "after_frame", 1, 5, 0, false, &af))) return rc;
    c->after_frame = (int)af;
    cp->every = af > 0;
    c->kind = DDX_CLUE_TOKEN;
    if ((rc = load_conditions(lc, json_object_get(o, "conditions"), &c->conds, &c->nconds)))
      return rc;
  } else {
    if ((rc = load_conditions(lc, json_object_get(o, "conditions"), &c->conds, &c->nconds)))
      return rc;
    c->kind = DDX_CLUE_RELATION;
  }
  return 0;
}

static int load_clues(load_ctx_t *lc, json_t *arr, ddx_rule_t *r) {
  if (!arr) return 0;
  r->clues = ddx_arena_alloc(&lc->cat->arena, (json_array_size(arr) + 1) * sizeof *r->clues);
  if (!r->clues) return ddx_error_set(lc->err, DDX_ENOMEM, "out of memory");
  for (size_t i = 0; i < json_array_size(arr); i++) {
    size_t old = strlen(lc->path);
    snprintf(lc->path + old, sizeof lc->path - old, ".clues[%zu]", i);
    int rc = load_clue(lc, json_array_get(arr, i), r, &r->clues[r->nclues]);
    r->nclues++; /* counted even on error: its regex is freed with the catalog */
    if (rc) return rc;
    path_pop(lc, old);
  }
  return 0;
}

/* The encyclopedia's fields (ddx catalog): the family, code examples per
 * stack, the cheapest confirmation, how it scales, whether inference is hit
 * and the look-alike row. All optional here; `ddx rules check` requires
 * them on the built-in catalog (ddx_rule_encyclopedia_missing). */
static int load_encyclopedia(load_ctx_t *lc, json_t *root, ddx_rule_t *r) {
  static const char *const families[] = {DDX_FAMILIES, NULL};
  static const char *const stacks[] = {DDX_STACKS, NULL};
  static const char *const langs[] = {"python", "json", "shell", "yaml", "text", NULL};
  static const char *const affected[] = {"yes", "no", "partly", NULL};
  int rc, e;
  if (json_object_get(root, "family")) {
    if ((rc = get_enum(lc, root, "family", families, 0, false, &e))) return rc;
    r->family = families[e];
  }
  if ((rc = get_str(lc, root, "confirm", false, &r->confirm))) return rc;
  if ((rc = get_str(lc, root, "scale", false, &r->scale))) return rc;
  json_t *inf = json_object_get(root, "inference");
  if (inf) {
    static const char *const ikeys[] = {"affected", "note", NULL};
    size_t old = strlen(lc->path);
    snprintf(lc->path + old, sizeof lc->path - old, ".inference");
    if (!json_is_object(inf)) return fail(lc, NULL, "expected an object {affected, note}");
    if ((rc = check_keys(lc, inf, ikeys))) return rc;
    if ((rc = get_enum(lc, inf, "affected", affected, 0, true, &e))) return rc;
    r->inference_affected = affected[e];
    if ((rc = get_str(lc, inf, "note", true, &r->inference_note))) return rc;
    path_pop(lc, old);
  }
  json_t *cmp = json_object_get(root, "compare");
  if (cmp) {
    static const char *const ckeys[] = {"group", "where", "separates", NULL};
    size_t old = strlen(lc->path);
    snprintf(lc->path + old, sizeof lc->path - old, ".compare");
    if (!json_is_object(cmp)) return fail(lc, NULL, "expected an object {group, where, separates}");
    if ((rc = check_keys(lc, cmp, ckeys))) return rc;
    if ((rc = get_str(lc, cmp, "group", true, &r->compare_group))) return rc;
    if ((rc = get_str(lc, cmp, "where", true, &r->compare_where))) return rc;
    if ((rc = get_str(lc, cmp, "separates", true, &r->compare_separates))) return rc;
    path_pop(lc, old);
  }
  json_t *ex = json_object_get(root, "examples");
  if (!ex) return 0;
  if (!json_is_array(ex) || !json_array_size(ex))
    return fail(lc, "examples", "expected a non-empty array of {stack, code, why}");
  r->nexamples = json_array_size(ex);
  r->examples = ddx_arena_alloc(&lc->cat->arena, r->nexamples * sizeof *r->examples);
  if (!r->examples) return fail(lc, "examples", "out of memory");
  for (size_t i = 0; i < r->nexamples; i++) {
    static const char *const ekeys[] = {"stack", "title", "lang", "code", "why", NULL};
    json_t *o = json_array_get(ex, i);
    ddx_example_t *x = &r->examples[i];
    size_t old = strlen(lc->path);
    snprintf(lc->path + old, sizeof lc->path - old, ".examples[%zu]", i);
    if (!json_is_object(o)) return fail(lc, NULL, "expected an object {stack, code, why}");
    if ((rc = check_keys(lc, o, ekeys))) return rc;
    if ((rc = get_enum(lc, o, "stack", stacks, 0, true, &e))) return rc;
    x->stack = stacks[e];
    if ((rc = get_enum(lc, o, "lang", langs, 0, false, &e))) return rc;
    x->lang = json_object_get(o, "lang") ? langs[e] : NULL;
    if ((rc = get_str(lc, o, "title", false, &x->title))) return rc;
    if ((rc = get_str(lc, o, "code", true, &x->code))) return rc;
    if ((rc = get_str(lc, o, "why", true, &x->why))) return rc;
    path_pop(lc, old);
  }
  return 0;
}

static int load_rule(load_ctx_t *lc, json_t *root, ddx_rule_t *r) {
  static const char *const keys[] = {
      "id",         "title",    "framework",      "phase",         "tags",        "severity",
      "role",       "priority", "signatures",     "context",       "conditions",  "explains",
      "trigger",    "anchor",   "summary",        "mechanism",     "symptoms",    "affects",
      "checklist",  "fix",      "verify",         "prevention",    "fingerprint", "related",
      "references", "missing",  "config_patches", "samples",       "min_count",   "headline",
      "$schema",    "clues",    "prior",          "inferred_only", "marker",      "via_generic",
      "family",     "examples", "confirm",        "scale",         "inference",   "compare",
      NULL};
  static const char *const phases[] = {"launch",   "init",       "step",    "communication",
                                       "numerics", "checkpoint", "serving", NULL};
  static const char *const sevs[] = {"info", "warning", "error", NULL};
  static const char *const roles[] = {"cause", "collateral", "wrapper", NULL};
  static const char *const triggers[] = {"match", "no-error", NULL};
  static const char *const anchors[] = {"first", "last", NULL};
  int rc, e;
  long pr;
  strcpy(lc->path, "$");
  if (!json_is_object(root)) return fail(lc, NULL, "a rule file holds one JSON object");
  if ((rc = check_keys(lc, root, keys))) return rc;
  if ((rc = get_str(lc, root, "id", true, &r->id))) return rc;
  size_t idlen = json_string_length(json_object_get(root, "id"));
  if (!valid_rule_id(r->id, idlen)) {
    char shown[200];
    return fail(lc, "id", "'%s' must match " DDX_RULE_ID_PATTERN,
                quote_id(r->id, idlen, shown, sizeof shown));
  }
  if ((rc = get_str(lc, root, "title", true, &r->title))) return rc;
  if ((rc = get_str(lc, root, "framework", false, &r->framework))) return rc;
  if ((rc = get_enum(lc, root, "phase", phases, 0, true, &e))) return rc;
  r->phase = phases[e];
  if ((rc = get_strs(lc, root, "tags", false, &r->tags))) return rc;
  if ((rc = get_enum(lc, root, "severity", sevs, 2, true, &e))) return rc;
  r->severity = (ddx_severity_t)e;
  if ((rc = get_enum(lc, root, "role", roles, 0, true, &e))) return rc;
  r->role = (ddx_role_t)e;
  if ((rc = get_int(lc, root, "priority", 0, 100, 50, true, &pr))) return rc;
  r->priority = (int)pr;
  if ((rc = get_enum(lc, root, "trigger", triggers, 0, false, &e))) return rc;
  r->trigger = (ddx_trigger_t)e;
  if ((rc = get_enum(lc, root, "anchor", anchors, 0, false, &e))) return rc;
  r->anchor_last = e == 1;
  long mc;
  if ((rc = get_int(lc, root, "min_count", 1, 1000000, 1, false, &mc))) return rc;
  r->min_count = (uint32_t)mc;

  if ((rc = get_bool(lc, root, "inferred_only", false, &r->inferred_only))) return rc;
  if ((rc = get_bool(lc, root, "via_generic", false, &r->via_generic))) return rc;
  if (json_object_get(root, "marker")) {
    static const char *const markers[] = {"checkpoint", NULL};
    int mk;
    if ((rc = get_enum(lc, root, "marker", markers, 0, false, &mk))) return rc;
    r->marker = true;
  }
  bool inferred_only = r->inferred_only;
  json_t *sigs = json_object_get(root, "signatures");
  if (inferred_only && (!json_is_array(sigs) || json_array_size(sigs)))
    return fail(lc, "signatures",
                "an inferred_only class is raised by the engine itself: expected []");
  if (!inferred_only && (!json_is_array(sigs) || json_array_size(sigs) == 0))
    return fail(lc, "signatures", "expected a non-empty array of signatures");
  r->sigs = ddx_arena_alloc(&lc->cat->arena, (json_array_size(sigs) + 1) * sizeof *r->sigs);
  if (!r->sigs) return ddx_error_set(lc->err, DDX_ENOMEM, "out of memory");
  r->nsigs = json_array_size(sigs); /* counted once they exist: ddx_catalog_free walks them */
  for (size_t i = 0; i < r->nsigs; i++) {
    size_t old = path_push(lc, "signatures", -1);
    path_pop(lc, old);
    snprintf(lc->path + old, sizeof lc->path - old, ".signatures[%zu]", i);
    if ((rc = load_pattern(lc, json_array_get(sigs, i), &r->sigs[i], false, r->id))) return rc;
    path_pop(lc, old);
  }
  /* Contexts: the rule's own (owner -1) then each signature's (owner =
   * its index), in one array so the prefilter and index treat them alike. */
  json_t *ctx = json_object_get(root, "context");
  if (ctx && !json_is_array(ctx)) return fail(lc, "context", "expected an array");
  size_t total = json_array_size(ctx);
  for (size_t i = 0; i < r->nsigs; i++) {
    json_t *sc = json_object_get(json_array_get(sigs, i), "context");
    if (sc && !json_is_array(sc)) {
      char f[64];
      snprintf(f, sizeof f, "signatures[%zu].context", i);
      return fail(lc, f, "expected an array");
    }
    total += json_array_size(sc);
  }
  json_t *clues = json_object_get(root, "clues");
  if (clues && !json_is_array(clues)) return fail(lc, "clues", "expected an array");
  for (size_t i = 0; i < json_array_size(clues); i++)
    total += json_object_get(json_array_get(clues, i), "regex") != NULL;
  r->ctx = ddx_arena_alloc(&lc->cat->arena, (total + 1) * sizeof *r->ctx);
  if (!r->ctx) return ddx_error_set(lc->err, DDX_ENOMEM, "out of memory");
  for (long owner = -1; owner < (long)r->nsigs; owner++) {
    json_t *arr = owner < 0 ? ctx : json_object_get(json_array_get(sigs, (size_t)owner), "context");
    for (size_t i = 0; i < json_array_size(arr); i++) {
      size_t old = strlen(lc->path);
      if (owner < 0)
        snprintf(lc->path + old, sizeof lc->path - old, ".context[%zu]", i);
      else
        snprintf(lc->path + old, sizeof lc->path - old, ".signatures[%ld].context[%zu]", owner, i);
      ddx_pattern_t *cp = &r->ctx[r->nctx++];
      if ((rc = load_pattern(lc, json_array_get(arr, i), cp, true, r->id))) return rc;
      cp->owner = (int)owner;
      path_pop(lc, old);
    }
  }
  if ((rc = load_conditions(lc, json_object_get(root, "conditions"), &r->conds, &r->nconds)))
    return rc;
  if ((rc = load_clues(lc, clues, r))) return rc;
  r->prior = 1;
  json_t *prior = json_object_get(root, "prior");
  if (prior) {
    if (!json_is_number(prior) || json_number_value(prior) <= 0 || json_number_value(prior) > 100)
      return fail(lc, "prior", "expected a number above 0 and at most 100");
    r->prior = json_number_value(prior);
  }
  if ((rc = get_strs(lc, root, "explains", false, &r->explains))) return rc;
  if ((rc = get_str(lc, root, "summary", true, &r->summary))) return rc;
  if ((rc = get_str(lc, root, "headline", false, &r->headline))) return rc;
  if ((rc = get_str(lc, root, "mechanism", true, &r->mechanism))) return rc;
  if ((rc = get_str(lc, root, "affects", false, &r->affects))) return rc;
  if ((rc = get_str(lc, root, "verify", false, &r->verify))) return rc;
  if ((rc = get_str(lc, root, "prevention", false, &r->prevention))) return rc;
  if ((rc = get_str(lc, root, "fingerprint", false, &r->fingerprint))) return rc;
  if ((rc = get_strs(lc, root, "checklist", false, &r->checklist))) return rc;
  if ((rc = get_strs(lc, root, "fix", true, &r->fix))) return rc;
  if ((rc = get_strs(lc, root, "related", false, &r->related))) return rc;
  if ((rc = get_strs(lc, root, "references", false, &r->references))) return rc;
  if ((rc = get_strs(lc, root, "missing", false, &r->missing))) return rc;
  json_t *sym = json_object_get(root, "symptoms");
  if (sym) {
    if (!json_is_array(sym)) return fail(lc, "symptoms", "expected an array");
    r->nsymptoms = json_array_size(sym);
    r->symptoms = ddx_arena_alloc(&lc->cat->arena, (r->nsymptoms + 1) * sizeof *r->symptoms);
    if (!r->symptoms) return ddx_error_set(lc->err, DDX_ENOMEM, "out of memory");
    for (size_t i = 0; i < r->nsymptoms; i++) {
      static const char *const skeys[] = {"text", "why", NULL};
      json_t *o = json_array_get(sym, i);
      size_t old = strlen(lc->path);
      snprintf(lc->path + old, sizeof lc->path - old, ".symptoms[%zu]", i);
      if (!json_is_object(o)) return fail(lc, NULL, "expected an object {text, why}");
      if ((rc = check_keys(lc, o, skeys))) return rc;
      if ((rc = get_str(lc, o, "text", true, &r->symptoms[i].text))) return rc;
      if ((rc = get_str(lc, o, "why", false, &r->symptoms[i].why))) return rc;
      path_pop(lc, old);
    }
  }
  if ((rc = load_encyclopedia(lc, root, r))) return rc;
  json_t *patches = json_object_get(root, "config_patches");
  if (patches) {
    size_t old = strlen(lc->path);
    snprintf(lc->path + old, sizeof lc->path - old, ".config_patches");
    if ((rc = check_patches(lc, patches))) return rc;
    path_pop(lc, old);
    char *txt = json_dumps(patches, JSON_COMPACT | JSON_PRESERVE_ORDER);
    r->config_patches_json = ddx_arena_strdup(&lc->cat->arena, txt);
    free(txt);
    if (!r->config_patches_json) return ddx_error_set(lc->err, DDX_ENOMEM, "out of memory");
  }
  json_t *samples = json_object_get(root, "samples");
  if (!json_is_object(samples))
    return fail(lc, "samples", "expected {\"positive\": [...], \"negative\": [...]}");
  {
    static const char *const skeys[] = {"positive", "negative", NULL};
    size_t old = strlen(lc->path);
    snprintf(lc->path + old, sizeof lc->path - old, ".samples");
    if ((rc = check_keys(lc, samples, skeys))) return rc;
    size_t o2 = strlen(lc->path);
    snprintf(lc->path + o2, sizeof lc->path - o2, ".positive");
    if (!json_object_get(samples, "positive"))
      return fail(lc, NULL, "missing: every rule needs positive samples");
    if ((rc = load_samples(lc, json_object_get(samples, "positive"), &r->positive, &r->npositive,
                           true)))
      return rc;
    path_pop(lc, o2);
    snprintf(lc->path + o2, sizeof lc->path - o2, ".negative");
    if ((rc = load_samples(lc, json_object_get(samples, "negative"), &r->negative, &r->nnegative,
                           false)))
      return rc;
    path_pop(lc, old);
  }
  return 0;
}

static int ends_with(const char *s, const char *suffix) {
  size_t a = strlen(s), b = strlen(suffix);
  return a >= b && !strcmp(s + a - b, suffix);
}

static bool is_rule_file(const char *name) {
  return ends_with(name, ".json") && !ends_with(name, ".schema.json");
}

/* pf_rest and pf_last of the catalog (see ddx/rules.h). */
/* A signature literal of an anchor-last (progress) rule. */
static bool is_progress_literal(const ddx_catalog_t *cat, const ddx_literal_ref_t *r) {
  return r->rule != DDX_BUILTIN_RULE && !r->is_ctx && cat->rules[r->rule].anchor_last;
}

/* pf_rest and pf_last of the catalog (see ddx/rules.h) from the literals
 * of the full prefilter, lits[k] being literal id k. */
static int build_split_prefilters(ddx_catalog_t *cat, const char *const *lits, ddx_error_t *err) {
  bool any = false;
  for (size_t k = 0; k < cat->nlits && !any; k++)
    any = is_progress_literal(cat, &cat->lit_refs[k]);
  if (!any) return 0;
  cat->pf_rest = ddx_prefilter_new();
  cat->pf_last = ddx_prefilter_new();
  cat->rest_ids = ddx_arena_alloc(&cat->arena, (cat->nlits + 1) * sizeof *cat->rest_ids);
  cat->last_ids = ddx_arena_alloc(&cat->arena, (cat->nlits + 1) * sizeof *cat->last_ids);
  if (!cat->pf_rest || !cat->pf_last || !cat->rest_ids || !cat->last_ids)
    return ddx_error_set(err, DDX_ENOMEM, "out of memory");
  for (size_t k = 0; k < cat->nlits; k++) {
    bool last = is_progress_literal(cat, &cat->lit_refs[k]);
    int32_t id = ddx_prefilter_add(last ? cat->pf_last : cat->pf_rest, lits[k], strlen(lits[k]));
    if (id < 0) return ddx_error_set(err, DDX_ENOMEM, "out of memory");
    (last ? cat->last_ids : cat->rest_ids)[id] = (uint32_t)k;
  }
  if (ddx_prefilter_build(cat->pf_rest) || ddx_prefilter_build(cat->pf_last))
    return ddx_error_set(err, DDX_ENOMEM, "out of memory");
  return 0;
}

/* Adds one literal to the prefilter, with where it leads and its text. */
static int add_literal(ddx_catalog_t *cat, ddx_vec_t *refs, ddx_vec_t *lits, const char *lit,
                       ddx_literal_ref_t where) {
  ddx_literal_ref_t *r = ddx_vec_push(refs);
  const char **l = ddx_vec_push(lits);
  if (!r || !l || ddx_prefilter_add(cat->prefilter, lit, strlen(lit)) < 0) return -1;
  *r = where;
  *l = lit;
  return 0;
}

static int build_prefilter(ddx_catalog_t *cat, ddx_error_t *err) {
  cat->prefilter = ddx_prefilter_new();
  if (!cat->prefilter) return ddx_error_set(err, DDX_ENOMEM, "out of memory");
  ddx_vec_t refs, lits; /* ddx_literal_ref_t and const char *, by literal id */
  ddx_vec_init(&refs, sizeof(ddx_literal_ref_t));
  ddx_vec_init(&lits, sizeof(const char *));
  int rc = 0;
  for (size_t r = 0; r < cat->nrules && !rc; r++) {
    ddx_rule_t *rule = &cat->rules[r];
    for (int pass = 0; pass < 2 && !rc; pass++) {
      ddx_pattern_t *pats = pass ? rule->ctx : rule->sigs;
      size_t np = pass ? rule->nctx : rule->nsigs;
      for (size_t p = 0; p < np && !rc; p++) {
        cat->npatterns++;
        for (size_t l = 0; l < pats[p].literals.n && !rc; l++) {
          const char *lit = pats[p].literals.v[l];
          if (add_literal(cat, &refs, &lits, lit,
                          (ddx_literal_ref_t){(uint32_t)r, (uint16_t)p, (uint8_t)pass}))
            rc = ddx_error_set(err, DDX_ERULE, "%s: literal \"%s\" rejected", rule->file, lit);
        }
      }
    }
  }
  /* The engine's own traceback literals, for per-rank reassembly. */
#define NTB 7
  const char *builtin[NTB + DDX_LAYOUT_NLITERALS] = {"Traceback (most recent call",
                                                     "File \"",
                                                     ".py\", line ", /* a frame cut at its start */
                                                     "File /",
                                                     "File ~",
                                                     "\xe2\x94\x82 /",
                                                     "\xe2\x94\x82 ~"};
  uint16_t kinds[NTB + DDX_LAYOUT_NLITERALS] = {
      DDX_BUILTIN_TB_START,    DDX_BUILTIN_TB_FRAME, DDX_BUILTIN_TB_FRAME, DDX_BUILTIN_TB_NOTEBOOK,
      DDX_BUILTIN_TB_NOTEBOOK, DDX_BUILTIN_TB_RICH,  DDX_BUILTIN_TB_RICH};
  for (size_t k = 0; k < DDX_LAYOUT_NLITERALS; k++) {
    builtin[NTB + k] = ddx_layout_literals[k];
    kinds[NTB + k] = DDX_BUILTIN_LAYOUT;
  }
  for (size_t b = 0; b < NTB + DDX_LAYOUT_NLITERALS && !rc; b++)
    if (add_literal(cat, &refs, &lits, builtin[b],
                    (ddx_literal_ref_t){DDX_BUILTIN_RULE, kinds[b], 0}))
      rc = ddx_error_set(err, DDX_ENOMEM, "out of memory");
  if (!rc) {
    ddx_prefilter_build(cat->prefilter);
    cat->nlits = refs.len;
    cat->lit_refs = ddx_arena_alloc(&cat->arena, (refs.len + 1) * sizeof(ddx_literal_ref_t));
    if (!cat->lit_refs) {
      rc = ddx_error_set(err, DDX_ENOMEM, "out of memory");
    } else {
      if (refs.len) memcpy(cat->lit_refs, refs.data, refs.len * sizeof(ddx_literal_ref_t));
      rc = build_split_prefilters(cat, lits.data, err);
    }
  }
  ddx_vec_free(&refs);
  ddx_vec_free(&lits);
  return rc;
}

/* A phase table file: {"phases": [{"id", "title", "frames": [regex]}]}.
 * Tables of several folders are appended in load order; an id may not
 * repeat. */
static int load_phase_table(load_ctx_t *lc, json_t *root) {
  static const char *const keys[] = {"phases", "$schema", "description", NULL};
  static const char *const pkeys[] = {"id", "title", "frames", NULL};
  ddx_catalog_t *cat = lc->cat;
  int rc;
  strcpy(lc->path, "$");
  if (!json_is_object(root)) return fail(lc, NULL, "a phase table holds one JSON object");
  if ((rc = check_keys(lc, root, keys))) return rc;
  json_t *arr = json_object_get(root, "phases");
  if (!json_is_array(arr) || !json_array_size(arr))
    return fail(lc, "phases", "expected a non-empty array of phases");
  size_t n = json_array_size(arr);
  ddx_phase_t *nv = ddx_arena_alloc(&cat->arena, (cat->nphases + n) * sizeof *nv);
  if (!nv) return ddx_error_set(lc->err, DDX_ENOMEM, "out of memory");
  if (cat->nphases) memcpy(nv, cat->phases, cat->nphases * sizeof *nv);
  cat->phases = nv;
  for (size_t i = 0; i < n; i++) {
    json_t *o = json_array_get(arr, i);
    snprintf(lc->path, sizeof lc->path, "$.phases[%zu]", i);
    if (!json_is_object(o)) return fail(lc, NULL, "expected an object {id, title, frames}");
    if ((rc = check_keys(lc, o, pkeys))) return rc;
    ddx_phase_t *ph = &cat->phases[cat->nphases];
    memset(ph, 0, sizeof *ph);
    ph->file = ddx_arena_strdup(&cat->arena, lc->file);
    if (!ph->file) return ddx_error_set(lc->err, DDX_ENOMEM, "out of memory");
    char pid[100];
    if ((rc = get_str(lc, o, "id", true, &ph->id))) return rc;
    if ((rc = get_str(lc, o, "title", true, &ph->title))) return rc;
    if (ddx_catalog_find_phase(cat, ph->id))
      return fail(lc, "id", "phase \"%s\" is already defined",
                  quote_id(ph->id, strlen(ph->id), pid, sizeof pid));
    ddx_strs_t frames;
    if ((rc = get_strs(lc, o, "frames", true, &frames))) return rc;
    ph->frame_codes = ddx_arena_alloc(&cat->arena, frames.n * sizeof *ph->frame_codes);
    if (!ph->frame_codes) return ddx_error_set(lc->err, DDX_ENOMEM, "out of memory");
    cat->nphases++; /* its compiled frames are freed with the catalog */
    for (size_t k = 0; k < frames.n; k++) {
      char field[64], owner[160];
      snprintf(field, sizeof field, "frames[%zu]", k);
      snprintf(owner, sizeof owner, "phase %s", quote_id(ph->id, strlen(ph->id), pid, sizeof pid));
      pcre2_code *code = NULL;
      if ((rc = compile_regex(lc, frames.v[k], field, owner, &code))) return rc;
      ph->frame_codes[ph->nframes++] = code;
    }
  }
  return 0;
}

/* Every phase a clue names is in the table (when there is one). */
static int check_clue_phases(const ddx_catalog_t *cat, ddx_error_t *err) {
  if (!cat->nphases) return 0;
  for (size_t r = 0; r < cat->nrules; r++)
    for (size_t c = 0; c < cat->rules[r].nclues; c++) {
      const ddx_clue_t *cl = &cat->rules[r].clues[c];
      for (size_t k = 0; k < cl->phases.n; k++)
        if (!ddx_catalog_find_phase(cat, cl->phases.v[k])) {
          char pid[100];
          return ddx_error_set(err, DDX_ERULE,
                               "%s: $.clues[%zu].phase: \"%s\" is not a phase of the phase table",
                               cat->rules[r].file, c,
                               quote_id(cl->phases.v[k], strlen(cl->phases.v[k]), pid, sizeof pid));
        }
    }
  return 0;
}

/* Loads one rule file's JSON text into the next slot of cat->rules. The
 * slot counts even when loading fails, so that ddx_catalog_free releases
 * the regexes compiled before the error. */
static int add_rule_text(ddx_catalog_t *cat, const char *file, const char *text, size_t len,
                         ddx_error_t *err) {
  json_error_t jerr;
  json_t *root = json_loadb(text, len, JSON_REJECT_DUPLICATES, &jerr);
  if (!root)
    return ddx_error_set(err, DDX_ERULE, "%s:%d:%d: invalid JSON: %s", file, jerr.line, jerr.column,
                         jerr.text);
  load_ctx_t lc = {.cat = cat, .file = file, .err = err};
  if (ends_with(file, ".phases.json")) {
    int prc = load_phase_table(&lc, root);
    json_decref(root);
    return prc;
  }
  ddx_rule_t *r = &cat->rules[cat->nrules];
  r->index = (uint32_t)cat->nrules;
  r->file = ddx_arena_strdup(&cat->arena, file);
  cat->nrules++;
  int rc = r->file ? load_rule(&lc, root, r) : ddx_error_set(err, DDX_ENOMEM, "out of memory");
  json_decref(root);
  for (size_t k = 0; !rc && k + 1 < cat->nrules; k++)
    if (!strcmp(cat->rules[k].id, r->id))
      rc = ddx_error_set(err, DDX_ERULE, "%s: $.id: \"%s\" is already defined in %s", file, r->id,
                         cat->rules[k].file);
  return rc;
}

static int finish_catalog(ddx_catalog_t *cat, int rc, ddx_catalog_t **out, ddx_error_t *err) {
  if (!rc) rc = check_clue_phases(cat, err);
  if (!rc) rc = build_prefilter(cat, err);
  if (rc) {
    ddx_catalog_free(cat);
    return rc;
  }
  *out = cat;
  return 0;
}

#define DDX_RULES_MAX_FILES 10000 /* rule and phase files in all the folders */

int ddx_catalog_load(ddx_catalog_t **out, const char *const *paths, size_t npaths,
                     ddx_error_t *err) {
  *out = NULL;
  ddx_catalog_t *cat = calloc(1, sizeof *cat);
  if (!cat) return ddx_error_set(err, DDX_ENOMEM, "out of memory");
  ddx_arena_init(&cat->arena);
  ddx_vec_t files;
  ddx_vec_init(&files, sizeof(char *));
  int rc = 0;
  cat->warnings.v = ddx_arena_alloc(&cat->arena, (npaths + 1) * sizeof *cat->warnings.v);
  for (size_t i = 0; i < npaths && !rc; i++) {
    size_t skipped = 0;
    rc = ddx_walk_files(paths[i], is_rule_file, &files, DDX_RULES_MAX_FILES, &skipped, err);
    if (!rc && skipped && cat->warnings.v) {
      char w[1200];
      snprintf(w, sizeof w,
               "%.1000s: skipped %zu entr%s that %s not a regular file (a FIFO, device, socket "
               "or dangling link)",
               paths[i], skipped, skipped == 1 ? "y" : "ies", skipped == 1 ? "is" : "are");
      const char *c = ddx_arena_strdup(&cat->arena, w);
      if (c) cat->warnings.v[cat->warnings.n++] = c;
    }
  }
  if (!rc && files.len == 0) rc = ddx_error_set(err, DDX_ERULE, "no rule files found");
  if (!rc && !(cat->rules = ddx_arena_alloc(&cat->arena, files.len * sizeof *cat->rules)))
    rc = ddx_error_set(err, DDX_ENOMEM, "out of memory");
  for (size_t i = 0; i < files.len && !rc; i++) {
    const char *file = DDX_VEC_AT(&files, char *, i);
    char *text = NULL;
    size_t len = 0;
    ddx_file_opts_t fo = {.max_bytes = DDX_FILE_CAP_RULE, .what = "rule file"};
    rc = ddx_file_read(file, &fo, &text, &len, err);
    if (!rc) rc = add_rule_text(cat, file, text, len, err);
    free(text);
  }
  for (size_t i = 0; i < files.len; i++)
    free(DDX_VEC_AT(&files, char *, i));
  ddx_vec_free(&files);
  return finish_catalog(cat, rc, out, err);
}

int ddx_catalog_load_texts(ddx_catalog_t **out, const char *const *names, const char *const *texts,
                           const size_t *lens, size_t n, ddx_error_t *err) {
  *out = NULL;
  ddx_catalog_t *cat = calloc(1, sizeof *cat);
  if (!cat) return ddx_error_set(err, DDX_ENOMEM, "out of memory");
  ddx_arena_init(&cat->arena);
  int rc = n ? 0 : ddx_error_set(err, DDX_ERULE, "no rule files found");
  if (!rc && !(cat->rules = ddx_arena_alloc(&cat->arena, n * sizeof *cat->rules)))
    rc = ddx_error_set(err, DDX_ENOMEM, "out of memory");
  for (size_t i = 0; i < n && !rc; i++)
    rc = add_rule_text(cat, names[i], texts[i], lens[i], err);
  return finish_catalog(cat, rc, out, err);
}

void ddx_catalog_free(ddx_catalog_t *cat) {
  if (!cat) return;
  for (size_t r = 0; r < cat->nrules; r++) {
    for (size_t p = 0; p < cat->rules[r].nsigs; p++) {
      pcre2_code_free(cat->rules[r].sigs[p].code);
      pcre2_match_context_free(cat->rules[r].sigs[p].mctx);
    }
    for (size_t c = 0; c < cat->rules[r].nclues; c++)
      pcre2_code_free(cat->rules[r].clues[c].frame_code);
    for (size_t p = 0; p < cat->rules[r].nctx; p++) {
      pcre2_code_free(cat->rules[r].ctx[p].code);
      pcre2_match_context_free(cat->rules[r].ctx[p].mctx);
    }
  }
  for (size_t i = 0; i < cat->nphases; i++)
    for (size_t k = 0; k < cat->phases[i].nframes; k++)
      pcre2_code_free(cat->phases[i].frame_codes[k]);
  ddx_prefilter_free(cat->prefilter);
  ddx_prefilter_free(cat->pf_rest);
  ddx_prefilter_free(cat->pf_last);
  ddx_arena_free(&cat->arena);
  free(cat);
}

const ddx_rule_t *ddx_catalog_find(const ddx_catalog_t *cat, const char *id) {
  for (size_t i = 0; i < cat->nrules; i++)
    if (!strcmp(cat->rules[i].id, id)) return &cat->rules[i];
  return NULL;
}

const ddx_phase_t *ddx_catalog_find_phase(const ddx_catalog_t *cat, const char *id) {
  for (size_t i = 0; i < cat->nphases; i++)
    if (!strcmp(cat->phases[i].id, id)) return &cat->phases[i];
  return NULL;
}

/* Runs a frame regex on "file:function" (no match data of the scan's:
 * frames are matched once per diagnosis, not per line). */
static bool frame_match(void *code, const char *file, const char *func) {
  char subject[512];
  int n = snprintf(subject, sizeof subject, "%s:%s", file ? file : "", func ? func : "");
  if (n < 0) return false;
  size_t len = (size_t)n < sizeof subject ? (size_t)n : sizeof subject - 1;
  pcre2_match_data *md = pcre2_match_data_create(1, NULL);
  if (!md) return false;
  int rc = pcre2_match(code, (PCRE2_SPTR)subject, len, 0, 0, md, NULL);
  pcre2_match_data_free(md);
  return rc >= 0;
}

const ddx_phase_t *ddx_catalog_phase_of(const ddx_catalog_t *cat, const char *file,
                                        const char *func) {
  for (size_t i = 0; i < cat->nphases; i++)
    for (size_t k = 0; k < cat->phases[i].nframes; k++)
      if (frame_match(cat->phases[i].frame_codes[k], file, func)) return &cat->phases[i];
  return NULL;
}

bool ddx_clue_gate_match(const ddx_clue_t *c, const char *text) {
  if (!c->required || !c->frame_code || !text) return false;
  pcre2_match_data *md = pcre2_match_data_create(1, NULL);
  if (!md) return false;
  int rc = pcre2_match(c->frame_code, (PCRE2_SPTR)text, PCRE2_ZERO_TERMINATED, 0, 0, md, NULL);
  pcre2_match_data_free(md);
  return rc >= 0;
}

bool ddx_clue_frame_match(const ddx_clue_t *c, const char *file, const char *func) {
  return c->kind == DDX_CLUE_FRAME && c->frame_code && frame_match(c->frame_code, file, func);
}

void *ddx_match_data_new(const ddx_catalog_t *cat) {
  (void)cat;
  return pcre2_match_data_create(64, NULL);
}

void ddx_match_data_free(void *md) {
  pcre2_match_data_free(md);
}

int ddx_pattern_match(const ddx_pattern_t *p, const char *text, size_t len, void *md,
                      size_t *ovector_out, uint32_t maxpairs) {
  int rc = pcre2_match(p->code, (PCRE2_SPTR)text, len, 0, 0, md, p->mctx);
  if (rc == PCRE2_ERROR_NOMATCH) return 0;
  if (rc < 0) return -1;
  PCRE2_SIZE *ov = pcre2_get_ovector_pointer(md);
  uint32_t n = pcre2_get_ovector_count(md);
  if (n > maxpairs) n = maxpairs;
  for (uint32_t i = 0; i < n; i++) {
    ovector_out[2 * i] = ov[2 * i] == PCRE2_UNSET ? (size_t)-1 : ov[2 * i];
    ovector_out[2 * i + 1] = ov[2 * i + 1] == PCRE2_UNSET ? (size_t)-1 : ov[2 * i + 1];
  }
  for (uint32_t i = n; i < maxpairs; i++)
    ovector_out[2 * i] = ovector_out[2 * i + 1] = (size_t)-1;
  return 1;
}

const char *ddx_severity_name(int s) {
  return s == DDX_SEV_ERROR ? "error" : s == DDX_SEV_WARNING ? "warning" : "info";
}

const char *ddx_role_name(int r) {
  return r == DDX_ROLE_COLLATERAL ? "collateral" : r == DDX_ROLE_WRAPPER ? "wrapper" : "cause";
}

static bool rules_is_dir(const char *p) {
  struct stat st;
  return stat(p, &st) == 0 && S_ISDIR(st.st_mode);
}

const char *ddx_catalog_default_dir(char *buf, size_t cap, const char *source_dir) {
  const char *env = getenv("DDX_RULES");
  if (env && *env) return env;
  char exe[PATH_MAX];
  if (ddx_exe_dir(exe, sizeof exe)) {
    static const char *const sub[] = {"/../rules", "/../share/ddx/rules", "/rules"};
    for (size_t i = 0; i < 3; i++) {
      snprintf(buf, cap, "%s%s", exe, sub[i]);
      if (rules_is_dir(buf)) return buf;
    }
  }
  if (source_dir && rules_is_dir(source_dir)) return source_dir;
  return "rules";
}

size_t ddx_rule_encyclopedia_missing(const ddx_rule_t *r, char *buf, size_t cap) {
  const struct {
    const char *name;
    bool have;
  } f[] = {{"family", r->family != NULL},
           {"examples", r->nexamples > 0},
           {"confirm", r->confirm != NULL},
           {"scale", r->scale != NULL},
           {"inference", r->inference_affected != NULL}};
  size_t n = 0;
  if (cap) buf[0] = 0;
  for (size_t i = 0; i < sizeof f / sizeof f[0]; i++) {
    if (f[i].have) continue;
    size_t len = strlen(buf);
    if (cap > len) snprintf(buf + len, cap - len, "%s%s", n ? ", " : "", f[i].name);
    n++;
  }
  return n;
}

/* ---------------------------------------------------------- rules check */

static int check_add(ddx_checks_t *c, ddx_check_level_t level, const ddx_rule_t *r,
                     const char *where, const char *subject, const char *fmt, ...)
    __attribute__((format(printf, 6, 7)));
static int check_add(ddx_checks_t *c, ddx_check_level_t level, const ddx_rule_t *r,
                     const char *where, const char *subject, const char *fmt, ...) {
  char msg[1024];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  ddx_check_t *k = ddx_vec_push(&c->list);
  if (!k) return DDX_ENOMEM;
  *k = (ddx_check_t){.level = level, .rule = r};
  k->message = ddx_arena_strdup(&c->arena, msg);
  k->where = where ? ddx_arena_strdup(&c->arena, where) : NULL;
  k->subject = subject ? ddx_arena_strdup(&c->arena, subject) : NULL;
  if (!k->message || (where && !k->where) || (subject && !k->subject)) return DDX_ENOMEM;
  return 0;
}

/* A signature is only as selective as its most frequent literal: each
 * literal alone makes a line a candidate. */
static int check_literals(const ddx_rule_t *r, ddx_checks_t *out) {
  for (size_t k = 0; k < r->nsigs; k++)
    for (size_t l = 0; l < r->sigs[k].literals.n; l++) {
      const char *lit = r->sigs[k].literals.v[l];
      if (strlen(lit) >= 4 && ddx_prefilter_literal_cost(lit, strlen(lit)) <= 6500) continue;
      char where[300];
      snprintf(where, sizeof where, "%s.signatures[%zu]", r->id, k);
      int rc = check_add(out, DDX_CHECK_WARNING, r, where, lit,
                         "literal \"%s\" is not selective: it may slow down scanning", lit);
      if (rc) return rc;
    }
  return 0;
}

static int check_rule(const ddx_catalog_t *cat, const ddx_rule_t *r, bool strict,
                      ddx_checks_t *out) {
  ddx_check_level_t level = strict ? DDX_CHECK_FAIL : DDX_CHECK_WARNING;
  int rc = check_literals(r, out);
  char miss[128];
  if (!rc && ddx_rule_encyclopedia_missing(r, miss, sizeof miss))
    rc = check_add(out, level, r, r->id, r->id, "the encyclopedia's fields are missing: %s", miss);
  for (size_t k = 0; !rc && k < r->related.n; k++)
    if (!ddx_catalog_find(cat, r->related.v[k])) {
      char where[64];
      snprintf(where, sizeof where, "$.related[%zu]", k);
      rc = check_add(out, level, r, where, r->related.v[k], "\"%s\" is not in the catalog",
                     r->related.v[k]);
    }
  return rc;
}

int ddx_catalog_check(const ddx_catalog_t *cat, bool strict, ddx_checks_t *out) {
  ddx_arena_init(&out->arena);
  ddx_vec_init(&out->list, sizeof(ddx_check_t));
  int rc = 0;
  size_t pairs = ddx_prefilter_short_pairs(cat->prefilter);
  if (pairs > DDX_PREFILTER_SIMD_PAIRS)
    rc = check_add(out, DDX_CHECK_WARNING, NULL, NULL, NULL,
                   "the catalog's literals of 2-6 bytes need %zu distinct byte pairs (more than "
                   "%d): the short-literal pass goes a byte at a time; make literals 7+ bytes long",
                   pairs, DDX_PREFILTER_SIMD_PAIRS);
  for (size_t i = 0; !rc && i < cat->nrules; i++)
    rc = check_rule(cat, &cat->rules[i], strict, out);
  return rc;
}

void ddx_checks_free(ddx_checks_t *c) {
  ddx_vec_free(&c->list);
  ddx_arena_free(&c->arena);
}

void ddx_check_format(const ddx_check_t *c, bool with_file, char *buf, size_t cap) {
  bool file = with_file && c->rule;
  snprintf(buf, cap, "%s%s%s%s%s%s", with_file ? (c->level ? "FAIL: " : "warning: ") : "",
           file ? c->rule->file : "", file ? ": " : "", c->where ? c->where : "",
           c->where ? ": " : "", c->message);
}
