#!/usr/bin/env bash
# Emacs 28 + eglot 1.9 (Debian's emacs-nox, elpa-eglot) headless against the
# real `ddx lsp`, in temp workspaces: log diagnostics in flymake, hover, the
# ds_config.json quick fix applied and saved, ds_config diagnostics, a log
# opened after a JSON buffer, and the server's reply to eglot's shutdown
# (read from a wrapper that tees the server's stdin and stdout).
# usage: tests/emacs/run.sh [path/to/ddx]
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
ddx=$(realpath "${1:-${DDX:-$root/build/ddx}}")
[ -x "$ddx" ] || { echo "not ok - emacs eglot: no ddx binary at $ddx"; exit 2; }
if ! command -v emacs >/dev/null || [ ! -d /usr/share/emacs/site-lisp/elpa-src ] || ! ls -d /usr/share/emacs/site-lisp/elpa/eglot-* >/dev/null 2>&1; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq emacs-nox elpa-eglot >/dev/null
  else
    echo "not ok - emacs eglot: emacs or eglot is missing (apt-get install emacs-nox elpa-eglot)"; exit 1
  fi
fi
t=$(mktemp -d)
[ -n "${DDX_KEEP:-}" ] && echo "# kept: $t" || trap 'rm -rf "$t"' EXIT
# the server as eglot starts it: stdin and stdout teed to <dir>/lsp.in, lsp.out
cat >"$t/server.sh" <<SH
#!/usr/bin/env bash
d=\$1
exec 2>>"\$d/lsp.err"
tee -a "\$d/lsp.in" | "$ddx" lsp --stdio | tee -a "\$d/lsp.out"
SH
chmod +x "$t/server.sh"
wlog=$t/ws-log wcfg=$t/ws-cfg
mkdir -p "$wlog" "$wcfg" "$t/home"
cp "$root/examples/zero3-oom-8gpu.log" "$wlog/train.log"
cp "$root/examples/zero3-oom-8gpu.log" "$wcfg/train.log"
# a stage-3 config the example's OOM has quick fixes for (tests/lsp/features.test.js)
cat >"$wlog/ds_config.json" <<'JSON'
{
  "train_micro_batch_size_per_gpu": 8,
  "gradient_accumulation_steps": 4,
  "bf16": {
    "enabled": true
  },
  "optimizer": {
    "type": "AdamW",
    "params": {
      "lr": 2e-05
    }
  },
  "zero_optimization": {
    "stage": 3,
    "overlap_comm": true,
    "stage3_prefetch_bucket_size": 50000000,
    "stage3_max_live_parameters": 1000000000,
    "stage3_max_reuse_distance": 1000000000,
    "stage3_param_persistence_threshold": 100000
  }
}
JSON
# a misspelt key (tests/lsp/config.test.js)
cat >"$wcfg/ds_config.json" <<'JSON'
{
  "train_batch_size": 256,
  "train_micro_batch_size_per_gpu": 4,
  "gradient_accumulation_steps": 8,
  "bf16": {"enabled": true},
  "zero_optimization": {
    "stage": 3,
    "stage3_prefetch_bucket_sise": 50000000
  }
}
JSON
rc=0
out=$(cd "$t" && HOME=$t/home XDG_CONFIG_HOME=$t/home XDG_CACHE_HOME=$t/home XDG_DATA_HOME=$t/home \
  DDX_SERVER="$t/server.sh" DDX_WS_LOG="$wlog" DDX_WS_CFG="$wcfg" \
  timeout -k 5 180 emacs --batch -Q -l "$here/eglot_test.el" 2>"$t/emacs.err") || rc=$?
echo "$out"
if [ $rc != 0 ] || ! echo "$out" | grep -q '^# emacs eglot: pass [1-9][0-9]*, fail 0$'; then
  echo "not ok - emacs eglot: emacs exited $rc"
  sed 's/^/#   /' "$t/emacs.err" | tail -40
  for f in "$wlog/lsp.err" "$wcfg/lsp.err"; do [ -s "$f" ] && sed 's/^/#   server: /' "$f" | tail -20; done
  exit 1
fi
