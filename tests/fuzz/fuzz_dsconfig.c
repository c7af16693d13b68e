/* libFuzzer target: the ds_config.json reader and the patch planner. Every
 * config that parses is planned with every quick fix of the catalog; every
 * plan must apply to text that parses again. */
#include <jansson.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "ddx/dsconfig.h"
#include "ddx/rules.h"

#include "fuzz_catalog.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  ddx_dsconfig_t *cfg;
  ddx_error_t err;
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
