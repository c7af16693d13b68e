#!/usr/bin/env python3
"""run.py - launch real (failing) PyTorch jobs under every launcher and record what a
terminal shows, with the truth of each case in a JSON sidecar.

  run.py --seed S --out DIR [--jobs 2] [--only MODE[,LAUNCHER]] [--sample N] [--timeout 60]

Cases: every (mode, launcher) pair of CASES below; the seed draws each case's number of
processes (2-4), its failing rank, whether main() carries torch's @record, and the
legacy launcher's --use_env. Each case runs under a pseudo-terminal (os.openpty; the
raw bytes are kept: CR LF, colours) with a hard timeout; a case that outlives it is
killed (its whole process group) and reported as a harness error, not recorded as a
case. Output per case: DIR/NAME.log (the terminal), DIR/NAME.json (the sidecar),
DIR/NAME.d/ (torchrun --log_dir: the per-rank files). The sidecar's `how` lists the
paths to give `ddx diagnose`, relative to DIR. --only takes a mode, a launcher, or
MODE,LAUNCHER (one case). --sample N keeps N cases spread over every mode and launcher
(a fixed choice for the seed). --relabel recomputes the rank truth (truth.py) of the
sidecars already in --out without running anything.
Needs Debian's python3-torch (1.13, CPU) and /usr/bin/python3.
Exit status: 0 when every case ran, 1 when any case failed to run as designed
(timeout, no failure, an expectation of the case missing from its text).
"""
import argparse
import errno
import json
import os
import pty  # noqa: F401  (documented dependency: os.openpty is pty's primitive)
import random
import re
import select
import shutil
import signal
import socket
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor

sys.dont_write_bytecode = True
HERE = os.path.dirname(os.path.abspath(__file__))
PY = "/usr/bin/python3"
TRAIN = os.path.join(HERE, "train.py")
SITEFIX = os.path.join(HERE, "sitefix")
sys.path.insert(0, HERE)
import truth  # noqa: E402

LAUNCHERS = ("torchrun", "tee", "logdir", "launch", "spawn")
ELASTIC = ("torchrun", "tee", "logdir", "launch")

# mode -> (class, which launchers, rank: "bad" (the failing rank) or None)
CASES = {
    "value": ("py.exception", LAUNCHERS, "bad"),
    "key": ("py.exception", LAUNCHERS, "bad"),
    "assert": ("py.assertion", LAUNCHERS, "bad"),
    "shape": ("py.runtime-error", LAUNCHERS, "bad"),
    "zerodiv": ("py.zero-division", LAUNCHERS, "bad"),
    "fnf": ("py.file-not-found", LAUNCHERS, "bad"),
    "sigkill": ("host.oom-killer", LAUNCHERS, "bad"),
    "segfault": ("proc.segfault", LAUNCHERS, "bad"),
    "sigbus": ("host.shm-exhausted", LAUNCHERS, "bad"),
    "hang": ("c10d.collective-timeout", LAUNCHERS, "bad"),
    "desync": ("c10d.collective-desync", LAUNCHERS, "bad"),
    "nan": ("train.nan-loss", LAUNCHERS, "bad"),
    "rdzv": ("c10d.store-timeout", LAUNCHERS, None),
    "rdzv-nodes": ("c10d.store-timeout", ("torchrun", "tee"), None),
    "port": ("c10d.address-in-use", LAUNCHERS, None),
    "missing-all": ("env.missing-module", LAUNCHERS, None),
    "missing-one": ("env.missing-module", LAUNCHERS, "bad"),
    "alloc": ("host.alloc-failure", LAUNCHERS, "bad"),
    "version-mismatch": ("env.version-mismatch", ("torchrun", "launch"), None),
}


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    p = s.getsockname()[1]
    s.close()
    return p


def plan(seed, mode, launcher):
    rng = random.Random("%d/%s/%s" % (seed, mode, launcher))
    n = rng.choice((3, 4)) if mode == "desync" else rng.choice((2, 2, 3, 4))
    return {
        "nproc": n,
        "bad": rng.randrange(n),
        "record": launcher in ELASTIC and rng.random() < 0.5,
        "use_env": launcher == "launch" and rng.random() < 0.5,
        "log": "all" if mode == "nan" or rng.random() < 0.5 else "rank0",
    }


def all_cases(seed):
    out = []
    for mode, (cls, launchers, _) in CASES.items():
        for la in launchers:
            out.append((mode, la))
    return out


def sample(cases, n, seed):
    """n cases covering every mode and every launcher as evenly as n allows."""
    rng = random.Random("sample/%d" % seed)
    pool = list(cases)
    rng.shuffle(pool)
    chosen, modes, las = [], set(), set()
    for c in pool:  # first pass: a new mode and a new launcher together
        if len(chosen) < n and c[0] not in modes and c[1] not in las:
            chosen.append(c), modes.add(c[0]), las.add(c[1])
    for c in pool:  # then a new mode
        if len(chosen) < n and c not in chosen and c[0] not in modes:
            chosen.append(c), modes.add(c[0])
    for c in pool:
        if len(chosen) < n and c not in chosen:
            chosen.append(c)
    return [c for c in cases if c in chosen]


def command(mode, launcher, p, port, folder, name):
    args = ["--mode", "hang" if mode == "hang" else mode, "--bad", str(p["bad"]), "--seed", str(p["seed"])]
    if mode in ("rdzv-nodes", "version-mismatch", "port"):
        args = ["--mode", "ok", "--seed", str(p["seed"])]
    if p["record"]:
        args.append("--record")
    args += ["--log", p["log"]]
    if launcher == "spawn":
        if mode == "port":
            args = ["--mode", "ok"]
        return [PY, TRAIN, "--spawn", str(p["nproc"]), "--port", str(port)] + args, {}
    module = "torch.distributed.launch" if launcher == "launch" else "torch.distributed.run"
    pre = [PY, "-m", module]
    opts = ["--nproc_per_node", str(p["nproc"]), "--master_port", str(port)]
    if mode == "rdzv-nodes":  # a second node that never joins
        opts = ["--nnodes", "2", "--nproc_per_node", str(p["nproc"]), "--rdzv_backend", "c10d",
                "--rdzv_endpoint", "127.0.0.1:%d" % port, "--rdzv_conf", "join_timeout=5"]
    if launcher == "tee":
        opts += ["--tee", "3"]
    elif launcher == "logdir":
        opts += ["--log_dir", os.path.join(folder, name + ".d"), "--redirects", "3"]
    elif launcher == "launch" and p["use_env"]:
        opts += ["--use_env"]
    return pre + opts + [TRAIN] + args, {}


def run_pty(cmd, env, timeout, cwd):
    """Runs cmd on a pseudo-terminal; returns (raw bytes, exit status or None on timeout, seconds)."""
    master, slave = os.openpty()
    try:
        import fcntl
        import struct
        import termios
        fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 40, 160, 0, 0))
    except OSError:
        pass
    t0 = time.time()
    proc = subprocess.Popen(cmd, stdin=slave, stdout=slave, stderr=slave, env=env, cwd=cwd,
                            start_new_session=True, close_fds=True)
    os.close(slave)
    buf = bytearray()
    timed_out = False
    while True:
        left = t0 + timeout - time.time()
        if left <= 0:
            timed_out = True
            break
        r, _, _ = select.select([master], [], [], min(left, 1.0))
        if r:
            try:
                chunk = os.read(master, 65536)
            except OSError as e:
                if e.errno == errno.EIO:  # every holder of the slave side closed it
                    break
                raise
            if not chunk:
                break
            buf += chunk
        elif proc.poll() is not None:
            # the launcher is gone; read what is left, unless a child still holds the terminal
            r, _, _ = select.select([master], [], [], 2.0)
            if not r:
                break
    if timed_out:
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    try:
        rc = proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        rc = proc.wait()
    try:  # children left in the group (a rank the launcher did not end)
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
    os.close(master)
    return bytes(buf), (None if timed_out else rc), time.time() - t0


def run_case(job):
    seed, mode, launcher, folder, timeout = job
    name = "%s-%s" % (mode, launcher)
    p = plan(seed, mode, launcher)
    p["seed"] = seed
    cls, _, rank_kind = CASES[mode]
    port = free_port()
    cmd, _ = command(mode, launcher, p, port, folder, name)
    env = {"PATH": "/usr/bin:/bin", "HOME": os.environ.get("HOME", "/tmp"), "LANG": "C.UTF-8",
           "TERM": "xterm-256color", "TMPDIR": os.environ.get("TMPDIR", "/tmp"),
           "PYTHONDONTWRITEBYTECODE": "1"}  # no __pycache__ in sitefix/
    if launcher in ELASTIC and mode != "version-mismatch":
        env["PYTHONPATH"] = SITEFIX  # sitefix/sitecustomize.py: the Python 3.11 fix of the launcher
    if mode == "desync":
        env["TORCH_DISTRIBUTED_DEBUG"] = "DETAIL"
    held = None
    if mode == "port":  # somebody else listens on the master port
        held = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        held.bind(("0.0.0.0", port))
        held.listen(1)
    logd = os.path.join(folder, name + ".d")
    if launcher == "logdir":
        shutil.rmtree(logd, ignore_errors=True)
        os.makedirs(logd)
    try:
        raw, rc, secs = run_pty(cmd, env, timeout, HERE)
    finally:
        if held:
            held.close()
    with open(os.path.join(folder, name + ".log"), "wb") as f:
        f.write(raw)
    # the --log_dir folder exists only once the agent started workers (a launcher
    # that dies first, e.g. on a port in use, leaves the terminal output alone)
    logdir = launcher == "logdir" and os.path.isdir(os.path.join(folder, name + ".d"))
    how = [name + ".log"] + ([name + ".d"] if logdir else [])
    side = {
        "class": cls,
        "initiating_rank": p["bad"] if rank_kind == "bad" else None,
        "rank_knowable": False,
        "launcher": launcher,
        "mode": mode,
        "seed": seed,
        "nproc": p["nproc"],
        "failing_rank": p["bad"] if rank_kind == "bad" else None,
        "record": p["record"],
        "use_env": p["use_env"] if launcher == "launch" else None,
        "log": p["log"],
        "how": how,
        "exit_status": rc,
        "seconds": round(secs, 1),
        "command": [os.path.relpath(c, HERE) if c.startswith(HERE) else
                    os.path.relpath(c, folder) if c.startswith(folder) else c for c in cmd],
        "env": {k: v for k, v in env.items() if k in ("TORCH_DISTRIBUTED_DEBUG", "PYTHONPATH")},
    }
    if mode == "port" and launcher == "spawn":
        side["initiating_rank"] = 0  # rank 0 hosts the store and fails to bind
    problems = []
    if rc is None:
        problems.append("timed out after %d s (killed)" % timeout)
    elif rc == 0:
        problems.append("the job succeeded: the failure did not happen")
    texts = truth.read_texts(folder, how)
    knowable, rule, why = truth.knowable(side, texts)
    side["rank_knowable"] = knowable
    side["rank_rule"] = rule
    problems += why
    with open(os.path.join(folder, name + ".json"), "w") as f:
        json.dump(side, f, indent=1)
        f.write("\n")
    return name, problems, secs


def relabel(folder):
    bad = 0
    for f in sorted(os.listdir(folder)):
        if not f.endswith(".json"):
            continue
        path = os.path.join(folder, f)
        with open(path) as fh:
            side = json.load(fh)
        side["class"] = CASES[side["mode"]][0]
        side["how"] = [h for h in side["how"] if os.path.exists(os.path.join(folder, h))]
        knowable, rule, problems = truth.knowable(side, truth.read_texts(folder, side["how"]))
        side["rank_knowable"], side["rank_rule"] = knowable, rule
        with open(path, "w") as fh:
            json.dump(side, fh, indent=1)
            fh.write("\n")
        print("%-28s %-5s %-40s %s" % (f[:-5], knowable, rule, "; ".join(problems)))
        bad += 1 if problems else 0
    return 1 if bad else 0


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--seed", type=int, required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--only", default=None)
    ap.add_argument("--sample", type=int, default=0)
    ap.add_argument("--timeout", type=int, default=90)
    ap.add_argument("--relabel", action="store_true",
                    help="run nothing: recompute the class (CASES) and rank_knowable (truth.py) of the sidecars already in --out")
    a = ap.parse_args(argv)
    if a.relabel:
        return relabel(a.out)
    cases = all_cases(a.seed)
    if a.only:
        parts = a.only.split(",")
        for part in parts:
            cases = [c for c in cases if part in c]
        if not cases:
            ap.error("--only %s matches no case" % a.only)
    if a.sample:
        cases = sample(cases, a.sample, a.seed)
    os.makedirs(a.out, exist_ok=True)
    t0 = time.time()
    bad = 0
    jobs = [(a.seed, m, la, os.path.abspath(a.out), a.timeout) for m, la in cases]
    with ThreadPoolExecutor(max_workers=max(1, a.jobs)) as ex:
        for name, problems, secs in ex.map(run_case, jobs):
            print("%-28s %5.1f s %s" % (name, secs, "; ".join(problems) if problems else "ok"), flush=True)
            bad += 1 if problems else 0
    print("%d cases in %.0f s, %d not as designed" % (len(jobs), time.time() - t0, bad))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
