/* config.c - the language server's side of ds_config.json (see
 * ddx/lsp.h): the one file that calls the engine's config parser and patch
 * planner (ddx/dsconfig.h), plus the dotted key path under the cursor for
 * hovers (ddx/jsonpos.h's tolerant scan: it must work on a file that does
 * not parse yet, while the user types); the ds_config checks (ddx/dscheck.h)
 * of open JSON documents published as diagnostics, with the facts they use
 * (settings, a model config.json in the workspace, the last diagnosed log);
 * and what a log says about the job (DeepSpeed's config print). */
#include "internal.h"

#include "ddx/file.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "ddx/dscheck.h"
#include "ddx/dsconfig.h"
#include "ddx/jsonpos.h"
#include "ddx/line.h"

struct ddx_lsp_cfg {
  ddx_dsconfig_t *c;
};

ddx_lsp_cfg_t *ddx_lsp_cfg_parse(const char *text, size_t len, char *why, size_t whycap) {
  ddx_error_t err = {0};
  ddx_dsconfig_t *c = NULL;
  if (ddx_dsconfig_parse(&c, text, len, &err)) {
    snprintf(why, whycap, "%s", err.msg[0] ? err.msg : "not plain JSON");
    return NULL;
  }
  ddx_lsp_cfg_t *w = malloc(sizeof *w);
  if (!w) {
    ddx_dsconfig_free(c);
    snprintf(why, whycap, "out of memory");
    return NULL;
  }
  w->c = c;
  return w;
}

void ddx_lsp_cfg_free(ddx_lsp_cfg_t *c) {
  if (!c) return;
  ddx_dsconfig_free(c->c);
  free(c);
}

bool ddx_lsp_cfg_is_deepspeed(const ddx_lsp_cfg_t *c) {
  return c && ddx_dsconfig_is_deepspeed(c->c);
}

int ddx_lsp_cfg_plan(const ddx_lsp_cfg_t *c, const char *patch_json, ddx_lsp_edit_t **edits,
                     size_t *nedits, char **title, char *why, size_t whycap) {
  ddx_patch_plan_t plan = {0};
  ddx_error_t err = {0};
  *edits = NULL;
  *nedits = 0;
  *title = NULL;
  if (ddx_dsconfig_plan(c->c, patch_json, &plan, &err)) {
    snprintf(why, whycap, "%s", err.msg[0] ? err.msg : "not applicable");
    return -1;
  }
  ddx_lsp_edit_t *e = calloc(plan.nedits ? plan.nedits : 1, sizeof *e);
  if (!e) {
    ddx_patch_plan_free(&plan);
    snprintf(why, whycap, "out of memory");
    return -1;
  }
  /* Ownership of the edit texts and the title moves to the caller. */
  for (size_t i = 0; i < plan.nedits; i++) {
    e[i].start = plan.edits[i].start;
    e[i].end = plan.edits[i].end;
    e[i].text = plan.edits[i].text;
    plan.edits[i].text = NULL;
  }
  *edits = e;
  *nedits = plan.nedits;
  *title = plan.title;
  plan.title = NULL;
  ddx_patch_plan_free(&plan);
  return 0;
}

void ddx_lsp_edits_free(ddx_lsp_edit_t *e, size_t n) {
  for (size_t i = 0; e && i < n; i++)
    free(e[i].text);
  free(e);
}

/* ------------------------------------------------------ key under a cursor */

char *ddx_lsp_json_key_at(const char *text, size_t len, size_t off, size_t *kstart, size_t *kend) {
  return ddx_jp_key_at(text, len, off, kstart, kend);
}

/* ------------------------------------------------------ ds_config checks */

static int lsp_cmp_cstr(const void *a, const void *b) {
  return strcmp(*(char *const *)a, *(char *const *)b);
}

const ddx_dscheck_t *ddx_lsp_cfg_schema(ddx_lsp_server_t *s) {
  if (s->cfg.dscheck || s->cfg.dscheck_tried) return s->cfg.dscheck;
  s->cfg.dscheck_tried = true;
  const char *dirs[2] = {s->rules_default, NULL};
#ifdef DDX_SOURCE_RULES_DIR
  dirs[1] = DDX_SOURCE_RULES_DIR;
#endif
  ddx_error_t err = {0};
  for (size_t i = 0; i < 2 && !s->cfg.dscheck; i++) {
    if (!dirs[i]) continue;
    ddx_sb_t p;
    ddx_sb_init(&p);
    ddx_sb_printf(&p, "%s/ds_config.schema.json", dirs[i]);
    if (p.s && ddx_dscheck_load(&s->cfg.dscheck, p.s, &err) == 0)
      ddx_lsp_log(s, DDX_LSP_LOG_INFO, "ds_config schema: %zu keys from %s",
                  ddx_dscheck_nkeys(s->cfg.dscheck), p.s);
    ddx_sb_free(&p);
  }
  if (!s->cfg.dscheck)
    ddx_lsp_log(s, DDX_LSP_LOG_ERROR, "ds_config checks are off: %s",
                err.msg[0] ? err.msg : "no rules folder");
  return s->cfg.dscheck;
}

/* The search for a model's config.json, on the thread pool: it lists and
 * reads files, which the loop thread never does. The worker has its own
 * copy of the folders and the setting, and writes only its result. */
typedef struct lsp_model_job {
  uv_work_t req;
  ddx_lsp_server_t *s;
  char **folders;        /* NULL-terminated copy */
  char *setting;         /* ddx.memory.modelConfig, or NULL */
  double params;         /* out */
  char from[512];        /* out */
  ddx_mem_model_t shape; /* out: the shape for the memory model */
  bool shape_ok;         /* out */
  char shape_from[600];  /* out */
  char setting_err[300]; /* out: why the setting's file gave nothing */
} lsp_model_job_t;

/* One candidate: read the safe way (ddx_file_read: a regular file of at
 * most 1 MiB; a FIFO or a link to /dev/stdin is refused, not waited on);
 * true when it names a model (its parameter count and shape are kept). */
static bool lsp_model_try(lsp_model_job_t *j, const char *path, bool named) {
  size_t len = 0;
  char *txt = NULL;
  ddx_error_t err = {0};
  ddx_file_opts_t o = {.max_bytes = (size_t)1 << 20, .what = "model config"};
  if (ddx_file_read(path, &o, &txt, &len, &err) != 0) {
    if (named) snprintf(j->setting_err, sizeof j->setting_err, "%.290s", err.msg);
    return false;
  }
  char how[256], shape_how[256];
  double params = 0;
  bool p = ddx_dscheck_model_params(txt, len, &params, how, sizeof how);
  bool m = ddx_mem_model_from_hf(txt, len, &j->shape, shape_how, sizeof shape_how);
  free(txt);
  if (!p && !m) {
    if (named)
      snprintf(j->setting_err, sizeof j->setting_err,
               "it holds no model shape (hidden_size, num_hidden_layers, ...)");
    memset(&j->shape, 0, sizeof j->shape);
    return false;
  }
  if (p) {
    j->params = params;
    snprintf(j->from, sizeof j->from, "%.250s (%.200s)", path, how);
  }
  j->shape_ok = m;
  if (m) snprintf(j->shape_from, sizeof j->shape_from, "%.300s (%.250s)", path, shape_how);
  if (!m) memset(&j->shape, 0, sizeof j->shape);
  return true;
}

/* The setting's file first, else a model's config.json at the top of a
 * workspace folder or one level below (sorted, first that names a model
 * wins). */
static void lsp_model_work(uv_work_t *req) {
  lsp_model_job_t *j = req->data;
  if (j->setting && lsp_model_try(j, j->setting, true)) return;
  bool found = false;
  for (char **fp = j->folders; *fp && !found; fp++) {
    char **names = NULL;
    size_t n = 0, cap = 0;
    DIR *dp = opendir(*fp);
    struct dirent *e;
    ddx_sb_t p;
    ddx_sb_init(&p);
    ddx_sb_printf(&p, "%s/config.json", *fp);
    if (p.s) {
      names = malloc(8 * sizeof *names);
      cap = names ? 8 : 0;
      if (names) names[n++] = ddx_sb_take(&p);
    }
    ddx_sb_free(&p);
    while (dp && (e = readdir(dp)) && n < 200) {
      if (e->d_name[0] == '.' || !strcmp(e->d_name, "node_modules")) continue;
      if (n == cap) {
        size_t nc = cap ? cap * 2 : 8;
        char **nv = realloc(names, nc * sizeof *nv);
        if (!nv) break;
        names = nv;
        cap = nc;
      }
      ddx_sb_init(&p);
      ddx_sb_printf(&p, "%s/%s/config.json", *fp, e->d_name);
      if (p.s) names[n++] = ddx_sb_take(&p);
      ddx_sb_free(&p);
    }
    if (dp) closedir(dp);
    if (n > 1) qsort(names + 1, n - 1, sizeof *names, lsp_cmp_cstr);
    for (size_t k = 0; k < n; k++) {
      if (!found) found = lsp_model_try(j, names[k], false);
      free(names[k]);
    }
    free(names);
  }
}

static void lsp_model_job_free(lsp_model_job_t *j) {
  for (char **f = j->folders; f && *f; f++)
    free(*f);
  free(j->folders);
  free(j->setting);
  free(j);
}

static void lsp_find_model(ddx_lsp_server_t *s);

static void lsp_model_done(uv_work_t *req, int status) {
  lsp_model_job_t *j = req->data;
  ddx_lsp_server_t *s = j->s;
  s->cfg.model_job = NULL;
  if (s->life.exiting || status == UV_ECANCELED) {
    lsp_model_job_free(j);
    return;
  }
  if (!s->cfg.model_scanned) { /* the folders changed meanwhile: search again */
    lsp_model_job_free(j);
    lsp_find_model(s);
    return;
  }
  bool changed = j->params != s->cfg.model_ws_params || j->shape_ok != s->cfg.model_shape_ok ||
                 strcmp(j->from, s->cfg.model_ws_from) ||
                 strcmp(j->shape_from, s->cfg.model_shape_from);
  bool waiting = s->cfg.model_waiting;
  s->cfg.model_waiting = false;
  s->cfg.model_ws_params = j->params;
  snprintf(s->cfg.model_ws_from, sizeof s->cfg.model_ws_from, "%s", j->from);
  s->cfg.model_shape = j->shape;
  s->cfg.model_shape_ok = j->shape_ok;
  snprintf(s->cfg.model_shape_from, sizeof s->cfg.model_shape_from, "%s", j->shape_from);
  if (j->setting && j->setting_err[0])
    ddx_lsp_log(s, DDX_LSP_LOG_WARNING, "ddx.memory.modelConfig %s: %s", j->setting,
                j->setting_err);
  lsp_model_job_free(j);
  if (changed || waiting) ddx_lsp_cfg_check_all(s); /* configs waiting for the model */
}

/* Starts the search (once at a time); its result arrives in
 * lsp_model_done. */
static void lsp_find_model(ddx_lsp_server_t *s) {
  s->cfg.model_scanned = true;
  if (s->cfg.model_job) return;
  lsp_model_job_t *j = calloc(1, sizeof *j);
  if (j) j->folders = calloc(s->ws.nfolders + 1, sizeof *j->folders);
  bool ok =
      j && j->folders && (!s->ws.mem_model_path || (j->setting = strdup(s->ws.mem_model_path)));
  for (size_t f = 0; ok && f < s->ws.nfolders; f++)
    ok = (j->folders[f] = strdup(s->ws.folders[f])) != NULL;
  if (ok) {
    j->s = s;
    j->req.data = j;
    ok = uv_queue_work(&s->loop, &j->req, lsp_model_work, lsp_model_done) == 0;
  }
  if (!ok) {
    if (j) lsp_model_job_free(j);
    return;
  }
  s->cfg.model_job = j;
}

void ddx_lsp_cfg_facts(ddx_lsp_server_t *s, ddx_dscheck_facts_t *f, ddx_lsp_cfg_src_t *src) {
  memset(f, 0, sizeof *f);
  if (!s->cfg.model_scanned) lsp_find_model(s); /* the shape is wanted even with the setting */
  if (s->ws.model_params > 0) {
    f->params = s->ws.model_params;
    snprintf(src->params, sizeof src->params, "the setting ddx.model.parameters");
  } else {
    if (s->cfg.model_ws_params > 0) {
      f->params = s->cfg.model_ws_params;
      snprintf(src->params, sizeof src->params, "%s", s->cfg.model_ws_from);
    }
  }
  if (f->params > 0) f->params_from = src->params;
  if (s->ws.world_size > 0) {
    f->dp_world_size = s->ws.world_size;
    snprintf(src->world, sizeof src->world, "the setting ddx.world.size");
  } else if (s->cfg.log_facts.dp_world_size > 0) {
    f->dp_world_size = s->cfg.log_facts.dp_world_size;
    snprintf(src->world, sizeof src->world, "%.250s", s->cfg.log_facts_from);
  }
  if (f->dp_world_size > 0) f->world_from = src->world;
  if (s->cfg.log_facts.gpu_total > 0) {
    f->gpu_total_bytes = s->cfg.log_facts.gpu_total;
    snprintf(src->gpu, sizeof src->gpu, "the OOM in %.250s", s->cfg.log_facts_from);
    f->gpu_from = src->gpu;
  }
}

/* ds_config*.json, *deepspeed*.json, and the ZeRO stage files of the
 * DeepSpeed and HF examples: zero2.json, zero3_offload.json,
 * zero_stage3.json, zero++.json (not zero_shot_results.json). */
static bool lsp_cfg_name_is_ds(const char *name) {
  size_t n = strlen(name);
  bool json = (n > 5 && !strcasecmp(name + n - 5, ".json")) ||
              (n > 6 && !strcasecmp(name + n - 6, ".jsonc"));
  if (!json) return false;
  if (!strncasecmp(name, "ds_config", 9)) return true;
  for (const char *p = name; *p; p++)
    if (!strncasecmp(p, "deepspeed", 9)) return true;
  if (strncasecmp(name, "zero", 4)) return false;
  const char *p = name + 4;
  if (*p == '_' || *p == '-') p++;
  return (*p >= '0' && *p <= '9') || !strncasecmp(p, "stage", 5) || !strncasecmp(p, "pp", 2) ||
         !strncmp(p, "++", 2) || !strncasecmp(p, "offload", 7) || !strncasecmp(p, "infinity", 8);
}

bool ddx_lsp_cfg_doc_is_ds(const ddx_lsp_doc_t *d, const ddx_dscheck_result_t *res) {
  if (d->kind != DDX_LSP_DOC_JSON) return false;
  return lsp_cfg_name_is_ds(ddx_lsp_basename(d->uri)) || (res && res->is_deepspeed);
}

static void lsp_cfg_publish(ddx_lsp_server_t *s, ddx_lsp_doc_t *d, json_t *diags) {
  ddx_lsp_notify(s, "textDocument/publishDiagnostics",
                 json_pack("{s:s, s:I, s:o}", "uri", d->uri, "version", (json_int_t)d->version,
                           "diagnostics", diags));
}

static json_t *lsp_cfg_memory_diag(ddx_lsp_server_t *s, const ddx_lsp_doc_t *d);

void ddx_lsp_cfg_check_doc(ddx_lsp_server_t *s, ddx_lsp_doc_t *d) {
  if (d->kind != DDX_LSP_DOC_JSON || s->life.exiting || s->life.shutdown) return;
  /* Decide cheaply first: a vocab.json, tokenizer.json, package.json or a
   * model's config.json is never read as a tree here. A document that had
   * diagnostics is checked once more, to clear them (or to keep saying
   * where a config being typed stops parsing). */
  bool small = d->text->len <= DDX_LSP_CFG_MAX_BYTES;
  bool ds = small && (ddx_lsp_cfg_doc_is_ds(d, NULL) ||
                      ddx_dsconfig_text_is_deepspeed(d->text->data, d->text->len));
  if (!ds && !d->cfg_published) return;
  const ddx_dscheck_t *schema = small ? ddx_lsp_cfg_schema(s) : NULL;
  if (!schema) {
    if (d->cfg_published) lsp_cfg_publish(s, d, json_array());
    d->cfg_published = false;
    return;
  }
  if ((s->ws.model_params <= 0 || s->ws.mem_model_path) &&
      (!s->cfg.model_scanned || s->cfg.model_job)) {
    /* The model's config.json is being looked for (on a worker): this
     * document is checked when it is found or not (lsp_model_done). */
    if (!s->cfg.model_scanned) lsp_find_model(s);
    if (s->cfg.model_job) {
      s->cfg.model_waiting = true;
      return;
    }
  }
  ddx_dscheck_facts_t f;
  ddx_lsp_cfg_src_t src;
  ddx_lsp_cfg_facts(s, &f, &src);
  ddx_dscheck_result_t r;
  ddx_error_t err = {0};
  int rc = ddx_dscheck_run(schema, d->text->data, d->text->len, &f, &r, &err);
  json_t *diags = json_array();
  bool show;
  if (rc == DDX_EINVAL) {
    /* A DeepSpeed config being typed: say where it stops parsing. */
    show = ds || d->cfg_published;
    size_t at = r.error_offset < d->text->len ? r.error_offset : d->text->len;
    char msg[2300];
    snprintf(msg, sizeof msg, "not valid JSON for DeepSpeed (hjson comments are fine): %s",
             err.msg);
    if (show)
      json_array_append_new(diags, json_pack("{s:o, s:i, s:s, s:s, s:o}", "range",
                                             ddx_lsp_range(d->text, s->life.encoding, at,
                                                           at < d->text->len ? at + 1 : at),
                                             "severity", 1, "code", "ds-config.syntax", "source",
                                             "ddx", "message", ddx_lsp_jstr(msg, strlen(msg))));
  } else if (rc == 0) {
    show = ds;
    for (size_t i = 0; show && i < r.n && json_array_size(diags) < DDX_LSP_MAX_DIAGNOSTICS; i++) {
      const ddx_dscheck_finding_t *x = &r.findings[i];
      json_t *data = json_pack("{s:s}", "path", x->path);
      json_t *patch = x->patch_json ? json_loads(x->patch_json, 0, NULL) : NULL;
      if (patch) json_object_set_new(data, "patch", patch);
      json_array_append_new(
          diags, json_pack("{s:o, s:i, s:s, s:s, s:o, s:o}", "range",
                           ddx_lsp_range(d->text, s->life.encoding, x->start, x->end), "severity",
                           x->severity, "code", x->code, "source", "ddx", "message",
                           ddx_lsp_jstr(x->message, strlen(x->message)), "data", data));
    }
    /* the memory model: a warning when the predicted peak exceeds the GPU */
    bool states = false; /* dscheck's: the model states alone do not fit */
    for (size_t i = 0; i < json_array_size(diags); i++)
      states |= !strcmp(json_string_value(json_object_get(json_array_get(diags, i), "code")),
                        "ds-config.memory");
    json_t *mem = show && !states ? lsp_cfg_memory_diag(s, d) : NULL;
    if (mem) json_array_append_new(diags, mem);
  } else {
    show = false;
    ddx_lsp_log(s, DDX_LSP_LOG_ERROR, "ds_config check of %s failed: %s", d->uri, err.msg);
  }
  ddx_dscheck_result_free(&r);
  if (show || d->cfg_published) {
    lsp_cfg_publish(s, d, diags);
    d->cfg_published = show;
  } else {
    json_decref(diags);
  }
}

void ddx_lsp_cfg_check_all(ddx_lsp_server_t *s) {
  for (ddx_lsp_doc_t *d = s->docs; d; d = d->next)
    if (d->kind == DDX_LSP_DOC_JSON) ddx_lsp_cfg_check_doc(s, d);
}

void ddx_lsp_cfg_doc_closed(ddx_lsp_server_t *s, ddx_lsp_doc_t *d) {
  if (d->cfg_published)
    ddx_lsp_notify(s, "textDocument/publishDiagnostics",
                   json_pack("{s:s, s:[]}", "uri", d->uri, "diagnostics"));
  d->cfg_published = false;
}

/* ------------------------------------------------------------- log facts */

static const char *lsp_find(const char *h, size_t n, const char *lit) {
  size_t k = strlen(lit);
  const char *end = h + n;
  while ((size_t)(end - h) >= k) {
    const char *p = memchr(h, lit[0], (size_t)(end - h) - k + 1);
    if (!p) return NULL;
    if (!memcmp(p, lit, k)) return p;
    h = p + 1;
  }
  return NULL;
}

#define LSP_DS_JSON_MAX ((size_t)256 << 10)

/* The last value printed after lit ("train_micro_batch_size_per_gpu ....
 * 8", "Instantaneous batch size per device = 8", "\"key\": 8"), lit
 * starting a word; 0 none. */
static long long lsp_last_count(const char *text, size_t len, const char *lit) {
  const char *p = text, *end = text + len;
  size_t k = strlen(lit);
  long long last = 0;
  while ((p = lsp_find(p, (size_t)(end - p), lit))) {
    bool word = p == text || strchr(" \t\"[", p[-1]);
    const char *q = p + k;
    while (q < end && strchr(" .=:\"", *q) && q - (p + k) < 64)
      q++;
    long long v = 0;
    const char *d0 = q;
    while (q < end && *q >= '0' && *q <= '9' && v < 100000000)
      v = v * 10 + (*q++ - '0');
    bool whole = q == end || !((*q >= '0' && *q <= '9') || *q == '.' || *q == 'e');
    if (word && q > d0 && whole && v > 0) last = v;
    p += k;
  }
  return last;
}

void ddx_lsp_logfacts_from_text(const char *text, size_t len, ddx_lsp_logfacts_t *f) {
  /* the batch the job ran with: DeepSpeed's config print (after the HF
   * Trainer filled "auto" in), else the Trainer's own banner */
  long long m = lsp_last_count(text, len, "train_micro_batch_size_per_gpu");
  if (!m) m = lsp_last_count(text, len, "Instantaneous batch size per device");
  long long g = lsp_last_count(text, len, "gradient_accumulation_steps");
  if (!g) g = lsp_last_count(text, len, "Gradient Accumulation steps");
  if (m) f->micro_batch = m;
  if (g) f->grad_accum = g;
  /* DeepSpeedConfig.print: "  world_size ................... 8" (the
   * data-parallel size); the last print wins. */
  const char *p = text, *end = text + len;
  while ((p = lsp_find(p, (size_t)(end - p), "world_size ."))) {
    const char *q = p + 11;
    bool word = p == text || p[-1] == ' ' || p[-1] == '\t';
    while (q < end && (*q == '.' || *q == ' '))
      q++;
    long long v = 0;
    const char *d0 = q;
    while (q < end && *q >= '0' && *q <= '9' && v < 100000000)
      v = v * 10 + (*q++ - '0');
    if (word && q > d0 && v > 0) f->dp_world_size = v;
    p += 11;
  }
  /* DeepSpeedConfig.print_user_config: "  json = {" and the JSON (indent
   * 4) on the following lines, each possibly behind a launcher prefix. */
  const char *last = NULL;
  p = text;
  while ((p = lsp_find(p, (size_t)(end - p), "json = {"))) {
    last = p;
    p += 8;
  }
  if (!last) return;
  ddx_sb_t b;
  ddx_sb_init(&b);
  int depth = 0;
  bool in_str = false, esc = false, done = false;
  const char *line = last + 7; /* the '{' */
  bool first = true;
  char norm[DDX_LINE_MAX + 1];
  while (line < end && !done && b.len < LSP_DS_JSON_MAX) {
    const char *nl = memchr(line, '\n', (size_t)(end - line));
    const char *le = nl ? nl : end;
    const char *seg = line;
    size_t sn = (size_t)(le - line);
    if (sn && seg[sn - 1] == '\r') sn--;
    if (!first) {
      ddx_line_meta_t meta;
      ddx_line_meta_init(&meta);
      sn = ddx_line_normalize(seg, sn, norm, sizeof norm, &meta);
      seg = norm;
    }
    first = false;
    for (size_t i = 0; i < sn && !done; i++) {
      char c = seg[i];
      ddx_sb_putn(&b, &c, 1);
      if (in_str) {
        if (esc)
          esc = false;
        else if (c == '\\')
          esc = true;
        else if (c == '"')
          in_str = false;
      } else if (c == '"') {
        in_str = true;
      } else if (c == '{' || c == '[') {
        depth++;
      } else if (c == '}' || c == ']') {
        done = --depth == 0;
      }
    }
    ddx_sb_puts(&b, "\n");
    line = nl ? nl + 1 : end;
  }
  if (done) {
    free(f->ds_json);
    f->ds_json = ddx_sb_take(&b);
  }
  ddx_sb_free(&b);
}

void ddx_lsp_logfacts_from_scan(const ddx_scan_t *scan, ddx_lsp_logfacts_t *f) {
  const ddx_hit_t *hits = scan->hits.data;
  for (size_t i = 0; i < scan->hits.len; i++) {
    const char *total = ddx_hit_fact(&hits[i], "total");
    double v;
    if (total && ddx_parse_quantity(total, &v) && v > f->gpu_total) f->gpu_total = v;
    const char *dp = ddx_hit_fact(&hits[i], "dp_world_size");
    if (dp && !f->dp_world_size && atoll(dp) > 0) f->dp_world_size = atoll(dp);
  }
}

void ddx_lsp_cfg_log_diagnosed(ddx_lsp_server_t *s, const char *uri, const ddx_lsp_result_t *r) {
  const ddx_lsp_logfacts_t *f = &r->facts;
  if (!(f->gpu_total > 0) && f->dp_world_size <= 0) return;
  bool changed = f->gpu_total != s->cfg.log_facts.gpu_total ||
                 f->dp_world_size != s->cfg.log_facts.dp_world_size ||
                 strcmp(s->cfg.log_facts_from, ddx_lsp_basename(uri));
  s->cfg.log_facts.gpu_total = f->gpu_total;
  s->cfg.log_facts.dp_world_size = f->dp_world_size;
  s->cfg.log_facts.micro_batch = f->micro_batch;
  s->cfg.log_facts.grad_accum = f->grad_accum;
  snprintf(s->cfg.log_facts_from, sizeof s->cfg.log_facts_from, "%s", ddx_lsp_basename(uri));
  if (changed) ddx_lsp_cfg_check_all(s);
}

/* Every leaf of want ("auto" matches anything) equals the one of got. */
static bool lsp_json_covers(json_t *want, json_t *got, size_t *leaves) {
  if (json_is_string(want) && !strcmp(json_string_value(want), "auto")) {
    ++*leaves;
    return got != NULL;
  }
  if (json_is_object(want)) {
    if (!json_is_object(got)) return false;
    const char *k;
    json_t *v;
    json_object_foreach(want, k,
                        v) if (!lsp_json_covers(v, json_object_get(got, k), leaves)) return false;
    return true;
  }
  if (!got) return false;
  ++*leaves;
  if (json_is_number(want) && json_is_number(got))
    return json_number_value(want) == json_number_value(got);
  return json_equal(want, got);
}

bool ddx_lsp_cfg_matches_print(const char *text, size_t len, const char *printed) {
  json_t *want = json_loadb(text, len, 0, NULL);
  json_t *got = json_loads(printed, 0, NULL);
  size_t leaves = 0;
  bool ok = json_is_object(want) && json_is_object(got) && lsp_json_covers(want, got, &leaves) &&
            leaves >= 3;
  json_decref(want);
  json_decref(got);
  return ok;
}

/* --------------------------------------------- the HF Trainer's flags */

int ddx_lsp_cfg_plan_hf(const ddx_lsp_cfg_t *c, const char *patch_json, const ddx_lsp_logfacts_t *f,
                        char **flags, bool *exact, char *why, size_t whycap) {
  ddx_hf_known_t known = {.micro_batch = f ? f->micro_batch : 0,
                          .grad_accum = f ? f->grad_accum : 0};
  ddx_error_t err = {0};
  if (ddx_dsconfig_plan_hf(c->c, patch_json, &known, flags, exact, &err)) {
    snprintf(why, whycap, "%s", err.msg[0] ? err.msg : "not the HF Trainer's");
    return -1;
  }
  return 0;
}

bool ddx_lsp_cfg_hf_flags_after(const ddx_lsp_cfg_t *c, const ddx_lsp_edit_t *edits, size_t n,
                                char *buf, size_t cap) {
  ddx_text_edit_t *e = calloc(n ? n : 1, sizeof *e);
  if (!e) return false;
  for (size_t i = 0; i < n; i++)
    e[i] = (ddx_text_edit_t){.start = edits[i].start, .end = edits[i].end, .text = edits[i].text};
  ddx_patch_plan_t plan = {.edits = e, .nedits = n};
  bool any = ddx_dsconfig_hf_flags_after(c->c, &plan, buf, cap);
  free(e);
  return any;
}

/* ------------------------------------------------------ the memory model */

void ddx_lsp_mem_inputs(ddx_lsp_server_t *s, const ddx_lsp_result_t *log, ddx_mem_inputs_t *in,
                        ddx_lsp_mem_src_t *src) {
  memset(in, 0, sizeof *in);
  src->world[0] = src->gpu[0] = 0;
  if (!s->cfg.model_scanned) lsp_find_model(s);
  if (s->cfg.model_shape_ok) {
    in->model = s->cfg.model_shape;
    in->model_from = s->cfg.model_shape_from;
  }
  if (s->ws.model_params > 0) in->model.params = s->ws.model_params; /* ddx.model.parameters */
  in->seq_len = s->ws.mem_seq_len > 0 ? s->ws.mem_seq_len : 0;
  in->flash_attention = -1;
  in->checkpointing = -1;
  const ddx_lsp_logfacts_t *f = log ? &log->facts : &s->cfg.log_facts;
  const char *from = log ? "the log" : s->cfg.log_facts_from;
  if (s->ws.world_size > 0) {
    in->world_size = s->ws.world_size;
    snprintf(src->world, sizeof src->world, "the setting ddx.world.size");
  } else if (f->dp_world_size > 0) {
    in->world_size = f->dp_world_size;
    snprintf(src->world, sizeof src->world, "DeepSpeed's config print in %.250s", from);
  } else if (log && log->scan.layout && log->scan.layout->world_size > 0) {
    in->world_size = log->scan.layout->world_size;
    snprintf(src->world, sizeof src->world, "the launcher's layout in the log");
  } else if (log) {
    int32_t top = -1; /* the ranks the diagnosis saw: at least that many */
    for (size_t i = 0; i < log->diag.n; i++) {
      const ddx_rankset_t *r = &log->diag.incidents[i].ranks;
      for (size_t k = 0; k < r->n; k++)
        if (r->v[k] > top) top = r->v[k];
    }
    if (top > 0) {
      in->world_size = top + 1;
      snprintf(src->world, sizeof src->world, "the ranks seen in the log (0-%d)", (int)top);
    }
  }
  if (in->world_size > 0) in->world_from = src->world;
  if (f->gpu_total > 0) {
    in->gpu_bytes = f->gpu_total;
    snprintf(src->gpu, sizeof src->gpu, "the OOM in %.250s", from);
  } else if (s->ws.mem_gpu_gib > 0) {
    in->gpu_bytes = s->ws.mem_gpu_gib * 1073741824.0;
    snprintf(src->gpu, sizeof src->gpu, "the setting ddx.memory.gpuMemoryGiB");
  }
  if (in->gpu_bytes > 0) in->gpu_from = src->gpu;
}

/* The estimate of a ds_config text; false when it is no JSON object. */
static bool lsp_cfg_estimate(ddx_lsp_server_t *s, const ddx_lsp_text_t *text, ddx_mem_estimate_t *e,
                             ddx_mem_inputs_t *in, ddx_lsp_mem_src_t *src) {
  ddx_error_t lerr = {0};
  json_t *cfg =
      ddx_mem_config_load(text->data, text->len, &lerr); /* hjson, as DeepSpeed reads it */
  if (!json_is_object(cfg)) {
    json_decref(cfg);
    return false;
  }
  ddx_lsp_mem_inputs(s, NULL, in, src);
  /* an "auto" micro batch is the one the last diagnosed log ran with */
  json_t *m = json_object_get(cfg, "train_micro_batch_size_per_gpu");
  if (json_is_string(m) && s->cfg.log_facts.micro_batch > 0)
    in->micro_batch = (double)s->cfg.log_facts.micro_batch;
  ddx_error_t err = {0};
  int rc = ddx_mem_estimate(cfg, in, e, &err);
  json_decref(cfg);
  return rc == 0;
}

char *ddx_lsp_cfg_memory_markdown(ddx_lsp_server_t *s, const ddx_lsp_doc_t *d) {
  if (d->text->len > DDX_LSP_CFG_MAX_BYTES) return NULL;
  ddx_mem_estimate_t e;
  ddx_mem_inputs_t in;
  ddx_lsp_mem_src_t src;
  if (!lsp_cfg_estimate(s, d->text, &e, &in, &src)) return NULL;
  ddx_sb_t b;
  ddx_sb_init(&b);
  ddx_sb_puts(&b, "**Peak memory per GPU** (ddx memory model)\n\n");
  char *md = ddx_mem_markdown(&e);
  if (md) ddx_sb_puts(&b, md);
  free(md);
  ddx_sb_puts(&b, "\n");
  if (in.model_from)
    ddx_sb_printf(&b, "\n- Model: %s\n", in.model_from);
  else
    ddx_sb_puts(&b, "\n- Model: unknown: set `ddx.memory.modelConfig` to the model's config.json "
                    "(or keep one in the workspace)\n");
  if (in.seq_len > 0)
    ddx_sb_printf(&b, "- Sequence length: %.0f (ddx.memory.seqLen)\n", in.seq_len);
  else
    ddx_sb_puts(&b, "- Sequence length: unknown: set `ddx.memory.seqLen`\n");
  if (in.world_from)
    ddx_sb_printf(&b, "- World size: %lld, from %s\n", (long long)in.world_size, in.world_from);
  if (in.gpu_from)
    ddx_sb_printf(&b, "- GPU: %.1f GiB, from %s\n", in.gpu_bytes / 1073741824.0, in.gpu_from);
  else
    ddx_sb_puts(&b,
                "- GPU memory: unknown: set `ddx.memory.gpuMemoryGiB` (or diagnose an OOM log)\n");
  return ddx_sb_take(&b);
}

/* The warning of a ds_config document whose predicted peak exceeds the GPU
 * (verdict OOM), at its zero_optimization key (else its first byte). */
static json_t *lsp_cfg_memory_diag(ddx_lsp_server_t *s, const ddx_lsp_doc_t *d) {
  ddx_mem_estimate_t e;
  ddx_mem_inputs_t in;
  ddx_lsp_mem_src_t src;
  if (!lsp_cfg_estimate(s, d->text, &e, &in, &src) || e.verdict != DDX_MEM_OOM) return NULL;
  char v[300], msg[900];
  ddx_mem_verdict_text(&e, v, sizeof v);
  snprintf(msg, sizeof msg,
           "%s per GPU (model %.300s; GPU from %.200s): the run is predicted to run out of memory; "
           "hover for the terms",
           v, in.model_from ? in.model_from : "unknown", in.gpu_from ? in.gpu_from : "unknown");
  const char *key = "\"zero_optimization\"";
  size_t at = 0, end = d->text->len ? 1 : 0, k = strlen(key);
  for (size_t i = 0; i + k <= d->text->len; i++)
    if (!memcmp(d->text->data + i, key, k)) {
      at = i;
      end = i + k;
      break;
    }
  return json_pack("{s:o, s:i, s:s, s:s, s:o}", "range",
                   ddx_lsp_range(d->text, s->life.encoding, at, end), "severity", 2, "code",
                   "ds-config.memory-peak", "source", "ddx", "message",
                   ddx_lsp_jstr(msg, strlen(msg)));
}

void ddx_lsp_cfg_model_changed(ddx_lsp_server_t *s) {
  s->cfg.model_scanned = false;
}

void ddx_lsp_cfgstate_free(ddx_lsp_server_t *s) {
  ddx_dscheck_free(s->cfg.dscheck);
  free(s->cfg.log_facts.ds_json);
}
