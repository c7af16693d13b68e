/* dscheck.c - DeepSpeed config checks (see ddx/dscheck.h).
 *
 * The reader: DeepSpeed reads ds_config.json with hjson, so the text is
 * read in ddx/jsonpos.h's lenient mode (comments and trailing commas
 * accepted), unlike the quick-fix planner (ddx/dsconfig.h), which reads
 * strictly because an edit could not promise to keep them.
 *
 * The schema: jansson's tree of rules/ds_config.schema.json, only read
 * after loading (json_object_get takes no references), so one schema can be
 * used by several threads. The keywords used are the draft-07 ones
 * (properties, additionalProperties, type, enum, const, anyOf, minimum,
 * maximum, default, description, $ref into #/definitions) and ddx's own:
 * x-ddx-strict (a pydantic block: unknown keys are an error, "auto" values
 * are dropped), x-ddx-ignored (unknown keys are silently ignored),
 * x-ddx-deprecated (message) with x-ddx-replaced-by (a sibling name), and
 * x-ddx-alias-of.
 *
 * DeepSpeed facts the checks encode: DeepSpeedConfigModel drops "auto"
 * values and forbids extra keys; get_scalar_param passes top-level values
 * through as they are (a string "false" is true); duplicate keys raise;
 * _set_batch_related_parameters derives the missing batch values by floor
 * division before _batch_assertion; fp16 and bf16 both enabled asserts. */
#include "ddx/dscheck.h"

#include "ddx/dsconfig.h"
#include "ddx/jsonpos.h"

#include "ddx/file.h"

#include <jansson.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define DK_MAX_PATH 512

struct ddx_dscheck {
  json_t *root;
  size_t nkeys;
};

/* ------------------------------------------------------------------ reader */

typedef ddx_jp_node_t dk_node_t; /* read leniently, with its bytes (ddx/jsonpos.h) */

/* A member by key, walking the list: for the fixed set of keys the checks
 * read. Lookups made once per member of an object go through its
 * dk_index_t instead, so that a document's cost stays n log n. */
static const dk_node_t *dk_member(const dk_node_t *obj, const char *key) {
  if (!obj || obj->kind != DDX_JP_OBJECT) return NULL;
  size_t k = strlen(key);
  for (const dk_node_t *c = obj->first; c; c = c->next)
    if (c->key_len == k && !memcmp(c->key, key, k)) return c;
  return NULL;
}

/* The members of one object sorted by key, then by position: duplicates
 * are neighbours (the first occurrence first) and a key is found by binary
 * search. A vocab.json is one object with 50,000 keys. */
typedef struct dk_ref {
  const dk_node_t *m;
  size_t pos; /* in document order */
} dk_ref_t;

typedef struct dk_index {
  dk_ref_t *sorted;
  bool *dup; /* by position: a second or later occurrence of its key */
  size_t n;
} dk_index_t;

static int dk_key_cmp(const char *a, size_t na, const char *b, size_t nb) {
  int c = memcmp(a, b, na < nb ? na : nb);
  if (c) return c;
  return na < nb ? -1 : na > nb ? 1 : 0;
}

static int dk_ref_cmp(const void *x, const void *y) {
  const dk_ref_t *a = x, *b = y;
  int c = dk_key_cmp(a->m->key, a->m->key_len, b->m->key, b->m->key_len);
  if (c) return c;
  return a->pos < b->pos ? -1 : a->pos > b->pos ? 1 : 0;
}

static void dk_index_free(dk_index_t *ix) {
  free(ix->sorted);
  free(ix->dup);
  memset(ix, 0, sizeof *ix);
}

/* False when out of memory. */
static bool dk_index_build(dk_index_t *ix, const dk_node_t *obj) {
  memset(ix, 0, sizeof *ix);
  for (const dk_node_t *m = obj->first; m; m = m->next)
    ix->n++;
  if (!ix->n) return true;
  ix->sorted = malloc(ix->n * sizeof *ix->sorted);
  ix->dup = calloc(ix->n, sizeof *ix->dup);
  if (!ix->sorted || !ix->dup) {
    dk_index_free(ix);
    return false;
  }
  size_t i = 0;
  for (const dk_node_t *m = obj->first; m; m = m->next, i++)
    ix->sorted[i] = (dk_ref_t){m, i};
  qsort(ix->sorted, ix->n, sizeof *ix->sorted, dk_ref_cmp);
  for (i = 1; i < ix->n; i++) {
    const dk_node_t *a = ix->sorted[i - 1].m, *b = ix->sorted[i].m;
    if (!dk_key_cmp(a->key, a->key_len, b->key, b->key_len)) ix->dup[ix->sorted[i].pos] = true;
  }
  return true;
}

/* The first occurrence of key in the indexed object, or NULL. */
static const dk_node_t *dk_index_find(const dk_index_t *ix, const char *key, size_t klen) {
  size_t lo = 0, hi = ix->n; /* the first entry not below key */
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    const dk_node_t *m = ix->sorted[mid].m;
    if (dk_key_cmp(m->key, m->key_len, key, klen) < 0)
      lo = mid + 1;
    else
      hi = mid;
  }
  if (lo < ix->n && !dk_key_cmp(ix->sorted[lo].m->key, ix->sorted[lo].m->key_len, key, klen))
    return ix->sorted[lo].m;
  return NULL;
}

static bool dk_is_auto(const dk_node_t *n) {
  return n && n->kind == DDX_JP_STRING && n->str_len == 4 && !memcmp(n->str, "auto", 4);
}

static bool dk_is_int(const dk_node_t *n) {
  return n && n->kind == DDX_JP_NUMBER && isfinite(n->num) && floor(n->num) == n->num &&
         fabs(n->num) < 9.2e18;
}

static bool dk_str_is(const dk_node_t *n, const char *s) {
  return n && n->kind == DDX_JP_STRING && n->str_len == strlen(s) && !strcasecmp(n->str, s);
}

/* ------------------------------------------------------------------ schema */

static size_t ds_count_keys(json_t *sch) {
  size_t n = 0;
  const char *k;
  json_t *v;
  json_object_foreach(json_object_get(sch, "properties"), k, v) n += 1 + ds_count_keys(v);
  return n;
}

int ddx_dscheck_load_text(ddx_dscheck_t **out, const char *json, size_t len, ddx_error_t *err) {
  *out = NULL;
  json_error_t je;
  json_t *root = json_loadb(json, len, 0, &je);
  if (!root)
    return ddx_error_set(err, DDX_EINVAL, "the ds_config schema is not JSON: line %d: %s", je.line,
                         je.text);
  if (!json_is_object(json_object_get(root, "properties"))) {
    json_decref(root);
    return ddx_error_set(err, DDX_EINVAL, "the ds_config schema has no properties");
  }
  ddx_dscheck_t *s = calloc(1, sizeof *s);
  if (!s) {
    json_decref(root);
    return ddx_error_set(err, DDX_ENOMEM, "out of memory");
  }
  s->root = root;
  s->nkeys = ds_count_keys(root);
  *out = s;
  return 0;
}

int ddx_dscheck_load(ddx_dscheck_t **out, const char *path, ddx_error_t *err) {
  *out = NULL;
  char *text;
  size_t len;
  int rc = ddx_read_file(path, &text, &len, err);
  if (rc) return rc;
  rc = ddx_dscheck_load_text(out, text, len, err);
  free(text);
  if (rc && err) {
    char msg[sizeof err->msg];
    snprintf(msg, sizeof msg, "%s", err->msg);
    ddx_error_set(err, rc, "%s: %s", path, msg);
  }
  return rc;
}

void ddx_dscheck_free(ddx_dscheck_t *s) {
  if (!s) return;
  json_decref(s->root);
  free(s);
}

size_t ddx_dscheck_nkeys(const ddx_dscheck_t *s) {
  return s ? s->nkeys : 0;
}

static json_t *ds_resolve(const ddx_dscheck_t *s, json_t *sch) {
  for (int i = 0; i < 8 && sch; i++) {
    const char *ref = json_string_value(json_object_get(sch, "$ref"));
    if (!ref || strncmp(ref, "#/definitions/", 14)) return sch;
    sch = json_object_get(json_object_get(s->root, "definitions"), ref + 14);
  }
  return sch;
}

static json_t *ds_prop(const ddx_dscheck_t *s, json_t *sch, const char *key) {
  return ds_resolve(s, json_object_get(json_object_get(sch, "properties"), key));
}

static bool ds_flag(json_t *sch, const char *kw) {
  return json_is_true(json_object_get(sch, kw));
}

static bool ds_strict(json_t *sch) {
  return ds_flag(sch, "x-ddx-strict") ||
         json_is_false(json_object_get(sch, "additionalProperties"));
}

/* ---------------------------------------------------------------- findings */

typedef struct ds_ctx {
  const ddx_dscheck_t *s;
  const char *text;
  size_t len;
  ddx_dscheck_result_t *out;
  const dk_node_t *root;
  bool oom;
} ds_ctx_t;

static void ds_add(ds_ctx_t *c, size_t start, size_t end, int sev, const char *code,
                   const char *path, char *patch, const char *fmt, ...)
    __attribute__((format(printf, 8, 9)));

static void ds_add(ds_ctx_t *c, size_t start, size_t end, int sev, const char *code,
                   const char *path, char *patch, const char *fmt, ...) {
  ddx_dscheck_result_t *r = c->out;
  if (r->n == r->cap) {
    size_t cap = r->cap ? r->cap * 2 : 16;
    ddx_dscheck_finding_t *v = realloc(r->findings, cap * sizeof *v);
    if (!v) {
      c->oom = true;
      free(patch);
      return;
    }
    r->findings = v;
    r->cap = cap;
  }
  ddx_sb_t b;
  ddx_sb_init(&b);
  va_list ap;
  va_start(ap, fmt);
  char tmp[2048];
  vsnprintf(tmp, sizeof tmp, fmt, ap);
  va_end(ap);
  ddx_sb_puts(&b, tmp);
  ddx_dscheck_finding_t *f = &r->findings[r->n];
  f->start = start;
  f->end = end;
  f->severity = sev;
  f->code = code;
  f->message = ddx_sb_take(&b);
  f->path = strdup(path ? path : "");
  f->patch_json = patch;
  if (!f->message || !f->path) {
    free(f->message);
    free(f->path);
    free(patch);
    c->oom = true;
    return;
  }
  r->n++;
}

#define DS_NEAR 4 /* the largest distance a suggestion may have */

static char ds_lower(char c) {
  return (char)(c >= 'A' && c <= 'Z' ? c + 32 : c);
}

/* Optimal string alignment distance, case-insensitive, when it is at most
 * DS_NEAR, else 99. Only the band |i - j| <= DS_NEAR is computed (a cheaper
 * alignment never leaves it), so one unknown key costs about 9 cells per
 * character for each known key of its block. */
static size_t ds_distance(const char *a, size_t na, const char *b, size_t nb) {
  enum { FAR = 99 };
  if (na > 64 || nb > 64 || (na > nb ? na - nb : nb - na) > DS_NEAR) return FAR;
  size_t d[66][66];
  for (size_t i = 0; i <= na; i++)
    d[i][0] = i;
  for (size_t j = 0; j <= nb; j++)
    d[0][j] = j;
  for (size_t i = 1; i <= na; i++) {
    size_t lo = i > DS_NEAR ? i - DS_NEAR : 1, hi = i + DS_NEAR < nb ? i + DS_NEAR : nb;
    if (lo > 1) d[i][lo - 1] = FAR;                     /* left of the band */
    if (i > 1 && hi == i + DS_NEAR) d[i - 1][hi] = FAR; /* right of the previous row's */
    char x = ds_lower(a[i - 1]), xp = i > 1 ? ds_lower(a[i - 2]) : 0;
    for (size_t j = lo; j <= hi; j++) {
      char y = ds_lower(b[j - 1]);
      size_t v = d[i - 1][j] + 1;
      if (d[i][j - 1] + 1 < v) v = d[i][j - 1] + 1;
      if (d[i - 1][j - 1] + (x != y) < v) v = d[i - 1][j - 1] + (x != y);
      if (i > 1 && j > 1 && x == ds_lower(b[j - 2]) && xp == y && d[i - 2][j - 2] + 1 < v)
        v = d[i - 2][j - 2] + 1;
      d[i][j] = v;
    }
  }
  return d[na][nb] <= DS_NEAR ? d[na][nb] : FAR;
}

/* The known key of sch nearest to key, or NULL when none is close. A known
 * key sharing too few characters with it is passed over before the
 * distance is computed: each edit changes at most one character of the
 * multiset (a transposition none), so a distance d leaves at least
 * max(na, nb) - d in common. */
static const char *ds_suggest(json_t *sch, const char *key, size_t klen) {
  const char *best = NULL;
  size_t bestd = 99;
  const char *k;
  json_t *v;
  if (klen > 64) return NULL;
  unsigned char have[256] = {0};
  for (size_t i = 0; i < klen; i++)
    have[(unsigned char)ds_lower(key[i])]++;
  json_object_foreach(json_object_get(sch, "properties"), k, v) {
    size_t n = strlen(k), longer = n > klen ? n : klen;
    if (n > 64 || longer - (n < klen ? n : klen) > DS_NEAR) continue;
    unsigned char left[256];
    memcpy(left, have, sizeof left);
    size_t common = 0;
    for (size_t i = 0; i < n; i++) {
      unsigned char ch = (unsigned char)ds_lower(k[i]);
      if (left[ch]) left[ch]--, common++;
    }
    if (longer - common > DS_NEAR || json_object_get(v, "x-ddx-deprecated")) continue;
    size_t dist = ds_distance(key, klen, k, n);
    if (dist < bestd && dist <= DS_NEAR && dist * 3 <= longer) {
      best = k;
      bestd = dist;
    }
  }
  return best;
}

static char *ds_rename_patch(const char *path, const char *from, const char *to) {
  if (strchr(from, '.') || strchr(to, '.')) return NULL;
  char title[512];
  snprintf(title, sizeof title, "Rename `%s` to `%s`", from, to);
  json_t *p = json_pack("{s:s, s:s, s:[{s:s, s:s, s:s}]}", "id", "rename-key", "title", title,
                        "ops", "op", "rename", "path", path, "to", to);
  char *s = p ? json_dumps(p, JSON_COMPACT) : NULL;
  json_decref(p);
  return s;
}

static void ds_join(char *out, size_t cap, const char *parent, const char *key, size_t klen) {
  if (parent && *parent)
    snprintf(out, cap, "%s.%.*s", parent, (int)klen, key);
  else
    snprintf(out, cap, "%.*s", (int)klen, key);
}

static const char *ds_kind_name(const dk_node_t *n) {
  switch (n->kind) {
  case DDX_JP_OBJECT:
    return "an object";
  case DDX_JP_ARRAY:
    return "an array";
  case DDX_JP_STRING:
    return "a string";
  case DDX_JP_NUMBER:
    return dk_is_int(n) ? "an integer" : "a number";
  case DDX_JP_TRUE:
  case DDX_JP_FALSE:
    return "a boolean";
  default:
    return "null";
  }
}

static bool ds_type_ok(const char *t, const dk_node_t *n) {
  if (!strcmp(t, "object")) return n->kind == DDX_JP_OBJECT;
  if (!strcmp(t, "array")) return n->kind == DDX_JP_ARRAY;
  if (!strcmp(t, "string")) return n->kind == DDX_JP_STRING;
  if (!strcmp(t, "number")) return n->kind == DDX_JP_NUMBER;
  if (!strcmp(t, "integer")) return dk_is_int(n);
  if (!strcmp(t, "boolean")) return n->kind == DDX_JP_TRUE || n->kind == DDX_JP_FALSE;
  if (!strcmp(t, "null")) return n->kind == DDX_JP_NULL;
  return true;
}

static bool ds_equal(json_t *v, const dk_node_t *n) {
  switch (json_typeof(v)) {
  case JSON_STRING:
    return n->kind == DDX_JP_STRING && n->str_len == json_string_length(v) &&
           !memcmp(n->str, json_string_value(v), n->str_len);
  case JSON_INTEGER:
  case JSON_REAL:
    return n->kind == DDX_JP_NUMBER && n->num == json_number_value(v);
  case JSON_TRUE:
    return n->kind == DDX_JP_TRUE;
  case JSON_FALSE:
    return n->kind == DDX_JP_FALSE;
  case JSON_NULL:
    return n->kind == DDX_JP_NULL;
  default:
    return false;
  }
}

static bool ds_same_kind(json_t *v, const dk_node_t *n) {
  switch (json_typeof(v)) {
  case JSON_STRING:
    return n->kind == DDX_JP_STRING;
  case JSON_INTEGER:
  case JSON_REAL:
    return n->kind == DDX_JP_NUMBER;
  case JSON_TRUE:
  case JSON_FALSE:
    return n->kind == DDX_JP_TRUE || n->kind == DDX_JP_FALSE;
  case JSON_NULL:
    return n->kind == DDX_JP_NULL;
  default:
    return false;
  }
}

enum { DS_OK = 0, DS_BAD_TYPE = 1, DS_BAD_ENUM = 2, DS_BAD_RANGE = 3 };

/* Validates n against one (resolved) schema; the worst failure when anyOf
 * fails everywhere is the one of the branch that got furthest. */
static int ds_validate(const ddx_dscheck_t *s, json_t *sch, const dk_node_t *n) {
  sch = ds_resolve(s, sch);
  if (!json_is_object(sch)) return DS_OK;
  json_t *any = json_object_get(sch, "anyOf");
  if (json_is_array(any)) {
    int best = DS_BAD_TYPE;
    size_t i;
    json_t *b;
    json_array_foreach(any, i, b) {
      int r = ds_validate(s, b, n);
      if (r == DS_OK) return DS_OK;
      if (r > best) best = r;
    }
    return best;
  }
  json_t *cst = json_object_get(sch, "const");
  if (cst && !ds_equal(cst, n)) return ds_same_kind(cst, n) ? DS_BAD_ENUM : DS_BAD_TYPE;
  json_t *type = json_object_get(sch, "type");
  if (json_is_string(type) && !ds_type_ok(json_string_value(type), n)) return DS_BAD_TYPE;
  if (json_is_array(type)) {
    bool ok = false;
    size_t i;
    json_t *t;
    json_array_foreach(type, i, t) ok |= json_is_string(t) && ds_type_ok(json_string_value(t), n);
    if (!ok) return DS_BAD_TYPE;
  }
  json_t *en = json_object_get(sch, "enum");
  if (json_is_array(en)) {
    bool ok = false;
    size_t i;
    json_t *v;
    bool kind = false;
    json_array_foreach(en, i, v) {
      ok |= ds_equal(v, n);
      kind |= ds_same_kind(v, n);
    }
    if (!ok) return kind || json_object_get(sch, "type") ? DS_BAD_ENUM : DS_BAD_TYPE;
  }
  if (n->kind == DDX_JP_NUMBER) {
    json_t *mn = json_object_get(sch, "minimum"), *mx = json_object_get(sch, "maximum");
    if (json_is_number(mn) && n->num < json_number_value(mn)) return DS_BAD_RANGE;
    if (json_is_number(mx) && n->num > json_number_value(mx)) return DS_BAD_RANGE;
  }
  return DS_OK;
}

/* "an integer (0, 1, 2 or 3) or \"auto\"" */
static void ds_expect(const ddx_dscheck_t *s, json_t *sch, ddx_sb_t *b, int depth) {
  sch = ds_resolve(s, sch);
  json_t *any = json_object_get(sch, "anyOf");
  if (json_is_array(any) && depth < 4) {
    size_t i;
    json_t *br;
    json_array_foreach(any, i, br) {
      if (i) ddx_sb_puts(b, " or ");
      ds_expect(s, br, b, depth + 1);
    }
    return;
  }
  json_t *cst = json_object_get(sch, "const");
  if (cst) {
    char *v = json_dumps(cst, JSON_ENCODE_ANY);
    ddx_sb_puts(b, v ? v : "?");
    free(v);
    return;
  }
  json_t *type = json_object_get(sch, "type");
  const char *article = "";
  size_t nt = json_is_array(type) ? json_array_size(type) : json_is_string(type) ? 1 : 0;
  for (size_t i = 0; i < nt; i++) {
    const char *t =
        json_is_array(type) ? json_string_value(json_array_get(type, i)) : json_string_value(type);
    if (!t) continue;
    article = !strcmp(t, "integer") || !strcmp(t, "object") || !strcmp(t, "array") ? "an "
              : !strcmp(t, "null")                                                 ? ""
                                                                                   : "a ";
    ddx_sb_printf(b, "%s%s%s", i ? (i + 1 == nt ? " or " : ", ") : "", article, t);
  }
  json_t *en = json_object_get(sch, "enum");
  if (json_is_array(en)) {
    ddx_sb_puts(b, nt ? " (one of " : "one of ");
    size_t i;
    json_t *v;
    json_array_foreach(en, i, v) {
      char *d = json_dumps(v, JSON_ENCODE_ANY);
      ddx_sb_printf(b, "%s%s", i ? ", " : "", d ? d : "?");
      free(d);
    }
    if (nt) ddx_sb_puts(b, ")");
  }
  json_t *mn = json_object_get(sch, "minimum"), *mx = json_object_get(sch, "maximum");
  if (json_is_number(mn) && json_is_number(mx))
    ddx_sb_printf(b, " from %g to %g", json_number_value(mn), json_number_value(mx));
  else if (json_is_number(mn))
    ddx_sb_printf(b, " >= %g", json_number_value(mn));
  else if (json_is_number(mx))
    ddx_sb_printf(b, " <= %g", json_number_value(mx));
}

static bool ds_accepts_auto(const ddx_dscheck_t *s, json_t *sch) {
  dk_node_t a = {.kind = DDX_JP_STRING, .str = "auto", .str_len = 4};
  return ds_validate(s, sch, &a) == DS_OK;
}

static bool ds_expects(const ddx_dscheck_t *s, json_t *sch, const char *type) {
  sch = ds_resolve(s, sch);
  json_t *any = json_object_get(sch, "anyOf");
  if (json_is_array(any)) {
    size_t i;
    json_t *b;
    json_array_foreach(any, i, b) if (ds_expects(s, b, type)) return true;
    return false;
  }
  json_t *t = json_object_get(sch, "type");
  if (json_is_string(t)) return !strcmp(json_string_value(t), type);
  size_t i;
  json_t *e;
  json_array_foreach(t, i,
                     e) if (json_is_string(e) && !strcmp(json_string_value(e), type)) return true;
  return false;
}

static void ds_default_text(json_t *sch, char *out, size_t cap) {
  json_t *d = json_object_get(sch, "default");
  char *v = d ? json_dumps(d, JSON_ENCODE_ANY) : NULL;
  snprintf(out, cap, "%s", v && strcmp(v, "null") ? v : "its default");
  free(v);
}

static void ds_check_object(ds_ctx_t *c, const dk_node_t *obj, json_t *sch, const char *path);

/* m is a member of the object ix indexes. */
static void ds_check_value(ds_ctx_t *c, const dk_node_t *m, const dk_index_t *ix, json_t *ps,
                           const char *path, bool in_strict) {
  const ddx_dscheck_t *s = c->s;
  const char *dep = json_string_value(json_object_get(ps, "x-ddx-deprecated"));
  if (dep) {
    const char *to = json_string_value(json_object_get(ps, "x-ddx-replaced-by"));
    char *patch = NULL;
    if (to && !dk_index_find(ix, to, strlen(to))) patch = ds_rename_patch(path, m->key, to);
    ds_add(c, m->key_start, m->key_end, DDX_DSCHECK_WARNING, "ds-config.deprecated", path, patch,
           "`%s`: %s%s", path, dep, patch ? " (quick fix: rename it)" : "");
  }
  if (dk_is_auto(m)) {
    if (ds_accepts_auto(s, ps)) return;
    if (in_strict) {
      char def[128];
      ds_default_text(ps, def, sizeof def);
      ds_add(c, m->start, m->end, DDX_DSCHECK_WARNING, "ds-config.auto-dropped", path, NULL,
             "`%s`: \"auto\" is not filled in by the HF Trainer here; DeepSpeed drops it and uses "
             "%s",
             path, def);
      return;
    }
  }
  int v = ds_validate(s, ps, m);
  if (v != DS_OK) {
    ddx_sb_t b;
    ddx_sb_init(&b);
    ds_expect(s, ps, &b, 0);
    char got[96];
    if (m->kind == DDX_JP_STRING)
      snprintf(got, sizeof got, "\"%.60s\"", m->str);
    else if (m->kind == DDX_JP_NUMBER)
      snprintf(got, sizeof got, "%.*s", (int)(m->end - m->start < 60 ? m->end - m->start : 60),
               c->text + m->start);
    else
      snprintf(got, sizeof got, "%s", ds_kind_name(m));
    const char *code = v == DS_BAD_TYPE   ? "ds-config.type"
                       : v == DS_BAD_ENUM ? "ds-config.enum"
                                          : "ds-config.range";
    bool is_bool = ds_expects(s, ps, "boolean");
    bool num = ds_expects(s, ps, "integer") || ds_expects(s, ps, "number");
    bool str_bool = m->kind == DDX_JP_STRING && (dk_str_is(m, "true") || dk_str_is(m, "false"));
    char *endp = NULL;
    bool str_num =
        m->kind == DDX_JP_STRING && m->str_len && (strtod(m->str, &endp), endp && !*endp);
    if (v == DS_BAD_TYPE && in_strict && ((is_bool && str_bool) || (num && str_num))) {
      ds_add(c, m->start, m->end, DDX_DSCHECK_WARNING, code, path, NULL,
             "`%s` should be %s, not the string %s (DeepSpeed's config model converts it; write "
             "it without quotes)",
             path, b.s ? b.s : "?", got);
    } else if (v == DS_BAD_TYPE && !in_strict && is_bool && m->kind == DDX_JP_STRING &&
               m->str_len) {
      ds_add(c, m->start, m->end, DDX_DSCHECK_ERROR, code, path, NULL,
             "`%s` should be %s, not the string %s: DeepSpeed uses the value as it is and any "
             "non-empty string counts as true",
             path, b.s ? b.s : "?", got);
    } else {
      ds_add(c, m->start, m->end, DDX_DSCHECK_ERROR, code, path, NULL, "`%s` must be %s, not %s",
             path, b.s ? b.s : "?", got);
    }
    ddx_sb_free(&b);
    return;
  }
  if (m->kind == DDX_JP_OBJECT &&
      (json_object_get(ps, "properties") || ds_strict(ps) || ds_flag(ps, "x-ddx-ignored")))
    ds_check_object(c, m, ps, path);
}

/* An unknown top-level key that is a known key of one block (`stage` or
 * `offload_optimizer` written at the top): the block it belongs in. */
static const char *ds_home_block(const ddx_dscheck_t *s, const char *key) {
  const char *k;
  json_t *v;
  json_object_foreach(json_object_get(s->root, "properties"), k, v) {
    json_t *props = json_object_get(ds_resolve(s, v), "properties");
    if (json_is_object(props) && json_object_get(props, key) &&
        !json_object_get(v, "x-ddx-deprecated"))
      return k;
  }
  return NULL;
}

static void ds_check_object(ds_ctx_t *c, const dk_node_t *obj, json_t *sch, const char *path) {
  const ddx_dscheck_t *s = c->s;
  bool strict = ds_strict(sch), ignored = ds_flag(sch, "x-ddx-ignored");
  dk_index_t ix;
  if (!dk_index_build(&ix, obj)) {
    c->oom = true;
    return;
  }
  size_t pos = 0;
  for (const dk_node_t *m = obj->first; m && !c->oom; m = m->next, pos++) {
    char mp[DK_MAX_PATH];
    ds_join(mp, sizeof mp, path, m->key, m->key_len);
    if (ix.dup[pos]) {
      ds_add(c, m->key_start, m->key_end, DDX_DSCHECK_ERROR, "ds-config.duplicate-key", mp, NULL,
             "duplicate key `%s`: DeepSpeed refuses a config with duplicate keys", mp);
      continue;
    }
    char key[256];
    snprintf(key, sizeof key, "%.*s", (int)(m->key_len < 255 ? m->key_len : 255), m->key);
    json_t *ps = ds_prop(s, sch, key);
    if (ps) {
      ds_check_value(c, m, &ix, ps, mp, strict);
      continue;
    }
    if (!strict && !ignored) continue;
    const char *sug = ds_suggest(sch, m->key, m->key_len);
    if (sug && dk_index_find(&ix, sug, strlen(sug))) sug = NULL; /* the right key is there */
    const char *home = !*path && !sug ? ds_home_block(s, key) : NULL;
    char *patch = sug ? ds_rename_patch(mp, key, sug) : NULL;
    char hint[512] = "";
    if (sug)
      snprintf(hint, sizeof hint, "; did you mean `%s`?", sug);
    else if (home)
      snprintf(hint, sizeof hint, "; `%s` belongs inside `%s`", key, home);
    if (strict)
      ds_add(c, m->key_start, m->key_end, DDX_DSCHECK_ERROR, "ds-config.unknown-key", mp, patch,
             "unknown key `%s` in `%s`: DeepSpeed refuses it (extra keys are not permitted in "
             "this block)%s",
             key, *path ? path : "the config", hint);
    else
      ds_add(c, m->key_start, m->key_end, DDX_DSCHECK_WARNING, "ds-config.ignored-key", mp, patch,
             "`%s` is not a DeepSpeed key%s%s: DeepSpeed silently ignores it%s", key,
             *path ? " of " : "", *path ? path : "", hint);
  }
  dk_index_free(&ix);
}

/* ---------------------------------------------------------------- semantic */

static int ds_stage(const dk_node_t *root, const dk_node_t **at) {
  const dk_node_t *z = dk_member(root, "zero_optimization");
  if (at) *at = NULL;
  if (!z) return 0;
  if (z->kind == DDX_JP_TRUE) return 1;
  if (z->kind == DDX_JP_FALSE) return 0;
  const dk_node_t *st = dk_member(z, "stage");
  if (at) *at = st;
  if (!st) return 0;
  if (dk_is_int(st) && st->num >= 0 && st->num <= 3) return (int)st->num;
  return -1;
}

static bool ds_enabled(const dk_node_t *block) {
  const dk_node_t *e = dk_member(block, "enabled");
  return e && e->kind == DDX_JP_TRUE;
}

static bool ds_offloading(const dk_node_t *off) {
  const dk_node_t *d = dk_member(off, "device");
  return d && (dk_str_is(d, "cpu") || dk_str_is(d, "nvme"));
}

static void ds_check_semantics(ds_ctx_t *c, const ddx_dscheck_facts_t *f) {
  const dk_node_t *root = c->root;
  /* fp16 + bf16 */
  const dk_node_t *fp16 = dk_member(root, "fp16"), *bf16 = dk_member(root, "bf16");
  if (!bf16) bf16 = dk_member(root, "bfloat16");
  if (ds_enabled(fp16) && ds_enabled(bf16)) {
    const dk_node_t *e = dk_member(bf16, "enabled");
    char p[64];
    snprintf(p, sizeof p, "%.*s.enabled", (int)bf16->key_len, bf16->key);
    ds_add(c, e->key_start, e->end, DDX_DSCHECK_ERROR, "ds-config.precision", p, NULL,
           "fp16.enabled and %s are both true: DeepSpeed asserts \"bfloat16 and fp16 modes cannot "
           "be simultaneously enabled\"; keep one (bf16 on Ampere or newer GPUs)",
           p);
  }
  const dk_node_t *stage_at;
  int stage = ds_stage(root, &stage_at);
  const dk_node_t *z = dk_member(root, "zero_optimization");
  if (z && (z->kind == DDX_JP_TRUE || z->kind == DDX_JP_FALSE))
    ds_add(c, z->key_start, z->end, DDX_DSCHECK_WARNING, "ds-config.deprecated",
           "zero_optimization", NULL,
           "\"zero_optimization\": %s is DeepSpeed's deprecated format (it means stage %d); write "
           "{\"stage\": %d}",
           z->kind == DDX_JP_TRUE ? "true" : "false", stage, stage);
  char stxt[48];
  snprintf(stxt, sizeof stxt, stage_at ? "stage is %d" : "stage defaults to %d", stage);
  /* offload_param below stage 3 */
  const dk_node_t *op = dk_member(z, "offload_param");
  if (op && stage >= 0 && stage < 3 && ds_offloading(op))
    ds_add(c, op->key_start, op->key_end, DDX_DSCHECK_ERROR, "ds-config.offload-param-stage",
           "zero_optimization.offload_param", NULL,
           "offload_param is only used at ZeRO stage 3 (%s): the parameters stay on the GPU; set "
           "\"stage\": 3, or offload the optimizer states with offload_optimizer instead",
           stxt);
  /* partial optimizer offload below stage 3 */
  const dk_node_t *oo = dk_member(z, "offload_optimizer");
  const dk_node_t *ratio = dk_member(oo, "ratio");
  if (ratio && ratio->kind == DDX_JP_NUMBER && ratio->num < 1.0 && stage >= 0 && stage < 3)
    ds_add(c, ratio->key_start, ratio->end, DDX_DSCHECK_ERROR, "ds-config.offload-ratio-stage",
           "zero_optimization.offload_optimizer.ratio", NULL,
           "offload_optimizer.ratio below 1.0 needs ZeRO stage 3 (%s): DeepSpeed asserts \"Partial "
           "offloading only supported for ZeRO Stage 3\"",
           stxt);
  /* gradient_allreduce_op sum with stage 3 */
  const dk_node_t *gop = dk_member(root, "gradient_allreduce_op");
  if (dk_str_is(gop, "sum") && stage == 3)
    ds_add(c, gop->start, gop->end, DDX_DSCHECK_ERROR, "ds-config.allreduce-op",
           "gradient_allreduce_op", NULL,
           "gradient_allreduce_op \"sum\" is not supported with ZeRO stage 3 (DeepSpeed raises)");
  /* bf16 optimizer states need bf16 master weights; both need ZeRO */
  const dk_node_t *bos = dk_member(bf16, "bf16_optimizer_states");
  const dk_node_t *bmw = dk_member(bf16, "bf16_master_weights_and_grads");
  if (bos && bos->kind == DDX_JP_TRUE && !(bmw && bmw->kind == DDX_JP_TRUE))
    ds_add(c, bos->key_start, bos->end, DDX_DSCHECK_ERROR, "ds-config.precision",
           "bf16.bf16_optimizer_states", NULL,
           "bf16_optimizer_states requires bf16_master_weights_and_grads: true (DeepSpeed "
           "asserts)");
  const dk_node_t *mw[2] = {bmw, dk_member(fp16, "fp16_master_weights_and_grads")};
  for (int i = 0; i < 2; i++)
    if (mw[i] && mw[i]->kind == DDX_JP_TRUE && stage == 0)
      ds_add(c, mw[i]->key_start, mw[i]->end, DDX_DSCHECK_ERROR, "ds-config.precision",
             i ? "fp16.fp16_master_weights_and_grads" : "bf16.bf16_master_weights_and_grads", NULL,
             "%.*s is only supported with ZeRO stage 1, 2 or 3 (%s; DeepSpeed asserts)",
             (int)mw[i]->key_len, mw[i]->key, stxt);
  /* the batch triple, as DeepSpeed derives and asserts it */
  int64_t n = f ? f->dp_world_size : 0;
  const dk_node_t *tbn = dk_member(root, "train_batch_size");
  const dk_node_t *mbn = dk_member(root, "train_micro_batch_size_per_gpu");
  const dk_node_t *gan = dk_member(root, "gradient_accumulation_steps");
  bool any_auto = dk_is_auto(tbn) || dk_is_auto(mbn) || dk_is_auto(gan);
  bool ok_vals = (!tbn || (dk_is_int(tbn) && tbn->num > 0)) &&
                 (!mbn || (dk_is_int(mbn) && mbn->num > 0)) &&
                 (!gan || (dk_is_int(gan) && gan->num > 0));
  const dk_node_t *el = dk_member(root, "elasticity");
  if (n > 0 && !any_auto && ok_vals && (tbn || mbn) && !ds_enabled(el)) {
    int64_t tb = tbn ? (int64_t)tbn->num : 0, mb = mbn ? (int64_t)mbn->num : 0;
    int64_t ga = gan ? (int64_t)gan->num : 0;
    if (tbn && mbn && !gan)
      ga = tb / mb / n;
    else if (tbn && gan && !mbn)
      mb = tb / n / ga;
    else if (tbn && !mbn && !gan)
      ga = 1, mb = tb / n;
    else if (!tbn)
      tb = mb * (ga ? ga : 1) * n, ga = ga ? ga : 1;
    if (tb != mb * ga * n || mb <= 0 || ga <= 0) {
      const dk_node_t *at = tbn ? tbn : mbn;
      char how[160] = "";
      if (!mbn || !gan)
        snprintf(how, sizeof how, " (DeepSpeed derives the missing %s by floor division: %s)",
                 !mbn && !gan ? "values" : "value",
                 !mbn ? "micro batch = train_batch_size // N // gradient_accumulation_steps"
                      : "gradient_accumulation_steps = train_batch_size // micro batch // N");
      char fix[200] = "";
      int64_t origmb = mbn ? (int64_t)mbn->num : 0;
      if (origmb > 0 && tb % (origmb * n) == 0 && tb / (origmb * n) > 0)
        snprintf(fix, sizeof fix, "; e.g. gradient_accumulation_steps %lld",
                 (long long)(tb / (origmb * n)));
      else if (mb > 0 && ga > 0)
        snprintf(fix, sizeof fix, "; e.g. train_batch_size %lld", (long long)(mb * ga * n));
      ds_add(c, at->key_start, at->end, DDX_DSCHECK_ERROR, "ds-config.batch",
             tbn ? "train_batch_size" : "train_micro_batch_size_per_gpu", NULL,
             "batch sizes do not fit the data-parallel size %lld%s%s: train_batch_size %lld != "
             "micro batch %lld x gradient_accumulation_steps %lld x %lld%s (DeepSpeed asserts "
             "\"Check batch related parameters\")%s",
             (long long)n, f->world_from ? " from " : "", f->world_from ? f->world_from : "",
             (long long)tb, (long long)mb, (long long)ga, (long long)n, how, fix);
    }
  }
}

/* ------------------------------------------------------------------ memory */

static double ds_num_or(const dk_node_t *n, double def) {
  return n && n->kind == DDX_JP_NUMBER ? n->num : def;
}

static void ds_term(ddx_dscheck_memory_t *m, const char *what, const char *formula, double bytes,
                    bool cpu) {
  if (m->nterms == DDX_DSCHECK_MAX_TERMS) return;
  ddx_dscheck_term_t *t = &m->terms[m->nterms++];
  snprintf(t->what, sizeof t->what, "%s", what);
  snprintf(t->formula, sizeof t->formula, "%s", formula);
  t->bytes = bytes;
  t->cpu = cpu;
  if (cpu)
    m->cpu_bytes += bytes;
  else
    m->gpu_bytes += bytes;
}

static void ds_memory(const dk_node_t *root, const ddx_dscheck_facts_t *f,
                      ddx_dscheck_memory_t *m) {
  memset(m, 0, sizeof *m);
  if (!f || !(f->params > 0)) return;
  m->valid = true;
  m->params = f->params;
  m->n_known = f->dp_world_size > 0;
  m->n = m->n_known ? f->dp_world_size : 1;
  int stage = ds_stage(root, NULL);
  m->stage = stage;
  if (stage < 0) stage = 0;
  const dk_node_t *fp16 = dk_member(root, "fp16"), *bf16 = dk_member(root, "bf16");
  if (!bf16) bf16 = dk_member(root, "bfloat16");
  const dk_node_t *fe = dk_member(fp16, "enabled"), *be = dk_member(bf16, "enabled");
  m->mixed = ds_enabled(fp16) || ds_enabled(bf16) || dk_is_auto(fe) || dk_is_auto(be) ||
             ds_enabled(dk_member(root, "amp"));
  const dk_node_t *z = dk_member(root, "zero_optimization");
  const dk_node_t *oo = dk_member(z, "offload_optimizer"), *op = dk_member(z, "offload_param");
  /* the legacy booleans: cpu_offload (offload_optimizer to cpu) and
   * cpu_offload_params (offload_param to cpu) */
  const dk_node_t *lco = dk_member(z, "cpu_offload"), *lcp = dk_member(z, "cpu_offload_params");
  m->off_opt = stage >= 1 && (ds_offloading(oo) || (!oo && lco && lco->kind == DDX_JP_TRUE));
  m->off_param = stage == 3 && (ds_offloading(op) || (!op && lcp && lcp->kind == DDX_JP_TRUE));
  /* each rank holds its tensor/pipeline slice of the model */
  double mp = f->model_parallel > 1 ? (double)f->model_parallel : 1;
  double P = m->params / mp, N = (double)m->n;
  /* only the trainable parameters have gradients and optimizer states
   * (LoRA, frozen layers: DeepSpeed partitions the groups the optimizer
   * holds, which are the requires_grad parameters); the weights stay P */
  bool lora = f->trainable > 0 && f->trainable < m->params;
  double T = lora ? f->trainable / mp : P;
  const char *tn = lora ? "T" : "P";
  double w = m->mixed ? 2 : 4, g = m->mixed ? 2 : 4, o = m->mixed ? 12 : 8;
  const char *prec = m->mixed ? "16-bit" : "fp32";
  char what[64], fo[24];
  /* weights */
  snprintf(what, sizeof what, "%s weights", prec);
  if (stage < 3) {
    snprintf(fo, sizeof fo, "%gP", w);
    ds_term(m, what, fo, w * P, false);
  } else {
    snprintf(fo, sizeof fo, "%gP/N", w);
    ds_term(m, what, fo, w * P / N, m->off_param);
  }
  /* gradients */
  snprintf(what, sizeof what, "%s gradients", prec);
  if (stage < 2) {
    snprintf(fo, sizeof fo, "%g%s", g, tn);
    ds_term(m, what, fo, g * T, false);
  } else {
    snprintf(fo, sizeof fo, "%g%s/N", g, tn);
    ds_term(m, what, fo, g * T / N, m->off_opt);
  }
  /* optimizer states (Adam: fp32 master copy + two moments) */
  const char *owhat = m->mixed ? "Adam states + fp32 master weights" : "Adam states";
  double ratio = m->off_opt ? ds_num_or(dk_member(oo, "ratio"), 1.0) : 0.0;
  if (ratio < 0) ratio = 0;
  if (ratio > 1) ratio = 1;
  if (stage == 0) {
    snprintf(fo, sizeof fo, "%g%s", o, tn);
    ds_term(m, owhat, fo, o * T, false);
  } else if (m->off_opt && ratio < 1.0 && stage == 3) {
    snprintf(fo, sizeof fo, "%g%s/N x %.2f", o, tn, 1.0 - ratio);
    ds_term(m, owhat, fo, o * T / N * (1.0 - ratio), false);
    snprintf(fo, sizeof fo, "%g%s/N x %.2f", o, tn, ratio);
    ds_term(m, owhat, fo, o * T / N * ratio, true);
  } else {
    snprintf(fo, sizeof fo, "%g%s/N", o, tn);
    ds_term(m, owhat, fo, o * T / N, m->off_opt);
  }
  /* not counted: buckets and the stage-3 gather working set */
  double bucket = ds_num_or(dk_member(z, "reduce_bucket_size"), 5e8);
  m->bucket_bytes = bucket * (m->mixed ? 2 : 4);
  if (stage == 3) {
    double live = ds_num_or(dk_member(z, "stage3_max_live_parameters"),
                            ds_num_or(dk_member(z, "max_live_parameters"), 1e9));
    if (live > P) live = P;
    m->live_bytes = live * w;
  }
}

void ddx_dscheck_format_bytes(double bytes, char *out, size_t cap) {
  if (bytes >= 1024.0 * 1024 * 1024)
    snprintf(out, cap, "%.2f GiB", bytes / (1024.0 * 1024 * 1024));
  else
    snprintf(out, cap, "%.2f MiB", bytes / (1024.0 * 1024));
}

char *ddx_dscheck_memory_markdown(const ddx_dscheck_memory_t *m, const ddx_dscheck_facts_t *f) {
  ddx_sb_t b;
  ddx_sb_init(&b);
  if (!m->valid) {
    ddx_sb_puts(&b, "**Model-state estimate:** the parameter count is unknown: set "
                    "`ddx.model.parameters` (and `ddx.world.size`), or keep the model's "
                    "`config.json` in the workspace.\n");
    return ddx_sb_take(&b);
  }
  char gb[32], cb[32];
  ddx_dscheck_format_bytes(m->gpu_bytes, gb, sizeof gb);
  ddx_sb_printf(&b,
                "**Model states per GPU: ~%s** (ZeRO stage %d%s, %s, P = %.3g parameters, N = ", gb,
                m->stage < 0 ? 0 : m->stage, m->stage < 0 ? " assumed: stage is \"auto\"" : "",
                m->mixed ? "fp16/bf16 mixed precision with Adam" : "fp32 with Adam", m->params);
  if (m->n_known)
    ddx_sb_printf(&b, "%lld data-parallel GPUs)\n\n", (long long)m->n);
  else
    ddx_sb_puts(&b, "unknown, 1 assumed: set `ddx.world.size`)\n\n");
  ddx_sb_puts(&b, "| term | formula | bytes | where |\n|---|---|---|---|\n");
  for (size_t i = 0; i < m->nterms; i++) {
    char tb[32];
    ddx_dscheck_format_bytes(m->terms[i].bytes, tb, sizeof tb);
    ddx_sb_printf(&b, "| %s | %s | %s | %s |\n", m->terms[i].what, m->terms[i].formula, tb,
                  m->terms[i].cpu ? "host (offloaded)" : "GPU");
  }
  if (m->cpu_bytes > 0) {
    ddx_dscheck_format_bytes(m->cpu_bytes, cb, sizeof cb);
    ddx_sb_printf(&b, "\nHost memory for the offloaded states: ~%s per GPU process.\n", cb);
  }
  char bb[32], lb[32];
  ddx_dscheck_format_bytes(m->bucket_bytes, bb, sizeof bb);
  ddx_sb_printf(&b,
                "\nNot counted: activations (they grow with the micro batch and sequence length), "
                "communication buckets (reduce_bucket_size: %s each)",
                bb);
  if (m->stage == 3) {
    ddx_dscheck_format_bytes(m->live_bytes, lb, sizeof lb);
    ddx_sb_printf(&b, ", gathered parameters (up to %s, stage3_max_live_parameters)", lb);
  }
  ddx_sb_puts(&b, ", the CUDA context and fragmentation. Formulas from the ZeRO paper; real use "
                  "is often higher.\n");
  if (f && (f->params_from || f->world_from || f->gpu_from)) {
    ddx_sb_puts(&b, "\n_Sources:_");
    if (f->params_from) ddx_sb_printf(&b, " P from %s;", f->params_from);
    if (f->world_from && m->n_known) ddx_sb_printf(&b, " N from %s;", f->world_from);
    if (f->gpu_from && f->gpu_total_bytes > 0) {
      char tb[32];
      ddx_dscheck_format_bytes(f->gpu_total_bytes, tb, sizeof tb);
      ddx_sb_printf(&b, " GPU total %s from %s;", tb, f->gpu_from);
    }
    if (b.len && b.s[b.len - 1] == ';') b.s[--b.len] = 0;
    ddx_sb_puts(&b, "\n");
  }
  return ddx_sb_take(&b);
}

/* ------------------------------------------------------------------- run */

static int ds_cmp_finding(const void *a, const void *b) {
  const ddx_dscheck_finding_t *x = a, *y = b;
  if (x->start != y->start) return x->start < y->start ? -1 : 1;
  return x->severity - y->severity;
}

int ddx_dscheck_run(const ddx_dscheck_t *s, const char *text, size_t len,
                    const ddx_dscheck_facts_t *facts, ddx_dscheck_result_t *out, ddx_error_t *err) {
  memset(out, 0, sizeof *out);
  ddx_arena_t arena;
  ddx_arena_init(&arena);
  ddx_jp_node_t *root = NULL;
  int rc = ddx_jp_parse(text, len, DDX_JP_LENIENT, &arena, &root, &out->error_offset, err);
  if (rc) {
    ddx_arena_free(&arena);
    return rc;
  }
  out->is_deepspeed = ddx_dsconfig_text_is_deepspeed(text, len);
  const dk_node_t *z = dk_member(root, "zero_optimization");
  if (z) {
    out->has_zero = true;
    out->zero_start = z->key_start;
    out->zero_end = z->key_end;
  }
  ds_ctx_t c = {.s = s, .text = text, .len = len, .out = out, .root = root};
  ds_check_object(&c, root, s->root, "");
  ds_check_semantics(&c, facts);
  ds_memory(root, facts, &out->memory);
  const ddx_dscheck_memory_t *m = &out->memory;
  if (m->valid && facts && facts->gpu_total_bytes > 0) {
    /* With N unknown only the part that does not shrink with N is sure. */
    double need = 0;
    for (size_t i = 0; i < m->nterms; i++)
      if (!m->terms[i].cpu && (m->n_known || !strstr(m->terms[i].formula, "/N")))
        need += m->terms[i].bytes;
    if (need > facts->gpu_total_bytes) {
      char nb[32], tb[32];
      ddx_dscheck_format_bytes(need, nb, sizeof nb);
      ddx_dscheck_format_bytes(facts->gpu_total_bytes, tb, sizeof tb);
      ddx_sb_t t;
      ddx_sb_init(&t);
      for (size_t i = 0; i < m->nterms; i++)
        if (!m->terms[i].cpu)
          ddx_sb_printf(&t, "%s%s %s", t.len ? " + " : "", m->terms[i].formula, m->terms[i].what);
      size_t a = z ? z->key_start : root->start, e = z ? z->key_end : root->start + 1;
      char src[320] = "";
      if (facts->gpu_from) snprintf(src, sizeof src, " (%s)", facts->gpu_from);
      char tnote[48] = "";
      if (facts->trainable > 0 && facts->trainable < m->params)
        snprintf(tnote, sizeof tnote, ", T = %.3g trainable", facts->trainable);
      ds_add(&c, a, e, DDX_DSCHECK_WARNING, "ds-config.memory", "zero_optimization", NULL,
             "model states alone need %s%s per GPU (ZeRO stage %d, P = %.3g%s, N = %lld%s: %s) but "
             "the GPU has %s in total%s: this config cannot fit; use a higher ZeRO stage or "
             "offload_optimizer / offload_param",
             m->n_known ? "~" : "at least ", nb, m->stage < 0 ? 0 : m->stage, m->params, tnote,
             (long long)m->n, m->n_known ? "" : " unknown", t.s ? t.s : "", tb, src);
      ddx_sb_free(&t);
    }
  }
  ddx_arena_free(&arena);
  if (c.oom) return ddx_error_set(err, DDX_ENOMEM, "out of memory");
  if (out->n > 1) qsort(out->findings, out->n, sizeof *out->findings, ds_cmp_finding);
  return 0;
}

void ddx_dscheck_result_free(ddx_dscheck_result_t *r) {
  if (!r) return;
  for (size_t i = 0; i < r->n; i++) {
    free(r->findings[i].message);
    free(r->findings[i].path);
    free(r->findings[i].patch_json);
  }
  free(r->findings);
  memset(r, 0, sizeof *r);
}

/* ---------------------------------------------------------------- describe */

static json_t *ds_lookup(const ddx_dscheck_t *s, const char *path, bool *strict_parent) {
  json_t *sch = s->root;
  const char *p = path;
  *strict_parent = false;
  while (sch && *p) {
    const char *dot = strchr(p, '.');
    size_t n = dot ? (size_t)(dot - p) : strlen(p);
    char key[256];
    if (n >= sizeof key) return NULL;
    memcpy(key, p, n);
    key[n] = 0;
    *strict_parent = ds_strict(sch);
    sch = ds_prop(s, sch, key);
    p = dot ? dot + 1 : p + n;
  }
  return sch;
}

char *ddx_dscheck_describe(const ddx_dscheck_t *s, const char *path) {
  if (!s || !path || !*path) return NULL;
  bool strict_parent = false;
  json_t *sch = ds_lookup(s, path, &strict_parent);
  char alt[DK_MAX_PATH];
  if (!sch) { /* stage3_* written at the top level of an old config */
    const char *last = strrchr(path, '.');
    last = last ? last + 1 : path;
    snprintf(alt, sizeof alt, "zero_optimization.%s", last);
    if (!strncmp(last, "stage3_", 7)) sch = ds_lookup(s, alt, &strict_parent);
  }
  if (!sch) return NULL;
  ddx_sb_t b;
  ddx_sb_init(&b);
  ddx_sb_printf(&b, "**`%s`** (DeepSpeed)\n\n", path);
  const char *dep = json_string_value(json_object_get(sch, "x-ddx-deprecated"));
  if (dep) ddx_sb_printf(&b, "**Deprecated:** %s\n\n", dep);
  const char *desc = json_string_value(json_object_get(sch, "description"));
  if (desc) ddx_sb_printf(&b, "%s\n\n", desc);
  ddx_sb_t e;
  ddx_sb_init(&e);
  ds_expect(s, sch, &e, 0);
  if (e.len) ddx_sb_printf(&b, "Type: %s", e.s);
  ddx_sb_free(&e);
  json_t *d = json_object_get(sch, "default");
  if (d) {
    char *v = json_dumps(d, JSON_ENCODE_ANY);
    ddx_sb_printf(&b, " · Default: `%s`", v ? v : "?");
    free(v);
  }
  if (ds_accepts_auto(s, sch))
    ddx_sb_puts(&b, " · `\"auto\"`: filled in by the HF Trainer / Accelerate");
  else if (strict_parent)
    ddx_sb_puts(&b, " · `\"auto\"` here is dropped by DeepSpeed (the default is used)");
  if (json_object_get(sch, "properties")) {
    if (ds_strict(sch))
      ddx_sb_puts(&b, " · unknown keys inside are an error");
    else if (ds_flag(sch, "x-ddx-ignored"))
      ddx_sb_puts(&b, " · unknown keys inside are silently ignored");
  }
  ddx_sb_puts(&b, "\n");
  return ddx_sb_take(&b);
}

/* ------------------------------------------------------- model parameters */

static double ds_jnum(json_t *o, const char *const *keys) {
  for (; *keys; keys++) {
    json_t *v = json_object_get(o, *keys);
    if (json_is_number(v) && json_number_value(v) > 0) return json_number_value(v);
  }
  return 0;
}

bool ddx_dscheck_model_params(const char *json, size_t len, double *params, char *how,
                              size_t howcap) {
  json_t *root = json_loadb(json, len, 0, NULL);
  if (!json_is_object(root)) {
    json_decref(root);
    return false;
  }
  bool ok = false;
  static const char *const count_keys[] = {"num_parameters", "n_params", "num_params", NULL};
  double p = ds_jnum(root, count_keys);
  if (p > 0) {
    *params = p;
    if (how) snprintf(how, howcap, "num_parameters");
    json_decref(root);
    return true;
  }
  json_t *cfg = root;
  for (int pass = 0; pass < 2 && !ok; pass++) {
    static const char *const hk[] = {"hidden_size", "n_embd", "d_model", "dim", NULL};
    static const char *const lk[] = {"num_hidden_layers", "n_layer", "num_layers", "n_layers",
                                     NULL};
    static const char *const vk[] = {"vocab_size", "padded_vocab_size", NULL};
    static const char *const ik[] = {"intermediate_size", "n_inner", "ffn_dim", "ffn_hidden_size",
                                     NULL};
    static const char *const ak[] = {"num_attention_heads", "n_head", "num_heads", NULL};
    static const char *const kvk[] = {"num_key_value_heads", "num_kv_heads", NULL};
    double h = ds_jnum(cfg, hk), l = ds_jnum(cfg, lk), v = ds_jnum(cfg, vk);
    if (h > 0 && l > 0 && v > 0) {
      double inter = ds_jnum(cfg, ik), heads = ds_jnum(cfg, ak), kv = ds_jnum(cfg, kvk);
      if (!(inter > 0)) inter = 4 * h;
      double kvdim = heads > 0 && kv > 0 ? h * kv / heads : h;
      const char *act = json_string_value(json_object_get(cfg, "hidden_act"));
      if (!act) act = json_string_value(json_object_get(cfg, "activation_function"));
      bool gated = act && (!strcmp(act, "silu") || !strcmp(act, "swiglu") ||
                           !strncmp(act, "gelu_pytorch_tanh", 17) || !strcmp(act, "geglu"));
      double attn = 2 * h * h + 2 * h * kvdim;
      double mlp = (gated ? 3 : 2) * h * inter;
      json_t *tie = json_object_get(cfg, "tie_word_embeddings");
      double emb = v * h * (json_is_false(tie) ? 2 : 1);
      *params = l * (attn + mlp) + emb;
      if (how)
        snprintf(how, howcap, "derived from hidden_size %g, %g layers, vocab %g, intermediate %g%s",
                 h, l, v, inter, gated ? " (gated MLP)" : "");
      ok = true;
    }
    cfg = json_object_get(root, "text_config");
    if (!json_is_object(cfg)) break;
  }
  json_decref(root);
  return ok;
}
