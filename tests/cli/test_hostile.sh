#!/usr/bin/env bash
# A hostile workspace for the CLI (issue 17): devices and FIFOs named like
# logs or rules, link cycles, thousands of file arguments, a full disk.
# Nothing may hang (each run has a timeout), nothing may be cut silently.
. "$(dirname "$0")/lib.sh"

OOM='[rank3]: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 3 has a total capacity of 79.15 GiB of which 1.06 GiB is free.'
# peak RSS in kB of a command (GNU time when present, else python's rusage)
peak_kb() {
  python3 -c 'import resource,subprocess,sys
subprocess.run(sys.argv[1:],stdout=subprocess.DEVNULL,stderr=subprocess.DEVNULL)
print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)' "$@"
}

# 1. a device named on the command line: refused with its kind, at once
out=$(timeout 10 "$DDX" diagnose /dev/zero 2>&1); rc=$?
[ "$rc" = 2 ] && grep -q "/dev/zero: a character device, not a regular file" <<<"$out" && ok ||
  bad "diagnose /dev/zero: rc $rc: $out"

# 2. a folder holding *.log -> /dev/zero, a FIFO named x.log and six
#    self-links: each real log is read once, the others skipped and counted
mkdir -p "$T/run/sub"
printf '%s\n' "$OOM" >"$T/run/sub/rank3.log"
printf 'step 1\n' >"$T/run/rank0.log"
ln -s /dev/zero "$T/run/zero.log"
mkfifo "$T/run/pipe.log"
for i in 1 2 3 4 5 6; do ln -s . "$T/run/self$i"; ln -s .. "$T/run/sub/up$i"; done
out=$(timeout 20 "$DDX" diagnose --format json "$T/run" 2>"$T/err"); rc=$?
n=$(python3 -c 'import json,sys; print(len(json.load(sys.stdin)["inputs"]))' <<<"$out" 2>/dev/null)
[ "$rc" = 1 ] && [ "$n" = 2 ] && grep -q "skipped 2 entries" "$T/err" && ok ||
  bad "diagnose of a folder with /dev/zero, a FIFO and link cycles: rc $rc, $n inputs, $(cat "$T/err")"

# 3. 5,000 file arguments, the failure in the last one: all are read
mkdir -p "$T/many"
for i in $(seq 0 4999); do printf 'rank %d: step 1 loss 2.1\n' "$i" >"$T/many/r$i.log"; done
printf '%s\n' "$OOM" >>"$T/many/r4999.log"
files=()
for i in $(seq 0 4999); do files+=("$T/many/r$i.log"); done
out=$(timeout 120 "$DDX" diagnose --format json "${files[@]}" 2>&1); rc=$?
n=$(python3 -c 'import json,sys; d=json.load(sys.stdin); print(len(d["inputs"]), d["incidents"][0]["rule"])' <<<"$out" 2>/dev/null)
[ "$rc" = 1 ] && [ "$n" = "5000 torch.oom.generic" ] && ok || bad "5,000 file arguments: rc $rc, got '$n'"
kb=$(peak_kb "$DDX" diagnose "${files[@]}")
echo "5,000 files: peak RSS $kb kB"
[ "$kb" -lt 262144 ] && ok || bad "5,000 files: peak RSS $kb kB"

# 4. the output cannot be written: exit 2 with the reason, never silence
timeout 10 "$DDX" diagnose "$T/run/sub/rank3.log" >/dev/full 2>"$T/err"; rc=$?
[ "$rc" = 2 ] && grep -q "cannot write the output: No space left on device" "$T/err" && ok ||
  bad "diagnose > /dev/full: rc $rc: $(cat "$T/err")"
timeout 10 "$DDX" explain ds.oom.zero3-gather >/dev/full 2>"$T/err"; rc=$?
[ "$rc" = 2 ] && ok || bad "explain > /dev/full: rc $rc"

# 5. rule folders: /dev/zero, a FIFO and a /dev/zero link inside a folder
out=$(timeout 10 "$DDX" rules check /dev/zero 2>&1); rc=$?
[ "$rc" = 2 ] && grep -q "a character device, not a regular file; a rule file" <<<"$out" && ok ||
  bad "rules check /dev/zero: rc $rc: $out"
mkfifo "$T/fifo.json"
out=$(timeout 10 "$DDX" rules check "$T/fifo.json" 2>&1); rc=$?
[ "$rc" = 2 ] && grep -q "a FIFO or pipe, not a regular file" <<<"$out" && ok ||
  bad "rules check FIFO: rc $rc: $out"
mkdir -p "$T/rules"
cp "$ROOT/rules/train/train.hang.json" "$T/rules/"
ln -s /dev/zero "$T/rules/zero.json"
mkfifo "$T/rules/pipe.json"
ln -s . "$T/rules/loop"
out=$(timeout 10 "$DDX" rules check "$T/rules" 2>&1); rc=$?
[ "$rc" = 0 ] && grep -q "skipped 2 entries that are not a regular file" <<<"$out" && ok ||
  bad "rules check of a folder with /dev/zero, a FIFO, a loop: rc $rc: $out"
kb=$(peak_kb timeout 10 "$DDX" diagnose --rules /dev/zero "$T/run/sub/rank3.log")
[ "$kb" -lt 65536 ] && ok || bad "--rules /dev/zero: peak RSS $kb kB"
echo "--rules /dev/zero: peak RSS $kb kB"

# 6. check-config: a device is refused; a named pipe the user gives is read
out=$(timeout 10 "$DDX" check-config /dev/zero 2>&1); rc=$?
[ "$rc" = 2 ] && grep -q "not a regular file" <<<"$out" && ok || bad "check-config /dev/zero: rc $rc: $out"
out=$(timeout 10 "$DDX" check-config <(printf '{"train_micro_batch_size_per_gpu": 4}') 2>&1); rc=$?
[ "$rc" != 2 ] && ok || bad "check-config <(...): rc $rc: $out"

# 7. a walk past its bound is refused by name, never cut: 10,001 rule files
python3 -c 'import sys
for i in range(10001): open(f"{sys.argv[1]}/r{i}.json","w").close()' "$(mkdir -p "$T/rmany" && echo "$T/rmany")"
out=$(timeout 30 "$DDX" rules check "$T/rmany" 2>&1); rc=$?
[ "$rc" = 2 ] && grep -q "more than 10000 files to read" <<<"$out" && ok || bad "10,001 rule files: rc $rc: $out"
finish
