#!/usr/bin/env bash
# The failure encyclopedia (ddx catalog --html) in a real browser: headless Debian Chromium driven
# by playwright-core over file:// (tests/catalog/site.test.js). Installs what is missing: the
# chromium package (apt-get, as root) and the root npm packages (npm ci, reused while
# package-lock.json matches, the same marker as tests/vscode/run.sh).
# usage: tests/catalog/run.sh path/to/ddx     prints "N passed, M failed"; exit 0 only when all pass
#   SHOTS=dir   where site-hub.png and site-entry.png go (default build/screenshots)
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
ddx=$(realpath "${1:?usage: tests/catalog/run.sh path/to/ddx}" 2>/dev/null) || { echo "run.sh: no ddx binary at $1"; exit 2; }
[ -x "$ddx" ] || { echo "run.sh: $ddx is not executable"; exit 2; }
SHOTS=$(realpath -m "${SHOTS:-$root/build/screenshots}")

# --- Debian packages: the browser, node and npm
need=""
for p in chromium nodejs; do dpkg -s "$p" >/dev/null 2>&1 || need="$need $p"; done
command -v npm >/dev/null 2>&1 || need="$need npm"
if [ -n "$need" ]; then
  if [ "$(id -u)" = 0 ]; then
    echo "catalog: apt-get install$need"
    log=$(mktemp)
    (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $need) >"$log" 2>&1 ||
      { tail -20 "$log"; rm -f "$log"; echo "0 passed, 1 failed (apt-get)"; exit 1; }
    rm -f "$log"
  else
    echo "run.sh: missing Debian packages:$need (run as root or: sudo apt-get install$need)"; exit 2
  fi
fi

# --- playwright-core from the root package.json (devDependencies)
cd "$root"
lock=$(sha1sum package-lock.json | cut -d' ' -f1)
if [ ! -f node_modules/playwright-core/package.json ] || [ "$(cat node_modules/.ddx-lock 2>/dev/null)" != "$lock" ]; then
  echo "catalog: npm ci (root packages)"
  log=$(mktemp)
  npm ci --no-audit --no-fund --loglevel=error >"$log" 2>&1 || { tail -20 "$log"; rm -f "$log"; echo "0 passed, 1 failed (npm ci)"; exit 1; }
  rm -f "$log"
  echo "$lock" >node_modules/.ddx-lock
fi

SHOTS="$SHOTS" timeout -k 5 120 node "$here/site.test.js" "$ddx"
rc=$?
[ $rc = 124 ] || [ $rc = 137 ] && echo "catalog site: FAIL, the browser run took over 120 s"
exit $rc
