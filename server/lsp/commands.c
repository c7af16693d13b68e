/* commands.c - workspace/executeCommand (see internal.h):
 * ddx.diagnoseText, ddx.diagnoseFile (inside the workspace folders unless
 * allowed), ddx.explain, ddx.catalog and ddx.showFix (actions.c). */
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

/* ---------------------------------------------------------------- commands */

static json_t *lsp_arg(json_t *params, const char *key) {
  json_t *a = json_array_get(json_object_get(params, "arguments"), 0);
  if (json_is_object(a)) a = json_object_get(a, key);
  return a;
}

static json_t *lsp_cmd_diagnose_text(ddx_lsp_server_t *s, json_t *params, ddx_lsp_call_t *call) {
  json_t *text = lsp_arg(params, "text");
  if (!json_is_string(text))
    return ddx_lsp_fail(call, DDX_LSP_INVALID_PARAMS,
                        "ddx.diagnoseText needs the text as its first argument");
  if (!s->cat) return ddx_lsp_fail(call, DDX_LSP_REQUEST_FAILED, "the rule catalog is not loaded");
  ddx_lsp_job_t *j = ddx_lsp_job_new(s, DDX_LSP_JOB_TEXT);
  if (!j) return ddx_lsp_fail(call, DDX_LSP_INTERNAL_ERROR, "out of memory");
  j->text = ddx_lsp_text_new(json_string_value(text), json_string_length(text));
  j->total = json_string_length(text);
  j->req_id = json_incref(call->id);
  if (!j->text || ddx_lsp_job_queue(s, j)) {
    ddx_lsp_job_free(j);
    return ddx_lsp_fail(call, DDX_LSP_INTERNAL_ERROR, "could not start the scan");
  }
  call->deferred = true;
  json_t *tok = json_object_get(params, "workDoneToken");
  if (tok || j->total >= DDX_LSP_PROGRESS_MIN_BYTES) ddx_lsp_progress_want(s, j, tok);
  return NULL;
}

/* The workspace folders, NULL-terminated, for a worker to check against. */
static char **lsp_folders_copy(const ddx_lsp_server_t *s) {
  char **v = calloc(s->ws.nfolders + 1, sizeof *v);
  for (size_t i = 0; v && i < s->ws.nfolders; i++) {
    if (!(v[i] = strdup(s->ws.folders[i]))) {
      for (size_t k = 0; k < i; k++)
        free(v[k]);
      free(v);
      return NULL;
    }
  }
  return v;
}

static json_t *lsp_cmd_diagnose_file(ddx_lsp_server_t *s, json_t *params, ddx_lsp_call_t *call) {
  json_t *juri = lsp_arg(params, "uri");
  if (!json_is_string(juri))
    return ddx_lsp_fail(call, DDX_LSP_INVALID_PARAMS,
                        "ddx.diagnoseFile needs a file URI as its first argument");
  char *path = ddx_lsp_uri_to_path(json_string_value(juri));
  if (!path)
    return ddx_lsp_fail(call, DDX_LSP_INVALID_PARAMS, "ddx.diagnoseFile: not a local file URI");
  if (!s->cat) {
    free(path);
    return ddx_lsp_fail(call, DDX_LSP_REQUEST_FAILED, "the rule catalog is not loaded");
  }
  /* Nothing is opened here: the worker opens and checks the file. */
  ddx_lsp_job_t *j = ddx_lsp_job_new(s, DDX_LSP_JOB_FILE);
  if (!j || (!s->ws.allow_outside && !(j->folders = lsp_folders_copy(s)))) {
    if (j) ddx_lsp_job_free(j);
    free(path);
    return ddx_lsp_fail(call, DDX_LSP_INTERNAL_ERROR, "out of memory");
  }
  j->path = path;
  j->uri = strdup(json_string_value(juri));
  j->req_id = json_incref(call->id);
  if (!j->uri || ddx_lsp_job_queue(s, j)) {
    ddx_lsp_job_free(j);
    return ddx_lsp_fail(call, DDX_LSP_INTERNAL_ERROR, "could not start the scan");
  }
  call->deferred = true;
  ddx_lsp_progress_want(s, j, json_object_get(params, "workDoneToken"));
  return NULL;
}

static json_t *lsp_cmd_explain(ddx_lsp_server_t *s, json_t *params, ddx_lsp_call_t *call) {
  json_t *id = lsp_arg(params, "id");
  if (!json_is_string(id))
    return ddx_lsp_fail(call, DDX_LSP_INVALID_PARAMS, "ddx.explain needs a failure id");
  const ddx_rule_t *r = s->cat ? ddx_catalog_find(s->cat->cat, json_string_value(id)) : NULL;
  if (!r)
    return ddx_lsp_fail(call, DDX_LSP_INVALID_PARAMS, "no failure class \"%.200s\" in the catalog",
                        json_string_value(id));
  ddx_report_opts_t o = {0};
  char *js = ddx_report_explain(r, &o, true);
  json_t *v = js ? json_loads(js, 0, NULL) : NULL;
  free(js);
  if (!v) return ddx_lsp_fail(call, DDX_LSP_REQUEST_FAILED, "could not read %s", r->file);
  /* href: the class's page (the shipped site; a team rule: its file);
   * rule_file: the rule file itself */
  char *href = ddx_lsp_rule_href(s->cat, r);
  char *file = ddx_lsp_rule_file_uri(r);
  if (href || file) json_object_set_new(v, "href", json_string(href ? href : file));
  if (file) json_object_set_new(v, "rule_file", json_string(file));
  free(href);
  free(file);
  return v;
}

/* ddx.catalog: every failure class of the loaded catalog (extra rule
 * folders included), for pickers and catalog views. */
static json_t *lsp_cmd_catalog(ddx_lsp_server_t *s, json_t *params, ddx_lsp_call_t *call) {
  (void)params;
  if (!s->cat) return ddx_lsp_fail(call, DDX_LSP_REQUEST_FAILED, "no catalog is loaded");
  const ddx_catalog_t *cat = s->cat->cat;
  json_t *arr = json_array();
  for (size_t i = 0; i < cat->nrules; i++) {
    const ddx_rule_t *r = &cat->rules[i];
    json_t *o = json_pack("{s:s, s:s, s:s, s:s, s:s, s:i}", "id", r->id, "title", r->title,
                          "severity", ddx_severity_name((int)r->severity), "role",
                          ddx_role_name((int)r->role), "phase", r->phase, "priority", r->priority);
    /* the hub's matrix and look-alike tables (null when the entry lacks them) */
    json_object_set_new(o, "family", r->family ? json_string(r->family) : json_null());
    json_object_set_new(o, "group", r->compare_group ? json_string(r->compare_group) : json_null());
    json_object_set_new(o, "related", json_array());
    for (size_t k = 0; k < r->related.n; k++)
      json_array_append_new(json_object_get(o, "related"), json_string(r->related.v[k]));
    json_array_append_new(arr, o);
  }
  return json_pack("{s:o}", "failures", arr);
}

json_t *ddx_lsp_execute_command(ddx_lsp_server_t *s, json_t *params, ddx_lsp_call_t *call) {
  const char *cmd = json_string_value(json_object_get(params, "command"));
  json_t *args = json_object_get(params, "arguments");
  if (!cmd) return ddx_lsp_fail(call, DDX_LSP_INVALID_PARAMS, "executeCommand needs a command");
  if (args && !json_is_array(args))
    return ddx_lsp_fail(call, DDX_LSP_INVALID_PARAMS, "arguments must be an array");
  if (!strcmp(cmd, "ddx.diagnoseText")) return lsp_cmd_diagnose_text(s, params, call);
  if (!strcmp(cmd, "ddx.diagnoseFile")) return lsp_cmd_diagnose_file(s, params, call);
  if (!strcmp(cmd, "ddx.explain")) return lsp_cmd_explain(s, params, call);
  if (!strcmp(cmd, "ddx.catalog")) return lsp_cmd_catalog(s, params, call);
  if (!strcmp(cmd, "ddx.showFix")) return ddx_lsp_cmd_show_fix(s, params, call);
  return ddx_lsp_fail(call, DDX_LSP_INVALID_PARAMS, "unknown command %.200s", cmd);
}
