/* Unit tests for the differential (diagnose.c) and what it rests on
 * (rules.c, scan.c): the phase table and clues as loaded data and their
 * errors, frames of every traceback dialect, cut tracebacks that become
 * inferred incidents, the differential's order, shares and separator,
 * relations between facts. The catalog is written in memory. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "ddx/diagnose.h"
#include "ddx/rules.h"
#include "ddx/scan.h"

#define RULE_HEAD                                                                                  \
  "\"phase\": \"step\", \"summary\": \"s\", \"mechanism\": \"m\", \"fix\": [\"f\"], "              \
  "\"samples\": {\"positive\": [{\"text\": \"x\"}]}, \"severity\": \"error\", "

static const char *phases_json =
    "{\"phases\": ["
    "{\"id\": \"gather\", \"title\": \"ZeRO-3 gather\", \"frames\": [\":fetch_sub_module$\"]},"
    "{\"id\": \"forward\", \"title\": \"forward\", \"frames\": [\"models/.*:forward$\"]},"
    "{\"id\": \"serving-init\", \"title\": \"engine start\", \"frames\": [\"vllm/.*:__init__$\"]},"
    "{\"id\": \"save\", \"title\": \"checkpoint save\", \"frames\": [\":_save$\"]}"
    "]}";

static const char *rules_json[] = {
    "{\"id\": \"t.oom-gather\", \"title\": \"gather OOM\", " RULE_HEAD
    "\"role\": \"cause\", \"priority\": 80, \"prior\": 1.5, "
    "\"signatures\": [{\"regex\": \"CUDA out of memory\", \"literals\": [\"CUDA out of memory\"]}],"
    "\"context\": [{\"regex\": \"fetch_sub_module\", \"literals\": [\"fetch_sub_module\"], "
    "\"before\": 10}],"
    "\"fingerprint\": \"CUDA out of memory after fetch_sub_module\","
    "\"clues\": [{\"id\": \"g\", \"phase\": \"gather\", \"weight\": 2.5, \"why\": \"in the "
    "gather\"}]}",

    "{\"id\": \"t.assert\", \"title\": \"zero3 assert\", " RULE_HEAD
    "\"role\": \"cause\", \"priority\": 70, \"fingerprint\": \"AssertionError ds_status\", "
    "\"signatures\": [{\"regex\": \"AssertionError: .*ds_status\", \"literals\": "
    "[\"AssertionError\"]}],"
    "\"clues\": [{\"id\": \"g\", \"phase\": \"gather\", \"weight\": 2.0, \"why\": \"in the "
    "gather\"},"
    "{\"id\": \"tok\", \"regex\": \"ds_summary\", \"literals\": [\"ds_summary\"], \"weight\": 2.0, "
    "\"why\": \"names ds_summary\"}]}",

    "{\"id\": \"t.oom\", \"title\": \"plain OOM\", " RULE_HEAD
    "\"role\": \"cause\", \"priority\": 40, "
    "\"signatures\": [{\"regex\": \"CUDA out of memory\", \"literals\": [\"CUDA out of memory\"]}],"
    "\"clues\": [{\"id\": \"f\", \"phase\": [\"forward\", \"gather\"], \"weight\": 0.8, "
    "\"why\": \"in forward\"}]}",

    "{\"id\": \"t.kv\", \"title\": \"KV cache\", " RULE_HEAD
    "\"role\": \"cause\", \"priority\": 60, "
    "\"signatures\": [{\"regex\": \"No available memory for the cache blocks\", \"literals\": "
    "[\"No available memory\"]}],"
    "\"clues\": [{\"id\": \"start\", \"phase\": \"serving-init\", \"weight\": 0.1, \"why\": "
    "\"start\"},"
    "{\"id\": \"blocks\", \"regex\": \"# GPU blocks: (?<blocks>\\\\d+)\", \"literals\": "
    "[\"# GPU blocks\"], \"weight\": 0.05, \"why\": \"blocks\"},"
    "{\"id\": \"len\", \"regex\": \"max_model_len=(?<max_len>\\\\d+).*block_size=(?<bs>\\\\d+)\", "
    "\"literals\": [\"max_model_len=\"], \"weight\": 0.05, \"why\": \"len\"},"
    "{\"id\": \"short\", \"conditions\": [{\"fact\": \"max_len\", \"op\": \">\", \"value\": "
    "\"blocks*bs\"}], \"weight\": 3.0, \"why\": \"the KV cache holds fewer tokens than one "
    "request\"}]}",

    "{\"id\": \"t.exc\", \"title\": \"exception\", " RULE_HEAD
    "\"role\": \"cause\", \"priority\": 2, "
    "\"signatures\": [{\"regex\": \"\\\\b[A-Z]\\\\w*Error: (?<message>.*)\", \"literals\": "
    "[\"Error: \"]}]}",

    "{\"id\": \"t.save\", \"title\": \"save failure\", " RULE_HEAD
    "\"role\": \"cause\", \"priority\": 50, \"via_generic\": true, "
    "\"signatures\": [{\"regex\": \"No space left on device\", \"literals\": [\"No space left\"]}],"
    "\"clues\": [{\"id\": \"s\", \"phase\": \"save\", \"weight\": 2.5, \"why\": \"saving\"}]}",

    "{\"id\": \"t.cut\", \"title\": \"cut traceback\", " RULE_HEAD
    "\"role\": \"cause\", \"priority\": 1, \"inferred_only\": true, \"signatures\": []}",

    "{\"id\": \"t.ckpt\", \"title\": \"checkpoint\", " RULE_HEAD
    "\"role\": \"cause\", \"priority\": 5, \"marker\": \"checkpoint\", "
    "\"signatures\": [{\"regex\": \"Checkpoint (?<tag>\\\\S+) is ready now\", \"literals\": "
    "[\"is ready now\"]}]}",

    "{\"id\": \"t.overflow\", \"title\": \"overflow\", \"phase\": \"step\", \"summary\": \"s\", "
    "\"mechanism\": \"m\", \"fix\": [\"f\"], \"samples\": {\"positive\": [{\"text\": \"x\"}]}, "
    "\"severity\": \"warning\", \"role\": \"collateral\", \"priority\": 30, "
    "\"signatures\": [{\"regex\": \"OVERFLOW! scale (?<scale>\\\\d+)\", \"literals\": "
    "[\"OVERFLOW!\"], \"title\": \"overflow past warm-up\", \"min_count\": 2, "
    "\"conditions\": [{\"fact\": \"scale\", \"op\": \"<=\", \"value\": 512}]}]}",

    "{\"id\": \"t.progress\", \"title\": \"progress\", \"phase\": \"step\", \"summary\": \"s\", "
    "\"mechanism\": \"m\", \"fix\": [\"f\"], \"samples\": {\"positive\": [{\"text\": \"x\"}]}, "
    "\"severity\": \"warning\", \"role\": \"cause\", \"priority\": 20, \"trigger\": "
    "\"no-error\", \"anchor\": \"last\", \"signatures\": [{\"regex\": \"\\\\d+it/s\", "
    "\"literals\": [\"it/s\"]}]}",
};
#define NRULES (sizeof rules_json / sizeof *rules_json)

static ddx_catalog_t *load(const char *const *texts, size_t n, bool with_phases, ddx_error_t *err) {
  const char *names[16], *t[16];
  size_t lens[16];
  size_t k = 0;
  for (size_t i = 0; i < n; i++, k++) {
    static char namebuf[16][32];
    snprintf(namebuf[k], sizeof namebuf[k], "r%zu.json", i);
    names[k] = namebuf[k];
    t[k] = texts[i];
    lens[k] = strlen(texts[i]);
  }
  if (with_phases) {
    names[k] = "life.phases.json";
    t[k] = phases_json;
    lens[k] = strlen(phases_json);
    k++;
  }
  ddx_catalog_t *cat = NULL;
  ddx_catalog_load_texts(&cat, names, t, lens, k, err);
  return cat;
}

typedef struct run {
  ddx_scan_t scan;
  ddx_diagnosis_t d;
} run_t;

static void run(run_t *r, const ddx_catalog_t *cat, const char *text) {
  ddx_error_t err = {0};
  CHECK(ddx_scan_init(&r->scan, cat) == 0);
  CHECK(ddx_scan_text(&r->scan, "t.log", text, strlen(text)) == 0);
  CHECK(ddx_diagnose(&r->d, &r->scan, &err) == 0);
}

static void done(run_t *r) {
  ddx_diagnosis_free(&r->d);
  ddx_scan_free(&r->scan);
}

static const char *primary(const run_t *r) {
  return r->d.n ? r->d.incidents[0].rule->id : "none";
}

static void test_phase_table(const ddx_catalog_t *cat) {
  CHECK_EQ_INT(cat->nphases, 4);
  const ddx_phase_t *p = ddx_catalog_phase_of(cat, "/x/zero/coordinator.py", "fetch_sub_module");
  CHECK(p && !strcmp(p->id, "gather"));
  CHECK(ddx_catalog_phase_of(cat, "/x/models/llama.py", "forward") != NULL);
  CHECK(ddx_catalog_phase_of(cat, "/x/train.py", "main") == NULL);
  /* token clues are file-scope contexts that never gate the rule */
  const ddx_rule_t *a = ddx_catalog_find(cat, "t.assert");
  CHECK(a && a->nclues == 2 && a->clues[1].kind == DDX_CLUE_TOKEN);
  CHECK(a->ctx[a->clues[1].ctx_index].clue && a->ctx[a->clues[1].ctx_index].scope_file);
  CHECK(ddx_catalog_find(cat, "t.cut")->inferred_only);
}

static void expect_error(const char *rule, bool phases, const char *want) {
  ddx_error_t err = {0};
  const char *texts[] = {rule};
  ddx_catalog_t *cat = load(texts, 1, phases, &err);
  CHECK(cat == NULL);
  if (!strstr(err.msg, want)) fprintf(stderr, "error was: %s (wanted %s)\n", err.msg, want);
  CHECK(strstr(err.msg, want) != NULL);
  ddx_catalog_free(cat);
}

static void test_loader_errors(void) {
  /* a clue has exactly one kind */
  expect_error("{\"id\": \"t.a\", \"title\": \"a\", " RULE_HEAD
               "\"role\": \"cause\", \"priority\": 5, \"signatures\": [{\"regex\": \"x\", "
               "\"literals\": [\"xx\"]}], \"clues\": [{\"id\": \"c\", \"why\": \"w\", \"weight\": "
               "1, \"frame\": \"a\", \"phase\": \"gather\"}]}",
               true, "r0.json: $.clues[0]: a clue has exactly one of");
  /* the phase must be in the table */
  expect_error("{\"id\": \"t.a\", \"title\": \"a\", " RULE_HEAD
               "\"role\": \"cause\", \"priority\": 5, \"signatures\": [{\"regex\": \"x\", "
               "\"literals\": [\"xx\"]}], \"clues\": [{\"id\": \"c\", \"why\": \"w\", \"weight\": "
               "1, \"phase\": \"nowhere\"}]}",
               true, "$.clues[0].phase: \"nowhere\" is not a phase");
  /* a zero weight says nothing */
  expect_error("{\"id\": \"t.a\", \"title\": \"a\", " RULE_HEAD
               "\"role\": \"cause\", \"priority\": 5, \"signatures\": [{\"regex\": \"x\", "
               "\"literals\": [\"xx\"]}], \"clues\": [{\"id\": \"c\", \"why\": \"w\", \"weight\": "
               "0, \"frame\": \"a\"}]}",
               true, "$.clues[0].weight");
  /* a frame regex that does not compile names its clue */
  expect_error("{\"id\": \"t.a\", \"title\": \"a\", " RULE_HEAD
               "\"role\": \"cause\", \"priority\": 5, \"signatures\": [{\"regex\": \"x\", "
               "\"literals\": [\"xx\"]}], \"clues\": [{\"id\": \"c\", \"why\": \"w\", \"weight\": "
               "1, \"frame\": \"(\"}]}",
               true, "$.clues[0].frame: rule t.a clue c: regex does not compile");
  /* a token clue needs its literals (the prefilter's): the error names the
   * field, and the empty list the loader made in their place is not leaked
   * (ASan's leak check; a fuzz_rules find) */
  expect_error("{\"id\": \"t.a\", \"title\": \"a\", " RULE_HEAD
               "\"role\": \"cause\", \"priority\": 5, \"signatures\": [{\"regex\": \"x\", "
               "\"literals\": [\"xx\"]}], \"clues\": [{\"id\": \"c\", \"why\": \"w\", \"weight\": "
               "1, \"regex\": \"saved torch\"}]}",
               false, "r0.json: $.clues[0].literals: must not be empty");
  /* an inferred_only class has no signatures */
  expect_error("{\"id\": \"t.a\", \"title\": \"a\", " RULE_HEAD
               "\"role\": \"cause\", \"priority\": 5, \"inferred_only\": true, \"signatures\": "
               "[{\"regex\": \"x\", \"literals\": [\"xx\"]}]}",
               true, "an inferred_only class is raised by the engine itself");
  /* a phase table's frames compile */
  {
    ddx_error_t err = {0};
    const char *names[] = {"bad.phases.json", "r.json"};
    const char *texts[] = {"{\"phases\": [{\"id\": \"p\", \"title\": \"t\", \"frames\": [\"(\"]}]}",
                           rules_json[4]};
    size_t lens[] = {strlen(texts[0]), strlen(texts[1])};
    ddx_catalog_t *cat = NULL;
    CHECK(ddx_catalog_load_texts(&cat, names, texts, lens, 2, &err) != 0);
    CHECK(strstr(err.msg, "bad.phases.json: $.phases[0].frames[0]: phase p: regex") != NULL);
  }
  /* "fact*fact" loads; "k*" does not */
  expect_error("{\"id\": \"t.a\", \"title\": \"a\", " RULE_HEAD
               "\"role\": \"cause\", \"priority\": 5, \"signatures\": [{\"regex\": \"x\", "
               "\"literals\": [\"xx\"]}], \"conditions\": [{\"fact\": \"a\", \"op\": \">\", "
               "\"value\": \"2*\"}]}",
               false, "expected a fact name after");
}

static void test_frame_dialects(const ddx_catalog_t *cat) {
  run_t r;
  /* flattened onto one line, a notebook frame, a rich frame */
  run(&r, cat,
      "Traceback (most recent call last):   File \"/a/train.py\", line 3, in main     x()   File "
      "\"/a/site-packages/lib.py\", line 9, in inner\n"
      "File /home/u/site-packages/deepspeed/runtime/engine.py:1184, in "
      "DeepSpeedEngine._configure_optimizer(self, client_optimizer)\n"
      "\xe2\x94\x82 /usr/lib/site-packages/transformers/trainer.py:1539 in train        "
      "\xe2\x94\x82\n");
  const ddx_frame_t *f = r.scan.frames.data;
  CHECK_EQ_INT(r.scan.frames.len, 5); /* start + 2 + notebook + rich */
  CHECK(f[0].start);
  CHECK_EQ_STR(f[1].func, "main");
  CHECK_EQ_INT(f[2].lineno, 9);
  CHECK_EQ_STR(f[2].func, "inner");
  CHECK_EQ_STR(f[3].file, "/home/u/site-packages/deepspeed/runtime/engine.py");
  CHECK_EQ_INT(f[3].lineno, 1184);
  CHECK_EQ_STR(f[3].func, "DeepSpeedEngine._configure_optimizer");
  CHECK_EQ_STR(f[4].file, "/usr/lib/site-packages/transformers/trainer.py");
  CHECK_EQ_INT(f[4].lineno, 1539);
  CHECK_EQ_STR(f[4].func, "train");
  done(&r);
  /* rich wraps a long path in a narrow box: the line number and the
   * function are on the next line; a path line whose next line is not
   * `│ N in f` is no frame */
  run(&r, cat,
      "\xe2\x94\x82 /opt/conda/lib/python3.7/site-packages/deepspeed/runtime/config.py: "
      "\xe2\x94\x82\r\n"
      "\xe2\x94\x82 891 in _batch_assertion                                  \xe2\x94\x82\n"
      "\xe2\x94\x82 /opt/conda/lib/python3.7/site-packages/x.py: \xe2\x94\x82\n"
      "\xe2\x94\x82    890 \xe2\x94\x82   assert x \xe2\x94\x82\n");
  f = r.scan.frames.data;
  CHECK_EQ_INT(r.scan.frames.len, 1);
  CHECK_EQ_STR(f[0].file, "/opt/conda/lib/python3.7/site-packages/deepspeed/runtime/config.py");
  CHECK_EQ_INT(f[0].lineno, 891);
  CHECK_EQ_STR(f[0].func, "_batch_assertion");
  CHECK_EQ_INT(f[0].line, 1);
  done(&r);
}

static const char *cut_gather =
    "[rank1]: Traceback (most recent call last):\n"
    "[rank1]:   File \"/w/train.py\", line 10, in <module>\n"
    "[rank1]:     main()\n"
    "[rank1]:   File \"/env/site-packages/x/models/llama.py\", line 88, in forward\n"
    "[rank1]:     h = self.mlp(h)\n"
    "[rank1]:   File \"/env/site-packages/deepspeed/zero/coordinator.py\", line 300, in "
    "fetch_sub_module\n"
    "[rank1]:     self.__all_gather_params(params)\n";

static void test_cut_traceback(const ddx_catalog_t *cat) {
  run_t r;
  /* cut inside the gather: the gather OOM leads, the assert follows */
  run(&r, cat, cut_gather);
  CHECK_EQ_STR(primary(&r), "t.oom-gather");
  const ddx_incident_t *p = &r.d.incidents[0];
  CHECK(p->inferred);
  CHECK_EQ_INT(p->rank, 1);
  CHECK(p->phase && !strcmp(p->phase->id, "gather"));
  CHECK(p->library_frame && !strcmp(p->library_frame->func, "fetch_sub_module"));
  CHECK(p->user_frame && !strcmp(p->user_frame->file, "/w/train.py"));
  CHECK(p->confidence < 0.5); /* a guess from partial evidence says so */
  CHECK(p->nmissing >= 1 && strstr(p->missing[0], "rank 1") != NULL);
  CHECK(r.d.ndifferential >= 2);
  CHECK_EQ_STR(r.d.differential[0].rule->id, "t.oom-gather");
  CHECK_EQ_STR(r.d.differential[1].rule->id, "t.assert");
  CHECK(r.d.differential[0].score > r.d.differential[1].score);
  CHECK(!r.d.differential[0].decisive);
  CHECK(r.d.separator && strstr(r.d.separator, "AssertionError ds_status") != NULL);
  double sum = 0;
  for (size_t i = 0; i < r.d.ndifferential; i++)
    sum += r.d.differential[i].score;
  CHECK(sum <= 1.0 + 1e-9); /* shares beside "none of these" */
  done(&r);
  /* the same frames and a token of the assert: the assert leads */
  char buf[2048];
  snprintf(buf, sizeof buf, "%s[rank1]: param.ds_summary()\n", cut_gather);
  run(&r, cat, buf);
  CHECK_EQ_STR(primary(&r), "t.assert");
  CHECK(r.d.incidents[0].inferred);
  done(&r);
  /* the error line is there: a decisive incident, no inference */
  snprintf(buf, sizeof buf, "%s[rank1]: torch.OutOfMemoryError: CUDA out of memory.\n", cut_gather);
  run(&r, cat, buf);
  CHECK_EQ_STR(primary(&r), "t.oom-gather");
  CHECK(!r.d.incidents[0].inferred);
  CHECK(r.d.differential[0].decisive);
  CHECK_EQ_STR(r.d.differential[0].rule->id, "t.oom-gather");
  done(&r);
  /* a logger's prefix on the "Traceback" line only (SGLang's scheduler),
   * its frames bare: they are that rank's, so their phase and its rank hold
   * (the frames used to form a group of their own, the Traceback line an
   * empty one) */
  run(&r, cat,
      "[2025-03-19 11:39:39 TP1] Scheduler hit an exception: Traceback (most recent call last):\n"
      "  File \"/w/train.py\", line 10, in <module>\n"
      "  File \"/env/site-packages/deepspeed/zero/coordinator.py\", line 300, in "
      "fetch_sub_module\n");
  CHECK_EQ_STR(primary(&r), "t.oom-gather");
  CHECK(r.d.incidents[0].inferred);
  CHECK_EQ_INT(r.d.incidents[0].rank, 1);
  CHECK(r.d.incidents[0].phase && !strcmp(r.d.incidents[0].phase->id, "gather"));
  done(&r);
  /* frames no clue places: the generic cut-traceback class */
  run(&r, cat,
      "Traceback (most recent call last):\n  File \"/w/train.py\", line 1, in <module>\n"
      "  File \"/w/util.py\", line 2, in helper\n");
  CHECK_EQ_STR(primary(&r), "t.cut");
  CHECK(r.d.incidents[0].inferred);
  done(&r);
  /* a progress bar glued to the Traceback line does not end it */
  run(&r, cat,
      " 19%| 3237/16700 [3:34:12<38:35:22, 10.32s/it]Traceback (most recent call last):\n"
      "  File \"/w/train.py\", line 1, in <module>\n  File \"/w/util.py\", line 2, in helper\n");
  CHECK_EQ_STR(primary(&r), "t.cut");
  done(&r);
  /* a traceback ended by its exception line is that exception */
  run(&r, cat,
      "Traceback (most recent call last):\n  File \"/w/train.py\", line 1, in <module>\n"
      "  File \"/w/util.py\", line 2, in helper\nValueError: bad\n");
  CHECK_EQ_STR(primary(&r), "t.exc");
  CHECK_EQ_INT(r.d.n, 1);
  CHECK(!r.d.incidents[0].inferred);
  done(&r);
  /* a lone frame line (`File "p", line N, in f`) is Python's and nothing
   * else's: a paste cut above its "Traceback" line still answers; a path
   * and a line without the function (a SyntaxError's, a config error's) is
   * no traceback */
  run(&r, cat, "  File \"/w/util.py\", line 2, in helper\n");
  CHECK_EQ_STR(primary(&r), "t.cut");
  done(&r);
  run(&r, cat, "  File \"/w/util.py\", line 2\n");
  CHECK_EQ_STR(primary(&r), "none");
  done(&r);
  /* a Traceback line alone (the paste ends there) still answers */
  run(&r, cat, "step 10 done\nTraceback (most recent call last):\n");
  CHECK_EQ_STR(primary(&r), "t.cut");
  done(&r);
}

static void test_yield_to_specific(const ddx_catalog_t *cat) {
  run_t r;
  /* a bare exception inside a checkpoint save: the save class, inferred */
  run(&r, cat,
      "Traceback (most recent call last):\n  File \"/w/train.py\", line 1, in <module>\n"
      "  File \"/e/site-packages/torch/serialization.py\", line 9, in _save\n"
      "RuntimeError: write failed\n");
  CHECK_EQ_STR(primary(&r), "t.save");
  CHECK(r.d.incidents[0].inferred);
  CHECK_EQ_STR(r.d.differential[0].rule->id, "t.save");
  done(&r);
  /* a bare exception in forward: an OOM class (not via_generic) never
   * takes over; the exception stands, the OOM is only "also possible" */
  run(&r, cat,
      "Traceback (most recent call last):\n  File \"/w/train.py\", line 1, in <module>\n"
      "  File \"/e/site-packages/x/models/llama.py\", line 9, in forward\n"
      "TypeError: bad argument\n");
  CHECK_EQ_STR(primary(&r), "t.exc");
  CHECK(!r.d.incidents[0].inferred);
  done(&r);
}

static void test_tokens_alone(const ddx_catalog_t *cat) {
  run_t r;
  /* a decided primary (here a hang) gets no candidate from a token alone */
  run(&r, cat, "ds_summary printed\n 5/100 [00:01, 10it/s]\n 6/100 [00:02, 10it/s]\n");
  CHECK_EQ_STR(primary(&r), "t.progress");
  for (size_t i = 0; i < r.d.ndifferential; i++)
    CHECK(strcmp(r.d.differential[i].rule->id, "t.assert") != 0);
  done(&r);
}

static void test_relation(const ddx_catalog_t *cat) {
  run_t r;
  const char *start =
      "Traceback (most recent call last):\n"
      "  File \"/e/site-packages/vllm/engine/llm_engine.py\", line 1, in __init__\n"
      "  File \"/e/site-packages/vllm/engine/llm_engine.py\", line 2, in __init__\n";
  char buf[1024];
  /* 100 blocks x 16 tokens < 4096: the relation decides */
  snprintf(buf, sizeof buf, "max_model_len=4096, block_size=16\n# GPU blocks: 100\n%s", start);
  run(&r, cat, buf);
  CHECK_EQ_STR(primary(&r), "t.kv");
  CHECK(r.d.incidents[0].inferred);
  bool said = false;
  for (size_t i = 0; i < r.d.differential[0].npro; i++)
    said |= strstr(r.d.differential[0].pro[i], "fewer tokens than one request") != NULL;
  CHECK(said);
  done(&r);
  /* 1000 blocks x 16 >= 4096: the phase alone is too weak to name it */
  snprintf(buf, sizeof buf, "max_model_len=4096, block_size=16\n# GPU blocks: 1000\n%s", start);
  run(&r, cat, buf);
  CHECK_EQ_STR(primary(&r), "t.cut");
  done(&r);
}

static void test_resume_and_warnings(const ddx_catalog_t *cat) {
  run_t r;
  /* the last checkpoint before the first overflow, not the one after */
  run(&r, cat,
      "Checkpoint global_step100 is ready now!\nCheckpoint global_step200 is ready now!\n"
      "OVERFLOW! scale 256\nCheckpoint global_step300 is ready now!\nOVERFLOW! scale 128\n"
      "ValueError: scale at minimum\n");
  CHECK_EQ_STR(primary(&r), "t.exc");
  CHECK(r.d.resume != NULL);
  CHECK_EQ_STR(ddx_hit_fact(r.d.resume, "tag"), "global_step200");
  /* markers are never incidents */
  for (size_t i = 0; i < r.d.n; i++)
    CHECK(strcmp(r.d.incidents[i].rule->id, "t.ckpt") != 0);
  done(&r);
  /* no failure: nothing to resume */
  run(&r, cat, "Checkpoint global_step100 is ready now!\n");
  CHECK(r.d.n == 0 && r.d.resume == NULL);
  done(&r);
  /* one overflow past warm-up is not enough; two are, under the
   * signature's own title; warm-up scales never count */
  run(&r, cat, "OVERFLOW! scale 256\n");
  CHECK_EQ_STR(primary(&r), "none");
  done(&r);
  run(&r, cat, "OVERFLOW! scale 65536\nOVERFLOW! scale 32768\nOVERFLOW! scale 16384\n");
  CHECK_EQ_STR(primary(&r), "none");
  done(&r);
  run(&r, cat, "OVERFLOW! scale 256\nOVERFLOW! scale 128\n");
  CHECK_EQ_STR(primary(&r), "t.overflow");
  CHECK_EQ_STR(ddx_incident_title(&r.d.incidents[0]), "overflow past warm-up");
  done(&r);
}

int main(void) {
  ddx_error_t err = {0};
  ddx_catalog_t *cat = load(rules_json, NRULES, true, &err);
  if (!cat) fprintf(stderr, "catalog: %s\n", err.msg);
  CHECK(cat != NULL);
  if (!cat) CHECK_DONE();
  test_phase_table(cat);
  test_loader_errors();
  test_frame_dialects(cat);
  test_cut_traceback(cat);
  test_relation(cat);
  test_yield_to_specific(cat);
  test_tokens_alone(cat);
  test_resume_and_warnings(cat);
  ddx_catalog_free(cat);
  CHECK_DONE();
}
