#!/usr/bin/env bash
# The language-server suite: node --test (vscode-languageserver-protocol
# 3.18.5 / vscode-jsonrpc 10.0.0 over real pipes) and Neovim 0.7 headless.
# usage: tests/lsp/run.sh [path/to/ddx]     (default: build/ddx)
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
ddx=$(realpath "${1:-${DDX:-$root/build/ddx}}")
[ -x "$ddx" ] || { echo "run.sh: no ddx binary at $ddx"; exit 2; }
cd "$here"
if [ ! -d node_modules/vscode-languageserver-protocol ] || [ ! -d node_modules/vscode-jsonrpc ]; then
  if [ -f package-lock.json ]; then npm ci --no-audit --no-fund --silent; else npm install --no-audit --no-fund --silent; fi || exit 2
fi
# Each test file runs in its own process; the summary is the runner's own.
# A failing test can leave a server's pipes open and keep node waiting:
# every test has a time limit and the whole run a hard one.
DDX="$ddx" timeout -k 10 1200 node --test --test-reporter=spec --test-timeout=240000 \
  --test-concurrency="${DDX_LSP_JOBS:-2}" \
  protocol.test.js documents.test.js features.test.js config.test.js oom_fixes.test.js hostile_config.test.js hostile.test.js abuse.test.js valgrind.test.js rules_check.test.js
node_rc=$?
"$here/nvim_diag.sh" "$ddx" 2>&1 | grep -v '^#   [{/]'
nvim_rc=${PIPESTATUS[0]}
"$root/tests/emacs/run.sh" "$ddx"; emacs_rc=$?
if [ $node_rc = 0 ] && [ $nvim_rc = 0 ] && [ $emacs_rc = 0 ]; then echo "lsp tests: all passed"; exit 0; fi
echo "lsp tests: FAILED (node $node_rc, neovim $nvim_rc, emacs $emacs_rc)"
exit 1
