#!/usr/bin/env python3
"""eval_gen.py - score ddx on generated multi-rank failure logs.

  eval_gen.py DDX [--min 0.95] [--seeds 2] [--jobs 2] [--verbose] [--keep DIR]
                  [--rank-cases on|off|only] [--rank-seeds 2] [--min-rank-new [0.98]] [--min-rank-unknown X]

Generates a matrix of logs with genlog.py (every dialect x every kind x world
sizes x ChildFailedError table on/off x interleaving on/off x seeds; the none
dialect is single node, so only world size 8), runs
`DDX diagnose --format json FILE` on each and compares incidents[0] with the
sidecar: the class is right when incidents[0].rule == class, the rank is right
when incidents[0].rank == initiating_rank. Prints a table per dialect, per
kind, per world size and per collateral mode, the failures with --verbose, and
a final line `1 passed, 0 failed` when the initiating-rank accuracy meets --min
(the per-case counts are printed on the line before).
Exit status 1 when the initiating-rank accuracy is below --min, 2 on errors.

The rank cases (--rank-cases on, the default; `only` skips the grid above) are
logs whose cause line carries no global rank (genlog.py --prefix, --spawn,
--per-task-files, --table multi, --launcher-summary off, --skew-one,
--silent-peers; a folder of per-task files is passed to ddx as a folder). The
sidecar says whether the rank is knowable from the text. Scored per case:
knowable: incidents[0].rank must be the initiator; unknowable: rank must be null
(naming any rank is an error; the incident's host is reported against the
cause's host); always: a non-null (rank, local_rank) pair must agree with the
layout (local_rank == rank % 8; any violation is an error). rank_candidates and
rank_evidence are read when ddx prints them. They are reported per option and
gate the exit status only when --min-rank-new is given (knowable accuracy below
it, or any inconsistent pair, fails; --min-rank-unknown X also gates the share
of unknowable cases ddx leaves unknown).
"""
import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import zlib
from concurrent.futures import ProcessPoolExecutor

sys.dont_write_bytecode = True  # keep the source tree clean
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import genlog  # noqa: E402


def cases(a):
    out = []
    for seed in range(1, a.seeds + 1):
        for d in a.dialects:
            for k in a.kinds:
                for ws in a.sizes:
                    if d == "none" and ws != 8:
                        continue
                    for table in ("on", "off"):
                        for il in ("on", "off"):
                            name = "%s-%s-%d-t%s-i%s-s%d" % (d, k, ws, table, il, seed)
                            cs = zlib.crc32(name.encode()) % 1000003
                            out.append((name, ["--seed", str(cs), "--dialect", d, "--kind", k, "--world-size", str(ws),
                                               "--table", table, "--interleave", il]))
    return out


# ---------------------------------------------------------------- rank cases
# (option, [argv]): each option is a block of the grid; each case's seed is a hash of its name.
SIZES_RC = (8, 32, 256, 1024)


def rank_grid():
    g = []

    def add(opt, *argv):
        g.append((opt, [str(x) for x in argv]))
    # host-only prefix: pdsh `worker-3: ` (DeepSpeed launcher), srun through a `node3: ` wrapper
    for d in ("pdsh", "srun"):
        for ws in SIZES_RC:
            for k, cols in (("assert", ("kill", "hang")), ("oom", ("kill", "hang")), ("batch-assert", ("kill",))):
                for c in cols:
                    add("host", "--prefix", "host", "--dialect", d, "--kind", k, "--world-size", ws, "--collateral", c)
    # torchrun --tee `[defaultN]:` on several nodes (two: 16), no host prefix (srun without --label)
    for ws in (16, 32, 256, 1024):
        for k, cols in (("assert", ("kill", "hang")), ("oom", ("kill", "hang")), ("nccl-system", ("kill", "hang")),
                        ("segfault", ("kill",))):
            for c in cols:
                add("local", "--prefix", "local", "--kind", k, "--world-size", ws, "--collateral", c)
    # `node-003: [default1]:`, the node from the host (rendezvous block or not)
    for ws in (32, 256, 1024):
        for k in ("assert", "nccl-system"):
            for rz in ("on", "off"):
                for c in ("kill", "hang"):
                    add("host-local", "--prefix", "host-local", "--kind", k, "--world-size", ws, "--rendezvous", rz,
                        "--collateral", c)
    # srun -l over torchrun: `3: ` (node task id), `3: [default1]:`; group_rank = task id or not
    for pre in ("task", "task-local"):
        for ws in (8, 32, 256):
            for k in ("assert", "oom", "batch-assert"):
                for no in ("static", "c10d"):
                    add(pre, "--prefix", pre, "--kind", k, "--world-size", ws, "--node-order", no)
    # no prefix at all (srun without --label over torchrun)
    for ws in (8, 32, 256, 1024):
        for k, cols in (("assert", ("kill", "hang")), ("oom", ("kill",)), ("segfault", ("kill",))):
            for c in cols:
                add("bare", "--prefix", "bare", "--kind", k, "--world-size", ws, "--collateral", c)
    # a single process's paste: every line [rankN]:
    for ws in (8, 32, 256):
        for k in ("oom", "assert", "nccl-system", "batch-assert"):
            add("rank-all", "--prefix", "rank-all", "--kind", k, "--world-size", ws)
    # srun --label (task id = global rank): the control
    for ws in (8, 256):
        for k in ("assert", "oom"):
            add("label", "--prefix", "label", "--kind", k, "--world-size", ws)
    # torch.multiprocessing.spawn per node: "-- Process N terminated with the following error"
    for pre in ("host", "task", "bare"):
        for ws in (8, 32, 256):
            for k in ("oom", "assert", "segfault"):
                add("spawn", "--spawn", "on", "--prefix", pre, "--kind", k, "--world-size", ws)
    # Slurm --output=slurm-%j-%t.out: a folder of per-task files
    for pre, extra in (("label", ()), ("task", ()), ("task-local", ()), ("task", ("--spawn", "on"))):
        for ws in (8, 32, 256):
            for k in ("oom", "assert"):
                add("files", "--per-task-files", "on", "--prefix", pre, *extra, "--kind", k, "--world-size", ws)
    # torchrun's table: none, one failure, several failures in one poll (with and without @record)
    for pre in ("local", "host-local", "task-local"):
        for ws in (32, 256):
            for k in ("assert", "oom"):
                for t in (("--table", "off"), ("--table", "on", "--collateral", "kill"),
                          ("--table", "multi", "--record", "on"), ("--table", "multi", "--record", "off")):
                    add("table", "--prefix", pre, "--kind", k, "--world-size", ws, *t)
    # no launcher summary at all
    for pre, d in (("host", "pdsh"), ("host", "srun"), ("local", None), ("host-local", None), ("task-local", None),
                   ("task", None), ("bare", None)):
        for ws in (32, 256):
            for c in ("kill", "hang"):
                add("no-summary", "--launcher-summary", "off", "--prefix", pre, *(("--dialect", d) if d else ()),
                    "--kind", "assert", "--world-size", ws, "--collateral", c)
    # one node's clock shifted (seconds to minutes)
    for sk in (45, 900):
        for pre, extra in (("host-local", ()), ("task-local", ()), ("host", ("--dialect", "pdsh")),
                           ("task", ("--per-task-files", "on"))):
            for k in ("assert", "oom"):
                add("skew", "--skew-one", sk, "--skew", 2, "--prefix", pre, *extra, "--kind", k, "--world-size", 32)
    # look-alike ranks (same local rank elsewhere, or the same node) that print nothing
    for n in (1, 3):
        for pre, extra in (("local", ()), ("host", ("--dialect", "pdsh")), ("task-local", ())):
            for k in ("assert", "oom"):
                for c in ("kill", "hang"):
                    add("silent", "--silent-peers", n, "--prefix", pre, *extra, "--kind", k, "--world-size", 32,
                        "--collateral", c)
        for ws in (32, 256):
            for k in ("oom", "assert"):
                add("silent", "--silent-peers", n, "--spawn", "on", "--prefix", "bare", "--kind", k, "--world-size", ws)
    # two nodes, `[default1]:`: the same local rank on the other node prints nothing
    for k in ("oom", "assert"):
        for c in ("kill", "hang"):
            add("silent", "--silent-peers", 1, "--prefix", "local", "--kind", k, "--world-size", 16, "--collateral", c)
    return g


def rank_cases(a):
    out = []
    seen = {}
    for seed in range(1, a.rank_seeds + 1):
        for opt, argv in rank_grid():
            base = "rc-%s-%s-s%d" % (opt, "-".join(x.lstrip("-") for x in argv if x not in ("on",)), seed)
            seen[base] = seen.get(base, 0) + 1
            name = base if seen[base] == 1 else "%s-%d" % (base, seen[base])
            cs = zlib.crc32(name.encode()) % 1000003
            out.append((name, ["--seed", str(cs)] + argv, opt))
    return out


def run_rank_one(job):
    name, argv, opt, folder, ddx, timeout = job
    files = "--per-task-files" in argv
    path = os.path.join(folder, name if files else name + ".log")
    res = {"name": name, "file": path, "opt": opt, "argv": argv, "err": None, "inc": None}
    try:
        side = genlog.main(argv + ["-o", path])
    except (SystemExit, Exception) as e:  # a grid entry the generator refuses is a bug of the grid
        res["err"] = "genlog: %s" % e
        res["exp"] = None
        return res
    res["exp"] = side
    out = diagnose_json(ddx, path, timeout, res)
    if out is None:
        return res
    inc = (out.get("incidents") or [None])[0]
    if inc:
        res["inc"] = {k: inc.get(k) for k in ("rule", "rank", "local_rank", "host", "file", "line", "rank_candidates",
                                              "rank_evidence", "rank_note")}
    return res


def rank_verdict(r):
    """Scores one rank case: a dict of counters (0/1)."""
    e, inc = r["exp"], r["inc"] or {}
    v = {"cases": 1, "err": 1 if r["err"] else 0}
    if r["err"]:
        return v
    F = e["initiating_rank"]
    rank, local, host = inc.get("rank"), inc.get("local_rank"), inc.get("host")
    k = bool(e["knowable"])
    v["class"] = int(inc.get("rule") == e["class"])
    v["knowable"] = int(k)
    v["k_right"] = int(k and rank == F)
    v["unknowable"] = int(not k)
    v["u_unknown"] = int(not k and rank is None)
    v["u_named"] = int(not k and rank is not None)
    v["u_named_init"] = int(not k and rank == F)
    npn = e.get("nproc_per_node", 8)
    v["bad_pair"] = int(rank is not None and local is not None and local != rank % npn)
    v["local_wrong"] = int(local is not None and local != e["initiating_local_rank"])
    th = e.get("knowable_host")
    v["host_known"] = int(th is not None)
    v["host_right"] = int(th is not None and host == th)
    kn = e.get("knowable_node")
    v["u_node"] = int(not k and kn is not None)
    v["u_node_host"] = int(not k and kn is not None and host == e["hosts"][kn])
    cands = inc.get("rank_candidates")
    v["cands"] = int(isinstance(cands, list))
    v["cands_has_init"] = int(isinstance(cands, list) and F in cands)
    v["evidence"] = int(isinstance(inc.get("rank_evidence"), list))
    v["ok"] = int((v["k_right"] if k else v["u_unknown"]) and not v["bad_pair"])
    return v


def rank_table(title, keyf, rs):
    groups = {}
    for r in rs:
        groups.setdefault(keyf(r), []).append(r)
    cols = ("cases", "knowable", "k_right", "unknowable", "u_unknown", "u_named", "bad_pair", "host_known",
            "host_right", "class")
    print("\n%-20s %5s %6s %6s %6s %6s %6s %6s %5s %5s %6s %6s %7s" % (
        title, "cases", "know", "right", "right%", "unkn", "unk=?", "named", "pair!", "host", "h-ok", "class",
        "errors"))

    def line(key, grp):
        t = {c: sum(rank_verdict(r).get(c, 0) for r in grp) for c in cols + ("err",)}
        print("%-20s %5d %6d %6d %5.1f%% %6d %6d %6d %6d %5d %5d %6d %7d" % (
            key, t["cases"], t["knowable"], t["k_right"], 100.0 * t["k_right"] / max(t["knowable"], 1),
            t["unknowable"], t["u_unknown"], t["u_named"], t["bad_pair"], t["host_known"], t["host_right"],
            t["class"], t["err"]))
    for key in sorted(groups, key=lambda x: (str(type(x)), x)):
        line(key, groups[key])
    line("all", rs)


def rank_report(a, rs):
    print("\n=== rank cases: the cause line carries no global rank (%d cases) ===" % len(rs))
    print("know: the rank is knowable from the text; right: ddx names it; unkn: not knowable; unk=?: ddx says "
          "rank null;\nnamed: ddx names a rank although it is not knowable (an error); pair!: (rank, local_rank) "
          "disagree with the layout;\nhost/h-ok: cases whose cause line shows the host / ddx's incident host is it")
    ok_rs = [r for r in rs if not r["err"]]
    rank_table("option", lambda r: r["opt"], rs)
    rank_table("prefix", lambda r: r["exp"]["options"]["prefix"] if r["exp"] else "?", rs)
    rank_table("world size", lambda r: r["exp"]["world_size"] if r["exp"] else 0, rs)
    rank_table("kind", lambda r: r["exp"]["kind"] if r["exp"] else "?", rs)
    rank_table("collateral", lambda r: r["exp"]["options"]["collateral"] if r["exp"] else "?", rs)
    rank_table("knowable by", lambda r: "+".join(r["exp"]["knowable_by"]) or "-" if r["exp"] else "?", rs)
    tot = {}
    for r in rs:
        for c, x in rank_verdict(r).items():
            tot[c] = tot.get(c, 0) + x
    g = lambda c: tot.get(c, 0)  # noqa: E731
    print("\nrank cases: knowable %d, ddx right on %d (%.1f%%); unknowable %d, ddx says unknown on %d (%.1f%%), "
          "names a rank on %d (the initiator by chance on %d)" % (
              g("knowable"), g("k_right"), 100.0 * g("k_right") / max(g("knowable"), 1), g("unknowable"),
              g("u_unknown"), 100.0 * g("u_unknown") / max(g("unknowable"), 1), g("u_named"), g("u_named_init")))
    print("rank cases: inconsistent (rank, local_rank) pairs: %d; local_rank not the initiator's: %d; incident host "
          "right %d/%d where the cause line shows it; unknowable with a knowable node: %d, ddx's host is that node's "
          "on %d" % (g("bad_pair"), g("local_wrong"), g("host_right"), g("host_known"), g("u_node"), g("u_node_host")))
    print("rank cases: rank_candidates given %d (holding the initiator %d); rank_evidence given %d; class right %d/%d; "
          "errors %d" % (g("cands"), g("cands_has_init"), g("evidence"), g("class"), len(ok_rs), g("err")))
    if a.verbose:
        bad = [r for r in rs if not rank_verdict(r).get("ok")]
        if bad:
            print("\nrank-case failures (name: truth -> ddx rank/local_rank/host  [knowable by / candidates])%s:" % (
                "" if a.keep else "; regenerate with genlog.py ARGS -o FILE.log, or rerun with --keep DIR"))
        for r in bad:
            e, inc = r["exp"], r["inc"] or {}
            if r["err"]:
                print("  %s: %s" % (r["name"], r["err"]))
            else:
                how = "+".join(e["knowable_by"]) if e["knowable"] else "unknowable: %s candidates%s" % (
                    e["n_candidates"], (" on node %s (%s)" % (e["knowable_node"], e.get("knowable_host")))
                    if e.get("knowable_node") is not None else "")
                print("  %s: %s/%s local %s on %s -> %s/%s/%s/%s  [%s]" % (
                    os.path.basename(r["file"]), e["class"], e["initiating_rank"], e["initiating_local_rank"],
                    e["initiating_host"], inc.get("rule"), inc.get("rank"), inc.get("local_rank"), inc.get("host"),
                    how))
                if inc.get("rank_note"):
                    print("      ddx: %s" % inc["rank_note"])
            print("      args: %s" % " ".join(r["argv"]))
    return tot


def diagnose_json(ddx, path, timeout, res):
    """The JSON ddx prints for path, or None with res["err"] saying why."""
    try:
        p = subprocess.run([ddx, "diagnose", "--format", "json", path], capture_output=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        res["err"] = "timeout"
        return None
    if p.returncode not in (0, 1):
        res["err"] = "exit %d: %s" % (p.returncode, p.stderr.decode(errors="replace").strip()[:200])
        return None
    try:
        return json.loads(p.stdout)
    except ValueError as e:
        res["err"] = "bad json: %s" % e
        return None


def run_one(job):
    name, argv, folder, ddx, timeout = job
    path = os.path.join(folder, name + ".log")
    side = genlog.main(argv + ["-o", path])
    res = {"name": name, "file": path, "exp": side, "argv": argv, "rule": None, "rank": None, "err": None, "incidents": [],
           "noise_warnings": []}
    out = diagnose_json(ddx, path, timeout, res)
    if out is None:
        return res
    inc = out.get("incidents") or []
    if inc:
        res["rule"] = inc[0].get("rule")
        res["rank"] = inc[0].get("rank")
    res["incidents"] = [{k: i.get(k) for k in ("rule", "role", "rank", "local_rank", "host", "line", "fallback",
                                                "confidence")} for i in inc[:3]]
    # Precision: a warning the log's normal noise produced (warm-up overflows,
    # one step of allocator flushes, ...) is a false alarm.
    res["noise_warnings"] = sorted({i.get("rule") for i in inc
                                    if i.get("severity") == "warning" and i.get("rule") != side["class"]})
    return res


def score(rs):
    n = len(rs)
    c = sum(1 for r in rs if r["rule"] == r["exp"]["class"])
    k = sum(1 for r in rs if rank_ok(r))
    b = sum(1 for r in rs if r["rule"] == r["exp"]["class"] and rank_ok(r))
    return n, c, k, b


def rank_ok(r):
    """The grid's rank is right when ddx names the initiator, or, where the sidecar says the text cannot
    tell it (rank_knowable false: torchrun's pick among alike failures of one poll), when ddx names none."""
    if r["exp"].get("rank_knowable", True):
        return r["rank"] == r["exp"]["initiating_rank"]
    return r["rank"] is None


def table(title, keyf, rs):
    groups = {}
    for r in rs:
        groups.setdefault(keyf(r), []).append(r)
    print("\n%-14s %6s %9s %9s %9s %7s" % (title, "cases", "class", "rank", "both", "rank%"))
    for key in sorted(groups, key=lambda x: (str(type(x)), x)):
        n, c, k, b = score(groups[key])
        print("%-14s %6d %9d %9d %9d %6.1f%%" % (key, n, c, k, b, 100.0 * k / n))
    n, c, k, b = score(rs)
    print("%-14s %6d %9d %9d %9d %6.1f%%" % ("all", n, c, k, b, 100.0 * k / max(n, 1)))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("ddx", help="path to the ddx binary")
    ap.add_argument("--min", type=float, default=0.95, help="minimum initiating-rank accuracy (default 0.95)")
    ap.add_argument("--seeds", type=int, default=2)
    ap.add_argument("--jobs", type=int, default=min(2, os.cpu_count() or 1))
    ap.add_argument("--sizes", default="8,64,1024")
    ap.add_argument("--dialects", default=",".join(genlog.DIALECTS))
    ap.add_argument("--kinds", default=",".join(genlog.KINDS))
    ap.add_argument("--timeout", type=float, default=30)
    ap.add_argument("--keep", help="write the logs here and keep them")
    ap.add_argument("--verbose", "-v", action="store_true", help="list every failure")
    ap.add_argument("--rank-cases", choices=["on", "off", "only"], default="on",
                    help="the rank cases (cause lines without a global rank): on (default), off, only (skip the grid)")
    ap.add_argument("--rank-seeds", type=int, default=2, help="seeds of the rank cases (default 2)")
    ap.add_argument("--rank-options", help="comma-separated rank-case options to run (default: all)")
    ap.add_argument("--min-rank-new", type=float, nargs="?", const=0.98, default=None,
                    help="gate on the rank cases: minimum accuracy on the knowable ones (0.98 when given without a "
                         "value) and no inconsistent (rank, local_rank) pair; without it they are only reported")
    ap.add_argument("--min-rank-unknown", type=float, default=None,
                    help="also gate: minimum share of unknowable rank cases where ddx names no rank")
    a = ap.parse_args()
    a.sizes = [int(x) for x in a.sizes.split(",")]
    a.dialects = [x for x in a.dialects.split(",") if x]
    a.kinds = [x for x in a.kinds.split(",") if x]
    if not (os.path.isfile(a.ddx) and os.access(a.ddx, os.X_OK)):
        print("eval_gen: %s is not an executable" % a.ddx, file=sys.stderr)
        return 2
    ddx = os.path.abspath(a.ddx)
    folder = a.keep or tempfile.mkdtemp(prefix="ddx-gen-")
    os.makedirs(folder, exist_ok=True)
    rrs = []
    try:
        jobs = [(name, argv, folder, ddx, a.timeout) for name, argv in cases(a)] if a.rank_cases != "only" else []
        rjobs = []
        if a.rank_cases != "off":
            rfolder = os.path.join(folder, "rank")
            os.makedirs(rfolder, exist_ok=True)
            want = set(a.rank_options.split(",")) if a.rank_options else None
            rjobs = [(name, argv, opt, rfolder, ddx, a.timeout) for name, argv, opt in rank_cases(a)
                     if want is None or opt in want]
        if a.jobs > 1:
            with ProcessPoolExecutor(a.jobs) as ex:
                rs = list(ex.map(run_one, jobs, chunksize=4))
                rrs = list(ex.map(run_rank_one, rjobs, chunksize=2))
        else:
            rs = [run_one(j) for j in jobs]
            rrs = [run_rank_one(j) for j in rjobs]
    finally:
        if not a.keep:
            shutil.rmtree(folder, ignore_errors=True)
    checks = []  # (name, passed)
    code = 0
    if jobs:
        code = report_grid(a, rs, checks)
    if rjobs:
        tot = rank_report(a, rrs)
        kacc = tot.get("k_right", 0) / max(tot.get("knowable", 0), 1)
        uacc = tot.get("u_unknown", 0) / max(tot.get("unknowable", 0), 1)
        if a.min_rank_new is not None:
            checks.append(("rank cases: knowable accuracy %.1f%% >= %.1f%%" % (100 * kacc, 100 * a.min_rank_new),
                           kacc >= a.min_rank_new))
            checks.append(("rank cases: no inconsistent (rank, local_rank) pair (%d)" % tot.get("bad_pair", 0),
                           tot.get("bad_pair", 0) == 0))
            checks.append(("rank cases: no errors (%d)" % tot.get("err", 0), tot.get("err", 0) == 0))
        else:
            print("rank cases: reported only (gate with --min-rank-new [0.98])")
        if a.min_rank_unknown is not None:
            checks.append(("rank cases: unknowable left unknown %.1f%% >= %.1f%%" % (
                100 * uacc, 100 * a.min_rank_unknown), uacc >= a.min_rank_unknown))
    failed = [c for c, ok in checks if not ok]
    for c, ok in checks:
        print("%s %s" % ("ok  " if ok else "FAIL", c))
    # The tests are the thresholds; the cases above are the measurement.
    print("%d passed, %d failed" % (len(checks) - len(failed), len(failed)))
    if code:
        return code
    return 1 if failed else 0


def report_grid(a, rs, checks):
    """The default grid's tables; appends its check; returns 2 on errors."""
    errs = [r for r in rs if r["err"]]
    table("dialect", lambda r: r["exp"]["dialect"], rs)
    table("kind", lambda r: r["exp"]["kind"], rs)
    table("world size", lambda r: r["exp"]["world_size"], rs)
    table("collateral", lambda r: r["exp"]["options"]["collateral"], rs)
    fails = [r for r in rs if not (r["rule"] == r["exp"]["class"] and rank_ok(r))]
    if a.verbose and fails:
        print("\nfailures (file: expected class/rank @line -> got rule/rank; other incidents)%s:" % (
            "" if a.keep else "; regenerate one with genlog.py ARGS -o FILE.log, or rerun with --keep DIR"))
        for r in fails:
            e = r["exp"]
            o = e["options"]
            tag = "ws=%d torch=%s table=%s il=%s %s root=%s%s" % (e["world_size"], e["torch"], o["table"],
                                                                 o["interleave"], o["collateral"],
                                                                 e["launcher_root_cause_rank"],
                                                                 "" if e.get("rank_knowable", True) else
                                                                 " unknowable: expect rank null")
            got = r["err"] or "%s/%s" % (r["rule"], r["rank"])
            more = "; ".join("%s/%s/%s@%s" % (i["rule"], i["role"], i["rank"], i["line"]) for i in r["incidents"][1:])
            print("  %s: %s/%s @%s -> %s%s  [%s]" % (os.path.basename(r["file"]), e["class"], e["initiating_rank"],
                                                    e["line"], got, (" ; " + more) if more else "", tag))
            print("      args: %s" % " ".join(r["argv"]))
    for r in errs[:5]:
        print("error: %s: %s" % (r["name"], r["err"]), file=sys.stderr)
    noisy = [r for r in rs if r.get("noise_warnings")]
    print("\nwarnings from the logs' normal noise (warm-up overflows, one flush, ...): %d of %d cases%s" % (
        len(noisy), len(rs), (": " + ", ".join(sorted({w for r in noisy for w in r["noise_warnings"]}))) if noisy else ""))
    n, c, k, b = score(rs)
    acc = k / max(n, 1)
    print("\ninitiating rank right: %d/%d = %.1f%% (min %.1f%%); class right: %d/%d" % (
        k, n, 100 * acc, 100 * a.min, c, n))
    print("cases: %d with class and rank right, %d not" % (b, n - b))
    unk = [r for r in rs if not r["exp"].get("rank_knowable", True)]
    print("rank unknowable from the text (torchrun's pick among alike failures of one poll): %d cases, ddx names "
          "a rank on %d" % (len(unk), sum(1 for r in unk if r["rank"] is not None)))
    ok = not errs and acc >= a.min and not noisy
    checks.append(("grid: initiating rank %.1f%% >= %.1f%%, no errors, no noise warnings" % (100 * acc, 100 * a.min),
                   ok))
    return 2 if errs else 0


if __name__ == "__main__":
    sys.exit(main())
