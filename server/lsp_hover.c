/* lsp_hover.c - textDocument/hover (see ddx/lsp.h): on a matched log line,
 * the catalog entry with this occurrence's facts; on a ds_config.json key,
 * a short note on what the key does, its default and its effect on memory
 * (a JSON Schema with the full reference comes with the editor extension). */
#include "ddx/lsp.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct lsp_keydoc {
  const char *key; /* full dotted path, or a last component starting with '*' */
  const char *doc;
} lsp_keydoc_t;

static const lsp_keydoc_t lsp_keydocs[] = {
    {"train_batch_size", "Global batch per optimizer step: `train_micro_batch_size_per_gpu` x "
                         "`gradient_accumulation_steps` x "
                         "data-parallel world size. DeepSpeed asserts the triple is consistent. "
                         "Default: derived from the other two. "
                         "Memory: none by itself; only the micro batch drives activation memory."},
    {"train_micro_batch_size_per_gpu",
     "Samples per GPU per forward/backward pass. Default 1 (derived when only train_batch_size is "
     "given). "
     "Memory: activations grow linearly with it (x sequence length); halving it and doubling "
     "`gradient_accumulation_steps` keeps the global batch and frees activation memory."},
    {"gradient_accumulation_steps", "Micro batches accumulated before each optimizer step. Default "
                                    "1. Memory: none (gradients are accumulated "
                                    "in place); it only trades time for a larger global batch."},
    {"gradient_clipping",
     "Clips the global gradient norm to this value (0 disables). Default 1.0 in HF Trainer "
     "setups, 0 in plain DeepSpeed. Memory: none."},
    {"fp16", "Mixed precision with fp16 and dynamic loss scaling. `enabled` turns it on; do not "
             "enable together "
             "with `bf16`. Memory: halves parameter/gradient/activation storage vs fp32; the fp32 "
             "master copy "
             "and Adam states stay in fp32 (12 bytes per parameter)."},
    {"fp16.enabled",
     "Turns fp16 mixed precision on (default false). Mutually exclusive with `bf16.enabled`."},
    {"fp16.loss_scale",
     "0 means dynamic loss scaling (default); a positive value fixes the scale."},
    {"fp16.initial_scale_power",
     "Dynamic loss scaling starts at 2^this (default 16). Lower it when the first "
     "steps only report overflow and skip."},
    {"fp16.loss_scale_window",
     "Steps without overflow before the loss scale is raised (default 1000)."},
    {"fp16.hysteresis", "Overflows tolerated before the scale is lowered (default 2)."},
    {"fp16.min_loss_scale",
     "Lowest dynamic loss scale (default 1). Reaching it raises \"Current loss scale "
     "already at minimum\": the model overflows in fp16; consider bf16."},
    {"bf16", "Mixed precision with bfloat16 (Ampere and newer). No loss scaling needed. Do not "
             "enable together "
             "with `fp16`. Memory: as fp16."},
    {"bf16.enabled",
     "Turns bf16 mixed precision on (default false). Mutually exclusive with `fp16.enabled`."},
    {"zero_optimization",
     "ZeRO memory optimizations: which model states are partitioned across data-parallel "
     "ranks (`stage`), offloading and communication buckets."},
    {"zero_optimization.stage", "ZeRO stage, default 0. 0: nothing partitioned (16 bytes/parameter "
                                "on every GPU with mixed-precision Adam); "
                                "1: optimizer states partitioned (4 + 12/N bytes/parameter); 2: + "
                                "gradients (2 + 14/N); 3: + parameters "
                                "(16/N), which are all-gathered layer by layer during "
                                "forward/backward. N is the data-parallel size."},
    {"zero_optimization.offload_optimizer",
     "ZeRO-Offload: keep optimizer states (and the fp32 master weights) in CPU (`device: cpu`) or "
     "NVMe memory; "
     "stages 1-3. Memory: removes the 12 bytes/parameter of Adam states from the GPU; needs host "
     "RAM of about "
     "12 x parameters / nodes and a CPU optimizer (DeepSpeedCPUAdam)."},
    {"zero_optimization.offload_param",
     "ZeRO-Infinity: keep partitioned parameters in CPU or NVMe memory. Stage 3 only (ignored "
     "below). Memory: "
     "removes the fp16 parameter shard from the GPU at the cost of PCIe traffic every step."},
    {"*device", "Where the offloaded tensors live: `cpu` or `nvme` (then `nvme_path` is required). "
                "Default none."},
    {"*pin_memory",
     "Page-locked host buffers for offload: faster copies, but pinned memory counts against host "
     "RAM and may fail to allocate (default false)."},
    {"zero_optimization.overlap_comm",
     "Overlap gradient reduction with backward (default false; true for stage "
     "3). Memory: buckets are kept in flight, up to 4.5x reduce_bucket_size."},
    {"zero_optimization.contiguous_gradients", "Copy gradients into one contiguous buffer as they "
                                               "are produced: less fragmentation (default true)."},
    {"zero_optimization.reduce_bucket_size",
     "Elements reduced at once (default 5e8). Memory: a bucket of this many elements (fp16: x2 "
     "bytes, with "
     "overlap_comm several in flight); lower it on OOM in reduction."},
    {"zero_optimization.allgather_bucket_size",
     "Elements all-gathered at once in stages 1-2 (default 5e8). Memory: one bucket; lower it on "
     "OOM."},
    {"zero_optimization.stage3_prefetch_bucket_size",
     "Stage 3: elements of parameters prefetched ahead of use (default 5e7). Memory: that many "
     "fp16 parameters "
     "gathered in advance; lower it when the OOM is in fetch_sub_module / all-gather."},
    {"zero_optimization.stage3_param_persistence_threshold",
     "Stage 3: parameters smaller than this stay unpartitioned on every GPU (default 1e5). Memory: "
     "grows with "
     "the number of small tensors (norms, biases); lower it to save memory."},
    {"zero_optimization.stage3_max_live_parameters",
     "Stage 3: upper bound of gathered parameters kept on the GPU at once (default 1e9). Lower it "
     "on OOM."},
    {"zero_optimization.stage3_max_reuse_distance",
     "Stage 3: a parameter reused within this many parameters is not released (default 1e9). Lower "
     "it on OOM "
     "with activation checkpointing."},
    {"zero_optimization.stage3_gather_16bit_weights_on_model_save",
     "Stage 3: gather the full fp16 weights on rank 0 when saving (default false). Memory: the "
     "whole model on "
     "one GPU at save time."},
    {"zero_optimization.sub_group_size", "Stage 3: parameters per optimizer sub-group (default "
                                         "1e9). Memory: lower it when the optimizer step OOMs "
                                         "with offload."},
    {"zero_optimization.round_robin_gradients",
     "Stage 1-2 with CPU offload: parallel gradient copies to the "
     "host (default false)."},
    {"activation_checkpointing", "DeepSpeed activation checkpointing (Megatron-style models). "
                                 "Memory: stores layer inputs only and "
                                 "recomputes the rest in backward."},
    {"activation_checkpointing.partition_activations",
     "Partition checkpointed activations across model-parallel "
     "ranks (default false)."},
    {"activation_checkpointing.cpu_checkpointing",
     "Keep checkpointed activations in CPU memory (needs "
     "partition_activations; default false)."},
    {"optimizer", "The optimizer DeepSpeed builds (`type`: Adam, AdamW, Lamb, ...; `params`). "
                  "Memory: Adam keeps "
                  "two fp32 states per parameter (8 bytes) plus the fp32 master copy (4)."},
    {"scheduler",
     "The learning-rate scheduler DeepSpeed builds (`type`: WarmupLR, WarmupDecayLR, ...)."},
    {"steps_per_print", "Print progress every N steps (default 10)."},
    {"wall_clock_breakdown", "Time forward/backward/step separately (default false)."},
    {"zero_allow_untested_optimizer",
     "Allow ZeRO with an optimizer DeepSpeed did not test (default false)."},
};

static const char *lsp_keydoc(const char *path) {
  for (size_t i = 0; i < sizeof lsp_keydocs / sizeof lsp_keydocs[0]; i++)
    if (!strcmp(lsp_keydocs[i].key, path)) return lsp_keydocs[i].doc;
  const char *last = strrchr(path, '.');
  last = last ? last + 1 : path;
  for (size_t i = 0; i < sizeof lsp_keydocs / sizeof lsp_keydocs[0]; i++)
    if (lsp_keydocs[i].key[0] == '*' && !strcmp(lsp_keydocs[i].key + 1, last))
      return lsp_keydocs[i].doc;
  /* stage3_* may sit under zero_optimization or, in old configs, at the top. */
  char buf[256];
  snprintf(buf, sizeof buf, "zero_optimization.%s", last);
  for (size_t i = 0; i < sizeof lsp_keydocs / sizeof lsp_keydocs[0]; i++)
    if (!strncmp(last, "stage3_", 7) && !strcmp(lsp_keydocs[i].key, buf)) return lsp_keydocs[i].doc;
  return NULL;
}

static json_t *lsp_markup(const char *md, json_t *range) {
  json_t *h = json_pack("{s:{s:s, s:o}}", "contents", "kind", "markdown", "value",
                        ddx_lsp_jstr(md, strlen(md)));
  if (range) json_object_set_new(h, "range", range);
  return h;
}

static json_t *lsp_hover_config(ddx_lsp_server_t *s, ddx_lsp_doc_t *d, size_t off) {
  size_t ks = 0, ke = 0;
  char *path = ddx_lsp_json_key_at(d->text->data, d->text->len, off, &ks, &ke);
  if (!path) return json_null();
  const char *doc = lsp_keydoc(path);
  json_t *r = json_null();
  if (doc) {
    ddx_sb_t b;
    ddx_sb_init(&b);
    ddx_sb_printf(&b, "**`%s`** (DeepSpeed)\n\n%s\n", path, doc);
    r = lsp_markup(b.s, ddx_lsp_range(d->text, s->encoding, ks, ke));
    ddx_sb_free(&b);
  }
  free(path);
  return r;
}

static void lsp_md_list(ddx_sb_t *b, const char *title, const ddx_strs_t *l, bool numbered) {
  if (!l->n) return;
  ddx_sb_printf(b, "\n**%s**\n\n", title);
  for (size_t i = 0; i < l->n; i++) {
    if (numbered)
      ddx_sb_printf(b, "%zu. %s\n", i + 1, l->v[i]);
    else
      ddx_sb_printf(b, "- %s\n", l->v[i]);
  }
}

/* The facts of a hit as a sentence people read, for the common OOM facts,
 * then every fact as name = value. */
static void lsp_md_facts(ddx_sb_t *b, const ddx_hit_t *h) {
  if (!h->nfacts) return;
  const char *tried = ddx_hit_fact(h, "tried"), *gpu = ddx_hit_fact(h, "gpu");
  const char *total = ddx_hit_fact(h, "total"), *fr = ddx_hit_fact(h, "free");
  ddx_sb_puts(b, "\n**This occurrence:** ");
  if (tried && total && fr)
    ddx_sb_printf(b, "tried to allocate %s on GPU %s: %s total, %s free. ", tried,
                  gpu && *gpu ? gpu : "?", total, fr);
  for (uint16_t i = 0; i < h->nfacts; i++)
    ddx_sb_printf(b, "%s`%s` = %s", i ? ", " : "", h->facts[i].name, h->facts[i].value);
  ddx_sb_puts(b, "\n");
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
  ddx_sb_printf(&b, "### %s\n\n[`%s`](%s) · %s · %s\n\n", rule->title, rule->id, href ? href : "",
                ddx_severity_name((int)rule->severity), rule->phase ? rule->phase : "");
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
    if (inc->hit->meta.host[0]) ddx_sb_printf(&b, " (host %s)", inc->hit->meta.host);
    ddx_sb_printf(&b, ", confidence %.2f; %llu event%s on ranks %s.\n", inc->confidence,
                  (unsigned long long)inc->count, inc->count == 1 ? "" : "s", rs[0] ? rs : "?");
    if (inc->rank_note) ddx_sb_printf(&b, "\n_%s_\n", inc->rank_note);
  } else if (coll) {
    ddx_rankset_format(&coll->ranks, rs, sizeof rs);
    ddx_sb_printf(&b, "**Collateral** of `%s` (line %llu): %llu event%s on ranks %s. %s\n",
                  of->rule->id, (unsigned long long)of->hit->line, (unsigned long long)coll->count,
                  coll->count == 1 ? "" : "s", rs[0] ? rs : "?", coll->why ? coll->why : "");
  } else {
    ddx_sb_puts(&b, "Matched line (not the diagnosis of this log).\n");
  }
  if (hit) lsp_md_facts(&b, hit);
  if (rule->summary) ddx_sb_printf(&b, "\n**Summary** %s\n", rule->summary);
  if (rule->mechanism) ddx_sb_printf(&b, "\n**Why** %s\n", rule->mechanism);
  lsp_md_list(&b, "Confirm", &rule->checklist, false);
  lsp_md_list(&b, "Fix", &rule->fix, true);
  if (rule->verify) ddx_sb_printf(&b, "\n**Verify** %s\n", rule->verify);
  if (inc && inc->nmissing) {
    ddx_sb_puts(&b, "\n**Missing facts**\n\n");
    for (size_t i = 0; i < inc->nmissing; i++)
      ddx_sb_printf(&b, "- %s\n", inc->missing[i]);
  }
  if (rule->related.n) {
    ddx_sb_puts(&b, "\n**Related:** ");
    for (size_t i = 0; i < rule->related.n; i++)
      ddx_sb_printf(&b, "%s`%s`", i ? ", " : "", rule->related.v[i]);
    ddx_sb_puts(&b, "\n");
  }
  json_t *range = line < r->text->nlines ? ddx_lsp_line_range(r->text, s->encoding, line) : NULL;
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
    return lsp_hover_config(s, d, ddx_lsp_offset(d->text, s->encoding, line, ch));
  return json_null();
}
