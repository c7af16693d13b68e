/* lifecycle.c - the server's life (see internal.h): ddx_lsp_main
 * (options, the server struct, the loop), initialize (capabilities,
 * encoding, folders, initializationOptions), initialized, shutdown, exit,
 * $/cancelRequest, $/setTrace, the watch on the editor's process, and the
 * end: every handle closed, every job answered, everything freed. */
#include "internal.h"

#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

#include "ddx/version.h"

void ddx_lsp_stop(ddx_lsp_server_t *s, int code);

/* ---------------------------------------------------------------- lifecycle */

void ddx_lsp_stop(ddx_lsp_server_t *s, int code) {
  if (s->life.exiting) return;
  s->life.exiting = true;
  s->life.exit_code = code;
  ddx_lsp_io_stop_reading(s);
  if (s->life.parent_timer_on) {
    s->life.parent_timer_on = false;
    uv_close((uv_handle_t *)&s->life.parent_timer, NULL);
  }
  ddx_lsp_progress_stop(s);
  ddx_lsp_cancel_jobs(s);
  ddx_lsp_actions_cancel_all(s, "the server is exiting");
  ddx_lsp_write_next(s); /* closes stdout once the queue is empty */
}

static void lsp_on_parent_timer(uv_timer_t *t) {
  ddx_lsp_server_t *s = t->data;
  if (s->life.parent_pid > 0 && kill(s->life.parent_pid, 0) != 0 && errno == ESRCH) {
    /* The editor died without closing our stdin (it may have been killed
     * with its children detached): nobody will ever send exit. */
    ddx_lsp_stop(s, 1);
  }
}

static bool lsp_str_in(json_t *arr, const char *v) {
  size_t i;
  json_t *e;
  json_array_foreach(arr, i,
                     e) if (json_is_string(e) && !strcmp(json_string_value(e), v)) return true;
  return false;
}

json_t *ddx_lsp_initialize(ddx_lsp_server_t *s, json_t *params, ddx_lsp_call_t *call) {
  if (!json_is_object(params))
    return ddx_lsp_fail(call, DDX_LSP_INVALID_PARAMS,
                        "initialize needs an object of InitializeParams");
  json_t *caps = json_object_get(params, "capabilities");
  if (caps && !json_is_object(caps))
    return ddx_lsp_fail(call, DDX_LSP_INVALID_PARAMS, "initialize: capabilities must be an object");
  json_t *pid = json_object_get(params, "processId");
  if (pid && !json_is_null(pid) && !json_is_integer(pid))
    return ddx_lsp_fail(call, DDX_LSP_INVALID_PARAMS,
                        "initialize: processId must be an integer or null");
  s->life.initialized = true;
  json_t *encs = json_object_get(json_object_get(caps, "general"), "positionEncodings");
  s->life.encoding = lsp_str_in(encs, "utf-8") ? DDX_LSP_ENC_UTF8 : DDX_LSP_ENC_UTF16;
  s->life.cap_progress =
      json_is_true(json_object_get(json_object_get(caps, "window"), "workDoneProgress"));
  json_t *td = json_object_get(caps, "textDocument");
  s->life.cap_disabled =
      json_is_true(json_object_get(json_object_get(td, "codeAction"), "disabledSupport"));
  s->life.cap_related = json_is_true(
      json_object_get(json_object_get(td, "publishDiagnostics"), "relatedInformation"));
  s->life.cap_doc_changes = json_is_true(json_object_get(
      json_object_get(json_object_get(caps, "workspace"), "workspaceEdit"), "documentChanges"));
  const char *trace = json_string_value(json_object_get(params, "trace"));
  if (trace)
    s->life.trace = !strcmp(trace, "verbose")    ? DDX_LSP_TRACE_VERBOSE
                    : !strcmp(trace, "messages") ? DDX_LSP_TRACE_MESSAGES
                                                 : DDX_LSP_TRACE_OFF;
  json_t *folders = json_object_get(params, "workspaceFolders");
  if (json_is_array(folders) && json_array_size(folders)) {
    size_t i;
    json_t *f;
    json_array_foreach(folders, i, f) {
      const char *uri = json_string_value(json_object_get(f, "uri"));
      if (uri) ddx_lsp_add_folder(s, uri);
    }
  } else if (json_is_string(json_object_get(params, "rootUri"))) {
    ddx_lsp_add_folder(s, json_string_value(json_object_get(params, "rootUri")));
  } else if (json_is_string(json_object_get(params, "rootPath"))) {
    char *uri = ddx_lsp_path_to_uri(json_string_value(json_object_get(params, "rootPath")));
    if (uri) ddx_lsp_add_folder(s, uri);
    free(uri);
  }
  json_t *opts = json_object_get(params, "initializationOptions");
  if (json_is_object(opts)) ddx_lsp_apply_settings(s, opts, false);
  char err[1024];
  if (ddx_lsp_catalog_reload(s, err, sizeof err)) {
    ddx_lsp_notify(s, "window/showMessage",
                   json_pack("{s:i, s:o}", "type", DDX_LSP_LOG_ERROR, "message",
                             ddx_lsp_jstr(err, strlen(err))));
  }
  if (json_is_integer(pid) && json_integer_value(pid) > 0) {
    s->life.parent_pid = (pid_t)json_integer_value(pid);
    if (uv_timer_init(&s->loop, &s->life.parent_timer) == 0) {
      s->life.parent_timer.data = s;
      s->life.parent_timer_on = true;
      uv_timer_start(&s->life.parent_timer, lsp_on_parent_timer, s->life.parent_interval_ms,
                     s->life.parent_interval_ms);
    }
  }
  return json_pack(
      "{s:{s:s, s:{s:b, s:i, s:{s:b}}, s:b, s:{s:[s], s:b}, s:{s:[s,s,s,s,s]}, s:{s:{s:b, s:b}}},"
      " s:{s:s, s:s}}",
      "capabilities", "positionEncoding", s->life.encoding == DDX_LSP_ENC_UTF8 ? "utf-8" : "utf-16",
      "textDocumentSync", "openClose", 1, "change", 2, "save", "includeText", 0, "hoverProvider", 1,
      "codeActionProvider", "codeActionKinds", "quickfix", "resolveProvider", 0,
      "executeCommandProvider", "commands", "ddx.diagnoseText", "ddx.diagnoseFile", "ddx.explain",
      "ddx.catalog", "ddx.showFix", "workspace", "workspaceFolders", "supported", 1,
      "changeNotifications", 1, "serverInfo", "name", "ddx", "version", DDX_VERSION);
}

json_t *ddx_lsp_initialized(ddx_lsp_server_t *s, json_t *params, ddx_lsp_call_t *call) {
  (void)params;
  (void)call;
  ddx_lsp_log(s, DDX_LSP_LOG_INFO, "ddx %s language server ready (%s positions, %zu rules)",
              DDX_VERSION, s->life.encoding == DDX_LSP_ENC_UTF8 ? "utf-8" : "utf-16",
              s->cat ? s->cat->cat->nrules : (size_t)0);
  return NULL;
}

json_t *ddx_lsp_shutdown(ddx_lsp_server_t *s, json_t *params, ddx_lsp_call_t *call) {
  (void)params;
  (void)call;
  s->life.shutdown = true;
  ddx_lsp_cancel_jobs(s);
  /* Code actions waiting for the config index are answered too. */
  ddx_lsp_actions_cancel_all(s, "the server is shutting down");
  return json_null();
}

json_t *ddx_lsp_exit(ddx_lsp_server_t *s, json_t *params, ddx_lsp_call_t *call) {
  (void)params;
  (void)call;
  ddx_lsp_stop(s, s->life.shutdown ? 0 : 1);
  return NULL;
}

json_t *ddx_lsp_cancel(ddx_lsp_server_t *s, json_t *params, ddx_lsp_call_t *call) {
  (void)call;
  json_t *id = json_object_get(params, "id");
  if ((json_is_integer(id) || json_is_string(id)) && !ddx_lsp_cancel_request(s, id))
    ddx_lsp_actions_cancel(s, id); /* a code action waiting for the config index */
  return NULL;
}

json_t *ddx_lsp_set_trace(ddx_lsp_server_t *s, json_t *params, ddx_lsp_call_t *call) {
  (void)call;
  const char *v = json_string_value(json_object_get(params, "value"));
  if (!v) return NULL;
  s->life.trace = !strcmp(v, "verbose")    ? DDX_LSP_TRACE_VERBOSE
                  : !strcmp(v, "messages") ? DDX_LSP_TRACE_MESSAGES
                                           : DDX_LSP_TRACE_OFF;
  return NULL;
}

/* ------------------------------------------------------------------- main */

static void lsp_server_free(ddx_lsp_server_t *s) {
  while (s->docs) {
    ddx_lsp_doc_t *d = s->docs;
    s->docs = d->next;
    ddx_lsp_doc_free(d);
  }
  ddx_lsp_catalog_unref(s->cat);
  json_decref(s->rule_check_uris);
  ddx_lsp_actions_free(s);
  ddx_lsp_ws_free(s);
  free(s->rules_default);
  ddx_lsp_cfgstate_free(s);
  ddx_lsp_io_free(s);
  ddx_lsp_rpc_free(s);
}

static void lsp_walk_close(uv_handle_t *h, void *arg) {
  (void)arg;
  if (!uv_is_closing(h)) uv_close(h, NULL);
}

int ddx_lsp_main(int argc, char **argv) {
  for (int i = 0; i < argc; i++) {
    if (strcmp(argv[i], "--stdio")) {
      fprintf(stderr, "ddx lsp: unknown option %s (the server speaks LSP on stdin/stdout)\n",
              argv[i]);
      return 2;
    }
  }
  /* A client that vanishes mid-write must not kill us with SIGPIPE: the
   * write fails with EPIPE instead and the server ends cleanly. */
  signal(SIGPIPE, SIG_IGN);
  ddx_lsp_server_t *s = calloc(1, sizeof *s);
  if (!s) return 1;
  ddx_lsp_io_init(s);
  s->life.parent_interval_ms = 500;
  s->life.exit_code = 1;
  ddx_lsp_rpc_init(s);
  int rc = uv_loop_init(&s->loop);
  if (rc) {
    fprintf(stderr, "ddx lsp: %s\n", uv_strerror(rc));
    free(s);
    return 1;
  }
  rc = ddx_lsp_io_open(s);
  if (rc) {
    s->life.exiting = true;
  } else {
    rc = ddx_lsp_io_read_start(s);
    if (rc) ddx_lsp_stop(s, 1);
  }
  uv_run(&s->loop, UV_RUN_DEFAULT);
  /* Everything is closed by ddx_lsp_stop; this only guards a bug from hanging
   * the process in uv_loop_close. */
  if (uv_loop_close(&s->loop) == UV_EBUSY) {
    uv_walk(&s->loop, lsp_walk_close, NULL);
    uv_run(&s->loop, UV_RUN_DEFAULT);
    uv_loop_close(&s->loop);
  }
  int code = rc ? 1 : s->life.exit_code;
  lsp_server_free(s);
  free(s);
  return code;
}
