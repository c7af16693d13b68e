/* ddx/events.h - owns the compact event file: what a scan found on one
 * node (hits with their line metadata and facts, traceback frames, the
 * layout, per-rule counts and per-rank progress) written as JSON lines, and
 * read back into a scan so that `ddx merge` diagnoses a whole job from the
 * kilobytes each node produced instead of its gigabytes of logs. The
 * format is versioned ("ddx_events": 1); rules are named by id, so event
 * files survive catalog changes (hits of unknown rules are skipped).
 *
 * An events file is input like any other: the reader trusts none of its
 * numbers or strings. What it refuses (the whole file) and what it skips
 * (one item, with a counted warning) is described at the top of the reader
 * in server/engine/events.c. */
#ifndef DDX_EVENTS_H
#define DDX_EVENTS_H

#include <stddef.h>
#include <stdio.h>

#include "ddx/scan.h"
#include "ddx/util.h"

/* The ranges the reader accepts (each field's meaning in line.h/scan.h). */
#define DDX_EVENTS_MAX_RANK 999999999            /* global and local ranks (-1: unknown) */
#define DDX_EVENTS_MAX_PROGRESS_RANK 1048575     /* a progress row's rank (the scan's table) */
#define DDX_EVENTS_MAX_TS 1000000000000000LL     /* ts_ms (-1: unknown): past the year 9999 */
#define DDX_EVENTS_MAX_PID 9999999999LL          /* a line's process id (-1: unknown) */
#define DDX_EVENTS_MAX_COUNT 9007199254740992LL  /* bytes, lines, counts: 2^53 */
#define DDX_EVENTS_MAX_INPUTS 1000000            /* inputs named by one header */
#define DDX_EVENTS_NAME_MAX (3 * 4096)           /* an input's name, bytes */
#define DDX_EVENTS_STR_MAX 4096                  /* a frame's file or function, bytes */
#define DDX_EVENTS_HEADER_MAX ((size_t)64 << 20) /* the header line, bytes */
#define DDX_EVENTS_LINE_MAX ((size_t)1 << 20)    /* any other line, bytes */
#define DDX_EVENTS_WARN_SHOWN 5                  /* skipped items named one by one */

/* What one ddx_events_read_ex call took and skipped. */
typedef struct ddx_events_stats {
  size_t sections; /* headers read (files concatenated with cat count one each) */
  size_t events;   /* hit and frame lines taken into the scan */
  size_t damaged;  /* items skipped: a field missing, of the wrong JSON type or out of range */
  size_t unknown;  /* items of rules, patterns or captures this catalog does not have */
  size_t capped;   /* items past the scan's storage caps (as a scan drops them) */
} ddx_events_stats_t;

/* Writes everything the diagnosis needs from s to f. */
int ddx_events_write(const ddx_scan_t *s, FILE *f, ddx_error_t *err);

/* Appends the inputs and events of one event file to s (a scan made with
 * ddx_scan_init on the catalog that will diagnose it). The input names are
 * prefixed with path ("node-3.events: train.log"). Returns 0, or a negative
 * DDX_E* code with err naming the file (and line) when the file is refused;
 * s may then hold part of it and is only fit for ddx_scan_free. Skipped
 * items are reported on warn ("ddx: warning: path:17: rank -5 out of range
 * (-1 to 999999999); event skipped"; NULL: silent) and counted in *stats
 * (may be NULL). */
int ddx_events_read_ex(ddx_scan_t *s, const char *path, FILE *warn, ddx_events_stats_t *stats,
                       ddx_error_t *err);

/* ddx_events_read_ex warning on stderr. */
int ddx_events_read(ddx_scan_t *s, const char *path, ddx_error_t *err);

#endif
