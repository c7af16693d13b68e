/* Tests for jsonpos.c: the strict and the lenient tree modes on the same
 * texts (what each accepts, the positions it records, how it refuses),
 * the tolerant scans and the key under a cursor, and the line/column
 * counter's line ends (\n, \r\n and a lone \r, as LSP counts them). */
#include <stdlib.h>

#include "check.h"
#include "ddx/jsonpos.h"

/* Reads text in mode; the error message (or "ok") into msg. */
static ddx_jp_node_t *parse(ddx_arena_t *a, const char *text, ddx_jp_mode_t mode, char *msg,
                            size_t cap, size_t *off) {
  ddx_error_t err = {0};
  ddx_jp_node_t *root = NULL;
  size_t o = DDX_JP_NONE;
  int rc = ddx_jp_parse(text, strlen(text), mode, a, &root, &o, &err);
  snprintf(msg, cap, "%s", rc ? err.msg : "ok");
  if (off) *off = o;
  return rc ? NULL : root;
}

/* The message of text read in mode. */
static const char *why(const char *text, ddx_jp_mode_t mode) {
  static char msg[2048];
  ddx_arena_t a;
  ddx_arena_init(&a);
  parse(&a, text, mode, msg, sizeof msg, NULL);
  ddx_arena_free(&a);
  return msg;
}

static const ddx_jp_node_t *member(const ddx_jp_node_t *obj, const char *key) {
  for (const ddx_jp_node_t *m = obj->first; m; m = m->next)
    if (!strcmp(m->key, key)) return m;
  return NULL;
}

static char *span(const char *text, size_t a, size_t b) {
  char *s = malloc(b - a + 1);
  memcpy(s, text + a, b - a);
  s[b - a] = 0;
  return s;
}

#define CHECK_SPAN(text, a, b, want)                                                               \
  do {                                                                                             \
    char *s_ = span(text, a, b);                                                                   \
    CHECK_EQ_STR(s_, want);                                                                        \
    free(s_);                                                                                      \
  } while (0)

static void test_positions(void) {
  /* both tree modes record the same bytes for plain JSON */
  const char *t = "{\n  \"a\": [1, 2.5e1],\n  \"b\": {\"c\": \"x\\u00e9\"},\n  \"d\": null\n}\n";
  for (int mode = DDX_JP_STRICT; mode <= DDX_JP_LENIENT; mode++) {
    ddx_arena_t ar;
    ddx_arena_init(&ar);
    char msg[2048];
    const ddx_jp_node_t *root = parse(&ar, t, (ddx_jp_mode_t)mode, msg, sizeof msg, NULL);
    CHECK_EQ_STR(msg, "ok");
    if (!root) {
      ddx_arena_free(&ar);
      continue;
    }
    CHECK_EQ_INT(root->kind, DDX_JP_OBJECT);
    CHECK_EQ_INT(root->count, 3);
    CHECK_EQ_INT(root->start, 0);
    CHECK_EQ_INT(root->end, strlen(t) - 1); /* the final newline is not the object's */
    const ddx_jp_node_t *a = member(root, "a"), *b = member(root, "b"), *d = member(root, "d");
    CHECK(a && b && d);
    if (!a || !b || !d) {
      ddx_arena_free(&ar);
      continue;
    }
    CHECK_SPAN(t, a->key_start, a->key_end, "\"a\"");
    CHECK_SPAN(t, a->start, a->end, "[1, 2.5e1]");
    CHECK_EQ_INT(a->count, 2);
    CHECK(a->last->kind == DDX_JP_NUMBER && a->last->num == 25.0);
    CHECK_SPAN(t, a->lead, a->key_start, "\n  ");
    CHECK(a->comma != DDX_JP_NONE && t[a->comma] == ',');
    CHECK_EQ_INT(d->comma, DDX_JP_NONE);
    CHECK(d->prev == b && b->parent == root);
    const ddx_jp_node_t *c = member(b, "c");
    CHECK(c && c->kind == DDX_JP_STRING && c->str_len == 3 && !strcmp(c->str, "x\xc3\xa9"));
    CHECK(d->kind == DDX_JP_NULL);
    ddx_arena_free(&ar);
  }
}

static void test_strict_refuses_what_lenient_takes(void) {
  /* hjson: comments, trailing commas, a BOM, strtod numbers, lone surrogates */
  static const struct {
    const char *text, *strict;
  } cases[] = {
      {"{\"a\": 1, # note\n}",
       "line 1, column 10: a comment: comments are allowed by DeepSpeed's hjson reader"},
      {"{\"a\": 1 // note\n}", "line 1, column 9: a comment:"},
      {"{/* x */ \"a\": 1}", "line 1, column 2: a comment:"},
      {"{\"a\": [1, 2,]}", "line 1, column 12: trailing comma: ds_config.json must be plain JSON"},
      {"{\"a\": 1,}", "line 1, column 8: trailing comma:"},
      {"\xEF\xBB\xBF{\"a\": 1}", "line 1, column 1: a UTF-8 byte-order mark"},
      {"{\"a\": 007}", "line 1, column 7: a number with a leading zero"},
      {"{\"a\": 1.}", "line 1, column 9: a digit was expected after '.'"},
      {"{\"a\": \"\\ud83d\"}", "line 1, column 8: unpaired surrogate"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
    const char *s = why(cases[i].text, DDX_JP_STRICT);
    if (strncmp(s, cases[i].strict, strlen(cases[i].strict))) CHECK_EQ_STR(s, cases[i].strict);
    CHECK_EQ_STR(why(cases[i].text, DDX_JP_LENIENT), "ok");
  }
  /* the lenient values: 007 is 7, a comment's bytes are skipped */
  ddx_arena_t ar;
  ddx_arena_init(&ar);
  char msg[2048];
  const char *t = "{\"a\": 007, /* b */ \"c\": [1,],}";
  const ddx_jp_node_t *root = parse(&ar, t, DDX_JP_LENIENT, msg, sizeof msg, NULL);
  CHECK(root && root->count == 2 && root->first->num == 7.0 && root->last->count == 1);
  if (root) CHECK_SPAN(t, root->last->key_start, root->last->key_end, "\"c\"");
  ddx_arena_free(&ar);
}

static void test_both_refuse(void) {
  static const struct {
    const char *text, *strict, *lenient;
  } cases[] = {
      {"", "the file is empty: a DeepSpeed config is a JSON object {...}",
       "line 1, column 1: the file is empty"},
      {"[1]", "line 1, column 1: the top level is an array, not an object",
       "line 1, column 1: a DeepSpeed config is an object"},
      {"{\"a\": 1} x", "line 1, column 10: unexpected text after the closing '}'",
       "line 1, column 10: unexpected text after the top-level value"},
      {"{\"a\": 1", "line 1, column 1: unterminated object (no closing '}')",
       "line 1, column 8: expected ',' or '}'"},
      {"{\"a\": [1", "line 1, column 7: unterminated array (no closing ']')",
       "line 1, column 9: expected ',' or ']'"},
      {"{\"a\" 1}", "line 1, column 6: unexpected '1' where ':' after the key was expected",
       "line 1, column 6: expected ':' after the key"},
      {"{a: 1}", "line 1, column 2: unexpected word 'a' where a double-quoted key was expected",
       "line 1, column 2: expected a key in double quotes"},
      {"{\"a\": yes}", "line 1, column 7: unexpected word 'yes' where a value was expected",
       "line 1, column 7: unexpected character 'y'"},
      {"{\"a\": \"x", "line 1, column 7: unterminated string",
       "line 1, column 7: unterminated string"},
      {"{\"a\": \"\\q\"}", "line 1, column 8: invalid escape in a string",
       "line 1, column 8: bad escape \\q"},
      {"{\"a\": 1 /* open",
       "line 1, column 9: a comment:", "line 1, column 9: unterminated comment"},
      {"{\"a\": 1e999}", "line 1, column 7: a number too large for a double", "ok"},
      {"{\"a\": 1, \"a\": 2}",
       "line 1, column 10: duplicate key \"a\" (also at line 1): DeepSpeed's hjson reader raises",
       "ok"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
    const char *s = why(cases[i].text, DDX_JP_STRICT);
    if (strncmp(s, cases[i].strict, strlen(cases[i].strict))) CHECK_EQ_STR(s, cases[i].strict);
    CHECK_EQ_STR(why(cases[i].text, DDX_JP_LENIENT), cases[i].lenient);
  }
  /* the lenient mode says where it stopped */
  ddx_arena_t ar;
  ddx_arena_init(&ar);
  char msg[2048];
  size_t off;
  CHECK(!parse(&ar, "{\n  \"a\": tru\n}", DDX_JP_LENIENT, msg, sizeof msg, &off));
  CHECK_EQ_INT(off, 9);
  CHECK_EQ_STR(msg, "line 2, column 8: unexpected character 't'");
  ddx_arena_free(&ar);
}

/* 64 nested containers are read; the strict mode refuses the 65th, the
 * lenient one a value inside 65. */
static void test_depth(void) {
  char buf[512];
  for (int n = 63; n <= 65; n++) {
    size_t k = 0;
    k += (size_t)snprintf(buf + k, sizeof buf - k, "{\"a\":");
    for (int i = 1; i < n; i++)
      buf[k++] = '[';
    buf[k++] = '1';
    for (int i = 1; i < n; i++)
      buf[k++] = ']';
    buf[k++] = '}';
    buf[k] = 0;
    const char *s = why(buf, DDX_JP_STRICT);
    if (n <= 64)
      CHECK_EQ_STR(s, "ok");
    else
      CHECK(strstr(s, "nesting deeper than 64 levels") != NULL);
    CHECK_EQ_STR(why(buf, DDX_JP_LENIENT), n <= 64 ? "ok" : "line 1, column 70: nested too deeply");
  }
}

static void test_line_col(void) {
  size_t l, c;
  const char *t = "a\nb\r\ncd\re\xc3\xa9x";
  ddx_text_line_col(t, strlen(t), 2, &l, &c); /* b */
  CHECK(l == 2 && c == 1);
  ddx_text_line_col(t, strlen(t), 6, &l, &c); /* d: after \r\n */
  CHECK(l == 3 && c == 2);
  ddx_text_line_col(t, strlen(t), 8, &l, &c); /* e: after a lone \r */
  CHECK(l == 4 && c == 1);
  ddx_text_line_col(t, strlen(t), 11, &l, &c); /* x: after the 2-byte e-acute */
  CHECK(l == 4 && c == 3);
  ddx_text_line_col(t, strlen(t), 3, &l, &c); /* the \r of \r\n ends the line: no column */
  CHECK(l == 2 && c == 2);
  /* a message's line is the editor's, whatever the line ends */
  CHECK_EQ_STR(why("{\r  \"a\": 1,\r  \"b\": x\r}\r", DDX_JP_LENIENT),
               "line 3, column 8: unexpected character 'x'");
}

static void test_tolerant(void) {
  /* the scan goes through comments and stops where the text breaks */
  const char *t = "{ # c\n \"a\": {\"b\": [1, \"]\"]}, // d\n \"e\": \"open\n}";
  ddx_jp_scan_t s = {t, strlen(t), 0};
  size_t a = 0, b = 0;
  CHECK(ddx_jp_scan_ws(&s) && t[s.pos] == '{');
  s.pos++;
  CHECK(ddx_jp_scan_ws(&s) && ddx_jp_scan_string(&s, &a, &b));
  CHECK_SPAN(t, a, b, "a");
  CHECK(ddx_jp_scan_ws(&s) && t[s.pos] == ':');
  s.pos++;
  CHECK(ddx_jp_scan_skip(&s) && t[s.pos] == ',');
  s.pos++;
  CHECK(ddx_jp_scan_ws(&s) && ddx_jp_scan_string(&s, &a, &b));
  CHECK_SPAN(t, a, b, "e");
  s.pos++;
  CHECK(ddx_jp_scan_ws(&s) && !ddx_jp_scan_string(&s, &a, &b)); /* cut by the line break */
  CHECK_EQ_INT(ddx_jp_string_end(t, strlen(t), (size_t)(strstr(t, "\"open") - t)),
               strstr(t, "\n}") - t);
  /* the key under the cursor, also in a text that does not parse */
  const char *u = "{\"zero_optimization\": {\"stage\": 3, \"offload_param\": {\"device\": \"cp";
  size_t ks = 0, ke = 0;
  char *p = ddx_jp_key_at(u, strlen(u), (size_t)(strstr(u, "stage") - u) + 1, &ks, &ke);
  CHECK_EQ_STR(p, "zero_optimization.stage");
  CHECK_SPAN(u, ks, ke, "stage");
  free(p);
  p = ddx_jp_key_at(u, strlen(u), (size_t)(strstr(u, "3,") - u), NULL, NULL);
  CHECK_EQ_STR(p, "zero_optimization.stage");
  free(p);
  p = ddx_jp_key_at(u, strlen(u), strlen(u), NULL, NULL);
  CHECK_EQ_STR(p, "zero_optimization.offload_param.device");
  free(p);
  CHECK(ddx_jp_key_at(u, strlen(u), 0, NULL, NULL) == NULL);
  /* comments are blank: a key quoted in one opens nothing */
  const char *c = "{\"fp16\": {\"enabled\": true}, // \"zero\": {\n"
                  "  /* \"offload\": { */ \"bf16\": {\"enabled\": false},\n"
                  "  # \"x\": [\n  \"steps\": 5}";
  p = ddx_jp_key_at(c, strlen(c), (size_t)(strstr(c, "\"bf16") - c) + 1, NULL, NULL);
  CHECK_EQ_STR(p, "bf16");
  free(p);
  p = ddx_jp_key_at(c, strlen(c), (size_t)(strstr(c, "false") - c), NULL, NULL);
  CHECK_EQ_STR(p, "bf16.enabled");
  free(p);
  p = ddx_jp_key_at(c, strlen(c), (size_t)(strstr(c, "5}") - c), NULL, NULL);
  CHECK_EQ_STR(p, "steps");
  free(p);
  CHECK(ddx_jp_key_at(c, strlen(c), (size_t)(strstr(c, "zero") - c), NULL, NULL) == NULL);
  CHECK(ddx_jp_key_at(c, strlen(c), (size_t)(strstr(c, "offload") - c), NULL, NULL) == NULL);
}

int main(void) {
  test_positions();
  test_strict_refuses_what_lenient_takes();
  test_both_refuse();
  test_depth();
  test_line_col();
  test_tolerant();
  CHECK_DONE();
}
