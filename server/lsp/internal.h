/* server/lsp/internal.h - private to server/lsp/: owns the language
 * server's shared types (texts, documents, jobs, results, the server
 * struct) and the functions the files of server/lsp/ call in each other.
 * Only this layer knows libuv, JSON-RPC and LSP; nothing outside
 * server/lsp/ includes this header (the CLI calls ddx/lsp.h's
 * ddx_lsp_main).
 *
 * Everything hangs off one ddx_lsp_server_t created by ddx_lsp_main; the
 * loop thread owns it. Worker threads only see a job (ddx_lsp_job_t) and
 * the immutable snapshot and catalog it holds references to.
 *
 * Positions are kept in the negotiated encoding, lines ending at \n, \r\n
 * or a bare \r as the engine counts them. */
#ifndef DDX_LSP_INTERNAL_H
#define DDX_LSP_INTERNAL_H

#include <jansson.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <uv.h>

#include "ddx/diagnose.h"
#include "ddx/dscheck.h"
#include "ddx/memory.h"
#include "ddx/rules.h"
#include "ddx/scan.h"
#include "ddx/lsp.h"

#define DDX_LSP_DEFAULT_MAX_FRAME ((size_t)128 << 20) /* DDX_LSP_MAX_FRAME overrides */
#define DDX_LSP_MAX_DIAGNOSTICS 200                   /* per document */
#define DDX_LSP_PROGRESS_MIN_BYTES ((size_t)4 << 20)  /* scans at least this big report progress */
/* Outgoing bytes queued for a client that does not read: above the limit
 * the server stops reading requests until half of it drained; above twice
 * the limit new messages are dropped (logged on stderr). DDX_LSP_MAX_WQUEUE
 * overrides. */
#define DDX_LSP_DEFAULT_MAX_WQUEUE ((size_t)64 << 20)
#define DDX_LSP_CFG_MAX_BYTES ((size_t)4 << 20) /* larger JSON documents are not checked */

enum { DDX_LSP_ENC_UTF16 = 0, DDX_LSP_ENC_UTF8 = 1 };
enum { DDX_LSP_TRACE_OFF = 0, DDX_LSP_TRACE_MESSAGES = 1, DDX_LSP_TRACE_VERBOSE = 2 };
enum {
  DDX_LSP_LOG_ERROR = 1,
  DDX_LSP_LOG_WARNING = 2,
  DDX_LSP_LOG_INFO = 3,
  DDX_LSP_LOG_DEBUG = 4
};

/* JSON-RPC / LSP error codes */
enum {
  DDX_LSP_PARSE_ERROR = -32700,
  DDX_LSP_INVALID_REQUEST = -32600,
  DDX_LSP_METHOD_NOT_FOUND = -32601,
  DDX_LSP_INVALID_PARAMS = -32602,
  DDX_LSP_INTERNAL_ERROR = -32603,
  DDX_LSP_SERVER_NOT_INITIALIZED = -32002,
  DDX_LSP_REQUEST_FAILED = -32803,
  DDX_LSP_REQUEST_CANCELLED = -32800,
};

/* An immutable text with its line index, shared by a document and the
 * scans of it (reference counted on the loop thread only). */
typedef struct ddx_lsp_text {
  int refs;
  char *data; /* NUL-terminated (data[len] == 0); may hold NUL bytes */
  size_t len;
  size_t *starts; /* byte offset of each line start */
  size_t nlines;  /* >= 1 */
} ddx_lsp_text_t;

/* A loaded catalog shared by scans, documents' results and the server. */
typedef struct ddx_lsp_catalog {
  int refs;
  ddx_catalog_t *cat;
  char *root; /* the built-in rules folder (for catalog URLs), or NULL */
  char *hub;  /* the encyclopedia's site shipped with the binary (ddx_hub_find), or NULL */
} ddx_lsp_catalog_t;

/* What a log says about the job, for the ds_config checks: the
 * data-parallel size (DeepSpeed's config print, the batch assertion), the
 * total memory of a GPU (an OOM's `total`) and the config DeepSpeed printed
 * ("json = {...}", to find the file it came from). */
typedef struct ddx_lsp_logfacts {
  int64_t dp_world_size; /* 0 unknown */
  double gpu_total;      /* bytes, 0 unknown */
  /* the micro batch and gradient accumulation the job ran with (DeepSpeed's
   * config print, the HF Trainer's "Instantaneous batch size per device"),
   * 0 unknown: the values of "auto" keys */
  long long micro_batch, grad_accum;
  char *ds_json; /* malloc'd printed config, or NULL */
} ddx_lsp_logfacts_t;

/* A finished diagnosis kept for hovers and code actions. */
typedef struct ddx_lsp_result {
  ddx_lsp_catalog_t *cat;
  ddx_lsp_text_t *text; /* the snapshot it was computed on (NULL: streamed file) */
  ddx_scan_t scan;
  ddx_diagnosis_t diag;
  int64_t version;
  ddx_lsp_logfacts_t facts;
} ddx_lsp_result_t;

enum { DDX_LSP_DOC_OTHER = 0, DDX_LSP_DOC_LOG = 1, DDX_LSP_DOC_JSON = 2 };

typedef struct ddx_lsp_job ddx_lsp_job_t;

typedef struct ddx_lsp_doc {
  struct ddx_lsp_doc *next;
  char *uri;
  char *path; /* local path of a file: URI, else NULL */
  char *language;
  int kind;
  int64_t version;
  ddx_lsp_text_t *text;
  ddx_lsp_result_t *result; /* latest published diagnosis, or NULL */
  ddx_lsp_job_t *job;       /* scan in flight, or NULL */
  bool rescan;              /* the text moved on while job ran */
  uint64_t grew_ns;         /* when a scan last found the text grown at its end (a live log) */
  bool held;                /* a no-error diagnosis (a hang) is held back: the log still grows */
  bool hang_shown;          /* the last publish showed a no-error diagnosis */
  bool cfg_published;       /* ds_config diagnostics were published for it */
  /* Config paths the log names (--deepspeed X), found once per text:
   * named_of holds a reference to the text they were found in. */
  ddx_lsp_text_t *named_of;
  char (*named)[512];
  size_t nnamed;
} ddx_lsp_doc_t;

/* The mutable text one didChange batch is applied to, so that a batch of k
 * changes costs O(n + the distances between consecutive edits + the
 * changes' sizes) instead of k copies of the text:
 *
 * - the bytes are a gap buffer: buf[0, gs) and buf[ge, cap) hold the text,
 *   the gap sits where the last edit was, and moving it costs its distance;
 * - the line starts are gap-structured the same way: ls[0, lg) are the
 *   absolute starts of lines 0..lg-1, ls[lge, lcap) the starts of the
 *   following lines stored as len - start, so that an edit (which changes
 *   len and every start after it by the same amount) never rewrites the
 *   entries after it;
 * - ck is where the last UTF-16 walk along a line can resume (line, units
 *   and byte offset of a code point boundary), so that edits moving along
 *   one long line do not walk it from its start each time.
 *
 * A line starts at 0 and after every \n, \r\n or bare \r, as in
 * ddx_lsp_text_new; whether offset s > 0 starts a line depends only on the
 * bytes s-1 and s. ddx_lsp_wc_finish turns the copy into the immutable text scans
 * run on. */
typedef struct ddx_lsp_wc {
  char *buf;
  size_t cap, gs, ge, len;
  size_t *ls;
  size_t lcap, lg, lge, nlines;
  bool ck;
  size_t ck_line, ck_units, ck_off;
} ddx_lsp_wc_t;

enum { DDX_LSP_JOB_DOC = 0, DDX_LSP_JOB_TEXT = 1, DDX_LSP_JOB_FILE = 2 };

/* One unit of work on the thread pool. The worker reads only the fields
 * marked "in"; it writes only "out" and the atomics. */
struct ddx_lsp_job {
  uv_work_t req;
  struct ddx_lsp_server *s;
  ddx_lsp_job_t *next;
  int kind;
  atomic_int cancel;        /* set by the loop thread */
  atomic_ullong done;       /* bytes scanned so far */
  atomic_ullong total;      /* bytes to scan (0 unknown); FILE: set by the worker */
  ddx_lsp_catalog_t *cat;   /* in */
  ddx_lsp_text_t *text;     /* in: snapshot (DOC, TEXT) */
  char *path;               /* in: file to stream (FILE), opened and checked by the worker */
  char **folders;           /* in (FILE, unless allow_outside): the workspace folders'
                               real paths, NULL-terminated, the worker's own copy */
  char *uri;                /* the document or file it is for */
  int64_t version;          /* in: document version of the snapshot */
  json_t *req_id;           /* the request to answer, or NULL */
  json_t *token;            /* work-done progress token, or NULL */
  int progress;             /* 0 none, 1 token being created, 2 ready, 3 begun, 4 ended */
  int64_t create_id;        /* id of our window/workDoneProgress/create request */
  const char *title;        /* progress title */
  ddx_lsp_result_t *result; /* out */
  int rc;                   /* out: 0, or a negative engine code */
  ddx_error_t err;          /* out */
  bool outside;             /* out (FILE): refused, outside the workspace folders */
  uint64_t start_ns;
};

typedef struct ddx_lsp_call {
  json_t *id; /* borrowed */
  int code;   /* error code when the handler fails */
  char msg[512];
  bool deferred; /* the handler answers later (it took a reference to id) */
} ddx_lsp_call_t;

typedef struct ddx_lsp_server ddx_lsp_server_t;
typedef json_t *(*ddx_lsp_handler_t)(ddx_lsp_server_t *s, json_t *params, ddx_lsp_call_t *call);

typedef struct ddx_lsp_method {
  const char *name;
  ddx_lsp_handler_t handler;
  bool is_notification;
} ddx_lsp_method_t;

/* A queued outgoing message. */
typedef struct ddx_lsp_wmsg {
  struct ddx_lsp_wmsg *next;
  char *data;
  size_t len;
} ddx_lsp_wmsg_t;

typedef union ddx_lsp_stream {
  uv_handle_t handle;
  uv_stream_t stream;
  uv_pipe_t pipe;
  uv_tty_t tty;
  uv_tcp_t tcp;
} ddx_lsp_stream_t;

/* The transport (transport.c): stdin and stdout, the bytes read and not yet
 * parsed, the frame being read, the write queue and its back-pressure. */
typedef struct ddx_lsp_io {
  uv_handle_type in_type, out_type;
  ddx_lsp_stream_t in, out;
  bool in_open, out_open, reading;
  uv_fs_t in_fs, out_fs; /* when stdin/stdout are regular files */
  char in_fs_buf[65536];
  char *rbuf; /* unparsed input */
  size_t rlen, rcap;
  size_t max_frame;
  int rstate;      /* 0 headers, 1 body, 2 resync (discard to the next header) */
  size_t body_len; /* body size of the frame being read */
  size_t hdr_len;  /* header bytes before the body */
  ddx_lsp_wmsg_t *wq_head, *wq_tail;
  size_t wq_bytes, wq_limit; /* queued bytes, DDX_LSP_DEFAULT_MAX_WQUEUE */
  bool wq_paused;            /* reading stopped until the queue drains */
  bool in_stalled;           /* a file stdin's next read waits for the drain */
  bool parsing;              /* inside lsp_parse_input */
  uint64_t wq_dropped;       /* notifications dropped at twice the limit */
  uint64_t wq_pauses;        /* times reading was paused */
  bool writing;
  uv_write_t wreq;
  uv_buf_t wbuf;
} ddx_lsp_io_t;

/* The server's life and what the client said in initialize (lifecycle.c;
 * the other files read it). */
typedef struct ddx_lsp_life {
  bool initialized, shutdown, exiting;
  int exit_code;
  int encoding;
  int trace;
  bool cap_progress, cap_disabled, cap_doc_changes, cap_related;
  pid_t parent_pid;
  uv_timer_t parent_timer;
  bool parent_timer_on;
  uint64_t parent_interval_ms;
} ddx_lsp_life_t;

/* JSON-RPC bookkeeping (rpc.c): ids of our requests, the cancellations
 * of the batch being dispatched. */
typedef struct ddx_lsp_rpc {
  int64_t next_out_id;
  int pending_cancel_n; /* ids cancelled in the batch being dispatched */
  json_t *pending_cancel;
} ddx_lsp_rpc_t;

/* Scans on the thread pool and their progress (jobs.c). */
typedef struct ddx_lsp_work {
  int64_t next_token;
  uv_timer_t progress_timer;
  bool progress_timer_on;
  ddx_lsp_job_t *jobs;
} ddx_lsp_work_t;

/* Held hangs of growing logs (diagnostics.c). */
typedef struct ddx_lsp_live {
  uv_timer_t stall_timer; /* fires when a held hang is due (jobs.c) */
  bool stall_timer_on;
} ddx_lsp_live_t;

/* The workspace and the client's settings (workspace.c). */
typedef struct ddx_lsp_ws {
  char **extra_rules; /* ddx.rules.extraPaths */
  size_t nextra_rules;
  char *dsconfig_path;  /* ddx.dsConfig.path */
  bool allow_outside;   /* ddx.diagnoseFile.allowOutsideWorkspace */
  double stall_s;       /* ddx.hang.stallSeconds: a growing log's hang is shown after this */
  double model_params;  /* ddx.model.parameters */
  int64_t world_size;   /* ddx.world.size */
  char *mem_model_path; /* ddx.memory.modelConfig: the model's config.json (machine-scoped) */
  double mem_seq_len;   /* ddx.memory.seqLen, 0 unknown */
  double mem_gpu_gib;   /* ddx.memory.gpuMemoryGiB: the GPU's memory when no OOM says it */
  char **folders;       /* workspace folders (local paths) */
  size_t nfolders;
} ddx_lsp_ws_t;

/* The ds_config checks' state (config.c): the schema, the model config.json
 * found in the workspace, the facts of the last diagnosed log. */
typedef struct ddx_lsp_cfgstate {
  ddx_dscheck_t *dscheck; /* the schema, loaded on first use */
  bool dscheck_tried;
  bool model_scanned;      /* the workspace was (or is being) searched for a model config.json */
  void *model_job;         /* the search in flight on the pool (config.c), or NULL */
  double model_ws_params;  /* its parameter count, 0 none */
  char model_ws_from[512]; /* "config.json: num_parameters" */
  ddx_mem_model_t model_shape;  /* the same config.json's shape (ddx_mem_model_from_hf) ... */
  bool model_shape_ok;          /* ... when it had one */
  bool model_waiting;           /* a ds_config check waits for the search to end */
  char model_shape_from[600];   /* "path (fields found)" */
  ddx_lsp_logfacts_t log_facts; /* from the last diagnosed log (ds_json unused) */
  char log_facts_from[256];     /* its name */
} ddx_lsp_cfgstate_t;

/* The server: one per process, owned by the loop thread. Each part is
 * written only by the file named in its type's comment; the others read it
 * (tests/arch/layers.py checks the writes). cat and rules_default belong
 * to catalog.c, docs to documents.c and sync.c, cfg_index to actions.c. */
struct ddx_lsp_server {
  uv_loop_t loop;
  ddx_lsp_io_t io;
  ddx_lsp_life_t life;
  ddx_lsp_rpc_t rpc;
  ddx_lsp_work_t work;
  ddx_lsp_live_t live;
  ddx_lsp_ws_t ws;
  ddx_lsp_cfgstate_t cfg;
  char *rules_default; /* the built-in catalog folder */
  ddx_lsp_catalog_t *cat;
  json_t *rule_check_uris; /* the team rule files with rules-check diagnostics (jobs.c) */
  ddx_lsp_doc_t *docs;
  /* the workspace config index of code actions (actions.c), or NULL */
  struct ddx_lsp_cfgindex *cfg_index;
};

void ddx_lsp_send(ddx_lsp_server_t *s, json_t *msg);                 /* steals msg */
void ddx_lsp_reply(ddx_lsp_server_t *s, json_t *id, json_t *result); /* steals result */
json_t *ddx_lsp_jstr(const char *s, size_t n); /* UTF-8-safe string (invalid bytes: U+FFFD) */
size_t ddx_lsp_line_end(const ddx_lsp_text_t *t, size_t line); /* end of content, no terminator */

/* config.c: the only file that calls the ds_config parser and patch
 * planner (ddx/dsconfig.h) and the config checker (ddx/dscheck.h). */
typedef struct ddx_lsp_cfg ddx_lsp_cfg_t;
/* Plans one config_patches entry. Returns 0 and fills *edits (byte ranges +
 * text, sorted) and *title, or -1 with why filled. */
typedef struct ddx_lsp_edit {
  size_t start, end;
  char *text;
} ddx_lsp_edit_t;
/* The facts the checks use: settings first, then a model config.json in
 * the workspace, then the last diagnosed log. src holds the strings the
 * facts point to. */
typedef struct ddx_lsp_cfg_src {
  char params[600], world[300], gpu[300];
} ddx_lsp_cfg_src_t;
/* The memory model's inputs the server knows (ddx/memory.h): the model's
 * shape (ddx.memory.modelConfig, else a config.json in the workspace), the
 * sequence length (ddx.memory.seqLen), the world size (ddx.world.size,
 * else the log: DeepSpeed's print, the launcher's layout, the ranks seen),
 * the GPU's memory (the log's OOM, else ddx.memory.gpuMemoryGiB) and the
 * micro batch of "auto" keys (the log). log: the diagnosed log the facts
 * come from, or NULL (the last diagnosed one's facts). src holds the
 * strings in points to. */
typedef struct ddx_lsp_mem_src {
  char world[300], gpu[300];
} ddx_lsp_mem_src_t;

/* ------------------------------------------------------- transport.c */
uint64_t ddx_lsp_now_ns(void);
void ddx_lsp_write_next(ddx_lsp_server_t *s);
void ddx_lsp_send(ddx_lsp_server_t *s, json_t *msg);
/* Start and end: the limits (DDX_LSP_MAX_FRAME, DDX_LSP_MAX_WQUEUE), stdin
 * and stdout opened (a message on stderr when they cannot be), reading
 * started, reading stopped (exit), the buffers freed. */
void ddx_lsp_io_init(ddx_lsp_server_t *s);
int ddx_lsp_io_open(ddx_lsp_server_t *s);
int ddx_lsp_io_read_start(ddx_lsp_server_t *s);
void ddx_lsp_io_stop_reading(ddx_lsp_server_t *s);
void ddx_lsp_io_free(ddx_lsp_server_t *s);

/* ------------------------------------------------------------- rpc.c */
void ddx_lsp_notify(ddx_lsp_server_t *s, const char *method, json_t *params);
void ddx_lsp_reply_error(ddx_lsp_server_t *s, json_t *id, int code, const char *msg);
int64_t ddx_lsp_request(ddx_lsp_server_t *s, const char *method, json_t *params);
void ddx_lsp_log(ddx_lsp_server_t *s, int type, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
json_t *ddx_lsp_fail(ddx_lsp_call_t *call, int code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
json_t *ddx_lsp_jstr(const char *str, size_t n);
void ddx_lsp_reply(ddx_lsp_server_t *s, json_t *id, json_t *result);
void ddx_lsp_process_batch(ddx_lsp_server_t *s, json_t **msgs, size_t n);
void ddx_lsp_rpc_init(ddx_lsp_server_t *s);
void ddx_lsp_rpc_free(ddx_lsp_server_t *s);

/* ------------------------------------------------------- lifecycle.c */
void ddx_lsp_stop(ddx_lsp_server_t *s, int code);
json_t *ddx_lsp_initialize(ddx_lsp_server_t *s, json_t *params, ddx_lsp_call_t *call);
json_t *ddx_lsp_initialized(ddx_lsp_server_t *s, json_t *params, ddx_lsp_call_t *call);
json_t *ddx_lsp_shutdown(ddx_lsp_server_t *s, json_t *params, ddx_lsp_call_t *call);
json_t *ddx_lsp_exit(ddx_lsp_server_t *s, json_t *params, ddx_lsp_call_t *call);
json_t *ddx_lsp_cancel(ddx_lsp_server_t *s, json_t *params, ddx_lsp_call_t *call);
json_t *ddx_lsp_set_trace(ddx_lsp_server_t *s, json_t *params, ddx_lsp_call_t *call);

/* ------------------------------------------------------- workspace.c */
void ddx_lsp_apply_settings(ddx_lsp_server_t *s, json_t *settings, bool reload);
json_t *ddx_lsp_did_change_configuration(ddx_lsp_server_t *s, json_t *params, ddx_lsp_call_t *call);
void ddx_lsp_add_folder(ddx_lsp_server_t *s, const char *uri);
json_t *ddx_lsp_did_change_folders(ddx_lsp_server_t *s, json_t *params, ddx_lsp_call_t *call);
json_t *ddx_lsp_did_change_watched_files(ddx_lsp_server_t *s, json_t *params, ddx_lsp_call_t *call);
void ddx_lsp_ws_free(ddx_lsp_server_t *s);

/* ------------------------------------------------------------ text.c */
ddx_lsp_text_t *ddx_lsp_text_new(const char *data, size_t len);
ddx_lsp_text_t *ddx_lsp_text_ref(ddx_lsp_text_t *t);
void ddx_lsp_text_unref(ddx_lsp_text_t *t);
size_t ddx_lsp_line_of(const ddx_lsp_text_t *t, size_t offset);
/* Byte offset of an LSP position (clamped as LSP says). */
size_t ddx_lsp_offset(const ddx_lsp_text_t *t, int enc, size_t line, size_t character);
/* LSP position {line, character} of a byte offset. */
json_t *ddx_lsp_position(const ddx_lsp_text_t *t, int enc, size_t offset);
json_t *ddx_lsp_range(const ddx_lsp_text_t *t, int enc, size_t start, size_t end);
json_t *ddx_lsp_line_range(const ddx_lsp_text_t *t, int enc, size_t line);
/* Reads {line, character}; false when it is not one. */
bool ddx_lsp_get_position(json_t *pos, size_t *line, size_t *character);
char *ddx_lsp_uri_to_path(const char *uri);
char *ddx_lsp_path_to_uri(const char *path);
const char *ddx_lsp_basename(const char *path);
size_t ddx_lsp_line_end(const ddx_lsp_text_t *t, size_t line);
void ddx_lsp_wc_free(ddx_lsp_wc_t *w);
ddx_lsp_text_t *ddx_lsp_wc_finish(ddx_lsp_wc_t *w);
int ddx_lsp_apply_change(ddx_lsp_server_t *s, ddx_lsp_doc_t *d, ddx_lsp_wc_t *w, bool *live,
                         json_t *ch, bool last, const char **why);

/* ------------------------------------------------------- documents.c */
ddx_lsp_doc_t *ddx_lsp_doc_find(ddx_lsp_server_t *s, const char *uri);
void ddx_lsp_doc_free(ddx_lsp_doc_t *d);
int ddx_lsp_doc_kind(const char *uri, const char *language, const char *text, size_t len);
void ddx_lsp_doc_unlink(ddx_lsp_server_t *s, ddx_lsp_doc_t *d);

/* ------------------------------------------------------------ sync.c */
json_t *ddx_lsp_did_open(ddx_lsp_server_t *s, json_t *params, ddx_lsp_call_t *call);
json_t *ddx_lsp_did_change(ddx_lsp_server_t *s, json_t *params, ddx_lsp_call_t *call);
json_t *ddx_lsp_did_close(ddx_lsp_server_t *s, json_t *params, ddx_lsp_call_t *call);
json_t *ddx_lsp_did_save(ddx_lsp_server_t *s, json_t *params, ddx_lsp_call_t *call);

/* --------------------------------------------------------- catalog.c */
ddx_lsp_catalog_t *ddx_lsp_catalog_ref(ddx_lsp_catalog_t *c);
void ddx_lsp_catalog_unref(ddx_lsp_catalog_t *c);
int ddx_lsp_catalog_reload(ddx_lsp_server_t *s, char *errbuf, size_t errcap);
void ddx_lsp_result_free(ddx_lsp_result_t *r);
char *ddx_lsp_rule_href(const ddx_lsp_catalog_t *c, const ddx_rule_t *r);
char *ddx_lsp_rule_file_uri(const ddx_rule_t *r);

/* ------------------------------------------------------------ jobs.c */
void ddx_lsp_schedule_scan(ddx_lsp_server_t *s, ddx_lsp_doc_t *d);
void ddx_lsp_cancel_jobs(ddx_lsp_server_t *s);
bool ddx_lsp_cancel_request(ddx_lsp_server_t *s, json_t *id);
void ddx_lsp_progress_response(ddx_lsp_server_t *s, int64_t id, bool ok);
void ddx_lsp_progress_tick(ddx_lsp_server_t *s);
json_t *ddx_lsp_work_done_cancel(ddx_lsp_server_t *s, json_t *params, ddx_lsp_call_t *call);
void ddx_lsp_progress_want(ddx_lsp_server_t *s, ddx_lsp_job_t *j, json_t *token);
void ddx_lsp_job_free(ddx_lsp_job_t *j);
ddx_lsp_job_t *ddx_lsp_job_new(ddx_lsp_server_t *s, int kind);
int ddx_lsp_job_queue(ddx_lsp_server_t *s, ddx_lsp_job_t *j);
/* The progress timer closed (exit). */
void ddx_lsp_progress_stop(ddx_lsp_server_t *s);

/* ----------------------------------------------------- diagnostics.c */
void ddx_lsp_publish(ddx_lsp_server_t *s, const char *uri, const ddx_lsp_result_t *r,
                     int64_t version, bool has_version);
void ddx_lsp_publish_doc(ddx_lsp_server_t *s, ddx_lsp_doc_t *d, const ddx_lsp_text_t *before);
/* The held-hang timer closed (shutdown, exit). */
void ddx_lsp_stall_stop(ddx_lsp_server_t *s);

/* -------------------------------------------------------- commands.c */
json_t *ddx_lsp_execute_command(ddx_lsp_server_t *s, json_t *params, ddx_lsp_call_t *call);

/* ----------------------------------------------------------- hover.c */
json_t *ddx_lsp_hover(ddx_lsp_server_t *s, json_t *params, ddx_lsp_call_t *call);

/* --------------------------------------------------------- actions.c */
json_t *ddx_lsp_code_action(ddx_lsp_server_t *s, json_t *params, ddx_lsp_call_t *call);
/* The workspace config index behind log quick fixes (built on the thread
 * pool; see actions.c). Invalidate: the files may have changed
 * (didChangeWatchedFiles, folders, settings). doc_event: a document was
 * opened, closed or saved (a JSON one invalidates). cancel: answers a
 * deferred code action request ($/cancelRequest); false when none has id.
 * cancel_all: answers every deferred one (shutdown, exit) and stops the
 * refresh. free: at the end, after the loop ran out. */
void ddx_lsp_actions_invalidate(ddx_lsp_server_t *s);
void ddx_lsp_actions_doc_event(ddx_lsp_server_t *s, const ddx_lsp_doc_t *d);
bool ddx_lsp_actions_cancel(ddx_lsp_server_t *s, json_t *id);
void ddx_lsp_actions_cancel_all(ddx_lsp_server_t *s, const char *why);
void ddx_lsp_actions_free(ddx_lsp_server_t *s);
/* ddx.showFix [{"message", "copy"?}]: a quick fix that lives outside the
 * ds_config (the HF Trainer's flags), or why none applies, shown with
 * window/showMessage; the result {"copy": ...} is the text to copy. */
json_t *ddx_lsp_cmd_show_fix(ddx_lsp_server_t *s, json_t *params, ddx_lsp_call_t *call);

/* ---------------------------------------------------------- config.c */
/* Parses text; NULL with why filled when it is not plain JSON. */
ddx_lsp_cfg_t *ddx_lsp_cfg_parse(const char *text, size_t len, char *why, size_t whycap);
void ddx_lsp_cfg_free(ddx_lsp_cfg_t *c);
bool ddx_lsp_cfg_is_deepspeed(const ddx_lsp_cfg_t *c);
int ddx_lsp_cfg_plan(const ddx_lsp_cfg_t *c, const char *patch_json, ddx_lsp_edit_t **edits,
                     size_t *nedits, char **title, char *why, size_t whycap);
void ddx_lsp_edits_free(ddx_lsp_edit_t *e, size_t n);
/* The dotted key path ("zero_optimization.stage") of the key string that
 * covers byte offset off in a JSON text, or NULL. Tolerant of bad JSON. */
char *ddx_lsp_json_key_at(const char *text, size_t len, size_t off, size_t *kstart, size_t *kend);
/* The schema (loaded from the built-in rules folder on first use), or NULL
 * (logged once). */
const ddx_dscheck_t *ddx_lsp_cfg_schema(ddx_lsp_server_t *s);
void ddx_lsp_cfg_facts(ddx_lsp_server_t *s, ddx_dscheck_facts_t *f, ddx_lsp_cfg_src_t *src);
/* True when an open JSON document is to be checked as a DeepSpeed config
 * (by name, or by its content when res is given). */
bool ddx_lsp_cfg_doc_is_ds(const ddx_lsp_doc_t *d, const ddx_dscheck_result_t *res);
/* Checks an open JSON document and publishes (or clears) its diagnostics. */
void ddx_lsp_cfg_check_doc(ddx_lsp_server_t *s, ddx_lsp_doc_t *d);
/* Checks every open JSON document again (settings or log facts changed). */
void ddx_lsp_cfg_check_all(ddx_lsp_server_t *s);
/* A closed document's config diagnostics go away with it. */
void ddx_lsp_cfg_doc_closed(ddx_lsp_server_t *s, ddx_lsp_doc_t *d);
/* Worker side: what a log text says about the job (pure, thread-safe). */
void ddx_lsp_logfacts_from_text(const char *text, size_t len, ddx_lsp_logfacts_t *f);
/* Loop side: adds what a diagnosis' hits say (GPU total, dp_world_size). */
void ddx_lsp_logfacts_from_scan(const ddx_scan_t *scan, ddx_lsp_logfacts_t *f);
/* A finished log diagnosis updates the server's log facts (and rechecks
 * the open configs when they changed). */
void ddx_lsp_cfg_log_diagnosed(ddx_lsp_server_t *s, const char *uri, const ddx_lsp_result_t *r);
/* The Trainer's side of a patch (ddx_dsconfig_plan_hf with the values the
 * log gave): 0 with *flags (malloc'd) to add to the training command and
 * *exact false when a value in it is a placeholder, or -1 with why. */
int ddx_lsp_cfg_plan_hf(const ddx_lsp_cfg_t *c, const char *patch_json, const ddx_lsp_logfacts_t *f,
                        char **flags, bool *exact, char *why, size_t whycap);
/* The Trainer flags that must change along with edits planned on c (see
 * ddx_dsconfig_hf_flags_after); false when none. */
bool ddx_lsp_cfg_hf_flags_after(const ddx_lsp_cfg_t *c, const ddx_lsp_edit_t *edits, size_t n,
                                char *buf, size_t cap);
void ddx_lsp_mem_inputs(ddx_lsp_server_t *s, const ddx_lsp_result_t *log, ddx_mem_inputs_t *in,
                        ddx_lsp_mem_src_t *src);
/* The memory table of a ds_config document (ddx_mem_markdown of its
 * estimate, with where the facts came from and what is missing), malloc'd,
 * or NULL when its text is not a JSON object. */
char *ddx_lsp_cfg_memory_markdown(ddx_lsp_server_t *s, const ddx_lsp_doc_t *d);
/* True when the JSON text of a file matches a config DeepSpeed printed
 * (every value of the file equal, "auto" matching anything). */
bool ddx_lsp_cfg_matches_print(const char *text, size_t len, const char *printed);
/* A model config.json may have come, gone or changed: search again. */
void ddx_lsp_cfg_model_changed(ddx_lsp_server_t *s);
void ddx_lsp_cfgstate_free(ddx_lsp_server_t *s);

#endif
