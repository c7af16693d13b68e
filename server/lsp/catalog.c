/* catalog.c - the catalog the server shares with its scans (see
 * internal.h): loading the built-in rules and ddx.rules.extraPaths
 * (falling back to the built-in ones when a team folder is broken),
 * reference counting, the links from a rule to its encyclopedia page and
 * its file, and a finished result's release. */
#include "internal.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ddx/file.h"
#include "ddx/hub.h"
#include "ddx/report.h"
#include "ddx/split.h"

/* ---------------------------------------------------------------- catalog */

ddx_lsp_catalog_t *ddx_lsp_catalog_ref(ddx_lsp_catalog_t *c) {
  if (c) c->refs++;
  return c;
}

void ddx_lsp_catalog_unref(ddx_lsp_catalog_t *c) {
  if (!c || --c->refs > 0) return;
  ddx_catalog_free(c->cat);
  free(c->root);
  free(c->hub);
  free(c);
}

/* The built-in catalog, found as the CLI finds it (ddx_catalog_default_dir). */
static char *lsp_default_rules(void) {
  char buf[PATH_MAX + 32];
#ifdef DDX_SOURCE_RULES_DIR
  return strdup(ddx_catalog_default_dir(buf, sizeof buf, DDX_SOURCE_RULES_DIR));
#else
  return strdup(ddx_catalog_default_dir(buf, sizeof buf, NULL));
#endif
}

static int lsp_load(ddx_lsp_server_t *s, bool with_extra, ddx_lsp_catalog_t **out,
                    ddx_error_t *err) {
  const char *paths[65];
  size_t n = 0;
  paths[n++] = s->rules_default;
  for (size_t i = 0; with_extra && i < s->ws.nextra_rules && n < 65; i++)
    paths[n++] = s->ws.extra_rules[i];
  ddx_catalog_t *cat = NULL;
  int rc = ddx_catalog_load(&cat, paths, n, err);
  if (rc) return rc;
  ddx_lsp_catalog_t *c = calloc(1, sizeof *c);
  if (!c) {
    ddx_catalog_free(cat);
    return ddx_error_set(err, DDX_ENOMEM, "out of memory");
  }
  c->refs = 1;
  c->cat = cat;
  c->root = strdup(s->rules_default);
  char hub[PATH_MAX];
  if (ddx_hub_find(hub, sizeof hub, s->rules_default)) c->hub = strdup(hub);
  *out = c;
  return 0;
}

char *ddx_lsp_rule_file_uri(const ddx_rule_t *r);

/* Where a rules-check finding goes in its file: the first occurrence of
 * the JSON string it is about (a literal, a related id, the rule's id),
 * else the first line. */
static json_t *lsp_check_range(ddx_lsp_server_t *s, const ddx_check_t *k) {
  ddx_file_opts_t fo = {.max_bytes = DDX_FILE_CAP_RULE, .what = "rule file"};
  char *data = NULL;
  size_t len = 0;
  ddx_error_t err = {0};
  if (ddx_file_read(k->rule->file, &fo, &data, &len, &err)) data = NULL, len = 0;
  ddx_lsp_text_t *t = ddx_lsp_text_new(data ? data : "", len);
  free(data);
  if (!t) return NULL;
  json_t *js = k->subject ? json_string(k->subject) : NULL;
  char *needle = js ? json_dumps(js, JSON_ENCODE_ANY) : NULL;
  json_decref(js);
  const char *at = needle ? strstr(t->data, needle) : NULL; /* rule files are text */
  json_t *range = at ? ddx_lsp_range(t, s->life.encoding, (size_t)(at - t->data),
                                     (size_t)(at - t->data) + strlen(needle))
                     : ddx_lsp_line_range(t, s->life.encoding, 0);
  free(needle);
  ddx_lsp_text_unref(t);
  return range;
}

/* What `ddx rules check` says of the team's rule files (ddx_catalog_check,
 * not strict: the encyclopedia's fields warn), as their diagnostics, in
 * the CLI's words; the built-in catalog is checked by make test, and a
 * finding of the catalog as a whole is logged. A file whose findings are
 * gone is cleared. */
static void lsp_publish_rule_checks(ddx_lsp_server_t *s, const ddx_lsp_catalog_t *c) {
  ddx_checks_t found;
  if (ddx_catalog_check(c->cat, false, &found)) {
    ddx_checks_free(&found);
    ddx_lsp_log(s, DDX_LSP_LOG_WARNING, "rules check: out of memory");
    return;
  }
  json_t *by_uri = json_object(); /* uri -> diagnostics */
  size_t i;
  json_t *v;
  json_array_foreach(s->rule_check_uris, i, v) {
    json_object_set_new(by_uri, json_string_value(v), json_array());
  }
  size_t n = c->root ? strlen(c->root) : 0;
  for (i = 0; by_uri && i < found.list.len; i++) {
    const ddx_check_t *k = &DDX_VEC_AT(&found.list, ddx_check_t, i);
    char line[2048];
    ddx_check_format(k, !k->rule, line, sizeof line);
    if (!k->rule) {
      ddx_lsp_log(s, DDX_LSP_LOG_WARNING, "rules check: %s", line);
      continue;
    }
    if (n && !strncmp(k->rule->file, c->root, n) && k->rule->file[n] == '/') continue;
    char *u = ddx_lsp_rule_file_uri(k->rule);
    json_t *range = u ? lsp_check_range(s, k) : NULL;
    if (!range) {
      free(u);
      continue;
    }
    json_t *arr = json_object_get(by_uri, u);
    if (!arr) json_object_set_new(by_uri, u, arr = json_array());
    json_array_append_new(arr,
                          json_pack("{s:o, s:i, s:s, s:o}", "range", range, "severity",
                                    k->level == DDX_CHECK_FAIL ? 1 : 2, "source", "ddx rules check",
                                    "message", ddx_lsp_jstr(line, strlen(line))));
    free(u);
  }
  ddx_checks_free(&found);
  json_t *now = json_array();
  const char *u;
  json_object_foreach(by_uri, u, v) {
    ddx_lsp_notify(s, "textDocument/publishDiagnostics",
                   json_pack("{s:s, s:O}", "uri", u, "diagnostics", v));
    if (json_array_size(v)) json_array_append_new(now, json_string(u));
  }
  json_decref(by_uri);
  json_decref(s->rule_check_uris);
  s->rule_check_uris = now;
}

int ddx_lsp_catalog_reload(ddx_lsp_server_t *s, char *errbuf, size_t errcap) {
  if (!s->rules_default) s->rules_default = lsp_default_rules();
  ddx_error_t err = {0};
  ddx_lsp_catalog_t *c = NULL;
  int rc = lsp_load(s, true, &c, &err);
  if (rc) {
    snprintf(errbuf, errcap, "ddx: the rule catalog did not load: %s", err.msg);
    ddx_lsp_log(s, DDX_LSP_LOG_ERROR, "%s", errbuf);
    /* A broken user rule must not take the built-in catalog down with it. */
    if (s->ws.nextra_rules && !s->cat) {
      ddx_error_t e2 = {0};
      if (lsp_load(s, false, &c, &e2) == 0) s->cat = c;
    }
    return -1;
  }
  for (size_t i = 0; i < c->cat->warnings.n; i++)
    ddx_lsp_log(s, DDX_LSP_LOG_WARNING, "rules: %s", c->cat->warnings.v[i]);
  ddx_lsp_catalog_unref(s->cat);
  s->cat = c;
  ddx_lsp_log(s, DDX_LSP_LOG_INFO, "catalog: %zu rules from %s%s", c->cat->nrules, s->rules_default,
              s->ws.nextra_rules ? " and the extra rule folders" : "");
  lsp_publish_rule_checks(s, c);
  return 0;
}

/* The file: URI of the rule's file (its real path). */
char *ddx_lsp_rule_file_uri(const ddx_rule_t *r) {
  char *real = realpath(r->file, NULL);
  char *u = ddx_lsp_path_to_uri(real ? real : r->file);
  free(real);
  return u;
}

char *ddx_lsp_rule_href(const ddx_lsp_catalog_t *c, const ddx_rule_t *r) {
  size_t n = c->root ? strlen(c->root) : 0;
  /* A built-in class links its page of the site shipped with the binary;
   * without one it has no link (never a placeholder). */
  if (n && !strncmp(r->file, c->root, n) && r->file[n] == '/') return ddx_hub_uri(c->hub, r->id);
  /* A user rule has no public page: its file is its documentation. */
  return ddx_lsp_rule_file_uri(r);
}

/* ----------------------------------------------------------------- results */

void ddx_lsp_result_free(ddx_lsp_result_t *r) {
  if (!r) return;
  ddx_diagnosis_free(&r->diag);
  ddx_scan_free(&r->scan);
  free(r->facts.ds_json);
  ddx_lsp_text_unref(r->text);
  ddx_lsp_catalog_unref(r->cat);
  free(r);
}
