/* Unit tests for scan.c and diagnose.c on a small catalog written to a
 * temporary folder: chunking invariance, line counting, long lines,
 * priority, context windows, conditions, roles, fallback, triggers. */
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "check.h"
#include "ddx/diagnose.h"
#include "ddx/rules.h"
#include "ddx/scan.h"

static char dir[64];

static void write_rule(const char *id, const char *body) {
  char path[256];
  snprintf(path, sizeof path, "%s/%s.json", dir, id);
  FILE *f = fopen(path, "w");
  fprintf(f,
          "{\"id\": \"%s\", \"title\": \"%s\", \"phase\": \"step\", \"summary\": \"s\", "
          "\"mechanism\": \"m\", \"fix\": [\"f\"], \"samples\": {\"positive\": [{\"text\": "
          "\"x\"}]}, %s}",
          id, id, body);
  fclose(f);
}

static ddx_catalog_t *make_catalog(void) {
  strcpy(dir, "/tmp/ddx-test-XXXXXX");
  CHECK(mkdtemp(dir) != NULL);
  write_rule("t.oom",
             "\"severity\": \"error\", \"role\": \"cause\", \"priority\": 40, "
             "\"signatures\": [{\"regex\": \"CUDA out of memory\\\\. Tried to allocate "
             "(?<tried>[\\\\d.]+ [KMG]iB)(?:.*and (?<unalloc>[\\\\d.]+ [KMG]iB) is "
             "reserved by PyTorch but unallocated)?\", \"literals\": [\"CUDA out of memory\"]}]");
  write_rule("t.zero3", "\"severity\": \"error\", \"role\": \"cause\", \"priority\": 80, "
                        "\"signatures\": [{\"regex\": \"CUDA out of memory\", \"literals\": "
                        "[\"CUDA out of memory\"]}], "
                        "\"context\": [{\"regex\": \"fetch_sub_module\", \"literals\": "
                        "[\"fetch_sub_module\"], \"before\": 5, \"after\": 0}]");
  write_rule("t.frag",
             "\"severity\": \"error\", \"role\": \"cause\", \"priority\": 60, "
             "\"signatures\": [{\"regex\": \"CUDA out of memory\\\\. Tried to allocate "
             "(?<tried>[\\\\d.]+ [KMG]iB).*and (?<unalloc>[\\\\d.]+ [KMG]iB) is reserved\", "
             "\"literals\": [\"CUDA out of memory\"]}], "
             "\"conditions\": [{\"fact\": \"unalloc\", \"op\": \">=\", \"value\": \"2*tried\"}]");
  write_rule("t.watchdog",
             "\"severity\": \"error\", \"role\": \"collateral\", \"priority\": 25, "
             "\"signatures\": [{\"regex\": \"\\\\[Rank (?<rank>\\\\d+)\\\\] Watchdog caught(?: "
             "SeqNum=(?<seq>\\\\d+))?\", \"literals\": [\"Watchdog caught\"]}, "
             "{\"regex\": \"dump signal from rank (?<first_timeout_rank>\\\\d+)\", "
             "\"literals\": [\"dump signal\"]}]");
  write_rule(
      "t.kill9",
      "\"severity\": \"error\", \"role\": \"cause\", \"priority\": 90, "
      "\"signatures\": [{\"regex\": \"exitcode: -9\\\\)(?: local_rank: (?<local_rank>\\\\d+) "
      "\\\\(pid: (?<pid>\\\\d+))?\", \"literals\": [\"exitcode\"], \"fallback\": true}, "
      "{\"regex\": \"Killed process (?<pid>\\\\d+)\", \"literals\": [\"Killed process\"]}]");
  write_rule("t.generic", "\"severity\": \"error\", \"role\": \"cause\", \"priority\": 2, "
                          "\"signatures\": [{\"regex\": \"\\\\b[A-Z]\\\\w*Error: (?<message>.*)\", "
                          "\"literals\": [\"Error: \"]}]");
  write_rule(
      "t.sigbus",
      "\"severity\": \"error\", \"role\": \"cause\", \"priority\": 91, "
      "\"signatures\": [{\"regex\": \"exitcode: (?<code>-?\\\\d+)\", \"literals\": [\"exitcode\"], "
      "\"conditions\": [{\"fact\": \"code\", \"op\": \"==\", \"value\": -7}]}]");
  write_rule("t.pipe", "\"severity\": \"error\", \"role\": \"cause\", \"priority\": 70, "
                       "\"signatures\": [{\"regex\": \"element 0 of tensors does not require "
                       "grad\", \"literals\": [\"does not require grad\"], "
                       "\"context\": [{\"regex\": \"pipe/engine\", \"literals\": "
                       "[\"pipe/engine\"], \"before\": 10}]}, "
                       "{\"regex\": \"element [1-9]\\\\d* of tensors does not require grad\", "
                       "\"literals\": [\"does not require grad\"]}]");
  write_rule("t.wrap", "\"severity\": \"error\", \"role\": \"wrapper\", \"priority\": 15, "
                       "\"signatures\": [{\"regex\": \"failed \\\\(exitcode: 1\\\\) local_rank: "
                       "(?<local_rank>\\\\d+)\", \"literals\": [\"exitcode: 1\"]}]");
  write_rule("t.spawn",
             "\"severity\": \"error\", \"role\": \"wrapper\", \"priority\": 15, "
             "\"signatures\": [{\"regex\": \"-- Process (?<local_rank>\\\\d+) terminated with the "
             "following error:\", \"literals\": [\"terminated with the following error\"]}]");
  write_rule("t.spawnexit", "\"severity\": \"error\", \"role\": \"wrapper\", \"priority\": 15, "
                            "\"signatures\": [{\"regex\": \"ProcessExitedException: process "
                            "(?<local_rank>\\\\d+) terminated with signal (?<signal>SIG[A-Z]+)\", "
                            "\"literals\": [\"ProcessExitedException\"]}]");
  write_rule("t.tablerank",
             "\"severity\": \"error\", \"role\": \"wrapper\", \"priority\": 15, "
             "\"signatures\": [{\"regex\": \"rank\\\\s+: (?<rank>\\\\d+) \\\\(local_rank: "
             "(?<local_rank>\\\\d+)\\\\)\", \"literals\": [\"(local_rank: \"]}]");
  write_rule("t.tableexit",
             "\"severity\": \"error\", \"role\": \"wrapper\", \"priority\": 15, "
             "\"signatures\": [{\"regex\": \"exitcode\\\\s+: (?<exitcode>-?\\\\d+) \\\\(pid\", "
             "\"literals\": [\"exitcode  :\"]}]");
  write_rule("t.sigterm",
             "\"severity\": \"error\", \"role\": \"collateral\", \"priority\": 10, "
             "\"signatures\": [{\"regex\": \"Sending process (?<pid>\\\\d+) closing signal "
             "SIGTERM\", \"literals\": [\"closing signal\"]}]");
  write_rule("t.hang",
             "\"severity\": \"warning\", \"role\": \"cause\", \"priority\": 20, \"trigger\": "
             "\"no-error\", \"anchor\": \"last\", "
             "\"signatures\": [{\"regex\": \"step=(?<step>\\\\d+)\", \"literals\": [\"step=\"]}]");
  write_rule("t.skips", "\"severity\": \"warning\", \"role\": \"cause\", \"priority\": 30, "
                        "\"signatures\": [{\"regex\": \"skipped=(?<skipped>\\\\d+)\", "
                        "\"literals\": [\"skipped=\"], \"min_count\": 2}]");
  ddx_catalog_t *cat = NULL;
  ddx_error_t err = {0};
  const char *paths[] = {dir};
  int rc = ddx_catalog_load(&cat, paths, 1, &err);
  if (rc) fprintf(stderr, "load: %s\n", err.msg);
  CHECK_EQ_INT(rc, 0);
  return cat;
}

typedef struct result {
  ddx_scan_t scan;
  ddx_diagnosis_t d;
} result_t;

static void run_pieces(result_t *r, const ddx_catalog_t *cat, const char *text, size_t piece) {
  ddx_error_t err;
  ddx_scan_init(&r->scan, cat);
  ddx_scan_begin(&r->scan, "t");
  size_t n = strlen(text);
  for (size_t i = 0; i < n; i += piece)
    ddx_scan_feed(&r->scan, text + i, i + piece > n ? n - i : piece);
  ddx_scan_end(&r->scan);
  CHECK_EQ_INT(ddx_diagnose(&r->d, &r->scan, &err), 0);
}

static void run(result_t *r, const ddx_catalog_t *cat, const char *text) {
  run_pieces(r, cat, text, strlen(text) ? strlen(text) : 1);
}

/* run() on the text built in *b (which it takes and frees). */
static void run_sb(result_t *r, const ddx_catalog_t *cat, ddx_sb_t *b) {
  char *text = ddx_sb_take(b);
  run(r, cat, text);
  free(text);
}

static void done(result_t *r) {
  ddx_diagnosis_free(&r->d);
  ddx_scan_free(&r->scan);
}

static const char *primary(const result_t *r) {
  return r->d.n ? r->d.incidents[0].rule->id : "none";
}

static void test_chunking_and_lines(const ddx_catalog_t *cat) {
  const char *text =
      "a\r\nb\rc\n\n[rank2]: CUDA out of memory. Tried to allocate 1.00 GiB\r\nx\ry\n"
      "[Rank 4] Watchdog caught collective operation timeout\nlast";
  result_t whole;
  run(&whole, cat, text);
  CHECK_EQ_STR(primary(&whole), "t.oom");
  CHECK_EQ_INT(whole.d.incidents[0].hit->line, 5);
  CHECK_EQ_INT(whole.d.incidents[0].rank, 2);
  CHECK_EQ_INT(whole.scan.lines, 9);
  CHECK_EQ_INT(whole.d.incidents[0].ncollateral, 1);
  CHECK_EQ_INT(whole.d.incidents[0].collateral[0].first->line, 8);
  for (size_t piece = 1; piece < 9; piece++) {
    result_t r;
    run_pieces(&r, cat, text, piece);
    CHECK_EQ_STR(primary(&r), "t.oom");
    CHECK_EQ_INT(r.d.incidents[0].hit->line, 5);
    CHECK_EQ_INT(r.scan.lines, 9);
    CHECK_EQ_INT(r.d.incidents[0].ncollateral, 1);
    CHECK_EQ_INT(r.d.incidents[0].collateral[0].first->line, 8);
    done(&r);
  }
  done(&whole);
  result_t empty;
  run(&empty, cat, "");
  CHECK_EQ_INT(empty.scan.lines, 0);
  CHECK_EQ_INT(empty.d.n, 0);
  done(&empty);
}

static void test_long_line(const ddx_catalog_t *cat) {
  size_t big = 3 * (size_t)DDX_SCAN_BUF - 1000; /* longer than the scan buffer */
  char *text = malloc(big + 200);
  memset(text, 'x', big);
  strcpy(text + big, "\nok\nCUDA out of memory. Tried to allocate 2.00 GiB\n");
  result_t r;
  run_pieces(&r, cat, text, 65536);
  CHECK_EQ_STR(primary(&r), "t.oom");
  CHECK(r.d.n && r.d.incidents[0].hit->line == 3);
  CHECK_EQ_INT(r.scan.lines, 3);
  done(&r);
  /* The failure at the very end of a line longer than the scan buffer. */
  memset(text, 'x', big);
  strcpy(text + big, " CUDA out of memory. Tried to allocate 2.00 GiB\nnext\n");
  run_pieces(&r, cat, text, 65536);
  CHECK_EQ_STR(primary(&r), "t.oom");
  CHECK(r.d.n && r.d.incidents[0].hit->line == 1);
  CHECK_EQ_INT(r.scan.lines, 2);
  done(&r);
  free(text);
}

static void test_priority_context_conditions(const ddx_catalog_t *cat) {
  result_t r;
  /* Context within 5 lines before: the ZeRO-3 rule wins the line. */
  run(&r, cat,
      "  File \"x.py\", in fetch_sub_module\n  a\nCUDA out of memory. Tried to allocate 1.00 "
      "GiB\n");
  CHECK_EQ_STR(primary(&r), "t.zero3");
  done(&r);
  /* Context too far away: the generic OOM keeps it. */
  run(&r, cat,
      "fetch_sub_module\n1\n2\n3\n4\n5\n6\nCUDA out of memory. Tried to allocate 1.00 GiB\n");
  CHECK_EQ_STR(primary(&r), "t.oom");
  done(&r);
  /* Context on another rank does not count. */
  run(&r, cat,
      "[rank1]: fetch_sub_module\n[rank2]: CUDA out of memory. Tried to allocate 1.00 GiB\n");
  CHECK_EQ_STR(primary(&r), "t.oom");
  done(&r);
  /* Facts merge over an incident's events: the anchor's first. */
  run(&r, cat,
      "[rank1]: CUDA out of memory. Tried to allocate 1.00 GiB\n"
      "[rank2]: CUDA out of memory. Tried to allocate 2.00 GiB and 0.50 GiB is reserved by "
      "PyTorch but unallocated\n");
  CHECK_EQ_STR(ddx_incident_fact(&r.d.incidents[0], "tried"), "1.00 GiB");
  CHECK_EQ_STR(ddx_incident_fact(&r.d.incidents[0], "unalloc"), "0.50 GiB");
  done(&r);
  /* Condition on facts: 3 GiB unallocated >= 2 * 1 GiB tried. */
  run(&r, cat,
      "CUDA out of memory. Tried to allocate 1.00 GiB and 3.00 GiB is reserved by PyTorch but "
      "unallocated\n");
  CHECK_EQ_STR(primary(&r), "t.frag");
  done(&r);
  run(&r, cat,
      "CUDA out of memory. Tried to allocate 1.00 GiB and 1.00 GiB is reserved by PyTorch but "
      "unallocated\n");
  CHECK_EQ_STR(primary(&r), "t.oom");
  CHECK(r.d.n && !strcmp(ddx_hit_fact(r.d.incidents[0].hit, "unalloc"), "1.00 GiB"));
  done(&r);
}

static void test_roles(const ddx_catalog_t *cat) {
  result_t r;
  /* A later cause beats earlier collateral; the catch-all becomes collateral. */
  run(&r, cat,
      "[Rank 0] Watchdog caught x\n[Rank 1] Watchdog caught x\nRuntimeError: boom\n"
      "[rank5]: CUDA out of memory. Tried to allocate 1.00 GiB\n");
  CHECK_EQ_STR(primary(&r), "t.oom");
  CHECK_EQ_INT(r.d.n, 1);
  CHECK_EQ_INT(r.d.incidents[0].rank, 5);
  CHECK_EQ_INT(r.d.incidents[0].ncollateral, 2);
  done(&r);
  /* Only collateral: it is the primary, a little less sure than its own
   * signature (calibration: collateral names its class nearly as reliably
   * as a cause line, docs/accuracy.md), with a missing fact. */
  run(&r, cat,
      "[Rank 0] Watchdog caught x\n[Rank 2] Watchdog caught x\n[Rank 1] Watchdog caught x\n");
  CHECK_EQ_STR(primary(&r), "t.watchdog");
  CHECK_EQ_INT(r.d.incidents[0].ranks.n, 3);
  CHECK_EQ_INT(r.d.incidents[0].count, 3);
  CHECK(r.d.incidents[0].confidence < 0.85 && r.d.incidents[0].nmissing >= 1);
  done(&r);
  /* A fallback exit code yields to any real cause, even a catch-all. */
  run(&r, cat, "ValueError: bad shape\nfailed (exitcode: -9) local_rank: 1\n");
  CHECK_EQ_STR(primary(&r), "t.generic");
  done(&r);
  /* Signature-level context: element 0 needs a pipeline frame, element 1 not. */
  run(&r, cat, "RuntimeError: element 0 of tensors does not require grad\n");
  CHECK_EQ_STR(primary(&r), "t.generic");
  done(&r);
  run(&r, cat,
      "  File \"deepspeed/runtime/pipe/engine.py\", line 1, in _exec_backward_pass\n"
      "RuntimeError: element 0 of tensors does not require grad\n");
  CHECK_EQ_STR(primary(&r), "t.pipe");
  done(&r);
  run(&r, cat, "RuntimeError: element 1 of tensors does not require grad\n");
  CHECK_EQ_STR(primary(&r), "t.pipe");
  done(&r);
  /* A signature-level condition picks the exit code it explains. */
  run(&r, cat, "failed (exitcode: -7) local_rank: 1\n");
  CHECK_EQ_STR(primary(&r), "t.sigbus");
  done(&r);
  run(&r, cat, "failed (exitcode: -9) local_rank: 1\n[Rank 0] Watchdog caught x\n");
  CHECK_EQ_STR(primary(&r), "t.kill9");
  CHECK(r.d.incidents[0].fallback);
  done(&r);
  /* No line of the cause names a rank: the launcher's first observed
   * failure does. */
  run(&r, cat, "ValueError: boom\nValueError: boom\nfailed (exitcode: 1) local_rank: 3 (pid: 9)\n");
  CHECK_EQ_STR(primary(&r), "t.generic");
  CHECK_EQ_INT(r.d.incidents[0].rank, 3);
  CHECK(r.d.incidents[0].rank_note && strstr(r.d.incidents[0].rank_note, "launcher"));
  done(&r);
  /* The kernel's line names only a pid: the launcher's line with the same
   * pid gives the rank. */
  run(&r, cat,
      "failed (exitcode: -9) local_rank: 3 (pid: 4242) of binary\n"
      "failed (exitcode: -9) local_rank: 5 (pid: 4243) of binary\n"
      "[Wed Nov 26 14:54:38 2025] Out of memory: Killed process 4243 (python)\n");
  CHECK_EQ_STR(primary(&r), "t.kill9");
  CHECK(!r.d.incidents[0].fallback);
  CHECK_EQ_INT(r.d.incidents[0].hit->line, 3);
  CHECK_EQ_INT(r.d.incidents[0].rank, 5);
  CHECK(r.d.incidents[0].rank_note && strstr(r.d.incidents[0].rank_note, "4243"));
  done(&r);
  /* A hang: rank 2's progress stops first while the others go on. */
  run(&r, cat,
      "[rank0]: step=1\n[rank1]: step=1\n[rank2]: step=1\n[rank3]: step=1\n"
      "[rank0]: step=2\n[rank1]: step=2\n[rank3]: step=2\n"
      "[rank0]: step=3\n[rank1]: step=3\n[rank3]: step=3\n");
  CHECK_EQ_STR(primary(&r), "t.hang");
  CHECK_EQ_INT(r.d.incidents[0].rank, 2);
  CHECK(r.d.incidents[0].quiet_first.n == 1);
  CHECK(r.d.incidents[0].rank_note && strstr(r.d.incidents[0].rank_note, "stopped reporting"));
  done(&r);
  /* no-error trigger with anchor last: the last progress line of a hang. */
  run(&r, cat, "step=1\nstep=2\nstep=3\n");
  CHECK_EQ_STR(primary(&r), "t.hang");
  CHECK(r.d.n && !strcmp(ddx_hit_fact(r.d.incidents[0].hit, "step"), "3"));
  CHECK(!ddx_diagnosis_has_error(&r.d));
  done(&r);
  /* a progress line another rule also claims (an overflow count that
   * alone does not reach its min_count) is still the last progress */
  run(&r, cat, "step=1\nstep=2\nstep=3 skipped=5\n");
  CHECK_EQ_STR(primary(&r), "t.hang");
  CHECK(r.d.n && !strcmp(ddx_hit_fact(r.d.incidents[0].hit, "step"), "3"));
  done(&r);
  run(&r, cat, "step=1\nCUDA out of memory. Tried to allocate 1.00 GiB\n");
  CHECK_EQ_STR(primary(&r), "t.oom");
  CHECK_EQ_INT(r.d.n, 1);
  done(&r);
}

/* Past the storage cap, progress candidates are read backwards per block
 * and most are skipped: every rank's newest event and the newest hit must
 * still be exact, wherever in a block a rank stops. */
static void test_progress_past_cap(const ddx_catalog_t *cat) {
  const ddx_rule_t *hang = ddx_catalog_find(cat, "t.hang");
  CHECK(hang != NULL);
  if (!hang) return;
  for (int stop_frac = 1; stop_frac <= 3; stop_frac++) {
    ddx_sb_t b;
    ddx_sb_init(&b);
    uint64_t want[8] = {0}, line = 0;
    int steps = 3000, stop_at = steps * stop_frac / 4 + stop_frac * 7;
    for (int st = 1; st <= steps; st++)
      for (int rk = 0; rk < 8; rk++) {
        if (rk == 5 && st > stop_at) continue;
        /* padding lines keep the blocks busy between progress lines */
        ddx_sb_printf(&b, "[rank%d]: noise noise noise noise noise noise noise noise noise\n", rk);
        line++;
        ddx_sb_printf(&b, "[rank%d]: step=%d\n", rk, st);
        want[rk] = ++line;
      }
    result_t r;
    run_pieces(&r, cat, b.s, 65536);
    const ddx_rank_progress_t *pr = &r.scan.progress[hang->index];
    CHECK(pr->n >= 8);
    for (int rk = 0; rk < 8 && pr->n >= 8; rk++)
      CHECK_EQ_INT(pr->line[rk], want[rk]);
    CHECK_EQ_STR(primary(&r), "t.hang");
    CHECK_EQ_INT(r.d.incidents[0].rank, 5);
    CHECK(r.d.n && !strcmp(ddx_hit_fact(r.d.incidents[0].hit, "step"), "3000"));
    CHECK_EQ_INT(r.d.incidents[0].hit->line, want[7]);
    /* past the cap, stretches no rank needs are not read: the count is
     * the events read, between the cap and every progress line */
    CHECK(r.scan.rule_hits[hang->index] >= DDX_SCAN_MAX_HITS_PER_RULE);
    CHECK(r.scan.rule_hits[hang->index] <= (uint64_t)(steps * 7 + stop_at));
    done(&r);
    ddx_sb_free(&b);
  }
}

static void test_straggler_inference(const ddx_catalog_t *cat) {
  result_t r;
  /* Ranks 0-3 and 5-7 wait; rank 4 never reports: the suspect. */
  run(&r, cat,
      "[Rank 0] Watchdog caught\n[Rank 1] Watchdog caught\n[Rank 2] Watchdog caught\n"
      "[Rank 3] Watchdog caught\n[Rank 5] Watchdog caught\n[Rank 6] Watchdog caught\n"
      "[Rank 7] Watchdog caught\n");
  CHECK_EQ_STR(primary(&r), "t.watchdog");
  CHECK_EQ_INT(r.d.incidents[0].rank, 4);
  CHECK(r.d.incidents[0].rank_note && strstr(r.d.incidents[0].rank_note, "inference"));
  done(&r);
  /* Everyone reports, but rank 2 is stuck at an older SeqNum. */
  run(&r, cat,
      "[Rank 0] Watchdog caught SeqNum=78\n[Rank 1] Watchdog caught SeqNum=78\n"
      "[Rank 2] Watchdog caught SeqNum=77\n[Rank 3] Watchdog caught SeqNum=78\n");
  CHECK_EQ_INT(r.d.incidents[0].rank, 2);
  CHECK(r.d.incidents[0].rank_note && strstr(r.d.incidents[0].rank_note, "77"));
  done(&r);
  /* No basis for an inference: no note, no invented rank. */
  run(&r, cat, "[Rank 0] Watchdog caught SeqNum=5\n[Rank 1] Watchdog caught SeqNum=5\n");
  CHECK(r.d.incidents[0].rank_note == NULL);
  done(&r);
}

/* The rank resolver's cases that are one log as it stands: the rank it
 * gives the cause and, where set, the cause's local rank, how many
 * candidates, a part of its note and the primary rule. */
#define ANY_LOCAL (-2) /* the local rank is not checked */
typedef struct rank_case {
  const char *text;
  int rank, local;
  size_t ncands;    /* 0: not checked */
  const char *note; /* NULL: not checked */
  const char *rule; /* NULL: not checked */
} rank_case_t;

static const rank_case_t rank_cases[] = {
    /* srun -l over torchrun: "0:" is node 0, GPU/local 4 there is rank 4,
     * never the impossible pair (0, 4) */
    {.text = "0: [default4]:ValueError: boom\n0: failed (exitcode: 1) local_rank: 4 (pid: 9)\n",
     .rank = 4,
     .local = 4},
    /* srun -l over torchrun, c10d rendezvous: srun task 2 is the node whose
     * block torchrun printed (8-15), not node 2; local rank 3 is rank 11 */
    {.text = "2: [2024-05-14 02:23:17,103] torch.distributed.elastic.agent.server.api: [INFO] "
             "[default] Rendezvous complete for workers. Result:\n2:   group_rank=1\n"
             "2:   global_ranks=[8, 9, 10, 11, 12, 13, 14, 15]\n2: [default3]:ValueError: boom\n",
     .rank = 11,
     .local = 3},
    /* no layout line: a watchdog line of srun task 5 names local rank 1 as
     * rank 17, so task 5 holds 16-23 and its local rank 4 is rank 20 */
    {.text = "5: [default1]:[Rank 17] Watchdog caught x\n0: [default0]:[Rank 0] Watchdog caught x\n"
             "0: [default7]:[Rank 7] Watchdog caught x\n5: [default4]:ValueError: boom\n",
     .rank = 20,
     .local = 4},
    /* mp.spawn's parent names the child before its traceback: local rank 2
     * of worker-1 (4-7) is rank 6 */
    {.text =
         "[2024-01-01 00:00:00,000] [INFO] [launch.py:146:main] WORLD INFO DICT: {'worker-0': [0, "
         "1, 2, 3], 'worker-1': [0, 1, 2, 3]}\nworker-1: -- Process 2 terminated with the "
         "following error:\nworker-1: Traceback (most recent call last):\nworker-1:   File "
         "\"/w/a.py\", line 1, in f\nworker-1: ValueError: boom\n",
     .rank = 6,
     .local = 2,
     .rule = "t.generic"},
    /* srun's tasks are ranks: the first that failed on its own (exit code
     * 1; the rest were Terminated) on the cause's host */
    {.text = "node-3: ValueError: boom\nsrun: error: node-3: task 25: Exited with exit code 1\n"
             "srun: error: node-3: tasks 24,26-31: Terminated\n",
     .rank = 25,
     .local = ANY_LOCAL,
     .note = "first observed"},
    /* mp.spawn under srun, no prefix: nprocs=4 is the processes per node,
     * srun's tasks 0-1 are the nodes (8 ranks); spawn's "Process 1" is the
     * local rank; ranks 0-3 wait, so local rank 1 is rank 5 */
    {.text =
         "  File \"/w/a.py\", line 9, in <module>\n    mp.spawn(main, args=(args,), nprocs=4, "
         "join=True)\n-- Process 1 terminated with the following error:\nTraceback (most recent "
         "call last):\n  File \"/w/a.py\", line 1, in f\nValueError: boom\n[Rank 0] Watchdog "
         "caught x\n[Rank 1] Watchdog caught x\n[Rank 2] Watchdog caught x\n[Rank 3] Watchdog "
         "caught x\nsrun: error: h1: task 1: Exited with exit code 1\n"
         "srun: error: h0: task 0: Exited with exit code 1\n",
     .rank = 5,
     .local = 1,
     .note = "of 8 with its local"},
    /* the same with a cause that names no process: the one launcher report
     * of a process failing on its own (SIGSEGV; the other node's parent
     * reports its watchdog's SIGABRT) gives local rank 2: rank 6 */
    {.text =
         "    mp.spawn(main, args=(args,), nprocs=4, join=True)\nValueError: boom\n"
         "[Rank 0] Watchdog caught x\n[Rank 1] Watchdog caught x\n[Rank 2] Watchdog caught x\n"
         "[Rank 3] Watchdog caught x\ntorch.multiprocessing.spawn.ProcessExitedException: process "
         "2 terminated with signal SIGSEGV\ntorch.multiprocessing.spawn.ProcessExitedException: "
         "process 0 terminated with signal SIGABRT\nsrun: error: h1: task 1: Exited with exit code "
         "1\n",
     .rank = 6,
     .local = 2},
    /* every process of node 0 (srun task 0 over torchrun) fails the same
     * check: the agent's "first" failed local rank is a tie on whole
     * seconds, so no rank, but the node's ranks as candidates */
    {.text = "0: [default0]:[Rank 0] info\n0: ValueError: same check\n0: ValueError: same check\n"
             "0: ValueError: same check\n0: ValueError: same check\n"
             "0: failed (exitcode: 1) local_rank: 2 (pid: 9)\n",
     .rank = -1,
     .local = ANY_LOCAL},
    /* the same check failed once: the agent's local rank 2 stands */
    {.text = "0: [default0]:[Rank 0] info\n0: ValueError: same check\n"
             "0: failed (exitcode: 1) local_rank: 2 (pid: 9)\n",
     .rank = 2,
     .local = ANY_LOCAL},
    /* a Python traceback's process exits with 1: the spawn parent's report
     * of a SIGABRT on its node (a watchdog's) is another process's, so the
     * local rank stays unknown and the node's ranks are the candidates */
    {.text =
         "  local_ranks=[0, 1, 2, 3]\nh1: [Rank 5] info\nh1: Traceback (most recent call "
         "last):\nh1:   File \"/w/a.py\", line 1, in f\nh1: ValueError: boom\n"
         "h1: torch.multiprocessing.spawn.ProcessExitedException: process 3 terminated with signal "
         "SIGABRT\nh0: [Rank 0] Watchdog caught x\n",
     .rank = -1,
     .local = ANY_LOCAL,
     .ncands = 4},
    /* srun -l over torchrun: "0: Sending process ... SIGTERM" is the agent
     * of node 0 (srun's task id), not a rank that waited: local rank 0 on
     * node 0 stays the cause's rank 0 */
    {.text =
         "0: [default1]:[Rank 1] info\n0: ValueError: boom\n0: Sending process 11 closing signal "
         "SIGTERM\n0: failed (exitcode: 1) local_rank: 0 (pid: 9)\n",
     .rank = 0,
     .local = ANY_LOCAL},
    /* a traceback whose lines all name rank 3, its error line unprefixed */
    {.text = "[rank3]: Traceback (most recent call last):\n[rank3]:   File \"/w/a.py\", line 1, in "
             "<module>\n[rank3]:   File \"/w/b.py\", line 2, in f\nValueError: boom\n",
     .rank = 3,
     .local = ANY_LOCAL},
};

/* The rank resolver: the complement of the waiting ranks, per node when
 * the node is known; a launcher pair that contradicts the cause's local
 * rank never stands; the evidence is listed. */
static void test_rank_resolver(const ddx_catalog_t *cat) {
  result_t r;
  ddx_sb_t b;
  /* pdsh host only, no table: worker-3 holds 24-31 and only 26 is silent */
  ddx_sb_init(&b);
  ddx_sb_puts(&b, "[2024-01-01 00:00:00,000] [INFO] [launch.py:146:main] WORLD INFO DICT: {");
  for (int n = 0; n < 4; n++)
    ddx_sb_printf(&b, "%s'worker-%d': [0, 1, 2, 3, 4, 5, 6, 7]", n ? ", " : "", n);
  ddx_sb_puts(&b, "}\nworker-3: ValueError: boom\n");
  for (int k = 0; k < 32; k++)
    if (k != 26) ddx_sb_printf(&b, "worker-%d: [Rank %d] Watchdog caught x\n", k / 8, k);
  run_sb(&r, cat, &b);
  CHECK_EQ_STR(primary(&r), "t.generic");
  CHECK_EQ_INT(r.d.incidents[0].rank, 26);
  CHECK_EQ_INT(r.d.incidents[0].local_rank, 2);
  CHECK(r.d.incidents[0].rank_note &&
        strstr(r.d.incidents[0].rank_note, "only rank of worker-3 (24-31)") != NULL);
  CHECK(r.d.incidents[0].nrank_evidence >= 1 &&
        !strcmp(r.d.incidents[0].rank_evidence[0].source, "complement"));
  done(&r);
  /* the same without the waiting ranks: the node, with its ranks */
  run(&r, cat,
      "[2024-01-01 00:00:00,000] [INFO] [launch.py:146:main] WORLD INFO DICT: {'worker-0': [0, "
      "1, 2, 3], 'worker-1': [0, 1, 2, 3]}\nworker-1: ValueError: boom\n");
  CHECK_EQ_INT(r.d.incidents[0].rank, -1);
  CHECK_EQ_INT(r.d.incidents[0].nrank_candidates, 4);
  CHECK_EQ_INT(r.d.incidents[0].rank_candidates[0], 4);
  CHECK(r.d.incidents[0].rank_note && strstr(r.d.incidents[0].rank_note, "ranks 4-7") != NULL);
  done(&r);
  /* --tee local rank 1, every other rank of 4 waits; the launcher's pair
   * (local rank 0) contradicts the cause's local rank and is dropped */
  run(&r, cat,
      "[default1]:ValueError: boom\n[Rank 0] Watchdog caught x\n[Rank 2] Watchdog caught x\n"
      "[Rank 3] Watchdog caught x\nfailed (exitcode: 1) local_rank: 0 (pid: 7)\n");
  CHECK_EQ_INT(r.d.incidents[0].rank, 1);
  CHECK_EQ_INT(r.d.incidents[0].local_rank, 1);
  bool dropped = false;
  for (size_t i = 0; i < r.d.incidents[0].nrank_evidence; i++)
    dropped |= !strcmp(r.d.incidents[0].rank_evidence[i].source, "launcher-first-failure") &&
               !r.d.incidents[0].rank_evidence[i].consistent;
  CHECK(dropped);
  done(&r);
  /* no layout lines: the other hosts' lines name their ranks (0-7, 16-31),
   * so worker-1 holds 8-15; local rank 5 there is rank 13 */
  ddx_sb_init(&b);
  ddx_sb_puts(&b, "worker-1: [default5]:ValueError: boom\n");
  for (int k = 0; k < 32; k++)
    if (k < 8 || k >= 16) ddx_sb_printf(&b, "worker-%d: [Rank %d] Watchdog caught x\n", k / 8, k);
  run_sb(&r, cat, &b);
  CHECK_EQ_INT(r.d.incidents[0].rank, 13);
  CHECK_EQ_INT(r.d.incidents[0].local_rank, 5);
  CHECK(r.d.incidents[0].rank_note &&
        strstr(r.d.incidents[0].rank_note, "worker-1 (8-15)") != NULL);
  done(&r);
  /* torchrun's rendezvous gives the node count (group_world_size) and the
   * world: 8 processes per node; GPU... local rank 3 with 0-7 and 9-15
   * waiting is rank 11 */
  ddx_sb_init(&b);
  ddx_sb_puts(&b, "  group_world_size=2\n  global_world_sizes=[16, 16]\n[default3]:ValueError: "
                  "boom\n");
  for (int k = 0; k < 16; k++)
    if (k != 11 && k != 3) ddx_sb_printf(&b, "[Rank %d] Watchdog caught x\n", k);
  run_sb(&r, cat, &b);
  CHECK_EQ_INT(r.d.incidents[0].rank, -1); /* 3 and 11 are both silent */
  CHECK_EQ_INT(r.d.incidents[0].nrank_candidates, 2);
  done(&r);
  ddx_sb_init(&b);
  ddx_sb_puts(&b, "  group_world_size=2\n  global_world_sizes=[16, 16]\n[default3]:ValueError: "
                  "boom\n");
  for (int k = 0; k < 16; k++)
    if (k != 11) ddx_sb_printf(&b, "[Rank %d] Watchdog caught x\n", k);
  run_sb(&r, cat, &b);
  CHECK_EQ_INT(r.d.incidents[0].rank, 11);
  CHECK_EQ_INT(r.d.incidents[0].local_rank, 3);
  done(&r);
  /* a host whose own lines name rank 9 holds 8-15 (4 nodes of 8 from
   * local_ranks=[...]); spawn's report there names local rank 3: rank 11 */
  ddx_sb_init(&b);
  ddx_sb_puts(&b,
              "  local_ranks=[0, 1, 2, 3, 4, 5, 6, 7]\nh1: [Rank 9] info\nh1: ValueError: boom\n"
              "h1: torch.multiprocessing.spawn.ProcessExitedException: process 3 terminated "
              "with signal SIGSEGV\n");
  for (int k = 0; k < 32; k++)
    if (k < 8 || k >= 16) ddx_sb_printf(&b, "h%d: [Rank %d] Watchdog caught x\n", k / 8, k);
  run_sb(&r, cat, &b);
  CHECK_EQ_INT(r.d.incidents[0].rank, 11);
  CHECK_EQ_INT(r.d.incidents[0].local_rank, 3);
  done(&r);
  /* --tee local rank 7 of one of two nodes; 7 and 15 are both silent. A
   * table entry maps local rank 7 to 15, but its process was aborted
   * (-6, a watchdog's): the cause, a Python exception, exits with 1, so
   * the entry is another node's process and the rank stays unknown */
  for (int ec = 0; ec < 2; ec++) {
    ddx_sb_init(&b);
    ddx_sb_printf(&b,
                  "[default7]:Traceback (most recent call last):\n[default7]:  File \"/w/a.py\", "
                  "line 1, in f\n[default7]:ValueError: boom\n  rank      : 15 (local_rank: 7)\n"
                  "  exitcode  : %s (pid: 5)\n",
                  ec ? "1" : "-6");
    for (int k = 0; k < 16; k++)
      if (k != 7 && k != 15) ddx_sb_printf(&b, "[Rank %d] Watchdog caught x\n", k);
    run_sb(&r, cat, &b);
    CHECK_EQ_INT(r.d.incidents[0].rank, ec ? 15 : -1);
    if (!ec) {
      CHECK_EQ_INT(r.d.incidents[0].nrank_candidates, 2);
      CHECK(r.d.incidents[0].rank_note &&
            strstr(r.d.incidents[0].rank_note, "one of ranks 7,15") != NULL);
    }
    done(&r);
  }
  /* pdsh hosts without a layout: h0-h2 name ranks 0-23, h3 names none and
   * raised: it holds 24-31 (its ranks all silent), local rank 6 is 30 */
  ddx_sb_init(&b);
  ddx_sb_puts(&b, "h3: [default6]:Traceback (most recent call last):\nh3: [default6]:  File "
                  "\"/w/a.py\", line 1, in f\nh3: [default6]:ValueError: boom\n");
  for (int k = 0; k < 24; k++)
    ddx_sb_printf(&b, "h%d: [default%d]:[Rank %d] Watchdog caught x\n", k / 8, k % 8, k);
  run_sb(&r, cat, &b);
  CHECK_EQ_INT(r.d.incidents[0].rank, 30);
  CHECK_EQ_INT(r.d.incidents[0].local_rank, 6);
  done(&r);

  for (size_t i = 0; i < sizeof rank_cases / sizeof rank_cases[0]; i++) {
    const rank_case_t *c = &rank_cases[i];
    int failures = check_failures_;
    run(&r, cat, c->text);
    if (c->rule) CHECK_EQ_STR(primary(&r), c->rule);
    CHECK_EQ_INT(r.d.incidents[0].rank, c->rank);
    if (c->local != ANY_LOCAL) CHECK_EQ_INT(r.d.incidents[0].local_rank, c->local);
    if (c->ncands) CHECK_EQ_INT(r.d.incidents[0].nrank_candidates, c->ncands);
    if (c->note)
      CHECK(r.d.incidents[0].rank_note && strstr(r.d.incidents[0].rank_note, c->note) != NULL);
    if (check_failures_ > failures) /* which case: its first line */
      fprintf(stderr, "  in rank case %zu: %.*s\n", i, (int)strcspn(c->text, "\n"), c->text);
    done(&r);
  }
}

static void test_layout(const ddx_catalog_t *cat) {
  result_t r;
  /* DeepSpeed's WORLD INFO DICT: worker-1 holds global ranks 4-7. */
  run(&r, cat,
      "[2024-01-01 00:00:00,000] [INFO] [launch.py:146:main] WORLD INFO DICT: "
      "{'worker-0': [0, 1, 2, 3], 'worker-1': [0, 1, 2, 3]}\n"
      "worker-1: [default2]:CUDA out of memory. Tried to allocate 1.00 GiB\n");
  CHECK_EQ_INT(r.d.incidents[0].rank, 6);
  CHECK_EQ_INT(r.d.incidents[0].local_rank, 2);
  done(&r);
  /* A WORLD INFO DICT longer than the normaliser's cap (128 nodes). */
  {
    ddx_sb_t b;
    ddx_sb_init(&b);
    ddx_sb_puts(&b, "[2024-01-01 00:00:00,000] [INFO] [launch.py:146:main] WORLD INFO DICT: {");
    for (int n = 0; n < 128; n++)
      ddx_sb_printf(&b, "%s'worker-%d': [0, 1, 2, 3, 4, 5, 6, 7]", n ? ", " : "", n);
    ddx_sb_puts(&b, "}\nworker-113: [default5]:CUDA out of memory. Tried to allocate 1.00 GiB\n");
    char *text = ddx_sb_take(&b);
    CHECK(strlen(text) > 5000);
    run(&r, cat, text);
    CHECK_EQ_INT(r.d.incidents[0].rank, 909);
    done(&r);
    free(text);
  }
  /* Per-node launcher lines: nnodes/num_local_procs/node_rank under a pdsh host. */
  run(&r, cat,
      "node-b: [2024-01-01 00:00:00,000] [INFO] [launch.py:152:main] nnodes=3, "
      "num_local_procs=8, node_rank=2\n"
      "node-b: [default5]:CUDA out of memory. Tried to allocate 1.00 GiB\n");
  CHECK_EQ_INT(r.d.incidents[0].rank, 21);
  done(&r);
  /* Two hosts without a layout: the global rank is unknown, not guessed. */
  run(&r, cat,
      "node-d: [default1]:step\nnode-c: [default5]:CUDA out of memory. Tried to allocate 1.00 GiB\n"
      "node-d: [default2]: Traceback (most recent call last):\n");
  CHECK_EQ_INT(r.d.incidents[0].rank, -1);
  CHECK_EQ_INT(r.d.incidents[0].local_rank, 5);
  done(&r);
  /* A log that only ever names one host is that node's own log. */
  run(&r, cat, "node-c: [default5]:CUDA out of memory. Tried to allocate 1.00 GiB\n");
  CHECK_EQ_INT(r.d.incidents[0].rank, 5);
  done(&r);
}

static void test_live_inputs(const ddx_catalog_t *cat) {
  /* Two growing files fed in turns, as ddx watch does. */
  ddx_scan_t sc;
  ddx_diagnosis_t d;
  ddx_error_t err;
  uint32_t a, b;
  ddx_scan_init(&sc, cat);
  CHECK_EQ_INT(ddx_scan_add_input(&sc, "a.log", NULL, &a), 0);
  CHECK_EQ_INT(ddx_scan_add_input(&sc, "b.log", NULL, &b), 0);
  ddx_scan_feed_lines(&sc, b, "  File \"z.py\", line 1, in forward\n", 35);
  ddx_scan_feed_lines(&sc, a, "hello\r\n", 7);
  ddx_scan_feed_lines(&sc, b, "[rank1]: CUDA out of memory. Tried to allocate 2.00 GiB\n", 56);
  const char *l3 = "  File \"y.py\", line 1, in fetch_sub_module\nCUDA out of memory. Tried to "
                   "allocate 1.00 GiB\n";
  ddx_scan_feed_lines(&sc, a, l3, strlen(l3));
  CHECK_EQ_INT(ddx_diagnose(&d, &sc, &err), 0);
  /* a.log: its own frame a line above -> zero3; b.log's OOM has no such
   * context in its file (a.log's frame does not count), so it is generic. */
  bool zero3_a = false, oom_b = false;
  for (size_t i = 0; i < d.n; i++) {
    const ddx_incident_t *inc = &d.incidents[i];
    if (!strcmp(inc->rule->id, "t.zero3") && inc->hit->input == a && inc->hit->line == 3)
      zero3_a = true;
    if (!strcmp(inc->rule->id, "t.oom") && inc->hit->input == b && inc->hit->line == 2)
      oom_b = true;
  }
  CHECK(zero3_a);
  CHECK(oom_b);
  CHECK_EQ_INT(((ddx_scan_input_t *)sc.inputs.data)[a].lines, 3);
  ddx_diagnosis_free(&d);
  ddx_scan_free(&sc);
}

static void test_sequential_inputs(const ddx_catalog_t *cat) {
  /* Inputs scanned one after the other keep their own bytes, lines and
   * hits (ddx diagnose a.log b.log). */
  ddx_scan_t sc;
  ddx_scan_init(&sc, cat);
  ddx_scan_text(&sc, "a", "x\ny\n", 4);
  ddx_scan_text(&sc, "b", "z\nCUDA out of memory. Tried to allocate 1.00 GiB\nw", 50);
  const ddx_scan_input_t *in = sc.inputs.data;
  CHECK_EQ_INT(in[0].bytes, 4);
  CHECK_EQ_INT(in[0].lines, 2);
  CHECK_EQ_INT(in[1].bytes, 50);
  CHECK_EQ_INT(in[1].lines, 3);
  const ddx_hit_t *h = sc.hits.data;
  CHECK(sc.hits.len >= 1 && h[0].input == 1 && h[0].line == 2);
  ddx_scan_free(&sc);
}

static void test_path_meta(void) {
  ddx_line_meta_t m;
  ddx_layout_path_meta("logs/run1/attempt_0/7/stderr.log", &m);
  CHECK_EQ_INT(m.local_rank, 7);
  CHECK_EQ_INT(m.stream, 2);
  ddx_layout_path_meta("/x/slurm-123456-gpu-node-07.out", &m);
  CHECK_EQ_STR(m.host, "gpu-node-07");
  ddx_layout_path_meta("slurm-123456-12.out", &m);
  CHECK_EQ_INT(m.rank, 12);
  ddx_layout_path_meta("out/rank_31.log", &m);
  CHECK_EQ_INT(m.rank, 31);
  ddx_layout_path_meta("train.log", &m);
  CHECK(m.rank == -1 && m.local_rank == -1 && !m.host[0]);
  ddx_layout_path_meta("attempt_0/x/stderr.log", &m);
  CHECK_EQ_INT(m.local_rank, -1);
}

static void test_traceback_reassembly(const ddx_catalog_t *cat) {
  /* Two ranks' tracebacks interleaved line by line: each incident gets only
   * its own rank's frames, outermost first. */
  const char *text = "[rank0]: Traceback (most recent call last):\n"
                     "[rank1]: Traceback (most recent call last):\n"
                     "[rank0]:   File \"/work/train.py\", line 10, in <module>\n"
                     "[rank1]:   File \"/work/train.py\", line 10, in <module>\n"
                     "[rank1]:   File \"/work/model.py\", line 77, in forward\n"
                     "[rank0]:   File \"/usr/lib/python3/site-packages/torch/nn/functional.py\", "
                     "line 5, in linear\n"
                     "[rank1]:   File \"/usr/lib/python3/site-packages/torch/nn/functional.py\", "
                     "line 9, in softmax\n"
                     "[rank0]: CUDA out of memory. Tried to allocate 1.00 GiB\n";
  result_t r;
  run(&r, cat, text);
  CHECK_EQ_STR(primary(&r), "t.oom");
  CHECK(r.d.n == 1);
  const ddx_incident_t *inc = &r.d.incidents[0];
  CHECK_EQ_INT(inc->rank, 0);
  CHECK_EQ_INT(inc->nframes, 2);
  if (inc->nframes == 2) {
    CHECK_EQ_STR(inc->frames[0]->file, "/work/train.py");
    CHECK_EQ_STR(inc->frames[1]->func, "linear");
    CHECK_EQ_INT(inc->frames[1]->lineno, 5);
  }
  CHECK(inc->user_frame && !strcmp(inc->user_frame->file, "/work/train.py"));
  done(&r);
  /* A frame from an older traceback beyond the Traceback line is not taken. */
  run(&r, cat,
      "  File \"/old.py\", line 1, in f\nTraceback (most recent call last):\n"
      "  File \"/new.py\", line 2, in g\nCUDA out of memory. Tried to allocate 1.00 GiB\n");
  CHECK(r.d.n && r.d.incidents[0].nframes == 1 &&
        !strcmp(r.d.incidents[0].frames[0]->file, "/new.py"));
  done(&r);
}

/* Line numbers over random terminators (\n, \r\n, bare \r, a \r\n split
 * across feeds) and line lengths around the 64-byte blocks the terminator
 * counter takes at once: every stored hit's line is the naive count, with
 * and without AVX2. */
static void test_line_numbers_random(const ddx_catalog_t *cat) {
  enum { LINES = 3000 };
  char *text = malloc(LINES * 320 + 1);
  uint64_t *want = malloc(LINES * sizeof *want), *start = malloc(LINES * sizeof *start);
  CHECK(text && want && start);
  size_t n = 0, nwant = 0;
  unsigned seed = 12345;
  for (uint64_t line = 1; line <= LINES; line++) {
    seed = seed * 1103515245u + 12345u;
    size_t len = 1 + (seed >> 8) % 300; /* not empty: \r then \n would be one */
    bool hit = ((seed >> 20) & 7) == 0 && len >= 24;
    for (size_t k = 0; k < len; k++)
      text[n + k] = (char)('a' + (k * 7 + line) % 26);
    if (hit) {
      memcpy(text + n + len - 24, "[Rank 1] Watchdog caught", 24);
      start[nwant] = n;
      want[nwant++] = line;
    }
    n += len;
    unsigned t = (seed >> 24) % 3;
    if (t == 0)
      text[n++] = '\n';
    else if (t == 1)
      text[n++] = '\r';
    else
      text[n++] = '\r', text[n++] = '\n';
  }
  text[n] = 0;
  for (int avx = 0; avx < 2; avx++) {
    if (avx)
      unsetenv("DDX_NO_AVX2");
    else
      setenv("DDX_NO_AVX2", "1", 1);
    for (size_t piece = 997; piece <= n; piece += n) {
      ddx_scan_t s;
      ddx_scan_init(&s, cat);
      ddx_scan_begin(&s, "t");
      for (size_t i = 0; i < n; i += piece)
        ddx_scan_feed(&s, text + i, i + piece > n ? n - i : piece);
      ddx_scan_end(&s);
      CHECK_EQ_INT(s.lines, LINES);
      size_t got = 0;
      for (size_t i = 0; i < s.hits.len; i++) {
        const ddx_hit_t *h = &DDX_VEC_AT(&s.hits, ddx_hit_t, i);
        if (strcmp(cat->rules[h->rule].id, "t.watchdog")) continue;
        CHECK(got < nwant);
        if (got < nwant) CHECK_EQ_INT(h->line, want[got]);
        if (got < nwant) CHECK_EQ_INT(h->offset, start[got]);
        got++;
      }
      CHECK_EQ_INT(got, nwant);
      ddx_scan_free(&s);
    }
  }
  unsetenv("DDX_NO_AVX2");
  free(text);
  free(want);
  free(start);
}

/* A timeout incident: the rank whose watchdog fired first (the others got
 * its dump signal) is the rank that saw the hang first, above the prefix of
 * the line the incident is on. */
static void test_first_timeout(const ddx_catalog_t *cat) {
  result_t r;
  run(&r, cat,
      "[rank2]: [Rank 2] dump signal from rank 6\n"
      "[rank7]: [Rank 7] Watchdog caught SeqNum=5\n"
      "[rank3]: [Rank 3] Watchdog caught SeqNum=5\n");
  CHECK_EQ_STR(primary(&r), "t.watchdog");
  CHECK_EQ_INT(r.d.incidents[0].rank, 6);
  CHECK(r.d.incidents[0].rank_note && strstr(r.d.incidents[0].rank_note, "timed out first"));
  bool listed = false;
  for (size_t i = 0; i < r.d.incidents[0].nrank_evidence; i++)
    listed |= !strcmp(r.d.incidents[0].rank_evidence[i].source, "first-timeout") &&
              r.d.incidents[0].rank_evidence[i].rank == 6;
  CHECK(listed);
  done(&r);
  /* without the dump line the incident's own line decides */
  run(&r, cat,
      "[rank7]: [Rank 7] Watchdog caught SeqNum=5\n[rank3]: [Rank 3] Watchdog caught SeqNum=5\n");
  CHECK_EQ_INT(r.d.incidents[0].rank, 7);
  done(&r);
}

/* One process speaks (every rank the log names is 0): its cause, whose own
 * line names no rank, is rank 0, as the weakest evidence; a second rank
 * speaking leaves it unknown. */
static void test_only_rank(const ddx_catalog_t *cat) {
  result_t r;
  run(&r, cat,
      "ValueError: boom\n[rank0]: Traceback (most recent call last):\n"
      "[rank0]:   File \"a.py\", line 1, in f\n");
  CHECK_EQ_STR(primary(&r), "t.generic");
  CHECK_EQ_INT(r.d.incidents[0].rank, 0);
  CHECK(r.d.incidents[0].rank_note &&
        strstr(r.d.incidents[0].rank_note, "only rank the log names"));
  done(&r);
  run(&r, cat,
      "ValueError: boom\n[rank0]: Traceback (most recent call last):\n"
      "[rank0]:   File \"a.py\", line 1, in f\n[rank3]: Traceback (most recent call last):\n");
  CHECK_EQ_STR(primary(&r), "t.generic");
  CHECK_EQ_INT(r.d.incidents[0].rank, -1);
  done(&r);
  run(&r, cat, "ValueError: boom\n"); /* no rank named at all: no evidence */
  CHECK_EQ_INT(r.d.incidents[0].rank, -1);
  done(&r);
}

int main(void) {
  ddx_catalog_t *cat = make_catalog();
  if (!cat) CHECK_DONE();
  test_chunking_and_lines(cat);
  test_line_numbers_random(cat);
  test_long_line(cat);
  test_priority_context_conditions(cat);
  test_roles(cat);
  test_traceback_reassembly(cat);
  test_progress_past_cap(cat);
  test_straggler_inference(cat);
  test_layout(cat);
  test_rank_resolver(cat);
  test_first_timeout(cat);
  test_only_rank(cat);
  test_path_meta();
  test_live_inputs(cat);
  test_sequential_inputs(cat);
  ddx_catalog_free(cat);
  char cmd[128];
  snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
  CHECK_EQ_INT(system(cmd), 0);
  CHECK_DONE();
}
