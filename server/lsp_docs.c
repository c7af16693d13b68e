/* lsp_docs.c - the open documents of the language server (see ddx/lsp.h):
 * immutable texts with a line index, conversion between byte offsets and
 * LSP positions in the negotiated encoding, file URIs, and didOpen /
 * didChange (full and incremental) / didClose / didSave.
 *
 * Lines end at \n, \r\n or a bare \r exactly as the engine counts them
 * (ddx/scan.h), so engine line N is LSP line N-1 on the same text. */
#include "ddx/lsp.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* ------------------------------------------------------------------ texts */

ddx_lsp_text_t *ddx_lsp_text_new(const char *data, size_t len) {
  ddx_lsp_text_t *t = calloc(1, sizeof *t);
  if (!t) return NULL;
  t->refs = 1;
  t->data = malloc(len + 1);
  size_t cap = 1024;
  t->starts = malloc(cap * sizeof *t->starts);
  if (!t->data || !t->starts) goto fail;
  if (len) memcpy(t->data, data, len);
  t->data[len] = 0;
  t->len = len;
  t->starts[0] = 0;
  t->nlines = 1;
  const char *p = t->data, *end = t->data + len;
  while (p < end) {
    /* Jump to the next terminator quickly: most bytes are neither. */
    const char *nl = memchr(p, '\n', (size_t)(end - p));
    const char *cr = memchr(p, '\r', (size_t)((nl ? nl : end) - p));
    const char *q = cr ? cr : nl;
    if (!q) break;
    size_t next = (size_t)(q - t->data) + 1;
    if (*q == '\r' && q + 1 < end && q[1] == '\n') next++;
    if (t->nlines == cap) {
      cap *= 2;
      size_t *ns = realloc(t->starts, cap * sizeof *ns);
      if (!ns) goto fail;
      t->starts = ns;
    }
    t->starts[t->nlines++] = next;
    p = t->data + next;
  }
  return t;
fail:
  free(t->data);
  free(t->starts);
  free(t);
  return NULL;
}

ddx_lsp_text_t *ddx_lsp_text_ref(ddx_lsp_text_t *t) {
  if (t) t->refs++;
  return t;
}

void ddx_lsp_text_unref(ddx_lsp_text_t *t) {
  if (!t || --t->refs > 0) return;
  free(t->data);
  free(t->starts);
  free(t);
}

size_t ddx_lsp_line_end(const ddx_lsp_text_t *t, size_t line) {
  if (line >= t->nlines) return t->len;
  size_t start = t->starts[line];
  if (line + 1 == t->nlines) return t->len;
  size_t e = t->starts[line + 1];
  if (e > start && t->data[e - 1] == '\n') {
    e--;
    if (e > start && t->data[e - 1] == '\r') e--;
  } else if (e > start && t->data[e - 1] == '\r') {
    e--;
  }
  return e;
}

size_t ddx_lsp_line_of(const ddx_lsp_text_t *t, size_t offset) {
  size_t lo = 0, hi = t->nlines;
  while (hi - lo > 1) {
    size_t mid = lo + (hi - lo) / 2;
    if (t->starts[mid] <= offset)
      lo = mid;
    else
      hi = mid;
  }
  return lo;
}

/* Length in bytes of the code point at p (at most n bytes), and its length
 * in UTF-16 code units. An invalid byte counts as one byte and one unit,
 * the U+FFFD an editor shows for it. */
static size_t lsp_cp(const unsigned char *p, size_t n, size_t *units) {
  *units = 1;
  unsigned c = p[0];
  size_t k = c < 0x80                 ? 1
             : c >= 0xC2 && c <= 0xDF ? 2
             : c >= 0xE0 && c <= 0xEF ? 3
             : c >= 0xF0 && c <= 0xF4 ? 4
                                      : 0;
  if (k <= 1 || k > n) return 1;
  for (size_t i = 1; i < k; i++)
    if ((p[i] & 0xC0) != 0x80) return 1;
  if (k == 3 && ((c == 0xE0 && p[1] < 0xA0) || (c == 0xED && p[1] >= 0xA0))) return 1;
  if (k == 4 && ((c == 0xF0 && p[1] < 0x90) || (c == 0xF4 && p[1] >= 0x90))) return 1;
  if (k == 4) *units = 2;
  return k;
}

size_t ddx_lsp_offset(const ddx_lsp_text_t *t, int enc, size_t line, size_t character) {
  if (line >= t->nlines) return t->len; /* past the end: the end, as LSP says */
  size_t start = t->starts[line], end = ddx_lsp_line_end(t, line);
  if (enc == DDX_LSP_ENC_UTF8) return character > end - start ? end : start + character;
  size_t p = start, units = 0;
  while (p < end && units < character) {
    size_t u;
    size_t k = lsp_cp((const unsigned char *)t->data + p, end - p, &u);
    if (units + u > character) break; /* inside a surrogate pair: its start */
    units += u;
    p += k;
  }
  return p;
}

static size_t lsp_units(const ddx_lsp_text_t *t, int enc, size_t start, size_t off) {
  if (enc == DDX_LSP_ENC_UTF8) return off - start;
  size_t p = start, units = 0;
  while (p < off) {
    size_t u;
    p += lsp_cp((const unsigned char *)t->data + p, off - p, &u);
    units += u;
  }
  return units;
}

json_t *ddx_lsp_position(const ddx_lsp_text_t *t, int enc, size_t offset) {
  if (offset > t->len) offset = t->len;
  size_t line = ddx_lsp_line_of(t, offset);
  size_t end = ddx_lsp_line_end(t, line);
  if (offset > end) offset = end; /* inside a \r\n */
  return json_pack("{s:I, s:I}", "line", (json_int_t)line, "character",
                   (json_int_t)lsp_units(t, enc, t->starts[line], offset));
}

json_t *ddx_lsp_range(const ddx_lsp_text_t *t, int enc, size_t start, size_t end) {
  return json_pack("{s:o, s:o}", "start", ddx_lsp_position(t, enc, start), "end",
                   ddx_lsp_position(t, enc, end));
}

json_t *ddx_lsp_line_range(const ddx_lsp_text_t *t, int enc, size_t line) {
  if (line >= t->nlines) line = t->nlines - 1;
  return ddx_lsp_range(t, enc, t->starts[line], ddx_lsp_line_end(t, line));
}

bool ddx_lsp_get_position(json_t *pos, size_t *line, size_t *character) {
  json_t *l = json_object_get(pos, "line"), *c = json_object_get(pos, "character");
  if (!json_is_integer(l) || !json_is_integer(c)) return false;
  if (json_integer_value(l) < 0 || json_integer_value(c) < 0) return false;
  *line = (size_t)json_integer_value(l);
  *character = (size_t)json_integer_value(c);
  return true;
}

/* ------------------------------------------------------------------- URIs */

static int lsp_hex(int c) {
  return c >= '0' && c <= '9'   ? c - '0'
         : c >= 'a' && c <= 'f' ? c - 'a' + 10
         : c >= 'A' && c <= 'F' ? c - 'A' + 10
                                : -1;
}

char *ddx_lsp_uri_to_path(const char *uri) {
  if (strncasecmp(uri, "file://", 7)) return NULL;
  const char *p = uri + 7;
  if (*p != '/') { /* file://host/path: only the local host is ours */
    const char *slash = strchr(p, '/');
    if (!slash || (strncasecmp(p, "localhost/", 10) && slash != p)) return NULL;
    p = slash;
  }
  size_t n = strlen(p);
  char *out = malloc(n + 1), *o = out;
  if (!out) return NULL;
  for (; *p && *p != '?' && *p != '#'; p++) {
    int h1, h2;
    if (*p == '%' && (h1 = lsp_hex(p[1])) >= 0 && (h2 = lsp_hex(p[2])) >= 0) {
      *o++ = (char)(h1 * 16 + h2);
      p += 2;
    } else {
      *o++ = *p;
    }
  }
  *o = 0;
  if (memchr(out, 0, (size_t)(o - out))) { /* an encoded NUL is no path */
    free(out);
    return NULL;
  }
  return out;
}

char *ddx_lsp_path_to_uri(const char *path) {
  ddx_sb_t b;
  ddx_sb_init(&b);
  ddx_sb_puts(&b, "file://");
  for (const unsigned char *p = (const unsigned char *)path; *p; p++) {
    if (isalnum(*p) || strchr("/-._~", *p))
      ddx_sb_putn(&b, (const char *)p, 1);
    else
      ddx_sb_printf(&b, "%%%02X", *p);
  }
  return ddx_sb_take(&b);
}

const char *ddx_lsp_basename(const char *path) {
  const char *s = strrchr(path, '/');
  return s ? s + 1 : path;
}

/* -------------------------------------------------------------- documents */

static bool lsp_ends_with(const char *s, const char *suffix) {
  size_t n = strlen(s), k = strlen(suffix);
  return n >= k && strcasecmp(s + n - k, suffix) == 0;
}

static int lsp_doc_kind(const char *uri, const char *language) {
  const char *base = ddx_lsp_basename(uri);
  if (!strcmp(language, "json") || !strcmp(language, "jsonc") || lsp_ends_with(base, ".json"))
    return DDX_LSP_DOC_JSON;
  if (!strcmp(language, "log") || !strcmp(language, "plaintext") || lsp_ends_with(base, ".log") ||
      lsp_ends_with(base, ".out") || lsp_ends_with(base, ".err") || !strncmp(base, "slurm-", 6))
    return DDX_LSP_DOC_LOG;
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

static void lsp_doc_unlink(ddx_lsp_server_t *s, ddx_lsp_doc_t *d) {
  for (ddx_lsp_doc_t **pp = &s->docs; *pp; pp = &(*pp)->next) {
    if (*pp == d) {
      *pp = d->next;
      return;
    }
  }
}

/* Notifications cannot answer an error: a malformed one is logged. */
static json_t *lsp_bad(ddx_lsp_server_t *s, const char *method, const char *why) {
  ddx_lsp_log(s, DDX_LSP_LOG_ERROR, "%s: invalid params: %s", method, why);
  return NULL;
}

json_t *ddx_lsp_did_open(ddx_lsp_server_t *s, json_t *params, ddx_lsp_call_t *call) {
  (void)call;
  json_t *td = json_object_get(params, "textDocument");
  json_t *juri = json_object_get(td, "uri"), *jtext = json_object_get(td, "text");
  json_t *jver = json_object_get(td, "version"), *jlang = json_object_get(td, "languageId");
  if (!json_is_string(juri) || !json_is_string(jtext) || !json_is_integer(jver))
    return lsp_bad(s, "textDocument/didOpen", "textDocument needs uri, version and text");
  const char *uri = json_string_value(juri);
  ddx_lsp_doc_t *old = ddx_lsp_doc_find(s, uri);
  if (old) { /* a client bug, but the newest text wins */
    lsp_doc_unlink(s, old);
    ddx_lsp_doc_free(old);
  }
  ddx_lsp_doc_t *d = calloc(1, sizeof *d);
  if (!d) return NULL;
  d->uri = strdup(uri);
  d->path = ddx_lsp_uri_to_path(uri);
  d->language = strdup(json_is_string(jlang) ? json_string_value(jlang) : "");
  d->version = json_integer_value(jver);
  d->text = ddx_lsp_text_new(json_string_value(jtext), json_string_length(jtext));
  if (!d->uri || !d->language || !d->text) {
    ddx_lsp_doc_free(d);
    ddx_lsp_log(s, DDX_LSP_LOG_ERROR, "didOpen %s: out of memory", uri);
    return NULL;
  }
  d->kind = lsp_doc_kind(uri, d->language);
  d->next = s->docs;
  s->docs = d;
  if (d->kind == DDX_LSP_DOC_LOG) ddx_lsp_schedule_scan(s, d);
  return NULL;
}

/* Applies one content change to t; returns the new text or NULL (why set). */
static ddx_lsp_text_t *lsp_apply_change(ddx_lsp_server_t *s, ddx_lsp_text_t *t, json_t *ch,
                                        const char **why) {
  json_t *jtext = json_object_get(ch, "text");
  if (!json_is_string(jtext)) {
    *why = "a content change needs text";
    return NULL;
  }
  const char *nt = json_string_value(jtext);
  size_t nlen = json_string_length(jtext);
  json_t *range = json_object_get(ch, "range");
  if (!range) return ddx_lsp_text_new(nt, nlen);
  size_t l0, c0, l1, c1;
  if (!ddx_lsp_get_position(json_object_get(range, "start"), &l0, &c0) ||
      !ddx_lsp_get_position(json_object_get(range, "end"), &l1, &c1)) {
    *why = "range needs start and end positions with non-negative line and character";
    return NULL;
  }
  /* Out-of-range positions clamp (LSP: past the line end is the line end,
   * past the last line is the end of the document), as editors do. */
  size_t a = ddx_lsp_offset(t, s->encoding, l0, c0), b = ddx_lsp_offset(t, s->encoding, l1, c1);
  if (a > b) {
    *why = "range start is after its end";
    return NULL;
  }
  size_t len = t->len - (b - a) + nlen;
  char *buf = malloc(len + 1);
  if (!buf) {
    *why = "out of memory";
    return NULL;
  }
  memcpy(buf, t->data, a);
  memcpy(buf + a, nt, nlen);
  memcpy(buf + a + nlen, t->data + b, t->len - b);
  ddx_lsp_text_t *r = ddx_lsp_text_new(buf, len);
  free(buf);
  if (!r) *why = "out of memory";
  return r;
}

json_t *ddx_lsp_did_change(ddx_lsp_server_t *s, json_t *params, ddx_lsp_call_t *call) {
  (void)call;
  json_t *td = json_object_get(params, "textDocument");
  json_t *juri = json_object_get(td, "uri"), *jver = json_object_get(td, "version");
  json_t *changes = json_object_get(params, "contentChanges");
  if (!json_is_string(juri) || !json_is_array(changes))
    return lsp_bad(s, "textDocument/didChange", "needs textDocument.uri and contentChanges");
  ddx_lsp_doc_t *d = ddx_lsp_doc_find(s, json_string_value(juri));
  if (!d) {
    ddx_lsp_log(s, DDX_LSP_LOG_WARNING, "didChange for %s, which is not open: ignored",
                json_string_value(juri));
    return NULL;
  }
  size_t i;
  json_t *ch;
  json_array_foreach(changes, i, ch) {
    const char *why = NULL;
    ddx_lsp_text_t *nt = lsp_apply_change(s, d->text, ch, &why);
    if (!nt) {
      /* The rest of the batch is relative to a text we could not build:
       * keep the last good text and say so; the client's next full sync
       * repairs it. */
      ddx_lsp_log(s, DDX_LSP_LOG_ERROR, "didChange %s: change %zu rejected: %s", d->uri, i, why);
      break;
    }
    ddx_lsp_text_unref(d->text);
    d->text = nt;
  }
  if (json_is_integer(jver))
    d->version = json_integer_value(jver);
  else
    d->version++;
  if (d->kind == DDX_LSP_DOC_LOG) ddx_lsp_schedule_scan(s, d);
  return NULL;
}

json_t *ddx_lsp_did_close(ddx_lsp_server_t *s, json_t *params, ddx_lsp_call_t *call) {
  (void)call;
  const char *uri =
      json_string_value(json_object_get(json_object_get(params, "textDocument"), "uri"));
  if (!uri) return lsp_bad(s, "textDocument/didClose", "needs textDocument.uri");
  ddx_lsp_doc_t *d = ddx_lsp_doc_find(s, uri);
  if (!d) return NULL;
  lsp_doc_unlink(s, d);
  if (d->kind == DDX_LSP_DOC_LOG) /* a closed log's problems go away with it */
    ddx_lsp_notify(s, "textDocument/publishDiagnostics",
                   json_pack("{s:s, s:[]}", "uri", d->uri, "diagnostics"));
  ddx_lsp_doc_free(d);
  return NULL;
}

json_t *ddx_lsp_did_save(ddx_lsp_server_t *s, json_t *params, ddx_lsp_call_t *call) {
  (void)call;
  const char *uri =
      json_string_value(json_object_get(json_object_get(params, "textDocument"), "uri"));
  if (!uri) return lsp_bad(s, "textDocument/didSave", "needs textDocument.uri");
  /* The text is already in sync through didChange; a log whose scan failed
   * (e.g. the catalog was broken) gets another chance. */
  ddx_lsp_doc_t *d = ddx_lsp_doc_find(s, uri);
  if (d && d->kind == DDX_LSP_DOC_LOG && !d->result && !d->job) ddx_lsp_schedule_scan(s, d);
  return NULL;
}
