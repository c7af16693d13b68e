/* ddx/file.h - owns how ddx opens a file for reading and walks a folder:
 * the one way every reader (CLI inputs, watch, rule folders, the language
 * server's config search, model configs, diagnoseFile, event files) gets
 * at bytes on disk. A file is opened with O_NONBLOCK (a FIFO or device
 * named like a config file cannot block the opener), optionally with
 * O_NOFOLLOW, its descriptor fstat'ed, and anything but a regular file
 * refused with a message naming it, unless the caller explicitly accepts
 * a pipe (a path the user typed on the command line). Reads are capped
 * per purpose. Folder walks remember (device, inode) so a link cycle is
 * listed once, and they count and bound what they list. No global
 * state; the caller owns every descriptor, buffer and list returned. */
#ifndef DDX_FILE_H
#define DDX_FILE_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/stat.h>

#include "ddx/util.h"

/* Size caps per purpose (bytes). */
#define DDX_FILE_CAP_RULE ((size_t)4 << 20)     /* one rule or phase table */
#define DDX_FILE_CAP_CONFIG ((size_t)4 << 20)   /* ds_config.json, model config.json */
#define DDX_FILE_CAP_EVENTS ((size_t)256 << 20) /* an events file for ddx merge */
#define DDX_FILE_CAP_DOCUMENT ((size_t)1 << 30) /* a whole text kept in memory */

typedef struct ddx_file_opts {
  size_t max_bytes; /* refuse (DDX_EIO) a file larger than this; 0: no cap */
  bool nofollow;    /* refuse a symlink as the last path component */
  bool allow_pipe;  /* accept a FIFO or pipe (opened blocking): a path the
                       user named on the command line, e.g. <(kubectl logs) */
  const char *what; /* what the file is for, in messages ("rule file") */
} ddx_file_opts_t;

/* Opens path for reading as described above. Returns the descriptor
 * (>= 0, blocking mode restored, close-on-exec) and fills *st from fstat,
 * or a negative DDX_E* code with err naming the path and the reason
 * ("not a regular file (a FIFO)", "larger than the 4 MiB limit"). */
int ddx_file_open(const char *path, const ddx_file_opts_t *o, struct stat *st, ddx_error_t *err);

/* Reads the whole file at path ("-": stdin, when o->allow_pipe) into
 * *text (malloc'd, NUL-terminated, length in *len), opened by
 * ddx_file_open and at most o->max_bytes long even if it grows while
 * read. Returns 0 or a negative DDX_E* code with err set. */
int ddx_file_read(const char *path, const ddx_file_opts_t *o, char **text, size_t *len,
                  ddx_error_t *err);

/* The canonical path of the file open on fd (malloc'd), taken from the
 * descriptor itself (/proc/self/fd on Linux; elsewhere realpath(path)
 * checked against the descriptor's device and inode), NULL if unknown.
 * Containment checks ("inside the workspace") use this, not the name. */
char *ddx_file_realpath(int fd, const char *path);

/* True when path (canonical) is dir (canonical) or lies under it. */
bool ddx_path_within(const char *path, const char *dir);

/* A folder walk: appends to out (a vector of malloc'd char*) path itself
 * when it is a regular file, or the regular files under it whose name
 * `want` accepts, sorted, depth at most 8. Directories already seen (by
 * device and inode) are skipped, so link cycles are listed once; entries
 * that are not regular files (FIFOs, devices, sockets, dangling links)
 * and subfolders that cannot be read are skipped and counted in *skipped
 * (may be NULL). At most max_files
 * are listed: past that the walk stops and returns DDX_EINVAL with err
 * saying how many it met, never a silent cut. Returns 0, or DDX_EIO with
 * err naming the path that cannot be read. */
typedef bool (*ddx_name_filter_fn)(const char *name);
int ddx_walk_files(const char *path, ddx_name_filter_fn want, ddx_vec_t *out, size_t max_files,
                   size_t *skipped, ddx_error_t *err);

/* Which files are logs, the one list: a name ending in one of the
 * suffixes, or Slurm's slurm-* (torchrun's stdout/stderr files are .log).
 * In a folder ddx diagnose walks, .txt too (a job's output saved by hand)
 * and suffixes as written; in the editor (the language server, and the VS
 * Code client's package.json languages and documentSelector, which
 * tests/unit/test_lognames.c compares with this list) not .txt (a notes.txt
 * is not a log) and in any case (VS Code matches extensions so). The
 * suffix list ends with a NULL suffix. */
#define DDX_LOG_PREFIX "slurm-"
typedef struct ddx_log_suffix {
  const char *suffix; /* ".log" */
  bool editor;        /* the editor takes it too */
} ddx_log_suffix_t;
extern const ddx_log_suffix_t ddx_log_suffixes[];
/* True when a file's base name is a log's, for the editor or a folder. */
bool ddx_is_log_name(const char *name, bool editor);

/* ddx_walk_files for logs (ddx_is_log_name for a folder); "-" (stdin) is
 * passed through. */
int ddx_list_inputs(const char *path, ddx_vec_t *out, size_t max_files, size_t *skipped,
                    ddx_error_t *err);

/* ddx_file_read of a regular file (or "-": stdin) of at most
 * DDX_FILE_CAP_DOCUMENT bytes, for callers with no purpose of their own. */
int ddx_read_file(const char *path, char **text, size_t *len, ddx_error_t *err);

/* The folder of the running binary (from /proc/self/exe) into buf; false
 * when it cannot be read. The catalog and the encyclopedia's site are
 * found next to it. */
bool ddx_exe_dir(char *buf, size_t cap);

#endif
