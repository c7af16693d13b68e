# Shared start of the CLI test scripts (sourced, not run: ctest runs the
# test_*.sh files with the ddx binary as $1, from the repo root).
# Gives DDX (the binary, absolute), ROOT, a temporary folder T removed on
# exit (with any background job), and ok/bad counters that finish reports.
set -u
[ $# -ge 1 ] || { echo "usage: $(basename "$0") path/to/ddx (from the repo root)" >&2; exit 2; }
DDX=$(realpath "$1")
ROOT=$(pwd)
T=$(mktemp -d)
trap 'kill $(jobs -p) 2>/dev/null; rm -rf "$T"' EXIT
pass=0 fail=0
ok() { pass=$((pass + 1)); }
bad() { fail=$((fail + 1)); echo "FAIL: $*" >&2; }
finish() { # the summary line and the script's exit status
  echo "$pass passed, $fail failed"
  [ "$fail" = 0 ]
}
