/* split.c - one big file scanned on several threads (see ddx/split.h). */
#define _GNU_SOURCE /* sched_getaffinity, CPU_COUNT */
#include "ddx/split.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <pthread.h>
#include <sched.h>

#include "ddx/file.h"

size_t ddx_split_threads(void) {
  /* the CPUs this process may run on (what libuv's
   * uv_available_parallelism counts on Linux) */
  cpu_set_t set;
  long n =
      sched_getaffinity(0, sizeof set, &set) == 0 ? CPU_COUNT(&set) : sysconf(_SC_NPROCESSORS_ONLN);
  unsigned cpus = n < 1 ? 1 : (unsigned)n;
  return cpus > DDX_SPLIT_MAX_THREADS ? DDX_SPLIT_MAX_THREADS : cpus ? cpus : 1;
}

/* One part of a big file, scanned on its own thread. */
typedef struct part {
  ddx_scan_t scan;
  int fd;
  const char *path;
  uint64_t from, to;
  int rc;
  ddx_error_t err;
  pthread_t tid;
  bool threaded; /* tid is to be joined */
} part_t;

static void *part_run(void *arg) {
  part_t *p = arg;
  p->rc = ddx_scan_fd_range(&p->scan, p->fd, p->path, p->from, p->to, &p->err);
  return NULL;
}

int ddx_split_scan(ddx_scan_t *scan, const char *path, size_t threads, uint64_t split_min,
                   ddx_error_t *err) {
  if (!strcmp(path, "-")) return ddx_scan_path(scan, path, err);
  ddx_file_opts_t o = {.allow_pipe = true, .what = "log"};
  struct stat st;
  int fd = ddx_file_open(path, &o, &st, err);
  if (fd < 0) return fd;
  int rc = ddx_split_scan_fd(scan, fd, &st, path, threads, split_min, err);
  close(fd);
  return rc;
}

int ddx_split_scan_fd(ddx_scan_t *scan, int fd, const struct stat *st, const char *path,
                      size_t threads, uint64_t split_min, ddx_error_t *err) {
  if (threads < 2 || !S_ISREG(st->st_mode) || (uint64_t)st->st_size < split_min)
    return ddx_scan_fd_range(scan, fd, path, 0, UINT64_MAX, err);
  if (threads > DDX_SPLIT_MAX_THREADS) threads = DDX_SPLIT_MAX_THREADS;
  /* a hard-wrapped or HTML-escaped file is decided from its start and its
   * lines joined across part boundaries: one pass */
  char *head = malloc(65536);
  if (!head) return ddx_error_set(err, DDX_ENOMEM, "out of memory");
  ssize_t got = pread(fd, head, 65536, 0);
  bool one = got > 0 && ddx_scan_rejoins(head, (size_t)got);
  free(head);
  if (one) return ddx_scan_fd_range(scan, fd, path, 0, UINT64_MAX, err);
  uint64_t bounds[DDX_SPLIT_MAX_THREADS + 1];
  size_t n = ddx_scan_plan(fd, (uint64_t)st->st_size, threads, bounds);
  if (n < 2) return ddx_scan_fd_range(scan, fd, path, 0, UINT64_MAX, err);
  part_t *parts = calloc(n, sizeof *parts);
  if (!parts) return ddx_error_set(err, DDX_ENOMEM, "out of memory");
  size_t started = 0;
  int rc = 0;
  for (size_t i = 1; i < n && !rc; i++) {
    part_t *p = &parts[i];
    p->fd = fd;
    p->path = path;
    p->from = bounds[i];
    p->to = bounds[i + 1];
    if (ddx_scan_init(&p->scan, scan->cat)) {
      rc = ddx_error_set(err, DDX_ENOMEM, "out of memory");
      break;
    }
    p->scan.on_read = scan->on_read;
    p->scan.on_read_ctx = scan->on_read_ctx;
    p->scan.no_rejoin = true; /* the start decided: not rejoined */
    started = i;
    p->threaded = pthread_create(&p->tid, NULL, part_run, p) == 0;
    if (!p->threaded) part_run(p); /* no thread: scan it here */
  }
  if (!rc) rc = ddx_scan_fd_range(scan, fd, path, 0, bounds[1], err);
  for (size_t i = 1; i <= started; i++) {
    part_t *p = &parts[i];
    if (p->threaded) pthread_join(p->tid, NULL);
    if (!rc && p->rc) {
      *err = p->err;
      rc = p->rc;
    }
    if (!rc && (rc = ddx_scan_merge(scan, &p->scan)))
      ddx_error_set(err, rc, "%s: merging the parts of the scan failed", path);
    ddx_scan_free(&p->scan);
  }
  free(parts);
  return rc;
}
