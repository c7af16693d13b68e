/* lsp_diag.c - the language server's work (see ddx/lsp.h): the catalog it
 * shares with scans, scans on the libuv thread pool (documents, text from
 * ddx.diagnoseText, files streamed by ddx.diagnoseFile), work-done
 * progress, cancellation, publishDiagnostics, workspace/executeCommand and
 * the client's settings.
 *
 * A scan works on a snapshot (an immutable text reference) and a catalog
 * reference: the loop thread may apply edits or reload the catalog while it
 * runs. Its result is published only when the document still has the
 * version it scanned. */
#include "internal.h"
#include "ddx/split.h"

#include "ddx/file.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ddx/hub.h"
#include "ddx/report.h"

#define LSP_FEED_CHUNK ((size_t)1 << 20)
#define LSP_PROGRESS_MS 200

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
  for (size_t i = 0; with_extra && i < s->nextra_rules && n < 65; i++)
    paths[n++] = s->extra_rules[i];
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

static char *lsp_rule_file_uri(const ddx_rule_t *r);

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
  json_t *range = at ? ddx_lsp_range(t, s->encoding, (size_t)(at - t->data),
                                     (size_t)(at - t->data) + strlen(needle))
                     : ddx_lsp_line_range(t, s->encoding, 0);
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
    char *u = lsp_rule_file_uri(k->rule);
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
    if (s->nextra_rules && !s->cat) {
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
              s->nextra_rules ? " and the extra rule folders" : "");
  lsp_publish_rule_checks(s, c);
  /* Open logs are diagnosed again with the new catalog. */
  for (ddx_lsp_doc_t *d = s->docs; d; d = d->next)
    if (d->kind == DDX_LSP_DOC_LOG) ddx_lsp_schedule_scan(s, d);
  return 0;
}

/* The file: URI of the rule's file (its real path). */
static char *lsp_rule_file_uri(const ddx_rule_t *r) {
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
  return lsp_rule_file_uri(r);
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

/* ------------------------------------------------------------ diagnostics */

static json_t *lsp_loc(const ddx_lsp_server_t *s, const char *uri, const ddx_lsp_text_t *t,
                       uint64_t line1) {
  size_t line = line1 ? (size_t)(line1 - 1) : 0;
  json_t *range;
  if (t) {
    range = ddx_lsp_line_range(t, s->encoding, line);
  } else {
    /* A streamed file has no text here: the whole line is from its start
     * to the start of the next. */
    range = json_pack("{s:{s:I,s:i}, s:{s:I,s:i}}", "start", "line", (json_int_t)line, "character",
                      0, "end", "line", (json_int_t)line + 1, "character", 0);
  }
  return json_pack("{s:s, s:o}", "uri", uri, "range", range);
}

static void lsp_rank_text(char *out, size_t cap, int32_t rank, const char *host) {
  if (rank >= 0)
    snprintf(out, cap, "rank %d%s%s", rank, host && *host ? " on " : "", host && *host ? host : "");
  else
    snprintf(out, cap, "rank unknown%s%s", host && *host ? ", host " : "",
             host && *host ? host : "");
}

static int lsp_severity(int sev) {
  return sev == DDX_SEV_ERROR ? 1 : sev == DDX_SEV_WARNING ? 2 : 3;
}

static json_t *lsp_diag_base(const ddx_lsp_catalog_t *c, const ddx_rule_t *r, json_t *range,
                             int severity, const char *msg, int incident, const char *role) {
  char *href = ddx_lsp_rule_href(c, r);
  json_t *d =
      json_pack("{s:o, s:i, s:s, s:s, s:o, s:{s:s, s:i, s:s}}", "range", range, "severity",
                severity, "code", r->id, "source", "ddx", "message", ddx_lsp_jstr(msg, strlen(msg)),
                "data", "rule", r->id, "incident", incident, "role", role);
  if (href) json_object_set_new(d, "codeDescription", json_pack("{s:s}", "href", href));
  free(href);
  return d;
}

/* Renders a diagnosis as LSP diagnostics: each incident at its initiating
 * line (Error/Warning/Information by severity), its collateral classes as
 * Information at their first line, linked both ways. */
static json_t *lsp_diagnostics(const ddx_lsp_server_t *s, const ddx_lsp_result_t *r,
                               const char *uri, bool hold) {
  json_t *arr = json_array();
  const ddx_diagnosis_t *dg = &r->diag;
  const ddx_lsp_text_t *t = r->text;
  for (size_t i = 0; i < dg->n && json_array_size(arr) < DDX_LSP_MAX_DIAGNOSTICS; i++) {
    const ddx_incident_t *inc = &dg->incidents[i];
    if (!inc->hit) continue;
    const ddx_rule_t *rule = inc->rule;
    if (hold && rule->trigger == DDX_TRIGGER_NO_ERROR) continue; /* progress goes on */
    char rank[384], msg[4096];
    lsp_rank_text(rank, sizeof rank, inc->rank, inc->hit->meta.host);
    /* the evidence that decided the rank, in a few words */
    const char *why = inc->rank_note && !strncmp(inc->rank_note, "rank ", 5)
                          ? strstr(inc->rank_note, ": ")
                          : NULL;
    if (i == 0 && why && strlen(rank) + strlen(why) + 4 < sizeof rank)
      snprintf(rank + strlen(rank), sizeof rank - strlen(rank), " (%s)", why + 2);
    char ranks[256] = "";
    if (inc->ranks.n > 1) {
      char rs[200];
      ddx_rankset_format(&inc->ranks, rs, sizeof rs);
      snprintf(ranks, sizeof ranks, " (%llu events on ranks %s)", (unsigned long long)inc->count,
               rs);
    }
    /* an allocation failure says how far off it was (tried - free) */
    char oom[600] = "";
    if (ddx_report_oom_note(inc, oom + 2, sizeof oom - 2)) memcpy(oom, ". ", 2);
    snprintf(msg, sizeof msg, "%s: %s, %s%s%s%s%s",
             inc->severity < DDX_SEV_ERROR ? "Warning"
             : i == 0                      ? "Initiating failure"
                                           : "Failure",
             ddx_incident_title(inc), rank, ranks, oom, rule->fix.n ? ". Fix: " : "",
             rule->fix.n ? rule->fix.v[0] : "");
    json_t *loc = lsp_loc(s, uri, t, inc->hit->line);
    json_t *d = lsp_diag_base(r->cat, rule, json_incref(json_object_get(loc, "range")),
                              lsp_severity(inc->severity), msg, (int)i, "cause");
    json_t *related = json_array();
    json_t *coll = json_array();
    for (size_t k = 0; k < inc->ncollateral; k++) {
      const ddx_collateral_t *c = &inc->collateral[k];
      if (!c->first) continue;
      char rs[200], cm[1024], rm[512];
      ddx_rankset_format(&c->ranks, rs, sizeof rs);
      json_t *cloc = lsp_loc(s, uri, t, c->first->line);
      snprintf(rm, sizeof rm, "collateral: %s, %llu event%s, %s%s", c->rule->id,
               (unsigned long long)c->count, c->count == 1 ? "" : "s",
               c->ranks.n > 1 ? "ranks "
               : c->ranks.n   ? "rank "
                              : "rank unknown",
               c->ranks.n ? rs : "");
      json_array_append_new(related, json_pack("{s:O, s:o}", "location", cloc, "message",
                                               ddx_lsp_jstr(rm, strlen(rm))));
      snprintf(cm, sizeof cm, "Collateral of %s (%s, line %llu): %s; %llu event%s, %s%s. %s",
               rule->id, rank, (unsigned long long)inc->hit->line, c->rule->title,
               (unsigned long long)c->count, c->count == 1 ? "" : "s",
               c->ranks.n > 1 ? "ranks "
               : c->ranks.n   ? "rank "
                              : "rank unknown",
               c->ranks.n ? rs : "", c->why ? c->why : "");
      json_t *cd = lsp_diag_base(r->cat, c->rule, json_incref(json_object_get(cloc, "range")), 3,
                                 cm, (int)i, "collateral");
      json_decref(cloc);
      snprintf(rm, sizeof rm, "initiating failure: %s, %s", rule->id, rank);
      json_object_set_new(
          cd, "relatedInformation",
          json_pack("[{s:O, s:o}]", "location", loc, "message", ddx_lsp_jstr(rm, strlen(rm))));
      json_array_append_new(coll, cd);
    }
    if (json_array_size(related)) json_object_set(d, "relatedInformation", related);
    json_decref(related);
    json_decref(loc);
    json_array_append_new(arr, d);
    size_t k;
    json_t *cd;
    json_array_foreach(coll, k, cd) {
      if (json_array_size(arr) >= DDX_LSP_MAX_DIAGNOSTICS) break;
      json_array_append(arr, cd);
    }
    json_decref(coll);
  }
  return arr;
}

static void lsp_publish_held(ddx_lsp_server_t *s, const char *uri, const ddx_lsp_result_t *r,
                             int64_t version, bool has_version, bool hold) {
  json_t *p = json_pack("{s:s, s:o}", "uri", uri, "diagnostics", lsp_diagnostics(s, r, uri, hold));
  if (has_version) json_object_set_new(p, "version", json_integer(version));
  ddx_lsp_notify(s, "textDocument/publishDiagnostics", p);
}

static void lsp_publish(ddx_lsp_server_t *s, const char *uri, const ddx_lsp_result_t *r,
                        int64_t version, bool has_version) {
  lsp_publish_held(s, uri, r, version, has_version, false);
}

/* ------------------------------------------------------------- live logs
 *
 * A log that grows while it is open (the editor reloads a file the job is
 * writing) ends in a progress line at every scan: diagnosed as it stands,
 * it would show "Training hang" after every write. As `ddx watch` does,
 * a no-error diagnosis (trigger "no-error": the hang) of a growing log is
 * held back until the log has not grown for ddx.hang.stallSeconds; then
 * it is published once. When the log grows again it is withdrawn (the
 * run resumed) and a line is logged. Errors are published at once. */

static bool lsp_text_grew(const ddx_lsp_text_t *old, const ddx_lsp_text_t *now) {
  if (!old || !now || now->len <= old->len) return false;
  size_t k = old->len < 256 ? old->len : 256; /* the old end is still there */
  return !memcmp(now->data + old->len - k, old->data + old->len - k, k) &&
         !memcmp(now->data, old->data, old->len < 256 ? old->len : 256);
}

static bool lsp_has_no_error(const ddx_lsp_result_t *r) {
  for (size_t i = 0; r && i < r->diag.n; i++)
    if (r->diag.incidents[i].hit && r->diag.incidents[i].rule->trigger == DDX_TRIGGER_NO_ERROR)
      return true;
  return false;
}

static uint64_t lsp_stall_ns(const ddx_lsp_server_t *s) {
  return (uint64_t)((s->stall_s > 0 ? s->stall_s : 60) * 1e9);
}

static void lsp_stall_arm(ddx_lsp_server_t *s);

static void lsp_on_stall_timer(uv_timer_t *t) {
  ddx_lsp_server_t *s = t->data;
  uint64_t now = ddx_lsp_now_ns(), stall = lsp_stall_ns(s);
  for (ddx_lsp_doc_t *d = s->docs; d; d = d->next) {
    if (!d->held || !d->result || now - d->grew_ns < stall) continue;
    d->held = false;
    d->hang_shown = true;
    ddx_lsp_log(s, DDX_LSP_LOG_WARNING, "%s: no new output for %.0f s: the job may hang", d->uri,
                (double)stall / 1e9);
    lsp_publish_held(s, d->uri, d->result, d->version, true, false);
  }
  lsp_stall_arm(s);
}

/* Sets the timer for the earliest held document, or stops it. */
static void lsp_stall_arm(ddx_lsp_server_t *s) {
  uint64_t due = 0, now = ddx_lsp_now_ns(), stall = lsp_stall_ns(s);
  for (ddx_lsp_doc_t *d = s->docs; d; d = d->next)
    if (d->held && (!due || d->grew_ns + stall < due)) due = d->grew_ns + stall;
  if (!due) {
    if (s->stall_timer_on) uv_timer_stop(&s->stall_timer);
    return;
  }
  if (!s->stall_timer_on) {
    if (uv_timer_init(&s->loop, &s->stall_timer)) return;
    s->stall_timer.data = s;
    s->stall_timer_on = true;
  }
  uint64_t ms = due > now ? (due - now) / 1000000 + 1 : 1;
  uv_timer_start(&s->stall_timer, lsp_on_stall_timer, ms, 0);
}

/* Publishes a document's new result, holding a hang back while it grows. */
static void lsp_publish_doc(ddx_lsp_server_t *s, ddx_lsp_doc_t *d, const ddx_lsp_text_t *before) {
  uint64_t now = ddx_lsp_now_ns();
  if (lsp_text_grew(before, d->result->text)) {
    if (d->hang_shown) ddx_lsp_log(s, DDX_LSP_LOG_INFO, "%s: output resumed", d->uri);
    d->grew_ns = now;
  }
  bool hang = lsp_has_no_error(d->result);
  d->held = hang && d->grew_ns && now - d->grew_ns < lsp_stall_ns(s);
  d->hang_shown = hang && !d->held;
  lsp_publish_held(s, d->uri, d->result, d->version, true, d->held);
  lsp_stall_arm(s);
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
  for (ddx_lsp_job_t *j = s->jobs; j; j = j->next) {
    if (j->progress == 1) any = true;
    if (j->progress != 2 && j->progress != 3) continue;
    any = true;
    lsp_progress_step(s, j);
  }
  if (!any && s->progress_timer_on) uv_timer_stop(&s->progress_timer);
}

static void lsp_on_progress_timer(uv_timer_t *t) {
  ddx_lsp_progress_tick(t->data);
}

/* Asks for work-done progress: the client's token when the request brought
 * one, else a token we create (when the client supports it). */
static void lsp_progress_want(ddx_lsp_server_t *s, ddx_lsp_job_t *j, json_t *token) {
  if (s->exiting) return;
  if (token && (json_is_string(token) || json_is_integer(token))) {
    j->token = json_incref(token);
    j->progress = 2;
    lsp_progress_step(s, j);
  } else if (s->cap_progress) {
    char buf[64];
    snprintf(buf, sizeof buf, "ddx-%lld", (long long)++s->next_token);
    j->token = json_string(buf);
    j->progress = 1;
    j->create_id =
        ddx_lsp_request(s, "window/workDoneProgress/create", json_pack("{s:O}", "token", j->token));
  } else {
    return;
  }
  if (!s->progress_timer_on) {
    if (uv_timer_init(&s->loop, &s->progress_timer)) return;
    s->progress_timer.data = s;
    s->progress_timer_on = true;
  }
  if (!uv_is_active((uv_handle_t *)&s->progress_timer))
    uv_timer_start(&s->progress_timer, lsp_on_progress_timer, LSP_PROGRESS_MS, LSP_PROGRESS_MS);
}

void ddx_lsp_progress_response(ddx_lsp_server_t *s, int64_t id, bool ok) {
  for (ddx_lsp_job_t *j = s->jobs; j; j = j->next)
    if (j->progress == 1 && j->create_id == id) {
      j->progress = ok ? 2 : 0;
      if (ok) lsp_progress_step(s, j);
    }
}

/* window/workDoneProgress/cancel: the user pressed Cancel. */
static json_t *lsp_progress_cancel(ddx_lsp_server_t *s, json_t *params) {
  json_t *token = json_object_get(params, "token");
  for (ddx_lsp_job_t *j = s->jobs; j && token; j = j->next) {
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

static void lsp_job_free(ddx_lsp_job_t *j) {
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
  for (ddx_lsp_job_t **pp = &s->jobs; *pp; pp = &(*pp)->next) {
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
  if (s->exiting) {
    if (j->req_id)
      ddx_lsp_reply_error(s, j->req_id, DDX_LSP_REQUEST_CANCELLED, "the server is exiting");
    /* the document outlives this job: it must not point at it (found by
     * fuzz_lsp: a use after free when the documents are freed at exit) */
    ddx_lsp_doc_t *d = j->kind == DDX_LSP_JOB_DOC && j->uri ? ddx_lsp_doc_find(s, j->uri) : NULL;
    if (d && d->job == j) d->job = NULL;
    lsp_job_free(j);
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
        lsp_publish_doc(s, d, before);
        ddx_lsp_text_unref(before);
        ddx_lsp_cfg_log_diagnosed(s, d->uri, d->result);
        if (s->trace != DDX_LSP_TRACE_OFF)
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
    lsp_job_free(j);
    return;
  }
  if (!j->req_id) { /* answered already: cancelled */
    lsp_job_free(j);
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
      if (!ddx_lsp_doc_find(s, j->uri)) lsp_publish(s, j->uri, j->result, 0, false);
      ddx_lsp_log(s, DDX_LSP_LOG_INFO, "diagnosed %s: %llu bytes, %llu lines in %.2f s", j->path,
                  (unsigned long long)j->result->scan.bytes,
                  (unsigned long long)j->result->scan.lines, secs);
    }
    if (report)
      ddx_lsp_reply(s, j->req_id, report);
    else
      ddx_lsp_reply_error(s, j->req_id, DDX_LSP_INTERNAL_ERROR, "could not render the report");
  }
  lsp_job_free(j);
}

static ddx_lsp_job_t *lsp_job_new(ddx_lsp_server_t *s, int kind) {
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

static int lsp_job_queue(ddx_lsp_server_t *s, ddx_lsp_job_t *j) {
  int rc = uv_queue_work(&s->loop, &j->req, lsp_work, lsp_after_work);
  if (rc) return rc;
  j->next = s->jobs;
  s->jobs = j;
  return 0;
}

void ddx_lsp_schedule_scan(ddx_lsp_server_t *s, ddx_lsp_doc_t *d) {
  if (!s->cat || s->exiting || s->shutdown) return;
  if (d->job) {
    /* One scan per document at a time: the running one is stopped and the
     * newest text is scanned when it returns. */
    atomic_store(&d->job->cancel, 1);
    d->rescan = true;
    return;
  }
  ddx_lsp_job_t *j = lsp_job_new(s, DDX_LSP_JOB_DOC);
  if (!j) return;
  j->text = ddx_lsp_text_ref(d->text);
  j->version = d->version;
  j->uri = strdup(d->uri);
  j->total = d->text->len;
  if (!j->uri || lsp_job_queue(s, j)) {
    lsp_job_free(j);
    return;
  }
  d->job = j;
  if (j->total >= DDX_LSP_PROGRESS_MIN_BYTES) lsp_progress_want(s, j, NULL);
}

void ddx_lsp_cancel_jobs(ddx_lsp_server_t *s) {
  if (s->stall_timer_on) { /* nothing is published after shutdown */
    s->stall_timer_on = false;
    uv_close((uv_handle_t *)&s->stall_timer, NULL);
  }
  for (ddx_lsp_job_t *j = s->jobs; j; j = j->next) {
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
  for (ddx_lsp_job_t *j = s->jobs; j; j = j->next) {
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
  ddx_lsp_job_t *j = lsp_job_new(s, DDX_LSP_JOB_TEXT);
  if (!j) return ddx_lsp_fail(call, DDX_LSP_INTERNAL_ERROR, "out of memory");
  j->text = ddx_lsp_text_new(json_string_value(text), json_string_length(text));
  j->total = json_string_length(text);
  j->req_id = json_incref(call->id);
  if (!j->text || lsp_job_queue(s, j)) {
    lsp_job_free(j);
    return ddx_lsp_fail(call, DDX_LSP_INTERNAL_ERROR, "could not start the scan");
  }
  call->deferred = true;
  json_t *tok = json_object_get(params, "workDoneToken");
  if (tok || j->total >= DDX_LSP_PROGRESS_MIN_BYTES) lsp_progress_want(s, j, tok);
  return NULL;
}

/* The workspace folders, NULL-terminated, for a worker to check against. */
static char **lsp_folders_copy(const ddx_lsp_server_t *s) {
  char **v = calloc(s->nfolders + 1, sizeof *v);
  for (size_t i = 0; v && i < s->nfolders; i++) {
    if (!(v[i] = strdup(s->folders[i]))) {
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
  ddx_lsp_job_t *j = lsp_job_new(s, DDX_LSP_JOB_FILE);
  if (!j || (!s->allow_outside && !(j->folders = lsp_folders_copy(s)))) {
    if (j) lsp_job_free(j);
    free(path);
    return ddx_lsp_fail(call, DDX_LSP_INTERNAL_ERROR, "out of memory");
  }
  j->path = path;
  j->uri = strdup(json_string_value(juri));
  j->req_id = json_incref(call->id);
  if (!j->uri || lsp_job_queue(s, j)) {
    lsp_job_free(j);
    return ddx_lsp_fail(call, DDX_LSP_INTERNAL_ERROR, "could not start the scan");
  }
  call->deferred = true;
  lsp_progress_want(s, j, json_object_get(params, "workDoneToken"));
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
  char *file = lsp_rule_file_uri(r);
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
  if (p[0] == '/' || !s->nfolders) return strdup(p);
  size_t n = strlen(s->folders[0]) + strlen(p) + 2;
  char *r = malloc(n);
  if (r) snprintf(r, n, "%s/%s", s->folders[0], p);
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
    changed = n != s->nextra_rules;
    for (size_t k = 0; !changed && k < n; k++)
      changed = strcmp(v[k], s->extra_rules[k]) != 0;
    for (size_t k = 0; k < s->nextra_rules; k++)
      free(s->extra_rules[k]);
    free(s->extra_rules);
    s->extra_rules = v;
    s->nextra_rules = v ? n : 0;
  }
  json_t *ds = lsp_setting(settings, "dsConfig", "path");
  if (json_is_string(ds) || json_is_null(ds)) {
    free(s->dsconfig_path);
    s->dsconfig_path =
        json_is_string(ds) && json_string_length(ds) ? lsp_resolve(s, json_string_value(ds)) : NULL;
  }
  /* the memory model: the model's config.json (machine-scoped, like
   * dsConfig.path: read wherever it is), the sequence length, the GPU */
  json_t *mc = lsp_setting(settings, "memory", "modelConfig");
  if (json_is_string(mc) || json_is_null(mc)) {
    char *p =
        json_is_string(mc) && json_string_length(mc) ? lsp_resolve(s, json_string_value(mc)) : NULL;
    if ((p == NULL) != (s->mem_model_path == NULL) || (p && strcmp(p, s->mem_model_path)))
      s->model_scanned = false; /* searched again (lsp_config.c) */
    free(s->mem_model_path);
    s->mem_model_path = p;
  }
  json_t *sl = lsp_setting(settings, "memory", "seqLen");
  if (json_is_number(sl) && json_number_value(sl) >= 0 && json_number_value(sl) <= 1e8)
    s->mem_seq_len = json_number_value(sl);
  else if (json_is_null(sl))
    s->mem_seq_len = 0;
  json_t *gm = lsp_setting(settings, "memory", "gpuMemoryGiB");
  if (json_is_number(gm) && json_number_value(gm) >= 0 && json_number_value(gm) <= 1e6)
    s->mem_gpu_gib = json_number_value(gm);
  else if (json_is_null(gm))
    s->mem_gpu_gib = 0;
  json_t *mp = lsp_setting(settings, "model", "parameters");
  if (json_is_number(mp)) s->model_params = json_number_value(mp);
  json_t *ws = lsp_setting(settings, "world", "size");
  if (json_is_integer(ws)) s->world_size = json_integer_value(ws);
  json_t *stall = lsp_setting(settings, "hang", "stallSeconds");
  if (json_is_number(stall) && json_number_value(stall) > 0 && json_number_value(stall) <= 86400)
    s->stall_s = json_number_value(stall);
  json_t *allow = lsp_setting(settings, "diagnoseFile", "allowOutsideWorkspace");
  if (json_is_boolean(allow)) s->allow_outside = json_is_true(allow);
  if (reload) ddx_lsp_cfg_check_all(s); /* parameters and world size feed the checks */
  if (reload && changed) {
    char err[1024];
    if (ddx_lsp_catalog_reload(s, err, sizeof err))
      ddx_lsp_notify(s, "window/showMessage",
                     json_pack("{s:i, s:o}", "type", DDX_LSP_LOG_ERROR, "message",
                               ddx_lsp_jstr(err, strlen(err))));
  }
}

json_t *ddx_lsp_did_change_configuration(ddx_lsp_server_t *s, json_t *params,
                                         ddx_lsp_call_t *call) {
  (void)call;
  ddx_lsp_apply_settings(s, json_object_get(params, "settings"), true);
  return NULL;
}

json_t *ddx_lsp_work_done_cancel(ddx_lsp_server_t *s, json_t *params, ddx_lsp_call_t *call) {
  (void)call;
  return lsp_progress_cancel(s, params);
}
