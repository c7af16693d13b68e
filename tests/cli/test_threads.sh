#!/usr/bin/env bash
# A big file scanned in parts on several threads must be diagnosed exactly
# as one pass diagnoses it: line numbers, offsets, stored hits, counts (but
# the progress rule's, see below), every rank's last progress.
# DDX_SPLIT_MIN=1 splits even small logs.
# usage: test_threads.sh path/to/ddx (from the repo root)
. "$(dirname "$0")/lib.sh" "$@"
# The JSON without its timing and without the event count of anchor-last
# (progress) rules: past the cap, stretches no rank needs are not read, so
# that count depends on where parts and blocks begin.
norm() {
  python3 -c '
import json, sys
d = json.load(sys.stdin)
d["stats"].pop("seconds", None)
for i in d["incidents"]:
    for x in [i] + i.get("collateral", []):
        if x.get("rule") == "train.hang": x.pop("count", None)
print(json.dumps(d, indent=1, sort_keys=True))'
}
same() { # same FILE THREADS...: one pass and each split give the same JSON
  "$DDX" diagnose --threads 1 --format json "$1" 2>&1 | norm >"$T/one"
  for t in "${@:2}"; do
    DDX_SPLIT_MIN=1 "$DDX" diagnose --threads "$t" --format json "$1" 2>&1 | norm >"$T/split"
    cmp -s "$T/one" "$T/split" && ok || { bad "$1: $t threads differ from one"; diff "$T/one" "$T/split" | head -5 >&2; }
  done
}

# Every real log of the corpus, in 2 and 5 parts.
for f in "$ROOT"/tests/corpus/dev/*.log; do same "$f" 2 5; done

# A hang past the progress cap: 8 ranks, rank 3 stops at 60%, the others
# go on; the parts cut through the steps.
python3 - "$T/hang.log" <<'PY'
import sys
with open(sys.argv[1], "w") as f:
    for st in range(1, 6001):
        for r in range(8):
            if r == 3 and st > 3600:
                continue
            f.write(f"[rank{r}]: {{'loss': 1.25, 'grad_norm': 0.5, 'learning_rate': 1e-05, 'epoch': {st / 6000:.2f}}}\n")
            if r == 0 and st % 50 == 0:
                f.write(f"[2025-01-01 00:00:00,000] [INFO] [logging.py:96:log_dist] [Rank 0] step={st}, skipped=0, lr=[1e-05]\n")
PY
same "$T/hang.log" 2 4 16
out=$(DDX_SPLIT_MIN=1 "$DDX" diagnose --threads 4 --format json "$T/hang.log")
echo "$out" | python3 -c "
import json, sys
d = json.load(sys.stdin)
i = d['incidents'][0]
assert i['rule'] == 'train.hang', i['rule']
assert i['rank'] == 3, i['rank']
" && ok || bad "4 threads: the hang's quiet rank is 3"

# A hang whose last progress line is a tqdm bar (no rank), with \r\n and
# bare \r endings and lines longer than the backward pass's 64 KiB
# stretches: the incident is the newest progress line, the rank the one
# that stopped, with one pass and with parts.
for seed in 1 3; do
  python3 - "$T/edge.log" "$seed" <<'PY'
import json, random, sys
random.seed(int(sys.argv[2]))
lines, last, stop = [], 0, random.randint(1000, 3900)
for st in range(1, 4001):
    for r in range(8):
        if r == 5 and st > stop:
            continue
        if random.random() < 0.002:
            lines.append((f"[rank{r}]: " + "x" * random.randint(70000, 200000), "\n"))
        lines.append((f"[rank{r}]: {{'loss': 1.25, 'grad_norm': 0.5, 'learning_rate': 1e-05, 'epoch': 0.10}}", random.choice(["\n", "\r\n"])))
        last = len(lines)
        if random.random() < 0.3:
            lines.append((f" 45%|####      | {st}/20000 [1:00:01<3:12:00,  1.67s/it]", "\r"))
            last = len(lines)
with open(sys.argv[1], "w", newline="") as f:
    f.write("".join(t + e for t, e in lines))
json.dump({"line": last}, open(sys.argv[1] + ".truth", "w"))
PY
  same "$T/edge.log" 3
  want=$(python3 -c "import json; print(json.load(open('$T/edge.log.truth'))['line'])")
  for t in 1 3; do
    DDX_SPLIT_MIN=1 "$DDX" diagnose --threads $t --format json "$T/edge.log" | python3 -c "
import json, sys
i = json.load(sys.stdin)['incidents'][0]
assert (i['rule'], i['rank'], i['line']) == ('train.hang', 5, $want), (i['rule'], i['rank'], i['line'])
" && ok || bad "seed $seed, $t threads: the hang is rank 5 at the newest progress line $want"
  done
done

# The benchmark generator's realistic log with a failure at the end.
python3 "$ROOT/tests/bench/gen_bench.py" 8M "$T/bench.log" >/dev/null
same "$T/bench.log" 2 3

# Bad values are refused.
"$DDX" diagnose --threads 0 "$T/hang.log" >/dev/null 2>&1
[ $? = 2 ] && ok || bad "--threads 0 is refused with exit 2"
"$DDX" diagnose --threads x "$T/hang.log" >/dev/null 2>&1
[ $? = 2 ] && ok || bad "--threads x is refused with exit 2"

finish
