/* hover.c - textDocument/hover (see ddx/lsp.h): on a matched log line,
 * the catalog entry with this occurrence's facts; on a ds_config.json key,
 * what the key does, its type, default and effect on memory from the JSON
 * Schema rules/ds_config.schema.json (ddx/dscheck.h), and on
 * zero_optimization the model-state memory estimate of the config. */
#include "internal.h"

#include "ddx/report.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Markdown from rule packs and logs (ddx_sb_put_md): the catalog's prose
 * keeps its `code` spans; values from a log are plain text or one code
 * span; none can add a link, an image, HTML or a heading. */
static void md_prose(ddx_sb_t *b, const char *s) {
  if (s) ddx_sb_put_md(b, s, strlen(s), true);
}

static void md_text(ddx_sb_t *b, const char *s) {
  if (s) ddx_sb_put_md(b, s, strlen(s), false);
}

static void md_code(ddx_sb_t *b, const char *s) {
  ddx_sb_put_md_code(b, s ? s : "", s ? strlen(s) : 0);
}

static json_t *lsp_markup(const char *md, json_t *range) {
  json_t *h = json_pack("{s:{s:s, s:o}}", "contents", "kind", "markdown", "value",
                        ddx_lsp_jstr(md, strlen(md)));
  if (range) json_object_set_new(h, "range", range);
  return h;
}

/* A ds_config key: its documentation from the schema; on
 * zero_optimization also the model-state estimate for this config. */
static json_t *lsp_hover_config(ddx_lsp_server_t *s, ddx_lsp_doc_t *d, size_t off) {
  /* only a DeepSpeed config (by name, or checked as one): not a vocab.json */
  if (!d->cfg_published && !ddx_lsp_cfg_doc_is_ds(d, NULL)) return json_null();
  size_t ks = 0, ke = 0;
  char *path = ddx_lsp_json_key_at(d->text->data, d->text->len, off, &ks, &ke);
  if (!path) return json_null();
  const ddx_dscheck_t *schema = ddx_lsp_cfg_schema(s);
  char *doc = schema ? ddx_dscheck_describe(schema, path) : NULL;
  json_t *r = json_null();
  if (doc) {
    ddx_sb_t b;
    ddx_sb_init(&b);
    ddx_sb_puts(&b, doc);
    if (!strcmp(path, "zero_optimization") && d->text->len <= DDX_LSP_CFG_MAX_BYTES) {
      ddx_dscheck_facts_t f;
      ddx_lsp_cfg_src_t src;
      ddx_lsp_cfg_facts(s, &f, &src);
      ddx_dscheck_result_t res;
      ddx_error_t err = {0};
      if (ddx_dscheck_run(schema, d->text->data, d->text->len, &f, &res, &err) == 0) {
        char *md = ddx_dscheck_memory_markdown(&res.memory, &f);
        if (md) ddx_sb_printf(&b, "\n---\n\n%s", md);
        free(md);
      } else {
        ddx_sb_puts(&b, "\n---\n\nNo memory estimate: "), md_text(&b, err.msg),
            ddx_sb_puts(&b, "\n");
      }
      ddx_dscheck_result_free(&res);
    }
    /* the memory model's peak per GPU (config.c) on the keys it reads */
    static const char *const mem_keys[] = {"zero_optimization",
                                           "train_micro_batch_size_per_gpu",
                                           "gradient_accumulation_steps",
                                           "train_batch_size",
                                           "bf16",
                                           "fp16",
                                           "optimizer",
                                           "activation_checkpointing",
                                           "zero_optimization.stage",
                                           "zero_optimization.offload_optimizer",
                                           "zero_optimization.offload_param",
                                           NULL};
    bool mem = false;
    for (size_t k = 0; mem_keys[k] && !mem; k++)
      mem = !strcmp(path, mem_keys[k]);
    char *mm = mem ? ddx_lsp_cfg_memory_markdown(s, d) : NULL;
    if (mm) ddx_sb_printf(&b, "\n---\n\n%s", mm);
    free(mm);
    r = lsp_markup(b.s ? b.s : "", ddx_lsp_range(d->text, s->life.encoding, ks, ke));
    ddx_sb_free(&b);
    free(doc);
  }
  free(path);
  return r;
}

static void lsp_md_list(ddx_sb_t *b, const char *title, const ddx_strs_t *l, bool numbered) {
  if (!l->n) return;
  ddx_sb_printf(b, "\n**%s**\n\n", title);
  for (size_t i = 0; i < l->n; i++) {
    if (numbered)
      ddx_sb_printf(b, "%zu. ", i + 1);
    else
      ddx_sb_puts(b, "- ");
    md_prose(b, l->v[i]);
    ddx_sb_puts(b, "\n");
  }
}

/* The facts of a hit as a sentence people read, for the common OOM facts,
 * then every fact as name = value. */
static void lsp_md_facts(ddx_sb_t *b, const ddx_hit_t *h) {
  if (!h->nfacts) return;
  const char *tried = ddx_hit_fact(h, "tried"), *gpu = ddx_hit_fact(h, "gpu");
  const char *total = ddx_hit_fact(h, "total"), *fr = ddx_hit_fact(h, "free");
  ddx_sb_puts(b, "\n**This occurrence:** ");
  if (tried && total && fr) {
    ddx_sb_puts(b, "tried to allocate "), md_text(b, tried);
    ddx_sb_puts(b, " on GPU "), md_text(b, gpu && *gpu ? gpu : "?");
    ddx_sb_puts(b, ": "), md_text(b, total);
    ddx_sb_puts(b, " total, "), md_text(b, fr);
    ddx_sb_puts(b, " free. ");
  }
  for (uint16_t i = 0; i < h->nfacts; i++) {
    ddx_sb_puts(b, i ? ", " : "");
    md_code(b, h->facts[i].name);
    ddx_sb_puts(b, " = ");
    md_code(b, h->facts[i].value); /* verbatim, as the log has it */
  }
  ddx_sb_puts(b, "\n");
}

/* The primary's phase, the differential's other candidates and what
 * would separate the first two. */
static void lsp_md_differential(ddx_sb_t *b, const ddx_diagnosis_t *d) {
  const ddx_incident_t *p = d->incidents;
  if (p->phase) ddx_sb_puts(b, "\n**Phase** "), md_prose(b, p->phase->title), ddx_sb_puts(b, "\n");
  if (p->inferred) ddx_sb_puts(b, "\n_Inferred from a traceback cut before its error line._\n");
  bool head = false;
  for (size_t i = 0; i < d->ndifferential; i++) {
    const ddx_candidate_t *c = &d->differential[i];
    if (c->rule == p->rule || c->score < 0.05) continue;
    if (!head) ddx_sb_puts(b, "\n**Also possible**\n\n");
    head = true;
    ddx_sb_printf(b, "- `%s` (%.2f)%s", c->rule->id, c->score, c->npro ? ": " : "");
    if (c->npro) md_text(b, c->pro[0]);
    ddx_sb_puts(b, "\n");
  }
  if (d->separator)
    ddx_sb_puts(b, "\n**Tell apart** "), md_text(b, d->separator), ddx_sb_puts(b, "\n");
}

static json_t *lsp_hover_log(ddx_lsp_server_t *s, ddx_lsp_doc_t *d, size_t line) {
  ddx_lsp_result_t *r = d->result;
  if (!r || !r->text) return json_null();
  uint64_t want = (uint64_t)line + 1; /* engine lines are 1-based */
  const ddx_rule_t *rule = NULL;
  const ddx_hit_t *hit = NULL;
  const ddx_incident_t *inc = NULL, *of = NULL;
  const ddx_collateral_t *coll = NULL;
  for (size_t i = 0; i < r->diag.n && !rule; i++) {
    const ddx_incident_t *x = &r->diag.incidents[i];
    if (x->hit && x->hit->line == want) {
      inc = x;
      rule = x->rule;
      hit = x->hit;
    }
    for (size_t k = 0; k < x->ncollateral && !rule; k++) {
      if (x->collateral[k].first && x->collateral[k].first->line == want) {
        coll = &x->collateral[k];
        of = x;
        rule = coll->rule;
        hit = coll->first;
      }
    }
  }
  if (!rule) { /* any other matched line: the highest-priority signature hit */
    const ddx_hit_t *hits = r->scan.hits.data;
    for (size_t i = 0; i < r->scan.hits.len; i++) {
      const ddx_hit_t *h = &hits[i];
      if (h->line != want || h->is_ctx || h->rule >= r->cat->cat->nrules) continue;
      const ddx_rule_t *hr = &r->cat->cat->rules[h->rule];
      if (!rule || hr->priority > rule->priority) {
        rule = hr;
        hit = h;
      }
    }
  }
  if (!rule) return json_null();
  ddx_sb_t b;
  ddx_sb_init(&b);
  char *href = ddx_lsp_rule_href(r->cat, rule);
  ddx_sb_puts(&b, "### ");
  md_prose(&b, rule->title);
  /* the id matches ^[a-z0-9]+(\.[a-z0-9-]+)+$; the href is the shipped
   * site's page or a rule file's URI; without one the id is not a link */
  if (href)
    ddx_sb_printf(&b, "\n\n[`%s`](<%s>) · %s · ", rule->id, href,
                  ddx_severity_name((int)rule->severity));
  else
    ddx_sb_printf(&b, "\n\n`%s` · %s · ", rule->id, ddx_severity_name((int)rule->severity));
  md_text(&b, rule->phase);
  ddx_sb_puts(&b, "\n\n");
  free(href);
  char rs[200] = "";
  if (inc) {
    ddx_rankset_format(&inc->ranks, rs, sizeof rs);
    ddx_sb_printf(&b, "**%s** on ",
                  inc == r->diag.incidents ? "Initiating failure" : "Independent failure");
    if (inc->rank >= 0)
      ddx_sb_printf(&b, "rank %d", inc->rank);
    else
      ddx_sb_puts(&b, "an unknown rank");
    if (inc->hit->meta.host[0])
      ddx_sb_puts(&b, " (host "), md_text(&b, inc->hit->meta.host), ddx_sb_puts(&b, ")");
    ddx_sb_printf(&b, ", confidence %.2f; %llu event%s on %s%s.\n", inc->confidence,
                  (unsigned long long)inc->count, inc->count == 1 ? "" : "s",
                  inc->ranks.n > 1 ? "ranks "
                  : inc->ranks.n   ? "rank "
                                   : "rank unknown",
                  inc->ranks.n ? rs : "");
    if (inc->rank_note) ddx_sb_puts(&b, "\n_"), md_text(&b, inc->rank_note), ddx_sb_puts(&b, "_\n");
    char oom[600];
    if (ddx_report_oom_note(inc, oom, sizeof oom))
      ddx_sb_puts(&b, "\n**Memory:** "), md_text(&b, oom), ddx_sb_puts(&b, "\n");
  } else if (coll) {
    ddx_rankset_format(&coll->ranks, rs, sizeof rs);
    ddx_sb_printf(&b, "**Collateral** of `%s` (line %llu): %llu event%s on %s%s. ", of->rule->id,
                  (unsigned long long)of->hit->line, (unsigned long long)coll->count,
                  coll->count == 1 ? "" : "s",
                  coll->ranks.n > 1 ? "ranks "
                  : coll->ranks.n   ? "rank "
                                    : "rank unknown",
                  coll->ranks.n ? rs : "");
    md_prose(&b, coll->why);
    ddx_sb_puts(&b, "\n");
  } else {
    ddx_sb_puts(&b, "Matched line (not the diagnosis of this log).\n");
  }
  if (hit) lsp_md_facts(&b, hit);
  if (inc == r->diag.incidents) lsp_md_differential(&b, &r->diag);
  if (rule->summary)
    ddx_sb_puts(&b, "\n**Summary** "), md_prose(&b, rule->summary), ddx_sb_puts(&b, "\n");
  if (rule->mechanism)
    ddx_sb_puts(&b, "\n**Why** "), md_prose(&b, rule->mechanism), ddx_sb_puts(&b, "\n");
  lsp_md_list(&b, "Confirm", &rule->checklist, false);
  lsp_md_list(&b, "Fix", &rule->fix, true);
  if (rule->verify)
    ddx_sb_puts(&b, "\n**Verify** "), md_prose(&b, rule->verify), ddx_sb_puts(&b, "\n");
  if (inc && inc->nmissing) {
    ddx_sb_puts(&b, "\n**Missing facts**\n\n");
    for (size_t i = 0; i < inc->nmissing; i++)
      ddx_sb_puts(&b, "- "), md_prose(&b, inc->missing[i]), ddx_sb_puts(&b, "\n");
  }
  if (rule->related.n) {
    ddx_sb_puts(&b, "\n**Related:** ");
    for (size_t i = 0; i < rule->related.n; i++)
      ddx_sb_puts(&b, i ? ", " : ""), md_code(&b, rule->related.v[i]);
    ddx_sb_puts(&b, "\n");
  }
  json_t *range =
      line < r->text->nlines ? ddx_lsp_line_range(r->text, s->life.encoding, line) : NULL;
  json_t *h = lsp_markup(b.s ? b.s : "", range);
  ddx_sb_free(&b);
  return h;
}

json_t *ddx_lsp_hover(ddx_lsp_server_t *s, json_t *params, ddx_lsp_call_t *call) {
  const char *uri =
      json_string_value(json_object_get(json_object_get(params, "textDocument"), "uri"));
  size_t line, ch;
  if (!uri || !ddx_lsp_get_position(json_object_get(params, "position"), &line, &ch))
    return ddx_lsp_fail(call, DDX_LSP_INVALID_PARAMS,
                        "hover needs textDocument.uri and a position");
  ddx_lsp_doc_t *d = ddx_lsp_doc_find(s, uri);
  if (!d) return json_null();
  if (d->kind == DDX_LSP_DOC_LOG) return lsp_hover_log(s, d, line);
  if (d->kind == DDX_LSP_DOC_JSON)
    return lsp_hover_config(s, d, ddx_lsp_offset(d->text, s->life.encoding, line, ch));
  return json_null();
}
