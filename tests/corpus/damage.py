#!/usr/bin/env python3
"""damage.py - how ddx holds up on pastes damaged in ways the corpus shows
rarely or not at all.

Every corpus log (dev and held, medium/high labels) that ddx gets right at
top-1 as it is, is damaged in each of the ways below, one at a time, and
diagnosed again: the table says how many stay right, how many go silent
(no incident at all), and which become something else. Deterministic; no
timing. Nothing here is a gate: it is the map of where ddx is weak on text
it has never seen (docs/robustness.md is its --markdown output).

usage: damage.py DDX [--corpus DIR] [--parts dev,held] [--only NAME,...] [--markdown FILE] [--jobs N]"""
import argparse
import html
import json
import os
import re
import subprocess
import sys
import tempfile
import textwrap
from concurrent.futures import ThreadPoolExecutor

HERE = os.path.dirname(os.path.abspath(__file__))


def lines(t):
    return t.splitlines(True)


def numbered(t):
    return "".join(f"{i + 1:>4} {x}" for i, x in enumerate(lines(t)))


def quoted(t):
    return "".join("> " + x for x in lines(t))


def crlf(t):
    return t.replace("\r\n", "\n").replace("\n", "\r\n")


def html_escaped(t):
    return html.escape(t)


def nbsp_indent(t):
    return re.sub(r"(?m)^( +)", lambda m: "\u00a0" * len(m.group(1)), t)


def word_wrap_80(t):
    out = []
    for x in lines(t):
        body = x.rstrip("\r\n")
        out.append((textwrap.fill(body, 80, drop_whitespace=False, replace_whitespace=False)
                    if len(body) > 80 else body) + "\n")
    return "".join(out)


def hard_wrap_80(t):
    out = []
    for x in lines(t):
        body = x.rstrip("\r\n")
        out.extend(body[i:i + 80] + "\n" for i in range(0, max(len(body), 1), 80))
    return "".join(out)


def timestamped(t):
    return "".join(f"2024-03-01 12:00:{i % 60:02d},123 - INFO - {x}" for i, x in enumerate(lines(t)))


def ansi(t):
    return "".join("\x1b[31m" + x.rstrip("\r\n") + "\x1b[0m\n" for x in lines(t))


def fenced(t):
    return "```python\n" + t + ("" if t.endswith("\n") else "\n") + "```\n"


def flattened(t):
    return " ".join(x.rstrip("\r\n") for x in lines(t)) + "\n"


def unindented(t):
    return "".join(x.lstrip(" \t") for x in lines(t))


def double_spaced(t):
    return "".join(x.rstrip("\r\n") + "\n\n" for x in lines(t))


def tqdm_glued(t):
    bar = "100%|##########| 10/10 [00:01<00:00,  9.5it/s]"
    return "".join((bar + x) if i % 3 == 0 else x for i, x in enumerate(lines(t)))


DAMAGES = [
    ("line numbers", "a viewer's line numbers copied with the text (`  12 ...`)", numbered),
    ("quoted", "an e-mail or Markdown quote (`> ` before every line)", quoted),
    ("CRLF", "Windows line ends", crlf),
    ("HTML-escaped", "copied from HTML source or an export (`&quot;`, `&#x27;`, `&lt;`)", html_escaped),
    ("NBSP indent", "indentation as no-break spaces (copied from a web page)", nbsp_indent),
    ("word-wrapped 80", "lines longer than 80 broken at spaces (fold -s, e-mail)", word_wrap_80),
    ("hard-wrapped 80", "lines longer than 80 broken at exactly 80 bytes (a terminal's copy)", hard_wrap_80),
    ("timestamped", "a collector's own prefix before every line", timestamped),
    ("ANSI colour", "every line coloured", ansi),
    ("fenced", "inside a Markdown code fence", fenced),
    ("flattened", "every line joined onto one", flattened),
    ("unindented", "leading blanks stripped", unindented),
    ("double-spaced", "a blank line after every line", double_spaced),
    ("tqdm-glued", "a progress bar glued before every third line", tqdm_glued),
]


def primary(ddx, path):
    try:
        p = subprocess.run([ddx, "diagnose", "--format", "json", path], capture_output=True, text=True,
                           timeout=60)
        incs = json.loads(p.stdout).get("incidents") or []
    except (subprocess.TimeoutExpired, ValueError):
        return "ddx error"
    return incs[0].get("rule") if incs else None


def right(label, rule):
    return bool(rule) and (rule == label or rule.startswith(label + "."))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("ddx")
    ap.add_argument("--corpus", default=HERE)
    ap.add_argument("--parts", default="dev,held")
    ap.add_argument("--markdown", metavar="FILE")
    ap.add_argument("--jobs", type=int, default=8)
    ap.add_argument("--only", help="comma-separated damage names (default: all)")
    a = ap.parse_args()
    damages = [d for d in DAMAGES if not a.only or d[0] in a.only.split(",")]
    logs = []
    for part in a.parts.split(","):
        with open(os.path.join(a.corpus, part, "labels.jsonl"), encoding="utf-8") as fh:
            for line in fh:
                if not line.strip():
                    continue
                lab = json.loads(line)
                if lab["class"] != "none" and lab.get("confidence") in ("medium", "high"):
                    logs.append((part, lab["file"], lab["class"]))
    with ThreadPoolExecutor(a.jobs) as pool:
        base = list(pool.map(lambda x: primary(a.ddx, os.path.join(a.corpus, x[0], x[1])), logs))
        ok = [x for x, r in zip(logs, base) if right(x[2], r)]
        with tempfile.TemporaryDirectory(prefix="ddx-damage-") as tmp:
            jobs = []
            for k, (part, f, cls) in enumerate(ok):
                with open(os.path.join(a.corpus, part, f), encoding="utf-8", errors="replace") as fh:
                    text = fh.read()
                for d, (name, _, fn) in enumerate(damages):
                    p = os.path.join(tmp, f"{k}-{d}-{f}")
                    with open(p, "w", encoding="utf-8", newline="") as out:
                        out.write(fn(text))
                    jobs.append((part, name, cls, p))
            got = list(pool.map(lambda j: primary(a.ddx, j[3]), jobs))
    rows = []
    for name, what, _ in damages:
        res = [(j, g) for j, g in zip(jobs, got) if j[1] == name]
        per = {}
        for part in a.parts.split(","):
            rs = [(j, g) for j, g in res if j[0] == part]
            per[part] = (sum(right(j[2], g) for j, g in rs), sum(g is None for _, g in rs), len(rs))
        rows.append((name, what, per))
    parts = a.parts.split(",")
    print(f"damage benchmark: {len(ok)} of {len(logs)} failure logs right at top-1 as they are, each damaged {len(damages)} ways")
    head = ["damage"] + [f"{p} right / silent" for p in parts]
    print(" | ".join(head))
    for name, _, per in rows:
        print(" | ".join([f"{name:16}"] + [f"{r}/{n} ({100 * r / n:.0f}%) / {s}" if n else "-" for r, s, n in per.values()]))
    if a.markdown:
        with open(a.markdown, "w", encoding="utf-8") as md:
            md.write("# Robustness: damaged pastes\n\nGenerated by `tests/corpus/damage.py` (`make robustness`). "
                     "Every corpus log with a medium/high label that ddx gets right at top-1 as it is "
                     f"({len(ok)} of {len(logs)}) is damaged one way at a time and diagnosed again. "
                     "*right* = the primary incident still names the labelled class; *silent* = no incident at "
                     "all. Not a gate: the map of where ddx is weak on text it has never seen.\n\n")
            md.write("| damage | what it simulates | " + " | ".join(f"{p}: right | {p}: silent" for p in parts) + " |\n")
            md.write("|---|---|" + "---|---|" * len(parts) + "\n")
            for name, what, per in rows:
                cells = []
                for r, s, n in per.values():
                    cells += [f"{r}/{n} ({100 * r / n:.0f}%)" if n else "-", str(s)]
                md.write(f"| {name} | {what} | " + " | ".join(cells) + " |\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
