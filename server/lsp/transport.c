/* transport.c - the language server's bytes (see internal.h): stdin and
 * stdout through libuv (pipes, ttys, sockets, regular files), the
 * Content-Length framing with a size cap and resynchronisation after
 * garbage, big messages parsed without a second copy, and the write queue
 * with its back-pressure (reading pauses above the limit, notifications
 * are dropped above twice the limit). Whole messages go to rpc.c. */
#include "internal.h"

#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

#include "ddx/version.h"

#define LSP_MAX_HEADER 8192 /* a header block longer than this is garbage */
#define LSP_READ_CHUNK 65536

enum { LSP_RS_HEADERS = 0, LSP_RS_BODY = 1, LSP_RS_RESYNC = 2 };

uint64_t ddx_lsp_now_ns(void) {
  return uv_hrtime();
}

/* ---------------------------------------------------------------- writing */

void ddx_lsp_write_next(ddx_lsp_server_t *s);
static void lsp_parse_input(ddx_lsp_server_t *s);
static void lsp_fs_read_next(ddx_lsp_server_t *s);
static void lsp_on_alloc(uv_handle_t *h, size_t suggested, uv_buf_t *buf);
static void lsp_on_read(uv_stream_t *st, ssize_t nread, const uv_buf_t *buf);

static void lsp_close_out(ddx_lsp_server_t *s) {
  if (!s->io.out_open) return;
  s->io.out_open = false;
  if (s->io.out_type != UV_FILE) uv_close(&s->io.out.handle, NULL);
}

static void lsp_drop_queue(ddx_lsp_server_t *s) {
  while (s->io.wq_head) {
    ddx_lsp_wmsg_t *m = s->io.wq_head;
    s->io.wq_head = m->next;
    free(m->data);
    free(m);
  }
  s->io.wq_tail = NULL;
  s->io.wq_bytes = 0;
}

/* A client that does not read its stdout must not make the queue grow
 * without bound: above the limit the server stops reading requests (they
 * wait in the pipe, the client's writes block), and resumes when half of
 * it has drained. The loop never blocks either way. */
static void lsp_wq_pause(ddx_lsp_server_t *s) {
  if (s->io.wq_paused || s->life.exiting) return;
  s->io.wq_paused = true;
  if (s->io.reading) {
    uv_read_stop(&s->io.in.stream);
    s->io.reading = false;
  }
  if (s->io.wq_pauses++ % 100 == 0)
    fprintf(stderr,
            "ddx lsp: the client is not reading its messages: %zu bytes queued (limit %zu); "
            "reading paused (%llu time%s)\n",
            s->io.wq_bytes, s->io.wq_limit, (unsigned long long)s->io.wq_pauses,
            s->io.wq_pauses == 1 ? "" : "s");
}

static void lsp_wq_resume(ddx_lsp_server_t *s) {
  if (!s->io.wq_paused || s->io.wq_bytes > s->io.wq_limit / 2) return;
  s->io.wq_paused = false;
  if (s->life.exiting || !s->io.in_open) return;
  if (s->io.wq_pauses % 100 == 1)
    fprintf(stderr, "ddx lsp: the client reads again: %zu bytes queued; reading resumed\n",
            s->io.wq_bytes);
  if (!s->io.parsing) lsp_parse_input(s); /* requests read before the pause */
  if (s->io.wq_paused || s->life.exiting || !s->io.in_open) return;
  if (s->io.in_type == UV_FILE) {
    if (s->io.in_stalled) {
      s->io.in_stalled = false;
      lsp_fs_read_next(s);
    }
  } else if (!s->io.reading && uv_read_start(&s->io.in.stream, lsp_on_alloc, lsp_on_read) == 0) {
    s->io.reading = true;
  }
}

/* One write finished: the client may be gone (EPIPE), then nothing more can
 * be said and the server ends. */
static void lsp_write_done(ddx_lsp_server_t *s, ssize_t status) {
  ddx_lsp_wmsg_t *m = s->io.wq_head;
  s->io.writing = false;
  if (status < 0) {
    lsp_drop_queue(s);
    lsp_close_out(s);
    ddx_lsp_stop(s, 1);
    return;
  }
  if (m && s->io.out_type == UV_FILE && (size_t)status < m->len) {
    /* A short write to a file: the rest goes next. */
    memmove(m->data, m->data + status, m->len - (size_t)status);
    m->len -= (size_t)status;
    s->io.wq_bytes -= (size_t)status;
  } else if (m) {
    s->io.wq_head = m->next;
    if (!s->io.wq_head) s->io.wq_tail = NULL;
    s->io.wq_bytes -= m->len;
    free(m->data);
    free(m);
  }
  ddx_lsp_write_next(s);
  lsp_wq_resume(s);
}

static void lsp_on_write(uv_write_t *req, int status) {
  lsp_write_done(req->data, status);
}

static void lsp_on_fs_write(uv_fs_t *req) {
  ddx_lsp_server_t *s = req->data;
  ssize_t r = req->result;
  uv_fs_req_cleanup(req);
  lsp_write_done(s, r);
}

void ddx_lsp_write_next(ddx_lsp_server_t *s) {
  if (s->io.writing || !s->io.out_open) return;
  if (!s->io.wq_head) {
    if (s->life.exiting) lsp_close_out(s); /* everything said: the stream can go */
    return;
  }
  ddx_lsp_wmsg_t *m = s->io.wq_head;
  s->io.wbuf = uv_buf_init(m->data, (unsigned)m->len);
  int rc;
  if (s->io.out_type == UV_FILE) {
    s->io.out_fs.data = s;
    rc = uv_fs_write(&s->loop, &s->io.out_fs, 1, &s->io.wbuf, 1, -1, lsp_on_fs_write);
  } else {
    s->io.wreq.data = s;
    rc = uv_write(&s->io.wreq, &s->io.out.stream, &s->io.wbuf, 1, lsp_on_write);
  }
  if (rc < 0) {
    /* The callback will not run: treat it as a lost client right here. */
    lsp_drop_queue(s);
    lsp_close_out(s);
    ddx_lsp_stop(s, 1);
    return;
  }
  s->io.writing = true;
}

void ddx_lsp_send(ddx_lsp_server_t *s, json_t *msg) {
  if (!msg) return;
  if (!s->io.out_open) {
    json_decref(msg);
    return;
  }
  /* A response is never dropped (the client would wait for it forever);
   * there are only as many as requests read before the pause. */
  bool response = json_object_get(msg, "id") && !json_object_get(msg, "method");
  char *body = json_dumps(msg, JSON_COMPACT);
  json_decref(msg);
  if (!body) return;
  size_t blen = strlen(body);
  if (!response && s->io.wq_bytes + blen > 2 * s->io.wq_limit) {
    /* Reading is paused already; what the server says on its own (logs,
     * progress, diagnostics of finished scans) is dropped beyond this. */
    if (s->io.wq_dropped++ % 1000 == 0)
      fprintf(stderr,
              "ddx lsp: the client is not reading: %zu bytes queued; %llu message(s) dropped\n",
              s->io.wq_bytes, (unsigned long long)s->io.wq_dropped);
    free(body);
    return;
  }
  char hdr[64];
  int hlen = snprintf(hdr, sizeof hdr, "Content-Length: %zu\r\n\r\n", blen);
  ddx_lsp_wmsg_t *m = malloc(sizeof *m);
  char *data = malloc((size_t)hlen + blen);
  if (!m || !data) {
    free(m);
    free(data);
    free(body);
    return;
  }
  memcpy(data, hdr, (size_t)hlen);
  memcpy(data + hlen, body, blen);
  free(body);
  m->next = NULL;
  m->data = data;
  m->len = (size_t)hlen + blen;
  s->io.wq_bytes += m->len;
  if (s->io.wq_tail)
    s->io.wq_tail->next = m;
  else
    s->io.wq_head = m;
  s->io.wq_tail = m;
  ddx_lsp_write_next(s);
  if (s->io.wq_bytes > s->io.wq_limit) lsp_wq_pause(s);
}

/* ----------------------------------------------------------------- framing */

static bool lsp_ieq_prefix(const char *p, size_t n, const char *lit) {
  size_t k = strlen(lit);
  return n >= k && strncasecmp(p, lit, k) == 0;
}

static void lsp_frame_error(ddx_lsp_server_t *s, int code, const char *msg) {
  ddx_lsp_reply_error(s, NULL, code, msg);
  ddx_lsp_log(s, DDX_LSP_LOG_ERROR, "%s", msg);
}

/* Parses one header block [0, n). Returns 0 and the Content-Length, or -1
 * with why. */
static int lsp_parse_headers(const char *h, size_t n, size_t *len, char *why, size_t whycap) {
  bool have = false;
  size_t pos = 0;
  while (pos < n) {
    const char *nl = memchr(h + pos, '\n', n - pos);
    size_t e = nl ? (size_t)(nl - h) : n;
    size_t le = e;
    if (le > pos && h[le - 1] == '\r') le--;
    if (le > pos) {
      const char *colon = memchr(h + pos, ':', le - pos);
      if (!colon) {
        snprintf(why, whycap, "malformed header line (no colon)");
        return -1;
      }
      size_t nlen = (size_t)(colon - (h + pos));
      const char *v = colon + 1;
      const char *ve = h + le;
      while (v < ve && (*v == ' ' || *v == '\t'))
        v++;
      while (ve > v && (ve[-1] == ' ' || ve[-1] == '\t'))
        ve--;
      if (nlen == 14 && lsp_ieq_prefix(h + pos, nlen, "Content-Length")) {
        if (v == ve) {
          snprintf(why, whycap, "empty Content-Length");
          return -1;
        }
        size_t val = 0;
        for (const char *p = v; p < ve; p++) {
          if (*p < '0' || *p > '9') {
            snprintf(why, whycap, "Content-Length is not a number");
            return -1;
          }
          if (val > (SIZE_MAX - 9) / 10) {
            snprintf(why, whycap, "Content-Length too large");
            return -1;
          }
          val = val * 10 + (size_t)(*p - '0');
        }
        if (have && val != *len) {
          snprintf(why, whycap, "two different Content-Length headers");
          return -1;
        }
        *len = val;
        have = true;
      }
      /* Content-Type and unknown headers are accepted and ignored. */
    }
    pos = e + 1;
  }
  if (!have) {
    snprintf(why, whycap, "missing Content-Length header");
    return -1;
  }
  return 0;
}

/* Finds the end of a header block: "\r\n\r\n" (or a lenient "\n\n"). */
static bool lsp_header_end(const char *b, size_t n, size_t *hend, size_t *body) {
  for (size_t i = 0; i + 1 < n; i++) {
    if (b[i] != '\n') continue;
    if (b[i + 1] == '\n') {
      *hend = i;
      *body = i + 2;
      return true;
    }
    if (i + 2 < n && b[i + 1] == '\r' && b[i + 2] == '\n') {
      *hend = i;
      *body = i + 3;
      return true;
    }
  }
  return false;
}

/* Where the next header block may start: "Content-Length" anywhere. A JSON
 * body cannot hold a raw CR LF inside a string, so once a header block
 * parses again the stream is back in step. */
static size_t lsp_find_resync(const char *b, size_t n, bool *found) {
  static const char lit[] = "content-length";
  const size_t k = sizeof lit - 1;
  for (size_t i = 0; i + k <= n; i++) {
    if ((b[i] | 0x20) == 'c' && strncasecmp(b + i, lit, k) == 0) {
      *found = true;
      return i;
    }
  }
  *found = false;
  return n > k ? n - k : 0; /* keep a possible partial match */
}

/* ------------------------------------------------------------ big messages */

/* A didOpen of a 50 MB log is one 50 MB JSON string, and jansson decodes
 * strings a byte at a time (60% of the time of such a didOpen). Strings
 * of LSP_BIG_STRING bytes and more are therefore cut out of the message,
 * decoded by ddx_json_string_check/_decode (strict, as jansson) a run at a
 * time, and put back into the tree jansson parses
 * from the rest; anything this decoder does not accept as valid JSON (a
 * raw control byte, a bad escape, invalid UTF-8) leaves the whole message
 * to jansson, so the errors a client sees do not change. */
#define LSP_BIG_STRING (256u << 10)
#define LSP_BIG_MAX 8

typedef struct lsp_big {
  size_t start, end; /* the string's content, between its quotes */
  char *text;        /* decoded */
  size_t len;
} lsp_big_t;

/* The index of the big string whose marker t is, or -1. */
static int lsp_big_marker(const char *t, size_t nbig) {
  return t && !strncmp(t, "\001ddx-big-", 9) && (size_t)(t[9] - '0') < nbig && !t[10] ? t[9] - '0'
                                                                                      : -1;
}

static void lsp_big_restore(json_t *v, lsp_big_t *big, size_t nbig, size_t *restored);

/* x's replacement when it is a marker (the decoded big string), else NULL
 * after restoring what x holds. */
static json_t *lsp_big_swap(json_t *x, lsp_big_t *big, size_t nbig, size_t *restored) {
  int m = lsp_big_marker(json_string_value(x), nbig);
  if (m < 0) {
    lsp_big_restore(x, big, nbig, restored);
    return NULL;
  }
  (*restored)++;
  return json_stringn_nocheck(big[m].text, big[m].len);
}

/* Puts the decoded big strings back where their markers are. */
static void lsp_big_restore(json_t *v, lsp_big_t *big, size_t nbig, size_t *restored) {
  json_t *r;
  if (json_is_object(v)) {
    for (void *it = json_object_iter(v); it; it = json_object_iter_next(v, it))
      if ((r = lsp_big_swap(json_object_iter_value(it), big, nbig, restored)))
        json_object_iter_set_new(v, it, r);
  } else if (json_is_array(v)) {
    for (size_t i = 0; i < json_array_size(v); i++)
      if ((r = lsp_big_swap(json_array_get(v, i), big, nbig, restored)))
        json_array_set_new(v, i, r);
  }
}

static json_t *lsp_parse_body(const char *body, size_t len, json_error_t *jerr) {
  const int flags = JSON_ALLOW_NUL | JSON_DECODE_ANY;
  if (len < LSP_BIG_STRING) return json_loadb(body, len, flags, jerr);
  /* Find the big strings: outside a string only '"' matters; inside one,
   * a backslash escapes the next byte. */
  lsp_big_t big[LSP_BIG_MAX];
  size_t nbig = 0;
  for (size_t i = 0; i < len && nbig < LSP_BIG_MAX;) {
    const char *q = memchr(body + i, '"', len - i);
    if (!q) break;
    size_t st = (size_t)(q - body) + 1, j = st;
    for (;;) {
      const char *e = memchr(body + j, '"', len - j);
      if (!e) return json_loadb(body, len, flags, jerr); /* unterminated: jansson says so */
      size_t at = (size_t)(e - body), bs = 0;
      while (at - bs > st && body[at - bs - 1] == '\\')
        bs++;
      j = at + 1;
      if (bs % 2 == 0) break; /* not escaped */
    }
    if (j - 1 - st >= LSP_BIG_STRING) big[nbig++] = (lsp_big_t){st, j - 1, NULL, 0};
    i = j;
  }
  if (!nbig) return json_loadb(body, len, flags, jerr);
  json_t *msg = NULL;
  ddx_sb_t rest;
  ddx_sb_init(&rest);
  size_t from = 0, k = 0;
  bool ok = true;
  for (; k < nbig && ok; k++) { /* k counts the allocations, freed below */
    lsp_big_t *g = &big[k];
    size_t end, at;
    g->text = malloc(g->end - g->start + 1);
    ok = g->text &&
         ddx_json_string_check(body, g->end + 1, g->start, true, &end, &at) == DDX_JSTR_OK &&
         end == g->end;
    if (!ok) continue;
    g->len = ddx_json_string_decode(body, g->start, g->end, g->text);
    ddx_sb_putn(&rest, body + from, g->start - from);
    ddx_sb_printf(&rest, "\\u0001ddx-big-%zu", k);
    from = g->end;
  }
  if (ok) {
    ddx_sb_putn(&rest, body + from, len - from);
    msg = rest.s ? json_loadb(rest.s, rest.len, flags, jerr) : NULL;
    size_t restored = 0;
    if (msg) lsp_big_restore(msg, big, nbig, &restored);
    if (msg && restored != nbig) { /* a big key, say: not this path's case */
      json_decref(msg);
      msg = NULL;
    }
  }
  ddx_sb_free(&rest);
  for (size_t i = 0; i < k; i++)
    free(big[i].text);
  return msg ? msg : json_loadb(body, len, flags, jerr);
}

static void lsp_parse_input(ddx_lsp_server_t *s) {
  size_t pos = 0;
  json_t *batch[64];
  size_t nb = 0;
  s->io.parsing = true;
  while (!s->life.exiting && !s->io.wq_paused) {
    char *b = s->io.rbuf + pos;
    size_t n = s->io.rlen - pos;
    if (s->io.rstate == LSP_RS_RESYNC) {
      bool found;
      size_t at = lsp_find_resync(b, n, &found);
      pos += at;
      if (!found) break;
      s->io.rstate = LSP_RS_HEADERS;
      continue;
    }
    if (s->io.rstate == LSP_RS_HEADERS) {
      size_t hend, body;
      if (!lsp_header_end(b, n < LSP_MAX_HEADER + 4 ? n : LSP_MAX_HEADER + 4, &hend, &body)) {
        if (n >= LSP_MAX_HEADER + 4) {
          lsp_frame_error(s, DDX_LSP_PARSE_ERROR,
                          "header block too long or missing: skipped to the next Content-Length");
          pos += 1;
          s->io.rstate = LSP_RS_RESYNC;
          continue;
        }
        break;
      }
      if (hend == 0 && body <= 3) {
        pos += body; /* stray blank line between frames */
        continue;
      }
      char why[128];
      size_t len = 0;
      if (lsp_parse_headers(b, hend, &len, why, sizeof why)) {
        char msg[256];
        snprintf(msg, sizeof msg, "bad frame header: %s; skipped to the next Content-Length", why);
        lsp_frame_error(s, DDX_LSP_PARSE_ERROR, msg);
        pos += 1;
        s->io.rstate = LSP_RS_RESYNC;
        continue;
      }
      if (len > s->io.max_frame) {
        /* Refused before any allocation: the body is discarded as it
         * streams in, while looking for the next header. */
        char msg[256];
        snprintf(msg, sizeof msg, "message of %zu bytes exceeds the %zu-byte frame limit: refused",
                 len, s->io.max_frame);
        lsp_frame_error(s, DDX_LSP_INVALID_REQUEST, msg);
        pos += body;
        s->io.rstate = LSP_RS_RESYNC;
        continue;
      }
      s->io.hdr_len = body;
      s->io.body_len = len;
      s->io.rstate = LSP_RS_BODY;
      continue;
    }
    /* LSP_RS_BODY */
    if (n < s->io.hdr_len + s->io.body_len) break;
    json_error_t jerr;
    json_t *msg = lsp_parse_body(b + s->io.hdr_len, s->io.body_len, &jerr);
    pos += s->io.hdr_len + s->io.body_len;
    s->io.rstate = LSP_RS_HEADERS;
    if (!msg) {
      char m[300];
      snprintf(m, sizeof m, "parse error: %.200s (position %d)", jerr.text, jerr.position);
      ddx_lsp_reply_error(s, NULL, DDX_LSP_PARSE_ERROR, m);
      continue;
    }
    batch[nb++] = msg;
    if (nb == sizeof batch / sizeof batch[0]) {
      ddx_lsp_process_batch(s, batch, nb);
      for (size_t i = 0; i < nb; i++)
        json_decref(batch[i]);
      nb = 0;
    }
  }
  ddx_lsp_process_batch(s, batch, nb);
  for (size_t i = 0; i < nb; i++)
    json_decref(batch[i]);
  if (s->io.rbuf && pos) {
    memmove(s->io.rbuf, s->io.rbuf + pos, s->io.rlen - pos);
    s->io.rlen -= pos;
  }
  s->io.parsing = false;
}

/* ----------------------------------------------------------------- reading */

static int lsp_reserve(ddx_lsp_server_t *s, size_t extra) {
  if (s->io.rcap - s->io.rlen >= extra) return 0;
  size_t cap = s->io.rcap ? s->io.rcap : LSP_READ_CHUNK;
  while (cap - s->io.rlen < extra)
    cap *= 2;
  char *nb = realloc(s->io.rbuf, cap);
  if (!nb) return -1;
  s->io.rbuf = nb;
  s->io.rcap = cap;
  return 0;
}

static void lsp_on_eof(ddx_lsp_server_t *s) {
  /* The client closed our stdin: it will never send exit. */
  ddx_lsp_stop(s, s->life.shutdown ? 0 : 1);
}

static void lsp_on_alloc(uv_handle_t *h, size_t suggested, uv_buf_t *buf) {
  ddx_lsp_server_t *s = h->data;
  (void)suggested;
  size_t want = LSP_READ_CHUNK;
  /* A frame whose size is known gets its room at once (it is capped). */
  if (s->io.rstate == LSP_RS_BODY && s->io.hdr_len + s->io.body_len > s->io.rlen) {
    size_t need = s->io.hdr_len + s->io.body_len - s->io.rlen;
    if (need > want) want = need;
  }
  if (lsp_reserve(s, want)) {
    *buf = uv_buf_init(NULL, 0); /* UV_ENOBUFS follows */
    return;
  }
  *buf = uv_buf_init(s->io.rbuf + s->io.rlen, (unsigned)(s->io.rcap - s->io.rlen));
}

static void lsp_on_read(uv_stream_t *st, ssize_t nread, const uv_buf_t *buf) {
  ddx_lsp_server_t *s = st->data;
  (void)buf;
  if (nread > 0) {
    s->io.rlen += (size_t)nread;
    lsp_parse_input(s);
  } else if (nread < 0) {
    if (nread != UV_EOF) ddx_lsp_log(s, DDX_LSP_LOG_ERROR, "stdin: %s", uv_strerror((int)nread));
    lsp_on_eof(s);
  }
}

static void lsp_on_fs_read(uv_fs_t *req) {
  ddx_lsp_server_t *s = req->data;
  ssize_t r = req->result;
  uv_fs_req_cleanup(req);
  if (!s->io.in_open) return;
  if (r <= 0) {
    lsp_on_eof(s);
    return;
  }
  if (lsp_reserve(s, (size_t)r)) {
    ddx_lsp_stop(s, 1);
    return;
  }
  memcpy(s->io.rbuf + s->io.rlen, s->io.in_fs_buf, (size_t)r);
  s->io.rlen += (size_t)r;
  lsp_parse_input(s);
  if (s->io.in_open && s->io.wq_paused)
    s->io.in_stalled = true;
  else if (s->io.in_open)
    lsp_fs_read_next(s);
}

static void lsp_fs_read_next(ddx_lsp_server_t *s) {
  uv_buf_t b = uv_buf_init(s->io.in_fs_buf, sizeof s->io.in_fs_buf);
  s->io.in_fs.data = s;
  if (uv_fs_read(&s->loop, &s->io.in_fs, 0, &b, 1, -1, lsp_on_fs_read) < 0) lsp_on_eof(s);
}

/* Opens fd as a libuv stream of the kind it is. Returns 0, or a libuv error
 * (then nothing was initialised). */
static int lsp_open_stream(ddx_lsp_server_t *s, ddx_lsp_stream_t *st, uv_handle_type *type, int fd,
                           bool readable) {
  *type = uv_guess_handle(fd);
  int rc;
  switch (*type) {
  case UV_NAMED_PIPE:
    rc = uv_pipe_init(&s->loop, &st->pipe, 0);
    if (rc) return rc;
    rc = uv_pipe_open(&st->pipe, fd);
    break;
  case UV_TTY:
    rc = uv_tty_init(&s->loop, &st->tty, fd, readable);
    if (rc) return rc;
    break;
  case UV_TCP:
    rc = uv_tcp_init(&s->loop, &st->tcp);
    if (rc) return rc;
    rc = uv_tcp_open(&st->tcp, fd);
    break;
  case UV_FILE:
    return 0;
  default:
    return UV_EINVAL;
  }
  if (rc) {
    uv_close(&st->handle, NULL);
    return rc;
  }
  st->handle.data = s;
  return 0;
}

/* ------------------------------------------------------- start and end */

void ddx_lsp_io_init(ddx_lsp_server_t *s) {
  s->io.max_frame = DDX_LSP_DEFAULT_MAX_FRAME;
  const char *mf = getenv("DDX_LSP_MAX_FRAME");
  if (mf && *mf) {
    char *e;
    unsigned long long v = strtoull(mf, &e, 10);
    if (!*e && v > 0) s->io.max_frame = (size_t)v;
  }
  s->io.wq_limit = DDX_LSP_DEFAULT_MAX_WQUEUE;
  const char *wq = getenv("DDX_LSP_MAX_WQUEUE");
  if (wq && *wq) {
    char *e;
    unsigned long long v = strtoull(wq, &e, 10);
    if (!*e && v >= 4096) s->io.wq_limit = (size_t)v;
  }
}

int ddx_lsp_io_open(ddx_lsp_server_t *s) {
  int rc = lsp_open_stream(s, &s->io.in, &s->io.in_type, 0, true);
  if (rc == 0) {
    s->io.in_open = true;
    rc = lsp_open_stream(s, &s->io.out, &s->io.out_type, 1, false);
    if (rc == 0) s->io.out_open = true;
  }
  if (rc) fprintf(stderr, "ddx lsp: cannot use stdin/stdout: %s\n", uv_strerror(rc));
  return rc;
}

int ddx_lsp_io_read_start(ddx_lsp_server_t *s) {
  if (s->io.in_type == UV_FILE) {
    lsp_fs_read_next(s);
    return 0;
  }
  int rc = uv_read_start(&s->io.in.stream, lsp_on_alloc, lsp_on_read);
  if (rc)
    fprintf(stderr, "ddx lsp: cannot read stdin: %s\n", uv_strerror(rc));
  else
    s->io.reading = true;
  return rc;
}

void ddx_lsp_io_stop_reading(ddx_lsp_server_t *s) {
  if (!s->io.in_open) return;
  s->io.in_open = false;
  if (s->io.in_type != UV_FILE) {
    if (s->io.reading) uv_read_stop(&s->io.in.stream);
    uv_close(&s->io.in.handle, NULL);
  }
  s->io.reading = false;
}

void ddx_lsp_io_free(ddx_lsp_server_t *s) {
  free(s->io.rbuf);
  lsp_drop_queue(s);
}
