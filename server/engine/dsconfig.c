/* dsconfig.c - ds_config.json: reading it strictly with byte positions
 * (ddx/jsonpos.h), style detection, and the quick-fix planner (see
 * ddx/dsconfig.h).
 *
 * Why positions: jansson gives the values but not where they are, and an
 * edit must touch only the bytes it changes so that the user's formatting,
 * key order, line endings and final newline survive. jansson is used for
 * the patch JSON (it comes from our rule files) and nothing else.
 *
 * The text is read in the strict mode, which refuses, with a line and
 * column, everything that is not RFC 8259 JSON: DeepSpeed reads the file with
 * hjson, which accepts comments and more, but an automatic edit of such a
 * file could not promise to keep them.
 *
 * Planning works on a working copy: each op is computed against a fresh
 * parse of the text left by the ops before it (so later ops see earlier
 * ones), and its one edit is folded into the list of edits against the
 * original; at the end every edit is trimmed to the bytes that change.
 *
 * Paths are dot-separated keys: a key that itself contains a '.' cannot be
 * addressed (no DeepSpeed key does), and paths never go into arrays. */
#include "ddx/dsconfig.h"

#include "ddx/jsonpos.h"

#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define DSC_MAX_PATH 64
#define DSC_AUTO_OWNED "the HF Trainer sets it; change the matching TrainingArguments flag instead"

typedef ddx_jp_node_t dsc_node_t; /* the reader's node, with its bytes (ddx/jsonpos.h) */

/* How the file is written, so that inserted text looks like its neighbours. */
typedef struct dsc_style {
  const char *eol;  /* "\n" or "\r\n" */
  bool multiline;   /* the top-level object spans lines */
  char unit[16];    /* one indent level: "  ", "    ", "\t"; "" on one line */
  char sep[9];      /* between a key and its value: ": " or ":" */
  char comma_ws[9]; /* after a comma between inline members: " " or "" */
} dsc_style_t;

struct ddx_dsconfig {
  char *text; /* our copy, not NUL-terminated */
  size_t len;
  ddx_arena_t arena; /* the nodes and decoded strings */
  dsc_node_t *root;
  dsc_style_t style;
};

static int dsc_nomem(ddx_error_t *err) {
  return ddx_error_set(err, DDX_ENOMEM, "out of memory");
}

static bool dsc_is_digit(char c) {
  return c >= '0' && c <= '9';
}

/* ---- layout and style ---- */

static size_t dsc_line_start(const char *s, size_t pos) {
  while (pos > 0 && s[pos - 1] != '\n')
    pos--;
  return pos;
}

/* Where a member (its key) or an array element starts. */
static size_t dsc_item_start(const dsc_node_t *n) {
  return n->parent && n->parent->kind == DDX_JP_OBJECT ? n->key_start : n->start;
}

/* True when n starts a line of its own (only whitespace before it since the
 * '{', '[' or ','); *line_start then gets the start of that line. */
static bool dsc_own_line(const char *s, const dsc_node_t *n, size_t *line_start) {
  for (size_t i = dsc_item_start(n); i > n->lead; i--)
    if (s[i - 1] == '\n') {
      if (line_start) *line_start = i;
      return true;
    }
  return false;
}

/* Copies s[a, b) into dst when it is short, on one line and made of blanks
 * (plus the ':' of a key separator when colon is set). */
static bool dsc_copy_blank(char *dst, size_t cap, const char *s, size_t a, size_t b, bool colon) {
  if (b < a || b - a >= cap) return false;
  for (size_t i = a; i < b; i++)
    if (s[i] != ' ' && s[i] != '\t' && !(colon && s[i] == ':')) return false;
  memcpy(dst, s + a, b - a);
  dst[b - a] = 0;
  return true;
}

/* The blanks after the first comma that is followed by an item on the same
 * line, depth first (the first inline pair in the file shows its style). */
static bool dsc_find_comma_ws(const char *s, const dsc_node_t *n, char *dst, size_t cap) {
  for (const dsc_node_t *m = n->first; m; m = m->next) {
    if (m->next && !dsc_own_line(s, m->next, NULL) &&
        dsc_copy_blank(dst, cap, s, m->comma + 1, dsc_item_start(m->next), false))
      return true;
    if (m->first && dsc_find_comma_ws(s, m, dst, cap)) return true;
  }
  return false;
}

/* The indentation of the line that holds pos: [*a, *b). */
static void dsc_line_indent(const char *s, size_t pos, size_t *a, size_t *b) {
  *a = *b = dsc_line_start(s, pos);
  while (*b < pos && (s[*b] == ' ' || s[*b] == '\t'))
    *b += 1;
}

/* One indent level seen in a nested block: its members' indentation minus
 * that of the line holding its '{'. For files whose top level is at column 0. */
static bool dsc_find_unit(const char *s, const dsc_node_t *n, char *dst, size_t cap) {
  for (const dsc_node_t *m = n->first; m; m = m->next) {
    size_t ls, a, b;
    if (m->kind == DDX_JP_OBJECT && m->first && dsc_own_line(s, m->first, &ls)) {
      dsc_line_indent(s, m->start, &a, &b);
      size_t outer = b - a, inner = m->first->key_start - ls;
      if (inner > outer && !memcmp(s + a, s + ls, outer) &&
          dsc_copy_blank(dst, cap, s, ls + outer, m->first->key_start, false))
        return true;
    }
    if (m->first && dsc_find_unit(s, m, dst, cap)) return true;
  }
  return false;
}

static void dsc_detect_style(ddx_dsconfig_t *c) {
  dsc_style_t *st = &c->style;
  const char *s = c->text;
  const dsc_node_t *root = c->root, *first = root->first;
  const char *nl = memchr(s, '\n', c->len);
  st->eol = nl && nl > s && nl[-1] == '\r' ? "\r\n" : "\n";
  st->multiline = memchr(s + root->start, '\n', root->end - root->start) != NULL;
  strcpy(st->sep, ": ");
  if (first) dsc_copy_blank(st->sep, sizeof st->sep, s, first->key_end, first->start, true);
  if (!dsc_find_comma_ws(s, root, st->comma_ws, sizeof st->comma_ws))
    strcpy(st->comma_ws, strchr(st->sep, ' ') ? " " : "");
  size_t ls;
  st->unit[0] = 0;
  if (first && dsc_own_line(s, first, &ls) && first->key_start > ls) {
    /* the top level sits at one unit; a tab anywhere in it means tabs */
    if (memchr(s + ls, '\t', first->key_start - ls))
      strcpy(st->unit, "\t");
    else
      dsc_copy_blank(st->unit, sizeof st->unit, s, ls, first->key_start, false);
  } else if (!dsc_find_unit(s, root, st->unit, sizeof st->unit) && st->multiline) {
    strcpy(st->unit, "  ");
  }
}

/* ---- public reader API ---- */

int ddx_dsconfig_parse(ddx_dsconfig_t **out, const char *text, size_t len, ddx_error_t *err) {
  *out = NULL;
  if (!text && len) return ddx_error_set(err, DDX_EINVAL, "no text");
  ddx_dsconfig_t *c = calloc(1, sizeof *c);
  if (!c || !(c->text = malloc(len ? len : 1))) {
    free(c);
    return dsc_nomem(err);
  }
  if (len) memcpy(c->text, text, len);
  c->len = len;
  ddx_arena_init(&c->arena);
  int rc = ddx_jp_parse(c->text, len, DDX_JP_STRICT, &c->arena, &c->root, NULL, err);
  if (rc) {
    ddx_dsconfig_free(c);
    return rc;
  }
  dsc_detect_style(c);
  *out = c;
  return 0;
}

void ddx_dsconfig_free(ddx_dsconfig_t *c) {
  if (!c) return;
  ddx_arena_free(&c->arena);
  free(c->text);
  free(c);
}

typedef struct dsc_path {
  size_t n;
  const char *part[DSC_MAX_PATH];
  size_t len[DSC_MAX_PATH];
} dsc_path_t;

static bool dsc_path_split(const char *path, dsc_path_t *p) {
  p->n = 0;
  for (const char *s = path;;) {
    const char *dot = strchr(s, '.');
    size_t n = dot ? (size_t)(dot - s) : strlen(s);
    if (!n || p->n == DSC_MAX_PATH) return false;
    p->part[p->n] = s;
    p->len[p->n++] = n;
    if (!dot) return true;
    s = dot + 1;
  }
}

static const dsc_node_t *dsc_member(const dsc_node_t *obj, const char *key, size_t n) {
  for (const dsc_node_t *m = obj->first; m; m = m->next)
    if (m->key_len == n && !memcmp(m->key, key, n)) return m;
  return NULL;
}

/* Follows p from the root. Returns the value or NULL; *found gets how many
 * leading parts exist and *at the deepest node reached. */
static const dsc_node_t *dsc_walk(const dsc_node_t *root, const dsc_path_t *p, size_t *found,
                                  const dsc_node_t **at) {
  const dsc_node_t *cur = root, *m;
  size_t i = 0;
  while (i < p->n && cur->kind == DDX_JP_OBJECT && (m = dsc_member(cur, p->part[i], p->len[i])))
    cur = m, i++;
  *found = i;
  *at = cur;
  return i == p->n ? cur : NULL;
}

static const dsc_node_t *dsc_lookup(const ddx_dsconfig_t *c, const char *path) {
  dsc_path_t p;
  size_t found;
  const dsc_node_t *at;
  return dsc_path_split(path, &p) ? dsc_walk(c->root, &p, &found, &at) : NULL;
}

/* Compact JSON of a node: strings and numbers as written (valid JSON). */
static void dsc_put_node(ddx_sb_t *b, const char *s, const dsc_node_t *n) {
  if (n->kind != DDX_JP_OBJECT && n->kind != DDX_JP_ARRAY) {
    ddx_sb_putn(b, s + n->start, n->end - n->start);
    return;
  }
  ddx_sb_puts(b, n->kind == DDX_JP_OBJECT ? "{" : "[");
  for (const dsc_node_t *m = n->first; m; m = m->next) {
    if (m != n->first) ddx_sb_puts(b, ",");
    if (n->kind == DDX_JP_OBJECT) {
      ddx_sb_putn(b, s + m->key_start, m->key_end - m->key_start);
      ddx_sb_puts(b, ":");
    }
    dsc_put_node(b, s, m);
  }
  ddx_sb_puts(b, n->kind == DDX_JP_OBJECT ? "}" : "]");
}

bool ddx_dsconfig_get(const ddx_dsconfig_t *c, const char *path, char **json) {
  if (json) *json = NULL;
  const dsc_node_t *n = c && path ? dsc_lookup(c, path) : NULL;
  if (!n) return false;
  if (json) {
    ddx_sb_t b;
    ddx_sb_init(&b);
    dsc_put_node(&b, c->text, n);
    *json = ddx_sb_take(&b);
  }
  return true;
}

static bool dsc_is_str(const dsc_node_t *n, const char *s) {
  return n && n->kind == DDX_JP_STRING && n->str_len == strlen(s) && !memcmp(n->str, s, n->str_len);
}

/* ---- is it a DeepSpeed config? ----
 *
 * Decided from the top-level keys in one pass over the text, without
 * building a tree (a 1 MB vocab.json is one object with 50,000 keys), and
 * tolerantly: hjson comments are skipped, and a text that stops parsing
 * (being typed) is judged by the keys before the break. A name only
 * DeepSpeed uses, with the value DeepSpeed expects, is enough; names other
 * tools share (train_batch_size is in the HF Trainer's trainer_state.json,
 * gradient_accumulation_steps and boolean fp16/bf16 in its
 * TrainingArguments) count when two come together, or when "auto" (the HF
 * integration's placeholder). More top-level keys than DeepSpeed has is
 * data, not a config. */

#define DSC_DS_MAX_KEYS 256 /* DeepSpeed reads 58 top-level keys */

enum {
  DSC_K_OBJ = 1,
  DSC_K_BOOL = 2,
  DSC_K_NUM = 4,
  DSC_K_AUTO = 8, /* the string "auto" */
  DSC_K_STR = 16, /* any other string */
  DSC_K_ARR = 32
};

typedef ddx_jp_scan_t dsc_scan_t;

static bool dsc_scan_is(const dsc_scan_t *t, size_t a, size_t b, const char *w) {
  return b - a == strlen(w) && !memcmp(t->s + a, w, b - a);
}

/* The kind of the value at t->pos (DSC_K_*, 0 for null); t is not moved. */
static unsigned dsc_scan_kind(const dsc_scan_t *t) {
  dsc_scan_t u = *t;
  char c = u.s[u.pos];
  size_t a, b;
  if (c == '"')
    return !ddx_jp_scan_string(&u, &a, &b) ? 0
           : dsc_scan_is(&u, a, b, "auto") ? DSC_K_AUTO
                                           : DSC_K_STR;
  return c == '{'                      ? DSC_K_OBJ
         : c == '['                    ? DSC_K_ARR
         : c == 't' || c == 'f'        ? DSC_K_BOOL
         : c == '-' || dsc_is_digit(c) ? DSC_K_NUM
                                       : 0;
}

static bool dsc_name_in(const char *s, size_t n, const char *const *names) {
  for (; *names; names++)
    if (n == strlen(*names) && !strncasecmp(s, *names, n)) return true;
  return false;
}

/* An optimizer or scheduler block at t->pos (its '{'): DeepSpeed's shape,
 * {"type": one of names, "params": {...}} (params only when need_params).
 * t->pos after the block; false when it is not that or the text breaks. */
static bool dsc_scan_block(dsc_scan_t *t, const char *const *names, bool need_params) {
  bool type_ok = false, params = false;
  t->pos++;
  for (;;) {
    size_t ka, kb, va, vb;
    if (!ddx_jp_scan_ws(t)) return false;
    if (t->s[t->pos] == '}') {
      t->pos++;
      return type_ok && (params || !need_params);
    }
    if (t->s[t->pos] != '"' || !ddx_jp_scan_string(t, &ka, &kb) || !ddx_jp_scan_ws(t) ||
        t->s[t->pos] != ':')
      return false;
    t->pos++;
    if (!ddx_jp_scan_ws(t)) return false;
    if (dsc_scan_is(t, ka, kb, "type") && t->s[t->pos] == '"') {
      if (!ddx_jp_scan_string(t, &va, &vb)) return false;
      type_ok = dsc_name_in(t->s + va, vb - va, names);
    } else {
      params |= dsc_scan_is(t, ka, kb, "params") && t->s[t->pos] == '{';
      if (!ddx_jp_scan_skip(t)) return false;
    }
    if (!ddx_jp_scan_ws(t)) return false;
    if (t->s[t->pos] == ',') t->pos++;
  }
}

bool ddx_dsconfig_text_is_deepspeed(const char *text, size_t len) {
  /* A name only DeepSpeed uses, with the kinds of value it takes. */
  static const struct {
    const char *key;
    unsigned strong, weak; /* kinds that decide alone / that count as one of two */
  } keys[] = {
      {"zero_optimization", DSC_K_OBJ | DSC_K_BOOL, 0},
      {"train_micro_batch_size_per_gpu", DSC_K_NUM | DSC_K_AUTO, 0},
      {"train_batch_size", DSC_K_AUTO, DSC_K_NUM},
      {"gradient_accumulation_steps", DSC_K_AUTO, DSC_K_NUM},
      {"gradient_clipping", DSC_K_AUTO, DSC_K_NUM},
      {"fp16", DSC_K_OBJ, 0},
      {"bf16", DSC_K_OBJ, 0},
      {"bfloat16", DSC_K_OBJ, 0},
      {"zero_allow_untested_optimizer", DSC_K_BOOL, 0},
      {"zero_force_ds_cpu_optimizer", DSC_K_BOOL, 0},
      {"steps_per_print", DSC_K_NUM, 0},
      {"wall_clock_breakdown", DSC_K_BOOL, 0},
      {"flops_profiler", DSC_K_OBJ, 0},
      {"comms_logger", DSC_K_OBJ, 0},
  };
  /* DeepSpeed's own names (compared case-insensitively, as it does). A bare
   * optimizer "adam" is common elsewhere (AllenNLP...), so it also needs
   * DeepSpeed's {"type", "params"} shape. */
  static const char *const optimizers[] = {"adam",   "adamw",      "adagrad",     "lamb",
                                           "lion",   "onebitadam", "zerooneadam", "onebitlamb",
                                           "muadam", "muadamw",    "musgd",       NULL};
  static const char *const schedulers[] = {"WarmupLR", "WarmupDecayLR", "WarmupCosineLR",
                                           "OneCycle", "LRRangeTest",   NULL};
  if (!text) return false;
  dsc_scan_t t = {text, len, 0};
  if (len >= 3 && !memcmp(text, "\xEF\xBB\xBF", 3)) t.pos = 3;
  if (!ddx_jp_scan_ws(&t) || text[t.pos] != '{') return false;
  t.pos++;
  size_t nkeys = 0;
  unsigned weak = 0; /* a bit per key of keys[] */
  bool strong = false;
  for (;;) {
    size_t ka, kb;
    if (!ddx_jp_scan_ws(&t) || text[t.pos] != '"' || !ddx_jp_scan_string(&t, &ka, &kb)) break;
    if (++nkeys > DSC_DS_MAX_KEYS) return false;
    if (!ddx_jp_scan_ws(&t) || text[t.pos] != ':') break;
    t.pos++;
    if (!ddx_jp_scan_ws(&t)) break;
    unsigned kind = dsc_scan_kind(&t);
    bool opt = dsc_scan_is(&t, ka, kb, "optimizer"), sch = dsc_scan_is(&t, ka, kb, "scheduler");
    dsc_scan_t block = t;
    if (kind == DSC_K_OBJ && (opt || sch) &&
        dsc_scan_block(&block, opt ? optimizers : schedulers, opt))
      strong = true;
    for (size_t i = 0; i < sizeof keys / sizeof *keys; i++) {
      if (!dsc_scan_is(&t, ka, kb, keys[i].key)) continue;
      strong |= (keys[i].strong & kind) != 0;
      if (keys[i].weak & kind) weak |= 1u << i;
    }
    if (!ddx_jp_scan_skip(&t) || !ddx_jp_scan_ws(&t) || text[t.pos] != ',') break;
    t.pos++;
  }
  return strong || (weak & (weak - 1)) != 0; /* two weak ones */
}

bool ddx_dsconfig_is_deepspeed(const ddx_dsconfig_t *c) {
  return c && ddx_dsconfig_text_is_deepspeed(c->text, c->len);
}

/* ---- rendering new values in the file's style ---- */

static void dsc_put_string(ddx_sb_t *b, const char *s, size_t n) {
  ddx_sb_puts(b, "\"");
  size_t run = 0; /* bytes copied as they are, flushed before each escape */
  for (size_t i = 0; i < n; i++) {
    unsigned char c = (unsigned char)s[i];
    const char *esc = c == '"'    ? "\\\""
                      : c == '\\' ? "\\\\"
                      : c == '\n' ? "\\n"
                      : c == '\r' ? "\\r"
                      : c == '\t' ? "\\t"
                                  : NULL;
    if (!esc && c >= 0x20) continue;
    ddx_sb_putn(b, s + run, i - run);
    run = i + 1;
    if (esc)
      ddx_sb_puts(b, esc);
    else
      ddx_sb_printf(b, "\\u%04x", c);
  }
  ddx_sb_putn(b, s + run, n - run);
  ddx_sb_puts(b, "\"");
}

/* Integral values print as integers (1e8 -> 100000000), others in the
 * shortest form that reads back to the same double. */
static void dsc_put_number(ddx_sb_t *b, double v) {
  if (v == floor(v) && fabs(v) < 1e17) {
    ddx_sb_printf(b, "%.0f", v == 0 ? 0.0 : v);
    return;
  }
  char buf[40];
  for (int prec = 1; prec <= 17; prec++) {
    snprintf(buf, sizeof buf, "%.*g", prec, v);
    if (strtod(buf, NULL) == v) break;
  }
  ddx_sb_puts(b, buf);
}

/* Renders v. Objects go one member a line (indented one unit more than
 * indent, closing at indent) when ml, else inline like arrays. */
static void dsc_render(ddx_sb_t *b, json_t *v, const dsc_style_t *st, bool ml, const char *comma_ws,
                       const char *indent) {
  switch (json_typeof(v)) {
  case JSON_OBJECT: {
    if (!json_object_size(v)) {
      ddx_sb_puts(b, "{}");
      break;
    }
    ddx_sb_t inner;
    ddx_sb_init(&inner);
    ddx_sb_puts(&inner, indent);
    ddx_sb_puts(&inner, st->unit);
    const char *key;
    json_t *x;
    bool first = true;
    ddx_sb_puts(b, "{");
    json_object_foreach(v, key, x) {
      if (!first) ddx_sb_puts(b, ",");
      if (ml)
        ddx_sb_puts(b, st->eol), ddx_sb_puts(b, inner.s);
      else if (!first)
        ddx_sb_puts(b, comma_ws);
      dsc_put_string(b, key, strlen(key));
      ddx_sb_puts(b, st->sep);
      dsc_render(b, x, st, ml, comma_ws, inner.s);
      first = false;
    }
    if (ml) ddx_sb_puts(b, st->eol), ddx_sb_puts(b, indent);
    ddx_sb_puts(b, "}");
    ddx_sb_free(&inner);
    break;
  }
  case JSON_ARRAY:
    ddx_sb_puts(b, "[");
    for (size_t i = 0; i < json_array_size(v); i++) {
      if (i) ddx_sb_puts(b, ","), ddx_sb_puts(b, comma_ws);
      dsc_render(b, json_array_get(v, i), st, false, comma_ws, indent);
    }
    ddx_sb_puts(b, "]");
    break;
  case JSON_STRING:
    dsc_put_string(b, json_string_value(v), json_string_length(v));
    break;
  case JSON_INTEGER:
    ddx_sb_printf(b, "%" JSON_INTEGER_FORMAT, json_integer_value(v));
    break;
  case JSON_REAL:
    dsc_put_number(b, json_real_value(v));
    break;
  default:
    ddx_sb_puts(b, json_is_true(v) ? "true" : json_is_false(v) ? "false" : "null");
  }
}

/* Semantic equality: numbers by value (1 == 1.0), objects ignoring order. */
static bool dsc_equal(const dsc_node_t *n, json_t *v) {
  switch (n->kind) {
  case DDX_JP_OBJECT:
    if (!json_is_object(v) || json_object_size(v) != n->count) return false;
    for (const dsc_node_t *m = n->first; m; m = m->next) {
      json_t *x = json_object_getn(v, m->key, m->key_len);
      if (!x || !dsc_equal(m, x)) return false;
    }
    return true;
  case DDX_JP_ARRAY: {
    if (!json_is_array(v) || json_array_size(v) != n->count) return false;
    size_t i = 0;
    for (const dsc_node_t *m = n->first; m; m = m->next)
      if (!dsc_equal(m, json_array_get(v, i++))) return false;
    return true;
  }
  case DDX_JP_STRING:
    return json_is_string(v) && json_string_length(v) == n->str_len &&
           !memcmp(json_string_value(v), n->str, n->str_len);
  case DDX_JP_NUMBER:
    return json_is_number(v) && json_number_value(v) == n->num;
  case DDX_JP_TRUE:
    return json_is_true(v);
  case DDX_JP_FALSE:
    return json_is_false(v);
  default:
    return json_is_null(v);
  }
}

/* A short description of a value for messages: its text, cut at 40 bytes. */
static void dsc_describe(const ddx_dsconfig_t *c, const dsc_node_t *n, char *buf, size_t cap) {
  if (!n)
    snprintf(buf, cap, "absent");
  else if (n->kind == DDX_JP_OBJECT)
    snprintf(buf, cap, "an object");
  else if (n->kind == DDX_JP_ARRAY)
    snprintf(buf, cap, "an array");
  else {
    size_t len = n->end - n->start, shown = len > 40 ? 40 : len;
    while (shown < len && shown && ((unsigned char)c->text[n->start + shown] & 0xC0) == 0x80)
      shown--;
    snprintf(buf, cap, "%.*s%s", (int)shown, c->text + n->start, shown < len ? "..." : "");
  }
}

/* ---- edits ---- */

char *ddx_text_apply(const char *text, size_t len, const ddx_text_edit_t *edits, size_t n,
                     size_t *out_len) {
  ddx_sb_t b;
  ddx_sb_init(&b);
  size_t pos = 0;
  for (size_t i = 0; i < n; i++) {
    const ddx_text_edit_t *e = &edits[i];
    if (e->start < pos || e->end < e->start || e->end > len) { /* not sorted and disjoint */
      ddx_sb_free(&b);
      return NULL;
    }
    ddx_sb_putn(&b, text + pos, e->start - pos);
    ddx_sb_puts(&b, e->text ? e->text : "");
    pos = e->end;
  }
  ddx_sb_putn(&b, text + pos, len - pos);
  if (out_len) *out_len = b.len;
  return ddx_sb_take(&b);
}

void ddx_patch_plan_free(ddx_patch_plan_t *plan) {
  if (!plan) return;
  for (size_t i = 0; i < plan->nedits; i++)
    free(plan->edits[i].text);
  free(plan->edits);
  free(plan->title);
  memset(plan, 0, sizeof *plan);
}

/* Folds an edit [ws, we) -> t of the working text cur (the original with
 * edits applied) into edits, which stay sorted, disjoint and against the
 * original: the edits it overlaps or touches merge with it into one. */
static int dsc_compose(ddx_vec_t *edits, const char *cur, size_t ws, size_t we, const char *t) {
  ddx_text_edit_t *e = edits->data;
  size_t n = edits->len, a = 0;
  long long delta = 0; /* working offset minus original offset, before edit a */
  while (a < n && (long long)(e[a].start + strlen(e[a].text)) + delta < (long long)ws) {
    delta += (long long)strlen(e[a].text) - (long long)(e[a].end - e[a].start);
    a++;
  }
  size_t b = a, w0 = ws, w1 = we, o0 = (size_t)((long long)ws - delta), o1;
  long long d = delta;
  if (b < n && (long long)e[b].start + d <= (long long)we) {
    if ((long long)e[a].start + delta < (long long)ws)
      w0 = (size_t)((long long)e[a].start + delta), o0 = e[a].start;
    size_t wend = 0;
    for (; b < n && (long long)e[b].start + d <= (long long)we; b++) {
      size_t tl = strlen(e[b].text);
      wend = (size_t)((long long)e[b].start + d) + tl;
      d += (long long)tl - (long long)(e[b].end - e[b].start);
    }
    if (wend > we)
      w1 = wend, o1 = e[b - 1].end;
    else
      o1 = (size_t)((long long)we - d);
  } else {
    o1 = (size_t)((long long)we - delta);
  }
  ddx_sb_t s;
  ddx_sb_init(&s);
  ddx_sb_putn(&s, cur + w0, ws - w0);
  ddx_sb_puts(&s, t);
  ddx_sb_putn(&s, cur + we, w1 - we);
  char *text = ddx_sb_take(&s);
  if (!text || (b == a && !ddx_vec_push(edits))) {
    free(text);
    return -1;
  }
  e = edits->data;
  for (size_t i = a; i < b; i++)
    free(e[i].text);
  if (b == a)
    memmove(e + a + 1, e + a, (edits->len - 1 - a) * sizeof *e);
  else
    memmove(e + a + 1, e + b, (n - b) * sizeof *e), edits->len -= b - a - 1;
  e[a] = (ddx_text_edit_t){o0, o1, text};
  return 0;
}

static bool dsc_is_cont(const char *s, size_t len, size_t i) {
  return i < len && ((unsigned char)s[i] & 0xC0) == 0x80;
}

/* Shrinks an edit to the bytes that change, on character boundaries (the
 * editor counts UTF-16 units, so an edit must not split a character). */
static void dsc_trim(const char *orig, size_t len, ddx_text_edit_t *e) {
  size_t tl = strlen(e->text), ol = e->end - e->start, p = 0, q = 0;
  while (p < tl && p < ol && orig[e->start + p] == e->text[p])
    p++;
  while (p > 0 && dsc_is_cont(orig, len, e->start + p))
    p--;
  while (q < tl - p && q < ol - p && orig[e->end - 1 - q] == e->text[tl - 1 - q])
    q++;
  while (q > 0 && dsc_is_cont(orig, len, e->end - q))
    q--;
  memmove(e->text, e->text + p, tl - p - q);
  e->text[tl - p - q] = 0;
  e->start += p;
  e->end -= q;
}

/* ---- the planner ---- */

#define DSC_NOCHANGE 1 /* an op's result when the config already has it */

typedef struct dsc_plan {
  const ddx_dsconfig_t *orig;
  ddx_dsconfig_t *work; /* the text after the ops so far; NULL before the first edit */
  ddx_vec_t edits;      /* ddx_text_edit_t against orig: sorted, disjoint */
  ddx_error_t *err;
  char title[400]; /* what the plan does, when the patch's title would not say it */
} dsc_plan_t;

static const ddx_dsconfig_t *dsc_cur(const dsc_plan_t *pl) {
  return pl->work ? pl->work : pl->orig;
}

/* Records one edit of the working text and re-parses the result, so that
 * the next op sees it and a broken edit can never reach the user. */
static int dsc_commit(dsc_plan_t *pl, size_t ws, size_t we, const char *text) {
  const ddx_dsconfig_t *cur = dsc_cur(pl);
  if (!text || dsc_compose(&pl->edits, cur->text, ws, we, text)) return dsc_nomem(pl->err);
  ddx_text_edit_t one = {ws, we, (char *)text};
  size_t len;
  char *next_text = ddx_text_apply(cur->text, cur->len, &one, 1, &len);
  if (!next_text) return dsc_nomem(pl->err);
  ddx_dsconfig_t *next;
  ddx_error_t perr = {0};
  int rc = ddx_dsconfig_parse(&next, next_text, len, &perr);
  free(next_text);
  if (rc)
    return ddx_error_set(pl->err, rc,
                         "internal error: the planned edit does not parse (%s); please report it",
                         perr.msg);
  next->style = pl->orig->style; /* keep the original's style, whatever we inserted */
  ddx_dsconfig_free(pl->work);
  pl->work = next;
  return 0;
}

/* How obj's members are laid out: on lines of their own (true; *indent gets
 * their indentation) or inline. An empty object is multi-line when its
 * parent is (the file, for the top level) and indents its members one unit
 * more than the line holding its '{'. */
static bool dsc_layout(const ddx_dsconfig_t *c, const dsc_node_t *obj, ddx_sb_t *indent) {
  const char *s = c->text;
  size_t ls, a, b;
  ddx_sb_puts(indent, "");
  if (obj->first) {
    if (!dsc_own_line(s, obj->first, &ls)) return false;
    ddx_sb_putn(indent, s + ls, obj->first->key_start - ls);
    return true;
  }
  dsc_line_indent(s, obj->start, &a, &b);
  ddx_sb_putn(indent, s + a, b - a);
  ddx_sb_puts(indent, c->style.unit);
  if (memchr(s + obj->start, '\n', obj->end - obj->start)) return true;
  return obj->parent ? dsc_own_line(s, obj->parent->first, NULL) : c->style.multiline;
}

/* The blanks after a comma in the inline object obj: its own, else the file's. */
static const char *dsc_comma_ws(const ddx_dsconfig_t *c, const dsc_node_t *obj, char buf[9]) {
  const dsc_node_t *m = obj->first;
  if (m && m->next && !dsc_own_line(c->text, m->next, NULL) &&
      dsc_copy_blank(buf, 9, c->text, m->comma + 1, m->next->key_start, false))
    return buf;
  return c->style.comma_ws;
}

/* Adds "key": v at the end of obj, laid out like obj's other members. */
static int dsc_insert(dsc_plan_t *pl, const dsc_node_t *obj, const char *key, size_t klen,
                      json_t *v) {
  const ddx_dsconfig_t *c = dsc_cur(pl);
  const dsc_style_t *st = &c->style;
  ddx_sb_t ind, t;
  ddx_sb_init(&ind);
  ddx_sb_init(&t);
  char cws[9];
  bool ml = dsc_layout(c, obj, &ind);
  size_t ws = obj->start + 1, we = obj->end - 1; /* inside the braces of an empty object */
  if (obj->last) {
    ws = we = obj->last->end;
    ddx_sb_puts(&t, ",");
    if (!ml) ddx_sb_puts(&t, dsc_comma_ws(c, obj, cws));
  }
  if (ml) ddx_sb_puts(&t, st->eol), ddx_sb_puts(&t, ind.s);
  dsc_put_string(&t, key, klen);
  ddx_sb_puts(&t, st->sep);
  dsc_render(&t, v, st, ml, dsc_comma_ws(c, obj, cws), ind.s);
  if (!obj->last && ml) { /* the '}' goes back to the indentation of its '{' line */
    ddx_sb_puts(&t, st->eol);
    ddx_sb_putn(&t, ind.s, ind.len - strlen(st->unit));
  }
  int rc = dsc_commit(pl, ws, we, t.s);
  ddx_sb_free(&ind);
  ddx_sb_free(&t);
  return rc;
}

/* The path's first parts, up to and including part i, for messages. */
static int dsc_prefix_len(const char *path, const dsc_path_t *p, size_t i) {
  return (int)(p->part[i] + p->len[i] - path);
}

static int dsc_op_set(dsc_plan_t *pl, const char *path, const dsc_path_t *p, json_t *value) {
  const ddx_dsconfig_t *c = dsc_cur(pl);
  size_t found;
  const dsc_node_t *at, *n = dsc_walk(c->root, p, &found, &at);
  if (n) {
    if (dsc_equal(n, value)) return DSC_NOCHANGE;
    ddx_sb_t ind, t;
    ddx_sb_init(&ind);
    ddx_sb_init(&t);
    char cws[9];
    bool ml = dsc_layout(c, n->parent, &ind);
    dsc_render(&t, value, &c->style, ml, dsc_comma_ws(c, n->parent, cws), ind.s);
    int rc = dsc_commit(pl, n->start, n->end, t.s);
    ddx_sb_free(&ind);
    ddx_sb_free(&t);
    return rc;
  }
  if (at->kind != DDX_JP_OBJECT) {
    char is[64];
    dsc_describe(c, at, is, sizeof is);
    return ddx_error_set(pl->err, DDX_EINVAL, "cannot set %s: %.*s is %s, not an object", path,
                         dsc_prefix_len(path, p, found - 1), path, is);
  }
  /* missing intermediate objects are created around the value */
  json_t *v = json_incref(value);
  for (size_t i = p->n - 1; v && i > found; i--) {
    json_t *o = json_object();
    if (!o)
      json_decref(v);
    else if (json_object_setn_new(o, p->part[i], p->len[i], v)) /* takes v even on failure */
      json_decref(o), o = NULL;
    v = o;
  }
  if (!v) return dsc_nomem(pl->err);
  int rc = dsc_insert(pl, at, p->part[found], p->len[found], v);
  json_decref(v);
  return rc;
}

/* Deletes a member with its comma, and its own line when it has one, so no
 * blank line or dangling comma is left. An absent member is no change. */
static int dsc_op_remove(dsc_plan_t *pl, const dsc_path_t *p) {
  const ddx_dsconfig_t *c = dsc_cur(pl);
  size_t found, a, b;
  const dsc_node_t *at, *n = dsc_walk(c->root, p, &found, &at);
  if (!n) return DSC_NOCHANGE;
  if (n->next) { /* up to the next member: its line, or just its key */
    if (!dsc_own_line(c->text, n, &a) || !dsc_own_line(c->text, n->next, &b))
      a = n->key_start, b = n->next->key_start;
  } else if (n->prev) { /* the last one: from the end of the previous value, its comma too */
    a = n->prev->end, b = n->end;
  } else { /* the only one: the object becomes {} */
    a = n->parent->start + 1, b = n->parent->end - 1;
  }
  return dsc_commit(pl, a, b, "");
}

/* Renames in place; "to" is the new key or a full path in the same object. */
static int dsc_op_rename(dsc_plan_t *pl, const char *path, const dsc_path_t *p, const char *to) {
  dsc_path_t tp;
  if (!dsc_path_split(to, &tp))
    return ddx_error_set(pl->err, DDX_EINVAL, "invalid patch: bad rename target \"%s\"", to);
  bool same_object = tp.n == 1 || tp.n == p->n;
  for (size_t i = 0; same_object && tp.n > 1 && i + 1 < tp.n; i++)
    same_object = tp.len[i] == p->len[i] && !memcmp(tp.part[i], p->part[i], tp.len[i]);
  if (!same_object)
    return ddx_error_set(pl->err, DDX_EINVAL,
                         "cannot rename %s to %s: the new key must be in the same object", path,
                         to);
  const char *name = tp.part[tp.n - 1];
  size_t nlen = tp.len[tp.n - 1], found;
  const ddx_dsconfig_t *c = dsc_cur(pl);
  const dsc_node_t *at, *n = dsc_walk(c->root, p, &found, &at);
  if (!n) return DSC_NOCHANGE;
  const dsc_node_t *clash = dsc_member(n->parent, name, nlen);
  if (clash == n) return DSC_NOCHANGE;
  if (clash)
    return ddx_error_set(pl->err, DDX_EINVAL, "cannot rename %s to %s: %.*s already exists", path,
                         to, (int)nlen, name);
  ddx_sb_t t;
  ddx_sb_init(&t);
  dsc_put_string(&t, name, nlen);
  int rc = dsc_commit(pl, n->key_start, n->key_end, t.s);
  ddx_sb_free(&t);
  return rc;
}

static int dsc_op_multiply(dsc_plan_t *pl, const char *path, const dsc_path_t *p, double factor,
                           json_t *min) {
  const ddx_dsconfig_t *c = dsc_cur(pl);
  size_t found;
  const dsc_node_t *at, *n = dsc_walk(c->root, p, &found, &at);
  char is[64];
  dsc_describe(c, n, is, sizeof is);
  if (!n) return ddx_error_set(pl->err, DDX_EINVAL, "cannot multiply %s: it is absent", path);
  if (dsc_is_str(n, "auto"))
    return ddx_error_set(pl->err, DDX_EINVAL, "%s: value is \"auto\": %s", path, DSC_AUTO_OWNED);
  if (n->kind != DDX_JP_NUMBER)
    return ddx_error_set(pl->err, DDX_EINVAL, "cannot multiply %s: it is %s, not a number", path,
                         is);
  double r = floor(n->num * factor);
  if (min && r < json_number_value(min)) r = json_number_value(min);
  if (!isfinite(r))
    return ddx_error_set(pl->err, DDX_EINVAL, "cannot multiply %s: the result is out of range",
                         path);
  if (r == n->num) return DSC_NOCHANGE;
  ddx_sb_t t;
  ddx_sb_init(&t);
  dsc_put_number(&t, r);
  int rc = dsc_commit(pl, n->start, n->end, t.s);
  ddx_sb_free(&t);
  return rc;
}

static int dsc_bad_patch(ddx_error_t *err, const char *what, size_t i) {
  return ddx_error_set(err, DDX_EINVAL, "invalid patch: %s %zu: %s", what, i,
                       "see rules/README.md, config_patches");
}

/* A precondition that fails names the path, the test and the value found. */
static int dsc_precondition(const ddx_dsconfig_t *c, size_t i, json_t *pre, ddx_error_t *err) {
  static const char *const cmps[] = {"==", "!=", "<", "<=", ">", ">="};
  const char *path = json_string_value(json_object_get(pre, "path"));
  const char *op = json_string_value(json_object_get(pre, "op"));
  json_t *value = json_object_get(pre, "value");
  dsc_path_t p;
  if (!path || !op || !dsc_path_split(path, &p)) return dsc_bad_patch(err, "precondition", i);
  size_t found, k = 0;
  const dsc_node_t *at, *n = dsc_walk(c->root, &p, &found, &at);
  char is[64];
  dsc_describe(c, n, is, sizeof is);
  if (!strcmp(op, "exists"))
    return n ? 0 : ddx_error_set(err, DDX_EINVAL, "precondition not met: %s is absent", path);
  if (!strcmp(op, "absent"))
    return !n ? 0
              : ddx_error_set(err, DDX_EINVAL, "precondition not met: %s is already set (%s)", path,
                              is);
  if (!strcmp(op, "not-auto"))
    return !dsc_is_str(n, "auto")
               ? 0
               : ddx_error_set(err, DDX_EINVAL, "precondition not met: %s is \"auto\": %s", path,
                               DSC_AUTO_OWNED);
  while (k < 6 && strcmp(op, cmps[k]))
    k++;
  if (k == 6 || !value) return dsc_bad_patch(err, "precondition", i);
  bool ok;
  if (k < 2) { /* an absent value is != anything: "load_universal != true" holds when unset */
    ok = (n && dsc_equal(n, value)) == (k == 0);
  } else if (!n || n->kind != DDX_JP_NUMBER || !json_is_number(value)) {
    ok = false;
  } else {
    double a = n->num, b = json_number_value(value);
    ok = k == 2 ? a < b : k == 3 ? a <= b : k == 4 ? a > b : a >= b;
  }
  if (ok) return 0;
  ddx_sb_t want;
  ddx_sb_init(&want);
  dsc_render(&want, value, &c->style, false, " ", "");
  int rc = ddx_error_set(err, DDX_EINVAL, "precondition not met: %s %s %.60s (it is %s)", path, op,
                         want.s ? want.s : "", is);
  ddx_sb_free(&want);
  return rc;
}

/* ---- the batch identity ----
 *
 * DeepSpeed asserts train_batch_size == train_micro_batch_size_per_gpu x
 * gradient_accumulation_steps x the data-parallel size, and a quick fix
 * must keep that exactly. A patch that multiplies the micro batch by a
 * factor below 1 (rules: "micro-batch-down") with gradient accumulation is
 * planned as one change that keeps the global batch: the new micro batch is
 * the largest divisor of the current one up to factor x micro (at least
 * min), and gradient accumulation is multiplied by exactly the ratio (micro
 * 7, accumulation 1 becomes 1 x 7, not 3 x 2). The data-parallel size N
 * need not be known: the product micro x accumulation stays the same, so
 * the new config holds for exactly the N the old one did. With
 * train_batch_size set (a number) that N must exist, i.e. train_batch_size
 * must be a multiple of micro x accumulation, else the config is already
 * inconsistent and the fix is refused; "auto" (the HF Trainer fills it in)
 * stays "auto"; absent, DeepSpeed derives it, unchanged. A micro batch or
 * accumulation that is "auto" is the Trainer's and refused, as is a micro
 * batch of 1. Gradient accumulation multiplied alone (the global batch
 * grows) is refused while train_batch_size is a number; train_batch_size is
 * never multiplied. */

#define DSC_MICRO "train_micro_batch_size_per_gpu"
#define DSC_GAS "gradient_accumulation_steps"
#define DSC_TBS "train_batch_size"
#define DSC_BATCH_MAX 1099511627776.0 /* 2^40: no batch value is larger */
#define DSC_SHRINK "cannot shrink the micro batch: "

/* A positive integer of at most DSC_BATCH_MAX. */
static bool dsc_batch_int(const dsc_node_t *n) {
  return n && n->kind == DDX_JP_NUMBER && n->num >= 1 && n->num <= DSC_BATCH_MAX &&
         floor(n->num) == n->num;
}

/* The checks every batch value gets: present (unless absent_ok), not
 * "auto", a positive integer. */
static int dsc_batch_value(dsc_plan_t *pl, const dsc_node_t *n, const char *key) {
  char is[64];
  dsc_describe(dsc_cur(pl), n, is, sizeof is);
  if (!n) return ddx_error_set(pl->err, DDX_EINVAL, "cannot multiply %s: it is absent", key);
  if (dsc_is_str(n, "auto"))
    return ddx_error_set(pl->err, DDX_EINVAL, "%s: value is \"auto\": %s", key, DSC_AUTO_OWNED);
  if (n->kind != DDX_JP_NUMBER)
    return ddx_error_set(pl->err, DDX_EINVAL, "cannot multiply %s: it is %s, not a number", key,
                         is);
  if (!dsc_batch_int(n))
    return ddx_error_set(pl->err, DDX_EINVAL, DSC_SHRINK "%s is %s, not a positive integer%s", key,
                         is, n->num > DSC_BATCH_MAX ? " of a plausible size" : "");
  return 0;
}

static int dsc_set_int(dsc_plan_t *pl, const char *key, long long v) {
  dsc_path_t p;
  json_t *j = json_integer(v);
  int rc = j && dsc_path_split(key, &p) ? dsc_op_set(pl, key, &p, j) : dsc_nomem(pl->err);
  json_decref(j);
  return rc;
}

/* The micro batch times factor (mop) and gradient accumulation (gop) by
 * the matching ratio, as one change that keeps micro x accumulation. */
static int dsc_op_batch(dsc_plan_t *pl, size_t mi, json_t *mop, json_t *gop) {
  json_t *factor = json_object_get(mop, "factor"), *min = json_object_get(mop, "min");
  if (!json_is_number(factor) || (min && !json_is_number(min)))
    return dsc_bad_patch(pl->err, "op", mi);
  double f = json_number_value(factor), lo = min ? json_number_value(min) : 1;
  if (!(f > 0 && f < 1))
    return ddx_error_set(pl->err, DDX_EINVAL,
                         "invalid patch: " DSC_MICRO " is only multiplied by a factor between 0 "
                         "and 1 (a smaller micro batch, more gradient accumulation)");
  if (!gop)
    return ddx_error_set(pl->err, DDX_EINVAL,
                         "invalid patch: a multiply of " DSC_MICRO " needs one of " DSC_GAS
                         " in the same patch: DeepSpeed requires " DSC_TBS
                         " = micro batch x " DSC_GAS " x data-parallel size");
  const ddx_dsconfig_t *c = dsc_cur(pl);
  const dsc_node_t *m = dsc_member(c->root, DSC_MICRO, strlen(DSC_MICRO));
  const dsc_node_t *g = dsc_member(c->root, DSC_GAS, strlen(DSC_GAS));
  const dsc_node_t *t = dsc_member(c->root, DSC_TBS, strlen(DSC_TBS));
  bool t_auto = dsc_is_str(t, "auto");
  int rc = dsc_batch_value(pl, m, DSC_MICRO);
  if (!rc && g) rc = dsc_batch_value(pl, g, DSC_GAS);
  if (rc) return rc;
  if (!g && t) /* else DeepSpeed's default, 1 */
    return ddx_error_set(pl->err, DDX_EINVAL,
                         DSC_SHRINK DSC_GAS " is absent, so DeepSpeed derives it from " DSC_TBS
                                            " and the data-parallel size; set it first");
  long long m0 = (long long)m->num, g0 = g ? (long long)g->num : 1;
  char is[64];
  dsc_describe(c, t, is, sizeof is);
  if (t && !t_auto && t->kind != DDX_JP_NUMBER)
    return ddx_error_set(pl->err, DDX_EINVAL, DSC_SHRINK DSC_TBS " is %s, not a number", is);
  if (t && !t_auto && !dsc_batch_int(t))
    return ddx_error_set(pl->err, DDX_EINVAL, DSC_SHRINK DSC_TBS " is %s, not a positive integer",
                         is);
  long long t0 = t && !t_auto ? (long long)t->num : 0;
  if (t0 && (t0 % m0 || (t0 / m0) % g0))
    return ddx_error_set(pl->err, DDX_EINVAL,
                         DSC_SHRINK DSC_TBS
                         " %lld is not " DSC_MICRO " %lld x " DSC_GAS
                         " %lld x a whole data-parallel size, so DeepSpeed's batch "
                         "check fails already; make the three consistent first",
                         t0, m0, g0);
  if (m0 == 1) return ddx_error_set(pl->err, DDX_EINVAL, DSC_SHRINK DSC_MICRO " is already 1");
  double target = floor((double)m0 * f);
  if (target < lo) target = lo;
  if (target >= (double)m0) return DSC_NOCHANGE;
  long long best = 0; /* the largest divisor of m0 in [lo, target] */
  for (long long i = 1; i <= m0 / i; i++) {
    if (m0 % i) continue;
    long long pair[2] = {i, m0 / i};
    for (int k = 0; k < 2; k++)
      if ((double)pair[k] <= target && (double)pair[k] >= lo && pair[k] > best) best = pair[k];
  }
  if (!best)
    return ddx_error_set(pl->err, DDX_EINVAL,
                         DSC_SHRINK "%lld has no divisor from %g to %.0f, and a micro batch that "
                                    "does not divide it changes the global batch",
                         m0, lo, target);
  long long ratio = m0 / best;
  if ((double)g0 * (double)ratio > DSC_BATCH_MAX)
    return ddx_error_set(pl->err, DDX_EINVAL, DSC_SHRINK DSC_GAS " %lld x %lld is out of range", g0,
                         ratio);
  long long g1 = g0 * ratio;
  if ((rc = dsc_set_int(pl, DSC_MICRO, best)) || (rc = dsc_set_int(pl, DSC_GAS, g1))) return rc;
  if ((double)best != (double)m0 * f) /* the patch's title promises what this is not */
    snprintf(pl->title, sizeof pl->title,
             "Micro batch %lld -> %lld, gradient accumulation %lld -> %lld: the same global batch "
             "(%lld is the largest divisor of %lld up to %.0f)%s",
             m0, best, g0, g1, best, m0, target, t_auto ? "; train_batch_size stays \"auto\"" : "");
  return 0;
}

static bool dsc_op_is(json_t *op, const char *kind, const char *path) {
  const char *k = json_string_value(json_object_get(op, "op"));
  const char *p = json_string_value(json_object_get(op, "path"));
  return k && p && !strcmp(k, kind) && !strcmp(p, path);
}

static int dsc_op(dsc_plan_t *pl, size_t i, json_t *op) {
  const char *kind = json_string_value(json_object_get(op, "op"));
  const char *path = json_string_value(json_object_get(op, "path"));
  json_t *value = json_object_get(op, "value"), *factor = json_object_get(op, "factor");
  json_t *min = json_object_get(op, "min");
  const char *to = json_string_value(json_object_get(op, "to"));
  dsc_path_t p;
  if (!kind || !path || !dsc_path_split(path, &p)) return dsc_bad_patch(pl->err, "op", i);
  if (!strcmp(kind, "set") && value) return dsc_op_set(pl, path, &p, value);
  if (!strcmp(kind, "remove")) return dsc_op_remove(pl, &p);
  if (!strcmp(kind, "rename") && to) return dsc_op_rename(pl, path, &p, to);
  if (!strcmp(kind, "multiply") && !strcmp(path, DSC_TBS))
    return ddx_error_set(pl->err, DDX_EINVAL,
                         "cannot multiply " DSC_TBS
                         ": DeepSpeed requires it to be micro batch x " DSC_GAS
                         " x data-parallel size; change those instead");
  if (!strcmp(kind, "multiply") && !strcmp(path, DSC_GAS)) { /* alone: the global batch grows */
    const ddx_dsconfig_t *c = dsc_cur(pl);
    const dsc_node_t *t = dsc_member(c->root, DSC_TBS, strlen(DSC_TBS));
    char is[64];
    dsc_describe(c, t, is, sizeof is);
    if (t && t->kind == DDX_JP_NUMBER)
      return ddx_error_set(pl->err, DDX_EINVAL,
                           "cannot multiply " DSC_GAS " alone: " DSC_TBS " is %s and must stay "
                           "micro batch x " DSC_GAS " x data-parallel size",
                           is);
  }
  if (!strcmp(kind, "multiply") && json_is_number(factor) && (!min || json_is_number(min)))
    return dsc_op_multiply(pl, path, &p, json_number_value(factor), min);
  return dsc_bad_patch(pl->err, "op", i);
}

static int dsc_plan_patch(dsc_plan_t *pl, json_t *patch, ddx_patch_plan_t *plan) {
  json_t *pres = json_object_get(patch, "preconditions"), *ops = json_object_get(patch, "ops");
  const char *title = json_string_value(json_object_get(patch, "title"));
  size_t i;
  json_t *x;
  if (!json_is_object(patch) || !json_is_array(ops) || !json_array_size(ops) ||
      (pres && !json_is_array(pres)))
    return ddx_error_set(pl->err, DDX_EINVAL,
                         "invalid patch: expected {id, title, preconditions?, ops: [...]}");
  json_array_foreach(pres, i, x) {
    int rc = dsc_precondition(pl->orig, i, x, pl->err);
    if (rc) return rc;
  }
  /* the micro batch and gradient accumulation multiplied together are one
   * change, planned where the first of them is */
  json_t *mop = NULL, *gop = NULL;
  size_t mi = 0;
  json_array_foreach(ops, i, x) {
    json_t **slot = dsc_op_is(x, "multiply", DSC_MICRO) ? &mop
                    : dsc_op_is(x, "multiply", DSC_GAS) ? &gop
                                                        : NULL;
    if (slot && *slot) return dsc_bad_patch(pl->err, "op", i); /* the same key twice */
    if (slot) *slot = x;
    if (slot == &mop) mi = i;
  }
  bool batch_done = false;
  json_array_foreach(ops, i, x) {
    int rc;
    if (mop && (x == mop || x == gop)) {
      if (batch_done) continue;
      batch_done = true;
      rc = dsc_op_batch(pl, mi, mop, gop);
    } else {
      rc = dsc_op(pl, i, x);
    }
    if (rc < 0) return rc;
  }
  /* keep only the bytes that change; ops that undo each other leave nothing */
  ddx_text_edit_t *e = pl->edits.data;
  size_t n = 0;
  for (i = 0; i < pl->edits.len; i++) {
    dsc_trim(pl->orig->text, pl->orig->len, &e[i]);
    if (e[i].start == e[i].end && !e[i].text[0])
      free(e[i].text);
    else
      e[n++] = e[i];
  }
  pl->edits.len = n;
  if (!n)
    return ddx_error_set(pl->err, DDX_EINVAL,
                         "already applied: the config already has what this fix would set");
  if (!(plan->title = strdup(pl->title[0] ? pl->title : title ? title : "")))
    return dsc_nomem(pl->err);
  plan->edits = e;
  plan->nedits = n;
  ddx_vec_init(&pl->edits, sizeof *e); /* the plan owns them now */
  return 0;
}

int ddx_dsconfig_plan(const ddx_dsconfig_t *c, const char *patch_json, ddx_patch_plan_t *plan,
                      ddx_error_t *err) {
  memset(plan, 0, sizeof *plan);
  if (!c || !patch_json) return ddx_error_set(err, DDX_EINVAL, "no config or no patch");
  json_error_t je;
  json_t *patch = json_loads(patch_json, JSON_REJECT_DUPLICATES, &je);
  if (!patch) return ddx_error_set(err, DDX_EINVAL, "invalid patch: %s", je.text);
  dsc_plan_t pl = {.orig = c, .err = err};
  ddx_vec_init(&pl.edits, sizeof(ddx_text_edit_t));
  int rc = dsc_plan_patch(&pl, patch, plan);
  for (size_t i = 0; i < pl.edits.len; i++)
    free(DDX_VEC_AT(&pl.edits, ddx_text_edit_t, i).text);
  ddx_vec_free(&pl.edits);
  ddx_dsconfig_free(pl.work);
  json_decref(patch);
  if (rc) ddx_patch_plan_free(plan);
  return rc;
}

/* ---- the Hugging Face Trainer's flags ----
 *
 * The keys the HF Trainer fills from its TrainingArguments when they are
 * "auto" and checks against them when they are not
 * (transformers.integrations.deepspeed, HfTrainerDeepSpeedConfig.
 * trainer_config_process: fill_match), with the flag that sets each. */

typedef struct dsc_hf_flag {
  const char *path, *flag;
  char kind; /* 'i' integer, 'b' boolean, 'n' number */
} dsc_hf_flag_t;

static const dsc_hf_flag_t dsc_hf_flags[] = {
    {DSC_MICRO, "--per_device_train_batch_size", 'i'},
    {DSC_GAS, "--gradient_accumulation_steps", 'i'},
    {"bf16.enabled", "--bf16", 'b'},
    {"fp16.enabled", "--fp16", 'b'},
    {"gradient_clipping", "--max_grad_norm", 'n'},
};
#define DSC_NHF (sizeof dsc_hf_flags / sizeof *dsc_hf_flags)
#define DSC_CKPT "activation_checkpointing"
#define DSC_HF_NOT "not the HF Trainer's: "

static bool dsc_any_auto(const dsc_node_t *n) {
  if (dsc_is_str(n, "auto")) return true;
  for (const dsc_node_t *m = n->first; m; m = m->next)
    if (dsc_any_auto(m)) return true;
  return false;
}

bool ddx_dsconfig_has_auto(const ddx_dsconfig_t *c) {
  return c && c->root && dsc_any_auto(c->root);
}

static const dsc_hf_flag_t *dsc_hf_entry(const char *path) {
  for (size_t i = 0; i < DSC_NHF; i++)
    if (!strcmp(dsc_hf_flags[i].path, path)) return &dsc_hf_flags[i];
  return NULL;
}

static bool dsc_is_ckpt(const char *path) {
  size_t n = strlen(DSC_CKPT);
  return !strncmp(path, DSC_CKPT, n) && (path[n] == 0 || path[n] == '.');
}

/* A path whose value the Trainer owns in config c (which has "auto"
 * values): a flag-filled key that is "auto", or activation checkpointing. */
static bool dsc_hf_owned(const ddx_dsconfig_t *c, const char *path) {
  if (dsc_is_ckpt(path)) return true;
  return dsc_hf_entry(path) && dsc_is_str(dsc_lookup(c, path), "auto");
}

static void dsc_flag_value(ddx_sb_t *b, const dsc_hf_flag_t *f, json_t *v) {
  if (b->len) ddx_sb_puts(b, " ");
  if (f->kind == 'b') {
    ddx_sb_puts(b, f->flag);
    if (!json_is_true(v)) ddx_sb_puts(b, " False");
    return;
  }
  ddx_sb_printf(b, "%s ", f->flag);
  if (json_is_integer(v))
    ddx_sb_printf(b, "%lld", (long long)json_integer_value(v));
  else
    dsc_put_number(b, json_number_value(v));
}

/* The micro batch the Trainer would use after multiplying by f: the
 * largest divisor of m0 in [lo, f x m0], as dsc_op_batch does. 0: none. */
static long long dsc_divisor(long long m0, double f, double lo) {
  double target = floor((double)m0 * f);
  if (target < lo) target = lo;
  long long best = 0;
  for (long long i = 1; i <= m0 / i; i++) {
    if (m0 % i) continue;
    long long pair[2] = {i, m0 / i};
    for (int k = 0; k < 2; k++)
      if ((double)pair[k] <= target && (double)pair[k] >= lo && pair[k] < m0 && pair[k] > best)
        best = pair[k];
  }
  return best;
}

static int dsc_plan_hf(const ddx_dsconfig_t *c, json_t *patch, const ddx_hf_known_t *known,
                       ddx_sb_t *b, bool *exact, ddx_error_t *err) {
  json_t *pres = json_object_get(patch, "preconditions"), *ops = json_object_get(patch, "ops");
  if (!json_is_array(ops) || !json_array_size(ops))
    return ddx_error_set(err, DDX_EINVAL, "invalid patch: expected {id, title, ops: [...]}");
  if (!ddx_dsconfig_has_auto(c))
    return ddx_error_set(err, DDX_EINVAL,
                         DSC_HF_NOT "the config has no \"auto\" value, so no Trainer fills it");
  size_t i;
  json_t *x;
  const char *mine = NULL, *theirs = NULL;
  json_array_foreach(ops, i, x) {
    const char *path = json_string_value(json_object_get(x, "path"));
    if (!path) return dsc_bad_patch(err, "op", i);
    /* gradient accumulation that is absent follows the Trainer's flag too */
    bool owned = dsc_hf_owned(c, path) || (!strcmp(path, DSC_GAS) && !dsc_lookup(c, DSC_GAS) &&
                                           dsc_is_str(dsc_lookup(c, DSC_MICRO), "auto"));
    if (owned && !theirs) theirs = path;
    if (!owned && !mine) mine = path;
  }
  if (!theirs)
    return ddx_error_set(err, DDX_EINVAL, DSC_HF_NOT "%s is set in the config itself", mine);
  if (mine)
    return ddx_error_set(err, DDX_EINVAL,
                         DSC_HF_NOT "%s is \"auto\" (the Trainer's) but %s is the config's own "
                                    "value: make both \"auto\" or both numbers first",
                         theirs, mine);
  json_array_foreach(pres, i, x) {
    const char *path = json_string_value(json_object_get(x, "path"));
    if (!path) return dsc_bad_patch(err, "precondition", i);
    if (dsc_hf_owned(c, path)) continue; /* its value comes from the flags */
    int rc = dsc_precondition(c, i, x, err);
    if (rc) return rc;
  }
  bool ckpt = false, batch = false;
  json_array_foreach(ops, i, x) {
    const char *kind = json_string_value(json_object_get(x, "op"));
    const char *path = json_string_value(json_object_get(x, "path"));
    json_t *value = json_object_get(x, "value");
    const dsc_hf_flag_t *f = dsc_hf_entry(path);
    if (dsc_is_ckpt(path)) {
      if (!ckpt) ddx_sb_puts(b, b->len ? " --gradient_checkpointing" : "--gradient_checkpointing");
      ckpt = true;
    } else if (kind && !strcmp(kind, "set") && f && value) {
      if ((f->kind == 'b') != json_is_boolean(value) || (f->kind != 'b' && !json_is_number(value)))
        return ddx_error_set(err, DDX_EINVAL, "cannot pass %s %s: not a %s", f->flag, path,
                             f->kind == 'b' ? "boolean" : "number");
      dsc_flag_value(b, f, value);
    } else if (kind && !strcmp(kind, "multiply") &&
               (!strcmp(path, DSC_MICRO) || !strcmp(path, DSC_GAS))) {
      if (batch) continue;
      batch = true;
      json_t *mop = NULL;
      size_t k;
      json_t *y;
      json_array_foreach(
          ops, k, y) if (!strcmp(json_string_value(json_object_get(y, "path")), DSC_MICRO)) mop = y;
      json_t *factor = json_object_get(mop, "factor"), *min = json_object_get(mop, "min");
      if (!mop || !json_is_number(factor) || json_number_value(factor) >= 1)
        return ddx_error_set(err, DDX_EINVAL,
                             DSC_HF_NOT "only a smaller micro batch with more gradient "
                                        "accumulation is passed as flags");
      double fa = json_number_value(factor), lo = json_is_number(min) ? json_number_value(min) : 1;
      long long m0 = known ? known->micro_batch : 0, g0 = known ? known->grad_accum : 0;
      if (m0 > 0) {
        long long best = dsc_divisor(m0, fa, lo);
        if (!best)
          return ddx_error_set(err, DDX_EINVAL,
                               DSC_SHRINK
                               "the Trainer's micro batch (--per_device_train_batch_size, "
                               "%lld in the log) %s",
                               m0, m0 == 1 ? "is already 1" : "has no smaller divisor");
        ddx_sb_printf(b, "%s--per_device_train_batch_size %lld", b->len ? " " : "", best);
        if (g0 > 0)
          ddx_sb_printf(b, " --gradient_accumulation_steps %lld", g0 * (m0 / best));
        else {
          ddx_sb_printf(b, " --gradient_accumulation_steps <%lld x yours>", m0 / best);
          *exact = false;
        }
      } else {
        ddx_sb_printf(b,
                      "%s--per_device_train_batch_size <half of yours> "
                      "--gradient_accumulation_steps <twice yours>",
                      b->len ? " " : "");
        *exact = false;
      }
    } else {
      return ddx_error_set(err, DDX_EINVAL,
                           DSC_HF_NOT "no Trainer flag does what the fix does to %s", path);
    }
  }
  return 0;
}

int ddx_dsconfig_plan_hf(const ddx_dsconfig_t *c, const char *patch_json,
                         const ddx_hf_known_t *known, char **flags, bool *flags_exact,
                         ddx_error_t *err) {
  *flags = NULL;
  *flags_exact = true;
  if (!c || !patch_json) return ddx_error_set(err, DDX_EINVAL, "no config or no patch");
  json_error_t je;
  json_t *patch = json_loads(patch_json, JSON_REJECT_DUPLICATES, &je);
  if (!patch) return ddx_error_set(err, DDX_EINVAL, "invalid patch: %s", je.text);
  ddx_sb_t b;
  ddx_sb_init(&b);
  int rc = dsc_plan_hf(c, patch, known, &b, flags_exact, err);
  json_decref(patch);
  if (!rc && !b.len) rc = ddx_error_set(err, DDX_EINVAL, DSC_HF_NOT "nothing to pass");
  if (!rc && !(*flags = ddx_sb_take(&b))) rc = dsc_nomem(err);
  ddx_sb_free(&b);
  return rc;
}

bool ddx_dsconfig_hf_flags_after(const ddx_dsconfig_t *c, const ddx_patch_plan_t *plan, char *buf,
                                 size_t cap) {
  if (cap) buf[0] = 0;
  if (!ddx_dsconfig_has_auto(c) || !plan->nedits) return false;
  size_t nlen;
  char *text = ddx_text_apply(c->text, c->len, plan->edits, plan->nedits, &nlen);
  ddx_dsconfig_t *after = NULL;
  ddx_error_t err = {0};
  if (!text || ddx_dsconfig_parse(&after, text, nlen, &err)) {
    free(text);
    return false;
  }
  free(text);
  ddx_sb_t b;
  ddx_sb_init(&b);
  for (size_t i = 0; i < DSC_NHF; i++) {
    const dsc_node_t *o = dsc_lookup(c, dsc_hf_flags[i].path);
    const dsc_node_t *n = dsc_lookup(after, dsc_hf_flags[i].path);
    if (!n || dsc_is_str(n, "auto")) continue;
    char *oj = NULL, *nj = NULL;
    bool was = o && ddx_dsconfig_get(c, dsc_hf_flags[i].path, &oj);
    ddx_dsconfig_get(after, dsc_hf_flags[i].path, &nj);
    json_t *nv = nj ? json_loads(nj, JSON_DECODE_ANY, NULL) : NULL;
    if (nv && (!was || strcmp(oj, nj))) dsc_flag_value(&b, &dsc_hf_flags[i], nv);
    json_decref(nv);
    free(oj);
    free(nj);
  }
  ddx_dsconfig_free(after);
  bool any = b.len > 0;
  snprintf(buf, cap, "%s", b.s ? b.s : "");
  ddx_sb_free(&b);
  return any;
}
