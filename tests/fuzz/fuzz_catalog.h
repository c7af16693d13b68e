/* fuzz_catalog.h - the start the catalog-using fuzz targets share: the
 * catalog ($DDX_RULES, else rules/ from the repo root) loaded once in
 * LLVMFuzzerInitialize, the harness's only state. Include it once, in the
 * target's .c file. */
#ifndef DDX_FUZZ_CATALOG_H
#define DDX_FUZZ_CATALOG_H

#include <stdlib.h>

#include "ddx/rules.h"

static ddx_catalog_t *catalog;

int LLVMFuzzerInitialize(int *argc, char ***argv) {
  (void)argc;
  (void)argv;
  ddx_error_t err;
  const char *dir = getenv("DDX_RULES") ? getenv("DDX_RULES") : "rules";
  if (ddx_catalog_load(&catalog, &dir, 1, &err)) abort();
  return 0;
}

#endif
