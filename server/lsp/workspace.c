/* workspace.c - the client's workspace (see internal.h): its folders
 * (real paths: symlinked workspaces are common on clusters), the
 * settings (initializationOptions and workspace/didChangeConfiguration:
 * ddx.rules.extraPaths, ddx.dsConfig.path, ddx.memory.*, ...) and files
 * changed on disk; each change invalidates what depends on it. */
#include "internal.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "ddx/file.h"
#include "ddx/hub.h"
#include "ddx/report.h"
#include "ddx/split.h"
#include "ddx/version.h"

/* ---------------------------------------------------------------- settings */

/* A setting as {"rules": {"extraPaths": ...}}, {"rules.extraPaths": ...} or
 * {"ddx.rules.extraPaths": ...} (clients send all three shapes). */
static json_t *lsp_setting(json_t *o, const char *a, const char *b) {
  json_t *v = json_object_get(json_object_get(o, a), b);
  if (v) return v;
  char key[128];
  snprintf(key, sizeof key, "%s.%s", a, b);
  if ((v = json_object_get(o, key))) return v;
  snprintf(key, sizeof key, "ddx.%s.%s", a, b);
  return json_object_get(o, key);
}

static char *lsp_resolve(const ddx_lsp_server_t *s, const char *p) {
  if (p[0] == '/' || !s->ws.nfolders) return strdup(p);
  size_t n = strlen(s->ws.folders[0]) + strlen(p) + 2;
  char *r = malloc(n);
  if (r) snprintf(r, n, "%s/%s", s->ws.folders[0], p);
  return r;
}

void ddx_lsp_apply_settings(ddx_lsp_server_t *s, json_t *settings, bool reload) {
  if (json_is_object(json_object_get(settings, "ddx"))) settings = json_object_get(settings, "ddx");
  if (!json_is_object(settings)) return;
  json_t *extra = lsp_setting(settings, "rules", "extraPaths");
  bool changed = false;
  if (json_is_array(extra)) {
    size_t n = 0, i;
    json_t *e;
    char **v = calloc(json_array_size(extra) + 1, sizeof *v);
    json_array_foreach(extra, i, e) if (v && json_is_string(e) && json_string_length(e)) {
      char *p = lsp_resolve(s, json_string_value(e));
      if (p) v[n++] = p;
    }
    changed = n != s->ws.nextra_rules;
    for (size_t k = 0; !changed && k < n; k++)
      changed = strcmp(v[k], s->ws.extra_rules[k]) != 0;
    for (size_t k = 0; k < s->ws.nextra_rules; k++)
      free(s->ws.extra_rules[k]);
    free(s->ws.extra_rules);
    s->ws.extra_rules = v;
    s->ws.nextra_rules = v ? n : 0;
  }
  json_t *ds = lsp_setting(settings, "dsConfig", "path");
  if (json_is_string(ds) || json_is_null(ds)) {
    free(s->ws.dsconfig_path);
    s->ws.dsconfig_path =
        json_is_string(ds) && json_string_length(ds) ? lsp_resolve(s, json_string_value(ds)) : NULL;
  }
  /* the memory model: the model's config.json (machine-scoped, like
   * dsConfig.path: read wherever it is), the sequence length, the GPU */
  json_t *mc = lsp_setting(settings, "memory", "modelConfig");
  if (json_is_string(mc) || json_is_null(mc)) {
    char *p =
        json_is_string(mc) && json_string_length(mc) ? lsp_resolve(s, json_string_value(mc)) : NULL;
    if ((p == NULL) != (s->ws.mem_model_path == NULL) || (p && strcmp(p, s->ws.mem_model_path)))
      ddx_lsp_cfg_model_changed(s); /* searched again (config.c) */
    free(s->ws.mem_model_path);
    s->ws.mem_model_path = p;
  }
  json_t *sl = lsp_setting(settings, "memory", "seqLen");
  if (json_is_number(sl) && json_number_value(sl) >= 0 && json_number_value(sl) <= 1e8)
    s->ws.mem_seq_len = json_number_value(sl);
  else if (json_is_null(sl))
    s->ws.mem_seq_len = 0;
  json_t *gm = lsp_setting(settings, "memory", "gpuMemoryGiB");
  if (json_is_number(gm) && json_number_value(gm) >= 0 && json_number_value(gm) <= 1e6)
    s->ws.mem_gpu_gib = json_number_value(gm);
  else if (json_is_null(gm))
    s->ws.mem_gpu_gib = 0;
  json_t *mp = lsp_setting(settings, "model", "parameters");
  if (json_is_number(mp)) s->ws.model_params = json_number_value(mp);
  json_t *ws = lsp_setting(settings, "world", "size");
  if (json_is_integer(ws)) s->ws.world_size = json_integer_value(ws);
  json_t *stall = lsp_setting(settings, "hang", "stallSeconds");
  if (json_is_number(stall) && json_number_value(stall) > 0 && json_number_value(stall) <= 86400)
    s->ws.stall_s = json_number_value(stall);
  json_t *allow = lsp_setting(settings, "diagnoseFile", "allowOutsideWorkspace");
  if (json_is_boolean(allow)) s->ws.allow_outside = json_is_true(allow);
  if (reload) ddx_lsp_cfg_check_all(s); /* parameters and world size feed the checks */
  if (reload && changed) {
    char err[1024];
    if (ddx_lsp_catalog_reload(s, err, sizeof err))
      ddx_lsp_notify(s, "window/showMessage",
                     json_pack("{s:i, s:o}", "type", DDX_LSP_LOG_ERROR, "message",
                               ddx_lsp_jstr(err, strlen(err))));
    else /* open logs are diagnosed again with the new catalog */
      for (ddx_lsp_doc_t *d = s->docs; d; d = d->next)
        if (d->kind == DDX_LSP_DOC_LOG) ddx_lsp_schedule_scan(s, d);
  }
}

static json_t *settings_changed(ddx_lsp_server_t *s, json_t *params, ddx_lsp_call_t *call) {
  (void)call;
  ddx_lsp_apply_settings(s, json_object_get(params, "settings"), true);
  return NULL;
}

void ddx_lsp_add_folder(ddx_lsp_server_t *s, const char *uri) {
  char *path = ddx_lsp_uri_to_path(uri);
  if (!path) return;
  char **nf = realloc(s->ws.folders, (s->ws.nfolders + 1) * sizeof *nf);
  if (!nf) {
    free(path);
    return;
  }
  s->ws.folders = nf;
  /* Compare real paths later: symlinked workspaces are common on clusters. */
  char *real = realpath(path, NULL);
  if (real) {
    free(path);
    path = real;
  }
  s->ws.folders[s->ws.nfolders++] = path;
}

static void lsp_remove_folder(ddx_lsp_server_t *s, const char *uri) {
  char *path = ddx_lsp_uri_to_path(uri);
  if (!path) return;
  char *real = realpath(path, NULL);
  for (size_t i = 0; i < s->ws.nfolders; i++) {
    if (!strcmp(s->ws.folders[i], path) || (real && !strcmp(s->ws.folders[i], real))) {
      free(s->ws.folders[i]);
      memmove(&s->ws.folders[i], &s->ws.folders[i + 1],
              (s->ws.nfolders - i - 1) * sizeof *s->ws.folders);
      s->ws.nfolders--;
      break;
    }
  }
  free(real);
  free(path);
}

json_t *ddx_lsp_did_change_folders(ddx_lsp_server_t *s, json_t *params, ddx_lsp_call_t *call) {
  (void)call;
  json_t *ev = json_object_get(params, "event");
  size_t i;
  json_t *f;
  json_array_foreach(json_object_get(ev, "removed"), i, f) {
    const char *uri = json_string_value(json_object_get(f, "uri"));
    if (uri) lsp_remove_folder(s, uri);
  }
  json_array_foreach(json_object_get(ev, "added"), i, f) {
    const char *uri = json_string_value(json_object_get(f, "uri"));
    if (uri) ddx_lsp_add_folder(s, uri);
  }
  ddx_lsp_cfg_model_changed(s); /* a model config.json may have come or gone */
  ddx_lsp_actions_invalidate(s);
  ddx_lsp_cfg_check_all(s);
  return NULL;
}

/* Settings (jobs.c); ddx.dsConfig.path feeds the config index. */
json_t *ddx_lsp_did_change_configuration(ddx_lsp_server_t *s, json_t *params,
                                         ddx_lsp_call_t *call) {
  json_t *r = settings_changed(s, params, call);
  ddx_lsp_actions_invalidate(s);
  return r;
}

/* Files changed on disk: the config index is looked at again. */
json_t *ddx_lsp_did_change_watched_files(ddx_lsp_server_t *s, json_t *params,
                                         ddx_lsp_call_t *call) {
  (void)params;
  (void)call;
  ddx_lsp_actions_invalidate(s);
  return NULL;
}

void ddx_lsp_ws_free(ddx_lsp_server_t *s) {
  for (size_t i = 0; i < s->ws.nfolders; i++)
    free(s->ws.folders[i]);
  free(s->ws.folders);
  for (size_t i = 0; i < s->ws.nextra_rules; i++)
    free(s->ws.extra_rules[i]);
  free(s->ws.extra_rules);
  free(s->ws.dsconfig_path);
  free(s->ws.mem_model_path);
}
