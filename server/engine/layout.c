/* layout.c - host/local-rank to global-rank mapping (see ddx/layout.h). */
#define _GNU_SOURCE
#include "ddx/layout.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *const ddx_layout_literals[] = {
    "WORLD INFO DICT",  "global_rank_mapping",  "num_local_procs=",
    "dist_world_size=", "global_ranks=",        "group_world_size=",
    "--world_info=",    "spawned with command", "srun: error: ",
    "nprocs=",          "local_ranks=["};

void ddx_layout_note_host(ddx_layout_t *l, const char *host) {
  if (!host || !host[0] || l->seen_hosts > 1) return;
  if (l->seen_hosts == 0) {
    snprintf(l->first_host, sizeof l->first_host, "%s", host);
    l->seen_hosts = 1;
  } else if (strcmp(l->first_host, host)) {
    l->seen_hosts = 2;
  }
}

void ddx_layout_init(ddx_layout_t *l) {
  memset(l, 0, sizeof *l);
  l->world_size = -1;
  l->nnodes = -1;
  l->nprocs = -1;
  l->max_global = -1;
  l->max_local = -1;
  l->srun_failed_task = -1;
  l->srun_max_task = -1;
}

static ddx_layout_host_t *host_slot(ddx_layout_t *l, const char *name, size_t n) {
  if (n == 0 || n >= DDX_HOST_MAX) return NULL;
  for (size_t i = 0; i < l->nhosts; i++)
    if (strlen(l->hosts[i].name) == n && !memcmp(l->hosts[i].name, name, n)) return &l->hosts[i];
  if (l->nhosts == DDX_LAYOUT_MAX_HOSTS) return NULL;
  ddx_layout_host_t *h = &l->hosts[l->nhosts++];
  memcpy(h->name, name, n);
  h->name[n] = 0;
  h->base = -1;
  h->nlocal = -1;
  h->learned = 0;
  return h;
}

static const char *find(const char *t, size_t len, const char *lit) {
  return memmem(t, len, lit, strlen(lit));
}

static long number_after(const char *t, size_t len, const char *key) {
  const char *p = find(t, len, key);
  if (!p) return -1;
  p += strlen(key);
  char *end;
  long v = strtol(p, &end, 10);
  return end == p || v > DDX_LAYOUT_RANK_MAX ? -1 : v;
}

/* Parses {'host': [0, 1, 2], "host2": [3, 4]} starting at p. explicit_ranks:
 * the lists are global ranks (global_rank_mapping), else local slots. */
static void parse_dict(ddx_layout_t *l, const char *p, const char *end, bool explicit_ranks) {
  int32_t next_base = 0, ndict = 0;
  while (p < end) {
    const char *q = memchr(p, '\'', (size_t)(end - p));
    const char *dq = memchr(p, '"', (size_t)(end - p));
    if (!q || (dq && dq < q)) q = dq;
    if (!q) return;
    char quote = *q;
    const char *name = q + 1;
    const char *name_end = memchr(name, quote, (size_t)(end - name));
    if (!name_end) return;
    const char *lb = memchr(name_end, '[', (size_t)(end - name_end));
    const char *rb = lb ? memchr(lb, ']', (size_t)(end - lb)) : NULL;
    if (!rb) return;
    int32_t first = -1, count = 0;
    for (const char *c = lb + 1; c < rb;) {
      char *e;
      long v = strtol(c, &e, 10);
      if (e == c) {
        c++;
        continue;
      }
      if (v < 0 || v > DDX_LAYOUT_RANK_MAX) return; /* not a rank list */
      if (first < 0) first = (int32_t)v;
      if (count < DDX_LAYOUT_RANK_MAX) count++;
      c = e;
    }
    ddx_layout_host_t *h = host_slot(l, name, (size_t)(name_end - name));
    if (h) {
      h->nlocal = count;
      h->base = explicit_ranks ? first : next_base;
      h->learned = 0;
      ndict++;
    }
    if (next_base > DDX_LAYOUT_RANK_MAX - count) return;
    next_base += count;
    p = rb + 1;
  }
  if (!explicit_ranks && next_base > 0 && l->world_size < 0) l->world_size = next_base;
  if (l->nnodes < 0 && ndict > 0) l->nnodes = ndict;
}

/* Decodes base64 (standard alphabet) from p until a non-base64 byte;
 * returns the decoded length written to out (at most cap - 1, NUL-ended). */
static size_t base64_decode(const char *p, const char *end, char *out, size_t cap) {
  uint32_t acc = 0;
  int bits = 0;
  size_t n = 0;
  for (; p < end; p++) {
    char c = *p;
    int v = c >= 'A' && c <= 'Z'   ? c - 'A'
            : c >= 'a' && c <= 'z' ? c - 'a' + 26
            : c >= '0' && c <= '9' ? c - '0' + 52
            : c == '+'             ? 62
            : c == '/'             ? 63
                                   : -1;
    if (v < 0) break;
    acc = (acc << 6) | (uint32_t)v;
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      if (n + 1 < cap) out[n++] = (char)((acc >> bits) & 0xFF);
    }
  }
  if (cap) out[n] = 0;
  return n;
}

void ddx_layout_parse(ddx_layout_t *l, const char *t, size_t len, const ddx_line_meta_t *meta) {
  const char *end = t + len, *p;
  /* The DeepSpeed runner passes the layout to every node as base64 JSON:
   * "--world_info=eyJ3b3JrZXItMCI6IFswLCAxXX0=" is {"worker-0": [0, 1]}. */
  if ((p = find(t, len, "--world_info="))) {
    size_t cap = (size_t)(end - p) + 1;
    char *json = malloc(cap);
    size_t n = json ? base64_decode(p + 13, end, json, cap) : 0;
    bool have = false;
    for (size_t i = 0; i < l->nhosts; i++)
      have |= l->hosts[i].base >= 0;
    if (n && !have) parse_dict(l, json, json + n, false);
    free(json);
  }
  if ((p = find(t, len, "global_rank_mapping"))) {
    const char *brace = memchr(p, '{', (size_t)(end - p));
    if (brace) parse_dict(l, brace, end, true);
  } else if ((p = find(t, len, "WORLD INFO DICT"))) {
    const char *brace = memchr(p, '{', (size_t)(end - p));
    bool have_explicit = false;
    for (size_t i = 0; i < l->nhosts; i++)
      have_explicit |= l->hosts[i].base >= 0;
    if (brace && !have_explicit) parse_dict(l, brace, end, false);
  }
  long nprocs = number_after(t, len, "num_local_procs=");
  long node_rank = number_after(t, len, "node_rank=");
  long nnodes = number_after(t, len, "nnodes=");
  if (nnodes > 0) l->nnodes = (int32_t)nnodes;
  if (nprocs > 0 && node_rank >= 0 && meta && meta->host[0]) {
    ddx_layout_host_t *h = host_slot(l, meta->host, strlen(meta->host));
    if (h && (h->base < 0 || h->learned)) {
      h->base = (int32_t)(node_rank * nprocs);
      h->nlocal = (int32_t)nprocs;
      h->learned = 0;
    }
  }
  /* DeepSpeed's launch.py: "process 2527073 spawned with command: [...,
   * '--local_rank=5', ...]" ties a pid to a local rank on this host. */
  if ((p = find(t, len, "spawned with command")) && l->npids < DDX_LAYOUT_MAX_PIDS) {
    long pid = number_after(t, (size_t)(p - t), "process ");
    long local = number_after(p, (size_t)(end - p), "--local_rank=");
    if (pid > 0 && local >= 0) {
      ddx_layout_pid_t *e = &l->pids[l->npids++];
      e->pid = pid;
      e->local_rank = (int32_t)local;
      snprintf(e->host, sizeof e->host, "%s", meta ? meta->host : "");
    }
  }
  long ws = number_after(t, len, "dist_world_size=");
  if (ws > 0) l->world_size = (int32_t)ws;
  /* torchrun's rendezvous result, one field per line in newer versions:
   * "global_ranks=[48, 49, ...]" (this node's ranks), "group_world_size=8". */
  long gws = number_after(t, len, "group_world_size=");
  if (gws > 0) l->nnodes = (int32_t)gws;
  /* Under srun -l ("2:   global_ranks=[8, ...]") the line's srun task id
   * names the node (one torchrun agent per task): the block is that
   * task's, which need not be group_rank's (c10d orders nodes by arrival). */
  char node[DDX_HOST_MAX] = "";
  if (meta && meta->host[0])
    snprintf(node, sizeof node, "%s", meta->host);
  else if (meta && (meta->dialects & DDX_DIALECT_SRUN) && meta->rank >= 0)
    snprintf(node, sizeof node, "srun-task-%d", (int)meta->rank);
  if ((p = find(t, len, "global_ranks=[")) && node[0]) {
    char *e;
    long first = strtol(p + 14, &e, 10);
    if (first < 0 || first > DDX_LAYOUT_RANK_MAX) e = (char *)p + 14; /* not a rank: ignored */
    int32_t count = 0;
    for (const char *c = p + 14; c < end && *c != ']'; c++)
      if (*c == ',') count++;
    ddx_layout_host_t *h = e != p + 14 ? host_slot(l, node, strlen(node)) : NULL;
    if (h && (h->base < 0 || h->learned)) {
      h->base = (int32_t)first;
      h->nlocal = count + 1;
      h->learned = 0;
    }
  }
  /* srun reports each task as it ends: "srun: error: node-3: task 25: Exited
   * with exit code 1"; the first that failed on its own (a non-zero exit
   * or a crash signal, not the "Terminated" srun sent the rest) */
  if ((p = find(t, len, "srun: error: "))) {
    const char *h = p + 13, *c = memchr(h, ':', (size_t)(end - h));
    char *e = NULL;
    long task = c && end - c > 7 && !memcmp(c, ": task ", 7) ? strtol(c + 7, &e, 10) : -1;
    if (task > l->srun_max_task && task <= DDX_LAYOUT_RANK_MAX) l->srun_max_task = (int32_t)task;
    if (l->srun_failed_task >= 0) task = -1;
    const char *msg = e && e > c + 7 && end - e > 2 && !memcmp(e, ": ", 2) ? e + 2 : NULL;
    size_t ml = msg ? (size_t)(end - msg) : 0;
    bool failed =
        msg &&
        ((ml > 22 && !memcmp(msg, "Exited with exit code ", 22) && msg[22] != '0') ||
         (ml >= 18 && !memcmp(msg, "Segmentation fault", 18)) ||
         (ml >= 7 && !memcmp(msg, "Aborted", 7)) || (ml >= 9 && !memcmp(msg, "Bus error", 9)));
    if (failed && task >= 0 && task <= DDX_LAYOUT_RANK_MAX && (size_t)(c - h) < DDX_HOST_MAX) {
      memcpy(l->srun_failed_host, h, (size_t)(c - h));
      l->srun_failed_host[c - h] = 0;
      l->srun_failed_task = (int32_t)task;
    }
  }
  /* the processes per node: mp.spawn's nprocs (the call's source line in
   * a traceback, "mp.spawn(main, args=(args,), nprocs=8, join=True)") and
   * torchrun's rendezvous result "local_ranks=[0, 1, ..., 7]" */
  long np = find(t, len, "spawn(") ? number_after(t, len, "nprocs=") : -1;
  if (np > 0) l->nprocs = (int32_t)np;
  if ((p = find(t, len, "local_ranks=[")) && (p == t || p[-1] != '_')) {
    const char *c = p + 13;
    int32_t count = c < end && *c >= '0' && *c <= '9' ? 1 : 0;
    for (; c < end && *c != ']' && count; c++)
      if (*c == ',') count++;
    if (count && c < end && *c == ']') l->nprocs = count;
  }
  long gwss = number_after(t, len, "global_world_sizes=[");
  if (gwss > 0 && l->world_size < 0) l->world_size = (int32_t)gwss;
}

/* Global ranks above every local rank seen mean several nodes. */
static bool multi_node_seen(const ddx_layout_t *l) {
  return l->max_global >= 0 && l->max_global > l->max_local && l->max_global >= 8;
}

/* A line that names its host, its local rank ([default1]:) and its global
 * rank ("[Rank 9] Watchdog ...") places its host's ranks: base = global -
 * local (torchrun and DeepSpeed number a node's ranks contiguously). Two
 * such lines that disagree leave the host's base unknown. A layout line
 * overrides what lines implied. */
static void learn_base(ddx_layout_t *l, const char *host, int32_t global, int32_t local) {
  if (!host[0] || global < 0 || local < 0 || local > global) return;
  ddx_layout_host_t *h = NULL;
  if (l->last_learned < l->nhosts && !strcmp(l->hosts[l->last_learned].name, host))
    h = &l->hosts[l->last_learned];
  else if ((h = host_slot(l, host, strlen(host))))
    l->last_learned = (size_t)(h - l->hosts);
  if (!h || (h->base >= 0 && !h->learned) || h->learned == 2) return;
  int32_t base = global - local;
  if (h->learned == 0) { /* first line: h->base is -1 */
    h->base = base;
    h->learned = 1;
  } else if (h->base != base) {
    h->base = -1;
    h->learned = 2;
  }
}

void ddx_layout_note_dialects(ddx_layout_t *l, const ddx_line_meta_t *meta) {
  l->dialects |= meta->dialects;
  learn_base(l, meta->host, meta->rank, meta->local_rank);
}

void ddx_layout_note_ranks(ddx_layout_t *l, int32_t global, int32_t local) {
  if (global > l->max_global) l->max_global = global;
  if (local > l->max_local) l->max_local = local;
}

int32_t ddx_layout_global_rank(const ddx_layout_t *l, const char *host, int32_t local_rank) {
  if (local_rank < 0) return -1;
  if (host && host[0]) {
    for (size_t i = 0; i < l->nhosts; i++)
      if (!strcmp(l->hosts[i].name, host) && l->hosts[i].base >= 0)
        return (int64_t)l->hosts[i].base + local_rank <= DDX_LAYOUT_RANK_MAX
                   ? l->hosts[i].base + local_rank
                   : -1;
    /* srun -l over torchrun names the node by its task id (line.c):
     * node 0 starts at rank 0; another node needs the processes per node */
    if (!strncmp(host, "srun-task-", 10)) {
      long node = strtol(host + 10, NULL, 10);
      int32_t per = -1;
      for (size_t i = 0; i < l->nhosts && per < 0; i++)
        if (l->hosts[i].nlocal > 0) per = l->hosts[i].nlocal;
      if (per < 0) per = l->nprocs;
      if (per < 0 && l->seen_hosts > 1 && l->max_local >= 0) per = l->max_local + 1;

      /* ... when the task ids follow torchrun's node order (--node_rank=
       * $SLURM_NODEID); a task whose ranks the log shows elsewhere
       * (c10d's arrival order) says they do not */
      for (size_t i = 0; i < l->nhosts && per > 0; i++)
        if (!strncmp(l->hosts[i].name, "srun-task-", 10) && l->hosts[i].base >= 0 &&
            (int64_t)strtol(l->hosts[i].name + 10, NULL, 10) * per != l->hosts[i].base)
          return -1;
      if (node == 0) return local_rank;
      int64_t g = (int64_t)node * per + local_rank;
      return per > 0 && local_rank < per && node > 0 && g <= DDX_LAYOUT_RANK_MAX ? (int32_t)g : -1;
    }
    /* One node, or a log that only ever names this one host (a single
     * node's own log): its local ranks are the ranks the user sees. */
    if (l->nnodes == 1 || (l->nnodes < 0 && l->seen_hosts == 1 && !multi_node_seen(l)))
      return local_rank;
    return -1;
  }
  /* No host on the line: a single-node job, unless the log shows more
   * ranks than one node runs (then the local rank alone cannot say). */
  return l->nnodes > 1 || multi_node_seen(l) ? -1 : local_rank;
}

bool ddx_layout_pid(const ddx_layout_t *l, long pid, char *host, size_t hostcap,
                    int32_t *local_rank) {
  for (size_t i = 0; i < l->npids; i++)
    if (l->pids[i].pid == pid) {
      snprintf(host, hostcap, "%s", l->pids[i].host);
      *local_rank = l->pids[i].local_rank;
      return true;
    }
  return false;
}

/* Parses a decimal at p (digits only up to end); -1 when none. */
static long path_num(const char *p, const char *end) {
  long v = 0;
  const char *q = p;
  while (q < end && *q >= '0' && *q <= '9' && q - p < 9)
    v = v * 10 + (*q++ - '0');
  return q == p || q != end ? -1 : v;
}

void ddx_layout_path_meta(const char *path, ddx_line_meta_t *meta) {
  ddx_line_meta_init(meta);
  if (!path || !strcmp(path, "-")) return;
  /* Split into components; look at the last three. */
  const char *comp[64];
  size_t len[64], n = 0;
  for (const char *p = path; *p && n < 64;) {
    while (*p == '/')
      p++;
    if (!*p) break;
    const char *e = strchr(p, '/');
    if (!e) e = p + strlen(p);
    comp[n] = p;
    len[n++] = (size_t)(e - p);
    p = e;
  }
  if (n == 0) return;
  const char *base = comp[n - 1];
  size_t blen = len[n - 1];
  /* torchrun --log-dir: <run>/attempt_<k>/<local_rank>/{stdout,stderr}.log */
  if (n >= 3 &&
      (!strncmp(base, "stderr.log", blen) || !strncmp(base, "stdout.log", blen) ||
       !strncmp(base, "error.json", blen)) &&
      len[n - 3] > 8 && !strncmp(comp[n - 3], "attempt_", 8)) {
    long lr = path_num(comp[n - 2], comp[n - 2] + len[n - 2]);
    if (lr >= 0) meta->local_rank = (int32_t)lr;
    meta->stream = base[3] == 'e' ? 2 : 1;
    return;
  }
  /* rank7.log, rank_7.log, rank-7.out (one file per global rank) */
  if (blen > 4 && !strncmp(base, "rank", 4)) {
    const char *p = base + 4, *e = base + blen;
    if (p < e && (*p == '_' || *p == '-')) p++;
    const char *d = p;
    while (d < e && *d >= '0' && *d <= '9')
      d++;
    if (d > p && (d == e || *d == '.')) meta->rank = (int32_t)path_num(p, d);
    return;
  }
  /* slurm-<jobid>-<node>.out: Slurm's %j-%N output pattern */
  if (blen > 6 && !strncmp(base, "slurm-", 6)) {
    const char *p = base + 6, *e = base + blen;
    const char *dash = memchr(p, '-', (size_t)(e - p));
    const char *dot = memrchr(p, '.', (size_t)(e - p));
    if (dash && dot && dot > dash + 1) {
      size_t hl = (size_t)(dot - dash - 1);
      long num = path_num(dash + 1, dot);
      if (num >= 0) { /* %t: srun's task id (a rank, or a node under torchrun) */
        meta->rank = (int32_t)num;
        meta->dialects |= DDX_DIALECT_SRUN;
      } else if (hl < sizeof meta->host) {
        memcpy(meta->host, dash + 1, hl);
        meta->host[hl] = 0;
      }
    }
  }
}

void ddx_layout_merge(ddx_layout_t *dst, const ddx_layout_t *src) {
  dst->dialects |= src->dialects;
  /* Later lines win where the parser lets a later line win. */
  for (size_t i = 0; i < src->nhosts; i++) {
    const ddx_layout_host_t *h = &src->hosts[i];
    ddx_layout_host_t *d = NULL;
    for (size_t k = 0; k < dst->nhosts && !d; k++)
      if (!strcmp(dst->hosts[k].name, h->name)) d = &dst->hosts[k];
    if (!d) {
      if (dst->nhosts >= DDX_LAYOUT_MAX_HOSTS) continue;
      d = &dst->hosts[dst->nhosts++];
      *d = *h;
      continue;
    }
    if (h->learned && !d->learned && d->base >= 0) continue; /* a layout line's word stands */
    if (h->learned && d->learned && (h->learned == 2 || (d->base >= 0 && d->base != h->base))) {
      d->base = -1, d->learned = 2;
      continue;
    }
    if (h->base >= 0) d->base = h->base, d->learned = h->learned;
    if (h->nlocal >= 0) d->nlocal = h->nlocal;
  }
  if (src->srun_max_task > dst->srun_max_task) dst->srun_max_task = src->srun_max_task;
  if (dst->srun_failed_task < 0 && src->srun_failed_task >= 0) {
    dst->srun_failed_task = src->srun_failed_task;
    memcpy(dst->srun_failed_host, src->srun_failed_host, sizeof dst->srun_failed_host);
  }
  if (src->world_size >= 0) dst->world_size = src->world_size;
  if (src->nnodes >= 0) dst->nnodes = src->nnodes;
  if (src->nprocs > 0) dst->nprocs = src->nprocs;
  if (src->seen_hosts > 1)
    dst->seen_hosts = 2;
  else if (src->seen_hosts == 1)
    ddx_layout_note_host(dst, src->first_host);
  ddx_layout_note_ranks(dst, src->max_global, src->max_local);
  for (size_t i = 0; i < src->npids && dst->npids < DDX_LAYOUT_MAX_PIDS; i++)
    dst->pids[dst->npids++] = src->pids[i];
}
