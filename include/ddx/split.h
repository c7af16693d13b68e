/* ddx/split.h - owns scanning one big file on several threads: it cuts a
 * regular file into parts after newlines (ddx_scan_plan), scans each part
 * with its own ddx_scan_t on a POSIX thread of its own (the first on the
 * caller's), and merges them in order into the caller's scan
 * (ddx_scan_merge), so the result is what one pass would have stored. The
 * CLI and the language server use it; the threads live only inside
 * ddx_split_scan_fd, and no state outlives the call. */
#ifndef DDX_SPLIT_H
#define DDX_SPLIT_H

#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>

#include "ddx/scan.h"

#define DDX_SPLIT_MAX_THREADS 16
#define DDX_SPLIT_MIN_DEFAULT ((uint64_t)64 << 20) /* smaller files: one pass */

/* The threads to use by default: the CPUs available, at most
 * DDX_SPLIT_MAX_THREADS. */
size_t ddx_split_threads(void);

/* Scans path into scan: in up to `threads` parts when it is a regular file
 * of split_min bytes or more, else in one pass (stdin: "-"; a pipe the
 * user named is read too, a device refused: see ddx_file_open). The
 * scan's on_read hook, if set, is called from every part's thread. */
int ddx_split_scan(ddx_scan_t *scan, const char *path, size_t threads, uint64_t split_min,
                   ddx_error_t *err);
/* The same on a descriptor the caller opened and checked (st: its fstat;
 * path names it in messages); the parts share fd (pread). */
int ddx_split_scan_fd(ddx_scan_t *scan, int fd, const struct stat *st, const char *path,
                      size_t threads, uint64_t split_min, ddx_error_t *err);

#endif
