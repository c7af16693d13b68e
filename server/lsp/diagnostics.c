/* diagnostics.c - a diagnosis as LSP diagnostics (see internal.h):
 * ranges, severities, the rank wording, related information, code
 * descriptions, publishDiagnostics; and live logs: a no-error diagnosis
 * (a hang) of a log that still grows is held back until it has been quiet
 * for ddx.hang.stallSeconds. */
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

/* ------------------------------------------------------------ diagnostics */

static json_t *lsp_loc(const ddx_lsp_server_t *s, const char *uri, const ddx_lsp_text_t *t,
                       uint64_t line1) {
  size_t line = line1 ? (size_t)(line1 - 1) : 0;
  json_t *range;
  if (t) {
    range = ddx_lsp_line_range(t, s->life.encoding, line);
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

void ddx_lsp_publish(ddx_lsp_server_t *s, const char *uri, const ddx_lsp_result_t *r,
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
  return (uint64_t)((s->ws.stall_s > 0 ? s->ws.stall_s : 60) * 1e9);
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
    if (s->live.stall_timer_on) uv_timer_stop(&s->live.stall_timer);
    return;
  }
  if (!s->live.stall_timer_on) {
    if (uv_timer_init(&s->loop, &s->live.stall_timer)) return;
    s->live.stall_timer.data = s;
    s->live.stall_timer_on = true;
  }
  uint64_t ms = due > now ? (due - now) / 1000000 + 1 : 1;
  uv_timer_start(&s->live.stall_timer, lsp_on_stall_timer, ms, 0);
}

/* Publishes a document's new result, holding a hang back while it grows. */
void ddx_lsp_publish_doc(ddx_lsp_server_t *s, ddx_lsp_doc_t *d, const ddx_lsp_text_t *before) {
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

void ddx_lsp_stall_stop(ddx_lsp_server_t *s) {
  if (s->live.stall_timer_on) {
    s->live.stall_timer_on = false;
    uv_close((uv_handle_t *)&s->live.stall_timer, NULL);
  }
}
