/* file.c - the one way ddx opens a file for reading and walks a folder
 * (see ddx/file.h). */
#include "ddx/file.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

static const char *kind_name(mode_t m) {
  if (S_ISFIFO(m)) return "a FIFO or pipe";
  if (S_ISCHR(m)) return "a character device";
  if (S_ISBLK(m)) return "a block device";
  if (S_ISSOCK(m)) return "a socket";
  if (S_ISDIR(m)) return "a folder";
  return "not a regular file";
}

static const char *what_of(const ddx_file_opts_t *o) {
  return o && o->what ? o->what : "file";
}

static void format_size(size_t n, char *out, size_t cap) {
  if (n >= ((size_t)1 << 30) && n % ((size_t)1 << 30) == 0)
    snprintf(out, cap, "%zu GiB", n >> 30);
  else if (n >= ((size_t)1 << 20))
    snprintf(out, cap, "%zu MiB", n >> 20);
  else
    snprintf(out, cap, "%zu bytes", n);
}

static int refuse_size(const char *path, const ddx_file_opts_t *o, ddx_error_t *err) {
  char cap[32];
  format_size(o->max_bytes, cap, sizeof cap);
  return ddx_error_set(err, DDX_EIO, "%s: larger than the %s limit for a %s; not read", path, cap,
                       what_of(o));
}

int ddx_file_open(const char *path, const ddx_file_opts_t *o, struct stat *st, ddx_error_t *err) {
  static const ddx_file_opts_t none = {0};
  if (!o) o = &none;
  int flags = O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK;
  if (o->nofollow) flags |= O_NOFOLLOW;
  int fd = open(path, flags);
  if (fd < 0) {
    if (errno == ELOOP && o->nofollow)
      return ddx_error_set(err, DDX_EIO, "%s: a symbolic link; a %s is not read through a link",
                           path, what_of(o));
    return ddx_error_set(err, DDX_EIO, "%s: %s", path, strerror(errno));
  }
  if (fstat(fd, st) != 0) {
    int e = errno;
    close(fd);
    return ddx_error_set(err, DDX_EIO, "%s: %s", path, strerror(e));
  }
  bool pipe = S_ISFIFO(st->st_mode);
  if (!S_ISREG(st->st_mode) && !(pipe && o->allow_pipe)) {
    close(fd);
    return ddx_error_set(err, DDX_EIO, "%s: %s, not a regular file; a %s must be a regular file",
                         path, kind_name(st->st_mode), what_of(o));
  }
  if (S_ISREG(st->st_mode) && o->max_bytes && (uint64_t)st->st_size > (uint64_t)o->max_bytes) {
    close(fd);
    return refuse_size(path, o, err);
  }
  if (pipe) {
    /* A named FIFO the user asked for: reopen blocking so the read waits
     * for its writer (opened non-blocking, a FIFO without one reads EOF). */
    int bfd = open(path, (flags & ~O_NONBLOCK));
    close(fd);
    if (bfd < 0) return ddx_error_set(err, DDX_EIO, "%s: %s", path, strerror(errno));
    fd = bfd;
    if (fstat(fd, st) != 0 || !S_ISFIFO(st->st_mode)) {
      close(fd);
      return ddx_error_set(err, DDX_EIO, "%s: changed while opened", path);
    }
    return fd;
  }
  int fl = fcntl(fd, F_GETFL);
  if (fl < 0 || fcntl(fd, F_SETFL, fl & ~O_NONBLOCK) != 0) {
    int e = errno;
    close(fd);
    return ddx_error_set(err, DDX_EIO, "%s: %s", path, strerror(e));
  }
  return fd;
}

/* Reads fd to its end (at most cap bytes when cap > 0). */
static int read_fd(int fd, const char *path, const ddx_file_opts_t *o, char **text, size_t *len,
                   ddx_error_t *err) {
  ddx_sb_t b;
  ddx_sb_init(&b);
  char chunk[65536];
  int rc = 0;
  for (;;) {
    ssize_t n = read(fd, chunk, sizeof chunk);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      rc = ddx_error_set(err, DDX_EIO, "%s: %s", path, strerror(errno));
      break;
    }
    if (n == 0) break;
    if (o->max_bytes && b.len + (size_t)n > o->max_bytes) {
      rc = refuse_size(path, o, err);
      break;
    }
    ddx_sb_putn(&b, chunk, (size_t)n);
    if (!b.s) {
      rc = ddx_error_set(err, DDX_ENOMEM, "%s: out of memory", path);
      break;
    }
  }
  if (!rc && !b.s) ddx_sb_putn(&b, "", 0);
  if (rc || !b.s) {
    ddx_sb_free(&b);
    return rc ? rc : ddx_error_set(err, DDX_ENOMEM, "%s: out of memory", path);
  }
  *len = b.len;
  *text = ddx_sb_take(&b);
  return 0;
}

int ddx_file_read(const char *path, const ddx_file_opts_t *o, char **text, size_t *len,
                  ddx_error_t *err) {
  static const ddx_file_opts_t none = {0};
  if (!o) o = &none;
  *text = NULL;
  *len = 0;
  if (!strcmp(path, "-")) {
    if (!o->allow_pipe) return ddx_error_set(err, DDX_EINVAL, "-: stdin is not read here");
    return read_fd(0, "-", o, text, len, err);
  }
  struct stat st;
  int fd = ddx_file_open(path, o, &st, err);
  if (fd < 0) return fd;
  int rc = read_fd(fd, path, o, text, len, err);
  close(fd);
  return rc;
}

char *ddx_file_realpath(int fd, const char *path) {
#ifdef __linux__
  char link[64], buf[PATH_MAX + 1];
  snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
  ssize_t n = readlink(link, buf, PATH_MAX);
  if (n > 0 && buf[0] == '/') {
    buf[n] = 0;
    return strdup(buf);
  }
#endif
  char *real = path ? realpath(path, NULL) : NULL;
  struct stat a, b;
  if (real &&
      (stat(real, &a) != 0 || fstat(fd, &b) != 0 || a.st_dev != b.st_dev || a.st_ino != b.st_ino)) {
    free(real);
    real = NULL;
  }
  return real;
}

bool ddx_path_within(const char *path, const char *dir) {
  size_t n = strlen(dir);
  while (n > 1 && dir[n - 1] == '/')
    n--;
  if (strncmp(path, dir, n) != 0) return false;
  return path[n] == 0 || path[n] == '/' || (n == 1 && dir[0] == '/');
}

typedef struct dev_ino {
  dev_t dev;
  ino_t ino;
  bool used;
} dev_ino_t;

/* The walk's state: what it lists, where it stops, what it has seen. */
typedef struct walk {
  ddx_name_filter_fn want;
  ddx_vec_t *out;
  const char *root;
  size_t max_files, met, skipped;
  struct dev_ino *seen; /* the folders entered: a hash set of cap slots */
  size_t nseen, cap;
  ddx_error_t *err;
} walk_t;

static int cmp_cstr(const void *a, const void *b) {
  return strcmp(*(char *const *)a, *(char *const *)b);
}

/* True (and remembered) when the folder st was not entered before: an
 * open-addressing set of (device, inode), grown at half load. */
static size_t di_hash(dev_t dev, ino_t ino) {
  uint64_t h = ((uint64_t)dev * 0x9E3779B97F4A7C15ull) ^ ((uint64_t)ino * 0xC2B2AE3D27D4EB4Full);
  return (size_t)(h ^ (h >> 29));
}

static bool set_put(dev_ino_t *tab, size_t cap, dev_t dev, ino_t ino) {
  for (size_t i = di_hash(dev, ino) & (cap - 1);; i = (i + 1) & (cap - 1)) {
    if (!tab[i].used) {
      tab[i] = (dev_ino_t){dev, ino, true};
      return true;
    }
    if (tab[i].dev == dev && tab[i].ino == ino) return false;
  }
}

static bool walk_enter(walk_t *w, const struct stat *st) {
  if (2 * (w->nseen + 1) > w->cap) {
    size_t cap = w->cap ? 2 * w->cap : 64;
    dev_ino_t *tab = calloc(cap, sizeof *tab);
    if (!tab) return false;
    for (size_t i = 0; i < w->cap; i++)
      if (w->seen[i].used) set_put(tab, cap, w->seen[i].dev, w->seen[i].ino);
    free(w->seen);
    w->seen = tab, w->cap = cap;
  }
  if (!set_put(w->seen, w->cap, st->st_dev, st->st_ino)) return false;
  w->nseen++;
  return true;
}

static int walk_add(walk_t *w, const char *path) {
  if (++w->met > w->max_files) /* stop here: refused, never cut silently */
    return ddx_error_set(w->err, DDX_EINVAL,
                         "%s: more than %zu files to read; name fewer files or a narrower folder",
                         w->root, w->max_files);
  char **slot = ddx_vec_push(w->out);
  if (!slot || !(*slot = strdup(path))) return ddx_error_set(w->err, DDX_ENOMEM, "out of memory");
  return 0;
}

static int walk_dir(walk_t *w, const char *path, int depth);

static int walk_entry(walk_t *w, const char *full, const char *name, int depth) {
  struct stat st;
  if (stat(full, &st) != 0) { /* a dangling link or a race: nothing to read */
    w->skipped++;
    return 0;
  }
  if (S_ISDIR(st.st_mode)) {
    if (depth >= 8 || !walk_enter(w, &st)) return 0;
    return walk_dir(w, full, depth + 1);
  }
  if (!w->want(name)) return 0;
  if (!S_ISREG(st.st_mode)) {
    w->skipped++;
    return 0;
  }
  return walk_add(w, full);
}

static int walk_dir(walk_t *w, const char *path, int depth) {
  DIR *d = opendir(path);
  if (!d && depth > 0) { /* an unreadable subfolder hides only itself */
    w->skipped++;
    return 0;
  }
  if (!d) return ddx_error_set(w->err, DDX_EIO, "%s: %s", path, strerror(errno));
  ddx_vec_t names;
  ddx_vec_init(&names, sizeof(char *));
  struct dirent *de;
  int rc = 0;
  while ((de = readdir(d))) {
    if (de->d_name[0] == '.') continue;
    char **slot = ddx_vec_push(&names);
    if (!slot || !(*slot = strdup(de->d_name))) {
      rc = ddx_error_set(w->err, DDX_ENOMEM, "out of memory");
      break;
    }
  }
  closedir(d);
  if (names.len > 1) qsort(names.data, names.len, sizeof(char *), cmp_cstr);
  for (size_t i = 0; i < names.len; i++) {
    char *name = DDX_VEC_AT(&names, char *, i);
    if (!rc && name) {
      char full[PATH_MAX];
      int k = snprintf(full, sizeof full, "%s/%s", path, name);
      if (k > 0 && (size_t)k < sizeof full)
        rc = walk_entry(w, full, name, depth);
      else
        w->skipped++;
    }
    free(name);
  }
  ddx_vec_free(&names);
  return rc;
}

int ddx_walk_files(const char *path, ddx_name_filter_fn want, ddx_vec_t *out, size_t max_files,
                   size_t *skipped, ddx_error_t *err) {
  walk_t w = {.root = path, .want = want, .out = out, .max_files = max_files, .err = err};
  struct stat st;
  int rc = 0;
  if (stat(path, &st) != 0) {
    rc = ddx_error_set(err, DDX_EIO, "%s: %s", path, strerror(errno));
  } else if (S_ISDIR(st.st_mode)) {
    if (walk_enter(&w, &st)) rc = walk_dir(&w, path, 0);
  } else {
    rc = walk_add(&w, path); /* named by the caller: its type is checked when opened */
  }
  free(w.seen);
  if (skipped) *skipped += w.skipped;
  return rc;
}

const ddx_log_suffix_t ddx_log_suffixes[] = {
    {".log", true}, {".out", true}, {".err", true}, {".txt", false}, {NULL, false}};

bool ddx_is_log_name(const char *name, bool editor) {
  size_t n = strlen(name);
  for (const ddx_log_suffix_t *x = ddx_log_suffixes; x->suffix; x++) {
    size_t e = strlen(x->suffix);
    if (n < e || (editor && !x->editor)) continue;
    if (!(editor ? strcasecmp : strcmp)(name + n - e, x->suffix)) return true;
  }
  return !strncmp(name, DDX_LOG_PREFIX, strlen(DDX_LOG_PREFIX));
}

static bool is_log_name(const char *name) {
  return ddx_is_log_name(name, false);
}

int ddx_list_inputs(const char *path, ddx_vec_t *out, size_t max_files, size_t *skipped,
                    ddx_error_t *err) {
  if (!strcmp(path, "-")) {
    char **slot = ddx_vec_push(out);
    if (!slot || !(*slot = strdup(path))) return ddx_error_set(err, DDX_ENOMEM, "out of memory");
    return 0;
  }
  return ddx_walk_files(path, is_log_name, out, max_files, skipped, err);
}

int ddx_read_file(const char *path, char **text, size_t *len, ddx_error_t *err) {
  ddx_file_opts_t o = {.allow_pipe = !strcmp(path, "-"), .max_bytes = DDX_FILE_CAP_DOCUMENT};
  return ddx_file_read(path, &o, text, len, err);
}

bool ddx_exe_dir(char *buf, size_t cap) {
  if (cap < 2) return false;
  ssize_t n = readlink("/proc/self/exe", buf, cap - 1);
  if (n <= 0) return false;
  buf[n] = 0;
  char *slash = strrchr(buf, '/');
  if (slash) *slash = 0;
  return true;
}
