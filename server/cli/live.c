/* live.c - ddx run and ddx watch (see ddx/live.h).
 *
 * One libuv loop. Output of a wrapped command, or new bytes of watched
 * files, is cut into complete lines per source (a trailing \r waits for a
 * possible \n) and fed to the engine as live inputs. Incidents are keyed by
 * (rule, input, line) so each is reported once.
 *
 * A hang is told by the clock, not by a diagnosis: a no-error rule
 * (train.hang: "the log stops mid-training") matches every healthy run
 * between two progress lines, so the incidents of such rules are never
 * reported from a diagnosis here. The stall timer (--stall) reports once
 * when no output came for that long (with where progress stopped, from the
 * latest diagnosis), and once more that the output resumed.
 *
 * Text from a rule pack, a log or a file name reaches the terminal through
 * put_term (escaped), and the metrics' label values are escaped as the
 * Prometheus text format asks, so neither can inject escape sequences or
 * series. */
#include "ddx/live.h"

#include <errno.h>
#include <jansson.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <uv.h>

#include "ddx/diagnose.h"
#include "ddx/file.h"
#include "ddx/layout.h"
#include "ddx/report.h"
#include "ddx/scan.h"

#define LIVE_LINE_MAX (1u << 20) /* a partial line longer than this is fed as is */
#define LIVE_READ_MAX (4u << 20) /* bytes read from one watched file per tick */
#define LIVE_TICK_MS 500
#define LIVE_MAX_FILES 10000 /* files listed under one watched root */
#define LIVE_LIST_COST 20    /* a folder listing waits this many times its own cost */
#define LIVE_QUIET_MAX 64    /* ranks kept of a hang's "stopped first" set */
#define NOT_WATCHED ((size_t)-1)

/* A source's partial last line. */
typedef struct assembler {
  char *buf;
  size_t len, cap;
} assembler_t;

/* A file followed by watch. Its path is owned by its known_t entry. */
typedef struct watched {
  const char *path;
  uint32_t input;
  uint64_t offset;
  dev_t dev;
  ino_t ino;
  /* the generation before the last rotation, until its new name is listed */
  bool has_prev;
  dev_t prev_dev;
  ino_t prev_ino;
  uint64_t prev_offset;
  assembler_t asm_;
} watched_t;

/* Every path a listing returned, sorted by path: a file watched under it
 * (file), or another name of a watched file (NOT_WATCHED; dev/ino say
 * which file it named, so only a change makes it a candidate again). */
typedef struct known {
  char *path;
  size_t file;
  dev_t dev;
  ino_t ino;
} known_t;

/* What the latest diagnosis said through a no-error rule (where progress
 * stopped), kept for the stall report. */
typedef struct quiet {
  const ddx_rule_t *rule; /* NULL: none */
  uint32_t input;
  uint64_t line;
  int32_t ranks[LIVE_QUIET_MAX]; /* the ranks whose progress stopped first */
  size_t nranks;
} quiet_t;

typedef struct live {
  const ddx_catalog_t *cat;
  ddx_scan_t scan;
  uv_loop_t *loop;
  FILE *say; /* where reports go: stdout (watch) or stderr (run) */
  /* options */
  bool json;            /* JSON lines instead of text */
  const char *json_out; /* run: write the final report here */
  const char *metrics;  /* Prometheus textfile */
  const char *on_failure;
  bool exit_on_failure, from_end;
  double stall_s;
  /* state */
  ddx_vec_t reported; /* char*: "rule\tinput\tline" already reported */
  ddx_vec_t counters; /* counter_t: failures by rule and rank */
  double last_failure_ts;
  bool dirty; /* lines fed since the last diagnosis */
  bool failed, stalled;
  uint64_t last_growth_ms;
  quiet_t quiet;
  const char *stall_id; /* the rule the reported stall was told as */
  int exit_code;
  uv_timer_t timer; /* watch: the poll; run: the stall clock */
  /* watch */
  char **roots;
  int nroots;
  bool *root_warned; /* a listing error of root r was said */
  ddx_vec_t files;   /* watched_t */
  ddx_vec_t known;   /* known_t, sorted by path */
  bool listed_once;
  uint64_t next_list_ms;
  /* run */
  uv_process_t proc;
  uv_pipe_t out, err;
  assembler_t out_asm, err_asm;
  uint32_t out_input, err_input;
  int open_handles;
  bool exited, timer_on;
  char last_byte; /* the last byte passed through (either stream) */
  int64_t exit_status;
  int term_signal;
  uv_signal_t sig[3];
} live_t;

typedef struct counter {
  char *rule;
  int32_t rank;
  uint64_t n;
} counter_t;

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static uint64_t now_ms(void) {
  return uv_hrtime() / 1000000u;
}

/* s on f for a terminal: text from a rule pack, a log or a file name,
 * escaped as the report's renderings escape it (ddx_sb_put_term). */
static void put_term(FILE *f, const char *s) {
  if (!s) return;
  ddx_sb_t b;
  ddx_sb_init(&b);
  ddx_sb_put_term(&b, s, strlen(s));
  if (b.s) fputs(b.s, f);
  ddx_sb_free(&b);
}

/* "ddx: [what: ]text" on stderr, the text escaped. */
static void warn(const char *what, const char *text) {
  fputs("ddx: ", stderr);
  if (what) fprintf(stderr, "%s: ", what);
  put_term(stderr, text);
  fputc('\n', stderr);
}

/* ------------------------------------------------------------- feeding */

/* Appends data to a source and feeds the complete lines it now holds. */
static int feed(live_t *lv, uint32_t input, assembler_t *a, const char *data, size_t n, bool eof) {
  if (n) {
    if (a->len + n > a->cap) {
      size_t cap = a->cap ? a->cap : 65536;
      while (cap < a->len + n)
        cap *= 2;
      char *nb = realloc(a->buf, cap);
      if (!nb) return DDX_ENOMEM;
      a->buf = nb;
      a->cap = cap;
    }
    memcpy(a->buf + a->len, data, n);
    a->len += n;
  }
  size_t end = a->len;
  if (!eof) {
    /* up to the last terminator; a final \r may be half of \r\n */
    while (end > 0 && a->buf[end - 1] != '\n' && a->buf[end - 1] != '\r')
      end--;
    if (end > 0 && end == a->len && a->buf[end - 1] == '\r') end--;
    while (end > 0 && a->buf[end - 1] != '\n' && a->buf[end - 1] != '\r')
      end--;
    if (end == 0 && a->len > LIVE_LINE_MAX) end = a->len; /* an endless line */
  }
  if (end == 0) return 0;
  int rc = ddx_scan_feed_lines(&lv->scan, input, a->buf, end);
  memmove(a->buf, a->buf + end, a->len - end);
  a->len -= end;
  lv->dirty = true;
  return rc;
}

/* ------------------------------------------------------------ reporting */

static bool was_reported(live_t *lv, const char *key) {
  for (size_t i = 0; i < lv->reported.len; i++)
    if (!strcmp(DDX_VEC_AT(&lv->reported, char *, i), key)) return true;
  return false;
}

static void count_failure(live_t *lv, const char *rule, int32_t rank) {
  counter_t *c = lv->counters.data;
  for (size_t i = 0; i < lv->counters.len; i++)
    if (c[i].rank == rank && !strcmp(c[i].rule, rule)) {
      c[i].n++;
      return;
    }
  counter_t *n = ddx_vec_push(&lv->counters);
  if (n && (n->rule = strdup(rule))) {
    n->rank = rank;
    n->n = 1;
  } else if (n) {
    lv->counters.len--; /* no rule name: no series */
  }
}

/* A label value as the Prometheus text format wants it: backslash, double
 * quote and newline escaped, so no value can end its label or its line. */
static void put_label(FILE *f, const char *s) {
  for (; *s; s++) {
    if (*s == '\\')
      fputs("\\\\", f);
    else if (*s == '"')
      fputs("\\\"", f);
    else if (*s == '\n')
      fputs("\\n", f);
    else
      fputc(*s, f);
  }
}

/* Prometheus textfile collector format, written atomically. */
static void write_metrics(live_t *lv) {
  if (!lv->metrics) return;
  char tmp[4096];
  snprintf(tmp, sizeof tmp, "%s.tmp", lv->metrics);
  FILE *f = fopen(tmp, "w");
  if (!f) {
    fputs("ddx: cannot write metrics ", stderr);
    put_term(stderr, tmp);
    fprintf(stderr, ": %s\n", strerror(errno));
    return;
  }
  fputs(
      "# HELP ddx_failures_total Failures diagnosed by ddx, by failure class and initiating rank.\n"
      "# TYPE ddx_failures_total counter\n",
      f);
  const counter_t *c = lv->counters.data;
  for (size_t i = 0; i < lv->counters.len; i++) {
    fputs("ddx_failures_total{rule=\"", f);
    put_label(f, c[i].rule);
    if (c[i].rank >= 0)
      fprintf(f, "\",rank=\"%d\"} %llu\n", c[i].rank, (unsigned long long)c[i].n);
    else
      fprintf(f, "\",rank=\"unknown\"} %llu\n", (unsigned long long)c[i].n);
  }
  fputs("# HELP ddx_last_failure_timestamp_seconds When ddx last reported a failure (Unix time).\n"
        "# TYPE ddx_last_failure_timestamp_seconds gauge\n",
        f);
  fprintf(f, "ddx_last_failure_timestamp_seconds %.3f\n", lv->last_failure_ts);
  if (fclose(f) == 0 && rename(tmp, lv->metrics) != 0) {
    fputs("ddx: cannot replace ", stderr);
    put_term(stderr, lv->metrics);
    fprintf(stderr, ": %s\n", strerror(errno));
  }
}

static void hook_exit_cb(uv_process_t *p, int64_t status, int sig) {
  (void)status;
  (void)sig;
  uv_close((uv_handle_t *)p, (uv_close_cb)free);
}

typedef struct hook_write {
  uv_write_t req;
  uv_pipe_t *pipe;
  char *json;
} hook_write_t;

static void hook_pipe_closed(uv_handle_t *h) {
  free(h);
}

static void hook_written(uv_write_t *req, int status) {
  hook_write_t *w = (hook_write_t *)req;
  (void)status;
  uv_close((uv_handle_t *)w->pipe, hook_pipe_closed);
  free(w->json);
  free(w);
}

/* --on-failure CMD: the user's command, with the JSON report on stdin. */
static void run_hook(live_t *lv, char *json) {
  if (!lv->on_failure) {
    free(json);
    return;
  }
  uv_process_t *p = calloc(1, sizeof *p);
  uv_pipe_t *in = calloc(1, sizeof *in);
  hook_write_t *w = calloc(1, sizeof *w);
  if (!p || !in || !w || uv_pipe_init(lv->loop, in, 0)) {
    free(p), free(in), free(w), free(json);
    return;
  }
  char *args[] = {"/bin/sh", "-c", (char *)lv->on_failure, NULL};
  uv_stdio_container_t io[3] = {
      {.flags = UV_CREATE_PIPE | UV_READABLE_PIPE, .data.stream = (uv_stream_t *)in},
      {.flags = UV_INHERIT_FD, .data.fd = 2},
      {.flags = UV_INHERIT_FD, .data.fd = 2}};
  uv_process_options_t o = {
      .exit_cb = hook_exit_cb, .file = args[0], .args = args, .stdio_count = 3, .stdio = io};
  int rc = uv_spawn(lv->loop, p, &o);
  if (rc) {
    warn("--on-failure", uv_strerror(rc));
    uv_close((uv_handle_t *)p, (uv_close_cb)free); /* initialised even on failure */
    uv_close((uv_handle_t *)in, hook_pipe_closed);
    free(w);
    free(json);
    return;
  }
  w->pipe = in;
  w->json = json;
  uv_buf_t buf = uv_buf_init(json, (unsigned)strlen(json));
  if (uv_write(&w->req, (uv_stream_t *)in, &buf, 1, hook_written)) {
    uv_close((uv_handle_t *)in, hook_pipe_closed);
    free(json);
    free(w);
  }
}

static const char *input_name(const ddx_scan_t *s, uint32_t i) {
  return i < s->inputs.len ? ((const ddx_scan_input_t *)s->inputs.data)[i].name : "?";
}

/* A JSON string of text that may not be UTF-8 (a file name): repaired. */
static json_t *json_text(const char *s) {
  json_t *j = json_string(s);
  if (j) return j;
  ddx_sb_t b;
  ddx_sb_init(&b);
  ddx_sb_put_utf8_repaired(&b, s, strlen(s));
  j = json_string(b.s ? b.s : "");
  ddx_sb_free(&b);
  return j;
}

static void print_json_line(live_t *lv, json_t *o) {
  char *line = o ? json_dumps(o, JSON_COMPACT | JSON_PRESERVE_ORDER) : NULL;
  if (line) fprintf(lv->say, "%s\n", line);
  free(line);
  json_decref(o);
}

/* Keeps where a no-error incident (a hang) says progress stopped. */
static void keep_quiet(live_t *lv, const ddx_incident_t *inc) {
  quiet_t *q = &lv->quiet;
  q->rule = inc->rule;
  q->input = inc->hit->input;
  q->line = inc->hit->line;
  q->nranks = 0;
  for (size_t k = 0; k < inc->quiet_first.n && q->nranks < LIVE_QUIET_MAX; k++)
    q->ranks[q->nranks++] = inc->quiet_first.v[k];
}

static bool told_by_clock(const ddx_incident_t *inc) {
  return inc->rule->trigger == DDX_TRIGGER_NO_ERROR;
}

/* Diagnoses what was fed so far into *d (false, with a warning, when it
 * cannot); the hang kept for the stall report is taken again from it. */
static bool diagnose_fed(live_t *lv, ddx_diagnosis_t *d) {
  lv->dirty = false;
  ddx_error_t err;
  if (ddx_diagnose(d, &lv->scan, &err)) {
    warn(NULL, err.msg);
    return false;
  }
  lv->quiet.rule = NULL;
  return true;
}

/* Diagnoses what was fed so far and reports incidents not reported yet.
 * The incidents of no-error rules are only kept for the stall report. */
static void report_new(live_t *lv, bool final) {
  if (!lv->dirty && !final) return;
  ddx_diagnosis_t d;
  if (!diagnose_fed(lv, &d)) return;
  bool new_failure = false;
  json_t *report = NULL;
  for (size_t i = 0; i < d.n; i++) {
    const ddx_incident_t *inc = &d.incidents[i];
    /* a hang is told by the clock, whatever its text's severity (progress
     * that merely stops is only info in a static read) */
    if (told_by_clock(inc)) {
      if (!lv->quiet.rule) keep_quiet(lv, inc);
      continue;
    }
    if (inc->severity == DDX_SEV_INFO) continue;
    char key[512];
    snprintf(key, sizeof key, "%s\t%u\t%llu", inc->rule->id, inc->hit->input,
             (unsigned long long)inc->hit->line);
    if (was_reported(lv, key)) continue;
    char **slot = ddx_vec_push(&lv->reported);
    if (slot && !(*slot = strdup(key))) lv->reported.len--;
    if (inc->severity == DDX_SEV_ERROR) {
      new_failure = true;
      /* Collateral alone (a watchdog timeout) may be followed by its cause
       * from another file: only a cause ends --exit-on-failure. */
      if (inc->role == DDX_ROLE_CAUSE) lv->failed = true;
      count_failure(lv, inc->rule->id, inc->rank);
      lv->last_failure_ts = now_s();
    }
    if (lv->json) {
      if (!report) {
        char *js = ddx_report_json(&d, NULL);
        report = js ? json_loads(js, 0, NULL) : NULL;
        free(js);
      }
      json_t *o = json_array_get(json_object_get(report, "incidents"), i);
      print_json_line(lv, json_incref(o));
    } else {
      FILE *f = lv->say;
      fprintf(f, "ddx: %s ", ddx_severity_name(inc->severity));
      put_term(f, ddx_incident_title(inc));
      fputs(" [", f);
      put_term(f, inc->rule->id);
      fputs("] at ", f);
      put_term(f, input_name(&lv->scan, inc->hit->input));
      fprintf(f, ":%llu", (unsigned long long)inc->hit->line);
      if (inc->rank >= 0) fprintf(f, ", rank %d", inc->rank);
      fputc('\n', f);
      if (inc->rule->fix.n) {
        fputs("     fix: ", f);
        put_term(f, inc->rule->fix.v[0]);
        fputc('\n', f);
      }
      fputs("     more: ddx explain ", f);
      put_term(f, inc->rule->id);
      fputc('\n', f);
    }
    fflush(lv->say);
  }
  json_decref(report);
  if (new_failure) {
    write_metrics(lv);
    run_hook(lv, ddx_report_json(&d, NULL));
  }
  ddx_diagnosis_free(&d);
}

/* ddx run: where the output so far says progress stopped (its hang
 * incident), for the stall report; nothing is reported. */
static void refresh_quiet(live_t *lv) {
  ddx_diagnosis_t d;
  if (!diagnose_fed(lv, &d)) return;
  for (size_t i = 0; i < d.n && !lv->quiet.rule; i++)
    if (told_by_clock(&d.incidents[i])) keep_quiet(lv, &d.incidents[i]);
  ddx_diagnosis_free(&d);
}

/* Starts a report line of run on a line of its own: the command's output
 * may have stopped in the middle of one (a progress bar). */
static void own_line(live_t *lv) {
  if (lv->last_byte && lv->last_byte != '\n') fputc('\n', lv->say);
  lv->last_byte = '\n';
}

/* The class a stall is reported as: the catalog's no-error rule whose
 * incident points at the last progress line (trigger no-error, anchor last;
 * the built-in one is train.hang), data like every class. */
static const ddx_rule_t *stall_rule(const ddx_catalog_t *cat) {
  for (size_t i = 0; i < cat->nrules; i++)
    if (cat->rules[i].trigger == DDX_TRIGGER_NO_ERROR && cat->rules[i].anchor_last)
      return &cat->rules[i];
  return NULL;
}

/* No output for --stall seconds: the one hang report of this stall. */
static void report_stall(live_t *lv) {
  if (lv->dirty) refresh_quiet(lv);
  const quiet_t *q = &lv->quiet;
  const ddx_rule_t *r = q->rule ? q->rule : stall_rule(lv->cat);
  const char *id = r ? r->id : "stall"; /* a catalog without such a rule */
  ddx_rankset_t first = {.v = lv->quiet.ranks, .n = q->nranks, .cap = q->nranks};
  FILE *f = lv->say;
  own_line(lv);
  if (lv->json) {
    json_t *o = json_object();
    json_object_set_new(o, "event", json_string("stall"));
    json_object_set_new(o, "rule", json_text(id));
    json_object_set_new(o, "severity", json_string("warning"));
    json_object_set_new(o, "title", json_text(r ? r->title : "no progress"));
    json_object_set_new(o, "stall_seconds",
                        lv->stall_s == (double)(long long)lv->stall_s
                            ? json_integer((json_int_t)lv->stall_s)
                            : json_real(lv->stall_s));
    json_object_set_new(o, "file",
                        q->rule ? json_text(input_name(&lv->scan, q->input)) : json_null());
    json_object_set_new(o, "line", q->rule ? json_integer((json_int_t)q->line) : json_null());
    if (q->nranks) {
      json_t *a = json_array();
      for (size_t k = 0; k < q->nranks; k++)
        json_array_append_new(a, json_integer(q->ranks[k]));
      json_object_set_new(o, "quiet_first", a);
    }
    print_json_line(lv, o);
  } else {
    fprintf(f, "ddx: warning no new output for %g s: the job may hang [", lv->stall_s);
    put_term(f, id);
    fputs("]\n", f);
    if (q->rule) {
      fputs("     last progress: ", f);
      put_term(f, input_name(&lv->scan, q->input));
      fprintf(f, ":%llu", (unsigned long long)q->line);
      if (q->nranks) {
        char rs[128];
        ddx_rankset_format(&first, rs, sizeof rs);
        fprintf(f, "; rank%s %s stopped first", q->nranks > 1 ? "s" : "", rs);
      }
      fputc('\n', f);
    }
    if (r)
      for (size_t k = 0; k < r->missing.n && k < 3; k++) {
        fputs("     collect: ", f);
        put_term(f, r->missing.v[k]);
        fputc('\n', f);
      }
  }
  fflush(f);
  lv->stall_id = id;
  count_failure(lv, id, q->nranks == 1 ? q->ranks[0] : -1);
  lv->last_failure_ts = now_s();
  write_metrics(lv);
}

/* New output after a reported stall: said once. */
static void report_resumed(live_t *lv, uint64_t silent_ms) {
  const char *id = lv->stall_id ? lv->stall_id : "stall";
  double silent = (double)(silent_ms / 100) / 10.0;
  own_line(lv);
  if (lv->json) {
    json_t *o = json_object();
    json_object_set_new(o, "event", json_string("resumed"));
    json_object_set_new(o, "rule", json_text(id));
    json_object_set_new(o, "severity", json_string("info"));
    json_object_set_new(o, "silent_seconds", json_real(silent));
    print_json_line(lv, o);
  } else {
    fprintf(lv->say, "ddx: info output resumed after %.1f s without any [", silent);
    put_term(lv->say, id);
    fputs("]\n", lv->say);
  }
  fflush(lv->say);
}

/* The sources produced output (bytes, complete lines or not). */
static void note_output(live_t *lv) {
  uint64_t t = now_ms();
  if (lv->stalled) {
    lv->stalled = false;
    report_resumed(lv, t - lv->last_growth_ms);
  }
  lv->last_growth_ms = t;
}

/* Reports a stall once, when no output came for --stall seconds (and no
 * cause of a failure was seen: a dead job is not a hung one). */
static void stall_check(live_t *lv) {
  if (lv->stall_s <= 0 || lv->stalled || lv->failed) return;
  if (now_ms() - lv->last_growth_ms <= (uint64_t)(lv->stall_s * 1000)) return;
  lv->stalled = true;
  report_stall(lv);
}

/* ----------------------------------------------------------------- run */

static void write_all(int fd, const char *p, size_t n) {
  while (n) {
    ssize_t w = write(fd, p, n);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return; /* our own output is gone: keep the child running */
    p += w;
    n -= (size_t)w;
  }
}

static void alloc_cb(uv_handle_t *h, size_t suggested, uv_buf_t *buf) {
  (void)h;
  buf->base = malloc(suggested);
  buf->len = buf->base ? suggested : 0;
}

static void run_finish(live_t *lv);

static void handle_closed(uv_handle_t *h) {
  live_t *lv = h->data;
  if (--lv->open_handles == 0) run_finish(lv);
}

static void read_cb(uv_stream_t *stream, ssize_t nread, const uv_buf_t *buf) {
  live_t *lv = stream->data;
  bool is_out = stream == (uv_stream_t *)&lv->out;
  if (nread > 0) {
    note_output(lv); /* a stall that ends is said before what ends it */
    write_all(is_out ? 1 : 2, buf->base, (size_t)nread); /* pass through first */
    lv->last_byte = buf->base[nread - 1];
    feed(lv, is_out ? lv->out_input : lv->err_input, is_out ? &lv->out_asm : &lv->err_asm,
         buf->base, (size_t)nread, false);
  } else if (nread < 0) {
    feed(lv, is_out ? lv->out_input : lv->err_input, is_out ? &lv->out_asm : &lv->err_asm, NULL, 0,
         true);
    uv_close((uv_handle_t *)stream, handle_closed);
  }
  free(buf->base);
}

static void run_tick(uv_timer_t *t) {
  stall_check(t->data);
}

static void exit_cb(uv_process_t *p, int64_t status, int sig) {
  live_t *lv = p->data;
  lv->exited = true;
  lv->exit_status = status;
  lv->term_signal = sig;
  for (int i = 0; i < 3; i++)
    uv_close((uv_handle_t *)&lv->sig[i], handle_closed);
  if (lv->timer_on) uv_close((uv_handle_t *)&lv->timer, handle_closed);
  uv_close((uv_handle_t *)p, handle_closed);
}

static void signal_cb(uv_signal_t *h, int signum) {
  live_t *lv = h->data;
  if (!lv->exited) uv_process_kill(&lv->proc, signum); /* forward */
}

static void run_finish(live_t *lv) {
  int code = lv->term_signal ? 128 + lv->term_signal : (int)lv->exit_status;
  lv->exit_code = code;
  ddx_diagnosis_t d;
  ddx_error_t err;
  if (ddx_diagnose(&d, &lv->scan, &err)) {
    warn(NULL, err.msg);
    return;
  }
  if (lv->json_out) {
    char *js = ddx_report_json(&d, NULL);
    FILE *f = js ? fopen(lv->json_out, "w") : NULL;
    if (f) {
      fputs(js, f);
      fputc('\n', f);
      fclose(f);
    } else {
      fputs("ddx: cannot write ", stderr);
      put_term(stderr, lv->json_out);
      fprintf(stderr, ": %s\n", strerror(errno));
    }
    free(js);
  }
  if (code != 0) {
    ddx_report_opts_t o = {.color = isatty(2) && !getenv("NO_COLOR")};
    char *text = ddx_report_text(&d, &o);
    fprintf(stderr, "\n--- ddx: the command failed (exit %d); diagnosis of its output ---\n", code);
    if (text) fputs(text, stderr);
    free(text);
    for (size_t i = 0; i < d.n; i++)
      if (d.incidents[i].severity == DDX_SEV_ERROR)
        count_failure(lv, d.incidents[i].rule->id, d.incidents[i].rank);
    if (ddx_diagnosis_has_error(&d)) {
      lv->last_failure_ts = now_s();
      write_metrics(lv);
      run_hook(lv, ddx_report_json(&d, NULL));
    }
  }
  ddx_diagnosis_free(&d);
}

/* A --stall value: seconds, at most a year (0: no stall report). */
static bool parse_seconds(const char *s, double *out) {
  char *end;
  errno = 0;
  double v = strtod(s, &end);
  if (end == s || *end || errno || !(v >= 0 && v <= 366 * 86400.0)) return false;
  *out = v;
  return true;
}

/* Options shared by run and watch; returns the index of the first
 * non-option argument, or -1 on a usage error. */
static int parse_common(live_t *lv, int argc, char **argv, bool watch) {
  int i = 0;
  for (; i < argc; i++) {
    const char *a = argv[i];
    if (!strcmp(a, "--")) return i + 1;
    if (a[0] != '-' || !a[1]) return i;
    bool has_val = i + 1 < argc;
    if (!strcmp(a, "--json-out") && has_val && !watch)
      lv->json_out = argv[++i];
    else if (!strcmp(a, "--metrics") && has_val)
      lv->metrics = argv[++i];
    else if (!strcmp(a, "--on-failure") && has_val)
      lv->on_failure = argv[++i];
    else if (!strcmp(a, "--format") && has_val && watch)
      lv->json = !strcmp(argv[++i], "json");
    else if (!strcmp(a, "--stall") && has_val && parse_seconds(argv[i + 1], &lv->stall_s))
      i++;
    else if (!strcmp(a, "--exit-on-failure") && watch)
      lv->exit_on_failure = true;
    else if (!strcmp(a, "--from-end") && watch)
      lv->from_end = true;
    else {
      fprintf(stderr, "ddx: %s: unknown option or missing value: ", watch ? "watch" : "run");
      put_term(stderr, a);
      fputc('\n', stderr);
      return -1;
    }
  }
  return i;
}

static int live_init(live_t *lv, const ddx_catalog_t *cat, FILE *say) {
  memset(lv, 0, sizeof *lv);
  lv->cat = cat;
  lv->say = say;
  lv->loop = uv_default_loop();
  ddx_vec_init(&lv->reported, sizeof(char *));
  ddx_vec_init(&lv->counters, sizeof(counter_t));
  ddx_vec_init(&lv->files, sizeof(watched_t));
  ddx_vec_init(&lv->known, sizeof(known_t));
  return ddx_scan_init(&lv->scan, cat);
}

static void live_free(live_t *lv) {
  for (size_t i = 0; i < lv->reported.len; i++)
    free(DDX_VEC_AT(&lv->reported, char *, i));
  ddx_vec_free(&lv->reported);
  for (size_t i = 0; i < lv->counters.len; i++)
    free(DDX_VEC_AT(&lv->counters, counter_t, i).rule);
  ddx_vec_free(&lv->counters);
  for (size_t i = 0; i < lv->files.len; i++)
    free(DDX_VEC_AT(&lv->files, watched_t, i).asm_.buf);
  ddx_vec_free(&lv->files);
  for (size_t i = 0; i < lv->known.len; i++)
    free(DDX_VEC_AT(&lv->known, known_t, i).path);
  ddx_vec_free(&lv->known);
  free(lv->root_warned);
  free(lv->out_asm.buf);
  free(lv->err_asm.buf);
  ddx_scan_free(&lv->scan);
  uv_loop_close(lv->loop);
}

int ddx_live_run(const ddx_catalog_t *cat, int argc, char **argv) {
  live_t lv;
  if (live_init(&lv, cat, stderr)) return 2;
  int first = parse_common(&lv, argc, argv, false);
  if (first < 0 || first >= argc) {
    if (first >= 0)
      fprintf(stderr, "usage: ddx run [--json-out FILE] [--metrics FILE] [--on-failure CMD] "
                      "[--stall SECONDS] -- COMMAND [ARGS...]\n");
    live_free(&lv);
    return 2;
  }
  ddx_scan_add_input(&lv.scan, "<stdout>", NULL, &lv.out_input);
  ddx_scan_add_input(&lv.scan, "<stderr>", NULL, &lv.err_input);
  uv_pipe_init(lv.loop, &lv.out, 0);
  uv_pipe_init(lv.loop, &lv.err, 0);
  lv.out.data = lv.err.data = lv.proc.data = &lv;
  uv_stdio_container_t io[3] = {
      {.flags = UV_INHERIT_FD, .data.fd = 0},
      {.flags = UV_CREATE_PIPE | UV_WRITABLE_PIPE, .data.stream = (uv_stream_t *)&lv.out},
      {.flags = UV_CREATE_PIPE | UV_WRITABLE_PIPE, .data.stream = (uv_stream_t *)&lv.err}};
  uv_process_options_t o = {
      .exit_cb = exit_cb, .file = argv[first], .args = argv + first, .stdio_count = 3, .stdio = io};
  int rc = uv_spawn(lv.loop, &lv.proc, &o);
  if (rc) {
    fputs("ddx: run: cannot start ", stderr);
    put_term(stderr, argv[first]);
    fprintf(stderr, ": %s\n", uv_strerror(rc));
    uv_close((uv_handle_t *)&lv.out, NULL);
    uv_close((uv_handle_t *)&lv.err, NULL);
    uv_close((uv_handle_t *)&lv.proc, NULL);
    uv_run(lv.loop, UV_RUN_DEFAULT);
    live_free(&lv);
    return 127;
  }
  lv.open_handles = 6; /* out, err, process, 3 signals */
  static const int sigs[3] = {SIGINT, SIGTERM, SIGHUP};
  for (int i = 0; i < 3; i++) {
    uv_signal_init(lv.loop, &lv.sig[i]);
    lv.sig[i].data = &lv;
    uv_signal_start(&lv.sig[i], signal_cb, sigs[i]);
  }
  if (lv.stall_s > 0) { /* the stall clock: the only hang report while it runs */
    uv_timer_init(lv.loop, &lv.timer);
    lv.timer.data = &lv;
    lv.timer_on = true;
    lv.open_handles++;
    lv.last_growth_ms = now_ms();
    uv_timer_start(&lv.timer, run_tick, LIVE_TICK_MS, LIVE_TICK_MS);
  }
  uv_read_start((uv_stream_t *)&lv.out, alloc_cb, read_cb);
  uv_read_start((uv_stream_t *)&lv.err, alloc_cb, read_cb);
  uv_run(lv.loop, UV_RUN_DEFAULT);
  int code = lv.exit_code;
  live_free(&lv);
  return code;
}

/* --------------------------------------------------------------- watch */

/* The known entry of path, or NULL with *pos where it would go. */
static known_t *known_find(live_t *lv, const char *path, size_t *pos) {
  known_t *k = lv->known.data;
  size_t lo = 0, hi = lv->known.len;
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    int c = strcmp(path, k[mid].path);
    if (c == 0) return &k[mid];
    if (c < 0)
      hi = mid;
    else
      lo = mid + 1;
  }
  *pos = lo;
  return NULL;
}

/* A new entry for path (taken) at pos, keeping the order. */
static known_t *known_insert(live_t *lv, char *path, size_t pos) {
  if (!ddx_vec_push(&lv->known)) return NULL;
  known_t *k = lv->known.data;
  memmove(k + pos + 1, k + pos, (lv->known.len - 1 - pos) * sizeof *k);
  k[pos] = (known_t){.path = path, .file = NOT_WATCHED};
  return &k[pos];
}

/* Whether the file st, newly listed, is to be watched, and from where: a
 * watched file under another name (a link, a second root) is not; the
 * generation a watched file had before it was rotated away is read on
 * from where that one stopped (never again from its start, which would
 * report its incidents twice); any other file from its start, or with
 * --from-end, from its end when it was there at the start. */
static bool new_file_start(live_t *lv, const struct stat *st, uint64_t *offset) {
  watched_t *f = lv->files.data;
  for (size_t i = 0; i < lv->files.len; i++) {
    struct stat now;
    if (f[i].dev == st->st_dev && f[i].ino == st->st_ino && stat(f[i].path, &now) == 0 &&
        now.st_dev == st->st_dev && now.st_ino == st->st_ino)
      return false;
  }
  for (size_t i = 0; i < lv->files.len; i++) {
    if (f[i].dev == st->st_dev && f[i].ino == st->st_ino) { /* renamed, not yet seen so */
      *offset = f[i].offset;
      return true;
    }
    if (f[i].has_prev && f[i].prev_dev == st->st_dev && f[i].prev_ino == st->st_ino) {
      f[i].has_prev = false;
      *offset = f[i].prev_offset;
      return true;
    }
  }
  *offset = lv->from_end && !lv->listed_once ? (uint64_t)st->st_size : 0;
  return true;
}

/* A path a listing returned (taken): watched from now on unless it is
 * known already. */
static void watch_consider(live_t *lv, char *path) {
  size_t pos = 0;
  known_t *k = known_find(lv, path, &pos);
  struct stat st;
  if ((k && k->file != NOT_WATCHED) || stat(path, &st) != 0 || !S_ISREG(st.st_mode) ||
      (k && k->dev == st.st_dev && k->ino == st.st_ino)) {
    free(path); /* watched, gone, or still another name of a watched file */
    return;
  }
  uint64_t offset = 0;
  bool watch = new_file_start(lv, &st, &offset);
  if (k) {
    free(path);
  } else if (!(k = known_insert(lv, path, pos))) {
    free(path);
    return;
  }
  k->dev = st.st_dev;
  k->ino = st.st_ino;
  if (!watch) return;
  watched_t *w = ddx_vec_push(&lv->files);
  if (!w) return;
  ddx_line_meta_t defaults;
  ddx_layout_path_meta(k->path, &defaults);
  if (ddx_scan_add_input(&lv->scan, k->path, &defaults, &w->input)) {
    lv->files.len--;
    return;
  }
  w->path = k->path;
  w->offset = offset;
  w->dev = st.st_dev;
  w->ino = st.st_ino;
  k->file = lv->files.len - 1;
}

/* Lists the roots again for new files. Paths already known cost a lookup;
 * a listing that takes long (a big tree) waits LIVE_LIST_COST times its
 * own time before the next one. */
static void watch_list(live_t *lv) {
  uint64_t t0 = now_ms();
  if (lv->listed_once && t0 < lv->next_list_ms) return;
  for (int r = 0; r < lv->nroots; r++) {
    ddx_vec_t paths;
    ddx_vec_init(&paths, sizeof(char *));
    ddx_error_t err;
    int rc = ddx_list_inputs(lv->roots[r], &paths, LIVE_MAX_FILES, NULL, &err);
    if (rc && !lv->root_warned[r]) warn("watch", err.msg); /* once, not every tick */
    lv->root_warned[r] = rc != 0;
    for (size_t i = 0; i < paths.len; i++) /* what it did list is watched */
      watch_consider(lv, DDX_VEC_AT(&paths, char *, i));
    ddx_vec_free(&paths);
  }
  lv->listed_once = true;
  uint64_t t1 = now_ms();
  lv->next_list_ms = t1 + LIVE_LIST_COST * (t1 - t0);
}

/* Reads what a file gained since the last tick; handles truncation
 * (copytruncate) and rotation (a new file under the same name). The file
 * is opened by ddx_file_open: a FIFO or device put in its place is not. */
static bool watch_poll_file(live_t *lv, watched_t *w) {
  struct stat st;
  if (stat(w->path, &st) != 0 || !S_ISREG(st.st_mode)) return false;
  if (st.st_dev != w->dev || st.st_ino != w->ino) {
    feed(lv, w->input, &w->asm_, NULL, 0, true); /* end the old generation's last line */
    w->has_prev = true;
    w->prev_dev = w->dev;
    w->prev_ino = w->ino;
    w->prev_offset = w->offset;
    w->dev = st.st_dev;
    w->ino = st.st_ino;
    w->offset = 0;
  } else if ((uint64_t)st.st_size < w->offset) {
    feed(lv, w->input, &w->asm_, NULL, 0, true);
    w->offset = 0;
  }
  if ((uint64_t)st.st_size <= w->offset) return false;
  ddx_file_opts_t o = {.what = "watched log"};
  ddx_error_t err;
  int fd = ddx_file_open(w->path, &o, &st, &err);
  if (fd < 0) return false;
  size_t got = 0;
  /* replaced between the stat and the open: the next tick sees it */
  if (st.st_dev == w->dev && st.st_ino == w->ino && (uint64_t)st.st_size > w->offset) {
    uint64_t avail = (uint64_t)st.st_size - w->offset;
    size_t want = avail > LIVE_READ_MAX ? LIVE_READ_MAX : (size_t)avail;
    char *buf = malloc(want);
    while (buf && got < want) {
      ssize_t n = pread(fd, buf + got, want - got, (off_t)(w->offset + got));
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) break;
      got += (size_t)n;
    }
    if (got) {
      w->offset += got;
      feed(lv, w->input, &w->asm_, buf, got, false);
    }
    free(buf);
  }
  close(fd);
  return got > 0;
}

static void watch_tick(uv_timer_t *t) {
  live_t *lv = t->data;
  bool grew = false;
  size_t old = lv->files.len; /* polled before listing: a rotation is seen first */
  for (size_t i = 0; i < old; i++)
    grew |= watch_poll_file(lv, &DDX_VEC_AT(&lv->files, watched_t, i));
  watch_list(lv);
  for (size_t i = old; i < lv->files.len; i++)
    grew |= watch_poll_file(lv, &DDX_VEC_AT(&lv->files, watched_t, i));
  if (grew) note_output(lv);
  report_new(lv, false);
  stall_check(lv);
  if (lv->exit_on_failure && (lv->failed || lv->stalled)) {
    lv->exit_code = 1;
    uv_stop(lv->loop);
  }
}

static void watch_signal(uv_signal_t *h, int signum) {
  (void)signum;
  uv_stop(h->loop);
}

static void close_walk(uv_handle_t *h, void *arg) {
  (void)arg;
  if (!uv_is_closing(h)) uv_close(h, NULL);
}

int ddx_live_watch(const ddx_catalog_t *cat, int argc, char **argv) {
  live_t lv;
  if (live_init(&lv, cat, stdout)) return 2;
  int first = parse_common(&lv, argc, argv, true);
  if (first < 0 || first >= argc) {
    if (first >= 0)
      fprintf(stderr, "usage: ddx watch [--format text|json] [--stall SECONDS] [--exit-on-failure] "
                      "[--from-end] [--metrics FILE] [--on-failure CMD] FILE|DIR...\n");
    live_free(&lv);
    return 2;
  }
  lv.roots = argv + first;
  lv.nroots = argc - first;
  lv.root_warned = calloc((size_t)lv.nroots, sizeof *lv.root_warned);
  if (!lv.root_warned) {
    live_free(&lv);
    return 2;
  }
  for (int r = 0; r < lv.nroots; r++) {
    struct stat st;
    if (stat(lv.roots[r], &st) != 0) {
      fputs("ddx: watch: ", stderr);
      put_term(stderr, lv.roots[r]);
      fprintf(stderr, ": %s\n", strerror(errno));
      live_free(&lv);
      return 2;
    }
  }
  lv.last_growth_ms = now_ms();
  write_metrics(&lv);
  uv_timer_init(lv.loop, &lv.timer);
  lv.timer.data = &lv;
  uv_timer_start(&lv.timer, watch_tick, 0, LIVE_TICK_MS);
  uv_signal_t si, st;
  uv_signal_init(lv.loop, &si);
  uv_signal_init(lv.loop, &st);
  uv_signal_start(&si, watch_signal, SIGINT);
  uv_signal_start(&st, watch_signal, SIGTERM);
  uv_run(lv.loop, UV_RUN_DEFAULT);
  uv_walk(lv.loop, close_walk, NULL);
  uv_run(lv.loop, UV_RUN_DEFAULT);
  int code = lv.exit_code;
  live_free(&lv);
  return code;
}
