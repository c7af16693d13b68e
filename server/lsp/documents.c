/* documents.c - the open documents (see internal.h): the store, and
 * what kind a document is (a log, a JSON document, other) from its name,
 * its content and its languageId, in that order of trust. */
#define _GNU_SOURCE /* memmem */
#include "internal.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "ddx/dsconfig.h"
#include "ddx/file.h"

/* -------------------------------------------------------------- documents */

static bool lsp_ends_with(const char *s, const char *suffix) {
  size_t n = strlen(s), k = strlen(suffix);
  return n >= k && strcasecmp(s + n - k, suffix) == 0;
}

/* The kind a file name decides (a .log is a log whatever languageId a
 * one-language client such as eglot sends), or -1. */
static int lsp_kind_by_name(const char *base) {
  if (ddx_is_log_name(base, true)) return DDX_LSP_DOC_LOG;
  if (lsp_ends_with(base, ".json") || lsp_ends_with(base, ".jsonc")) return DDX_LSP_DOC_JSON;
  return -1;
}

/* The kind the text shows, or -1: a DeepSpeed config is JSON; a text
 * holding a traceback or the lines of a launcher, NCCL, DeepSpeed or
 * PyTorch distributed is a log (logs often start with "[" or, as JSON
 * lines, with "{"); another text that starts with an object is JSON. Only
 * the first 256 KiB are searched. */
#define LSP_SNIFF_BYTES ((size_t)256 << 10)
static int lsp_kind_by_content(const char *text, size_t len) {
  size_t i = 0;
  if (len >= 3 && !memcmp(text, "\xef\xbb\xbf", 3)) i = 3;
  while (i < len && isspace((unsigned char)text[i]))
    i++;
  /* a DeepSpeed config is JSON; JSON lines of a structured log are not */
  bool object = i < len && text[i] == '{';
  if (object && ddx_dsconfig_text_is_deepspeed(text, len)) return DDX_LSP_DOC_JSON;
  static const char *const signs[] = {"Traceback (most recent call last)",
                                      "[rank",
                                      "torch.distributed",
                                      "NCCL",
                                      "deepspeed",
                                      "DeepSpeed",
                                      "CUDA out of memory",
                                      "OutOfMemoryError",
                                      "ChildFailedError",
                                      "torchrun",
                                      NULL};
  size_t n = len < LSP_SNIFF_BYTES ? len : LSP_SNIFF_BYTES;
  for (size_t k = 0; signs[k]; k++)
    if (memmem(text, n, signs[k], strlen(signs[k]))) return DDX_LSP_DOC_LOG;
  return object ? DDX_LSP_DOC_JSON : -1;
}

/* A document's kind: its file name first, then its languageId where that
 * is specific, then its content where the languageId is generic
 * (plaintext, log, none) or contradicts it (a traceback sent as json by a
 * one-language client; a pasted traceback in an untitled buffer that
 * VS Code's language detection called python). A named file of a code
 * language (train.py, config.yaml) is never a log. */
int ddx_lsp_doc_kind(const char *uri, const char *language, const char *text, size_t len) {
  const char *base = ddx_lsp_basename(uri);
  int k = lsp_kind_by_name(base);
  if (k >= 0) return k;
  int c = lsp_kind_by_content(text, len);
  if (!strcmp(language, "json") || !strcmp(language, "jsonc"))
    return c == DDX_LSP_DOC_LOG ? DDX_LSP_DOC_LOG : DDX_LSP_DOC_JSON;
  if (!*language || !strcmp(language, "log") || !strcmp(language, "plaintext") ||
      !strcmp(language, "text"))
    return c == DDX_LSP_DOC_JSON ? DDX_LSP_DOC_JSON : DDX_LSP_DOC_LOG;
  if (!strchr(base, '.') && c >= 0) return c;
  return DDX_LSP_DOC_OTHER;
}

ddx_lsp_doc_t *ddx_lsp_doc_find(ddx_lsp_server_t *s, const char *uri) {
  for (ddx_lsp_doc_t *d = s->docs; d; d = d->next)
    if (!strcmp(d->uri, uri)) return d;
  return NULL;
}

void ddx_lsp_doc_free(ddx_lsp_doc_t *d) {
  if (!d) return;
  if (d->job) atomic_store(&d->job->cancel, 1); /* the job no longer finds its document */
  free(d->uri);
  free(d->path);
  free(d->language);
  ddx_lsp_text_unref(d->text);
  ddx_lsp_text_unref(d->named_of);
  free(d->named);
  ddx_lsp_result_free(d->result);
  free(d);
}

void ddx_lsp_doc_unlink(ddx_lsp_server_t *s, ddx_lsp_doc_t *d) {
  for (ddx_lsp_doc_t **pp = &s->docs; *pp; pp = &(*pp)->next) {
    if (*pp == d) {
      *pp = d->next;
      return;
    }
  }
}
