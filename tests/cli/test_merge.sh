#!/usr/bin/env bash
# ddx merge over damaged events files: real events written by
# `ddx diagnose --events-out` from bundled logs, then copies corrupted one
# class of damage at a time. Format damage refuses the file (exit 2, the
# file and line named); a bad value in one item skips that item with a
# warning naming file, line, field and range; catalog drift is a note.
# Good files merge to the answer the direct diagnosis gives.
# usage: test_merge.sh path/to/ddx   (run from the repository root)
. "$(dirname "$0")/lib.sh" "$@"

LOG=examples/zero3-oom-8gpu.log
GOOD=$T/good.events

# run_merge NAME ARGS...: ddx merge --format json, stdout to $T/NAME.json,
# stderr to $T/NAME.err, exit status in $rc (a hang counts as 124).
run_merge() {
  local name=$1; shift
  timeout 60 "$DDX" merge --format json "$@" >"$T/$name.json" 2>"$T/$name.err"; rc=$?
}
has() { # has FILE TEXT DESC
  if grep -qF -- "$2" "$1"; then ok; else bad "$3: '$2' not in: $(head -c 600 "$1")"; fi
}
want_rc() { # want_rc WANT DESC
  if [ "$rc" = "$1" ]; then ok; else bad "$2: exit $rc, wanted $1; stderr: $(head -c 600 "$T/$3.err")"; fi
}
no_sanitizer() { # no_sanitizer NAME: the sanitizers (ASan/UBSan builds) said nothing
  if grep -qE 'runtime error|AddressSanitizer|LeakSanitizer' "$T/$1.err"; then
    bad "$1: sanitizer report: $(grep -m1 -E 'runtime error|Sanitizer' "$T/$1.err")"
  else ok; fi
}
# same_answer DESC DIRECT.json MERGED.json EVENTS: the diagnoses are equal once
# the merged input names lose their "EVENTS: " prefix (stats and inputs aside).
same_answer() {
  python3 - "$2" "$3" "$4: " <<'PY' && ok || bad "$1: merge and diagnose differ"
import json, sys
def norm(x, pre):
    if isinstance(x, dict): return {k: norm(v, pre) for k, v in x.items() if k not in ("stats", "inputs")}
    if isinstance(x, list): return [norm(v, pre) for v in x]
    return x.replace(pre, "") if isinstance(x, str) else x
a = norm(json.load(open(sys.argv[1])), "\0")
b = norm(json.load(open(sys.argv[2])), sys.argv[3])
if a != b:
    sa, sb = json.dumps(a, indent=1, sort_keys=True), json.dumps(b, indent=1, sort_keys=True)
    import difflib
    print("\n".join(list(difflib.unified_diff(sa.splitlines(), sb.splitlines(), lineterm="", n=1))[:30]), file=sys.stderr)
    sys.exit(1)
PY
}
primary() { # primary FILE: the primary incident's rule
  python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); print(d["incidents"][0]["rule"] if d["incidents"] else "-")' "$1"
}

# corrupt NAME PYTHON: a copy of the good file as $T/NAME.events after PYTHON ran
# on H (the header, a dict), E (the event lines, dicts) and R (the raw lines,
# R[0] the header; a raw line set wins over H/E). Helpers: sig() the index in E
# of a train.hang signature hit, frame() of the first frame. The line number
# the change is on (LN, 1-based, set by the snippet) goes to $T/NAME.line.
corrupt() {
  python3 - "$GOOD" "$T/$1.events" "$T/$1.line" "$2" <<'PY'
import json, sys
src, dst, lnf, code = sys.argv[1:5]
R = open(src).read().split("\n")[:-1]
H = json.loads(R[0]); E = [json.loads(x) for x in R[1:]]
def sig(): return next(i for i, e in enumerate(E) if e.get("r") == "train.hang" and not e["x"] and "step" in e.get("f", {}))
def frame(): return next(i for i, e in enumerate(E) if "F" in e)
LN = 1
raw = {}
env = dict(H=H, E=E, R=R, sig=sig, frame=frame, raw=raw, json=json)
exec(code, env)
out = [json.dumps(H, separators=(",", ":"))] + [json.dumps(e, separators=(",", ":")) for e in E]
for k, v in env["raw"].items(): out[k] = v
body = "\n".join(out) + ("" if env.get("NO_NL") else "\n")
open(dst, "w", encoding="utf-8", errors="surrogateescape").write(body)
open(lnf, "w").write(str(env.get("LN", 1)))
PY
}
line_of() { cat "$T/$1.line"; }

# --- a good file merges to the answer of the direct diagnosis
"$DDX" diagnose --format json --events-out "$GOOD" "$LOG" >"$T/direct.json"; drc=$?
[ $drc = 1 ] && [ -s "$GOOD" ] && ok || bad "diagnose --events-out of $LOG: exit $drc"
WANT=$(primary "$T/direct.json")
run_merge good "$GOOD"
want_rc 1 "a good events file merges" good
[ ! -s "$T/good.err" ] && ok || bad "a good events file merges without a word on stderr: $(head -c 300 "$T/good.err")"
same_answer "example log" "$T/direct.json" "$T/good.json" "$GOOD"
# ... through a pipe the user names, too
timeout 60 "$DDX" merge --format json <(cat "$GOOD") >"$T/pipe.json" 2>"$T/pipe.err"; rc=$?
[ $rc = 1 ] && [ "$(primary "$T/pipe.json")" = "$WANT" ] && ok || bad "an events file through a pipe: exit $rc $(head -c 300 "$T/pipe.err")"

# srun -l over torchrun: the line's prefix dialects decide what its numbers
# mean (a task id, not a rank), so the events keep them
python3 tests/gen/genlog.py --seed 117 --dialect srun --kind oom --table on --world-size 32 -o "$T/srun.log" >/dev/null
"$DDX" diagnose --format json --events-out "$T/srun.events" "$T/srun.log" >"$T/srun-direct.json"
run_merge srun "$T/srun.events"
same_answer "srun log (prefix dialects kept)" "$T/srun-direct.json" "$T/srun.json" "$T/srun.events"
# a log whose bytes are not UTF-8 (a Latin-1 path in a traceback): written
# repaired (U+FFFD), never dropped or refused
printf 'Traceback (most recent call last):\n  File "/home/caf\xe9/train.py", line 9, in <module>\ntorch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity of 79.15 GiB of which 1.06 GiB is free.\n' >"$T/latin1.log"
"$DDX" diagnose --format json --events-out "$T/latin1.events" "$T/latin1.log" >"$T/latin1-direct.json" 2>"$T/latin1-w.err"; rc=$?
[ $rc = 1 ] && ok || bad "--events-out of a Latin-1 log: exit $rc $(head -c 300 "$T/latin1-w.err")"
run_merge latin1 "$T/latin1.events"
same_answer "Latin-1 log" "$T/latin1-direct.json" "$T/latin1.json" "$T/latin1.events"

# --- the file is not an events file at all: refused, exit 2, named
run_merge log "$LOG"
want_rc 2 "a log passed to merge" log
has "$T/log.err" "$LOG:1: not a ddx events file" "a log passed to merge is named"
printf '{"level":"info","msg":"step 1 loss 0.5"}\n' >"$T/jsonl.events"
run_merge jsonl "$T/jsonl.events"
want_rc 2 "a JSON-lines log passed to merge" jsonl
has "$T/jsonl.err" "jsonl.events:1: not a ddx events file" "a JSON-lines log is not an events file"
: >"$T/empty.events"
run_merge empty "$T/empty.events"
want_rc 2 "an empty file" empty
has "$T/empty.err" "empty.events: empty; not a ddx events file" "an empty file"
corrupt version 'H["ddx_events"] = 2'
run_merge version "$T/version.events"
want_rc 2 "another format version" version
has "$T/version.err" "version.events:1: events format version 2; this ddx reads version 1" "another version"
# not a regular file: a device would be read forever, a folder is not a file
run_merge dev /dev/zero
want_rc 2 "a device named as events file" dev
has "$T/dev.err" "/dev/zero: a character device" "a device is refused"
mkdir -p "$T/dir.events"
run_merge dir "$T/dir.events"
want_rc 2 "a folder named as events file" dir
has "$T/dir.err" "a folder, not a regular file" "a folder is refused"
# larger than the events-file cap (a sparse file: no disk used)
truncate -s 300M "$T/huge.events"
run_merge huge "$T/huge.events"
want_rc 2 "a 300 MiB file" huge
has "$T/huge.err" "larger than the 256 MiB limit" "the size cap"

# --- format damage after the header: refused, exit 2, file:line named
corrupt cut 'NO_NL = True; raw[len(E)] = json.dumps(E[-1])[:40]; LN = len(E) + 1'
run_merge cut "$T/cut.events"
want_rc 2 "a truncated last line" cut
has "$T/cut.err" "cut.events:$(line_of cut): the last line is cut short" "a truncated last line"
corrupt nan 'i = sig(); raw[i + 1] = json.dumps(E[i]).replace("\"l\": ", "\"l\": NaN, \"q\": "); LN = i + 2'
run_merge nan "$T/nan.events"
want_rc 2 "NaN in an event line" nan
has "$T/nan.err" "nan.events:$(line_of nan): not a JSON object" "NaN is not JSON"
corrupt toolong 'i = sig(); E[i]["t"] = "x" * (2 << 20); LN = i + 2'
run_merge toolong "$T/toolong.events"
want_rc 2 "a 2 MiB event line" toolong
has "$T/toolong.err" "toolong.events:$(line_of toolong): line longer than 1024 KiB" "an over-long line"
# the header's inputs are what the events point into: damage there refuses the file
corrupt inbytes 'H["inputs"][0]["bytes"] = -100'
run_merge inbytes "$T/inbytes.events"
want_rc 2 "an input of -100 bytes" inbytes
has "$T/inbytes.err" "inbytes.events:1: input 0: bytes -100 out of range (0 to 9007199254740992)" "negative input bytes"
corrupt inlines 'H["inputs"][0]["lines"] = 10**12'
run_merge inlines "$T/inlines.events"
want_rc 2 "an input of more lines than bytes" inlines
has "$T/inlines.err" "inlines.events:1: input 0: lines 1000000000000 out of range" "input lines past its bytes"
corrupt intype 'H["inputs"] = "examples/zero3-oom-8gpu.log"'
run_merge intype "$T/intype.events"
want_rc 2 "inputs of the wrong JSON type" intype
has "$T/intype.err" "intype.events:1: the header's \"inputs\" is a string, not an array" "inputs not an array"
corrupt inname 'H["inputs"][0]["name"] = "a\u001b[31mred"'
run_merge inname "$T/inname.events"
want_rc 2 "an input name with an escape sequence" inname
has "$T/inname.err" "inname.events:1: input 0: name holds a control character" "control characters in a name"

# --- a bad value in one event: that event is skipped with a warning, the
# rest still diagnosed (exit 1, the same primary); one case per class
# event NAME SNIPPET MESSAGE: corrupt, merge, check the warning and the answer
event() {
  corrupt "$1" "$2"
  run_merge "$1" "$T/$1.events"
  want_rc 1 "$1: a damaged event is skipped, the rest diagnosed" "$1"
  has "$T/$1.err" "ddx: warning: $T/$1.events:$(line_of "$1"): $3" "$1"
  [ "$(primary "$T/$1.json")" = "$WANT" ] && ok || bad "$1: primary $(primary "$T/$1.json"), wanted $WANT"
  no_sanitizer "$1"
}
event rank_neg 'i = sig(); E[i]["m"][0] = -5; LN = i + 2' "rank -5 out of range (-1 to 999999999); event skipped"
event rank_int32 'i = sig(); E[i]["m"][0] = 2147483647; LN = i + 2' "rank 2147483647 out of range"
event rank_uint32 'i = sig(); E[i]["m"][0] = 2**32 + 3; LN = i + 2' "rank 4294967299 out of range"
event local_rank 'i = sig(); E[i]["m"][1] = -7; LN = i + 2' "local rank -7 out of range"
event input_idx 'i = sig(); E[i]["i"] = 7; LN = i + 2' "input 7 out of range (0 to 0); event skipped"
event line_neg 'i = sig(); E[i]["l"] = -3; LN = i + 2' "line -3 out of range (1 to 89)"
event line_past 'i = sig(); E[i]["l"] = 2**62; LN = i + 2' "line 4611686018427387904 out of range (1 to 89)"
event offset 'i = sig(); E[i]["o"] = 10**9; LN = i + 2' "offset 1000000000 out of range"
event column 'i = sig(); E[i]["c"] = -2; LN = i + 2' "column -2 out of range (1 to 4097)"
event line_string 'i = sig(); E[i]["l"] = "12"; LN = i + 2' "line is a string, not an integer"
event line_real 'i = sig(); E[i]["l"] = 12.5; LN = i + 2' "line is a real number, not an integer"
event pattern_real 'i = sig(); E[i]["p"] = 1e10; LN = i + 2' "pattern is a real number, not an integer"
event ctx_flag 'i = sig(); E[i]["x"] = "no"; LN = i + 2' "x is a string, not a boolean"
event time 'i = sig(); E[i]["m"][3] = -2**63 + 1; LN = i + 2' "time -9223372036854775807 out of range"
event stream 'i = sig(); E[i]["m"][5] = 300; LN = i + 2' "stream 300 out of range (0 to 2)"
event meta_arity 'i = sig(); E[i]["m"] = E[i]["m"][:3]; LN = i + 2' "meta has 3 fields, not 7 or 8"
event host_long 'i = sig(); E[i]["m"][2] = "h" * 300; LN = i + 2' "host too long (300 bytes, at most 63)"
event host_srun 'i = sig(); E[i]["m"][2] = "srun-task-99999999999999999999"; LN = i + 2' 'host "srun-task-99999999999999999999" is not srun-task-<node>; event skipped'
event text_long 'i = sig(); E[i]["t"] = "x" * 500000; LN = i + 2' "text too long (500000 bytes, at most 3072)"
event fact_type 'i = sig(); E[i]["f"]["step"] = 12; LN = i + 2' "fact step is an integer, not a string"
event fact_long 'i = sig(); E[i]["f"]["step"] = "9" * 5000; LN = i + 2' "fact step too long (5000 bytes, at most 768)"
event no_rule 'i = sig(); del E[i]["r"]; LN = i + 2' "rule missing; event skipped"
event frame_rank 'i = frame(); E[i]["F"][2] = 2147483647; LN = i + 2' "rank 2147483647 out of range (-1 to 999999999); frame skipped"
event frame_input 'i = frame(); E[i]["F"][0] = 99; LN = i + 2' "input 99 out of range (0 to 0); frame skipped"
event frame_lineno 'i = frame(); E[i]["F"][6] = -1; LN = i + 2' "source line -1 out of range (0 to 999999999); frame skipped"
event frame_shape 'i = frame(); E[i]["F"] = {"input": 0}; LN = i + 2' "frame is an object, not [input"

# --- a bad value in the header's layout, counts or progress: that item is skipped
event count_neg 'H["counts"]["train.hang"] = -5' "count of train.hang -5 out of range (0 to 9007199254740992); count skipped"
event count_huge 'H["counts"]["train.hang"] = 2**63 - 1' "count of train.hang 9223372036854775807 out of range"
event world 'H["layout"]["world_size"] = 2**31 - 1' "layout.world_size 2147483647 out of range (-1 to 1000000000); layout field skipped"
event host_base 'H["layout"]["hosts"] = [["node-1", 2147483000, 8]]' "layout host base 2147483000 out of range"
event host_sum 'H["layout"]["hosts"] = [["node-1", 999999990, 100]]' "layout host node-1: base 999999990 + nlocal 100 past rank 999999999"
event pid 'H["layout"]["pids"] = [[-4, 0, "node-1"]]' "layout pid -4 out of range"
event progress_line 'H["progress"]["train.hang"] = [[3, 0, -1, 0]]' "progress line 0 out of range (1 to 89); progress row skipped"
event progress_input 'H["progress"]["train.hang"] = [[3, 5, -1, 42]]' "progress input 42 out of range (0 to 0)"
event progress_rank 'H["progress"]["train.hang"] = [[2**40, 5, -1, 0]]' "progress rank 1099511627776 out of range (0 to 1048575)"

# many damaged events: the first few named, then how many in all
corrupt many 'import itertools
for e in itertools.islice((e for e in E if "m" in e), 8): e["m"][0] = -9'
run_merge many "$T/many.events"
want_rc 1 "eight damaged events" many
[ "$(grep -c 'rank -9 out of range' "$T/many.err")" = 5 ] && ok || bad "many: not the first five named: $(cat "$T/many.err")"
has "$T/many.err" "many.events: 8 damaged items skipped in all (the first 5 named above)" "many: the count"

# --- catalog drift: rules or patterns this catalog lacks are skipped with a note
event_drift() { # NAME SNIPPET MESSAGE
  corrupt "$1" "$2"
  run_merge "$1" "$T/$1.events"
  want_rc 1 "$1: drift is skipped, the rest diagnosed" "$1"
  has "$T/$1.err" "ddx: note: $T/$1.events: 1 item of rules or patterns this catalog does not have skipped (first at line $(line_of "$1"): $3" "$1"
  [ "$(primary "$T/$1.json")" = "$WANT" ] && ok || bad "$1: primary $(primary "$T/$1.json")"
}
event_drift rule_unknown 'i = sig(); E[i]["r"] = "no.such.rule"; LN = i + 2' 'a hit of rule "no.such.rule"'
event_drift pattern_past 'i = sig(); E[i]["p"] = 99; LN = i + 2' 'signature 99 of rule "train.hang"'
event_drift count_unknown 'H["counts"]["no.such.rule"] = 3' 'a count of rule "no.such.rule"'

# --- event files concatenated with cat: each header starts its own inputs
python3 - "$T" <<'PY'
import collections, re, sys
t = sys.argv[1]
per = collections.defaultdict(list)
import subprocess
subprocess.run([sys.executable, "tests/gen/genlog.py", "--seed", "11", "--dialect", "pdsh", "--kind", "host-oom",
                "--world-size", "16", "--table", "on", "-o", t + "/full.log"], check=True, stdout=subprocess.DEVNULL)
for l in open(t + "/full.log", newline="").read().splitlines(keepends=True):
    m = re.match(r"([\w.-]+): ", l)
    per[m.group(1) if m else "launcher"].append(l)
for k, v in per.items():
    open(f"{t}/node-{k}.log", "w", newline="").write("".join(v))
PY
for f in "$T"/node-*.log; do "$DDX" diagnose --events-out "${f%.log}.events" "$f" >/dev/null; done
cat "$T"/node-*.events >"$T/all.events"
run_merge apart "$T"/node-*.events
run_merge concat "$T/all.events"
python3 - "$T/apart.json" "$T/concat.json" "$T/all.events" "$T" <<'PY' && ok || bad "concatenated events files merge like the files apart"
import json, sys
a, b = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))
assert len(b["inputs"]) == len(a["inputs"]) > 1, (len(a["inputs"]), len(b["inputs"]))
ia, ib = a["incidents"][0], b["incidents"][0]
assert (ia["rule"], ia["rank"], ia["line"]) == (ib["rule"], ib["rank"], ib["line"]), (ia["rule"], ia["rank"], ib["rule"], ib["rank"])
assert ib["file"].startswith(sys.argv[3] + ": ") and ib["file"].split(": ", 1)[1] == ia["file"].split(": ", 1)[1]
PY

# --- a spawn log split in two: the layout's processes per node (mp.spawn's
# nprocs=8) and srun's highest task id travel in the events file, so the
# merged halves place the cause on the rank the whole log gives (without
# them the halves know no node size and leave the rank unknown)
python3 tests/gen/genlog.py --seed 1 --spawn on --prefix bare --kind oom --world-size 32 -o "$T/spawn.log" >/dev/null
python3 - "$T" <<'PY'
import sys
t = sys.argv[1]
L = open(t + "/spawn.log", newline="").read().splitlines(keepends=True)
open(t + "/spawn-a.log", "w", newline="").write("".join(L[:len(L) // 2]))
open(t + "/spawn-b.log", "w", newline="").write("".join(L[len(L) // 2:]))
PY
"$DDX" diagnose --format json "$T/spawn.log" >"$T/spawn-direct.json"
for x in a b; do "$DDX" diagnose --events-out "$T/spawn-$x.events" "$T/spawn-$x.log" >/dev/null; done
run_merge spawn "$T/spawn-a.events" "$T/spawn-b.events"
want_rc 1 "a spawn log's halves merge" spawn
python3 - "$T/spawn-direct.json" "$T/spawn.json" "$T/spawn-a.events" <<'PY' && ok || bad "a spawn log split in two merges to the whole log's rank"
import json, sys
a, b = json.load(open(sys.argv[1]))["incidents"][0], json.load(open(sys.argv[2]))["incidents"][0]
lay = json.loads(open(sys.argv[3]).readline())["layout"]
assert lay.get("nprocs") == 8 and "srun_max_task" in lay, lay
assert a["rank"] is not None, a
assert (a["rule"], a["rank"], a["local_rank"]) == (b["rule"], b["rank"], b["local_rank"]), (a["rank"], b["rank"])
PY
# an events file written before these fields (no nprocs, no srun_max_task) is still read, without a warning
for x in a b; do
  python3 - "$T/spawn-$x.events" "$T/spawn-old-$x.events" <<'PY'
import json, sys
R = open(sys.argv[1]).read().split("\n")
H = json.loads(R[0])
del H["layout"]["nprocs"], H["layout"]["srun_max_task"]
R[0] = json.dumps(H)
open(sys.argv[2], "w").write("\n".join(R))
PY
done
run_merge spawn-old "$T/spawn-old-a.events" "$T/spawn-old-b.events"
want_rc 1 "older events files (no nprocs, srun_max_task) merge" spawn-old
if grep -qE 'nprocs|srun_max_task' "$T/spawn-old.err"; then bad "an older events file warns: $(head -c 300 "$T/spawn-old.err")"; else ok; fi

finish
