/* ddx/live.h - owns the live front ends on libuv: `ddx run -- CMD...`
 * (wrap a training command, pass its output through unchanged, diagnose
 * it when it fails) and `ddx watch FILE|DIR...` (follow growing logs,
 * report each incident once as it appears), with Prometheus textfile
 * metrics and an --on-failure hook. Both feed the engine's live inputs
 * (ddx_scan_feed_lines); neither adds diagnosis logic.
 *
 * A hang is told by the clock: with --stall SECONDS (both modes) a stall is
 * reported once when no output came for that long, and once more when
 * output resumes; the incidents of no-error rules (train.hang) are never
 * reported from a diagnosis while the job runs, since every healthy run
 * matches them between two progress lines. watch writes its reports on
 * stdout (text, or JSON lines with --format json: the contract's incident
 * objects, and {"event":"stall"|"resumed",...}); run writes them on stderr,
 * its stdout being the command's. Text from rule packs, logs and file names
 * reaches the terminal escaped; metrics label values are escaped. */
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
