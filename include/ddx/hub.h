/* ddx/hub.h - owns the failure encyclopedia: the loaded catalog rendered
 * for reading side by side (ddx catalog): the list, docs/catalog.md and a
 * static HTML site (a hub page with the phase x family matrix, the
 * look-alike tables and a search, one page per class) that works from
 * file:// with no network, no external fonts or scripts. It also finds the
 * site shipped with the binary, for the links of diagnostics and reports.
 * Rendering reads the catalog only; output is deterministic (entries by
 * id, no dates, no absolute paths). */
#ifndef DDX_HUB_H
#define DDX_HUB_H

#include <stdbool.h>
#include <stddef.h>

#include "ddx/rules.h"
#include "ddx/util.h"

/* "id  phase  family  title" per line, by id. malloc'd. */
char *ddx_hub_list(const ddx_catalog_t *cat);
/* The whole encyclopedia as one Markdown document (docs/catalog.md). */
char *ddx_hub_markdown(const ddx_catalog_t *cat);
/* Writes the site into dir (created when missing): index.html and
 * <id>.html per class. Files are created without following symlinks;
 * returns 0, or a negative code with err naming the file. */
int ddx_hub_write_html(const ddx_catalog_t *cat, const char *dir, ddx_error_t *err);
/* The site shipped with this binary: <exe dir>/catalog (build tree, the
 * VS Code bundle), <exe dir>/../share/ddx/catalog (installed), else
 * rules_dir/../catalog; the first that holds index.html, written to buf.
 * NULL when none is found. */
const char *ddx_hub_find(char *buf, size_t cap, const char *rules_dir);
/* Whether the site at hub_dir (may be NULL) holds the page of class id:
 * the built-in classes; a team's folder has none unless its own site was
 * written there. */
bool ddx_hub_has_page(const char *hub_dir, const char *id);
/* file:// URI of the page of class id in the site at hub_dir (id NULL:
 * the hub page); malloc'd, NULL when hub_dir is NULL. */
char *ddx_hub_uri(const char *hub_dir, const char *id);

#endif
