/* ddx/lsp.h - the language server's entry point (`ddx lsp`), the one
 * thing the CLI calls. The server itself (JSON-RPC over stdio through
 * libuv, the LSP lifecycle, the open documents, scans on the libuv thread
 * pool, diagnostics, hovers, ds_config.json quick fixes and the ddx.*
 * commands) lives in server/lsp/, behind its private header
 * server/lsp/internal.h; this header includes neither libuv nor jansson.
 *
 * It is a front end: it adds no diagnosis logic; every finding comes from
 * the engine (ddx/scan.h, ddx/diagnose.h, ddx/report.h, ddx/dsconfig.h). */
#ifndef DDX_LSP_H
#define DDX_LSP_H

/* Runs the server on stdin/stdout until `exit` (argv: options after "lsp",
 * "--stdio" accepted). Returns the process exit status: 0 after shutdown +
 * exit, 1 for exit without shutdown, a lost client or a dead editor. */
int ddx_lsp_main(int argc, char **argv);

#endif
