/* libFuzzer target: the line normaliser, the scanner and the diagnosis on
 * arbitrary bytes, fed in two pieces of a size the input chooses, then
 * every rendering. Loads the real catalog (rules/) once. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "ddx/diagnose.h"
#include "ddx/line.h"
#include "ddx/report.h"
#include "ddx/rules.h"
#include "ddx/scan.h"

#include "fuzz_catalog.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  char out[DDX_LINE_MAX + 1];
  ddx_line_meta_t meta;
  ddx_line_meta_init(&meta);
  size_t n = ddx_line_normalize((const char *)data, size, out, sizeof out, &meta);
  if (n >= sizeof out || out[n] != 0) abort();
  ddx_line_strip_ansi((const char *)data, size < 4096 ? size : 4096, out, sizeof out);

  ddx_scan_t scan;
  if (ddx_scan_init(&scan, catalog)) return 0;
  size_t cut = size ? data[0] % (size + 1) : 0;
  ddx_scan_begin(&scan, "fuzz");
  ddx_scan_feed(&scan, (const char *)data, cut);
  ddx_scan_feed(&scan, (const char *)data + cut, size - cut);
  ddx_scan_end(&scan);
  ddx_diagnosis_t d;
  ddx_error_t err;
  if (ddx_diagnose(&d, &scan, &err) == 0) {
    ddx_report_opts_t o = {0};
    free(ddx_report_json(&d, &o));
    free(ddx_report_text(&d, &o));
    free(ddx_report_sarif(&d, &o));
    free(ddx_report_evidence(&d, &o));
    ddx_diagnosis_free(&d);
  }
  ddx_scan_free(&scan);
  return 0;
}
