#!/usr/bin/env python3
"""Diagnoses every labelled corpus log with the real ddx binary and compares
the primary diagnosis with the label.

usage: eval.py DDX [--labels FILE] [--min-accuracy 0.85] [--all] [--quiet]
Exit 1 when accuracy on medium/high labels is below the minimum or when a
healthy ('none') log gets an error-severity diagnosis."""
import argparse
import collections
import json
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))


def diagnose(ddx, path):
    p = subprocess.run([ddx, "diagnose", "--format", "json", path],
                       capture_output=True, text=True, timeout=60)
    if p.returncode not in (0, 1):
        raise SystemExit(f"ddx failed on {path} (exit {p.returncode}): {p.stderr}")
    return json.loads(p.stdout), p.returncode


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("ddx")
    ap.add_argument("--labels", default=os.path.join(HERE, "dev", "labels.jsonl"))
    ap.add_argument("--min-accuracy", type=float, default=0.85)
    ap.add_argument("--all", action="store_true", help="also count low-confidence labels")
    ap.add_argument("--quiet", action="store_true")
    a = ap.parse_args()
    labels = [json.loads(l) for l in open(a.labels) if l.strip()]
    folder = os.path.dirname(a.labels)
    per_class = collections.defaultdict(lambda: [0, 0])
    rank_right = rank_total = 0
    wrong = []
    none_errors = []
    for lab in labels:
        if not a.all and lab["confidence"] == "low":
            continue
        out, rc = diagnose(a.ddx, os.path.join(folder, lab["file"]))
        incs = out["incidents"]
        got = incs[0]["rule"] if incs else "none"
        want = lab["class"]
        if want == "none":
            ok = rc == 0 and not any(i["severity"] == "error" for i in incs)
            if not ok:
                none_errors.append(lab["file"])
        else:
            ok = got == want
        per_class[want][1] += 1
        if ok:
            per_class[want][0] += 1
        else:
            wrong.append((lab["file"], want, got))
        if want != "none" and lab.get("initiating_rank") is not None and incs:
            rank_total += 1
            rank_right += incs[0].get("rank") == lab["initiating_rank"]
    right = sum(v[0] for v in per_class.values())
    total = sum(v[1] for v in per_class.values())
    acc = right / total if total else 0.0
    if not a.quiet:
        print(f"{'class':32} right/total")
        for k in sorted(per_class):
            r, t = per_class[k]
            print(f"{k:32} {r}/{t}")
        for f, want, got in wrong:
            print(f"MISS {f}: want {want}, got {got}")
    print(f"corpus: {right}/{total} right ({acc:.1%}); initiating rank {rank_right}/{rank_total}; "
          f"healthy logs with an error: {len(none_errors)}")
    ok = acc >= a.min_accuracy and not none_errors
    print(f"{1 if ok else 0} passed, {0 if ok else 1} failed")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
