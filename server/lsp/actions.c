/* actions.c - textDocument/codeAction (see ddx/lsp.h): a log
 * diagnostic's rule carries config_patches; each is planned by the engine
 * (ddx/dsconfig.h through config.c) against the project's
 * ds_config.json and offered as a WorkspaceEdit the user can undo. The
 * server never writes a file.
 *
 * The config is found in this order: open documents, a path the log names
 * (--deepspeed X, --deepspeed_config X, deepspeed=X, "deepspeed": "X" in
 * printed arguments), the workspace file whose values DeepSpeed printed
 * ("json = {...}" of DeepSpeedEngine's configuration print; "auto" values
 * match what the HF Trainer filled in), the workspace folders
 * (ds_config*.json, *deepspeed*.json, then any JSON with DeepSpeed keys; the
 * top two levels only), the setting ddx.dsConfig.path. Only files whose
 * real path (taken from the opened descriptor, not the name) lies inside
 * the workspace folders are used, except the one the user named in the
 * setting: a committed `ds_config.json -> /etc/x.json` or a symlinked
 * subfolder is skipped.
 *
 * No file is opened, listed or read on the loop thread for a code action.
 * The files are looked at by a refresh on the libuv thread pool, which
 * builds the workspace config index: an immutable, reference-counted
 * snapshot (lsp_cfgsnap_t) of the workspace folders' JSON files (top two
 * levels, hidden folders and node_modules skipped, at most
 * LSP_CFG_MAX_FILES per folder), the candidate paths the open logs name and
 * the setting's path. Each is opened by ddx_file_open (O_NONBLOCK, fstat,
 * regular files only: a FIFO or a link to /dev/stdin is refused, never
 * waited on), its real path taken from the descriptor, at most
 * DDX_FILE_CAP_CONFIG read; what the search can use is kept (the text of
 * named files, of ds-named and DeepSpeed files, of files whose values
 * DeepSpeed printed), the rest only as flags. A file whose device, inode,
 * size and times did not change keeps the previous snapshot's text and
 * flags, so a steady-state refresh only opens and fstats. The worker gets
 * copies of its inputs and a reference to the previous snapshot (taken on
 * the loop); it never sees the server; references are counted on the loop
 * thread only.
 *
 * A code action is answered from the snapshot when it is fresh: built for
 * the current generation (bumped by didChangeWatchedFiles, a folder or
 * configuration change, a didOpen/didClose/didSave of a JSON document),
 * completed less than LSP_CFG_FRESH_NS ago, with the same setting, and
 * holding the log's named paths and printed config. Otherwise the request
 * is deferred (call->deferred) and answered when a refresh completes;
 * $/cancelRequest, shutdown and exit answer pending ones.
 *
 * On a ds_config document itself, the quick fixes of its own diagnostics
 * (ddx/dscheck.h via config.c): a misspelt or deprecated key renamed,
 * planned like any other patch, so the edit keeps the file's style. */
#define _GNU_SOURCE
#include "internal.h"

#include "ddx/file.h"
#include "ddx/report.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#define LSP_CFG_MAX_FILES 400                    /* JSON files listed per workspace folder */
#define LSP_CFG_MAX_EXTRA 256                    /* named candidate paths + the setting */
#define LSP_CFG_MAX_PRINTED 32                   /* printed configs matched (bits of a mask) */
#define LSP_CFG_MAX_DOCS 512                     /* open documents whose real path is taken */
#define LSP_CFG_KEEP_BYTES ((size_t)64 << 20)    /* texts one snapshot keeps */
#define LSP_CFG_FRESH_NS ((uint64_t)2000000000u) /* a snapshot older than this is refreshed */
#define LSP_CFG_MAX_WAITS 3 /* refreshes a request waits through before it is answered anyway */

/* A ds_config candidate: its text (open document or file), URI and the
 * document version when open. */
typedef struct lsp_cfgsrc {
  char *uri;
  char *path;
  ddx_lsp_text_t *text;
  int64_t version;
  bool open;
  const char *how; /* how it was found, for explanations */
} lsp_cfgsrc_t;

static void lsp_cfgsrc_clear(lsp_cfgsrc_t *c) {
  free(c->uri);
  free(c->path);
  ddx_lsp_text_unref(c->text);
  memset(c, 0, sizeof *c);
}

/* True when the bytes parse as a DeepSpeed config (pure: either thread). */
static bool lsp_buf_is_ds(const char *data, size_t len) {
  char why[256];
  ddx_lsp_cfg_t *c = ddx_lsp_cfg_parse(data, len, why, sizeof why);
  bool ds = ddx_lsp_cfg_is_deepspeed(c);
  ddx_lsp_cfg_free(c);
  return ds;
}

/* A case-insensitive substring test (strcasestr is a GNU extension). */
static bool lsp_icontains(const char *h, const char *n) {
  size_t k = strlen(n);
  for (; *h; h++)
    if (!strncasecmp(h, n, k)) return true;
  return false;
}

static bool lsp_name_is_ds(const char *name) {
  size_t n = strlen(name);
  if (n < 5 || strcasecmp(name + n - 5, ".json")) return false;
  return !strncasecmp(name, "ds_config", 9) || lsp_icontains(name, "deepspeed");
}

static bool lsp_name_is_json(const char *name) {
  size_t n = strlen(name);
  return n > 5 && !strcasecmp(name + n - 5, ".json");
}

static int lsp_cmp_str(const void *a, const void *b) {
  return strcmp(*(char *const *)a, *(char *const *)b);
}

/* ------------------------------------------------------------ string lists */

/* A list of malloc'd strings, owned by whoever holds the list. */
typedef struct lsp_strs {
  char **v;
  size_t n, cap;
} lsp_strs_t;

static long lsp_strs_find(const lsp_strs_t *l, const char *x) {
  for (size_t i = 0; i < l->n; i++)
    if (!strcmp(l->v[i], x)) return (long)i;
  return -1;
}

/* Appends x (owned by the list from now on, freed on failure). */
static bool lsp_strs_take(lsp_strs_t *l, char *x) {
  if (!x) return false;
  if (l->n == l->cap) {
    size_t nc = l->cap ? l->cap * 2 : 8;
    char **nv = realloc(l->v, nc * sizeof *nv);
    if (!nv) {
      free(x);
      return false;
    }
    l->v = nv;
    l->cap = nc;
  }
  l->v[l->n++] = x;
  return true;
}

/* Appends a copy of x unless it is there already or the list holds max. */
static void lsp_strs_add(lsp_strs_t *l, const char *x, size_t max) {
  if (l->n < max && lsp_strs_find(l, x) < 0) lsp_strs_take(l, strdup(x));
}

static void lsp_strs_free(lsp_strs_t *l) {
  for (size_t i = 0; i < l->n; i++)
    free(l->v[i]);
  free(l->v);
  memset(l, 0, sizeof *l);
}

/* ------------------------------------------------------- the config index */

/* One file of a snapshot. */
typedef struct lsp_cfgent {
  char *path;           /* as listed (folder/sub/x.json) or as named */
  char *real;           /* real path of the descriptor opened, NULL: not a readable regular file */
  ddx_lsp_text_t *text; /* its bytes, when the search may use them, else NULL */
  struct stat st;       /* fstat of the descriptor */
  bool in_ws;           /* real lies inside a workspace folder */
  bool name_ds;         /* ds_config*.json, *deepspeed*.json */
  bool is_ds;           /* parses as a DeepSpeed config (workspace files only) */
  bool borrowed;        /* worker: text is the previous snapshot's; referenced on the loop */
  uint32_t printed;     /* bit k: its values are those of the snapshot's printed[k] */
} lsp_cfgent_t;

/* An immutable view of the workspace's config files at one time. */
typedef struct lsp_cfgsnap {
  int refs;         /* loop thread only */
  uint64_t gen;     /* the index generation it was built for */
  uint64_t done_ns; /* when it was completed */
  lsp_cfgent_t *ws; /* the workspace folders' JSON files, in search order */
  size_t nws;
  lsp_cfgent_t *extra; /* the candidate paths named by the open logs and the setting */
  size_t nextra;
  lsp_strs_t printed; /* the configs DeepSpeed printed in the open logs */
  lsp_strs_t named;   /* basenames of the named candidates */
  lsp_strs_t docs;    /* open documents' paths ... */
  char **doc_real;    /* ... and their real paths (NULL unknown) */
  char *setting;      /* ddx.dsConfig.path it was built with, or NULL */
  size_t nread, nreused, ndropped;
} lsp_cfgsnap_t;

static void lsp_cfgents_free(lsp_cfgent_t *e, size_t n) {
  for (size_t i = 0; i < n; i++) {
    free(e[i].path);
    free(e[i].real);
    if (!e[i].borrowed) ddx_lsp_text_unref(e[i].text);
  }
  free(e);
}

static void lsp_snap_unref(lsp_cfgsnap_t *n) {
  if (!n || --n->refs > 0) return;
  lsp_cfgents_free(n->ws, n->nws);
  lsp_cfgents_free(n->extra, n->nextra);
  lsp_strs_free(&n->printed);
  lsp_strs_free(&n->named);
  for (size_t i = 0; i < n->docs.n; i++)
    free(n->doc_real[i]);
  free(n->doc_real);
  lsp_strs_free(&n->docs);
  free(n->setting);
  free(n);
}

/* A refresh on the thread pool. The worker reads folders and prev, fills
 * snap (whose inputs the loop set: extra[].path, printed, named, docs). */
typedef struct lsp_cfgjob {
  uv_work_t req;
  ddx_lsp_server_t *s; /* loop thread only */
  atomic_int cancel;   /* set by the loop thread */
  lsp_strs_t folders;  /* the workspace folders (real paths), the worker's own copy */
  lsp_cfgsnap_t *prev; /* the previous snapshot (a reference the loop took), or NULL */
  lsp_cfgsnap_t *snap; /* being built; the loop's once the job is done */
  uint64_t start_ns;
} lsp_cfgjob_t;

/* A code action request waiting for a refresh. */
typedef struct lsp_pending {
  struct lsp_pending *next;
  json_t *id, *params; /* references */
  int waits;           /* refreshes completed while it waited */
} lsp_pending_t;

/* The server's index (s->cfg_index): the newest snapshot, the refresh in
 * flight and the requests waiting for it. */
struct ddx_lsp_cfgindex {
  lsp_cfgsnap_t *snap;
  lsp_cfgjob_t *job;
  uint64_t gen;
  lsp_pending_t *pending; /* in arrival order */
};
typedef struct ddx_lsp_cfgindex lsp_ix_t;

static lsp_ix_t *lsp_ix(ddx_lsp_server_t *s) {
  if (!s->cfg_index) s->cfg_index = calloc(1, sizeof *s->cfg_index);
  return s->cfg_index;
}

/* ------------------------------------------------------ worker: the files */

/* The JSON files in dir and (depth 0) its direct subfolders, hidden
 * folders and node_modules skipped, at most LSP_CFG_MAX_FILES. Symlinked
 * subfolders are entered as before (depth 1 ends the walk, so no cycle);
 * where their files really are is checked on the descriptor. */
static void lsp_list_json_rec(const char *dir, int depth, lsp_strs_t *v, atomic_int *cancel) {
  DIR *dp = opendir(dir);
  if (!dp) return;
  struct dirent *e;
  while (!atomic_load(cancel) && (e = readdir(dp)) && v->n < LSP_CFG_MAX_FILES) {
    if (e->d_name[0] == '.' || !strcmp(e->d_name, "node_modules")) continue;
    size_t len = strlen(dir) + strlen(e->d_name) + 2;
    char *full = malloc(len);
    if (!full) break;
    snprintf(full, len, "%s/%s", dir, e->d_name);
    struct stat st;
    if (stat(full, &st) != 0) {
      free(full);
    } else if (S_ISDIR(st.st_mode) && depth == 0) {
      lsp_list_json_rec(full, 1, v, cancel);
      free(full);
    } else if (S_ISREG(st.st_mode) && lsp_name_is_json(e->d_name)) {
      if (!lsp_strs_take(v, full)) break;
    } else {
      free(full);
    }
  }
  closedir(dp);
}

static bool lsp_same_file(const struct stat *a, const struct stat *b) {
  return a->st_dev == b->st_dev && a->st_ino == b->st_ino && a->st_size == b->st_size &&
         a->st_mode == b->st_mode && a->st_mtim.tv_sec == b->st_mtim.tv_sec &&
         a->st_mtim.tv_nsec == b->st_mtim.tv_nsec && a->st_ctim.tv_sec == b->st_ctim.tv_sec &&
         a->st_ctim.tv_nsec == b->st_ctim.tv_nsec;
}

/* The entry of a previous list with this path (i: where it likely is). */
static const lsp_cfgent_t *lsp_ent_find(const lsp_cfgent_t *v, size_t n, size_t i,
                                        const char *path) {
  if (i < n && !strcmp(v[i].path, path)) return &v[i];
  for (size_t k = 0; k < n; k++)
    if (!strcmp(v[k].path, path)) return &v[k];
  return NULL;
}

/* Reads the open regular file fd (size: its fstat size) to its end, at
 * most DDX_FILE_CAP_CONFIG bytes. NULL when it is larger or unreadable. */
static char *lsp_read_fd(int fd, size_t size, size_t *len) {
  size_t cap = size + 1, got = 0;
  char *buf = malloc(cap + 1);
  while (buf) {
    if (got == cap) {
      char *nb = cap <= DDX_FILE_CAP_CONFIG ? realloc(buf, cap * 2 + 1) : NULL;
      if (!nb) break;
      buf = nb;
      cap *= 2;
    }
    ssize_t r = read(fd, buf + got, cap - got);
    if (r < 0 && errno == EINTR) continue;
    if (r < 0) break;
    if (r == 0) {
      if (got > DDX_FILE_CAP_CONFIG) break;
      buf[got] = 0;
      *len = got;
      return buf;
    }
    got += (size_t)r;
  }
  free(buf);
  return NULL;
}

static bool lsp_in_folders(const lsp_strs_t *folders, const char *real) {
  for (size_t f = 0; real && f < folders->n; f++)
    if (ddx_path_within(real, folders->v[f])) return true;
  return false;
}

/* Opens, checks and (when it may be used and changed) reads one file of
 * the snapshot. extra: a named candidate or the setting (its text is
 * kept; no content flags). old: the previous snapshot's entry of the same
 * path, or NULL. */
static void lsp_cfg_load(lsp_cfgjob_t *j, lsp_cfgent_t *e, const lsp_cfgent_t *old, bool extra,
                         size_t *kept) {
  lsp_cfgsnap_t *n = j->snap;
  const lsp_cfgsnap_t *p = j->prev;
  /* A file that must lie inside the workspace (all but the setting's) and
   * whose name resolves outside is not even opened; the real path of the
   * descriptor is checked again below. */
  if (!n->setting || strcmp(e->path, n->setting)) {
    char *pre = realpath(e->path, NULL);
    bool in = lsp_in_folders(&j->folders, pre);
    free(pre);
    if (!in) return;
  }
  /* No size cap here: a file too big to read still has a real path, and
   * an open document of it wins over its bytes. */
  ddx_file_opts_t o = {.what = "DeepSpeed config"};
  ddx_error_t err = {0};
  int fd = ddx_file_open(e->path, &o, &e->st, &err);
  if (fd < 0) return; /* missing, a FIFO, a device, a folder: never a candidate */
  e->real = ddx_file_realpath(fd, e->path);
  e->in_ws = lsp_in_folders(&j->folders, e->real);
  if (!e->real || (uint64_t)e->st.st_size > (uint64_t)DDX_FILE_CAP_CONFIG) {
    close(fd);
    return;
  }
  bool same = old && old->real && !strcmp(old->real, e->real) && lsp_same_file(&old->st, &e->st);
  /* The previous flags, mapped onto this snapshot's printed configs. */
  uint32_t bits = 0;
  bool bits_known = same;
  for (size_t k = 0; same && !extra && k < n->printed.n; k++) {
    long at = lsp_strs_find(&p->printed, n->printed.v[k]);
    if (at < 0)
      bits_known = false;
    else if (old->printed >> at & 1u)
      bits |= 1u << k;
  }
  bool want = extra || e->name_ds || lsp_strs_find(&n->named, ddx_lsp_basename(e->path)) >= 0;
  if (same && !old->text && !extra && bits_known && !want && !old->is_ds && !bits) {
    /* Unchanged and nothing of it can be used: stat'ed, not read. */
    n->nreused++;
    close(fd);
    return;
  }
  const char *data = NULL;
  size_t len = 0;
  char *buf = NULL;
  if (same && old->text) {
    data = old->text->data;
    len = old->text->len;
    n->nreused++;
  } else if ((buf = lsp_read_fd(fd, (size_t)e->st.st_size, &len))) {
    data = buf;
    n->nread++;
  }
  close(fd);
  if (!data) return;
  if (!extra) {
    e->is_ds = same ? old->is_ds : lsp_buf_is_ds(data, len);
    if (same && bits_known) {
      e->printed = bits;
    } else {
      for (size_t k = 0; k < n->printed.n; k++)
        if (ddx_lsp_cfg_matches_print(data, len, n->printed.v[k])) e->printed |= 1u << k;
    }
  }
  bool keep = want || e->is_ds || e->printed;
  if (keep && *kept + len > LSP_CFG_KEEP_BYTES) {
    keep = false;
    n->ndropped++;
  }
  if (keep && !buf) {
    e->text = old->text; /* referenced by the loop when the job is done */
    e->borrowed = true;
  } else if (keep) {
    e->text = ddx_lsp_text_new(buf, len);
  }
  if (e->text) *kept += len;
  free(buf);
}

static void lsp_cfg_work(uv_work_t *req) {
  lsp_cfgjob_t *j = req->data;
  lsp_cfgsnap_t *n = j->snap;
  const lsp_cfgsnap_t *p = j->prev;
  size_t kept = 0;
  for (size_t i = 0; i < n->docs.n && !atomic_load(&j->cancel); i++)
    n->doc_real[i] = realpath(n->docs.v[i], NULL);
  for (size_t i = 0; i < n->nextra && !atomic_load(&j->cancel); i++)
    lsp_cfg_load(j, &n->extra[i], p ? lsp_ent_find(p->extra, p->nextra, i, n->extra[i].path) : NULL,
                 true, &kept);
  lsp_strs_t all = {0};
  for (size_t f = 0; f < j->folders.n && !atomic_load(&j->cancel); f++) {
    lsp_strs_t v = {0};
    lsp_list_json_rec(j->folders.v[f], 0, &v, &j->cancel);
    if (v.n) qsort(v.v, v.n, sizeof *v.v, lsp_cmp_str);
    for (size_t k = 0; k < v.n; k++)
      lsp_strs_take(&all, v.v[k]);
    free(v.v);
  }
  n->ws = all.n ? calloc(all.n, sizeof *n->ws) : NULL;
  bool *want = all.n ? calloc(all.n, sizeof *want) : NULL;
  for (size_t i = 0; i < all.n; i++) {
    if (!n->ws || !want) {
      free(all.v[i]);
      continue;
    }
    lsp_cfgent_t *e = &n->ws[n->nws++];
    e->path = all.v[i];
    e->name_ds = lsp_name_is_ds(ddx_lsp_basename(e->path));
    want[i] = e->name_ds || lsp_strs_find(&n->named, ddx_lsp_basename(e->path)) >= 0;
  }
  free(all.v);
  if (!want) n->nws = 0;
  /* First the files the search takes by name; the others only when the
   * search can reach them: by content (no readable ds-named file inside
   * the workspace) or by the values a log printed. The rest is never
   * opened. */
  bool by_content = true;
  for (int pass = 0; pass < 2; pass++) {
    for (size_t i = 0; i < n->nws && !atomic_load(&j->cancel); i++) {
      lsp_cfgent_t *e = &n->ws[i];
      if (want[i] == (pass == 0) && (pass == 0 || by_content || n->printed.n))
        lsp_cfg_load(j, e, p ? lsp_ent_find(p->ws, p->nws, i, e->path) : NULL, false, &kept);
      if (pass == 0 && e->name_ds && e->in_ws && e->text) by_content = false;
    }
  }
  free(want);
}

/* ---------------------------------------------------- loop: what logs name */

/* Paths the log names as its DeepSpeed config: launcher flags, HF
 * TrainingArguments printed as a repr (deepspeed=X) or as JSON / a dict
 * ("deepspeed": "X", 'deepspeed': 'X'). */
static size_t lsp_log_paths(const ddx_lsp_text_t *t, char out[][512], size_t max) {
  static const char *const flags[] = {"--deepspeed_config", "--deepspeed",
                                      "deepspeed=", "\"deepspeed\":", "'deepspeed':"};
  size_t n = 0;
  for (size_t f = 0; f < sizeof flags / sizeof *flags && n < max; f++) {
    const char *p = t->data, *end = t->data + t->len;
    size_t k = strlen(flags[f]);
    while (n < max && (p = memmem(p, (size_t)(end - p), flags[f], k))) {
      const char *q = p + k;
      p = q;
      if (f < 2) {
        if (q < end && *q == '_') continue; /* --deepspeed_config seen as --deepspeed */
        if (q >= end || (*q != ' ' && *q != '=')) continue;
        q++;
      }
      while (q < end && *q == ' ')
        q++;
      if (q < end && (*q == '"' || *q == '\'')) q++;
      const char *e = q;
      while (e < end && !strchr(" \t\r\n\"',;)]}", *e))
        e++;
      size_t len = (size_t)(e - q);
      if (len < 6 || len >= 512 || *q == '-' || !memmem(q, len, ".json", 5)) continue;
      memcpy(out[n], q, len);
      out[n][len] = 0;
      bool dup = false;
      for (size_t i = 0; i < n && !dup; i++)
        dup = !strcmp(out[i], out[n]);
      if (!dup) n++;
    }
  }
  return n;
}

/* The log's named paths, found once per text (in memory). */
static bool lsp_log_named(ddx_lsp_doc_t *log) {
  if (log->named_of != log->text) {
    if (!log->named && !(log->named = malloc(8 * sizeof *log->named))) return false;
    log->nnamed = lsp_log_paths(log->text, log->named, 8);
    ddx_lsp_text_unref(log->named_of);
    log->named_of = ddx_lsp_text_ref(log->text);
  }
  return true;
}

/* The candidate path of named path i for base b (0: absolute, 1: the log's
 * folder, 2+: workspace folder b-2), empty when b does not apply. */
static void lsp_named_cand(const ddx_lsp_server_t *s, const ddx_lsp_doc_t *log, size_t i, size_t b,
                           ddx_sb_t *cand) {
  const char *named = log->named[i];
  if (b == 0 && named[0] == '/') {
    ddx_sb_puts(cand, named);
  } else if (b == 1 && named[0] != '/' && log->path) {
    const char *slash = strrchr(log->path, '/');
    ddx_sb_printf(cand, "%.*s/%s", slash ? (int)(slash - log->path) : 1, slash ? log->path : ".",
                  named);
  } else if (b >= 2 && named[0] != '/') {
    ddx_sb_printf(cand, "%s/%s", s->ws.folders[b - 2], named);
  }
}

/* Adds the log's candidate paths to extra and its named basenames to
 * names. */
static void lsp_log_cands(const ddx_lsp_server_t *s, ddx_lsp_doc_t *log, lsp_strs_t *extra,
                          lsp_strs_t *names) {
  if (!lsp_log_named(log)) return;
  for (size_t i = 0; i < log->nnamed; i++) {
    for (size_t b = 0; b < s->ws.nfolders + 2; b++) {
      ddx_sb_t cand;
      ddx_sb_init(&cand);
      lsp_named_cand(s, log, i, b, &cand);
      if (cand.len) lsp_strs_add(extra, cand.s, LSP_CFG_MAX_EXTRA);
      ddx_sb_free(&cand);
    }
    if (names) lsp_strs_add(names, ddx_lsp_basename(log->named[i]), LSP_CFG_MAX_EXTRA);
  }
}

static const lsp_cfgent_t *lsp_snap_extra(const lsp_cfgsnap_t *n, const char *path) {
  for (size_t i = 0; n && i < n->nextra; i++)
    if (!strcmp(n->extra[i].path, path)) return &n->extra[i];
  return NULL;
}

static bool lsp_str_eq(const char *a, const char *b) {
  return a == b || (a && b && !strcmp(a, b));
}

/* True when the snapshot can answer for this log: built for the current
 * generation and setting, holding the log's named paths and printed
 * config, and (age) completed less than LSP_CFG_FRESH_NS ago. */
static bool lsp_cfg_fresh(ddx_lsp_server_t *s, const lsp_ix_t *ix, ddx_lsp_doc_t *log, bool age) {
  const lsp_cfgsnap_t *n = ix->snap;
  if (!n || n->gen != ix->gen || !lsp_str_eq(n->setting, s->ws.dsconfig_path)) return false;
  if (age && ddx_lsp_now_ns() - n->done_ns > LSP_CFG_FRESH_NS) return false;
  const char *printed = log->result ? log->result->facts.ds_json : NULL;
  if (printed && lsp_strs_find(&n->printed, printed) < 0 && n->printed.n < LSP_CFG_MAX_PRINTED)
    return false;
  lsp_strs_t c = {0};
  lsp_log_cands(s, log, &c, NULL);
  bool ok = true;
  for (size_t i = 0; i < c.n && ok; i++)
    ok = lsp_snap_extra(n, c.v[i]) || n->nextra >= LSP_CFG_MAX_EXTRA;
  lsp_strs_free(&c);
  return ok;
}

/* ----------------------------------------------------- loop: the refresh */

static void lsp_cfgjob_free(lsp_cfgjob_t *j) {
  lsp_strs_free(&j->folders);
  free(j);
}

static void lsp_cfg_answer_pending(ddx_lsp_server_t *s, lsp_ix_t *ix);

static void lsp_cfg_done(uv_work_t *req, int status) {
  lsp_cfgjob_t *j = req->data;
  ddx_lsp_server_t *s = j->s;
  lsp_ix_t *ix = s->cfg_index;
  lsp_cfgsnap_t *n = j->snap;
  /* The texts kept from the previous snapshot take their references here,
   * on the loop thread, before that one may go. */
  for (size_t i = 0; i < n->nws + n->nextra; i++) {
    lsp_cfgent_t *e = i < n->nws ? &n->ws[i] : &n->extra[i - n->nws];
    if (e->borrowed) {
      ddx_lsp_text_ref(e->text);
      e->borrowed = false;
    }
  }
  n->refs = 1;
  n->done_ns = ddx_lsp_now_ns();
  lsp_snap_unref(j->prev);
  bool cancelled = status == UV_ECANCELED || atomic_load(&j->cancel);
  double ms = (double)(n->done_ns - j->start_ns) / 1e6;
  ix->job = NULL;
  lsp_cfgjob_free(j);
  if (cancelled || s->life.exiting || s->life.shutdown) {
    lsp_snap_unref(n);
    return;
  }
  lsp_snap_unref(ix->snap);
  ix->snap = n;
  if (s->life.trace != DDX_LSP_TRACE_OFF)
    ddx_lsp_log(s, DDX_LSP_LOG_DEBUG,
                "config index: %zu workspace JSON files, %zu named paths; %zu read, %zu unchanged, "
                "%zu over the memory limit, in %.1f ms",
                n->nws, n->nextra, n->nread, n->nreused, n->ndropped, ms);
  lsp_cfg_answer_pending(s, ix);
}

/* Starts a refresh unless one is in flight: its inputs are copies of what
 * the loop knows now (first's named paths first, then the other open
 * logs' already found, the setting; their printed configs; the open
 * documents' paths). Returns 0, or -1 when none could be started. */
static int lsp_cfg_refresh(ddx_lsp_server_t *s, lsp_ix_t *ix, ddx_lsp_doc_t *first) {
  if (ix->job) return 0;
  lsp_cfgsnap_t *n = calloc(1, sizeof *n);
  lsp_cfgjob_t *j = n ? calloc(1, sizeof *j) : NULL;
  if (!j) {
    free(n);
    return -1;
  }
  n->refs = 1;
  n->gen = ix->gen;
  lsp_strs_t extra = {0};
  if (first) lsp_log_cands(s, first, &extra, &n->named);
  for (ddx_lsp_doc_t *d = s->docs; d; d = d->next)
    if (d != first && d->kind == DDX_LSP_DOC_LOG && d->named_of == d->text)
      lsp_log_cands(s, d, &extra, &n->named);
  if (s->ws.dsconfig_path) {
    lsp_strs_add(&extra, s->ws.dsconfig_path, LSP_CFG_MAX_EXTRA + 1);
    n->setting = strdup(s->ws.dsconfig_path);
  }
  const char *fp = first && first->result ? first->result->facts.ds_json : NULL;
  if (fp) lsp_strs_add(&n->printed, fp, LSP_CFG_MAX_PRINTED);
  for (ddx_lsp_doc_t *d = s->docs; d; d = d->next) {
    if (d->kind == DDX_LSP_DOC_LOG && d->result && d->result->facts.ds_json)
      lsp_strs_add(&n->printed, d->result->facts.ds_json, LSP_CFG_MAX_PRINTED);
    if (d->path) lsp_strs_add(&n->docs, d->path, LSP_CFG_MAX_DOCS);
  }
  n->doc_real = calloc(n->docs.n + 1, sizeof *n->doc_real);
  n->extra = calloc(extra.n + 1, sizeof *n->extra);
  for (size_t i = 0; n->extra && i < extra.n; i++)
    n->extra[n->nextra++].path = extra.v[i];
  if (!n->extra) lsp_strs_free(&extra);
  free(extra.v);
  for (size_t f = 0; f < s->ws.nfolders; f++)
    lsp_strs_take(&j->folders, strdup(s->ws.folders[f]));
  j->s = s;
  j->req.data = j;
  j->snap = n;
  j->start_ns = ddx_lsp_now_ns();
  atomic_init(&j->cancel, 0);
  j->prev = ix->snap;
  if (j->prev) j->prev->refs++;
  if ((s->ws.dsconfig_path && !n->setting) || !n->doc_real || !n->extra ||
      j->folders.n != s->ws.nfolders ||
      uv_queue_work(&s->loop, &j->req, lsp_cfg_work, lsp_cfg_done)) {
    lsp_snap_unref(j->prev);
    lsp_snap_unref(n);
    lsp_cfgjob_free(j);
    return -1;
  }
  ix->job = j;
  return 0;
}

/* ------------------------------------------------- loop: finding a config */

/* The real path of an open document, as the snapshot took it; a document
 * opened since (not a JSON one: that makes the snapshot stale) by its
 * name, compared without a system call. */
static const char *lsp_doc_real(const lsp_cfgsnap_t *n, const ddx_lsp_doc_t *d) {
  long at = d->path ? lsp_strs_find(&n->docs, d->path) : -1;
  return at >= 0 ? n->doc_real[at] : d->path;
}

/* The candidate e (a file the snapshot opened): the open document of the
 * same real path wins over its bytes on disk. */
static bool lsp_cfg_from_ent(ddx_lsp_server_t *s, const lsp_cfgsnap_t *n, const lsp_cfgent_t *e,
                             const char *how, lsp_cfgsrc_t *out, bool need_ds) {
  if (!e || !e->real) return false;
  char *uri = ddx_lsp_path_to_uri(e->real);
  for (ddx_lsp_doc_t *d = s->docs; d && uri; d = d->next) {
    const char *dreal = d->path ? lsp_doc_real(n, d) : NULL;
    if (dreal && !strcmp(dreal, e->real)) {
      out->uri = strdup(d->uri);
      out->path = strdup(e->real);
      out->text = ddx_lsp_text_ref(d->text);
      out->version = d->version;
      out->open = true;
      out->how = how;
      free(uri);
      return true;
    }
  }
  if (!uri || !e->text || (need_ds && !e->is_ds)) {
    free(uri);
    return false;
  }
  out->uri = uri;
  out->path = strdup(e->real);
  out->text = ddx_lsp_text_ref(e->text);
  out->how = how;
  return true;
}

/* The search (order in the header comment) over the open documents and
 * the snapshot n (NULL: none could be made; only open documents). */
static bool lsp_find_config(ddx_lsp_server_t *s, ddx_lsp_doc_t *log, const lsp_cfgsnap_t *n,
                            lsp_cfgsrc_t *out) {
  /* 1. open documents */
  for (ddx_lsp_doc_t *d = s->docs; d; d = d->next) {
    if (d->kind != DDX_LSP_DOC_JSON) continue;
    if (lsp_name_is_ds(ddx_lsp_basename(d->uri)) || lsp_buf_is_ds(d->text->data, d->text->len)) {
      out->uri = strdup(d->uri);
      out->path = d->path ? strdup(d->path) : NULL;
      out->text = ddx_lsp_text_ref(d->text);
      out->version = d->version;
      out->open = true;
      out->how = "open in the editor";
      return true;
    }
  }
  if (!n) return false;
  /* 2. a path named in the log, relative to the log's folder or a
   * workspace folder; only inside the workspace. */
  if (!lsp_log_named(log)) return false;
  for (size_t i = 0; i < log->nnamed; i++) {
    for (size_t b = 0; b < s->ws.nfolders + 2; b++) {
      ddx_sb_t cand;
      ddx_sb_init(&cand);
      lsp_named_cand(s, log, i, b, &cand);
      const lsp_cfgent_t *e = cand.len ? lsp_snap_extra(n, cand.s) : NULL;
      ddx_sb_free(&cand);
      if (e && e->in_ws && lsp_cfg_from_ent(s, n, e, "named in the log", out, false)) return true;
    }
    /* The launcher ran elsewhere (/workspace/ds_config.json on a pod): the
     * same file name in the workspace is the next best guess. */
    const char *base = ddx_lsp_basename(log->named[i]);
    for (size_t k = 0; k < n->nws; k++)
      if (n->ws[k].in_ws && !strcmp(ddx_lsp_basename(n->ws[k].path), base) &&
          lsp_cfg_from_ent(s, n, &n->ws[k], "named in the log", out, false))
        return true;
  }
  /* 3. the workspace file whose values DeepSpeed printed in the log */
  const char *printed = log->result ? log->result->facts.ds_json : NULL;
  long p = printed ? lsp_strs_find(&n->printed, printed) : -1;
  for (size_t k = 0; p >= 0 && k < n->nws; k++)
    if (n->ws[k].in_ws && (n->ws[k].printed >> p & 1u) &&
        lsp_cfg_from_ent(s, n, &n->ws[k], "printed by DeepSpeed in the log", out, false))
      return true;
  /* 4. workspace files: by name, then by content */
  for (int pass = 0; pass < 2; pass++)
    for (size_t k = 0; k < n->nws; k++) {
      const lsp_cfgent_t *e = &n->ws[k];
      if (e->in_ws && (pass == 0 ? e->name_ds : !e->name_ds) &&
          lsp_cfg_from_ent(s, n, e, "found in the workspace", out, pass == 1))
        return true;
    }
  /* 5. the setting: the one file read wherever it is */
  if (s->ws.dsconfig_path && lsp_cfg_from_ent(s, n, lsp_snap_extra(n, s->ws.dsconfig_path),
                                              "ddx.dsConfig.path", out, false))
    return true;
  return false;
}

/* ------------------------------------------------------------ code actions */

static json_t *lsp_workspace_edit(ddx_lsp_server_t *s, const lsp_cfgsrc_t *cfg,
                                  const ddx_lsp_edit_t *e, size_t n) {
  json_t *edits = json_array();
  for (size_t i = 0; i < n; i++)
    json_array_append_new(
        edits, json_pack("{s:o, s:o}", "range",
                         ddx_lsp_range(cfg->text, s->life.encoding, e[i].start, e[i].end),
                         "newText", ddx_lsp_jstr(e[i].text, strlen(e[i].text))));
  if (s->life.cap_doc_changes) {
    json_t *ver = cfg->open ? json_integer(cfg->version) : json_null();
    return json_pack("{s:[{s:{s:s, s:o}, s:o}]}", "documentChanges", "textDocument", "uri",
                     cfg->uri, "version", ver, "edits", edits);
  }
  json_t *changes = json_object();
  json_object_set_new(changes, cfg->uri, edits);
  return json_pack("{s:o}", "changes", changes);
}

/* The context of one log code action: the config found, parsed for the
 * planner and as a tree for the memory model, the memory model's inputs,
 * the offers made (to choose the preferred one) and the first reason a
 * rung was refused (said when none applies). */
#define LSP_MAX_OFFERS 64

typedef struct lsp_offer {
  json_t *action; /* borrowed from out */
  int rung;       /* its place in the ladders, cheapest first */
  int enough;     /* 1 the saving covers the shortfall, 0 it does not, -1 unknown */
  double saved;   /* the low end of the saving, bytes (0 unknown) */
} lsp_offer_t;

typedef struct lsp_actx {
  ddx_lsp_server_t *s;
  const ddx_lsp_result_t *log;
  const lsp_cfgsrc_t *cfg;
  const char *name; /* the config's file name */
  ddx_lsp_cfg_t *c; /* the planner's parse */
  json_t *tree;     /* the memory model's (jansson), or NULL */
  ddx_mem_inputs_t in;
  ddx_lsp_mem_src_t src;
  json_t *out;
  lsp_offer_t offers[LSP_MAX_OFFERS];
  size_t noffers;
  int rung;
  lsp_strs_t ids;         /* patch ids offered or refused already (one per id) */
  const char *pid;        /* the config patch being offered (its id goes in data.patch) */
  char first_reason[600]; /* the first refusal, for "no quick fix applies" */
  size_t nrefused;
} lsp_actx_t;

/* A rung that does not apply: a disabled code action with the reason
 * (LSP 3.16 disabled.reason) for clients that show them; the first reason
 * is kept for the summary a client without them gets. */
static void lsp_refuse(lsp_actx_t *x, const char *title, const char *reason, json_t *diag) {
  if (!x->first_reason[0]) snprintf(x->first_reason, sizeof x->first_reason, "%s", reason);
  x->nrefused++;
  if (!x->s->life.cap_disabled) return;
  json_t *a = json_pack("{s:o, s:s, s:{s:o}}", "title", ddx_lsp_jstr(title, strlen(title)), "kind",
                        "quickfix", "disabled", "reason", ddx_lsp_jstr(reason, strlen(reason)));
  if (diag) json_object_set_new(a, "diagnostics", json_pack("[O]", diag));
  if (x->pid) json_object_set_new(a, "data", json_pack("{s:s}", "patch", x->pid));
  json_array_append_new(x->out, a);
}

/* What a rung saves when the model is unknown: a share, never a number
 * the server does not have. */
static const char *lsp_share(json_t *patch, const char *flags) {
  const char *path =
      json_string_value(json_object_get(json_array_get(json_object_get(patch, "ops"), 0), "path"));
  if (!path) path = "";
  if ((flags && strstr(flags, "--gradient_checkpointing")) ||
      strstr(path, "activation_checkpointing"))
    return "keeps ~2·s·b·h bytes per layer of the ~34·s·b·h or more: most activations";
  if (!strcmp(path, "train_micro_batch_size_per_gpu") || (flags && strstr(flags, "batch_size")))
    return "~halves activations";
  if (strstr(path, "offload_optimizer"))
    return "moves the optimizer states and the fp32 master copy (12 bytes per parameter, "
           "partitioned) to CPU memory";
  if (strstr(path, "offload_param")) return "moves the 16-bit parameter partition to CPU memory";
  if (!strcmp(path, "zero_optimization.stage"))
    return "partitions the 16-bit parameters too (2 bytes per parameter, over the ranks)";
  if (strstr(path, "bf16") || (flags && strstr(flags, "--bf16")))
    return "~halves activations (2 bytes instead of 4)";
  if (strstr(path, "prefetch_bucket")) return "a smaller prefetch buffer (2 bytes a parameter)";
  if (strstr(path, "max_live_parameters"))
    return "at most 1e8 gathered parameters alive (2 bytes each)";
  if (strstr(path, "persistence_threshold")) return "small gathered parameters are released";
  if (strstr(path, "contiguous_gradients")) return "less fragmentation, not fewer bytes";
  return "share unknown";
}

static double lsp_gib(double b) {
  return b / 1073741824.0;
}

/* The saving of a rung into buf ("saves ~22.0 GiB per GPU, enough"); the
 * return says whether it is enough (1, 0, -1 unknown). patch: the rung;
 * flags: its Trainer flags when it is not an edit. */
static int lsp_saving(lsp_actx_t *x, json_t *patch, const char *patch_json, const char *flags,
                      double short_by, double in_use, double *saved, char *buf, size_t cap) {
  *saved = 0;
  bool have_model = x->in.model.hidden > 0 || x->in.model.params > 0;
  double lo = 0, hi = 0;
  bool ok = false;
  const char *why_unknown = NULL;
  ddx_mem_estimate_t a, b;
  if (!have_model) {
    why_unknown = "the model is unknown: set ddx.memory.modelConfig to its config.json";
  } else if (!x->tree) {
    why_unknown = "the config is not a JSON object";
  } else if (!flags) {
    ok = ddx_mem_patch_saving(x->tree, patch_json, &x->in, &b, &lo, &hi) && b.valid;
    if (!ok) why_unknown = b.missing[0] ? b.missing : "the memory model cannot price this fix";
  } else {
    /* the Trainer's flags: the estimate with and without what they change */
    ddx_mem_inputs_t i0 = x->in, i1 = x->in;
    json_t *t0 = json_deep_copy(x->tree), *t1 = json_deep_copy(x->tree);
    bool can = t0 && t1;
    long long m1 = 0;
    const char *mb = strstr(flags, "--per_device_train_batch_size ");
    if (strstr(flags, "--gradient_checkpointing")) {
      i0.checkpointing = 0;
      i1.checkpointing = 1;
    }
    if (mb) {
      m1 = atoll(mb + strlen("--per_device_train_batch_size "));
      if (m1 <= 0 || x->log->facts.micro_batch <= 0) {
        can = false;
        why_unknown = "the log does not say the micro batch";
      }
      i0.micro_batch = (double)x->log->facts.micro_batch;
      i1.micro_batch = (double)m1;
    }
    if (strstr(flags, "--bf16")) { /* from fp32, the state the rung is for */
      json_object_set_new(t0, "bf16", json_pack("{s:b}", "enabled", 0));
      json_object_set_new(t0, "fp16", json_pack("{s:b}", "enabled", 0));
      json_object_set_new(t1, "bf16", json_pack("{s:b}", "enabled", 1));
      json_object_set_new(t1, "fp16", json_pack("{s:b}", "enabled", 0));
    }
    ddx_error_t err = {0};
    if (can && ddx_mem_estimate(t0, &i0, &a, &err) == 0 &&
        ddx_mem_estimate(t1, &i1, &b, &err) == 0 && a.valid && b.valid) {
      lo = a.peak_lo - b.peak_lo;
      hi = a.peak_hi - b.peak_hi;
      if (lo > hi) {
        double t = lo;
        lo = hi;
        hi = t;
      }
      ok = true;
    } else if (!why_unknown) {
      why_unknown = b.missing[0] ? b.missing : "the memory model cannot price this fix";
    }
    json_decref(t0);
    json_decref(t1);
  }
  if (!ok) {
    snprintf(buf, cap, "saving unknown (%s): %s", why_unknown ? why_unknown : "no estimate",
             lsp_share(patch, flags));
    return -1;
  }
  /* no fix frees more than the run had on the GPU when it failed */
  if (in_use > 0 && hi > in_use) hi = in_use;
  if (in_use > 0 && lo > in_use) lo = in_use;
  *saved = lo;
  char amount[96];
  if (hi <= 0.05 * 1073741824.0 && lo > -0.05 * 1073741824.0)
    snprintf(amount, sizeof amount, "saves ~0 GiB per GPU");
  else if (hi < 0)
    snprintf(amount, sizeof amount, "costs ~%.1f GiB per GPU", lsp_gib(-lo));
  else if (hi - lo < 0.05 * hi || hi - lo < 0.1 * 1073741824.0)
    snprintf(amount, sizeof amount, "saves ~%.1f GiB per GPU", lsp_gib((lo + hi) / 2));
  else
    snprintf(amount, sizeof amount, "saves ~%.1f-%.1f GiB per GPU", lsp_gib(lo > 0 ? lo : 0),
             lsp_gib(hi));
  if (short_by < 0) {
    snprintf(buf, cap, "%s (the OOM line does not say how much was missing)", amount);
    return -1;
  }
  if (lo >= short_by) {
    snprintf(buf, cap, "%s, enough", amount);
    return 1;
  }
  if (hi >= short_by)
    snprintf(buf, cap, "%s, maybe enough (%.2f GiB were missing)", amount, lsp_gib(short_by));
  else
    snprintf(buf, cap, "%s, not enough (%.2f GiB were missing)", amount, lsp_gib(short_by));
  return 0;
}

static void lsp_offer(lsp_actx_t *x, json_t *a, int enough, double saved) {
  /* data.patch: the rule's config patch this action applies, so a client pairs the action
   * with the report's patch by id, not by title */
  if (x->pid) json_object_set_new(a, "data", json_pack("{s:s}", "patch", x->pid));
  json_array_append_new(x->out, a);
  if (x->noffers < LSP_MAX_OFFERS)
    x->offers[x->noffers++] =
        (lsp_offer_t){.action = a, .rung = x->rung, .enough = enough, .saved = saved};
}

/* The name of a rung for a flag action: its title up to ':' or " (". */
static void lsp_short_title(const char *title, char *buf, size_t cap) {
  size_t n = strcspn(title, ":(");
  while (n && title[n - 1] == ' ')
    n--;
  snprintf(buf, cap, "%.*s", (int)n, title);
}

/* Actions for one rule's config_patches against the config found (or the
 * reason there is none). Each rung is, in this order: the HF Trainer's
 * flags when the change is the Trainer's (its keys are "auto", or it is
 * activation checkpointing in the Trainer's config), an edit of the
 * config, or refused with the reason. */
static void lsp_rule_actions(lsp_actx_t *x, const ddx_rule_t *rule, json_t *diag, bool have_cfg) {
  ddx_lsp_server_t *s = x->s;
  json_t *patches = json_loads(rule->config_patches_json, 0, NULL);
  if (!json_is_array(patches) || !json_array_size(patches)) {
    json_decref(patches);
    return;
  }
  char title[1200], why[2048], saving[400];
  if (!have_cfg) {
    snprintf(title, sizeof title, "ddx: fix %s in ds_config.json", rule->id);
    lsp_refuse(x, title,
               "no DeepSpeed config found: open your ds_config.json, or set ddx.dsConfig.path "
               "(the log names none inside the workspace folders)",
               diag);
    json_decref(patches);
    return;
  }
  if (!x->c) {
    snprintf(title, sizeof title, "ddx: fix %s in %s", rule->id, x->name);
    char reason[2600];
    snprintf(reason, sizeof reason, "%s cannot be edited safely: %s", x->name, x->first_reason);
    lsp_refuse(x, title, reason, diag);
    json_decref(patches);
    return;
  }
  /* how far off the OOM was: tried - free of this rule's incident */
  double short_by = -1, in_use = 0;
  for (size_t k = 0; x->log && k < x->log->diag.n && short_by < 0; k++) {
    ddx_oom_t oom;
    if (x->log->diag.incidents[k].rule == rule &&
        ddx_report_oom(&x->log->diag.incidents[k], &oom)) {
      short_by = oom.short_by;
      in_use = oom.allocated > 0 ? oom.allocated + (oom.unallocated > 0 ? oom.unallocated : 0)
               : oom.total > 0   ? oom.total - (oom.free > 0 ? oom.free : 0)
                                 : 0;
    }
  }
  size_t i;
  json_t *p;
  json_array_foreach(patches, i, p) {
    const char *pid = json_string_value(json_object_get(p, "id"));
    if (pid && lsp_strs_find(&x->ids, pid) >= 0) continue; /* offered for another OOM class */
    if (pid) lsp_strs_add(&x->ids, pid, 1024);
    x->pid = pid;
    x->rung++;
    const char *ptitle = json_string_value(json_object_get(p, "title"));
    if (!ptitle) ptitle = "apply the fix";
    char *pj = json_dumps(p, JSON_COMPACT);
    if (!pj) continue;
    char *flags = NULL;
    bool exact = true;
    double saved;
    char hfwhy[2048];
    if (ddx_lsp_cfg_plan_hf(x->c, pj, &x->log->facts, &flags, &exact, hfwhy, sizeof hfwhy) == 0) {
      /* A code action with a command, not an edit: the flags live in the
       * launch command (a shell script, a notebook, a job spec) that the
       * server does not know, so there is no file to put in a
       * WorkspaceEdit, and an action with neither an edit nor a command
       * does nothing when chosen. ddx.showFix shows the exact flags
       * (window/showMessage) and returns them for a client to copy; the
       * title names them, so the flag is read without running it. */
      int enough = lsp_saving(x, p, pj, flags, short_by, in_use, &saved, saving, sizeof saving);
      char name[200], message[1600];
      bool ckpt = strstr(flags, "--gradient_checkpointing") != NULL;
      if (ckpt)
        snprintf(name, sizeof name, "Activation checkpointing");
      else
        lsp_short_title(ptitle, name, sizeof name);
      const char *where =
          ckpt ? "a Hugging Face model checkpoints with the Trainer's flag; ds_config's "
                 "activation_checkpointing takes effect only where the model calls "
                 "deepspeed.checkpointing.checkpoint"
               : "its ds_config keys are \"auto\": the HF Trainer fills them from these flags";
      snprintf(title, sizeof title, "ddx: %s: run with %s: %s", name, flags, saving);
      snprintf(message, sizeof message, "ddx (%s): add to the training command: %s%s (%s; %s)",
               rule->id, flags, exact ? "" : " with your values in place of <...>", where, saving);
      json_t *a = json_pack("{s:o, s:s, s:{s:s, s:s, s:[{s:o, s:o}]}}", "title",
                            ddx_lsp_jstr(title, strlen(title)), "kind", "quickfix", "command",
                            "title", "Show the flags", "command", "ddx.showFix", "arguments",
                            "message", ddx_lsp_jstr(message, strlen(message)), "copy",
                            ddx_lsp_jstr(flags, strlen(flags)));
      if (diag) json_object_set_new(a, "diagnostics", json_pack("[O]", diag));
      lsp_offer(x, a, enough, saved);
      free(flags);
      free(pj);
      continue;
    }
    ddx_lsp_edit_t *edits = NULL;
    size_t nedits = 0;
    char *ptitle2 = NULL;
    int rc = ddx_lsp_cfg_plan(x->c, pj, &edits, &nedits, &ptitle2, why, sizeof why);
    const char *shown = ptitle2 ? ptitle2 : ptitle;
    if (rc == 0 && nedits) {
      int enough = lsp_saving(x, p, pj, NULL, short_by, in_use, &saved, saving, sizeof saving);
      char hf[400] = "", also[500] = "";
      if (ddx_lsp_cfg_hf_flags_after(x->c, edits, nedits, hf, sizeof hf))
        snprintf(also, sizeof also, "; also run with %s (the HF Trainer checks they match)", hf);
      snprintf(title, sizeof title, "ddx: %s (%s): %s%s", shown, x->name, saving, also);
      json_t *a = json_pack("{s:o, s:s, s:o}", "title", ddx_lsp_jstr(title, strlen(title)), "kind",
                            "quickfix", "edit", lsp_workspace_edit(s, x->cfg, edits, nedits));
      if (diag) json_object_set_new(a, "diagnostics", json_pack("[O]", diag));
      lsp_offer(x, a, enough, saved);
    } else {
      snprintf(title, sizeof title, "ddx: %s (%s)", shown, x->name);
      char reason[4200];
      /* the planner's reason; the Trainer's only when it says more */
      if (rc && strstr(why, "\"auto\"") && !strstr(hfwhy, "not the HF Trainer's: the config"))
        snprintf(reason, sizeof reason, "%s; %s", why, hfwhy);
      else
        snprintf(reason, sizeof reason, "%s", rc ? why : "the fix changes nothing in this config");
      lsp_refuse(x, title, reason, diag);
    }
    ddx_lsp_edits_free(edits, nedits);
    free(ptitle2);
    free(pj);
  }
  x->pid = NULL; /* it points into patches */
  json_decref(patches);
}

/* The preferred fix: the cheapest rung (ladder order) whose saving is
 * enough; when the savings are known and none is enough, the one that
 * saves most; when they are unknown, the cheapest rung. */
static void lsp_prefer(lsp_actx_t *x) {
  const lsp_offer_t *best = NULL;
  for (size_t i = 0; i < x->noffers && !best; i++)
    if (x->offers[i].enough == 1) best = &x->offers[i];
  for (size_t i = 0; i < x->noffers && !best; i++)
    if (x->offers[i].enough == 0) best = &x->offers[i];
  if (best && best->enough == 0)
    for (size_t i = 0; i < x->noffers; i++)
      if (x->offers[i].enough == 0 && x->offers[i].saved > best->saved) best = &x->offers[i];
  if (!best && x->noffers) best = &x->offers[0];
  if (best) json_object_set_new(best->action, "isPreferred", json_true());
}

static void lsp_disabled(ddx_lsp_server_t *s, json_t *out, const char *title, const char *reason,
                         json_t *diag) {
  if (!s->life.cap_disabled) return; /* a client that cannot show why gets nothing */
  json_t *a = json_pack("{s:o, s:s, s:{s:o}}", "title", ddx_lsp_jstr(title, strlen(title)), "kind",
                        "quickfix", "disabled", "reason", ddx_lsp_jstr(reason, strlen(reason)));
  if (diag) json_object_set_new(a, "diagnostics", json_pack("[O]", diag));
  json_array_append_new(out, a);
}

/* Quick fixes of a ds_config document's own diagnostics: the findings with
 * a patch whose range meets [a, b], or those of the diagnostics sent. */
static void lsp_config_actions(ddx_lsp_server_t *s, ddx_lsp_doc_t *d, size_t a, size_t b,
                               json_t *ctx, json_t *out) {
  /* a JSON document that is no DeepSpeed config has no findings to fix:
   * not re-checked at every cursor move */
  if (!d->cfg_published && !ddx_lsp_cfg_doc_is_ds(d, NULL)) return;
  const ddx_dscheck_t *schema =
      d->text->len <= DDX_LSP_CFG_MAX_BYTES ? ddx_lsp_cfg_schema(s) : NULL;
  if (!schema) return;
  ddx_dscheck_facts_t f;
  ddx_lsp_cfg_src_t src;
  ddx_lsp_cfg_facts(s, &f, &src);
  ddx_dscheck_result_t r;
  ddx_error_t err = {0};
  if (ddx_dscheck_run(schema, d->text->data, d->text->len, &f, &r, &err)) {
    ddx_dscheck_result_free(&r);
    return;
  }
  json_t *sent = json_object_get(ctx, "diagnostics");
  lsp_cfgsrc_t cfg = {.uri = d->uri,
                      .path = d->path,
                      .text = d->text,
                      .version = d->version,
                      .open = true,
                      .how = "open in the editor"};
  ddx_lsp_cfg_t *c = NULL;
  char why[2048] = "";
  bool parsed = false;
  for (size_t i = 0; i < r.n; i++) {
    const ddx_dscheck_finding_t *x = &r.findings[i];
    if (!x->patch_json) continue;
    json_t *match = NULL;
    size_t k;
    json_t *dg;
    json_array_foreach(sent, k, dg) {
      const char *code = json_string_value(json_object_get(dg, "code"));
      json_t *rs = json_object_get(json_object_get(dg, "range"), "start");
      size_t l, ch;
      if (code && !strcmp(code, x->code) && ddx_lsp_get_position(rs, &l, &ch) &&
          ddx_lsp_offset(d->text, s->life.encoding, l, ch) == x->start)
        match = dg;
    }
    if (!match && (x->end < a || x->start > b)) continue;
    if (!parsed) {
      parsed = true;
      c = ddx_lsp_cfg_parse(d->text->data, d->text->len, why, sizeof why);
    }
    json_t *p = json_loads(x->patch_json, 0, NULL);
    const char *ptitle = json_string_value(json_object_get(p, "title"));
    char title[600];
    snprintf(title, sizeof title, "ddx: %s", ptitle ? ptitle : "rename the key");
    json_decref(p);
    ddx_lsp_edit_t *edits = NULL;
    size_t nedits = 0;
    char *t2 = NULL;
    char pwhy[2048];
    if (!c) {
      char reason[2200];
      snprintf(reason, sizeof reason, "this file cannot be edited safely: %s", why);
      lsp_disabled(s, out, title, reason, match);
    } else if (ddx_lsp_cfg_plan(c, x->patch_json, &edits, &nedits, &t2, pwhy, sizeof pwhy) == 0 &&
               nedits) {
      json_t *act = json_pack("{s:o, s:s, s:o, s:b}", "title", ddx_lsp_jstr(title, strlen(title)),
                              "kind", "quickfix", "edit",
                              lsp_workspace_edit(s, &cfg, edits, nedits), "isPreferred", 1);
      if (match) json_object_set_new(act, "diagnostics", json_pack("[O]", match));
      json_array_append_new(out, act);
    } else {
      lsp_disabled(s, out, title, pwhy, match);
    }
    ddx_lsp_edits_free(edits, nedits);
    free(t2);
  }
  ddx_lsp_cfg_free(c);
  ddx_dscheck_result_free(&r);
}

/* The code action itself; may_defer: a request whose snapshot is stale
 * waits for a refresh (NULL returned, call->deferred set). */
static json_t *lsp_code_action_run(ddx_lsp_server_t *s, json_t *params, ddx_lsp_call_t *call,
                                   bool may_defer);

json_t *ddx_lsp_code_action(ddx_lsp_server_t *s, json_t *params, ddx_lsp_call_t *call) {
  return lsp_code_action_run(s, params, call, true);
}

/* Defers the request to the next refresh (started here if none is in
 * flight). False when no refresh can be started: answer now. */
static bool lsp_cfg_defer(ddx_lsp_server_t *s, lsp_ix_t *ix, ddx_lsp_doc_t *log, json_t *params,
                          ddx_lsp_call_t *call) {
  if (!call->id || lsp_cfg_refresh(s, ix, log)) return false;
  lsp_pending_t *p = calloc(1, sizeof *p);
  if (!p) return false;
  p->id = json_incref(call->id);
  p->params = json_incref(params);
  lsp_pending_t **pp = &ix->pending;
  while (*pp)
    pp = &(*pp)->next;
  *pp = p;
  call->deferred = true;
  return true;
}

static void lsp_pending_free(lsp_pending_t *p) {
  json_decref(p->id);
  json_decref(p->params);
  free(p);
}

static void lsp_pending_answer(ddx_lsp_server_t *s, lsp_pending_t *p) {
  ddx_lsp_call_t call = {.id = p->id};
  json_t *r = lsp_code_action_run(s, p->params, &call, false);
  if (r)
    ddx_lsp_reply(s, p->id, r);
  else
    ddx_lsp_reply_error(s, p->id, call.code ? call.code : DDX_LSP_INTERNAL_ERROR,
                        call.msg[0] ? call.msg : "internal error");
  lsp_pending_free(p);
}

/* The log a pending request is for, while it still needs the index. */
static ddx_lsp_doc_t *lsp_pending_log(ddx_lsp_server_t *s, const lsp_pending_t *p) {
  const char *uri =
      json_string_value(json_object_get(json_object_get(p->params, "textDocument"), "uri"));
  ddx_lsp_doc_t *d = uri ? ddx_lsp_doc_find(s, uri) : NULL;
  return d && d->kind == DDX_LSP_DOC_LOG && d->result ? d : NULL;
}

/* A refresh completed: the requests it can answer are answered (in
 * arrival order); the others (invalidated meanwhile, a log that names a
 * path it lacks) wait for the next one, at most LSP_CFG_MAX_WAITS. */
static void lsp_cfg_answer_pending(ddx_lsp_server_t *s, lsp_ix_t *ix) {
  lsp_pending_t *list = ix->pending, **tail = &ix->pending;
  ix->pending = NULL;
  while (list) {
    lsp_pending_t *p = list;
    list = p->next;
    p->next = NULL;
    p->waits++;
    ddx_lsp_doc_t *d = lsp_pending_log(s, p);
    if (!d || p->waits >= LSP_CFG_MAX_WAITS || lsp_cfg_fresh(s, ix, d, false)) {
      lsp_pending_answer(s, p);
    } else {
      *tail = p;
      tail = &p->next;
    }
  }
  if (ix->pending && lsp_cfg_refresh(s, ix, lsp_pending_log(s, ix->pending))) {
    while (ix->pending) { /* no refresh can start: answered from what there is */
      lsp_pending_t *p = ix->pending;
      ix->pending = p->next;
      lsp_pending_answer(s, p);
    }
  }
}

void ddx_lsp_actions_invalidate(ddx_lsp_server_t *s) {
  if (s->cfg_index) s->cfg_index->gen++;
}

void ddx_lsp_actions_doc_event(ddx_lsp_server_t *s, const ddx_lsp_doc_t *d) {
  if (d->kind == DDX_LSP_DOC_JSON || lsp_name_is_json(ddx_lsp_basename(d->uri)) ||
      (d->path && lsp_name_is_json(ddx_lsp_basename(d->path))))
    ddx_lsp_actions_invalidate(s);
}

bool ddx_lsp_actions_cancel(ddx_lsp_server_t *s, json_t *id) {
  lsp_ix_t *ix = s->cfg_index;
  for (lsp_pending_t **pp = ix ? &ix->pending : NULL; pp && *pp; pp = &(*pp)->next) {
    lsp_pending_t *p = *pp;
    if (json_equal(p->id, id)) {
      *pp = p->next;
      ddx_lsp_reply_error(s, p->id, DDX_LSP_REQUEST_CANCELLED, "request cancelled");
      lsp_pending_free(p);
      return true;
    }
  }
  return false;
}

void ddx_lsp_actions_cancel_all(ddx_lsp_server_t *s, const char *why) {
  lsp_ix_t *ix = s->cfg_index;
  if (!ix) return;
  while (ix->pending) {
    lsp_pending_t *p = ix->pending;
    ix->pending = p->next;
    ddx_lsp_reply_error(s, p->id, DDX_LSP_REQUEST_CANCELLED, why);
    lsp_pending_free(p);
  }
  if (ix->job) {
    atomic_store(&ix->job->cancel, 1);
    uv_cancel((uv_req_t *)&ix->job->req); /* only succeeds before it started */
  }
}

void ddx_lsp_actions_free(ddx_lsp_server_t *s) {
  lsp_ix_t *ix = s->cfg_index;
  if (!ix) return;
  while (ix->pending) {
    lsp_pending_t *p = ix->pending;
    ix->pending = p->next;
    lsp_pending_free(p);
  }
  lsp_snap_unref(ix->snap);
  /* The loop ran until every job was done: none is in flight. */
  free(ix);
  s->cfg_index = NULL;
}

static json_t *lsp_code_action_run(ddx_lsp_server_t *s, json_t *params, ddx_lsp_call_t *call,
                                   bool may_defer) {
  const char *uri =
      json_string_value(json_object_get(json_object_get(params, "textDocument"), "uri"));
  json_t *range = json_object_get(params, "range");
  size_t l0, c0, l1, c1;
  if (!uri || !ddx_lsp_get_position(json_object_get(range, "start"), &l0, &c0) ||
      !ddx_lsp_get_position(json_object_get(range, "end"), &l1, &c1))
    return ddx_lsp_fail(call, DDX_LSP_INVALID_PARAMS,
                        "codeAction needs textDocument.uri and a range");
  json_t *ctx = json_object_get(params, "context");
  json_t *only = json_object_get(ctx, "only");
  json_t *out = json_array();
  if (json_is_array(only) && json_array_size(only)) {
    bool quick = false;
    size_t i;
    json_t *k;
    json_array_foreach(only, i, k) if (json_is_string(k) &&
                                       !strncmp(json_string_value(k), "quickfix", 8)) quick = true;
    if (!quick) return out;
  }
  ddx_lsp_doc_t *d = ddx_lsp_doc_find(s, uri);
  if (d && d->kind == DDX_LSP_DOC_JSON) {
    lsp_config_actions(s, d, ddx_lsp_offset(d->text, s->life.encoding, l0, c0),
                       ddx_lsp_offset(d->text, s->life.encoding, l1, c1), ctx, out);
    return out;
  }
  if (!d || d->kind != DDX_LSP_DOC_LOG || !d->result) return out;
  ddx_lsp_result_t *r = d->result;
  /* The rules: those of ddx diagnostics in the context, else those of the
   * incidents whose initiating line lies in the range. */
  const ddx_rule_t *rules[32];
  json_t *diags[32];
  size_t nr = 0;
  size_t i;
  json_t *dg;
  json_array_foreach(json_object_get(ctx, "diagnostics"), i, dg) {
    const char *src = json_string_value(json_object_get(dg, "source"));
    const char *code = json_string_value(json_object_get(dg, "code"));
    if (!src || strcmp(src, "ddx") || !code || nr == 32) continue;
    const ddx_rule_t *rule = ddx_catalog_find(r->cat->cat, code);
    bool dup = false;
    for (size_t k = 0; k < nr && !dup; k++)
      dup = rules[k] == rule;
    if (rule && !dup) {
      rules[nr] = rule;
      diags[nr++] = dg;
    }
  }
  if (!nr) {
    for (size_t k = 0; k < r->diag.n && nr < 32; k++) {
      const ddx_incident_t *inc = &r->diag.incidents[k];
      if (inc->hit && inc->hit->line >= l0 + 1 && inc->hit->line <= l1 + 1) {
        rules[nr] = inc->rule;
        diags[nr++] = NULL;
      }
    }
  }
  bool any_patches = false;
  for (size_t k = 0; k < nr; k++)
    any_patches |= rules[k]->config_patches_json != NULL;
  if (!any_patches) return out;
  /* The config comes from the index; a stale one is refreshed first. */
  lsp_ix_t *ix = lsp_ix(s);
  if (may_defer && ix && !lsp_cfg_fresh(s, ix, d, true) && lsp_cfg_defer(s, ix, d, params, call)) {
    json_decref(out);
    return NULL;
  }
  lsp_cfgsrc_t cfg = {0};
  bool have = lsp_find_config(s, d, ix ? ix->snap : NULL, &cfg);
  lsp_actx_t *x = calloc(1, sizeof *x);
  if (!x) {
    lsp_cfgsrc_clear(&cfg);
    return out;
  }
  x->s = s;
  x->log = r;
  x->cfg = &cfg;
  x->out = out;
  if (have) {
    x->name = cfg.path ? ddx_lsp_basename(cfg.path) : ddx_lsp_basename(cfg.uri);
    x->c =
        ddx_lsp_cfg_parse(cfg.text->data, cfg.text->len, x->first_reason, sizeof x->first_reason);
    if (x->c) {
      x->first_reason[0] = 0;
      ddx_error_t lerr = {0};
      x->tree = ddx_mem_config_load(cfg.text->data, cfg.text->len, &lerr);
    }
    ddx_lsp_mem_inputs(s, r, &x->in, &x->src);
    /* an "auto" micro batch is the one the log ran with */
    json_t *m = json_object_get(x->tree, "train_micro_batch_size_per_gpu");
    if (json_is_string(m) && r->facts.micro_batch > 0)
      x->in.micro_batch = (double)r->facts.micro_batch;
  }
  for (size_t k = 0; k < nr; k++)
    lsp_rule_actions(x, rules[k], diags[k], have);
  lsp_prefer(x);
  if (!x->noffers && x->nrefused && !s->life.cap_disabled) {
    /* a client that shows no disabled actions still hears why none applies */
    char title[900], message[1200];
    snprintf(title, sizeof title, "ddx: no quick fix applies%s%s: %s", have ? " in " : "",
             have ? x->name : "", x->first_reason);
    snprintf(message, sizeof message, "ddx: no quick fix applies%s%s: %s", have ? " in " : "",
             have ? x->name : "", x->first_reason);
    json_t *a = json_pack("{s:o, s:s, s:{s:s, s:s, s:[{s:o}]}}", "title",
                          ddx_lsp_jstr(title, strlen(title)), "kind", "quickfix", "command",
                          "title", "Why", "command", "ddx.showFix", "arguments", "message",
                          ddx_lsp_jstr(message, strlen(message)));
    if (diags[0]) json_object_set_new(a, "diagnostics", json_pack("[O]", diags[0]));
    json_array_append_new(out, a);
  }
  ddx_lsp_cfg_free(x->c);
  json_decref(x->tree);
  lsp_strs_free(&x->ids);
  free(x);
  lsp_cfgsrc_clear(&cfg);
  return out;
}

json_t *ddx_lsp_cmd_show_fix(ddx_lsp_server_t *s, json_t *params, ddx_lsp_call_t *call) {
  json_t *arg = json_array_get(json_object_get(params, "arguments"), 0);
  const char *msg = json_string_value(json_object_get(arg, "message"));
  json_t *copy = json_object_get(arg, "copy");
  if (!msg || (copy && !json_is_string(copy)))
    return ddx_lsp_fail(call, DDX_LSP_INVALID_PARAMS,
                        "ddx.showFix needs {\"message\": string, \"copy\"?: string}");
  ddx_lsp_notify(
      s, "window/showMessage",
      json_pack("{s:i, s:o}", "type", DDX_LSP_LOG_INFO, "message", ddx_lsp_jstr(msg, strlen(msg))));
  return json_pack("{s:o, s:O}", "message", ddx_lsp_jstr(msg, strlen(msg)), "copy",
                   copy ? copy : json_null());
}
