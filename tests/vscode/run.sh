#!/usr/bin/env bash
# End-to-end tests of the VS Code extension in the real VS Code (code-server 4.100.3 = VS Code
# 1.100.3 web, headless Debian Chromium driven by playwright-core):
#   0. checks without VS Code: the settings (manifest-check.js), the catalog's HTML (view-check.js),
#   1. extension tests INSIDE the extension host (extensionTestsPath; tests/vscode/suite/index.ts),
#      and in Restricted Mode: a second code-server with workspace trust on and an untrusted
#      hostile folder (tests/vscode/suite/restricted.ts),
#   2. a UI run that screenshots the diagnosis view and the Problems panel (tests/vscode/ui.js).
# Installs what it needs: Debian packages (as root), npm ci for the extension and for code-server
# (cached in $DDX_VSCODE_CACHE, default /tmp/ddx-vscode-cache, reused while the lockfiles match).
# usage: tests/vscode/run.sh path/to/ddx        prints "N passed, M failed"; exit 0 only when all pass
#   DDX_SCREENSHOTS=dir   where the UI run writes its PNGs (default docs/screenshots)
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
ddx=$(realpath "${1:?usage: tests/vscode/run.sh path/to/ddx}" 2>/dev/null) || { echo "run.sh: no ddx binary at $1"; exit 2; }
[ -x "$ddx" ] || { echo "run.sh: $ddx is not executable"; exit 2; }
CACHE=${DDX_VSCODE_CACHE:-${TMPDIR:-/tmp}/ddx-vscode-cache}
SHOTS=${DDX_SCREENSHOTS:-$root/docs/screenshots}
PORT=${DDX_VSCODE_PORT:-$((20000 + $$ % 20000))}
t_start=$(date +%s.%N)
lap() { printf '[vscode %5.1fs] %s\n' "$(echo "$(date +%s.%N) - $t_start" | bc)" "$*"; }
mkdir -p "$CACHE" "$SHOTS"

# --- 1. Debian packages: Chromium for the browser, the build deps of code-server's native modules
need=""
for p in chromium ripgrep libkrb5-dev pkg-config build-essential python3 bc curl; do
  dpkg -s "$p" >/dev/null 2>&1 || need="$need $p"
done
if [ -n "$need" ]; then
  if [ "$(id -u)" = 0 ]; then
    lap "apt-get install$need"
    (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $need) >"$CACHE/apt.log" 2>&1 ||
      { tail -20 "$CACHE/apt.log"; echo "0 passed, 1 failed (apt-get)"; exit 1; }
  else
    echo "run.sh: missing Debian packages:$need (run as root or: sudo apt-get install$need)"; exit 2
  fi
fi

# --- 2. the extension's npm packages (root package.json is the extension manifest)
cd "$root"
lock=$(sha1sum package-lock.json | cut -d' ' -f1)
if [ "$(cat node_modules/.ddx-lock 2>/dev/null)" != "$lock" ]; then
  lap "npm ci (extension)"
  npm ci --no-audit --no-fund --loglevel=error >"$CACHE/npm-ext.log" 2>&1 || { tail -20 "$CACHE/npm-ext.log"; echo "0 passed, 1 failed (npm ci)"; exit 1; }
  echo "$lock" >node_modules/.ddx-lock
fi

# --- 3. code-server 4.100.3 (npm ci from the committed lockfile, into the cache)
CS_DIR="$CACHE/code-server"
CS="$CS_DIR/node_modules/.bin/code-server"
if [ ! -x "$CS" ] || ! cmp -s "$here/code-server/package-lock.json" "$CS_DIR/package-lock.json"; then
  lap "npm ci (code-server 4.100.3, ~1 min)"
  rm -rf "$CS_DIR" && mkdir -p "$CS_DIR"
  cp "$here/code-server/package.json" "$here/code-server/package-lock.json" "$CS_DIR/"
  # @vscode/ripgrep downloads rg from GitHub: seed its cache with Debian's rg instead
  RGV=1.15.11
  rgcache="$(node -p 'require("os").tmpdir()')/vscode-ripgrep-cache-$RGV"
  mkdir -p "$rgcache" "$CACHE/rgstage" && cp /usr/bin/rg "$CACHE/rgstage/rg"
  tar czf "$rgcache/ripgrep-v13.0.0-10-x86_64-unknown-linux-musl.tar.gz" -C "$CACHE/rgstage" rg
  # unsafe_perm: its postinstall refuses root otherwise; yes: node-pty runs `npx node-gyp`
  (cd "$CS_DIR" && npm_config_unsafe_perm=true npm_config_yes=true npm ci --foreground-scripts --no-audit --no-fund >install.log 2>&1) ||
    { tail -30 "$CS_DIR/install.log"; rm -f "$CS_DIR/package-lock.json"; echo "0 passed, 1 failed (code-server install)"; exit 1; }
fi
"$CS" --version >/dev/null 2>&1 || { echo "0 passed, 1 failed (code-server does not run)"; exit 1; }

# --- 4. compile the extension and its tests
lap "compile"
npm run --silent compile >"$CACHE/compile.log" 2>&1 || { cat "$CACHE/compile.log"; echo "0 passed, 1 failed (tsc)"; exit 1; }
grep -i 'copy-schema' "$CACHE/compile.log"
# the settings in a hostile workspace, without VS Code (package.json scopes, the compiled reader)
lap "manifest check"
node "$here/manifest-check.js"; manifest_rc=$?
# the catalog's HTML (matrix, entry, look-alikes, escaping) from the compiled pure functions
lap "view check"
node "$here/view-check.js"; view_rc=$?

# --- 5. an isolated workspace, profile and home
T=$(mktemp -d "${TMPDIR:-/tmp}/ddx-vscode-e2e.XXXXXX")
WS="$T/ws"
mkdir -p "$T/home" "$T/data/User" "$T/ext" "$T/tmp" "$WS/logs/big"
cp -r "$here/workspace/." "$WS/"
# for the in-host tests the workspace is a hostile repository: its .vscode/settings.json points
# ddx.server.path at .vscode/evil-server.sh (which would leave .vscode/PWNED), and so on
mkdir -p "$WS/.vscode" && cp -r "$here/hostile/." "$WS/.vscode/"
cp "$root/examples/zero3-oom-8gpu.log" "$WS/logs/"
for f in 016-torchrun-exitcode-9-eight-sigterm-longchat.log 076-ds-zero3-optimizer-step-oom-236b-interleaved.log; do
  cp "$root/tests/corpus/dev/$f" "$WS/logs/"
done
# what the CLI says about the same files: the extension must agree
(cd "$WS" && python3 -c '
import glob, json, subprocess, sys
out = {}
for name in sorted(glob.glob("logs/*.log")):
    r = subprocess.run([sys.argv[1], "diagnose", "--format", "json", name], capture_output=True, text=True)
    inc = json.loads(r.stdout)["incidents"][0]
    out[name] = {"rule": inc["rule"], "rank": inc["rank"], "line": inc["line"], "patches": len(inc.get("patches") or []), "collateral": len(inc.get("collateral") or [])}
json.dump(out, open("expect.json", "w"), indent=1)' "$ddx") || { echo "0 passed, 1 failed (ddx diagnose)"; exit 1; }
# a ~60 MB log of candidate-heavy noise: slow enough to see progress and cancel it
python3 - "$WS/logs/big/huge.log" <<'EOF'
import sys
block = '\n'.join(f"[rank{i%8}]:host-{i%4}:{i}:{i} [{i%8}] NCCL INFO Channel {i%32:02d}/0 : {i%8}[{i%8}] -> {(i+1)%8}[{(i+1)%8}] via P2P/IPC/read; RuntimeError warning timeout Traceback" for i in range(20000)) + '\n'
with open(sys.argv[1], 'w') as f:
    for _ in range(24): f.write(block)
EOF
cat >"$T/data/User/settings.json" <<EOF
{
  "workbench.startupEditor": "none",
  "workbench.tips.enabled": false,
  "workbench.enableExperiments": false,
  "telemetry.telemetryLevel": "off",
  "update.mode": "none",
  "extensions.autoCheckUpdates": false,
  "extensions.autoUpdate": false,
  "json.schemaDownload.enable": false,
  "security.workspace.trust.enabled": false,
  "terminal.integrated.shellIntegration.enabled": true,
  "terminal.integrated.defaultProfile.linux": "bash",
  "terminal.integrated.enablePersistentSessions": false,
  "files.hotExit": "off",
  "window.restoreWindows": "none",
  "workbench.colorTheme": "Default Dark Modern",
  "editor.minimap.enabled": false,
  "files.exclude": { "**/big": true, "expect.json": true, "**/.vscode": true },
  "workbench.layoutControl.enabled": false,
  "chat.commandCenter.enabled": false,
  "terminal.integrated.showTerminalConfigPrompt": false,
  "ddx.server.path": "$ddx"
}
EOF
# ddx.server.path is machine-scoped: in a remote window (code-server is one) VS Code takes it from
# the remote machine's settings (Machine/settings.json). A value found only in the User settings
# applies at first, and is dropped at the next reload of the configuration (running a task does
# one): the server restarted with no path, lost its diagnostics and, with no bundled binary (a
# clean clone), never came back.
mkdir -p "$T/data/Machine" && printf '{\n  "ddx.server.path": "%s"\n}\n' "$ddx" >"$T/data/Machine/settings.json"
export TMPDIR="$T/tmp" HOME="$T/home" XDG_CONFIG_HOME="$T/home/.config" XDG_DATA_HOME="$T/home/.local/share" XDG_CACHE_HOME="$T/home/.cache"
export EXTENSIONS_GALLERY='{}' DDX_TEST_OUT="$T/results.jsonl" DDX_TEST_WS="$WS" SHELL=/bin/bash

# --- 6. code-server, isolated; stopped by killing its process group
lap "starting code-server on 127.0.0.1:$PORT"
setsid "$CS" --bind-addr "127.0.0.1:$PORT" --auth none --disable-telemetry --disable-update-check \
  --disable-workspace-trust --user-data-dir "$T/data" --extensions-dir "$T/ext" "$WS" >"$T/cs.log" 2>&1 &
CSPID=$!
disown "$CSPID" 2>/dev/null
RCSPID=
stop_cs() { kill -- -"$1" 2>/dev/null; sleep 0.5; kill -9 -- -"$1" 2>/dev/null; }
cleanup() { stop_cs "$CSPID"; [ -n "$RCSPID" ] && stop_cs "$RCSPID"; [ -n "${DDX_VSCODE_KEEP:-}" ] || rm -rf "$T"; }
trap cleanup EXIT
for _ in $(seq 200); do curl -fs -o /dev/null "http://127.0.0.1:$PORT/healthz" && break; sleep 0.1; done
curl -fs -o /dev/null "http://127.0.0.1:$PORT/healthz" || { cat "$T/cs.log"; echo "0 passed, 1 failed (code-server did not start)"; exit 1; }

passed=0; failed=0
if [ $manifest_rc = 0 ]; then passed=$((passed + 1)); else echo "  FAIL manifest check"; failed=$((failed + 1)); fi
if [ $view_rc = 0 ]; then passed=$((passed + 1)); else echo "  FAIL view check"; failed=$((failed + 1)); fi
# --- 7. in-host extension tests
lap "in-host extension tests"
cd "$here"
WS_DIR="$WS" timeout 240 node run-tests.js "$PORT" "$root" "$here/out" "$DDX_TEST_OUT" "$T/shot-tests.png"
host_rc=$?
if [ -f "$DDX_TEST_OUT" ]; then
  node -e '
    const lines = require("fs").readFileSync(process.argv[1], "utf8").trim().split("\n").map((l) => JSON.parse(l));
    for (const r of lines.filter((r) => r.test)) console.log(`  ${r.ok ? "ok  " : "FAIL"} ${r.test} (${r.ms} ms)${r.ok ? "" : "\n       " + r.error}`);' "$DDX_TEST_OUT"
  p=$(grep -c '"ok":true' "$DDX_TEST_OUT"); f=$(grep -c '"ok":false' "$DDX_TEST_OUT")
  passed=$((passed + p)); failed=$((failed + f))
  grep -q '"tests-pass"\|"tests-fail"' "$DDX_TEST_OUT" || { echo "  FAIL the in-host run did not finish"; failed=$((failed + 1)); }
else
  echo "  FAIL no result from the extension host (rc $host_rc)"; failed=$((failed + 1))
fi

if [ -e "$WS/.vscode/PWNED" ]; then echo "  FAIL the workspace's ddx.server.path ran"; failed=$((failed + 1)); fi

# --- 7b. Restricted Mode: a second code-server, workspace trust on (no --disable-workspace-trust),
# a fresh profile in which the folder was never trusted; the folder is the hostile repository
lap "Restricted Mode tests (workspace trust on, the folder untrusted)"
RW="$T/ws-restricted"
mkdir -p "$RW/logs" "$RW/.vscode" "$T/data-r/User"
cp -r "$here/hostile/." "$RW/.vscode/"
cp "$root/examples/zero3-oom-8gpu.log" "$RW/logs/"
python3 -c '
import json, sys
s = json.load(open(sys.argv[1]))
s.update({"security.workspace.trust.enabled": True, "security.workspace.trust.startupPrompt": "never",
          "security.workspace.trust.banner": "never", "security.workspace.trust.untrustedFiles": "open"})
json.dump(s, open(sys.argv[2], "w"), indent=1)' "$T/data/User/settings.json" "$T/data-r/User/settings.json"
mkdir -p "$T/data-r/Machine" && cp "$T/data/Machine/settings.json" "$T/data-r/Machine/"
RPORT=$((PORT + 1))
DDX_TEST_OUT="$T/results-r.jsonl" setsid "$CS" --bind-addr "127.0.0.1:$RPORT" --auth none --disable-telemetry --disable-update-check \
  --user-data-dir "$T/data-r" --extensions-dir "$T/ext" "$RW" >"$T/cs-r.log" 2>&1 &
RCSPID=$!
disown "$RCSPID" 2>/dev/null
for _ in $(seq 200); do curl -fs -o /dev/null "http://127.0.0.1:$RPORT/healthz" && break; sleep 0.1; done
WS_DIR="$RW" timeout 120 node run-tests.js "$RPORT" "$root" "$here/out/restricted.js" "$T/results-r.jsonl" "$T/shot-restricted.png"
if [ -f "$T/results-r.jsonl" ]; then
  node -e '
    const lines = require("fs").readFileSync(process.argv[1], "utf8").trim().split("\n").map((l) => JSON.parse(l));
    for (const r of lines.filter((r) => r.test)) console.log(`  ${r.ok ? "ok  " : "FAIL"} ${r.test} (${r.ms} ms)${r.ok ? "" : "\n       " + r.error}`);' "$T/results-r.jsonl"
  p=$(grep -c '"ok":true' "$T/results-r.jsonl"); f=$(grep -c '"ok":false' "$T/results-r.jsonl")
  passed=$((passed + p)); failed=$((failed + f))
  grep -q '"tests-pass"\|"tests-fail"' "$T/results-r.jsonl" || { echo "  FAIL the Restricted Mode run did not finish"; failed=$((failed + 1)); }
else
  echo "  FAIL no result from the Restricted Mode extension host"; failed=$((failed + 1))
fi
if [ -e "$RW/.vscode/PWNED" ]; then echo "  FAIL Restricted Mode: the workspace's ddx.server.path ran"; failed=$((failed + 1)); fi
stop_cs "$RCSPID"; RCSPID=
rm -f "$WS/.vscode/settings.json" # the UI run's screenshots show no notice about it

# --- 8. UI run: screenshots of the diagnosis view and the Problems panel
lap "UI run (playwright-core + headless Chromium)"
WS_DIR="$WS" SHOTS="$SHOTS" timeout 180 node ui.js "$PORT" "$root"
ui_rc=$?
if [ $ui_rc = 0 ]; then passed=$((passed + 1)); else failed=$((failed + 1)); fi

# --- 9. the package: a .vsix with the server inside, installed into code-server, its server answers
lap "package (.vsix with the bundled server) and install"
cd "$root"
if node client-vscode/scripts/bundle-server.js "$ddx" >"$T/package.log" 2>&1 &&
   npx --no-install vsce package --readme-path client-vscode/README.md --out "$T/ddx.vsix" >>"$T/package.log" 2>&1 &&
   "$CS" --extensions-dir "$T/ext-pkg" --user-data-dir "$T/data-pkg" --install-extension "$T/ddx.vsix" >>"$T/package.log" 2>&1; then
  d=$(echo "$T"/ext-pkg/ddx-dev.ddx-*/client-vscode/server/linux-x64)
  init='{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"processId":null,"capabilities":{}}}'
  reply=$(printf 'Content-Length: %d\r\n\r\n%s' "${#init}" "$init" | timeout 5 env -i LD_LIBRARY_PATH="$d/lib" "$d/ddx" lsp --stdio 2>&1 | tr -d '\r')
  if echo "$reply" | grep -q '"serverInfo"' && echo "$reply" | grep -q "rules from $d/rules"; then
    echo "  ok   the .vsix ($(du -k "$T/ddx.vsix" | cut -f1) KB) installs and its bundled ddx lsp answers with its own catalog"; passed=$((passed + 1))
  else echo "  FAIL the bundled server did not answer: $(echo "$reply" | head -c 300)"; failed=$((failed + 1)); fi
else
  tail -20 "$T/package.log"; echo "  FAIL packaging"; failed=$((failed + 1))
fi
if [ $failed -gt 0 ] && [ -n "${DDX_VSCODE_KEEP:-}" ]; then echo "kept $T (code-server log: $T/cs.log)"; fi
lap "done"
echo "vscode e2e: $passed passed, $failed failed"
[ $failed = 0 ]
