/* live.c - ddx run and ddx watch (see ddx/live.h).
 *
 * One libuv loop. Output of a wrapped command, or new bytes of watched
 * files, is cut into complete lines per source (a trailing \r waits for a
 * possible \n) and fed to the engine as live inputs. Incidents are keyed by
 * (rule, input, line) so each is reported once. */
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

/* A source's partial last line. */
typedef struct assembler {
  char *buf;
  size_t len, cap;
} assembler_t;

typedef struct watched {
  char *path;
  uint32_t input;
  uint64_t offset;
  ino_t ino;
  assembler_t asm_;
  bool gone;
} watched_t;

typedef struct live {
  const ddx_catalog_t *cat;
  ddx_scan_t scan;
  uv_loop_t *loop;
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
  int exit_code;
  /* watch */
  char **roots;
  int nroots;
  ddx_vec_t files; /* watched_t */
  uv_timer_t timer;
  /* run */
  uv_process_t proc;
  uv_pipe_t out, err;
  assembler_t out_asm, err_asm;
  uint32_t out_input, err_input;
  int open_handles;
  bool exited;
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
  }
}

/* Prometheus textfile collector format, written atomically. */
static void write_metrics(live_t *lv) {
  if (!lv->metrics) return;
  char tmp[4096];
  snprintf(tmp, sizeof tmp, "%s.tmp", lv->metrics);
  FILE *f = fopen(tmp, "w");
  if (!f) {
    fprintf(stderr, "ddx: cannot write metrics %s: %s\n", tmp, strerror(errno));
    return;
  }
  fputs(
      "# HELP ddx_failures_total Failures diagnosed by ddx, by failure class and initiating rank.\n"
      "# TYPE ddx_failures_total counter\n",
      f);
  const counter_t *c = lv->counters.data;
  for (size_t i = 0; i < lv->counters.len; i++) {
    if (c[i].rank >= 0)
      fprintf(f, "ddx_failures_total{rule=\"%s\",rank=\"%d\"} %llu\n", c[i].rule, c[i].rank,
              (unsigned long long)c[i].n);
    else
      fprintf(f, "ddx_failures_total{rule=\"%s\",rank=\"unknown\"} %llu\n", c[i].rule,
              (unsigned long long)c[i].n);
  }
  fputs("# HELP ddx_last_failure_timestamp_seconds When ddx last reported a failure (Unix time).\n"
        "# TYPE ddx_last_failure_timestamp_seconds gauge\n",
        f);
  fprintf(f, "ddx_last_failure_timestamp_seconds %.3f\n", lv->last_failure_ts);
  if (fclose(f) == 0 && rename(tmp, lv->metrics) != 0)
    fprintf(stderr, "ddx: cannot replace %s: %s\n", lv->metrics, strerror(errno));
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
    fprintf(stderr, "ddx: --on-failure: %s\n", uv_strerror(rc));
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

/* Diagnoses what was fed so far and reports incidents not reported yet. */
static void report_new(live_t *lv, bool final) {
  if (!lv->dirty && !final) return;
  lv->dirty = false;
  ddx_diagnosis_t d;
  ddx_error_t err;
  if (ddx_diagnose(&d, &lv->scan, &err)) {
    fprintf(stderr, "ddx: %s\n", err.msg);
    return;
  }
  bool new_failure = false;
  json_t *report = NULL;
  for (size_t i = 0; i < d.n; i++) {
    const ddx_incident_t *inc = &d.incidents[i];
    if (inc->severity == DDX_SEV_INFO) continue;
    char key[512];
    snprintf(key, sizeof key, "%s\t%u\t%llu", inc->rule->id, inc->hit->input,
             (unsigned long long)inc->hit->line);
    if (was_reported(lv, key)) continue;
    char **slot = ddx_vec_push(&lv->reported);
    if (slot) *slot = strdup(key);
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
      char *line = o ? json_dumps(o, JSON_COMPACT | JSON_PRESERVE_ORDER) : NULL;
      if (line) printf("%s\n", line);
      free(line);
    } else {
      printf("ddx: %s %s [%s] at %s:%llu", ddx_severity_name(inc->severity),
             ddx_incident_title(inc), inc->rule->id, input_name(&lv->scan, inc->hit->input),
             (unsigned long long)inc->hit->line);
      if (inc->rank >= 0) printf(", rank %d", inc->rank);
      printf("\n");
      if (inc->rule->fix.n) printf("     fix: %s\n", inc->rule->fix.v[0]);
      printf("     more: ddx explain %s\n", inc->rule->id);
    }
    fflush(stdout);
  }
  json_decref(report);
  if (new_failure) {
    write_metrics(lv);
    run_hook(lv, ddx_report_json(&d, NULL));
  }
  ddx_diagnosis_free(&d);
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
    write_all(is_out ? 1 : 2, buf->base, (size_t)nread); /* pass through first */
    feed(lv, is_out ? lv->out_input : lv->err_input, is_out ? &lv->out_asm : &lv->err_asm,
         buf->base, (size_t)nread, false);
  } else if (nread < 0) {
    feed(lv, is_out ? lv->out_input : lv->err_input, is_out ? &lv->out_asm : &lv->err_asm, NULL, 0,
         true);
    uv_close((uv_handle_t *)stream, handle_closed);
  }
  free(buf->base);
}

static void exit_cb(uv_process_t *p, int64_t status, int sig) {
  live_t *lv = p->data;
  lv->exited = true;
  lv->exit_status = status;
  lv->term_signal = sig;
  for (int i = 0; i < 3; i++)
    uv_close((uv_handle_t *)&lv->sig[i], handle_closed);
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
    fprintf(stderr, "ddx: %s\n", err.msg);
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
      fprintf(stderr, "ddx: cannot write %s: %s\n", lv->json_out, strerror(errno));
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
    else if (!strcmp(a, "--stall") && has_val && watch)
      lv->stall_s = atof(argv[++i]);
    else if (!strcmp(a, "--exit-on-failure") && watch)
      lv->exit_on_failure = true;
    else if (!strcmp(a, "--from-end") && watch)
      lv->from_end = true;
    else {
      fprintf(stderr, "ddx: %s: unknown option or missing value: %s\n", watch ? "watch" : "run", a);
      return -1;
    }
  }
  return i;
}

static int live_init(live_t *lv, const ddx_catalog_t *cat) {
  memset(lv, 0, sizeof *lv);
  lv->cat = cat;
  lv->loop = uv_default_loop();
  ddx_vec_init(&lv->reported, sizeof(char *));
  ddx_vec_init(&lv->counters, sizeof(counter_t));
  ddx_vec_init(&lv->files, sizeof(watched_t));
  return ddx_scan_init(&lv->scan, cat);
}

static void live_free(live_t *lv) {
  for (size_t i = 0; i < lv->reported.len; i++)
    free(DDX_VEC_AT(&lv->reported, char *, i));
  ddx_vec_free(&lv->reported);
  for (size_t i = 0; i < lv->counters.len; i++)
    free(DDX_VEC_AT(&lv->counters, counter_t, i).rule);
  ddx_vec_free(&lv->counters);
  for (size_t i = 0; i < lv->files.len; i++) {
    watched_t *w = &DDX_VEC_AT(&lv->files, watched_t, i);
    free(w->path);
    free(w->asm_.buf);
  }
  ddx_vec_free(&lv->files);
  free(lv->out_asm.buf);
  free(lv->err_asm.buf);
  ddx_scan_free(&lv->scan);
  uv_loop_close(lv->loop);
}

int ddx_live_run(const ddx_catalog_t *cat, int argc, char **argv) {
  live_t lv;
  if (live_init(&lv, cat)) return 2;
  int first = parse_common(&lv, argc, argv, false);
  if (first < 0 || first >= argc) {
    if (first >= 0)
      fprintf(stderr, "usage: ddx run [--json-out FILE] [--metrics FILE] [--on-failure CMD] -- "
                      "COMMAND [ARGS...]\n");
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
    fprintf(stderr, "ddx: run: cannot start %s: %s\n", argv[first], uv_strerror(rc));
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
  uv_read_start((uv_stream_t *)&lv.out, alloc_cb, read_cb);
  uv_read_start((uv_stream_t *)&lv.err, alloc_cb, read_cb);
  uv_run(lv.loop, UV_RUN_DEFAULT);
  int code = lv.exit_code;
  live_free(&lv);
  return code;
}

/* --------------------------------------------------------------- watch */

static void watch_add_files(live_t *lv) {
  for (int r = 0; r < lv->nroots; r++) {
    ddx_vec_t paths;
    ddx_vec_init(&paths, sizeof(char *));
    ddx_error_t err;
    if (ddx_list_inputs(lv->roots[r], &paths, 10000, NULL, &err) == 0) {
      for (size_t i = 0; i < paths.len; i++) {
        char *p = DDX_VEC_AT(&paths, char *, i);
        bool known = false;
        for (size_t k = 0; k < lv->files.len && !known; k++)
          known = !strcmp(DDX_VEC_AT(&lv->files, watched_t, k).path, p);
        if (known) {
          free(p);
          continue;
        }
        watched_t *w = ddx_vec_push(&lv->files);
        if (!w) {
          free(p);
          continue;
        }
        w->path = p;
        ddx_line_meta_t defaults;
        ddx_layout_path_meta(p, &defaults);
        ddx_scan_add_input(&lv->scan, p, &defaults, &w->input);
        struct stat st;
        if (lv->from_end && stat(p, &st) == 0) w->offset = (uint64_t)st.st_size;
        if (stat(p, &st) == 0) w->ino = st.st_ino;
      }
    } else {
      for (size_t i = 0; i < paths.len; i++)
        free(DDX_VEC_AT(&paths, char *, i));
    }
    ddx_vec_free(&paths);
  }
}

/* Reads what a file gained since the last tick; handles truncation
 * (copytruncate) and rotation (a new file under the same name). */
static bool watch_poll_file(live_t *lv, watched_t *w) {
  struct stat st;
  if (stat(w->path, &st) != 0) return false;
  if (st.st_ino != w->ino || (uint64_t)st.st_size < w->offset) {
    feed(lv, w->input, &w->asm_, NULL, 0, true); /* end the old generation's last line */
    w->ino = st.st_ino;
    w->offset = 0;
  }
  if ((uint64_t)st.st_size == w->offset) return false;
  FILE *f = fopen(w->path, "rb");
  if (!f) return false;
  size_t want = (size_t)((uint64_t)st.st_size - w->offset);
  if (want > LIVE_READ_MAX) want = LIVE_READ_MAX;
  char *buf = malloc(want);
  size_t got = 0;
  if (buf && fseeko(f, (off_t)w->offset, SEEK_SET) == 0) got = fread(buf, 1, want, f);
  fclose(f);
  if (got) {
    w->offset += got;
    feed(lv, w->input, &w->asm_, buf, got, false);
  }
  free(buf);
  return got > 0;
}

static uint64_t now_ms(void) {
  return uv_hrtime() / 1000000u;
}

static void watch_tick(uv_timer_t *t) {
  live_t *lv = t->data;
  watch_add_files(lv);
  bool grew = false;
  for (size_t i = 0; i < lv->files.len; i++)
    grew |= watch_poll_file(lv, &DDX_VEC_AT(&lv->files, watched_t, i));
  if (grew) {
    lv->last_growth_ms = now_ms();
    lv->stalled = false;
  }
  report_new(lv, false);
  if (lv->stall_s > 0 && !lv->stalled && !lv->failed &&
      now_ms() - lv->last_growth_ms > (uint64_t)(lv->stall_s * 1000)) {
    lv->stalled = true;
    const ddx_rule_t *hang = ddx_catalog_find(lv->cat, "train.hang");
    if (lv->json)
      printf("{\"rule\":\"train.hang\",\"severity\":\"warning\",\"stall_seconds\":%.0f,\"title\":"
             "\"%s\"}\n",
             lv->stall_s, hang ? hang->title : "no progress");
    else {
      printf("ddx: warning no new output for %.0f s: the job may hang [train.hang]\n", lv->stall_s);
      if (hang)
        for (size_t k = 0; k < hang->missing.n && k < 3; k++)
          printf("     collect: %s\n", hang->missing.v[k]);
    }
    fflush(stdout);
    count_failure(lv, "train.hang", -1);
    lv->last_failure_ts = now_s();
    write_metrics(lv);
  }
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
  if (live_init(&lv, cat)) return 2;
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
  for (int r = 0; r < lv.nroots; r++) {
    struct stat st;
    if (stat(lv.roots[r], &st) != 0) {
      fprintf(stderr, "ddx: watch: %s: %s\n", lv.roots[r], strerror(errno));
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
