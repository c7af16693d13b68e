/* libFuzzer target: the ds_config.json readers (ddx/jsonpos.h: the lenient
 * tree, the tolerant scan, the key under a cursor) and the patch planner.
 * Every config that parses strictly is planned with every quick fix of the
 * catalog; every plan must apply to text that parses again. */
#include <jansson.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "ddx/dsconfig.h"
#include "ddx/jsonpos.h"
#include "ddx/rules.h"

#include "fuzz_catalog.h"

/* The modes that take any text: they must not crash, leak or read past it. */
static void fuzz_lenient(const char *text, size_t size) {
  ddx_arena_t arena;
  ddx_arena_init(&arena);
  ddx_jp_node_t *root;
  ddx_error_t err;
  size_t off = 0;
  if (ddx_jp_parse(text, size, DDX_JP_LENIENT, &arena, &root, &off, &err) && off > size) abort();
  ddx_arena_free(&arena);
  (void)ddx_dsconfig_text_is_deepspeed(text, size);
  for (size_t at = 0; at <= size; at += 1 + size / 8)
    free(ddx_jp_key_at(text, size, at, NULL, NULL));
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  ddx_dsconfig_t *cfg;
  ddx_error_t err;
  fuzz_lenient((const char *)data, size);
  if (ddx_dsconfig_parse(&cfg, (const char *)data, size, &err)) return 0;
  char *v = NULL;
  if (ddx_dsconfig_get(cfg, "zero_optimization.stage", &v)) free(v);
  (void)ddx_dsconfig_is_deepspeed(cfg);
  for (size_t r = 0; r < catalog->nrules; r++) {
    const char *pj = catalog->rules[r].config_patches_json;
    json_t *arr = pj ? json_loads(pj, 0, NULL) : NULL;
    for (size_t i = 0; i < json_array_size(arr); i++) {
      char *one = json_dumps(json_array_get(arr, i), JSON_COMPACT);
      ddx_patch_plan_t plan = {0};
      if (one && ddx_dsconfig_plan(cfg, one, &plan, &err) == 0) {
        size_t len;
        char *res = ddx_text_apply((const char *)data, size, plan.edits, plan.nedits, &len);
        ddx_dsconfig_t *again;
        if (!res || ddx_dsconfig_parse(&again, res, len, &err))
          abort(); /* a patch broke the file */
        ddx_dsconfig_free(again);
        free(res);
        ddx_patch_plan_free(&plan);
      }
      free(one);
    }
    json_decref(arr);
  }
  ddx_dsconfig_free(cfg);
  return 0;
}
