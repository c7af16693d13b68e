/* lsp_actions.c - textDocument/codeAction (see ddx/lsp.h): a log
 * diagnostic's rule carries config_patches; each is planned by the engine
 * (ddx/dsconfig.h through lsp_config.c) against the project's
 * ds_config.json and offered as a WorkspaceEdit the user can undo. The
 * server never writes a file.
 *
 * The config is found in this order: open documents, a path the log names
 * (--deepspeed X, --deepspeed_config X, deepspeed=X, "deepspeed": "X" in
 * printed arguments), the workspace file whose values DeepSpeed printed
 * ("json = {...}" of DeepSpeedEngine's configuration print; "auto" values
 * match what the HF Trainer filled in), the workspace folders
 * (ds_config*.json, *deepspeed*.json, then any JSON with DeepSpeed keys; the
 * top two levels only), the setting ddx.dsConfig.path. Only files inside
 * the workspace folders are read, except the one the user named in the
 * setting.
 *
 * On a ds_config document itself, the quick fixes of its own diagnostics
 * (ddx/dscheck.h via lsp_config.c): a misspelt or deprecated key renamed,
 * planned like any other patch, so the edit keeps the file's style. */
#define _GNU_SOURCE
#include "ddx/lsp.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#define LSP_CFG_MAX_BYTES ((size_t)4 << 20)
#define LSP_CFG_MAX_FILES 400

bool ddx_lsp_path_in_workspace(const ddx_lsp_server_t *s, const char *path) {
  char *real = realpath(path, NULL);
  if (!real) return false;
  bool in = false;
  for (size_t i = 0; i < s->nfolders && !in; i++) {
    size_t n = strlen(s->folders[i]);
    in = !strncmp(real, s->folders[i], n) &&
         (real[n] == '/' || real[n] == 0 || (n == 1 && s->folders[i][0] == '/'));
  }
  free(real);
  return in;
}

/* A ds_config candidate: its text (open document or file), URI and the
 * document version when open. */
typedef struct lsp_cfgsrc {
  char *uri;
  char *path;
  ddx_lsp_text_t *text;
  int64_t version;
  bool open;
  const char *how; /* how it was found, for explanations */
} lsp_cfgsrc_t;

static void lsp_cfgsrc_clear(lsp_cfgsrc_t *c) {
  free(c->uri);
  free(c->path);
  ddx_lsp_text_unref(c->text);
  memset(c, 0, sizeof *c);
}

static ddx_lsp_text_t *lsp_read_small(const char *path) {
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return NULL;
  struct stat st;
  ddx_lsp_text_t *t = NULL;
  if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && (size_t)st.st_size <= LSP_CFG_MAX_BYTES) {
    char *buf = malloc((size_t)st.st_size + 1);
    size_t got = 0;
    while (buf && got < (size_t)st.st_size) {
      ssize_t n = read(fd, buf + got, (size_t)st.st_size - got);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) break;
      got += (size_t)n;
    }
    if (buf) t = ddx_lsp_text_new(buf, got);
    free(buf);
  }
  close(fd);
  return t;
}

/* True when the text parses as a DeepSpeed config. */
static bool lsp_text_is_ds(const ddx_lsp_text_t *t) {
  char why[256];
  ddx_lsp_cfg_t *c = ddx_lsp_cfg_parse(t->data, t->len, why, sizeof why);
  bool ds = ddx_lsp_cfg_is_deepspeed(c);
  ddx_lsp_cfg_free(c);
  return ds;
}

static bool lsp_cfg_from_file(ddx_lsp_server_t *s, const char *path, const char *how,
                              lsp_cfgsrc_t *out, bool need_ds) {
  char *real = realpath(path, NULL);
  if (!real) return false;
  /* A document open in the editor wins over its bytes on disk. */
  char *uri = ddx_lsp_path_to_uri(real);
  for (ddx_lsp_doc_t *d = s->docs; d && uri; d = d->next) {
    char *dreal = d->path ? realpath(d->path, NULL) : NULL;
    bool same = dreal && !strcmp(dreal, real);
    free(dreal);
    if (same) {
      out->uri = strdup(d->uri);
      out->path = real;
      out->text = ddx_lsp_text_ref(d->text);
      out->version = d->version;
      out->open = true;
      out->how = how;
      free(uri);
      return true;
    }
  }
  ddx_lsp_text_t *t = lsp_read_small(real);
  if (!t || (need_ds && !lsp_text_is_ds(t))) {
    ddx_lsp_text_unref(t);
    free(uri);
    free(real);
    return false;
  }
  out->uri = uri;
  out->path = real;
  out->text = t;
  out->how = how;
  return true;
}

/* memmem and strcasestr are GNU extensions; the build is plain POSIX. */
static bool lsp_icontains(const char *h, const char *n) {
  size_t k = strlen(n);
  for (; *h; h++)
    if (!strncasecmp(h, n, k)) return true;
  return false;
}

static bool lsp_name_is_ds(const char *name) {
  size_t n = strlen(name);
  if (n < 5 || strcasecmp(name + n - 5, ".json")) return false;
  return !strncasecmp(name, "ds_config", 9) || lsp_icontains(name, "deepspeed");
}

static int lsp_cmp_str(const void *a, const void *b) {
  return strcmp(*(char *const *)a, *(char *const *)b);
}

static void lsp_list_json_rec(const char *dir, int depth, char ***v, size_t *n) {
  DIR *dp = opendir(dir);
  if (!dp) return;
  struct dirent *e;
  while ((e = readdir(dp)) && *n < LSP_CFG_MAX_FILES) {
    if (e->d_name[0] == '.' || !strcmp(e->d_name, "node_modules")) continue;
    size_t len = strlen(dir) + strlen(e->d_name) + 2;
    char *full = malloc(len);
    if (!full) break;
    snprintf(full, len, "%s/%s", dir, e->d_name);
    struct stat st;
    if (stat(full, &st) == 0 && S_ISDIR(st.st_mode) && depth == 0) {
      lsp_list_json_rec(full, 1, v, n);
      free(full);
    } else if (stat(full, &st) == 0 && S_ISREG(st.st_mode) && strlen(e->d_name) > 5 &&
               !strcasecmp(e->d_name + strlen(e->d_name) - 5, ".json")) {
      char **nv = realloc(*v, (*n + 1) * sizeof *nv);
      if (!nv) {
        free(full);
        break;
      }
      *v = nv;
      (*v)[(*n)++] = full;
    } else {
      free(full);
    }
  }
  closedir(dp);
}

/* JSON files in dir and its direct subfolders (hidden folders and
 * node_modules skipped), sorted, at most LSP_CFG_MAX_FILES. */
static void lsp_list_json(const char *dir, char ***v, size_t *n) {
  lsp_list_json_rec(dir, 0, v, n);
  if (*n) qsort(*v, *n, sizeof **v, lsp_cmp_str);
}

/* The JSON files of every workspace folder (lsp_list_json, folder by
 * folder), listed once per lookup and only when a step needs them. */
typedef struct lsp_ws_json {
  char **v;
  size_t n;
  bool listed;
} lsp_ws_json_t;

static lsp_ws_json_t *lsp_ws_json(ddx_lsp_server_t *s, lsp_ws_json_t *w) {
  for (size_t f = 0; !w->listed && f < s->nfolders; f++) {
    char **v = NULL;
    size_t n = 0;
    lsp_list_json(s->folders[f], &v, &n);
    char **nv = n ? realloc(w->v, (w->n + n) * sizeof *nv) : w->v;
    for (size_t k = 0; k < n; k++) {
      if (nv)
        nv[w->n++] = v[k];
      else
        free(v[k]);
    }
    if (nv) w->v = nv;
    free(v);
  }
  w->listed = true;
  return w;
}

static void lsp_ws_json_free(lsp_ws_json_t *w) {
  for (size_t k = 0; k < w->n; k++)
    free(w->v[k]);
  free(w->v);
}

/* Paths the log names as its DeepSpeed config: launcher flags, HF
 * TrainingArguments printed as a repr (deepspeed=X) or as JSON / a dict
 * ("deepspeed": "X", 'deepspeed': 'X'). */
static size_t lsp_log_paths(const ddx_lsp_text_t *t, char out[][512], size_t max) {
  static const char *const flags[] = {"--deepspeed_config", "--deepspeed",
                                      "deepspeed=", "\"deepspeed\":", "'deepspeed':"};
  size_t n = 0;
  for (size_t f = 0; f < sizeof flags / sizeof *flags && n < max; f++) {
    const char *p = t->data, *end = t->data + t->len;
    size_t k = strlen(flags[f]);
    while (n < max && (p = memmem(p, (size_t)(end - p), flags[f], k))) {
      const char *q = p + k;
      p = q;
      if (f < 2) {
        if (q < end && *q == '_') continue; /* --deepspeed_config seen as --deepspeed */
        if (q >= end || (*q != ' ' && *q != '=')) continue;
        q++;
      }
      while (q < end && *q == ' ')
        q++;
      if (q < end && (*q == '"' || *q == '\'')) q++;
      const char *e = q;
      while (e < end && !strchr(" \t\r\n\"',;)]}", *e))
        e++;
      size_t len = (size_t)(e - q);
      if (len < 6 || len >= 512 || *q == '-' || !memmem(q, len, ".json", 5)) continue;
      memcpy(out[n], q, len);
      out[n][len] = 0;
      bool dup = false;
      for (size_t i = 0; i < n && !dup; i++)
        dup = !strcmp(out[i], out[n]);
      if (!dup) n++;
    }
  }
  return n;
}

static bool lsp_find_config_in(ddx_lsp_server_t *s, ddx_lsp_doc_t *log, lsp_ws_json_t *ws,
                               lsp_cfgsrc_t *out) {
  /* 1. open documents */
  for (ddx_lsp_doc_t *d = s->docs; d; d = d->next) {
    if (d->kind != DDX_LSP_DOC_JSON) continue;
    if (lsp_name_is_ds(ddx_lsp_basename(d->uri)) || lsp_text_is_ds(d->text)) {
      out->uri = strdup(d->uri);
      out->path = d->path ? strdup(d->path) : NULL;
      out->text = ddx_lsp_text_ref(d->text);
      out->version = d->version;
      out->open = true;
      out->how = "open in the editor";
      return true;
    }
  }
  /* 2. a path named in the log, relative to the log's folder or a
   * workspace folder; only inside the workspace. */
  if (log->named_of != log->text) { /* once per text, not per request */
    if (!log->named && !(log->named = malloc(8 * sizeof *log->named))) return false;
    log->nnamed = lsp_log_paths(log->text, log->named, 8);
    ddx_lsp_text_unref(log->named_of);
    log->named_of = ddx_lsp_text_ref(log->text);
  }
  char(*named)[512] = log->named;
  size_t nn = log->nnamed;
  for (size_t i = 0; i < nn; i++) {
    size_t nbases = s->nfolders + 2;
    for (size_t b = 0; b < nbases; b++) {
      ddx_sb_t cand;
      ddx_sb_init(&cand);
      if (b == 0 && named[i][0] == '/') {
        ddx_sb_puts(&cand, named[i]);
      } else if (b == 1 && named[i][0] != '/' && log->path) {
        const char *slash = strrchr(log->path, '/');
        ddx_sb_printf(&cand, "%.*s/%s", slash ? (int)(slash - log->path) : 1,
                      slash ? log->path : ".", named[i]);
      } else if (b >= 2 && named[i][0] != '/') {
        ddx_sb_printf(&cand, "%s/%s", s->folders[b - 2], named[i]);
      }
      bool found = cand.len && ddx_lsp_path_in_workspace(s, cand.s) &&
                   lsp_cfg_from_file(s, cand.s, "named in the log", out, false);
      ddx_sb_free(&cand);
      if (found) return true;
    }
    /* The launcher ran elsewhere (/workspace/ds_config.json on a pod): the
     * same file name in the workspace is the next best guess. */
    const char *base = ddx_lsp_basename(named[i]);
    const lsp_ws_json_t *w = lsp_ws_json(s, ws);
    for (size_t k = 0; k < w->n; k++)
      if (!strcmp(ddx_lsp_basename(w->v[k]), base) &&
          lsp_cfg_from_file(s, w->v[k], "named in the log", out, false))
        return true;
  }
  /* 3. the workspace file whose values DeepSpeed printed in the log */
  const char *printed = log->result ? log->result->facts.ds_json : NULL;
  if (printed) {
    const lsp_ws_json_t *w = lsp_ws_json(s, ws);
    for (size_t k = 0; k < w->n; k++) {
      ddx_lsp_text_t *t = lsp_read_small(w->v[k]);
      bool match = t && ddx_lsp_cfg_matches_print(t->data, t->len, printed);
      ddx_lsp_text_unref(t);
      if (match && lsp_cfg_from_file(s, w->v[k], "printed by DeepSpeed in the log", out, false))
        return true;
    }
  }
  /* 4. workspace files: by name, then by content */
  const lsp_ws_json_t *w = lsp_ws_json(s, ws);
  for (int pass = 0; pass < 2; pass++)
    for (size_t k = 0; k < w->n; k++) {
      bool by_name = lsp_name_is_ds(ddx_lsp_basename(w->v[k]));
      if ((pass == 0 ? by_name : !by_name) &&
          lsp_cfg_from_file(s, w->v[k], "found in the workspace", out, pass == 1))
        return true;
    }
  /* 5. the setting */
  if (s->dsconfig_path && lsp_cfg_from_file(s, s->dsconfig_path, "ddx.dsConfig.path", out, false))
    return true;
  return false;
}

static bool lsp_find_config(ddx_lsp_server_t *s, ddx_lsp_doc_t *log, lsp_cfgsrc_t *out) {
  lsp_ws_json_t ws = {0};
  bool found = lsp_find_config_in(s, log, &ws, out);
  lsp_ws_json_free(&ws);
  return found;
}

/* ------------------------------------------------------------ code actions */

static json_t *lsp_workspace_edit(ddx_lsp_server_t *s, const lsp_cfgsrc_t *cfg,
                                  const ddx_lsp_edit_t *e, size_t n) {
  json_t *edits = json_array();
  for (size_t i = 0; i < n; i++)
    json_array_append_new(edits,
                          json_pack("{s:o, s:o}", "range",
                                    ddx_lsp_range(cfg->text, s->encoding, e[i].start, e[i].end),
                                    "newText", ddx_lsp_jstr(e[i].text, strlen(e[i].text))));
  if (s->cap_doc_changes) {
    json_t *ver = cfg->open ? json_integer(cfg->version) : json_null();
    return json_pack("{s:[{s:{s:s, s:o}, s:o}]}", "documentChanges", "textDocument", "uri",
                     cfg->uri, "version", ver, "edits", edits);
  }
  json_t *changes = json_object();
  json_object_set_new(changes, cfg->uri, edits);
  return json_pack("{s:o}", "changes", changes);
}

static void lsp_disabled(ddx_lsp_server_t *s, json_t *out, const char *title, const char *reason,
                         json_t *diag) {
  if (!s->cap_disabled) return; /* a client that cannot show why gets nothing */
  json_t *a = json_pack("{s:o, s:s, s:{s:o}}", "title", ddx_lsp_jstr(title, strlen(title)), "kind",
                        "quickfix", "disabled", "reason", ddx_lsp_jstr(reason, strlen(reason)));
  if (diag) json_object_set_new(a, "diagnostics", json_pack("[O]", diag));
  json_array_append_new(out, a);
}

/* Actions for one rule's config_patches against the config found (or the
 * reason there is none). */
static void lsp_rule_actions(ddx_lsp_server_t *s, const ddx_rule_t *rule, json_t *diag,
                             const lsp_cfgsrc_t *cfg, bool have_cfg, bool *preferred, json_t *out) {
  json_t *patches = json_loads(rule->config_patches_json, 0, NULL);
  if (!json_is_array(patches) || !json_array_size(patches)) {
    json_decref(patches);
    return;
  }
  char title[512], why[2048];
  if (!have_cfg) {
    snprintf(title, sizeof title, "ddx: fix %s in ds_config.json", rule->id);
    lsp_disabled(s, out, title,
                 "no DeepSpeed config found: open your ds_config.json, or set ddx.dsConfig.path "
                 "(the log names none "
                 "inside the workspace folders)",
                 diag);
    json_decref(patches);
    return;
  }
  const char *name = cfg->path ? ddx_lsp_basename(cfg->path) : ddx_lsp_basename(cfg->uri);
  ddx_lsp_cfg_t *c = ddx_lsp_cfg_parse(cfg->text->data, cfg->text->len, why, sizeof why);
  if (!c) {
    snprintf(title, sizeof title, "ddx: fix %s in %s", rule->id, name);
    char reason[2600];
    snprintf(reason, sizeof reason, "%s cannot be edited safely: %s", name, why);
    lsp_disabled(s, out, title, reason, diag);
    json_decref(patches);
    return;
  }
  size_t i;
  json_t *p;
  json_array_foreach(patches, i, p) {
    const char *ptitle = json_string_value(json_object_get(p, "title"));
    char *pj = json_dumps(p, JSON_COMPACT);
    ddx_lsp_edit_t *edits = NULL;
    size_t nedits = 0;
    char *ptitle2 = NULL;
    int rc = pj ? ddx_lsp_cfg_plan(c, pj, &edits, &nedits, &ptitle2, why, sizeof why) : -1;
    free(pj);
    snprintf(title, sizeof title, "ddx: %s (%s)",
             ptitle2  ? ptitle2
             : ptitle ? ptitle
                      : "apply the fix",
             name);
    if (rc == 0 && nedits) {
      json_t *a = json_pack("{s:o, s:s, s:o}", "title", ddx_lsp_jstr(title, strlen(title)), "kind",
                            "quickfix", "edit", lsp_workspace_edit(s, cfg, edits, nedits));
      if (diag) json_object_set_new(a, "diagnostics", json_pack("[O]", diag));
      if (!*preferred) {
        json_object_set_new(a, "isPreferred",
                            json_true()); /* the cheapest rung of the rule's ladder */
        *preferred = true;
      }
      json_array_append_new(out, a);
    } else {
      lsp_disabled(s, out, title, rc ? why : "the fix changes nothing in this config", diag);
    }
    ddx_lsp_edits_free(edits, nedits);
    free(ptitle2);
  }
  ddx_lsp_cfg_free(c);
  json_decref(patches);
}

/* Quick fixes of a ds_config document's own diagnostics: the findings with
 * a patch whose range meets [a, b], or those of the diagnostics sent. */
static void lsp_config_actions(ddx_lsp_server_t *s, ddx_lsp_doc_t *d, size_t a, size_t b,
                               json_t *ctx, json_t *out) {
  const ddx_dscheck_t *schema =
      d->text->len <= DDX_LSP_CFG_MAX_BYTES ? ddx_lsp_cfg_schema(s) : NULL;
  if (!schema) return;
  ddx_dscheck_facts_t f;
  ddx_lsp_cfg_src_t src;
  ddx_lsp_cfg_facts(s, &f, &src);
  ddx_dscheck_result_t r;
  ddx_error_t err = {0};
  if (ddx_dscheck_run(schema, d->text->data, d->text->len, &f, &r, &err)) {
    ddx_dscheck_result_free(&r);
    return;
  }
  json_t *sent = json_object_get(ctx, "diagnostics");
  lsp_cfgsrc_t cfg = {.uri = d->uri,
                      .path = d->path,
                      .text = d->text,
                      .version = d->version,
                      .open = true,
                      .how = "open in the editor"};
  ddx_lsp_cfg_t *c = NULL;
  char why[2048] = "";
  bool parsed = false;
  for (size_t i = 0; i < r.n; i++) {
    const ddx_dscheck_finding_t *x = &r.findings[i];
    if (!x->patch_json) continue;
    json_t *match = NULL;
    size_t k;
    json_t *dg;
    json_array_foreach(sent, k, dg) {
      const char *code = json_string_value(json_object_get(dg, "code"));
      json_t *rs = json_object_get(json_object_get(dg, "range"), "start");
      size_t l, ch;
      if (code && !strcmp(code, x->code) && ddx_lsp_get_position(rs, &l, &ch) &&
          ddx_lsp_offset(d->text, s->encoding, l, ch) == x->start)
        match = dg;
    }
    if (!match && (x->end < a || x->start > b)) continue;
    if (!parsed) {
      parsed = true;
      c = ddx_lsp_cfg_parse(d->text->data, d->text->len, why, sizeof why);
    }
    json_t *p = json_loads(x->patch_json, 0, NULL);
    const char *ptitle = json_string_value(json_object_get(p, "title"));
    char title[600];
    snprintf(title, sizeof title, "ddx: %s", ptitle ? ptitle : "rename the key");
    json_decref(p);
    ddx_lsp_edit_t *edits = NULL;
    size_t nedits = 0;
    char *t2 = NULL;
    char pwhy[2048];
    if (!c) {
      char reason[2200];
      snprintf(reason, sizeof reason, "this file cannot be edited safely: %s", why);
      lsp_disabled(s, out, title, reason, match);
    } else if (ddx_lsp_cfg_plan(c, x->patch_json, &edits, &nedits, &t2, pwhy, sizeof pwhy) == 0 &&
               nedits) {
      json_t *act = json_pack("{s:o, s:s, s:o, s:b}", "title", ddx_lsp_jstr(title, strlen(title)),
                              "kind", "quickfix", "edit",
                              lsp_workspace_edit(s, &cfg, edits, nedits), "isPreferred", 1);
      if (match) json_object_set_new(act, "diagnostics", json_pack("[O]", match));
      json_array_append_new(out, act);
    } else {
      lsp_disabled(s, out, title, pwhy, match);
    }
    ddx_lsp_edits_free(edits, nedits);
    free(t2);
  }
  ddx_lsp_cfg_free(c);
  ddx_dscheck_result_free(&r);
}

json_t *ddx_lsp_code_action(ddx_lsp_server_t *s, json_t *params, ddx_lsp_call_t *call) {
  const char *uri =
      json_string_value(json_object_get(json_object_get(params, "textDocument"), "uri"));
  json_t *range = json_object_get(params, "range");
  size_t l0, c0, l1, c1;
  if (!uri || !ddx_lsp_get_position(json_object_get(range, "start"), &l0, &c0) ||
      !ddx_lsp_get_position(json_object_get(range, "end"), &l1, &c1))
    return ddx_lsp_fail(call, DDX_LSP_INVALID_PARAMS,
                        "codeAction needs textDocument.uri and a range");
  json_t *ctx = json_object_get(params, "context");
  json_t *only = json_object_get(ctx, "only");
  json_t *out = json_array();
  if (json_is_array(only) && json_array_size(only)) {
    bool quick = false;
    size_t i;
    json_t *k;
    json_array_foreach(only, i, k) if (json_is_string(k) &&
                                       !strncmp(json_string_value(k), "quickfix", 8)) quick = true;
    if (!quick) return out;
  }
  ddx_lsp_doc_t *d = ddx_lsp_doc_find(s, uri);
  if (d && d->kind == DDX_LSP_DOC_JSON) {
    lsp_config_actions(s, d, ddx_lsp_offset(d->text, s->encoding, l0, c0),
                       ddx_lsp_offset(d->text, s->encoding, l1, c1), ctx, out);
    return out;
  }
  if (!d || d->kind != DDX_LSP_DOC_LOG || !d->result) return out;
  ddx_lsp_result_t *r = d->result;
  /* The rules: those of ddx diagnostics in the context, else those of the
   * incidents whose initiating line lies in the range. */
  const ddx_rule_t *rules[32];
  json_t *diags[32];
  size_t nr = 0;
  size_t i;
  json_t *dg;
  json_array_foreach(json_object_get(ctx, "diagnostics"), i, dg) {
    const char *src = json_string_value(json_object_get(dg, "source"));
    const char *code = json_string_value(json_object_get(dg, "code"));
    if (!src || strcmp(src, "ddx") || !code || nr == 32) continue;
    const ddx_rule_t *rule = ddx_catalog_find(r->cat->cat, code);
    bool dup = false;
    for (size_t k = 0; k < nr && !dup; k++)
      dup = rules[k] == rule;
    if (rule && !dup) {
      rules[nr] = rule;
      diags[nr++] = dg;
    }
  }
  if (!nr) {
    for (size_t k = 0; k < r->diag.n && nr < 32; k++) {
      const ddx_incident_t *inc = &r->diag.incidents[k];
      if (inc->hit && inc->hit->line >= l0 + 1 && inc->hit->line <= l1 + 1) {
        rules[nr] = inc->rule;
        diags[nr++] = NULL;
      }
    }
  }
  bool any_patches = false;
  for (size_t k = 0; k < nr; k++)
    any_patches |= rules[k]->config_patches_json != NULL;
  if (!any_patches) return out;
  lsp_cfgsrc_t cfg = {0};
  bool have = lsp_find_config(s, d, &cfg);
  bool preferred = false;
  for (size_t k = 0; k < nr; k++)
    lsp_rule_actions(s, rules[k], diags[k], &cfg, have, &preferred, out);
  lsp_cfgsrc_clear(&cfg);
  return out;
}
