/* ddx/dscheck.h - owns checking a DeepSpeed config the way DeepSpeed reads
 * it: the JSON Schema rules/ds_config.schema.json (loaded once, immutable
 * afterwards and shareable between threads), a tolerant reader of the
 * config text that keeps byte positions (DeepSpeed reads the file with
 * hjson: comments and trailing commas are accepted here too), the findings
 * (unknown keys in DeepSpeed's strict blocks, keys it silently ignores,
 * wrong types, enum values and ranges, deprecated names, duplicate keys,
 * fp16 and bf16 both on, offload_param below stage 3, the batch triple for
 * a known data-parallel size, "auto" values DeepSpeed drops), each with a
 * byte range and, for a misspelt or renamed key, a rename patch in the
 * config_patches format that ddx_dsconfig_plan turns into a text edit; the
 * model-state memory estimate per GPU from the ZeRO formulas; and a model's
 * parameter count from its Hugging Face config.json.
 *
 * Pure engine code: no libuv, no LSP, no global state; the only I/O is
 * ddx_dscheck_load reading the schema file. */
#ifndef DDX_DSCHECK_H
#define DDX_DSCHECK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ddx/util.h"

typedef struct ddx_dscheck ddx_dscheck_t;

/* Loads the schema (a file, or its text). DDX_EIO / DDX_EINVAL with err
 * naming the file and what is wrong. */
int ddx_dscheck_load(ddx_dscheck_t **out, const char *path, ddx_error_t *err);
int ddx_dscheck_load_text(ddx_dscheck_t **out, const char *json, size_t len, ddx_error_t *err);
void ddx_dscheck_free(ddx_dscheck_t *s);
/* Number of keys the schema describes (every properties member, nested). */
size_t ddx_dscheck_nkeys(const ddx_dscheck_t *s);

/* Severities, numbered as LSP's DiagnosticSeverity. */
enum { DDX_DSCHECK_ERROR = 1, DDX_DSCHECK_WARNING = 2, DDX_DSCHECK_INFO = 3 };

typedef struct ddx_dscheck_finding {
  size_t start, end; /* bytes of the config text */
  int severity;
  const char *code; /* static: "ds-config.unknown-key", ... (see dscheck.c) */
  char *message;    /* malloc'd */
  char *path;       /* malloc'd dotted key path ("" for the whole file) */
  char *patch_json; /* malloc'd config_patches entry (a rename), or NULL */
} ddx_dscheck_finding_t;

/* What is known about the job beyond the config. 0 means unknown. The
 * *_from strings say where a fact came from (shown in messages). */
typedef struct ddx_dscheck_facts {
  double params;          /* P, model parameters */
  int64_t dp_world_size;  /* N, the data-parallel size */
  double gpu_total_bytes; /* total memory of one GPU (an OOM's `total`) */
  int64_t model_parallel; /* tp x pp: each rank holds P / model_parallel (0 = 1) */
  double trainable;       /* T, the trainable parameters (LoRA, frozen layers); 0: all P */
  const char *params_from, *world_from, *gpu_from;
} ddx_dscheck_facts_t;

#define DDX_DSCHECK_MAX_TERMS 6

typedef struct ddx_dscheck_term {
  char what[64];    /* "fp16 weights" */
  char formula[24]; /* "2P/N" */
  double bytes;
  bool cpu; /* lives in host memory (offloaded) */
} ddx_dscheck_term_t;

/* Model states per GPU (weights, gradients, optimizer states) with the ZeRO
 * formulas of the config's stage, precision and offload settings. */
typedef struct ddx_dscheck_memory {
  bool valid; /* P was known */
  bool n_known;
  int stage;  /* -1 when the config says "auto" (then 0 is assumed) */
  bool mixed; /* fp16/bf16 mixed precision (else fp32) */
  bool off_opt, off_param;
  double params;
  int64_t n;
  ddx_dscheck_term_t terms[DDX_DSCHECK_MAX_TERMS];
  size_t nterms;
  double gpu_bytes, cpu_bytes;
  double bucket_bytes; /* reduce/allgather buckets (not in gpu_bytes) */
  double live_bytes;   /* stage 3: gathered parameters bound (not in gpu_bytes) */
} ddx_dscheck_memory_t;

typedef struct ddx_dscheck_result {
  ddx_dscheck_finding_t *findings; /* sorted by start */
  size_t n, cap;
  ddx_dscheck_memory_t memory;
  bool is_deepspeed;           /* ddx_dsconfig_text_is_deepspeed (ddx/dsconfig.h) */
  bool has_zero;               /* a zero_optimization key */
  size_t zero_start, zero_end; /* its key's bytes (with the quotes) */
  size_t error_offset;         /* where the text stopped parsing (on DDX_EINVAL) */
} ddx_dscheck_result_t;

/* Reads and checks a config text. Returns 0 with the findings, or
 * DDX_EINVAL with err ("line 3, column 7: ...") and out->error_offset when
 * the text is not JSON (hjson comments and trailing commas accepted).
 * facts may be NULL. out must be freed with ddx_dscheck_result_free in both
 * cases. */
int ddx_dscheck_run(const ddx_dscheck_t *s, const char *text, size_t len,
                    const ddx_dscheck_facts_t *facts, ddx_dscheck_result_t *out, ddx_error_t *err);
void ddx_dscheck_result_free(ddx_dscheck_result_t *r);

/* Markdown documentation of a dotted key path from the schema (what it
 * does, type, default, values, "auto", strictness, memory), or NULL when
 * the schema does not know the key. malloc'd. */
char *ddx_dscheck_describe(const ddx_dscheck_t *s, const char *path);

/* The memory estimate as markdown (terms, totals, what is not counted and
 * where P and N came from), malloc'd. */
char *ddx_dscheck_memory_markdown(const ddx_dscheck_memory_t *m, const ddx_dscheck_facts_t *f);

/* The parameter count of a model from its Hugging Face config.json text:
 * num_parameters (or n_params) when present, else derived from hidden_size,
 * num_hidden_layers, vocab_size, intermediate_size and the attention heads.
 * how (may be NULL) says which. False when the text says neither. */
bool ddx_dscheck_model_params(const char *json, size_t len, double *params, char *how,
                              size_t howcap);

/* Formats bytes as "14.90 GiB" / "512.00 MiB". */
void ddx_dscheck_format_bytes(double bytes, char *out, size_t cap);

#endif
