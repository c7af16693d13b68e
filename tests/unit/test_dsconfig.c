/* Tests for dsconfig.c: unit tests of the reader, every op, precondition and
 * refusal; then property tests: generated configs in many styles x every
 * config patch of the rule files (plus a fixed set) checked against an
 * oracle that applies the ops to a jansson tree, line by line against the
 * original, and a differential fuzz of the reader against jansson.
 * Run from the repository root (the rule files are read from "rules"). */
#include <dirent.h>
#include <jansson.h>
#include <math.h>
#include <stdlib.h>
#include <sys/stat.h>

#include "check.h"
#include "ddx/dsconfig.h"
#include "dsconfig_gen.h"

/* ---- helpers ---- */

/* Plans patch on text; returns the edited text or NULL with the reason in err. */
static char *plan_apply(const char *text, const char *patch, ddx_error_t *err) {
  ddx_dsconfig_t *c;
  if (ddx_dsconfig_parse(&c, text, strlen(text), err)) return NULL;
  ddx_patch_plan_t plan;
  char *out = NULL;
  if (!ddx_dsconfig_plan(c, patch, &plan, err)) {
    size_t n;
    out = ddx_text_apply(text, strlen(text), plan.edits, plan.nedits, &n);
    ddx_patch_plan_free(&plan);
  }
  ddx_dsconfig_free(c);
  return out;
}

#define CHECK_PATCH(text, patch, want)                                                             \
  do {                                                                                             \
    ddx_error_t e_ = {0};                                                                          \
    char *got_ = plan_apply(text, patch, &e_);                                                     \
    CHECK_EQ_STR(got_ ? got_ : e_.msg, want);                                                      \
    free(got_);                                                                                    \
  } while (0)

/* The reason a text is refused ("" when it parses). */
static const char *parse_reason(const char *text, size_t len, ddx_error_t *err) {
  ddx_dsconfig_t *c = NULL;
  err->msg[0] = 0;
  if (!ddx_dsconfig_parse(&c, text, len, err)) {
    ddx_dsconfig_free(c);
    return "";
  }
  return err->msg;
}

#define CHECK_PARSE_FAILS(text, want)                                                              \
  do {                                                                                             \
    ddx_error_t e_;                                                                                \
    CHECK_EQ_STR(parse_reason(text, sizeof(text) - 1, &e_), want);                                 \
  } while (0)

#define CHECK_PARSE_MENTIONS(text, needle)                                                         \
  do {                                                                                             \
    ddx_error_t e_;                                                                                \
    const char *r_ = parse_reason(text, sizeof(text) - 1, &e_);                                    \
    CHECK(*r_ &&strstr(r_, needle));                                                               \
    if (!*r_ || !strstr(r_, needle)) fprintf(stderr, "  input %s\n  reason: %s\n", text, r_);      \
  } while (0)

/* JOIN("a", "b") is "a" "," "b": JSON array items from string literals. */
#define JOIN1(a) a
#define JOIN2(a, b) a "," b
#define JOIN3(a, b, c) a "," b "," c
#define JOIN4(a, b, c, d) a "," b "," c "," d
#define JOIN5(a, b, c, d, e) a "," b "," c "," d "," e
#define JOIN_PICK(_1, _2, _3, _4, _5, name, ...) name
#define JOIN(...) JOIN_PICK(__VA_ARGS__, JOIN5, JOIN4, JOIN3, JOIN2, JOIN1, _)(__VA_ARGS__)

#define SET(path, value) "{\"op\":\"set\",\"path\":\"" path "\",\"value\":" value "}"
#define PATCH(...) "{\"id\":\"t\",\"title\":\"T\",\"ops\":[" JOIN(__VA_ARGS__) "]}"
#define PATCH_IF(pre, ...)                                                                         \
  "{\"id\":\"t\",\"title\":\"T\",\"preconditions\":[" pre "],\"ops\":[" JOIN(__VA_ARGS__) "]}"
#define PRE(path, op, value) "{\"path\":\"" path "\",\"op\":\"" op "\",\"value\":" value "}"
#define PRE0(path, op) "{\"path\":\"" path "\",\"op\":\"" op "\"}"

#define OFFLOAD_PARAM                                                                              \
  SET("zero_optimization.offload_param.device", "\"cpu\""),                                        \
      SET("zero_optimization.offload_param.pin_memory", "true")

/* ---- reader ---- */

static void test_parse_refusals(void) {
  CHECK_PARSE_FAILS("{\n  \"a\": 1,\n}",
                    "line 2, column 9: trailing comma: ds_config.json must be plain JSON for a "
                    "safe automatic edit");
  CHECK_PARSE_FAILS("{\n  // hi\n  \"a\": 1\n}",
                    "line 2, column 3: a comment: comments are allowed by DeepSpeed's hjson "
                    "reader but an automatic edit would need to keep them; edit this file by "
                    "hand or remove the comments");
  CHECK_PARSE_MENTIONS("/* x */ {}", "line 1, column 1: a comment");
  CHECK_PARSE_MENTIONS("{\"a\": 1 # x\n}", "line 1, column 9: a comment");
  CHECK_PARSE_MENTIONS("{\"a\": [1, 2,]}", "trailing comma");
  CHECK_PARSE_FAILS("", "the file is empty: a DeepSpeed config is a JSON object {...}");
  CHECK_PARSE_MENTIONS(" \r\n\t", "the file is empty");
  CHECK_PARSE_FAILS("[{\"a\": 1}]", "line 1, column 1: the top level is an array, not an "
                                    "object: a DeepSpeed config is a JSON object {...}");
  CHECK_PARSE_MENTIONS("\"x\"", "top level is a string");
  CHECK_PARSE_MENTIONS("\n 3", "line 2, column 2: the top level is a number");
  CHECK_PARSE_MENTIONS("null", "top level is a literal");
  CHECK_PARSE_FAILS("{\"a\": 1,\n \"b\": {}, \"a\": 2}",
                    "line 2, column 11: duplicate key \"a\" (also at line 1): DeepSpeed's hjson "
                    "reader raises on duplicate keys; keep one of them");
  CHECK_PARSE_MENTIONS("{\"z\": {\"k\": 1, \"k\": 1}}", "duplicate key \"k\"");
  CHECK_PARSE_FAILS("{\"a\": \"\xff\"}", "line 1, column 8: invalid UTF-8 (byte 0xff): "
                                         "ds_config.json must be plain JSON for a safe "
                                         "automatic edit");
  CHECK_PARSE_MENTIONS("{\"a\": \"\xc0\xaf\"}", "invalid UTF-8");     /* overlong */
  CHECK_PARSE_MENTIONS("{\"a\": \"\xed\xa0\x80\"}", "invalid UTF-8"); /* a surrogate */
  CHECK_PARSE_MENTIONS("{\"a\": \"\xe8\xb7\"}", "invalid UTF-8");     /* cut short */
  CHECK_PARSE_MENTIONS("{\"\xf5\x80\x80\x80\": 1}", "invalid UTF-8");
  CHECK_PARSE_MENTIONS("{\"a\": 1, \xc3\xa9}", "unexpected byte 0xc3");
  CHECK_PARSE_MENTIONS("{\"a\": NaN}", "line 1, column 7: NaN and Infinity are not JSON");
  CHECK_PARSE_MENTIONS("{\"a\": -Infinity}", "NaN and Infinity");
  CHECK_PARSE_MENTIONS("{\"a\": Infinity}", "NaN and Infinity");
  CHECK_PARSE_FAILS("{\"a\": \"abc",
                    "line 1, column 7: unterminated string: ds_config.json must be plain JSON "
                    "for a safe automatic edit");
  CHECK_PARSE_MENTIONS("{\"a\": \"abc\n\"}", "line 1, column 7: unterminated string");
  CHECK_PARSE_MENTIONS("{\"a\": \"abc\\", "unterminated string");
  CHECK_PARSE_MENTIONS("{\"a\": 1", "line 1, column 1: unterminated object");
  CHECK_PARSE_MENTIONS("{\"a\": [1", "line 1, column 7: unterminated array");
  CHECK_PARSE_MENTIONS("{\"a\": 01}", "leading zero");
  CHECK_PARSE_MENTIONS("{\"a\": 1.}", "after '.'");
  CHECK_PARSE_MENTIONS("{\"a\": .5}", "unexpected '.' where a value was expected");
  CHECK_PARSE_MENTIONS("{\"a\": 1e}", "exponent");
  CHECK_PARSE_MENTIONS("{\"a\": -}", "a digit was expected");
  CHECK_PARSE_MENTIONS("{\"a\": +1}", "unexpected '+'");
  CHECK_PARSE_MENTIONS("{\"a\": 1e999}", "too large");
  CHECK_PARSE_MENTIONS("{'a': 1}", "single-quoted");
  CHECK_PARSE_MENTIONS("{a: 1}", "unexpected word 'a' where a double-quoted key was expected");
  CHECK_PARSE_MENTIONS("{\"a\": True}", "unexpected word 'True'");
  CHECK_PARSE_MENTIONS("{\"a\": tru}", "unexpected word 'tru'");
  CHECK_PARSE_MENTIONS("{\"a\" 1}", "where ':' after the key was expected");
  CHECK_PARSE_MENTIONS("{\"a\": 1 \"b\": 2}", "where ',' or '}' was expected");
  CHECK_PARSE_MENTIONS("{\"a\": \"\x01\"}", "control character 0x01");
  CHECK_PARSE_MENTIONS("{\"a\": \"\t\"}", "control character 0x09");
  CHECK_PARSE_MENTIONS("{\"a\": \"\\q\"}", "invalid escape");
  CHECK_PARSE_MENTIONS("{\"a\": \"\\u12g4\"}", "invalid \\u escape");
  CHECK_PARSE_MENTIONS("{\"a\": \"\\ud800\"}", "unpaired surrogate");
  CHECK_PARSE_MENTIONS("{\"a\": \"\\udc00\\ud800\"}", "unpaired surrogate");
  CHECK_PARSE_MENTIONS("{} x", "unexpected text after the closing '}'");
  CHECK_PARSE_MENTIONS("{\"a\": 1}}", "line 1, column 9: unexpected text");
  CHECK_PARSE_MENTIONS("\xef\xbb\xbf{}", "byte-order mark");
  CHECK_PARSE_MENTIONS("{\"a\": 1,,}", "unexpected ','");
  CHECK_PARSE_MENTIONS("{\"a\":\f1}", "unexpected byte 0x0c");
  CHECK_PARSE_MENTIONS("{\"路径\": 1, \"x\": @}", "line 1, column 16: unexpected '@'");
  ddx_error_t err;
  CHECK(strstr(parse_reason("{\"a\": 1\0}", 9, &err), "unexpected byte 0x00"));
  CHECK(!*parse_reason("{\"a\": 1}garbage", 8, &err)); /* only len bytes are read */
}

static void test_parse_valid(void) {
  static const char text[] = "{\"a\": \"\\ud83d\\ude00 \\u00e9\\n\", \"b\": \"\\u0000x\", "
                             "\"c\": -0.0e+1, \" \": [], \"e\": {}, \"f\": [1, [2, {\"g\": null}]],"
                             " \"h\": \"路径 🚀\", \"i\": 1E2, \"j\": false}";
  ddx_dsconfig_t *c;
  ddx_error_t err = {0};
  CHECK_EQ_INT(ddx_dsconfig_parse(&c, text, sizeof text - 1, &err), 0);
  char *j = NULL;
  CHECK(ddx_dsconfig_get(c, "a", &j));
  CHECK_EQ_STR(j, "\"\\ud83d\\ude00 \\u00e9\\n\"");
  free(j);
  CHECK(ddx_dsconfig_get(c, "f", &j));
  CHECK_EQ_STR(j, "[1,[2,{\"g\":null}]]");
  free(j);
  CHECK(ddx_dsconfig_get(c, "h", &j));
  CHECK_EQ_STR(j, "\"路径 🚀\"");
  free(j);
  CHECK(ddx_dsconfig_get(c, " ", NULL));
  CHECK(!ddx_dsconfig_get(c, "f.g", &j) && !j); /* paths do not go into arrays */
  CHECK(!ddx_dsconfig_get(c, "a..b", &j));
  CHECK(!ddx_dsconfig_get(c, "", &j));
  CHECK(!ddx_dsconfig_get(c, "zz", &j));
  CHECK(!ddx_dsconfig_is_deepspeed(c));
  ddx_dsconfig_free(c);

  /* nesting: 64 levels are fine, 65 are refused, and neither recurses further */
  char deep[600];
  for (int levels = 63; levels <= 66; levels++) { /* levels objects, the top one included */
    size_t n = 0;
    for (int i = 0; i < levels; i++)
      n += (size_t)sprintf(deep + n, "{\"a\":");
    deep[n++] = '1';
    for (int i = 0; i < levels; i++)
      deep[n++] = '}';
    const char *r = parse_reason(deep, n, &err);
    CHECK(levels <= 64 ? !*r : strstr(r, "nesting deeper than 64 levels") != NULL);
  }
  char arrays[200] = "{\"a\":";
  size_t n = 5;
  for (int i = 0; i < 70; i++)
    arrays[n++] = '[';
  CHECK(strstr(parse_reason(arrays, n, &err), "nesting deeper than 64"));

  /* get renders objects compactly; the values keep their text */
  static const char z[] = "{\n  \"zero_optimization\": {\n    \"stage\": 3,\n"
                          "    \"offload_param\": { \"device\" : \"cpu\" },\n"
                          "    \"reduce_bucket_size\": 5e8\n  }\n}\n";
  CHECK_EQ_INT(ddx_dsconfig_parse(&c, z, sizeof z - 1, &err), 0);
  CHECK(ddx_dsconfig_get(c, "zero_optimization", &j));
  CHECK_EQ_STR(j, "{\"stage\":3,\"offload_param\":{\"device\":\"cpu\"},"
                  "\"reduce_bucket_size\":5e8}");
  free(j);
  CHECK(ddx_dsconfig_get(c, "zero_optimization.offload_param.device", &j));
  CHECK_EQ_STR(j, "\"cpu\"");
  free(j);
  CHECK(!ddx_dsconfig_get(c, "zero_optimization.stage.x", &j));
  CHECK(ddx_dsconfig_is_deepspeed(c));
  ddx_dsconfig_free(c);
}

static void test_is_deepspeed(void) {
  static const char *const yes[] = {
      "{\"train_micro_batch_size_per_gpu\": 1}", "{\"train_batch_size\": \"auto\"}",
      "{\"gradient_accumulation_steps\": \"auto\"}",
      "{\"train_batch_size\": 16, \"gradient_accumulation_steps\": 2}",
      "{\"fp16\": {\"enabled\": true}}", "{\"bf16\": {}}",
      "{\"zero_allow_untested_optimizer\": true}", "{\"zero_optimization\": {\"stage\": 2}}",
      "{\"zero_optimization\": false}", "{\"steps_per_print\": 10, \"model\": \"x\"}",
      "{\"optimizer\": {\"type\": \"AdamW\", \"params\": {\"lr\": 1e-4}}}",
      "{\"optimizer\": {\"params\": {\"lr\": 1e-4}, \"type\": \"Lamb\"}}",
      "{\"scheduler\": {\"type\": \"WarmupDecayLR\"}}",
      /* the late key after nested values, strings with escapes and braces */
      "{\"a\": {\"b\": [1, {\"c\": \"}\\\"]\"}]}, \"s\": \"x\\\\\", \"fp16\": {\"enabled\": 1}}"};
  static const char *const no[] = {
      "{}", "{\"model\": \"x\"}", "{\"optimizer\": {\"type\": \"adam\", \"lr\": 0.1}}",
      "{\"optimizer\": {\"type\": \"SGDish\", \"params\": {}}}",
      "{\"scheduler\": {\"type\": \"cosine\"}}", "{\"nested\": {\"fp16\": {}}}",
      /* names other tools share, alone: the HF TrainingArguments dump
       * (boolean fp16/bf16, gradient_accumulation_steps) and the HF
       * Trainer's trainer_state.json (train_batch_size) */
      "{\"gradient_accumulation_steps\": 2}",
      "{\"output_dir\": \"out\", \"per_device_train_batch_size\": 8, "
      "\"gradient_accumulation_steps\": 4, \"fp16\": true, \"bf16\": false, "
      "\"deepspeed\": \"ds_config.json\"}",
      "{\"best_metric\": null, \"epoch\": 3.0, \"global_step\": 1500, \"log_history\": "
      "[{\"loss\": 2.1, \"step\": 10}], \"train_batch_size\": 8, \"trial_name\": null}",
      /* a model's config.json, tokenizer.json, package.json */
      "{\"architectures\": [\"LlamaForCausalLM\"], \"hidden_size\": 4096, \"torch_dtype\": "
      "\"bfloat16\", \"vocab_size\": 32000}",
      "{\"version\": \"1.0\", \"truncation\": null, \"padding\": null, \"added_tokens\": [], "
      "\"model\": {\"type\": \"BPE\", \"vocab\": {\"zero_optimization\": 0}}}",
      "{\"name\": \"x\", \"scripts\": {\"test\": \"node --test\"}}",
      /* DeepSpeed names as values, or with the wrong kind of value */
      "{\"note\": \"zero_optimization\", \"fp16\": true, \"zero_optimization\": 3}"};
  ddx_error_t err;
  for (size_t i = 0; i < sizeof yes / sizeof *yes + sizeof no / sizeof *no; i++) {
    bool want = i < sizeof yes / sizeof *yes;
    const char *t = want ? yes[i] : no[i - sizeof yes / sizeof *yes];
    ddx_dsconfig_t *c;
    CHECK_EQ_INT(ddx_dsconfig_text_is_deepspeed(t, strlen(t)), want);
    if (!want) CHECK_EQ_INT(ddx_dsconfig_text_is_deepspeed(t, strlen(t) - 1), false);
    CHECK_EQ_INT(ddx_dsconfig_parse(&c, t, strlen(t), &err), 0);
    CHECK_EQ_INT(ddx_dsconfig_is_deepspeed(c), want);
    ddx_dsconfig_free(c);
  }
  /* What the editor sees while a config is typed, or what DeepSpeed's hjson
   * reader accepts: judged by the keys before the break. */
  static const char *const partial_yes[] = {
      "{\n  // tuned for 8 GPUs\n  \"zero_optimization\": {\"stage\": 3},\n}\n",
      "{\"bf16\": {\"enabled\": true}, \"zero_optimization\": {\"stage\": ",
      "{\"train_micro_batch_size_per_gpu\": 4 \"x\": 1}",
      "{\"a\": 1, /* \"b\": */ \"fp16\": {\"enabled\": \"auto\"}",
      "\xEF\xBB\xBF{\"bf16\": {\"enabled\": true}}"};
  static const char *const partial_no[] = {
      "",
      "   ",
      "[{\"fp16\": {}}]",
      "\"fp16\"",
      "{\"model\": ",
      "{\"x\": [1, 2, \"fp16\": {}}", /* broken before the key: inside the array */
      "{\"train_batch_size\": 8, \"train_batch_size\": 16}", /* one name twice */
      "{\"a\": \"no end\n\", \"fp16\": {}}"};
  for (size_t i = 0; i < sizeof partial_yes / sizeof *partial_yes; i++)
    CHECK_EQ_INT(ddx_dsconfig_text_is_deepspeed(partial_yes[i], strlen(partial_yes[i])), true);
  for (size_t i = 0; i < sizeof partial_no / sizeof *partial_no; i++)
    CHECK_EQ_INT(ddx_dsconfig_text_is_deepspeed(partial_no[i], strlen(partial_no[i])), false);
  CHECK(!ddx_dsconfig_text_is_deepspeed(NULL, 0));
  /* A DeepSpeed name among a tokenizer's vocabulary: more top-level keys
   * than DeepSpeed has is data (256 keys are still a config). */
  for (int nkeys = 256; nkeys <= 257; nkeys++) {
    ddx_sb_t b;
    ddx_sb_init(&b);
    ddx_sb_puts(&b, "{\"train_micro_batch_size_per_gpu\": 0");
    for (int k = 1; k < nkeys; k++)
      ddx_sb_printf(&b, ", \"tok%d\": %d", k, k);
    ddx_sb_puts(&b, "}");
    CHECK_EQ_INT(ddx_dsconfig_text_is_deepspeed(b.s, b.len), nkeys == 256);
    ddx_sb_free(&b);
  }
}

/* ---- ops ---- */

static void test_set(void) {
  /* replace a value in place */
  CHECK_PATCH("{\n  \"zero_optimization\": {\n    \"stage\": 2\n  }\n}\n",
              PATCH(SET("zero_optimization.stage", "3")),
              "{\n  \"zero_optimization\": {\n    \"stage\": 3\n  }\n}\n");
  /* a new member at the end of its object, 4 spaces */
  CHECK_PATCH("{\n    \"a\": 1,\n    \"zero_optimization\": {\n        \"stage\": 3\n    }\n}",
              PATCH(SET("zero_optimization.contiguous_gradients", "true")),
              "{\n    \"a\": 1,\n    \"zero_optimization\": {\n        \"stage\": 3,\n"
              "        \"contiguous_gradients\": true\n    }\n}");
  /* missing intermediate objects, multi-line */
  CHECK_PATCH("{\n  \"zero_optimization\": {\n    \"stage\": 3\n  }\n}\n", PATCH(OFFLOAD_PARAM),
              "{\n  \"zero_optimization\": {\n    \"stage\": 3,\n    \"offload_param\": {\n"
              "      \"device\": \"cpu\",\n      \"pin_memory\": true\n    }\n  }\n}\n");
  /* ... on one line, and compact */
  CHECK_PATCH("{\"zero_optimization\": {\"stage\": 3}}", PATCH(OFFLOAD_PARAM),
              "{\"zero_optimization\": {\"stage\": 3, \"offload_param\": {\"device\": \"cpu\", "
              "\"pin_memory\": true}}}");
  CHECK_PATCH("{\"zero_optimization\":{\"stage\":3}}\n", PATCH(OFFLOAD_PARAM),
              "{\"zero_optimization\":{\"stage\":3,\"offload_param\":{\"device\":\"cpu\","
              "\"pin_memory\":true}}}\n");
  /* ... and when the whole chain is missing */
  CHECK_PATCH("{\n  \"train_batch_size\": 8\n}", PATCH(OFFLOAD_PARAM),
              "{\n  \"train_batch_size\": 8,\n  \"zero_optimization\": {\n"
              "    \"offload_param\": {\n      \"device\": \"cpu\",\n"
              "      \"pin_memory\": true\n    }\n  }\n}");
  /* tabs and CRLF, two ops */
  CHECK_PATCH("{\r\n\t\"fp16\": {\r\n\t\t\"enabled\": true\r\n\t}\r\n}",
              PATCH(SET("fp16.enabled", "false"), SET("bf16.enabled", "true")),
              "{\r\n\t\"fp16\": {\r\n\t\t\"enabled\": false\r\n\t},\r\n\t\"bf16\": {\r\n"
              "\t\t\"enabled\": true\r\n\t}\r\n}");
  /* numbers: integral values print as integers, others short */
  CHECK_PATCH("{\n  \"train_batch_size\": 8\n}\n",
              PATCH(SET("gradient_clipping", "1.0"), SET("a", "1e8"), SET("b", "3e-5"),
                    SET("c", "0.1"), SET("d", "-2.5e300")),
              "{\n  \"train_batch_size\": 8,\n  \"gradient_clipping\": 1,\n  \"a\": 100000000,\n"
              "  \"b\": 3e-05,\n  \"c\": 0.1,\n  \"d\": -2.5e+300\n}\n");
  /* an object value replaces a bool, in the file's layout */
  CHECK_PATCH("{\n  \"zero_optimization\": {\n    \"offload_optimizer\": true,\n"
              "    \"stage\": 2\n  }\n}",
              PATCH(SET("zero_optimization.offload_optimizer",
                        "{\"device\": \"cpu\", \"pin_memory\": true}")),
              "{\n  \"zero_optimization\": {\n    \"offload_optimizer\": {\n"
              "      \"device\": \"cpu\",\n      \"pin_memory\": true\n    },\n"
              "    \"stage\": 2\n  }\n}");
  /* nested objects and arrays in a value; strings escaped */
  CHECK_PATCH("{\"x\": 1}",
              PATCH(SET("optimizer", "{\"type\": \"AdamW\", \"params\": {\"betas\": [0.9, "
                                     "0.999], \"e\": {}, \"s\": \"路\\\"\\n\\u0001\"}}")),
              "{\"x\": 1, \"optimizer\": {\"type\": \"AdamW\", \"params\": {\"betas\": [0.9, "
              "0.999], \"e\": {}, \"s\": \"路\\\"\\n\\u0001\"}}}");
  CHECK_PATCH("{\n  \"x\": 1\n}",
              PATCH(SET("optimizer", "{\"type\": \"AdamW\", \"params\": {\"betas\": [0.9, "
                                     "0.999], \"lr\": \"auto\"}}")),
              "{\n  \"x\": 1,\n  \"optimizer\": {\n    \"type\": \"AdamW\",\n    \"params\": {\n"
              "      \"betas\": [0.9, 0.999],\n      \"lr\": \"auto\"\n    }\n  }\n}");
  /* empty objects: multi-line when the file is, inline on one line */
  CHECK_PATCH("{\n  \"fp16\": {},\n  \"x\": 1\n}", PATCH(SET("fp16.enabled", "true")),
              "{\n  \"fp16\": {\n    \"enabled\": true\n  },\n  \"x\": 1\n}");
  CHECK_PATCH("{\"fp16\": { }}", PATCH(SET("fp16.enabled", "true")),
              "{\"fp16\": {\"enabled\": true}}");
  CHECK_PATCH("{}", PATCH(SET("train_batch_size", "8")), "{\"train_batch_size\": 8}");
  CHECK_PATCH("{\n}\n", PATCH(SET("a.b", "8")), "{\n  \"a\": {\n    \"b\": 8\n  }\n}\n");
  CHECK_PATCH("{\n    \"z\": {\n    }\n}", PATCH(SET("z.b", "8")),
              "{\n    \"z\": {\n        \"b\": 8\n    }\n}");
  /* an inline block in a multi-line file stays inline, with its own spacing */
  CHECK_PATCH("{\n  \"zero_optimization\": {\"stage\": 3},\n  \"x\": 1\n}", PATCH(OFFLOAD_PARAM),
              "{\n  \"zero_optimization\": {\"stage\": 3, \"offload_param\": {\"device\": "
              "\"cpu\", \"pin_memory\": true}},\n  \"x\": 1\n}");
  CHECK_PATCH("{\n  \"a\": {\"x\":1,\"y\":2}\n}", PATCH(SET("a.z", "3")),
              "{\n  \"a\": {\"x\":1,\"y\":2,\"z\": 3}\n}");
  /* a nested block indented differently from the top level keeps its indent */
  CHECK_PATCH("{\n  \"fp16\": {\n        \"enabled\": true\n  }\n}",
              PATCH(SET("fp16.hysteresis", "4")),
              "{\n  \"fp16\": {\n        \"enabled\": true,\n        \"hysteresis\": 4\n  }\n}");
  /* the key separator follows the file */
  CHECK_PATCH("{\n  \"a\":1\n}", PATCH(SET("b.c", "2")),
              "{\n  \"a\":1,\n  \"b\":{\n    \"c\":2\n  }\n}");
  CHECK_PATCH("{\n  \"a\" : 1\n}", PATCH(SET("b", "2")), "{\n  \"a\" : 1,\n  \"b\" : 2\n}");
  /* through a value that is not an object */
  CHECK_PATCH("{\"zero_optimization\": {\"offload_optimizer\": true}}",
              PATCH(SET("zero_optimization.offload_optimizer.device", "\"cpu\"")),
              "cannot set zero_optimization.offload_optimizer.device: "
              "zero_optimization.offload_optimizer is true, not an object");
  CHECK_PATCH("{\"a\": [1]}", PATCH(SET("a.b.c", "1")),
              "cannot set a.b.c: a is an array, not an object");
  /* already there: numerically equal, or an equal object in another order */
  CHECK_PATCH("{\"gradient_clipping\": 1.0}", PATCH(SET("gradient_clipping", "1")),
              "already applied: the config already has what this fix would set");
  CHECK_PATCH("{\"o\": {\"pin_memory\": true, \"device\": \"cpu\"}}",
              PATCH(SET("o", "{\"device\": \"cpu\", \"pin_memory\": true}")),
              "already applied: the config already has what this fix would set");
  /* a character is never split: the edit starts at é, not inside it */
  static const char t[] = "{\"p\": \"é\"}";
  ddx_dsconfig_t *c;
  ddx_error_t err;
  ddx_patch_plan_t plan;
  CHECK_EQ_INT(ddx_dsconfig_parse(&c, t, sizeof t - 1, &err), 0);
  CHECK_EQ_INT(ddx_dsconfig_plan(c, PATCH(SET("p", "\"è\"")), &plan, &err), 0);
  CHECK_EQ_INT(plan.nedits, 1);
  CHECK_EQ_INT(plan.edits[0].start, 7);
  CHECK_EQ_INT(plan.edits[0].end, 9);
  CHECK_EQ_STR(plan.edits[0].text, "è");
  CHECK_EQ_STR(plan.title, "T");
  ddx_patch_plan_free(&plan);
  /* two separate changes are two edits, the lines between untouched */
  CHECK_EQ_INT(ddx_dsconfig_plan(c, PATCH(SET("p", "\"é\""), SET("q", "1")), &plan, &err), 0);
  CHECK_EQ_INT(plan.nedits, 1);
  CHECK_EQ_STR(plan.edits[0].text, ", \"q\": 1");
  ddx_patch_plan_free(&plan);
  ddx_dsconfig_free(c);
  static const char two[] = "{\n  \"a\": 1,\n  \"b\": 2,\n  \"c\": 3\n}\n";
  CHECK_EQ_INT(ddx_dsconfig_parse(&c, two, sizeof two - 1, &err), 0);
  CHECK_EQ_INT(ddx_dsconfig_plan(c, PATCH(SET("a", "5"), SET("c", "6")), &plan, &err), 0);
  CHECK_EQ_INT(plan.nedits, 2);
  CHECK(plan.nedits == 2 && plan.edits[0].start == 9 && plan.edits[1].start == 29);
  ddx_patch_plan_free(&plan);
  ddx_dsconfig_free(c);
}

static void test_remove(void) {
  static const char *const r = "{\"op\":\"remove\",\"path\":\"train_batch_size\"}";
  char p[256];
  snprintf(p, sizeof p, PATCH("%s"), r);
  CHECK_PATCH("{\n  \"a\": 1,\n  \"train_batch_size\": 32,\n  \"b\": 2\n}\n", p,
              "{\n  \"a\": 1,\n  \"b\": 2\n}\n");
  CHECK_PATCH("{\n  \"a\": 1,\n  \"train_batch_size\": 32\n}\n", p, "{\n  \"a\": 1\n}\n");
  CHECK_PATCH("{\r\n  \"train_batch_size\": 32,  \r\n  \"a\": 1\r\n}", p, "{\r\n  \"a\": 1\r\n}");
  CHECK_PATCH("{\n  \"train_batch_size\": 32\n}\n", p, "{}\n");
  CHECK_PATCH("{\"a\": 1, \"train_batch_size\": 32, \"b\": 2}", p, "{\"a\": 1, \"b\": 2}");
  CHECK_PATCH("{\"a\": 1, \"train_batch_size\": 32}", p, "{\"a\": 1}");
  CHECK_PATCH("{\"train_batch_size\": 32,\"a\":1}", p, "{\"a\":1}");
  CHECK_PATCH("{\n  \"a\": 1, \"train_batch_size\": 32, \"b\": 2\n}", p,
              "{\n  \"a\": 1, \"b\": 2\n}");
  CHECK_PATCH("{\"a\": 1}", p, "already applied: the config already has what this fix would set");
  /* a whole block, and the only member of a block */
  CHECK_PATCH("{\n  \"a\": 1,\n  \"scheduler\": {\n    \"type\": \"WarmupLR\",\n"
              "    \"params\": {\"warmup_num_steps\": \"auto\"}\n  },\n  \"b\": 2\n}",
              PATCH_IF(PRE("scheduler.params.warmup_num_steps", "==", "\"auto\""),
                       "{\"op\":\"remove\",\"path\":\"scheduler\"}"),
              "{\n  \"a\": 1,\n  \"b\": 2\n}");
  CHECK_PATCH("{\n  \"scheduler\": {\n    \"type\": \"WarmupLR\"\n  }\n}",
              PATCH("{\"op\":\"remove\",\"path\":\"scheduler.type\"}"),
              "{\n  \"scheduler\": {}\n}");
  CHECK_PATCH("{\"a\": {\"b\": 1}}", PATCH("{\"op\":\"remove\",\"path\":\"a.b.c\"}"),
              "already applied: the config already has what this fix would set");
  /* remove then set in the same place (rename-cpu-offload) */
  CHECK_PATCH("{\n  \"zero_optimization\": {\n    \"stage\": 2,\n    \"cpu_offload\": true\n"
              "  }\n}",
              PATCH("{\"op\":\"remove\",\"path\":\"zero_optimization.cpu_offload\"}",
                    SET("zero_optimization.offload_optimizer", "{\"device\": \"cpu\"}")),
              "{\n  \"zero_optimization\": {\n    \"stage\": 2,\n    \"offload_optimizer\": {\n"
              "      \"device\": \"cpu\"\n    }\n  }\n}");
  /* set then remove the same key: nothing left to do */
  CHECK_PATCH("{\"a\": 1}", PATCH(SET("b", "2"), "{\"op\":\"remove\",\"path\":\"b\"}"),
              "already applied: the config already has what this fix would set");
}

static void test_rename(void) {
#define RENAME(to)                                                                                 \
  "{\"op\":\"rename\",\"path\":\"zero_optimization.stage3_gather_fp16_weights_on_model_save\","    \
  "\"to\":\"" to "\"}"
  static const char z[] = "{\n  \"zero_optimization\": {\n"
                          "    \"stage3_gather_fp16_weights_on_model_save\": true,\n"
                          "    \"stage\": 3\n  }\n}";
  CHECK_PATCH(z, PATCH(RENAME("zero_optimization.stage3_gather_16bit_weights_on_model_save")),
              "{\n  \"zero_optimization\": {\n"
              "    \"stage3_gather_16bit_weights_on_model_save\": true,\n"
              "    \"stage\": 3\n  }\n}");
  CHECK_PATCH(z, PATCH(RENAME("g")),
              "{\n  \"zero_optimization\": {\n    \"g\": true,\n    \"stage\": 3\n  }\n}");
  CHECK_PATCH(z, PATCH(RENAME("stage")),
              "cannot rename zero_optimization.stage3_gather_fp16_weights_on_model_save to "
              "stage: stage already exists");
  CHECK_PATCH(z, PATCH(RENAME("other.g")),
              "cannot rename zero_optimization.stage3_gather_fp16_weights_on_model_save to "
              "other.g: the new key must be in the same object");
  CHECK_PATCH("{\"zero_optimization\": {}}", PATCH(RENAME("g")),
              "already applied: the config already has what this fix would set");
  CHECK_PATCH(z, PATCH(RENAME("stage3_gather_fp16_weights_on_model_save")),
              "already applied: the config already has what this fix would set");
  CHECK_PATCH(z, PATCH(RENAME("a..b")), "invalid patch: bad rename target \"a..b\"");
#undef RENAME
}

static void test_multiply(void) {
#define MUL(path, f) "{\"op\":\"multiply\",\"path\":\"" path "\",\"factor\":" f "}"
#define MUL_MIN(path, f, m)                                                                        \
  "{\"op\":\"multiply\",\"path\":\"" path "\",\"factor\":" f ",\"min\":" m "}"
  static const char *const down = PATCH_IF(PRE0("train_micro_batch_size_per_gpu", "not-auto"),
                                           MUL_MIN("train_micro_batch_size_per_gpu", "0.5", "1"),
                                           MUL("gradient_accumulation_steps", "2"));
  CHECK_PATCH("{\"train_micro_batch_size_per_gpu\": 4, \"gradient_accumulation_steps\": 2}", down,
              "{\"train_micro_batch_size_per_gpu\": 2, \"gradient_accumulation_steps\": 4}");
  /* the global batch stays: 3 x 2 becomes 1 x 6 (not 1 x 4), and a micro
   * batch of 1 is not "halved" into 1 x 4 (test_batch_identity has more) */
  CHECK_PATCH("{\"train_micro_batch_size_per_gpu\": 3, \"gradient_accumulation_steps\": 2.0}", down,
              "{\"train_micro_batch_size_per_gpu\": 1, \"gradient_accumulation_steps\": 6}");
  CHECK_PATCH("{\"train_micro_batch_size_per_gpu\": 1, \"gradient_accumulation_steps\": 2}", down,
              "cannot shrink the micro batch: train_micro_batch_size_per_gpu is already 1");
  CHECK_PATCH("{\"m\": 1}", PATCH(MUL_MIN("m", "0.5", "1")),
              "already applied: the config already has what this fix would set");
  CHECK_PATCH("{\"m\": 5}", PATCH(MUL_MIN("m", "0.1", "2")), "{\"m\": 2}");
  CHECK_PATCH("{\"m\": 2.5}", PATCH(MUL("m", "2")), "{\"m\": 5}");
  CHECK_PATCH("{\"m\": 1e8}", PATCH(MUL("m", "2")), "{\"m\": 200000000}");
  CHECK_PATCH("{\"m\": 7}", PATCH(MUL("m", "-0.5")), "{\"m\": -4}");
  CHECK_PATCH(
      "{\"train_micro_batch_size_per_gpu\": \"auto\"}",
      PATCH(MUL("train_micro_batch_size_per_gpu", "0.5"), MUL("gradient_accumulation_steps", "2")),
      "train_micro_batch_size_per_gpu: value is \"auto\": the HF Trainer sets it; "
      "change the matching TrainingArguments flag instead");
  CHECK_PATCH("{\"m\": \"4\"}", PATCH(MUL("m", "2")),
              "cannot multiply m: it is \"4\", not a number");
  CHECK_PATCH("{\"m\": {}}", PATCH(MUL("m", "2")),
              "cannot multiply m: it is an object, not a number");
  CHECK_PATCH("{\"x\": 1}", PATCH(MUL("m", "2")), "cannot multiply m: it is absent");
  CHECK_PATCH("{\"m\": 1e300}", PATCH(MUL("m", "1e300")),
              "cannot multiply m: the result is out of range");
  /* a refusal anywhere refuses the whole patch */
  CHECK_PATCH("{\"a\": 1, \"m\": \"auto\"}", PATCH(SET("a", "2"), MUL("m", "2")),
              "m: value is \"auto\": the HF Trainer sets it; change the matching "
              "TrainingArguments flag instead");
#undef MUL
#undef MUL_MIN
}

/* The micro-batch quick fix keeps DeepSpeed's train_batch_size = micro x
 * gradient_accumulation_steps x data-parallel size, with the rule files'
 * own patch. */
static char *rule_patch(const char *file, const char *id) {
  json_t *r = json_load_file(file, 0, NULL), *x;
  size_t i;
  char *out = NULL;
  json_array_foreach(json_object_get(r, "config_patches"), i,
                     x) if (!out && !strcmp(json_string_value(json_object_get(x, "id")), id)) out =
      json_dumps(x, JSON_COMPACT);
  json_decref(r);
  return out;
}

/* The plan's title, or the refusal. */
static char *plan_title(const char *text, const char *patch) {
  ddx_dsconfig_t *c;
  ddx_error_t err = {0};
  ddx_patch_plan_t plan;
  if (ddx_dsconfig_parse(&c, text, strlen(text), &err)) return strdup(err.msg);
  char *t = ddx_dsconfig_plan(c, patch, &plan, &err) ? strdup(err.msg) : strdup(plan.title);
  ddx_patch_plan_free(&plan);
  ddx_dsconfig_free(c);
  return t;
}

static void test_batch_identity(void) {
  char *down = rule_patch("rules/deepspeed/ds.oom.activations.json", "micro-batch-down");
  CHECK(down != NULL);
  if (!down) return;
#define MB "\"train_micro_batch_size_per_gpu\": "
#define GA "\"gradient_accumulation_steps\": "
#define TB "\"train_batch_size\": "
  /* micro 7, accumulation 1, global 56 on 8 GPUs: 3 x 2 x 8 = 48 would
   * break DeepSpeed's assertion; 1 x 7 x 8 = 56 keeps it */
  const char *odd = "{\n  " TB "56,\n  " MB "7,\n  " GA "1\n}\n";
  CHECK_PATCH(odd, down, "{\n  " TB "56,\n  " MB "1,\n  " GA "7\n}\n");
  char *t = plan_title(odd, down);
  CHECK_EQ_STR(t, "Micro batch 7 -> 1, gradient accumulation 1 -> 7: the same global batch (1 is "
                  "the largest divisor of 7 up to 3)");
  free(t);
  /* even: halved and doubled, the rule's title */
  const char *even = "{" TB "128, " MB "8, " GA "2}";
  CHECK_PATCH(even, down, "{" TB "128, " MB "4, " GA "4}");
  t = plan_title(even, down);
  CHECK_EQ_STR(t, "Halve the micro batch, double gradient accumulation (global batch unchanged)");
  free(t);
  CHECK_PATCH("{" MB "12, " GA "3}", down, "{" MB "6, " GA "6}");
  CHECK_PATCH("{" MB "9, " GA "2}", down, "{" MB "3, " GA "6}");
  /* no train_batch_size: DeepSpeed derives it, and micro x accumulation stays */
  CHECK_PATCH("{" MB "7, " GA "1}", down, "{" MB "1, " GA "7}");
  CHECK_PATCH("{" MB "6, " GA "1}", down, "{" MB "3, " GA "2}");
  /* "auto": the HF Trainer's values are not edited; train_batch_size stays "auto" */
  CHECK_PATCH("{" TB "\"auto\", " MB "8, " GA "2}", down, "{" TB "\"auto\", " MB "4, " GA "4}");
  t = plan_title("{" TB "\"auto\", " MB "10, " GA "1}", down);
  CHECK_EQ_STR(t, "Halve the micro batch, double gradient accumulation (global batch unchanged)");
  free(t);
  t = plan_title("{" TB "\"auto\", " MB "5, " GA "1}", down);
  CHECK_EQ_STR(t, "Micro batch 5 -> 1, gradient accumulation 1 -> 5: the same global batch (1 is "
                  "the largest divisor of 5 up to 2); train_batch_size stays \"auto\"");
  free(t);
  CHECK_PATCH("{" MB "\"auto\", " GA "2}", down,
              "precondition not met: train_micro_batch_size_per_gpu is \"auto\": the HF Trainer "
              "sets it; change the matching TrainingArguments flag instead");
  CHECK_PATCH("{" MB "4, " GA "\"auto\"}", down,
              "precondition not met: gradient_accumulation_steps is \"auto\": the HF Trainer "
              "sets it; change the matching TrainingArguments flag instead");
  /* refusals: a micro batch of 1, a config whose batch sizes already fail */
  CHECK_PATCH("{" TB "8, " MB "1, " GA "1}", down,
              "precondition not met: train_micro_batch_size_per_gpu > 1 (it is 1)");
  CHECK_PATCH("{" TB "50, " MB "7, " GA "1}", down,
              "cannot shrink the micro batch: train_batch_size 50 is not "
              "train_micro_batch_size_per_gpu 7 x gradient_accumulation_steps 1 x a whole "
              "data-parallel size, so DeepSpeed's batch check fails already; make the three "
              "consistent first");
  /* the planner on its own, without the rule's preconditions */
#define MULS(f, m)                                                                                 \
  "{\"op\":\"multiply\",\"path\":\"train_micro_batch_size_per_gpu\",\"factor\":" f m "}",          \
      "{\"op\":\"multiply\",\"path\":\"gradient_accumulation_steps\",\"factor\":2}"
  static const char *const bare = PATCH(MULS("0.5", ""));
  CHECK_PATCH("{" MB "1, " GA "4}", bare,
              "cannot shrink the micro batch: train_micro_batch_size_per_gpu is already 1");
  CHECK_PATCH("{" MB "\"auto\", " GA "4}", bare,
              "train_micro_batch_size_per_gpu: value is \"auto\": the HF Trainer sets it; change "
              "the matching TrainingArguments flag instead");
  CHECK_PATCH("{" MB "4, " GA "\"auto\"}", bare,
              "gradient_accumulation_steps: value is \"auto\": the HF Trainer sets it; change "
              "the matching TrainingArguments flag instead");
  CHECK_PATCH("{" MB "4}", bare, "{" MB "2, " GA "2}"); /* accumulation defaults to 1 */
  CHECK_PATCH("{" TB "16, " MB "4}", bare,
              "cannot shrink the micro batch: gradient_accumulation_steps is absent, so DeepSpeed "
              "derives it from train_batch_size and the data-parallel size; set it first");
  CHECK_PATCH("{" MB "2.5, " GA "1}", bare,
              "cannot shrink the micro batch: train_micro_batch_size_per_gpu is 2.5, not a "
              "positive integer");
  CHECK_PATCH("{" MB "4, " GA "0}", bare,
              "cannot shrink the micro batch: gradient_accumulation_steps is 0, not a positive "
              "integer");
  CHECK_PATCH("{" MB "4, " GA "\"2\"}", bare,
              "cannot multiply gradient_accumulation_steps: it is \"2\", not a number");
  CHECK_PATCH("{" GA "2}", bare, "cannot multiply train_micro_batch_size_per_gpu: it is absent");
  CHECK_PATCH("{" TB "\"16\", " MB "4, " GA "1}", bare,
              "cannot shrink the micro batch: train_batch_size is \"16\", not a number");
  CHECK_PATCH("{" MB "4000000000000, " GA "1}", bare,
              "cannot shrink the micro batch: train_micro_batch_size_per_gpu is 4000000000000, not "
              "a positive integer of a plausible size");
  CHECK_PATCH("{" MB "7, " GA "1}", PATCH(MULS("0.5", ",\"min\":2")),
              "cannot shrink the micro batch: 7 has no divisor from 2 to 3, and a micro batch "
              "that does not divide it changes the global batch");
  CHECK_PATCH("{" MB "2, " GA "1}", PATCH(MULS("0.5", ",\"min\":2")),
              "already applied: the config already has what this fix would set");
  CHECK_PATCH("{" MB "1000000007, " GA "3}", bare, "{" MB "1, " GA "3000000021}"); /* a prime */
  /* patches that would change the product are not planned */
  CHECK_PATCH("{" MB "4, " GA "1}", PATCH(MULS("2", "")),
              "invalid patch: train_micro_batch_size_per_gpu is only multiplied by a factor "
              "between 0 and 1 (a smaller micro batch, more gradient accumulation)");
  CHECK_PATCH("{" MB "4, " GA "1}",
              PATCH("{\"op\":\"multiply\",\"path\":\"train_micro_batch_size_per_gpu\","
                    "\"factor\":0.5}"),
              "invalid patch: a multiply of train_micro_batch_size_per_gpu needs one of "
              "gradient_accumulation_steps in the same patch: DeepSpeed requires "
              "train_batch_size = micro batch x gradient_accumulation_steps x data-parallel size");
  static const char *const more =
      PATCH("{\"op\":\"multiply\",\"path\":\"gradient_accumulation_steps\",\"factor\":2}");
  CHECK_PATCH("{" TB "32, " MB "4, " GA "1}", more,
              "cannot multiply gradient_accumulation_steps alone: train_batch_size is 32 and must "
              "stay micro batch x gradient_accumulation_steps x data-parallel size");
  CHECK_PATCH("{" MB "4, " GA "1}", more, "{" MB "4, " GA "2}"); /* derived: still consistent */
  CHECK_PATCH("{" TB "32}",
              PATCH("{\"op\":\"multiply\",\"path\":\"train_batch_size\",\"factor\":2}"),
              "cannot multiply train_batch_size: DeepSpeed requires it to be micro batch x "
              "gradient_accumulation_steps x data-parallel size; change those instead");
  /* the identity holds after every plan, for the N the config held for */
  static const long long cases[][4] = {{56, 7, 1, 8}, {48, 6, 1, 8}, {96, 12, 1, 8}, {30, 15, 1, 2},
                                       {36, 9, 2, 2}, {64, 8, 1, 8}, {210, 35, 3, 2}};
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
    char cfg[160];
    snprintf(cfg, sizeof cfg, "{" TB "%lld, " MB "%lld, " GA "%lld}", cases[i][0], cases[i][1],
             cases[i][2]);
    ddx_error_t err = {0};
    char *out = plan_apply(cfg, down, &err);
    json_t *j = out ? json_loads(out, 0, NULL) : NULL;
    long long tb = json_integer_value(json_object_get(j, "train_batch_size"));
    long long mb = json_integer_value(json_object_get(j, "train_micro_batch_size_per_gpu"));
    long long ga = json_integer_value(json_object_get(j, "gradient_accumulation_steps"));
    CHECK_EQ_INT(tb, cases[i][0]);
    CHECK_EQ_INT(mb * ga * cases[i][3], tb);
    CHECK(mb < cases[i][1] && mb * 2 <= cases[i][1]);
    json_decref(j);
    free(out);
  }
#undef MULS
#undef MB
#undef GA
#undef TB
  free(down);
}

static void test_preconditions(void) {
  static const char cfg[] = "{\"a\": 3, \"s\": \"auto\", \"f\": true, \"o\": {\"x\": 1}}";
  static const char ok[] = "{\"a\": 3, \"s\": \"auto\", \"f\": true, \"o\": {\"x\": 1}, \"z\": 1}";
#define Z SET("z", "1")
  CHECK_PATCH(cfg, PATCH_IF(PRE0("a", "exists"), Z), ok);
  CHECK_PATCH(cfg, PATCH_IF(PRE0("o.x", "exists"), Z), ok);
  CHECK_PATCH(cfg, PATCH_IF(PRE0("o.y", "exists"), Z), "precondition not met: o.y is absent");
  CHECK_PATCH(cfg, PATCH_IF(PRE0("a.b", "exists"), Z), "precondition not met: a.b is absent");
  CHECK_PATCH(cfg, PATCH_IF(PRE0("m", "absent"), Z), ok);
  CHECK_PATCH(cfg, PATCH_IF(PRE0("a", "absent"), Z), "precondition not met: a is already set (3)");
  CHECK_PATCH(cfg, PATCH_IF(PRE0("o", "absent"), Z),
              "precondition not met: o is already set (an object)");
  CHECK_PATCH(cfg, PATCH_IF(PRE("a", "==", "3"), Z), ok);
  CHECK_PATCH(cfg, PATCH_IF(PRE("a", "==", "3.0"), Z), ok);
  CHECK_PATCH(cfg,
              PATCH_IF(JOIN(PRE("s", "==", "\"auto\""), PRE("f", "==", "true"),
                            PRE("o", "==", "{\"x\": 1.0}")),
                       Z),
              ok);
  CHECK_PATCH(cfg, PATCH_IF(PRE("a", "==", "4"), Z), "precondition not met: a == 4 (it is 3)");
  CHECK_PATCH(cfg, PATCH_IF(PRE("f", "==", "\"true\""), Z),
              "precondition not met: f == \"true\" (it is true)");
  CHECK_PATCH(cfg, PATCH_IF(PRE("m", "==", "1"), Z), "precondition not met: m == 1 (it is absent)");
  CHECK_PATCH(cfg, PATCH_IF(JOIN(PRE("a", "!=", "4"), PRE("m", "!=", "true")), Z), ok);
  CHECK_PATCH(cfg, PATCH_IF(PRE("f", "!=", "true"), Z),
              "precondition not met: f != true (it is true)");
  CHECK_PATCH(cfg,
              PATCH_IF(JOIN(PRE("a", "<", "4"), PRE("a", "<=", "3"), PRE("a", ">", "2.5"),
                            PRE("a", ">=", "3")),
                       Z),
              ok);
  CHECK_PATCH(cfg, PATCH_IF(PRE("a", "<", "3"), Z), "precondition not met: a < 3 (it is 3)");
  CHECK_PATCH(cfg, PATCH_IF(PRE("a", "<=", "2"), Z), "precondition not met: a <= 2 (it is 3)");
  CHECK_PATCH(cfg, PATCH_IF(PRE("a", ">", "3"), Z), "precondition not met: a > 3 (it is 3)");
  CHECK_PATCH(cfg, PATCH_IF(PRE("a", ">=", "3.5"), Z), "precondition not met: a >= 3.5 (it is 3)");
  CHECK_PATCH(cfg, PATCH_IF(PRE("s", ">", "1"), Z), "precondition not met: s > 1 (it is \"auto\")");
  CHECK_PATCH(cfg, PATCH_IF(PRE("m", "<", "1"), Z), "precondition not met: m < 1 (it is absent)");
  CHECK_PATCH(cfg, PATCH_IF(PRE("a", ">", "\"1\""), Z),
              "precondition not met: a > \"1\" (it is 3)");
  CHECK_PATCH(cfg, PATCH_IF(JOIN(PRE0("a", "not-auto"), PRE0("m", "not-auto")), Z), ok);
  CHECK_PATCH(cfg, PATCH_IF(PRE0("s", "not-auto"), Z),
              "precondition not met: s is \"auto\": the HF Trainer sets it; change the "
              "matching TrainingArguments flag instead");
  /* preconditions are checked before any op, against the original */
  CHECK_PATCH(cfg, PATCH_IF(PRE0("m", "absent"), SET("m", "1"), SET("z", "1")),
              "{\"a\": 3, \"s\": \"auto\", \"f\": true, \"o\": {\"x\": 1}, \"m\": 1, \"z\": 1}");
  /* invalid patches */
  CHECK_PATCH(cfg, PATCH_IF(PRE("a", "~=", "1"), Z),
              "invalid patch: precondition 0: see rules/README.md, config_patches");
  CHECK_PATCH(cfg, PATCH_IF(PRE0("a", "=="), Z),
              "invalid patch: precondition 0: see rules/README.md, config_patches");
  CHECK_PATCH(cfg, PATCH(Z, "{\"op\":\"set\",\"path\":\"q\"}"),
              "invalid patch: op 1: see rules/README.md, config_patches");
  CHECK_PATCH(cfg, PATCH("{\"op\":\"frob\",\"path\":\"q\"}"),
              "invalid patch: op 0: see rules/README.md, config_patches");
  CHECK_PATCH(cfg, PATCH(SET("a.", "1")),
              "invalid patch: op 0: see rules/README.md, config_patches");
  CHECK_PATCH(cfg, "{\"id\":\"t\",\"ops\":[]}",
              "invalid patch: expected {id, title, preconditions?, ops: [...]}");
  ddx_error_t err;
  char *got = plan_apply(cfg, "{\"ops\": [", &err);
  CHECK(!got && !strncmp(err.msg, "invalid patch: ", 15));
#undef Z
}

static void test_apply(void) {
  ddx_text_edit_t e[2] = {{2, 4, "xy"}, {3, 5, "z"}};
  size_t n;
  CHECK(!ddx_text_apply("abcdef", 6, e, 2, &n)); /* overlapping */
  e[1].start = 4;
  char *s = ddx_text_apply("abcdef", 6, e, 2, &n);
  CHECK_EQ_STR(s, "abxyzf");
  CHECK_EQ_INT(n, 6);
  free(s);
  e[1].end = 7;
  CHECK(!ddx_text_apply("abcdef", 6, e, 2, &n)); /* past the end */
  s = ddx_text_apply("", 0, NULL, 0, &n);
  CHECK(s && n == 0);
  free(s);
}

/* ---- property tests ---- */

/* Numbers compare by value, objects ignore key order. */
static bool json_same(json_t *a, json_t *b) {
  if (json_is_number(a) && json_is_number(b)) return json_number_value(a) == json_number_value(b);
  if (json_typeof(a) != json_typeof(b)) return false;
  if (json_is_object(a)) {
    const char *k;
    json_t *v;
    if (json_object_size(a) != json_object_size(b)) return false;
    json_object_foreach(a, k, v) {
      json_t *w = json_object_get(b, k);
      if (!w || !json_same(v, w)) return false;
    }
    return true;
  }
  if (json_is_array(a)) {
    if (json_array_size(a) != json_array_size(b)) return false;
    for (size_t i = 0; i < json_array_size(a); i++)
      if (!json_same(json_array_get(a, i), json_array_get(b, i))) return false;
    return true;
  }
  return json_equal(a, b);
}

/* Splits a dotted path into parts (at most 16); returns the count. */
static int split_path(const char *path, char parts[16][128]) {
  int n = 0;
  const char *s = path;
  while (n < 16) {
    const char *dot = strchr(s, '.');
    size_t len = dot ? (size_t)(dot - s) : strlen(s);
    snprintf(parts[n++], 128, "%.*s", (int)len, s);
    if (!dot) break;
    s = dot + 1;
  }
  return n;
}

static json_t *oracle_get(json_t *root, const char *path) {
  char parts[16][128];
  int n = split_path(path, parts);
  for (int i = 0; i < n && root; i++)
    root = json_is_object(root) ? json_object_get(root, parts[i]) : NULL;
  return root;
}

/* The preconditions, evaluated on the jansson tree. */
static bool oracle_preconditions(json_t *root, json_t *pres) {
  size_t i;
  json_t *pre;
  json_array_foreach(pres, i, pre) {
    const char *op = json_string_value(json_object_get(pre, "op"));
    json_t *v = oracle_get(root, json_string_value(json_object_get(pre, "path")));
    json_t *want = json_object_get(pre, "value");
    bool is_auto = json_is_string(v) && !strcmp(json_string_value(v), "auto");
    bool nums = json_is_number(v) && json_is_number(want);
    double a = nums ? json_number_value(v) : 0, b = nums ? json_number_value(want) : 0;
    bool ok = !strcmp(op, "exists")     ? v != NULL
              : !strcmp(op, "absent")   ? v == NULL
              : !strcmp(op, "not-auto") ? !is_auto
              : !strcmp(op, "==")       ? v && json_same(v, want)
              : !strcmp(op, "!=")       ? !(v && json_same(v, want))
              : !strcmp(op, "<")        ? nums && a < b
              : !strcmp(op, "<=")       ? nums && a <= b
              : !strcmp(op, ">")        ? nums && a > b
              : !strcmp(op, ">=")       ? nums && a >= b
                                        : false;
    if (!ok) return false;
  }
  return true;
}

static bool is_op(json_t *op, const char *kind, const char *path) {
  const char *k = json_string_value(json_object_get(op, "op"));
  const char *p = json_string_value(json_object_get(op, "path"));
  return k && p && !strcmp(k, kind) && !strcmp(p, path);
}

static bool batch_int(json_t *v) {
  double x = json_number_value(v);
  return json_is_number(v) && x >= 1 && x <= 1099511627776.0 && floor(x) == x;
}

/* The micro batch and gradient accumulation multiplied together (see
 * dsconfig.c, "the batch identity"), by the definition: the largest divisor
 * of the micro batch up to factor x micro, found by counting down. */
static bool oracle_batch(json_t *root, json_t *mop, json_t *gop) {
  double f = json_number_value(json_object_get(mop, "factor"));
  json_t *min = json_object_get(mop, "min");
  double lo = min ? json_number_value(min) : 1;
  json_t *m = json_object_get(root, "train_micro_batch_size_per_gpu");
  json_t *g = json_object_get(root, "gradient_accumulation_steps");
  json_t *t = json_object_get(root, "train_batch_size");
  bool t_auto = json_is_string(t) && !strcmp(json_string_value(t), "auto");
  if (!(f > 0 && f < 1) || !gop || !batch_int(m) || (g && !batch_int(g)) || (!g && t)) return false;
  long long m0 = (long long)json_number_value(m), g0 = g ? (long long)json_number_value(g) : 1;
  if (t && !t_auto && (!batch_int(t) || (long long)json_number_value(t) % (m0 * g0))) return false;
  if (m0 == 1) return false;
  double target = floor((double)m0 * f);
  if (target < lo) target = lo;
  if (target >= (double)m0) return true;
  long long d = (long long)target;
  while (d >= 1 && (double)d >= lo && m0 % d)
    d--;
  if (d < 1 || (double)d < lo) return false;
  json_object_set_new(root, "train_micro_batch_size_per_gpu", json_integer(d));
  json_object_set_new(root, "gradient_accumulation_steps", json_integer(g0 * (m0 / d)));
  return true;
}

/* The ops applied to a jansson tree. Returns false when one must be refused. */
static bool oracle_ops(json_t *root, json_t *ops) {
  size_t i;
  json_t *op, *mop = NULL, *gop = NULL;
  json_array_foreach(ops, i, op) {
    if (is_op(op, "multiply", "train_micro_batch_size_per_gpu")) mop = op;
    if (is_op(op, "multiply", "gradient_accumulation_steps")) gop = op;
  }
  bool batch_done = false;
  json_array_foreach(ops, i, op) {
    if (mop && (op == mop || op == gop)) {
      if (!batch_done && !oracle_batch(root, mop, gop)) return false;
      batch_done = true;
      continue;
    }
    if (is_op(op, "multiply", "train_batch_size")) return false;
    if (op == gop && json_is_number(json_object_get(root, "train_batch_size"))) return false;
    const char *kind = json_string_value(json_object_get(op, "op"));
    char parts[16][128];
    int n = split_path(json_string_value(json_object_get(op, "path")), parts);
    json_t *obj = root;
    for (int k = 0; k < n - 1 && obj; k++) {
      json_t *next = json_object_get(obj, parts[k]);
      if (!next && !strcmp(kind, "set")) json_object_set_new(obj, parts[k], next = json_object());
      if (next && !json_is_object(next)) { /* set refuses; elsewhere the path is absent */
        if (!strcmp(kind, "set")) return false;
        next = NULL;
      }
      obj = next;
    }
    json_t *v = obj ? json_object_get(obj, parts[n - 1]) : NULL;
    if (!strcmp(kind, "set")) {
      json_object_set(obj, parts[n - 1], json_object_get(op, "value"));
    } else if (!strcmp(kind, "remove")) {
      if (v) json_object_del(obj, parts[n - 1]);
    } else if (!strcmp(kind, "rename")) {
      char to[16][128];
      int tn = split_path(json_string_value(json_object_get(op, "to")), to);
      if (!v || !strcmp(to[tn - 1], parts[n - 1])) continue;
      if (json_object_get(obj, to[tn - 1])) return false;
      json_object_set(obj, to[tn - 1], v);
      json_object_del(obj, parts[n - 1]);
    } else if (!strcmp(kind, "multiply")) {
      if (!json_is_number(v)) return false;
      double r = floor(json_number_value(v) * json_number_value(json_object_get(op, "factor")));
      json_t *min = json_object_get(op, "min");
      if (min && r < json_number_value(min)) r = json_number_value(min);
      json_object_set_new(obj, parts[n - 1], json_real(r));
    }
  }
  return true;
}

/* Adds the keys a patch's ops name (path parts, rename targets, keys inside
 * set values) as "\"key\"" strings: lines holding them may change. */
static void intended_keys(json_t *v, ddx_vec_t *keys) {
  if (json_is_object(v)) {
    const char *k;
    json_t *x;
    json_object_foreach(v, k, x) {
      *(char **)ddx_vec_push(keys) = NULL;
      ddx_sb_t b;
      ddx_sb_init(&b);
      ddx_sb_printf(&b, "\"%s\"", k);
      DDX_VEC_AT(keys, char *, keys->len - 1) = ddx_sb_take(&b);
      intended_keys(x, keys);
    }
  }
}

static void patch_keys(json_t *patch, ddx_vec_t *keys) {
  size_t i;
  json_t *op;
  json_array_foreach(json_object_get(patch, "ops"), i, op) {
    const char *paths[2] = {json_string_value(json_object_get(op, "path")),
                            json_string_value(json_object_get(op, "to"))};
    for (int p = 0; p < 2; p++) {
      if (!paths[p]) continue;
      char parts[16][128];
      int n = split_path(paths[p], parts);
      for (int k = 0; k < n; k++) {
        ddx_sb_t b;
        ddx_sb_init(&b);
        ddx_sb_printf(&b, "\"%s\"", parts[k]);
        *(char **)ddx_vec_push(keys) = ddx_sb_take(&b);
      }
    }
    intended_keys(json_object_get(op, "value"), keys);
  }
}

static bool has(const char *s, size_t n, const char *needle) {
  size_t k = strlen(needle);
  for (size_t i = 0; i + k <= n; i++)
    if (!memcmp(s + i, needle, k)) return true;
  return false;
}

/* A line without its line ending and one trailing comma (the fix-up). */
static size_t line_core(const char *s, size_t n) {
  if (n && s[n - 1] == '\r') n--;
  if (n && s[n - 1] == ',') n--;
  return n;
}

typedef struct prop_stats {
  int configs, pairs, plans, refusals, line_checks, corrupt;
  const char *reason_names[10];
  int reason_counts[10];
} prop_stats_t;

static void count_reason(prop_stats_t *st, const char *msg) {
  static const char *const names[] = {"precondition not met",
                                      "already applied",
                                      "value is \"auto\"",
                                      "not an object",
                                      "not a number",
                                      "is absent",
                                      "already exists",
                                      "cannot shrink the micro batch",
                                      "accumulation_steps alone",
                                      "other"};
  int k = 0;
  while (k < 9 && !strstr(msg, names[k]))
    k++;
  if (k == 9) fprintf(stderr, "unclassified refusal: %s\n", msg);
  st->reason_names[k] = names[k];
  st->reason_counts[k]++;
}

/* The checks on one plan that was produced. */
static void check_plan_result(const char *text, const gen_style_t *gs, json_t *patch,
                              const char *patch_text, const ddx_patch_plan_t *plan,
                              json_t *expected, prop_stats_t *st) {
  size_t len = strlen(text), nlen;
  for (size_t i = 0; i < plan->nedits; i++) {
    CHECK(plan->edits[i].start <= plan->edits[i].end && plan->edits[i].end <= len);
    CHECK(i == 0 || plan->edits[i - 1].end <= plan->edits[i].start);
    CHECK(plan->edits[i].start != plan->edits[i].end || plan->edits[i].text[0]);
    /* no edit splits a character (the editor counts UTF-16 units) */
    CHECK(plan->edits[i].start == len || (text[plan->edits[i].start] & 0xC0) != 0x80);
    CHECK(plan->edits[i].end == len || (text[plan->edits[i].end] & 0xC0) != 0x80);
  }
  char *out = ddx_text_apply(text, len, plan->edits, plan->nedits, &nlen);
  CHECK(out != NULL);
  if (!out) {
    st->corrupt++;
    return;
  }
  ddx_dsconfig_t *again;
  ddx_error_t err;
  bool bad = false;
  int rc = ddx_dsconfig_parse(&again, out, nlen, &err);
  CHECK_EQ_INT(rc, 0);
  json_error_t je;
  json_t *got = json_loadb(out, nlen, JSON_REJECT_DUPLICATES, &je);
  CHECK(got && json_same(got, expected));
  bad |= !got || !json_same(got, expected) || rc;
  /* line endings, final newline and what follows the closing brace are kept */
  bool crlf = strstr(text, "\r\n") != NULL;
  for (size_t i = 0; i < nlen; i++)
    if (out[i] == '\n')
      bad |= crlf != (i > 0 && out[i - 1] == '\r');
    else if (out[i] == '\r')
      bad |= !crlf;
  bad |= (len && text[len - 1] == '\n') != (nlen && out[nlen - 1] == '\n');
  const char *tail_old = strrchr(text, '}'), *tail_new = strrchr(out, '}');
  bad |= strcmp(tail_old, tail_new) != 0;
  /* every line is an original one (give or take the comma fix-up), holds an
   * intended key, or is new and indented in the file's style */
  ddx_vec_t keys;
  ddx_vec_init(&keys, sizeof(char *));
  patch_keys(patch, &keys);
  size_t old_nl = 0, new_nl = 0;
  for (size_t i = 0; i < len; i++)
    old_nl += text[i] == '\n';
  for (size_t i = 0; i < nlen; i++)
    new_nl += out[i] == '\n';
  for (const char *l = out; l < out + nlen;) {
    const char *e = memchr(l, '\n', (size_t)(out + nlen - l));
    size_t n = e ? (size_t)(e - l) : (size_t)(out + nlen - l), core = line_core(l, n);
    bool found = false, keyed = false;
    for (const char *o = text; !found && o < text + len;) {
      const char *oe = memchr(o, '\n', (size_t)(text + len - o));
      size_t on = oe ? (size_t)(oe - o) : (size_t)(text + len - o);
      found = line_core(o, on) == core && !memcmp(o, l, core);
      o += on + 1;
    }
    for (size_t k = 0; k < keys.len && !keyed; k++)
      keyed = has(l, n, DDX_VEC_AT(&keys, char *, k));
    keyed |= !gs->unit; /* a one-line file has only the line that changes */
    st->line_checks++;
    if (!found) {
      size_t ind = 0;
      while (ind < n && (l[ind] == ' ' || l[ind] == '\t'))
        ind++;
      bool indent_ok = !gs->unit || (strspn(l, gs->unit[0] == '\t' ? "\t" : " ") >= ind &&
                                     ind % strlen(gs->unit) == 0);
      bool sep_ok = true; /* every key separator is the file's */
      for (size_t i = 0; i + 2 < n; i++)
        if (l[i] == '"' && l[i + 1] == ':') sep_ok &= (l[i + 2] == ' ') == (gs->sep[1] == ' ');
      bool structural = strspn(l, " \t{}[],\r") == n;
      if (!indent_ok || !sep_ok || (!keyed && !structural)) {
        fprintf(stderr, "line %.*s: indent %d sep %d keyed %d\n", (int)n, l, indent_ok, sep_ok,
                keyed);
        bad = true;
      }
    }
    l += n + 1;
  }
  if (!gs->unit) bad |= new_nl != old_nl; /* a one-line file stays on one line */
  for (size_t k = 0; k < keys.len; k++)
    free(DDX_VEC_AT(&keys, char *, k));
  ddx_vec_free(&keys);
  CHECK(!bad);
  st->corrupt += bad;
  /* applied once, a patch without multiply has nothing left to do */
  if (!rc && !strstr(patch_text, "\"multiply\"")) {
    ddx_patch_plan_t p2;
    CHECK(ddx_dsconfig_plan(again, patch_text, &p2, &err) != 0);
    if (!strstr(err.msg, "precondition not met") && !strstr(err.msg, "already applied")) bad = true;
    ddx_patch_plan_free(&p2);
  }
  if (bad)
    fprintf(stderr, "--- config (%s):\n%s\n--- patch %s\n--- result:\n%s\n", gs->name, text,
            patch_text, out);
  if (!rc) ddx_dsconfig_free(again);
  json_decref(got);
  free(out);
}

static void check_pair(const char *text, const gen_style_t *gs, const char *patch_text,
                       prop_stats_t *st) {
  json_t *patch = json_loads(patch_text, 0, NULL);
  json_t *orig = json_loads(text, 0, NULL), *expected = json_deep_copy(orig);
  bool pre_ok = oracle_preconditions(orig, json_object_get(patch, "preconditions"));
  bool ops_ok = oracle_ops(expected, json_object_get(patch, "ops"));
  ddx_dsconfig_t *c;
  ddx_error_t err;
  ddx_patch_plan_t plan;
  CHECK_EQ_INT(ddx_dsconfig_parse(&c, text, strlen(text), &err), 0);
  int rc = ddx_dsconfig_plan(c, patch_text, &plan, &err);
  st->pairs++;
  const char *want = !pre_ok                     ? "precondition not met"
                     : !ops_ok                   ? ""
                     : json_same(expected, orig) ? "already applied"
                                                 : NULL;
  if (rc) {
    st->refusals++;
    count_reason(st, err.msg);
    /* an op refusal ("") is none of the other two */
    bool as_expected = want && (*want ? strstr(err.msg, want) != NULL
                                      : !strstr(err.msg, "precondition not met") &&
                                            !strstr(err.msg, "already applied"));
    CHECK(as_expected);
    if (!as_expected)
      fprintf(stderr, "refused (%s) but expected %s\n--- config:\n%s\n--- patch %s\n", err.msg,
              want ? want : "a plan", text, patch_text);
  } else {
    st->plans++;
    CHECK(want == NULL);
    if (want)
      fprintf(stderr, "planned but expected %s: %s\n%s\n", want, patch_text, text);
    else
      check_plan_result(text, gs, patch, patch_text, &plan, expected, st);
    ddx_patch_plan_free(&plan);
  }
  ddx_dsconfig_free(c);
  json_decref(orig);
  json_decref(expected);
  json_decref(patch);
}

/* Gathers every config_patches entry (compact JSON text, deduplicated). */
static void collect_patches(json_t *j, ddx_vec_t *out) {
  size_t i;
  json_t *x;
  const char *k;
  if (json_is_array(j)) {
    json_array_foreach(j, i, x) collect_patches(x, out);
    return;
  }
  if (!json_is_object(j)) return;
  json_array_foreach(json_object_get(j, "config_patches"), i, x) {
    char *s = json_dumps(x, JSON_COMPACT);
    bool dup = false;
    for (size_t p = 0; p < out->len && !dup; p++)
      dup = !strcmp(DDX_VEC_AT(out, char *, p), s);
    if (dup)
      free(s);
    else
      *(char **)ddx_vec_push(out) = s;
  }
  json_object_foreach(j, k, x) if (strcmp(k, "config_patches")) collect_patches(x, out);
}

static int load_rule_patches(const char *dir, ddx_vec_t *out) {
  DIR *d = opendir(dir);
  if (!d) return 0;
  int files = 0;
  struct dirent *de;
  while ((de = readdir(d))) {
    if (de->d_name[0] == '.') continue;
    char path[1024];
    struct stat sb;
    snprintf(path, sizeof path, "%s/%s", dir, de->d_name);
    if (stat(path, &sb)) continue;
    if (S_ISDIR(sb.st_mode)) {
      files += load_rule_patches(path, out);
    } else if (strlen(de->d_name) > 5 && !strcmp(de->d_name + strlen(de->d_name) - 5, ".json")) {
      json_t *j = json_load_file(path, 0, NULL);
      collect_patches(j, out);
      json_decref(j);
      files++;
    }
  }
  closedir(d);
  return files;
}

/* Patches the rule files may lack: renames, removes of nested keys, sets of
 * whole blocks, multiplies without preconditions. */
static const char *const extra_patches[] = {
    PATCH("{\"op\":\"rename\",\"path\":\"zero_optimization.stage3_gather_fp16_weights_on_model_"
          "save\",\"to\":\"stage3_gather_16bit_weights_on_model_save\"}"),
    PATCH("{\"op\":\"remove\",\"path\":\"zero_optimization.offload_optimizer.nvme_path\"}",
          "{\"op\":\"remove\",\"path\":\"optimizer.params.betas\"}"),
    PATCH("{\"op\":\"remove\",\"path\":\"fp16\"}", "{\"op\":\"remove\",\"path\":\"bf16.enabled\"}"),
    PATCH("{\"op\":\"multiply\",\"path\":\"gradient_accumulation_steps\",\"factor\":3}"),
    PATCH("{\"op\":\"multiply\",\"path\":\"zero_optimization.reduce_bucket_size\","
          "\"factor\":0.5,\"min\":1000}"),
    PATCH(SET("zero_optimization", "{\"stage\": 3, \"offload_param\": {\"device\": \"cpu\"}}")),
    PATCH(SET("wandb.project", "\"新项目 ✨\""), SET("tags", "[1, \"two\", {\"k\": null}]")),
    PATCH(
        "{\"op\":\"remove\",\"path\":\"comment\"}", SET("zero_optimization.stage", "1"),
        "{\"op\":\"remove\",\"path\":\"zero_optimization.cpu_offload\"}",
        SET("zero_optimization.offload_optimizer", "{\"device\": \"cpu\", \"pin_memory\": true}")),
    PATCH_IF(PRE0("scheduler", "exists"),
             "{\"op\":\"rename\",\"path\":\"scheduler.params\","
             "\"to\":\"scheduler.options\"}",
             SET("scheduler.options.total_num_steps", "1000")),
};

/* Refusals of texts that are not plain JSON, made from each generated one. */
static void check_unparseable(const char *text, prop_stats_t *st) {
  (void)st;
  size_t len = strlen(text);
  const char *close = strrchr(text, '}'), *open = strchr(text, '{');
  size_t at = (size_t)(close - text), o = (size_t)(open - text) + 1;
  while (at > 0 && strchr(" \t\r\n", text[at - 1]))
    at--;
  ddx_sb_t b;
  ddx_error_t err;
  static const struct {
    const char *insert, *needle;
    bool after_open;
  } cases[] = {
      {",", "trailing comma", false},
      {"/* note */", "a comment", true},
      {"// note\n", "a comment", true},
      {"\"train_batch_size\": NaN, ", "NaN", true},
      {"\"x\": \"\xfe\", ", "invalid UTF-8", true},
      {"\"x\": \"open, ", "", true},
  };
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
    ddx_sb_init(&b);
    size_t pos = cases[i].after_open ? o : at;
    ddx_sb_putn(&b, text, pos);
    ddx_sb_puts(&b, cases[i].insert);
    ddx_sb_puts(&b, text + pos);
    const char *r = parse_reason(b.s, b.len, &err);
    CHECK(*r && strstr(r, cases[i].needle) && !strncmp(r, "line ", 5));
    ddx_sb_free(&b);
  }
  /* a duplicate of the first key, an array around it all, nothing, half of it */
  const char *q = strchr(text, '"'), *qe = strchr(q + 1, '"');
  ddx_sb_init(&b);
  ddx_sb_putn(&b, text, o);
  ddx_sb_putn(&b, q, (size_t)(qe - q) + 1);
  ddx_sb_puts(&b, ":0,");
  ddx_sb_puts(&b, text + o);
  CHECK(strstr(parse_reason(b.s, b.len, &err), "duplicate key"));
  ddx_sb_free(&b);
  ddx_sb_init(&b);
  ddx_sb_printf(&b, "[%s]", text);
  CHECK(strstr(parse_reason(b.s, b.len, &err), "the top level is an array"));
  ddx_sb_free(&b);
  CHECK(strstr(parse_reason(text, 0, &err), "empty"));
  char *half = malloc(len / 2 + 1); /* exactly sized: ASan sees any read past it */
  memcpy(half, text, len / 2 + 1);
  CHECK(*parse_reason(half, len / 2 + 1, &err));
  free(half);
  /* and none of them is planned */
  ddx_dsconfig_t *c = NULL;
  CHECK(ddx_dsconfig_parse(&c, "{\"a\": 1,}", 9, &err) != 0 && c == NULL);
}

/* The reader against jansson on mutated texts: they agree on what is JSON
 * (jansson also refuses integers beyond 64 bits, which Python reads). */
static void fuzz_against_jansson(const char *text, unsigned seed, int *agree, int *accepted) {
  static const char alphabet[] = "{}[]\",:0123456789.-+eEtrufalsn \n\t\r\\/#'*u\xc3\xa9\xff\x80";
  gen_t g = {.rng = 0xD1B54A32D192ED03ull ^ seed};
  size_t len = strlen(text);
  for (int round = 0; round < 60; round++) {
    char *buf = malloc(len + 8);
    memcpy(buf, text, len);
    size_t n = len;
    for (int k = 0, edits = 1 + gen_pick(&g, 3); k < edits && n; k++) {
      size_t at = (size_t)gen_pick(&g, (int)n);
      char ch = alphabet[gen_pick(&g, (int)sizeof alphabet - 1)];
      switch (gen_pick(&g, 4)) {
      case 0:
        buf[at] = ch;
        break;
      case 1:
        memmove(buf + at, buf + at + 1, n - at - 1), n--;
        break;
      case 2:
        if (n < len + 8) memmove(buf + at + 1, buf + at, n - at), buf[at] = ch, n++;
        break;
      default:
        n = at;
        break;
      }
    }
    char *exact = malloc(n ? n : 1);
    memcpy(exact, buf, n);
    free(buf);
    ddx_dsconfig_t *c = NULL;
    ddx_error_t err;
    bool mine = ddx_dsconfig_parse(&c, exact, n, &err) == 0;
    json_error_t je;
    json_t *j = json_loadb(exact, n, JSON_REJECT_DUPLICATES | JSON_ALLOW_NUL, &je);
    bool theirs = j && json_is_object(j);
    bool ok = mine == theirs || (mine && strstr(je.text, "too big"));
    if (!ok)
      fprintf(stderr, "disagree: mine %d (%s) jansson %d (%s) on:\n%.*s\n", mine,
              mine ? "" : err.msg, theirs, j ? "" : je.text, (int)n, exact);
    CHECK(ok);
    *agree += ok;
    *accepted += mine;
    if (mine && j) { /* what get renders is the same JSON */
      const char *k;
      json_t *v;
      json_object_foreach(j, k, v) {
        char *got = NULL;
        if (strchr(k, '.') || !ddx_dsconfig_get(c, k, &got)) continue;
        json_t *back = json_loads(got, JSON_DECODE_ANY | JSON_ALLOW_NUL, NULL);
        CHECK(back && json_same(back, v));
        json_decref(back);
        free(got);
      }
    }
    json_decref(j);
    ddx_dsconfig_free(c);
    free(exact);
  }
}

static void test_properties(void) {
  ddx_vec_t patches;
  ddx_vec_init(&patches, sizeof(char *));
  int files = load_rule_patches("rules", &patches);
  size_t from_rules = patches.len;
  if (!files) fprintf(stderr, "note: no rules/ here (run from the repository root)\n");
  for (size_t i = 0; i < sizeof extra_patches / sizeof *extra_patches; i++)
    *(char **)ddx_vec_push(&patches) = strdup(extra_patches[i]);
  prop_stats_t st = {0};
  int agree = 0, accepted = 0, styles[16] = {0};
  enum { NCONFIGS = 270 };
  for (unsigned seed = 0; seed < NCONFIGS; seed++) {
    gen_style_t gs;
    char *text = gen_text(seed, &gs);
    st.configs++;
    styles[seed % 9]++;
    ddx_dsconfig_t *c;
    ddx_error_t err;
    if (ddx_dsconfig_parse(&c, text, strlen(text), &err)) {
      fprintf(stderr, "generated config %u does not parse: %s\n%s\n", seed, err.msg, text);
      CHECK(false);
      free(text);
      continue;
    }
    CHECK(ddx_dsconfig_is_deepspeed(c));
    ddx_dsconfig_free(c);
    for (size_t p = 0; p < patches.len; p++)
      check_pair(text, &gs, DDX_VEC_AT(&patches, char *, p), &st);
    check_unparseable(text, &st);
    fuzz_against_jansson(text, seed, &agree, &accepted);
    free(text);
  }
  printf("dsconfig properties: %d configs (9 styles) x %zu patches (%zu from %d rule files, "
         "%zu fixed) = %d pairs: %d plans, %d refusals, %d result lines checked\n",
         st.configs, patches.len, from_rules, files, patches.len - from_rules, st.pairs, st.plans,
         st.refusals, st.line_checks);
  for (int k = 0; k < 10; k++)
    if (st.reason_counts[k]) printf("  refused, %s: %d\n", st.reason_names[k], st.reason_counts[k]);
  printf("  reader vs jansson on %d mutated texts: %d agree, %d accepted\n", NCONFIGS * 60, agree,
         accepted);
  CHECK(from_rules > 0 || !files);
  CHECK(st.plans > 1000);
  for (size_t p = 0; p < patches.len; p++)
    free(DDX_VEC_AT(&patches, char *, p));
  ddx_vec_free(&patches);
}

/* The HF Trainer's flags: a fix whose keys are "auto" is passed as flags,
 * activation checkpointing in the Trainer's config is
 * --gradient_checkpointing, mixed ownership and configs without "auto" are
 * refused with the reason; an edit of a key the Trainer checks names the
 * flag that must change with it. */
static void test_hf_flags(void) {
  const char *hf =
      "{\"train_micro_batch_size_per_gpu\": \"auto\", \"gradient_accumulation_steps\": "
      "\"auto\", \"bf16\": {\"enabled\": \"auto\"}, \"zero_optimization\": {\"stage\": 3}}";
  const char *mixed = "{\"train_micro_batch_size_per_gpu\": \"auto\", "
                      "\"gradient_accumulation_steps\": 8}";
  const char *plain = "{\"train_micro_batch_size_per_gpu\": 4, \"gradient_accumulation_steps\": 2, "
                      "\"zero_optimization\": {\"stage\": 2}}";
  const char *hf_num =
      "{\"train_micro_batch_size_per_gpu\": 4, \"gradient_accumulation_steps\": 2, "
      "\"train_batch_size\": \"auto\", \"bf16\": {\"enabled\": false}}";
  char *micro = rule_patch("rules/deepspeed/ds.oom.activations.json", "micro-batch-down");
  char *ckpt = rule_patch("rules/deepspeed/ds.oom.activations.json", "activation-checkpointing");
  char *bf16 = rule_patch("rules/deepspeed/ds.oom.activations.json", "bf16-instead-of-fp32");
  char *off = rule_patch("rules/deepspeed/ds.oom.activations.json", "offload-optimizer-cpu-client");
  CHECK(micro && ckpt && bf16 && off);
  if (!micro || !ckpt || !bf16 || !off) goto out;
  ddx_dsconfig_t *c;
  ddx_error_t err;
  char *flags;
  bool exact;
  CHECK_EQ_INT(ddx_dsconfig_parse(&c, hf, strlen(hf), &err), 0);
  CHECK(ddx_dsconfig_has_auto(c));
  ddx_hf_known_t known = {.micro_batch = 8, .grad_accum = 2}, none = {0};
  CHECK_EQ_INT(ddx_dsconfig_plan_hf(c, micro, &known, &flags, &exact, &err), 0);
  CHECK_EQ_STR(flags, "--per_device_train_batch_size 4 --gradient_accumulation_steps 4");
  CHECK(exact);
  free(flags);
  CHECK_EQ_INT(ddx_dsconfig_plan_hf(c, micro, &none, &flags, &exact, &err), 0);
  CHECK(!exact && strstr(flags, "--per_device_train_batch_size <half"));
  free(flags);
  ddx_hf_known_t one = {.micro_batch = 1, .grad_accum = 4};
  CHECK(ddx_dsconfig_plan_hf(c, micro, &one, &flags, &exact, &err) != 0);
  CHECK(strstr(err.msg, "already 1") != NULL);
  CHECK_EQ_INT(ddx_dsconfig_plan_hf(c, ckpt, &none, &flags, &exact, &err), 0);
  CHECK_EQ_STR(flags, "--gradient_checkpointing");
  free(flags);
  CHECK_EQ_INT(ddx_dsconfig_plan_hf(c, bf16, &none, &flags, &exact, &err), 0);
  CHECK_EQ_STR(flags, "--bf16");
  free(flags);
  CHECK(ddx_dsconfig_plan_hf(c, off, &none, &flags, &exact, &err) != 0);
  CHECK(strstr(err.msg, "not the HF Trainer's: zero_optimization.offload_optimizer.device") !=
        NULL);
  ddx_dsconfig_free(c);
  /* micro "auto", accumulation the config's: refused, saying what to do */
  CHECK_EQ_INT(ddx_dsconfig_parse(&c, mixed, strlen(mixed), &err), 0);
  CHECK(ddx_dsconfig_plan_hf(c, micro, &known, &flags, &exact, &err) != 0);
  CHECK(strstr(err.msg, "make both \"auto\" or both numbers") != NULL);
  ddx_dsconfig_free(c);
  /* no "auto": not the Trainer's; checkpointing is the config's edit */
  CHECK_EQ_INT(ddx_dsconfig_parse(&c, plain, strlen(plain), &err), 0);
  CHECK(!ddx_dsconfig_has_auto(c));
  CHECK(ddx_dsconfig_plan_hf(c, ckpt, &none, &flags, &exact, &err) != 0);
  CHECK(strstr(err.msg, "no \"auto\" value") != NULL);
  ddx_patch_plan_t plan;
  char buf[256];
  CHECK_EQ_INT(ddx_dsconfig_plan(c, micro, &plan, &err), 0);
  CHECK(!ddx_dsconfig_hf_flags_after(c, &plan, buf, sizeof buf) && !buf[0]);
  ddx_patch_plan_free(&plan);
  ddx_dsconfig_free(c);
  /* the Trainer's config with numbers it checks: the edit names the flags */
  CHECK_EQ_INT(ddx_dsconfig_parse(&c, hf_num, strlen(hf_num), &err), 0);
  CHECK_EQ_INT(ddx_dsconfig_plan(c, micro, &plan, &err), 0);
  CHECK(ddx_dsconfig_hf_flags_after(c, &plan, buf, sizeof buf));
  CHECK_EQ_STR(buf, "--per_device_train_batch_size 2 --gradient_accumulation_steps 4");
  ddx_patch_plan_free(&plan);
  CHECK_EQ_INT(ddx_dsconfig_plan(c, bf16, &plan, &err), 0);
  CHECK(ddx_dsconfig_hf_flags_after(c, &plan, buf, sizeof buf));
  CHECK_EQ_STR(buf, "--bf16");
  ddx_patch_plan_free(&plan);
  ddx_dsconfig_free(c);
out:
  free(micro);
  free(ckpt);
  free(bf16);
  free(off);
}

/* ---- every OOM class x every style x every configuration state ----
 *
 * Beside an OOM, each readable config gets at least one applicable fix of
 * the class's ladder: a ds_config edit (planned, then checked against the
 * oracle like every pair: 0 corruptions), or the Trainer's flags where the
 * change is the HF Trainer's (ddx_dsconfig_plan_hf); where none applies,
 * every rung says why. The activation-OOM ladders (ds.oom.activations,
 * torch.oom.generic, fragmentation) always have a rung left in these
 * states: activation checkpointing is never on in them. */

static const char *const oom_classes[] = {
    "rules/deepspeed/ds.oom.activations.json",   "rules/deepspeed/ds.oom.engine-init.json",
    "rules/deepspeed/ds.oom.fragmentation.json", "rules/deepspeed/ds.oom.optimizer-states.json",
    "rules/deepspeed/ds.oom.zero3-gather.json",  "rules/pytorch/torch.oom.generic.json",
};
#define NOOM (sizeof oom_classes / sizeof *oom_classes)

static bool known_refusal(const char *msg) {
  static const char *const starts[] = {
      "precondition not met:", "already applied:", "not the HF Trainer's:", "cannot ", NULL};
  for (int i = 0; starts[i]; i++)
    if (strstr(msg, starts[i])) return true;
  return strstr(msg, "value is \"auto\"") != NULL;
}

/* A rung that does not apply because it is done or cannot be done here:
 * ZeRO-3 is on, an offload is on already, the stage forbids it. */
static bool exhausted_reason(const char *msg) {
  return strstr(msg, "precondition not met:") || strstr(msg, "already applied:");
}

static void test_oom_coverage(void) {
  ddx_vec_t cls[NOOM];
  size_t total_patches = 0;
  for (size_t k = 0; k < NOOM; k++) {
    ddx_vec_init(&cls[k], sizeof(char *));
    json_t *j = json_load_file(oom_classes[k], 0, NULL);
    if (!j) {
      fprintf(stderr, "note: %s not found (run from the repository root)\n", oom_classes[k]);
      continue;
    }
    collect_patches(j, &cls[k]);
    json_decref(j);
    CHECK(cls[k].len > 0);
    total_patches += cls[k].len;
  }
  prop_stats_t st = {0};
  int edit_cases[NOOM] = {0}, flag_cases[NOOM] = {0}, reason_cases[NOOM] = {0};
  int cases = 0, flag_actions = 0, no_reason = 0, configs = 0, not_exhausted = 0;
  for (int s = 0; s < GEN_NSTATES; s++) {
    gen_state_t state = gen_state(s);
    for (int style = 0; style < 9; style++) {
      gen_style_t gs;
      char *text = gen_text_state((unsigned)(s * 9), style, &state, &gs);
      ddx_dsconfig_t *c;
      ddx_error_t err;
      configs++;
      if (ddx_dsconfig_parse(&c, text, strlen(text), &err)) {
        fprintf(stderr, "state config does not parse: %s\n%s\n", err.msg, text);
        CHECK(false);
        free(text);
        continue;
      }
      CHECK_EQ_INT(ddx_dsconfig_has_auto(c), state.autos);
      ddx_hf_known_t known = {0};
      if (style % 2) known = (ddx_hf_known_t){.micro_batch = 8, .grad_accum = 2};
      for (size_t k = 0; k < NOOM; k++) {
        if (!cls[k].len) continue;
        cases++;
        bool edit = false, flag = false, reasons = true, exhausted = true;
        for (size_t p = 0; p < cls[k].len; p++) {
          const char *patch = DDX_VEC_AT(&cls[k], char *, p);
          /* the edit against the oracle, once per patch (classes share rungs) */
          bool seen = false;
          for (size_t q = 0; q < k && !seen; q++)
            for (size_t r = 0; r < cls[q].len && !seen; r++)
              seen = !strcmp(DDX_VEC_AT(&cls[q], char *, r), patch);
          if (!seen) check_pair(text, &gs, patch, &st);
          /* the Trainer's change first: in its config, activation checkpointing is its
           * --gradient_checkpointing, whatever the activation_checkpointing block says */
          char *flags = NULL;
          bool exact;
          if (ddx_dsconfig_plan_hf(c, patch, &known, &flags, &exact, &err) == 0) {
            flag = true;
            flag_actions++;
            CHECK(state.autos && flags && !strncmp(flags, "--", 2));
            CHECK(exact == (known.micro_batch > 0 || !strstr(flags, "batch_size")));
            free(flags);
            continue;
          }
          char hfwhy[sizeof err.msg];
          snprintf(hfwhy, sizeof hfwhy, "%s", err.msg);
          ddx_patch_plan_t plan;
          if (ddx_dsconfig_plan(c, patch, &plan, &err) == 0) {
            /* an edit of the activation_checkpointing block only where it takes effect */
            CHECK(!state.autos || !strstr(patch, "activation_checkpointing"));
            edit = true;
            char hf[256];
            /* in the Trainer's config, an edit of a key it checks names the flag too */
            if (state.autos && strstr(patch, "\"bf16.enabled\"")) {
              CHECK(ddx_dsconfig_hf_flags_after(c, &plan, hf, sizeof hf));
              CHECK(strstr(hf, "--bf16") != NULL);
            }
            if (!state.autos) CHECK(!ddx_dsconfig_hf_flags_after(c, &plan, hf, sizeof hf));
            ddx_patch_plan_free(&plan);
            continue;
          }
          char why[sizeof err.msg];
          snprintf(why, sizeof why, "%s", err.msg);
          if (!exhausted_reason(why)) exhausted = false;
          bool ok = why[0] && known_refusal(why) && hfwhy[0];
          if (!ok)
            fprintf(stderr, "refusal without a stated reason: \"%s\" / \"%s\"\n", why, hfwhy);
          reasons &= ok;
        }
        if (edit)
          edit_cases[k]++;
        else if (flag)
          flag_cases[k]++;
        else
          reason_cases[k]++;
        no_reason += !edit && !flag && !reasons;
        /* no fix at all only where none exists: every rung is done already */
        if (!edit && !flag && !exhausted) {
          char name[160];
          gen_state_name(&state, name, sizeof name);
          fprintf(stderr, "%s: no fix for %s (%s) though a rung is not done:\n%s\n", oom_classes[k],
                  name, gs.name, text);
          not_exhausted++;
        }
        /* the activation ladders never run dry in these states */
        if (k == 0 || k == 2 || k == 5) {
          if (!edit && !flag) {
            char name[160];
            gen_state_name(&state, name, sizeof name);
            fprintf(stderr, "%s: no fix for %s (%s):\n%s\n", oom_classes[k], name, gs.name, text);
          }
          CHECK(edit || flag);
        }
      }
      ddx_dsconfig_free(c);
      free(text);
    }
  }
  printf("OOM quick-fix coverage: %d configs (%d states x 9 styles) x %zu OOM classes (%zu "
         "patches) = %d cases, %d pairs checked against the oracle: %d plans, %d corruptions\n",
         configs, GEN_NSTATES, NOOM, total_patches, cases, st.pairs, st.plans, st.corrupt);
  for (size_t k = 0; k < NOOM; k++)
    printf("  %-45s a ds_config edit %4d, only HF Trainer flags %4d, only reasons %4d\n",
           oom_classes[k], edit_cases[k], flag_cases[k], reason_cases[k]);
  printf("  HF Trainer flag actions: %d; cases with neither a fix nor a stated reason: %d\n",
         flag_actions, no_reason);
  CHECK_EQ_INT(st.corrupt, 0);
  CHECK_EQ_INT(no_reason, 0);
  CHECK_EQ_INT(not_exhausted, 0);
  CHECK(flag_actions > 0);
  for (size_t k = 0; k < NOOM; k++) {
    for (size_t p = 0; p < cls[k].len; p++)
      free(DDX_VEC_AT(&cls[k], char *, p));
    ddx_vec_free(&cls[k]);
  }
}

int main(void) {
  test_parse_refusals();
  test_parse_valid();
  test_is_deepspeed();
  test_set();
  test_remove();
  test_rename();
  test_multiply();
  test_batch_identity();
  test_preconditions();
  test_apply();
  test_properties();
  test_hf_flags();
  test_oom_coverage();
  CHECK_DONE();
}
