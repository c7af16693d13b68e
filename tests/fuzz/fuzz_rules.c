/* libFuzzer target: the rule loader on arbitrary rule text (strict
 * validation, regex compilation, the prefilter build), then a scan of the
 * rule's own text with the loaded rule. */
#include <stdint.h>
#include <stdlib.h>

#include "ddx/diagnose.h"
#include "ddx/rules.h"
#include "ddx/scan.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  const char *name = "fuzz.json";
  const char *text = (const char *)data;
  ddx_catalog_t *cat;
  ddx_error_t err;
  if (ddx_catalog_load_texts(&cat, &name, &text, &size, 1, &err)) return 0;
  ddx_scan_t scan;
  if (ddx_scan_init(&scan, cat) == 0) {
    ddx_scan_text(&scan, "self", text, size);
    ddx_diagnosis_t d;
    if (ddx_diagnose(&d, &scan, &err) == 0) ddx_diagnosis_free(&d);
    ddx_scan_free(&scan);
  }
  ddx_catalog_free(cat);
  return 0;
}
