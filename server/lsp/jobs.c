/* jobs.c - scans on the libuv thread pool (see internal.h): documents,
 * text from ddx.diagnoseText, files streamed by ddx.diagnoseFile;
 * work-done progress and cancellation. A scan works on a snapshot (an
 * immutable text reference) and a catalog reference: the loop thread may
 * apply edits or reload the catalog while it runs. Its result is published
 * (diagnostics.c) only when the document still has the version it
 * scanned. */
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

#define LSP_FEED_CHUNK ((size_t)1 << 20)
#define LSP_PROGRESS_MS 200

/* ------------------------------------------------------------ the worker */

/* Runs on a pool thread: touches only the job, its snapshot and the
 * (immutable, shareable) catalog. */
/* A file job's read hook (any part's thread): progress and cancel. */
static int lsp_on_read(void *ctx, size_t n) {
  ddx_lsp_job_t *j = ctx;
  atomic_fetch_add(&j->done, (unsigned long long)n);
  return atomic_load(&j->cancel);
}

/* A FILE job's file, opened here on the pool thread, never on the loop:
 * non-blocking, a regular file only (a FIFO or device swapped in after the
 * request is refused, not waited on), and inside the workspace folders by
 * the real path of the descriptor opened, not by the name asked for. */
static int lsp_scan_file(ddx_lsp_job_t *j, ddx_scan_t *scan, size_t threads) {
  ddx_file_opts_t o = {.what = "log"};
  struct stat st;
  int fd = ddx_file_open(j->path, &o, &st, &j->err);
  if (fd < 0) return fd;
  int rc = 0;
  if (j->folders) {
    char *real = ddx_file_realpath(fd, j->path);
    bool in = false;
    for (char **f = j->folders; real && *f && !in; f++)
      in = ddx_path_within(real, *f);
    j->outside = !in;
    if (!in)
      rc = ddx_error_set(&j->err, DDX_EINVAL,
                         "ddx.diagnoseFile: %s is outside the workspace folders (allow it with "
                         "the setting ddx.diagnoseFile.allowOutsideWorkspace)",
                         real ? real : j->path);
    free(real);
  }
  if (!rc) {
    j->total = (uint64_t)st.st_size;
    rc = ddx_split_scan_fd(scan, fd, &st, j->path, threads, DDX_SPLIT_MIN_DEFAULT, &j->err);
  }
  close(fd);
  return rc;
}

static void lsp_work(uv_work_t *req) {
  ddx_lsp_job_t *j = req->data;
  ddx_lsp_result_t *r = calloc(1, sizeof *r);
  if (!r) {
    j->rc = ddx_error_set(&j->err, DDX_ENOMEM, "out of memory");
    return;
  }
  j->result = r;
  if (ddx_scan_init(&r->scan, j->cat->cat)) {
    j->rc = ddx_error_set(&j->err, DDX_ENOMEM, "out of memory");
    return;
  }
  int rc = 0;
  if (j->kind == DDX_LSP_JOB_FILE) {
    /* A big file is scanned in parts on several threads (ddx/split.h),
     * all CPUs but one: the editor's loop keeps a core (on two CPUs a
     * second scanning thread tripled the hover p99 during the scan).
     * Every part reports its bytes and sees the cancel flag. */
    size_t threads = ddx_split_threads();
    threads = threads > 2 ? threads - 1 : 1;
    r->scan.on_read = lsp_on_read;
    r->scan.on_read_ctx = j;
    rc = lsp_scan_file(j, &r->scan, threads);
    if (rc && atomic_load(&j->cancel)) ddx_error_set(&j->err, DDX_EINVAL, "cancelled");
  } else {
    const char *name = j->uri ? ddx_lsp_basename(j->uri) : "text";
    rc = ddx_scan_begin(&r->scan, name);
    for (size_t off = 0; !rc && off < j->text->len; off += LSP_FEED_CHUNK) {
      if (atomic_load(&j->cancel)) {
        rc = ddx_error_set(&j->err, DDX_EINVAL, "cancelled");
        break;
      }
      size_t n = j->text->len - off < LSP_FEED_CHUNK ? j->text->len - off : LSP_FEED_CHUNK;
      rc = ddx_scan_feed(&r->scan, j->text->data + off, n);
      atomic_fetch_add(&j->done, (unsigned long long)n);
    }
    int rc2 = ddx_scan_end(&r->scan);
    if (!rc) rc = rc2;
  }
  if (!rc && atomic_load(&j->cancel)) rc = ddx_error_set(&j->err, DDX_EINVAL, "cancelled");
  if (!rc) rc = ddx_diagnose(&r->diag, &r->scan, &j->err);
  /* A document keeps its result while open: the scanner's buffers go. */
  if (!rc) ddx_scan_trim(&r->scan);
  if (!rc && j->text)
    ddx_lsp_logfacts_from_text(j->text->data, j->text->len, &r->facts);
  else if (!j->err.msg[0])
    ddx_error_set(&j->err, rc, "scan failed");
  if (rc) {
    ddx_scan_free(&r->scan);
    free(r);
    j->result = NULL;
  }
  j->rc = rc;
}

/* ---------------------------------------------------------------- progress */

static void lsp_progress_send(ddx_lsp_server_t *s, ddx_lsp_job_t *j, json_t *value) {
  ddx_lsp_notify(s, "$/progress", json_pack("{s:O, s:o}", "token", j->token, "value", value));
}

static void lsp_progress_end(ddx_lsp_server_t *s, ddx_lsp_job_t *j, const char *msg) {
  if (j->progress == 3)
    lsp_progress_send(s, j, json_pack("{s:s, s:s}", "kind", "end", "message", msg));
  j->progress = 4;
}

/* Sends begin (as soon as the token is usable, so that even a job that
 * ends before the first tick shows begin and end) or a report. */
static void lsp_progress_step(ddx_lsp_server_t *s, ddx_lsp_job_t *j) {
  unsigned long long done = atomic_load(&j->done);
  int pct = j->total ? (int)(done * 100 / j->total) : 0;
  if (pct > 100) pct = 100;
  char msg[128];
  snprintf(msg, sizeof msg, "%.1f of %.1f MB", (double)done / 1e6, (double)j->total / 1e6);
  if (j->progress == 2) {
    lsp_progress_send(s, j,
                      json_pack("{s:s, s:s, s:b, s:s, s:i}", "kind", "begin", "title", j->title,
                                "cancellable", j->req_id != NULL, "message", msg, "percentage",
                                pct));
    j->progress = 3;
  } else if (j->progress == 3) {
    lsp_progress_send(
        s, j, json_pack("{s:s, s:s, s:i}", "kind", "report", "message", msg, "percentage", pct));
  }
}

void ddx_lsp_progress_tick(ddx_lsp_server_t *s) {
  bool any = false;
  for (ddx_lsp_job_t *j = s->work.jobs; j; j = j->next) {
    if (j->progress == 1) any = true;
    if (j->progress != 2 && j->progress != 3) continue;
    any = true;
    lsp_progress_step(s, j);
  }
  if (!any && s->work.progress_timer_on) uv_timer_stop(&s->work.progress_timer);
}

static void lsp_on_progress_timer(uv_timer_t *t) {
  ddx_lsp_progress_tick(t->data);
}

/* Asks for work-done progress: the client's token when the request brought
 * one, else a token we create (when the client supports it). */
void ddx_lsp_progress_want(ddx_lsp_server_t *s, ddx_lsp_job_t *j, json_t *token) {
  if (s->life.exiting) return;
  if (token && (json_is_string(token) || json_is_integer(token))) {
    j->token = json_incref(token);
    j->progress = 2;
    lsp_progress_step(s, j);
  } else if (s->life.cap_progress) {
    char buf[64];
    snprintf(buf, sizeof buf, "ddx-%lld", (long long)++s->work.next_token);
    j->token = json_string(buf);
    j->progress = 1;
    j->create_id =
        ddx_lsp_request(s, "window/workDoneProgress/create", json_pack("{s:O}", "token", j->token));
  } else {
    return;
  }
  if (!s->work.progress_timer_on) {
    if (uv_timer_init(&s->loop, &s->work.progress_timer)) return;
    s->work.progress_timer.data = s;
    s->work.progress_timer_on = true;
  }
  if (!uv_is_active((uv_handle_t *)&s->work.progress_timer))
    uv_timer_start(&s->work.progress_timer, lsp_on_progress_timer, LSP_PROGRESS_MS,
                   LSP_PROGRESS_MS);
}

void ddx_lsp_progress_response(ddx_lsp_server_t *s, int64_t id, bool ok) {
  for (ddx_lsp_job_t *j = s->work.jobs; j; j = j->next)
    if (j->progress == 1 && j->create_id == id) {
      j->progress = ok ? 2 : 0;
      if (ok) lsp_progress_step(s, j);
    }
}

/* window/workDoneProgress/cancel: the user pressed Cancel. */
static json_t *lsp_progress_cancel(ddx_lsp_server_t *s, json_t *params) {
  json_t *token = json_object_get(params, "token");
  for (ddx_lsp_job_t *j = s->work.jobs; j && token; j = j->next) {
    if (j->token && json_equal(j->token, token)) {
      if (j->req_id)
        ddx_lsp_cancel_request(s, j->req_id);
      else
        atomic_store(&j->cancel, 1);
    }
  }
  return NULL;
}

/* -------------------------------------------------------------------- jobs */

void ddx_lsp_job_free(ddx_lsp_job_t *j) {
  ddx_lsp_text_unref(j->text);
  ddx_lsp_catalog_unref(j->cat);
  ddx_lsp_result_free(j->result);
  json_decref(j->req_id);
  json_decref(j->token);
  free(j->path);
  for (char **f = j->folders; f && *f; f++)
    free(*f);
  free(j->folders);
  free(j->uri);
  free(j);
}

static void lsp_job_unlink(ddx_lsp_server_t *s, ddx_lsp_job_t *j) {
  for (ddx_lsp_job_t **pp = &s->work.jobs; *pp; pp = &(*pp)->next) {
    if (*pp == j) {
      *pp = j->next;
      return;
    }
  }
}

static json_t *lsp_report(const ddx_lsp_result_t *r, double seconds) {
  ddx_report_opts_t o = {.seconds = seconds};
  char *js = ddx_report_json(&r->diag, &o);
  if (!js) return NULL;
  json_t *v = json_loads(js, 0, NULL);
  free(js);
  return v;
}

static void lsp_after_work(uv_work_t *req, int status) {
  ddx_lsp_job_t *j = req->data;
  ddx_lsp_server_t *s = j->s;
  lsp_job_unlink(s, j);
  if (j->result) {
    /* References are counted on the loop thread only: the result takes its
     * own here, not in the worker. */
    j->result->cat = ddx_lsp_catalog_ref(j->cat);
    j->result->text = ddx_lsp_text_ref(j->text);
    j->result->version = j->version;
    ddx_lsp_logfacts_from_scan(&j->result->scan, &j->result->facts);
  }
  bool cancelled = status == UV_ECANCELED || atomic_load(&j->cancel);
  double secs = (double)(ddx_lsp_now_ns() - j->start_ns) / 1e9;
  lsp_progress_end(s, j, cancelled ? "cancelled" : j->rc ? "failed" : "done");
  if (s->life.exiting) {
    if (j->req_id)
      ddx_lsp_reply_error(s, j->req_id, DDX_LSP_REQUEST_CANCELLED, "the server is exiting");
    /* the document outlives this job: it must not point at it (found by
     * fuzz_lsp: a use after free when the documents are freed at exit) */
    ddx_lsp_doc_t *d = j->kind == DDX_LSP_JOB_DOC && j->uri ? ddx_lsp_doc_find(s, j->uri) : NULL;
    if (d && d->job == j) d->job = NULL;
    ddx_lsp_job_free(j);
    return;
  }
  if (j->kind == DDX_LSP_JOB_DOC) {
    ddx_lsp_doc_t *d = j->uri ? ddx_lsp_doc_find(s, j->uri) : NULL;
    if (d && d->job == j) {
      d->job = NULL;
      if (!cancelled && j->rc == 0 && j->result && d->version == j->version && !d->rescan) {
        ddx_lsp_text_t *before = d->result ? ddx_lsp_text_ref(d->result->text) : NULL;
        ddx_lsp_result_free(d->result);
        d->result = j->result;
        j->result = NULL;
        ddx_lsp_publish_doc(s, d, before);
        ddx_lsp_text_unref(before);
        ddx_lsp_cfg_log_diagnosed(s, d->uri, d->result);
        if (s->life.trace != DDX_LSP_TRACE_OFF)
          ddx_lsp_log(s, DDX_LSP_LOG_DEBUG, "diagnosed %s (version %lld, %zu bytes) in %.1f ms",
                      d->uri, (long long)d->version, d->text->len, secs * 1e3);
      } else if (!cancelled && j->rc) {
        ddx_lsp_log(s, DDX_LSP_LOG_ERROR, "scan of %s failed: %s", d->uri, j->err.msg);
      }
      /* Results for an older version are dropped; the newest text is due. */
      if (d->rescan || (d->version != j->version && !cancelled)) {
        d->rescan = false;
        ddx_lsp_schedule_scan(s, d);
      }
    }
    ddx_lsp_job_free(j);
    return;
  }
  if (!j->req_id) { /* answered already: cancelled */
    ddx_lsp_job_free(j);
    return;
  }
  if (cancelled) {
    ddx_lsp_reply_error(s, j->req_id, DDX_LSP_REQUEST_CANCELLED, "request cancelled");
  } else if (j->rc && j->outside) {
    /* error.data says why, so a client decides on it and not on the message's words */
    const char *msg = j->err.msg;
    ddx_lsp_send(s,
                 json_pack("{s:s, s:O, s:{s:i, s:o, s:{s:s}}}", "jsonrpc", "2.0", "id", j->req_id,
                           "error", "code", DDX_LSP_REQUEST_FAILED, "message",
                           ddx_lsp_jstr(msg, strlen(msg)), "data", "reason", "outsideWorkspace"));
  } else if (j->rc || !j->result) {
    ddx_lsp_reply_error(s, j->req_id, DDX_LSP_REQUEST_FAILED,
                        j->err.msg[0] ? j->err.msg : "scan failed");
  } else {
    json_t *report = lsp_report(j->result, secs);
    ddx_lsp_cfg_log_diagnosed(s, j->uri ? j->uri : "the diagnosed text", j->result);
    if (j->kind == DDX_LSP_JOB_FILE) {
      /* An open document keeps the diagnostics of its own (editor) text. */
      if (!ddx_lsp_doc_find(s, j->uri)) ddx_lsp_publish(s, j->uri, j->result, 0, false);
      ddx_lsp_log(s, DDX_LSP_LOG_INFO, "diagnosed %s: %llu bytes, %llu lines in %.2f s", j->path,
                  (unsigned long long)j->result->scan.bytes,
                  (unsigned long long)j->result->scan.lines, secs);
    }
    if (report)
      ddx_lsp_reply(s, j->req_id, report);
    else
      ddx_lsp_reply_error(s, j->req_id, DDX_LSP_INTERNAL_ERROR, "could not render the report");
  }
  ddx_lsp_job_free(j);
}

ddx_lsp_job_t *ddx_lsp_job_new(ddx_lsp_server_t *s, int kind) {
  ddx_lsp_job_t *j = calloc(1, sizeof *j);
  if (!j) return NULL;
  j->s = s;
  j->kind = kind;
  j->req.data = j;
  atomic_init(&j->cancel, 0);
  atomic_init(&j->done, 0);
  j->cat = ddx_lsp_catalog_ref(s->cat);
  j->start_ns = ddx_lsp_now_ns();
  j->title = kind == DDX_LSP_JOB_FILE ? "ddx: diagnosing the log file" : "ddx: diagnosing";
  return j;
}

int ddx_lsp_job_queue(ddx_lsp_server_t *s, ddx_lsp_job_t *j) {
  int rc = uv_queue_work(&s->loop, &j->req, lsp_work, lsp_after_work);
  if (rc) return rc;
  j->next = s->work.jobs;
  s->work.jobs = j;
  return 0;
}

void ddx_lsp_schedule_scan(ddx_lsp_server_t *s, ddx_lsp_doc_t *d) {
  if (!s->cat || s->life.exiting || s->life.shutdown) return;
  if (d->job) {
    /* One scan per document at a time: the running one is stopped and the
     * newest text is scanned when it returns. */
    atomic_store(&d->job->cancel, 1);
    d->rescan = true;
    return;
  }
  ddx_lsp_job_t *j = ddx_lsp_job_new(s, DDX_LSP_JOB_DOC);
  if (!j) return;
  j->text = ddx_lsp_text_ref(d->text);
  j->version = d->version;
  j->uri = strdup(d->uri);
  j->total = d->text->len;
  if (!j->uri || ddx_lsp_job_queue(s, j)) {
    ddx_lsp_job_free(j);
    return;
  }
  d->job = j;
  if (j->total >= DDX_LSP_PROGRESS_MIN_BYTES) ddx_lsp_progress_want(s, j, NULL);
}

void ddx_lsp_cancel_jobs(ddx_lsp_server_t *s) {
  ddx_lsp_stall_stop(s); /* nothing is published after shutdown */
  for (ddx_lsp_job_t *j = s->work.jobs; j; j = j->next) {
    atomic_store(&j->cancel, 1);
    uv_cancel((uv_req_t *)&j->req); /* only succeeds before it started */
    /* Pending requests are answered now, before the shutdown response:
     * after exit nothing can be said any more. */
    if (j->req_id) {
      ddx_lsp_reply_error(s, j->req_id, DDX_LSP_REQUEST_CANCELLED, "the server is shutting down");
      json_decref(j->req_id);
      j->req_id = NULL;
    }
  }
}

bool ddx_lsp_cancel_request(ddx_lsp_server_t *s, json_t *id) {
  for (ddx_lsp_job_t *j = s->work.jobs; j; j = j->next) {
    if (j->req_id && json_equal(j->req_id, id)) {
      atomic_store(&j->cancel, 1);
      ddx_lsp_reply_error(s, j->req_id, DDX_LSP_REQUEST_CANCELLED, "request cancelled");
      json_decref(j->req_id);
      j->req_id = NULL;
      return true;
    }
  }
  return false;
}

json_t *ddx_lsp_work_done_cancel(ddx_lsp_server_t *s, json_t *params, ddx_lsp_call_t *call) {
  (void)call;
  return lsp_progress_cancel(s, params);
}

void ddx_lsp_progress_stop(ddx_lsp_server_t *s) {
  if (s->work.progress_timer_on) {
    s->work.progress_timer_on = false;
    uv_close((uv_handle_t *)&s->work.progress_timer, NULL);
  }
}
