/* diagnose.c - from hits to ranked incidents (see ddx/diagnose.h). */
#include "ddx/diagnose.h"

#include <stdint.h>
#include <stdio.h>
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

bool ddx_diagnosis_has_error(const ddx_diagnosis_t *d) {
  for (size_t i = 0; i < d->n; i++)
    if (d->incidents[i].severity == DDX_SEV_ERROR) return true;
  return false;
}

static int32_t parse_int(const char *s) {
  if (!s || !*s) return -1;
  char *end;
  long v = strtol(s, &end, 10);
  if (end == s || v < 0 || v > 10000000) return -1;
  return (int32_t)v;
}

/* Where an event happened: prefixes first (they are the launcher's own
 * word), then captures. A local rank becomes a global one through the
 * layout the log gives (or directly on a single node). */
static void place_event(event_t *e, const ddx_layout_t *layout) {
  const ddx_hit_t *h = e->hit;
  int32_t rank = h->meta.rank;
  if (rank < 0) rank = parse_int(ddx_hit_fact(h, "rank"));
  int32_t local = h->meta.local_rank;
  if (local < 0) local = parse_int(ddx_hit_fact(h, "local_rank"));
  if (local < 0) local = parse_int(ddx_hit_fact(h, "gpu"));
  if (rank < 0 && local >= 0) rank = ddx_layout_global_rank(layout, h->meta.host, local);
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
    if (cp->owner >= 0 && cp->owner != (int)h->pattern) continue;
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

static bool fact_number(const ddx_hit_t *h, const char *name, double *out) {
  const char *v = ddx_hit_fact(h, name);
  return v && ddx_parse_quantity(v, out);
}

static bool conditions_hold(const ddx_condition_t *conds, size_t nconds, const ddx_hit_t *h) {
  for (size_t i = 0; i < nconds; i++) {
    const ddx_condition_t *c = &conds[i];
    double a, b;
    if (!strcmp(c->op, "exists")) {
      if (!ddx_hit_fact(h, c->fact)) return false;
      continue;
    }
    if (!fact_number(h, c->fact, &a)) return false;
    if (c->ref_fact) {
      if (!fact_number(h, c->ref_fact, &b)) return false;
      b *= c->ref_factor;
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
    }
  }
  if (inc->rank < 0 && inc->ranks.n == 1) inc->rank = inc->ranks.v[0];
  if (inc->rank >= 0 && note[0]) inc->rank_note = ddx_arena_strdup(&d->arena, note);
}

/* Tiers of causes: host-level evidence (the kernel OOM killer, Xid/ECC)
 * explains the rank-level symptoms it produces; specific causes compete by
 * time (the earliest failure started it); catch-alls come last. */
#define DDX_HOST_PRIORITY 90
#define DDX_CATCHALL_PRIORITY 10
static int cause_tier(const ddx_incident_t *x) {
  return x->rule->priority >= DDX_HOST_PRIORITY       ? 0
         : x->rule->priority >= DDX_CATCHALL_PRIORITY ? 1
                                                      : 2;
}

static int incident_cmp(const void *pa, const void *pb) {
  const ddx_incident_t *a = pa, *b = pb;
  if ((a->severity == DDX_SEV_ERROR) != (b->severity == DDX_SEV_ERROR))
    return a->severity == DDX_SEV_ERROR ? -1 : 1;
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
    if (w && atoi(w) > world) world = atoi(w);
  }
  if (world > 0) return world;
  for (size_t i = 0; i < s->hits.len; i++) {
    int32_t r = hits[i].meta.rank;
    const char *fr = ddx_hit_fact(&hits[i], "rank");
    if (fr && atoi(fr) > r) r = atoi(fr);
    if (r + 1 > world) world = r + 1;
  }
  const ddx_frame_t *fr = s->frames.data;
  for (size_t i = 0; i < s->frames.len; i++)
    if (fr[i].rank + 1 > world) world = fr[i].rank + 1;
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
           "inference: %zu of %d ranks report the timeout; rank(s) %s did not: the likely dead or "
           "stuck rank(s)",
           inc->ranks.n, world, rs);
  inc->rank_note = ddx_arena_strdup(&d->arena, note);
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
           "inference: rank(s) %s stopped reporting progress first; %zu other rank(s) went on: "
           "look at what %s was doing (py-spy dump)",
           rs, seen - inc->quiet_first.n, inc->quiet_first.n == 1 ? "it" : "they");
  inc->rank_note = ddx_arena_strdup(&d->arena, note);
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

int ddx_diagnose(ddx_diagnosis_t *d, const ddx_scan_t *s, ddx_error_t *err) {
  memset(d, 0, sizeof *d);
  ddx_arena_init(&d->arena);
  d->scan = s;
  const ddx_catalog_t *cat = s->cat;
  const ddx_hit_t *hits = s->hits.data;
  agg_t *aggs = calloc(cat->nrules + 1, sizeof *aggs);
  ctx_index_t **ix = build_ctx_index(s);
  if (!aggs || !ix) {
    free(aggs);
    free_ctx_index(ix, cat);
    return ddx_error_set(err, DDX_ENOMEM, "out of memory");
  }

  ddx_vec_t pids; /* pid_rank_t: which process was which rank */
  ddx_vec_init(&pids, sizeof(pid_rank_t));
  event_t recent[RECENT];
  size_t nrecent = 0;
  ddx_vec_t pairs; /* rank_pair_t: local and global rank named together */
  ddx_vec_init(&pairs, sizeof(rank_pair_t));

  /* 1. One rule per line: the highest priority whose context and
   * conditions hold. Hits of one line are adjacent in the hit array. */
  for (size_t i = 0; i < s->hits.len;) {
    size_t j = i;
    while (j < s->hits.len && hits[j].input == hits[i].input && hits[j].line == hits[i].line)
      j++;
    const ddx_hit_t *best = NULL;
    for (size_t k = i; k < j; k++) {
      const ddx_hit_t *h = &hits[k];
      if (h->is_ctx) continue;
      const ddx_rule_t *r = &cat->rules[h->rule];
      const ddx_rule_t *br = best ? &cat->rules[best->rule] : NULL;
      if (br && (r->priority < br->priority ||
                 (r->priority == br->priority &&
                  r->sigs[h->pattern].confidence <= br->sigs[best->pattern].confidence)))
        continue;
      if (!context_holds(s, ix, r, h) || !conditions_hold(r->conds, r->nconds, h) ||
          !conditions_hold(r->sigs[h->pattern].conds, r->sigs[h->pattern].nconds, h))
        continue;
      best = h;
    }
    if (best) {
      const ddx_rule_t *r = &cat->rules[best->rule];
      event_t e = {.hit = best, .sig = &r->sigs[best->pattern]};
      e.severity = sig_severity(r, e.sig);
      place_event(&e, s->layout);
      add_event(&aggs[r->index], r, &e);
      note_pid(&pids, &e);
      note_pair(&pairs, &e);
      note_record(&pids, recent, nrecent, &e);
      if (nrecent == RECENT) memmove(recent, recent + 1, (RECENT - 1) * sizeof *recent), nrecent--;
      recent[nrecent++] = e;
    }
    i = j;
  }
  free_ctx_index(ix, cat);
  /* Hits past the per-rule storage cap still count. */
  for (size_t r = 0; r < cat->nrules; r++)
    if (aggs[r].have && s->rule_hits[r] > s->rule_stored[r])
      aggs[r].count += s->rule_hits[r] - s->rule_stored[r];

  /* 2. Incidents, one per rule; no-error rules only when nothing failed. */
  bool any_error = false;
  size_t n = 0;
  for (size_t r = 0; r < cat->nrules; r++)
    if (aggs[r].have) {
      n++;
      if (cat->rules[r].trigger == DDX_TRIGGER_MATCH && aggs[r].severity == DDX_SEV_ERROR)
        any_error = true;
    }
  ddx_incident_t *incs = ddx_arena_alloc(&d->arena, (n + 1) * sizeof *incs);
  if (!incs) {
    free(aggs);
    ddx_vec_free(&pids);
    ddx_vec_free(&pairs);
    return ddx_error_set(err, DDX_ENOMEM, "out of memory");
  }
  size_t m = 0;
  for (size_t r = 0; r < cat->nrules; r++) {
    agg_t *g = &aggs[r];
    if (!g->have) continue;
    const ddx_rule_t *rule = &cat->rules[r];
    if ((rule->trigger == DDX_TRIGGER_NO_ERROR && any_error) || g->count < rule->min_count) {
      ddx_rankset_free(&g->ranks);
      continue;
    }
    ddx_incident_t *inc = &incs[m++];
    inc->rule = rule;
    inc->severity = g->severity;
    inc->role = (int)rule->role;
    inc->fallback = g->all_fallback;
    inc->hit = g->anchor.hit;
    inc->rank = g->anchor.rank;
    inc->local_rank = g->anchor.local_rank;
    inc->ranks = g->ranks; /* moved */
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
               "inference: rank(s) %s time out at SeqNum %lld while others reached %lld: they "
               "fell behind first",
               rs, (long long)g->min_seq, (long long)g->max_seq);
      inc->rank_note = ddx_arena_strdup(&d->arena, note);
      if (g->min_seq_ranks.n == 1) inc->rank = g->min_seq_ranks.v[0];
    }
    ddx_rankset_free(&g->min_seq_ranks);
    place_incident(d, inc, &pids, &pairs, s->layout);
    if (rule->anchor_last) note_quiet_ranks(d, s, inc);
  }
  free(aggs);
  ddx_vec_free(&pids);
  ddx_vec_free(&pairs);
  qsort(incs, m, sizeof *incs, incident_cmp);
  /* A cause that another error cause explains (its `explains` lists it)
   * cannot be the primary, whatever the order: move the explainer up. */
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

  /* 2b. When only waiting ranks speak (collateral primary), the rank that
   * did not report is the suspect: an inference, said as such. */
  if (m && incs[0].role == DDX_ROLE_COLLATERAL && !incs[0].rank_note && incs[0].ranks.n >= 2)
    infer_silent_rank(d, s, &incs[0]);

  /* 3. Collateral of the primary; independent causes stay incidents. */
  size_t out = 0;
  ddx_incident_t *primary = m ? &incs[0] : NULL;
  if (primary) {
    size_t ncoll = 0;
    ddx_collateral_t *coll = ddx_arena_alloc(&d->arena, (m + 1) * sizeof *coll);
    out = 1;
    for (size_t i = 1; i < m; i++) {
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
        ddx_rankset_free(&x->quiet_first);
        continue;
      }
      incs[out++] = *x;
    }
    primary->collateral = coll;
    primary->ncollateral = ncoll;
    /* Nothing of the cause's own names its rank: the launcher's record of
     * the first failure it observed (torchrun's "failed ... local_rank: N",
     * its table's root cause) is the best remaining evidence. */
    for (size_t k = 0; primary->rank < 0 && k < ncoll; k++)
      if (coll[k].rule->role == DDX_ROLE_WRAPPER && coll[k].rank >= 0) {
        primary->rank = coll[k].rank;
        char note[200];
        snprintf(note, sizeof note,
                 "rank from the launcher's first observed failure (%s), as no line of the cause "
                 "names its rank",
                 coll[k].rule->id);
        primary->rank_note = ddx_arena_strdup(&d->arena, note);
      }
  }

  const ddx_frame_t *frames = sorted_frames(d, s);
  size_t nframes = frames ? s->frames.len : 0;

  /* 4. Confidence and missing facts. */
  for (size_t i = 0; i < out; i++) {
    ddx_incident_t *inc = &incs[i];
    double c = inc->confidence;
    if (inc->role != DDX_ROLE_CAUSE) c *= 0.6;
    if (inc->fallback) c *= 0.7;
    if (i == 0 && out > 1 && incs[1].severity == DDX_SEV_ERROR && incs[1].role == DDX_ROLE_CAUSE)
      c *= 0.85; /* another independent cause competes */
    inc->confidence = c > 0.99 ? 0.99 : c;
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
    attach_traceback(d, frames, nframes, inc);
  }
  d->incidents = incs;
  d->n = out;
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
