/* ddx/util.h - owns the small shared building blocks of the engine: the
 * error record every fallible call fills, the bump arena that owns the
 * catalog's and a scan's strings, growable arrays, size/number parsing,
 * rank-range formatting, and UTF-8 and JSON string literals for the
 * readers that keep byte positions (dsconfig, dscheck, the LSP's big
 * strings). No I/O policy, no global state. */
#ifndef DDX_UTIL_H
#define DDX_UTIL_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Return codes: 0 success, negative failure (libuv style). */
enum { DDX_OK = 0, DDX_EINVAL = -1, DDX_ENOMEM = -2, DDX_EIO = -3, DDX_ERULE = -4 };

typedef struct ddx_error {
  int code;
  char msg[2048];
} ddx_error_t;

/* Formats msg into err (if non-NULL) and returns code. */
int ddx_error_set(ddx_error_t *err, int code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* A bump allocator: everything allocated from it is freed at once by
 * ddx_arena_free. Blocks grow geometrically; allocation is 8-byte aligned. */
typedef struct ddx_arena_block ddx_arena_block_t;
typedef struct ddx_arena {
  ddx_arena_block_t *head;
  size_t used_total;
} ddx_arena_t;

void ddx_arena_init(ddx_arena_t *a);
void ddx_arena_free(ddx_arena_t *a);
void *ddx_arena_alloc(ddx_arena_t *a, size_t n); /* zeroed; NULL on ENOMEM */
char *ddx_arena_strndup(ddx_arena_t *a, const char *s, size_t n);
char *ddx_arena_strdup(ddx_arena_t *a, const char *s);
/* Moves every block of src into dst (pointers into them stay valid, now
 * owned by dst); src is left empty. */
void ddx_arena_adopt(ddx_arena_t *dst, ddx_arena_t *src);

/* A growable array of fixed-size elements, owned by whoever holds it. */
typedef struct ddx_vec {
  void *data;
  size_t len, cap, elem;
} ddx_vec_t;

void ddx_vec_init(ddx_vec_t *v, size_t elem);
void ddx_vec_free(ddx_vec_t *v);
void *ddx_vec_push(ddx_vec_t *v);              /* returns the zeroed new slot, NULL on ENOMEM */
int ddx_vec_reserve(ddx_vec_t *v, size_t cap); /* room for cap elements; DDX_ENOMEM */
#define DDX_VEC_AT(v, type, i) (((type *)(v)->data)[i])

/* Parses "3.91 GiB", "991.56 MiB", "0 bytes", "2 GB", "42" into a number of
 * bytes (plain numbers unchanged). Returns false when s is not a number. */
bool ddx_parse_quantity(const char *s, double *out);

/* Length of the valid UTF-8 sequence at s (n bytes available), 0 if
 * invalid: no overlong forms, no surrogates, nothing above U+10FFFF. */
size_t ddx_utf8_len(const unsigned char *s, size_t n);
/* Writes code point cp as UTF-8 (1-4 bytes) at d; returns the length. */
size_t ddx_utf8_put(char *d, unsigned cp);

/* A JSON string literal's content s[from..) (from: just past the opening
 * quote). ddx_json_string_check finds the closing quote (*end) or the
 * first problem (*at). Strict (RFC 8259, as jansson): UTF-8 checked,
 * surrogates paired; lenient: any bytes >= 0x20, lone surrogates kept. */
typedef enum ddx_jstr_err {
  DDX_JSTR_OK = 0,
  DDX_JSTR_UNTERMINATED, /* no closing quote (or a backslash last) */
  DDX_JSTR_CONTROL,      /* a raw byte < 0x20 */
  DDX_JSTR_ESCAPE,       /* a backslash not followed by an escape letter */
  DDX_JSTR_BAD_U,        /* \u without four hex digits */
  DDX_JSTR_SURROGATE,    /* strict: an unpaired surrogate */
  DDX_JSTR_UTF8          /* strict: invalid UTF-8 */
} ddx_jstr_err_t;
ddx_jstr_err_t ddx_json_string_check(const char *s, size_t len, size_t from, bool strict,
                                     size_t *end, size_t *at);
/* Decodes checked content s[from..end) into out (room for end - from + 1
 * bytes: decoding never grows it), NUL-terminates it, returns its length. */
size_t ddx_json_string_decode(const char *s, size_t from, size_t end, char *out);

/* A sorted set of ranks (int32, duplicates dropped). */
typedef struct ddx_rankset {
  int32_t *v;
  size_t n, cap;
} ddx_rankset_t;

void ddx_rankset_add(ddx_rankset_t *s, int32_t r);
bool ddx_rankset_has(const ddx_rankset_t *s, int32_t r);
void ddx_rankset_free(ddx_rankset_t *s);
/* Writes "0-6,8,10-63" into out (truncated with "..." when too long). */
void ddx_rankset_format(const ddx_rankset_t *s, char *out, size_t cap);

/* A growable NUL-terminated string; the holder frees s.s (or takes it). */
typedef struct ddx_sb {
  char *s;
  size_t len, cap;
} ddx_sb_t;

void ddx_sb_init(ddx_sb_t *b);
void ddx_sb_free(ddx_sb_t *b);
void ddx_sb_putn(ddx_sb_t *b, const char *s, size_t n);
void ddx_sb_puts(ddx_sb_t *b, const char *s);
void ddx_sb_printf(ddx_sb_t *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Appends s[0..n) with each byte that does not start valid UTF-8 replaced
 * by U+FFFD (as editors decode it): log bytes made fit for JSON. */
void ddx_sb_put_utf8_repaired(ddx_sb_t *b, const char *s, size_t n);
/* Returns the string and leaves b empty; never NULL unless out of memory. */
char *ddx_sb_take(ddx_sb_t *b);

#endif
