/* ddx/rules.h - owns the failure catalog: loading rule files (JSON) from
 * folders, validating every field with errors that name the file and JSON
 * path, compiling signature and context regexes (pcre2, JIT when available)
 * and the prefilter over their literals. The catalog is immutable after
 * loading and may be shared by concurrent scans (each scan brings its own
 * pcre2 match data). */
#ifndef DDX_RULES_H
#define DDX_RULES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ddx/prefilter.h"
#include "ddx/util.h"

typedef enum { DDX_SEV_INFO = 0, DDX_SEV_WARNING = 1, DDX_SEV_ERROR = 2 } ddx_severity_t;
typedef enum { DDX_ROLE_CAUSE = 0, DDX_ROLE_COLLATERAL = 1, DDX_ROLE_WRAPPER = 2 } ddx_role_t;
typedef enum { DDX_TRIGGER_MATCH = 0, DDX_TRIGGER_NO_ERROR = 1 } ddx_trigger_t;

typedef struct ddx_strs {
  const char **v;
  size_t n;
} ddx_strs_t;

typedef struct ddx_condition {
  const char *fact;
  const char *op;
  bool has_value;
  double number;        /* when ref_fact is NULL */
  const char *ref_fact; /* value "k*fact" or "fact*fact" */
  double ref_factor;
  const char *ref_fact2; /* value "fact*fact": the first factor is a fact */
} ddx_condition_t;

/* A compiled regex with its literals and named-capture table. */
typedef struct ddx_pattern {
  const char *id;
  const char *regex;
  ddx_strs_t literals;
  void *code; /* pcre2_code_8*, owned by the catalog */
  void *mctx; /* pcre2_match_context_8* with match/depth limits, owned likewise */
  uint32_t ncaptures;
  const char **capture_names; /* indexed by group number, NULL for unnamed */
  bool has_rank;              /* a capture is named "rank" (it places the event) */
  double confidence;
  bool fallback;
  const char *title;      /* signature: what its events mean, when the rule's
                             title would overstate it (a precursor warning);
                             NULL: the rule's */
  uint32_t min_count;     /* signature: events of it needed before they count */
  int severity;           /* -1: the rule's */
  ddx_condition_t *conds; /* signature-level conditions (with the rule's) */
  size_t nconds;
  /* context-only fields */
  int owner; /* -1: the rule's context; else the index of its signature */
  int before, after;
  bool scope_file, same_rank, absent;
  bool clue;  /* a token clue (ddx_clue_t): kept like a file-scope context,
                 never a condition of the rule's events */
  bool every; /* a clue placed by the frames (after_frame): every occurrence
                 is kept, not only the first of each input */
} ddx_pattern_t;

/* A weighted clue of the differential (a rule's "clues"): evidence that
 * makes the class more (weight > 0) or less (weight < 0) likely without
 * deciding it. Kinds: a frame of the failing traceback ("frame": a regex
 * on "file:function"), the lifecycle phase the frames give ("phase": ids
 * of the phase table), a token anywhere in the input ("regex" and
 * "literals": stored as the rule's file-scope context ctx[ctx_index]),
 * a relation between facts ("conditions" over the facts of the rule's
 * incident and of its token clues). */
typedef enum {
  DDX_CLUE_FRAME = 0,
  DDX_CLUE_PHASE = 1,
  DDX_CLUE_TOKEN = 2,
  DDX_CLUE_RELATION = 3
} ddx_clue_kind_t;

typedef struct ddx_clue {
  const char *id, *why;
  ddx_clue_kind_t kind;
  double weight;
  void *frame_code; /* DDX_CLUE_FRAME (and a required token's regex):
                       pcre2_code_8*, owned by the catalog */
  ddx_strs_t phases;
  int ctx_index;   /* DDX_CLUE_TOKEN */
  int after_frame; /* DDX_CLUE_TOKEN: > 0: only on the innermost frame's line
                      or the after_frame lines below it (its source line, a
                      caret line), e.g. an import statement there */
  bool required;   /* DDX_CLUE_TOKEN, a gate: no ctx pattern, no literals;
                      its regex (frame_code) is matched on the lines the scan
                      kept and the frames' paths: without a match the class
                      is no candidate unless it has a line of its own (a GPU
                      class in a CPU-only log) */
  ddx_condition_t *conds;
  size_t nconds;
} ddx_clue_t;

/* One lifecycle phase of the phase table (rules/ *.phases.json): the
 * frames (regexes on "file:function") that place a traceback in it. */
typedef struct ddx_phase {
  const char *id, *title, *file;
  void **frame_codes; /* pcre2_code_8*, owned by the catalog */
  size_t nframes;
} ddx_phase_t;

typedef struct ddx_symptom {
  const char *text, *why;
} ddx_symptom_t;

/* One code example of the encyclopedia: the fix on one stack. */
typedef struct ddx_example {
  const char *stack; /* one of DDX_STACKS */
  const char *title, *lang, *code, *why;
} ddx_example_t;

/* The encyclopedia's families (the hub's columns) and stacks, in order. */
#define DDX_FAMILIES                                                                               \
  "memory", "communication", "numerics", "configuration", "environment", "checkpoint",             \
      "parallelism", "generic"
#define DDX_STACKS "pytorch", "hf", "deepspeed", "megatron", "vllm"

typedef struct ddx_sample {
  const char *text, *source, *why;
  ddx_strs_t fact_names, fact_values;
} ddx_sample_t;

typedef struct ddx_rule {
  uint32_t index;
  const char *file;
  const char *id, *title, *framework, *phase;
  ddx_strs_t tags;
  ddx_severity_t severity;
  ddx_role_t role;
  int priority;
  ddx_trigger_t trigger;
  bool anchor_last;
  uint32_t min_count; /* events needed before the rule makes an incident (1) */
  ddx_pattern_t *sigs;
  size_t nsigs;
  ddx_pattern_t *ctx;
  size_t nctx;
  ddx_condition_t *conds;
  size_t nconds;
  ddx_strs_t explains;
  const char *headline; /* optional "{type}: {message}" template over facts */
  const char *summary, *mechanism, *affects, *verify, *prevention, *fingerprint;
  ddx_symptom_t *symptoms;
  size_t nsymptoms;
  ddx_strs_t checklist, fix, related, references, missing;
  const char *config_patches_json; /* the config_patches array as JSON text, or NULL */
  ddx_sample_t *positive, *negative;
  size_t npositive, nnegative;
  /* the encyclopedia (all optional; NULL / 0 when absent) */
  const char *family; /* one of DDX_FAMILIES */
  ddx_example_t *examples;
  size_t nexamples;
  const char *confirm, *scale;
  const char *inference_affected, *inference_note; /* "yes" / "no" / "partly" */
  const char *compare_group, *compare_where, *compare_separates;
  ddx_clue_t *clues; /* the differential's weighted evidence */
  size_t nclues;
  double prior;       /* relative base rate among real failures (default 1) */
  bool inferred_only; /* no signatures: the engine raises it for a traceback
                         cut before its error line that no clue places */
  bool via_generic;   /* "via_generic": its failures often surface as a generic
                         exception (ValueError, RuntimeError, ...) whose frames
                         say where: a catch-all primary yields to it when its
                         clues are strong */
  bool marker;        /* "marker": "checkpoint": its events are saved
                         checkpoints, never incidents; the last one before a
                         failure began is where to resume */
} ddx_rule_t;

/* Literal refs with this rule index are the engine's own traceback
 * patterns (pattern 0: "Traceback (most recent call last)", 1: a frame
 * line "File \"...\", line N, in f", 2: a launcher layout line, see
 * ddx/layout.h, 3 and 4: frames of notebook and rich tracebacks), not a
 * catalog rule. */
#define DDX_BUILTIN_RULE UINT32_MAX
enum {
  DDX_BUILTIN_TB_START = 0,
  DDX_BUILTIN_TB_FRAME = 1,
  DDX_BUILTIN_LAYOUT = 2,
  DDX_BUILTIN_TB_NOTEBOOK = 3, /* IPython: File /path.py:12, in f() */
  DDX_BUILTIN_TB_RICH = 4      /* rich: │ /path.py:12 in f │ */
};

/* Where a prefilter literal leads: rule index, pattern index, is context. */
typedef struct ddx_literal_ref {
  uint32_t rule;
  uint16_t pattern;
  uint8_t is_ctx;
} ddx_literal_ref_t;

typedef struct ddx_catalog {
  ddx_arena_t arena;
  ddx_rule_t *rules;
  size_t nrules;
  ddx_prefilter_t *prefilter;
  ddx_literal_ref_t *lit_refs; /* indexed by prefilter literal id */
  size_t nlits;
  /* The same literals split in two, for blocks where every anchor-last
   * rule has stored its cap (ddx/scan.h): pf_last holds those rules'
   * signature literals, pf_rest all the others; *_ids map their literal
   * ids to the full prefilter's. NULL when no rule is anchor-last. */
  ddx_prefilter_t *pf_rest, *pf_last;
  uint32_t *rest_ids, *last_ids;
  uint32_t npatterns;  /* signatures + contexts over all rules */
  bool jit;            /* JIT compiled */
  ddx_strs_t warnings; /* non-fatal loader warnings */
  ddx_phase_t *phases; /* the lifecycle phase table, in file order: the
                          first phase whose frame matches wins */
  size_t nphases;
} ddx_catalog_t;

/* Loads every *.json (recursively, skipping *.schema.json) in the given
 * files/folders; files named *.phases.json hold phase tables. On error returns a negative code with
 * err->msg naming the file and JSON path; *out is then NULL. */
int ddx_catalog_load(ddx_catalog_t **out, const char *const *paths, size_t npaths,
                     ddx_error_t *err);
/* The same from rule texts in memory (names are used in error messages). */
int ddx_catalog_load_texts(ddx_catalog_t **out, const char *const *names, const char *const *texts,
                           const size_t *lens, size_t n, ddx_error_t *err);
void ddx_catalog_free(ddx_catalog_t *cat);
/* The built-in catalog's folder, as the CLI and the language server find
 * it: $DDX_RULES, else next to the running binary (<exe>/../rules in a
 * build tree, <exe>/../share/ddx/rules installed, <exe>/rules), else
 * source_dir (the tree it was built from; may be NULL), else "rules".
 * The result is env, buf (cap bytes), source_dir or a literal. */
const char *ddx_catalog_default_dir(char *buf, size_t cap, const char *source_dir);
const ddx_rule_t *ddx_catalog_find(const ddx_catalog_t *cat, const char *id);

/* Runs a pattern on text; returns 1 on match (filling caps with up to
 * maxcaps (start,end) offset pairs, -1 for unset), 0 no match, <0 error
 * (e.g. the match limit was hit). match_data is a pcre2_match_data_8*
 * created by ddx_match_data_new. */
void *ddx_match_data_new(const ddx_catalog_t *cat);
void ddx_match_data_free(void *md);
int ddx_pattern_match(const ddx_pattern_t *p, const char *text, size_t len, void *md,
                      size_t *ovector_out, uint32_t maxpairs);

/* The phase of the table a frame (file, function) belongs to, or NULL. */
const ddx_phase_t *ddx_catalog_phase_of(const ddx_catalog_t *cat, const char *file,
                                        const char *func);
/* True when a frame (file, function) matches a frame clue. */
/* Whether a required clue's regex matches `text` (NUL-terminated). */
bool ddx_clue_gate_match(const ddx_clue_t *c, const char *text);
bool ddx_clue_frame_match(const ddx_clue_t *c, const char *file, const char *func);
const ddx_phase_t *ddx_catalog_find_phase(const ddx_catalog_t *cat, const char *id);

const char *ddx_severity_name(int s);
const char *ddx_role_name(int r);

/* The encyclopedia fields (family, examples, confirm, scale, inference) r
 * lacks, written to buf as "family, scale"; returns how many. `ddx rules
 * check` requires them on the built-in catalog. */
size_t ddx_rule_encyclopedia_missing(const ddx_rule_t *r, char *buf, size_t cap);

/* What `ddx rules check` says of a loaded catalog beyond its samples, one
 * finding each, so that the CLI and the language server (diagnostics on a
 * team's rule files) say the same: literals that are not selective, too
 * many short literals for the SIMD pass, missing encyclopedia fields and
 * `related` ids not in the catalog. Those last two fail with strict (the
 * built-in catalog, --strict), else warn. In catalog order (rule index),
 * the catalog-wide finding first. */
typedef enum { DDX_CHECK_WARNING = 0, DDX_CHECK_FAIL = 1 } ddx_check_level_t;
typedef struct ddx_check {
  ddx_check_level_t level;
  const ddx_rule_t *rule; /* NULL: the catalog as a whole */
  const char *where;      /* "ds.x.signatures[0]", "$.related[1]", the rule's id; NULL */
  const char *subject;    /* the JSON string it is about (a literal, a related
                             id, the rule's id), to place it in the file; NULL */
  const char *message;
} ddx_check_t;
typedef struct ddx_checks {
  ddx_arena_t arena; /* owns the strings */
  ddx_vec_t list;    /* ddx_check_t */
} ddx_checks_t;
/* Fills *out (ddx_checks_free it, also on error); 0 or DDX_ENOMEM. */
int ddx_catalog_check(const ddx_catalog_t *cat, bool strict, ddx_checks_t *out);
void ddx_checks_free(ddx_checks_t *c);
/* "warning: FILE: WHERE: MESSAGE" as ddx rules check prints it; without
 * the level and the file (with_file false) for a diagnostic on that file. */
void ddx_check_format(const ddx_check_t *c, bool with_file, char *buf, size_t cap);

#endif
