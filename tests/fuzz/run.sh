#!/usr/bin/env bash
# Builds the libFuzzer targets (clang, -fsanitize=fuzzer,address,undefined),
# replays every saved regression input, then fuzzes each target for a fixed
# time from the seeds (tests/corpus logs, rules, ds_config samples).
# usage: tests/fuzz/run.sh [SECONDS_PER_TARGET]   (from the repository root)
set -uo pipefail
secs=${1:-20}
root=$(pwd)
out=${DDX_FUZZ_BUILD:-$root/build-fuzz}
mkdir -p "$out"
# The targets link the libraries the program is built from (CMake, clang,
# DDX_FUZZ=ON: every library instrumented), never a list of sources.
if ! { CC=clang cmake -S "$root" -B "$out" -DDDX_FUZZ=ON -DCMAKE_BUILD_TYPE=RelWithDebInfo \
         -DCMAKE_C_FLAGS_RELWITHDEBINFO="-g -O1" >"$out/configure.log" 2>&1 &&
       cmake --build "$out" -j"$(nproc)" --target fuzz_scan fuzz_dsconfig fuzz_rules fuzz_lsp >"$out/build.log" 2>&1; }; then
  echo "fuzz: build failed"; tail -30 "$out/configure.log" "$out/build.log"; echo "0 passed, 1 failed"; exit 1
fi
pass=0 fail=0
for t in scan dsconfig rules lsp; do
  case $t in
    scan) seeds="tests/corpus/dev examples" ;;
    dsconfig) seeds="tests/fuzz/seeds/dsconfig" ;;
    rules) seeds="$(find rules -name '*.json' ! -name '*.schema.json' -printf '%h\n' | sort -u | tr '\n' ' ')" ;;
    lsp) seeds="tests/fuzz/seeds/lsp" ;;
  esac
  # 1. every crash found so far stays fixed
  regs=$(find "tests/fuzz/regressions/$t" -type f ! -name .keep)
  if [ -n "$regs" ] && ! "$out/fuzz_$t" $regs >"$out/regress_$t.log" 2>&1; then
    echo "fuzz_$t: a saved regression input fails again"; tail -20 "$out/regress_$t.log"; fail=$((fail + 1)); continue
  fi
  # 2. a fixed time budget from the seeds (new inputs go to a scratch corpus)
  work="$out/corpus_$t"; mkdir -p "$work"
  "$out/fuzz_$t" -max_total_time="$secs" -timeout=10 -rss_limit_mb=2048 -max_len=65536 \
    -artifact_prefix="$out/crash_$t-" "$work" $seeds >"$out/fuzz_$t.log" 2>&1
  rc=$?
  stats=$(grep -E '^#[0-9]+.*(DONE|pulse)' "$out/fuzz_$t.log" | tail -1)
  if [ $rc = 0 ]; then
    echo "fuzz_$t: ok — $stats"; pass=$((pass + 1))
  else
    echo "fuzz_$t: FAILED (rc $rc); the input is in $out/crash_$t-*; copy it to tests/fuzz/regressions/$t/ once fixed"
    grep -E 'ERROR|SUMMARY|runtime error' "$out/fuzz_$t.log" | head -5
    fail=$((fail + 1))
  fi
done
echo "$pass passed, $fail failed"
[ $fail = 0 ]
