/* libFuzzer target: the language server's framing and JSON-RPC dispatch,
 * end to end. Each input is written to a pipe that becomes the server's
 * stdin (stdout goes to /dev/null) and ddx_lsp_main runs until the input
 * ends, exactly as with an editor that sends those bytes and hangs up. */
#include <fcntl.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ddx/lsp.h"

static int devnull = -1; /* the harness's only state: opened once */

int LLVMFuzzerInitialize(int *argc, char ***argv) {
  (void)argc;
  (void)argv;
  devnull = open("/dev/null", O_WRONLY);
  if (devnull < 0) abort();
  if (!getenv("DDX_RULES")) setenv("DDX_RULES", "rules", 1);
  return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size > 60000) return 0; /* a pipe buffer: write it all before the server runs */
  int p[2];
  if (pipe(p)) abort();
  size_t off = 0;
  while (off < size) {
    ssize_t w = write(p[1], data + off, size - off);
    if (w <= 0) abort();
    off += (size_t)w;
  }
  close(p[1]);
  int saved_in = dup(0), saved_out = dup(1);
  dup2(p[0], 0);
  dup2(devnull, 1);
  close(p[0]);
  char arg0[] = "--stdio";
  char *argv[] = {arg0, NULL};
  (void)ddx_lsp_main(1, argv);
  dup2(saved_in, 0);
  dup2(saved_out, 1);
  close(saved_in);
  close(saved_out);
  return 0;
}
