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
wait_for 10 "$T/w.out" nccl.watchdog-timeout # reported before its cause arrives (else it is collateral)
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

# --- quiet on a healthy run: progress is not a hang; the stall clock is the
# one source of hang reports (once per stall, once more when output resumes)
progress() { # progress FILE FROM TO: four ranks' step lines, a round every 0.2 s
  for i in $(seq "$2" "$3"); do
    for r in 0 1 2 3; do echo "[Rank $r] step=$i, skipped=0, lr=[1e-05]"; done >>"$1"
    sleep 0.2
  done
}
# ddx run --stall runs beside it: its command's output stops once, then resumes
cat >"$T/steps.sh" <<'SH'
#!/usr/bin/env bash
for i in 1 2 3 4 5 6; do echo "[Rank 0] step=$i, skipped=0"; sleep 0.2; done
printf 'progress 50%%\r'
sleep 4
for i in 7 8 9 10 11; do echo "[Rank 0] step=$i, skipped=0" >&2; sleep 0.2; done
SH
chmod +x "$T/steps.sh"
"$DDX" run --stall 1.5 -- "$T/steps.sh" >"$T/rs.out" 2>"$T/rs.err" &
rspid=$!
# and a real error amid progress: reported at once, once; a dead job is not a hung one
OOM2='[rank2]: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 2 has a total capacity of 79.15 GiB of which 1.06 GiB is free.'
: >"$T/o.log"
"$DDX" watch --stall 1 "$T/o.log" >"$T/o.out" 2>&1 &
opid=$!
(progress "$T/o.log" 1 4; echo "$OOM2" >>"$T/o.log"; progress "$T/o.log" 5 9) &
: >"$T/h.log"
"$DDX" watch --format json --stall 1.5 "$T/h.log" >"$T/h.out" 2>"$T/h.err" &
hpid=$!
progress "$T/h.log" 1 8
sleep 4
progress "$T/h.log" 9 16
sleep 4
kill $hpid; wait $hpid
python3 - "$T/h.out" <<'PY' && ok || bad "watch: a healthy run is quiet, a stall reported once, a resume once: $(cut -c1-160 "$T/h.out")"
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
assert [r.get("event") for r in rows] == ["stall", "resumed", "stall"], rows
assert all(r["rule"] == "train.hang" for r in rows), rows
s1, res, s2 = rows
assert s1["severity"] == "warning" and s1["stall_seconds"] == 1.5 and s1["title"].startswith("Training hang"), s1
assert s1["file"].endswith("h.log") and s1["line"] == 32 and s2["line"] == 64, (s1, s2)
assert res["severity"] == "info" and res["silent_seconds"] >= 1.5, res
PY
wait $rspid; rc=$?
printf '[Rank 0] step=%s, skipped=0\n' 1 2 3 4 5 6 | { cat; printf 'progress 50%%\r'; } | cmp -s - "$T/rs.out" && ok || bad "run --stall: stdout passes through unchanged"
[ $rc = 0 ] && [ "$(grep -c 'no new output for 1.5 s: the job may hang \[train.hang\]' "$T/rs.err")" = 1 ] &&
  [ "$(grep -c '^ddx: info output resumed after' "$T/rs.err")" = 1 ] && [ "$(grep -c '^ddx:' "$T/rs.err")" = 2 ] &&
  grep -q '^     last progress: <stdout>:6$' "$T/rs.err" && [ "$(grep -c '^\[Rank 0\] step=' "$T/rs.err")" = 5 ] &&
  ok || bad "run --stall: one stall, one resume, no diagnosis of a healthy run (rc $rc): $(cat "$T/rs.err")"

kill $opid; wait $opid
[ "$(grep -c '^ddx: error .*\[torch.oom.generic\] at .*o.log:17, rank 2$' "$T/o.out")" = 1 ] && [ "$(grep -c '^ddx:' "$T/o.out")" = 1 ] &&
  ok || bad "an OOM amid progress is reported once and nothing else: $(cat "$T/o.out")"

# re-listing: another name of a watched file (a link, a second root) is not
# watched again; a rotated file is read on from where it was, not again
mkdir -p "$T/al" "$T/rb"
cat >"$T/rb/test.boom.json" <<'JSON'
{"id": "test.boom", "title": "t", "phase": "step", "severity": "error", "role": "cause", "priority": 50,
 "signatures": [{"regex": "boom", "literals": ["boom"]}], "summary": "s", "mechanism": "m", "fix": ["f"],
 "samples": {"positive": [{"text": "boom here"}], "negative": [{"text": "quiet"}]}}
JSON
printf '[rank5]: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 5 has a total capacity of 79.15 GiB of which 1.06 GiB is free.\n' >"$T/al/a.log"
ln -s a.log "$T/al/link.log"
"$DDX" watch --rules rules --rules "$T/rb" --format json --on-failure "cat >$T/al.hook" "$T/al" "$T/al/" >"$T/al.out" 2>&1 &
apid=$!
wait_for 5 "$T/al.out" torch.oom.generic
mv "$T/al/a.log" "$T/al/a.log.1"
printf 'boom here\n' >"$T/al/a.log"
wait_for 5 "$T/al.out" test.boom && wait_for 5 "$T/al.hook" test.boom
kill $apid; wait $apid
python3 - "$T/al.hook" "$T/al.out" <<'PY' && ok || bad "a file is watched once under all its names: $(grep -e '"name"' -e '"count"' "$T/al.hook")"
import json, sys
d = json.load(open(sys.argv[1]))
names = [i["name"].rsplit("/", 1)[-1] for i in d["inputs"]]
assert names[0] == "a.log" and set(names) <= {"a.log", "a.log.1"} and len(set(names)) == len(names), names
counts = {i["rule"]: i["count"] for i in d["incidents"]}
assert counts == {"torch.oom.generic": 1, "test.boom": 1}, counts
rows = [json.loads(l)["rule"] for l in open(sys.argv[2]) if l.strip()]
assert rows == ["torch.oom.generic", "test.boom"], rows
PY

# --from-end skips what the files held at the start, not a file created later
mkdir -p "$T/fe"
printf '[rank5]: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 5 has a total capacity of 79.15 GiB of which 1.06 GiB is free.\n' >"$T/fe/old.log"
"$DDX" watch --from-end --exit-on-failure "$T/fe" >"$T/fe.out" 2>&1 &
fpid=$!
sleep 1
printf '[rank1]: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 1 has a total capacity of 79.15 GiB of which 1.06 GiB is free.\n' >"$T/fe/new.log"
for _ in $(seq 1 50); do kill -0 $fpid 2>/dev/null || break; sleep 0.1; done
kill $fpid 2>/dev/null; wait $fpid; rc=$?
[ $rc = 1 ] && [ "$(grep -c '^ddx: error' "$T/fe.out")" = 1 ] && grep -q 'new.log:1, rank 1$' "$T/fe.out" && ok || bad "--from-end reads a new file from its start (rc $rc): $(cat "$T/fe.out")"

# --- text from a rule pack or a file name cannot drive the terminal
mkdir -p "$T/evil" "$T/el"
python3 - "$T/evil/test.evil.json" <<'PY'
import json, sys
json.dump({"id": "test.evil", "title": "Evil \u001b[2J\u001b]0;pwned\u0007 title\nddx: error forged \u009b1m",
           "phase": "step", "severity": "error", "role": "cause", "priority": 50,
           "signatures": [{"regex": "boom", "literals": ["boom"]}], "summary": "s", "mechanism": "m",
           "fix": ["fix \u001b[31mred"], "samples": {"positive": [{"text": "boom here"}], "negative": [{"text": "quiet"}]}},
          open(sys.argv[1], "w"))
PY
printf 'boom here\n' >"$T/el/n$(printf '\033')[2Jx.log"
timeout 10 "$DDX" watch --rules "$T/evil" --exit-on-failure "$T/el" >"$T/el.out" 2>&1; rc=$?
python3 - "$T/el.out" "$T" <<'PY' && [ $rc = 1 ] && ok || bad "rule text and file names are escaped on the terminal (rc $rc): $(cat -v "$T/el.out")"
import re, sys
b = open(sys.argv[1], "rb").read()
assert not re.search(rb"[\x00-\x08\x0b-\x1f\x7f]|\xc2[\x80-\x9f]", b), b
lines = b.decode().splitlines()
assert len(lines) == 3, lines
want = r"ddx: error Evil \x1b[2J\x1b]0;pwned\x07 title\x0addx: error forged \u009b1m [test.evil] at "
assert lines[0] == want + sys.argv[2] + r"/el/n\x1b[2Jx.log:1", lines[0]
assert lines[1] == r"     fix: fix \x1b[31mred", lines[1]
PY

# --- a crafted rule id cannot inject Prometheus series: the loader refuses
# it, or it is escaped as a label value
mkdir -p "$T/inj"
python3 - "$T/inj/inj.json" <<'PY'
import json, sys
json.dump({"id": "test.x\"} 1\nddx_failures_total{rule=\"forged", "title": "t", "phase": "step", "severity": "error",
           "role": "cause", "priority": 50, "signatures": [{"regex": "boom", "literals": ["boom"]}], "summary": "s",
           "mechanism": "m", "fix": ["f"], "samples": {"positive": [{"text": "boom here"}], "negative": [{"text": "quiet"}]}},
          open(sys.argv[1], "w"))
PY
printf 'boom here\n' >"$T/inj.log"
timeout 10 "$DDX" watch --rules "$T/inj" --exit-on-failure --metrics "$T/inj.prom" "$T/inj.log" >/dev/null 2>"$T/inj.err"; rc=$?
python3 - "$T/inj.prom" "$rc" "$T/inj.err" <<'PY' && ok || bad "metrics label values are escaped (rc $rc): $(cat "$T/inj.err" "$T/inj.prom" 2>/dev/null)"
import re, sys
if sys.argv[2] == "2":  # the loader refused the id
    assert "$.id" in open(sys.argv[3]).read()
    sys.exit(0)
assert sys.argv[2] == "1"
label = r'"((?:[^"\\\n]|\\[\\"n])*)"'
samples = [l for l in open(sys.argv[1]).read().split("\n") if l and not l.startswith("#")]
assert len(samples) == 2, samples
m = re.fullmatch(r"ddx_failures_total\{rule=" + label + r",rank=" + label + r"\} 1", samples[0])
assert m, samples[0]
unesc = re.sub(r"\\(.)", lambda x: {"n": "\n"}.get(x.group(1), x.group(1)), m.group(1))
assert unesc == 'test.x"} 1\nddx_failures_total{rule="forged', unesc
assert re.fullmatch(r"ddx_last_failure_timestamp_seconds [0-9.]+", samples[1]), samples[1]
PY

finish
