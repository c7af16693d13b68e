/* ddx/live.h - owns the live front ends on libuv: `ddx run -- CMD...`
 * (wrap a training command, pass its output through unchanged, diagnose
 * it when it fails) and `ddx watch FILE|DIR...` (follow growing logs,
 * report each incident once as it appears, report a stall as a hang),
 * with Prometheus textfile metrics and an --on-failure hook. Both feed the
 * engine's live inputs (ddx_scan_feed_lines); neither adds diagnosis logic. */
#ifndef DDX_LIVE_H
#define DDX_LIVE_H

#include "ddx/rules.h"

/* argv holds the options after the subcommand (and, for run, "--" and the
 * command). Return the process exit status: run returns the command's own
 * (128 + signal when it was killed); watch 0, or 1 when a failure was seen
 * with --exit-on-failure; 2 on usage errors. */
int ddx_live_run(const ddx_catalog_t *cat, int argc, char **argv);
int ddx_live_watch(const ddx_catalog_t *cat, int argc, char **argv);

#endif
