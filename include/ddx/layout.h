/* ddx/layout.h - owns the job layout a log reveals: which hosts run which
 * global ranks, and the world size. Parsed from launcher lines:
 * DeepSpeed's "WORLD INFO DICT: {'worker-0': [0, 1], ...}",
 * "global_rank_mapping=defaultdict(..., {'worker-0': [0, 1], ...})",
 * "nnodes=2, num_local_procs=8, node_rank=1" (host from the pdsh prefix) and
 * "dist_world_size=16", launch.py's "process N spawned with command ...
 * --local_rank=K", the runner's base64 "--world_info=...", and torchrun's rendezvous result
 * "global_ranks=[48,
 * ...]" / "group_world_size=8" under a host prefix. It maps (host, local
 * rank) to a global rank. */
#ifndef DDX_LAYOUT_H
#define DDX_LAYOUT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ddx/line.h"

#define DDX_LAYOUT_MAX_HOSTS 1024

typedef struct ddx_layout_host {
  char name[DDX_HOST_MAX];
  int32_t base;   /* global rank of local rank 0, -1 unknown */
  int32_t nlocal; /* processes on this host, -1 unknown */
  int8_t learned; /* 0: base from a layout line; 1: implied by a line naming its local and
                     global rank on this host ("[default1]:... [Rank 9]"); 2: such lines disagree
                     (base -1) */
} ddx_layout_host_t;

#define DDX_LAYOUT_MAX_PIDS 4096
#define DDX_LAYOUT_RANK_MAX 10000000 /* a rank, world size or node above this is not one */

typedef struct ddx_layout_pid {
  long pid;
  int32_t local_rank;
  char host[DDX_HOST_MAX];
} ddx_layout_pid_t;

typedef struct ddx_layout {
  ddx_layout_host_t hosts[DDX_LAYOUT_MAX_HOSTS];
  size_t nhosts;
  int32_t world_size;                         /* -1 unknown */
  int32_t nnodes;                             /* -1 unknown */
  int32_t nprocs;                             /* processes per node a launcher line names
                                                 (mp.spawn(..., nprocs=8), torchrun's
                                                 local_ranks=[0, ..., 7]); -1 unknown */
  char first_host[DDX_HOST_MAX];              /* the first host any candidate line named */
  int seen_hosts;                             /* 0, 1, or 2 meaning "more than one" */
  int32_t max_global, max_local;              /* highest ranks any prefix named */
  size_t last_learned;                        /* hosts[] index of the last learned base */
  uint32_t dialects;                          /* DDX_DIALECT_* bits of any line (a
                                                 torchrun job prints [defaultN] or
                                                 its agent's lines somewhere) */
  char srun_failed_host[DDX_HOST_MAX];        /* srun's first failed task: "srun: error: */
  int32_t srun_failed_task;                   /* HOST: task N: Exited with exit code 1" (or a
                                                 signal); -1 none */
  int32_t srun_max_task;                      /* the highest task id srun reports, -1 none */
  ddx_layout_pid_t pids[DDX_LAYOUT_MAX_PIDS]; /* launch.py "process N spawned ... --local_rank=K" */
  size_t npids;
} ddx_layout_t;

/* The literals of the lines ddx_layout_parse understands. */
extern const char *const ddx_layout_literals[];
#define DDX_LAYOUT_NLITERALS 11

void ddx_layout_init(ddx_layout_t *l);
/* Reads one normalised line; meta->host names the host of node-local facts. */
void ddx_layout_parse(ddx_layout_t *l, const char *text, size_t len, const ddx_line_meta_t *meta);
/* The host and local rank DeepSpeed's launcher spawned pid as. */
bool ddx_layout_pid(const ddx_layout_t *l, long pid, char *host, size_t hostcap,
                    int32_t *local_rank);
/* What a log file's path says about its lines: torchrun --log-dir
 * ".../attempt_N/<local_rank>/stderr.log" (local rank), Slurm
 * "slurm-<job>-<node>.out" / "...-<node>.out" with %N (host), "rank<N>.log"
 * / "rank_N" (global rank). Initialises meta first. */
void ddx_layout_path_meta(const char *path, ddx_line_meta_t *meta);
/* Records the ranks a line's prefixes named (to tell multi-node logs). */
void ddx_layout_note_ranks(ddx_layout_t *l, int32_t global, int32_t local);
/* Records the prefix dialects a line showed, and the base of its host's
 * ranks when the line names its host, local rank and global rank. */
void ddx_layout_note_dialects(ddx_layout_t *l, const ddx_line_meta_t *meta);
/* Records that a line named host (to tell single-host logs). */
void ddx_layout_note_host(ddx_layout_t *l, const char *host);
/* Adds what src learnt (from a later part of the same logs) to dst. */
void ddx_layout_merge(ddx_layout_t *dst, const ddx_layout_t *src);
/* The global rank of (host, local rank), or -1 when the layout does not say.
 * With one node, no host, or only one host ever named, the local rank is
 * the global rank. */
int32_t ddx_layout_global_rank(const ddx_layout_t *l, const char *host, int32_t local_rank);

#endif
