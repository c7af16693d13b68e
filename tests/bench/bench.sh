#!/usr/bin/env bash
# Side-by-side throughput of ddx against ripgrep and grep on the same
# page-cached logs, with the catalog's own signatures as the patterns.
# usage: tests/bench/bench.sh [DDX] [SIZES...]   (default: build/ddx 100M 1G)
# Results go to stdout as Markdown tables (docs/performance.md keeps them).
# Environment: DDX_BENCH_DATA (where the logs go, default tests/bench/data),
# DDX_BENCH_GREP_E_MAX (largest size grep -E runs on, default 100M: it
# manages 0.004 GB/s, an hour on 10 GB), DDX_BENCH_RUNS (each command runs
# this many times, the fastest counts: default 3, shared machines are noisy).
set -uo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
ddx=$(realpath "${1:-$root/build/ddx}"); shift || true
sizes=("$@"); [ ${#sizes[@]} = 0 ] && sizes=(100M 1G)
data=${DDX_BENCH_DATA:-$root/tests/bench/data}
grep_e_max=${DDX_BENCH_GREP_E_MAX:-100M}
mkdir -p "$data"
bytes_of() { python3 -c "import sys; s=sys.argv[1]; m={'K':1<<10,'M':1<<20,'G':1<<30}; print(int(float(s[:-1])*m[s[-1].upper()]) if s[-1].upper() in m else int(s))" "$1"; }

# The catalog's signatures for the other tools. ripgrep's regex engine has
# no look-around and no named-group reuse: named groups become plain groups
# and look-around assertions are dropped (so rg matches a superset: more
# lines, never fewer). grep -E gets the same set spelled in ERE. Patterns a
# tool still rejects are left out of its set (counted below).
"$ddx" rules --patterns >"$data/patterns.pcre"
"$ddx" rules --literals >"$data/literals.txt"
python3 - "$data" <<'PY'
import re, subprocess, sys
d = sys.argv[1]
def drop_lookaround(p):
    out, i = [], 0
    while i < len(p):
        if p[i] == "\\":
            out.append(p[i:i + 2]); i += 2; continue
        m = re.match(r"\(\?(?:<?[=!])", p[i:])
        if m:  # skip the balanced group
            depth, j, cls = 0, i, False
            while j < len(p):
                c = p[j]
                if c == "\\": j += 2; continue
                if cls:
                    if c == "]": cls = False
                elif c == "[": cls = True
                elif c == "(": depth += 1
                elif c == ")":
                    depth -= 1
                    if depth == 0: break
                j += 1
            i = j + 1; continue
        out.append(p[i]); i += 1
    return "".join(out)
rg, ere = [], []
for p in open(f"{d}/patterns.pcre"):
    p = p.rstrip("\n")
    q = drop_lookaround(p)
    q = re.sub(r"\(\?<(\w+)>", "(?:", q).replace("(?J)", "").replace("(?s)", "")
    if subprocess.run(["rg", "-q", "-e", q, "/dev/null"], capture_output=True).returncode != 2:
        rg.append(q)
    e = q.replace("(?:", "(").replace(r"\d", "[0-9]").replace(r"\s", "[[:space:]]").replace(r"\S", "[^[:space:]]")
    e = e.replace(r"\w", "[[:alnum:]_]").replace("*?", "*").replace("+?", "+").replace("??", "?")
    if subprocess.run(["grep", "-E", "-q", "-e", e, "/dev/null"], capture_output=True).returncode != 2:
        ere.append(e)
open(f"{d}/patterns.rg", "w").write("\n".join(rg) + "\n")
open(f"{d}/patterns.ere", "w").write("\n".join(ere) + "\n")
PY
npcre=$(wc -l <"$data/patterns.pcre"); nrg=$(wc -l <"$data/patterns.rg")
nere=$(wc -l <"$data/patterns.ere"); nlit=$(wc -l <"$data/literals.txt")

runs=${DDX_BENCH_RUNS:-3}
timeit() { # timeit CMD... -> "seconds maxrss_kb", the fastest of $runs runs
  local best="" kb="" s k r
  for ((r = 0; r < runs; r++)); do
    /usr/bin/time -f "%e %M" -o "$data/time" "$@" >"$data/out" 2>&1 # not /dev/null: grep stops at the first match then
    read -r s k < <(tail -1 "$data/time")
    if [ -z "$best" ] || python3 -c "import sys; sys.exit(not float(sys.argv[1]) < float(sys.argv[2]))" "$s" "$best"; then
      best=$s
      kb=$k
    fi
  done
  echo "$best $kb"
}
echo "Patterns: $npcre catalog signatures; rg takes $nrg of them, grep -E $nere; $nlit distinct literals."
echo
echo "| input | tool | seconds | GB/s | Mlines/s | peak RSS | time vs rg -f |"
echo "|---|---|---|---|---|---|---|"
for sz in "${sizes[@]}"; do
  f="$data/bench-$sz.log"
  [ -f "$f" ] || python3 "$root/tests/bench/gen_bench.py" "$sz" "$f"
  bytes=$(stat -c %s "$f")
  lines=$(wc -l <"$f") # page-caches the file too
  rows=()
  read -r s kb < <(timeit "$ddx" diagnose --threads 1 --format json "$f"); rows+=("ddx diagnose --format json, 1 thread (whole diagnosis):$s:$kb")
  read -r s kb < <(timeit "$ddx" diagnose --threads 2 --format json "$f"); rows+=("ddx diagnose --format json, 2 threads:$s:$kb")
  read -r rg_s kb < <(timeit rg -c -f "$data/patterns.rg" "$f"); rows+=("rg -c -f ($nrg signatures, count only):$rg_s:$kb")
  if [ "$(bytes_of "$sz")" -le "$(bytes_of "$grep_e_max")" ]; then
    read -r s kb < <(timeit grep -c -E -f "$data/patterns.ere" "$f"); rows+=("grep -c -E -f ($nere signatures, count only):$s:$kb")
  fi
  read -r s kb < <(timeit rg -c -F -f "$data/literals.txt" "$f"); rows+=("rg -c -F -f ($nlit literals, count only):$s:$kb")
  read -r s kb < <(timeit grep -c -F -f "$data/literals.txt" "$f"); rows+=("grep -c -F -f ($nlit literals, count only):$s:$kb")
  for row in "${rows[@]}"; do
    IFS=: read -r tool s kb <<<"$row"
    python3 -c "import sys; b,n,s,kb,rg=float(sys.argv[1]),float(sys.argv[2]),float(sys.argv[3]),int(sys.argv[4]),float(sys.argv[5]); print(f'| {sys.argv[6]} | {sys.argv[7]} | {s:.2f} | {b/max(s,1e-3)/1e9:.3g} | {n/max(s,1e-3)/1e6:.3g} | {kb/1024:.0f} MiB | {s/max(rg,1e-3):.2f}x |')" \
      "$bytes" "$lines" "$s" "$kb" "$rg_s" "$sz" "$tool"
  done
done
