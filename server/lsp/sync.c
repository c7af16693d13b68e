/* sync.c - text document synchronisation (see internal.h): didOpen,
 * didChange (full and incremental), didClose and didSave, each in one
 * place: the document store is updated (documents.c, text.c), a log is
 * scanned (jobs.c), a JSON document is checked as a DeepSpeed config
 * (config.c), and the quick-fix index hears of it (actions.c). */
#include "internal.h"

#include <ctype.h>
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

#include "ddx/dsconfig.h"
#include "ddx/file.h"
#include "ddx/version.h"

/* Notifications cannot answer an error: a malformed one is logged. */
static json_t *lsp_bad(ddx_lsp_server_t *s, const char *method, const char *why) {
  ddx_lsp_log(s, DDX_LSP_LOG_ERROR, "%s: invalid params: %s", method, why);
  return NULL;
}

static json_t *sync_open(ddx_lsp_server_t *s, json_t *params, ddx_lsp_call_t *call) {
  (void)call;
  json_t *td = json_object_get(params, "textDocument");
  json_t *juri = json_object_get(td, "uri"), *jtext = json_object_get(td, "text");
  json_t *jver = json_object_get(td, "version"), *jlang = json_object_get(td, "languageId");
  if (!json_is_string(juri) || !json_is_string(jtext) || !json_is_integer(jver))
    return lsp_bad(s, "textDocument/didOpen", "textDocument needs uri, version and text");
  const char *uri = json_string_value(juri);
  ddx_lsp_doc_t *old = ddx_lsp_doc_find(s, uri);
  if (old) { /* a client bug, but the newest text wins */
    ddx_lsp_doc_unlink(s, old);
    ddx_lsp_doc_free(old);
  }
  ddx_lsp_doc_t *d = calloc(1, sizeof *d);
  if (!d) return NULL;
  d->uri = strdup(uri);
  d->path = ddx_lsp_uri_to_path(uri);
  d->language = strdup(json_is_string(jlang) ? json_string_value(jlang) : "");
  d->version = json_integer_value(jver);
  d->text = ddx_lsp_text_new(json_string_value(jtext), json_string_length(jtext));
  if (!d->uri || !d->language || !d->text) {
    ddx_lsp_doc_free(d);
    ddx_lsp_log(s, DDX_LSP_LOG_ERROR, "didOpen %s: out of memory", uri);
    return NULL;
  }
  d->kind = ddx_lsp_doc_kind(uri, d->language, d->text->data, d->text->len);
  d->next = s->docs;
  s->docs = d;
  if (d->kind == DDX_LSP_DOC_LOG) ddx_lsp_schedule_scan(s, d);
  return NULL;
}

static json_t *sync_change(ddx_lsp_server_t *s, json_t *params, ddx_lsp_call_t *call) {
  (void)call;
  json_t *td = json_object_get(params, "textDocument");
  json_t *juri = json_object_get(td, "uri"), *jver = json_object_get(td, "version");
  json_t *changes = json_object_get(params, "contentChanges");
  if (!json_is_string(juri) || !json_is_array(changes))
    return lsp_bad(s, "textDocument/didChange", "needs textDocument.uri and contentChanges");
  ddx_lsp_doc_t *d = ddx_lsp_doc_find(s, json_string_value(juri));
  if (!d) {
    ddx_lsp_log(s, DDX_LSP_LOG_WARNING, "didChange for %s, which is not open: ignored",
                json_string_value(juri));
    return NULL;
  }
  /* The batch is applied to one working copy; the immutable text scans
   * run on is made once, at the end. */
  ddx_lsp_wc_t w = {0};
  bool live = false;
  bool was_empty = d->text->len == 0;
  size_t n = json_array_size(changes);
  for (size_t i = 0; i < n; i++) {
    const char *why = NULL;
    if (ddx_lsp_apply_change(s, d, &w, &live, json_array_get(changes, i), i + 1 == n, &why)) {
      /* The rest of the batch is relative to a text we could not build:
       * keep the last good text and say so; the client's next full sync
       * repairs it. */
      ddx_lsp_log(s, DDX_LSP_LOG_ERROR, "didChange %s: change %zu rejected: %s", d->uri, i, why);
      break;
    }
  }
  if (live) {
    ddx_lsp_text_t *t = ddx_lsp_wc_finish(&w);
    if (t) {
      ddx_lsp_text_unref(d->text);
      d->text = t;
    } else {
      ddx_lsp_wc_free(&w);
      ddx_lsp_log(s, DDX_LSP_LOG_ERROR, "didChange %s: out of memory, changes lost", d->uri);
    }
  }
  if (json_is_integer(jver))
    d->version = json_integer_value(jver);
  else
    d->version++;
  /* A buffer opened empty (an untitled one the user pastes into) is
   * classified by its first text. */
  if (was_empty && d->text->len)
    d->kind = ddx_lsp_doc_kind(d->uri, d->language, d->text->data, d->text->len);
  if (d->kind == DDX_LSP_DOC_LOG) ddx_lsp_schedule_scan(s, d);
  return NULL;
}

static json_t *sync_close(ddx_lsp_server_t *s, json_t *params, ddx_lsp_call_t *call) {
  (void)call;
  const char *uri =
      json_string_value(json_object_get(json_object_get(params, "textDocument"), "uri"));
  if (!uri) return lsp_bad(s, "textDocument/didClose", "needs textDocument.uri");
  ddx_lsp_doc_t *d = ddx_lsp_doc_find(s, uri);
  if (!d) return NULL;
  ddx_lsp_doc_unlink(s, d);
  if (d->kind == DDX_LSP_DOC_LOG) /* a closed log's problems go away with it */
    ddx_lsp_notify(s, "textDocument/publishDiagnostics",
                   json_pack("{s:s, s:[]}", "uri", d->uri, "diagnostics"));
  ddx_lsp_doc_free(d);
  return NULL;
}

static json_t *sync_save(ddx_lsp_server_t *s, json_t *params, ddx_lsp_call_t *call) {
  (void)call;
  const char *uri =
      json_string_value(json_object_get(json_object_get(params, "textDocument"), "uri"));
  if (!uri) return lsp_bad(s, "textDocument/didSave", "needs textDocument.uri");
  /* The text is already in sync through didChange; a log whose scan failed
   * (e.g. the catalog was broken) gets another chance. */
  ddx_lsp_doc_t *d = ddx_lsp_doc_find(s, uri);
  if (d && d->kind == DDX_LSP_DOC_LOG && !d->result && !d->job) ddx_lsp_schedule_scan(s, d);
  return NULL;
}

/* Documents: documents.c keeps the texts; a JSON document is checked as a
 * DeepSpeed config after each change (config.c). */
static ddx_lsp_doc_t *lsp_param_doc(ddx_lsp_server_t *s, json_t *params) {
  const char *uri =
      json_string_value(json_object_get(json_object_get(params, "textDocument"), "uri"));
  return uri ? ddx_lsp_doc_find(s, uri) : NULL;
}

json_t *ddx_lsp_did_open(ddx_lsp_server_t *s, json_t *params, ddx_lsp_call_t *call) {
  json_t *r = sync_open(s, params, call);
  ddx_lsp_doc_t *d = lsp_param_doc(s, params);
  if (d) ddx_lsp_actions_doc_event(s, d);
  if (d) ddx_lsp_cfg_check_doc(s, d);
  return r;
}

json_t *ddx_lsp_did_change(ddx_lsp_server_t *s, json_t *params, ddx_lsp_call_t *call) {
  json_t *r = sync_change(s, params, call);
  ddx_lsp_doc_t *d = lsp_param_doc(s, params);
  if (d) ddx_lsp_cfg_check_doc(s, d);
  return r;
}

json_t *ddx_lsp_did_close(ddx_lsp_server_t *s, json_t *params, ddx_lsp_call_t *call) {
  ddx_lsp_doc_t *d = lsp_param_doc(s, params);
  if (d) ddx_lsp_actions_doc_event(s, d);
  if (d) ddx_lsp_cfg_doc_closed(s, d);
  return sync_close(s, params, call);
}

json_t *ddx_lsp_did_save(ddx_lsp_server_t *s, json_t *params, ddx_lsp_call_t *call) {
  json_t *r = sync_save(s, params, call);
  ddx_lsp_doc_t *d = lsp_param_doc(s, params);
  if (d) ddx_lsp_actions_doc_event(s, d);
  if (d && !strcmp(ddx_lsp_basename(d->uri), "config.json")) {
    /* maybe the model's config.json: look again */
    ddx_lsp_cfg_model_changed(s);
    ddx_lsp_cfg_check_all(s);
  } else if (d) {
    ddx_lsp_cfg_check_doc(s, d);
  }
  return r;
}
