/* ddx/diagnose.h - owns the differential diagnosis: from a scan's hits to
 * ranked incidents. It resolves one rule per line (priority, context
 * windows, fact conditions), aggregates events per rule (ranks, counts,
 * the initiating event), ranks incidents (error before warning, causes
 * before wrappers and collateral, real evidence before fallback, then
 * priority, then time) and attaches collateral, confidence and missing
 * facts. Tracebacks that no line explains (a paste cut before its error
 * line) become inferred incidents; each traceback gets its lifecycle
 * phase from the catalog's phase table, and the primary failure gets a
 * differential: every cause class its evidence (decisive lines, weighted
 * clues, priors) touches, scored. Everything it returns is owned by the
 * ddx_diagnosis_t. */
#ifndef DDX_DIAGNOSE_H
#define DDX_DIAGNOSE_H

#include "ddx/rules.h"
#include "ddx/scan.h"
#include "ddx/util.h"

#define DDX_MAX_FACTS 32

typedef struct ddx_collateral {
  const ddx_rule_t *rule;
  ddx_rankset_t ranks;
  uint64_t count;
  const ddx_hit_t *first; /* earliest event */
  const char *why;        /* why it counts as collateral */
  int32_t rank;           /* the rank its own evidence points at, -1 unknown */
  int32_t local_rank;     /* its local rank, -1 unknown */
} ddx_collateral_t;

/* One piece of evidence for the initiating rank: where it comes from
 * ("prefix", "capture", "layout", "launcher-pid", "launcher-table",
 * "events", "traceback", "node+local", "complement", "launcher-root-cause",
 * "launcher-local", "launcher-first-failure",
 * "inference"), the rank it names and how much it weighs (0..1). */
typedef struct ddx_rank_evidence {
  const char *source;
  int32_t rank;
  double weight;
  bool consistent; /* agrees with the incident's local rank and node */
} ddx_rank_evidence_t;

typedef struct ddx_incident {
  const ddx_rule_t *rule;
  int severity;
  int role;
  bool fallback;        /* only fallback evidence (e.g. an exit code) */
  const ddx_hit_t *hit; /* the initiating event */
  int32_t rank;         /* global rank of the initiating event, -1 unknown */
  int32_t local_rank;   /* -1 unknown */
  ddx_rankset_t ranks;  /* every rank with an event of this rule */
  uint64_t count;       /* events, including those past the storage cap */
  double confidence;
  ddx_fact_t *facts; /* the initiating event's facts, then the first
                        value of any other fact from the incident's
                        other events (e.g. a wrapped continuation line) */
  size_t nfacts;
  ddx_collateral_t *collateral;
  size_t ncollateral;
  const char **missing;
  size_t nmissing;
  const char *rank_note;      /* how the rank was found, when inferred */
  const char *rank_source;    /* the rank_evidence source the rank was placed
                                 by before resolve_rank (launcher-pid,
                                 launcher-table, inference), or NULL */
  const ddx_frame_t **frames; /* the traceback that ends at the initiating
                                 line, outermost first (same rank only) */
  size_t nframes;
  const ddx_frame_t *user_frame;      /* innermost frame outside site-packages */
  ddx_rankset_t quiet_first;          /* anchor-last (progress) rules: the ranks
                                         whose progress stopped first */
  ddx_rank_evidence_t *rank_evidence; /* primary: every piece of rank evidence */
  size_t nrank_evidence;
  int32_t *rank_candidates; /* primary, rank unknown: the ranks it can be */
  size_t nrank_candidates;
  bool inferred;                    /* the class comes from partial evidence (a
                                       traceback cut before its error line) and
                                       the differential, not a decisive line */
  const ddx_phase_t *phase;         /* lifecycle phase from the frames, or NULL */
  const ddx_frame_t *library_frame; /* innermost frame inside a library */
} ddx_incident_t;

/* One class of the differential: its share of the evidence and the
 * evidence for and against it, in words. */
typedef struct ddx_candidate {
  const ddx_rule_t *rule;
  double score;  /* 0..1; the candidates and "none of these" add up to 1 */
  bool decisive; /* a decisive line of its own is in the text */
  const char **pro, **con;
  size_t npro, ncon;
} ddx_candidate_t;

typedef struct ddx_diagnosis {
  ddx_arena_t arena;
  const ddx_scan_t *scan;
  ddx_incident_t *incidents; /* [0] is the primary diagnosis */
  size_t n;
  /* The differential of the primary failure: every cause class the
   * evidence touches, best first (at most DDX_MAX_CANDIDATES), and the
   * one missing fact that would separate the first two (or NULL). */
  ddx_candidate_t *differential;
  size_t ndifferential;
  const char *separator;
  /* The last checkpoint saved before the failure began (a marker rule's
   * event: its facts name the path, tag or step), or NULL. */
  const ddx_hit_t *resume;
} ddx_diagnosis_t;

#define DDX_MAX_CANDIDATES 6

int ddx_diagnose(ddx_diagnosis_t *d, const ddx_scan_t *scan, ddx_error_t *err);
void ddx_diagnosis_free(ddx_diagnosis_t *d);

/* The fact named name of an incident (merged over its events), or NULL. */
const char *ddx_incident_fact(const ddx_incident_t *inc, const char *name);
/* The fact named name of a hit, or NULL. */
const char *ddx_hit_fact(const ddx_hit_t *h, const char *name);
/* What an incident is called: its initiating signature's title when the
 * rule gives it one (a precursor warning), else the rule's. */
const char *ddx_incident_title(const ddx_incident_t *inc);
/* True when the diagnosis holds an error-severity incident. */
bool ddx_diagnosis_has_error(const ddx_diagnosis_t *d);

#endif
