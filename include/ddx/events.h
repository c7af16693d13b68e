/* ddx/events.h - owns the compact event file: what a scan found on one
 * node (hits with their line metadata and facts, traceback frames, the
 * layout, per-rule counts and per-rank progress) written as JSON lines, and
 * read back into a scan so that `ddx merge` diagnoses a whole job from the
 * kilobytes each node produced instead of its gigabytes of logs. The
 * format is versioned ("ddx_events": 1); rules are named by id, so event
 * files survive catalog changes (hits of unknown rules are skipped). */
#ifndef DDX_EVENTS_H
#define DDX_EVENTS_H

#include <stdio.h>

#include "ddx/scan.h"
#include "ddx/util.h"

/* Writes everything the diagnosis needs from s to f. */
int ddx_events_write(const ddx_scan_t *s, FILE *f, ddx_error_t *err);

/* Appends the inputs and events of one event file to s (a scan made with
 * ddx_scan_init on the catalog that will diagnose it). label prefixes the
 * input names ("node-3.events: train.log"). */
int ddx_events_read(ddx_scan_t *s, const char *path, ddx_error_t *err);

#endif
