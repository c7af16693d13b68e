/* Every allocation of the rule loader, of ddx_diagnose and of ddx_catalog_check made to fail,
 * one at a time: each call either succeeds or returns out of memory,
 * never crashes, and (under ASan's leak checker, make test-asan) frees
 * everything it took. The engine's malloc, calloc and realloc calls, and
 * its calls of the arena from other files, are routed here by the linker
 * (-Wl,--wrap, CMakeLists.txt); jansson's and
 * pcre2's own allocations are not (they are their libraries' business).
 * Real inputs: the built-in catalog and corpus logs. */
#include <stdio.h>
#include <stdlib.h>

#include "check.h"
#include "ddx/diagnose.h"
#include "ddx/rules.h"
#include "ddx/scan.h"

void *__real_malloc(size_t n);
void *__real_calloc(size_t k, size_t n);
void *__real_realloc(void *p, size_t n);
void *__wrap_malloc(size_t n);
void *__wrap_calloc(size_t k, size_t n);
void *__wrap_realloc(void *p, size_t n);
void *__real_ddx_arena_alloc(ddx_arena_t *a, size_t n);
char *__real_ddx_arena_strndup(ddx_arena_t *a, const char *s, size_t n);
char *__real_ddx_arena_strdup(ddx_arena_t *a, const char *s);
void *__wrap_ddx_arena_alloc(ddx_arena_t *a, size_t n);
char *__wrap_ddx_arena_strndup(ddx_arena_t *a, const char *s, size_t n);
char *__wrap_ddx_arena_strdup(ddx_arena_t *a, const char *s);

/* The harness's own state: the allocations counted since arm(), and
 * which one fails (0: none). A test harness, not the engine. */
static unsigned long calls_, fail_at_;

static bool fails_now(void) {
  return ++calls_ == fail_at_;
}
void *__wrap_malloc(size_t n) {
  return fails_now() ? NULL : __real_malloc(n);
}
void *__wrap_calloc(size_t k, size_t n) {
  return fails_now() ? NULL : __real_calloc(k, n);
}
void *__wrap_realloc(void *p, size_t n) {
  return fails_now() ? NULL : __real_realloc(p, n);
}
/* An arena's block is malloc'ed once per many allocations: its calls from
 * other files are failure points of their own. */
void *__wrap_ddx_arena_alloc(ddx_arena_t *a, size_t n) {
  return fails_now() ? NULL : __real_ddx_arena_alloc(a, n);
}
char *__wrap_ddx_arena_strndup(ddx_arena_t *a, const char *s, size_t n) {
  return fails_now() ? NULL : __real_ddx_arena_strndup(a, s, n);
}
char *__wrap_ddx_arena_strdup(ddx_arena_t *a, const char *s) {
  return fails_now() ? NULL : __real_ddx_arena_strdup(a, s);
}

static void arm(unsigned long at) {
  calls_ = 0;
  fail_at_ = at;
}

static const char *const RULES[] = {"rules"};
/* Rule files that use every part of the format: the phase table, clues of
 * each kind, "fact*fact" and "k*fact" conditions, samples with facts,
 * symptoms, config_patches, the encyclopedia's fields. */
static const char *const SOME[] = {
    "rules/lifecycle.phases.json",
    "rules/deepspeed/ds.oom.activations.json",
    "rules/deepspeed/ds.oom.fragmentation.json",
    "rules/vllm/vllm.kv-cache-memory.json",
    "rules/python/py.file-not-found.json",
    "rules/train/train.nan-loss.json",
};
#define NSOME (sizeof SOME / sizeof *SOME)

/* Loads those rule files with allocation k failing; returns whether they
 * loaded (freed again). */
static bool load_failing(unsigned long k) {
  ddx_catalog_t *cat = NULL;
  ddx_error_t err = {0};
  arm(k);
  int rc = ddx_catalog_load(&cat, SOME, NSOME, &err);
  arm(0);
  if (rc) {
    CHECK(cat == NULL);
    CHECK(err.msg[0] != 0);
    return false;
  }
  CHECK(cat != NULL);
  ddx_catalog_free(cat);
  return true;
}

static void test_loader(void) {
  ddx_catalog_t *cat = NULL;
  ddx_error_t err = {0};
  arm(0);
  CHECK_EQ_INT(ddx_catalog_load(&cat, SOME, NSOME, &err), 0);
  unsigned long n = calls_;
  CHECK(cat && cat->nrules == NSOME - 1 && cat->nphases > 0);
  ddx_catalog_free(cat);
  CHECK(n > 50);
  unsigned long failed = 0;
  for (unsigned long k = 1; k <= n; k++)
    failed += !load_failing(k);
  CHECK(failed > 0);
  printf("loader: %lu allocations, %lu failures refused cleanly\n", n, failed);
}

/* Diagnoses a scanned input once per allocation of ddx_diagnose, that
 * allocation failing; returns how many failures were refused. */
static unsigned long diagnose_failing(const ddx_scan_t *scan, unsigned long *nallocs) {
  ddx_error_t err = {0};
  ddx_diagnosis_t d;
  arm(0);
  CHECK_EQ_INT(ddx_diagnose(&d, scan, &err), 0);
  unsigned long n = *nallocs = calls_;
  ddx_diagnosis_free(&d);
  unsigned long refused = 0;
  for (unsigned long k = 1; k <= n; k++) {
    arm(k);
    int rc = ddx_diagnose(&d, scan, &err);
    arm(0);
    if (rc) {
      CHECK_EQ_INT(rc, DDX_ENOMEM);
      CHECK_EQ_INT(d.n, 0);
      refused++;
    }
    ddx_diagnosis_free(&d);
  }
  return refused;
}

/* Every rule's first positive sample: each phase of ddx_diagnose (a hang's
 * quiet ranks, markers, collateral, inferred incidents) meets a failure. */
static void test_samples(const ddx_catalog_t *cat) {
  unsigned long refused = 0, samples = 0;
  for (size_t r = 0; r < cat->nrules; r++) {
    if (!cat->rules[r].npositive) continue;
    const char *text = cat->rules[r].positive[0].text;
    ddx_scan_t scan;
    arm(0);
    CHECK_EQ_INT(ddx_scan_init(&scan, cat), 0);
    ddx_scan_text(&scan, "sample", text, strlen(text));
    unsigned long n;
    refused += diagnose_failing(&scan, &n);
    samples++;
    ddx_scan_free(&scan);
  }
  CHECK(samples > 50);
  printf("%lu samples: %lu failures refused cleanly\n", samples, refused);
}

/* Four ranks log their steps; rank 2 stops at step 3: the hang's
 * incident holds its quiet ranks (a rank set of its own) when a later
 * phase of ddx_diagnose fails. */
static void test_hang(const ddx_catalog_t *cat) {
  char text[4096];
  size_t len = 0;
  for (int step = 1; step <= 10; step++)
    for (int r = 0; r < 4; r++)
      if (r != 2 || step <= 3)
        len += (size_t)snprintf(text + len, sizeof text - len,
                                "[Rank %d] step=%d, skipped=0, lr=[0.0001], mom=[(0.9, 0.999)]\n",
                                r, step);
  ddx_scan_t scan;
  arm(0);
  CHECK_EQ_INT(ddx_scan_init(&scan, cat), 0);
  ddx_scan_text(&scan, "hang.log", text, len);
  ddx_diagnosis_t d;
  ddx_error_t err = {0};
  CHECK_EQ_INT(ddx_diagnose(&d, &scan, &err), 0);
  CHECK(d.n > 0 && !strcmp(d.incidents[0].rule->id, "train.hang"));
  CHECK(d.n > 0 && d.incidents[0].quiet_first.n == 1);
  ddx_diagnosis_free(&d);
  unsigned long n, refused = diagnose_failing(&scan, &n);
  CHECK(refused > 0);
  printf("a hang: ddx_diagnose makes %lu allocations, %lu failures refused cleanly\n", n, refused);
  ddx_scan_free(&scan);
}

/* ddx rules check's findings (the built-in catalog has warnings: literals
 * that are not selective) with each allocation failing. */
static void test_check(const ddx_catalog_t *cat) {
  ddx_checks_t c;
  arm(0);
  CHECK_EQ_INT(ddx_catalog_check(cat, true, &c), 0);
  unsigned long n = calls_;
  CHECK(c.list.len > 0);
  ddx_checks_free(&c);
  unsigned long refused = 0;
  for (unsigned long k = 1; k <= n; k++) {
    arm(k);
    int rc = ddx_catalog_check(cat, true, &c);
    arm(0);
    if (rc) {
      CHECK_EQ_INT(rc, DDX_ENOMEM);
      refused++;
    }
    ddx_checks_free(&c);
  }
  CHECK(refused > 0);
  printf("rules check: %lu allocations, %lu failures refused cleanly\n", n, refused);
}

/* The same on a whole log. */
static void test_diagnose(const ddx_catalog_t *cat, const char *log) {
  ddx_scan_t scan;
  arm(0);
  CHECK_EQ_INT(ddx_scan_init(&scan, cat), 0);
  ddx_error_t err = {0};
  CHECK_EQ_INT(ddx_scan_path(&scan, log, &err), 0);
  unsigned long n, refused = diagnose_failing(&scan, &n);
  CHECK(refused > 0);
  printf("%s: ddx_diagnose makes %lu allocations, %lu failures refused cleanly\n", log, n, refused);
  ddx_scan_free(&scan);
}

int main(void) {
  test_loader();
  ddx_catalog_t *cat = NULL;
  ddx_error_t err = {0};
  CHECK_EQ_INT(ddx_catalog_load(&cat, RULES, 1, &err), 0);
  if (!cat) CHECK_DONE();
  /* collateral; a straggler by its sequence numbers (min_seq_ranks); a hang (anchor last,
   * quiet ranks); a cut traceback (inferred incident); the demo */
  static const char *const logs[] = {
      "tests/corpus/dev/004-nccl-watchdog-allreduce-llamafactory-numbered.log",
      "tests/corpus/dev/301-nemo-lightning-watchdog-allreduce-glued-tqdm.log",
      "tests/corpus/dev/016-torchrun-exitcode-9-eight-sigterm-longchat.log",
      "tests/corpus/dev/215-ds-pipe-zero1-hang-py-spy-get-grad-norm.log",
      "tests/corpus/dev/209-megatron-rank2-traceback-cut-before-device-assert.log",
      "examples/zero3-oom-8gpu.log",
  };
  for (size_t i = 0; i < sizeof logs / sizeof *logs; i++)
    test_diagnose(cat, logs[i]);
  test_samples(cat);
  test_hang(cat);
  test_check(cat);
  ddx_catalog_free(cat);
  CHECK_DONE();
}
