/* main.c - the ddx command line: diagnose, rules, explain. A thin front end
 * over the engine (ddx/rules.h, ddx/scan.h, ddx/diagnose.h, ddx/report.h);
 * it owns argument parsing, finding the catalog and exit codes:
 * 0 no error-severity failure, 1 a failure found, 2 usage or input error. */
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdbool.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <uv.h>

#include "ddx/diagnose.h"
#include "ddx/dscheck.h"
#include "ddx/events.h"
#include "ddx/file.h"
#include "ddx/hub.h"
#include "ddx/jsonpos.h"
#include "ddx/live.h"
#include "ddx/lsp.h"
#include "ddx/memory.h"
#include "ddx/report.h"
#include "ddx/rules.h"
#include "ddx/scan.h"
#include "ddx/split.h"
#include "ddx/version.h"

#define MAX_RULE_DIRS 32

typedef struct cli {
  const char *rule_dirs[MAX_RULE_DIRS];
  size_t nrule_dirs;
  char default_dir[PATH_MAX];
} cli_t;

static void put_usage(FILE *f);

static int usage(const char *msg) {
  if (msg) fprintf(stderr, "ddx: %s\n", msg);
  put_usage(stderr);
  return 2;
}

#ifdef DDX_SOURCE_RULES_DIR
#define SOURCE_RULES DDX_SOURCE_RULES_DIR
#else
#define SOURCE_RULES NULL
#endif

/* Prints one formatted line to f with every control character shown
 * escaped (ddx_term_escape): messages and listings quote file names, rule
 * text and bytes from logs and configs, none of which may drive the
 * terminal. */
static void cli_say(FILE *f, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void cli_say(FILE *f, const char *fmt, ...) {
  char buf[4096];
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(buf, sizeof buf, fmt, ap);
  va_end(ap);
  if (n < 0) return;
  size_t len = strlen(buf);
  bool nl = len && buf[len - 1] == '\n';
  if (nl) buf[len - 1] = 0;
  char *e = ddx_term_escape(buf);
  fputs(e ? e : buf, f);
  if (nl) fputc('\n', f);
  free(e);
}

static int load_catalog(cli_t *c, ddx_catalog_t **cat) {
  ddx_error_t err = {0};
  if (c->nrule_dirs == 0)
    c->rule_dirs[c->nrule_dirs++] =
        ddx_catalog_default_dir(c->default_dir, sizeof c->default_dir, SOURCE_RULES);
  int rc = ddx_catalog_load(cat, c->rule_dirs, c->nrule_dirs, &err);
  if (rc) {
    cli_say(stderr, "ddx: %s\n", err.msg);
    return 2;
  }
  for (size_t i = 0; i < (*cat)->warnings.n; i++)
    cli_say(stderr, "ddx: rules: %s\n", (*cat)->warnings.v[i]);
  return 0;
}

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int emit(char *s) {
  if (!s) {
    fprintf(stderr, "ddx: out of memory while rendering\n");
    return 2;
  }
  fputs(s, stdout);
  size_t n = strlen(s);
  if (n && s[n - 1] != '\n') fputc('\n', stdout);
  free(s);
  return 0;
}

static void free_inputs(ddx_vec_t *v) {
  for (size_t i = 0; i < v->len; i++)
    free(DDX_VEC_AT(v, char *, i));
  ddx_vec_free(v);
}

#define DDX_CLI_MAX_INPUTS 1000000 /* input files in all; past it a clear error */

/* The inputs named by args (const char *): folders expanded to the logs
 * under them (cycle-safe, bounded: ddx_list_inputs), files as named (an
 * events file for merge). Entries under a folder that are not regular
 * files are skipped and counted on stderr. Returns 0 or the exit code. */
static int cli_expand_inputs(const ddx_vec_t *args, bool merge, ddx_vec_t *inputs) {
  size_t skipped = 0;
  for (size_t i = 0; i < args->len; i++) {
    const char *a = DDX_VEC_AT(args, const char *, i);
    ddx_error_t lerr = {0};
    int rc = 0;
    if (merge) {
      char **slot = ddx_vec_push(inputs);
      if (!slot || !(*slot = strdup(a))) rc = ddx_error_set(&lerr, DDX_ENOMEM, "out of memory");
    } else {
      rc = ddx_list_inputs(a, inputs, DDX_CLI_MAX_INPUTS - inputs->len, &skipped, &lerr);
    }
    if (rc) {
      cli_say(stderr, "ddx: %s\n", lerr.msg);
      free_inputs(inputs);
      return 2;
    }
  }
  if (skipped)
    fprintf(stderr,
            "ddx: skipped %zu entr%s under the folders that %s not regular files "
            "(FIFOs, devices, sockets or dangling links)\n",
            skipped, skipped == 1 ? "y" : "ies", skipped == 1 ? "is" : "are");
  return 0;
}

/* merge: the inputs are event files written by --events-out. */
static int cmd_diagnose(cli_t *c, int argc, char **argv, bool merge) {
  const char *format = "text";
  size_t threads = 0;
  bool evidence = false;
  const char *events_out = NULL;
  int color = -1;
  ddx_vec_t files; /* const char *: the arguments that name inputs, any number */
  ddx_vec_init(&files, sizeof(const char *));
  ddx_vec_t inputs; /* files, folders expanded to the logs under them */
  ddx_vec_init(&inputs, sizeof(char *));
  for (int i = 0; i < argc; i++) {
    const char *a = argv[i];
    if (!strcmp(a, "--format") || !strcmp(a, "-f")) {
      if (++i >= argc) return ddx_vec_free(&files), usage("--format needs a value");
      format = argv[i];
    } else if (!strncmp(a, "--format=", 9)) {
      format = a + 9;
    } else if (!strcmp(a, "--rules")) {
      if (++i >= argc) return ddx_vec_free(&files), usage("--rules needs a folder");
      if (c->nrule_dirs < MAX_RULE_DIRS) c->rule_dirs[c->nrule_dirs++] = argv[i];
    } else if (!strcmp(a, "--events-out") && !merge) {
      if (++i >= argc) return ddx_vec_free(&files), usage("--events-out needs a file");
      events_out = argv[i];
    } else if (!strcmp(a, "--threads") && !merge) {
      if (++i >= argc) return ddx_vec_free(&files), usage("--threads needs a number");
      char *end;
      long t = strtol(argv[i], &end, 10);
      if (*end || t < 1 || t > DDX_SPLIT_MAX_THREADS)
        return ddx_vec_free(&files), usage("--threads must be 1 to 16");
      threads = (size_t)t;
    } else if (!strcmp(a, "--evidence")) {
      evidence = true;
    } else if (!strcmp(a, "--color")) {
      color = 1;
    } else if (!strcmp(a, "--no-color")) {
      color = 0;
    } else if (a[0] == '-' && a[1]) {
      fprintf(stderr, "ddx: unknown option %s\n", a);
      return ddx_vec_free(&files), usage(NULL);
    } else {
      const char **slot = ddx_vec_push(&files);
      if (!slot) {
        ddx_vec_free(&files);
        fprintf(stderr, "ddx: out of memory\n");
        return 2;
      }
      *slot = a;
    }
  }
  if (strcmp(format, "text") && strcmp(format, "json") && strcmp(format, "sarif"))
    return ddx_vec_free(&files), usage("--format must be text, json or sarif");
  if (files.len == 0)
    return ddx_vec_free(&files), usage("diagnose needs a FILE, a folder or - for stdin");
  int rc = cli_expand_inputs(&files, merge, &inputs);
  ddx_vec_free(&files);
  if (rc) return rc;
  ddx_catalog_t *cat;
  rc = load_catalog(c, &cat);
  if (rc) {
    free_inputs(&inputs);
    return rc;
  }
  ddx_scan_t scan;
  if (ddx_scan_init(&scan, cat)) {
    ddx_catalog_free(cat);
    free_inputs(&inputs);
    fprintf(stderr, "ddx: out of memory\n");
    return 2;
  }
  double t0 = now_s();
  if (!threads) threads = ddx_split_threads();
  const char *sm = getenv("DDX_SPLIT_MIN");
  uint64_t split_min = sm && *sm ? strtoull(sm, NULL, 10) : DDX_SPLIT_MIN_DEFAULT;
  if (split_min < 1) split_min = 1;
  for (size_t i = 0; i < inputs.len; i++) {
    ddx_error_t err = {0};
    const char *in = DDX_VEC_AT(&inputs, char *, i);
    if (merge ? ddx_events_read(&scan, in, &err)
              : ddx_split_scan(&scan, in, threads, split_min, &err)) {
      cli_say(stderr, "ddx: %s\n", err.msg);
      ddx_scan_free(&scan);
      ddx_catalog_free(cat);
      free_inputs(&inputs);
      return 2;
    }
  }
  free_inputs(&inputs);
  if (events_out) {
    ddx_error_t eerr = {0};
    FILE *ef = fopen(events_out, "w");
    int erc = ef ? ddx_events_write(&scan, ef, &eerr) : DDX_EIO;
    if (ef && fclose(ef) != 0) erc = DDX_EIO;
    if (erc) {
      cli_say(stderr, "ddx: %s: %s\n", events_out, ef ? eerr.msg : strerror(errno));
      ddx_scan_free(&scan);
      ddx_catalog_free(cat);
      return 2;
    }
  }
  ddx_diagnosis_t d;
  ddx_error_t err = {0};
  if (ddx_diagnose(&d, &scan, &err)) {
    cli_say(stderr, "ddx: %s\n", err.msg);
    ddx_scan_free(&scan);
    ddx_catalog_free(cat);
    return 2;
  }
  for (size_t r = 0; r < cat->nrules; r++)
    if (scan.rule_regex_errors[r])
      cli_say(stderr,
              "ddx: warning: rule %s (%s): its regex hit the pcre2 match limit on %llu line(s); "
              "those lines were skipped for it (catastrophic backtracking?)\n",
              cat->rules[r].id, cat->rules[r].file, (unsigned long long)scan.rule_regex_errors[r]);
  ddx_report_opts_t o = {.seconds = now_s() - t0};
  o.color = color >= 0 ? color : (isatty(1) && !getenv("NO_COLOR"));
  char hub[PATH_MAX];
  if (!evidence && !strcmp(format, "sarif")) /* only SARIF links the site's pages */
    o.hub =
        ddx_hub_find(hub, sizeof hub,
                     ddx_catalog_default_dir(c->default_dir, sizeof c->default_dir, SOURCE_RULES));
  if (evidence)
    rc = emit(ddx_report_evidence(&d, &o));
  else if (!strcmp(format, "json"))
    rc = emit(ddx_report_json(&d, &o));
  else if (!strcmp(format, "sarif"))
    rc = emit(ddx_report_sarif(&d, &o));
  else
    rc = emit(ddx_report_text(&d, &o));
  if (!rc) rc = ddx_diagnosis_has_error(&d) ? 1 : 0;
  ddx_diagnosis_free(&d);
  ddx_scan_free(&scan);
  ddx_catalog_free(cat);
  return rc;
}

static int cmd_explain(cli_t *c, int argc, char **argv) {
  bool json = false;
  const char *id = NULL;
  for (int i = 0; i < argc; i++) {
    if (!strcmp(argv[i], "--json"))
      json = true;
    else if (!strcmp(argv[i], "--rules") && i + 1 < argc) {
      if (c->nrule_dirs < MAX_RULE_DIRS) c->rule_dirs[c->nrule_dirs++] = argv[++i];
    } else
      id = argv[i];
  }
  if (!id) return usage("explain needs a failure id (see `ddx rules list`)");
  ddx_catalog_t *cat;
  int rc = load_catalog(c, &cat);
  if (rc) return rc;
  const ddx_rule_t *r = ddx_catalog_find(cat, id);
  if (!r) {
    cli_say(stderr, "ddx: no failure class \"%s\" in the catalog (see `ddx rules list`)\n", id);
    ddx_catalog_free(cat);
    return 2;
  }
  ddx_report_opts_t o = {.color = isatty(1) && !getenv("NO_COLOR")};
  rc = emit(ddx_report_explain(r, &o, json));
  ddx_catalog_free(cat);
  return rc;
}

/* ddx catalog: the encyclopedia (ddx/hub.h) as a list, Markdown or a site. */
static int cmd_catalog(cli_t *c, int argc, char **argv) {
  bool markdown = false;
  const char *html = NULL, *out = NULL;
  for (int i = 0; i < argc; i++) {
    bool has = i + 1 < argc;
    if (!strcmp(argv[i], "--markdown"))
      markdown = true;
    else if (!strcmp(argv[i], "--html") && has)
      html = argv[++i];
    else if (!strcmp(argv[i], "-o") && has)
      out = argv[++i];
    else if (!strcmp(argv[i], "--rules") && has) {
      if (c->nrule_dirs < MAX_RULE_DIRS) c->rule_dirs[c->nrule_dirs++] = argv[++i];
    } else
      return usage("catalog: unknown option (--markdown [-o FILE], --html DIR, --rules DIR)");
  }
  if (markdown && html) return usage("catalog: --markdown or --html, not both");
  if (out && !markdown) return usage("catalog: -o goes with --markdown");
  ddx_catalog_t *cat;
  int rc = load_catalog(c, &cat);
  if (rc) return rc;
  if (html) {
    ddx_error_t err = {0};
    rc = ddx_hub_write_html(cat, html, &err) ? 2 : 0;
    if (rc)
      cli_say(stderr, "ddx: catalog --html: %s\n", err.msg);
    else
      cli_say(stdout, "ddx: wrote %s/index.html and %zu entry pages\n", html, cat->nrules);
  } else if (markdown && out) {
    char *md = ddx_hub_markdown(cat);
    FILE *f = md ? fopen(out, "w") : NULL;
    bool ok = f && fputs(md, f) >= 0;
    if (f && fclose(f)) ok = false;
    if (!ok) {
      cli_say(stderr, "ddx: catalog: cannot write %s: %s\n", out,
              md ? strerror(errno) : "out of memory");
      rc = 2;
    }
    free(md);
  } else {
    rc = emit(markdown ? ddx_hub_markdown(cat) : ddx_hub_list(cat));
  }
  ddx_catalog_free(cat);
  return rc;
}

/* Where a rule shows up in a diagnosis: its incident, or the first event
 * of it as collateral. */
static bool incident_has_rule(const ddx_diagnosis_t *d, const ddx_rule_t *r,
                              const ddx_incident_t **inc, const ddx_hit_t **hit) {
  *inc = NULL;
  if (r->marker) { /* a marker makes no incident: its event won a line */
    const ddx_hit_t *h = d->scan->hits.data;
    for (size_t i = 0; i < d->scan->hits.len; i++)
      if (!h[i].is_ctx && h[i].rule == r->index) {
        *hit = &h[i];
        return true;
      }
    return false;
  }
  for (size_t i = 0; i < d->n; i++) {
    if (d->incidents[i].rule == r) {
      *inc = &d->incidents[i];
      *hit = d->incidents[i].hit;
      return true;
    }
    for (size_t k = 0; k < d->incidents[i].ncollateral; k++)
      if (d->incidents[i].collateral[k].rule == r) {
        *hit = d->incidents[i].collateral[k].first;
        return true;
      }
  }
  return false;
}

/* Runs one sample through the whole engine; returns true when the rule
 * shows up (as an incident or collateral) with the expected facts. */
static bool run_sample(const ddx_catalog_t *cat, const ddx_rule_t *r, const ddx_sample_t *s,
                       char *why, size_t whycap) {
  ddx_scan_t scan;
  why[0] = 0;
  if (ddx_scan_init(&scan, cat)) return false;
  ddx_scan_text(&scan, "sample", s->text, strlen(s->text));
  ddx_diagnosis_t d;
  ddx_error_t err;
  bool found = false;
  if (ddx_diagnose(&d, &scan, &err) == 0) {
    const ddx_hit_t *hit = NULL;
    const ddx_incident_t *inc = NULL;
    found = incident_has_rule(&d, r, &inc, &hit);
    if (!found) {
      snprintf(why, whycap, "%s", d.n ? d.incidents[0].rule->id : "nothing");
    } else {
      for (size_t k = 0; k < s->fact_names.n; k++) {
        const char *got = inc ? ddx_incident_fact(inc, s->fact_names.v[k])
                              : ddx_hit_fact(hit, s->fact_names.v[k]);
        if (!got || strcmp(got, s->fact_values.v[k])) {
          snprintf(why, whycap, "fact %s: got \"%s\", wanted \"%s\"", s->fact_names.v[k],
                   got ? got : "(none)", s->fact_values.v[k]);
          found = false;
          break;
        }
      }
    }
    ddx_diagnosis_free(&d);
  }
  ddx_scan_free(&scan);
  return found;
}

static int cmd_rules(cli_t *c, int argc, char **argv) {
  if (argc == 0) return usage("rules needs list, check or --patterns");
  const char *sub = argv[0];
  /* The built-in catalog (no folder named) must be a complete
   * encyclopedia; a team's folder is held to it with --strict. */
  bool strict = false;
  for (int i = 1; i < argc; i++)
    if (!strcmp(argv[i], "--strict"))
      strict = true;
    else if (c->nrule_dirs < MAX_RULE_DIRS && strcmp(argv[i], "--rules"))
      c->rule_dirs[c->nrule_dirs++] = argv[i];
  if (!c->nrule_dirs) strict = true;
  ddx_catalog_t *cat;
  int rc = load_catalog(c, &cat);
  if (rc) return rc;
  if (!strcmp(sub, "list")) {
    for (size_t i = 0; i < cat->nrules; i++) {
      const ddx_rule_t *r = &cat->rules[i];
      cli_say(stdout, "%-30s %-8s %-10s %3d  %s\n", r->id, ddx_severity_name((int)r->severity),
              ddx_role_name((int)r->role), r->priority, r->title);
    }
  } else if (!strcmp(sub, "--literals")) {
    /* every distinct prefilter literal, one per line (for rg -F -f) */
    for (size_t i = 0; i < cat->nrules; i++)
      for (size_t k = 0; k < cat->rules[i].nsigs; k++)
        for (size_t l = 0; l < cat->rules[i].sigs[k].literals.n; l++) {
          const char *lit = cat->rules[i].sigs[k].literals.v[l];
          bool seen = false;
          for (size_t j = 0; j <= i && !seen; j++)
            for (size_t kk = 0; kk < cat->rules[j].nsigs && !seen; kk++) {
              if (j == i && kk >= k) break;
              for (size_t ll = 0; ll < cat->rules[j].sigs[kk].literals.n && !seen; ll++)
                seen = !strcmp(cat->rules[j].sigs[kk].literals.v[ll], lit);
            }
          for (size_t ll = 0; ll < l && !seen; ll++)
            seen = !strcmp(cat->rules[i].sigs[k].literals.v[ll], lit);
          if (!seen) printf("%s\n", lit);
        }
  } else if (!strcmp(sub, "--patterns")) {
    for (size_t i = 0; i < cat->nrules; i++)
      for (size_t k = 0; k < cat->rules[i].nsigs; k++)
        printf("%s\n", cat->rules[i].sigs[k].regex);
  } else if (!strcmp(sub, "check")) {
    size_t fails = 0, warns = 0, samples = 0, checks = 0;
    /* The findings beyond the samples come from the engine, which the
     * language server shows on a team's rule files with the same words. */
    ddx_checks_t found;
    if (ddx_catalog_check(cat, strict, &found)) {
      ddx_checks_free(&found);
      ddx_catalog_free(cat);
      fprintf(stderr, "ddx: out of memory\n");
      return 2;
    }
    size_t next = 0; /* the next finding to print, in rule order */
    for (size_t i = 0; i <= cat->nrules; i++) {
      const ddx_rule_t *r = i ? &cat->rules[i - 1] : NULL;
      for (; next < found.list.len && DDX_VEC_AT(&found.list, ddx_check_t, next).rule == r;
           next++) {
        const ddx_check_t *k = &DDX_VEC_AT(&found.list, ddx_check_t, next);
        char line[2048];
        ddx_check_format(k, true, line, sizeof line);
        cli_say(stdout, "%s\n", line);
        if (k->level == DDX_CHECK_FAIL)
          fails++;
        else
          warns++;
      }
      if (!r) continue;
      checks += 1 + r->related.n;
      for (size_t k = 0; k < r->npositive; k++) {
        char why[512];
        samples++;
        if (!run_sample(cat, r, &r->positive[k], why, sizeof why)) {
          cli_say(stdout, "FAIL: %s: $.samples.positive[%zu]: rule %s did not match (%s%s)\n",
                  r->file, k, r->id, strncmp(why, "fact", 4) ? "diagnosed as " : "", why);
          fails++;
        }
      }
      for (size_t k = 0; k < r->nnegative; k++) {
        char why[512];
        samples++;
        if (run_sample(cat, r, &r->negative[k], why, sizeof why)) {
          cli_say(stdout, "FAIL: %s: $.samples.negative[%zu]: rule %s matched a near miss\n",
                  r->file, k, r->id);
          fails++;
        }
      }
    }
    ddx_checks_free(&found);
    printf("%zu rules, %zu samples, %zu warnings, %zu failures (JIT %s)\n", cat->nrules, samples,
           warns, fails, cat->jit ? "on" : "off");
    checks += samples;
    printf("%zu passed, %zu failed\n", checks - fails, fails);
    rc = fails ? 1 : 0;
  } else {
    rc = usage("unknown rules subcommand");
  }
  ddx_catalog_free(cat);
  return rc;
}

/* ddx run / ddx watch: --rules options first, then the live front end. */
static int cmd_live(cli_t *c, bool watch, int argc, char **argv) {
  int i = 0;
  while (i + 1 < argc && !strcmp(argv[i], "--rules")) {
    if (c->nrule_dirs < MAX_RULE_DIRS) c->rule_dirs[c->nrule_dirs++] = argv[i + 1];
    i += 2;
  }
  ddx_catalog_t *cat;
  int rc = load_catalog(c, &cat);
  if (rc) return rc;
  rc = watch ? ddx_live_watch(cat, argc - i, argv + i) : ddx_live_run(cat, argc - i, argv + i);
  ddx_catalog_free(cat);
  return rc;
}

/* ddx check-config: DeepSpeed config checks (ddx/dscheck.h) on one file.
 * Exit 0: no error-severity finding, 1: errors found, 2: unreadable. */
static bool cc_count(const char *s, double *out) {
  char *e;
  double v = strtod(s, &e);
  if (e == s || !(v > 0)) return false;
  if (*e && e[1]) return false;
  switch (*e) {
  case 0:
    break;
  case 'k':
  case 'K':
    v *= 1e3;
    break;
  case 'm':
  case 'M':
    v *= 1e6;
    break;
  case 'b':
  case 'B':
  case 'g':
  case 'G':
    v *= 1e9;
    break;
  case 't':
  case 'T':
    v *= 1e12;
    break;
  default:
    return false;
  }
  *out = v;
  return true;
}

/* A positive integer option value (--tp 8). */
static bool cc_int(const char *s, int64_t *out) {
  char *e;
  long long n = strtoll(s, &e, 10);
  if (e == s || *e || n <= 0) return false;
  *out = n;
  return true;
}

/* yes|no|auto -> 1|0|-1. */
static bool cc_yesno(const char *s, int *out) {
  if (!strcmp(s, "yes") || !strcmp(s, "true") || !strcmp(s, "1"))
    *out = 1;
  else if (!strcmp(s, "no") || !strcmp(s, "false") || !strcmp(s, "0"))
    *out = 0;
  else if (!strcmp(s, "auto") || !strcmp(s, "unknown"))
    *out = -1;
  else
    return false;
  return true;
}

/* Reads the model's config.json (ddx_file_read, the config cap) into
 * in->model; 2 with a message when it cannot be read or holds no shape. */
static int cc_model(const char *path, ddx_mem_inputs_t *in, char *how, size_t howcap) {
  char *text;
  size_t len;
  ddx_error_t err = {0};
  ddx_file_opts_t fo = {
      .allow_pipe = true, .max_bytes = DDX_FILE_CAP_CONFIG, .what = "model config"};
  if (ddx_file_read(path, &fo, &text, &len, &err)) {
    cli_say(stderr, "ddx: %s\n", err.msg);
    return 2;
  }
  ddx_mem_model_t m;
  bool ok = ddx_mem_model_from_hf(text, len, &m, how, howcap);
  free(text);
  if (!ok) {
    if (how[0])
      cli_say(stderr, "ddx: %s: %s\n", path, how);
    else
      cli_say(stderr,
              "ddx: %s: no model shape (hidden_size, num_hidden_layers) or num_parameters in it\n",
              path);
    return 2;
  }
  double given = in->model.params;
  in->model = m;
  if (given > 0) in->model.params = given; /* --params wins */
  return 0;
}

static int cmd_check_config(cli_t *c, int argc, char **argv) {
  const char *file = NULL, *format = "text", *schema = NULL, *model = NULL;
  ddx_dscheck_facts_t facts = {0};
  ddx_mem_inputs_t mi = {.flash_attention = -1, .checkpointing = -1};
  for (int i = 0; i < argc; i++) {
    const char *a = argv[i];
    bool has = i + 1 < argc;
    if (!strcmp(a, "--model") && has) {
      model = argv[++i];
    } else if (!strcmp(a, "--seq-len") && has) {
      int64_t n;
      if (!cc_int(argv[++i], &n)) return usage("--seq-len needs a positive integer (4096)");
      mi.seq_len = (double)n;
    } else if (!strcmp(a, "--micro-batch") && has) {
      int64_t n;
      if (!cc_int(argv[++i], &n)) return usage("--micro-batch needs a positive integer");
      mi.micro_batch = (double)n;
    } else if ((!strcmp(a, "--tp") || !strcmp(a, "--pp") || !strcmp(a, "--sp")) && has) {
      int64_t n;
      if (!cc_int(argv[++i], &n)) return usage("--tp/--pp/--sp need a positive integer");
      *(a[2] == 't' ? &mi.tp : a[2] == 'p' ? &mi.pp : &mi.sp) = n;
    } else if (!strcmp(a, "--flash-attention") && has) {
      if (!cc_yesno(argv[++i], &mi.flash_attention))
        return usage("--flash-attention needs yes or no");
    } else if (!strcmp(a, "--checkpointing") && has) {
      if (!strcmp(argv[i + 1], "selective")) {
        mi.checkpointing = 2; /* Megatron's --recompute-granularity selective */
        i++;
      } else if (!cc_yesno(argv[++i], &mi.checkpointing)) {
        return usage("--checkpointing needs yes, no or selective");
      }
    } else if (!strcmp(a, "--target-len") && has) {
      int64_t n;
      if (!cc_int(argv[++i], &n)) return usage("--target-len needs a positive integer (512)");
      mi.target_len = (double)n;
    } else if (!strcmp(a, "--trainable") && has) {
      if (!cc_count(argv[++i], &mi.trainable))
        return usage("--trainable needs a parameter count (4.2M, 20e6)");
    } else if (!strcmp(a, "--optim") && has) {
      mi.optim = argv[++i];
      if (!ddx_mem_optim_known(mi.optim))
        return usage("--optim: not a HF Trainer optimizer ddx models (adamw_torch, "
                     "adamw_torch_fused, adamw_hf, adamw_apex_fused, adamw_bnb_8bit, "
                     "paged_adamw_8bit, adafactor, sgd, lion_32bit, lion_8bit, ...)");
    } else if (!strcmp(a, "--ref-models") && has) {
      int64_t n;
      if (!cc_int(argv[++i], &n) || n > 8)
        return usage("--ref-models needs a count of frozen model copies (1 for DPO)");
      mi.ref_models = (int)n;
    } else if (!strcmp(a, "--cuda-context") && has) {
      char *e;
      double g = strtod(argv[++i], &e);
      if ((*e && strcasecmp(e, "GiB") && strcasecmp(e, "G")) || !(g > 0) || !isfinite(g) || g > 64)
        return usage("--cuda-context needs GiB (0.8)");
      mi.cuda_context_bytes = g * 1024.0 * 1024.0 * 1024.0;
    } else if (!strcmp(a, "--reserve") && has) {
      char *e;
      double r = strtod(argv[++i], &e);
      if (*e || !(r > 0) || r >= 1) return usage("--reserve needs a fraction of the peak (0.05)");
      mi.reserve_fraction = r;
    } else if (!strcmp(a, "--params") && has) {
      if (!cc_count(argv[++i], &facts.params)) return usage("--params needs a count (7e9, 7B)");
      facts.params_from = "--params";
    } else if (!strcmp(a, "--world-size") && has) {
      char *e;
      long long n = strtoll(argv[++i], &e, 10);
      if (*e || n <= 0) return usage("--world-size needs a positive integer");
      facts.dp_world_size = n;
      facts.world_from = "--world-size";
    } else if (!strcmp(a, "--gpu-memory") && has) {
      char *e;
      double g = strtod(argv[++i], &e);
      if ((*e && strcasecmp(e, "GiB") && strcasecmp(e, "G")) || !(g > 0) || !isfinite(g) ||
          g > 16384)
        return usage("--gpu-memory needs a finite size in GiB (80)");
      facts.gpu_total_bytes = g * 1024.0 * 1024.0 * 1024.0;
      facts.gpu_from = "--gpu-memory";
    } else if (!strcmp(a, "--format") && has) {
      format = argv[++i];
    } else if (!strcmp(a, "--schema") && has) {
      schema = argv[++i];
    } else if (a[0] == '-' && a[1]) {
      return usage("check-config: unknown option");
    } else if (!file) {
      file = a;
    } else {
      return usage("check-config takes one FILE");
    }
  }
  if (!file) return usage("check-config needs a ds_config.json");
  if (strcmp(format, "text") && strcmp(format, "json"))
    return usage("--format must be text or json");
  char how[256] = "";
  mi.model.params = facts.params;
  /* the parallel layout: every rank in a tp x pp group */
  int64_t mp = (mi.tp > 0 ? mi.tp : 1) * (mi.pp > 0 ? mi.pp : 1);
  if (facts.dp_world_size > 0 && facts.dp_world_size % (mp * (mi.sp > 0 ? mi.sp : 1)) != 0) {
    cli_say(stderr,
            "ddx: --world-size %lld is not a multiple of --tp x --pp x --sp = %lld: no layout "
            "has that many ranks\n",
            (long long)facts.dp_world_size, (long long)(mp * (mi.sp > 0 ? mi.sp : 1)));
    return 2;
  }
  if (model) {
    int mrc = cc_model(model, &mi, how, sizeof how);
    if (mrc) return mrc;
    if (!(facts.params > 0) && mi.model.params > 0) {
      facts.params = mi.model.params;
      facts.params_from = model;
    }
    const ddx_mem_model_t *mm = &mi.model;
    if (mi.tp > 1 && mm->heads > 0 && fmod(mm->heads, (double)mi.tp) != 0) {
      cli_say(stderr, "ddx: --tp %lld does not divide the model's %g attention heads\n",
              (long long)mi.tp, mm->heads);
      return 2;
    }
    if (mi.tp > 1 && mm->kv_heads > 0 && mm->kv_heads < mi.tp &&
        fmod((double)mi.tp, mm->kv_heads) != 0) {
      cli_say(stderr, "ddx: --tp %lld and the model's %g key/value heads do not divide\n",
              (long long)mi.tp, mm->kv_heads);
      return 2;
    }
    if (mi.pp > 1 && mm->layers > 0 && (double)mi.pp > mm->layers + mm->dec_layers) {
      cli_say(stderr, "ddx: --pp %lld is more pipeline stages than the model's %g layers\n",
              (long long)mi.pp, mm->layers + mm->dec_layers);
      return 2;
    }
    if (mm->warning[0]) cli_say(stderr, "ddx: %s: %s\n", model, mm->warning);
  }
  if (mi.target_len > 0 && !(mi.model.dec_layers > 0)) {
    cli_say(stderr, "ddx: --target-len is the decoder's length of an encoder-decoder model (T5, "
                    "BART); this model has no decoder stack\n");
    return 2;
  }
  if (mi.trainable > 0 && mi.model.params > 0 && mi.trainable > mi.model.params) {
    cli_say(stderr, "ddx: --trainable %.4g is more than the model's %.4g parameters\n",
            mi.trainable, mi.model.params);
    return 2;
  }
  mi.world_size = facts.dp_world_size;
  mi.gpu_bytes = facts.gpu_total_bytes;
  mi.model_from = model ? model : facts.params_from;
  mi.world_from = facts.world_from;
  mi.gpu_from = facts.gpu_from;
  /* dscheck's batch check and memory warning want the data-parallel size
   * and the model-parallel split of P */
  if (facts.dp_world_size > 0 && mp > 1) facts.dp_world_size = facts.dp_world_size / mp;
  facts.model_parallel = mp;
  facts.trainable = mi.trainable;
  char spath[PATH_MAX + 32];
  if (!schema) {
    snprintf(spath, sizeof spath, "%s/ds_config.schema.json",
             ddx_catalog_default_dir(c->default_dir, sizeof c->default_dir, SOURCE_RULES));
    schema = spath;
  }
  ddx_error_t err = {0};
  ddx_dscheck_t *chk = NULL;
  if (ddx_dscheck_load(&chk, schema, &err)) {
    cli_say(stderr, "ddx: %s\n", err.msg);
    return 2;
  }
  char *text;
  size_t len;
  ddx_dscheck_result_t res;
  ddx_file_opts_t fo = {.allow_pipe = true, .max_bytes = DDX_FILE_CAP_CONFIG, .what = "ds_config"};
  int rc = ddx_file_read(file, &fo, &text, &len, &err);
  bool read = !rc;
  if (read) rc = ddx_dscheck_run(chk, text, len, &facts, &res, &err);
  if (rc) {
    if (read) /* the read error names the file itself */
      cli_say(stderr, "ddx: %s: %s\n", file, err.msg);
    else
      cli_say(stderr, "ddx: %s\n", err.msg);
    if (read) ddx_dscheck_result_free(&res);
    free(text);
    ddx_dscheck_free(chk);
    return 2;
  }
  size_t errors = 0, warnings = 0;
  for (size_t i = 0; i < res.n; i++)
    res.findings[i].severity == DDX_DSCHECK_ERROR ? errors++ : warnings++;
  /* the memory model (ddx/memory.h) once anything tells the model's size */
  ddx_mem_estimate_t me;
  bool have_mem = false;
  if (mi.model.params > 0 || mi.model.hidden > 0) {
    json_t *cj = ddx_mem_config_load(text, len, &err);
    have_mem = cj && !ddx_mem_estimate(cj, &mi, &me, &err);
    json_decref(cj);
  }
  static const char *const sev[] = {"", "error", "warning", "info"};
  if (!strcmp(format, "json")) {
    json_t *arr = json_array();
    for (size_t i = 0; i < res.n; i++) {
      const ddx_dscheck_finding_t *x = &res.findings[i];
      size_t l0, c0, l1, c1;
      ddx_text_line_col(text, len, x->start, &l0, &c0);
      ddx_text_line_col(text, len, x->end, &l1, &c1);
      json_t *o = json_pack("{s:I, s:I, s:I, s:I, s:I, s:I, s:s, s:s, s:s, s:s}", "line",
                            (json_int_t)l0, "column", (json_int_t)c0, "end_line", (json_int_t)l1,
                            "end_column", (json_int_t)c1, "start", (json_int_t)x->start, "end",
                            (json_int_t)x->end, "severity", sev[x->severity], "code", x->code,
                            "path", x->path, "message", x->message);
      json_t *p = x->patch_json ? json_loads(x->patch_json, 0, NULL) : NULL;
      if (o && p) json_object_set_new(o, "patch", p);
      json_array_append_new(arr, o);
    }
    json_t *out =
        json_pack("{s:s, s:b, s:I, s:I, s:o}", "file", file, "deepspeed", res.is_deepspeed,
                  "errors", (json_int_t)errors, "warnings", (json_int_t)warnings, "findings", arr);
    const ddx_dscheck_memory_t *m = &res.memory;
    if (m->valid) {
      json_t *terms = json_array();
      for (size_t i = 0; i < m->nterms; i++)
        json_array_append_new(terms, json_pack("{s:s, s:s, s:f, s:b}", "what", m->terms[i].what,
                                               "formula", m->terms[i].formula, "bytes",
                                               m->terms[i].bytes, "cpu", m->terms[i].cpu));
      json_object_set_new(
          out, "memory",
          json_pack("{s:i, s:f, s:o, s:f, s:f, s:o}", "stage", m->stage, "params", m->params,
                    "dp_world_size", m->n_known ? json_integer((json_int_t)m->n) : json_null(),
                    "gpu_bytes", m->gpu_bytes, "cpu_bytes", m->cpu_bytes, "terms", terms));
    }
    if (have_mem) {
      json_t *mj = ddx_mem_json(&me);
      if (mj && how[0]) json_object_set_new(mj, "model_from", json_string(how));
      json_object_set_new(out, "memory_model", mj);
    }
    emit(json_dumps(out, JSON_INDENT(2)));
    json_decref(out);
  } else {
    for (size_t i = 0; i < res.n; i++) {
      const ddx_dscheck_finding_t *x = &res.findings[i];
      size_t l, col;
      ddx_text_line_col(text, len, x->start, &l, &col);
      cli_say(stdout, "%s:%zu:%zu: %s: %s [%s]\n", file, l, col, sev[x->severity], x->message,
              x->code);
    }
    if (have_mem) {
      char *mt = ddx_mem_text(&me);
      if (mt) printf("\n%s", mt);
      if (how[0]) cli_say(stdout, "Model: %s (%s)\n", model, how);
      free(mt);
    } else if (res.memory.valid) {
      char *md = ddx_dscheck_memory_markdown(&res.memory, &facts);
      if (md) printf("\n%s", md);
      free(md);
    }
    printf("%s%zu error%s, %zu warning%s\n", res.memory.valid || have_mem ? "\n" : "", errors,
           errors == 1 ? "" : "s", warnings, warnings == 1 ? "" : "s");
  }
  ddx_dscheck_result_free(&res);
  free(text);
  ddx_dscheck_free(chk);
  return errors ? 1 : 0;
}

/* The command's exit code, or 2 with a message when its output could not
 * be written (a full disk, a closed pipe): an answer is never lost
 * silently. */
static int finish_output(int rc) {
  errno = 0;
  if (fflush(stdout) != 0 || ferror(stdout)) {
    int e = errno;
    fprintf(stderr, "ddx: cannot write the output: %s\n", e ? strerror(e) : "write error");
    return 2;
  }
  return rc;
}

/* ---- the commands: one table drives the usage text and the dispatch ---- */

static int cmd_diagnose_logs(cli_t *c, int argc, char **argv) {
  return cmd_diagnose(c, argc, argv, false);
}

static int cmd_merge(cli_t *c, int argc, char **argv) {
  return cmd_diagnose(c, argc, argv, true);
}

static int cmd_run(cli_t *c, int argc, char **argv) {
  return cmd_live(c, false, argc, argv);
}

static int cmd_watch(cli_t *c, int argc, char **argv) {
  return cmd_live(c, true, argc, argv);
}

static int cmd_lsp(cli_t *c, int argc, char **argv) {
  (void)c;
  return ddx_lsp_main(argc, argv);
}

static int cmd_version(cli_t *c, int argc, char **argv) {
  (void)c, (void)argc, (void)argv;
  printf("ddx %s\n", DDX_VERSION);
  return 0;
}

static int cmd_help(cli_t *c, int argc, char **argv) {
  (void)c, (void)argc, (void)argv;
  put_usage(stdout);
  return 0;
}

/* In the order of the usage text; a name may come more than once (the rules
 * command's lines sit around catalog's), the first entry runs it. An entry
 * without usage lines is an alias the text does not list. */
static const struct cli_command {
  const char *name;
  int (*run)(cli_t *c, int argc, char **argv);
  const char *usage; /* its lines of the usage text */
} commands[] = {
    {"diagnose", cmd_diagnose_logs,
     "  diagnose [--format text|json|sarif] [--evidence] [--rules DIR]... [--color|--no-color] "
     "FILE|DIR...|-\n"
     "      diagnose training logs (- reads stdin); exit 0: no failure, 1: failure found, 2: "
     "error\n"
     "      --events-out FILE: also write the compact per-node events for ddx merge\n"
     "      --threads N: scan a big file (64 MiB+, $DDX_SPLIT_MIN bytes) in N parts at once\n"
     "                   (default: the CPUs available, at most 16)\n"},
    {"run", cmd_run,
     "  run [--stall SECONDS] [--json-out FILE] [--metrics FILE] [--on-failure CMD] -- COMMAND...\n"
     "      run a training command, pass its output through, diagnose it when it fails\n"},
    {"watch", cmd_watch,
     "  watch [--format text|json] [--stall SECONDS] [--exit-on-failure] [--metrics FILE]\n"
     "        [--on-failure CMD] [--from-end] FILE|DIR...\n"
     "      follow growing logs and report each failure once as it appears\n"},
    {"merge", cmd_merge,
     "  merge [--format text|json|sarif] EVENTS...\n"
     "      diagnose a whole job from the event files each node's ddx wrote\n"},
    {"explain", cmd_explain, "  explain [--json] ID       print a catalog entry\n"},
    {"rules", cmd_rules, "  rules list                list the catalog\n"},
    {"catalog", cmd_catalog,
     "  catalog [--markdown [-o FILE] | --html DIR] [--rules DIR]...\n"
     "      the failure encyclopedia: the list, one Markdown page (docs/catalog.md) or a\n"
     "      static site (hub by phase and family, look-alikes side by side, a page per class)\n"},
    {"rules", cmd_rules,
     "  rules check [--strict] [DIR...]\n"
     "                            validate rules, compile regexes, run every sample\n"
     "  rules --patterns          print every signature regex, one per line (for rg/grep -f)\n"
     "  rules --literals          print every distinct prefilter literal (for rg -F -f)\n"},
    {"lsp", cmd_lsp,
     "  lsp [--stdio]             run the language server on stdin/stdout (LSP 3.17)\n"},
    {"check-config", cmd_check_config,
     "  check-config FILE [--params N] [--world-size N] [--gpu-memory GiB] [--format text|json]\n"
     "               [--model config.json] [--seq-len S] [--micro-batch B] [--tp N] [--pp N]\n"
     "               [--sp N] [--flash-attention yes|no] [--checkpointing yes|no|selective]\n"
     "               [--cuda-context GiB] [--reserve FRACTION] [--optim NAME]\n"
     "               [--trainable N] [--target-len S] [--ref-models N]\n"
     "      check a DeepSpeed ds_config.json; exit 0: clean, 1: errors found, 2: unreadable;\n"
     "      with --model (a Hugging Face config.json) or --params: the peak memory per GPU as\n"
     "      terms (model states, activations, logits, buffers, optimizer step, runtime), the\n"
     "      allocated / reserved / nvidia-smi peaks and \"OOM predicted\",\n"
     "      \"tight\" or \"fits, N GiB headroom\" against --gpu-memory (docs/memory.md)\n"},
    {"version", cmd_version, "  version                   print the version\n"},
    {"--version", cmd_version, NULL},
    {"help", cmd_help, NULL},
    {"--help", cmd_help, NULL},
    {"-h", cmd_help, NULL},
};

static void put_usage(FILE *f) {
  fputs("usage: ddx <command> [options]\n"
        "\n"
        "commands:\n",
        f);
  for (size_t i = 0; i < sizeof commands / sizeof *commands; i++)
    if (commands[i].usage) fputs(commands[i].usage, f);
  fputs("\n"
        "The catalog is read from --rules DIR (repeatable), else $DDX_RULES, else the\n"
        "rules/ folder next to the binary's install or build tree.\n",
        f);
}

static int run_command(int argc, char **argv) {
  cli_t c = {0};
  if (argc < 2) return usage(NULL);
  const char *cmd = argv[1];
  for (size_t i = 0; i < sizeof commands / sizeof *commands; i++)
    if (!strcmp(cmd, commands[i].name)) return commands[i].run(&c, argc - 2, argv + 2);
  fprintf(stderr, "ddx: unknown command \"%s\"\n", cmd);
  return usage(NULL);
}

int main(int argc, char **argv) {
  int rc = run_command(argc, argv);
  return finish_output(rc);
}
