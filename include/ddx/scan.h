/* ddx/scan.h - owns the streaming scan: raw bytes in (any number of inputs,
 * fed in pieces of any size), hits out. It splits lines at \n, \r\n and a
 * bare \r (as LSP counts them), runs the catalog's prefilter over whole
 * buffers, and only on lines where a literal hit normalises the line
 * (ddx/line.h) and runs the pcre2 patterns whose literal hit. Memory is a
 * fixed buffer plus what the hits need: it does not grow with input size
 * (hits per rule are capped; counts are kept beyond the cap). */
#ifndef DDX_SCAN_H
#define DDX_SCAN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ddx/layout.h"
#include "ddx/line.h"
#include "ddx/rules.h"
#include "ddx/util.h"

#define DDX_SCAN_BUF (1u << 21)          /* read buffer */
#define DDX_SCAN_MAX_HITS_PER_RULE 4096  /* stored signature hits per rule */
#define DDX_SCAN_MAX_CTX_HITS 200000     /* stored context hits in all */
#define DDX_SCAN_TEXT_MAX 1024           /* stored normalised text per hit */
#define DDX_SCAN_FACT_MAX 256            /* stored bytes of one captured fact */
#define DDX_LAYOUT_LINE_MAX (256u << 10) /* longest launcher layout line read */

typedef struct ddx_fact {
  const char *name, *value;
} ddx_fact_t;

typedef struct ddx_hit {
  uint32_t rule;
  uint16_t pattern;
  uint8_t is_ctx;
  uint32_t input;
  uint64_t line;   /* 1-based */
  uint64_t offset; /* byte offset of the line start in its input */
  uint32_t column; /* 1-based byte column of the match in the normalised text */
  ddx_line_meta_t meta;
  const char *text; /* normalised line (signature hits only), arena-owned */
  ddx_fact_t *facts;
  uint16_t nfacts;
} ddx_hit_t;

/* One line of a Python traceback (its start or a frame), kept so that
 * tracebacks can be reassembled per rank even when ranks interleave. */
typedef struct ddx_frame {
  uint32_t input;
  uint64_t line;
  int32_t rank, local_rank;
  bool start;       /* "Traceback (most recent call last)" */
  uint32_t lineno;  /* frame: source line */
  const char *file; /* frame: source file (arena) */
  const char *func; /* frame: function (arena) */
  char host[DDX_HOST_MAX];
} ddx_frame_t;

#define DDX_SCAN_MAX_FRAMES 200000

typedef struct ddx_scan_input {
  const char *name;
  uint64_t bytes, lines;
  ddx_line_meta_t defaults; /* what the input's path says (torchrun --log-dir
                               local rank, Slurm node), preset on each line */
  uint64_t line_no;         /* ddx_scan_feed_lines: number of the next line */
  uint64_t last_sig;        /* line of the last stored signature hit (0: none) */
  int32_t wrap;             /* the width its lines were hard-wrapped at (a paste
                               from a narrow terminal, fold, e-mail): 0 none,
                               -1 not decided yet (see wrap_width in scan.c) */
  bool wrap_words;          /* wrapped at spaces (a space goes back in), not at
                               exactly the width (nothing does) */
  int8_t html;              /* HTML-escaped (`&quot;`, `&#x27;`, `&lt;`: copied from
                               an HTML page's source or an export): 1 yes, 0 no,
                               -1 not decided yet (see html_escaped in scan.c) */
} ddx_scan_input_t;

/* Where each rank last made progress (hits of an anchor-last rule): the
 * line and time of its latest event, indexed by global rank.
 *
 * Progress lines are most of a training log, so once a rule has stored
 * DDX_SCAN_MAX_HITS_PER_RULE hits its candidates in each block are read
 * from the block's end backwards, and the rest of the block is skipped as
 * soon as the rule's newest event and the newest event of every rank
 * already known to make progress are found; skipped candidates count as
 * events. A rank whose first progress event falls in a skipped stretch is
 * seen at its next event. */
typedef struct ddx_rank_progress {
  uint64_t *line; /* 0: never seen */
  int64_t *ts;
  uint32_t *input;
  uint32_t *block; /* scan bookkeeping: the block in which the rank's newest
                      event was last taken (see ddx_scan_t.block) */
  size_t n;        /* ranks 0..n-1 */
  size_t known;    /* ranks with line != 0 */
} ddx_rank_progress_t;

/* The newest hit of an anchor-last rule past the storage cap. */
typedef struct ddx_pending {
  ddx_hit_t hit;
  char *text; /* malloc'd once, DDX_SCAN_TEXT_MAX + 1 */
  size_t len;
  bool active;
} ddx_pending_t;

typedef struct ddx_scan {
  const ddx_catalog_t *cat;
  ddx_arena_t arena;             /* owns hit texts and facts */
  ddx_vec_t hits;                /* ddx_hit_t, in input order then line order */
  ddx_vec_t inputs;              /* ddx_scan_input_t */
  ddx_vec_t frames;              /* ddx_frame_t, in input then line order */
  ddx_layout_t *layout;          /* hosts and ranks, from launcher lines */
  uint64_t *rule_hits;           /* per rule: signature hits seen (stored or not) */
  uint32_t *rule_stored;         /* per rule: signature hits stored */
  size_t *rule_last;             /* per rule: index+1 of the last stored hit */
  ddx_pending_t *pending;        /* per rule: see ddx_pending_t */
  ddx_rank_progress_t *progress; /* per rule (anchor-last rules only) */
  size_t ctx_stored;
  /* Context hits are kept only where a rule can look at them: the first
   * per input of a file-scope context, and window-scope ones within
   * ctx_before lines above or ctx_after lines below a stored signature
   * hit; the ones above wait in ctx_ring until a signature hit comes. */
  int ctx_before, ctx_after; /* the catalog's widest windows */
  ddx_vec_t ctx_ring;        /* ddx_hit_t, recent context hits not yet kept */
  uint32_t *ctx_file_seen;   /* per flat context id: input + 1 of its kept hit */
  size_t *ctx_base;          /* per rule: its first flat context id */
  uint64_t bytes, lines;
  uint64_t regex_errors;       /* match/depth limit hits */
  uint64_t *rule_regex_errors; /* per rule */
  /* streaming state of the current input */
  char *buf;
  size_t len;
  uint64_t base;    /* input offset of buf[0] */
  uint64_t line_no; /* line number of the line starting at count_pos */
  size_t count_pos; /* buffer position up to which terminators are counted */
  bool open;
  uint32_t cur;   /* index of the input being scanned */
  char last_byte; /* last byte fed to the current input */
  /* scratch */
  void *md;
  char *norm;
  char *raw;           /* a raw layout line, NUL-terminated (allocated on first use) */
  char *join;          /* a hard-wrapped line joined again (allocated on first use) */
  ddx_vec_t groups;    /* wrap_group_t: the joined lines of one buffer */
  ddx_vec_t cands;     /* candidate (pos, literal) pairs of one buffer */
  ddx_vec_t cands_tmp; /* merge scratch for cands */
  ddx_vec_t deferred;  /* progress candidates past the cap, one block */
  uint32_t block;      /* number of the block being processed (from 1) */
  bool avx2;           /* count line terminators with AVX2 (checked at init) */
  /* a part of a split file (split.c): the file's start decided that its
   * lines are neither rejoined nor decoded, so the part does not decide
   * again from its own first lines */
  bool no_rejoin;
  /* optional: called after each read of ddx_scan_path/_range with the
   * bytes read (from the scanning thread); non-zero stops the scan with
   * DDX_EINVAL. Progress and cancellation for front ends. */
  int (*on_read)(void *ctx, size_t n);
  void *on_read_ctx;
} ddx_scan_t;

int ddx_scan_init(ddx_scan_t *s, const ddx_catalog_t *cat);
void ddx_scan_free(ddx_scan_t *s);
int ddx_scan_begin(ddx_scan_t *s, const char *name);
/* Like ddx_scan_begin, with metadata every line of the input starts from
 * (a line's own prefixes still win). */
int ddx_scan_begin_with(ddx_scan_t *s, const char *name, const ddx_line_meta_t *defaults);
int ddx_scan_feed(ddx_scan_t *s, const char *data, size_t len);
int ddx_scan_end(ddx_scan_t *s);
/* Live inputs (ddx watch, ddx run): register an input, then feed it
 * complete lines (data ends at a line terminator; hold back a trailing \r
 * that may be half of \r\n) whenever they arrive, inputs in any order.
 * Hits stay grouped per line; ddx_diagnose may run between feeds. */
int ddx_scan_add_input(ddx_scan_t *s, const char *name, const ddx_line_meta_t *defaults,
                       uint32_t *index);
int ddx_scan_feed_lines(ddx_scan_t *s, uint32_t index, const char *data, size_t len);
/* Records that rank made progress (an event of anchor-last rule `rule`)
 * at line of input; used by the scan itself and to merge event files. */
int ddx_scan_note_progress(ddx_scan_t *s, uint32_t rule, int64_t rank, uint64_t line,
                           uint32_t input, const ddx_line_meta_t *meta);
/* Scans a whole file ("-" is stdin) with the fixed buffer: a regular
 * file or a pipe the user named, opened by ddx_file_open (a device or
 * socket is refused). */
int ddx_scan_path(ddx_scan_t *s, const char *path, ddx_error_t *err);
/* Parallel scans of one big file: ddx_scan_plan splits [0, size) into at
 * most n ranges that end just after a \n (fewer when lines are too long
 * to cut), writing n+1 bounds and returning the number of ranges. Each
 * range is scanned by its own ddx_scan_t (one per thread, sharing the
 * immutable catalog and the descriptor: ranges after the first are read
 * with pread) with ddx_scan_fd_range; ddx_scan_merge then
 * appends each later range, in order, to the scan of the first, as if
 * one scan had read the whole file: line numbers and offsets continue,
 * per-rule storage caps and the newest progress event are as one scan
 * keeps them. src is left empty (its arena moves to dst). */
size_t ddx_scan_plan(int fd, uint64_t size, size_t n, uint64_t *bounds);
/* Whether an input starting with data[0, len) has its lines joined or
 * decoded before matching (hard-wrapped, HTML-escaped): such a file is
 * scanned in one pass, as parts scanned apart could decide apart. */
bool ddx_scan_rejoins(const char *data, size_t len);

int ddx_scan_fd_range(ddx_scan_t *s, int fd, const char *path, uint64_t from, uint64_t to,
                      ddx_error_t *err);
int ddx_scan_merge(ddx_scan_t *dst, ddx_scan_t *src);
/* After ddx_diagnose: frees the streaming buffers and the scratch (the
 * 2 MiB read buffer, the layout, the match data, progress and pending
 * state) and keeps only the stored results a report or an editor feature
 * reads (hits, frames, inputs, counts, the arena). Memory then grows with
 * what the input held, not with the scanner. The scan can no longer be
 * fed, merged or diagnosed again; ddx_scan_free still frees it. */
void ddx_scan_trim(ddx_scan_t *s);
/* Scans one in-memory text as an input of its own. */
int ddx_scan_text(ddx_scan_t *s, const char *name, const char *text, size_t len);

#endif
