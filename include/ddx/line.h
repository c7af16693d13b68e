/* ddx/line.h - owns line normalisation and log-prefix dialects.
 *
 * One raw log line (without its terminator) goes in; the message text comes
 * out with ANSI escapes (also ESC-less "[36m" remnants), NUL bytes and
 * launcher/platform prefixes removed, and what the prefixes said about the
 * line (rank, local rank, host, time, stream) goes into ddx_line_meta_t.
 * Pure functions: no allocation, no I/O, no global state. */
#ifndef DDX_LINE_H
#define DDX_LINE_H

#include <stddef.h>
#include <stdint.h>

/* Lines longer than this are capped before normalisation. */
#define DDX_LINE_MAX 4096
#define DDX_HOST_MAX 64

/* Bits of ddx_line_meta_t.dialects: which prefixes were recognised. */
enum {
  DDX_DIALECT_RANK = 1u << 0,           /* [rank7]: (PyTorch excepthook, global) */
  DDX_DIALECT_GLOG = 1u << 1,           /* [E1218 20:27:21.426 file.cpp:629] or E0801 ... ] */
  DDX_DIALECT_TORCHRUN_TEE = 1u << 2,   /* [default3]: / [trainer3]: (local rank) */
  DDX_DIALECT_PDSH = 1u << 3,           /* worker-1: / 10.1.0.3: (host) */
  DDX_DIALECT_SRUN = 1u << 4,           /* " 2: " srun --label (global rank) */
  DDX_DIALECT_MPIRUN = 1u << 5,         /* [1,3]<stderr>: (global rank, stream) */
  DDX_DIALECT_RAY = 1u << 6,            /* (WorkerDict pid=26110) */
  DDX_DIALECT_DS_ASCTIME = 1u << 7,     /* [2024-05-14 10:21:33,412] [INFO] [engine.py:1:f] */
  DDX_DIALECT_ISO_TIME = 1u << 8,       /* 2024-05-14T10:21:33Z / [..Z] / 2024-05-14 10:21:33 */
  DDX_DIALECT_PLATFORM = 1u << 9,       /* stderr: / [stderr] / | ERROR | stderr | / pod names */
  DDX_DIALECT_MARKDOWN = 1u << 10,      /* "> " quoting */
  DDX_DIALECT_VIEWER_LINENO = 1u << 11, /* [12345] or "12345 | " from a log viewer */
  DDX_DIALECT_ANSI = 1u << 12,          /* ANSI escapes were stripped */
  DDX_DIALECT_TORCH_ELASTIC = 1u << 13, /* [2023-..] torch.distributed.elastic...: [ERROR] */
  DDX_DIALECT_NCCL_TAG = 1u << 14,      /* NCCL's "host:pid:tid [cudaDev] " */
  DDX_DIALECT_SRUN_NODE = 1u << 15,     /* srun --label's id names a node's task ("3: [rank27]:") */
};

typedef struct ddx_line_meta {
  int32_t rank;            /* global rank, -1 when unknown */
  int32_t local_rank;      /* local rank (torchrun --tee, GPU index), -1 when unknown */
  char host[DDX_HOST_MAX]; /* host from a pdsh-style prefix, "" when unknown */
  int64_t ts_ms;           /* time in ms, comparable within one log; -1 when unknown.
                              Without a year (glog MMDD) the year counts as 0. */
  int64_t pid;             /* process id from an NCCL tag, -1 when unknown */
  uint8_t stream;          /* 0 unknown, 1 stdout, 2 stderr */
  char level;              /* 'E','W','I','D','F' from glog/logger prefixes, 0 unknown */
  uint32_t dialects;       /* DDX_DIALECT_* bits seen on this line */
} ddx_line_meta_t;

/* Resets meta to "nothing known". */
void ddx_line_meta_init(ddx_line_meta_t *meta);

/* Normalises in[0..len) into out (capacity cap, always NUL-terminated when
 * cap > 0) and returns the length written. Strips, in a loop, every prefix
 * dialect listed above and records what it says in meta. Invalid UTF-8 is
 * passed through byte for byte; NUL bytes are dropped. Input longer than
 * DDX_LINE_MAX is capped. meta must have been initialised by the caller (so
 * that facts known from a surrounding context may be preset). */
size_t ddx_line_normalize(const char *in, size_t len, char *out, size_t cap, ddx_line_meta_t *meta);

/* Strips ANSI escape sequences (CSI/OSC, and bare "[NNm" remnants) only.
 * Returns the length written to out (cap >= len+1 suffices). */
size_t ddx_line_strip_ansi(const char *in, size_t len, char *out, size_t cap);

#endif
