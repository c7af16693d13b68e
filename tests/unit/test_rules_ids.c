/* Unit tests for what a rule pack and a log may put on a terminal: rule
 * ids must match ^[a-z0-9]+(\.[a-z0-9-]+)+$ (rules.c, the error naming the
 * file and $.id, the bad id shown with its control bytes escaped), clue and
 * phase ids in loader errors are escaped, and every text rendering
 * (report.c: ddx_sb_put_term, the text report, evidence, explain) shows
 * control characters escaped while keeping its own colours and valid UTF-8.
 * The catalog is written in memory. */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "ddx/diagnose.h"
#include "ddx/report.h"
#include "ddx/rules.h"
#include "ddx/scan.h"

/* A rule with the given id (a JSON string's content), title and fix. */
static char *rule_json(const char *id, const char *title, const char *fix) {
  ddx_sb_t b;
  ddx_sb_init(&b);
  ddx_sb_printf(&b,
                "{\"id\": \"%s\", \"title\": \"%s\", \"phase\": \"step\", \"severity\": "
                "\"error\", \"role\": \"cause\", \"priority\": 50, \"signatures\": [{\"regex\": "
                "\"BOOM (?<what>.*)\", \"literals\": [\"BOOM \"]}], \"summary\": \"s\", "
                "\"mechanism\": \"m\", \"fix\": [\"%s\"], \"verify\": \"v\", \"samples\": "
                "{\"positive\": [{\"text\": \"BOOM x\"}]}}",
                id, title, fix);
  return ddx_sb_take(&b);
}

static ddx_catalog_t *load1(const char *text, ddx_error_t *err) {
  const char *names[] = {"rules/x.json"};
  const char *texts[] = {text};
  size_t lens[] = {strlen(text)};
  ddx_catalog_t *cat = NULL;
  ddx_catalog_load_texts(&cat, names, texts, lens, 1, err);
  return cat;
}

static void expect_id_ok(const char *id) {
  ddx_error_t err = {0};
  char *j = rule_json(id, "t", "f");
  ddx_catalog_t *cat = load1(j, &err);
  if (!cat) fprintf(stderr, "id %s refused: %s\n", id, err.msg);
  CHECK(cat != NULL);
  ddx_catalog_free(cat);
  free(j);
}

/* The id (JSON content) is refused with exactly this message. */
static void expect_id_bad(const char *id, const char *shown) {
  ddx_error_t err = {0};
  char *j = rule_json(id, "t", "f");
  ddx_catalog_t *cat = load1(j, &err);
  CHECK(cat == NULL);
  char want[512];
  snprintf(want, sizeof want, "rules/x.json: $.id: '%s' must match ^[a-z0-9]+(\\.[a-z0-9-]+)+$",
           shown);
  CHECK_EQ_STR(err.msg, want);
  CHECK(!strchr(err.msg, '\033'));
  ddx_catalog_free(cat);
  free(j);
}

static void test_rule_ids(void) {
  expect_id_ok("ds.oom.activations");
  expect_id_ok("py.traceback-cut");
  expect_id_ok("nccl.timeout.all-reduce");
  expect_id_ok("a.b");
  expect_id_ok("0x.9-");
  expect_id_bad("Foo.Bar", "Foo.Bar");
  expect_id_bad("a.b\\\"} x{", "a.b\"} x{");
  expect_id_bad("nodot", "nodot");
  expect_id_bad(".a", ".a");
  expect_id_bad("a.", "a.");
  expect_id_bad("a..b", "a..b");
  expect_id_bad("a-b.c", "a-b.c"); /* no '-' in the family */
  expect_id_bad("a.b c", "a.b c");
  expect_id_bad("a.b_c", "a.b_c");
  expect_id_bad("a.b\\u001b[31mred", "a.b\\x1b[31mred");
  expect_id_bad("a.b\\u0007", "a.b\\x07");
  expect_id_bad("a.b\\u009b", "a.b\\xc2\\x9b");
  expect_id_bad("a.b\\\\x", "a.b\\\\x");
  expect_id_bad("a.\\u00e9", "a.\\xc3\\xa9");
  /* a long bad id is cut, the message stays bounded */
  {
    char id[600];
    memset(id, 'X', sizeof id - 1);
    id[sizeof id - 1] = 0;
    ddx_error_t err = {0};
    char *j = rule_json(id, "t", "f");
    CHECK(load1(j, &err) == NULL);
    CHECK(strstr(err.msg, "rules/x.json: $.id: 'XXXX") != NULL);
    CHECK(strstr(err.msg, "...' must match") != NULL);
    free(j);
  }
}

/* Clue and phase ids are not rule ids, but loader errors print them. */
static void test_other_ids_in_errors(void) {
  ddx_error_t err = {0};
  const char *clue =
      "{\"id\": \"t.a\", \"title\": \"a\", \"phase\": \"step\", \"summary\": \"s\", "
      "\"mechanism\": \"m\", \"fix\": [\"f\"], \"samples\": {\"positive\": [{\"text\": \"x\"}]}, "
      "\"severity\": \"error\", \"role\": \"cause\", \"priority\": 5, \"signatures\": "
      "[{\"regex\": \"x\", \"literals\": [\"xx\"]}], \"clues\": [{\"id\": "
      "\"c\\u001b]0;pwn\\u0007\", "
      "\"why\": \"w\", \"weight\": 1, \"frame\": \"(\"}]}";
  CHECK(load1(clue, &err) == NULL);
  CHECK(strstr(err.msg, "rule t.a clue c\\x1b]0;pwn\\x07: regex does not compile") != NULL);
  CHECK(!strchr(err.msg, '\033') && !strchr(err.msg, '\a'));

  const char *names[] = {"a.phases.json", "b.phases.json"};
  const char *texts[] = {"{\"phases\": [{\"id\": \"p\\u001b[2J\", \"title\": \"t\", \"frames\": "
                         "[\"x\"]}]}",
                         "{\"phases\": [{\"id\": \"p\\u001b[2J\", \"title\": \"t\", \"frames\": "
                         "[\"x\"]}]}"};
  size_t lens[] = {strlen(texts[0]), strlen(texts[1])};
  ddx_catalog_t *cat = NULL;
  err = (ddx_error_t){0};
  CHECK(ddx_catalog_load_texts(&cat, names, texts, lens, 2, &err) != 0);
  CHECK(strstr(err.msg, "phase \"p\\x1b[2J\" is already defined") != NULL);
  CHECK(!strchr(err.msg, '\033'));
}

static void expect_term(const char *in, const char *want) {
  char *got = ddx_term_escape(in);
  CHECK_EQ_STR(got, want);
  free(got);
}

static void test_term_escape(void) {
  expect_term("plain text, tab\there", "plain text, tab\there");
  expect_term("red \033[31mRED\033[0m", "red \\x1b[31mRED\\x1b[0m");
  expect_term("bell\a, cr\r, nl\n, del\x7f", "bell\\x07, cr\\x0d, nl\\x0a, del\\x7f");
  expect_term("osc \033]0;title\a", "osc \\x1b]0;title\\x07");
  expect_term("c1 \xc2\x9b"
              "31m and \xc2\x80",
              "c1 \\u009b31m and \\u0080");
  expect_term("lone \x9b"
              "31m",
              "lone \\x9b31m");
  expect_term("bad \xff\xfe end", "bad \\xff\\xfe end");
  expect_term("cut \xe2\x94", "cut \\xe2\\x94");
  expect_term("overlong \xc0\xaf", "overlong \\xc0\\xaf");
  expect_term("utf-8 kept: \xc3\xa9 \xc2\xa0 \xe2\x96\x88 \xf0\x9f\x8e\x89",
              "utf-8 kept: \xc3\xa9 \xc2\xa0 \xe2\x96\x88 \xf0\x9f\x8e\x89");
  expect_term("", "");
  expect_term(NULL, "");
  ddx_sb_t b;
  ddx_sb_init(&b);
  ddx_sb_put_term(&b, "ab\033cd", 3); /* only n bytes */
  CHECK_EQ_STR(b.s, "ab\\x1b");
  ddx_sb_free(&b);
}

static void expect_md(const char *in, bool code_spans, const char *want) {
  ddx_sb_t b;
  ddx_sb_init(&b);
  ddx_sb_put_md(&b, in, strlen(in), code_spans);
  CHECK_EQ_STR(b.s ? b.s : "", want);
  ddx_sb_free(&b);
}

static void expect_md_code(const char *in, const char *want) {
  ddx_sb_t b;
  ddx_sb_init(&b);
  ddx_sb_put_md_code(&b, in, strlen(in));
  CHECK_EQ_STR(b.s ? b.s : "", want);
  ddx_sb_free(&b);
}

static void test_markdown(void) {
  expect_md("plain 3.91 GiB, rank-7", false, "plain 3.91 GiB, rank-7");
  expect_md("[click](command:x) ![i](http://t/p.png)", false,
            "\\[click\\]\\(command:x\\) \\!\\[i\\]\\(http://t/p.png\\)");
  expect_md("<img src=x onerror=y> & *b* _i_ # h | t ~s~ {a} \\", false,
            "\\<img src=x onerror=y\\> \\& \\*b\\* \\_i\\_ \\# h \\| t \\~s\\~ \\{a\\} \\\\");
  expect_md("use `ds_config.json` [x]", true, "use `ds_config.json` \\[x\\]");
  expect_md("use `ds_config.json` [x]", false, "use \\`ds\\_config.json\\` \\[x\\]");
  expect_md("a lone ` tick", true, "a lone \\` tick");
  expect_md("``", true, "\\`\\`");
  expect_md("esc \033[31m `code \033]0;t\a`", true, "esc \\x1b\\[31m `code \\x1b]0;t\\x07`");
  expect_md("\xc3\xa9 kept", false, "\xc3\xa9 kept");
  expect_md_code("attention_mask", "`attention_mask`");
  expect_md_code("a`b", "``a`b``");
  expect_md_code("`x``", "``` `x`` ```");
  expect_md_code("bel\a", "`bel\\x07`");
}

/* Every ESC in s starts one of the report's own colours. */
static bool only_own_colours(const char *s) {
  static const char *const own[] = {"\033[1m",  "\033[1;31m", "\033[1;33m",
                                    "\033[36m", "\033[2m",    "\033[0m"};
  for (const char *p = strchr(s, '\033'); p; p = strchr(p + 1, '\033')) {
    bool ok = false;
    for (size_t i = 0; i < sizeof own / sizeof *own && !ok; i++)
      ok = !strncmp(p, own[i], strlen(own[i]));
    if (!ok) return false;
  }
  return true;
}

/* No raw control byte but newline (and the colours' ESC) in s. */
static bool no_controls(const char *s, bool allow_esc) {
  for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
    if (*p == '\n' || *p == '\t' || (allow_esc && *p == 0x1b)) continue;
    if (*p < 0x20 || *p == 0x7f || *p == 0x9b) return false;
    if (p[0] == 0xc2 && p[1] >= 0x80 && p[1] < 0xa0) return false;
  }
  return true;
}

static void test_renderings(void) {
  ddx_error_t err = {0};
  char *j = rule_json("evil.rule", "Title \\u001b[31mRED\\u0007 \\u009b2J end",
                      "run \\u001b]0;pwned\\u0007 now");
  ddx_catalog_t *cat = load1(j, &err);
  free(j);
  if (!cat) fprintf(stderr, "catalog: %s\n", err.msg);
  CHECK(cat != NULL);
  if (!cat) return;
  const char *log = "step 1\nBOOM \033[2J\033[31mcleared\a\xc2\x9b"
                    "5n \xe2\x96\x88 done\n";
  ddx_scan_t scan;
  ddx_diagnosis_t d;
  CHECK(ddx_scan_init(&scan, cat) == 0);
  CHECK(ddx_scan_text(&scan, "t\033[1m.log", log, strlen(log)) == 0);
  CHECK(ddx_diagnose(&d, &scan, &err) == 0);
  CHECK_EQ_INT(d.n, 1);
  for (int color = 0; color < 2; color++) {
    ddx_report_opts_t o = {.color = color == 1};
    char *t = ddx_report_text(&d, &o);
    CHECK(t != NULL);
    if (!t) continue;
    CHECK(no_controls(t, color == 1));
    CHECK(only_own_colours(t));
    CHECK(strstr(t, "Title \\x1b[31mRED\\x07 \\u009b2J end") != NULL);
    CHECK(strstr(t, "run \\x1b]0;pwned\\x07 now") != NULL);
    CHECK(strstr(t, "t\\x1b[1m.log") != NULL);
    CHECK(strstr(t, "\xe2\x96\x88 done") != NULL); /* UTF-8 kept */
    CHECK(strstr(t, "\\u009b5n") != NULL);
    if (color) CHECK(strstr(t, "\033[1m") != NULL); /* its own colours stay */
    free(t);
  }
  char *ev = ddx_report_evidence(&d, NULL);
  CHECK(ev && no_controls(ev, false));
  CHECK(ev && strstr(ev, "BOOM cleared\\x07\\u009b5n \xe2\x96\x88 done") != NULL);
  free(ev);
  ddx_report_opts_t o = {.color = true};
  char *ex = ddx_report_explain(ddx_catalog_find(cat, "evil.rule"), &o, false);
  CHECK(ex && no_controls(ex, true) && only_own_colours(ex));
  CHECK(ex && strstr(ex, "run \\x1b]0;pwned\\x07 now") != NULL);
  free(ex);
  ddx_diagnosis_free(&d);
  ddx_scan_free(&scan);
  ddx_catalog_free(cat);
}

int main(void) {
  test_rule_ids();
  test_other_ids_in_errors();
  test_term_escape();
  test_markdown();
  test_renderings();
  CHECK_DONE();
}
