/* rpc.c - JSON-RPC on top of the transport (see internal.h): the
 * outgoing messages every part of the server sends (notify, reply,
 * reply_error, request, log, trace), validation of incoming messages, the
 * {name, handler, is_notification} method table and the dispatch of a
 * batch (cancellations in a batch apply to the requests before them). */
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

/* ------------------------------------------------------------- JSON helpers */

json_t *ddx_lsp_jstr(const char *str, size_t n) {
  json_t *j = json_stringn(str, n);
  if (j) return j;
  /* Invalid UTF-8 (a log's bytes): each bad byte becomes U+FFFD, the way
   * editors decode it, so the client never sees a malformed message. */
  ddx_sb_t b;
  ddx_sb_init(&b);
  ddx_sb_put_utf8_repaired(&b, str, n);
  j = json_stringn(b.s ? b.s : "", b.len);
  ddx_sb_free(&b);
  return j ? j : json_string("");
}

json_t *ddx_lsp_fail(ddx_lsp_call_t *call, int code, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(call->msg, sizeof call->msg, fmt, ap);
  va_end(ap);
  call->code = code;
  return NULL;
}

void ddx_lsp_notify(ddx_lsp_server_t *s, const char *method, json_t *params) {
  json_t *m = json_pack("{s:s, s:s}", "jsonrpc", "2.0", "method", method);
  if (params) json_object_set_new(m, "params", params);
  ddx_lsp_send(s, m);
}

void ddx_lsp_reply(ddx_lsp_server_t *s, json_t *id, json_t *result) {
  json_t *m = json_pack("{s:s, s:O, s:o}", "jsonrpc", "2.0", "id", id ? id : json_null(), "result",
                        result ? result : json_null());
  ddx_lsp_send(s, m);
}

void ddx_lsp_reply_error(ddx_lsp_server_t *s, json_t *id, int code, const char *msg) {
  json_t *m = json_pack("{s:s, s:O, s:{s:i, s:o}}", "jsonrpc", "2.0", "id", id ? id : json_null(),
                        "error", "code", code, "message", ddx_lsp_jstr(msg, strlen(msg)));
  ddx_lsp_send(s, m);
}

int64_t ddx_lsp_request(ddx_lsp_server_t *s, const char *method, json_t *params) {
  int64_t id = ++s->rpc.next_out_id;
  json_t *m =
      json_pack("{s:s, s:I, s:s}", "jsonrpc", "2.0", "id", (json_int_t)id, "method", method);
  if (params) json_object_set_new(m, "params", params);
  ddx_lsp_send(s, m);
  return id;
}

void ddx_lsp_log(ddx_lsp_server_t *s, int type, const char *fmt, ...) {
  char buf[2048];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(buf, sizeof buf, fmt, ap);
  va_end(ap);
  ddx_lsp_notify(s, "window/logMessage",
                 json_pack("{s:i, s:o}", "type", type, "message", ddx_lsp_jstr(buf, strlen(buf))));
}

static void lsp_trace(ddx_lsp_server_t *s, const char *message, json_t *verbose) {
  if (s->life.trace == DDX_LSP_TRACE_OFF) return;
  json_t *p = json_pack("{s:s}", "message", message);
  if (s->life.trace == DDX_LSP_TRACE_VERBOSE && verbose) {
    char *v = json_dumps(verbose, JSON_COMPACT | JSON_ENCODE_ANY);
    if (v) {
      /* Trace entries stay readable: a 10 MB didOpen is cut. */
      size_t n = strlen(v);
      json_object_set_new(p, "verbose", ddx_lsp_jstr(v, n > 4096 ? 4096 : n));
      free(v);
    }
  }
  ddx_lsp_notify(s, "$/logTrace", p);
}

static const ddx_lsp_method_t lsp_methods[] = {
    {"initialize", ddx_lsp_initialize, false},
    {"initialized", ddx_lsp_initialized, true},
    {"shutdown", ddx_lsp_shutdown, false},
    {"exit", ddx_lsp_exit, true},
    {"$/cancelRequest", ddx_lsp_cancel, true},
    {"$/setTrace", ddx_lsp_set_trace, true},
    {"window/workDoneProgress/cancel", ddx_lsp_work_done_cancel, true},
    {"textDocument/didOpen", ddx_lsp_did_open, true},
    {"textDocument/didChange", ddx_lsp_did_change, true},
    {"textDocument/didClose", ddx_lsp_did_close, true},
    {"textDocument/didSave", ddx_lsp_did_save, true},
    {"textDocument/hover", ddx_lsp_hover, false},
    {"textDocument/codeAction", ddx_lsp_code_action, false},
    {"workspace/executeCommand", ddx_lsp_execute_command, false},
    {"workspace/didChangeConfiguration", ddx_lsp_did_change_configuration, true},
    {"workspace/didChangeWatchedFiles", ddx_lsp_did_change_watched_files, true},
    {"workspace/didChangeWorkspaceFolders", ddx_lsp_did_change_folders, true},
};

/* --------------------------------------------------------------- dispatch */

static bool lsp_cancelled_in_batch(ddx_lsp_server_t *s, json_t *id) {
  size_t i;
  json_t *c;
  json_array_foreach(s->rpc.pending_cancel, i, c) if (json_equal(c, id)) return true;
  return false;
}

static void lsp_dispatch(ddx_lsp_server_t *s, json_t *msg) {
  if (!json_is_object(msg)) {
    ddx_lsp_reply_error(s, NULL, DDX_LSP_INVALID_REQUEST,
                        json_is_array(msg) ? "batch messages are not part of LSP"
                                           : "a message must be a JSON object");
    return;
  }
  json_t *id = json_object_get(msg, "id");
  json_t *jmethod = json_object_get(msg, "method");
  const char *version = json_string_value(json_object_get(msg, "jsonrpc"));
  bool id_ok = id && (json_is_integer(id) || json_is_string(id));
  if (id && !id_ok && !json_is_null(id)) {
    ddx_lsp_reply_error(s, NULL, DDX_LSP_INVALID_REQUEST, "id must be an integer or a string");
    return;
  }
  if (!jmethod && id && (json_object_get(msg, "result") || json_object_get(msg, "error"))) {
    /* A response to one of our requests (window/workDoneProgress/create). */
    if (json_is_integer(id))
      ddx_lsp_progress_response(s, json_integer_value(id), json_object_get(msg, "error") == NULL);
    return;
  }
  if (!version || strcmp(version, "2.0") || !json_is_string(jmethod)) {
    if (id_ok || !id)
      ddx_lsp_reply_error(s, id_ok ? id : NULL, DDX_LSP_INVALID_REQUEST,
                          !version || strcmp(version, "2.0") ? "jsonrpc must be \"2.0\""
                                                             : "method must be a string");
    else
      ddx_lsp_reply_error(s, NULL, DDX_LSP_INVALID_REQUEST, "invalid request");
    return;
  }
  if (json_is_null(id)) {
    ddx_lsp_reply_error(s, NULL, DDX_LSP_INVALID_REQUEST, "a request id must not be null");
    return;
  }
  const char *method = json_string_value(jmethod);
  json_t *params = json_object_get(msg, "params");
  /* JSON-RPC lets params be omitted and many clients write null (eglot's
   * shutdown): both mean "no params"; a handler that needs them says so. */
  if (json_is_null(params)) params = NULL;
  bool is_request = id_ok;
  if (params && !json_is_object(params) && !json_is_array(params)) {
    if (is_request)
      ddx_lsp_reply_error(s, id, DDX_LSP_INVALID_PARAMS, "params must be an object or an array");
    return;
  }
  const ddx_lsp_method_t *m = NULL;
  for (size_t i = 0; i < sizeof lsp_methods / sizeof lsp_methods[0]; i++)
    if (!strcmp(lsp_methods[i].name, method)) m = &lsp_methods[i];
  if (!is_request && (!m || !m->is_notification)) {
    /* Unknown notifications are dropped, as the spec says ($/ ones silently). */
    if (strncmp(method, "$/", 2))
      ddx_lsp_log(s, DDX_LSP_LOG_DEBUG, "ignored notification %s", method);
    return;
  }
  if (is_request && lsp_cancelled_in_batch(s, id)) {
    ddx_lsp_reply_error(s, id, DDX_LSP_REQUEST_CANCELLED, "request cancelled");
    return;
  }
  if (is_request && !m) {
    char buf[300];
    snprintf(buf, sizeof buf, "unknown method %.200s", method);
    ddx_lsp_reply_error(s, id, DDX_LSP_METHOD_NOT_FOUND, buf);
    return;
  }
  if (is_request && m->is_notification) {
    ddx_lsp_reply_error(s, id, DDX_LSP_INVALID_REQUEST,
                        "this method is a notification: send it without an id");
    return;
  }
  if (strcmp(method, "exit")) {
    if (!s->life.initialized && strcmp(method, "initialize")) {
      if (is_request)
        ddx_lsp_reply_error(s, id, DDX_LSP_SERVER_NOT_INITIALIZED,
                            "server not initialized: send initialize first");
      return;
    }
    if (s->life.initialized && !strcmp(method, "initialize")) {
      ddx_lsp_reply_error(s, id, DDX_LSP_INVALID_REQUEST, "initialize was already received");
      return;
    }
    if (s->life.shutdown) {
      if (is_request)
        ddx_lsp_reply_error(s, id, DDX_LSP_INVALID_REQUEST,
                            "the server is shutting down: only exit is accepted");
      return;
    }
  }
  uint64_t t0 = ddx_lsp_now_ns();
  ddx_lsp_call_t call = {.id = id};
  json_t *result = m->handler(s, params, &call);
  if (s->life.trace != DDX_LSP_TRACE_OFF) {
    char line[512];
    snprintf(line, sizeof line, "%s '%.200s' processed in %.1f ms",
             is_request ? "Received request" : "Received notification", method,
             (double)(ddx_lsp_now_ns() - t0) / 1e6);
    lsp_trace(s, line, params);
  }
  if (!is_request) {
    json_decref(result);
    return;
  }
  if (call.deferred) {
    json_decref(result);
    return;
  }
  if (result)
    ddx_lsp_reply(s, id, result);
  else
    ddx_lsp_reply_error(s, id, call.code ? call.code : DDX_LSP_INTERNAL_ERROR,
                        call.msg[0] ? call.msg : "internal error");
}

void ddx_lsp_process_batch(ddx_lsp_server_t *s, json_t **msgs, size_t n) {
  /* A $/cancelRequest that arrived together with its request cancels it
   * before it runs: the client then gets -32800 for it, not a result. */
  json_array_clear(s->rpc.pending_cancel);
  for (size_t i = 0; i < n; i++) {
    const char *m = json_string_value(json_object_get(msgs[i], "method"));
    if (m && !strcmp(m, "$/cancelRequest")) {
      json_t *id = json_object_get(json_object_get(msgs[i], "params"), "id");
      if (json_is_integer(id) || json_is_string(id)) json_array_append(s->rpc.pending_cancel, id);
    }
  }
  for (size_t i = 0; i < n && !s->life.exiting; i++) {
    if (msgs[i]) lsp_dispatch(s, msgs[i]);
  }
  json_array_clear(s->rpc.pending_cancel);
}

void ddx_lsp_rpc_init(ddx_lsp_server_t *s) {
  s->rpc.pending_cancel = json_array();
}

void ddx_lsp_rpc_free(ddx_lsp_server_t *s) {
  json_decref(s->rpc.pending_cancel);
}
