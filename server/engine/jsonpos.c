/* jsonpos.c - JSON read with byte positions, strict, lenient or tolerant,
 * and line/column of a byte (see ddx/jsonpos.h).
 *
 * The two tree modes share the grammar's skeleton and differ in what they
 * accept and how they explain a refusal: the strict mode's messages say
 * why an automatic edit needs plain JSON and what to change, the lenient
 * mode's name the problem only (the file is valid for DeepSpeed or it is
 * not). The lenient number is what strtod takes of the characters a number
 * may hold (DeepSpeed's hjson reads 007 and 1.); the strict one is RFC
 * 8259's grammar. Depth: the strict mode refuses the 65th nested
 * container, the lenient one any value inside 65 containers. */
#include "ddx/jsonpos.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define JP_MAX_DEPTH 64
#define JP_PLAIN "ds_config.json must be plain JSON for a safe automatic edit"

void ddx_text_line_col(const char *s, size_t len, size_t pos, size_t *line, size_t *col) {
  *line = 1, *col = 1;
  for (size_t i = 0; i < pos && i < len; i++) {
    if (s[i] == '\n' || (s[i] == '\r' && (i + 1 >= len || s[i + 1] != '\n')))
      ++*line, *col = 1;
    else if (s[i] != '\r' && ((unsigned char)s[i] & 0xC0) != 0x80)
      ++*col;
  }
}

/* ---- the tree reader ---- */

typedef struct jp_parser {
  const char *s;
  size_t len, pos;
  bool strict;
  ddx_arena_t *arena;
  ddx_error_t *err;
  size_t *err_off;
} jp_parser_t;

static int jp_fail(jp_parser_t *p, size_t pos, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static int jp_fail(jp_parser_t *p, size_t pos, const char *fmt, ...) {
  char what[1024];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(what, sizeof what, fmt, ap);
  va_end(ap);
  size_t line, col;
  ddx_text_line_col(p->s, p->len, pos, &line, &col);
  if (p->err_off) *p->err_off = pos;
  return ddx_error_set(p->err, DDX_EINVAL, "line %zu, column %zu: %s", line, col, what);
}

static int jp_nomem(ddx_error_t *err) {
  return ddx_error_set(err, DDX_ENOMEM, "out of memory");
}

static bool jp_is_digit(char c) {
  return c >= '0' && c <= '9';
}

static bool jp_is_space(char c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\r';
}

static int jp_ws(jp_parser_t *p) {
  while (p->pos < p->len) {
    char c = p->s[p->pos];
    bool line = c == '#' || (c == '/' && p->pos + 1 < p->len && p->s[p->pos + 1] == '/');
    bool block = c == '/' && p->pos + 1 < p->len && p->s[p->pos + 1] == '*';
    if (jp_is_space(c)) {
      p->pos++;
    } else if ((line || block) && p->strict) {
      return jp_fail(p, p->pos,
                     "a comment: comments are allowed by DeepSpeed's hjson reader but an "
                     "automatic edit would need to keep them; edit this file by hand or "
                     "remove the comments");
    } else if (line) {
      while (p->pos < p->len && p->s[p->pos] != '\n')
        p->pos++;
    } else if (block) {
      size_t at = p->pos;
      p->pos += 2;
      while (p->pos + 1 < p->len && !(p->s[p->pos] == '*' && p->s[p->pos + 1] == '/'))
        p->pos++;
      if (p->pos + 1 >= p->len) return jp_fail(p, at, "unterminated comment");
      p->pos += 2;
    } else {
      break;
    }
  }
  return 0;
}

static int jp_string_strict(jp_parser_t *p, ddx_jstr_err_t e, size_t open, size_t at) {
  unsigned char c = e == DDX_JSTR_CONTROL || e == DDX_JSTR_UTF8 ? (unsigned char)p->s[at] : 0;
  switch (e) {
  case DDX_JSTR_UNTERMINATED:
    return jp_fail(p, open, "unterminated string: %s", JP_PLAIN);
  case DDX_JSTR_CONTROL:
    if (c == '\n' || c == '\r')
      return jp_fail(p, open, "unterminated string (a line break inside it): %s", JP_PLAIN);
    return jp_fail(p, at, "control character 0x%02x inside a string (write it as \\u%04x): %s", c,
                   c, JP_PLAIN);
  case DDX_JSTR_ESCAPE:
    return jp_fail(p, at, "invalid escape in a string: %s", JP_PLAIN);
  case DDX_JSTR_BAD_U:
    return jp_fail(p, at, "invalid \\u escape: %s", JP_PLAIN);
  case DDX_JSTR_SURROGATE:
    return jp_fail(p, at, "unpaired surrogate in a \\u escape: %s", JP_PLAIN);
  default:
    return jp_fail(p, at, "invalid UTF-8 (byte 0x%02x): %s", c, JP_PLAIN);
  }
}

static int jp_string_lenient(jp_parser_t *p, ddx_jstr_err_t e, size_t open, size_t at) {
  switch (e) {
  case DDX_JSTR_CONTROL:
    return jp_fail(p, at, "control character in a string");
  case DDX_JSTR_ESCAPE:
    return jp_fail(p, at, "bad escape \\%c", p->s[at + 1]);
  case DDX_JSTR_BAD_U:
    return jp_fail(p, at, "bad \\u escape");
  default:
    return jp_fail(p, open, "unterminated string");
  }
}

/* Reads the string at p->pos (its '"'), decoded into the arena; strictly
 * checked (ddx_json_string_check) in the strict mode: a file the planner
 * edits must stay exactly valid JSON. */
static int jp_string(jp_parser_t *p, const char **out, size_t *out_len) {
  size_t open = p->pos, close, at;
  ddx_jstr_err_t e = ddx_json_string_check(p->s, p->len, open + 1, p->strict, &close, &at);
  if (e != DDX_JSTR_OK)
    return p->strict ? jp_string_strict(p, e, open, at) : jp_string_lenient(p, e, open, at);
  char *d = ddx_arena_alloc(p->arena, close - open + 1); /* decoded is never longer */
  if (!d) return jp_nomem(p->err);
  *out_len = ddx_json_string_decode(p->s, open + 1, close, d);
  *out = d;
  p->pos = close + 1;
  return 0;
}

static bool jp_word_at(const jp_parser_t *p, size_t pos, const char *w) {
  size_t n = strlen(w);
  return pos <= p->len && p->len - pos >= n && !memcmp(p->s + pos, w, n);
}

/* Strict: explains a byte that cannot start a value (or a key) at p->pos. */
static int jp_unexpected(jp_parser_t *p, const char *wanted) {
  if (p->pos >= p->len) return jp_fail(p, p->pos, "unexpected end of file: %s", JP_PLAIN);
  unsigned char c = (unsigned char)p->s[p->pos];
  if (jp_word_at(p, p->pos, "NaN") || jp_word_at(p, p->pos, "Infinity"))
    return jp_fail(p, p->pos, "NaN and Infinity are not JSON numbers: %s", JP_PLAIN);
  if (c == '\'')
    return jp_fail(p, p->pos, "single-quoted string: JSON strings use double quotes: %s", JP_PLAIN);
  if (c >= 0x80 && !ddx_utf8_len((const unsigned char *)p->s + p->pos, p->len - p->pos))
    return jp_fail(p, p->pos, "invalid UTF-8 (byte 0x%02x): %s", c, JP_PLAIN);
  if ((c | 0x20) >= 'a' && (c | 0x20) <= 'z') {
    size_t n = 0;
    while (p->pos + n < p->len && n < 32 && ((p->s[p->pos + n] | 0x20) >= 'a') &&
           ((p->s[p->pos + n] | 0x20) <= 'z'))
      n++;
    return jp_fail(p, p->pos,
                   "unexpected word '%.*s' where %s was expected (JSON has true, false and "
                   "null; keys and strings need double quotes): %s",
                   (int)n, p->s + p->pos, wanted, JP_PLAIN);
  }
  if (c > 0x20 && c < 0x7F)
    return jp_fail(p, p->pos, "unexpected '%c' where %s was expected: %s", c, wanted, JP_PLAIN);
  return jp_fail(p, p->pos, "unexpected byte 0x%02x where %s was expected: %s", c, wanted,
                 JP_PLAIN);
}

/* The grammar of RFC 8259. */
static int jp_number_strict(jp_parser_t *p, ddx_jp_node_t *n) {
  const char *s = p->s;
  size_t i = p->pos;
  if (s[i] == '-') i++;
  if (i < p->len && s[i] == 'I')
    return jp_fail(p, p->pos, "NaN and Infinity are not JSON numbers: %s", JP_PLAIN);
  if (i >= p->len || !jp_is_digit(s[i]))
    return jp_fail(p, i, "a digit was expected in a number: %s", JP_PLAIN);
  if (s[i] == '0' && i + 1 < p->len && jp_is_digit(s[i + 1]))
    return jp_fail(p, p->pos, "a number with a leading zero: %s", JP_PLAIN);
  while (i < p->len && jp_is_digit(s[i]))
    i++;
  if (i < p->len && s[i] == '.') {
    if (++i >= p->len || !jp_is_digit(s[i]))
      return jp_fail(p, i, "a digit was expected after '.': %s", JP_PLAIN);
    while (i < p->len && jp_is_digit(s[i]))
      i++;
  }
  if (i < p->len && (s[i] == 'e' || s[i] == 'E')) {
    if (++i < p->len && (s[i] == '+' || s[i] == '-')) i++;
    if (i >= p->len || !jp_is_digit(s[i]))
      return jp_fail(p, i, "a digit was expected in the exponent: %s", JP_PLAIN);
    while (i < p->len && jp_is_digit(s[i]))
      i++;
  }
  /* The grammar is checked, so strtod reads exactly these bytes (the engine
   * never calls setlocale, so '.' is the decimal point). */
  char *tmp = ddx_arena_strndup(p->arena, s + p->pos, i - p->pos);
  if (!tmp) return jp_nomem(p->err);
  n->kind = DDX_JP_NUMBER;
  n->num = strtod(tmp, NULL);
  if (isinf(n->num)) return jp_fail(p, p->pos, "a number too large for a double: %s", JP_PLAIN);
  p->pos = i;
  return 0;
}

/* What strtod takes of the run of number characters (a NUL among them
 * ends what strtod sees). */
static int jp_number_lenient(jp_parser_t *p, ddx_jp_node_t *n) {
  size_t e = p->pos;
  char buf[64];
  while (e < p->len && strchr("+-0123456789.eE", p->s[e]))
    e++;
  if (e - p->pos >= sizeof buf) return jp_fail(p, p->pos, "number too long");
  memcpy(buf, p->s + p->pos, e - p->pos);
  buf[e - p->pos] = 0;
  char *endp;
  errno = 0;
  double v = strtod(buf, &endp);
  if (*endp || endp == buf) return jp_fail(p, p->pos, "malformed number");
  n->kind = DDX_JP_NUMBER;
  n->num = v;
  p->pos = e;
  return 0;
}

static int jp_container(jp_parser_t *p, ddx_jp_node_t *n, int depth);

/* A value inside depth containers. */
static int jp_value(jp_parser_t *p, ddx_jp_node_t *n, int depth) {
  if (!p->strict && depth > JP_MAX_DEPTH) return jp_fail(p, p->pos, "nested too deeply");
  if (p->pos >= p->len)
    return p->strict ? jp_unexpected(p, "a value") : jp_fail(p, p->pos, "expected a value");
  n->start = p->pos;
  char c = p->s[p->pos];
  int rc = 0;
  if (c == '{' || c == '[') {
    rc = jp_container(p, n, depth);
  } else if (c == '"') {
    n->kind = DDX_JP_STRING;
    rc = jp_string(p, &n->str, &n->str_len);
  } else if (c == '-' || jp_is_digit(c)) {
    rc = p->strict ? jp_number_strict(p, n) : jp_number_lenient(p, n);
  } else {
    static const char *const words[] = {"true", "false", "null"};
    static const ddx_jp_kind_t kinds[] = {DDX_JP_TRUE, DDX_JP_FALSE, DDX_JP_NULL};
    size_t w = 0;
    while (w < 3 && !jp_word_at(p, p->pos, words[w]))
      w++;
    if (w == 3)
      return p->strict ? jp_unexpected(p, "a value")
                       : jp_fail(p, p->pos, "unexpected character '%c'", c);
    n->kind = kinds[w];
    p->pos += strlen(words[w]);
  }
  n->end = p->pos;
  return rc;
}

static int jp_key_cmp(const void *a, const void *b) {
  const ddx_jp_node_t *x = *(ddx_jp_node_t *const *)a, *y = *(ddx_jp_node_t *const *)b;
  int c = memcmp(x->key, y->key, x->key_len < y->key_len ? x->key_len : y->key_len);
  if (c) return c;
  if (x->key_len != y->key_len) return x->key_len < y->key_len ? -1 : 1;
  return x->key_start < y->key_start ? -1 : 1;
}

/* Strict: a key twice in one object is refused. Sorting keeps this
 * O(n log n) on a (fuzzed) object with many members. */
static int jp_check_duplicates(jp_parser_t *p, const ddx_jp_node_t *obj) {
  if (obj->count < 2) return 0;
  ddx_jp_node_t **v = malloc(obj->count * sizeof *v);
  if (!v) return jp_nomem(p->err);
  size_t n = 0;
  for (ddx_jp_node_t *m = obj->first; m; m = m->next)
    v[n++] = m;
  qsort(v, n, sizeof *v, jp_key_cmp);
  const ddx_jp_node_t *dup = NULL, *first = NULL;
  for (size_t i = 1; i < n; i++)
    if (v[i]->key_len == v[i - 1]->key_len && !memcmp(v[i]->key, v[i - 1]->key, v[i]->key_len) &&
        (!dup || v[i]->key_start < dup->key_start))
      dup = v[i], first = v[i - 1];
  free(v);
  if (!dup) return 0;
  size_t line, col, shown = dup->key_end - dup->key_start - 2;
  if (shown > 60) { /* keep the message short, cut on a character boundary */
    shown = 60;
    while (shown && ((unsigned char)p->s[dup->key_start + 1 + shown] & 0xC0) == 0x80)
      shown--;
  }
  ddx_text_line_col(p->s, p->len, first->key_start, &line, &col);
  return jp_fail(p, dup->key_start,
                 "duplicate key \"%.*s\" (also at line %zu): DeepSpeed's hjson reader "
                 "raises on duplicate keys; keep one of them",
                 (int)shown, p->s + dup->key_start + 1, line);
}

static int jp_unterminated(jp_parser_t *p, size_t open, bool obj) {
  const char *what = obj ? "object" : "array";
  if (!p->strict) return jp_fail(p, open, "unterminated %s", what);
  return jp_fail(p, open, "unterminated %s (no closing '%c'): %s", what, obj ? '}' : ']', JP_PLAIN);
}

/* An object or array inside depth containers. */
static int jp_container(jp_parser_t *p, ddx_jp_node_t *n, int depth) {
  bool obj = p->s[p->pos] == '{';
  char close = obj ? '}' : ']';
  if (p->strict && depth >= JP_MAX_DEPTH)
    return jp_fail(p, p->pos, "nesting deeper than %d levels: %s", JP_MAX_DEPTH, JP_PLAIN);
  n->kind = obj ? DDX_JP_OBJECT : DDX_JP_ARRAY;
  size_t open = p->pos++, lead = p->pos, comma = DDX_JP_NONE;
  int rc = jp_ws(p);
  if (rc) return rc;
  if (p->pos < p->len && p->s[p->pos] == close) {
    p->pos++;
    return 0;
  }
  for (;;) {
    if (p->pos >= p->len) return jp_unterminated(p, open, obj);
    if (comma != DDX_JP_NONE && p->s[p->pos] == close) {
      if (p->strict) return jp_fail(p, comma, "trailing comma: %s", JP_PLAIN);
      break; /* hjson takes it */
    }
    ddx_jp_node_t *m = ddx_arena_alloc(p->arena, sizeof *m);
    if (!m) return jp_nomem(p->err);
    m->lead = lead;
    m->comma = DDX_JP_NONE;
    m->parent = n;
    if (obj) {
      if (p->s[p->pos] != '"')
        return p->strict ? jp_unexpected(p, "a double-quoted key")
                         : jp_fail(p, p->pos, "expected a key in double quotes");
      m->key_start = p->pos;
      if ((rc = jp_string(p, &m->key, &m->key_len))) return rc;
      m->key_end = p->pos;
      if ((rc = jp_ws(p))) return rc;
      if (p->pos >= p->len || p->s[p->pos] != ':')
        return p->strict ? jp_unexpected(p, "':' after the key")
                         : jp_fail(p, p->pos, "expected ':' after the key");
      p->pos++;
      if ((rc = jp_ws(p))) return rc;
    }
    if ((rc = jp_value(p, m, depth + 1))) return rc;
    m->prev = n->last;
    if (n->last)
      n->last->next = m;
    else
      n->first = m;
    n->last = m;
    n->count++;
    if ((rc = jp_ws(p))) return rc;
    if (p->pos < p->len && p->s[p->pos] == ',') {
      m->comma = comma = p->pos++;
      lead = p->pos;
      if ((rc = jp_ws(p))) return rc;
      continue;
    }
    if (p->pos < p->len && p->s[p->pos] == close) break;
    if (!p->strict) return jp_fail(p, p->pos, "expected ',' or '%c'", close);
    if (p->pos >= p->len) return jp_unterminated(p, open, obj);
    char want[48];
    snprintf(want, sizeof want, "',' or '%c'", close);
    return jp_unexpected(p, want);
  }
  p->pos++;
  return obj && p->strict ? jp_check_duplicates(p, n) : 0;
}

/* Strict: the top level must open with '{' (said before reading it). */
static int jp_root_strict(jp_parser_t *p) {
  if (p->len >= 3 && !memcmp(p->s, "\xEF\xBB\xBF", 3))
    return jp_fail(p, 0, "a UTF-8 byte-order mark: save the file as UTF-8 without BOM: %s",
                   JP_PLAIN);
  int rc = jp_ws(p);
  if (rc) return rc;
  if (p->pos >= p->len)
    return ddx_error_set(p->err, DDX_EINVAL,
                         "the file is empty: a DeepSpeed config is a JSON object {...}");
  char c = p->s[p->pos];
  if (c == '{') return 0;
  const char *kind = c == '['                             ? "an array"
                     : c == '"'                           ? "a string"
                     : (c == '-' || jp_is_digit(c))       ? "a number"
                     : (c == 't' || c == 'f' || c == 'n') ? "a literal"
                                                          : NULL;
  if (!kind) return jp_unexpected(p, "'{'");
  return jp_fail(p, p->pos,
                 "the top level is %s, not an object: a DeepSpeed config is a "
                 "JSON object {...}",
                 kind);
}

int ddx_jp_parse(const char *text, size_t len, ddx_jp_mode_t mode, ddx_arena_t *arena,
                 ddx_jp_node_t **root, size_t *err_off, ddx_error_t *err) {
  jp_parser_t p = {text, len, 0, mode == DDX_JP_STRICT, arena, err, err_off};
  int rc;
  *root = NULL;
  if (p.strict) {
    if ((rc = jp_root_strict(&p))) return rc;
  } else {
    if (len >= 3 && !memcmp(text, "\xEF\xBB\xBF", 3)) p.pos = 3;
    if ((rc = jp_ws(&p))) return rc;
    if (p.pos >= len) return jp_fail(&p, p.pos, "the file is empty");
  }
  ddx_jp_node_t *n = ddx_arena_alloc(arena, sizeof *n);
  if (!n) return jp_nomem(err);
  n->comma = DDX_JP_NONE;
  if ((rc = jp_value(&p, n, 0)) || (rc = jp_ws(&p))) return rc;
  if (p.pos < len)
    return jp_fail(&p, p.pos,
                   p.strict ? "unexpected text after the closing '}': " JP_PLAIN
                            : "unexpected text after the top-level value");
  if (n->kind != DDX_JP_OBJECT) return jp_fail(&p, n->start, "a DeepSpeed config is an object");
  *root = n;
  return 0;
}

/* ---- tolerant ---- */

size_t ddx_jp_string_end(const char *s, size_t len, size_t open) {
  size_t i = open + 1;
  while (i < len && s[i] != '"' && s[i] != '\n')
    i += s[i] == '\\' ? 2 : 1;
  return i < len ? i : len;
}

bool ddx_jp_scan_ws(ddx_jp_scan_t *t) {
  while (t->pos < t->len) {
    char c = t->s[t->pos];
    if (jp_is_space(c)) {
      t->pos++;
    } else if (c == '#' || (c == '/' && t->pos + 1 < t->len && t->s[t->pos + 1] == '/')) {
      const char *nl = memchr(t->s + t->pos, '\n', t->len - t->pos);
      t->pos = nl ? (size_t)(nl - t->s) : t->len;
    } else if (c == '/' && t->pos + 1 < t->len && t->s[t->pos + 1] == '*') {
      size_t i = t->pos + 2;
      while (i + 1 < t->len && !(t->s[i] == '*' && t->s[i + 1] == '/'))
        i++;
      t->pos = i + 1 < t->len ? i + 2 : t->len;
    } else {
      return true;
    }
  }
  return false;
}

bool ddx_jp_scan_string(ddx_jp_scan_t *t, size_t *a, size_t *b) {
  size_t i = ddx_jp_string_end(t->s, t->len, t->pos);
  if (i >= t->len || t->s[i] != '"') return false;
  *a = t->pos + 1;
  *b = i;
  t->pos = i + 1;
  return true;
}

bool ddx_jp_scan_skip(ddx_jp_scan_t *t) {
  size_t depth = 0, a, b;
  do {
    if (!ddx_jp_scan_ws(t)) return false;
    char c = t->s[t->pos];
    if (c == '"') {
      if (!ddx_jp_scan_string(t, &a, &b)) return false;
    } else if (c == '{' || c == '[') {
      depth++, t->pos++;
    } else if (c == '}' || c == ']') {
      if (!depth) return false; /* a closer where a value should be */
      depth--, t->pos++;
    } else if (c == ',' || c == ':') {
      if (!depth) return false;
      t->pos++;
    } else {
      size_t from = t->pos;
      while (t->pos < t->len && !jp_is_space(t->s[t->pos]) && !strchr(",:{}[]\"#/", t->s[t->pos]))
        t->pos++;
      if (t->pos == from) return false;
    }
  } while (depth);
  return true;
}

#define JP_KEY_DEPTH 32

typedef struct jp_kframe {
  bool object;
  bool want_key;       /* object: the next string is a key */
  size_t kstart, kend; /* the current key's text (without quotes) */
} jp_kframe_t;

static char *jp_key_path(const char *text, const jp_kframe_t *st, size_t depth, size_t ks,
                         size_t ke) {
  ddx_sb_t b;
  ddx_sb_init(&b);
  /* st[i] for i < depth-1 holds the key its child container sits under. */
  for (size_t i = 0; i + 1 < depth; i++) {
    if (!st[i].object || st[i].kend <= st[i].kstart) continue;
    if (b.len) ddx_sb_puts(&b, ".");
    ddx_sb_putn(&b, text + st[i].kstart, st[i].kend - st[i].kstart);
  }
  if (b.len) ddx_sb_puts(&b, ".");
  ddx_sb_putn(&b, text + ks, ke - ks);
  return ddx_sb_take(&b);
}

/* The path of the innermost object's current key; sets kstart and kend. */
static char *jp_key_found(const char *text, const jp_kframe_t *st, size_t depth, size_t *kstart,
                          size_t *kend) {
  if (kstart) *kstart = st[depth - 1].kstart;
  if (kend) *kend = st[depth - 1].kend;
  return jp_key_path(text, st, depth, st[depth - 1].kstart, st[depth - 1].kend);
}

char *ddx_jp_key_at(const char *text, size_t len, size_t off, size_t *kstart, size_t *kend) {
  jp_kframe_t st[JP_KEY_DEPTH];
  size_t depth = 0;
  size_t i = 0;
  while (i < len) {
    char c = text[i];
    if (c == '{' || c == '[') {
      if (depth == JP_KEY_DEPTH) return NULL;
      st[depth++] = (jp_kframe_t){.object = c == '{', .want_key = c == '{'};
      i++;
    } else if (c == '}' || c == ']') {
      if (depth) depth--;
      if (i >= off) return NULL;
      i++;
    } else if (c == ',') {
      if (depth && st[depth - 1].object) st[depth - 1].want_key = true;
      i++;
    } else if (c == ':') {
      if (depth && st[depth - 1].object) st[depth - 1].want_key = false;
      i++;
    } else if (c == '"') {
      size_t s0 = i + 1, e = ddx_jp_string_end(text, len, i);
      bool is_key = depth && st[depth - 1].object && st[depth - 1].want_key;
      if (is_key) {
        st[depth - 1].kstart = s0;
        st[depth - 1].kend = e;
      }
      /* The cursor on a key, or on a scalar value: the key it belongs to. */
      if (off >= i && off <= e && depth && st[depth - 1].object &&
          st[depth - 1].kend > st[depth - 1].kstart)
        return jp_key_found(text, st, depth, kstart, kend);
      i = e < len ? e + 1 : len;
    } else if (jp_is_space(c)) {
      i++;
    } else if (c == '#' ||
               (c == '/' && i + 1 < len && (text[i + 1] == '/' || text[i + 1] == '*'))) {
      /* a comment (DeepSpeed reads hjson) is blank space: a key quoted in
       * it is no key, and a cursor in it is on none */
      ddx_jp_scan_t t = {.s = text, .len = len, .pos = i};
      ddx_jp_scan_ws(&t);
      if (off >= i && off < t.pos) return NULL;
      i = t.pos > i ? t.pos : i + 1;
    } else {
      size_t e = i;
      while (e < len && !strchr(",}]: \t\r\n", text[e]))
        e++;
      if (off >= i && off < e && depth && st[depth - 1].object && !st[depth - 1].want_key &&
          st[depth - 1].kend > st[depth - 1].kstart)
        return jp_key_found(text, st, depth, kstart, kend);
      i = e > i ? e : i + 1;
    }
    if (i > off + 1 && depth == 0) return NULL;
  }
  return NULL;
}
