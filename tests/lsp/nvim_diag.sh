#!/usr/bin/env bash
# Neovim 0.7 (Debian's `neovim`) headless against the real `ddx lsp`: opens
# the example log and a corpus log, asserts the diagnostics arrive in the
# editor and that the server exits 0 after shutdown + exit.
# usage: tests/lsp/nvim_diag.sh [path/to/ddx]
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
ddx=$(realpath "${1:-${DDX:-$root/build/ddx}}")
if ! command -v nvim >/dev/null; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq neovim >/dev/null
  else
    echo "nvim_diag: neovim is missing (apt-get install neovim)"; exit 1
  fi
fi
t=$(mktemp -d)
trap 'rm -rf "$t"' EXIT
pass=0; fail=0
run() { # file expected-rule
  cp "$1" "$t/$(basename "$1")"
  if out=$(cd "$t" && XDG_CACHE_HOME=$t XDG_STATE_HOME=$t XDG_DATA_HOME=$t XDG_CONFIG_HOME=$t \
      LSP_CMD="[\"$ddx\",\"lsp\",\"--stdio\"]" LSP_FILE="$t/$(basename "$1")" LSP_EXPECT="$2" \
      timeout 60 nvim --headless --clean -n -i NONE -u NONE -c "luafile $here/nvim_diag.lua" 2>&1); then
    echo "ok - neovim: $(basename "$1") -> $2 ($(echo "$out" | grep -c '^/' ) diagnostics)"
    pass=$((pass + 1))
  else
    echo "not ok - neovim: $(basename "$1")"; echo "$out" | sed 's/^/#   /'
    fail=$((fail + 1))
  fi
}
run "$root/examples/zero3-oom-8gpu.log" ds.oom.zero3-gather
run "$root/tests/corpus/dev/118-tp-heads-not-divisible-rank9-sigterm-flood.log" megatron.parallel-config
echo "# neovim: pass $pass, fail $fail"
[ "$fail" = 0 ]
