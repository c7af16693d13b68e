/* Tests for the one list of which files are logs (ddx/file.h): what a
 * folder walk and the editor take, and that the VS Code client says the
 * same: package.json's "log" language (extensions, filenamePatterns) and
 * the documentSelector's pattern in client-vscode/src/server.ts list
 * exactly the editor's suffixes. Run from the repository root. */
#include <jansson.h>
#include <stdlib.h>

#include "check.h"
#include "ddx/file.h"

/* The editor's suffixes without their dot, comma-separated: "log,out,err". */
static void editor_suffixes(char *out, size_t cap) {
  size_t n = 0;
  out[0] = 0;
  for (const ddx_log_suffix_t *x = ddx_log_suffixes; x->suffix; x++)
    if (x->editor) n += (size_t)snprintf(out + n, cap - n, "%s%s", n ? "," : "", x->suffix + 1);
}

static void test_names(void) {
  CHECK(ddx_is_log_name("train.log", false) && ddx_is_log_name("train.log", true));
  CHECK(ddx_is_log_name("job.err", true) && ddx_is_log_name("stdout.out", false));
  CHECK(ddx_is_log_name("slurm-4242.out", true) && ddx_is_log_name("slurm-4242", false));
  CHECK(ddx_is_log_name("notes.txt", false) && !ddx_is_log_name("notes.txt", true));
  CHECK(ddx_is_log_name("TRAIN.LOG", true) && !ddx_is_log_name("TRAIN.LOG", false));
  CHECK(!ddx_is_log_name("ds_config.json", true) && !ddx_is_log_name("ds_config.json", false));
  CHECK(!ddx_is_log_name("log", true) && !ddx_is_log_name("catalog", false));
}

static void test_package_json(const char *want) {
  json_error_t je;
  json_t *pkg = json_load_file("package.json", 0, &je);
  CHECK(pkg != NULL);
  json_t *langs = json_object_get(json_object_get(pkg, "contributes"), "languages"), *log = NULL;
  size_t i;
  json_t *l;
  json_array_foreach(langs, i, l) {
    const char *id = json_string_value(json_object_get(l, "id"));
    if (id && !strcmp(id, "log")) log = l;
  }
  CHECK(log != NULL);
  char got[256] = "";
  size_t n = 0;
  json_t *ext;
  json_array_foreach(json_object_get(log, "extensions"), i, ext) {
    const char *e = json_string_value(ext);
    CHECK(e && e[0] == '.');
    if (e) n += (size_t)snprintf(got + n, sizeof got - n, "%s%s", n ? "," : "", e + 1);
  }
  CHECK_EQ_STR(got, want);
  json_t *pat;
  size_t npat = 0;
  json_array_foreach(json_object_get(log, "filenamePatterns"), i, pat) {
    const char *p = json_string_value(pat);
    CHECK(p && !strncmp(p, DDX_LOG_PREFIX, strlen(DDX_LOG_PREFIX)));
    char name[128] = "";
    for (size_t k = 0, o = 0; p && p[k] && o + 8 < sizeof name; k++) /* '*' -> a job id */
      o += (size_t)snprintf(name + o, sizeof name - o, p[k] == '*' ? "4242" : "%c", p[k]);
    CHECK(ddx_is_log_name(name, true));
    npat++;
  }
  CHECK(npat > 0);
  json_decref(pkg);
}

static void test_document_selector(const char *want) {
  FILE *f = fopen("client-vscode/src/server.ts", "rb");
  CHECK(f != NULL);
  if (!f) return;
  static char text[1 << 20];
  size_t len = fread(text, 1, sizeof text - 1, f);
  fclose(f);
  text[len] = 0;
  const char *sel = strstr(text, "documentSelector = [");
  CHECK(sel != NULL);
  const char *p = sel ? strstr(sel, "pattern: '**/*.{") : NULL;
  CHECK(p != NULL);
  if (!p) return;
  p += strlen("pattern: '**/*.{");
  const char *end = strchr(p, '}');
  CHECK(end != NULL && end[1] == '\'');
  if (!end) return;
  char got[256];
  snprintf(got, sizeof got, "%.*s", (int)(end - p), p);
  CHECK_EQ_STR(got, want);
}

int main(void) {
  char want[256];
  editor_suffixes(want, sizeof want);
  CHECK_EQ_STR(want, "log,out,err");
  test_names();
  test_package_json(want);
  test_document_selector(want);
  CHECK_DONE();
}
