#!/usr/bin/env python3
"""Golden reports: ddx diagnose's text and JSON for the logs of logs.txt,
compared byte for byte with NAME.txt and NAME.json here, the timing aside.

usage: run.py DDX [--update]

Without --update (make test) any difference fails, with its diff. With
--update (make golden) the files are rewritten; review `git diff
tests/golden` before committing. The only thing normalised is the timing:
the JSON's "stats": {"seconds": ...} and the text's last line
("N bytes, N lines, N rules, 0.004 s"), whose seconds become 0 and 0.000.
"""
import difflib
import os
import re
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, "..", ".."))

# The timing fields, and only they: the JSON stats' "seconds" (the one
# key of that name in a report) and the seconds of the text's stats line.
JSON_SECONDS = re.compile(r'^(\s*"seconds": )[-+0-9.eE]+(,?)$', re.M)
TEXT_SECONDS = re.compile(r"^(\d+ bytes, \d+ lines?, \d+ rules?, )\d+\.\d+( s)$", re.M)


def normalise(kind, text):
    if kind == "json":
        out, n = JSON_SECONDS.subn(r"\g<1>0\g<2>", text)
    else:
        out, n = TEXT_SECONDS.subn(r"\g<1>0.000\g<2>", text)
    if n != 1:
        raise SystemExit(f"golden: expected one timing field in the {kind} report, found {n}: "
                         "the report's format changed; update tests/golden/run.py")
    return out


def report(ddx, log, kind):
    args = [ddx, "diagnose", "--no-color", log] + (["--format", "json"] if kind == "json" else [])
    env = dict(os.environ, NO_COLOR="1", LC_ALL="C")
    env.pop("DDX_RULES", None)  # the built-in catalog, found next to the binary
    p = subprocess.run(args, cwd=ROOT, env=env, capture_output=True, text=True)
    if p.returncode not in (0, 1):
        raise SystemExit(f"golden: {' '.join(args)}: exit {p.returncode}: {p.stderr.strip()}")
    return normalise(kind, p.stdout)


def logs():
    for line in open(os.path.join(HERE, "logs.txt"), encoding="utf-8"):
        line = line.strip()
        if line and not line.startswith("#"):
            yield line


def main():
    if len(sys.argv) < 2:
        raise SystemExit(__doc__)
    ddx = os.path.abspath(sys.argv[1])
    update = "--update" in sys.argv[2:]
    names, changed, failed = set(), 0, []
    for log in logs():
        name = os.path.basename(log)
        name = name[:-4] if name.endswith(".log") else name
        if name in names:
            raise SystemExit(f"golden: two logs named {name} in logs.txt")
        names.add(name)
        for kind in ("txt", "json"):
            got = report(ddx, log, kind)
            path = os.path.join(HERE, f"{name}.{kind}")
            want = open(path, encoding="utf-8").read() if os.path.exists(path) else None
            if got == want:
                continue
            if update:
                with open(path, "w", encoding="utf-8") as f:
                    f.write(got)
                changed += 1
                continue
            diff = difflib.unified_diff((want or "").splitlines(True), got.splitlines(True),
                                        f"tests/golden/{name}.{kind}", f"ddx diagnose {log}")
            failed.append("".join(list(diff)[:60]) if want is not None else
                          f"tests/golden/{name}.{kind} is missing\n")
    stale = sorted(f for f in os.listdir(HERE)
                   if f.endswith((".txt", ".json")) and f != "logs.txt"
                   and os.path.splitext(f)[0] not in names)
    if update:
        for f in stale:
            os.remove(os.path.join(HERE, f))
        print(f"golden: {len(names)} logs, {changed} files rewritten, {len(stale)} removed "
              "(review: git diff tests/golden)")
        return
    for f in stale:
        failed.append(f"tests/golden/{f}: no log of logs.txt makes it\n")
    if failed:
        for f in failed:
            sys.stdout.write(f)
        print(f"golden: {len(failed)} of {2 * len(names)} reports differ: if the change is meant, "
              "run `make golden` and review `git diff tests/golden` (tests/golden/README.md)")
        sys.exit(1)
    print(f"golden: {len(names)} logs, text and JSON identical to tests/golden")


main()
