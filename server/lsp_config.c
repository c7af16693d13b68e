/* lsp_config.c - the language server's side of ds_config.json (see
 * ddx/lsp.h): the one file that calls the engine's config parser and patch
 * planner (ddx/dsconfig.h), plus a tolerant scan that finds the dotted key
 * path under the cursor for hovers (it must work on a file that does not
 * parse yet, while the user types). */
#include "ddx/lsp.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ddx/dsconfig.h"

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

#define LSP_KEY_DEPTH 32

typedef struct lsp_kframe {
  bool object;
  bool want_key;       /* object: the next string is a key */
  size_t kstart, kend; /* the current key's text (without quotes) */
} lsp_kframe_t;

static char *lsp_key_path(const char *text, const lsp_kframe_t *st, size_t depth, size_t ks,
                          size_t ke) {
  ddx_sb_t b;
  ddx_sb_init(&b);
  /* st[i] for i < depth-1 holds the key its child container sits under. */
  for (size_t i = 0; i + 1 < depth; i++) {
    if (!st[i].object || st[i].kend <= st[i].kstart) continue;
    if (b.len) ddx_sb_puts(&b, ".");
    ddx_sb_putn(&b, text + st[i].kstart, st[i].kend - st[i].kstart);
  }
  if (b.len) ddx_sb_puts(&b, ".");
  ddx_sb_putn(&b, text + ks, ke - ks);
  return ddx_sb_take(&b);
}

char *ddx_lsp_json_key_at(const char *text, size_t len, size_t off, size_t *kstart, size_t *kend) {
  lsp_kframe_t st[LSP_KEY_DEPTH];
  size_t depth = 0;
  size_t i = 0;
  while (i < len) {
    char c = text[i];
    if (c == '{' || c == '[') {
      if (depth == LSP_KEY_DEPTH) return NULL;
      st[depth++] = (lsp_kframe_t){.object = c == '{', .want_key = c == '{'};
      i++;
    } else if (c == '}' || c == ']') {
      if (depth) depth--;
      if (i >= off) return NULL;
      i++;
    } else if (c == ',') {
      if (depth && st[depth - 1].object) st[depth - 1].want_key = true;
      i++;
    } else if (c == ':') {
      if (depth && st[depth - 1].object) st[depth - 1].want_key = false;
      i++;
    } else if (c == '"') {
      size_t s0 = i + 1, e = s0;
      while (e < len && text[e] != '"' && text[e] != '\n')
        e += text[e] == '\\' ? 2 : 1;
      if (e > len) e = len;
      bool is_key = depth && st[depth - 1].object && st[depth - 1].want_key;
      if (is_key) {
        st[depth - 1].kstart = s0;
        st[depth - 1].kend = e;
      }
      /* The cursor on a key, or on a scalar value: the key it belongs to. */
      if (off >= i && off <= e && depth && st[depth - 1].object &&
          st[depth - 1].kend > st[depth - 1].kstart) {
        if (kstart) *kstart = st[depth - 1].kstart;
        if (kend) *kend = st[depth - 1].kend;
        return lsp_key_path(text, st, depth, st[depth - 1].kstart, st[depth - 1].kend);
      }
      i = e < len ? e + 1 : len;
    } else if (c == ' ' || c == '\t' || c == '\r' || c == '\n') {
      i++;
    } else {
      size_t e = i;
      while (e < len && !strchr(",}]: \t\r\n", text[e]))
        e++;
      if (off >= i && off < e && depth && st[depth - 1].object && !st[depth - 1].want_key &&
          st[depth - 1].kend > st[depth - 1].kstart) {
        if (kstart) *kstart = st[depth - 1].kstart;
        if (kend) *kend = st[depth - 1].kend;
        return lsp_key_path(text, st, depth, st[depth - 1].kstart, st[depth - 1].kend);
      }
      i = e > i ? e : i + 1;
    }
    if (i > off + 1 && depth == 0) return NULL;
  }
  return NULL;
}
