/* ddx/jsonpos.h - owns reading JSON text with byte positions: the one
 * reader of ds_config.json (and of any JSON the language server points
 * into), and the one line-and-column counter of a byte offset.
 *
 * jansson gives values but not where they are; the callers need the bytes
 * of every key and value (a quick fix edits only the bytes it changes, a
 * check underlines the key it is about, a hover names the key under the
 * cursor). Three ways to read:
 *
 *  - strict (DDX_JP_STRICT): RFC 8259 JSON and nothing else, refused with a
 *    line, a column and what to do ("trailing comma: ds_config.json must be
 *    plain JSON for a safe automatic edit"); duplicate keys refused. The
 *    quick-fix planner (ddx/dsconfig.h) reads this way: an automatic edit of
 *    a file with comments could not promise to keep them.
 *  - lenient (DDX_JP_LENIENT): what DeepSpeed's hjson reader takes of a
 *    ds_config.json: comments (#, //, block comments), trailing commas, a
 *    byte-order mark, numbers as strtod reads them, lone surrogates in
 *    \u escapes; duplicate keys kept (the checks report them). The checks
 *    (ddx/dscheck.h) read this way.
 *  - tolerant (ddx_jp_scan_*, ddx_jp_key_at): no tree, token by token, on
 *    a text that may not parse yet (being typed) or is too big to build a
 *    tree for (a 1 MB vocab.json): each step says whether it could go on.
 *
 * Both tree modes keep, for every value, its bytes and, for a member, its
 * key's; the strict mode also the commas and the whitespace before each
 * member (what an edit needs). The top level must be an object (a
 * DeepSpeed config is one). The reader never looks past len (the text
 * need not be NUL-terminated) and its nesting is bounded (64 levels). */
#ifndef DDX_JSONPOS_H
#define DDX_JSONPOS_H

#include <stdbool.h>
#include <stddef.h>

#include "ddx/util.h"

#define DDX_JP_NONE ((size_t)-1) /* no such byte (a member without a comma) */

typedef enum { DDX_JP_STRICT, DDX_JP_LENIENT } ddx_jp_mode_t;

typedef enum {
  DDX_JP_OBJECT,
  DDX_JP_ARRAY,
  DDX_JP_STRING,
  DDX_JP_NUMBER,
  DDX_JP_TRUE,
  DDX_JP_FALSE,
  DDX_JP_NULL
} ddx_jp_kind_t;

/* A value; when it sits in an object it is also the member (key + value).
 * The member's full span is [lead, comma + 1) when it has a comma (its
 * leading whitespace starts at lead, right after the '{' or ','), else
 * [lead, end) followed by whitespace and the closing brace. */
typedef struct ddx_jp_node ddx_jp_node_t;
struct ddx_jp_node {
  ddx_jp_kind_t kind;
  size_t start, end;         /* the value's bytes */
  size_t lead;               /* first byte after the preceding '{', '[' or ',' */
  size_t key_start, key_end; /* the quoted key, members only */
  size_t comma;              /* the ',' after the value, or DDX_JP_NONE */
  const char *key, *str;     /* decoded key / string, NUL-terminated (may hold NULs) */
  size_t key_len, str_len;
  double num;
  ddx_jp_node_t *parent, *first, *last, *next, *prev;
  size_t count; /* members or elements */
};

/* Reads text[0, len) into a tree allocated in arena (the caller frees the
 * arena, also after a failure). Returns 0 with *root, DDX_ENOMEM, or
 * DDX_EINVAL with err ("line 3, column 7: ...": 1-based, the column counts
 * characters) and *err_off (may be NULL) the byte where reading stopped. */
int ddx_jp_parse(const char *text, size_t len, ddx_jp_mode_t mode, ddx_arena_t *arena,
                 ddx_jp_node_t **root, size_t *err_off, ddx_error_t *err);

/* The 1-based line and column (in characters: UTF-8 continuation bytes do
 * not count) of byte pos. Lines end at "\n", "\r\n" or a lone "\r", as LSP
 * counts them, so a message's "line 3" is the line the editor shows. */
void ddx_text_line_col(const char *s, size_t len, size_t pos, size_t *line, size_t *col);

/* ---- tolerant ---- */

typedef struct ddx_jp_scan {
  const char *s;
  size_t len, pos;
} ddx_jp_scan_t;

/* The end of the string whose opening quote is at open: its closing quote,
 * or the line break or the end of the text that cut it. */
size_t ddx_jp_string_end(const char *s, size_t len, size_t open);
/* Skips blanks and comments (#, //, block); false at the end of the text. */
bool ddx_jp_scan_ws(ddx_jp_scan_t *t);
/* The string at t->pos (its quote): its raw bytes [*a, *b), t->pos after
 * it. False when it does not end on its line. */
bool ddx_jp_scan_string(ddx_jp_scan_t *t, size_t *a, size_t *b);
/* Skips one value, a container with everything in it; false when the text
 * ends or breaks first. */
bool ddx_jp_scan_skip(ddx_jp_scan_t *t);

/* The dotted key path ("zero_optimization.stage") of the key under byte
 * off, or of the member whose scalar value is there; malloc'd, or NULL.
 * *kstart, *kend (may be NULL) get the key's bytes without the quotes.
 * Works on a text that does not parse. */
char *ddx_jp_key_at(const char *text, size_t len, size_t off, size_t *kstart, size_t *kend);

#endif
