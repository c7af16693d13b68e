#!/usr/bin/env bash
# CLI contract tests: the real ddx binary over real pipes and files.
# usage: test_cli.sh path/to/ddx   (run from the repository root)
. "$(dirname "$0")/lib.sh" "$@"
expect_rc() { # expect_rc WANT DESC CMD...
  local want=$1 desc=$2; shift 2
  "$@" >"$T/out" 2>"$T/err"; local rc=$?
  if [ "$rc" = "$want" ]; then ok; else bad "$desc: exit $rc, wanted $want; stderr: $(head -c 400 "$T/err")"; fi
}
contains() { # contains FILE TEXT DESC
  if grep -qF -- "$2" "$1"; then ok; else bad "$3: '$2' not in $(head -c 600 "$1")"; fi
}
jq_py() { python3 -c "import json,sys; d=json.load(open(sys.argv[1])); $2" "$1"; }
diag_json() { # diag_json LOG CHECK: jq_py CHECK on LOG's JSON diagnosis (its exit status in rc)
  local out
  out="$T/$(basename "${1%.log}").json"
  "$DDX" diagnose --format json "$1" >"$out"; rc=$?
  jq_py "$out" "$2"
}

OOM='[rank3]: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 3 has a total capacity of 79.15 GiB of which 1.06 GiB is free. Including non-PyTorch memory, this process has 78.07 GiB memory in use. Of the allocated memory 74.52 GiB is allocated by PyTorch, and 2.94 GiB is reserved by PyTorch but unallocated.'

# --- exit codes and inputs
printf 'epoch 1 loss 0.5\nall good\n' >"$T/healthy.log"
expect_rc 0 "healthy log exits 0" "$DDX" diagnose "$T/healthy.log"
contains "$T/out" "no known failure" "healthy log says so"
printf 'step 1\n%s\n' "$OOM" >"$T/oom.log"
expect_rc 1 "failure exits 1" "$DDX" diagnose "$T/oom.log"
# --- how far off an OOM was: tried - free, on its rank; fragmentation when the
# reserved-but-unallocated memory alone covered the request
expect_rc 1 "the OOM log again, for its margin" "$DDX" diagnose --no-color "$T/oom.log"
contains "$T/out" "memory    962.56 MiB short on rank 3: it asked for 2.00 GiB with 1.06 GiB free of 79.15 GiB; 2.94 GiB sat reserved" "the text report says how far off the OOM was"
diag_json "$T/oom.log" 'm=d["incidents"][0]["memory"]; assert abs(m["short_by"]-0.94*2**30) < 0.01*2**30 and m["tried"]==2*2**30, m' \
  && ok || bad "JSON memory.short_by is tried - free"
printf 'step 1\ntorch.OutOfMemoryError: CUDA out of memory.\n' >"$T/oom-bare.log"
diag_json "$T/oom-bare.log" 'assert d["incidents"] and "memory" not in d["incidents"][0], d["incidents"][:1]' \
  && ok || bad "an OOM line without sizes has no memory margin (never a made-up number)"
expect_rc 2 "missing file exits 2" "$DDX" diagnose "$T/nope.log"
contains "$T/err" "nope.log" "missing file is named"
expect_rc 2 "no input exits 2" "$DDX" diagnose
expect_rc 2 "bad format exits 2" "$DDX" diagnose --format xml "$T/oom.log"
expect_rc 2 "unknown command exits 2" "$DDX" frobnicate
printf '%s\n' "$OOM" | "$DDX" diagnose --format json - >"$T/stdin.json"; rc=$?
[ $rc = 1 ] && ok || bad "stdin diagnosis exit $rc"
jq_py "$T/stdin.json" 'assert d["inputs"][0]["name"]=="<stdin>"' && ok || bad "stdin input is named <stdin>"

# --- the JSON contract
"$DDX" diagnose --format json "$T/healthy.log" "$T/oom.log" >"$T/oom.json"
jq_py "$T/oom.json" '
assert d["version"] == 1
assert [i["name"].rsplit("/",1)[-1] for i in d["inputs"]] == ["healthy.log", "oom.log"]
inc = d["incidents"][0]
for k in ("rule","title","severity","role","rank","host","file","line","column","text","facts","confidence","collateral","fix","verify","missing","patches"):
    assert k in inc, k
assert inc["line"] == 2 and inc["rank"] == 3 and inc["severity"] == "error"
assert inc["file"].endswith("oom.log")
assert inc["facts"]["tried"] == "2.00 GiB" and inc["facts"]["unallocated"] == "2.94 GiB"
assert 0 < inc["confidence"] <= 1
assert d["stats"]["lines"] == 4 and d["stats"]["bytes"] > 0
' && ok || bad "JSON contract"

# --- line numbers count \n, \r\n and bare \r (tqdm) like LSP does
printf 'a\r\nb\rprogress 10%%\rprogress 20%%\n%s\n' "$OOM" >"$T/cr.log"
diag_json "$T/cr.log" 'assert d["incidents"][0]["line"] == 5, d["incidents"][0]["line"]' && ok || bad "bare CR counts as a line end"
# text glued after a progress bar on the same segment still scans
printf ' 45%%|####      | 9/20 [00:10<00:12]%s\n' "$OOM" >"$T/glued.log"
expect_rc 1 "error glued onto a tqdm bar is found" "$DDX" diagnose "$T/glued.log"

# --- folders: torchrun --log-dir layout gives each file's local rank
mkdir -p "$T/run/attempt_0/0" "$T/run/attempt_0/1" "$T/run/attempt_0/2" "$T/run/attempt_0/3"
for r in 0 1 3; do
  printf '[E ProcessGroupNCCL.cpp:737] [Rank %s] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=9, OpType=ALLREDUCE, Timeout(ms)=600000) ran for 600068 milliseconds before timing out.\n' $r >"$T/run/attempt_0/$r/stderr.log"
done
printf 'Traceback (most recent call last):\n  File "train.py", line 9, in <module>\ntorch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU  has a total capacity of 79.15 GiB of which 1.06 GiB is free.\n' >"$T/run/attempt_0/2/stderr.log"
printf 'ignored\n' >"$T/run/notes.md"
diag_json "$T/run" '
assert len(d["inputs"]) == 4, d["inputs"]
inc = d["incidents"][0]
assert inc["rule"] == "torch.oom.generic" and inc["rank"] == 2, (inc["rule"], inc["rank"])
assert inc["file"].endswith("attempt_0/2/stderr.log")
assert inc["collateral"][0]["ranks"] == [0, 1, 3]
' && ok || bad "torchrun --log-dir folder"
expect_rc 2 "a missing folder exits 2" "$DDX" diagnose "$T/no-such-dir"

# --- events and merge: each node's ddx writes compact events, merge diagnoses the job
python3 tests/gen/genlog.py --seed 11 --dialect pdsh --kind host-oom --world-size 64 --table on -o "$T/full.log" >/dev/null
python3 - "$T" <<'PY'
import collections, re, sys
t = sys.argv[1]
per = collections.defaultdict(list)
for l in open(t + "/full.log", newline="").read().splitlines(keepends=True):
    m = re.match(r"([\w.-]+): ", l)
    per[m.group(1) if m else "launcher"].append(l)
for h, ls in per.items():
    open(f"{t}/node-{h}.log", "w", newline="").write("".join(ls))
PY
for f in "$T"/node-*.log; do "$DDX" diagnose --events-out "${f%.log}.events" "$f" >/dev/null; done
"$DDX" merge --format json "$T"/node-*.events >"$T/merged.json"
want=$(python3 -c "import json,sys; print(json.load(open(sys.argv[1]))['initiating_rank'])" "$T/full.json")
jq_py "$T/merged.json" "
inc = d['incidents'][0]
assert inc['rule'] == 'host.oom-killer' and inc['rank'] == $want, (inc['rule'], inc['rank'])
assert len(d['inputs']) >= 8
" && ok || bad "merge of per-node events finds the initiating rank"
printf 'not json\n' >"$T/bad.events"
expect_rc 2 "merge refuses a file that is not an event file" "$DDX" merge "$T/bad.events"
contains "$T/err" "bad.events:1" "the bad event file is named with its line"

# --- the summary line reads like a person's: a catch-all names the exception itself
printf '[rank2]: Traceback (most recent call last):\n[rank2]:   File "/w/data.py", line 12, in collate\n[rank2]: KeyError: %s\n' "'attention_mask'" >"$T/keyerr.log"
"$DDX" diagnose --no-color "$T/keyerr.log" >"$T/out"
head -1 "$T/out" | grep -qF "Rank 2: KeyError: 'attention_mask', at" && ok || bad "summary line: $(head -1 "$T/out")"

# --- SARIF
"$DDX" diagnose --format sarif "$T/oom.log" >"$T/oom.sarif"
jq_py "$T/oom.sarif" '
assert d["version"] == "2.1.0"
run = d["runs"][0]
assert run["tool"]["driver"]["name"] == "ddx"
ids = [r["id"] for r in run["tool"]["driver"]["rules"]]
res = run["results"][0]
assert res["ruleId"] in ids and res["level"] == "error"
assert res["locations"][0]["physicalLocation"]["region"]["startLine"] == 2
' && ok || bad "SARIF shape"

# --- evidence is redacted
printf '10.1.2.3: [rank3]: File "/home/alice/proj/train.py", line 3\n10.1.2.3: %s\n' "$OOM" >"$T/ev.log"
"$DDX" diagnose --evidence "$T/ev.log" >"$T/ev.txt"
if grep -q -e alice -e 10.1.2.3 "$T/ev.txt"; then bad "evidence leaks user or IP: $(cat "$T/ev.txt")"; else ok; fi
contains "$T/ev.txt" "torch.oom.generic" "evidence names the rule"

# --- explain
expect_rc 0 "explain a known id" "$DDX" explain torch.oom.generic
contains "$T/out" "Mechanism" "explain prints the mechanism"
expect_rc 2 "explain an unknown id" "$DDX" explain no.such-id
expect_rc 0 "explain --json" "$DDX" explain --json torch.oom.generic
jq_py "$T/out" 'assert d["id"]=="torch.oom.generic" and "samples" not in d' && ok || bad "explain --json is the entry"

# --- rule loader errors name file and JSON path; the CLI exits 2
good_rule() { # good_rule ID REGEX
  cat <<JSON
{"id": "$1", "title": "t", "phase": "step", "severity": "error", "role": "cause", "priority": 50,
 "signatures": [{"regex": "$2", "literals": ["boom"]}],
 "summary": "s", "mechanism": "m", "fix": ["f"],
 "samples": {"positive": [{"text": "boom here"}], "negative": [{"text": "quiet"}]}}
JSON
}
mkdir -p "$T/r1" && good_rule test.ok 'boom' >"$T/r1/test.ok.json"
expect_rc 0 "a good user rule passes rules check" "$DDX" rules check "$T/r1"
# twenty short literals on twenty distinct byte pairs: the SIMD short pass cannot take them
mkdir -p "$T/rs" && cat >"$T/rs/test.short.json" <<'JSON'
{"id": "test.short", "title": "t", "phase": "step", "severity": "error", "role": "cause", "priority": 50,
 "signatures": [{"regex": "(?:qa|qb|qc|qd|qe|qf|qg|qh|qi|qj|qk|ql|qm|qn|qo|qp|qq|qr|qs|qt)!", "literals": ["qa!", "qb!", "qc!", "qd!", "qe!", "qf!", "qg!", "qh!", "qi!", "qj!", "qk!", "ql!", "qm!", "qn!", "qo!", "qp!", "qq!", "qr!", "qs!", "qt!"]}],
 "summary": "s", "mechanism": "m", "fix": ["f"],
 "samples": {"positive": [{"text": "boom qa! here"}, {"text": "qt!"}], "negative": [{"text": "quiet"}]}}
JSON
expect_rc 0 "many short literals still check" "$DDX" rules check "$T/rs"
contains "$T/out" "distinct byte pairs" "rules check warns when short literals need more pairs than the SIMD pass takes"
printf 'line one\nstep 2 then qt! failed\n' >"$T/short.log"
expect_rc 1 "many short literals still match (scalar short pass)" "$DDX" diagnose --rules "$T/rs" "$T/short.log"
contains "$T/out" "test.short" "the short literal's rule is the diagnosis"
mkdir -p "$T/r2" && printf '{"id": "x.y", ' >"$T/r2/bad.json"
expect_rc 2 "invalid JSON" "$DDX" rules check "$T/r2"
contains "$T/err" "bad.json:1" "invalid JSON names file and line"
mkdir -p "$T/r3" && good_rule test.badre 'boom(' >"$T/r3/badre.json"
expect_rc 2 "regex that does not compile" "$DDX" rules check "$T/r3"
contains "$T/err" '$.signatures[0].regex' "bad regex names its JSON path"
contains "$T/err" "test.badre" "bad regex names its rule"
mkdir -p "$T/r4" && good_rule test.unk 'boom' | sed 's/"priority": 50,/"priority": 50, "colour": "red",/' >"$T/r4/unk.json"
expect_rc 2 "unknown field" "$DDX" rules check "$T/r4"
contains "$T/err" '$.colour' "unknown field is named"
mkdir -p "$T/r5" && good_rule test.type 'boom' | sed 's/"priority": 50/"priority": "high"/' >"$T/r5/type.json"
expect_rc 2 "wrong type" "$DDX" rules check "$T/r5"
contains "$T/err" '$.priority: expected an integer' "wrong type is named"
mkdir -p "$T/r6" && good_rule test.neg 'boom|quiet' | sed 's/"literals": \["boom"\]/"literals": ["boom", "quiet"]/' >"$T/r6/neg.json"
expect_rc 1 "a negative sample that matches fails rules check" "$DDX" rules check "$T/r6"
contains "$T/out" 'samples.negative[0]' "failing sample is named"
expect_rc 2 "diagnose with a broken catalog exits 2" "$DDX" diagnose --rules "$T/r3" "$T/oom.log"
# a required clue is a gate matched on the kept lines: it takes no literals
mkdir -p "$T/rgate" && good_rule test.gate 'boom' \
  | sed 's/"summary": "s",/"clues": [{"id": "g", "why": "w", "weight": 0.1, "required": true, "regex": "gpu", "literals": ["gpu"]}], "summary": "s",/' >"$T/rgate/gate.json"
expect_rc 2 "a required clue with literals is refused" "$DDX" rules check "$T/rgate"
contains "$T/err" '$.clues[0].required' "the refusal names the required clue's field"
# a CPU-only (gloo) cut traceback inside a collective is offered no NCCL class;
# the same traceback with an NCCL line above it is
printf '%s\n' 'Traceback (most recent call last):' \
  '  File "/srv/train.py", line 40, in <module>' '    dist.all_reduce(t)' \
  '  File "/usr/lib/python3/dist-packages/torch/distributed/distributed_c10d.py", line 1541, in all_reduce' \
  '    work.wait()' >"$T/gloo-cut.log"
diag_json "$T/gloo-cut.log" '
c = [x["rule"] for x in d["differential"]]
assert not [r for r in c if r.startswith(("nccl.", "cuda.", "torch.oom", "ds.oom"))], c
' && ok || bad "a CPU-only cut traceback in a collective gets no NCCL or GPU candidate"
{ printf 'NCCL INFO Bootstrap : Using eth0:10.0.0.1<0>\n'; cat "$T/gloo-cut.log"; } >"$T/nccl-cut.log"
diag_json "$T/nccl-cut.log" '
c = [x["rule"] for x in d["differential"]]
assert any(r.startswith("nccl.") for r in c), c
' && ok || bad "the same traceback after an NCCL line gets NCCL candidates"
# user rules extend the catalog
printf 'boom here\n' >"$T/boom.log"
"$DDX" diagnose --rules rules --rules "$T/r1" --format json "$T/boom.log" >"$T/boom.json"
jq_py "$T/boom.json" 'assert d["incidents"][0]["rule"]=="test.ok"' && ok || bad "user rule folder is loaded"

# a catastrophic user regex is stopped by the match limit and reported
mkdir -p "$T/r7" && good_rule test.evil '^(a|aa)+$' | sed 's/"literals": \["boom"\]/"literals": ["aaaa"]/' >"$T/r7/evil.json"
python3 -c "print('a'*5000+'b')" >"$T/evil.log"
timeout 20 "$DDX" diagnose --rules "$T/r7" "$T/evil.log" >"$T/out" 2>"$T/err"; rc=$?
[ $rc = 0 ] && ok || bad "catastrophic regex: exit $rc"
contains "$T/err" "test.evil" "match-limit warning names the rule"

# The differential on a paste cut before its error line (a real log of
# the corpus): an inferred class with its phase, the candidates for and
# against, what would tell them apart, exit 1; the text says so too.
CUT="$ROOT/tests/corpus/dev/081-ds-zero3-fetch-sub-module-oom-a10-rank0.log"
diag_json "$CUT" '
i = d["incidents"][0]
assert i["inferred"] is True and i["rank"] == 0, i
assert i["lifecycle"]["phase"] == "zero3-gather", i["lifecycle"]
assert i["library_frame"]["function"] == "pre_sub_module_forward_function", i["library_frame"]
c = d["differential"]
assert c[0]["rule"] == i["rule"] and len(c) >= 2 and not c[0]["decisive"], c
assert all(0 <= x["score"] <= 1 for x in c) and sum(x["score"] for x in c) <= 1.0001
assert c[0]["for"] and c[0]["against"], c[0]
assert d["separator"] and "ds.zero3.internal-assert" in d["separator"], d["separator"]
assert any(e["source"] == "prefix" and e["rank"] == 0 for e in i["rank_evidence"]), i["rank_evidence"]
' && ok || bad "cut traceback: inferred class, phase, differential, separator, rank evidence"
[ "$rc" = 1 ] && ok || bad "a cut traceback is an error: exit 1 (got $rc)"
"$DDX" diagnose "$CUT" >"$T/cut.txt"
# (the log never names the GPU, so the OOM classes are no candidates: the
# ZeRO-3 bookkeeping assertion leads, a config error is also possible)
grep -q "error line is cut; most likely" "$T/cut.txt" && grep -q "also possible ds.config.hf-auto" "$T/cut.txt" \
  && grep -q "tell apart" "$T/cut.txt" && ok || bad "cut traceback: the text report says it is inferred and what else is possible"
# Weak generic evidence takes the class the rest of the text points at:
# `terminate called` under the NCCL watchdog's C++ frames (checkTimeout) is
# a watchdog timeout, inferred; the terminate line alone stays generic and
# lists the CUDA errors an uncaught c10::Error usually is.
WD="$T/wd.log"
printf '%s\n' \
  'frame #1: c10d::ProcessGroupNCCL::WorkNCCL::checkTimeout(std::optional<std::chrono::duration<long, std::ratio<1l, 1000l> > >) + 0x1e1 (0x7fe705ea04e1 in /usr/local/lib/python3.10/dist-packages/torch/lib/libtorch_cuda.so)' \
  'frame #2: c10d::ProcessGroupNCCL::watchdogHandler() + 0x222 (0x7fe705ea81a2 in /usr/local/lib/python3.10/dist-packages/torch/lib/libtorch_cuda.so)' \
  'frame #3: c10d::ProcessGroupNCCL::ncclCommWatchdog() + 0x10f (0x7fe705ea9a0f in /usr/local/lib/python3.10/dist-packages/torch/lib/libtorch_cuda.so)' \
  '' "terminate called after throwing an instance of 'c10::DistBackendError'" >"$WD"
diag_json "$WD" '
i = d["incidents"][0]
assert i["rule"] == "nccl.watchdog-timeout" and i["inferred"] is True, i
assert d["differential"][0]["rule"] == "nccl.watchdog-timeout", d["differential"]
assert any("checkTimeout" in w for w in d["differential"][0]["for"]), d["differential"][0]
' && [ "$rc" = 1 ] && ok || bad "terminate called under the watchdog's frames: an inferred watchdog timeout (rc $rc)"
printf '%s\n' "terminate called after throwing an instance of 'c10::Error'" >"$T/term.log"
diag_json "$T/term.log" '
i = d["incidents"][0]
assert i["rule"] == "log.error-line" and not i.get("inferred"), i
assert "cuda.illegal-access" in [c["rule"] for c in d["differential"]], d["differential"]
' && ok || bad "a terminate line alone: generic, with the CUDA errors it usually is in the differential"
# A clue placed by the frames: an import statement as the innermost
# frame's source line of a cut traceback means importing failed; the same
# line elsewhere in the text does not count.
printf '%s\n' 'Traceback (most recent call last):' \
  '  File "/opt/fairseq/fairseq/data/data_utils.py", line 219, in batch_by_size' \
  '    from fairseq.data.data_utils_fast import batch_by_size_fast' >"$T/imp.log"
diag_json "$T/imp.log" '
i = d["incidents"][0]
assert i["rule"] == "env.missing-module" and i["inferred"] is True, i
' && ok || bad "a cut traceback whose innermost source line imports: env.missing-module, inferred"
printf '%s\n' '    from fairseq.data.data_utils_fast import batch_by_size_fast' 'Traceback (most recent call last):' \
  '  File "/opt/fairseq/fairseq/data/data_utils.py", line 219, in batch_by_size' \
  '    lengths = sorted(lengths)' >"$T/imp2.log"
diag_json "$T/imp2.log" '
i = d["incidents"][0]
assert i["rule"] == "py.traceback-cut", i
assert "env.missing-module" not in [c["rule"] for c in d["differential"] or []], d["differential"]
' && ok || bad "an import line away from the innermost frame is no clue"
# Pastes cut at both ends: frames without their "Traceback" line are still a
# traceback (here one frame, a [rank5]: prefix and its source line); the
# source line's division by a variable makes ZeroDivisionError the answer.
printf '%s\n' '[rank5]:     self.evaluate(self.eval_dataloader, global_step)' \
  '[rank5]:   File "openrlhf/trainer/dpo_trainer.py", line 289, in evaluate' \
  '[rank5]:     "eval_loss": loss_sum / times,' >"$T/headless.log"
diag_json "$T/headless.log" '
i = d["incidents"][0]
assert i["rule"] == "py.zero-division" and i["inferred"] is True and i["rank"] == 5, i
assert i["library_frame"] or i["user_frame"], i
' && [ "$rc" = 1 ] && ok || bad "a headless one-frame traceback is an answer: zero-division from the division in its source line (rc $rc)"
printf '%s\n' '  File "train.py", line 12, in main' '    x = a/2' >"$T/nodiv.log"
diag_json "$T/nodiv.log" '
i = d["incidents"][0]
assert i["rule"] == "py.traceback-cut", i
assert "py.zero-division" not in [c["rule"] for c in d["differential"] or []], d["differential"]
' && ok || bad "a division by a literal (or a path) is no zero-division clue"
# rich wraps a long path onto two lines of its box (`│ /long/config.py: │`,
# then `│ 891 in _batch_assertion │`): the frame is read, and a paste cut
# before the AssertionError still names DeepSpeed's batch-size check.
head -n 16 "$ROOT/tests/corpus/dev/027-ds-batch-size-assert-rich-traceback.log" >"$T/rich-cut.log"
diag_json "$T/rich-cut.log" '
i = d["incidents"][0]
assert i["rule"] == "ds.config.batch-size" and i["inferred"] is True, i
assert i["library_frame"]["function"] == "_batch_assertion" and i["library_frame"]["line"] == 891, i["library_frame"]
' && ok || bad "a rich traceback with wrapped paths, cut before its error line: the batch-size check"
# A cut traceback at a CUDA sync point (.item(), .tolist(), a host-to-device
# tensor) lists the asynchronous CUDA errors; one at open() a missing file;
# a Python `raise` in accelerate's DeepSpeed preparation is a config error,
# not an out-of-memory error.
printf '%s\n' 'Traceback (most recent call last):' \
  '  File "/opt/conda/lib/python3.10/site-packages/apex/amp/scaler.py", line 200, in update_scale' \
  '    self._has_overflow = self._overflow_buf.item()' >"$T/sync.log"
diag_json "$T/sync.log" '
top = [c["rule"] for c in d["differential"]][:3]
assert "cuda.illegal-access" in top and "cuda.device-assert" in top, d["differential"]
' && ok || bad "a cut traceback at .item(): the asynchronous CUDA errors are in the top 3"
printf '%s\n' 'Traceback (most recent call last):' \
  '  File "/opt/fairseq/fairseq/data/dictionary.py", line 238, in add_from_file' \
  '    with open(PathManager.get_local_path(f), "r", encoding="utf-8") as fd:' >"$T/open.log"
diag_json "$T/open.log" '
i = d["incidents"][0]
assert i["rule"] == "py.file-not-found" and i["inferred"] is True, i
' && ok || bad "a cut traceback at open(): a missing file, inferred"
printf '%s\n' 'Traceback (most recent call last):' \
  '  File "/workspace/finetune.py", line 143, in main' '    model = accelerator.prepare(model)' \
  '  File "/usr/lib/python3.10/site-packages/accelerate/accelerator.py", line 1280, in prepare' \
  '    result = self._prepare_deepspeed(*args)' \
  '  File "/usr/lib/python3.10/site-packages/accelerate/accelerator.py", line 1515, in _prepare_deepspeed' \
  '    raise ValueError(' >"$T/accel.log"
diag_json "$T/accel.log" '
c = [x["rule"] for x in d["differential"]]
assert c[0] == "ds.config.hf-auto", c
' && ok || bad "a Python raise in accelerate._prepare_deepspeed: the ds_config leads, not an OOM"
# A frame line cut at its start (the paste began mid-line) is still a
# frame: Megatron's validate_args places the parallel layout; a raise whose
# message says it cannot open a file is a missing file.
printf '%s\n' 'Megatron-LM/megatron/training/arguments.py", line 561, in validate_args' \
  '[rank14]:     assert num_layers % args.transformer_pipeline_model_parallel_size == 0, \' >"$T/cutframe.log"
diag_json "$T/cutframe.log" '
i = d["incidents"][0]
assert i["rule"] == "megatron.parallel-config", i
assert i["traceback"][0]["function"] == "validate_args" and i["traceback"][0]["line"] == 561, i["traceback"]
' && ok || bad "a frame line cut at its start: Megatron's validate_args"
printf '%s\n' '[rank0]: File "/w/LLaMA-Factory/src/llamafactory/data/parser.py", line 94, in get_dataset_list' \
  '[rank0]: raise ValueError("Cannot open {} due to {}.".format(config_path, str(err)))' >"$T/cannot.log"
diag_json "$T/cannot.log" '
i = d["incidents"][0]
assert i["rule"] == "py.file-not-found" and i["rank"] == 0, i
' && ok || bad "a raise saying it cannot open a file: py.file-not-found"
# A paste hard-wrapped at 80 columns (a narrow terminal, fold, e-mail): a
# line that reaches the width goes on in the next one, and the signature's
# literal may sit on both sides of the break. The lines are joined again and
# the answer keeps the first line's number; a list after "options:" and
# repeated records of one format are not joined.
printf '%s\n' \
  '[E ProcessGroupNCCL.cpp:737] [Rank 1] Watchdog caught collective operation ' \
  'timeout: WorkNCCL(SeqNum=469508, OpType=ALLREDUCE, Timeout(ms)=1800000) ran for ' \
  '1802212 milliseconds before timing out.' \
  '[E ProcessGroupNCCL.cpp:737] [Rank 3] Watchdog caught collective operation ' \
  'timeout: WorkNCCL(SeqNum=469508, OpType=ALLREDUCE, Timeout(ms)=1800000) ran for ' \
  '1802211 milliseconds before timing out.' >"$T/wrapped.log"
diag_json "$T/wrapped.log" '
i = d["incidents"][0]
assert i["rule"] == "nccl.watchdog-timeout" and i["line"] == 1, i
assert i["facts"].get("timeout_ms") in (None, "1800000"), i["facts"]
assert sorted(i["ranks"]) == [1, 3], i["ranks"]
' && [ "$rc" = 1 ] && ok || bad "a paste hard-wrapped at 80 columns: the watchdog timeout at line 1, ranks 1 and 3 (rc $rc)"
# A terminal's wrap breaks wherever the width falls: mid-bracket, and in an
# input whose other lines (the remainders) make it look word-wrapped, a line
# of exactly the width is joined without a space ("[5," "0,0]"); or right
# before a bracket, which then starts the next line.
for i in 70 71 72 73; do
  printf '%s\n' '../aten/src/ATen/native/cuda/Indexing.cu:1236: indexSelectSmallIndex: block: [5,' \
    "0,0], thread: [$i,0,0] Assertion \`srcIndex < srcSelectDimSize\` failed."
done >"$T/assertwrap.log"
for i in 70 71 72 73; do
  printf '%s\n' '   ../aten/src/ATen/native/cuda/Indexing.cu:1236: indexSelectSmallIndex: block: ' \
    "[5,0,0], thread: [$i,0,0] Assertion \`srcIndex < srcSelectDimSize\` failed."
done >"$T/assertwrap2.log"
for f in assertwrap assertwrap2; do
  diag_json "$T/$f.log" '
i = d["incidents"][0]
assert i["rule"] == "cuda.device-assert" and i["line"] == 1, i
' && ok || bad "$f: a hard wrap inside or before a bracket: the device-side assert is read"
done
printf '%s\n' \
  'I1028 12:13:38.405081 632355 ProcessGroupNCCL.cpp:843] [Rank 0] NCCL watchdog thread started!' \
  'I1028 12:13:38.405865 632324 ProcessGroupNCCL.cpp:666] [Rank 0] ProcessGroupNCCL initialized with options:' \
  'NCCL_ASYNC_ERROR_HANDLING: 1' 'NCCL_BLOCKING_WAIT: 0' \
  'I1028 12:13:38.412765 632358 ProcessGroupNCCL.cpp:843] [Rank 1] NCCL watchdog thread started!' \
  'I1028 12:13:38.412766 632325 ProcessGroupNCCL.cpp:666] [Rank 1] ProcessGroupNCCL initialized with options:' \
  'NCCL_ASYNC_ERROR_HANDLING: 1' 'NCCL_BLOCKING_WAIT: 0' \
  '[rank0]: RuntimeError: CUDA error: an illegal memory access was encountered' >"$T/notwrapped.log"
diag_json "$T/notwrapped.log" '
i = d["incidents"][0]
assert i["rule"] == "cuda.illegal-access" and i["line"] == 9 and i["rank"] == 0, i
' && ok || bad "lines of a normal log are not joined: the error keeps its own line"
# A paste copied from an HTML page's source or an export keeps its
# entities (`File &quot;…&quot;`, `&#x27;`): its lines are matched decoded.
printf '%s\n' 'Traceback (most recent call last):' \
  '  File &quot;/opt/conda/lib/python3.10/site-packages/deepspeed/runtime/zero/stage3.py&quot;, line 101, in step' \
  '    self._optimizer_step(sub_group_id)' \
  '[rank2]: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 2 has a total capacity of 79.15 GiB of which 1.06 GiB is free. Of the allocated memory 74.52 GiB is allocated by PyTorch, and 2.94 GiB is reserved by PyTorch but unallocated. See documentation for &#x27;PYTORCH_CUDA_ALLOC_CONF&#x27;' >"$T/html.log"
diag_json "$T/html.log" '
i = d["incidents"][0]
assert "oom" in i["rule"] and i["rank"] == 2 and i["line"] == 4, i
assert i["traceback"] and i["traceback"][0]["function"] == "step", i["traceback"]
' && [ "$rc" = 1 ] && ok || bad "an HTML-escaped paste: its frames and its OOM are read decoded (rc $rc)"
# vLLM logs the KV cache's concurrency before it refuses to start: below 1x
# one request of the max length does not fit (the error line may be cut).
printf '%s\n' 'INFO 11-20 10:01:02 executor_base.py:110] # GPU blocks: 1478, # CPU blocks: 2048' \
  'INFO 11-20 10:01:02 executor_base.py:115] Maximum concurrency for 29000 tokens per request: 0.82x' >"$T/kvc.log"
diag_json "$T/kvc.log" '
i = d["incidents"][0]
assert i["rule"] == "vllm.kv-cache-memory" and i["facts"]["max_model_len"] == "29000", i
' && [ "$rc" = 1 ] && ok || bad "vLLM max concurrency below 1x: the KV cache cannot hold one request (rc $rc)"
printf '%s\n' 'INFO 11-20 10:01:02 executor_base.py:115] Maximum concurrency for 8192 tokens per request: 4.27x' >"$T/kvok.log"
expect_rc 0 "vLLM max concurrency 4.27x is healthy" "$DDX" diagnose "$T/kvok.log"
# Where to resume: the last checkpoint saved before the first overflow.
printf '%s\n' \
  '[INFO|trainer.py:2868] 2023-06-07 15:39:20,063 >> Saving model checkpoint to out/checkpoint-200' \
  '[2023-06-07 15:39:46,526] [INFO] [torch_checkpoint_engine.py:23:save] [Torch] Saved out/checkpoint-200/global_step200/mp_rank_00_model_states.pt.' \
  '[2023-06-07 22:16:00,018] [INFO] [loss_scaler.py:181:update_scale] [deepspeed] OVERFLOW! Rank 0 Skipping step. Attempted loss scale: 64, reducing to 32' \
  '[INFO|trainer.py:2868] 2023-06-07 23:39:20,063 >> Saving model checkpoint to out/checkpoint-400' \
  '[2023-06-07 23:40:00,018] [INFO] [loss_scaler.py:181:update_scale] [deepspeed] OVERFLOW! Rank 0 Skipping step. Attempted loss scale: 2, reducing to 1' \
  'Exception: Current loss scale already at minimum - cannot decrease scale anymore. Exiting run.' >"$T/resume.log"
diag_json "$T/resume.log" '
r = d["resume_from"]
assert d["incidents"][0]["rule"] == "ds.fp16.loss-scale-min", d["incidents"][0]["rule"]
assert r["tag"] == "global_step200" and r["line"] == 2, r
assert r["path"] == "out/checkpoint-200/global_step200/mp_rank_00_model_states.pt", r
' && ok || bad "resume_from names the last checkpoint before the divergence began"
# A healthy fp16 run: warm-up overflows raise nothing, exit 0.
printf '%s\n' \
  '[2023-04-28 06:51:29,903] [INFO] [loss_scaler.py:188:update_scale] [deepspeed] OVERFLOW! Rank 0 Skipping step. Attempted loss scale: 65536, but hysteresis is 2. Reducing hysteresis to 1' \
  '[2023-04-28 06:51:30,648] [INFO] [loss_scaler.py:181:update_scale] [deepspeed] OVERFLOW! Rank 0 Skipping step. Attempted loss scale: 65536, reducing to 32768' \
  '[2023-04-28 06:51:31,392] [INFO] [loss_scaler.py:181:update_scale] [deepspeed] OVERFLOW! Rank 0 Skipping step. Attempted loss scale: 32768, reducing to 16384' \
  "{'loss': 1.2, 'learning_rate': 1e-05, 'epoch': 0.1}" >"$T/warmup.log"
diag_json "$T/warmup.log" 'assert not [i for i in d["incidents"] if i["rule"] == "ds.fp16.overflow"], d["incidents"]' \
  && [ "$rc" = 0 ] && ok || bad "warm-up overflows are not a warning (rc $rc)"

# --- ddx catalog: the encyclopedia as a list, Markdown and a site
expect_rc 0 "catalog lists the classes" "$DDX" catalog
n_rules=$("$DDX" rules list | wc -l)
[ "$(wc -l <"$T/out")" = "$n_rules" ] && ok || bad "catalog lists every class once ($(wc -l <"$T/out") of $n_rules)"
contains "$T/out" "ds.oom.zero3-gather            step          memory" "catalog shows phase and family"
expect_rc 0 "catalog --markdown -o FILE" "$DDX" catalog --markdown -o "$T/catalog.md"
"$DDX" catalog --markdown | cmp -s - "$T/catalog.md" && ok || bad "-o writes what stdout shows"
contains "$T/catalog.md" "## Look-alikes side by side" "the Markdown page has the look-alike tables"
contains "$T/catalog.md" "| **Training step** |" "the Markdown page has the phase matrix"
expect_rc 0 "catalog --html DIR" "$DDX" catalog --html "$T/site"
[ "$(ls "$T/site"/*.html | wc -l)" = $((n_rules + 1)) ] && ok || bad "the site has the hub and a page per class"
# a symlink planted where a page goes is refused, its target untouched
mkdir -p "$T/site2" && echo precious >"$T/victim" && ln -s "$T/victim" "$T/site2/index.html"
expect_rc 2 "catalog --html refuses to write through a symlink" "$DDX" catalog --html "$T/site2"
[ "$(cat "$T/victim")" = precious ] && ok || bad "the symlink's target was overwritten"
echo file >"$T/notadir"
expect_rc 2 "catalog --html onto a file" "$DDX" catalog --html "$T/notadir"
expect_rc 2 "catalog: unknown option" "$DDX" catalog --pdf
expect_rc 2 "catalog: --markdown and --html" "$DDX" catalog --markdown --html "$T/site3"
# a team's folder: entries without the encyclopedia's fields still render
expect_rc 0 "a team catalog renders" "$DDX" catalog --html "$T/site4" --rules "$ROOT/rules" --rules "$T/r1"
[ -f "$T/site4/test.ok.html" ] && grep -q 'Unclassified' "$T/site4/index.html" && ok || bad "a team class gets a page, unclassified on the hub"
# rules check: the built-in catalog must be a complete encyclopedia, a team's folder is warned
"$DDX" rules check "$T/r1" >"$T/out" 2>&1; rc=$?
[ "$rc" = 0 ] && grep -q "warning: .*test.ok: the encyclopedia's fields are missing: family, examples, confirm, scale, inference" "$T/out" && ok || bad "a team folder is warned about missing encyclopedia fields (rc $rc)"
expect_rc 1 "rules check --strict fails on missing encyclopedia fields" "$DDX" rules check --strict "$T/r1"
contains "$T/out" "FAIL: " "strict names the failure"
mkdir -p "$T/r7" && good_rule test.badfam 'boom' | sed 's/"priority": 50,/"priority": 50, "family": "cosmic",/' >"$T/r7/f.json"
expect_rc 2 "an unknown family is a loader error" "$DDX" rules check "$T/r7"
contains "$T/err" '$.family' "the bad family is named"
mkdir -p "$T/r8" && good_rule test.badex 'boom' | sed 's/"priority": 50,/"priority": 50, "examples": [{"stack": "jax", "code": "x", "why": "y"}],/' >"$T/r8/e.json"
expect_rc 2 "an unknown stack is a loader error" "$DDX" rules check "$T/r8"
contains "$T/err" '$.examples[0].stack' "the bad stack is named with its path"

finish
