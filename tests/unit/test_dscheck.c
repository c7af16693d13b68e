/* Tests for dscheck.c: the schema (rules/ds_config.schema.json) loads and is
 * what the checker and the editor expect; every finding kind on
 * real-looking configs (Hugging Face / DeepSpeed documentation styles);
 * rename patches planned with ddx/dsconfig.h, applied and re-checked; the
 * reader's refusals; the ZeRO memory formulas against the ZeRO paper's
 * numbers; parameter counts from model config.json files; hover text.
 * Run from the repository root. */
#include <jansson.h>
#include <math.h>
#include <stdlib.h>

#include "check.h"
#include "ddx/dscheck.h"
#include "ddx/dsconfig.h"

static ddx_dscheck_t *S;

/* Runs the checker; returns the result (caller frees). */
static ddx_dscheck_result_t run(const char *text, const ddx_dscheck_facts_t *f) {
  ddx_dscheck_result_t r;
  ddx_error_t err = {0};
  int rc = ddx_dscheck_run(S, text, strlen(text), f, &r, &err);
  if (rc) fprintf(stderr, "unexpected refusal: %s\n", err.msg);
  CHECK_EQ_INT(rc, 0);
  return r;
}

static const ddx_dscheck_finding_t *find(const ddx_dscheck_result_t *r, const char *code,
                                         const char *path) {
  for (size_t i = 0; i < r->n; i++)
    if (!strcmp(r->findings[i].code, code) && (!path || !strcmp(r->findings[i].path, path)))
      return &r->findings[i];
  return NULL;
}

static void dump(const ddx_dscheck_result_t *r) {
  for (size_t i = 0; i < r->n; i++)
    fprintf(stderr, "  finding: %s %s: %s\n", r->findings[i].code, r->findings[i].path,
            r->findings[i].message);
}

#define CHECK_CLEAN(text, facts)                                                                   \
  do {                                                                                             \
    ddx_dscheck_result_t r_ = run(text, facts);                                                    \
    if (r_.n) dump(&r_);                                                                           \
    CHECK_EQ_INT(r_.n, 0);                                                                         \
    ddx_dscheck_result_free(&r_);                                                                  \
  } while (0)

/* The text a finding covers. */
static char *span(const char *text, const ddx_dscheck_finding_t *f) {
  size_t n = f->end - f->start;
  char *s = malloc(n + 1);
  memcpy(s, text + f->start, n);
  s[n] = 0;
  return s;
}

/* ---- real-looking configs ---- */

/* The HF Trainer's ZeRO-3 example (transformers docs, main_classes/deepspeed). */
static const char *HF_ZERO3 = "{\n"
                              "    \"fp16\": {\n"
                              "        \"enabled\": \"auto\",\n"
                              "        \"loss_scale\": 0,\n"
                              "        \"loss_scale_window\": 1000,\n"
                              "        \"initial_scale_power\": 16,\n"
                              "        \"hysteresis\": 2,\n"
                              "        \"min_loss_scale\": 1\n"
                              "    },\n"
                              "    \"optimizer\": {\n"
                              "        \"type\": \"AdamW\",\n"
                              "        \"params\": {\n"
                              "            \"lr\": \"auto\",\n"
                              "            \"betas\": \"auto\",\n"
                              "            \"eps\": \"auto\",\n"
                              "            \"weight_decay\": \"auto\"\n"
                              "        }\n"
                              "    },\n"
                              "    \"scheduler\": {\n"
                              "        \"type\": \"WarmupLR\",\n"
                              "        \"params\": {\n"
                              "            \"warmup_min_lr\": \"auto\",\n"
                              "            \"warmup_max_lr\": \"auto\",\n"
                              "            \"warmup_num_steps\": \"auto\"\n"
                              "        }\n"
                              "    },\n"
                              "    \"zero_optimization\": {\n"
                              "        \"stage\": 3,\n"
                              "        \"offload_optimizer\": {\n"
                              "            \"device\": \"cpu\",\n"
                              "            \"pin_memory\": true\n"
                              "        },\n"
                              "        \"offload_param\": {\n"
                              "            \"device\": \"cpu\",\n"
                              "            \"pin_memory\": true\n"
                              "        },\n"
                              "        \"overlap_comm\": true,\n"
                              "        \"contiguous_gradients\": true,\n"
                              "        \"sub_group_size\": 1e9,\n"
                              "        \"reduce_bucket_size\": \"auto\",\n"
                              "        \"stage3_prefetch_bucket_size\": \"auto\",\n"
                              "        \"stage3_param_persistence_threshold\": \"auto\",\n"
                              "        \"stage3_max_live_parameters\": 1e9,\n"
                              "        \"stage3_max_reuse_distance\": 1e9,\n"
                              "        \"stage3_gather_16bit_weights_on_model_save\": true\n"
                              "    },\n"
                              "    \"gradient_accumulation_steps\": \"auto\",\n"
                              "    \"gradient_clipping\": \"auto\",\n"
                              "    \"steps_per_print\": 2000,\n"
                              "    \"train_batch_size\": \"auto\",\n"
                              "    \"train_micro_batch_size_per_gpu\": \"auto\",\n"
                              "    \"wall_clock_breakdown\": false\n"
                              "}\n";

/* A plain DeepSpeed ZeRO-2 config (DeepSpeed docs style), with comments and
 * a trailing comma as hjson allows. */
static const char *DS_ZERO2 =
    "{\n"
    "  # DeepSpeed reads this file with hjson\n"
    "  \"train_batch_size\": 256,\n"
    "  \"train_micro_batch_size_per_gpu\": 4,\n"
    "  \"gradient_accumulation_steps\": 8,\n"
    "  \"steps_per_print\": 100,\n"
    "  \"optimizer\": {\"type\": \"Adam\", \"params\": {\"lr\": 1e-4}},\n"
    "  \"bf16\": {\"enabled\": true},\n"
    "  // ZeRO-2 with optimizer offload\n"
    "  \"zero_optimization\": {\n"
    "    \"stage\": 2,\n"
    "    \"allgather_partitions\": true,\n"
    "    \"allgather_bucket_size\": 2e8,\n"
    "    \"reduce_scatter\": true,\n"
    "    \"reduce_bucket_size\": 2e8,\n"
    "    \"overlap_comm\": true,\n"
    "    \"contiguous_gradients\": true,\n"
    "    \"offload_optimizer\": {\"device\": \"cpu\", \"pin_memory\": true},\n"
    "  },\n"
    "  \"activation_checkpointing\": {\"partition_activations\": true, "
    "\"cpu_checkpointing\": false},\n"
    "  \"tensorboard\": {\"enabled\": true, \"output_path\": \"logs/\", "
    "\"job_name\": \"run1\"},\n"
    "  \"wall_clock_breakdown\": false,\n"
    "}\n";

static void test_schema(void) {
  CHECK(ddx_dscheck_nkeys(S) >= 250);
  json_t *root = json_load_file("rules/ds_config.schema.json", 0, NULL);
  CHECK(root != NULL);
  CHECK_EQ_STR(json_string_value(json_object_get(root, "$schema")),
               "http://json-schema.org/draft-07/schema#");
  /* the strict blocks are strict, the ignoring ones say so */
  json_t *p = json_object_get(root, "properties");
  const char *strict[] = {"zero_optimization", "fp16",  "bf16",         "tensorboard", "wandb",
                          "csv_monitor",       "comet", "comms_logger", "compile"};
  for (size_t i = 0; i < sizeof strict / sizeof *strict; i++) {
    json_t *b = json_object_get(p, strict[i]);
    CHECK(json_is_false(json_object_get(b, "additionalProperties")));
    CHECK(json_is_true(json_object_get(b, "x-ddx-strict")));
  }
  json_t *z = json_object_get(json_object_get(p, "zero_optimization"), "properties");
  CHECK(
      json_is_false(json_object_get(json_object_get(z, "offload_param"), "additionalProperties")));
  CHECK(json_is_false(
      json_object_get(json_object_get(z, "offload_optimizer"), "additionalProperties")));
  CHECK(json_is_true(
      json_object_get(json_object_get(p, "activation_checkpointing"), "x-ddx-ignored")));
  CHECK(json_is_true(json_object_get(root, "x-ddx-ignored")));
  /* every property has a description; defaults and enums where DeepSpeed has them */
  json_t *stage = json_object_get(z, "stage");
  CHECK(json_integer_value(json_object_get(stage, "default")) == 0);
  CHECK(json_object_get(stage, "description") && json_object_get(stage, "markdownDescription"));
  CHECK_EQ_STR(
      json_string_value(json_object_get(json_object_get(z, "cpu_offload"), "deprecationMessage")),
      "cpu_offload is deprecated: use offload_optimizer with \"device\": \"cpu\"");
  json_decref(root);
}

static void test_clean(void) {
  ddx_dscheck_facts_t f = {.dp_world_size = 8};
  CHECK_CLEAN(HF_ZERO3, &f);
  ddx_dscheck_result_t r = run(HF_ZERO3, NULL);
  CHECK(r.is_deepspeed);
  CHECK(r.has_zero);
  CHECK_EQ_INT(r.zero_end - r.zero_start, strlen("\"zero_optimization\""));
  ddx_dscheck_result_free(&r);
  CHECK_CLEAN(DS_ZERO2, &f);
  /* pydantic field names are accepted as well as their stage3_ aliases */
  CHECK_CLEAN("{\"zero_optimization\": {\"stage\": 3, \"prefetch_bucket_size\": 1e7, "
              "\"max_live_parameters\": 1e8, \"gather_16bit_weights_on_model_save\": true}}",
              NULL);
  /* the old boolean form of zero_optimization: stage 1, deprecated */
  r = run("{\"zero_optimization\": true, \"train_batch_size\": 8}", NULL);
  CHECK(r.n == 1 && !strcmp(r.findings[0].code, "ds-config.deprecated") &&
        strstr(r.findings[0].message, "stage 1"));
  ddx_dscheck_result_free(&r);
  /* not a DeepSpeed config: no findings about its keys is the caller's call */
  r = run("{\"name\": \"my-app\", \"version\": \"1.0\"}", NULL);
  CHECK(!r.is_deepspeed);
  ddx_dscheck_result_free(&r);
}

static char *apply_patch(const char *text, const char *patch) {
  ddx_dsconfig_t *c = NULL;
  ddx_error_t err = {0};
  if (ddx_dsconfig_parse(&c, text, strlen(text), &err)) {
    fprintf(stderr, "dsconfig refused: %s\n", err.msg);
    return NULL;
  }
  ddx_patch_plan_t plan;
  char *out = NULL;
  if (!ddx_dsconfig_plan(c, patch, &plan, &err)) {
    size_t n;
    out = ddx_text_apply(text, strlen(text), plan.edits, plan.nedits, &n);
    ddx_patch_plan_free(&plan);
  } else {
    fprintf(stderr, "plan refused: %s\n", err.msg);
  }
  ddx_dsconfig_free(c);
  return out;
}

static void test_unknown_strict(void) {
  const char *text = "{\n"
                     "  \"train_micro_batch_size_per_gpu\": 2,\n"
                     "  \"zero_optimization\": {\n"
                     "    \"stage\": 3,\n"
                     "    \"stage3_prefetch_bucket_sise\": 5e7,\n"
                     "    \"offload_optimizer\": {\"device\": \"cpu\", \"pin_memroy\": true}\n"
                     "  },\n"
                     "  \"fp16\": {\"enabled\": true, \"loss_scale_windw\": 500}\n"
                     "}\n";
  ddx_dscheck_result_t r = run(text, NULL);
  CHECK_EQ_INT(r.n, 3);
  const ddx_dscheck_finding_t *f =
      find(&r, "ds-config.unknown-key", "zero_optimization.stage3_prefetch_bucket_sise");
  CHECK(f != NULL);
  if (f) {
    CHECK_EQ_INT(f->severity, DDX_DSCHECK_ERROR);
    char *s = span(text, f);
    CHECK_EQ_STR(s, "\"stage3_prefetch_bucket_sise\"");
    free(s);
    CHECK(strstr(f->message, "did you mean `stage3_prefetch_bucket_size`?") != NULL);
    CHECK(f->patch_json != NULL);
    json_t *p = f->patch_json ? json_loads(f->patch_json, 0, NULL) : NULL;
    json_t *op = json_array_get(json_object_get(p, "ops"), 0);
    CHECK_EQ_STR(json_string_value(json_object_get(op, "op")), "rename");
    CHECK_EQ_STR(json_string_value(json_object_get(op, "path")),
                 "zero_optimization.stage3_prefetch_bucket_sise");
    CHECK_EQ_STR(json_string_value(json_object_get(op, "to")), "stage3_prefetch_bucket_size");
    json_decref(p);
    /* the patch planned by the quick-fix planner, applied, re-checked */
    char *fixed = f->patch_json ? apply_patch(text, f->patch_json) : NULL;
    CHECK(fixed && strstr(fixed, "\"stage3_prefetch_bucket_size\": 5e7,\n") != NULL);
    if (fixed) {
      ddx_dscheck_result_t r2 = run(fixed, NULL);
      CHECK_EQ_INT(r2.n, 2);
      CHECK(!find(&r2, "ds-config.unknown-key", "zero_optimization.stage3_prefetch_bucket_sise"));
      ddx_dscheck_result_free(&r2);
    }
    free(fixed);
  }
  f = find(&r, "ds-config.unknown-key", "zero_optimization.offload_optimizer.pin_memroy");
  CHECK(f && strstr(f->message, "`pin_memory`") && f->patch_json);
  f = find(&r, "ds-config.unknown-key", "fp16.loss_scale_windw");
  CHECK(f && strstr(f->message, "`loss_scale_window`"));
  ddx_dscheck_result_free(&r);
  /* a key far from every known one: an error without a suggestion */
  r = run("{\"bf16\": {\"enabled\": true, \"turbo_mode\": 1}}", NULL);
  CHECK_EQ_INT(r.n, 1);
  CHECK(r.n && !r.findings[0].patch_json && !strstr(r.findings[0].message, "did you mean"));
  ddx_dscheck_result_free(&r);
  /* no rename onto a key that is already there */
  r = run("{\"fp16\": {\"enabled\": true, \"hysteresis\": 2, \"hysteresys\": 2}}", NULL);
  CHECK(r.n == 1 && !r.findings[0].patch_json);
  ddx_dscheck_result_free(&r);
  /* a typo of the block name itself is only ignored at the top level */
  r = run("{\"zero_optimisation\": {\"stage\": 3}, \"train_batch_size\": 8}", NULL);
  f = find(&r, "ds-config.ignored-key", "zero_optimisation");
  CHECK(f && f->severity == DDX_DSCHECK_WARNING && strstr(f->message, "`zero_optimization`") &&
        f->patch_json);
  ddx_dscheck_result_free(&r);
}

static void test_ignored(void) {
  const char *text = "{\n"
                     "  \"train_batch_size\": 32,\n"
                     "  \"activation_checkpointing\": {\"partition_activation\": true, "
                     "\"cpu_checkpointing\": true},\n"
                     "  \"stage3_max_live_parameters\": 1e8,\n"
                     "  \"my_project_notes\": \"x\"\n"
                     "}\n";
  ddx_dscheck_result_t r = run(text, NULL);
  if (r.n != 3) dump(&r);
  CHECK_EQ_INT(r.n, 3);
  const ddx_dscheck_finding_t *f =
      find(&r, "ds-config.ignored-key", "activation_checkpointing.partition_activation");
  CHECK(f && f->severity == DDX_DSCHECK_WARNING);
  CHECK(f && strstr(f->message, "silently ignores") && strstr(f->message, "partition_activations"));
  CHECK(f && f->patch_json);
  f = find(&r, "ds-config.ignored-key", "stage3_max_live_parameters");
  CHECK(f && strstr(f->message, "belongs inside `zero_optimization`"));
  f = find(&r, "ds-config.ignored-key", "my_project_notes");
  CHECK(f && !f->patch_json);
  ddx_dscheck_result_free(&r);
}

static void test_types(void) {
  const char *text = "{\n"
                     "  \"train_micro_batch_size_per_gpu\": 2.5,\n"
                     "  \"wall_clock_breakdown\": \"false\",\n"
                     "  \"steps_per_print\": \"auto\",\n"
                     "  \"zero_optimization\": {\n"
                     "    \"stage\": 4,\n"
                     "    \"overlap_comm\": \"true\",\n"
                     "    \"contiguous_gradients\": \"auto\",\n"
                     "    \"offload_optimizer\": {\"device\": \"gpu\", \"ratio\": 1.5}\n"
                     "  },\n"
                     "  \"gradient_clipping\": -1,\n"
                     "  \"communication_data_type\": \"fp8\"\n"
                     "}\n";
  ddx_dscheck_result_t r = run(text, NULL);
  const ddx_dscheck_finding_t *f = find(&r, "ds-config.type", "train_micro_batch_size_per_gpu");
  CHECK(f && f->severity == DDX_DSCHECK_ERROR && strstr(f->message, "an integer"));
  f = find(&r, "ds-config.type", "wall_clock_breakdown");
  CHECK(f && f->severity == DDX_DSCHECK_ERROR && strstr(f->message, "counts as true"));
  f = find(&r, "ds-config.type", "steps_per_print");
  CHECK(f && f->severity == DDX_DSCHECK_ERROR); /* nobody fills "auto" there */
  f = find(&r, "ds-config.enum", "zero_optimization.stage");
  CHECK(f && strstr(f->message, "0, 1, 2, 3") && strstr(f->message, "not 4"));
  if (f) {
    char *s = span(text, f);
    CHECK_EQ_STR(s, "4");
    free(s);
  }
  f = find(&r, "ds-config.type", "zero_optimization.overlap_comm");
  CHECK(f && f->severity == DDX_DSCHECK_WARNING && strstr(f->message, "converts it"));
  f = find(&r, "ds-config.auto-dropped", "zero_optimization.contiguous_gradients");
  CHECK(f && f->severity == DDX_DSCHECK_WARNING && strstr(f->message, "uses true"));
  f = find(&r, "ds-config.enum", "zero_optimization.offload_optimizer.device");
  CHECK(f && strstr(f->message, "\"cpu\"") && strstr(f->message, "\"gpu\""));
  f = find(&r, "ds-config.range", "zero_optimization.offload_optimizer.ratio");
  CHECK(f && strstr(f->message, "from 0 to 1"));
  CHECK(find(&r, "ds-config.range", "gradient_clipping") != NULL);
  CHECK(find(&r, "ds-config.enum", "communication_data_type") != NULL);
  ddx_dscheck_result_free(&r);
}

static void test_deprecated(void) {
  const char *text = "{\n"
                     "  \"zero_optimization\": {\n"
                     "    \"stage\": 3,\n"
                     "    \"stage3_gather_fp16_weights_on_model_save\": true,\n"
                     "    \"cpu_offload\": true\n"
                     "  },\n"
                     "  \"bfloat16\": {\"enabled\": true}\n"
                     "}\n";
  ddx_dscheck_result_t r = run(text, NULL);
  CHECK_EQ_INT(r.n, 3);
  const ddx_dscheck_finding_t *f = find(
      &r, "ds-config.deprecated", "zero_optimization.stage3_gather_fp16_weights_on_model_save");
  CHECK(f && f->severity == DDX_DSCHECK_WARNING && f->patch_json &&
        strstr(f->patch_json, "\"to\":\"stage3_gather_16bit_weights_on_model_save\""));
  if (f && f->patch_json) {
    char *fixed = apply_patch(text, f->patch_json);
    CHECK(fixed && strstr(fixed, "\"stage3_gather_16bit_weights_on_model_save\": true,"));
    if (fixed) {
      ddx_dscheck_result_t r2 = run(fixed, NULL);
      CHECK_EQ_INT(r2.n, 2);
      ddx_dscheck_result_free(&r2);
    }
    free(fixed);
  }
  f = find(&r, "ds-config.deprecated", "zero_optimization.cpu_offload");
  CHECK(f && !f->patch_json && strstr(f->message, "offload_optimizer"));
  f = find(&r, "ds-config.deprecated", "bfloat16");
  CHECK(f && f->patch_json && strstr(f->patch_json, "\"to\":\"bf16\""));
  ddx_dscheck_result_free(&r);
}

static void test_semantics(void) {
  /* fp16 and bf16 both on */
  const char *both = "{\"fp16\": {\"enabled\": true}, \"bf16\": {\"enabled\": true}}";
  ddx_dscheck_result_t r = run(both, NULL);
  const ddx_dscheck_finding_t *f = find(&r, "ds-config.precision", "bf16.enabled");
  CHECK(r.n == 1 && f && f->severity == DDX_DSCHECK_ERROR &&
        strstr(f->message, "cannot be simultaneously enabled"));
  ddx_dscheck_result_free(&r);
  CHECK_CLEAN("{\"fp16\": {\"enabled\": \"auto\"}, \"bf16\": {\"enabled\": \"auto\"}}", NULL);
  CHECK_CLEAN("{\"fp16\": {\"enabled\": false}, \"bf16\": {\"enabled\": true}}", NULL);
  /* offload_param below stage 3 */
  const char *op = "{\"zero_optimization\": {\"stage\": 2, \"offload_param\": {\"device\": "
                   "\"cpu\"}}}";
  r = run(op, NULL);
  f = find(&r, "ds-config.offload-param-stage", NULL);
  CHECK(r.n == 1 && f && strstr(f->message, "only used at ZeRO stage 3 (stage is 2)"));
  if (f) {
    char *s = span(op, f);
    CHECK_EQ_STR(s, "\"offload_param\"");
    free(s);
  }
  ddx_dscheck_result_free(&r);
  r = run("{\"zero_optimization\": {\"offload_param\": {\"device\": \"nvme\", \"nvme_path\": "
          "\"/local\"}}}",
          NULL);
  f = find(&r, "ds-config.offload-param-stage", NULL);
  CHECK(f && strstr(f->message, "stage defaults to 0"));
  ddx_dscheck_result_free(&r);
  CHECK_CLEAN("{\"zero_optimization\": {\"stage\": 3, \"offload_param\": {\"device\": \"cpu\"}}}",
              NULL);
  CHECK_CLEAN(
      "{\"zero_optimization\": {\"stage\": \"auto\", \"offload_param\": {\"device\": \"cpu\"}}}",
      NULL);
  CHECK_CLEAN("{\"zero_optimization\": {\"stage\": 1, \"offload_param\": {\"device\": \"none\"}}}",
              NULL);
  /* partial offload, allreduce sum, master weights */
  r = run("{\"zero_optimization\": {\"stage\": 2, \"offload_optimizer\": {\"device\": \"cpu\", "
          "\"ratio\": 0.5}}, \"gradient_allreduce_op\": \"mean\"}",
          NULL);
  CHECK(find(&r, "ds-config.offload-ratio-stage", NULL) != NULL);
  ddx_dscheck_result_free(&r);
  r = run("{\"zero_optimization\": {\"stage\": 3}, \"gradient_allreduce_op\": \"sum\", \"bf16\": "
          "{\"enabled\": true, \"bf16_optimizer_states\": true}}",
          NULL);
  CHECK(find(&r, "ds-config.allreduce-op", NULL) != NULL);
  CHECK(find(&r, "ds-config.precision", "bf16.bf16_optimizer_states") != NULL);
  ddx_dscheck_result_free(&r);
  /* duplicate keys */
  r = run("{\"train_batch_size\": 8, \"bf16\": {\"enabled\": true}, \"train_batch_size\": 16}",
          NULL);
  f = find(&r, "ds-config.duplicate-key", "train_batch_size");
  CHECK(r.n == 1 && f && f->start > 30);
  ddx_dscheck_result_free(&r);
}

static void test_batch(void) {
  ddx_dscheck_facts_t f16 = {.dp_world_size = 16, .world_from = "train.log"};
  /* the assertion's own example: 256 != 4 * 8 * 16 */
  const char *text = "{\"train_batch_size\": 256, \"train_micro_batch_size_per_gpu\": 4, "
                     "\"gradient_accumulation_steps\": 8}";
  ddx_dscheck_result_t r = run(text, &f16);
  const ddx_dscheck_finding_t *f = find(&r, "ds-config.batch", NULL);
  CHECK(r.n == 1 && f && f->severity == DDX_DSCHECK_ERROR);
  CHECK(f && strstr(f->message, "256 != micro batch 4 x gradient_accumulation_steps 8 x 16"));
  CHECK(f && strstr(f->message, "from train.log") &&
        strstr(f->message, "gradient_accumulation_steps 4"));
  if (f) {
    char *s = span(text, f);
    CHECK_EQ_STR(s, "\"train_batch_size\": 256");
    free(s);
  }
  ddx_dscheck_result_free(&r);
  /* consistent */
  ddx_dscheck_facts_t f8 = {.dp_world_size = 8};
  CHECK_CLEAN(text, &f8);
  /* derived by floor division: 256 // 4 // 16 = 4, consistent; with 3 GPUs not */
  const char *two = "{\"train_batch_size\": 256, \"train_micro_batch_size_per_gpu\": 4}";
  CHECK_CLEAN(two, &f16);
  ddx_dscheck_facts_t f3 = {.dp_world_size = 3};
  r = run(two, &f3);
  f = find(&r, "ds-config.batch", NULL);
  CHECK(f && strstr(f->message, "256 != micro batch 4 x gradient_accumulation_steps 21 x 3") &&
        strstr(f->message, "floor division"));
  ddx_dscheck_result_free(&r);
  /* micro batch derived as 0 */
  r = run("{\"train_batch_size\": 8, \"gradient_accumulation_steps\": 4}", &f16);
  CHECK(find(&r, "ds-config.batch", NULL) != NULL);
  ddx_dscheck_result_free(&r);
  /* unknown world size, "auto" values: nothing to say */
  CHECK_CLEAN(text, NULL);
  CHECK_CLEAN("{\"train_batch_size\": \"auto\", \"train_micro_batch_size_per_gpu\": 4, "
              "\"gradient_accumulation_steps\": 8}",
              &f16);
}

static void test_refusals(void) {
  static const struct {
    const char *text, *want;
  } cases[] = {
      {"", "line 1, column 1: the file is empty"},
      {"{\"a\": [1, 2", "line 1, column 12: expected ',' or ']'"},
      {"{\n  \"a\": 1\n  \"b\": 2\n}", "line 3, column 3: expected ',' or '}'"},
      {"{'a': 1}", "line 1, column 2: expected a key in double quotes"},
      {"[1, 2]", "line 1, column 1: a DeepSpeed config is an object"},
      {"{\"a\": 1} x", "line 1, column 10: unexpected text after the top-level value"},
      {"{\"a\": tru}", "line 1, column 7: unexpected character 't'"},
      {"{/* open", "line 1, column 2: unterminated comment"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
    ddx_dscheck_result_t r;
    ddx_error_t err = {0};
    int rc = ddx_dscheck_run(S, cases[i].text, strlen(cases[i].text), NULL, &r, &err);
    CHECK_EQ_INT(rc, DDX_EINVAL);
    CHECK_EQ_STR(err.msg, cases[i].want);
    ddx_dscheck_result_free(&r);
  }
  ddx_dscheck_result_t r;
  ddx_error_t err = {0};
  CHECK_EQ_INT(ddx_dscheck_run(S, "{\n  \"a\": 1\n  \"b\": 2\n}", 20, NULL, &r, &err), DDX_EINVAL);
  CHECK_EQ_INT(r.error_offset, 13);
  ddx_dscheck_result_free(&r);
  /* hjson's comments, trailing commas and a BOM are fine */
  CHECK_CLEAN(
      "\xEF\xBB\xBF{ /* c */ \"train_batch_size\": 8, # x\n \"bf16\": {\"enabled\": true,},}",
      NULL);
  /* a schema that is not one */
  ddx_dscheck_t *bad = NULL;
  CHECK_EQ_INT(ddx_dscheck_load_text(&bad, "{", 1, &err), DDX_EINVAL);
  CHECK(bad == NULL);
  CHECK_EQ_INT(ddx_dscheck_load(&bad, "rules/no-such.schema.json", &err), DDX_EIO);
}

static double gb(double b) {
  return b / 1e9;
}

static void test_memory(void) {
  /* The ZeRO paper: 7.5B parameters on 64 GPUs: 120 / 31.4 / 16.6 / 1.9 GB. */
  ddx_dscheck_facts_t f = {.params = 7.5e9, .dp_world_size = 64};
  const char *cfg[4] = {
      "{\"bf16\": {\"enabled\": true}}",
      "{\"bf16\": {\"enabled\": true}, \"zero_optimization\": {\"stage\": 1}}",
      "{\"bf16\": {\"enabled\": true}, \"zero_optimization\": {\"stage\": 2}}",
      "{\"bf16\": {\"enabled\": true}, \"zero_optimization\": {\"stage\": 3}}",
  };
  double want[4] = {120, 31.4, 16.6, 1.9};
  for (int i = 0; i < 4; i++) {
    ddx_dscheck_result_t r = run(cfg[i], &f);
    CHECK(r.memory.valid && r.memory.stage == i);
    CHECK(fabs(gb(r.memory.gpu_bytes) - want[i]) < 0.1);
    CHECK_EQ_INT(r.n, 0);
    ddx_dscheck_result_free(&r);
  }
  /* offload: stage 2 keeps only the weights; stage 3 with both offloads nothing */
  ddx_dscheck_result_t r =
      run("{\"fp16\": {\"enabled\": true}, \"zero_optimization\": {\"stage\": 2, "
          "\"offload_optimizer\": {\"device\": \"cpu\"}}}",
          &f);
  CHECK(fabs(gb(r.memory.gpu_bytes) - 15.0) < 0.01 && r.memory.cpu_bytes > 0);
  ddx_dscheck_result_free(&r);
  r = run("{\"fp16\": {\"enabled\": true}, \"zero_optimization\": {\"stage\": 3, "
          "\"offload_optimizer\": {\"device\": \"cpu\"}, \"offload_param\": {\"device\": "
          "\"cpu\"}}}",
          &f);
  CHECK(r.memory.gpu_bytes == 0 && r.memory.off_param && r.memory.off_opt);
  char *md = ddx_dscheck_memory_markdown(&r.memory, &f);
  CHECK(md && strstr(md, "host (offloaded)") && strstr(md, "| 16-bit weights | 2P/N |"));
  free(md);
  ddx_dscheck_result_free(&r);
  /* fp32 training: 4 + 4 + 8 bytes */
  ddx_dscheck_facts_t f1 = {.params = 1e9, .dp_world_size = 1};
  r = run("{\"train_batch_size\": 8}", &f1);
  CHECK(!r.memory.mixed && fabs(gb(r.memory.gpu_bytes) - 16) < 0.01);
  ddx_dscheck_result_free(&r);
  /* the warning: a 7B model at stage 1 on 8 GPUs needs 4P + 12P/8 = 38.5 GB > 24 GiB */
  ddx_dscheck_facts_t fw = {.params = 7e9,
                            .dp_world_size = 8,
                            .gpu_total_bytes = 23.65 * 1073741824.0,
                            .gpu_from = "train.log, GPU 3"};
  const char *s1 = "{\"bf16\": {\"enabled\": true},\n \"zero_optimization\": {\"stage\": 1}}";
  r = run(s1, &fw);
  const ddx_dscheck_finding_t *w = find(&r, "ds-config.memory", NULL);
  CHECK(r.n == 1 && w && w->severity == DDX_DSCHECK_WARNING);
  CHECK(w && strstr(w->message, "~35.86 GiB per GPU") && strstr(w->message, "23.65 GiB in total") &&
        strstr(w->message, "(train.log, GPU 3)"));
  if (w) {
    char *s = span(s1, w);
    CHECK_EQ_STR(s, "\"zero_optimization\"");
    free(s);
  }
  ddx_dscheck_result_free(&r);
  /* stage 3 fits: no warning; unknown N: only the part that does not shrink counts */
  CHECK_CLEAN("{\"bf16\": {\"enabled\": true}, \"zero_optimization\": {\"stage\": 3}}", &fw);
  ddx_dscheck_facts_t fn = {.params = 7e9, .gpu_total_bytes = 16.0 * 1073741824.0};
  r = run(s1, &fn);
  w = find(&r, "ds-config.memory", NULL);
  CHECK(w && strstr(w->message, "at least 26.08 GiB"));
  ddx_dscheck_result_free(&r);
  /* LoRA (issue 29): only the T trainable parameters have gradients and
   * Adam states; the 16-bit weights stay P. 7e9 at stage 1 on 8 GPUs with
   * T = 4e7: 2P + 2T + 12T/8 = 14.1 GB (13.17 GiB), no warning on 23.65 GiB; on 8 GiB
   * the warning names T and its terms */
  ddx_dscheck_facts_t ft = fw;
  ft.trainable = 4e7;
  CHECK_CLEAN(s1, &ft);
  ft.gpu_total_bytes = 8.0 * 1073741824.0;
  r = run(s1, &ft);
  w = find(&r, "ds-config.memory", NULL);
  CHECK(w && strstr(w->message, "~13.17 GiB per GPU") &&
        strstr(w->message, "T = 4e+07 trainable") && strstr(w->message, "2T 16-bit gradients") &&
        strstr(w->message, "12T/N Adam"));
  ddx_dscheck_result_free(&r);
  /* T >= P is all of them */
  ft.trainable = 8e9;
  r = run(s1, &ft);
  w = find(&r, "ds-config.memory", NULL);
  CHECK(w && strstr(w->message, "~35.86 GiB per GPU") && !strstr(w->message, "trainable"));
  ddx_dscheck_result_free(&r);
  /* no parameter count: no estimate */
  r = run(s1, NULL);
  CHECK(!r.memory.valid);
  md = ddx_dscheck_memory_markdown(&r.memory, NULL);
  CHECK(md && strstr(md, "ddx.model.parameters"));
  free(md);
  ddx_dscheck_result_free(&r);
}

static void test_model_params(void) {
  double p = 0;
  char how[256];
  const char *llama = "{\"architectures\": [\"LlamaForCausalLM\"], \"hidden_act\": \"silu\", "
                      "\"hidden_size\": 4096, \"intermediate_size\": 11008, "
                      "\"num_attention_heads\": 32, \"num_hidden_layers\": 32, "
                      "\"num_key_value_heads\": 32, \"tie_word_embeddings\": false, "
                      "\"vocab_size\": 32000}";
  CHECK(ddx_dscheck_model_params(llama, strlen(llama), &p, how, sizeof how));
  CHECK(fabs(p - 6.74e9) / 6.74e9 < 0.01);
  CHECK(strstr(how, "gated MLP") != NULL);
  const char *gpt2 = "{\"activation_function\": \"gelu_new\", \"n_embd\": 768, \"n_layer\": 12, "
                     "\"n_head\": 12, \"vocab_size\": 50257}";
  CHECK(ddx_dscheck_model_params(gpt2, strlen(gpt2), &p, NULL, 0));
  CHECK(fabs(p - 124e6) / 124e6 < 0.03);
  const char *given = "{\"num_parameters\": 1.3e9, \"hidden_size\": 2048}";
  CHECK(ddx_dscheck_model_params(given, strlen(given), &p, how, sizeof how) && p == 1.3e9);
  CHECK_EQ_STR(how, "num_parameters");
  const char *vlm = "{\"model_type\": \"llava\", \"text_config\": {\"hidden_size\": 4096, "
                    "\"num_hidden_layers\": 32, \"vocab_size\": 32064, \"intermediate_size\": "
                    "11008, \"hidden_act\": \"silu\"}}";
  CHECK(ddx_dscheck_model_params(vlm, strlen(vlm), &p, NULL, 0) && p > 6e9);
  CHECK(!ddx_dscheck_model_params("{\"name\": 1}", 11, &p, NULL, 0));
  CHECK(!ddx_dscheck_model_params("nope", 4, &p, NULL, 0));
}

static void test_describe(void) {
  char *d = ddx_dscheck_describe(S, "zero_optimization.stage");
  CHECK(d && strstr(d, "**`zero_optimization.stage`** (DeepSpeed)") && strstr(d, "16/N") &&
        strstr(d, "Default: `0`") && strstr(d, "\"auto\"`: filled in"));
  free(d);
  d = ddx_dscheck_describe(S, "zero_optimization.offload_optimizer.pin_memory");
  CHECK(d && strstr(d, "Default: `true`") && strstr(d, "Memory:"));
  free(d);
  d = ddx_dscheck_describe(S, "zero_optimization");
  CHECK(d && strstr(d, "unknown keys inside are an error"));
  free(d);
  d = ddx_dscheck_describe(S, "activation_checkpointing");
  CHECK(d && strstr(d, "silently ignored"));
  free(d);
  d = ddx_dscheck_describe(S, "zero_optimization.cpu_offload");
  CHECK(d && strstr(d, "**Deprecated:**"));
  free(d);
  d = ddx_dscheck_describe(S, "stage3_max_live_parameters"); /* old top-level placement */
  CHECK(d && strstr(d, "gathered parameters"));
  free(d);
  d = ddx_dscheck_describe(S, "zero_optimization.overlap_comm");
  CHECK(d && strstr(d, "dropped by DeepSpeed"));
  free(d);
  CHECK(ddx_dscheck_describe(S, "my_custom_key") == NULL);
  CHECK(ddx_dscheck_describe(S, "zero_optimization.nope") == NULL);
  CHECK(ddx_dscheck_describe(S, "") == NULL);
}

int main(void) {
  ddx_error_t err = {0};
  if (ddx_dscheck_load(&S, "rules/ds_config.schema.json", &err)) {
    fprintf(stderr, "cannot load the schema: %s\n", err.msg);
    return 1;
  }
  test_schema();
  test_clean();
  test_unknown_strict();
  test_ignored();
  test_types();
  test_deprecated();
  test_semantics();
  test_batch();
  test_refusals();
  test_memory();
  test_model_params();
  test_describe();
  ddx_dscheck_free(S);
  CHECK_DONE();
}
