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
  bool color;     /* ANSI colours (only on a terminal) */
  double seconds; /* wall time of the scan, for stats */
  bool verbose;   /* text: print every field */
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
/* Replaces personal data in text (home folders, user names, IPs, the hosts
 * listed in hosts[0..nhosts)); returns a malloc'd string. */
char *ddx_redact(const char *text, const char *const *hosts, size_t nhosts);

#endif
