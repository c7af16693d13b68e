/* hub.c - the failure encyclopedia (ddx/hub.h): the catalog as a list, as
 * one Markdown document and as a static HTML site. Everything here reads
 * the loaded catalog; nothing here diagnoses. */
#define _GNU_SOURCE
#include "ddx/hub.h"

#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ddx/file.h"
#include "ddx/report.h"

/* ------------------------------------------------------------ the axes */

typedef struct {
  const char *id, *title;
} axis_t;

static const axis_t PHASES[] = {{"launch", "Launch"},      {"init", "Init: build, load, engine"},
                                {"step", "Training step"}, {"communication", "Communication"},
                                {"numerics", "Numerics"},  {"checkpoint", "Checkpoint"},
                                {"serving", "Serving"}};
#define NPHASES (sizeof PHASES / sizeof PHASES[0])

/* DDX_FAMILIES in order, with the column for entries that name none. */
static const axis_t FAMILIES[] = {{"memory", "Memory"},
                                  {"communication", "Communication"},
                                  {"numerics", "Numerics"},
                                  {"configuration", "Configuration"},
                                  {"environment", "Build / environment"},
                                  {"checkpoint", "Checkpoint"},
                                  {"parallelism", "Parallelism"},
                                  {"generic", "Generic"},
                                  {NULL, "Unclassified"}};
#define NFAMILIES (sizeof FAMILIES / sizeof FAMILIES[0])

static const axis_t STACKS[] = {{"pytorch", "PyTorch"},
                                {"hf", "HF Trainer / Accelerate"},
                                {"deepspeed", "DeepSpeed"},
                                {"megatron", "Megatron-LM"},
                                {"vllm", "vLLM"}};

static const char *axis_title(const axis_t *a, size_t n, const char *id) {
  for (size_t i = 0; i < n; i++)
    if (a[i].id && id && !strcmp(a[i].id, id)) return a[i].title;
  return id ? id : a[n - 1].title;
}

static bool family_is(const ddx_rule_t *r, const axis_t *f) {
  if (!f->id) return !r->family;
  return r->family && !strcmp(r->family, f->id);
}

/* Rules sorted by id: the output does not depend on the folder walk. */
static int by_id(const void *a, const void *b) {
  const ddx_rule_t *x = *(const ddx_rule_t *const *)a, *y = *(const ddx_rule_t *const *)b;
  return strcmp(x->id, y->id);
}

static const ddx_rule_t **sorted_rules(const ddx_catalog_t *cat) {
  const ddx_rule_t **v = malloc((cat->nrules + 1) * sizeof *v);
  if (!v) return NULL;
  for (size_t i = 0; i < cat->nrules; i++)
    v[i] = &cat->rules[i];
  qsort(v, cat->nrules, sizeof *v, by_id);
  return v;
}

/* The look-alike groups in alphabetical order, each once. */
static size_t groups_of(const ddx_rule_t **v, size_t n, const char **out) {
  size_t ng = 0;
  for (size_t i = 0; i < n; i++) {
    const char *g = v[i]->compare_group;
    if (!g) continue;
    size_t k = 0;
    while (k < ng && strcmp(out[k], g) < 0)
      k++;
    if (k < ng && !strcmp(out[k], g)) continue;
    memmove(out + k + 1, out + k, (ng - k) * sizeof *out);
    out[k] = g;
    ng++;
  }
  return ng;
}

static const char *first_line_end(const char *s) {
  const char *e = strchr(s, '\n');
  return e ? e : s + strlen(s);
}

/* ---------------------------------------------------------------- list */

char *ddx_hub_list(const ddx_catalog_t *cat) {
  const ddx_rule_t **v = sorted_rules(cat);
  if (!v) return NULL;
  ddx_sb_t b;
  ddx_sb_init(&b);
  for (size_t i = 0; i < cat->nrules; i++) {
    ddx_sb_printf(&b, "%-30s %-13s %-13s ", v[i]->id, v[i]->phase,
                  v[i]->family ? v[i]->family : "-");
    ddx_sb_put_term(&b, v[i]->title, strlen(v[i]->title));
    ddx_sb_puts(&b, "\n");
  }
  free(v);
  return ddx_sb_take(&b);
}

/* ------------------------------------------------------------- patches */

/* A config patch as the lines of a diff against ds_config.json: the
 * path's objects as context, "+" what it sets, "-" what it removes. */
static void patch_diff(ddx_sb_t *b, json_t *patch) {
  json_t *pre = json_object_get(patch, "preconditions");
  for (size_t i = 0; i < json_array_size(pre); i++) {
    json_t *c = json_array_get(pre, i);
    char *v = json_object_get(c, "value")
                  ? json_dumps(json_object_get(c, "value"), JSON_COMPACT | JSON_ENCODE_ANY)
                  : NULL;
    ddx_sb_printf(b, "# when %s %s%s%s\n", json_string_value(json_object_get(c, "path")),
                  json_string_value(json_object_get(c, "op")), v ? " " : "", v ? v : "");
    free(v);
  }
  /* Ops under the same objects share their context lines: the open
   * objects are the segments of the previous op's parent path. */
  json_t *ops = json_object_get(patch, "ops");
  const char *open_path = "";
  size_t open_len = 0; /* bytes of open_path that are open objects */
  int depth = 0;
  for (size_t i = 0; i < json_array_size(ops); i++) {
    json_t *op = json_array_get(ops, i);
    const char *kind = json_string_value(json_object_get(op, "op"));
    const char *path = json_string_value(json_object_get(op, "path"));
    if (!kind || !path) continue;
    if (!strcmp(kind, "rename")) {
      /* a new name in the same object (dsconfig's rename): both full
       * paths, no context */
      const char *to = json_string_value(json_object_get(op, "to"));
      const char *dot = strrchr(path, '.'), *tdot = to ? strrchr(to, '.') : NULL;
      while (depth > 0)
        ddx_sb_printf(b, " %*s}\n", 2 * --depth, "");
      open_path = "";
      open_len = 0;
      ddx_sb_printf(b, "-\"%s\": <value>\n+\"%.*s%s\": <value>\n", path,
                    dot ? (int)(dot - path + 1) : 0, path,
                    tdot ? tdot + 1
                    : to ? to
                         : "?");
      continue;
    }
    const char *last = strrchr(path, '.');
    size_t parent = last ? (size_t)(last - path) : 0;
    /* the longest common prefix of whole segments */
    size_t common = 0;
    for (size_t k = 0; k <= parent && k <= open_len; k++) {
      bool end_a = k == parent || path[k] == '.', end_b = k == open_len || open_path[k] == '.';
      if (end_a && end_b) common = k;
      if (k == parent || k == open_len || path[k] != open_path[k]) break;
    }
    int keep = 0;
    for (size_t k = 0; k < common; k++)
      keep += open_path[k] == '.';
    if (common) keep++;
    while (depth > keep)
      ddx_sb_printf(b, " %*s}\n", 2 * --depth, "");
    const char *seg = path + (common ? common + 1 : 0);
    const char *dot;
    while (seg < path + parent && (dot = strchr(seg, '.')) && dot <= path + parent) {
      ddx_sb_printf(b, " %*s\"%.*s\": {\n", 2 * depth, "", (int)(dot - seg), seg);
      depth++;
      seg = dot + 1;
    }
    if (seg < path + parent) {
      ddx_sb_printf(b, " %*s\"%.*s\": {\n", 2 * depth, "", (int)(path + parent - seg), seg);
      depth++;
    }
    open_path = path;
    open_len = parent;
    seg = last ? last + 1 : path;
    int ind = 2 * depth;
    if (!strcmp(kind, "set")) {
      char *v = json_dumps(json_object_get(op, "value"), JSON_COMPACT | JSON_ENCODE_ANY);
      ddx_sb_printf(b, "+%*s\"%s\": %s\n", ind, "", seg, v ? v : "null");
      free(v);
    } else if (!strcmp(kind, "remove")) {
      ddx_sb_printf(b, "-%*s\"%s\": ...\n", ind, "", seg);
    } else if (!strcmp(kind, "multiply")) {
      double f = json_number_value(json_object_get(op, "factor"));
      json_t *mn = json_object_get(op, "min");
      ddx_sb_printf(b, "-%*s\"%s\": N\n+%*s\"%s\": N x %g", ind, "", seg, ind, "", seg, f);
      if (json_is_number(mn)) ddx_sb_printf(b, " (at least %g)", json_number_value(mn));
      ddx_sb_puts(b, "\n");
    }
  }
  while (depth > 0)
    ddx_sb_printf(b, " %*s}\n", 2 * --depth, "");
}

/* ------------------------------------------------------------ markdown */

static void md(ddx_sb_t *b, const char *s) {
  if (s) ddx_sb_put_md(b, s, strlen(s), true);
}

/* A cell of a Markdown table: one line, pipes escaped by ddx_sb_put_md. */
static void md_cell(ddx_sb_t *b, const char *s) {
  if (!s) return;
  char *one = strdup(s);
  if (!one) return;
  for (char *p = one; *p; p++)
    if (*p == '\n' || *p == '\r') *p = ' ';
  ddx_sb_put_md(b, one, strlen(one), true);
  free(one);
}

/* A fenced block with a fence longer than any backtick run inside. */
static void md_fence(ddx_sb_t *b, const char *lang, const char *code) {
  size_t run = 0, best = 0;
  for (const char *p = code; *p; p++) {
    run = *p == '`' ? run + 1 : 0;
    if (run > best) best = run;
  }
  size_t n = best < 3 ? 3 : best + 1;
  for (size_t i = 0; i < n; i++)
    ddx_sb_puts(b, "`");
  ddx_sb_printf(b, "%s\n", lang ? lang : "");
  /* line by line: ddx_sb_put_term shows a newline escaped */
  for (const char *p = code; *p;) {
    const char *e = first_line_end(p);
    ddx_sb_put_term(b, p, (size_t)(e - p));
    if (*e) ddx_sb_puts(b, "\n");
    p = *e ? e + 1 : e;
  }
  if (!*code || code[strlen(code) - 1] != '\n') ddx_sb_puts(b, "\n");
  for (size_t i = 0; i < n; i++)
    ddx_sb_puts(b, "`");
  ddx_sb_puts(b, "\n\n");
}

/* GitHub's heading anchor of "`id`": the id without its dots. */
static void md_anchor(ddx_sb_t *b, const char *id) {
  for (const char *p = id; *p; p++)
    if (*p != '.') ddx_sb_putn(b, p, 1);
}

static void md_link(ddx_sb_t *b, const char *id) {
  ddx_sb_printf(b, "[`%s`](#", id);
  md_anchor(b, id);
  ddx_sb_puts(b, ")");
}

static void md_list(ddx_sb_t *b, const char *title, const ddx_strs_t *l, bool numbered) {
  if (!l->n) return;
  ddx_sb_printf(b, "**%s**\n\n", title);
  for (size_t i = 0; i < l->n; i++) {
    if (numbered)
      ddx_sb_printf(b, "%zu. ", i + 1);
    else
      ddx_sb_puts(b, "- ");
    md(b, l->v[i]);
    ddx_sb_puts(b, "\n");
  }
  ddx_sb_puts(b, "\n");
}

static void md_para(ddx_sb_t *b, const char *title, const char *text) {
  if (!text) return;
  ddx_sb_printf(b, "**%s.** ", title);
  md(b, text);
  ddx_sb_puts(b, "\n\n");
}

static void md_matrix(ddx_sb_t *b, const ddx_rule_t **v, size_t n) {
  bool unclassified = false;
  for (size_t i = 0; i < n; i++)
    unclassified |= !v[i]->family;
  size_t nf = NFAMILIES - (unclassified ? 0 : 1);
  ddx_sb_puts(b, "| Phase |");
  for (size_t f = 0; f < nf; f++)
    ddx_sb_printf(b, " %s |", FAMILIES[f].title);
  ddx_sb_puts(b, "\n|---|");
  for (size_t f = 0; f < nf; f++)
    ddx_sb_puts(b, "---|");
  ddx_sb_puts(b, "\n");
  for (size_t p = 0; p < NPHASES; p++) {
    ddx_sb_printf(b, "| **%s** |", PHASES[p].title);
    for (size_t f = 0; f < nf; f++) {
      ddx_sb_puts(b, " ");
      bool first = true;
      for (size_t i = 0; i < n; i++) {
        if (strcmp(v[i]->phase, PHASES[p].id) || !family_is(v[i], &FAMILIES[f])) continue;
        if (!first) ddx_sb_puts(b, "<br>");
        md_link(b, v[i]->id);
        first = false;
      }
      ddx_sb_puts(b, " |");
    }
    ddx_sb_puts(b, "\n");
  }
  ddx_sb_puts(b, "\n");
}

static void md_compare(ddx_sb_t *b, const ddx_rule_t **v, size_t n, const char *group) {
  ddx_sb_puts(b, "| Class | Phase | Where | Fingerprint | What separates it | First fix |\n");
  ddx_sb_puts(b, "|---|---|---|---|---|---|\n");
  for (size_t i = 0; i < n; i++) {
    const ddx_rule_t *r = v[i];
    if (!r->compare_group || strcmp(r->compare_group, group)) continue;
    ddx_sb_puts(b, "| ");
    md_link(b, r->id);
    ddx_sb_printf(b, " | %s | ", r->phase);
    md_cell(b, r->compare_where);
    ddx_sb_puts(b, " | ");
    md_cell(b, r->fingerprint);
    ddx_sb_puts(b, " | ");
    md_cell(b, r->compare_separates);
    ddx_sb_puts(b, " | ");
    md_cell(b, r->fix.n ? r->fix.v[0] : NULL);
    ddx_sb_puts(b, " |\n");
  }
  ddx_sb_puts(b, "\n");
}

static void md_entry(ddx_sb_t *b, const ddx_rule_t *r) {
  ddx_sb_printf(b, "### `%s`\n\n**", r->id);
  md(b, r->title);
  ddx_sb_printf(b, "**  \nphase %s · family %s · %s · %s · priority %d", r->phase,
                r->family ? r->family : "-", ddx_severity_name((int)r->severity),
                ddx_role_name((int)r->role), r->priority);
  if (r->framework) ddx_sb_printf(b, " · %s", r->framework);
  ddx_sb_puts(b, "\n\n");
  md(b, r->summary);
  ddx_sb_puts(b, "\n\n");
  md_para(b, "Mechanism", r->mechanism);
  if (r->nsymptoms) {
    ddx_sb_puts(b, "| Symptom | Why |\n|---|---|\n");
    for (size_t i = 0; i < r->nsymptoms; i++) {
      ddx_sb_puts(b, "| ");
      md_cell(b, r->symptoms[i].text);
      ddx_sb_puts(b, " | ");
      md_cell(b, r->symptoms[i].why);
      ddx_sb_puts(b, " |\n");
    }
    ddx_sb_puts(b, "\n");
  }
  md_para(b, "Affects", r->affects);
  md_list(b, "Checklist", &r->checklist, false);
  md_list(b, "Fix", &r->fix, true);
  if (r->config_patches_json) {
    json_t *p = json_loads(r->config_patches_json, 0, NULL);
    ddx_sb_puts(b, "**ds_config.json quick fixes**\n\n");
    for (size_t i = 0; i < json_array_size(p); i++) {
      ddx_sb_puts(b, "- ");
      md(b, json_string_value(json_object_get(json_array_get(p, i), "title")));
      ddx_sb_puts(b, "\n\n");
      ddx_sb_t d;
      ddx_sb_init(&d);
      patch_diff(&d, json_array_get(p, i));
      char *ds = ddx_sb_take(&d);
      if (ds) md_fence(b, "diff", ds);
      free(ds);
    }
    json_decref(p);
  }
  if (r->nexamples) {
    ddx_sb_puts(b, "**Code per stack**\n\n");
    for (size_t i = 0; i < r->nexamples; i++) {
      const ddx_example_t *x = &r->examples[i];
      ddx_sb_printf(b, "*%s*", axis_title(STACKS, 5, x->stack));
      if (x->title) {
        ddx_sb_puts(b, ": ");
        md(b, x->title);
      }
      ddx_sb_puts(b, "\n\n");
      md_fence(b, x->lang, x->code);
      ddx_sb_puts(b, "Why it works: ");
      md(b, x->why);
      ddx_sb_puts(b, "\n\n");
    }
  }
  md_para(b, "Verify", r->verify);
  md_para(b, "Cheapest confirmation", r->confirm);
  md_para(b, "Prevention", r->prevention);
  md_para(b, "Fingerprint to monitor", r->fingerprint);
  md_para(b, "From 1 to 1000+ GPUs", r->scale);
  if (r->inference_affected) {
    ddx_sb_printf(b, "**Inference.** %s: ", r->inference_affected);
    md(b, r->inference_note);
    ddx_sb_puts(b, "\n\n");
  }
  if (r->compare_group) {
    ddx_sb_puts(b, "**Look-alikes.** ");
    md(b, r->compare_group);
    ddx_sb_puts(b, ": ");
    md(b, r->compare_separates);
    ddx_sb_puts(b, "\n\n");
  }
  const struct {
    const char *title;
    const ddx_strs_t *ids;
  } links[] = {{"Related", &r->related}, {"Explains (collateral of this cause)", &r->explains}};
  for (size_t l = 0; l < 2; l++) {
    if (!links[l].ids->n) continue;
    ddx_sb_printf(b, "**%s:** ", links[l].title);
    for (size_t i = 0; i < links[l].ids->n; i++) {
      if (i) ddx_sb_puts(b, ", ");
      md_link(b, links[l].ids->v[i]);
    }
    ddx_sb_puts(b, "\n\n");
  }
  md_list(b, "What to paste next when it is unclear", &r->missing, false);
  if (r->npositive) {
    /* one real sample, its last lines (the site shows them all) */
    ddx_sb_puts(b, "**Real log lines**\n\n");
    for (size_t i = 0; i < r->npositive && i < 1; i++) {
      const ddx_sample_t *s = &r->positive[i];
      const char *tail = s->text + strlen(s->text);
      for (int lines = 0; tail > s->text && lines <= 12; tail--)
        if (tail[-1] == '\n' && tail[0]) lines++;
      if (tail > s->text) tail = strchr(tail, '\n') + 1;
      md_fence(b, "text", tail);
      if (s->source) {
        ddx_sb_puts(b, "Source: ");
        md(b, s->source);
        ddx_sb_puts(b, "\n\n");
      }
    }
  }
  if (r->references.n) {
    ddx_sb_puts(b, "**References**\n\n");
    for (size_t i = 0; i < r->references.n; i++) {
      ddx_sb_puts(b, "- ");
      md(b, r->references.v[i]);
      ddx_sb_puts(b, "\n");
    }
    ddx_sb_puts(b, "\n");
  }
}

char *ddx_hub_markdown(const ddx_catalog_t *cat) {
  const ddx_rule_t **v = sorted_rules(cat);
  const char **groups = malloc((cat->nrules + 1) * sizeof *groups);
  if (!v || !groups) {
    free(v);
    free(groups);
    return NULL;
  }
  size_t n = cat->nrules, ng = groups_of(v, n, groups);
  ddx_sb_t b;
  ddx_sb_init(&b);
  ddx_sb_printf(&b,
                "# The ddx failure catalog\n\n"
                "Generated by `ddx catalog --markdown` from `rules/` (%zu classes); do not edit "
                "by hand: `make catalog` rewrites it and `make test` fails when it is stale. "
                "The same catalog as a browsable site: `ddx catalog --html DIR`.\n\n",
                n);
  ddx_sb_puts(&b, "## By lifecycle phase and family\n\n");
  md_matrix(&b, v, n);
  ddx_sb_puts(&b, "## Look-alikes side by side\n\n");
  for (size_t g = 0; g < ng; g++) {
    ddx_sb_puts(&b, "### ");
    md(&b, groups[g]);
    ddx_sb_puts(&b, "\n\n");
    md_compare(&b, v, n, groups[g]);
  }
  ddx_sb_puts(&b, "## Entries\n\n");
  for (size_t i = 0; i < n; i++)
    md_entry(&b, v[i]);
  free(groups);
  free(v);
  return ddx_sb_take(&b);
}

/* ---------------------------------------------------------------- HTML */

static void h(ddx_sb_t *b, const char *s) {
  if (!s) return;
  for (const char *p = s; *p; p++) {
    switch (*p) {
    case '&':
      ddx_sb_puts(b, "&amp;");
      break;
    case '<':
      ddx_sb_puts(b, "&lt;");
      break;
    case '>':
      ddx_sb_puts(b, "&gt;");
      break;
    case '"':
      ddx_sb_puts(b, "&quot;");
      break;
    case '\'':
      ddx_sb_puts(b, "&#39;");
      break;
    default:
      if ((unsigned char)*p < 0x20 && *p != '\n' && *p != '\t')
        ddx_sb_printf(b, "\\x%02x", (unsigned char)*p);
      else
        ddx_sb_putn(b, p, 1);
    }
  }
}

/* Prose of the catalog: `code` spans become <code>, the rest is escaped. */
static void h_prose(ddx_sb_t *b, const char *s) {
  if (!s) return;
  const char *p = s;
  while (*p) {
    const char *tick = strchr(p, '`');
    const char *end = tick ? strchr(tick + 1, '`') : NULL;
    if (!tick || !end) {
      h(b, p);
      return;
    }
    char *pre = strndup(p, (size_t)(tick - p)), *code = strndup(tick + 1, (size_t)(end - tick - 1));
    h(b, pre);
    ddx_sb_puts(b, "<code>");
    h(b, code);
    ddx_sb_puts(b, "</code>");
    free(pre);
    free(code);
    p = end + 1;
  }
}

/* A link to a reference: only http(s) URLs become links. */
static void h_ref(ddx_sb_t *b, const char *s) {
  if (!strncmp(s, "https://", 8) || !strncmp(s, "http://", 7)) {
    ddx_sb_puts(b, "<a class=\"ext\" rel=\"noreferrer\" href=\"");
    h(b, s);
    ddx_sb_puts(b, "\">");
    h(b, s);
    ddx_sb_puts(b, "</a>");
  } else {
    h_prose(b, s);
  }
}

static const char CSS[] =
    ":root{--fg:#1f2328;--muted:#59636e;--bg:#fff;--line:#d1d9e0;--accent:#0969da;--tint:#f6f8fa;"
    "--add:#dafbe1;--del:#ffebe9}"
    "@media(prefers-color-scheme:dark){:root{--fg:#e6edf3;--muted:#9198a1;--bg:#0d1117;--line:#"
    "3d444d;"
    "--accent:#4493f8;--tint:#151b23;--add:#12261e;--del:#25171c}}"
    "*{box-sizing:border-box}body{margin:0;font:15px/1.5 system-ui,-apple-system,'Segoe "
    "UI',sans-serif;"
    "color:var(--fg);background:var(--bg)}main{max-width:1320px;margin:0 auto;padding:24px}"
    "a{color:var(--accent);text-decoration:none}a:hover{text-decoration:underline}"
    "h1{font-size:26px;margin:0 0 4px}h2{font-size:19px;margin:28px 0 10px;border-bottom:1px solid "
    "var(--line);padding-bottom:4px}h3{font-size:16px;margin:18px 0 6px}"
    "code,pre{font:13px/1.45 ui-monospace,'SFMono-Regular',Menlo,Consolas,monospace}"
    "pre{background:var(--tint);border:1px solid var(--line);border-radius:6px;padding:10px;"
    "overflow:auto;white-space:pre-wrap;word-break:break-word}"
    "table{border-collapse:collapse;width:100%;margin:8px 0 16px;font-size:14px}"
    "th,td{border:1px solid var(--line);padding:6px 8px;vertical-align:top;text-align:left}"
    "th{background:var(--tint)}#matrix{font-size:13px;table-layout:fixed}#matrix "
    "th:first-child{width:9em}"
    "td.cell a{display:block;overflow-wrap:anywhere}"
    ".muted{color:var(--muted)}.badge{display:inline-block;border:1px solid var(--line);"
    "border-radius:10px;padding:0 8px;margin:0 4px 4px 0;font-size:12px;color:var(--muted)}"
    ".sev-error{border-color:#cf222e;color:#cf222e}.sev-warning{border-color:#9a6700;color:#9a6700}"
    "tr.self td{background:var(--tint);font-weight:600}"
    ".add{background:var(--add);display:block}.del{background:var(--del);display:block}"
    "#search{width:100%;font-size:16px;padding:8px 10px;border:1px solid var(--line);"
    "border-radius:6px;background:var(--bg);color:var(--fg);margin:8px 0}"
    "ul.entries{columns:2;padding-left:18px}ul.entries li{break-inside:avoid}"
    ".hidden{display:none!important}nav.top{margin-bottom:12px}";

/* The search: filters the list, the matrix and the look-alike rows by
 * id, title, fingerprint and tags. Without scripts every entry stays
 * listed and the box stays hidden. */
static const char SEARCH_JS[] =
    "(function(){var q=document.getElementById('search');q.hidden=false;"
    "var items=document.querySelectorAll('[data-search]');"
    "q.addEventListener('input',function(){var t=q.value.toLowerCase().trim().split(/\\s+/);"
    "var shown=0;items.forEach(function(e){var s=e.getAttribute('data-search');"
    "var ok=t.every(function(w){return s.indexOf(w)>=0;});e.classList.toggle('hidden',!ok);"
    "if(ok&&e.tagName==='LI')shown++;});"
    "document.getElementById('count').textContent=shown+' of '+"
    "document.querySelectorAll('li[data-search]').length;});})();";

static void page_head(ddx_sb_t *b, const char *title) {
  ddx_sb_puts(b, "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
                 "<meta name=\"viewport\" content=\"width=device-width,initial-scale=1\">"
                 "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; "
                 "style-src 'unsafe-inline'; script-src 'unsafe-inline'; img-src data:\">"
                 "<title>");
  h(b, title);
  ddx_sb_printf(b, "</title><style>%s</style></head>\n<body><main>\n", CSS);
}

/* The lower-cased words the search looks in. */
static void search_text(ddx_sb_t *b, const ddx_rule_t *r) {
  ddx_sb_t s;
  ddx_sb_init(&s);
  ddx_sb_printf(&s, "%s %s %s %s %s", r->id, r->title, r->fingerprint ? r->fingerprint : "",
                r->phase, r->family ? r->family : "");
  for (size_t i = 0; i < r->tags.n; i++)
    ddx_sb_printf(&s, " %s", r->tags.v[i]);
  char *t = ddx_sb_take(&s);
  if (!t) return;
  for (char *p = t; *p; p++)
    if (*p >= 'A' && *p <= 'Z') *p = (char)(*p - 'A' + 'a');
  h(b, t);
  free(t);
}

static void h_link(ddx_sb_t *b, const ddx_catalog_t *cat, const char *id) {
  if (ddx_catalog_find(cat, id)) {
    ddx_sb_puts(b, "<a href=\"");
    h(b, id);
    ddx_sb_puts(b, ".html\"><code>");
    h(b, id);
    ddx_sb_puts(b, "</code></a>");
  } else {
    ddx_sb_puts(b, "<code>");
    h(b, id);
    ddx_sb_puts(b, "</code> <span class=\"muted\">(not in this catalog)</span>");
  }
}

static void h_compare(ddx_sb_t *b, const ddx_catalog_t *cat, const ddx_rule_t **v, size_t n,
                      const char *group, const char *self) {
  ddx_sb_puts(b, "<table class=\"compare\"><thead><tr><th>Class</th><th>Phase</th><th>Where</th>"
                 "<th>Fingerprint</th><th>What separates it</th><th>First fix</th></tr></thead>"
                 "<tbody>\n");
  for (size_t i = 0; i < n; i++) {
    const ddx_rule_t *r = v[i];
    if (!r->compare_group || strcmp(r->compare_group, group)) continue;
    ddx_sb_printf(b, "<tr%s data-search=\"", self && !strcmp(self, r->id) ? " class=\"self\"" : "");
    search_text(b, r);
    ddx_sb_puts(b, "\"><td>");
    h_link(b, cat, r->id);
    ddx_sb_puts(b, "</td><td>");
    h(b, axis_title(PHASES, NPHASES, r->phase));
    ddx_sb_puts(b, "</td><td>");
    h_prose(b, r->compare_where);
    ddx_sb_puts(b, "</td><td><code>");
    h(b, r->fingerprint);
    ddx_sb_puts(b, "</code></td><td>");
    h_prose(b, r->compare_separates);
    ddx_sb_puts(b, "</td><td>");
    h_prose(b, r->fix.n ? r->fix.v[0] : "");
    ddx_sb_puts(b, "</td></tr>\n");
  }
  ddx_sb_puts(b, "</tbody></table>\n");
}

static void group_anchor(ddx_sb_t *b, const char *group) {
  ddx_sb_puts(b, "cmp-");
  for (const char *p = group; *p; p++) {
    char c = *p;
    if (c >= 'A' && c <= 'Z') c = (char)(c - 'A' + 'a');
    if ((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9'))
      ddx_sb_putn(b, &c, 1);
    else if (b->len && b->s[b->len - 1] != '-')
      ddx_sb_puts(b, "-");
  }
}

static char *hub_page(const ddx_catalog_t *cat, const ddx_rule_t **v, size_t n, const char **groups,
                      size_t ng) {
  ddx_sb_t b;
  ddx_sb_init(&b);
  page_head(&b, "ddx failure catalog");
  ddx_sb_printf(&b,
                "<h1>The ddx failure catalog</h1>\n<p class=\"muted\">%zu failure classes of "
                "distributed training (DeepSpeed, PyTorch distributed, NCCL, CUDA, vLLM), "
                "generated by <code>ddx catalog --html</code> from the rule files. Every class "
                "by lifecycle phase and family, look-alikes side by side, one page per "
                "class.</p>\n",
                n);
  ddx_sb_puts(&b, "<input id=\"search\" type=\"search\" hidden placeholder=\"Search ids, titles, "
                  "fingerprints (e.g. zero3 gather, watchdog, nan)\" aria-label=\"Search\"> "
                  "<span id=\"count\" class=\"muted\"></span>\n");
  bool unclassified = false;
  for (size_t i = 0; i < n; i++)
    unclassified |= !v[i]->family;
  size_t nf = NFAMILIES - (unclassified ? 0 : 1);
  ddx_sb_puts(&b, "<h2 id=\"matrix-title\">By lifecycle phase and family</h2>\n<table "
                  "id=\"matrix\"><thead><tr><th>Phase</th>");
  for (size_t f = 0; f < nf; f++)
    ddx_sb_printf(&b, "<th data-family=\"%s\">%s</th>", FAMILIES[f].id ? FAMILIES[f].id : "",
                  FAMILIES[f].title);
  ddx_sb_puts(&b, "</tr></thead><tbody>\n");
  for (size_t p = 0; p < NPHASES; p++) {
    ddx_sb_printf(&b, "<tr data-phase=\"%s\"><th>%s</th>", PHASES[p].id, PHASES[p].title);
    for (size_t f = 0; f < nf; f++) {
      ddx_sb_puts(&b, "<td class=\"cell\">");
      for (size_t i = 0; i < n; i++) {
        if (strcmp(v[i]->phase, PHASES[p].id) || !family_is(v[i], &FAMILIES[f])) continue;
        ddx_sb_puts(&b, "<a class=\"entry\" href=\"");
        h(&b, v[i]->id);
        ddx_sb_puts(&b, ".html\" title=\"");
        h(&b, v[i]->title);
        ddx_sb_puts(&b, "\" data-search=\"");
        search_text(&b, v[i]);
        ddx_sb_puts(&b, "\">");
        /* a long id may break after its dots only */
        for (const char *c = v[i]->id; *c; c++) {
          char one[2] = {*c, 0};
          h(&b, one);
          if (*c == '.') ddx_sb_puts(&b, "<wbr>");
        }
        ddx_sb_puts(&b, "</a>");
      }
      ddx_sb_puts(&b, "</td>");
    }
    ddx_sb_puts(&b, "</tr>\n");
  }
  ddx_sb_puts(&b, "</tbody></table>\n<h2 id=\"lookalikes\">Look-alikes side by side</h2>\n"
                  "<p class=\"muted\">Failures that read alike in a log: where each happens, "
                  "the line that decides, its first fix.</p>\n");
  for (size_t g = 0; g < ng; g++) {
    ddx_sb_puts(&b, "<h3 id=\"");
    group_anchor(&b, groups[g]);
    ddx_sb_puts(&b, "\">");
    h(&b, groups[g]);
    ddx_sb_puts(&b, "</h3>\n");
    h_compare(&b, cat, v, n, groups[g], NULL);
  }
  ddx_sb_puts(&b, "<h2 id=\"all\">Every class</h2>\n<ul class=\"entries\">\n");
  for (size_t i = 0; i < n; i++) {
    ddx_sb_puts(&b, "<li data-search=\"");
    search_text(&b, v[i]);
    ddx_sb_puts(&b, "\"><a href=\"");
    h(&b, v[i]->id);
    ddx_sb_puts(&b, ".html\"><code>");
    h(&b, v[i]->id);
    ddx_sb_puts(&b, "</code></a> ");
    h(&b, v[i]->title);
    ddx_sb_puts(&b, "</li>\n");
  }
  ddx_sb_printf(&b, "</ul>\n</main><script>%s</script></body></html>\n", SEARCH_JS);
  return ddx_sb_take(&b);
}

static void h_section(ddx_sb_t *b, const char *id, const char *title) {
  ddx_sb_printf(b, "<h2 id=\"%s\">%s</h2>\n", id, title);
}

static void h_para(ddx_sb_t *b, const char *id, const char *title, const char *text) {
  if (!text) return;
  h_section(b, id, title);
  ddx_sb_puts(b, "<p>");
  h_prose(b, text);
  ddx_sb_puts(b, "</p>\n");
}

static void h_list(ddx_sb_t *b, const char *id, const char *title, const ddx_strs_t *l,
                   bool numbered) {
  if (!l->n) return;
  h_section(b, id, title);
  ddx_sb_puts(b, numbered ? "<ol>" : "<ul>");
  for (size_t i = 0; i < l->n; i++) {
    ddx_sb_puts(b, "<li>");
    h_prose(b, l->v[i]);
    ddx_sb_puts(b, "</li>");
  }
  ddx_sb_puts(b, numbered ? "</ol>\n" : "</ul>\n");
}

static void h_pre(ddx_sb_t *b, const char *cls, const char *text) {
  ddx_sb_printf(b, "<pre class=\"%s\">", cls);
  h(b, text);
  ddx_sb_puts(b, "</pre>\n");
}

static void h_diff(ddx_sb_t *b, json_t *patch) {
  ddx_sb_t d;
  ddx_sb_init(&d);
  patch_diff(&d, patch);
  char *txt = ddx_sb_take(&d);
  if (!txt) return;
  ddx_sb_puts(b, "<pre class=\"diff\">");
  for (char *line = txt; *line;) {
    char *e = (char *)first_line_end(line);
    char save = *e;
    *e = 0;
    const char *cls = line[0] == '+' ? "add" : line[0] == '-' ? "del" : NULL;
    if (cls) ddx_sb_printf(b, "<span class=\"%s\">", cls);
    h(b, line);
    ddx_sb_puts(b, cls ? "</span>" : "\n");
    *e = save;
    line = *e ? e + 1 : e;
  }
  ddx_sb_puts(b, "</pre>\n");
  free(txt);
}

/* How ddx recognises the class: its signatures (the decisive lines), the
 * context it needs and the differential's clues, folded. */
static void h_recognise(ddx_sb_t *b, const ddx_rule_t *r) {
  if (!r->nsigs && !r->nclues) return;
  h_section(b, "recognise", "How ddx recognises it");
  ddx_sb_printf(b,
                "<details><summary>%zu signature%s, %zu context pattern%s, %zu clue%s, prior "
                "%g</summary>\n",
                r->nsigs, r->nsigs == 1 ? "" : "s", r->nctx, r->nctx == 1 ? "" : "s", r->nclues,
                r->nclues == 1 ? "" : "s", r->prior);
  if (r->nsigs) {
    ddx_sb_puts(b, "<table class=\"signatures\"><thead><tr><th>Signature</th><th>Regex</th>"
                   "<th>Confidence</th></tr></thead><tbody>\n");
    for (size_t i = 0; i < r->nsigs; i++) {
      ddx_sb_puts(b, "<tr><td>");
      h(b, r->sigs[i].id ? r->sigs[i].id : "");
      ddx_sb_puts(b, "</td><td><code>");
      h(b, r->sigs[i].regex);
      ddx_sb_printf(b, "</code></td><td>%.2f</td></tr>\n", r->sigs[i].confidence);
    }
    ddx_sb_puts(b, "</tbody></table>\n");
  }
  if (r->nclues) {
    ddx_sb_puts(b, "<table class=\"clues\"><thead><tr><th>Clue</th><th>Weight</th><th>Why</th>"
                   "</tr></thead><tbody>\n");
    for (size_t i = 0; i < r->nclues; i++) {
      ddx_sb_puts(b, "<tr><td>");
      h(b, r->clues[i].id ? r->clues[i].id : "");
      ddx_sb_printf(b, "</td><td>%+.2f</td><td>", r->clues[i].weight);
      h_prose(b, r->clues[i].why ? r->clues[i].why : "");
      ddx_sb_puts(b, "</td></tr>\n");
    }
    ddx_sb_puts(b, "</tbody></table>\n");
  }
  ddx_sb_puts(b, "</details>\n");
}

static char *entry_page(const ddx_catalog_t *cat, const ddx_rule_t **v, size_t n,
                        const ddx_rule_t *r) {
  ddx_sb_t b;
  ddx_sb_init(&b);
  ddx_sb_t t;
  ddx_sb_init(&t);
  ddx_sb_printf(&t, "%s - ddx failure catalog", r->id);
  char *title = ddx_sb_take(&t);
  page_head(&b, title ? title : r->id);
  free(title);
  ddx_sb_puts(&b, "<nav class=\"top\"><a href=\"index.html\">&larr; The failure catalog</a>");
  if (r->compare_group) {
    ddx_sb_puts(&b, " · <a href=\"index.html#");
    group_anchor(&b, r->compare_group);
    ddx_sb_puts(&b, "\">");
    h(&b, r->compare_group);
    ddx_sb_puts(&b, "</a>");
  }
  ddx_sb_puts(&b, "</nav>\n<h1>");
  h(&b, r->title);
  ddx_sb_puts(&b, "</h1>\n<p><code class=\"id\">");
  h(&b, r->id);
  ddx_sb_printf(&b,
                "</code></p>\n<p><span class=\"badge\">phase: %s</span><span "
                "class=\"badge\">family: %s</span><span class=\"badge sev-%s\">%s</span><span "
                "class=\"badge\">%s</span><span class=\"badge\">priority %d</span>",
                axis_title(PHASES, NPHASES, r->phase), axis_title(FAMILIES, NFAMILIES, r->family),
                ddx_severity_name((int)r->severity), ddx_severity_name((int)r->severity),
                ddx_role_name((int)r->role), r->priority);
  if (r->framework) {
    ddx_sb_puts(&b, "<span class=\"badge\">");
    h(&b, r->framework);
    ddx_sb_puts(&b, "</span>");
  }
  for (size_t i = 0; i < r->tags.n; i++) {
    ddx_sb_puts(&b, "<span class=\"badge\">#");
    h(&b, r->tags.v[i]);
    ddx_sb_puts(&b, "</span>");
  }
  ddx_sb_puts(&b, "</p>\n<p class=\"summary\">");
  h_prose(&b, r->summary);
  ddx_sb_puts(&b, "</p>\n");
  if (r->npositive) {
    h_section(&b, "looks-like", "What it looks like in a real log");
    for (size_t i = 0; i < r->npositive; i++) {
      h_pre(&b, "sample", r->positive[i].text);
      if (r->positive[i].source) {
        ddx_sb_puts(&b, "<p class=\"muted small\">Source: ");
        h_ref(&b, r->positive[i].source);
        ddx_sb_puts(&b, "</p>\n");
      }
    }
  }
  h_para(&b, "mechanism", "Mechanism", r->mechanism);
  if (r->nsymptoms) {
    h_section(&b, "symptoms", "Symptoms");
    ddx_sb_puts(&b, "<table class=\"symptoms\"><thead><tr><th>Symptom</th><th>Why</th></tr>"
                    "</thead><tbody>\n");
    for (size_t i = 0; i < r->nsymptoms; i++) {
      ddx_sb_puts(&b, "<tr><td>");
      h_prose(&b, r->symptoms[i].text);
      ddx_sb_puts(&b, "</td><td>");
      h_prose(&b, r->symptoms[i].why);
      ddx_sb_puts(&b, "</td></tr>\n");
    }
    ddx_sb_puts(&b, "</tbody></table>\n");
  }
  h_para(&b, "affects", "Affects", r->affects);
  h_list(&b, "checklist", "Checklist to confirm it", &r->checklist, true);
  h_para(&b, "confirm", "Cheapest confirmation", r->confirm);
  h_list(&b, "fix", "Fix", &r->fix, true);
  if (r->config_patches_json) {
    json_t *p = json_loads(r->config_patches_json, 0, NULL);
    h_section(&b, "patches", "ds_config.json quick fixes");
    ddx_sb_puts(&b, "<p class=\"muted\">What the editor's quick fix changes, when its "
                    "conditions (#) hold; the edit comes back for review, never written "
                    "behind your back.</p>\n");
    for (size_t i = 0; i < json_array_size(p); i++) {
      ddx_sb_puts(&b, "<h3>");
      h(&b, json_string_value(json_object_get(json_array_get(p, i), "title")));
      ddx_sb_puts(&b, "</h3>\n");
      h_diff(&b, json_array_get(p, i));
    }
    json_decref(p);
  }
  if (r->nexamples) {
    h_section(&b, "examples", "Code per stack");
    for (size_t i = 0; i < r->nexamples; i++) {
      const ddx_example_t *x = &r->examples[i];
      ddx_sb_printf(&b, "<h3 class=\"stack\" data-stack=\"%s\">%s", x->stack,
                    axis_title(STACKS, 5, x->stack));
      if (x->title) {
        ddx_sb_puts(&b, ": ");
        h(&b, x->title);
      }
      ddx_sb_puts(&b, "</h3>\n");
      h_pre(&b, "code", x->code);
      ddx_sb_puts(&b, "<p><em>Why it works:</em> ");
      h_prose(&b, x->why);
      ddx_sb_puts(&b, "</p>\n");
    }
  }
  if (r->verify) {
    h_section(&b, "verify", "Verify the fix");
    ddx_sb_puts(&b, "<p>");
    h_prose(&b, r->verify);
    ddx_sb_puts(&b, "</p>\n");
  }
  h_para(&b, "prevention", "Prevention", r->prevention);
  if (r->fingerprint) {
    h_section(&b, "fingerprint", "Fingerprint to monitor");
    h_pre(&b, "fingerprint", r->fingerprint);
  }
  h_para(&b, "scale", "From 1 to 1000+ GPUs", r->scale);
  if (r->inference_affected) {
    h_section(&b, "inference", "Inference");
    ddx_sb_printf(&b, "<p><strong>%s.</strong> ", r->inference_affected);
    h_prose(&b, r->inference_note);
    ddx_sb_puts(&b, "</p>\n");
  }
  if (r->compare_group) {
    h_section(&b, "lookalikes", "Look-alikes");
    ddx_sb_puts(&b, "<p>");
    h_prose(&b, r->compare_separates);
    ddx_sb_puts(&b, "</p>\n");
    h_compare(&b, cat, v, n, r->compare_group, r->id);
  }
  const struct {
    const char *id, *title;
    const ddx_strs_t *ids;
  } links[] = {{"related", "Related classes", &r->related},
               {"explains", "Collateral it explains", &r->explains}};
  for (size_t l = 0; l < 2; l++) {
    if (!links[l].ids->n) continue;
    h_section(&b, links[l].id, links[l].title);
    ddx_sb_puts(&b, "<ul>");
    for (size_t i = 0; i < links[l].ids->n; i++) {
      const ddx_rule_t *o = ddx_catalog_find(cat, links[l].ids->v[i]);
      ddx_sb_puts(&b, "<li>");
      h_link(&b, cat, links[l].ids->v[i]);
      if (o) {
        ddx_sb_puts(&b, " ");
        h(&b, o->title);
      }
      ddx_sb_puts(&b, "</li>");
    }
    ddx_sb_puts(&b, "</ul>\n");
  }
  h_list(&b, "missing", "What to paste next when it is unclear", &r->missing, false);
  h_recognise(&b, r);
  if (r->references.n) {
    h_section(&b, "references", "References");
    ddx_sb_puts(&b, "<ul>");
    for (size_t i = 0; i < r->references.n; i++) {
      ddx_sb_puts(&b, "<li>");
      h_ref(&b, r->references.v[i]);
      ddx_sb_puts(&b, "</li>");
    }
    ddx_sb_puts(&b, "</ul>\n");
  }
  ddx_sb_puts(&b, "<p class=\"muted\">In a terminal: <code>ddx explain ");
  h(&b, r->id);
  ddx_sb_puts(&b, "</code></p>\n</main></body></html>\n");
  return ddx_sb_take(&b);
}

static int write_page(const char *dir, const char *name, const char *text, ddx_error_t *err) {
  char path[PATH_MAX];
  if (snprintf(path, sizeof path, "%s/%s", dir, name) >= (int)sizeof path)
    return ddx_error_set(err, DDX_EIO, "%s/%s: path too long", dir, name);
  int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0644);
  if (fd < 0) return ddx_error_set(err, DDX_EIO, "%s: %s", path, strerror(errno));
  size_t len = strlen(text), off = 0;
  while (off < len) {
    ssize_t w = write(fd, text + off, len - off);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) {
      int e = errno;
      close(fd);
      return ddx_error_set(err, DDX_EIO, "%s: %s", path, strerror(e));
    }
    off += (size_t)w;
  }
  if (close(fd)) return ddx_error_set(err, DDX_EIO, "%s: %s", path, strerror(errno));
  return 0;
}

int ddx_hub_write_html(const ddx_catalog_t *cat, const char *dir, ddx_error_t *err) {
  if (mkdir(dir, 0755) && errno != EEXIST)
    return ddx_error_set(err, DDX_EIO, "%s: %s", dir, strerror(errno));
  struct stat st;
  if (stat(dir, &st) || !S_ISDIR(st.st_mode))
    return ddx_error_set(err, DDX_EIO, "%s: not a folder", dir);
  const ddx_rule_t **v = sorted_rules(cat);
  const char **groups = malloc((cat->nrules + 1) * sizeof *groups);
  int rc = 0;
  if (!v || !groups) rc = ddx_error_set(err, DDX_ENOMEM, "out of memory");
  size_t n = cat->nrules, ng = rc ? 0 : groups_of(v, n, groups);
  if (!rc) {
    char *page = hub_page(cat, v, n, groups, ng);
    rc = page ? write_page(dir, "index.html", page, err)
              : ddx_error_set(err, DDX_ENOMEM, "out of memory");
    free(page);
  }
  for (size_t i = 0; !rc && i < n; i++) {
    char name[256];
    snprintf(name, sizeof name, "%s.html", v[i]->id);
    char *page = entry_page(cat, v, n, v[i]);
    rc = page ? write_page(dir, name, page, err) : ddx_error_set(err, DDX_ENOMEM, "out of memory");
    free(page);
  }
  free(groups);
  free(v);
  return rc;
}

/* ----------------------------------------------------------- the shipped site */

/* dir's real path into buf when it holds the site's index.html. */
static bool hub_at(char *buf, size_t cap, const char *dir) {
  char p[PATH_MAX + 16];
  struct stat st;
  char *real = realpath(dir, NULL);
  bool ok = false;
  if (real && strlen(real) < cap) {
    snprintf(p, sizeof p, "%s/index.html", real);
    ok = !stat(p, &st) && S_ISREG(st.st_mode);
    if (ok) strcpy(buf, real);
  }
  free(real);
  return ok;
}

bool ddx_hub_has_page(const char *hub_dir, const char *id) {
  char p[PATH_MAX + 300];
  struct stat st;
  if (!hub_dir) return false;
  snprintf(p, sizeof p, "%s/%s.html", hub_dir, id);
  return !stat(p, &st) && S_ISREG(st.st_mode);
}

const char *ddx_hub_find(char *buf, size_t cap, const char *rules_dir) {
  char exe[PATH_MAX], p[PATH_MAX + 32];
  static const char *const sub[] = {"/catalog", "/../share/ddx/catalog"};
  if (ddx_exe_dir(exe, sizeof exe))
    for (size_t i = 0; i < 2; i++) {
      snprintf(p, sizeof p, "%s%s", exe, sub[i]);
      if (hub_at(buf, cap, p)) return buf;
    }
  if (rules_dir) {
    snprintf(p, sizeof p, "%s/../catalog", rules_dir);
    if (hub_at(buf, cap, p)) return buf;
  }
  return NULL;
}

char *ddx_hub_uri(const char *hub_dir, const char *id) {
  if (!hub_dir) return NULL;
  ddx_sb_t b;
  ddx_sb_init(&b);
  ddx_sb_puts(&b, "file://");
  for (const unsigned char *p = (const unsigned char *)hub_dir; *p; p++) {
    if ((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') ||
        strchr("/-._~", *p))
      ddx_sb_putn(&b, (const char *)p, 1);
    else
      ddx_sb_printf(&b, "%%%02X", *p);
  }
  /* ids match the rule id pattern: no character needs escaping */
  ddx_sb_printf(&b, "/%s.html", id ? id : "index");
  return ddx_sb_take(&b);
}
