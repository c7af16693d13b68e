/* diagnose.c - from hits to ranked incidents (see ddx/diagnose.h). */
#include "ddx/diagnose.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

/* One signature hit that won its line. */
typedef struct event {
  const ddx_hit_t *hit;
  const ddx_pattern_t *sig;
  int severity;
  int32_t rank, local_rank;
} event_t;

/* Per-rule aggregation while building incidents. */
typedef struct agg {
  event_t anchor;
  bool have;
  bool all_fallback;
  int severity;
  double confidence;
  uint64_t count;
  ddx_rankset_t ranks;
  /* collective sequence numbers (facts "seq"), for straggler inference */
  int64_t min_seq, max_seq;
  ddx_rankset_t min_seq_ranks;
  ddx_fact_t facts[DDX_MAX_FACTS]; /* first value of each fact over all events */
  size_t nfacts;
  uint32_t *sig_events; /* per signature of the rule: events (for min_count) */
} agg_t;

const char *ddx_incident_fact(const ddx_incident_t *inc, const char *name) {
  for (size_t i = 0; i < inc->nfacts; i++)
    if (!strcmp(inc->facts[i].name, name)) return inc->facts[i].value;
  return NULL;
}

const char *ddx_hit_fact(const ddx_hit_t *h, const char *name) {
  for (uint16_t i = 0; i < h->nfacts; i++)
    if (!strcmp(h->facts[i].name, name)) return h->facts[i].value;
  return NULL;
}

const char *ddx_incident_title(const ddx_incident_t *inc) {
  const ddx_rule_t *r = inc->rule;
  const ddx_hit_t *h = inc->hit;
  if (!inc->inferred && h && h->rule == r->index && h->pattern < r->nsigs &&
      r->sigs[h->pattern].title)
    return r->sigs[h->pattern].title;
  return r->title;
}

bool ddx_diagnosis_has_error(const ddx_diagnosis_t *d) {
  for (size_t i = 0; i < d->n; i++)
    if (d->incidents[i].severity == DDX_SEV_ERROR) return true;
  return false;
}

#define RANK_MAX 10000000 /* ranks, world sizes and counts read from a log: above is noise */

static int32_t parse_int(const char *s) {
  if (!s || !*s) return -1;
  char *end;
  long v = strtol(s, &end, 10);
  if (end == s || v < 0 || v > RANK_MAX) return -1;
  return (int32_t)v;
}

/* Where an event happened: prefixes first (they are the launcher's own
 * word), then captures. A local rank becomes a global one through the
 * layout the log gives (or directly on a single node). */
/* srun --label's id on a line of a torchrun job that names no host: srun
 * runs one agent per node there, so the id names the node ("srun-task-3"),
 * not a rank. */
static bool srun_node_id(const ddx_hit_t *h, const ddx_layout_t *layout, char *node, size_t cap) {
  if (!(h->meta.dialects & DDX_DIALECT_SRUN) || h->meta.host[0] || h->meta.rank < 0 ||
      !(layout->dialects &
        (DDX_DIALECT_TORCHRUN_TEE | DDX_DIALECT_TORCH_ELASTIC | DDX_DIALECT_SRUN_NODE)))
    return false;
  snprintf(node, cap, "srun-task-%d", (int)h->meta.rank);
  return true;
}

static void place_event(event_t *e, const ddx_layout_t *layout) {
  const ddx_hit_t *h = e->hit;
  int32_t rank = h->meta.rank;
  char node[DDX_HOST_MAX];
  const char *host = h->meta.host;
  if (srun_node_id(h, layout, node, sizeof node)) rank = -1, host = node;
  if (rank < 0) rank = parse_int(ddx_hit_fact(h, "rank"));
  int32_t local = h->meta.local_rank;
  if (local < 0) local = parse_int(ddx_hit_fact(h, "local_rank"));
  if (local < 0) local = parse_int(ddx_hit_fact(h, "gpu"));
  if (rank < 0 && local >= 0) rank = ddx_layout_global_rank(layout, host, local);
  e->rank = rank;
  e->local_rank = local;
}

static bool ranks_compatible(const ddx_hit_t *a, const ddx_hit_t *b) {
  if (a->meta.rank >= 0 && b->meta.rank >= 0 && a->meta.rank != b->meta.rank) return false;
  if (a->meta.local_rank >= 0 && b->meta.local_rank >= 0 &&
      a->meta.local_rank != b->meta.local_rank && !strcmp(a->meta.host, b->meta.host))
    return false;
  if (a->meta.host[0] && b->meta.host[0] && strcmp(a->meta.host, b->meta.host)) return false;
  return true;
}

/* Context hits indexed per (rule, context pattern), in scan order (input,
 * then line), so a window is found by binary search. */
typedef struct ctx_index {
  size_t *idx; /* hit indices */
  size_t n;
} ctx_index_t;

static void free_ctx_index(ctx_index_t **ix, const ddx_catalog_t *cat) {
  if (!ix) return;
  for (size_t r = 0; r < cat->nrules; r++) {
    if (!ix[r]) continue;
    for (size_t c = 0; c < cat->rules[r].nctx; c++)
      free(ix[r][c].idx);
    free(ix[r]);
  }
  free(ix);
}

/* Sorts hit indices by (input, line) of their hits (insertion sort on
 * runs that are mostly in order would do, but lists can be long). */
typedef struct pos_idx {
  uint32_t input;
  uint64_t line;
  size_t idx;
} pos_idx_t;

static int cmp_pos(const void *pa, const void *pb) {
  const pos_idx_t *a = pa, *b = pb;
  if (a->input != b->input) return a->input < b->input ? -1 : 1;
  return a->line < b->line ? -1 : a->line > b->line;
}

static void sort_by_position(size_t *idx, size_t n, const ddx_hit_t *hits) {
  pos_idx_t *tmp = malloc(n * sizeof *tmp);
  if (!tmp) return; /* unsorted: windows may be missed, never wrong memory */
  for (size_t k = 0; k < n; k++)
    tmp[k] = (pos_idx_t){hits[idx[k]].input, hits[idx[k]].line, idx[k]};
  qsort(tmp, n, sizeof *tmp, cmp_pos);
  for (size_t k = 0; k < n; k++)
    idx[k] = tmp[k].idx;
  free(tmp);
}

static ctx_index_t **build_ctx_index(const ddx_scan_t *s) {
  const ddx_catalog_t *cat = s->cat;
  ctx_index_t **ix = calloc(cat->nrules + 1, sizeof *ix);
  if (!ix) return NULL;
  for (size_t r = 0; r < cat->nrules; r++)
    if (cat->rules[r].nctx && !(ix[r] = calloc(cat->rules[r].nctx, sizeof **ix))) {
      free_ctx_index(ix, cat);
      return NULL;
    }
  const ddx_hit_t *hits = s->hits.data;
  /* two passes: count, then fill */
  for (int pass = 0; pass < 2; pass++) {
    for (size_t i = 0; i < s->hits.len; i++) {
      const ddx_hit_t *h = &hits[i];
      if (!h->is_ctx || !ix[h->rule]) continue;
      ctx_index_t *c = &ix[h->rule][h->pattern];
      if (pass == 1) c->idx[c->n] = i;
      c->n++;
    }
    if (pass == 0)
      for (size_t r = 0; r < cat->nrules; r++)
        for (size_t c = 0; ix[r] && c < cat->rules[r].nctx; c++) {
          ix[r][c].idx = malloc((ix[r][c].n + 1) * sizeof(size_t));
          ix[r][c].n = 0;
          if (!ix[r][c].idx) {
            free_ctx_index(ix, cat);
            return NULL;
          }
        }
  }
  /* Windows are found by binary search on (input, line): live inputs are
   * fed interleaved, so sort a list that is not in order already. */
  for (size_t r = 0; r < cat->nrules; r++)
    for (size_t c = 0; ix[r] && c < cat->rules[r].nctx; c++) {
      ctx_index_t *ci = &ix[r][c];
      bool sorted = true;
      for (size_t k = 1; k < ci->n && sorted; k++) {
        const ddx_hit_t *x = &hits[ci->idx[k - 1]], *y = &hits[ci->idx[k]];
        sorted = x->input < y->input || (x->input == y->input && x->line <= y->line);
      }
      if (!sorted) sort_by_position(ci->idx, ci->n, hits);
    }
  return ix;
}

static bool context_holds(const ddx_scan_t *s, ctx_index_t **ix, const ddx_rule_t *rule,
                          const ddx_hit_t *h) {
  const ddx_hit_t *hits = s->hits.data;
  for (size_t c = 0; c < rule->nctx; c++) {
    const ddx_pattern_t *cp = &rule->ctx[c];
    if (cp->clue || (cp->owner >= 0 && cp->owner != (int)h->pattern)) continue;
    const ctx_index_t *ci = ix && ix[rule->index] ? &ix[rule->index][c] : NULL;
    bool found = false;
    uint64_t lo = h->line > (uint64_t)cp->before ? h->line - (uint64_t)cp->before : 0;
    uint64_t hi = h->line + (uint64_t)cp->after;
    if (cp->scope_file) lo = 0, hi = UINT64_MAX;
    /* first context hit at or after (h->input, lo) */
    size_t a = 0, b = ci ? ci->n : 0;
    while (a < b) {
      size_t mid = (a + b) / 2;
      const ddx_hit_t *x = &hits[ci->idx[mid]];
      if (x->input < h->input || (x->input == h->input && x->line < lo))
        a = mid + 1;
      else
        b = mid;
    }
    for (size_t k = a; ci && k < ci->n && !found; k++) {
      const ddx_hit_t *x = &hits[ci->idx[k]];
      if (x->input != h->input || x->line > hi) break;
      if (cp->same_rank && !cp->scope_file && !ranks_compatible(h, x)) continue;
      found = true;
    }
    if (found == cp->absent) return false;
  }
  return true;
}

static const char *facts_get(const ddx_fact_t *f, size_t n, const char *name) {
  for (size_t i = 0; i < n; i++)
    if (!strcmp(f[i].name, name)) return f[i].value;
  return NULL;
}

static bool fact_number(const ddx_fact_t *f, size_t n, const char *name, double *out) {
  const char *v = facts_get(f, n, name);
  return v && ddx_parse_quantity(v, out);
}

/* Conditions over a set of facts (a hit's, or the differential's merged
 * facts of an incident and its clues). */
static bool facts_hold(const ddx_condition_t *conds, size_t nconds, const ddx_fact_t *f,
                       size_t nf) {
  for (size_t i = 0; i < nconds; i++) {
    const ddx_condition_t *c = &conds[i];
    double a, b, b2;
    if (!strcmp(c->op, "exists")) {
      if (!facts_get(f, nf, c->fact)) return false;
      continue;
    }
    if (!fact_number(f, nf, c->fact, &a)) return false;
    if (c->ref_fact) {
      if (!fact_number(f, nf, c->ref_fact, &b)) return false;
      b *= c->ref_factor;
      if (c->ref_fact2) {
        if (!fact_number(f, nf, c->ref_fact2, &b2)) return false;
        b *= b2;
      }
    } else {
      b = c->number;
    }
    bool ok = !strcmp(c->op, "<")    ? a < b
              : !strcmp(c->op, "<=") ? a <= b
              : !strcmp(c->op, ">")  ? a > b
              : !strcmp(c->op, ">=") ? a >= b
              : !strcmp(c->op, "==") ? a == b
                                     : a != b;
    if (!ok) return false;
  }
  return true;
}

static bool conditions_hold(const ddx_condition_t *conds, size_t nconds, const ddx_hit_t *h) {
  return facts_hold(conds, nconds, h->facts, h->nfacts);
}

/* Earlier in time when both lines carry a time, else earlier in the input. */
static bool hit_before(const ddx_hit_t *a, const ddx_hit_t *b) {
  if (a->meta.ts_ms >= 0 && b->meta.ts_ms >= 0 && a->meta.ts_ms != b->meta.ts_ms)
    return a->meta.ts_ms < b->meta.ts_ms;
  if (a->input != b->input) return a->input < b->input;
  return a->line < b->line;
}

static int sig_severity(const ddx_rule_t *r, const ddx_pattern_t *p) {
  return p->severity >= 0 ? p->severity : (int)r->severity;
}

static void add_seq(agg_t *g, const event_t *e) {
  const char *sv = ddx_hit_fact(e->hit, "seq");
  if (!sv || e->rank < 0) return;
  int64_t seq = strtoll(sv, NULL, 10);
  if (g->max_seq == 0 && g->min_seq == 0 && !g->min_seq_ranks.n) g->min_seq = g->max_seq = seq;
  if (seq > g->max_seq) g->max_seq = seq;
  if (seq < g->min_seq) {
    g->min_seq = seq;
    ddx_rankset_free(&g->min_seq_ranks);
  }
  if (seq == g->min_seq) ddx_rankset_add(&g->min_seq_ranks, e->rank);
}

static void merge_facts(ddx_fact_t *dst, size_t *n, const ddx_fact_t *src, size_t nsrc) {
  for (size_t i = 0; i < nsrc && *n < DDX_MAX_FACTS; i++) {
    if (!src[i].value[0]) continue;
    bool have = false;
    for (size_t k = 0; k < *n && !have; k++)
      have = !strcmp(dst[k].name, src[i].name);
    if (!have) dst[(*n)++] = src[i];
  }
}

static void add_event(agg_t *g, const ddx_rule_t *rule, const event_t *e) {
  bool fb = e->sig->fallback;
  g->count++;
  if (!g->sig_events) g->sig_events = calloc(rule->nsigs + 1, sizeof *g->sig_events);
  if (g->sig_events) g->sig_events[e->sig - rule->sigs]++;
  merge_facts(g->facts, &g->nfacts, e->hit->facts, e->hit->nfacts);
  add_seq(g, e);
  if (e->rank >= 0) ddx_rankset_add(&g->ranks, e->rank);
  if (e->sig->confidence > g->confidence) g->confidence = e->sig->confidence;
  if (!g->have) {
    g->have = true;
    g->anchor = *e;
    g->all_fallback = fb;
    g->severity = e->severity;
    return;
  }
  /* The anchor is the strongest evidence: real before fallback, higher
   * severity, then the earliest (or, for anchor-last rules, the latest). */
  bool better = false;
  bool afb = g->anchor.sig->fallback;
  if (afb != fb)
    better = !fb;
  else if (e->severity != g->anchor.severity)
    better = e->severity > g->anchor.severity;
  else if (rule->anchor_last) /* the last progress line, ranked or not (a tqdm bar) */
    better = !hit_before(e->hit, g->anchor.hit);
  else if ((e->rank >= 0) != (g->anchor.rank >= 0))
    better = e->rank >= 0; /* an event that names its rank says more */
  else
    better = hit_before(e->hit, g->anchor.hit);
  if (better) g->anchor = *e;
  if (!fb) g->all_fallback = false;
  if (e->severity > g->severity) g->severity = e->severity;
}

/* A process id seen with its rank on some line (torchrun's "failed
 * (exitcode: -9) local_rank: 7 (pid: 123)"), to place events that only
 * name the pid (the kernel's "Killed process 123", "Signal 9 received by
 * PID 123"). */
typedef struct pid_rank {
  long pid;
  int32_t rank, local_rank;
} pid_rank_t;

static long event_pid(const ddx_hit_t *h) {
  static const char *const names[] = {"pid", "table_pid", "signal_pid", "killed_pid"};
  for (size_t i = 0; i < sizeof names / sizeof *names; i++) {
    const char *v = ddx_hit_fact(h, names[i]);
    if (v && *v) return strtol(v, NULL, 10);
  }
  return h->meta.pid > 0 ? (long)h->meta.pid : -1;
}

static void note_pid(ddx_vec_t *pids, const event_t *e) {
  long pid = event_pid(e->hit);
  if (pid <= 0 || (e->rank < 0 && e->local_rank < 0) || pids->len >= 65536) return;
  pid_rank_t *p = ddx_vec_push(pids);
  if (p) *p = (pid_rank_t){pid, e->rank, e->local_rank};
}

/* A launcher record spread over adjacent lines (torchrun's table entry:
 * "rank : 27 (local_rank: 3)" then "exitcode : -9 (pid: 3156327)") ties a
 * pid to a rank. recent[] holds the last few events, newest last. */
#define RECENT 4
#define RECORD_SPAN 3
static void note_record(ddx_vec_t *pids, const event_t *recent, size_t nrecent, const event_t *e) {
  long pid = event_pid(e->hit);
  bool has_rank = ddx_hit_fact(e->hit, "rank") != NULL;
  for (size_t i = 0; i < nrecent; i++) {
    const event_t *o = &recent[i];
    if (o->hit->input != e->hit->input || e->hit->line - o->hit->line > RECORD_SPAN ||
        strcmp(o->hit->meta.host, e->hit->meta.host))
      continue;
    long opid = event_pid(o->hit);
    bool o_rank = ddx_hit_fact(o->hit, "rank") != NULL;
    const event_t *ranked = NULL;
    long jpid = -1;
    if (pid > 0 && !has_rank && o_rank && opid <= 0)
      ranked = o, jpid = pid;
    else if (opid > 0 && !o_rank && has_rank && pid <= 0)
      ranked = e, jpid = opid;
    if (ranked && pids->len < 65536) {
      pid_rank_t *p = ddx_vec_push(pids);
      if (p) *p = (pid_rank_t){jpid, ranked->rank, ranked->local_rank};
    }
  }
}

/* A line that names both a global and a local rank (torchrun's table:
 * "rank : 27 (local_rank: 3)") tells how that node numbers its ranks. */
typedef struct rank_pair {
  int32_t rank, local_rank;
  char host[DDX_HOST_MAX];
} rank_pair_t;

static void note_pair(ddx_vec_t *pairs, const event_t *e) {
  const ddx_hit_t *h = e->hit;
  int32_t g = h->meta.rank >= 0 ? h->meta.rank : parse_int(ddx_hit_fact(h, "rank"));
  int32_t l = parse_int(ddx_hit_fact(h, "local_rank"));
  if (l < 0) l = h->meta.local_rank;
  if (g < 0 || l < 0 || pairs->len >= 65536) return;
  rank_pair_t *p = ddx_vec_push(pairs);
  if (p) {
    p->rank = g;
    p->local_rank = l;
    memcpy(p->host, h->meta.host, sizeof p->host);
  }
}

/* When the initiating event does not name its rank, other evidence of the
 * same incident may: the same pid on a line that names the rank, or a
 * single rank among all its events. */
static void place_incident(ddx_diagnosis_t *d, ddx_incident_t *inc, const ddx_vec_t *pids,
                           const ddx_vec_t *pairs, const ddx_layout_t *layout) {
  if (inc->rank >= 0) return;
  char note[200] = "";
  const char *src = NULL;
  long pid = event_pid(inc->hit);
  if (pid <= 0) { /* another event of the incident may name it */
    const char *v = ddx_incident_fact(inc, "pid");
    pid = v ? strtol(v, NULL, 10) : -1;
  }
  const pid_rank_t *pr = pids->data;
  for (size_t i = 0; pid > 0 && i < pids->len; i++)
    if (pr[i].pid == pid && (pr[i].rank >= 0 || pr[i].local_rank >= 0)) {
      inc->rank = pr[i].rank;
      if (inc->local_rank < 0) inc->local_rank = pr[i].local_rank;
      snprintf(note, sizeof note, "rank from process id %ld, named by the launcher", pid);
      src = "launcher-pid";
      if (pr[i].rank >= 0) break;
    }
  if (inc->rank < 0 && pid > 0) {
    char host[DDX_HOST_MAX];
    int32_t local;
    if (ddx_layout_pid(layout, pid, host, sizeof host, &local)) {
      inc->local_rank = local;
      inc->rank = ddx_layout_global_rank(layout, host, local);
      snprintf(note, sizeof note,
               "rank from process id %ld, spawned by the launcher as local rank %d%s%s", pid, local,
               host[0] ? " on " : "", host);
      src = "launcher-pid";
    }
  }
  if (inc->rank < 0 && inc->local_rank >= 0) {
    /* Only an unambiguous pair counts: several nodes' tables without host
     * prefixes name the same local rank for different global ranks. */
    const rank_pair_t *rp = pairs->data;
    int32_t found = -1;
    bool ambiguous = false;
    for (size_t i = 0; i < pairs->len; i++)
      if (rp[i].local_rank == inc->local_rank && !strcmp(rp[i].host, inc->hit->meta.host)) {
        if (found >= 0 && found != rp[i].rank) ambiguous = true;
        found = rp[i].rank;
      }
    if (found >= 0 && !ambiguous) {
      inc->rank = found;
      snprintf(note, sizeof note, "local rank %d is rank %d by the launcher's own table",
               inc->local_rank, inc->rank);
      src = "launcher-table";
    }
  }
  if (inc->rank < 0 && inc->ranks.n == 1) inc->rank = inc->ranks.v[0];
  if (inc->rank >= 0 && note[0]) {
    inc->rank_note = ddx_arena_strdup(&d->arena, note);
    inc->rank_source = src;
  }
}

/* Tiers of causes: host-level evidence (the kernel OOM killer, Xid/ECC)
 * explains the rank-level symptoms it produces; specific causes compete by
 * time (the earliest failure started it); catch-alls come last. */
#define DDX_HOST_PRIORITY 90
#define DDX_CATCHALL_PRIORITY 10
static int cause_tier(const ddx_incident_t *x) {
  return x->inferred                                  ? 3
         : x->rule->priority >= DDX_HOST_PRIORITY     ? 0
         : x->rule->priority >= DDX_CATCHALL_PRIORITY ? 1
                                                      : 2;
}

/* Weak generic evidence (a catch-all class seen only through fallback
 * lines: a bare ERROR line, an exit status) leads only when nothing more
 * specific, of any role, was found. */
static bool weak_generic(const ddx_incident_t *x) {
  return x->fallback && x->rule->priority < DDX_CATCHALL_PRIORITY;
}

static int incident_cmp(const void *pa, const void *pb) {
  const ddx_incident_t *a = pa, *b = pb;
  if ((a->severity == DDX_SEV_ERROR) != (b->severity == DDX_SEV_ERROR))
    return a->severity == DDX_SEV_ERROR ? -1 : 1;
  if (weak_generic(a) != weak_generic(b)) return weak_generic(a) ? 1 : -1;
  bool ca = a->role == DDX_ROLE_CAUSE, cb = b->role == DDX_ROLE_CAUSE;
  if (ca != cb) return ca ? -1 : 1;
  if (a->fallback != b->fallback) return a->fallback ? 1 : -1;
  if (a->severity != b->severity) return b->severity - a->severity;
  if (ca && !a->fallback && a->severity == DDX_SEV_ERROR) {
    int ta = cause_tier(a), tb = cause_tier(b);
    if (ta != tb) return ta - tb;
    if (hit_before(a->hit, b->hit)) return -1;
    if (hit_before(b->hit, a->hit)) return 1;
  }
  if (a->inferred != b->inferred) return a->inferred ? 1 : -1;
  if (a->rule->priority != b->rule->priority) return b->rule->priority - a->rule->priority;
  if (hit_before(a->hit, b->hit)) return -1;
  if (hit_before(b->hit, a->hit)) return 1;
  return (int)a->rule->index - (int)b->rule->index;
}

static bool strs_has(const ddx_strs_t *s, const char *v) {
  for (size_t i = 0; i < s->n; i++)
    if (!strcmp(s->v[i], v)) return true;
  return false;
}

/* Catch-all rules (priority below 10) never stand beside a specific cause. */

static const char *collateral_reason(const ddx_incident_t *p, const ddx_incident_t *x) {
  if (x->role == DDX_ROLE_COLLATERAL)
    return "collateral class: a consequence of another rank's failure";
  if (x->role == DDX_ROLE_WRAPPER) return "wrapper: reports a failure that happened elsewhere";
  if (strs_has(&p->rule->explains, x->rule->id)) return "explained by the primary failure";
  if (x->fallback)
    return "weak evidence (an exit status or a stack frame) explained by the primary failure";
  if (x->inferred) return "a traceback cut before its error line, explained by the primary failure";
  if (x->rule->priority < DDX_CATCHALL_PRIORITY && p->rule->priority >= DDX_CATCHALL_PRIORITY)
    return "generic error raised after the primary failure";
  return NULL;
}

static void add_missing(ddx_diagnosis_t *d, ddx_incident_t *inc, const char *text) {
  const char **nv = ddx_arena_alloc(&d->arena, (inc->nmissing + 1) * sizeof *nv);
  if (!nv) return;
  if (inc->nmissing) memcpy(nv, inc->missing, inc->nmissing * sizeof *nv);
  nv[inc->nmissing++] = ddx_arena_strdup(&d->arena, text);
  inc->missing = nv;
}

static bool frame_rank_ok(const ddx_frame_t *f, const ddx_hit_t *h) {
  if (f->rank >= 0 && h->meta.rank >= 0 && f->rank != h->meta.rank) return false;
  if (f->local_rank >= 0 && h->meta.local_rank >= 0 && f->local_rank != h->meta.local_rank)
    return false;
  if (f->host[0] && h->meta.host[0] && strcmp(f->host, h->meta.host)) return false;
  return true;
}

static bool is_library_path(const char *file) {
  return strstr(file, "site-packages/") || strstr(file, "dist-packages/") ||
         strstr(file, "/lib/python") || file[0] == '<';
}

/* Reassembles the traceback that ends at the incident's line: frames of the
 * same rank above it, back to that rank's "Traceback" line. Other ranks'
 * lines in between (interleaving) are skipped, not a boundary. */
#define TB_MAX_SPAN 600 /* lines above the exception */
#define TB_MAX_GAP 80   /* lines between two frames of one traceback */
static void attach_traceback(ddx_diagnosis_t *d, const ddx_frame_t *fr, size_t nfr,
                             ddx_incident_t *inc) {
  const ddx_hit_t *h = inc->hit;
  /* last frame before the hit line in the same input */
  size_t a = 0, b = nfr;
  while (a < b) {
    size_t mid = (a + b) / 2;
    if (fr[mid].input < h->input || (fr[mid].input == h->input && fr[mid].line < h->line))
      a = mid + 1;
    else
      b = mid;
  }
  size_t n = 0, first = a;
  uint64_t last_line = h->line;
  for (size_t k = a; k-- > 0;) {
    const ddx_frame_t *f = &fr[k];
    if (f->input != h->input || h->line - f->line > TB_MAX_SPAN) break;
    if (!frame_rank_ok(f, h)) continue;
    if (last_line - f->line > TB_MAX_GAP) break;
    last_line = f->line;
    if (f->start) break;
    first = k;
    n++;
  }
  if (!n) return;
  inc->frames = ddx_arena_alloc(&d->arena, n * sizeof *inc->frames);
  if (!inc->frames) return;
  for (size_t k = first; k < a && inc->nframes < n; k++)
    if (!fr[k].start && frame_rank_ok(&fr[k], h)) inc->frames[inc->nframes++] = &fr[k];
  for (size_t k = inc->nframes; k-- > 0;)
    if (!is_library_path(inc->frames[k]->file)) {
      inc->user_frame = inc->frames[k];
      break;
    }
}

/* World size as far as the log tells: a "world_size" fact, else the
 * highest rank seen anywhere plus one. */
static int32_t world_size_seen(const ddx_scan_t *s) {
  int32_t world = s->layout->world_size > 0 ? s->layout->world_size : 0;
  const ddx_hit_t *hits = s->hits.data;
  for (size_t i = 0; i < s->hits.len; i++) {
    const char *w = ddx_hit_fact(&hits[i], "world_size");
    if (w && parse_int(w) > world) world = parse_int(w);
  }
  if (world > 0) return world;
  for (size_t i = 0; i < s->hits.len; i++) {
    int64_t r = hits[i].meta.rank;
    const char *fr = ddx_hit_fact(&hits[i], "rank");
    if (fr && parse_int(fr) > r) r = parse_int(fr);
    if (r < RANK_MAX && r + 1 > world) world = (int32_t)(r + 1);
  }
  const ddx_frame_t *fr = s->frames.data;
  for (size_t i = 0; i < s->frames.len; i++)
    if (fr[i].rank < RANK_MAX && fr[i].rank + 1 > world) world = fr[i].rank + 1;
  return world;
}

static void infer_silent_rank(ddx_diagnosis_t *d, const ddx_scan_t *s, ddx_incident_t *inc) {
  int32_t world = world_size_seen(s);
  if (world <= (int32_t)inc->ranks.n || world > 1 << 20) return;
  ddx_rankset_t silent = {0};
  for (int32_t r = 0; r < world && silent.n < 64; r++)
    if (!ddx_rankset_has(&inc->ranks, r)) ddx_rankset_add(&silent, r);
  if (silent.n == 0 || silent.n * 2 > (size_t)world) {
    ddx_rankset_free(&silent);
    return;
  }
  char rs[128], note[320];
  ddx_rankset_format(&silent, rs, sizeof rs);
  snprintf(note, sizeof note,
           "inference: %zu of %d ranks report the timeout; %s %s did not: the likely dead or "
           "stuck %s",
           inc->ranks.n, world, silent.n == 1 ? "rank" : "ranks", rs,
           silent.n == 1 ? "rank" : "ranks");
  inc->rank_note = ddx_arena_strdup(&d->arena, note);
  inc->rank_source = "inference";
  if (silent.n == 1) inc->rank = silent.v[0];
  ddx_rankset_free(&silent);
}

/* For a progress rule (hang): which ranks stopped reporting first. Ranks
 * whose last progress is earlier than everyone else's by more than a
 * margin (1% of the span, at least 30 s or 2 lines) went quiet first. */
static void note_quiet_ranks(ddx_diagnosis_t *d, const ddx_scan_t *s, ddx_incident_t *inc) {
  const ddx_rank_progress_t *pr = &s->progress[inc->rule->index];
  size_t seen = 0;
  bool by_time = true;
  int64_t lo = INT64_MAX, hi = INT64_MIN;
  for (size_t r = 0; r < pr->n; r++) {
    if (!pr->line[r]) continue;
    seen++;
    if (pr->ts[r] < 0) by_time = false;
  }
  if (seen < 2) return;
  for (size_t r = 0; r < pr->n; r++) {
    if (!pr->line[r]) continue;
    int64_t v = by_time ? pr->ts[r] : (int64_t)pr->line[r];
    if (v < lo) lo = v;
    if (v > hi) hi = v;
  }
  /* Small differences are noise (ranks start and print a few ms or lines
   * apart): with times, at least 30 s; with lines, at least 2. */
  int64_t floor_margin = by_time ? 30000 : 2;
  int64_t margin = (hi - lo) / 100 > floor_margin ? (hi - lo) / 100 : floor_margin;
  if (hi - lo <= margin) return;
  for (size_t r = 0; r < pr->n; r++)
    if (pr->line[r] && (by_time ? pr->ts[r] : (int64_t)pr->line[r]) <= lo + margin)
      ddx_rankset_add(&inc->quiet_first, (int32_t)r);
  if (inc->quiet_first.n == 0 || inc->quiet_first.n * 2 > seen) {
    ddx_rankset_free(&inc->quiet_first);
    return;
  }
  char rs[128], note[320];
  ddx_rankset_format(&inc->quiet_first, rs, sizeof rs);
  snprintf(note, sizeof note,
           "inference: %s %s stopped reporting progress first; %zu other %s went on: "
           "look at what %s was doing (py-spy dump)",
           inc->quiet_first.n == 1 ? "rank" : "ranks", rs, seen - inc->quiet_first.n,
           seen - inc->quiet_first.n == 1 ? "rank" : "ranks",
           inc->quiet_first.n == 1 ? "it" : "they");
  inc->rank_note = ddx_arena_strdup(&d->arena, note);
  inc->rank_source = "inference";
  if (inc->quiet_first.n == 1) inc->rank = inc->quiet_first.v[0];
}

static int cmp_frame(const void *pa, const void *pb) {
  const ddx_frame_t *a = pa, *b = pb;
  if (a->input != b->input) return a->input < b->input ? -1 : 1;
  return a->line < b->line ? -1 : a->line > b->line;
}

/* Frames in (input, line) order: the scan's own when it fed inputs one
 * after the other, else a sorted copy owned by the diagnosis (live inputs
 * are fed interleaved). */
static const ddx_frame_t *sorted_frames(ddx_diagnosis_t *d, const ddx_scan_t *s) {
  const ddx_frame_t *fr = s->frames.data;
  bool sorted = true;
  for (size_t i = 1; i < s->frames.len && sorted; i++)
    sorted = cmp_frame(&fr[i - 1], &fr[i]) <= 0;
  if (sorted) return fr;
  ddx_frame_t *copy = ddx_arena_alloc(&d->arena, s->frames.len * sizeof *copy);
  if (!copy) return NULL;
  memcpy(copy, fr, s->frames.len * sizeof *copy);
  qsort(copy, s->frames.len, sizeof *copy, cmp_frame);
  return copy;
}

/* One traceback as the frames show it: the frames of one rank (lane) in
 * order, from its "Traceback" line (when there is one) to its last frame. */
typedef struct tb_group {
  uint32_t input;
  int32_t rank, local_rank;
  const char *host;
  uint64_t first_line, last_line;
  ddx_vec_t frames; /* const ddx_frame_t *, outermost first */
  bool explained;   /* a signature line ends it (or sits in it) */
  bool has_start;   /* it has its "Traceback (most recent call last)" line */
  bool bare_frames; /* its prefixed "Traceback" line, then frames with no prefix */
} tb_group_t;

/* The state of one ddx_diagnose run, torn down by build_free alone. */
typedef struct build {
  ddx_diagnosis_t *d;
  const ddx_scan_t *s;
  const ddx_catalog_t *cat;
  agg_t *aggs;
  ctx_index_t **ix;
  ddx_vec_t pids;  /* pid_rank_t: which process was which rank */
  ddx_vec_t pairs; /* rank_pair_t: local and global rank named together */
  event_t recent[RECENT];
  size_t nrecent;
  ddx_incident_t *incs;
  size_t m, cap, out;
  ddx_incident_t *snap; /* the incidents before collateral is folded in */
  size_t nsnap;
  const ddx_frame_t *frames;
  size_t nframes;
  ddx_vec_t groups; /* tb_group_t */
} build_t;

static void build_free(build_t *b) {
  if (b->aggs)
    for (size_t r = 0; r < b->cat->nrules; r++) {
      ddx_rankset_free(&b->aggs[r].ranks);
      ddx_rankset_free(&b->aggs[r].min_seq_ranks);
      free(b->aggs[r].sig_events);
    }
  free(b->aggs);
  free_ctx_index(b->ix, b->cat);
  ddx_vec_free(&b->pids);
  ddx_vec_free(&b->pairs);
  for (size_t i = 0; i < b->groups.len; i++)
    ddx_vec_free(&DDX_VEC_AT(&b->groups, tb_group_t, i).frames);
  ddx_vec_free(&b->groups);
}

/* A torchrun table's time ("2026-12-04_15:07:14") in seconds from an
 * arbitrary origin (days from the civil calendar), -1 when malformed:
 * only differences between two rows are read. */
static int64_t table_seconds(const char *t) {
  int y, mo, d, h, mi, s;
  if (!t || sscanf(t, "%d-%d-%d_%d:%d:%d", &y, &mo, &d, &h, &mi, &s) != 6 || mo < 1 || mo > 12)
    return -1;
  y -= mo <= 2;
  int64_t era = (y >= 0 ? y : y - 399) / 400, yoe = y - era * 400;
  int64_t doy = (153 * (mo + (mo > 2 ? -3 : 9)) + 2) / 5 + d - 1;
  int64_t days = era * 146097 + yoe * 365 + yoe / 4 - yoe / 100 + doy;
  return days * 86400 + h * 3600 + mi * 60 + s;
}

/* The `table_time` of the table entry hit i belongs to: the time row at
 * most `back` lines above it (an entry's rows: time, host, rank,
 * exitcode, error_file, traceback). */
static int64_t entry_seconds(const ddx_hit_t *hits, size_t i, uint64_t back) {
  for (size_t k = i + 1; k-- > 0;) {
    const ddx_hit_t *x = &hits[k];
    if (x->input != hits[i].input || x->line + back < hits[i].line) break;
    const char *t = x->is_ctx ? NULL : ddx_hit_fact(x, "table_time");
    if (t) return table_seconds(t);
  }
  return -1;
}

/* A launcher table's root-cause entry row (its "rank : N (local_rank:
 * M)" under "Root Cause (first observed failure)", the context holding). */
static bool root_entry(const build_t *b, const ddx_hit_t *h) {
  return !h->is_ctx && ddx_hit_fact(h, "root_rank") &&
         context_holds(b->s, b->ix, &b->cat->rules[h->rule], h);
}

/* The rank of a launcher table's entry row ("rank : N (local_rank: M)"),
 * -1 when h is no such row. */
static int32_t table_row_rank(const build_t *b, const ddx_hit_t *h) {
  const char *rk = h->is_ctx ? NULL : ddx_hit_fact(h, "rank");
  return rk && ddx_hit_fact(h, "local_rank") && b->cat->rules[h->rule].role == DDX_ROLE_WRAPPER
             ? parse_int(rk)
             : -1;
}

/* Whether hit i, a row of a launcher table's entry, was logged well after
 * the table's root cause (first observed failure): newer torchrun lists
 * the processes it stopped itself (SIGTERM, then SIGKILL once its grace
 * period ran out) with the time they ended, 30 s after the failure that
 * made it stop them. Such an entry's signal is the launcher's teardown,
 * not a failure of its own. */
#define DDX_TEARDOWN_SECONDS 10
static bool teardown_entry(const build_t *b, size_t i) {
  const ddx_hit_t *hits = b->s->hits.data;
  int64_t at = entry_seconds(hits, i, 6);
  if (at < 0) return false;
  for (size_t k = i + 1; k < b->s->hits.len; k++) {
    const ddx_hit_t *x = &hits[k];
    if (x->input != hits[i].input || x->line > hits[i].line + 200) break;
    if (!root_entry(b, x)) continue;
    int64_t root = entry_seconds(hits, k, 3);
    return root >= 0 && at - root >= DDX_TEARDOWN_SECONDS;
  }
  return false;
}

/* The event of hits [i, j) (one line) among the match rules, or among the
 * progress rules (trigger no-error) when `progress`. */
static void resolve_line(build_t *b, size_t i, size_t j, bool progress) {
  const ddx_scan_t *s = b->s;
  const ddx_catalog_t *cat = b->cat;
  const ddx_hit_t *hits = s->hits.data;
  const ddx_hit_t *best = NULL;
  for (size_t k = i; k < j; k++) {
    const ddx_hit_t *h = &hits[k];
    if (h->is_ctx) continue;
    const ddx_rule_t *r = &cat->rules[h->rule];
    if ((r->trigger == DDX_TRIGGER_NO_ERROR) != progress) continue;
    const ddx_rule_t *br = best ? &cat->rules[best->rule] : NULL;
    if (br && (r->priority < br->priority ||
               (r->priority == br->priority &&
                r->sigs[h->pattern].confidence <= br->sigs[best->pattern].confidence)))
      continue;
    if (!context_holds(s, b->ix, r, h) || !conditions_hold(r->conds, r->nconds, h) ||
        !conditions_hold(r->sigs[h->pattern].conds, r->sigs[h->pattern].nconds, h))
      continue;
    if (r->role == DDX_ROLE_CAUSE && r->sigs[h->pattern].fallback && teardown_entry(b, k)) continue;
    best = h;
  }
  if (!best) return;
  const ddx_rule_t *r = &cat->rules[best->rule];
  event_t e = {.hit = best, .sig = &r->sigs[best->pattern]};
  e.severity = sig_severity(r, e.sig);
  place_event(&e, s->layout);
  add_event(&b->aggs[r->index], r, &e);
  note_pid(&b->pids, &e);
  note_pair(&b->pairs, &e);
  note_record(&b->pids, b->recent, b->nrecent, &e);
  if (b->nrecent == RECENT)
    memmove(b->recent, b->recent + 1, (RECENT - 1) * sizeof *b->recent), b->nrecent--;
  b->recent[b->nrecent++] = e;
}

/* 1. One rule per line: the highest priority whose context and
 * conditions hold. Hits of one line are adjacent in the hit array. A
 * progress rule (trigger no-error) does not compete for the line: a step
 * line that also reports an overflow is still progress, so the best of
 * each kind counts. */
static void resolve_lines(build_t *b) {
  const ddx_scan_t *s = b->s;
  const ddx_catalog_t *cat = b->cat;
  const ddx_hit_t *hits = s->hits.data;
  for (size_t i = 0; i < s->hits.len;) {
    size_t j = i;
    while (j < s->hits.len && hits[j].input == hits[i].input && hits[j].line == hits[i].line)
      j++;
    for (int progress = 0; progress < 2; progress++)
      resolve_line(b, i, j, progress);
    i = j;
  }
  /* Hits past the per-rule storage cap still count. */
  for (size_t r = 0; r < cat->nrules; r++)
    if (b->aggs[r].have && s->rule_hits[r] > s->rule_stored[r])
      b->aggs[r].count += s->rule_hits[r] - s->rule_stored[r];
}

/* A rule's events count when some signature that produced them reached
 * its own min_count (one allocator flush is normal, one per step is not). */
static bool sigs_counted(const ddx_rule_t *r, const agg_t *g) {
  if (!g->sig_events) return true;
  for (size_t k = 0; k < r->nsigs; k++)
    if (g->sig_events[k] && g->sig_events[k] >= r->sigs[k].min_count) return true;
  return false;
}

/* 2. Incidents, one per rule; no-error rules only when nothing failed.
 * Room is left for one inferred incident per traceback group. */
static int make_incidents(build_t *b) {
  const ddx_catalog_t *cat = b->cat;
  ddx_diagnosis_t *d = b->d;
  bool any_error = false;
  size_t n = 0;
  for (size_t r = 0; r < cat->nrules; r++)
    if (b->aggs[r].have) {
      n++;
      if (cat->rules[r].trigger == DDX_TRIGGER_MATCH && b->aggs[r].severity == DDX_SEV_ERROR)
        any_error = true;
    }
  b->cap = n + b->groups.len + 1;
  b->incs = ddx_arena_alloc(&d->arena, b->cap * sizeof *b->incs);
  if (!b->incs) return DDX_ENOMEM;
  memset(b->incs, 0, b->cap * sizeof *b->incs);
  for (size_t r = 0; r < cat->nrules; r++) {
    agg_t *g = &b->aggs[r];
    if (!g->have) continue;
    const ddx_rule_t *rule = &cat->rules[r];
    if ((rule->trigger == DDX_TRIGGER_NO_ERROR && any_error) || g->count < rule->min_count ||
        !sigs_counted(rule, g) || rule->marker)
      continue;
    ddx_incident_t *inc = &b->incs[b->m++];
    inc->rule = rule;
    inc->severity = g->severity;
    inc->role = (int)rule->role;
    inc->fallback = g->all_fallback;
    inc->hit = g->anchor.hit;
    inc->rank = g->anchor.rank;
    inc->local_rank = g->anchor.local_rank;
    inc->ranks = g->ranks; /* moved */
    memset(&g->ranks, 0, sizeof g->ranks);
    inc->count = g->count;
    inc->confidence = g->confidence;
    /* The anchor's own facts first, then what other events added. */
    inc->facts = ddx_arena_alloc(&d->arena, DDX_MAX_FACTS * sizeof *inc->facts);
    if (inc->facts) {
      merge_facts(inc->facts, &inc->nfacts, inc->hit->facts, inc->hit->nfacts);
      merge_facts(inc->facts, &inc->nfacts, g->facts, g->nfacts);
    }
    if (rule->role == DDX_ROLE_COLLATERAL && g->max_seq > g->min_seq && g->min_seq_ranks.n &&
        g->min_seq_ranks.n < inc->ranks.n) {
      /* Ranks stuck at an older collective are behind the others. */
      char rs[128];
      ddx_rankset_format(&g->min_seq_ranks, rs, sizeof rs);
      char note[320];
      snprintf(note, sizeof note,
               "inference: %s %s %s at SeqNum %lld while others reached %lld: %s "
               "fell behind first",
               g->min_seq_ranks.n == 1 ? "rank" : "ranks", rs,
               g->min_seq_ranks.n == 1 ? "times out" : "time out", (long long)g->min_seq,
               (long long)g->max_seq, g->min_seq_ranks.n == 1 ? "it" : "they");
      inc->rank_note = ddx_arena_strdup(&d->arena, note);
      inc->rank_source = "inference";
      if (g->min_seq_ranks.n == 1) inc->rank = g->min_seq_ranks.v[0];
    }
    place_incident(d, inc, &b->pids, &b->pairs, b->s->layout);
    if (rule->anchor_last) note_quiet_ranks(d, b->s, inc);
  }
  return 0;
}

/* Tracebacks, one group per lane (input, rank, local rank, host): a frame
 * joins its lane's open group when it is within TB_MAX_GAP lines of the
 * group's last frame; a "Traceback" line opens a new group. */
static int group_tracebacks(build_t *b) {
  for (size_t i = 0; i < b->nframes; i++) {
    const ddx_frame_t *f = &b->frames[i];
    bool bare = f->rank < 0 && f->local_rank < 0 && !f->host[0];
    tb_group_t *open = NULL;
    for (size_t k = b->groups.len; k-- > 0 && !open;) {
      tb_group_t *g = &DDX_VEC_AT(&b->groups, tb_group_t, k);
      if (g->input != f->input || f->line - g->last_line > TB_MAX_GAP) break;
      if (g->rank == f->rank && g->local_rank == f->local_rank && !strcmp(g->host, f->host))
        open = g;
      else if (!f->start && g->frames.len == 0 && g->rank < 0 && g->local_rank < 0 && !g->host[0]) {
        /* a "Traceback" line without a prefix, then prefixed frames */
        open = g;
        g->rank = f->rank;
        g->local_rank = f->local_rank;
        g->host = f->host;
      } else if (!f->start && bare && (g->bare_frames || (g->has_start && g->frames.len == 0))) {
        /* a logger's prefix on the "Traceback" line only (SGLang's
         * "[... TP2] Scheduler hit an exception: Traceback ..."), then its
         * frames bare: they are that process's */
        open = g;
        g->bare_frames = true;
      }
    }
    if (!open || f->start) {
      if (b->groups.len >= 4096) break;
      open = ddx_vec_push(&b->groups);
      if (!open) return DDX_ENOMEM;
      *open = (tb_group_t){.input = f->input,
                           .rank = f->rank,
                           .local_rank = f->local_rank,
                           .host = f->host,
                           .first_line = f->line};
      ddx_vec_init(&open->frames, sizeof(const ddx_frame_t *));
    }
    open->last_line = f->line;
    if (f->start) {
      open->has_start = true;
      continue;
    }
    const ddx_frame_t **slot = ddx_vec_push(&open->frames);
    if (!slot) return DDX_ENOMEM;
    *slot = f;
  }
  return 0;
}

/* A traceback is explained when a signature line of its rank sits inside
 * it or within TB_TAIL lines below its last frame (its error line). */
#define TB_TAIL 12
/* A hit that can end a traceback: a signature line of a rule that fires
 * on a match, not a progress line (a tqdm bar glued to "Traceback") nor
 * weak evidence (an exit status, a bare frame, a generic ERROR line). */
static bool ends_traceback(const ddx_catalog_t *cat, const ddx_hit_t *h) {
  if (h->is_ctx) return false;
  const ddx_rule_t *r = &cat->rules[h->rule];
  const ddx_pattern_t *sig = &r->sigs[h->pattern];
  return r->trigger == DDX_TRIGGER_MATCH && !sig->fallback &&
         sig_severity(r, sig) >= DDX_SEV_WARNING;
}

static int mark_explained(build_t *b) {
  const ddx_hit_t *hits = b->s->hits.data;
  /* the hits that can end a traceback, in (input, line) order, so each
   * group looks only at its own stretch */
  size_t n = 0;
  for (size_t i = 0; i < b->s->hits.len; i++)
    n += ends_traceback(b->cat, &hits[i]);
  if (!n || !b->groups.len) return 0;
  size_t *idx = malloc(n * sizeof *idx);
  if (!idx) return DDX_ENOMEM;
  n = 0;
  for (size_t i = 0; i < b->s->hits.len; i++)
    if (ends_traceback(b->cat, &hits[i])) idx[n++] = i;
  sort_by_position(idx, n, hits);
  for (size_t k = 0; k < b->groups.len; k++) {
    tb_group_t *g = &DDX_VEC_AT(&b->groups, tb_group_t, k);
    ddx_frame_t lane = {.rank = g->rank, .local_rank = g->local_rank};
    snprintf(lane.host, sizeof lane.host, "%s", g->host);
    size_t lo = 0, hi = n; /* first hit at or after (input, first_line) */
    while (lo < hi) {
      size_t mid = (lo + hi) / 2;
      const ddx_hit_t *x = &hits[idx[mid]];
      if (x->input < g->input || (x->input == g->input && x->line < g->first_line))
        lo = mid + 1;
      else
        hi = mid;
    }
    for (size_t i = lo; i < n && !g->explained; i++) {
      const ddx_hit_t *h = &hits[idx[i]];
      if (h->input != g->input || h->line > g->last_line + TB_TAIL) break;
      g->explained = frame_rank_ok(&lane, h);
    }
  }
  free(idx);
  return 0;
}

/* The phase of a traceback: its innermost frame that the table places. */
static const ddx_phase_t *frames_phase(const ddx_catalog_t *cat, const ddx_frame_t *const *fr,
                                       size_t n) {
  for (size_t k = n; k-- > 0;) {
    const ddx_phase_t *p = ddx_catalog_phase_of(cat, fr[k]->file, fr[k]->func);
    if (p) return p;
  }
  return NULL;
}

/* What the differential looks at: the failure's frames, phase, input and
 * the incident it belongs to (NULL for a cut traceback). */
typedef struct failure_point {
  const ddx_frame_t *const *frames;
  size_t nframes;
  const ddx_phase_t *phase;
  uint32_t input;
  int32_t rank;
  bool tokens_touch; /* a token or a relation alone makes a class a
                        candidate (the failure's class is open: a cut
                        traceback), not only beside frame or phase evidence */
} failure_point_t;

/* Evidence in words, collected into the diagnosis arena. */
typedef struct words {
  const char *v[12];
  size_t n;
} words_t;

static void words_add(ddx_diagnosis_t *d, words_t *w, const char *fmt, const char *a,
                      const char *b2) {
  if (w->n >= sizeof w->v / sizeof *w->v) return;
  char buf[400];
  snprintf(buf, sizeof buf, fmt, a ? a : "", b2 ? b2 : "");
  const char *t = ddx_arena_strdup(&d->arena, buf);
  if (t) w->v[w->n++] = t;
}

static const char *base_name(const char *path) {
  const char *p = path ? strrchr(path, '/') : NULL;
  return p ? p + 1 : path ? path : "";
}

/* The first kept hit of a rule's clue context in an input, or NULL. */
static const ddx_hit_t *clue_hit(const build_t *b, const ddx_rule_t *r, int ctx, uint32_t input) {
  if (!b->ix || !b->ix[r->index]) return NULL;
  const ctx_index_t *ci = &b->ix[r->index][ctx];
  const ddx_hit_t *hits = b->s->hits.data;
  for (size_t k = 0; k < ci->n; k++)
    if (hits[ci->idx[k]].input == input) return &hits[ci->idx[k]];
  return NULL;
}

/* Whether a hit of a rule's clue context sits on a frame's line or the
 * `after` lines below it, in the frame's input (its source line). */
static bool clue_at_frame(const build_t *b, const ddx_rule_t *r, int ctx, const ddx_frame_t *f,
                          int after) {
  if (!b->ix || !b->ix[r->index] || !f) return false;
  const ctx_index_t *ci = &b->ix[r->index][ctx];
  const ddx_hit_t *hits = b->s->hits.data;
  for (size_t k = 0; k < ci->n; k++) {
    const ddx_hit_t *h = &hits[ci->idx[k]];
    if (h->input == f->input && h->line >= f->line && h->line <= f->line + (uint64_t)after)
      return true;
  }
  return false;
}

/* The incident of a rule built so far, or NULL. */
static const ddx_incident_t *rule_incident(const build_t *b, const ddx_rule_t *r) {
  const ddx_incident_t *v = b->snap ? b->snap : b->incs;
  size_t n = b->snap ? b->nsnap : b->m;
  for (size_t i = 0; i < n; i++)
    if (v[i].rule == r && !v[i].inferred) return &v[i];
  return NULL;
}

/* Weight of a decisive line: a real signature decides, an exit status or
 * a bare frame (fallback) only leans. */
#define DECISIVE_WEIGHT 4.0
#define FALLBACK_WEIGHT 1.5
/* The score of "none of these classes": what a candidate must beat. */
#define NONE_SCORE 1.0

/* Scores one cause rule against a failure point: decisive lines, clues,
 * prior. Returns false when nothing of the evidence touches it. */
/* Whether a required clue's token is on a line the scan kept (any rule's
 * hit, context hits included) or in a frame's path. */
static bool gate_holds(const build_t *b, const ddx_clue_t *cl) {
  const ddx_hit_t *hits = b->s->hits.data;
  for (size_t i = 0; i < b->s->hits.len; i++)
    if (ddx_clue_gate_match(cl, hits[i].text)) return true;
  const ddx_frame_t *fr = b->s->frames.data;
  for (size_t i = 0; i < b->s->frames.len; i++)
    if (ddx_clue_gate_match(cl, fr[i].file)) return true;
  return false;
}

static bool score_rule(build_t *b, const ddx_rule_t *r, const failure_point_t *fp, double *score,
                       words_t *pro, words_t *con, bool *decisive) {
  ddx_diagnosis_t *d = b->d;
  double sc = log(r->prior);
  bool touched = false;
  *decisive = false;
  const ddx_incident_t *inc = rule_incident(b, r);
  /* a required token (a GPU class's "CUDA"/"NCCL") on no line the scan
   * kept nor in a frame's path: no candidate, unless the class has a line
   * of its own */
  bool own_token = false; /* the class's own tokens (checkTimeout, .item()) are its text too */
  for (size_t c = 0; !inc && c < r->nclues && !own_token; c++) {
    const ddx_clue_t *cl = &r->clues[c];
    if (cl->kind != DDX_CLUE_TOKEN || cl->required || cl->weight <= 0) continue;
    own_token = cl->after_frame
                    ? fp->nframes && clue_at_frame(b, r, cl->ctx_index, fp->frames[fp->nframes - 1],
                                                   cl->after_frame)
                    : clue_hit(b, r, cl->ctx_index, fp->input) != NULL;
  }
  for (size_t c = 0; !inc && !own_token && c < r->nclues; c++)
    if (r->clues[c].required && !gate_holds(b, &r->clues[c])) {
      *score = sc;
      return false;
    }
  if (inc && inc->severity >= DDX_SEV_WARNING) {
    char line[32];
    snprintf(line, sizeof line, "%llu", (unsigned long long)inc->hit->line);
    if (inc->fallback) {
      sc += FALLBACK_WEIGHT * inc->confidence;
      words_add(d, pro, "weak line of its own (line %s: %s)", line, "an exit status or frame");
    } else {
      sc += DECISIVE_WEIGHT * inc->confidence;
      *decisive = true;
      words_add(d, pro, "its own line at line %s (%s)", line, r->title);
    }
    touched = true;
  }
  /* facts for relations: the incident's, then its token clues' */
  ddx_fact_t facts[DDX_MAX_FACTS];
  size_t nf = 0;
  if (inc) merge_facts(facts, &nf, inc->facts, inc->nfacts);
  for (size_t c = 0; c < r->nclues; c++)
    if (r->clues[c].kind == DDX_CLUE_TOKEN && !r->clues[c].required) {
      const ddx_hit_t *h = clue_hit(b, r, r->clues[c].ctx_index, fp->input);
      if (h) merge_facts(facts, &nf, h->facts, h->nfacts);
    }
  for (size_t c = 0; c < r->nclues; c++) {
    const ddx_clue_t *cl = &r->clues[c];
    if (cl->required) continue; /* a gate (above), no evidence for the class */
    bool hit = false;
    const char *what = NULL;
    switch (cl->kind) {
    case DDX_CLUE_FRAME:
      for (size_t k = fp->nframes; k-- > 0 && !hit;)
        if (ddx_clue_frame_match(cl, fp->frames[k]->file, fp->frames[k]->func)) {
          hit = true;
          what = fp->frames[k]->func ? fp->frames[k]->func : base_name(fp->frames[k]->file);
        }
      break;
    case DDX_CLUE_PHASE:
      for (size_t k = 0; fp->phase && k < cl->phases.n && !hit; k++)
        hit = !strcmp(cl->phases.v[k], fp->phase->id);
      if (hit) what = fp->phase->title;
      break;
    case DDX_CLUE_TOKEN: {
      if (cl->after_frame) { /* on the innermost frame's source line */
        hit = fp->nframes &&
              clue_at_frame(b, r, cl->ctx_index, fp->frames[fp->nframes - 1], cl->after_frame);
        break;
      }
      const ddx_hit_t *h = clue_hit(b, r, cl->ctx_index, fp->input);
      hit = h && facts_hold(cl->conds, cl->nconds, h->facts, h->nfacts);
      break;
    }
    case DDX_CLUE_RELATION:
      hit = nf && facts_hold(cl->conds, cl->nconds, facts, nf);
      break;
    }
    if (!hit) continue;
    sc += cl->weight;
    /* a token anywhere only leans; one on the failing frame's line is the
     * traceback's own evidence */
    bool weak = (cl->kind == DDX_CLUE_TOKEN && !cl->after_frame) || cl->kind == DDX_CLUE_RELATION;
    if (cl->weight > 0 && (!weak || fp->tokens_touch)) touched = true;
    words_add(d, cl->weight > 0 ? pro : con, what ? "%s (%s)" : "%s", cl->why, what);
  }
  if (touched && !*decisive) words_add(d, con, "no decisive line of its own in the text", 0, 0);
  *score = sc;
  return touched;
}

static int cmp_candidate(const void *pa, const void *pb) {
  const ddx_candidate_t *a = pa, *b = pb;
  if (a->score != b->score) return a->score > b->score ? -1 : 1;
  return (int)a->rule->index - (int)b->rule->index;
}

static const char **words_copy(ddx_diagnosis_t *d, const words_t *w) {
  const char **v = ddx_arena_alloc(&d->arena, (w->n + 1) * sizeof *v);
  if (v && w->n) memcpy(v, w->v, w->n * sizeof *v);
  return v;
}

/* The differential of one failure point: every cause rule the evidence
 * touches, scored and turned into shares (softmax beside "none of these").
 * Returns the number of candidates written to out (at most max). */
static size_t differential(build_t *b, const failure_point_t *fp, const ddx_rule_t *keep,
                           bool causes_only, ddx_candidate_t *out, size_t max) {
  ddx_candidate_t all[64];
  double raw[64];
  size_t n = 0;
  for (size_t r = 0; r < b->cat->nrules && n < 64; r++) {
    const ddx_rule_t *rule = &b->cat->rules[r];
    if (rule->trigger != DDX_TRIGGER_MATCH ||
        (causes_only && rule->role != DDX_ROLE_CAUSE && rule != keep))
      continue;
    words_t pro = {0}, con = {0};
    double sc;
    bool decisive;
    if (!score_rule(b, rule, fp, &sc, &pro, &con, &decisive)) continue;
    all[n] = (ddx_candidate_t){.rule = rule, .score = sc, .decisive = decisive};
    all[n].pro = words_copy(b->d, &pro);
    all[n].npro = pro.n;
    all[n].con = words_copy(b->d, &con);
    all[n].ncon = con.n;
    n++;
  }
  if (!n) return 0;
  double top = NONE_SCORE;
  for (size_t i = 0; i < n; i++)
    if (all[i].score > top) top = all[i].score;
  double sum = exp(NONE_SCORE - top);
  for (size_t i = 0; i < n; i++)
    sum += raw[i] = exp(all[i].score - top);
  for (size_t i = 0; i < n; i++)
    all[i].score = raw[i] / sum;
  qsort(all, n, sizeof *all, cmp_candidate);
  /* the answer leads: its class first, the others by score */
  for (size_t i = 1; keep && i < n; i++)
    if (all[i].rule == keep) {
      ddx_candidate_t k = all[i];
      memmove(all + 1, all, i * sizeof *all);
      all[0] = k;
      break;
    }
  if (n > max) n = max;
  memcpy(out, all, n * sizeof *out);
  return n;
}

/* A failure point for a traceback group. */
static failure_point_t group_point(const ddx_catalog_t *cat, const tb_group_t *g) {
  failure_point_t fp = {.frames = g->frames.data,
                        .nframes = g->frames.len,
                        .input = g->input,
                        .rank = g->rank,
                        .tokens_touch = true};
  fp.phase = frames_phase(cat, fp.frames, fp.nframes);
  return fp;
}

/* A cut traceback names a specific class when its clues give that class
 * at least this share. */
#define INFER_MIN_SHARE 0.35
/* What an inferred class's share of the differential is worth as a
 * confidence (see finish_incidents). */
#define INFERRED_CALIBRATION 0.45
/* A via_generic class whose share reaches this fraction of a catch-all
 * primary's takes its place (primary_differential). */
#define YIELD_RATIO 0.4
/* Rules' signature confidences understate how often a decisive line is
 * right (on the development part, lines at 0.5-0.8 were right every time):
 * c^0.5 (ECE dev 0.095, held 0.052; c^0.7 gave 0.126 and 0.048). */
#define DECISIVE_CALIBRATION 0.5

/* 2b. A traceback that no line explains (cut before its error line)
 * still shows where it died: it becomes an inferred incident of the
 * differential's leading class (or of the generic cut-traceback class),
 * unless a decisive specific cause already answers. Groups that lead to
 * the same class form one incident. */
static int infer_cut_tracebacks(build_t *b) {
  for (size_t i = 0; i < b->m; i++) {
    const ddx_incident_t *x = &b->incs[i];
    if (x->severity == DDX_SEV_ERROR && x->role == DDX_ROLE_CAUSE && !x->fallback &&
        x->rule->priority >= DDX_CATCHALL_PRIORITY)
      return 0;
  }
  const ddx_rule_t *generic = NULL; /* the catalog's inferred_only class */
  for (size_t r = 0; r < b->cat->nrules && !generic; r++)
    if (b->cat->rules[r].inferred_only) generic = &b->cat->rules[r];
  size_t first_new = b->m;
  for (size_t k = 0; k < b->groups.len; k++) {
    tb_group_t *g = &DDX_VEC_AT(&b->groups, tb_group_t, k);
    /* A "Traceback" line is a failure sign by itself (a paste may end on
     * it); frames without one are a traceback only from two frames on, or
     * when a single frame points at a specific class (below). */
    if (g->explained || (!g->has_start && g->frames.len == 0)) continue;
    bool lone = !g->has_start && g->frames.len < 2;
    failure_point_t fp = group_point(b->cat, g);
    ddx_candidate_t top[1] = {{0}};
    /* every role: a cut traceback may be the launcher's own (a wrapper) */
    size_t nc = differential(b, &fp, NULL, false, top, 1);
    const ddx_rule_t *rule = nc && top[0].score >= INFER_MIN_SHARE ? top[0].rule : generic;
    if (!rule || rule_incident(b, rule)) continue; /* its own line already answers */
    const ddx_frame_t *last =
        g->frames.len ? DDX_VEC_AT(&g->frames, const ddx_frame_t *, g->frames.len - 1) : NULL;
    /* a stray path, not a traceback; but `File "x.py", line 12, in f` is
     * Python's frame line and nothing else: a paste cut above its
     * "Traceback" line still shows a failure */
    if (lone && rule == generic && !(last && last->func)) continue;
    ddx_incident_t *inc = NULL;
    for (size_t i = first_new; i < b->m && !inc; i++)
      if (b->incs[i].rule == rule) inc = &b->incs[i];
    if (inc) {
      inc->count++;
      if (g->rank >= 0) ddx_rankset_add(&inc->ranks, g->rank);
      continue;
    }
    if (b->m >= b->cap) break;
    ddx_hit_t *h = ddx_arena_alloc(&b->d->arena, sizeof *h);
    if (!h) return DDX_ENOMEM;
    memset(h, 0, sizeof *h);
    h->rule = rule->index;
    h->input = g->input;
    h->line = last ? last->line : g->first_line;
    h->column = 1;
    h->meta.rank = g->rank;
    h->meta.local_rank = g->local_rank;
    h->meta.ts_ms = -1;
    h->meta.pid = -1;
    snprintf(h->meta.host, sizeof h->meta.host, "%s", g->host);
    char text[400] = "traceback cut after its first line";
    if (last)
      snprintf(text, sizeof text, "traceback cut after File \"%s\", line %u, in %s",
               last->file ? last->file : "?", last->lineno, last->func ? last->func : "?");
    h->text = ddx_arena_strdup(&b->d->arena, text);
    inc = &b->incs[b->m++];
    memset(inc, 0, sizeof *inc);
    inc->rule = rule;
    inc->severity = DDX_SEV_ERROR;
    inc->role = DDX_ROLE_CAUSE;
    inc->inferred = true;
    inc->hit = h;
    inc->rank = g->rank;
    inc->local_rank = g->local_rank;
    if (g->rank >= 0) ddx_rankset_add(&inc->ranks, g->rank);
    inc->count = 1;
    inc->confidence = nc && rule == top[0].rule ? top[0].score : 0.5;
    inc->facts = ddx_arena_alloc(&b->d->arena, DDX_MAX_FACTS * sizeof *inc->facts);
  }
  return 0;
}

/* 3. Order: error first, causes before wrappers and collateral, ... (see
 * incident_cmp); a cause that another error cause explains (its
 * `explains` lists it) cannot be the primary: move the explainer up. */
static void rank_incidents(build_t *b) {
  ddx_incident_t *incs = b->incs;
  size_t m = b->m;
  qsort(incs, m, sizeof *incs, incident_cmp);
  for (size_t guard = 0; m > 1 && guard < m; guard++) {
    size_t k = 1;
    while (k < m && !(incs[k].severity == DDX_SEV_ERROR && incs[k].role == DDX_ROLE_CAUSE &&
                      !incs[k].fallback && strs_has(&incs[k].rule->explains, incs[0].rule->id)))
      k++;
    if (k == m) break;
    ddx_incident_t tmp = incs[k];
    memmove(incs + 1, incs, k * sizeof *incs);
    incs[0] = tmp;
  }
  /* When only waiting ranks speak (collateral primary), the rank that
   * did not report is the suspect: an inference, said as such. */
  if (m && incs[0].role == DDX_ROLE_COLLATERAL && !incs[0].rank_note && incs[0].ranks.n >= 2)
    infer_silent_rank(b->d, b->s, &incs[0]);
  /* a shallow copy for the differential (ranks are not read from it) */
  b->snap = ddx_arena_alloc(&b->d->arena, (m + 1) * sizeof *b->snap);
  if (b->snap && m) memcpy(b->snap, incs, m * sizeof *incs);
  b->nsnap = b->snap ? m : 0;
}

/* 4. Collateral of the primary; independent causes stay incidents. */
static int attach_collateral(build_t *b) {
  ddx_incident_t *incs = b->incs;
  b->out = 0;
  if (!b->m) return 0;
  ddx_incident_t *primary = &incs[0];
  size_t ncoll = 0;
  ddx_collateral_t *coll = ddx_arena_alloc(&b->d->arena, (b->m + 1) * sizeof *coll);
  if (!coll) return DDX_ENOMEM;
  b->out = 1;
  for (size_t i = 1; i < b->m; i++) {
    ddx_incident_t *x = &incs[i];
    const char *why = collateral_reason(primary, x);
    if (why) {
      ddx_collateral_t *c = &coll[ncoll++];
      c->rule = x->rule;
      c->ranks = x->ranks; /* moved */
      c->count = x->count;
      c->first = x->hit;
      c->why = why;
      c->rank = x->rank;
      c->local_rank = x->local_rank;
      ddx_rankset_free(&x->quiet_first);
      continue;
    }
    incs[b->out++] = *x;
  }
  primary->collateral = coll;
  primary->ncollateral = ncoll;
  return 0;
}

/* ------------------------------------------------------------ the rank */

/* What the layout says of one host: its ranks [base, base+nlocal). */
static const ddx_layout_host_t *layout_host(const ddx_layout_t *l, const char *host) {
  for (size_t i = 0; host && host[0] && i < l->nhosts; i++)
    if (!strcmp(l->hosts[i].name, host) && l->hosts[i].base >= 0 && l->hosts[i].nlocal > 0)
      return &l->hosts[i];
  return NULL;
}

/* A host whose ranks' base only its lines imply ("[default1]:... [Rank 9]"). */
static const ddx_layout_host_t *learned_host(const ddx_layout_t *l, const char *host) {
  for (size_t i = 0; host && host[0] && i < l->nhosts; i++)
    if (!strcmp(l->hosts[i].name, host) && l->hosts[i].base >= 0 && l->hosts[i].learned == 1)
      return &l->hosts[i];
  return NULL;
}

/* Processes per node when every node runs the same number: the layout's,
 * else what a launcher line names (mp.spawn's nprocs, torchrun's
 * local_ranks), else the world size over the node count (torchrun's
 * group_world_size, --nnodes), else the highest local rank any prefix
 * named + 1 on a multi-node log. */
static int32_t procs_per_node(const ddx_layout_t *l, int32_t world, bool *exact) {
  *exact = true;
  int32_t n = -1;
  for (size_t i = 0; i < l->nhosts; i++)
    if (l->hosts[i].nlocal > 0) {
      if (n > 0 && n != l->hosts[i].nlocal) return -1;
      n = l->hosts[i].nlocal;
    }
  if (n > 0) return n;
  if (l->nprocs > 0) return l->nprocs;
  if (world > 0 && l->nnodes > 1 && world % l->nnodes == 0) return world / l->nnodes;
  /* torchrun --tee prints every local rank of a node: the highest one
   * seen on a log that names higher global ranks */
  *exact = false; /* a lower bound */
  if (l->max_local >= 1 && l->max_global > l->max_local) return l->max_local + 1;
  return -1;
}

/* A node's ranks from what the other nodes' lines show: lines that carry
 * both a host and a global rank give each host's ranks; when every such
 * host's ranks fit one aligned block of P (the widest span) and exactly
 * one block is left unclaimed, it is the ranks of a host that showed none
 * (pdsh hosts in order, the failing node's ranks all killed silently).
 * Returns false when the lines do not say. */
#define MAX_SEEN_HOSTS 256
typedef struct host_span {
  const char *host;
  int32_t lo, hi; /* observed global ranks [lo, hi] */
} host_span_t;

static bool node_block(const build_t *b, const char *host, int32_t world, int32_t per_node,
                       int32_t *lo, int32_t *hi) {
  if (!host || !host[0] || world <= 0) return false;
  host_span_t sp[MAX_SEEN_HOSTS];
  const char *all[MAX_SEEN_HOSTS]; /* every host a line names */
  size_t n = 0, nall = 0;
  const ddx_hit_t *hits = b->s->hits.data;
  for (size_t i = 0; i < b->s->hits.len; i++) {
    const ddx_hit_t *h = &hits[i];
    if (!h->meta.host[0]) continue;
    size_t a = 0;
    while (a < nall && strcmp(all[a], h->meta.host))
      a++;
    if (a == nall && nall < MAX_SEEN_HOSTS) all[nall++] = h->meta.host;
    if (h->meta.rank < 0) continue;
    size_t k = 0;
    while (k < n && strcmp(sp[k].host, h->meta.host))
      k++;
    if (k == n) {
      if (n == MAX_SEEN_HOSTS) return false;
      sp[n++] = (host_span_t){h->meta.host, h->meta.rank, h->meta.rank};
    }
    if (h->meta.rank < sp[k].lo) sp[k].lo = h->meta.rank;
    if (h->meta.rank > sp[k].hi) sp[k].hi = h->meta.rank;
  }
  int32_t P = 0;
  const host_span_t *own = NULL;
  for (size_t k = 0; k < n; k++) {
    if (!strcmp(sp[k].host, host)) own = &sp[k];
    if (sp[k].hi - sp[k].lo + 1 > P) P = sp[k].hi - sp[k].lo + 1;
  }
  /* the host's own lines name some of its ranks ("[Rank 0] DeepSpeed
   * info"): with P processes per node, numbered node by node, they lie in
   * one aligned block of P, its node's */
  if (own) {
    if (per_node < 2 || own->lo / per_node != own->hi / per_node) return false;
    *lo = own->lo / per_node * per_node;
    *hi = *lo + per_node;
    return *hi <= world;
  }
  /* the processes per node the layout gives (or its node count), when the
   * lines show fewer of each node's ranks */
  int32_t nn = b->s->layout->nnodes;
  if (per_node >= P)
    P = per_node;
  else if (per_node < 0 && nn > 1 && world % nn == 0 && world / nn >= P)
    P = world / nn;
  /* the hosts that name ranks fill the world seen, and one more host
   * (this one) names none: its ranks, all silent, come after them */
  if (P >= 2 && world % P == 0 && (size_t)(world / P) == n && nall == n + 1) world += P;
  if (n < 1 || P < 2 || world % P || world / P > MAX_SEEN_HOSTS || (size_t)(world / P) != n + 1)
    return false;
  bool claimed[MAX_SEEN_HOSTS] = {false};
  for (size_t k = 0; k < n; k++) {
    int32_t blk = sp[k].lo / P;
    if (sp[k].hi / P != blk || claimed[blk]) return false;
    claimed[blk] = true;
  }
  for (int32_t blk = 0; blk < world / P; blk++)
    if (!claimed[blk]) {
      *lo = blk * P;
      *hi = (blk + 1) * P;
      return true;
    }
  return false;
}

/* What constrains the initiating rank: its local rank and its node. */
typedef struct rank_frame {
  int32_t local;    /* -1 unknown */
  int32_t lo, hi;   /* the node's ranks [lo, hi); hi 0: unknown */
  int32_t per_node; /* processes per node, -1 unknown */
  int32_t world;    /* the world size as far as the log tells, 0 unknown */
  bool tie;         /* several processes raised the cause alike: a launcher's
                       "first" failure among them is a tie on its whole-second
                       timestamps, not evidence */
  const char *host;
  const ddx_rankset_t *waiting; /* ranks that only report collateral */
} rank_frame_t;

static bool rank_fits(const rank_frame_t *f, int32_t g) {
  if (g < 0 || (f->local >= 0 && g < f->local)) return false;
  if (f->hi > 0 && (g < f->lo || g >= f->hi)) return false;
  if (f->local >= 0) {
    if (f->hi > 0 && g - f->lo != f->local) return false;
    if (f->hi == 0 && f->per_node > 0 && g % f->per_node != f->local) return false;
  }
  return true;
}

static void add_evidence(ddx_vec_t *ev, const rank_frame_t *f, const char *source, int32_t rank,
                         double weight, bool fits) {
  if (rank < 0 || ev->len >= 32) return;
  /* a rank that only waited in collectives did not start it, unless the
   * failing line itself names it */
  bool own =
      !strcmp(source, "prefix") || !strcmp(source, "capture") || !strcmp(source, "first-timeout");
  if (!own && f->waiting && ddx_rankset_has(f->waiting, rank)) fits = false;
  if (f->tie && !strncmp(source, "launcher-", 9) && strcmp(source, "launcher-table") &&
      strcmp(source, "launcher-pid") && strcmp(source, "launcher-stopped") &&
      strcmp(source, "launcher-entry"))
    fits = false;
  ddx_rank_evidence_t *e = ddx_vec_push(ev);
  if (e) *e = (ddx_rank_evidence_t){source, rank, weight, fits && rank_fits(f, rank)};
}

/* The ranks of the primary's collateral that only wait (watchdog
 * timeouts, SIGTERMs): they are not the initiator. */
static void collateral_reporters(const ddx_incident_t *p, bool srun_nodes, ddx_rankset_t *out) {
  for (size_t i = 0; i < p->ncollateral; i++) {
    const ddx_collateral_t *c = &p->collateral[i];
    if (c->rule->role != DDX_ROLE_COLLATERAL) continue;
    /* under srun over a per-node launcher, the agent's own lines ("0:
     * Sending process 123 closing signal SIGTERM") carry srun's task id,
     * the node, not a worker's rank */
    const ddx_hit_t *h = c->first;
    if (srun_nodes && (h->meta.dialects & DDX_DIALECT_SRUN) && !ddx_hit_fact(h, "rank") &&
        h->text && !strstr(h->text, "ank ") && !strstr(h->text, "[rank"))
      continue;
    for (size_t k = 0; k < c->ranks.n; k++)
      ddx_rankset_add(out, c->ranks.v[k]);
  }
}

/* The one rank the incident's own traceback lines name (a paste whose
 * lines all start "[rank0]:" but whose error line lost its prefix), or -1
 * when they name none or several. */
static int32_t traceback_rank(const ddx_incident_t *p) {
  int32_t only = -1;
  size_t named = 0;
  for (size_t i = 0; i < p->nframes; i++) {
    int32_t r = p->frames[i]->rank;
    if (r < 0) continue;
    if (only >= 0 && only != r) return -1;
    only = r;
    named++;
  }
  return named >= 2 ? only : -1;
}

/* Where the rank the incident was placed on so far came from. */
static const char *placed_source(const ddx_incident_t *p, double *w) {
  const char *n = p->rank_source;
  if (p->hit->meta.rank >= 0 && p->hit->meta.rank == p->rank) return *w = 1.0, "prefix";
  if (ddx_hit_fact(p->hit, "rank")) return *w = 0.95, "capture";
  if (n && !strcmp(n, "inference")) return *w = 0.7, n;
  if (n) return *w = 0.85, n; /* launcher-pid, launcher-table */
  if (p->local_rank >= 0) return *w = 0.9, "layout";
  return *w = 0.8, "events";
}

static int cmp_evidence(const void *pa, const void *pb) {
  const ddx_rank_evidence_t *a = pa, *b = pb;
  if (a->consistent != b->consistent) return a->consistent ? -1 : 1;
  if (a->weight != b->weight) return a->weight > b->weight ? -1 : 1;
  return a->rank - b->rank;
}

/* The one rank of the world, or of the incident's node, that reports no
 * collateral (every other rank only waited); -1 when not exactly one. */
static int32_t complement_rank(const build_t *b, const rank_frame_t *f, ddx_rankset_t *cand) {
  const ddx_rankset_t *rep = f->waiting;
  int32_t world = f->world;
  (void)b;
  if (rep->n >= 2 && world > 0 && world <= 1 << 20) {
    int32_t lo = f->hi > 0 ? f->lo : 0, hi = f->hi > 0 ? f->hi : world;
    for (int32_t r = lo; r < hi && cand->n <= 64; r++)
      if (!ddx_rankset_has(rep, r) && rank_fits(f, r)) ddx_rankset_add(cand, r);
  }
  return cand->n == 1 ? cand->v[0] : -1;
}

/* The rank note for the piece of evidence that decided. */
static void decided_note(char *note, size_t cap, const ddx_rank_evidence_t *e,
                         const rank_frame_t *f, int32_t world) {
  note[0] = 0;
  if (!strcmp(e->source, "complement") && f->hi > 0)
    snprintf(note, cap, "rank %d: the only rank of %s (%d-%d) that reports no collateral", e->rank,
             f->host, f->lo, f->hi - 1);
  else if (!strcmp(e->source, "complement"))
    snprintf(note, cap, "rank %d: the only rank of %d%s that reports no collateral", e->rank, world,
             f->local >= 0 ? " with its local rank" : "");
  else if (!strcmp(e->source, "node+local"))
    snprintf(note, cap, "rank %d: local rank %d of %s (%d-%d)", e->rank, e->rank - f->lo, f->host,
             f->lo, f->hi - 1);
  else if (!strcmp(e->source, "traceback"))
    snprintf(note, cap, "rank %d: every line of the cause's traceback names it", e->rank);
  else if (!strcmp(e->source, "launcher-local"))
    snprintf(note, cap, "rank %d: local rank %d of %s (%d-%d), the process its launcher saw fail",
             e->rank, e->rank - f->lo, f->host, f->lo, f->hi - 1);
  else if (!strcmp(e->source, "only-rank"))
    snprintf(note, cap, "rank %d: the only rank the log names (one process speaks)", e->rank);
  else if (!strcmp(e->source, "first-timeout"))
    snprintf(note, cap, "rank %d: its watchdog timed out first (the others got its dump signal)",
             e->rank);
  else if (!strcmp(e->source, "earliest-step"))
    snprintf(note, cap, "rank %d: its event is at the earliest training step of all", e->rank);
  else if (!strcmp(e->source, "odd-rank"))
    snprintf(note, cap,
             "rank %d: the rank the other ranks' reports name as running a different collective",
             e->rank);
  else if (!strcmp(e->source, "launcher-entry"))
    snprintf(note, cap, "rank %d: the launcher's table shows this error in rank %d's entry",
             e->rank, e->rank);
  else if (!strcmp(e->source, "launcher-stopped"))
    snprintf(note, cap,
             "rank %d: the one process still running when the others had failed (its launcher "
             "stopped it with SIGTERM): the stuck rank",
             e->rank);
  else if (!strcmp(e->source, "launcher-root-cause"))
    snprintf(note, cap, "rank %d: the launcher's root cause (first observed failure)", e->rank);
  else if (!strcmp(e->source, "launcher-first-failure"))
    snprintf(note, cap,
             "rank %d: the launcher's first observed failure, as no line of the cause names its "
             "rank",
             e->rank);
}

/* mp.spawn's parent prints "-- Process N terminated with the following
 * error:" right before the child's traceback, so N (the spawn index, the
 * local rank) is the cause's when the nearest such line before it, on the
 * same host / srun task of the same input, is within a traceback's reach;
 * -1 when there is none. */
static int32_t spawn_local(const build_t *b, const ddx_incident_t *p) {
  const ddx_hit_t *hits = b->s->hits.data, *best = NULL, *c = p->hit;
  for (size_t i = 0; i < b->s->hits.len; i++) {
    const ddx_hit_t *h = &hits[i];
    if (h->is_ctx || h->input != c->input || h->line >= c->line || h->line + 400 < c->line ||
        strcmp(h->meta.host, c->meta.host) || h->meta.rank != c->meta.rank || !h->text ||
        !strstr(h->text, "terminated with the following error") || !ddx_hit_fact(h, "local_rank") ||
        (best && best->line > h->line))
      continue;
    best = h;
  }
  return best ? parse_int(ddx_hit_fact(best, "local_rank")) : -1;
}

/* A launcher's entry (its line, or a table entry's exitcode line right
 * below) that reports a process killed by a signal a watchdog or the
 * launcher sends (SIGABRT, SIGKILL, SIGTERM). */
static int hit_killed(const ddx_hit_t *h) { /* 1 killed, 0 not, -1 the line does not say */
  const char *ec = ddx_hit_fact(h, "exitcode"), *sig = ddx_hit_fact(h, "signal");
  if (ec) return !strcmp(ec, "-6") || !strcmp(ec, "-9") || !strcmp(ec, "-15");
  if (sig) return !strcmp(sig, "SIGABRT") || !strcmp(sig, "SIGKILL") || !strcmp(sig, "SIGTERM");
  return -1;
}

static bool entry_killed(const build_t *b, size_t i);

/* The same for a hit given by address (a collateral's first event). */
static bool hit_entry_killed(const build_t *b, const ddx_hit_t *h) {
  const ddx_hit_t *hits = b->s->hits.data;
  if (h >= hits && h < hits + b->s->hits.len) return entry_killed(b, (size_t)(h - hits));
  return hit_killed(h) == 1;
}

/* A launcher table's entry for (rank, local) whose process was killed. */
static bool table_entry_killed(const build_t *b, const ddx_incident_t *p, int32_t rank,
                               int32_t local) {
  const ddx_hit_t *hits = b->s->hits.data;
  for (size_t i = 0; i < b->s->hits.len; i++) {
    const char *r = ddx_hit_fact(&hits[i], "rank"), *lr = ddx_hit_fact(&hits[i], "local_rank");
    if (!hits[i].is_ctx && hits[i].input == p->hit->input && r && lr && parse_int(r) == rank &&
        parse_int(lr) == local && b->cat->rules[hits[i].rule].role == DDX_ROLE_WRAPPER)
      return entry_killed(b, i);
  }
  return false;
}

static bool entry_killed(const build_t *b, size_t i) {
  const ddx_hit_t *hits = b->s->hits.data;
  for (size_t j = i; j < b->s->hits.len && j < i + 8; j++) {
    if (hits[j].input != hits[i].input || hits[j].line > hits[i].line + 3) break;
    int k = hit_killed(&hits[j]);
    if (k >= 0) return k;
  }
  return false;
}

/* A launcher's report of a process that failed on its own (exit code 1,
 * SIGSEGV), not one a watchdog or the launcher killed (SIGABRT, SIGKILL,
 * SIGTERM). */
static bool own_failure(const ddx_hit_t *h) {
  const char *ec = ddx_hit_fact(h, "exitcode");
  return hit_killed(h) == 0 && !(ec && !strcmp(ec, "0")); /* exit 0 is no failure */
}

/* The local rank the launcher on node `host` (a host name or srun's
 * "srun-task-N") reports first as failed, -1 when none does. On a log
 * whose lines name no node, the one local rank that launchers report as
 * failed on its own (the other nodes' report their watchdog's aborts). */
static int32_t node_launcher_local(const build_t *b, const ddx_incident_t *p, const char *host) {
  const ddx_hit_t *hits = b->s->hits.data;
  int32_t task = !strncmp(host, "srun-task-", 10) ? parse_int(host + 10) : -1;
  if (!host[0]) {
    int32_t only = -1;
    for (size_t i = 0; i < b->s->hits.len; i++) {
      const ddx_hit_t *h = &hits[i];
      if (h->is_ctx || h->input != p->hit->input || h->meta.host[0] || h->meta.rank >= 0 ||
          b->cat->rules[h->rule].role != DDX_ROLE_WRAPPER || ddx_hit_fact(h, "rank") ||
          !own_failure(h))
        continue;
      int32_t lr = parse_int(ddx_hit_fact(h, "local_rank"));
      if (lr < 0) continue;
      if (only >= 0 && only != lr) return -1;
      only = lr;
    }
    return only;
  }
  for (size_t i = 0; host[0] && i < b->s->hits.len; i++) {
    const ddx_hit_t *h = &hits[i];
    if (h->is_ctx || h->input != p->hit->input || b->cat->rules[h->rule].role != DDX_ROLE_WRAPPER ||
        ddx_hit_fact(h, "rank"))
      continue;
    /* a Python exception's process exits with 1: a report of an aborted
     * or killed one on its node is another process's */
    if (p->nframes > 0 && hit_killed(h) == 1) continue;
    bool here = task >= 0 ? !h->meta.host[0] && (h->meta.dialects & DDX_DIALECT_SRUN) &&
                                h->meta.rank == task
                          : !strcmp(h->meta.host, host);
    if (!here && task >= 0) here = !strcmp(h->meta.host, host) && h->meta.rank < 0;
    int32_t lr =
        h->meta.local_rank >= 0 ? h->meta.local_rank : parse_int(ddx_hit_fact(h, "local_rank"));
    if (here && lr >= 0) return lr;
  }
  return -1;
}

/* The processes a torchrun agent's table (right below its "failed
 * (exitcode: N)" line, hit i) lists as failed on their own (exit 1,
 * SIGSEGV; not aborted or killed), 0 without a table. */
static size_t report_own_entries(const build_t *b, size_t i) {
  const ddx_hit_t *hits = b->s->hits.data, *h = &hits[i];
  ddx_rankset_t own = {0};
  for (size_t j = i + 1; j < b->s->hits.len; j++) {
    const ddx_hit_t *x = &hits[j];
    if (x->input != h->input || x->line > h->line + 4096) break;
    if (x->is_ctx || b->cat->rules[x->rule].role != DDX_ROLE_WRAPPER ||
        strcmp(x->meta.host, h->meta.host) || x->meta.rank != h->meta.rank)
      continue;
    if (x->text && strstr(x->text, "failed (exitcode")) break; /* the next report */
    const char *r = ddx_hit_fact(x, "rank");
    if (r && ddx_hit_fact(x, "local_rank") && !entry_killed(b, j))
      ddx_rankset_add(&own, parse_int(r));
  }
  size_t entries = own.n;
  ddx_rankset_free(&own);
  return entries;
}

/* A table entry (hit h) listed among several processes that failed on
 * their own in one report: the table's order is its dict's, not time's,
 * so the entry says nothing of who failed first. */
static bool entry_among_several(const build_t *b, const ddx_hit_t *h) {
  const ddx_hit_t *hits = b->s->hits.data;
  if (h < hits || h >= hits + b->s->hits.len || !ddx_hit_fact(h, "rank") ||
      !ddx_hit_fact(h, "local_rank"))
    return false;
  for (size_t i = (size_t)(h - hits); i-- > 0;) {
    const ddx_hit_t *x = &hits[i];
    if (x->input != h->input || x->line + 4096 < h->line) break;
    if (!x->is_ctx && b->cat->rules[x->rule].role == DDX_ROLE_WRAPPER &&
        !strcmp(x->meta.host, h->meta.host) && x->meta.rank == h->meta.rank && x->text &&
        strstr(x->text, "failed (exitcode"))
      return report_own_entries(b, i) > 1;
  }
  return false;
}

/* Whether the launcher on the cause's node shows that it saw one process
 * fail, so that its pick among alike failures is no tie: the table right
 * below its "failed (exitcode: 1) local_rank: N" line lists one failure of
 * its own, or, without a table, the agent sent SIGTERM to every other
 * process of the node right before that line (torchrun closes the rest of
 * the node when it notices the first exit). A table whose failures share
 * one second, or fewer SIGTERMs, leave the order to chance. */
static bool launcher_saw_one(const build_t *b, const ddx_incident_t *p, const rank_frame_t *f) {
  const ddx_hit_t *hits = b->s->hits.data;
  size_t n = b->s->hits.len;
  int32_t per = f->hi > 0 ? f->hi - f->lo : f->per_node;
  int32_t task = !strncmp(f->host, "srun-task-", 10) ? parse_int(f->host + 10) : -1;
  /* no layout on a log of one node: its processes are those that raised
   * the cause alike (each prints its line once; two glued on one line by
   * a progress bar count twice) */
  if (per < 2 && !f->host[0] && f->hi == 0 && p->hit->text && p->hit->text[0]) {
    per = 0;
    size_t len = strlen(p->hit->text);
    uint64_t last = 0; /* a line two patterns of the rule match counts once */
    for (size_t i = 0; i < n; i++) {
      if (hits[i].is_ctx || hits[i].rule != p->hit->rule || hits[i].input != p->hit->input ||
          !hits[i].text || hits[i].line == last)
        continue;
      last = hits[i].line;
      for (const char *q = strstr(hits[i].text, p->hit->text); q; q = strstr(q + len, p->hit->text))
        per++;
    }
  }
  if (per < 2) return false;
  for (size_t i = 0; i < n; i++) {
    const ddx_hit_t *h = &hits[i];
    if (h->is_ctx || h->input != p->hit->input || b->cat->rules[h->rule].role != DDX_ROLE_WRAPPER ||
        ddx_hit_fact(h, "rank") || !ddx_hit_fact(h, "local_rank") || !own_failure(h) || !h->text ||
        !strstr(h->text, "failed (exitcode"))
      continue;
    bool here = task >= 0    ? h->meta.rank == task && (h->meta.dialects & DDX_DIALECT_SRUN)
                : f->host[0] ? !strcmp(h->meta.host, f->host)
                             : !h->meta.host[0] && h->meta.rank < 0;
    if (!here) continue;
    size_t entries = report_own_entries(b, i);
    if (entries) return entries == 1;
    int32_t terms = 0;
    uint64_t at = h->line;
    for (size_t j = i; j-- > 0;) {
      const ddx_hit_t *x = &hits[j];
      if (x->input != h->input || x->line + 2 < at) break;
      if (x->is_ctx) continue;
      at = x->line;
      if (!strcmp(x->meta.host, h->meta.host) && x->meta.rank == h->meta.rank && x->text &&
          strstr(x->text, "Sending process") && strstr(x->text, "closing signal SIGTERM"))
        terms++;
    }
    return terms == per - 1;
  }
  return false;
}

/* How many lines of the input repeat the cause's own line word for word
 * (one process prints it once, or twice with stdout and stderr merged). */
static size_t alike_causes(const build_t *b, const ddx_incident_t *p) {
  const ddx_hit_t *hits = b->s->hits.data;
  size_t n = 0;
  for (size_t i = 0; p->hit->text && i < b->s->hits.len; i++)
    n += !hits[i].is_ctx && hits[i].rule == p->hit->rule && hits[i].input == p->hit->input &&
         hits[i].text && !strcmp(hits[i].text, p->hit->text);
  return n;
}

/* An alike cause line (same rule, same words) printed before the cause's
 * own, by another process (another prefix): when every process raises
 * the same error, the text does not show that the cause's line is the
 * first in time. */
static bool earlier_alike(const build_t *b, const ddx_incident_t *p) {
  const ddx_hit_t *hits = b->s->hits.data, *c = p->hit;
  for (size_t i = 0; c->text && i < b->s->hits.len; i++) {
    const ddx_hit_t *h = &hits[i];
    if (h->input != c->input || h->line >= c->line) break;
    if (!h->is_ctx && h->rule == c->rule && h->text && !strcmp(h->text, c->text) &&
        (strcmp(h->meta.host, c->meta.host) || h->meta.rank != c->meta.rank ||
         h->meta.local_rank != c->meta.local_rank))
      return true;
  }
  return false;
}

/* Whether the launcher table's root-cause entry (hit k, its rank row)
 * shares its whole second with another entry of a process that failed on
 * its own: torchrun records every failure it finds in one poll and picks
 * the earliest timestamp, so a tie is its dict order, not time. `tied`
 * gets the ranks of that second (the root's too) when it does. */
static bool root_tied(const build_t *b, size_t k, ddx_rankset_t *tied) {
  const ddx_hit_t *hits = b->s->hits.data;
  int64_t root = entry_seconds(hits, k, 3);
  if (root < 0) return false;
  ddx_rankset_t same = {0};
  for (size_t j = k; j-- > 0;) {
    const ddx_hit_t *x = &hits[j];
    if (x->input != hits[k].input || x->line + 400 < hits[k].line) break;
    int32_t rk = ddx_hit_fact(x, "root_rank") ? -1 : table_row_rank(b, x);
    if (rk < 0) continue;
    if (x->text && strstr(x->text, "failed (exitcode")) break; /* the table's own report */
    if (!entry_killed(b, j) && entry_seconds(hits, j, 3) == root) ddx_rankset_add(&same, rk);
  }
  bool tie = same.n > 0;
  if (tie) {
    ddx_rankset_add(tied, parse_int(ddx_hit_fact(&hits[k], "root_rank")));
    for (size_t i = 0; i < same.n; i++)
      ddx_rankset_add(tied, same.v[i]);
  }
  ddx_rankset_free(&same);
  return tie;
}

/* The ranks a torchrun agent stopped on a job of one node (no host names,
 * one failure table): the processes its table lists failed; it sent
 * "closing signal SIGTERM" to the ones still running. When the table's
 * ranks and the SIGTERMs account for 0..n-1, the ranks missing from the
 * table are those that were still running: for a timeout, the stuck ones.
 * Empty when the text does not account for every process; when it does,
 * the table's ranks (they failed after waiting) go to `listed_out`. */
static void launcher_stopped(const build_t *b, ddx_rankset_t *out, ddx_rankset_t *listed_out) {
  const ddx_hit_t *hits = b->s->hits.data;
  ddx_rankset_t listed = {0};
  long pids[64];
  size_t npids = 0, roots = 0;
  uint64_t root_line = 0;
  bool ok = true;
  for (size_t i = 0; ok && i < b->s->hits.len; i++) {
    const ddx_hit_t *h = &hits[i];
    if (h->is_ctx) continue; /* every input: --log_dir's per-rank files beside the terminal's */
    if (h->meta.host[0]) ok = false; /* several nodes: each agent stops its own */
    const ddx_rule_t *r = &b->cat->rules[h->rule];
    const char *pid = ddx_hit_fact(h, "pid");
    int32_t rk = table_row_rank(b, h);
    if (h->line != root_line && root_entry(b, h)) roots++, root_line = h->line;
    if (rk >= 0)
      ddx_rankset_add(&listed, rk);
    else if (r->role == DDX_ROLE_COLLATERAL && pid && h->text &&
             strstr(h->text, "Sending process") && strstr(h->text, "SIGTERM")) {
      long v = strtol(pid, NULL, 10);
      bool seen = false;
      for (size_t k = 0; k < npids; k++)
        seen |= pids[k] == v;
      if (!seen && npids < 64) pids[npids++] = v;
    }
  }
  int32_t n = (int32_t)(listed.n + npids);
  if (ok && roots <= 1 && npids > 0 && listed.n > 0) {
    ddx_rankset_t missing = {0};
    for (int32_t r = 0; r < n; r++)
      if (!ddx_rankset_has(&listed, r)) ddx_rankset_add(&missing, r);
    bool inside = true; /* every listed rank within 0..n-1 */
    for (size_t k = 0; k < listed.n; k++)
      inside &= listed.v[k] < n;
    if (inside && missing.n == npids) {
      for (size_t k = 0; k < missing.n; k++)
        ddx_rankset_add(out, missing.v[k]);
      for (size_t k = 0; k < listed.n; k++)
        ddx_rankset_add(listed_out, listed.v[k]);
    }
    ddx_rankset_free(&missing);
  }
  ddx_rankset_free(&listed);
}

/* The rank of the launcher table entry whose traceback holds hit i
 * (torchrun with @record copies each failed process's error file into
 * its entry: time, host, rank, exitcode, error_file, then the
 * traceback's lines), -1 when the hit is not inside an entry's
 * traceback. Walking up from the hit, the entry's rank row comes before
 * any time row (the next entry's start) or the agent's own report. */
static int32_t entry_rank_of(const build_t *b, size_t i) {
  const ddx_hit_t *hits = b->s->hits.data;
  for (size_t k = i; k-- > 0;) {
    const ddx_hit_t *x = &hits[k];
    if (x->input != hits[i].input || x->line + 400 < hits[i].line) break;
    if (x->is_ctx) continue;
    if (ddx_hit_fact(x, "table_time") || (x->text && strstr(x->text, "failed (exitcode"))) break;
    int32_t rk = table_row_rank(b, x);
    if (rk >= 0) return x->line < hits[i].line ? rk : -1;
  }
  return -1;
}

static const char *skip_blank(const char *s) {
  while (*s == ' ' || *s == '\t')
    s++;
  return s;
}

/* The rank the launcher's table attributes the primary's error to: the
 * cause's own line, word for word, inside one entry's traceback (its
 * process's error file), or the primary's exit status or signal on one
 * entry's rows. -1 when none is, or entries disagree. */
static int32_t table_entry_rank(const build_t *b, const ddx_incident_t *p) {
  const ddx_hit_t *hits = b->s->hits.data;
  int32_t only = -1;
  const char *want = p->hit->text ? skip_blank(p->hit->text) : NULL;
  for (size_t i = 0; want && want[0] && i < b->s->hits.len; i++) {
    const ddx_hit_t *h = &hits[i];
    if (h->is_ctx || h->rule != p->hit->rule || !h->text) continue; /* any input: --log_dir */
    /* the cause's own line, or the entry's exit status / signal row (a
     * signal cause whose process printed nothing of its own) */
    if (strcmp(skip_blank(h->text), want) && !b->cat->rules[h->rule].sigs[h->pattern].fallback)
      continue;
    int32_t r = entry_rank_of(b, i);
    if (r < 0) continue;
    if (only >= 0 && only != r) return -1;
    only = r;
  }
  return only;
}

/* The rank of the primary's event at the lowest training step (`at_step`)
 * when that step is below the anchor's and one rank holds it: the first
 * NaN is the earliest step, whatever order --tee or per-rank files put
 * the lines in. -1 otherwise. */
static int32_t earliest_step_rank(const build_t *b, const ddx_incident_t *p) {
  const ddx_hit_t *hits = b->s->hits.data;
  const char *a = ddx_hit_fact(p->hit, "at_step");
  long anchor = a ? strtol(a, NULL, 10) : LONG_MAX, best = LONG_MAX;
  int32_t rank = -1;
  bool tie = false;
  for (size_t i = 0; i < b->s->hits.len; i++) {
    const ddx_hit_t *h = &hits[i];
    const char *st = h->is_ctx || h->rule != p->hit->rule ? NULL : ddx_hit_fact(h, "at_step");
    int32_t r = !st                 ? -1
                : h->meta.rank >= 0 ? (int32_t)h->meta.rank
                                    : parse_int(ddx_hit_fact(h, "rank"));
    if (r < 0) continue;
    long v = strtol(st, NULL, 10);
    if (v < best)
      best = v, rank = r, tie = false;
    else if (v == best && r != rank)
      tie = true;
  }
  return best < anchor && !tie ? rank : -1;
}

/* The odd rank of a desync: the primary's reports each name their own
 * rank (`rank`) and the rank whose collective differs (`other_rank`).
 * With a majority in one collective, every reporter of the majority
 * names the odd rank, and the odd rank names one of them: the rank named
 * by the most distinct reporters is the odd one when it is one. -2 when
 * reports exist but do not decide (one report, or a tie: two ranks that
 * name each other), with the ranks named as candidates; -1 when none. */
static int32_t odd_rank(const build_t *b, const ddx_incident_t *p, ddx_rankset_t *cand) {
  const ddx_hit_t *hits = b->s->hits.data;
  ddx_rankset_t reporters = {0};
  int32_t named[64], votes[64];
  size_t n = 0;
  for (size_t i = 0; i < b->s->hits.len; i++) {
    const ddx_hit_t *h = &hits[i];
    const char *a = h->is_ctx || h->rule != p->hit->rule ? NULL : ddx_hit_fact(h, "other_rank");
    int32_t me = h->meta.rank >= 0 ? (int32_t)h->meta.rank : parse_int(ddx_hit_fact(h, "rank"));
    if (!a || me < 0 || parse_int(a) < 0 || ddx_rankset_has(&reporters, me)) continue;
    ddx_rankset_add(&reporters, me);
    int32_t o = parse_int(a);
    size_t k = 0;
    while (k < n && named[k] != o)
      k++;
    if (k == n && n < 64) named[n] = o, votes[n++] = 0;
    if (k < n) votes[k]++;
  }
  size_t best = 0;
  bool tie = false;
  for (size_t k = 1; k < n; k++) {
    if (votes[k] > votes[best])
      best = k, tie = false;
    else if (votes[k] == votes[best])
      tie = true;
  }
  int32_t r = n == 0 ? -1 : (tie || votes[best] < 2) ? -2 : named[best];
  if (r == -2) { /* the reporters and the ranks they name */
    for (size_t k = 0; k < reporters.n; k++)
      ddx_rankset_add(cand, reporters.v[k]);
    for (size_t k = 0; k < n; k++)
      ddx_rankset_add(cand, named[k]);
  }
  ddx_rankset_free(&reporters);
  return r;
}

/* 4b. One resolver for the primary's initiating rank: every piece of
 * evidence with its weight and source (the cause line's prefix and
 * captures, the layout, launcher pids and tables, the only rank that
 * speaks in the input, the one rank of the world or of its node that
 * reports no collateral, the launcher's first observed failure), checked
 * against the incident's local rank and node so that a global rank and
 * its local rank always agree. The heaviest consistent piece decides; two
 * of equal weight that disagree leave it unknown, with the candidates. */
static void resolve_rank(build_t *b) {
  if (!b->out) return;
  ddx_diagnosis_t *d = b->d;
  ddx_incident_t *p = &b->incs[0];
  const ddx_layout_t *l = b->s->layout;
  int32_t world = world_size_seen(b->s);
  bool exact = false;
  rank_frame_t f = {.local = p->local_rank,
                    .per_node = procs_per_node(l, world, &exact),
                    .host = p->hit->meta.host};
  /* the highest rank seen rounds up to whole nodes: a node whose last
   * ranks all stayed silent still runs per_node processes */
  if (exact && f.per_node > 0 && world > 0 && world % f.per_node)
    world += f.per_node - world % f.per_node;
  if (exact && f.per_node > 0 && l->nnodes > 0 && (int64_t)l->nnodes * f.per_node > world &&
      (int64_t)l->nnodes * f.per_node <= 1 << 20)
    world = l->nnodes * f.per_node;
  f.world = world;
  if (f.local < 0 && p->role == DDX_ROLE_CAUSE) f.local = p->local_rank = spawn_local(b, p);
  double w0 = 0;
  const char *src0 = p->rank >= 0 ? placed_source(p, &w0) : NULL;
  /* srun --label's id on a torchrun job (its agent's lines, [defaultN]
   * elsewhere) names the node, not the global rank: node 0 starts at 0,
   * another node needs the processes per node */
  bool per_node_agent = false; /* a launcher that names local ranks (torchrun's agent) */
  for (size_t i = 0; i < p->ncollateral && !per_node_agent; i++)
    per_node_agent =
        p->collateral[i].rule->role == DDX_ROLE_WRAPPER && p->collateral[i].local_rank >= 0;
  /* srun runs one task per node under a launcher that starts the node's
   * processes itself (torchrun's agent, mp.spawn's parent: its nprocs) */
  bool srun_nodes = per_node_agent || l->nprocs > 0 ||
                    (l->dialects & (DDX_DIALECT_TORCHRUN_TEE | DDX_DIALECT_TORCH_ELASTIC |
                                    DDX_DIALECT_SRUN_NODE));
  /* ... then the tasks srun reports are the nodes: all of them run
   * per_node processes */
  if (srun_nodes && exact && f.per_node > 0 && l->srun_max_task >= 0 &&
      (int64_t)(l->srun_max_task + 1) * f.per_node > f.world &&
      (int64_t)(l->srun_max_task + 1) * f.per_node <= 1 << 20)
    world = f.world = (l->srun_max_task + 1) * f.per_node;
  char srun_node[DDX_HOST_MAX] = "";
  if (src0 && !strcmp(src0, "prefix") && (p->hit->meta.dialects & DDX_DIALECT_SRUN) &&
      ((l->dialects &
        (DDX_DIALECT_TORCHRUN_TEE | DDX_DIALECT_TORCH_ELASTIC | DDX_DIALECT_SRUN_NODE)) ||
       per_node_agent || p->local_rank > p->rank)) {
    snprintf(srun_node, sizeof srun_node, "srun-task-%d", p->rank);
    int32_t g = ddx_layout_global_rank(l, srun_node, p->local_rank);
    src0 = g >= 0 ? "layout" : NULL, w0 = 0.85;
    p->rank = g;
    if (!f.host[0]) f.host = srun_node;
  } else if (!f.host[0] && srun_node_id(p->hit, l, srun_node, sizeof srun_node)) {
    f.host = srun_node;
  }
  const ddx_layout_host_t *lh = layout_host(l, f.host);
  const ddx_layout_host_t *seen = learned_host(l, f.host);
  if (lh)
    f.lo = lh->base, f.hi = lh->base + lh->nlocal;
  else if (seen && f.per_node > 0 && seen->base % f.per_node == 0)
    f.lo = seen->base, f.hi = seen->base + f.per_node;
  else
    node_block(b, f.host, world, f.per_node, &f.lo, &f.hi);
  /* several alike cause lines the text cannot tell apart (every rank of
   * a node failing the same config check) */
  f.tie = (p->ranks.n <= 1 || (srun_nodes && (p->hit->meta.dialects & DDX_DIALECT_SRUN))) &&
          (!src0 || (strcmp(src0, "prefix") && strcmp(src0, "capture"))) &&
          alike_causes(b, p) >= 3 && !launcher_saw_one(b, p, &f);
  /* a failure table whose root cause shares its second with other
   * failures: every launcher "first" is a tie (torchrun's dict order) */
  const ddx_hit_t *hits = b->s->hits.data;
  bool table_tie = false;
  ddx_rankset_t tied = {0};
  for (size_t i = 0; i < b->s->hits.len; i++)
    if (root_entry(b, &hits[i])) {
      table_tie = root_tied(b, i, &tied);
      break;
    }
  if (table_tie) f.tie = true;
  ddx_rankset_t waiting = {0}, stopped = {0};
  collateral_reporters(p, srun_nodes, &waiting);
  /* a timeout primary: its own ranks are the ones that waited, and its
   * line's local rank is a waiter's, not the stuck process's */
  if (p->role == DDX_ROLE_COLLATERAL) {
    for (size_t k = 0; k < p->ranks.n; k++)
      ddx_rankset_add(&waiting, p->ranks.v[k]);
    f.local = -1;
  }
  /* only waiting ranks speak (a timeout): the ones the launcher still had
   * to stop are the stuck ones, and every rank its table lists failed
   * after waiting */
  if (p->role == DDX_ROLE_COLLATERAL) launcher_stopped(b, &stopped, &waiting);
  f.waiting = &waiting;
  ddx_vec_t ev;
  ddx_vec_init(&ev, sizeof(ddx_rank_evidence_t));
  /* the launcher's table mapped the cause's local rank through an entry
   * of a process that was aborted or killed: when the cause is a Python
   * exception (exit 1), that entry is another node's process */
  bool exc = p->nframes > 0 && p->role == DDX_ROLE_CAUSE;
  bool src_ok = !(src0 && !strcmp(src0, "launcher-table") && exc &&
                  table_entry_killed(b, p, p->rank, p->local_rank));
  if (src0) add_evidence(&ev, &f, src0, p->rank, w0, src_ok);
  /* the cause's node and its local rank: the node's block gives the rank */
  if (f.hi > 0 && f.local >= 0 && f.local < f.hi - f.lo)
    add_evidence(&ev, &f, "node+local", f.lo + f.local, lh ? 0.9 : 0.8, true);
  /* the launcher on the cause's node names the process it saw fail first
   * (spawn's "process 3 terminated with signal SIGSEGV", torchrun's agent
   * "failed (exitcode: 1) local_rank: 3"): one per node, so its local rank
   * is the cause's when the cause's line does not name it */
  int32_t nl = f.hi > 0 ? node_launcher_local(b, p, f.host) : -1;
  if (nl >= 0 && nl < f.hi - f.lo && (f.local < 0 || f.local == nl))
    add_evidence(&ev, &f, "launcher-local", f.lo + nl, 0.7, true);
  /* no node at all: the launchers' one report of a process failing on its
   * own gives the cause's local rank, for the complement below */
  /* the launcher's table carries the cause's own traceback (or its signal)
   * in one entry; it names the initiator only when one process raised it
   * (its own line and the table's copy, perhaps once more from a merged
   * stderr), not when every rank did */
  int32_t te = p->role == DDX_ROLE_CAUSE && alike_causes(b, p) <= 3 ? table_entry_rank(b, p) : -1;
  /* ... and then the agent's report of another process (a victim's exit 1
   * when the cause was a signal) is not the cause's local rank */
  if (f.local < 0 && !f.host[0] && f.hi == 0 && p->role == DDX_ROLE_CAUSE && te < 0)
    f.local = node_launcher_local(b, p, "");
  for (size_t i = 0; i < p->ncollateral; i++) {
    const ddx_collateral_t *c = &p->collateral[i];
    if (c->rule->role != DDX_ROLE_WRAPPER) continue;
    if (exc && hit_entry_killed(b, c->first)) continue;
    if (c->rank < 0 && c->local_rank >= 0 && f.hi > 0 && !strcmp(c->first->meta.host, f.host) &&
        c->local_rank < f.hi - f.lo && (f.local < 0 || f.local == c->local_rank)) {
      /* the launcher on the cause's own node names the failed process's
       * local rank (spawn's "-- Process N terminated", torchrun's agent) */
      add_evidence(&ev, &f, "launcher-local", f.lo + c->local_rank, 0.7, true);
      continue;
    }
    if (c->rank < 0) continue;
    int32_t cr = c->rank;
    if ((c->first->meta.dialects & DDX_DIALECT_SRUN) && srun_nodes && c->local_rank >= 0 &&
        c->first->meta.rank == cr) { /* the agent's line under srun -l: its id is the node */
      char node[DDX_HOST_MAX];
      snprintf(node, sizeof node, "srun-task-%d", cr);
      cr = ddx_layout_global_rank(l, node, c->local_rank);
    }
    /* the launcher names a (rank, local rank) pair of its own: both must fit */
    bool pair_ok = f.local < 0 || c->local_rank < 0 || c->local_rank == f.local;
    if (entry_among_several(b, c->first)) pair_ok = false;
    /* a timeout primary: the process the launcher saw fail first timed
     * out waiting, it is not the one that got stuck */
    if (p->role == DDX_ROLE_COLLATERAL) pair_ok = false;
    add_evidence(&ev, &f, "launcher-first-failure", cr, 0.6, pair_ok);
  }
  /* srun's first failed task, on the cause's host, when srun's tasks are
   * ranks (not one per node under torchrun / mp.spawn) */
  if (l->srun_failed_task >= 0 && !srun_nodes &&
      (!f.host[0] || !strcmp(f.host, l->srun_failed_host))) {
    bool tie = f.tie; /* srun reports tasks as they end, not by whole seconds */
    f.tie = false;
    add_evidence(&ev, &f, "launcher-first-failure", l->srun_failed_task, 0.6, true);
    f.tie = tie;
  }
  /* a launcher's table entry under "Root Cause (first observed failure)";
   * when the cause is a Python exception (its process exits with 1), not
   * an entry whose process was aborted or killed (a watchdog's SIGABRT on
   * another node) */
  for (size_t i = 0; i < b->s->hits.len; i++) {
    const char *rr = hits[i].is_ctx ? NULL : ddx_hit_fact(&hits[i], "root_rank");
    if (!rr || hits[i].input != p->hit->input ||
        !context_holds(b->s, b->ix, &b->cat->rules[hits[i].rule], &hits[i]) ||
        (exc && entry_killed(b, i)))
      continue;
    const char *lr = ddx_hit_fact(&hits[i], "local_rank");
    /* the launcher's summary itself (a wrapper incident) stands for its
     * root-cause entry, not for the entry its first line lists (torchrun
     * lists the other failures first) */
    bool summary = p->role == DDX_ROLE_WRAPPER;
    if (summary && parse_int(rr) >= 0) f.local = p->local_rank = lr ? parse_int(lr) : -1;
    bool pair_ok = f.local < 0 || !lr || parse_int(lr) == f.local;
    if (table_tie) pair_ok = false; /* a tie in one poll: not first in time */
    if (parse_int(rr) >= 0)
      add_evidence(&ev, &f, "launcher-root-cause", parse_int(rr), summary ? 1.05 : 0.8, pair_ok);
    break;
  }
  /* a timeout incident (the ranks that waited): PyTorch's watchdog that
   * fired first makes the others dump ("Received a dump signal due to a
   * collective timeout from rank 6"), so that rank saw the hang first,
   * whichever rank's line the incident is */
  for (size_t i = 0; p->role == DDX_ROLE_COLLATERAL && i < b->s->hits.len; i++) {
    const char *ft = hits[i].is_ctx || hits[i].input != p->hit->input
                         ? NULL
                         : ddx_hit_fact(&hits[i], "first_timeout_rank");
    if (ft && parse_int(ft) >= 0) {
      add_evidence(&ev, &f, "first-timeout", parse_int(ft), 1.05, true);
      break;
    }
  }
  /* a log in which one process speaks: every rank it names (prefixes,
   * captures, frames) is 0, no world size above 1, one host at most; the
   * weakest evidence, for a cause whose own lines name no rank (what the
   * engine saw: the prefixes of candidate lines, captures, frames) */
  if (p->role == DDX_ROLE_CAUSE && !f.tie && world == 1 && l->world_size <= 1 &&
      l->seen_hosts <= 1 && l->max_local <= 0 && l->max_global == 0 &&
      !(l->dialects & DDX_DIALECT_SRUN))
    add_evidence(&ev, &f, "only-rank", 0, 0.5, true);
  /* frames under srun -l carry the task id, not a rank */
  int32_t tbr = (p->hit->meta.dialects & DDX_DIALECT_SRUN) ? -1 : traceback_rank(p);
  if (tbr >= 0) add_evidence(&ev, &f, "traceback", tbr, 0.85, true);
  if (stopped.n == 1) add_evidence(&ev, &f, "launcher-stopped", stopped.v[0], 0.9, true);
  /* the launcher's table carries the cause's own traceback in one entry;
   * it names the initiator only when one process raised it (its own line
   * and the table's copy, perhaps once more from a merged stderr), not
   * when every rank did */
  if (te >= 0) add_evidence(&ev, &f, "launcher-entry", te, 0.97, true);
  ddx_rankset_t cand = {0};
  /* the earliest step's event (the first NaN), above the anchor's prefix */
  int32_t es = p->role == DDX_ROLE_CAUSE ? earliest_step_rank(b, p) : -1;
  if (es >= 0) add_evidence(&ev, &f, "earliest-step", es, 1.05, true);
  /* a desync's reports name the odd rank: above the reporter's own prefix */
  int32_t odd = odd_rank(b, p, &cand);
  if (odd >= 0) add_evidence(&ev, &f, "odd-rank", odd, 1.1, true);
  int32_t comp = p->role == DDX_ROLE_CAUSE && odd == -1 ? complement_rank(b, &f, &cand) : -1;
  for (size_t k = 0; stopped.n > 1 && k < stopped.n; k++)
    ddx_rankset_add(&cand, stopped.v[k]);
  if (comp >= 0) add_evidence(&ev, &f, "complement", comp, f.hi > 0 ? 0.8 : 0.75, true);
  if (ev.len > 1) qsort(ev.data, ev.len, sizeof(ddx_rank_evidence_t), cmp_evidence);
  const ddx_rank_evidence_t *e = ev.data;
  int32_t rank = -1;
  bool conflict = false;
  if (ev.len && e[0].consistent) {
    rank = e[0].rank;
    for (size_t i = 1; i < ev.len && e[i].consistent && e[i].weight == e[0].weight; i++)
      conflict |= e[i].rank != rank;
  } else if (ev.len && (!strcmp(e[0].source, "prefix") || !strcmp(e[0].source, "capture"))) {
    /* the line's own word that contradicts its local rank: the rank stands,
     * the local rank (from a weaker source) goes */
    rank = e[0].rank;
    p->local_rank = -1;
  }
  if (conflict) rank = -1;
  /* a desync's reports that do not single out one rank (one report names
   * two ranks; two ranks naming each other): any of them may be odd */
  if (odd == -2) rank = -1, p->local_rank = -1;
  /* the launcher's table is the only witness (its summary, or a signal
   * several processes ended with) and it lists them in one second: the
   * text does not tell which came first */
  /* ... or every rank it lists raised the cause alike (a missing module
   * on every rank, a rendezvous that timed out everywhere): no one rank
   * started it, and the table's pick among them is its dict order */
  bool placed_by_line =
      src0 && (!strcmp(src0, "prefix") || !strcmp(src0, "capture") || !strcmp(src0, "layout"));
  bool every_alike = table_tie && !placed_by_line && p->role == DDX_ROLE_CAUSE && p->ranks.n >= 2 &&
                     tied.n >= 2 && alike_causes(b, p) >= p->ranks.n;
  for (size_t k = 0; every_alike && k < tied.n; k++)
    every_alike = ddx_rankset_has(&p->ranks, tied.v[k]);
  /* ... and, whatever the launcher says, every rank of the world raised the
   * cause alike (each one's own line: prefixes, per-rank files): a failure
   * of the job's setup or config on every process, not one rank's */
  /* the ranks that printed the cause's very words, on any input (--log_dir's
   * per-rank files): an OOM that names its GPU differs from rank to rank */
  ddx_rankset_t alike_ranks = {0};
  for (size_t i = 0; p->hit->text && i < b->s->hits.len; i++) {
    const ddx_hit_t *h = &hits[i];
    if (h->is_ctx || h->rule != p->hit->rule || !h->text ||
        strcmp(skip_blank(h->text), skip_blank(p->hit->text)))
      continue;
    int32_t r = h->meta.rank >= 0 ? (int32_t)h->meta.rank : parse_int(ddx_hit_fact(h, "rank"));
    if (r < 0 && !h->meta.host[0] &&
        h->meta.local_rank >= 0) /* one node: [defaultN], attempt_0/N */
      r = h->meta.local_rank;
    if (r >= 0) ddx_rankset_add(&alike_ranks, r);
  }
  bool whole_world = p->role == DDX_ROLE_CAUSE && !p->fallback && p->severity == DDX_SEV_ERROR &&
                     p->rule->trigger == DDX_TRIGGER_MATCH && world >= 2 && es < 0 && te < 0;
  for (int32_t r = 0; whole_world && r < world; r++)
    whole_world = ddx_rankset_has(&alike_ranks, r);
  ddx_rankset_free(&alike_ranks);
  every_alike = every_alike || whole_world;
  bool table_only = (table_tie && p->ranks.n >= 2 &&
                     (p->role == DDX_ROLE_WRAPPER || (p->role == DDX_ROLE_CAUSE && p->fallback))) ||
                    every_alike;
  if (table_only) {
    rank = -1, p->local_rank = -1;
    const ddx_rankset_t *from = p->role == DDX_ROLE_WRAPPER ? &tied : &p->ranks;
    for (size_t k = 0; k < from->n; k++)
      ddx_rankset_add(&cand, from->v[k]);
  }
  /* the cause's own placement names its line's process, not the first of
   * several that raised it alike */
  bool alike_first = rank >= 0 && f.tie && p->role == DDX_ROLE_CAUSE &&
                     (!strcmp(e[0].source, "layout") || !strcmp(e[0].source, "node+local")) &&
                     earlier_alike(b, p);
  if (alike_first) rank = -1, p->local_rank = -1;
  char note[320] = "";
  if (rank >= 0 && (!src0 || rank != p->rank))
    decided_note(note, sizeof note, &e[0], &f, world);
  else if (alike_first)
    snprintf(note, sizeof note,
             "rank unknown: several processes raised it alike, and another printed it first");
  else if (odd == -2)
    snprintf(note, sizeof note,
             "rank unknown: the mismatch reports do not single out the rank that ran another "
             "collective (one report, or two ranks naming each other)");
  else if (whole_world)
    snprintf(note, sizeof note,
             "rank unknown: every rank (%d of %d) raised it alike: no one rank started it", world,
             world);
  else if (table_only)
    snprintf(note, sizeof note,
             "rank unknown: the launcher's table lists %zu processes failing in the same second; "
             "its root cause is a tie, not the first in time",
             cand.n);
  else if (conflict)
    snprintf(note, sizeof note, "rank unknown: the evidence disagrees (%s says %d, %s says %d)",
             e[0].source, e[0].rank, e[1].source, e[1].rank);
  else if (rank < 0 && f.hi > 0)
    snprintf(note, sizeof note, "rank unknown: on %s (ranks %d-%d)", f.host, f.lo, f.hi - 1);
  if (note[0]) p->rank_note = ddx_arena_strdup(&d->arena, note);
  p->rank = rank;
  if (rank >= 0 && p->local_rank < 0) {
    if (f.hi > 0)
      p->local_rank = rank - f.lo;
    else if (f.per_node > 0)
      p->local_rank = rank % f.per_node;
  }
  if (rank < 0 && !alike_first) { /* the complement's few, or the node's ranks */
    ddx_rankset_t node = {0};
    ddx_rankset_t *from = cand.n ? &cand : &node;
    for (int32_t r = f.lo; !cand.n && f.hi > 0 && r < f.hi && r - f.lo < 64; r++)
      if (rank_fits(&f, r)) ddx_rankset_add(&node, r);
    if (from->n && from->n <= 64 &&
        (p->rank_candidates = ddx_arena_alloc(&d->arena, from->n * sizeof(int32_t)))) {
      memcpy(p->rank_candidates, from->v, from->n * sizeof(int32_t));
      p->nrank_candidates = from->n;
    }
    /* the placement's note named a rank that did not stand */
    if (!note[0] && src0 && from->n >= 2) {
      char rs[160];
      ddx_rankset_format(from, rs, sizeof rs);
      snprintf(note, sizeof note, "rank unknown: one of ranks %s", rs);
      p->rank_note = ddx_arena_strdup(&d->arena, note);
    }
    ddx_rankset_free(&node);
  }
  if (ev.len && (p->rank_evidence = ddx_arena_alloc(&d->arena, ev.len * sizeof *e))) {
    memcpy(p->rank_evidence, e, ev.len * sizeof *e);
    p->nrank_evidence = ev.len;
  }
  ddx_vec_free(&ev);
  ddx_rankset_free(&cand);
  ddx_rankset_free(&waiting);
  ddx_rankset_free(&stopped);
  ddx_rankset_free(&tied);
}

/* The traceback group an incident's line ends (or sits in), or NULL. */
static const tb_group_t *incident_group(const build_t *b, const ddx_incident_t *inc) {
  const tb_group_t *best = NULL;
  for (size_t k = 0; k < b->groups.len; k++) {
    const tb_group_t *g = &DDX_VEC_AT(&b->groups, tb_group_t, k);
    if (g->input != inc->hit->input || g->frames.len == 0) continue;
    if (inc->hit->line < g->first_line || inc->hit->line > g->last_line + TB_TAIL) continue;
    ddx_frame_t lane = {.rank = g->rank, .local_rank = g->local_rank};
    snprintf(lane.host, sizeof lane.host, "%s", g->host);
    if (frame_rank_ok(&lane, inc->hit)) best = g;
  }
  return best;
}

/* 5. Each incident's traceback, phase, library and user frames. */
static void place_frames(build_t *b) {
  ddx_diagnosis_t *d = b->d;
  for (size_t i = 0; i < b->out; i++) {
    ddx_incident_t *inc = &b->incs[i];
    attach_traceback(d, b->frames, b->nframes, inc);
    const tb_group_t *g = incident_group(b, inc);
    if (g && inc->nframes < g->frames.len && inc->inferred) {
      inc->frames = (const ddx_frame_t **)g->frames.data; /* copied below */
      inc->nframes = g->frames.len;
    }
    if (inc->nframes) {
      const ddx_frame_t **fr = ddx_arena_alloc(&d->arena, inc->nframes * sizeof *fr);
      if (fr) memcpy(fr, inc->frames, inc->nframes * sizeof *fr);
      inc->frames = fr;
      if (!fr) inc->nframes = 0;
      for (size_t k = inc->nframes; k-- > 0;) {
        if (!inc->library_frame && is_library_path(inc->frames[k]->file))
          inc->library_frame = inc->frames[k];
        if (!inc->user_frame && !is_library_path(inc->frames[k]->file))
          inc->user_frame = inc->frames[k];
      }
      inc->phase = frames_phase(b->cat, (const ddx_frame_t *const *)inc->frames, inc->nframes);
    }
  }
}

/* 7. Confidence and missing facts. */
static void finish_incidents(build_t *b) {
  ddx_diagnosis_t *d = b->d;
  ddx_incident_t *incs = b->incs;
  for (size_t i = 0; i < b->out; i++) {
    ddx_incident_t *inc = &incs[i];
    /* Calibration (fitted on the corpus's development part, checked on
     * its held-back part; docs/accuracy.md): indirect evidence (collateral,
     * a wrapper, an exit status) names its class almost as reliably as a
     * cause line; a class inferred from a cut traceback is right far less
     * often than its share of the differential says. */
    double c = inc->confidence;
    if (inc->role != DDX_ROLE_CAUSE) c *= 0.9;
    if (inc->fallback) c *= 0.9;
    if (inc->inferred)
      c *= INFERRED_CALIBRATION;
    else
      c = pow(c, DECISIVE_CALIBRATION); /* signature confidences are set low */
    if (i == 0 && b->out > 1 && incs[1].severity == DDX_SEV_ERROR && incs[1].role == DDX_ROLE_CAUSE)
      c *= 0.85; /* another independent cause competes */
    inc->confidence = c > 0.99 ? 0.99 : c;
    if (inc->inferred) {
      char buf[400], who[48] = "the same process";
      if (inc->rank >= 0) snprintf(who, sizeof who, "rank %d", inc->rank);
      snprintf(buf, sizeof buf,
               "the traceback is cut before its error line: paste the next 20 lines of %s's output "
               "after line %llu",
               who, (unsigned long long)inc->hit->line);
      add_missing(d, inc, buf);
    }
    if (inc->role != DDX_ROLE_CAUSE) {
      char buf[512];
      if (inc->rank >= 0)
        snprintf(buf, sizeof buf,
                 "only %s is visible: the failing rank's own output (rank %d) is not in this log; "
                 "rerun with `torchrun --tee 3 --log-dir logs/` or collect "
                 "`logs/*/attempt_0/%d/stderr.log`",
                 inc->role == DDX_ROLE_WRAPPER ? "the launcher's summary" : "collateral", inc->rank,
                 inc->local_rank >= 0 ? inc->local_rank : inc->rank);
      else
        snprintf(buf, sizeof buf,
                 "only %s is visible: the initiating rank's own error is not in this log; rerun "
                 "with `torchrun --tee 3 --log-dir logs/` and look at every rank's stderr.log",
                 inc->role == DDX_ROLE_WRAPPER ? "the launcher's summary" : "collateral");
      add_missing(d, inc, buf);
    }
    if (inc->fallback)
      add_missing(d, inc,
                  "the evidence is an exit status only; check `dmesg -T | grep -i -E "
                  "'killed process|oom|xid|segfault'` on the node at the time of the failure");
    for (size_t k = 0; k < inc->rule->missing.n; k++)
      add_missing(d, inc, inc->rule->missing.v[k]);
  }
}

/* The primary takes candidate k's class, inferred at its share, and k
 * moves to the head of the differential. */
static void promote_candidate(ddx_incident_t *p, ddx_candidate_t *c, size_t k) {
  p->rule = c[k].rule;
  p->inferred = true;
  p->confidence = c[k].score;
  ddx_candidate_t lead = c[k];
  memmove(c + 1, c, k * sizeof *c);
  c[0] = lead;
}

/* 6. The differential of the primary, and what would separate its first
 * two candidates. */
static void primary_differential(build_t *b) {
  ddx_diagnosis_t *d = b->d;
  if (!b->out) return;
  ddx_incident_t *p = &b->incs[0];
  failure_point_t fp = {.frames = (const ddx_frame_t *const *)p->frames,
                        .nframes = p->nframes,
                        .phase = p->phase,
                        .input = p->hit->input,
                        .rank = p->rank,
                        .tokens_touch = p->inferred || weak_generic(p)};
  ddx_candidate_t *c = ddx_arena_alloc(&d->arena, DDX_MAX_CANDIDATES * sizeof *c);
  if (!c) return;
  /* every role for weak generic evidence, as for a cut traceback: what it
   * hides may be the watchdog's collateral */
  d->ndifferential = differential(b, &fp, p->rule, !weak_generic(p), c, DDX_MAX_CANDIDATES);
  d->differential = c;
  /* weak generic evidence (a bare ERROR line, `terminate called`, an exit
   * status) names no class: like a cut traceback, it takes the class the
   * rest of the text points at when that class's share is high enough */
  if (weak_generic(p) && p->role == DDX_ROLE_CAUSE)
    for (size_t k = 1; k < d->ndifferential; k++) {
      if (c[k].decisive || c[k].score < INFER_MIN_SHARE) continue;
      p->role = c[k].rule->role;
      promote_candidate(p, c, k);
      break;
    }
  /* a bare RuntimeError in torch.save is a checkpoint-save failure: a
   * catch-all primary yields to a class that surfaces as generic
   * exceptions when its clues come close */
  if (!p->inferred && !p->fallback && p->role == DDX_ROLE_CAUSE &&
      p->rule->priority < DDX_CATCHALL_PRIORITY)
    for (size_t k = 1; k < d->ndifferential; k++) {
      if (!c[k].rule->via_generic || c[k].decisive || c[k].score < YIELD_RATIO * c[0].score)
        continue;
      promote_candidate(p, c, k);
      break;
    }
  if (d->ndifferential < 2 || c[1].score < 0.05) return;
  const ddx_rule_t *x = c[0].rule, *y = c[1].rule;
  const char *fx = x->fingerprint ? x->fingerprint : x->title;
  const char *fy = y->fingerprint ? y->fingerprint : y->title;
  char buf[900];
  if (!c[0].decisive)
    snprintf(buf, sizeof buf,
             "the error line that ends the traceback would decide: %s means %s; %s means %s", fx,
             x->id, fy, y->id);
  else
    snprintf(buf, sizeof buf, "%s would need a line of its own (%s); without one, %s stands", y->id,
             fy, x->id);
  d->separator = ddx_arena_strdup(&d->arena, buf);
}

/* 8. Where to resume: the last checkpoint saved (a marker rule's event)
 * before the failure began - the primary's first line, or the first line
 * of anything of error or warning severity that came with it (the first
 * overflow of a divergence, the first NaN loss), in the primary's input. */
static void find_resume(build_t *b) {
  if (!b->out) return;
  const ddx_incident_t *p = &b->incs[0];
  uint32_t input = p->hit->input;
  uint64_t begin = p->hit->line;
  for (size_t i = 0; i < p->ncollateral; i++)
    if (p->collateral[i].first->input == input && p->collateral[i].first->line < begin)
      begin = p->collateral[i].first->line;
  for (size_t i = 1; i < b->out; i++)
    if (b->incs[i].hit->input == input && b->incs[i].hit->line < begin)
      begin = b->incs[i].hit->line;
  if (p->rule->anchor_last) begin++; /* a hang: checkpoints up to its last progress count */
  const ddx_hit_t *hits = b->s->hits.data;
  for (size_t i = 0; i < b->s->hits.len; i++) {
    const ddx_hit_t *h = &hits[i];
    if (h->is_ctx || !b->cat->rules[h->rule].marker || h->input != input || h->line >= begin)
      continue;
    if (!b->d->resume || h->line > b->d->resume->line) b->d->resume = h;
  }
}

int ddx_diagnose(ddx_diagnosis_t *d, const ddx_scan_t *s, ddx_error_t *err) {
  memset(d, 0, sizeof *d);
  ddx_arena_init(&d->arena);
  d->scan = s;
  build_t b = {.d = d, .s = s, .cat = s->cat};
  ddx_vec_init(&b.pids, sizeof(pid_rank_t));
  ddx_vec_init(&b.pairs, sizeof(rank_pair_t));
  ddx_vec_init(&b.groups, sizeof(tb_group_t));
  int rc = DDX_ENOMEM;
  b.aggs = calloc(s->cat->nrules + 1, sizeof *b.aggs);
  b.ix = build_ctx_index(s);
  b.frames = sorted_frames(d, s);
  b.nframes = b.frames ? s->frames.len : 0;
  if (!b.aggs || !b.ix || (s->frames.len && !b.frames)) goto done;
  resolve_lines(&b);
  if ((rc = group_tracebacks(&b))) goto done;
  if ((rc = mark_explained(&b))) goto done;
  if ((rc = make_incidents(&b))) goto done;
  if ((rc = infer_cut_tracebacks(&b))) goto done;
  rank_incidents(&b);
  if ((rc = attach_collateral(&b))) goto done;
  place_frames(&b);
  resolve_rank(&b);
  primary_differential(&b);
  finish_incidents(&b);
  find_resume(&b);
  d->incidents = b.incs;
  d->n = b.out;
  rc = 0;
done:
  if (rc && b.incs && !d->incidents) /* incidents still own their rank sets */
    for (size_t i = 0; i < b.m; i++) {
      ddx_rankset_free(&b.incs[i].ranks);
      ddx_rankset_free(&b.incs[i].quiet_first);
    }
  build_free(&b);
  if (rc) {
    ddx_diagnosis_free(d);
    return ddx_error_set(err, rc, "out of memory");
  }
  return 0;
}

void ddx_diagnosis_free(ddx_diagnosis_t *d) {
  for (size_t i = 0; i < d->n; i++) {
    ddx_rankset_free(&d->incidents[i].ranks);
    ddx_rankset_free(&d->incidents[i].quiet_first);
    for (size_t k = 0; k < d->incidents[i].ncollateral; k++)
      ddx_rankset_free(&d->incidents[i].collateral[k].ranks);
  }
  ddx_arena_free(&d->arena);
  memset(d, 0, sizeof *d);
}
