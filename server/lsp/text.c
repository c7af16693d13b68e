/* text.c - the texts of the language server (see internal.h): immutable
 * texts with a line index, conversion between byte offsets and LSP
 * positions in the negotiated encoding, file URIs, and the working copy a
 * didChange batch is applied to (a gap buffer with a gapped line index,
 * ddx_lsp_wc_t) that becomes an immutable text once, at its end.
 *
 * Lines end at \n, \r\n or a bare \r exactly as the engine counts them
 * (ddx/scan.h), so engine line N is LSP line N-1 on the same text. */
#include "internal.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "ddx/dsconfig.h"
#include "ddx/file.h"

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
  size_t k = ddx_utf8_len(p, n);
  *units = k == 4 ? 2 : 1;
  return k ? k : 1;
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

/* file:///abs, file://localhost/abs and file:/abs (RFC 8089 allows an
 * empty or absent authority). Other hosts, relative paths and an encoded
 * NUL are refused; %2F decodes to '/' like any other byte (the path checks
 * run realpath on the result, so it names nothing a plain '/' would not). */
char *ddx_lsp_uri_to_path(const char *uri) {
  if (strncasecmp(uri, "file:", 5)) return NULL;
  const char *p = uri + 5;
  if (p[0] == '/' && p[1] == '/') { /* an authority: only the local host is ours */
    p += 2;
    if (*p != '/') {
      if (strncasecmp(p, "localhost/", 10)) return NULL;
      p += 9;
    }
  } else if (*p != '/') {
    return NULL;
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

/* ---------------------------------------------------------- working copy */

void ddx_lsp_wc_free(ddx_lsp_wc_t *w) {
  free(w->buf);
  free(w->ls);
  memset(w, 0, sizeof *w);
}

static inline unsigned char wc_at(const ddx_lsp_wc_t *w, size_t off) {
  return (unsigned char)w->buf[off < w->gs ? off : off + (w->ge - w->gs)];
}

static inline size_t wc_start(const ddx_lsp_wc_t *w, size_t line) {
  return line < w->lg ? w->ls[line] : w->len - w->ls[w->lge + (line - w->lg)];
}

/* The copy of t, with the byte gap at offset at and room for extra bytes
 * and extra_lines line starts before anything grows. */
static int wc_init(ddx_lsp_wc_t *w, const ddx_lsp_text_t *t, size_t at, size_t extra,
                   size_t extra_lines) {
  memset(w, 0, sizeof *w);
  size_t tail = t->len - at;
  w->cap = t->len + extra + 1; /* + 1: the NUL ddx_lsp_wc_finish adds */
  w->lcap = t->nlines + extra_lines;
  w->buf = malloc(w->cap);
  w->ls = malloc(w->lcap * sizeof *w->ls);
  if (!w->buf || !w->ls) {
    ddx_lsp_wc_free(w);
    return -1;
  }
  memcpy(w->buf, t->data, at);
  memcpy(w->buf + w->cap - tail, t->data + at, tail);
  w->gs = at;
  w->ge = w->cap - tail;
  w->len = t->len;
  /* the line gap before the first line that starts after at */
  size_t lg = ddx_lsp_line_of(t, at) + 1;
  memcpy(w->ls, t->starts, lg * sizeof *w->ls);
  w->lg = lg;
  w->lge = w->lcap - (t->nlines - lg);
  for (size_t k = lg; k < t->nlines; k++)
    w->ls[w->lge + (k - lg)] = t->len - t->starts[k];
  w->nlines = t->nlines;
  return 0;
}

/* Room for m more bytes (and the final NUL) and nl more line starts. */
static int wc_reserve(ddx_lsp_wc_t *w, size_t m, size_t nl) {
  if (w->ge - w->gs < m + 1) {
    size_t need = w->len + m + 1, cap = w->cap * 2 > need ? w->cap * 2 : need;
    if (cap < need + 4096) cap = need + 4096;
    char *nb = realloc(w->buf, cap);
    if (!nb) return -1;
    size_t tail = w->cap - w->ge;
    memmove(nb + cap - tail, nb + w->ge, tail);
    w->buf = nb;
    w->ge = cap - tail;
    w->cap = cap;
  }
  if (w->lge - w->lg < nl) {
    size_t need = w->nlines + nl, cap = w->lcap * 2 > need ? w->lcap * 2 : need;
    if (cap < need + 1024) cap = need + 1024;
    size_t *nl2 = realloc(w->ls, cap * sizeof *nl2);
    if (!nl2) return -1;
    size_t tail = w->lcap - w->lge;
    memmove(nl2 + cap - tail, nl2 + w->lge, tail * sizeof *nl2);
    w->ls = nl2;
    w->lge = cap - tail;
    w->lcap = cap;
  }
  return 0;
}

static void wc_move_gap(ddx_lsp_wc_t *w, size_t at) {
  if (at < w->gs) {
    size_t n = w->gs - at;
    memmove(w->buf + w->ge - n, w->buf + at, n);
    w->gs = at;
    w->ge -= n;
  } else if (at > w->gs) {
    size_t n = at - w->gs;
    memmove(w->buf + w->gs, w->buf + w->ge, n);
    w->gs = at;
    w->ge += n;
  }
}

/* Puts the line gap before line i (0 <= i <= nlines). */
static void wc_move_lgap(ddx_lsp_wc_t *w, size_t i) {
  while (w->lg > i) {
    w->lg--;
    w->lge--;
    w->ls[w->lge] = w->len - w->ls[w->lg];
  }
  while (w->lg < i) {
    w->ls[w->lg] = w->len - w->ls[w->lge];
    w->lg++;
    w->lge++;
  }
}

/* The first line that starts at or after off (nlines when none does). */
static size_t wc_first_line_at(const ddx_lsp_wc_t *w, size_t off) {
  size_t lo = 0, hi = w->nlines;
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    if (wc_start(w, mid) < off)
      lo = mid + 1;
    else
      hi = mid;
  }
  return lo;
}

static size_t wc_line_end(const ddx_lsp_wc_t *w, size_t line) {
  if (line + 1 >= w->nlines) return w->len;
  size_t start = wc_start(w, line), e = wc_start(w, line + 1);
  if (e > start && wc_at(w, e - 1) == '\n') {
    e--;
    if (e > start && wc_at(w, e - 1) == '\r') e--;
  } else if (e > start && wc_at(w, e - 1) == '\r') {
    e--;
  }
  return e;
}

/* ddx_lsp_offset on the working copy. With resume, the walk may start at
 * ck and leaves there a point at least 4 bytes before its result (an edit
 * at or after ck_off + 4 leaves every byte the walk to ck read as it was). */
static size_t wc_offset(ddx_lsp_wc_t *w, int enc, size_t line, size_t character, bool resume) {
  if (line >= w->nlines) return w->len;
  size_t start = wc_start(w, line), end = wc_line_end(w, line);
  if (enc == DDX_LSP_ENC_UTF8) return character > end - start ? end : start + character;
  size_t p = start, units = 0;
  if (w->ck && w->ck_line == line && w->ck_units <= character) {
    p = w->ck_off;
    units = w->ck_units;
  }
  size_t hp[4] = {0}, hu[4] = {0}, nh = 0; /* the last points passed */
  while (p < end && units < character) {
    unsigned char tmp[4];
    size_t n = end - p < 4 ? end - p : 4, u;
    const unsigned char *q;
    if (p >= w->gs)
      q = (const unsigned char *)w->buf + p + (w->ge - w->gs);
    else if (p + n <= w->gs)
      q = (const unsigned char *)w->buf + p;
    else { /* a code point across the gap */
      for (size_t i = 0; i < n; i++)
        tmp[i] = wc_at(w, p + i);
      q = tmp;
    }
    size_t k = lsp_cp(q, n, &u);
    if (units + u > character) break; /* inside a surrogate pair: its start */
    hp[nh % 4] = p;
    hu[nh % 4] = units;
    nh++;
    units += u;
    p += k;
  }
  if (resume) { /* the newest point passed that an edit at p leaves valid */
    w->ck = false;
    for (size_t i = 0; i < 4 && i < nh && !w->ck; i++) {
      size_t j = (nh - 1 - i) % 4;
      if (hp[j] + 4 <= p) {
        w->ck = true;
        w->ck_line = line;
        w->ck_off = hp[j];
        w->ck_units = hu[j];
      }
    }
  }
  return p;
}

static size_t lsp_count_terms(const char *s, size_t n) {
  size_t k = 0;
  for (size_t i = 0; i < n; i++)
    k += s[i] == '\n' || s[i] == '\r';
  return k;
}

/* Replaces [a, b) by nt[0, m), which holds nterm \n and \r bytes. */
static int wc_edit(ddx_lsp_wc_t *w, size_t a, size_t b, const char *nt, size_t m, size_t nterm) {
  if (wc_reserve(w, m, nterm + 1)) return -1;
  if (w->ck && a < w->ck_off + 4) w->ck = false;
  /* Line starts in [lo, b] go (each depends on a byte that changes); the
   * others keep their entries: those after b are stored relative to the
   * end, which the edit does not move. */
  size_t lo = a ? a : 1;
  wc_move_lgap(w, wc_first_line_at(w, lo));
  while (w->lge < w->lcap && w->len - w->ls[w->lge] <= b) {
    w->lge++;
    w->nlines--;
  }
  wc_move_gap(w, a);
  w->ge += b - a;
  memcpy(w->buf + w->gs, nt, m);
  w->gs += m;
  w->len = w->len - (b - a) + m;
  /* The starts in [lo, a + m]: bytes [lo - 1, a + m) lie before the gap. */
  const unsigned char *bb = (const unsigned char *)w->buf;
  size_t end = a + m;
  for (size_t s = lo; s < end; s++) {
    if (bb[s - 1] == '\n' || (bb[s - 1] == '\r' && bb[s] != '\n')) {
      w->ls[w->lg++] = s;
      w->nlines++;
    }
  }
  if (end >= lo &&
      (bb[end - 1] == '\n' || (bb[end - 1] == '\r' && (end == w->len || wc_at(w, end) != '\n')))) {
    w->ls[w->lg++] = end;
    w->nlines++;
  }
  return 0;
}

/* The immutable text of the copy (which it empties), or NULL. */
ddx_lsp_text_t *ddx_lsp_wc_finish(ddx_lsp_wc_t *w) {
  ddx_lsp_text_t *t = calloc(1, sizeof *t);
  if (!t) return NULL;
  wc_move_gap(w, w->len);
  w->buf[w->len] = 0; /* wc_reserve keeps a byte of gap */
  wc_move_lgap(w, w->nlines);
  char *data = realloc(w->buf, w->len + 1);
  size_t *starts = realloc(w->ls, w->nlines * sizeof *starts);
  t->refs = 1;
  t->data = data ? data : w->buf;
  t->len = w->len;
  t->starts = starts ? starts : w->ls;
  t->nlines = w->nlines;
  memset(w, 0, sizeof *w);
  return t;
}

/* Applies content change ch of a batch: a full text replaces d->text (and
 * drops the working copy), a range edits the working copy w, made from
 * d->text by the first edit (live tells). Returns 0, or -1 with why set
 * and nothing changed. */
int ddx_lsp_apply_change(ddx_lsp_server_t *s, ddx_lsp_doc_t *d, ddx_lsp_wc_t *w, bool *live,
                         json_t *ch, bool last, const char **why) {
  json_t *jtext = json_object_get(ch, "text");
  if (!json_is_string(jtext)) {
    *why = "a content change needs text";
    return -1;
  }
  const char *nt = json_string_value(jtext);
  size_t nlen = json_string_length(jtext);
  json_t *range = json_object_get(ch, "range");
  if (!range) {
    ddx_lsp_text_t *t = ddx_lsp_text_new(nt, nlen);
    if (!t) {
      *why = "out of memory";
      return -1;
    }
    if (*live) ddx_lsp_wc_free(w);
    *live = false;
    ddx_lsp_text_unref(d->text);
    d->text = t;
    return 0;
  }
  size_t l0, c0, l1, c1;
  if (!ddx_lsp_get_position(json_object_get(range, "start"), &l0, &c0) ||
      !ddx_lsp_get_position(json_object_get(range, "end"), &l1, &c1)) {
    *why = "range needs start and end positions with non-negative line and character";
    return -1;
  }
  /* Out-of-range positions clamp (LSP: past the line end is the line end,
   * past the last line is the end of the document), as editors do. */
  size_t a, b;
  if (*live) {
    a = wc_offset(w, s->life.encoding, l0, c0, true);
    b = wc_offset(w, s->life.encoding, l1, c1, false);
  } else {
    a = ddx_lsp_offset(d->text, s->life.encoding, l0, c0);
    b = ddx_lsp_offset(d->text, s->life.encoding, l1, c1);
  }
  if (a > b) {
    *why = "range start is after its end";
    return -1;
  }
  size_t nterm = lsp_count_terms(nt, nlen);
  if (!*live) {
    /* A lone change gets a copy of its exact size; a batch some room. */
    const ddx_lsp_text_t *t = d->text;
    size_t extra = last ? nlen : nlen + 4096 + t->len / 64;
    size_t extra_lines = last ? nterm + 1 : nterm + 1024 + t->nlines / 64;
    if (wc_init(w, t, a, extra, extra_lines)) {
      *why = "out of memory";
      return -1;
    }
    *live = true;
  }
  if (wc_edit(w, a, b, nt, nlen, nterm)) {
    *why = "out of memory";
    return -1;
  }
  return 0;
}
