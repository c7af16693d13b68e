#!/usr/bin/env python3
"""Diagnoses every labelled corpus log with the real ddx binary and compares
the diagnosis with the label, separately for dev/ and held/ (README.md
explains every number).

usage: eval.py DDX [--labels FILE ...] [--corpus DIR] [--all] [--quiet]
               [--min-accuracy 0.85] [--min-held 0] [--max-silent X]
               [--max-ece X] [--min-ablation-top3 0] [--no-ablation]
               [--markdown FILE] [--json FILE] [--jobs 4]

Without --labels it evaluates dev/labels.jsonl and held/labels.jsonl (held/
when it exists). Prints per part: top-1, top-3, silence, healthy logs,
initiating rank, the low-confidence labels apart, a calibration table of the
primary confidence with its ECE, and the ablation benchmark (decisive line cut
off, last 30 lines only). Closing line: `N passed, N failed` over the checks.
Exit 1 when a check fails: dev top-1 below --min-accuracy, held top-1 below
--min-held, a healthy ('none') log with an error-severity diagnosis, a part
silent on more than --max-silent of its failure logs, ECE above --max-ece,
ablation top-3 (over the cuts that still show a failure sign) below
--min-ablation-top3, or ddx failing on an input."""
import argparse
import collections
import json
import os
import re
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor

sys.dont_write_bytecode = True  # keep the source tree clean
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from split import thread_key  # noqa: E402

# Rules that name no specific class: a label `other:<desc>` (a failure outside
# the taxonomy) counts as right when the primary rule is one of these.
GENERIC_RULES = {"py.exception", "py.runtime-error", "py.assertion", "py.traceback-cut", "log.error-line"}
HEALTHY_FORBIDDEN_WARNINGS = {"ds.fp16.overflow"}
TAIL_LINES = 30
NBINS = 10


def is_generic(rule):
    return bool(rule) and (rule in GENERIC_RULES or rule.startswith("py."))


def matches(label_class, rule):
    """Whether a diagnosed rule is the label's class. `other:...` labels are
    matched by any generic rule and by no specific one."""
    if not rule:
        return False
    if label_class.startswith("other:"):
        return is_generic(rule)
    return rule == label_class


def distinct(seq):
    out = []
    for x in seq:
        if x and x not in out:
            out.append(x)
    return out


def diagnose(ddx, path):
    """{'incidents', 'ranked', 'rc', 'error'}; 'ranked' is the top-k order:
    the distinct rules of `differential`, else of `incidents`."""
    try:
        p = subprocess.run([ddx, "diagnose", "--format", "json", path],
                           capture_output=True, text=True, timeout=60)
    except subprocess.TimeoutExpired:
        return {"incidents": [], "ranked": [], "rc": None, "error": "timed out after 60 s"}
    if p.returncode not in (0, 1):
        return {"incidents": [], "ranked": [], "rc": p.returncode,
                "error": f"exit {p.returncode}: {p.stderr.strip()[:300]}"}
    try:
        out = json.loads(p.stdout)
    except ValueError as e:
        return {"incidents": [], "ranked": [], "rc": p.returncode, "error": f"output is not JSON: {e}"}
    incs = [i for i in (out.get("incidents") or []) if isinstance(i, dict)]
    diff = out.get("differential")
    if isinstance(diff, list) and diff:
        ranked = distinct(d.get("rule") for d in diff if isinstance(d, dict))
        from_diff = True
    else:
        ranked = distinct(i.get("rule") for i in incs)
        from_diff = False
    return {"incidents": incs, "ranked": ranked, "from_differential": from_diff,
            "rc": p.returncode, "error": None, "tool": out.get("tool")}


def primary(d):
    return d["incidents"][0] if d["incidents"] else None


def score(label_class, d):
    """Per-diagnosis facts used by every table."""
    incs = d["incidents"]
    p = primary(d)
    rule = p.get("rule") if p else None
    conf = p.get("confidence") if p else None
    errors = [i for i in incs if i.get("severity") == "error"]
    return {
        "got": rule or ("ddx error" if d["error"] else "none"),
        "error": bool(d["error"]),
        "top1": matches(label_class, rule),
        "top3": any(matches(label_class, r) for r in d["ranked"][:3]),
        "silent": not incs,
        "no_error": not errors and d["rc"] != 1,
        "confidence": float(conf) if isinstance(conf, (int, float)) else None,
        "inferred": bool(p.get("inferred", False)) if p else False,
        "line": p.get("line") if p else None,
        "rank": p.get("rank") if p else None,
        "fp16_warning": any(i.get("severity") == "warning" and i.get("rule") in HEALTHY_FORBIDDEN_WARNINGS
                            for i in incs),
        "warning": any(i.get("severity") == "warning" for i in incs),
        "diff_disagrees": bool(d.get("from_differential") and p and d["ranked"] and d["ranked"][0] != rule),
    }


def healthy_ok(s):
    # a normal run gets no error and no warning at all (info, e.g. "the log ends
    # mid-training", is allowed: a cut paste and a hang read alike)
    return s["no_error"] and not s["warning"] and not s["error"]


def rate(n, d):
    return n / d if d else None


def pct(n, d):
    return f"{n}/{d} ({n / d:.1%})" if d else f"{n}/0 (-)"


def summary(recs):
    """Counts over a list of records (one label each)."""
    fail = [r for r in recs if r["class"] != "none"]
    healthy = [r for r in recs if r["class"] == "none"]
    ranked = [r for r in fail if r["initiating_rank"] is not None]
    s = {
        "logs": len(recs),
        "failure_logs": len(fail),
        "top1": sum(r["s"]["top1"] for r in fail),
        "top3": sum(r["s"]["top3"] for r in fail),
        "silent": sum(r["s"]["silent"] for r in fail),
        "silent_no_error": sum(r["s"]["no_error"] for r in fail),
        "healthy_logs": len(healthy),
        "healthy_ok": sum(healthy_ok(r["s"]) for r in healthy),
        "healthy_with_error": sum(not r["s"]["no_error"] for r in healthy),
        "healthy_with_fp16_warning": sum(r["s"]["fp16_warning"] for r in healthy),
        "rank_right": sum(r["s"]["rank"] == r["initiating_rank"] for r in ranked),
        "rank_total": len(ranked),
        "differential_disagrees_with_primary": sum(r["s"]["diff_disagrees"] for r in recs),
    }
    for k in ("top1", "top3", "silent", "silent_no_error"):
        s[k + "_rate"] = rate(s[k], s["failure_logs"])
    s["healthy_ok_rate"] = rate(s["healthy_ok"], s["healthy_logs"])
    s["rank_rate"] = rate(s["rank_right"], s["rank_total"])
    return s


def calibration(recs):
    """Reliability table of the primary confidence on failure logs that got an
    incident: 10 bins of width 0.1 (1.0 goes to the last)."""
    pts = [(r["s"]["confidence"], r["s"]["top1"]) for r in recs
           if r["class"] != "none" and not r["s"]["silent"] and r["s"]["confidence"] is not None]
    bins = []
    for b in range(NBINS):
        inb = [(c, ok) for c, ok in pts if min(int(max(c, 0.0) * NBINS), NBINS - 1) == b]
        n = len(inb)
        bins.append({"lo": b / NBINS, "hi": (b + 1) / NBINS, "n": n,
                     "mean_confidence": sum(c for c, _ in inb) / n if n else None,
                     "accuracy": sum(ok for _, ok in inb) / n if n else None})
    N = len(pts)
    ece = sum(b["n"] / N * abs(b["accuracy"] - b["mean_confidence"]) for b in bins if b["n"]) if N else None
    excluded = sum(1 for r in recs if r["class"] != "none") - N
    return {"n": N, "excluded_silent": excluded, "bins": bins, "ece": ece,
            "mean_confidence": sum(c for c, _ in pts) / N if N else None,
            "accuracy": sum(ok for _, ok in pts) / N if N else None}


# What a reader would call a sign of failure in what is left of a paste
# (tool-independent, so the ablation can tell "silent although the text
# shows a failure" from "nothing left to say anything about").
FAILURE_SIGN = re.compile(
    rb"Traceback \(most recent call last\)|File \"[^\"]+\", line \d+|\b[A-Z]\w*(?:Error|Exception)\b"
    rb"|\b(?:ERROR|FATAL|CRITICAL)\b|exit ?code[:=]? ?-?[1-9]|exited with|\bKilled\b|Segmentation fault"
    rb"|core dumped|terminate called|\bSIG(?:TERM|KILL|SEGV|ABRT|BUS)\b")


def read_lines(path):
    with open(path, "rb") as fh:
        return fh.read().splitlines(keepends=True)  # \n, \r\n and \r, as ddx counts lines


def ablation_eligible(r):
    s = r["s"]
    return (r["class"] != "none" and r["confidence"] == "high" and s["top1"] and not s["inferred"]
            and isinstance(s["line"], int) and s["line"] >= 1)


def ablation_counts(xs):
    """top-1/top-3/silent/inferred/no-error counts and rates over ablated cuts."""
    n = len(xs)
    out = {"n": n,
           "top1": sum(x["top1"] for x in xs), "top3": sum(x["top3"] for x in xs),
           "silent": sum(x["silent"] for x in xs), "inferred": sum(x["inferred"] for x in xs),
           "no_error": sum(x["no_error"] for x in xs)}
    for k in ("top1", "top3", "silent", "inferred"):
        out[k + "_rate"] = rate(out[k], n)
    return out


def ablation_summary(recs):
    """Per variant, the headline numbers count only the cuts that still show a
    failure sign (FAILURE_SIGN): a cut with none left gives a reader nothing to
    diagnose either. 'all' holds the same counts over every cut, 'no_sign' and
    'empty' how many cuts had no sign left / nothing at all (context)."""
    out = {"eligible": len(recs)}
    for v in ("truncated", "tail"):
        xs = [r["ablation"][v] for r in recs]
        signed = [x for x in xs if x["sign"]]
        out[v] = ablation_counts(signed)
        out[v]["all"] = ablation_counts(xs)
        out[v]["no_sign"] = len(xs) - len(signed)
        out[v]["empty"] = sum(x["empty"] for x in xs)
    out["tail_unchanged"] = sum(1 for r in recs if r["ablation"]["tail_unchanged"])
    return out


def load_parts(a):
    if a.labels:
        parts = []
        for f in a.labels:
            name = os.path.basename(os.path.dirname(os.path.abspath(f))) or f
            if any(n == name for n, _ in parts):
                name = os.path.relpath(f)
            parts.append((name, f))
        return parts, []
    parts, absent = [], []
    for name in ("dev", "held"):
        f = os.path.join(a.corpus, name, "labels.jsonl")
        if os.path.exists(f):
            parts.append((name, f))
        else:
            absent.append(name)
    return parts, absent


def main():
    ap = argparse.ArgumentParser(description="Score ddx on the labelled corpus (dev and held).")
    ap.add_argument("ddx")
    ap.add_argument("--labels", action="append",
                    help="labels.jsonl to evaluate instead of dev/ and held/ (repeatable)")
    ap.add_argument("--corpus", default=HERE, help="corpus root holding dev/ and held/ (default: this folder)")
    ap.add_argument("--all", action="store_true", help="count low-confidence labels in the main numbers too")
    ap.add_argument("--quiet", action="store_true", help="print only the summary lines and the checks")
    ap.add_argument("--min-accuracy", type=float, default=0.85,
                    help="minimum dev top-1 on medium/high labels (default 0.85)")
    ap.add_argument("--min-held", type=float, default=0.0, help="minimum held top-1 on medium/high labels")
    ap.add_argument("--max-silent", type=float, default=None,
                    help="maximum share of failure logs without any incident, per part (0..1)")
    ap.add_argument("--max-ece", type=float, default=None, help="maximum expected calibration error, dev+held")
    ap.add_argument("--min-ablation-top3", type=float, default=0.0,
                    help="minimum ablation top-3 over the cuts that still show a failure sign, "
                         "truncated and tail-30 alike, dev+held")
    ap.add_argument("--no-ablation", action="store_true", help="skip the ablation benchmark")
    ap.add_argument("--markdown", metavar="FILE", help="write the tables as Markdown")
    ap.add_argument("--json", metavar="FILE", help="write the numbers as JSON")
    ap.add_argument("--jobs", type=int, default=4, help="parallel ddx processes (default 4)")
    a = ap.parse_args()

    if not (os.path.isfile(a.ddx) and os.access(a.ddx, os.X_OK)):
        print(f"eval.py: {a.ddx} is not an executable (run make build)", file=sys.stderr)
        return 2
    parts, absent = load_parts(a)
    recs = []
    for name, f in parts:
        folder = os.path.dirname(os.path.abspath(f))
        with open(f, encoding="utf-8") as fh:
            for line in fh:
                if not line.strip():
                    continue
                lab = json.loads(line)
                recs.append({"part": name, "file": lab["file"], "path": os.path.join(folder, lab["file"]),
                             "class": lab["class"], "confidence": lab.get("confidence") or "low",
                             "initiating_rank": lab.get("initiating_rank"), "source": lab.get("source")})
    errors = []
    with ThreadPoolExecutor(max_workers=max(1, a.jobs)) as pool:
        diags = list(pool.map(lambda r: diagnose(a.ddx, r["path"]), recs))
        for r, d in zip(recs, diags):
            r["diag"] = d
            r["s"] = score(r["class"], d)
            if d["error"]:
                errors.append(f"{r['part']}/{r['file']}: {d['error']}")
        for r in recs:
            r["main"] = a.all or r["confidence"] != "low"

        ablated = [] if a.no_ablation else [r for r in recs if ablation_eligible(r)]
        with tempfile.TemporaryDirectory(prefix="ddx-ablation-") as tmp:
            jobs = []
            for n, r in enumerate(ablated):
                lines = read_lines(r["path"])
                cut = lines[:r["s"]["line"] - 1]
                tail = lines[-TAIL_LINES:]
                r["ablation"] = {"tail_unchanged": len(lines) <= TAIL_LINES}
                r["ablation"]["sign"] = {"truncated": bool(FAILURE_SIGN.search(b"".join(cut))),
                                         "tail": bool(FAILURE_SIGN.search(b"".join(tail)))}
                # the decisive line was the paste's first (non-blank) line: nothing is left
                r["ablation"]["empty"] = {"truncated": not any(x.strip() for x in cut),
                                          "tail": not any(x.strip() for x in tail)}
                for v, body in (("truncated", cut), ("tail", tail)):
                    d = os.path.join(tmp, f"{n}-{v}")
                    os.mkdir(d)
                    p = os.path.join(d, r["file"])
                    with open(p, "wb") as fh:
                        fh.write(b"".join(body))
                    jobs.append((r, v, p))
            res = list(pool.map(lambda j: diagnose(a.ddx, j[2]), jobs))
            for (r, v, p), d in zip(jobs, res):
                r["ablation"][v] = score(r["class"], d)
                r["ablation"][v]["sign"] = r["ablation"]["sign"][v]
                r["ablation"][v]["empty"] = r["ablation"]["empty"][v]
                r["ablation"][v + "_got"] = d["ranked"][:3]
                if d["error"]:
                    errors.append(f"{r['part']}/{r['file']} ({v} ablation): {d['error']}")

    names = [n for n, _ in parts]
    groups = [(n, [r for r in recs if r["part"] == n]) for n in names]
    if len(names) > 1:
        groups.append(("all", recs))
    tools = distinct(d.get("tool") for d in diags)
    report = {"ddx": a.ddx, "tool": ", ".join(tools) or None, "all_labels_in_main": a.all, "absent_parts": absent, "parts": {}}
    for n, rs in groups:
        main_rs = [r for r in rs if r["main"]]
        low_rs = [r for r in rs if r["confidence"] == "low"]
        report["parts"][n] = {
            "main": summary(main_rs),
            "low": summary(low_rs),
            "calibration": calibration(main_rs),
            "ablation": None if a.no_ablation else ablation_summary([r for r in rs if "ablation" in r]),
        }
    per_class = collections.OrderedDict()
    for r in sorted((r for r in recs if r["main"]), key=lambda r: r["class"]):
        ok = healthy_ok(r["s"]) if r["class"] == "none" else r["s"]["top1"]
        c = per_class.setdefault(r["class"], {n: [0, 0] for n in names})
        c[r["part"]][1] += 1
        c[r["part"]][0] += bool(ok)
    report["per_class"] = per_class
    misses = []
    for r in recs:
        if not r["main"]:
            continue
        if r["class"] == "none":
            if not healthy_ok(r["s"]):
                misses.append({"part": r["part"], "file": r["file"], "want": "none", "got": r["s"]["got"],
                               "top3": r["diag"]["ranked"][:3]})
        elif not r["s"]["top1"]:
            misses.append({"part": r["part"], "file": r["file"], "want": r["class"], "got": r["s"]["got"],
                           "top3": r["diag"]["ranked"][:3]})
    report["misses"] = misses
    report["ablation_misses"] = [
        {"part": r["part"], "file": r["file"], "want": r["class"], "line": r["s"]["line"], "variant": v,
         "top3": r["ablation"][v + "_got"]}
        for r in recs if "ablation" in r for v in ("truncated", "tail") if not r["ablation"][v]["top3"]]
    for m in report["ablation_misses"]:
        m["failure_sign"] = next(r["ablation"][m["variant"]]["sign"] for r in recs
                                 if "ablation" in r and r["part"] == m["part"] and r["file"] == m["file"])
    report["ddx_errors"] = errors

    # checks
    checks = []

    def check(name, ok, detail):
        checks.append({"check": name, "ok": bool(ok), "detail": detail})

    P = report["parts"]
    dev_name = "dev" if "dev" in P else ("all" if "all" in P else names[0] if names else None)
    if dev_name:
        m = P[dev_name]["main"]
        v = m["top1_rate"] or 0.0
        check(f"top-1 {dev_name} >= {a.min_accuracy:.0%}", m["failure_logs"] and v >= a.min_accuracy,
              f"{pct(m['top1'], m['failure_logs'])}")
    if "held" in P and P["held"]["main"]["failure_logs"]:
        m = P["held"]["main"]
        check(f"top-1 held >= {a.min_held:.0%}", m["top1_rate"] >= a.min_held, pct(m["top1"], m["failure_logs"]))
    herr = [f"{r['part']}/{r['file']}" for r in recs if r["main"] and r["class"] == "none" and not r["s"]["no_error"]]
    check("no error on healthy logs", not herr, ", ".join(herr) or "0")
    if a.max_silent is not None:
        for n in names:
            m = P[n]["main"]
            check(f"silent {n} <= {a.max_silent:.0%}", (m["silent_rate"] or 0.0) <= a.max_silent,
                  pct(m["silent"], m["failure_logs"]))
    top = "all" if "all" in P else (names[0] if names else None)
    if a.max_ece is not None and top:
        e = P[top]["calibration"]["ece"]
        check(f"ECE {top} <= {a.max_ece:.3f}", e is not None and e <= a.max_ece, "-" if e is None else f"{e:.3f}")
    if a.min_ablation_top3 > 0 and top:
        ab = P[top]["ablation"]
        for v in ("truncated", "tail"):
            x = ab[v] if ab else {"n": 0}
            check(f"ablation {v} top-3 {top} (cuts with a failure sign) >= {a.min_ablation_top3:.0%}",
                  x["n"] and x["top3_rate"] >= a.min_ablation_top3,
                  pct(x.get("top3", 0), x["n"]) if x["n"] else "no cut with a failure sign")
    if "dev" in names and "held" in names:
        dev_threads = {thread_key(r["source"]) for r in recs if r["part"] == "dev"}
        leaks = sorted(f"held/{r['file']}" for r in recs if r["part"] == "held" and thread_key(r["source"]) in dev_threads)
        check("no thread in both dev and held", not leaks, ", ".join(leaks) or "0")
    check("ddx ran on every input", not errors, f"{len(errors)} failure(s)")
    report["checks"] = checks

    print_text(report, names, a)
    if a.markdown:
        with open(a.markdown, "w", encoding="utf-8") as fh:
            fh.write(markdown(report, names, a))
    if a.json:
        with open(a.json, "w", encoding="utf-8") as fh:
            json.dump(report, fh, indent=2)
            fh.write("\n")
    failed = sum(not c["ok"] for c in checks)
    print(f"{len(checks) - failed} passed, {failed} failed")
    return 1 if failed else 0


# ---------------------------------------------------------------- output


def f_rate(x):
    return "-" if x is None else f"{x:.1%}"


def f_num(x, nd=2):
    return "-" if x is None else f"{x:.{nd}f}"


def summary_rows(report, which):
    rows = []
    for n, p in report["parts"].items():
        m = p[which]
        rows.append([n, str(m["logs"]),
                     pct(m["top1"], m["failure_logs"]), pct(m["top3"], m["failure_logs"]),
                     pct(m["silent"], m["failure_logs"]), pct(m["silent_no_error"], m["failure_logs"]),
                     pct(m["healthy_ok"], m["healthy_logs"]), pct(m["rank_right"], m["rank_total"]),
                     f_num(p["calibration"]["ece"], 3) if which == "main" else "-"])
    return rows


SUMMARY_HEAD = ["part", "logs", "top-1", "top-3", "silent", "no error incident", "healthy ok", "initiating rank", "ECE"]
CAL_HEAD = ["confidence", "n", "mean conf", "accuracy"]
ABL_HEAD = ["part", "eligible", "truncated with a failure sign", "truncated top-1", "truncated top-3",
            "truncated silent", "truncated, every cut: top-1 / top-3 / silent", "truncated without a sign (empty)",
            "tail-30 with a failure sign", "tail-30 top-1", "tail-30 top-3", "tail-30 silent",
            "tail-30, every cut: top-1 / top-3 / silent"]


def ablation_rows(report):
    """Headline columns over the cuts that still show a failure sign; the
    every-cut and no-sign columns are context."""
    rows = []
    for n, p in report["parts"].items():
        ab = p["ablation"]
        if ab is None:
            continue
        row = [n, str(ab["eligible"])]
        for v in ("truncated", "tail"):
            x, al = ab[v], ab[v]["all"]
            row += [f"{x['n']}/{al['n']}", pct(x["top1"], x["n"]), pct(x["top3"], x["n"]), pct(x["silent"], x["n"])]
            if v == "truncated":
                row += [f"{al['top1']} / {al['top3']} / {al['silent']} of {al['n']}", f"{x['no_sign']} ({x['empty']})"]
            else:
                row += [f"{al['top1']} / {al['top3']} / {al['silent']} of {al['n']}"]
        rows.append(row)
    return rows


def cal_rows(c):
    return [[f"{b['lo']:.1f}-{b['hi']:.1f}", str(b["n"]), f_num(b["mean_confidence"]), f_rate(b["accuracy"])]
            for b in c["bins"]]


def text_table(head, rows, indent=""):
    w = [max(len(str(x)) for x in col) for col in zip(head, *rows)]
    out = [indent + "  ".join(h.ljust(w[i]) for i, h in enumerate(head))]
    for r in rows:
        out.append(indent + "  ".join(str(x).ljust(w[i]) for i, x in enumerate(r)))
    return "\n".join(x.rstrip() for x in out)


def md_table(head, rows):
    out = ["| " + " | ".join(head) + " |", "|" + "|".join("---" for _ in head) + "|"]
    out += ["| " + " | ".join(str(x).replace("|", "\\|") for x in r) + " |" for r in rows]
    return "\n".join(out)


def scope(a):
    return "all labels" if a.all else "medium/high labels"


def print_text(report, names, a):
    P = report["parts"]
    if not a.quiet:
        print(f"{'class':34} " + "  ".join(f"{n:>9}" for n in names))
        for k, c in report["per_class"].items():
            print(f"{k:34} " + "  ".join(f"{c[n][0]:>4}/{c[n][1]:<4}" if c[n][1] else f"{'':>9}" for n in names))
        for m in report["misses"]:
            print(f"MISS {m['part']}/{m['file']}: want {m['want']}, got {m['got']} (top-3 {', '.join(m['top3']) or '-'})")
        for e in report["ddx_errors"]:
            print(f"ERROR {e}")
        print()
    for n in report["absent_parts"]:
        print(f"{n}: absent (no {n}/labels.jsonl)")
    for n, p in P.items():
        m = p["main"]
        print(f"{n}: top-1 {pct(m['top1'], m['failure_logs'])}, top-3 {pct(m['top3'], m['failure_logs'])}; "
              f"silent {m['silent']}, no error incident {m['silent_no_error']}; "
              f"healthy ok {m['healthy_ok']}/{m['healthy_logs']} (with an error: {m['healthy_with_error']}); "
              f"initiating rank {m['rank_right']}/{m['rank_total']}; ECE {f_num(p['calibration']['ece'], 3)}"
              + (f"; differential[0] != primary on {m['differential_disagrees_with_primary']}"
                 if m["differential_disagrees_with_primary"] else ""))
    if not a.quiet:
        print(f"\nmain numbers ({scope(a)}; top-1/top-3/silent over failure logs):")
        print(text_table(SUMMARY_HEAD, summary_rows(report, "main"), "  "))
        print("low-confidence labels" + (" (already in the main numbers):" if a.all else " (not in the main numbers):"))
        print(text_table(SUMMARY_HEAD, summary_rows(report, "low"), "  "))
        for n, p in P.items():
            c = p["calibration"]
            print(f"\ncalibration {n}: {c['n']} failure logs with an incident "
                  f"({c['excluded_silent']} silent left out), mean confidence {f_num(c['mean_confidence'])}, "
                  f"accuracy {f_rate(c['accuracy'])}, ECE {f_num(c['ece'], 3)}")
            print(text_table(CAL_HEAD, cal_rows(c), "  "))
        rows = ablation_rows(report)
        if rows:
            print("\nablation (logs right at top-1, not inferred, high-confidence label): "
                  f"truncated = cut before the decisive line, tail-30 = last {TAIL_LINES} lines; "
                  "top-1/top-3/silent count the cuts that still show a failure sign, every cut is context")
            print(text_table(ABL_HEAD, rows, "  "))
            top = "all" if "all" in P else names[0]
            ab = P[top]["ablation"]
            print(f"  truncated answers marked inferred ({top}, cuts with a failure sign): {ab['truncated']['inferred']}/{ab['truncated']['n']}; "
                  f"tail-30 identical to the log (<= {TAIL_LINES} lines): {ab['tail_unchanged']}/{ab['eligible']}")
        print()
    else:
        for n, p in P.items():
            ab = p["ablation"]
            if ab:
                t, b = ab["truncated"], ab["tail"]
                print(f"{n} ablation ({ab['eligible']} logs; cuts with a failure sign): "
                      f"truncated {t['n']}: top-1 {pct(t['top1'], t['n'])}, top-3 {pct(t['top3'], t['n'])}, "
                      f"silent {t['silent']} (every cut {t['all']['n']}: top-1 {t['all']['top1']}, "
                      f"top-3 {t['all']['top3']}, silent {t['all']['silent']}; no sign {t['no_sign']}, empty {t['empty']}); "
                      f"tail-30 {b['n']}: top-1 {pct(b['top1'], b['n'])}, top-3 {pct(b['top3'], b['n'])}, "
                      f"silent {b['silent']} (every cut {b['all']['n']}: top-3 {b['all']['top3']})")
    for c in report["checks"]:
        print(f"{'PASS' if c['ok'] else 'FAIL'} {c['check']}: {c['detail']}")


def markdown(report, names, a):
    P = report["parts"]
    out = ["# Corpus accuracy", "",
           f"Generated by `tests/corpus/eval.py` with `{report['tool'] or os.path.basename(report['ddx'])}`. "
           "Definitions: tests/corpus/README.md.", ""]
    for n in report["absent_parts"]:
        out += [f"Part `{n}` is absent.", ""]
    out += [f"## Summary ({scope(a)})", "",
            "top-1, top-3, silent and no error incident are over the failure logs (label class not `none`); "
            "healthy ok over the `none` logs; initiating rank over the logs whose label names one.", "",
            md_table(SUMMARY_HEAD, summary_rows(report, "main")), "",
            "## Low-confidence labels" + (" (included above)" if a.all else " (not included above)"), "",
            md_table(SUMMARY_HEAD, summary_rows(report, "low")), "",
            "## Calibration", "",
            "Primary incident confidence on the failure logs that got an incident; accuracy = top-1; "
            "ECE = sum over bins of n_bin/N * |accuracy - mean confidence|.", ""]
    for n, p in P.items():
        c = p["calibration"]
        out += [f"### {n}: N = {c['n']}, ECE = {f_num(c['ece'], 3)} "
                f"(mean confidence {f_num(c['mean_confidence'])}, accuracy {f_rate(c['accuracy'])}, "
                f"{c['excluded_silent']} silent logs left out)", "",
                md_table(CAL_HEAD, cal_rows(c)), ""]
    rows = ablation_rows(report)
    if rows:
        out += ["## Ablation", "",
                "Logs whose primary incident is right, not inferred, with a high-confidence label. "
                "Truncated: the log cut just before the decisive line; "
                f"tail-30: the last {TAIL_LINES} lines of the log only. "
                "top-1, top-3 and silent count only the cuts that still show a failure sign "
                "(a traceback, an exception, an ERROR line, an exit status or a signal); "
                "the every-cut and without-a-sign columns are context.", "",
                md_table(ABL_HEAD, rows), ""]
    out += ["## Per class", "", md_table(["class"] + names,
                                          [[f"`{k}`"] + [f"{c[n][0]}/{c[n][1]}" if c[n][1] else "" for n in names]
                                           for k, c in report["per_class"].items()]), ""]
    if report["misses"]:
        out += ["## Misses", "", md_table(["part", "file", "label", "primary", "top-3"],
                                          [[m["part"], m["file"], f"`{m['want']}`", f"`{m['got']}`",
                                            ", ".join(m["top3"])] for m in report["misses"]]), ""]
    out += ["## Checks", "", md_table(["check", "result", "value"],
                                      [[c["check"], "pass" if c["ok"] else "FAIL", c["detail"]]
                                       for c in report["checks"]]), ""]
    return "\n".join(out)


if __name__ == "__main__":
    sys.exit(main())
