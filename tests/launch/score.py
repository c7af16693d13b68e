#!/usr/bin/env python3
"""score.py - score the real ddx on the cases run.py recorded.

  score.py DIR [--ddx build/ddx] [--jobs 2] [--min-class X] [--min-rank Y] [--json] [--quiet]

For each DIR/NAME.json sidecar runs `DDX diagnose --format json` on the paths its `how`
lists (relative to DIR: the terminal log, and for torchrun --log_dir the per-rank folder
too) and compares incidents[0] with the truth:
  class right  incidents[0].rule == class (no incident: wrong)
  rank right   rank_knowable: incidents[0].rank == initiating_rank;
               not knowable:  ddx names no rank (incidents[0].rank is null, or no incident)
A case passes when both are right. Prints a table per launcher and per mode, the misses
(what the truth says, what ddx said) and a closing line `N passed, N failed` (cases).
--min-class / --min-rank (shares, 0..1) gate the exit status: 1 when the class or rank
accuracy over all cases is below them, 2 when ddx fails to run or prints no JSON.
--json prints the per-case results as JSON instead of the tables.
"""
import argparse
import json
import os
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def load(folder):
    out = []
    for f in sorted(os.listdir(folder)):
        if f.endswith(".json"):
            with open(os.path.join(folder, f)) as fh:
                side = json.load(fh)
            if isinstance(side, dict) and "class" in side and "how" in side:
                side["name"] = f[:-5]
                out.append(side)
    return out


def diagnose(job):
    ddx, folder, side = job
    r = {"name": side["name"], "error": None, "rule": None, "rank": None, "rank_note": None, "line": None,
         "file": None, "text": None}
    try:
        p = subprocess.run([ddx, "diagnose", "--format", "json"] + side["how"], cwd=folder,
                           capture_output=True, timeout=120)
    except (OSError, subprocess.TimeoutExpired) as e:
        r["error"] = str(e)
        return r
    if p.returncode not in (0, 1):
        r["error"] = "exit %d: %s" % (p.returncode, p.stderr.decode(errors="replace").strip()[:300])
        return r
    try:
        out = json.loads(p.stdout)
    except ValueError as e:
        r["error"] = "no JSON: %s" % e
        return r
    inc = (out.get("incidents") or [None])[0]
    if inc:
        for k in ("rule", "rank", "rank_note", "line", "file", "text"):
            r[k] = inc.get(k)
    r["second"] = [i.get("rule") for i in (out.get("incidents") or [])[1:3]]
    return r


def verdict(side, r):
    cls = r["rule"] == side["class"]
    if side["rank_knowable"]:
        rank = r["rule"] is not None and r["rank"] == side["initiating_rank"]
    else:
        rank = r["rank"] is None
    return cls, rank


def table(title, key, rows):
    groups = {}
    for side, r, c, k in rows:
        g = groups.setdefault(side[key], [0, 0, 0, 0, 0])
        g[0] += 1
        g[1] += c
        g[2] += k
        g[3] += 1 if side["rank_knowable"] else 0
        g[4] += 1 if side["rank_knowable"] and k else 0
    print("%-18s %5s %13s %13s %15s" % (title, "cases", "class", "rank", "rank knowable"))
    for name in sorted(groups):
        n, c, k, kn, kk = groups[name]
        print("%-18s %5d %6d %5.0f%% %6d %5.0f%% %7s" % (name, n, c, 100.0 * c / n, k, 100.0 * k / n,
                                                         "%d/%d" % (kk, kn)))
    print()


def append_markdown(path, title, rows):
    """A section for docs/accuracy.md: per launcher, class right, rank right among the cases
    whose text makes it knowable, and "unknown" said where it does not."""
    def line(name, rs):
        kn = [x for x in rs if x[0]["rank_knowable"]]
        un = [x for x in rs if not x[0]["rank_knowable"]]
        pct = lambda a, b: "%d/%d (%.0f%%)" % (a, b, 100.0 * a / b) if b else "-"
        return "| %s | %d | %s | %s | %s |" % (name, len(rs), pct(sum(x[2] for x in rs), len(rs)),
                                               pct(sum(x[3] for x in kn), len(kn)),
                                               pct(sum(x[3] for x in un), len(un)))
    out = ["", "## %s" % title, "",
           "| launcher | cases | class right | rank right (knowable) | \"unknown\" (not knowable) |",
           "|---|---|---|---|---|"]
    for launcher in sorted({x[0]["launcher"] for x in rows}):
        out.append(line(launcher, [x for x in rows if x[0]["launcher"] == launcher]))
    out.append(line("all", rows))
    with open(path, "a") as f:
        f.write("\n".join(out) + "\n")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("dir")
    ap.add_argument("--ddx", default=os.path.join(ROOT, "build", "ddx"))
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--min-class", type=float, default=0.0)
    ap.add_argument("--min-rank", type=float, default=0.0)
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--quiet", action="store_true", help="no miss list")
    ap.add_argument("--markdown", metavar="FILE",
                    help="append a Markdown section (class, rank where knowable, unknown where not) to FILE")
    ap.add_argument("--title", default=None, help="the Markdown section's title")
    a = ap.parse_args(argv)
    folder = os.path.abspath(a.dir)
    sides = load(folder)
    if not sides:
        print("score.py: no case sidecars in %s" % folder, file=sys.stderr)
        return 2
    ddx = os.path.abspath(a.ddx)
    with ThreadPoolExecutor(max_workers=max(1, a.jobs)) as ex:
        res = list(ex.map(diagnose, [(ddx, folder, s) for s in sides]))
    rows, errors = [], 0
    for side, r in zip(sides, res):
        if r["error"]:
            errors += 1
        c, k = verdict(side, r)
        rows.append((side, r, int(c), int(k)))
    n = len(rows)
    nc = sum(x[2] for x in rows)
    nk = sum(x[3] for x in rows)
    passed = sum(1 for x in rows if x[2] and x[3])
    if a.json:
        json.dump({"cases": [{"name": s["name"], "class": s["class"], "initiating_rank": s["initiating_rank"],
                              "rank_knowable": s["rank_knowable"], "launcher": s["launcher"], "mode": s["mode"],
                              "ddx_rule": r["rule"], "ddx_rank": r["rank"], "class_ok": bool(c),
                              "rank_ok": bool(k), "error": r["error"]} for s, r, c, k in rows],
                   "class_accuracy": nc / n, "rank_accuracy": nk / n, "passed": passed, "failed": n - passed},
                  sys.stdout, indent=1)
        print()
    else:
        table("launcher", "launcher", rows)
        table("mode", "mode", rows)
        if not a.quiet:
            miss = [x for x in rows if not (x[2] and x[3])]
            if miss:
                print("misses (truth -> ddx):")
            for side, r, c, k in miss:
                paths = " ".join(os.path.join(a.dir, h) for h in side["how"])
                truth = "%s rank %s%s" % (side["class"], side["initiating_rank"],
                                          "" if side["rank_knowable"] else " (not knowable)")
                said = "ERROR %s" % r["error"] if r["error"] else "%s rank %s" % (r["rule"], r["rank"])
                print("  %s\n    truth %s -> ddx %s%s%s" % (paths, truth, said, "" if c else "  [class]",
                                                        "" if k else "  [rank]"))
                if r["rank_note"] and not k:
                    print("    rank_note: %s" % r["rank_note"])
            print()
        print("class %d/%d (%.1f%%), rank %d/%d (%.1f%%)" % (nc, n, 100.0 * nc / n, nk, n, 100.0 * nk / n))
        print("%d passed, %d failed" % (passed, n - passed))
    if a.markdown:
        append_markdown(a.markdown, a.title or os.path.basename(folder), rows)
    if errors:
        return 2
    if nc / n < a.min_class or nk / n < a.min_rank:
        if not a.json:
            print("below the gate: class %.3f < %.3f or rank %.3f < %.3f" % (nc / n, a.min_class, nk / n, a.min_rank))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
