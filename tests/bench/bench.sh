#!/usr/bin/env bash
# Side-by-side throughput of ddx against ripgrep and grep on the same
# page-cached logs, with the catalog's own signatures as the patterns.
# usage: tests/bench/bench.sh [DDX] [SIZES...]   (default: build/ddx 100M 1G)
# Results go to stdout as a Markdown table (docs/performance.md keeps them).
set -uo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
ddx=$(realpath "${1:-$root/build/ddx}"); shift || true
sizes=("$@"); [ ${#sizes[@]} = 0 ] && sizes=(100M 1G)
data=${DDX_BENCH_DATA:-$root/tests/bench/data}
mkdir -p "$data"
"$ddx" rules --patterns >"$data/patterns.pcre"
# ERE copy for grep -E: named groups and non-capturing groups become plain groups,
# \d/\s/\w classes spelled out; patterns ERE cannot express (lookarounds) are dropped.
python3 - "$data/patterns.pcre" "$data/patterns.ere" <<'PY'
import re, sys
out = []
for p in open(sys.argv[1]):
    p = p.rstrip("\n")
    if re.search(r"\(\?[=!<]|\(\?[a-zA-Z]|\\[bBAzZK]", p.replace("(?<", "(?P<") .replace("(?P<", "(")):
        continue
    q = re.sub(r"\(\?<\w+>|\(\?:", "(", p)
    q = q.replace(r"\d", "[0-9]").replace(r"\s", "[[:space:]]").replace(r"\w", "[[:alnum:]_]")
    out.append(q)
open(sys.argv[2], "w").write("\n".join(out) + "\n")
PY
"$ddx" rules --literals >"$data/literals.txt"
nlit=$(wc -l <"$data/literals.txt"); nere=$(wc -l <"$data/patterns.ere")
timeit() { # timeit CMD... -> "seconds maxrss_kb"
  /usr/bin/time -f "%e %M" -o "$data/time" "$@" >"$data/out" 2>&1 # not /dev/null: grep stops at the first match then
  tail -1 "$data/time"
}
echo "| input | tool | seconds | GB/s | peak RSS | time vs rg -F |"
echo "|---|---|---|---|---|---|"
for sz in "${sizes[@]}"; do
  f="$data/bench-$sz.log"
  [ -f "$f" ] || python3 "$root/tests/bench/gen_bench.py" "$sz" "$f"
  bytes=$(stat -c %s "$f")
  cat "$f" >/dev/null # page cache
  read -r rg_s rg_kb < <(timeit rg -c -F -f "$data/literals.txt" "$f")
  read -r grepf_s grepf_kb < <(timeit grep -c -F -f "$data/literals.txt" "$f")
  read -r grep_s grep_kb < <(timeit grep -c -E -f "$data/patterns.ere" "$f")
  read -r ddx_s ddx_kb < <(timeit "$ddx" diagnose --format json "$f")
  for row in "ddx diagnose --format json (whole diagnosis):$ddx_s:$ddx_kb" "rg -c -F -f ($nlit literals):$rg_s:$rg_kb" "grep -c -F -f ($nlit literals):$grepf_s:$grepf_kb" "grep -c -E -f ($nere ERE signatures):$grep_s:$grep_kb"; do
    IFS=: read -r tool s kb <<<"$row"
    python3 -c "import sys; b,s,kb,rg=float(sys.argv[1]),float(sys.argv[2]),int(sys.argv[3]),float(sys.argv[4]); print(f'| {sys.argv[5]} | {sys.argv[6]} | {s:.2f} | {b/max(s,1e-3)/1e9:.2f} | {kb/1024:.0f} MiB | {s/max(rg,1e-3):.2f}x |')" \
      "$bytes" "$s" "$kb" "$rg_s" "$sz" "$tool"
  done
done
