#!/usr/bin/env bash
# ddx run and ddx watch: the real binary wrapping real processes and
# following real files. usage: test_live.sh path/to/ddx (from the repo root)
. "$(dirname "$0")/lib.sh" "$@"
wait_for() { # wait_for SECONDS FILE TEXT
  for _ in $(seq 1 $(($1 * 10))); do grep -qF -- "$3" "$2" 2>/dev/null && return 0; sleep 0.1; done
  return 1
}

# --- ddx run: a fake training script prints a real failure log and exits 1
cat >"$T/train.sh" <<SH
#!/usr/bin/env bash
cat "$ROOT/examples/zero3-oom-8gpu.log" >&2
printf 'epoch 1 \\033[32mok\\033[0m\\rprogress 20%%\\r\\n'
exit 1
SH
chmod +x "$T/train.sh"
"$DDX" run --json-out "$T/run.json" --metrics "$T/run.prom" -- "$T/train.sh" >"$T/out" 2>"$T/err"
rc=$?
[ $rc = 1 ] && ok || bad "run keeps the command's exit code (got $rc)"
size=$(stat -c %s "$ROOT/examples/zero3-oom-8gpu.log")
cmp -s <(head -c "$size" "$T/err") "$ROOT/examples/zero3-oom-8gpu.log" && ok || bad "stderr passes through byte for byte"
printf 'epoch 1 \033[32mok\033[0m\rprogress 20%%\r\n' | cmp -s - "$T/out" && ok || bad "stdout passes through with colours and bare CR"
grep -q "ds.oom.zero3-gather" "$T/err" && ok || bad "the diagnosis follows the output on stderr"
python3 -c "import json,sys; d=json.load(open(sys.argv[1])); i=d['incidents'][0]; assert i['rule']=='ds.oom.zero3-gather' and i['rank']==5" "$T/run.json" && ok || bad "--json-out holds the report"
grep -q 'ddx_failures_total{rule="ds.oom.zero3-gather",rank="5"} 1' "$T/run.prom" && ok || bad "run writes metrics: $(cat "$T/run.prom" 2>/dev/null)"

# a command that succeeds: same output, exit 0, no diagnosis
"$DDX" run -- sh -c 'echo hello; echo warn >&2' >"$T/out" 2>"$T/err"
rc=$?
[ $rc = 0 ] && [ "$(cat "$T/out")" = hello ] && [ "$(cat "$T/err")" = warn ] && ok || bad "a successful command is untouched (rc $rc)"
"$DDX" run -- sh -c 'exit 3' >/dev/null 2>&1; [ $? = 3 ] && ok || bad "exit status 3 is kept"
"$DDX" run -- /no/such/binary >/dev/null 2>"$T/err"; rc=$?
[ $rc = 127 ] && grep -q "cannot start" "$T/err" && ok || bad "a missing command: 127 and a message (rc $rc)"
"$DDX" run >/dev/null 2>&1; [ $? = 2 ] && ok || bad "run without a command is a usage error"

# signals are forwarded to the child
"$DDX" run -- sh -c 'trap "echo got-term; exit 7" TERM; echo ready; while :; do sleep 0.1; done' >"$T/sig" 2>&1 &
pid=$!
wait_for 5 "$T/sig" ready && kill -TERM $pid
wait $pid; rc=$?
[ $rc = 7 ] && grep -q got-term "$T/sig" && ok || bad "SIGTERM is forwarded (rc $rc, $(cat "$T/sig"))"

# --on-failure runs the user's command with the JSON report on stdin
"$DDX" run --on-failure "cat > $T/hook.json" -- "$T/train.sh" >/dev/null 2>&1
for _ in $(seq 1 30); do [ -s "$T/hook.json" ] && break; sleep 0.1; done
python3 -c "import json,sys; d=json.load(open(sys.argv[1])); assert d['incidents'][0]['rule']=='ds.oom.zero3-gather'" "$T/hook.json" && ok || bad "--on-failure gets the report"

# --- ddx watch: a folder whose files grow, rotate and get truncated
mkdir -p "$T/logs"
printf 'step 1\n' >"$T/logs/node0.log"
"$DDX" watch --format json --exit-on-failure --metrics "$T/w.prom" "$T/logs" >"$T/w.out" 2>"$T/w.err" &
wpid=$!
sleep 0.8
printf 'step 2\n' >>"$T/logs/node0.log"
mv "$T/logs/node0.log" "$T/logs/node0.log.1"                  # rotation: a new file appears
printf 'restarted\n' >"$T/logs/node0.log"
: >"$T/logs/node0.log"                                         # truncation (copytruncate)
printf '[rank3]:[E1218 20:27:21.426415540 ProcessGroupNCCL.cpp:629] [Rank 3] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=7, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, Timeout(ms)=600000) ran for 600031 milliseconds before timing out.\n' >>"$T/logs/node0.log"
sleep 0.8
printf '[rank5]: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 5 has a total capacity of 79.15 GiB of which 1.06 GiB is free.\n' >"$T/logs/node1.log"
for _ in $(seq 1 50); do kill -0 $wpid 2>/dev/null || break; sleep 0.1; done
kill $wpid 2>/dev/null
wait $wpid; rc=$?
[ $rc = 1 ] && ok || bad "watch --exit-on-failure exits 1 on a failure (rc $rc)"
python3 - "$T/w.out" <<'PY' && ok || bad "watch reports each incident once, as JSON lines: $(cat "$T/w.out")"
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
rules = [r["rule"] for r in rows]
assert "torch.oom.generic" in rules, rules
assert len(rules) == len(set((r["rule"], r["file"], r["line"]) for r in rows)), rules
oom = [r for r in rows if r["rule"] == "torch.oom.generic"][0]
assert oom["rank"] == 5 and oom["file"].endswith("node1.log"), oom
PY
grep -q '^# TYPE ddx_failures_total counter$' "$T/w.prom" && grep -q 'ddx_failures_total{rule="torch.oom.generic",rank="5"} 1' "$T/w.prom" && grep -q 'ddx_failures_total{rule="nccl.watchdog-timeout",rank="3"} 1' "$T/w.prom" && grep -q '^ddx_last_failure_timestamp_seconds [0-9.]*$' "$T/w.prom" && ok || bad "Prometheus textfile format: $(cat "$T/w.prom")"

# --- a stall: progress stops, no error
printf "{'loss': 1.2, 'grad_norm': 3.1, 'learning_rate': 1e-05, 'epoch': 0.1}\n" >"$T/stall.log"
timeout 15 "$DDX" watch --stall 1 --exit-on-failure "$T/stall.log" >"$T/s.out" 2>&1; rc=$?
[ $rc = 1 ] && grep -q "train.hang" "$T/s.out" && ok || bad "a stall is reported as a hang (rc $rc): $(cat "$T/s.out")"
"$DDX" watch /no/such/dir >/dev/null 2>&1; [ $? = 2 ] && ok || bad "watch of a missing path exits 2"

finish
