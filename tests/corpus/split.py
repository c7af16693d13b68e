#!/usr/bin/env python3
"""Splits the corpus by thread, once: moves every log of incoming/*/ into dev/
or held/.

usage: split.py [--corpus DIR] [--dry-run] [--held-fraction 0.5]
                [--target-held-share 0.30]
       split.py [--corpus DIR] --check

A log belongs to the thread of its label's `source` URL. The URL is normalised
(thread_key below) and hashed with sha256; u = first 64 bits / 2**64 puts every
thread at a fixed point in [0, 1). Rules, in order:

  1. a thread that already has a log in dev/ stays in dev/ (the existing dev
     logs never move: the rules were written against them);
  2. a thread that already has a log in held/ stays in held/;
  3. a new thread goes to held/ when u < cutoff, else to dev/. The cutoff is
     --held-fraction (default 0.5), raised, if needed, to the smallest value at
     which held/ holds at least --target-held-share (default 0.30) of all logs
     of the corpus after the split. The cutoff depends only on the hashes and
     the log counts, so the split is deterministic.

Before anything moves, the whole plan is validated and the split refuses
(exit 1, nothing touched) on: a file name that already exists in dev/ or
held/ (as a file or a label), a file name used twice in incoming/, a label
whose log is missing, a *.log in incoming/ without a label, an unreadable
label line or a label without file/source/class/confidence. Then logs are
moved, their label lines are appended verbatim to the part's labels.jsonl,
and each incoming folder's labels.jsonl is removed (the folder too when it is
empty).

--check verifies that no thread has logs in both dev/ and held/, that every
label has its log and every log its label, that no file is labelled twice,
and prints the log and thread counts; exit 1 on any violation.
"""
import argparse
import hashlib
import json
import os
import re
import shutil
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
PARTS = ("dev", "held")

# Repositories that GitHub redirects (renamed owner or repository): the same
# thread is reachable under both names, so both must give the same key.
OWNER_ALIASES = {
    "thudm": "zai-org",
    "openlmlab": "openmoss",
    "pytorchlightning": "lightning-ai",
    "openaccess-ai-collective": "axolotl-ai-cloud",
}
REPO_ALIASES = {
    "microsoft/deepspeed": "deepspeedai/deepspeed",
    "microsoft/deepspeedexamples": "deepspeedai/deepspeedexamples",
    "microsoft/megatron-deepspeed": "deepspeedai/megatron-deepspeed",
    "microsoft/deepspeed-mii": "deepspeedai/deepspeed-mii",
    "hiyouga/llama-factory": "hiyouga/llamafactory",
    "hiyouga/llama-efficient-tuning": "hiyouga/llamafactory",
    "modelscope/swift": "modelscope/ms-swift",
    "lightning-ai/lightning": "lightning-ai/pytorch-lightning",
    "oobabooga/text-generation-webui": "oobabooga/textgen",
}
# GitHub issues, pull requests and discussions share one number space per
# repository, so .../issues/N, .../pull/N and .../discussions/N are one thread.
GITHUB_THREAD = re.compile(r"^github\.com/([^/]+)/([^/]+)/(?:issues|pull|pulls|discussions)/(\d+)(?:/.*)?$")
# Sub-pages of a thread on other sites (and a bare '/files' etc. anywhere).
TRAILING_SUBPAGE = re.compile(r"/(?:files|commits|checks|comments?|reviews?|changes)$")


def thread_key(url):
    """Normalised thread URL: lower case, no scheme, no 'www.', no '#...' or
    '?...', no trailing slash, no sub-page ('/files', '/commits', a comment
    anchor); GitHub threads become github.com/OWNER/REPO/NUMBER with renamed
    repositories mapped to their current name."""
    u = (url or "").strip().lower()
    u = u.split("#", 1)[0].split("?", 1)[0]
    u = re.sub(r"^[a-z]+://", "", u)
    u = re.sub(r"^www\.", "", u)
    u = u.rstrip("/")
    m = GITHUB_THREAD.match(u)
    if m:
        owner, repo, num = m.groups()
        owner = OWNER_ALIASES.get(owner, owner)
        full = REPO_ALIASES.get(f"{owner}/{repo}", f"{owner}/{repo}")
        return f"github.com/{full}/{num}"
    while True:
        v = TRAILING_SUBPAGE.sub("", u).rstrip("/")
        if v == u:
            return u
        u = v


def thread_point(key):
    """Fixed point in [0, 1) from sha256 of the normalised thread URL."""
    return int(hashlib.sha256(key.encode("utf-8")).hexdigest()[:16], 16) / 2.0**64


class Refuse(Exception):
    pass


def read_labels(path, problems):
    """[(raw_line, obj)] of a labels.jsonl; bad lines go to problems."""
    out = []
    if not os.path.exists(path):
        return out
    with open(path, encoding="utf-8") as fh:
        for n, raw in enumerate(fh, 1):
            if not raw.strip():
                continue
            try:
                obj = json.loads(raw)
            except ValueError as e:
                problems.append(f"{path}:{n}: not JSON ({e})")
                continue
            if not isinstance(obj, dict):
                problems.append(f"{path}:{n}: not a JSON object")
                continue
            missing = [k for k in ("file", "source", "class", "confidence") if not obj.get(k)]
            if missing:
                problems.append(f"{path}:{n}: missing {', '.join(missing)}")
                continue
            f = obj["file"]
            if os.path.basename(f) != f or f.startswith("."):
                problems.append(f"{path}:{n}: file {f!r} is not a plain file name")
                continue
            out.append((raw.rstrip("\r\n"), obj))
    return out


def part_state(corpus, problems):
    """{part: {"labels": [(raw, obj)], "files": set(names of *.log), "dir": path}}"""
    st = {}
    for p in PARTS:
        d = os.path.join(corpus, p)
        labels = read_labels(os.path.join(d, "labels.jsonl"), problems)
        files = set()
        if os.path.isdir(d):
            files = {f for f in os.listdir(d) if f != "labels.jsonl" and os.path.isfile(os.path.join(d, f))}
        st[p] = {"labels": labels, "files": files, "dir": d}
    return st


def incoming_folders(corpus):
    inc = os.path.join(corpus, "incoming")
    if not os.path.isdir(inc):
        return []
    return [os.path.join(inc, d) for d in sorted(os.listdir(inc)) if os.path.isdir(os.path.join(inc, d))]


def consistency(st, problems):
    """Labels vs files inside each part, and duplicate labels."""
    for p, s in st.items():
        names = [o["file"] for _, o in s["labels"]]
        for f in sorted({f for f in names if names.count(f) > 1}):
            problems.append(f"{p}/labels.jsonl labels {f} more than once")
        for f in sorted(set(names) - s["files"]):
            problems.append(f"{p}/labels.jsonl labels {f}, which is not in {p}/")
        for f in sorted(s["files"] - set(names)):
            problems.append(f"{p}/{f} has no label in {p}/labels.jsonl")


def thread_parts(st):
    """{thread key: set(parts)} of the logs already in dev/ and held/."""
    tp = {}
    for p, s in st.items():
        for _, o in s["labels"]:
            tp.setdefault(thread_key(o["source"]), set()).add(p)
    return tp


def check(corpus):
    problems = []
    st = part_state(corpus, problems)
    consistency(st, problems)
    tp = thread_parts(st)
    both = sorted(k for k, v in tp.items() if len(v) > 1)
    for k in both:
        files = [f"{p}/{o['file']}" for p in PARTS for _, o in st[p]["labels"] if thread_key(o["source"]) == k]
        problems.append(f"thread {k} is in both parts: {', '.join(files)}")
    n = {p: len(st[p]["labels"]) for p in PARTS}
    t = {p: sum(1 for v in tp.values() if p in v) for p in PARTS}
    total = sum(n.values())
    for p in PARTS:
        share = n[p] / total if total else 0.0
        print(f"{p:5} {n[p]:4} logs {t[p]:4} threads ({share:.1%} of the logs)")
    print(f"all   {total:4} logs {len(tp):4} threads")
    pending = 0
    for d in incoming_folders(corpus):
        pend = read_labels(os.path.join(d, "labels.jsonl"), [])
        pending += len(pend)
    if pending:
        print(f"incoming: {pending} labelled logs not split yet")
    for pr in problems:
        print(f"PROBLEM {pr}")
    print("check: " + ("ok" if not problems else f"{len(problems)} problem(s)"))
    return 1 if problems else 0


def plan(corpus, held_fraction, target_share):
    problems = []
    st = part_state(corpus, problems)
    consistency(st, problems)
    tp = thread_parts(st)
    for k, v in tp.items():
        if len(v) > 1:
            problems.append(f"thread {k} is already in both parts")
    taken = set(st["dev"]["files"]) | set(st["held"]["files"])
    taken |= {o["file"] for p in PARTS for _, o in st[p]["labels"]}
    new = []  # (folder, raw, obj, key)
    seen = {}
    folders = incoming_folders(corpus)
    for d in folders:
        lab = os.path.join(d, "labels.jsonl")
        entries = read_labels(lab, problems)
        files = {f for f in os.listdir(d) if f != "labels.jsonl" and os.path.isfile(os.path.join(d, f))}
        names = {o["file"] for _, o in entries}
        for f in sorted(files - names):
            if f.endswith(".log"):
                problems.append(f"{os.path.relpath(os.path.join(d, f), corpus)} has no label")
        for raw, o in entries:
            f = o["file"]
            rel = os.path.relpath(os.path.join(d, f), corpus)
            if f not in files:
                problems.append(f"{rel} is labelled but missing")
            if f in taken:
                problems.append(f"{rel}: file name clash, {f} already exists in dev/ or held/")
            if f in seen:
                problems.append(f"{rel}: file name clash with {seen[f]}")
            seen[f] = rel
            new.append((d, raw, o, thread_key(o["source"])))
    if problems:
        raise Refuse("\n".join(problems))

    dest = {}
    fresh = {}  # thread key -> number of new logs, for threads not in dev/held
    for _, _, _, k in new:
        if k in tp:
            dest[k] = "dev" if "dev" in tp[k] else "held"
        else:
            fresh[k] = fresh.get(k, 0) + 1
    n_dev = len(st["dev"]["labels"]) + sum(1 for *_, k in new if dest.get(k) == "dev")
    n_held = len(st["held"]["labels"]) + sum(1 for *_, k in new if dest.get(k) == "held")
    total = n_dev + n_held + sum(fresh.values())
    order = sorted(fresh, key=lambda k: (thread_point(k), k))
    cutoff = held_fraction
    for k in order:
        if thread_point(k) < held_fraction:
            dest[k] = "held"
            n_held += fresh[k]
    for k in order:  # raise the cutoff until held/ reaches the target share
        if k in dest:
            continue
        if total and n_held / total >= target_share:
            break
        dest[k] = "held"
        n_held += fresh[k]
        cutoff = max(cutoff, thread_point(k))
    for k in order:
        dest.setdefault(k, "dev")
    return st, new, dest, fresh, cutoff, total, n_held, folders


def split(corpus, held_fraction, target_share, dry_run):
    try:
        st, new, dest, fresh, cutoff, total, n_held, folders = plan(corpus, held_fraction, target_share)
    except Refuse as e:
        for line in str(e).splitlines():
            print(f"REFUSED {line}")
        print("split refused: nothing was moved")
        return 1
    if not new:
        print("nothing to split: no labelled logs in incoming/")
        return 0
    moves = {p: [] for p in PARTS}
    for d, raw, o, k in new:
        moves[dest[k]].append((d, raw, o, k))
    n_fresh_held = sum(1 for k in fresh if dest[k] == "held")
    print(f"{len(new)} new logs, {len(set(k for *_, k in new))} threads "
          f"({len(fresh)} new threads, {n_fresh_held} of them held; cutoff u < {cutoff:.4f})")
    for p in PARTS:
        print(f"  -> {p}: {len(moves[p])} logs")
    print(f"after the split: {total - n_held} dev, {n_held} held "
          f"({n_held / total:.1%} of {total} logs held)" if total else "empty corpus")
    if n_held < target_share * total:
        print(f"warning: held/ stays below {target_share:.0%} even with every new thread held")
    if dry_run:
        for p in PARTS:
            for d, _, o, k in moves[p]:
                print(f"  {p:4} {os.path.relpath(os.path.join(d, o['file']), corpus)}  [{k}]")
        print("dry run: nothing was moved")
        return 0
    for p in PARTS:
        if not moves[p]:
            continue
        pd = st[p]["dir"]
        os.makedirs(pd, exist_ok=True)
        for d, _, o, _ in moves[p]:
            shutil.move(os.path.join(d, o["file"]), os.path.join(pd, o["file"]))
        lab = os.path.join(pd, "labels.jsonl")
        prefix = ""
        if os.path.exists(lab) and os.path.getsize(lab):
            with open(lab, "rb") as fh:
                fh.seek(-1, os.SEEK_END)
                prefix = "" if fh.read(1) == b"\n" else "\n"
        with open(lab, "a", encoding="utf-8") as fh:
            fh.write(prefix + "".join(raw + "\n" for _, raw, _, _ in moves[p]))
    for d in folders:
        lab = os.path.join(d, "labels.jsonl")
        if os.path.exists(lab):
            os.remove(lab)
        if not os.listdir(d):
            os.rmdir(d)
    inc = os.path.join(corpus, "incoming")
    if os.path.isdir(inc) and not os.listdir(inc):
        os.rmdir(inc)
    print("split done")
    return check(corpus)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--corpus", default=HERE, help="corpus root (default: the folder of this script)")
    ap.add_argument("--check", action="store_true", help="verify the split and print counts; moves nothing")
    ap.add_argument("--dry-run", action="store_true", help="print the plan; moves nothing")
    ap.add_argument("--held-fraction", type=float, default=0.5,
                    help="new threads with u < this go to held/ (default 0.5)")
    ap.add_argument("--target-held-share", type=float, default=0.30,
                    help="raise the cutoff until held/ has this share of all logs (default 0.30)")
    a = ap.parse_args()
    if a.check:
        return check(a.corpus)
    return split(a.corpus, a.held_fraction, a.target_held_share, a.dry_run)


if __name__ == "__main__":
    sys.exit(main())
