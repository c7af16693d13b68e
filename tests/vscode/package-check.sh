#!/usr/bin/env bash
# The platform-specific packages (make test-arm64): builds ddx-linux-x64.vsix
# and ddx-linux-arm64.vsix with `npm run package`, then checks each one:
#   - it is a zip whose manifest says its target platform, and it holds
#     exactly one server folder, its own (client-vscode/server/<target>/);
#   - the binary is an ELF of that architecture (file), needs no glibc past
#     GLIBC_MAX, and rules/**/*.json, catalog/index.html and lib/ (jansson,
#     libuv, pcre2, of that architecture) are there;
#   - the server runs from the unpacked package with its bundled libraries
#     (LD_LIBRARY_PATH=<server>/lib, which the extension sets; the loader's
#     own report shows that those, not the system's, are the ones loaded):
#     `ddx version`, `ddx rules check --strict <bundled rules>`, and a
#     JSON-RPC initialize / initialized / shutdown / exit over stdio of
#     `ddx lsp` (exit code 0); the arm64 one under qemu-user
#     (qemu-aarch64-static with the multiarch loader, scripts/ddx-arm64.sh).
# usage: tests/vscode/package-check.sh [--no-build]   (from the repo root)
#   --no-build: check the ddx-*.vsix already there
set -u
ROOT=$(pwd)
[ -f "$ROOT/package.json" ] && [ -d "$ROOT/client-vscode" ] || { echo "package-check: run from the repository root" >&2; exit 2; }
GLIBC_MAX=${GLIBC_MAX:-2.35} # Ubuntu 22.04, what GH200 / Grace nodes often run
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
pass=0 fail=0
ok() { pass=$((pass + 1)); echo "  ok   $*"; }
bad() { fail=$((fail + 1)); echo "  FAIL $*"; }

if [ "${1:-}" != --no-build ]; then
  [ -x node_modules/.bin/vsce ] || npm ci --no-audit --no-fund --silent || { echo "package-check: npm ci failed" >&2; exit 2; }
  rm -f ddx-linux-x64.vsix ddx-linux-arm64.vsix
  echo "== npm run package (both platform packages)"
  if npm run package >"$T/package.log" 2>&1; then ok "npm run package built both"; else
    tail -30 "$T/package.log"; bad "npm run package failed"; fi
fi

# The JSON-RPC session over stdio: initialize, initialized, shutdown, exit.
cat >"$T/lsp.py" <<'PY'
import json, subprocess, sys, time
cmd, env_lib = sys.argv[1:-1], sys.argv[-1]
import os
env = dict(os.environ, LD_LIBRARY_PATH=env_lib)
p = subprocess.Popen(cmd + ["lsp", "--stdio"], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
def send(msg):
    b = json.dumps(msg).encode()
    p.stdin.write(b"Content-Length: %d\r\n\r\n" % len(b) + b)
    p.stdin.flush()
def recv(want_id):
    while True:
        hdr = b""
        while not hdr.endswith(b"\r\n\r\n"):
            c = p.stdout.read(1)
            if not c:
                raise SystemExit("server closed stdout before the reply to id %d" % want_id)
            hdr += c
        n = int([l for l in hdr.decode().split("\r\n") if l.lower().startswith("content-length:")][0].split(":")[1])
        msg = json.loads(p.stdout.read(n))
        if msg.get("id") == want_id and "method" not in msg:
            return msg
send({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"processId": None, "rootUri": None, "capabilities": {}}})
r = recv(1)
caps = r["result"]["capabilities"]
assert "textDocumentSync" in caps, caps
name = r["result"].get("serverInfo", {}).get("name", "?")
send({"jsonrpc": "2.0", "method": "initialized", "params": {}})
send({"jsonrpc": "2.0", "id": 2, "method": "shutdown"})
r = recv(2)
assert r.get("result", "missing") is None, r
send({"jsonrpc": "2.0", "method": "exit"})
p.stdin.close()
rc = p.wait(timeout=120)
assert rc == 0, "exit code %d: %s" % (rc, p.stderr.read().decode(errors="replace")[-500:])
print("initialize (server %s, %d capabilities), shutdown, exit 0" % (name, len(caps)))
PY

check() { # check TARGET ARCH-IN-FILE-OUTPUT [EMULATOR...]
  local target=$1 arch=$2; shift 2
  local vsix=ddx-$target.vsix x=$T/$target
  echo "== $vsix"
  [ -f "$vsix" ] || { bad "$vsix is missing"; return; }
  mkdir -p "$x"
  python3 - "$vsix" "$target" "$x" >"$T/zip.out" 2>&1 <<'PY'
import re, sys, zipfile
vsix, target, out = sys.argv[1:]
z = zipfile.ZipFile(vsix)
names = z.namelist()
servers = sorted({n.split("/")[3] for n in names if n.startswith("extension/client-vscode/server/") and n.count("/") > 3})
assert servers == [target], "server folders %s, want only %s" % (servers, target)
m = z.read("extension.vsixmanifest").decode()
assert re.search(r'TargetPlatform="%s"' % re.escape(target), m), "manifest has no TargetPlatform=%s" % target
z.extractall(out)
print("servers %s, TargetPlatform %s, %d files" % (servers, target, len(names)))
PY
  if [ $? = 0 ]; then ok "$(cat "$T/zip.out")"; else bad "$vsix: $(tail -1 "$T/zip.out")"; return; fi
  local s=$x/extension/client-vscode/server/$target
  chmod +x "$s/ddx" 2>/dev/null # zip keeps the mode; to be sure
  file -b "$s/ddx" | grep -q "$arch" && ok "ddx is $(file -b "$s/ddx" | cut -d, -f1-2)" || bad "ddx is $(file -b "$s/ddx"), want $arch"
  local g
  g=$(objdump -T "$s/ddx" "$s"/lib/*.so* 2>/dev/null | grep -o 'GLIBC_[0-9.]*' | sed 's/GLIBC_//' | sort -uV | tail -1)
  [ -z "$g" ] && g=$(for f in "$s/ddx" "$s"/lib/*.so*; do strings "$f" | grep -o '^GLIBC_[0-9.]*$'; done | sed 's/GLIBC_//' | sort -uV | tail -1)
  [ -n "$g" ] && [ "$(printf '%s\n%s\n' "$g" "$GLIBC_MAX" | sort -V | tail -1)" = "$GLIBC_MAX" ] &&
    ok "needs glibc $g at most (<= $GLIBC_MAX)" || bad "needs glibc ${g:-?}, past $GLIBC_MAX"
  local nr nb
  nr=$(cd "$ROOT/rules" && find . -name '*.json' | wc -l)
  nb=$(cd "$s/rules" 2>/dev/null && find . -name '*.json' | wc -l)
  [ "$nb" -gt 0 ] && [ "$nb" = "$nr" ] && [ -z "$(find "$s/rules" -type f ! -name '*.json')" ] &&
    ok "rules/: $nb .json files, as rules/ has, nothing else" || bad "rules/: $nb .json files, rules/ has $nr"
  [ -f "$s/catalog/index.html" ] && grep -qi '<html' "$s/catalog/index.html" && ok "catalog/index.html ($(find "$s/catalog" -name '*.html' | wc -l) pages)" || bad "no catalog/index.html"
  local l missing=""
  for l in libjansson.so.4 libuv.so.1 libpcre2-8.so.0; do
    file -b "$s/lib/$l" 2>/dev/null | grep -q "$arch" || missing="$missing $l"
  done
  [ -z "$missing" ] && ok "lib/: $(cd "$s/lib" && ls | tr '\n' ' ')($arch)" || bad "lib/ lacks$missing for $arch"

  # The server from the package, with its libraries.
  local v
  v=$(LD_LIBRARY_PATH=$s/lib LD_DEBUG=libs timeout -s KILL 120 "$@" "$s/ddx" version 2>"$T/ld.$target")
  [ "$v" = "ddx $(node -p 'require("./package.json").version')" ] && ok "$* ddx version: $v" || bad "ddx version: '$v'"
  local from_bundle=1
  for l in libjansson.so.4 libuv.so.1 libpcre2-8.so.0; do
    grep -q "calling init: $s/lib/$l" "$T/ld.$target" || from_bundle=0
  done
  [ $from_bundle = 1 ] && ok "the loader took jansson, libuv, pcre2 from the package's lib/" ||
    bad "the loader did not take the bundled libraries: $(grep 'calling init' "$T/ld.$target" | head -5)"
  LD_LIBRARY_PATH=$s/lib timeout -s KILL 600 "$@" "$s/ddx" rules check --strict "$s/rules" >"$T/rc.$target" 2>&1 &&
    ok "rules check --strict: $(grep -E '^[0-9]+ rules' "$T/rc.$target")" || bad "rules check --strict: $(tail -3 "$T/rc.$target")"
  timeout -s KILL 300 python3 "$T/lsp.py" "$@" "$s/ddx" "$s/lib" >"$T/lsp.$target" 2>&1 &&
    ok "ddx lsp: $(cat "$T/lsp.$target")" || bad "ddx lsp: $(tail -3 "$T/lsp.$target")"
}

check linux-x64 'x86-64'
if command -v qemu-aarch64-static >/dev/null && [ -e /lib/ld-linux-aarch64.so.1 ]; then
  check linux-arm64 'ARM aarch64' qemu-aarch64-static
else
  bad "linux-arm64: no qemu-aarch64-static or /lib/ld-linux-aarch64.so.1 (make deps-arm64)"
fi
echo "package-check: $pass passed, $fail failed"
[ "$fail" = 0 ]
