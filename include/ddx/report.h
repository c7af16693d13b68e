/* ddx/report.h - owns rendering a diagnosis for people and tools: the
 * 10-second text report, the JSON contract (docs/json-contract.md), SARIF
 * 2.1.0, the redacted evidence excerpt and catalog entries (ddx explain).
 * Rendering never changes the diagnosis. */
#ifndef DDX_REPORT_H
#define DDX_REPORT_H

#include <stdbool.h>
#include <stdio.h>

#include "ddx/diagnose.h"

typedef struct ddx_report_opts {
  bool color;      /* ANSI colours (only on a terminal) */
  double seconds;  /* wall time of the scan, for stats */
  bool verbose;    /* text: print every field */
  const char *hub; /* the encyclopedia's site (ddx_hub_find): SARIF links its
                      pages; NULL: no links */
} ddx_report_opts_t;

/* Each returns a malloc'd NUL-terminated string (caller frees) or NULL. */
char *ddx_report_json(const ddx_diagnosis_t *d, const ddx_report_opts_t *o);
char *ddx_report_sarif(const ddx_diagnosis_t *d, const ddx_report_opts_t *o);
char *ddx_report_text(const ddx_diagnosis_t *d, const ddx_report_opts_t *o);
/* The lines that support the diagnosis, with home folders, user names,
 * host names and IP addresses replaced: safe to paste into an issue. */
char *ddx_report_evidence(const ddx_diagnosis_t *d, const ddx_report_opts_t *o);
/* A catalog entry as text, or (json=true) as the JSON object. */
char *ddx_report_explain(const ddx_rule_t *r, const ddx_report_opts_t *o, bool json);
/* Appends s[0..n) for a terminal: each control character (C0 but tab,
 * DEL, C1 U+0080-U+009F) is shown escaped as \x1b or \u009b, and each
 * byte that does not start valid UTF-8 as \xff, so text from a log or a
 * rule pack cannot move the cursor, set a title or hide what follows.
 * Valid UTF-8 text is kept as it is. Every text rendering above applies it
 * to each piece of log or rule text; its own colours are the only escape
 * sequences it writes. */
void ddx_sb_put_term(ddx_sb_t *b, const char *s, size_t n);
/* ddx_sb_put_term of a NUL-terminated string (NULL: ""), malloc'd. */
char *ddx_term_escape(const char *s);
/* Appends s[0..n) as Markdown text (hovers, anything rendered as
 * Markdown): control characters as ddx_sb_put_term shows them, and the
 * characters that make links, images, HTML, emphasis or headings
 * (\ ` * _ [ ] ( ) < > ! # | ~ & { }) backslash-escaped, so a log line or a
 * rule pack cannot add a link, an image or a heading. With code_spans, the
 * `code` spans of the catalog's prose are kept as code spans. */
void ddx_sb_put_md(ddx_sb_t *b, const char *s, size_t n, bool code_spans);
/* Appends s[0..n) as one Markdown code span, fenced with more backticks
 * than any run inside it (control characters escaped). */
void ddx_sb_put_md_code(ddx_sb_t *b, const char *s, size_t n);
/* Replaces personal data in text (home folders, user names, IPs, the hosts
 * listed in hosts[0..nhosts)); returns a malloc'd string. */
char *ddx_redact(const char *text, const char *const *hosts, size_t nhosts);

/* How far off an out-of-memory failure was, from its facts (the OOM line's
 * tried / free / total / allocated / reserved-but-unallocated). */
typedef struct ddx_oom {
  double tried, free, total, allocated, unallocated; /* bytes; < 0 unknown */
  double short_by; /* tried - free: what the allocation lacked; < 0 unknown */
} ddx_oom_t;
/* False when the incident holds no "tried" fact (not an allocation failure). */
bool ddx_report_oom(const ddx_incident_t *inc, ddx_oom_t *out);
/* One sentence: "3.60 GiB short on rank 5 during the ZeRO-3 parameter
 * gather / prefetch: it asked for 3.91 GiB with 316.88 MiB free of 79.15
 * GiB", plus the fragmentation hint when the reserved-but-unallocated
 * memory alone would have covered it. Empty (0) when not an OOM. */
size_t ddx_report_oom_note(const ddx_incident_t *inc, char *buf, size_t cap);

#endif
