/* lsp.c - the language server's transport and lifecycle (see ddx/lsp.h):
 * stdin/stdout through libuv, Content-Length framing with a size cap, the
 * write queue, JSON-RPC validation and the {name, handler, is_notification}
 * dispatch table, initialize/shutdown/exit, $/cancelRequest, $/setTrace and
 * the watch on the editor's process. Documents live in lsp_docs.c, scans
 * and commands in lsp_diag.c, hovers in lsp_hover.c, quick fixes in
 * lsp_actions.c. */
#include "internal.h"
#include "ddx/version.h"

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

#define LSP_MAX_HEADER 8192 /* a header block longer than this is garbage */
#define LSP_READ_CHUNK 65536

enum { LSP_RS_HEADERS = 0, LSP_RS_BODY = 1, LSP_RS_RESYNC = 2 };

uint64_t ddx_lsp_now_ns(void) {
  return uv_hrtime();
}

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

/* ---------------------------------------------------------------- writing */

static void lsp_write_next(ddx_lsp_server_t *s);
static void lsp_stop(ddx_lsp_server_t *s, int code);
static void lsp_parse_input(ddx_lsp_server_t *s);
static void lsp_fs_read_next(ddx_lsp_server_t *s);
static void lsp_on_alloc(uv_handle_t *h, size_t suggested, uv_buf_t *buf);
static void lsp_on_read(uv_stream_t *st, ssize_t nread, const uv_buf_t *buf);

static void lsp_close_out(ddx_lsp_server_t *s) {
  if (!s->out_open) return;
  s->out_open = false;
  if (s->out_type != UV_FILE) uv_close(&s->out.handle, NULL);
}

static void lsp_drop_queue(ddx_lsp_server_t *s) {
  while (s->wq_head) {
    ddx_lsp_wmsg_t *m = s->wq_head;
    s->wq_head = m->next;
    free(m->data);
    free(m);
  }
  s->wq_tail = NULL;
  s->wq_bytes = 0;
}

/* A client that does not read its stdout must not make the queue grow
 * without bound: above the limit the server stops reading requests (they
 * wait in the pipe, the client's writes block), and resumes when half of
 * it has drained. The loop never blocks either way. */
static void lsp_wq_pause(ddx_lsp_server_t *s) {
  if (s->wq_paused || s->exiting) return;
  s->wq_paused = true;
  if (s->reading) {
    uv_read_stop(&s->in.stream);
    s->reading = false;
  }
  if (s->wq_pauses++ % 100 == 0)
    fprintf(stderr,
            "ddx lsp: the client is not reading its messages: %zu bytes queued (limit %zu); "
            "reading paused (%llu time%s)\n",
            s->wq_bytes, s->wq_limit, (unsigned long long)s->wq_pauses,
            s->wq_pauses == 1 ? "" : "s");
}

static void lsp_wq_resume(ddx_lsp_server_t *s) {
  if (!s->wq_paused || s->wq_bytes > s->wq_limit / 2) return;
  s->wq_paused = false;
  if (s->exiting || !s->in_open) return;
  if (s->wq_pauses % 100 == 1)
    fprintf(stderr, "ddx lsp: the client reads again: %zu bytes queued; reading resumed\n",
            s->wq_bytes);
  if (!s->parsing) lsp_parse_input(s); /* requests read before the pause */
  if (s->wq_paused || s->exiting || !s->in_open) return;
  if (s->in_type == UV_FILE) {
    if (s->in_stalled) {
      s->in_stalled = false;
      lsp_fs_read_next(s);
    }
  } else if (!s->reading && uv_read_start(&s->in.stream, lsp_on_alloc, lsp_on_read) == 0) {
    s->reading = true;
  }
}

/* One write finished: the client may be gone (EPIPE), then nothing more can
 * be said and the server ends. */
static void lsp_write_done(ddx_lsp_server_t *s, ssize_t status) {
  ddx_lsp_wmsg_t *m = s->wq_head;
  s->writing = false;
  if (status < 0) {
    lsp_drop_queue(s);
    lsp_close_out(s);
    lsp_stop(s, 1);
    return;
  }
  if (m && s->out_type == UV_FILE && (size_t)status < m->len) {
    /* A short write to a file: the rest goes next. */
    memmove(m->data, m->data + status, m->len - (size_t)status);
    m->len -= (size_t)status;
    s->wq_bytes -= (size_t)status;
  } else if (m) {
    s->wq_head = m->next;
    if (!s->wq_head) s->wq_tail = NULL;
    s->wq_bytes -= m->len;
    free(m->data);
    free(m);
  }
  lsp_write_next(s);
  lsp_wq_resume(s);
}

static void lsp_on_write(uv_write_t *req, int status) {
  lsp_write_done(req->data, status);
}

static void lsp_on_fs_write(uv_fs_t *req) {
  ddx_lsp_server_t *s = req->data;
  ssize_t r = req->result;
  uv_fs_req_cleanup(req);
  lsp_write_done(s, r);
}

static void lsp_write_next(ddx_lsp_server_t *s) {
  if (s->writing || !s->out_open) return;
  if (!s->wq_head) {
    if (s->exiting) lsp_close_out(s); /* everything said: the stream can go */
    return;
  }
  ddx_lsp_wmsg_t *m = s->wq_head;
  s->wbuf = uv_buf_init(m->data, (unsigned)m->len);
  int rc;
  if (s->out_type == UV_FILE) {
    s->out_fs.data = s;
    rc = uv_fs_write(&s->loop, &s->out_fs, 1, &s->wbuf, 1, -1, lsp_on_fs_write);
  } else {
    s->wreq.data = s;
    rc = uv_write(&s->wreq, &s->out.stream, &s->wbuf, 1, lsp_on_write);
  }
  if (rc < 0) {
    /* The callback will not run: treat it as a lost client right here. */
    lsp_drop_queue(s);
    lsp_close_out(s);
    lsp_stop(s, 1);
    return;
  }
  s->writing = true;
}

void ddx_lsp_send(ddx_lsp_server_t *s, json_t *msg) {
  if (!msg) return;
  if (!s->out_open) {
    json_decref(msg);
    return;
  }
  /* A response is never dropped (the client would wait for it forever);
   * there are only as many as requests read before the pause. */
  bool response = json_object_get(msg, "id") && !json_object_get(msg, "method");
  char *body = json_dumps(msg, JSON_COMPACT);
  json_decref(msg);
  if (!body) return;
  size_t blen = strlen(body);
  if (!response && s->wq_bytes + blen > 2 * s->wq_limit) {
    /* Reading is paused already; what the server says on its own (logs,
     * progress, diagnostics of finished scans) is dropped beyond this. */
    if (s->wq_dropped++ % 1000 == 0)
      fprintf(stderr,
              "ddx lsp: the client is not reading: %zu bytes queued; %llu message(s) dropped\n",
              s->wq_bytes, (unsigned long long)s->wq_dropped);
    free(body);
    return;
  }
  char hdr[64];
  int hlen = snprintf(hdr, sizeof hdr, "Content-Length: %zu\r\n\r\n", blen);
  ddx_lsp_wmsg_t *m = malloc(sizeof *m);
  char *data = malloc((size_t)hlen + blen);
  if (!m || !data) {
    free(m);
    free(data);
    free(body);
    return;
  }
  memcpy(data, hdr, (size_t)hlen);
  memcpy(data + hlen, body, blen);
  free(body);
  m->next = NULL;
  m->data = data;
  m->len = (size_t)hlen + blen;
  s->wq_bytes += m->len;
  if (s->wq_tail)
    s->wq_tail->next = m;
  else
    s->wq_head = m;
  s->wq_tail = m;
  lsp_write_next(s);
  if (s->wq_bytes > s->wq_limit) lsp_wq_pause(s);
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
  int64_t id = ++s->next_out_id;
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
  if (s->trace == DDX_LSP_TRACE_OFF) return;
  json_t *p = json_pack("{s:s}", "message", message);
  if (s->trace == DDX_LSP_TRACE_VERBOSE && verbose) {
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

/* ---------------------------------------------------------------- lifecycle */

static void lsp_stop(ddx_lsp_server_t *s, int code) {
  if (s->exiting) return;
  s->exiting = true;
  s->exit_code = code;
  if (s->in_open) {
    s->in_open = false;
    if (s->in_type != UV_FILE) {
      if (s->reading) uv_read_stop(&s->in.stream);
      uv_close(&s->in.handle, NULL);
    }
    s->reading = false;
  }
  if (s->parent_timer_on) {
    s->parent_timer_on = false;
    uv_close((uv_handle_t *)&s->parent_timer, NULL);
  }
  if (s->progress_timer_on) {
    s->progress_timer_on = false;
    uv_close((uv_handle_t *)&s->progress_timer, NULL);
  }
  ddx_lsp_cancel_jobs(s);
  ddx_lsp_actions_cancel_all(s, "the server is exiting");
  lsp_write_next(s); /* closes stdout once the queue is empty */
}

static void lsp_on_parent_timer(uv_timer_t *t) {
  ddx_lsp_server_t *s = t->data;
  if (s->parent_pid > 0 && kill(s->parent_pid, 0) != 0 && errno == ESRCH) {
    /* The editor died without closing our stdin (it may have been killed
     * with its children detached): nobody will ever send exit. */
    lsp_stop(s, 1);
  }
}

static bool lsp_str_in(json_t *arr, const char *v) {
  size_t i;
  json_t *e;
  json_array_foreach(arr, i,
                     e) if (json_is_string(e) && !strcmp(json_string_value(e), v)) return true;
  return false;
}

static void lsp_add_folder(ddx_lsp_server_t *s, const char *uri) {
  char *path = ddx_lsp_uri_to_path(uri);
  if (!path) return;
  char **nf = realloc(s->folders, (s->nfolders + 1) * sizeof *nf);
  if (!nf) {
    free(path);
    return;
  }
  s->folders = nf;
  /* Compare real paths later: symlinked workspaces are common on clusters. */
  char *real = realpath(path, NULL);
  if (real) {
    free(path);
    path = real;
  }
  s->folders[s->nfolders++] = path;
}

static void lsp_remove_folder(ddx_lsp_server_t *s, const char *uri) {
  char *path = ddx_lsp_uri_to_path(uri);
  if (!path) return;
  char *real = realpath(path, NULL);
  for (size_t i = 0; i < s->nfolders; i++) {
    if (!strcmp(s->folders[i], path) || (real && !strcmp(s->folders[i], real))) {
      free(s->folders[i]);
      memmove(&s->folders[i], &s->folders[i + 1], (s->nfolders - i - 1) * sizeof *s->folders);
      s->nfolders--;
      break;
    }
  }
  free(real);
  free(path);
}

static json_t *lsp_initialize(ddx_lsp_server_t *s, json_t *params, ddx_lsp_call_t *call) {
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
  s->initialized = true;
  json_t *encs = json_object_get(json_object_get(caps, "general"), "positionEncodings");
  s->encoding = lsp_str_in(encs, "utf-8") ? DDX_LSP_ENC_UTF8 : DDX_LSP_ENC_UTF16;
  s->cap_progress =
      json_is_true(json_object_get(json_object_get(caps, "window"), "workDoneProgress"));
  json_t *td = json_object_get(caps, "textDocument");
  s->cap_disabled =
      json_is_true(json_object_get(json_object_get(td, "codeAction"), "disabledSupport"));
  s->cap_related = json_is_true(
      json_object_get(json_object_get(td, "publishDiagnostics"), "relatedInformation"));
  s->cap_doc_changes = json_is_true(json_object_get(
      json_object_get(json_object_get(caps, "workspace"), "workspaceEdit"), "documentChanges"));
  const char *trace = json_string_value(json_object_get(params, "trace"));
  if (trace)
    s->trace = !strcmp(trace, "verbose")    ? DDX_LSP_TRACE_VERBOSE
               : !strcmp(trace, "messages") ? DDX_LSP_TRACE_MESSAGES
                                            : DDX_LSP_TRACE_OFF;
  json_t *folders = json_object_get(params, "workspaceFolders");
  if (json_is_array(folders) && json_array_size(folders)) {
    size_t i;
    json_t *f;
    json_array_foreach(folders, i, f) {
      const char *uri = json_string_value(json_object_get(f, "uri"));
      if (uri) lsp_add_folder(s, uri);
    }
  } else if (json_is_string(json_object_get(params, "rootUri"))) {
    lsp_add_folder(s, json_string_value(json_object_get(params, "rootUri")));
  } else if (json_is_string(json_object_get(params, "rootPath"))) {
    char *uri = ddx_lsp_path_to_uri(json_string_value(json_object_get(params, "rootPath")));
    if (uri) lsp_add_folder(s, uri);
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
    s->parent_pid = (pid_t)json_integer_value(pid);
    if (uv_timer_init(&s->loop, &s->parent_timer) == 0) {
      s->parent_timer.data = s;
      s->parent_timer_on = true;
      uv_timer_start(&s->parent_timer, lsp_on_parent_timer, s->parent_interval_ms,
                     s->parent_interval_ms);
    }
  }
  return json_pack(
      "{s:{s:s, s:{s:b, s:i, s:{s:b}}, s:b, s:{s:[s], s:b}, s:{s:[s,s,s,s,s]}, s:{s:{s:b, s:b}}},"
      " s:{s:s, s:s}}",
      "capabilities", "positionEncoding", s->encoding == DDX_LSP_ENC_UTF8 ? "utf-8" : "utf-16",
      "textDocumentSync", "openClose", 1, "change", 2, "save", "includeText", 0, "hoverProvider", 1,
      "codeActionProvider", "codeActionKinds", "quickfix", "resolveProvider", 0,
      "executeCommandProvider", "commands", "ddx.diagnoseText", "ddx.diagnoseFile", "ddx.explain",
      "ddx.catalog", "ddx.showFix", "workspace", "workspaceFolders", "supported", 1,
      "changeNotifications", 1, "serverInfo", "name", "ddx", "version", DDX_VERSION);
}

static json_t *lsp_initialized(ddx_lsp_server_t *s, json_t *params, ddx_lsp_call_t *call) {
  (void)params;
  (void)call;
  ddx_lsp_log(s, DDX_LSP_LOG_INFO, "ddx %s language server ready (%s positions, %zu rules)",
              DDX_VERSION, s->encoding == DDX_LSP_ENC_UTF8 ? "utf-8" : "utf-16",
              s->cat ? s->cat->cat->nrules : (size_t)0);
  return NULL;
}

static json_t *lsp_shutdown(ddx_lsp_server_t *s, json_t *params, ddx_lsp_call_t *call) {
  (void)params;
  (void)call;
  s->shutdown = true;
  ddx_lsp_cancel_jobs(s);
  /* Code actions waiting for the config index are answered too. */
  ddx_lsp_actions_cancel_all(s, "the server is shutting down");
  return json_null();
}

static json_t *lsp_exit(ddx_lsp_server_t *s, json_t *params, ddx_lsp_call_t *call) {
  (void)params;
  (void)call;
  lsp_stop(s, s->shutdown ? 0 : 1);
  return NULL;
}

static json_t *lsp_cancel(ddx_lsp_server_t *s, json_t *params, ddx_lsp_call_t *call) {
  (void)call;
  json_t *id = json_object_get(params, "id");
  if ((json_is_integer(id) || json_is_string(id)) && !ddx_lsp_cancel_request(s, id))
    ddx_lsp_actions_cancel(s, id); /* a code action waiting for the config index */
  return NULL;
}

static json_t *lsp_set_trace(ddx_lsp_server_t *s, json_t *params, ddx_lsp_call_t *call) {
  (void)call;
  const char *v = json_string_value(json_object_get(params, "value"));
  if (!v) return NULL;
  s->trace = !strcmp(v, "verbose")    ? DDX_LSP_TRACE_VERBOSE
             : !strcmp(v, "messages") ? DDX_LSP_TRACE_MESSAGES
                                      : DDX_LSP_TRACE_OFF;
  return NULL;
}

static json_t *lsp_did_change_folders(ddx_lsp_server_t *s, json_t *params, ddx_lsp_call_t *call) {
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
    if (uri) lsp_add_folder(s, uri);
  }
  s->model_scanned = false; /* a model config.json may have come or gone */
  ddx_lsp_actions_invalidate(s);
  ddx_lsp_cfg_check_all(s);
  return NULL;
}

/* Settings (lsp_diag.c); ddx.dsConfig.path feeds the config index. */
static json_t *lsp_did_change_configuration(ddx_lsp_server_t *s, json_t *params,
                                            ddx_lsp_call_t *call) {
  json_t *r = ddx_lsp_did_change_configuration(s, params, call);
  ddx_lsp_actions_invalidate(s);
  return r;
}

/* Files changed on disk: the config index is looked at again. */
static json_t *lsp_did_change_watched_files(ddx_lsp_server_t *s, json_t *params,
                                            ddx_lsp_call_t *call) {
  (void)params;
  (void)call;
  ddx_lsp_actions_invalidate(s);
  return NULL;
}

/* Documents: lsp_docs.c keeps the texts; a JSON document is checked as a
 * DeepSpeed config after each change (lsp_config.c). */
static ddx_lsp_doc_t *lsp_param_doc(ddx_lsp_server_t *s, json_t *params) {
  const char *uri =
      json_string_value(json_object_get(json_object_get(params, "textDocument"), "uri"));
  return uri ? ddx_lsp_doc_find(s, uri) : NULL;
}

static json_t *lsp_did_open(ddx_lsp_server_t *s, json_t *params, ddx_lsp_call_t *call) {
  json_t *r = ddx_lsp_did_open(s, params, call);
  ddx_lsp_doc_t *d = lsp_param_doc(s, params);
  if (d) ddx_lsp_actions_doc_event(s, d);
  if (d) ddx_lsp_cfg_check_doc(s, d);
  return r;
}

static json_t *lsp_did_change(ddx_lsp_server_t *s, json_t *params, ddx_lsp_call_t *call) {
  json_t *r = ddx_lsp_did_change(s, params, call);
  ddx_lsp_doc_t *d = lsp_param_doc(s, params);
  if (d) ddx_lsp_cfg_check_doc(s, d);
  return r;
}

static json_t *lsp_did_close(ddx_lsp_server_t *s, json_t *params, ddx_lsp_call_t *call) {
  ddx_lsp_doc_t *d = lsp_param_doc(s, params);
  if (d) ddx_lsp_actions_doc_event(s, d);
  if (d) ddx_lsp_cfg_doc_closed(s, d);
  return ddx_lsp_did_close(s, params, call);
}

static json_t *lsp_did_save(ddx_lsp_server_t *s, json_t *params, ddx_lsp_call_t *call) {
  json_t *r = ddx_lsp_did_save(s, params, call);
  ddx_lsp_doc_t *d = lsp_param_doc(s, params);
  if (d) ddx_lsp_actions_doc_event(s, d);
  if (d && !strcmp(ddx_lsp_basename(d->uri), "config.json")) {
    /* maybe the model's config.json: look again */
    s->model_scanned = false;
    ddx_lsp_cfg_check_all(s);
  } else if (d) {
    ddx_lsp_cfg_check_doc(s, d);
  }
  return r;
}

static const ddx_lsp_method_t lsp_methods[] = {
    {"initialize", lsp_initialize, false},
    {"initialized", lsp_initialized, true},
    {"shutdown", lsp_shutdown, false},
    {"exit", lsp_exit, true},
    {"$/cancelRequest", lsp_cancel, true},
    {"$/setTrace", lsp_set_trace, true},
    {"window/workDoneProgress/cancel", ddx_lsp_work_done_cancel, true},
    {"textDocument/didOpen", lsp_did_open, true},
    {"textDocument/didChange", lsp_did_change, true},
    {"textDocument/didClose", lsp_did_close, true},
    {"textDocument/didSave", lsp_did_save, true},
    {"textDocument/hover", ddx_lsp_hover, false},
    {"textDocument/codeAction", ddx_lsp_code_action, false},
    {"workspace/executeCommand", ddx_lsp_execute_command, false},
    {"workspace/didChangeConfiguration", lsp_did_change_configuration, true},
    {"workspace/didChangeWatchedFiles", lsp_did_change_watched_files, true},
    {"workspace/didChangeWorkspaceFolders", lsp_did_change_folders, true},
};

/* --------------------------------------------------------------- dispatch */

static bool lsp_cancelled_in_batch(ddx_lsp_server_t *s, json_t *id) {
  size_t i;
  json_t *c;
  json_array_foreach(s->pending_cancel, i, c) if (json_equal(c, id)) return true;
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
    if (!s->initialized && strcmp(method, "initialize")) {
      if (is_request)
        ddx_lsp_reply_error(s, id, DDX_LSP_SERVER_NOT_INITIALIZED,
                            "server not initialized: send initialize first");
      return;
    }
    if (s->initialized && !strcmp(method, "initialize")) {
      ddx_lsp_reply_error(s, id, DDX_LSP_INVALID_REQUEST, "initialize was already received");
      return;
    }
    if (s->shutdown) {
      if (is_request)
        ddx_lsp_reply_error(s, id, DDX_LSP_INVALID_REQUEST,
                            "the server is shutting down: only exit is accepted");
      return;
    }
  }
  uint64_t t0 = ddx_lsp_now_ns();
  ddx_lsp_call_t call = {.id = id};
  json_t *result = m->handler(s, params, &call);
  if (s->trace != DDX_LSP_TRACE_OFF) {
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

/* ----------------------------------------------------------------- framing */

static bool lsp_ieq_prefix(const char *p, size_t n, const char *lit) {
  size_t k = strlen(lit);
  return n >= k && strncasecmp(p, lit, k) == 0;
}

static void lsp_frame_error(ddx_lsp_server_t *s, int code, const char *msg) {
  ddx_lsp_reply_error(s, NULL, code, msg);
  ddx_lsp_log(s, DDX_LSP_LOG_ERROR, "%s", msg);
}

/* Parses one header block [0, n). Returns 0 and the Content-Length, or -1
 * with why. */
static int lsp_parse_headers(const char *h, size_t n, size_t *len, char *why, size_t whycap) {
  bool have = false;
  size_t pos = 0;
  while (pos < n) {
    const char *nl = memchr(h + pos, '\n', n - pos);
    size_t e = nl ? (size_t)(nl - h) : n;
    size_t le = e;
    if (le > pos && h[le - 1] == '\r') le--;
    if (le > pos) {
      const char *colon = memchr(h + pos, ':', le - pos);
      if (!colon) {
        snprintf(why, whycap, "malformed header line (no colon)");
        return -1;
      }
      size_t nlen = (size_t)(colon - (h + pos));
      const char *v = colon + 1;
      const char *ve = h + le;
      while (v < ve && (*v == ' ' || *v == '\t'))
        v++;
      while (ve > v && (ve[-1] == ' ' || ve[-1] == '\t'))
        ve--;
      if (nlen == 14 && lsp_ieq_prefix(h + pos, nlen, "Content-Length")) {
        if (v == ve) {
          snprintf(why, whycap, "empty Content-Length");
          return -1;
        }
        size_t val = 0;
        for (const char *p = v; p < ve; p++) {
          if (*p < '0' || *p > '9') {
            snprintf(why, whycap, "Content-Length is not a number");
            return -1;
          }
          if (val > (SIZE_MAX - 9) / 10) {
            snprintf(why, whycap, "Content-Length too large");
            return -1;
          }
          val = val * 10 + (size_t)(*p - '0');
        }
        if (have && val != *len) {
          snprintf(why, whycap, "two different Content-Length headers");
          return -1;
        }
        *len = val;
        have = true;
      }
      /* Content-Type and unknown headers are accepted and ignored. */
    }
    pos = e + 1;
  }
  if (!have) {
    snprintf(why, whycap, "missing Content-Length header");
    return -1;
  }
  return 0;
}

/* Finds the end of a header block: "\r\n\r\n" (or a lenient "\n\n"). */
static bool lsp_header_end(const char *b, size_t n, size_t *hend, size_t *body) {
  for (size_t i = 0; i + 1 < n; i++) {
    if (b[i] != '\n') continue;
    if (b[i + 1] == '\n') {
      *hend = i;
      *body = i + 2;
      return true;
    }
    if (i + 2 < n && b[i + 1] == '\r' && b[i + 2] == '\n') {
      *hend = i;
      *body = i + 3;
      return true;
    }
  }
  return false;
}

/* Where the next header block may start: "Content-Length" anywhere. A JSON
 * body cannot hold a raw CR LF inside a string, so once a header block
 * parses again the stream is back in step. */
static size_t lsp_find_resync(const char *b, size_t n, bool *found) {
  static const char lit[] = "content-length";
  const size_t k = sizeof lit - 1;
  for (size_t i = 0; i + k <= n; i++) {
    if ((b[i] | 0x20) == 'c' && strncasecmp(b + i, lit, k) == 0) {
      *found = true;
      return i;
    }
  }
  *found = false;
  return n > k ? n - k : 0; /* keep a possible partial match */
}

static void lsp_process_batch(ddx_lsp_server_t *s, json_t **msgs, size_t n) {
  /* A $/cancelRequest that arrived together with its request cancels it
   * before it runs: the client then gets -32800 for it, not a result. */
  json_array_clear(s->pending_cancel);
  for (size_t i = 0; i < n; i++) {
    const char *m = json_string_value(json_object_get(msgs[i], "method"));
    if (m && !strcmp(m, "$/cancelRequest")) {
      json_t *id = json_object_get(json_object_get(msgs[i], "params"), "id");
      if (json_is_integer(id) || json_is_string(id)) json_array_append(s->pending_cancel, id);
    }
  }
  for (size_t i = 0; i < n && !s->exiting; i++) {
    if (msgs[i]) lsp_dispatch(s, msgs[i]);
  }
  json_array_clear(s->pending_cancel);
}

/* ------------------------------------------------------------ big messages */

/* A didOpen of a 50 MB log is one 50 MB JSON string, and jansson decodes
 * strings a byte at a time (60% of the time of such a didOpen). Strings
 * of LSP_BIG_STRING bytes and more are therefore cut out of the message,
 * decoded by ddx_json_string_check/_decode (strict, as jansson) a run at a
 * time, and put back into the tree jansson parses
 * from the rest; anything this decoder does not accept as valid JSON (a
 * raw control byte, a bad escape, invalid UTF-8) leaves the whole message
 * to jansson, so the errors a client sees do not change. */
#define LSP_BIG_STRING (256u << 10)
#define LSP_BIG_MAX 8

typedef struct lsp_big {
  size_t start, end; /* the string's content, between its quotes */
  char *text;        /* decoded */
  size_t len;
} lsp_big_t;

/* The index of the big string whose marker t is, or -1. */
static int lsp_big_marker(const char *t, size_t nbig) {
  return t && !strncmp(t, "\001ddx-big-", 9) && (size_t)(t[9] - '0') < nbig && !t[10] ? t[9] - '0'
                                                                                      : -1;
}

static void lsp_big_restore(json_t *v, lsp_big_t *big, size_t nbig, size_t *restored);

/* x's replacement when it is a marker (the decoded big string), else NULL
 * after restoring what x holds. */
static json_t *lsp_big_swap(json_t *x, lsp_big_t *big, size_t nbig, size_t *restored) {
  int m = lsp_big_marker(json_string_value(x), nbig);
  if (m < 0) {
    lsp_big_restore(x, big, nbig, restored);
    return NULL;
  }
  (*restored)++;
  return json_stringn_nocheck(big[m].text, big[m].len);
}

/* Puts the decoded big strings back where their markers are. */
static void lsp_big_restore(json_t *v, lsp_big_t *big, size_t nbig, size_t *restored) {
  json_t *r;
  if (json_is_object(v)) {
    for (void *it = json_object_iter(v); it; it = json_object_iter_next(v, it))
      if ((r = lsp_big_swap(json_object_iter_value(it), big, nbig, restored)))
        json_object_iter_set_new(v, it, r);
  } else if (json_is_array(v)) {
    for (size_t i = 0; i < json_array_size(v); i++)
      if ((r = lsp_big_swap(json_array_get(v, i), big, nbig, restored)))
        json_array_set_new(v, i, r);
  }
}

static json_t *lsp_parse_body(const char *body, size_t len, json_error_t *jerr) {
  const int flags = JSON_ALLOW_NUL | JSON_DECODE_ANY;
  if (len < LSP_BIG_STRING) return json_loadb(body, len, flags, jerr);
  /* Find the big strings: outside a string only '"' matters; inside one,
   * a backslash escapes the next byte. */
  lsp_big_t big[LSP_BIG_MAX];
  size_t nbig = 0;
  for (size_t i = 0; i < len && nbig < LSP_BIG_MAX;) {
    const char *q = memchr(body + i, '"', len - i);
    if (!q) break;
    size_t st = (size_t)(q - body) + 1, j = st;
    for (;;) {
      const char *e = memchr(body + j, '"', len - j);
      if (!e) return json_loadb(body, len, flags, jerr); /* unterminated: jansson says so */
      size_t at = (size_t)(e - body), bs = 0;
      while (at - bs > st && body[at - bs - 1] == '\\')
        bs++;
      j = at + 1;
      if (bs % 2 == 0) break; /* not escaped */
    }
    if (j - 1 - st >= LSP_BIG_STRING) big[nbig++] = (lsp_big_t){st, j - 1, NULL, 0};
    i = j;
  }
  if (!nbig) return json_loadb(body, len, flags, jerr);
  json_t *msg = NULL;
  ddx_sb_t rest;
  ddx_sb_init(&rest);
  size_t from = 0, k = 0;
  bool ok = true;
  for (; k < nbig && ok; k++) { /* k counts the allocations, freed below */
    lsp_big_t *g = &big[k];
    size_t end, at;
    g->text = malloc(g->end - g->start + 1);
    ok = g->text &&
         ddx_json_string_check(body, g->end + 1, g->start, true, &end, &at) == DDX_JSTR_OK &&
         end == g->end;
    if (!ok) continue;
    g->len = ddx_json_string_decode(body, g->start, g->end, g->text);
    ddx_sb_putn(&rest, body + from, g->start - from);
    ddx_sb_printf(&rest, "\\u0001ddx-big-%zu", k);
    from = g->end;
  }
  if (ok) {
    ddx_sb_putn(&rest, body + from, len - from);
    msg = rest.s ? json_loadb(rest.s, rest.len, flags, jerr) : NULL;
    size_t restored = 0;
    if (msg) lsp_big_restore(msg, big, nbig, &restored);
    if (msg && restored != nbig) { /* a big key, say: not this path's case */
      json_decref(msg);
      msg = NULL;
    }
  }
  ddx_sb_free(&rest);
  for (size_t i = 0; i < k; i++)
    free(big[i].text);
  return msg ? msg : json_loadb(body, len, flags, jerr);
}

static void lsp_parse_input(ddx_lsp_server_t *s) {
  size_t pos = 0;
  json_t *batch[64];
  size_t nb = 0;
  s->parsing = true;
  while (!s->exiting && !s->wq_paused) {
    char *b = s->rbuf + pos;
    size_t n = s->rlen - pos;
    if (s->rstate == LSP_RS_RESYNC) {
      bool found;
      size_t at = lsp_find_resync(b, n, &found);
      pos += at;
      if (!found) break;
      s->rstate = LSP_RS_HEADERS;
      continue;
    }
    if (s->rstate == LSP_RS_HEADERS) {
      size_t hend, body;
      if (!lsp_header_end(b, n < LSP_MAX_HEADER + 4 ? n : LSP_MAX_HEADER + 4, &hend, &body)) {
        if (n >= LSP_MAX_HEADER + 4) {
          lsp_frame_error(s, DDX_LSP_PARSE_ERROR,
                          "header block too long or missing: skipped to the next Content-Length");
          pos += 1;
          s->rstate = LSP_RS_RESYNC;
          continue;
        }
        break;
      }
      if (hend == 0 && body <= 3) {
        pos += body; /* stray blank line between frames */
        continue;
      }
      char why[128];
      size_t len = 0;
      if (lsp_parse_headers(b, hend, &len, why, sizeof why)) {
        char msg[256];
        snprintf(msg, sizeof msg, "bad frame header: %s; skipped to the next Content-Length", why);
        lsp_frame_error(s, DDX_LSP_PARSE_ERROR, msg);
        pos += 1;
        s->rstate = LSP_RS_RESYNC;
        continue;
      }
      if (len > s->max_frame) {
        /* Refused before any allocation: the body is discarded as it
         * streams in, while looking for the next header. */
        char msg[256];
        snprintf(msg, sizeof msg, "message of %zu bytes exceeds the %zu-byte frame limit: refused",
                 len, s->max_frame);
        lsp_frame_error(s, DDX_LSP_INVALID_REQUEST, msg);
        pos += body;
        s->rstate = LSP_RS_RESYNC;
        continue;
      }
      s->hdr_len = body;
      s->body_len = len;
      s->rstate = LSP_RS_BODY;
      continue;
    }
    /* LSP_RS_BODY */
    if (n < s->hdr_len + s->body_len) break;
    json_error_t jerr;
    json_t *msg = lsp_parse_body(b + s->hdr_len, s->body_len, &jerr);
    pos += s->hdr_len + s->body_len;
    s->rstate = LSP_RS_HEADERS;
    if (!msg) {
      char m[300];
      snprintf(m, sizeof m, "parse error: %.200s (position %d)", jerr.text, jerr.position);
      ddx_lsp_reply_error(s, NULL, DDX_LSP_PARSE_ERROR, m);
      continue;
    }
    batch[nb++] = msg;
    if (nb == sizeof batch / sizeof batch[0]) {
      lsp_process_batch(s, batch, nb);
      for (size_t i = 0; i < nb; i++)
        json_decref(batch[i]);
      nb = 0;
    }
  }
  lsp_process_batch(s, batch, nb);
  for (size_t i = 0; i < nb; i++)
    json_decref(batch[i]);
  if (s->rbuf && pos) {
    memmove(s->rbuf, s->rbuf + pos, s->rlen - pos);
    s->rlen -= pos;
  }
  s->parsing = false;
}

/* ----------------------------------------------------------------- reading */

static int lsp_reserve(ddx_lsp_server_t *s, size_t extra) {
  if (s->rcap - s->rlen >= extra) return 0;
  size_t cap = s->rcap ? s->rcap : LSP_READ_CHUNK;
  while (cap - s->rlen < extra)
    cap *= 2;
  char *nb = realloc(s->rbuf, cap);
  if (!nb) return -1;
  s->rbuf = nb;
  s->rcap = cap;
  return 0;
}

static void lsp_on_eof(ddx_lsp_server_t *s) {
  /* The client closed our stdin: it will never send exit. */
  lsp_stop(s, s->shutdown ? 0 : 1);
}

static void lsp_on_alloc(uv_handle_t *h, size_t suggested, uv_buf_t *buf) {
  ddx_lsp_server_t *s = h->data;
  (void)suggested;
  size_t want = LSP_READ_CHUNK;
  /* A frame whose size is known gets its room at once (it is capped). */
  if (s->rstate == LSP_RS_BODY && s->hdr_len + s->body_len > s->rlen) {
    size_t need = s->hdr_len + s->body_len - s->rlen;
    if (need > want) want = need;
  }
  if (lsp_reserve(s, want)) {
    *buf = uv_buf_init(NULL, 0); /* UV_ENOBUFS follows */
    return;
  }
  *buf = uv_buf_init(s->rbuf + s->rlen, (unsigned)(s->rcap - s->rlen));
}

static void lsp_on_read(uv_stream_t *st, ssize_t nread, const uv_buf_t *buf) {
  ddx_lsp_server_t *s = st->data;
  (void)buf;
  if (nread > 0) {
    s->rlen += (size_t)nread;
    lsp_parse_input(s);
  } else if (nread < 0) {
    if (nread != UV_EOF) ddx_lsp_log(s, DDX_LSP_LOG_ERROR, "stdin: %s", uv_strerror((int)nread));
    lsp_on_eof(s);
  }
}

static void lsp_on_fs_read(uv_fs_t *req) {
  ddx_lsp_server_t *s = req->data;
  ssize_t r = req->result;
  uv_fs_req_cleanup(req);
  if (!s->in_open) return;
  if (r <= 0) {
    lsp_on_eof(s);
    return;
  }
  if (lsp_reserve(s, (size_t)r)) {
    lsp_stop(s, 1);
    return;
  }
  memcpy(s->rbuf + s->rlen, s->in_fs_buf, (size_t)r);
  s->rlen += (size_t)r;
  lsp_parse_input(s);
  if (s->in_open && s->wq_paused)
    s->in_stalled = true;
  else if (s->in_open)
    lsp_fs_read_next(s);
}

static void lsp_fs_read_next(ddx_lsp_server_t *s) {
  uv_buf_t b = uv_buf_init(s->in_fs_buf, sizeof s->in_fs_buf);
  s->in_fs.data = s;
  if (uv_fs_read(&s->loop, &s->in_fs, 0, &b, 1, -1, lsp_on_fs_read) < 0) lsp_on_eof(s);
}

/* Opens fd as a libuv stream of the kind it is. Returns 0, or a libuv error
 * (then nothing was initialised). */
static int lsp_open_stream(ddx_lsp_server_t *s, ddx_lsp_stream_t *st, uv_handle_type *type, int fd,
                           bool readable) {
  *type = uv_guess_handle(fd);
  int rc;
  switch (*type) {
  case UV_NAMED_PIPE:
    rc = uv_pipe_init(&s->loop, &st->pipe, 0);
    if (rc) return rc;
    rc = uv_pipe_open(&st->pipe, fd);
    break;
  case UV_TTY:
    rc = uv_tty_init(&s->loop, &st->tty, fd, readable);
    if (rc) return rc;
    break;
  case UV_TCP:
    rc = uv_tcp_init(&s->loop, &st->tcp);
    if (rc) return rc;
    rc = uv_tcp_open(&st->tcp, fd);
    break;
  case UV_FILE:
    return 0;
  default:
    return UV_EINVAL;
  }
  if (rc) {
    uv_close(&st->handle, NULL);
    return rc;
  }
  st->handle.data = s;
  return 0;
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
  for (size_t i = 0; i < s->nfolders; i++)
    free(s->folders[i]);
  free(s->folders);
  for (size_t i = 0; i < s->nextra_rules; i++)
    free(s->extra_rules[i]);
  free(s->extra_rules);
  free(s->dsconfig_path);
  free(s->mem_model_path);
  free(s->rules_default);
  ddx_dscheck_free(s->dscheck);
  free(s->log_facts.ds_json);
  free(s->rbuf);
  lsp_drop_queue(s);
  json_decref(s->pending_cancel);
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
  s->max_frame = DDX_LSP_DEFAULT_MAX_FRAME;
  const char *mf = getenv("DDX_LSP_MAX_FRAME");
  if (mf && *mf) {
    char *e;
    unsigned long long v = strtoull(mf, &e, 10);
    if (!*e && v > 0) s->max_frame = (size_t)v;
  }
  s->parent_interval_ms = 500;
  s->wq_limit = DDX_LSP_DEFAULT_MAX_WQUEUE;
  const char *wq = getenv("DDX_LSP_MAX_WQUEUE");
  if (wq && *wq) {
    char *e;
    unsigned long long v = strtoull(wq, &e, 10);
    if (!*e && v >= 4096) s->wq_limit = (size_t)v;
  }
  s->exit_code = 1;
  s->pending_cancel = json_array();
  int rc = uv_loop_init(&s->loop);
  if (rc) {
    fprintf(stderr, "ddx lsp: %s\n", uv_strerror(rc));
    free(s);
    return 1;
  }
  rc = lsp_open_stream(s, &s->in, &s->in_type, 0, true);
  if (rc == 0) {
    s->in_open = true;
    rc = lsp_open_stream(s, &s->out, &s->out_type, 1, false);
    if (rc == 0) s->out_open = true;
  }
  if (rc) {
    fprintf(stderr, "ddx lsp: cannot use stdin/stdout: %s\n", uv_strerror(rc));
    s->exiting = true;
  } else if (s->in_type == UV_FILE) {
    lsp_fs_read_next(s);
  } else {
    rc = uv_read_start(&s->in.stream, lsp_on_alloc, lsp_on_read);
    if (rc) {
      fprintf(stderr, "ddx lsp: cannot read stdin: %s\n", uv_strerror(rc));
      lsp_stop(s, 1);
    } else {
      s->reading = true;
    }
  }
  uv_run(&s->loop, UV_RUN_DEFAULT);
  /* Everything is closed by lsp_stop; this only guards a bug from hanging
   * the process in uv_loop_close. */
  if (uv_loop_close(&s->loop) == UV_EBUSY) {
    uv_walk(&s->loop, lsp_walk_close, NULL);
    uv_run(&s->loop, UV_RUN_DEFAULT);
    uv_loop_close(&s->loop);
  }
  int code = rc ? 1 : s->exit_code;
  lsp_server_free(s);
  free(s);
  return code;
}
