#!/usr/bin/env python3
"""genlog.py - synthetic multi-rank training-failure logs with a known initiating rank.

Writes one log (what a user would paste: the merged output of every rank,
launcher and node of a failed distributed job) and a JSON sidecar
{class, initiating_rank, dialect, world_size, kind, ...}. The initiating rank
is known by construction. Every line is a format that real PyTorch 1.12..2.6,
DeepSpeed 0.9..0.16, torchrun, NCCL, Slurm, Open MPI or the Linux kernel print.

Usage:
  genlog.py --seed 7 --dialect pdsh --kind oom --world-size 64 -o /tmp/x.log
  genlog.py --seed 7 -o /tmp/x.log          # everything else drawn from the seed

Stdlib only; the output is a pure function of the options (and --seed).
Every option left out is drawn from the seed, then adjusted so that the
log still identifies the initiating rank (see "decidability" below); the
sidecar's "options" records what was used, "forced" what was adjusted.

Options (see --help for the full list):
  --dialect     rank | tee | pdsh | srun | mpirun | none
                rank:   PyTorch >= 2.3 `[rank7]: ` on traceback lines and
                        `[rank7]:[E1218 20:27:21.426415540 ProcessGroupNCCL.cpp:629] `
                        on C++ lines (global rank); torchrun, 1..N nodes merged
                        without any host prefix.
                tee:    torchrun --tee 3 `[default3]:` (local rank); multi-node
                        adds a pdsh-style `node-003: ` host prefix in front.
                pdsh:   DeepSpeed multi-node launcher: `worker-3: ` on every line,
                        WORLD INFO DICT / nnodes=..., node_rank=... layout lines.
                srun:   `srun --label` ` 27: ` (global rank = task id).
                mpirun: `mpirun --tag-output` `[1,27]<stderr>:`.
                none:   single node, no prefix: the rank only appears inside
                        messages (GPU 5, [Rank 5], NCCL `[5]`, local_rank: 5).
  --kind        oom | ds-oom | loss-scale | batch-assert | host-oom | nccl-system | segfault
  --world-size  8..1024, a multiple of 8 (nodes of 8 GPUs); none is single node.
  --table       on|off   torchrun's ChildFailedError table (mpirun's summary block).
  --interleave  on|off   tracebacks of several ranks interleaved line by line.
  --skew S      per-node clock skew up to S seconds on glog/asctime lines.
  --collateral  kill|hang  kill: the launcher notices the initiator's exit and
                SIGTERMs its node (other nodes time out in NCCL);
                hang: the initiator lingers after its exception, every other
                rank hits the NCCL watchdog and aborts (-6), so the launcher's
                "first observed failure" is a waiting rank, not the initiator.
  --root-cause  initiator|other: whom the launcher's root cause names (other:
                hang mode for single-cause kinds, another raiser for the
                every-rank kinds).
  --record      on|off   torchrun @record used: error_file set, table traceback
                shown and the root cause is reliable.
  --rank-prefix on|off   PyTorch >= 2.3 excepthook `[rankN]:` inside tee/pdsh/srun/mpirun.
  --torch V     1.12 1.13 2.0 2.1 2.2 2.3 2.4 2.5 2.6
  --layout      dict|nnodes|both (pdsh layout lines) ; --rendezvous on|off (torchrun
                "Rendezvous complete for workers. Result:" block).
  --echo N      other ranks hitting the same error later (oom kinds).
  --kernel-line on|off   dmesg OOM-killer / segfault lines pasted at the end.
  --nccl-debug  on|off   NCCL INFO/WARN lines (host:pid:tid [cudaDev] ...).
  --remote-errors on|off other nodes see ncclRemoteError before their watchdog.
  --noise       0..3     amount of pre-failure noise.
  --glue        on|off   tqdm bar without newline, next rank's text glued onto it.
  --ansi        color|lost|off   ANSI colours, or colours whose ESC byte was lost.
  --initiator R force the initiating global rank.
  --collateral-sample N  ranks that print the full watchdog dump (others: one line).

Rank cases (any of these options; all off by default, and then every log is
byte for byte what it was): the initiator's own lines carry no global rank.
Nothing is forced for decidability; the sidecar says instead whether the
rank is knowable from the text ("knowable", "knowable_by", "rank_candidates",
"knowable_node", "knowable_host", "knowable_rank_range", "knowable_local_rank";
see knowability() for the rules). torch <= 2.2 (no [rankN]: excepthook)
unless --prefix label / rank-all or --spawn on.
  --prefix      label       srun --label, task id = global rank (` 27: `; the control)
                host        `worker-3: ` only: pdsh (DeepSpeed launcher) or srun through a
                            `sed "s/^/$(hostname): /"` wrapper (one task per GPU)
                local       torchrun --tee `[default1]:` on several nodes, no host (srun
                            without --label)
                host-local  `node-003: [default1]:` (torchrun under pdsh)
                task        srun -l over torchrun: `3: ` is the node's srun task id, which is
                            torchrun's group_rank only with --node-order static
                task-local  `3: [default1]:`
                bare        no prefix at all (srun without --label over torchrun)
                rank-all    a single process's paste: only the initiator's `[rankN]:` lines
  --spawn on    torch.multiprocessing.spawn on each node (prefix host, task or bare): the
                parent prints ProcessRaisedException "-- Process N terminated with the
                following error:" (N = local rank), or ProcessExitedException "process N
                terminated with signal SIGSEGV|SIGABRT".
  --per-task-files on  srun --output=slurm-%j-%t.out: -o is a folder of one file per task
                (task = rank with --prefix label, = node with task / task-local / spawn),
                srun's own messages in slurm-<job>.out; the sidecar is <folder>.json.
  --table multi torchrun's table with several failures of the initiator's node in one poll
                (peers losing their NCCL peer); the root cause is min(timestamp) in whole
                seconds, a tie going to the lowest local rank (as torchrun does).
  --launcher-summary off  no launcher failure lines (no table, no failed line, no DeepSpeed
                sigkill_handler, no srun/pdsh exit lines).
  --skew-one S  the initiator's node's clock shifted by S seconds (on top of --skew).
  --silent-peers N  N look-alikes of the initiator (same local rank elsewhere when the cause
                shows its local rank, else the same node) print nothing.
  --node-order static|c10d  srun task id = torchrun group_rank or not.
  --kind assert a user's AssertionError on one rank (py.assertion).
"""
import argparse
import base64
import json
import os
import random
import re
import sys
from datetime import datetime, timedelta

KINDS = {
    "oom": "torch.oom.generic",
    "ds-oom": "ds.oom.activations",
    "loss-scale": "ds.fp16.loss-scale-min",
    "batch-assert": "ds.config.batch-size",
    "host-oom": "host.oom-killer",
    "nccl-system": "nccl.system-error",
    "segfault": "proc.segfault",
}
# kinds only the rank cases use (not in the default grid's --kinds list)
EXTRA_KINDS = {
    "assert": "py.assertion",  # a user's data/loss check on one rank (single raiser)
}
CLASSES = dict(KINDS, **EXTRA_KINDS)
DIALECTS = ("rank", "tee", "pdsh", "srun", "mpirun", "none")
# rank cases (--prefix ...): how a rank's lines are prefixed, when the cause line carries no global rank
PREFIXES = ("label", "host", "local", "host-local", "task", "task-local", "bare", "rank-all")
NPN = 8  # nproc_per_node: every node runs 8 ranks, rank = node * 8 + local_rank
TORCH_VERSIONS = ("1.12", "1.13", "2.0", "2.1", "2.2", "2.3", "2.4", "2.5", "2.6")
ALL_RANK_KINDS = ("loss-scale", "batch-assert")  # every rank raises; first in time initiates
EXC_KINDS = ("oom", "ds-oom", "loss-scale", "batch-assert", "nccl-system", "assert")  # a Python exception
DS_KINDS = ("ds-oom", "loss-scale", "batch-assert")

ESC = "\x1b"


def vt(v):
    return tuple(int(x) for x in v.split("."))


# ---------------------------------------------------------------- profiles

def torch_profile(v):
    t = vt(v)
    p = {"v": v}
    p["hook"] = t >= (2, 3)  # [rankN]: excepthook / c10 log prefix
    p["cpp_time"] = t >= (2, 4)  # [E1218 20:27:21.426415540 file:line]
    p["numel"] = t >= (2, 1)
    p["tensorshape"] = t <= (1, 12)
    p["pg"] = None if t <= (2, 2) else ("pg" if t == (2, 3) else ("desc" if t <= (2, 5) else "guid"))
    p["agent"] = ("logging" if t <= (2, 1) else "bracket" if t == (2, 2) else "glog-tid" if t == (2, 3)
                  else "glog-pid" if t == (2, 4) else "glog-site")
    p["term"] = "std::runtime_error" if t <= (2, 0) else "c10::DistBackendError"
    p["dist_err"] = "RuntimeError" if t <= (2, 0) else "torch.distributed.DistBackendError"
    p["oom"] = {(1, 12): "legacy-rt", (1, 13): "legacy-rt", (2, 0): "legacy-cuda", (2, 1): "typo",
                (2, 2): "current-cuda", (2, 3): "current-cuda", (2, 4): "current-cuda"}.get(t, "current-torch")
    p["nccl"] = {(1, 12): "2.10.3", (1, 13): "2.14.3", (2, 0): "2.14.3", (2, 1): "2.18.1", (2, 2): "2.19.3",
                 (2, 3): "2.20.5", (2, 4): "2.20.5", (2, 5): "2.21.5", (2, 6): "2.21.5"}[t]
    p["nccl_cpp"] = {(1, 12): 1191, (1, 13): 1269, (2, 0): 1275, (2, 1): 1331, (2, 2): 1691, (2, 3): 1970,
                     (2, 4): 1970, (2, 5): 2027, (2, 6): 3356}[t]
    p["wd_cpp"] = {(1, 12): 737, (1, 13): 737, (2, 0): 828, (2, 1): 475, (2, 2): 475, (2, 3): 563,
                   (2, 4): 616, (2, 5): 607, (2, 6): 629}[t]
    p["py"] = "3.8" if t <= (1, 13) else ("3.10" if t <= (2, 3) else "3.11")
    p["year"] = {(1, 12): 2022, (1, 13): 2023, (2, 0): 2023, (2, 1): 2023, (2, 2): 2024, (2, 3): 2024,
                 (2, 4): 2024, (2, 5): 2025, (2, 6): 2025}[t]
    p["mod"] = {(1, 12): (None, 1130), (1, 13): (None, 1194), (2, 0): (None, 1501), (2, 1): (1518, 1527),
                (2, 2): (1511, 1520), (2, 3): (1532, 1541), (2, 4): (1553, 1562), (2, 5): (1736, 1747),
                (2, 6): (1739, 1750)}[t]
    p["ds"] = {(1, 12): ("0.7.7", 69), (1, 13): ("0.9.5", 96), (2, 0): ("0.10.3", 96), (2, 1): ("0.12.6", 96),
               (2, 2): ("0.13.5", 96), (2, 3): ("0.14.4", 96), (2, 4): ("0.15.4", 128), (2, 5): ("0.16.2", 128),
               (2, 6): ("0.16.4", 128)}[t]
    return p


# ---------------------------------------------------------------- helpers

def human(nbytes):
    for unit, div in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if nbytes >= div:
            return "%.2f %s" % (nbytes / div, unit)
    return "%d bytes" % nbytes


def ranges(xs):
    xs = sorted(xs)
    out, i = [], 0
    while i < len(xs):
        j = i
        while j + 1 < len(xs) and xs[j + 1] == xs[j] + 1:
            j += 1
        out.append(str(xs[i]) if i == j else "%d-%d" % (xs[i], xs[j]))
        i = j + 1
    return ",".join(out)


class Job:
    def __init__(self, o):
        self.o = o
        self.rng = random.Random(o.seed * 7919 + 17)
        self.W = o.world_size
        self.nnodes = self.W // 8
        self.multi = self.nnodes > 1
        self.P = torch_profile(o.torch)
        self.F = o.initiator
        self.root_reliable = {}  # grid: node -> whether the text shows its torchrun's pick to be first in time
        self.fnode, self.flocal = divmod(self.F, 8)
        self.events = []
        self.seq = 0
        self.evidence = []
        rng = self.rng
        # ---- identity: hosts, pids, paths
        scheme = rng.choice(["worker", "node", "ip", "gpu", "aws"])
        if o.dialect == "pdsh":
            scheme = rng.choice(["worker", "worker", "ip", "node"])
        names = []
        for n in range(self.nnodes):
            names.append({"worker": "worker-%d" % n, "node": "node-%03d" % n,
                          "ip": "10.1.%d.%d" % (n // 200, 3 + n % 200), "gpu": "gpu-a100-%02d" % (n + 1),
                          "aws": "ip-10-0-%d-%d" % (16 + n // 200, 11 + n % 200)}[scheme])
        if self.multi and rng.random() < 0.3:
            rng.shuffle(names)  # host names do not follow node order
        self.hosts = names
        self.single_host = rng.choice(["localhost", "gpu-node-07", "dgx-a100", "train-0"])
        if not self.multi:
            self.hosts = [self.single_host if o.dialect in ("none", "rank", "tee") else names[0]]
        used = set()
        self.pid_base = []
        for n in range(self.nnodes):
            while True:
                b = rng.randrange(2000, 3900000)
                if all(abs(b - u) > 40 for u in used):
                    break
            used.add(b)
            self.pid_base.append(b)
        self.agent_pid = [b - rng.randrange(20, 90) for b in self.pid_base]
        self.agent_tid = [rng.choice([139712, 140735466850080, 139637275690816]) for _ in range(self.nnodes)]
        py = self.P["py"]
        self.sp = rng.choice(["/usr/local/lib/python%s/dist-packages" % py,
                              "/opt/conda/lib/python%s/site-packages" % py,
                              "/home/user/miniconda3/envs/llm/lib/python%s/site-packages" % py])
        self.pybin = {"/usr/local": "/usr/bin/python3", "/opt/conda": "/opt/conda/bin/python",
                      "/home/user": "/home/user/miniconda3/envs/llm/bin/python"}[self.sp[:10]]
        self.bindir = self.pybin.rsplit("/", 1)[0] if not self.pybin.startswith("/usr/bin") else "/usr/local/bin"
        self.script = rng.choice(["train.py", "finetune.py", "pretrain_gpt.py", "sft.py"])
        self.workdir = rng.choice(["/workspace", "/home/user/project", "/mnt/data/exp"])
        self.jobid = rng.randrange(10000, 999999)
        self.ds_ver, self.ds_logln = self.P["ds"]
        self.timeout_ms = rng.choice([600000, 1800000, 1800000])
        self.gpu = rng.choice([("79.15 GiB", 79.15), ("79.11 GiB", 79.11), ("39.39 GiB", 39.39),
                               ("31.74 GiB", 31.74), ("22.19 GiB", 22.19)])
        y = self.P["year"]
        self.base = datetime(y, rng.randrange(1, 13), rng.randrange(1, 29), rng.randrange(0, 22),
                             rng.randrange(0, 60), rng.randrange(0, 60), rng.randrange(0, 1000) * 1000)
        skew = o.skew
        self.offset = [rng.uniform(-skew, skew) if skew > 0 else 0.0 for _ in range(self.nnodes)]
        self.visible = self._visible_nodes()
        self.stack = "ds" if (o.kind in DS_KINDS or o.dialect == "pdsh" or
                              (o.kind in ("host-oom", "nccl-system", "segfault") and rng.random() < 0.5)) else "plain"
        if o.kind == "oom":
            self.stack = "plain"
        self.hf = rng.random() < 0.6
        # a plain DDP script may be started by the DeepSpeed launcher too; it then gets no ds_config
        self.script_args = (["--deepspeed", "ds_config.json"] if self.stack == "ds" else
                            ["--config", rng.choice(["configs/llama_7b.yaml", "conf/sft.yaml"])])
        self.launcher = {"rank": "torchrun", "tee": "torchrun", "pdsh": "deepspeed", "srun": "srun",
                         "mpirun": "mpirun", "none": o.none_launcher}[o.dialect]
        self.exit = {}  # rank -> (time, exitcode)
        self.sampled = set()
        self.rc = getattr(o, "rc", False)
        if self.rc:
            self.rc_init()

    # ---- rank cases: identity as the prefixes show it
    def rc_init(self):
        o, rng = self.o, self.rng
        self.launcher = o.launcher
        self.scheme = o.prefix
        self.task_w = len(str(self.nnodes - 1))
        # srun task id of the node whose torchrun group_rank is n: the same with a static rendezvous
        # (--node_rank=$SLURM_NODEID), arrival order with c10d
        self.task_of = list(range(self.nnodes))
        if o.node_order == "c10d" and self.multi and o.outer == "srun" and self.launcher == "torchrun":
            rng.shuffle(self.task_of)
        if o.skew_one:
            self.offset[self.fnode] += o.skew_one
        self.facts = []  # (group, node): layout lines as printed
        self.records = []  # launcher failure records (R3 in knowability)
        self.notes = []
        self.silent = set()
        self.cause_local = None  # a local rank the cause block names in its text (GPU N, Process N)
        self.node_exit = {}  # node -> time its launcher process (torchrun / spawn parent) exits

    def rc_parts(self, src):
        """What a rank-case line's prefix (or file) shows: host, task (srun node task), label (srun task =
        global rank), local ([defaultN]), file."""
        p = {}
        if src[0] == "plain":
            return p
        r = src[1] if src[0] == "rank" else None
        n = self.node(r) if r is not None else src[1]
        sc = self.scheme
        if self.o.files:
            if self.launcher == "srun":
                if r is not None:
                    p["file"] = ("rank", r)
            else:
                p["file"] = ("task", self.task_of[n])
        else:
            if sc in ("host", "host-local"):
                p["host"] = self.host(n)
            if sc in ("task", "task-local"):
                p["task"] = self.task_of[n]
            if sc == "label" and r is not None:
                p["label"] = r
        if r is not None and sc in ("local", "host-local", "task-local"):
            p["local"] = self.local(r)
        return p

    @staticmethod
    def group_of(p):
        for k in ("host", "task", "file"):
            if p.get(k) is not None:
                return (k, p[k])
        return None

    def rc_prefix(self, src):
        p = self.rc_parts(src)
        s = ""
        if "host" in p:
            s += "%s: " % p["host"]
        if "task" in p:
            s += "%*d: " % (self.task_w, p["task"])
        if "label" in p:
            s += "%*d: " % (len(str(self.W - 1)), p["label"])
        if "local" in p:
            s += "[default%d]:" % p["local"]
        return s

    def file_of(self, src):
        if not self.o.files:
            return None
        if src[0] == "plain":
            return "slurm-%d.out" % self.jobid
        if self.launcher == "srun":
            return "slurm-%d-%d.out" % (self.jobid, src[1])
        n = self.node(src[1]) if src[0] == "rank" else src[1]
        return "slurm-%d-%d.out" % (self.jobid, self.task_of[n])

    def all_files(self):
        if self.launcher == "srun":
            return ["slurm-%d-%d.out" % (self.jobid, r) for r in range(self.W)]
        return ["slurm-%d-%d.out" % (self.jobid, t) for t in range(self.nnodes)]

    def fact(self, src, node):
        """A layout line printed under src's prefix ties that prefix's group to a node."""
        if self.rc:
            g = self.group_of(self.rc_parts(src))
            if g is not None:
                self.facts.append((g, node))

    # ---- identity
    def node(self, r):
        return r // 8

    def local(self, r):
        return r % 8

    def host(self, node):
        return self.hosts[node]

    def pid(self, r):
        return self.pid_base[r // 8] + r % 8

    def _visible_nodes(self):
        """Nodes whose launcher/startup output the (bounded) log shows."""
        if self.nnodes <= 16:
            return list(range(self.nnodes))
        s = {self.fnode, 0}
        while len(s) < 12:
            s.add(self.rng.randrange(self.nnodes))
        return sorted(s)

    # ---- clocks
    def clock(self, node, t):
        return self.base + timedelta(seconds=t + self.offset[node])

    def asctime(self, node, t):
        d = self.clock(node, t)
        return d.strftime("%Y-%m-%d %H:%M:%S") + ",%03d" % (d.microsecond // 1000)

    def glog_py(self, level, node, t, path, line):
        d = self.clock(node, t)
        ident = self.agent_tid[node] if self.P["agent"] == "glog-tid" else self.agent_pid[node]
        return "%s%s %s.%06d %d %s:%d] " % (level, d.strftime("%m%d"), d.strftime("%H:%M:%S"),
                                             (d.microsecond // 1000) * 1000, ident, path, line)

    def cpp(self, level, r, t, src, line):
        """A c10 (glog-style) C++ log header as PyTorch prints it on rank r."""
        if self.P["cpp_time"]:
            d = self.clock(self.node(r), t)
            ns = d.microsecond * 1000 + self.rng.randrange(0, 1000)
            return "[rank%d]:[%s%d%02d %s.%09d %s:%d] " % (r, level, d.month, d.day, d.strftime("%H:%M:%S"), ns,
                                                           src, line)
        if self.P["hook"]:
            return "[rank%d]:[%s %s:%d] " % (r, level, src, line)
        return "[%s %s:%d] " % (level, src, line)

    def ds_log(self, node, t, level, where, msg):
        return "[%s] [%s] [%s] %s" % (self.asctime(node, t), level, where, msg)

    def hf_log(self, node, t, level, where, msg):
        line = "[%s|%s] %s >> %s" % (level, where, self.asctime(node, t), msg)
        return self.color("32" if level == "INFO" else "33", line)

    def color(self, code, s):
        if self.o.ansi == "color":
            return "%s[%sm%s%s[0m" % (ESC, code, s, ESC)
        if self.o.ansi == "lost":
            return "[%sm%s[0m" % (code, s)
        return s

    def agent_line(self, level, node, t, msg, path="torch/distributed/elastic/multiprocessing/api.py", line=None,
                   name="torch.distributed.elastic.multiprocessing.api"):
        st = self.P["agent"]
        lvl = {"W": "WARNING", "E": "ERROR", "I": "INFO"}[level]
        if st == "logging":
            return "%s:%s:%s" % (lvl, name, msg)
        if st == "bracket":
            return "[%s] %s: [%s] %s" % (self.asctime(node, t), name, lvl, msg)
        if line is None:
            line = {"glog-tid": {"W": 857, "E": 826, "I": 833}, "glog-pid": {"W": 897, "E": 869, "I": 875},
                    "glog-site": {"W": 908, "E": 882, "I": 888}}[st][level]
        if st == "glog-site":
            path = ("site-packages/" if "site-packages" in self.sp else "dist-packages/") + path
        return self.glog_py(level, node, t, path, line) + msg

    # ---- event emission
    def emit(self, t, src, text, stream="stderr", **flags):
        self.seq += 1
        self.events.append([t, self.seq, src, stream, text, flags])

    def emit_lines(self, t, src, lines, dt=0.0004, stream="stderr", key=None, **flags):
        """Emits consecutive lines of one writer (times strictly increasing); returns the last time."""
        times = []
        for i, ln in enumerate(lines):
            f = dict(flags)
            if key is not None and i == key:
                f["key"] = True
            if i:
                t += dt * self.rng.uniform(0.6, 1.4)
            self.emit(t, src, ln, stream, **f)
            times.append(t)
        self.last_times = times
        return t

    def emit_following(self, lead, src, lines, lag, stream="stderr", **flags):
        """Emits a block interleaved with (but always behind) the block whose line times are lead: line i comes
        after the leader's line i and after the leader's line at the same distance from the end, so the
        leader is first both to start and to finish."""
        n, m = len(lead), len(lines)
        t_prev = None
        for i, ln in enumerate(lines):
            t = max(lead[min(i, n - 1)], lead[max(0, min(n - 1, n - m + i))]) + lag * self.rng.uniform(0.3, 1.0)
            if t_prev is not None and t <= t_prev:
                t = t_prev + lag * 0.1
            self.emit(t, src, ln, stream, **flags)
            t_prev = t
        return t_prev

    # ------------------------------------------------------------ frames
    def fr(self, path, line, func, code):
        return (path, line, func, code)

    def sp_fr(self, rel, line, func, code):
        return (self.sp + "/" + rel, line, func, code)

    def module_frames(self):
        a, b = self.P["mod"]
        out = []
        if a:
            out.append(self.sp_fr("torch/nn/modules/module.py", a, "_wrapped_call_impl",
                                  "return self._call_impl(*args, **kwargs)"))
            out.append(self.sp_fr("torch/nn/modules/module.py", b, "_call_impl", "return forward_call(*args, **kwargs)"))
        else:
            out.append(self.sp_fr("torch/nn/modules/module.py", b, "_call_impl", "return forward_call(*input, **kwargs)"))
        return out

    def model_frames(self):
        m = self.rng.choice(["llama", "qwen2", "mistral"])
        mp = "transformers/models/%s/modeling_%s.py" % (m, m)
        out = [self.sp_fr(mp, 1189, "forward", "outputs = self.model(")]
        out += self.module_frames()
        out.append(self.sp_fr(mp, 1001, "forward", "layer_outputs = decoder_layer("))
        out += self.module_frames()
        out.append(self.sp_fr(mp, 734, "forward", "hidden_states, self_attn_weights, present_key_value = self.self_attn("))
        out += self.module_frames()
        last = self.rng.choice([
            (mp, 336, "forward", "attn_weights = torch.matmul(query_states, key_states.transpose(2, 3)) / math.sqrt(self.head_dim)"),
            (mp, 350, "forward", "attn_weights = nn.functional.softmax(attn_weights, dim=-1, dtype=torch.float32).to(query_states.dtype)"),
            (mp, 258, "forward", "down_proj = self.down_proj(self.act_fn(self.gate_proj(x)) * self.up_proj(x))"),
        ])
        out.append(self.sp_fr(*last))
        return out

    def backward_frames(self):
        t = vt(self.P["v"])
        out = [self.sp_fr("torch/_tensor.py", {True: 521, False: 488}[t >= (2, 1)], "backward",
                          "torch.autograd.backward(")]
        if t >= (2, 3):
            out.append(self.sp_fr("torch/autograd/__init__.py", 289, "backward", "_engine_run_backward("))
            out.append(self.sp_fr("torch/autograd/graph.py", 768, "_engine_run_backward",
                                  "return Variable._execution_engine.run_backward(  # Calls into the C++ engine to run the backward pass"))
        else:
            out.append(self.sp_fr("torch/autograd/__init__.py", 200, "backward",
                                  "Variable._execution_engine.run_backward(  # Calls into the C++ engine to run the backward pass"))
        return out

    def entry_frames(self, call):
        s = "%s/%s" % (self.workdir, self.script) if self.rng.random() < 0.7 else self.script
        return [self.fr(s, self.rng.randrange(380, 460), "<module>", "main()"),
                self.fr(s, self.rng.randrange(200, 370), "main", call)]

    def trainer_frames(self, inner):
        """HF Trainer path down to training_step's inner call."""
        return [self.sp_fr("transformers/trainer.py", 1938, "train", "return inner_training_loop("),
                self.sp_fr("transformers/trainer.py", 2279, "_inner_training_loop",
                           "tr_loss_step = self.training_step(model, inputs)")] + inner

    def oom_frames(self, ds):
        rng = self.rng
        backward = rng.random() < 0.5
        if self.hf:
            fr = self.entry_frames("trainer.train()")
            if backward:
                inner = [self.sp_fr("transformers/trainer.py", 3349, "training_step", "self.accelerator.backward(loss, **kwargs)")]
                if ds:
                    inner += [self.sp_fr("accelerate/accelerator.py", 2188, "backward",
                                         "self.deepspeed_engine_wrapped.backward(loss, **kwargs)"),
                              self.sp_fr("accelerate/utils/deepspeed.py", 166, "backward",
                                         "self.engine.backward(loss, **kwargs)")]
                else:
                    inner += [self.sp_fr("accelerate/accelerator.py", 2196, "backward", "loss.backward(**kwargs)")]
            else:
                inner = [self.sp_fr("transformers/trainer.py", 3318, "training_step",
                                    "loss = self.compute_loss(model, inputs)"),
                         self.sp_fr("transformers/trainer.py", 3363, "compute_loss", "outputs = model(**inputs)")]
                inner += self.module_frames()
            fr += self.trainer_frames(inner)
        else:
            if backward:
                fr = self.entry_frames("model_engine.backward(loss)" if ds else "loss.backward()")
            else:
                fr = self.entry_frames("outputs = model_engine(**batch)" if ds else "outputs = model(**batch)")
                fr += self.module_frames()
        if ds:
            fr.append(self.sp_fr("deepspeed/utils/nvtx.py", 15 if self.ds_ver < "0.14" else 18, "wrapped_fn",
                                 "ret_val = func(*args, **kwargs)"))
            if backward:
                fr.append(self.sp_fr("deepspeed/runtime/engine.py", rng.choice([1976, 2020, 2046, 2213]), "backward",
                                     "self.optimizer.backward(loss, retain_graph=retain_graph)"))
                fr.append(self.sp_fr("deepspeed/runtime/zero/stage_1_and_2.py", rng.choice([2051, 2063, 2107]), "backward",
                                     "self.loss_scaler.backward(loss.float(), retain_graph=retain_graph)"))
                fr.append(self.sp_fr("deepspeed/runtime/fp16/loss_scaler.py", 63, "backward",
                                     "scaled_loss.backward(retain_graph=retain_graph)"))
                fr += self.backward_frames()
            else:
                fr.append(self.sp_fr("deepspeed/runtime/engine.py", rng.choice([1846, 1855, 1899, 1914]), "forward",
                                     "loss = self.module(*inputs, **kwargs)"))
                fr += self.module_frames()
                fr += self.model_frames()
        else:
            if backward:
                fr += self.backward_frames()
            else:
                fr.append(self.sp_fr("torch/nn/parallel/distributed.py", 1636, "forward",
                                     "else self._run_ddp_forward(*inputs, **kwargs)"))
                fr.append(self.sp_fr("torch/nn/parallel/distributed.py", 1454, "_run_ddp_forward",
                                     "return self.module(*inputs, **kwargs)  # type: ignore[index]"))
                fr += self.module_frames()
                fr += self.model_frames()
        return fr

    def oom_message(self, local, nogpu=False):
        rng = self.rng
        total_s, total = self.gpu
        tried = rng.choice([2, 20, 128, 256, 500, 1024, 2048, 3910, 8192]) * (1 << 20) + rng.randrange(0, 1 << 20) * 0
        free = int(rng.uniform(0.02, 0.6) * min(tried, 1 << 30))
        alloc = int(total * (1 << 30) * rng.uniform(0.86, 0.95))
        # reserved-but-unallocated stays below the request: not the fragmentation signature
        unalloc = int(rng.uniform(0.05, 0.7) * tried)
        inuse = int(total * (1 << 30)) - free
        g = "" if nogpu else str(local)
        st = self.P["oom"]
        if st in ("legacy-rt", "legacy-cuda"):
            exc = "RuntimeError" if st == "legacy-rt" else "torch.cuda.OutOfMemoryError"
            return ("%s: CUDA out of memory. Tried to allocate %s (GPU %s; %s total capacity; %s already allocated; "
                    "%s free; %s reserved in total by PyTorch) If reserved memory is >> allocated memory try setting "
                    "max_split_size_mb to avoid fragmentation.  See documentation for Memory Management and "
                    "PYTORCH_CUDA_ALLOC_CONF" % (exc, human(tried), g, total_s, human(alloc), human(free),
                                                 human(alloc + unalloc)))
        if st == "typo":
            return ("torch.cuda.OutOfMemoryError: CUDA out of memory. Tried to allocate %s. GPU %s has a total capacty of "
                    "%s of which %s is free. Including non-PyTorch memory, this process has %s memory in use. Of the "
                    "allocated memory %s is allocated by PyTorch, and %s is reserved by PyTorch but unallocated. If "
                    "reserved but unallocated memory is large try setting max_split_size_mb to avoid fragmentation.  "
                    "See documentation for Memory Management and PYTORCH_CUDA_ALLOC_CONF"
                    % (human(tried), g, total_s, human(free), human(inuse), human(alloc), human(unalloc)))
        exc = "torch.cuda.OutOfMemoryError" if st == "current-cuda" else "torch.OutOfMemoryError"
        proc = ("Including non-PyTorch memory, this process has %s memory in use." % human(inuse)
                if rng.random() < 0.6 else "Process %d has %s memory in use." % (rng.randrange(100, 99999), human(inuse)))
        pools = (", with %s allocated in private pools (e.g., CUDA Graphs)," % human(rng.randrange(1, 200) << 20)
                 if st == "current-torch" and rng.random() < 0.3 else "")
        return ("%s: CUDA out of memory. Tried to allocate %s. GPU %s has a total capacity of %s of which %s is free. "
                "%s Of the allocated memory %s is allocated by PyTorch%s and %s is reserved by PyTorch but unallocated. "
                "If reserved but unallocated memory is large try setting PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True "
                "to avoid fragmentation.  See documentation for Memory Management  "
                "(https://pytorch.org/docs/stable/notes/cuda.html#environment-variables)"
                % (exc, human(tried), g, total_s, human(free), proc, human(alloc), pools or ",", human(unalloc)))

    def loss_scale_frames(self):
        rng = self.rng
        stage3 = rng.random() < 0.4
        if self.hf:
            fr = self.entry_frames("trainer.train()")
            fr += [self.sp_fr("transformers/trainer.py", 1938, "train", "return inner_training_loop("),
                   self.sp_fr("transformers/trainer.py", 2328, "_inner_training_loop", "self.optimizer.step()"),
                   self.sp_fr("accelerate/optimizer.py", 165, "step", "self.optimizer.step(closure)"),
                   self.sp_fr("accelerate/utils/deepspeed.py", 176, "step", "self.engine.step()")]
        else:
            fr = self.entry_frames("model_engine.step()")
        fr.append(self.sp_fr("deepspeed/runtime/engine.py", rng.choice([2169, 2213, 2250]), "step",
                             "self._take_model_step(lr_kwargs)"))
        fr.append(self.sp_fr("deepspeed/runtime/engine.py", rng.choice([2075, 2119, 2157]), "_take_model_step",
                             "self.optimizer.step()"))
        if stage3:
            fr.append(self.sp_fr("deepspeed/utils/nvtx.py", 15, "wrapped_fn", "ret_val = func(*args, **kwargs)"))
            fr.append(self.sp_fr("deepspeed/runtime/zero/stage3.py", 2047, "step",
                                 "if self._overflow_check_and_loss_scale_update():"))
            fr.append(self.sp_fr("deepspeed/utils/nvtx.py", 15, "wrapped_fn", "ret_val = func(*args, **kwargs)"))
            fr.append(self.sp_fr("deepspeed/runtime/zero/stage3.py", 1982, "_overflow_check_and_loss_scale_update",
                                 "self._update_scale(self.overflow)"))
            fr.append(self.sp_fr("deepspeed/runtime/zero/stage3.py", 2379, "_update_scale",
                                 "self.loss_scaler.update_scale(has_overflow)"))
        else:
            fr.append(self.sp_fr("deepspeed/runtime/zero/stage_1_and_2.py", rng.choice([1652, 1842, 1876]), "step",
                                 "self._update_scale(self.overflow)"))
            fr.append(self.sp_fr("deepspeed/runtime/zero/stage_1_and_2.py", rng.choice([1896, 2089, 2118]),
                                 "_update_scale", "self.loss_scaler.update_scale(has_overflow)"))
        fr.append(self.sp_fr("deepspeed/runtime/fp16/loss_scaler.py", rng.choice([173, 175, 183]), "update_scale",
                             "raise Exception("))
        return fr, ["Exception: Current loss scale already at minimum - cannot decrease scale anymore. Exiting run."]

    def batch_frames(self, dp, values):
        rng = self.rng
        tb, mb, ga = values
        if self.hf:
            fr = self.entry_frames("trainer.train()")
            fr += [self.sp_fr("transformers/trainer.py", 1938, "train", "return inner_training_loop("),
                   self.sp_fr("transformers/trainer.py", 2096, "_inner_training_loop",
                              "model, self.optimizer = self.accelerator.prepare(self.model, self.optimizer)"),
                   self.sp_fr("accelerate/accelerator.py", 1303, "prepare", "result = self._prepare_deepspeed(*args)"),
                   self.sp_fr("accelerate/accelerator.py", 1779, "_prepare_deepspeed",
                              "engine, optimizer, _, lr_scheduler = ds_initialize(**kwargs)")]
        else:
            fr = self.entry_frames("model_engine, optimizer, _, _ = deepspeed.initialize(args=args, model=model, "
                                   "model_parameters=model.parameters())")
        fr.append(self.sp_fr("deepspeed/__init__.py", rng.choice([171, 179, 181, 193]), "initialize",
                             "config_class = DeepSpeedConfig(config, mpu)"))
        fr.append(self.sp_fr("deepspeed/runtime/config.py", rng.choice([798, 800, 803]), "__init__",
                             "self._configure_train_batch_size()"))
        fr.append(self.sp_fr("deepspeed/runtime/config.py", rng.choice([981, 984, 988]), "_configure_train_batch_size",
                             "self._batch_assertion()"))
        fr.append(self.sp_fr("deepspeed/runtime/config.py", rng.choice([929, 932, 936]), "_batch_assertion",
                             "assert train_batch == micro_batch * grad_acc * self.world_size, ("))
        msg = ("AssertionError: Check batch related parameters. train_batch_size is not equal to micro_batch_per_gpu "
               "* gradient_acc_step * world_size %d != %d * %d * %d" % (tb, mb, ga, dp))
        return fr, [msg]

    def assert_frames(self, step):
        """A user's own check on one rank (data- or state-dependent): py.assertion."""
        rng = self.rng
        s = "%s/%s" % (self.workdir, self.script)
        if rng.random() < 0.5:
            fr = self.entry_frames("train_one_epoch(model, loader, optimizer, epoch)")
            fr.append(self.fr(s, rng.randrange(120, 199), "train_one_epoch",
                              'assert n_tok == args.tokens_per_step, f"packed batch has {n_tok} tokens, '
                              'expected {args.tokens_per_step}"'))
            want = rng.choice([4096, 8192, 16384])
            return fr, ["AssertionError: packed batch has %d tokens, expected %d" % (want - rng.randrange(1, 2000), want)]
        fr = self.entry_frames("for step, batch in enumerate(loader):")
        fr += [self.sp_fr("torch/utils/data/dataloader.py", rng.choice([628, 631, 701]), "__next__",
                          "data = self._next_data()"),
               self.sp_fr("torch/utils/data/dataloader.py", rng.choice([671, 675, 757]), "_next_data",
                          "data = self._dataset_fetcher.fetch(index)  # may raise StopIteration"),
               self.sp_fr("torch/utils/data/_utils/fetch.py", 51, "fetch",
                          "data = [self.dataset[idx] for idx in possibly_batched_index]"),
               self.sp_fr("torch/utils/data/_utils/fetch.py", 51, "<listcomp>",
                          "data = [self.dataset[idx] for idx in possibly_batched_index]"),
               self.fr("%s/data.py" % self.workdir, rng.randrange(60, 140), "__getitem__",
                       'assert len(ids) <= self.max_len, f"sample {idx}: {len(ids)} tokens > max_len {self.max_len}"')]
        ml = rng.choice([2048, 4096, 8192])
        return fr, ["AssertionError: sample %d: %d tokens > max_len %d" % (rng.randrange(0, 2000000),
                                                                          ml + rng.randrange(1, 900), ml)]

    def nccl_frames(self, at_init, remote=False):
        rng = self.rng
        if at_init:
            fr = self.entry_frames("model = DDP(model, device_ids=[local_rank])" if self.stack == "plain" else
                                   "model_engine, optimizer, _, _ = deepspeed.initialize(args=args, model=model, "
                                   "model_parameters=model.parameters())")
            if self.stack == "plain":
                fr += [self.sp_fr("torch/nn/parallel/distributed.py", 822, "__init__",
                                  "_verify_param_shape_across_processes(self.process_group, parameters)"),
                       self.sp_fr("torch/distributed/utils.py", 286, "_verify_param_shape_across_processes",
                                  "return dist._verify_params_across_processes(process_group, tensors, logger)")]
            else:
                fr += [self.sp_fr("deepspeed/__init__.py", 193, "initialize", "engine = DeepSpeedEngine(args=args,"),
                       self.sp_fr("deepspeed/runtime/engine.py", 269, "__init__", "self._configure_distributed_model(model)"),
                       self.sp_fr("deepspeed/runtime/engine.py", 1188, "_configure_distributed_model",
                                  "self._broadcast_model()"),
                       self.sp_fr("deepspeed/runtime/engine.py", 1106, "_broadcast_model",
                                  "dist.broadcast(p.data, groups._get_broadcast_src_rank(), group=self.seq_data_parallel_group)"),
                       self.sp_fr("deepspeed/comm/comm.py", 117, "log_wrapper", "return func(*args, **kwargs)"),
                       self.sp_fr("deepspeed/comm/comm.py", 224, "broadcast",
                                  "return cdb.broadcast(tensor=tensor, src=src, group=group, async_op=async_op)"),
                       self.sp_fr("deepspeed/comm/torch.py", 206, "broadcast",
                                  "return torch.distributed.broadcast(tensor=tensor, src=src, group=group, async_op=async_op)")]
                if vt(self.P["v"]) >= (2, 1):
                    fr.append(self.sp_fr("torch/distributed/c10d_logger.py", 79, "wrapper", "return func(*args, **kwargs)"))
                fr.append(self.sp_fr("torch/distributed/distributed_c10d.py", 2213, "broadcast",
                                     "work = default_pg.broadcast([tensor], opts)"))
        else:
            if self.stack == "plain":
                fr = self.entry_frames("dist.all_reduce(loss_t, op=dist.ReduceOp.SUM)")
            else:
                fr = self.entry_frames("model_engine.backward(loss)")
                fr += [self.sp_fr("deepspeed/utils/nvtx.py", 15, "wrapped_fn", "ret_val = func(*args, **kwargs)"),
                       self.sp_fr("deepspeed/runtime/engine.py", 2020, "backward", "self.allreduce_gradients()"),
                       self.sp_fr("deepspeed/runtime/engine.py", 1933, "allreduce_gradients",
                                  "self.optimizer.overlapping_partition_gradients_reduce_epilogue()"),
                       self.sp_fr("deepspeed/runtime/zero/stage_1_and_2.py", 861, "overlapping_partition_gradients_reduce_epilogue",
                                  "self.independent_gradient_partition_epilogue()"),
                       self.sp_fr("deepspeed/runtime/zero/stage_1_and_2.py", 763, "independent_gradient_partition_epilogue",
                                  "self.report_ipg_memory_usage(f\"In ipg_epilogue before reduce_ipg_grads\", 0)"),
                       self.sp_fr("deepspeed/comm/comm.py", 117, "log_wrapper", "return func(*args, **kwargs)"),
                       self.sp_fr("deepspeed/comm/comm.py", 496, "all_reduce",
                                  "return cdb.all_reduce(tensor, op, group, async_op)"),
                       self.sp_fr("deepspeed/comm/torch.py", 159, "all_reduce",
                                  "return torch.distributed.all_reduce(tensor=tensor, op=op, group=group, async_op=async_op)")]
            if vt(self.P["v"]) >= (2, 1):
                fr.append(self.sp_fr("torch/distributed/c10d_logger.py", rng.choice([47, 72, 79, 83]), "wrapper",
                                     "return func(*args, **kwargs)"))
            fr.append(self.sp_fr("torch/distributed/distributed_c10d.py", rng.choice([1700, 2050, 2288, 2501]),
                                 "all_reduce", "work = group.allreduce([tensor], opts)"))
        v = self.P["nccl"]
        src = "../torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp" if vt(self.P["v"]) < (2, 6) else \
            "/pytorch/torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp"
        peer = "10.1.%d.%d<%d>" % (rng.randrange(0, 2), rng.randrange(2, 200), rng.randrange(30000, 60000))
        if remote:
            exc = ["%s: NCCL error in: %s:%d, remote process exited or there was a network error, NCCL version %s"
                   % (self.P["dist_err"], src, self.P["nccl_cpp"], v),
                   "ncclRemoteError: A call failed possibly due to a network error or a remote process exiting "
                   "prematurely.",
                   "Last error:",
                   "socketProgress: Connection closed by remote peer %s" % peer]
            return fr, exc
        if vt(self.P["v"]) <= (1, 13):
            exc = ["RuntimeError: NCCL error in: %s:%d, unhandled system error, NCCL version %s" % (src, self.P["nccl_cpp"], v),
                   "ncclSystemError: System call (e.g. socket, malloc) or external library call failed or device "
                   "error. It can be also caused by unexpected exit of a remote peer, you can check NCCL warnings for "
                   "failure reason and see if there is connection closure by a peer."]
        else:
            exc = ["%s: NCCL error in: %s:%d, unhandled system error (run with NCCL_DEBUG=INFO for details), NCCL "
                   "version %s" % (self.P["dist_err"], src, self.P["nccl_cpp"], v),
                   "ncclSystemError: System call (e.g. socket, malloc) or external library call failed or device error. ",
                   "Last error:",
                   rng.choice(["socketStartConnect: Connect to %s failed : Software caused connection abort" % peer,
                               "socketPollConnect: Connect to %s returned 113(No route to host) errno 115(Operation now in progress)" % peer,
                               "Net : Call to recv from %s failed : Connection reset by peer" % peer])]
        return fr, exc

    def traceback(self, frames, exc, faulthandler=False):
        out = [] if faulthandler else ["Traceback (most recent call last):"]
        carets = self.P["py"] == "3.11" and not faulthandler
        for (path, line, func, code) in frames:
            if faulthandler:
                out.append('  File "%s", line %d in %s' % (path, line, func))
                continue
            out.append('  File "%s", line %d, in %s' % (path, line, func))
            out.append("    " + code)
            if carets and self.rng.random() < 0.25 and len(code) > 12 and not code.endswith("("):
                a = self.rng.randrange(0, max(1, len(code) // 3))
                out.append(" " * (4 + a) + "^" * (len(code) - a))
        if not faulthandler:
            out += exc
        return out

    # ------------------------------------------------------------ pieces of noise
    def tqdm_bar(self, step, total, el):
        pct = int(100 * step / total)
        if self.rng.random() < 0.5:
            fill = int(pct / 10)
            bar = "#" * fill + " " * (10 - fill)
        else:
            blocks = " ▏▎▍▌▋▊▉"
            full = pct // 10
            bar = "█" * full + (blocks[(pct % 10) * 8 // 10] if full < 10 else "") + " " * max(0, 9 - full)
        rate = self.rng.uniform(1.2, 9.0)
        left = (total - step) * rate
        return "%3d%%|%s| %d/%d [%s<%s, %5.2fs/it]" % (pct, bar, step, total, self.hms(el), self.hms(left), rate)

    @staticmethod
    def hms(s):
        s = int(s)
        h, m = divmod(s, 3600)
        m, sec = divmod(m, 60)
        return "%d:%02d:%02d" % (h, m, sec) if h else "%02d:%02d" % (m, sec)

    def user_warning(self):
        if vt(self.P["v"]) < (2, 1):
            return self.rng.choice([
                ["%s/torch/optim/lr_scheduler.py:138: UserWarning: Detected call of `lr_scheduler.step()` before "
                 "`optimizer.step()`. In PyTorch 1.1.0 and later, you should call them in the opposite order: "
                 "`optimizer.step()` before `lr_scheduler.step()`.  Failure to do this will result in PyTorch skipping "
                 "the first value of the learning rate schedule. See more details at "
                 "https://pytorch.org/docs/stable/optim.html#how-to-adjust-learning-rate" % self.sp,
                 '  warnings.warn("Detected call of `lr_scheduler.step()` before `optimizer.step()`. "'],
                ["%s/torch/nn/modules/module.py:1373: UserWarning: Using a non-full backward hook when the forward "
                 "contains multiple autograd Nodes is deprecated and will be removed in future versions. This hook will "
                 "be missing some grad_input. Please use register_full_backward_hook to get the documented behavior."
                 % self.sp,
                 "  warnings.warn(\"Using a non-full backward hook when the forward contains multiple autograd Nodes \""],
                ["%s/torch/utils/checkpoint.py:31: UserWarning: None of the inputs have requires_grad=True. Gradients "
                 "will be None" % self.sp, '  warnings.warn("None of the inputs have requires_grad=True. Gradients will be None")'],
            ])
        return self.rng.choice([
            ["%s/torch/utils/checkpoint.py:464: UserWarning: torch.utils.checkpoint: the use_reentrant parameter "
             "should be passed explicitly. In version 2.4 we will raise an exception if use_reentrant is not passed. "
             "use_reentrant=False is recommended, but if you need to preserve the current default behavior, you can "
             "pass use_reentrant=True. Refer to docs for more details on the differences between the two variants."
             % self.sp, "  warnings.warn("],
            ["%s/transformers/training_args.py:1545: FutureWarning: `evaluation_strategy` is deprecated and will be "
             "removed in version 4.46 of Transformers. Use `eval_strategy` instead" % self.sp, "  warnings.warn("],
            ["%s/torch/autograd/graph.py:744: UserWarning: c10d::allreduce_: an autograd kernel was not registered to "
             "the Autograd key(s) but we are trying to backprop through it. This may lead to silently incorrect "
             "behavior. This behavior is deprecated and will be removed in a future version of PyTorch. If your "
             "operator is differentiable, please ensure you have registered an autograd kernel to the correct Autograd "
             "key (e.g. DispatchKey::Autograd, DispatchKey::CompositeImplicitAutograd). If your operator is not "
             "differentiable, or to squash this warning and use the previous behavior, please register "
             "torch::CppFunction::makeFallthrough() to DispatchKey::Autograd. (Triggered internally at "
             "../torch/csrc/autograd/autograd_not_implemented_fallback.cpp:63.)" % self.sp,
             "  return Variable._execution_engine.run_backward(  # Calls into the C++ engine to run the backward pass"],
            ["%s/torch/nn/modules/module.py:1373: UserWarning: Using a non-full backward hook when the forward "
             "contains multiple autograd Nodes is deprecated and will be removed in future versions. This hook will be "
             "missing some grad_input. Please use register_full_backward_hook to get the documented behavior." % self.sp,
             "  warnings.warn(\"Using a non-full backward hook when the forward contains multiple autograd Nodes \""],
        ])

    def op_compat_lines(self):
        tv = self.P["v"]
        w = self.color("93", " [WARNING] ") + " " if self.o.ansi != "off" else " [WARNING]  "
        return [w + "async_io requires the dev libaio .so object and headers but these were not found.",
                w + "async_io: please install the libaio-dev package with apt",
                w + "If libaio is already installed (perhaps from source), try setting the CFLAGS and LDFLAGS "
                    "environment variables to where it can be found.",
                w + "Please specify the CUTLASS repo directory as environment variable $CUTLASS_PATH",
                w + "sparse_attn requires a torch version >= 1.5 and < 2.0 but detected %s" % tv]

    def nccl_tag(self, r, t_thread=None):
        host = self.host(self.node(r))
        return "%s:%d:%d [%d]" % (host, self.pid(r), t_thread or self.pid(r), self.local(r))

    # ------------------------------------------------------------ phases
    def header(self, t0):
        """Launcher start-up and per-rank initialisation noise; returns the time training starts."""
        o, rng = self.o, self.rng
        t = 0.0
        lay = {"node_rank": None}
        if self.launcher == "deepspeed":
            head = 0
            # the pdsh path (also one host from a hostfile, with --force_multi) keys the dict by host name;
            # the local launcher uses localhost
            wi = {self.host(n) if self.o.dialect == "pdsh" else "localhost": list(range(8)) for n in range(self.nnodes)}
            b64 = base64.urlsafe_b64encode(json.dumps(wi).encode()).decode()
            if self.o.dialect == "pdsh":
                self.emit(t, ("plain",), self.ds_log(head, t, "INFO", "multinode_runner.py:80:get_cmd",
                                                     "Running on the following workers: %s" % ",".join(self.hosts)), "stdout")
                self.emit(t + 0.001, ("plain",), self.ds_log(head, t, "INFO", "runner.py:568:main",
                          "cmd = pdsh -S -f 1024 -w %s export PYTHONPATH=%s; export NCCL_IB_HCA=mlx5; cd %s; %s -u -m "
                          "deepspeed.launcher.launch --world_info=%s --node_rank=%%n --master_addr=%s --master_port=29500 "
                          "%s %s" % (",".join(self.hosts), self.workdir, self.workdir, self.pybin,
                                     b64, self.host(0), self.script, " ".join(self.script_args))), "stdout")
                if self.rc:  # the -w list is in node_rank order
                    self.facts += [(("host", self.host(n)), n) for n in range(self.nnodes)]
            else:
                self.emit(t, ("plain",), self.ds_log(0, t, "WARNING", "runner.py:202:fetch_hostfile",
                                                     "Unable to find hostfile, will proceed with training with local resources only."), "stdout")
                self.emit(t + 0.001, ("plain",), self.ds_log(0, t, "INFO", "runner.py:568:main",
                          "cmd = %s -u -m deepspeed.launcher.launch --world_info=%s --master_addr=127.0.0.1 "
                          "--master_port=29500 --enable_each_rank_log=None %s %s"
                          % (self.pybin, b64, self.script, " ".join(self.script_args))), "stdout")
            t = 3.0
            for n in self.visible:
                tn = t + rng.uniform(0, 0.6)
                src = ("launcher", n)
                ln = []
                lnum = {"0.7.7": (103, 109, 115, 122, 123, 136), "0.9.5": (138, 145, 151, 162, 163, 247)}.get(
                    self.ds_ver, (139, 146, 152, 163, 164, 256))
                ln.append(self.ds_log(n, tn, "INFO", "launch.py:%d:main" % lnum[0], "%d NCCL_IB_HCA=mlx5" % n)
                          if self.o.dialect == "pdsh" else None)
                show = o.layout if self.launcher == "deepspeed" else "both"
                if show in ("dict", "both"):
                    ln.append(self.ds_log(n, tn, "INFO", "launch.py:%d:main" % lnum[1], "WORLD INFO DICT: %s" % wi))
                if show in ("nnodes", "both"):
                    ln.append(self.ds_log(n, tn, "INFO", "launch.py:%d:main" % lnum[2],
                                          "nnodes=%d, num_local_procs=8, node_rank=%d" % (self.nnodes, n)))
                    self.fact(src, n)
                if show == "both":
                    m = {h: list(range(i * 8, i * 8 + 8)) for i, h in enumerate(wi)}
                    ln.append(self.ds_log(n, tn, "INFO", "launch.py:%d:main" % lnum[3],
                                          "global_rank_mapping=defaultdict(<class 'list'>, %s)" % m))
                    ln.append(self.ds_log(n, tn, "INFO", "launch.py:%d:main" % lnum[4], "dist_world_size=%d" % self.W))
                ln.append(self.ds_log(n, tn, "INFO", "launch.py:%d:main" % (lnum[4] + 2),
                                      "Setting CUDA_VISIBLE_DEVICES=0,1,2,3,4,5,6,7"))
                ln = [x for x in ln if x]
                for i, x in enumerate(ln):
                    self.emit(tn + i * 0.001, src, x, "stdout")
                if o.spawn_lines:
                    for lr in range(8):
                        cmd = [self.pybin, "-u", self.script, "--local_rank=%d" % lr] + self.script_args
                        self.emit(tn + 0.01 + lr * 0.002, src, self.ds_log(n, tn + 0.01, "INFO", "launch.py:%d:main" % lnum[5],
                                  "process %d spawned with command: %s" % (self.pid_base[n] + lr, cmd)), "stdout")
        elif self.launcher == "torchrun":
            for n in self.visible:
                tn = t + rng.uniform(0, 1.5)
                src = ("agent", n)
                star = "*****************************************"
                omp = ("Setting OMP_NUM_THREADS environment variable for each process to be 1 in default, to avoid your "
                       "system being overloaded, please further tune the variable for optimal performance in your "
                       "application as needed. ")
                st = self.P["agent"]
                if st == "logging":
                    lines = ["WARNING:torch.distributed.run:", star, omp, star]
                else:
                    lines = [self.agent_line("W", n, tn, x, path="torch/distributed/run.py", line=793,
                                             name="torch.distributed.run") for x in ("", star, omp, star)]
                    if st == "bracket":
                        lines = lines[1:]
                for i, x in enumerate(lines):
                    self.emit(tn + i * 0.0005, src, x)
                if o.rendezvous:
                    tr = tn + rng.uniform(2, 6)
                    head = self.agent_line("I", n, tr, "[default] Rendezvous complete for workers. Result:",
                                           path="torch/distributed/elastic/agent/server/api.py", line=525,
                                           name="torch.distributed.elastic.agent.server.api")
                    gr = list(range(n * 8, n * 8 + 8))
                    block = [head, "  restart_count=0", "  master_addr=%s" % self.host(0), "  master_port=29500",
                             "  group_rank=%d" % n, "  group_world_size=%d" % self.nnodes,
                             "  local_ranks=%s" % list(range(8)), "  role_ranks=%s" % gr, "  global_ranks=%s" % gr,
                             "  role_world_sizes=%s" % ([self.W] * 8), "  global_world_sizes=%s" % ([self.W] * 8), ""]
                    for i, x in enumerate(block):
                        self.emit(tr + i * 0.0001, src, x)
                    self.fact(src, n)
        elif self.launcher == "mpirun" and rng.random() < 0.5:
            n = self.visible[rng.randrange(len(self.visible))]
            for i, x in enumerate(["-" * 74, "WARNING: There was an error initializing an OpenFabrics device.", "",
                                   "  Local host:   %s" % self.host(n), "  Local device: mlx5_0", "-" * 74]):
                self.emit(1.0 + i * 0.0001, ("plain",), x)
        # per-rank init
        t = 8.0
        sample = self.rank_sample(16)
        for r in sample:
            tr = t + rng.uniform(0, 4) + self.node(r) * 0.01
            src = ("rank", r)
            if self.stack == "ds":
                self.emit(tr, src, self.ds_log(self.node(r), tr, "INFO", "real_accelerator.py:203:get_accelerator",
                                               "Setting ds_accelerator to cuda (auto detect)"), "stdout")
                if o.noise >= 2:
                    for i, x in enumerate(self.op_compat_lines()[: rng.randrange(2, 6)]):
                        self.emit(tr + 0.2 + i * 0.0003, src, x, "stdout")
            if o.nccl_debug:
                tn = tr + rng.uniform(5, 9)
                self.emit(tn, src, "%s NCCL INFO Bootstrap : Using eth0:10.1.%d.%d<0>" % (
                    self.nccl_tag(r), self.node(r) // 200, 3 + self.node(r) % 200), "stdout")
                if r == 0:
                    self.emit(tn + 0.001, src, "%s NCCL INFO NCCL version %s+cuda12.%d" % (
                        self.nccl_tag(r), self.P["nccl"], rng.randrange(1, 5)), "stdout")
                self.emit(tn + 0.5, src, "%s NCCL INFO comm 0x%x rank %d nranks %d cudaDev %d nvmlDev %d busId %x000 "
                          "commId 0x%x - Init COMPLETE" % (self.nccl_tag(r, self.pid(r) + 61), rng.randrange(1 << 40, 1 << 44),
                                                           r, self.W, self.local(r), self.local(r),
                                                           [0x18, 0x2a, 0x3a, 0x5d, 0x9a, 0xab, 0xba, 0xdb][self.local(r)],
                                                           rng.randrange(1 << 60, 1 << 63)), "stdout")
            if self.P["hook"] and rng.random() < 0.6:
                pgp = self.pg_prefix(r, 0)
                self.emit(tr + 7, src, self.cpp("W", r, tr + 7, "ProcessGroupNCCL.cpp", 4115) +
                          "%s using GPU %d to perform barrier as devices used by this process are currently unknown. "
                          "This can potentially cause a hang if this rank to GPU mapping is incorrect.Specify device_ids "
                          "in barrier() to force use of a particular device,or call init_process_group() with a device_id."
                          % (pgp, self.local(r)))
            if self.stack == "ds":
                self.emit(tr + 8, src, self.ds_log(self.node(r), tr + 8, "INFO", "comm.py:637:init_distributed",
                                                   "cdb=None"), "stdout")
        if self.stack == "ds":
            tr = t + 9
            self.emit(tr, ("rank", 0), self.ds_log(0, tr, "INFO", "comm.py:668:init_distributed",
                                                   "Initializing TorchBackend in DeepSpeed with backend nccl"), "stdout")
            self.emit(tr + 5, ("rank", 0), self.ds_log(0, tr + 5, "INFO", "logging.py:%d:log_dist" % self.ds_logln,
                      "[Rank 0] DeepSpeed info: version=%s, git-hash=unknown, git-branch=unknown" % self.ds_ver), "stdout")
        return 30.0

    def rank_sample(self, k, must=()):
        """A bounded, deterministic sample of ranks (always including 0, the initiator and must)."""
        if self.W <= k:
            return list(range(self.W))
        s = {0, self.F} | set(must)
        s |= set(range(self.fnode * 8, self.fnode * 8 + 8)) if k >= 16 else set()
        while len(s) < k:
            s.add(self.rng.randrange(self.W))
        return sorted(s)

    def pg_prefix(self, r, pg, desc="default_pg"):
        st = self.P["pg"]
        if st is None:
            return "[Rank %d]" % r
        if st == "pg":
            return "[PG %d Rank %d]" % (pg, r)
        if st == "desc":
            return "[PG %d (%s) Rank %d]" % (pg, desc, r)
        return "[PG ID %d PG GUID %d(%s) Rank %d]" % (pg, pg, desc, r)

    def training(self, t_start, t_end, step_end):
        """Progress noise on rank 0 (and a few others) between t_start and t_end."""
        o, rng = self.o, self.rng
        n_ev = {0: 4, 1: 14, 2: 30, 3: 60}[o.noise]
        total = max(step_end + rng.randrange(50, 5000), 100)
        if self.hf:
            tt = t_start
            lines = ["***** Running training *****", "  Num examples = {:,}".format(rng.randrange(10000, 2000000)),
                     "  Num Epochs = %d" % rng.choice([1, 2, 3]),
                     "  Instantaneous batch size per device = %d" % rng.choice([1, 2, 4, 8]),
                     "  Total train batch size (w. parallel, distributed & accumulation) = %d" % (self.W * 8),
                     "  Gradient Accumulation steps = %d" % rng.choice([1, 4, 8]),
                     "  Total optimization steps = {:,}".format(total),
                     "  Number of trainable parameters = {:,}".format(rng.choice([6738415616, 7241732096, 1543714304]))]
            for i, x in enumerate(lines):
                self.emit(tt + i * 0.001, ("rank", 0), self.hf_log(0, tt, "INFO", "trainer.py:%d" % (2128 + i), x), "stdout")
        if self.stack == "ds" and o.noise >= 1 and o.kind != "loss-scale":
            # fp16 warm-up: the dynamic loss scale halves a few times from
            # 2^16 and settles; normal, and no warning may come of it (no
            # random draws here, so the rest of the log stays as it was)
            old = vt(self.ds_ver) < (0, 10)
            for i, scale in enumerate((65536, 32768, 16384)):
                msg = "[deepspeed] OVERFLOW! Rank 0 Skipping step. Attempted loss scale: %d, reducing to %d" % (
                    scale, scale // 2)
                tt = t_start + 0.4 * (i + 1)
                self.emit(tt, ("rank", 0),
                          msg if old else self.ds_log(0, tt, "INFO", "loss_scaler.py:183:update_scale", msg), "stdout")
        s0 = max(0, step_end - n_ev * rng.randrange(3, 30))
        span = t_end - t_start
        for i in range(n_ev):
            frac = (i + 1) / (n_ev + 1)
            tt = t_start + span * frac
            step = s0 + int((step_end - s0) * frac)
            c = rng.random()
            if c < 0.45:
                segs = [self.tqdm_bar(step + k, total, tt - t_start + k * 1.6) for k in range(rng.randrange(2, 6))]
                self.emit(tt, ("rank", 0), "\r".join(segs), "stderr", tqdm=True)
            elif c < 0.65 and self.hf:
                self.emit(tt, ("rank", 0), "{'loss': %.4f, 'grad_norm': %.3f, 'learning_rate': %.1e, 'epoch': %.2f}" % (
                    rng.uniform(0.8, 2.5), rng.uniform(0.3, 9), rng.uniform(1e-6, 3e-5), step / total * 3), "stdout")
            elif c < 0.85 and self.stack == "ds":
                self.emit(tt, ("rank", 0), self.ds_log(0, tt, "INFO", "logging.py:%d:log_dist" % self.ds_logln,
                          "[Rank 0] step=%d, skipped=%d, lr=[%.6e], mom=[(0.9, 0.95)]" % (
                              step, rng.randrange(0, 40), rng.uniform(1e-6, 3e-5))), "stdout")
                self.emit(tt + 0.001, ("rank", 0), self.ds_log(0, tt, "INFO", "timer.py:260:stop",
                          "epoch=0/micro_step=%d/global_step=%d, RunningAvgSamplesPerSec=%.2f, CurrSamplesPerSec=%.2f, "
                          "MemAllocated=%.2fGB, MaxMemAllocated=%.2fGB" % (step * 4, step, rng.uniform(20, 90),
                                                                         rng.uniform(20, 90), rng.uniform(10, 30),
                                                                         rng.uniform(30, 70))), "stdout")
            elif c < 0.93:
                r = self.rank_sample(16)[rng.randrange(min(16, self.W))]
                for k, x in enumerate(self.user_warning()):
                    self.emit(tt + k * 0.0002, ("rank", r), x)
            elif self.stack == "ds" and self.o.kind != "loss-scale":
                self.emit(tt, ("rank", 0), self.ds_log(0, tt, "WARNING", "stage3.py:2114:step" if rng.random() < 0.5
                          else "stage_1_and_2.py:1888:step",
                          "1 pytorch allocator cache flushes since last step. this happens when there is high memory "
                          "pressure and is detrimental to performance. if this is happening frequently consider "
                          "adjusting settings to reduce memory consumption. If you are unable to make the cache flushes "
                          "go away consider adding get_accelerator().empty_cache() calls in your training loop to ensure "
                          "that all ranks flush their caches at the same time"), "stdout")

    def overflow_cascade(self, t_end):
        """fp16: rank 0 logs the loss scale halving down to the minimum, one skipped step each."""
        scale = 2 ** self.rng.randrange(5, 12)
        t = t_end - 2.5 * (scale.bit_length() + 1)
        old = vt(self.ds_ver) < (0, 10)
        while scale > 1:
            msg = "[deepspeed] OVERFLOW! Rank 0 Skipping step. Attempted loss scale: %d, reducing to %d" % (scale, scale // 2)
            self.emit(t, ("rank", 0), msg if old else self.ds_log(0, t, "INFO", "loss_scaler.py:183:update_scale", msg),
                      "stdout")
            scale //= 2
            t += 2.5
        msg = "[deepspeed] OVERFLOW! Rank 0 Skipping step. Attempted loss scale: 1, but hysteresis is 2. Reducing hysteresis to 1"
        self.emit(t, ("rank", 0), msg if old else self.ds_log(0, t, "INFO", "loss_scaler.py:190:update_scale", msg),
                  "stdout")

    # ------------------------------------------------------------ collateral
    def watchdog(self, r, t, pg, seq, op, numel, full):
        """What a waiting rank prints when its NCCL watchdog fires; returns its abort time."""
        P, rng = self.P, self.rng
        ran = self.timeout_ms + rng.randrange(20, 2500)
        tv = vt(P["v"])
        desc = "default_pg" if pg == 0 else "undefined"
        if P["tensorshape"]:
            work = "WorkNCCL(SeqNum=%d, OpType=%s, TensorShape=[%d], Timeout(ms)=%d)" % (seq, op, numel, self.timeout_ms)
        elif not P["numel"]:
            work = "WorkNCCL(SeqNum=%d, OpType=%s, Timeout(ms)=%d)" % (seq, op, self.timeout_ms)
        else:
            nout = numel * (8 if op in ("_ALLGATHER_BASE", "ALLGATHER") else 1)
            work = "WorkNCCL(SeqNum=%d, OpType=%s, NumelIn=%d, NumelOut=%d, Timeout(ms)=%d)" % (
                seq, op, numel, nout, self.timeout_ms)
        wd = "[Rank %d] Watchdog caught collective operation timeout: %s ran for %d milliseconds before timing out." % (
            r, work, ran)
        src = ("rank", r)
        lines = [self.cpp("E", r, t, "ProcessGroupNCCL.cpp", P["wd_cpp"]) + wd]
        tt = t
        if tv >= (2, 4):
            lines.append(self.cpp("E", r, t + 0.001, "ProcessGroupNCCL.cpp", {(2, 4): 1785, (2, 5): 1664}.get(tv, 1632)) +
                         "%s Exception (either an error or timeout) detected by watchdog at work: %d, last enqueued "
                         "NCCL work: %d, last completed NCCL work: %d." % (self.pg_prefix(r, pg, desc), seq, seq, seq - 1))
        elif tv == (2, 3):
            lines.append(self.cpp("E", r, t + 0.001, "ProcessGroupNCCL.cpp", 1537) +
                         "%s Timeout at NCCL work: %d, last enqueued NCCL work: %d, last completed NCCL work: %d." % (
                             self.pg_prefix(r, pg, desc), seq, seq, seq - 1))
        if not full:
            self.emit_lines(tt, src, lines, dt=0.0002, wd=True)
            return t + rng.uniform(0.05, 0.4)
        if tv >= (2, 3):
            rp = "[Rank %d]" % r
            lines.append(self.cpp("E", r, t + 0.002, "ProcessGroupNCCL.cpp", P["wd_cpp"] + 14) + rp +
                         " Some NCCL operations have failed or timed out. Due to the asynchronous nature of CUDA "
                         "kernels, subsequent GPU operations might run on corrupted/incomplete data.")
            lines.append(self.cpp("E", r, t + 0.002, "ProcessGroupNCCL.cpp", P["wd_cpp"] + 20) + rp +
                         " To avoid data inconsistency, we are taking the entire process down.")
            term = "%s Process group watchdog thread terminated with exception: %s" % (self.pg_prefix(r, pg, desc), wd)
            lines.append(self.cpp("E", r, t + 0.003, "ProcessGroupNCCL.cpp", 1595 if tv >= (2, 4) else 1414) + term)
        elif tv >= (2, 1):
            lines.append(self.cpp("E", r, t, "ProcessGroupNCCL.cpp", 489) + "Some NCCL operations have failed or timed "
                         "out. Due to the asynchronous nature of CUDA kernels, subsequent GPU operations might run on "
                         "corrupted/incomplete data.")
            lines.append(self.cpp("E", r, t, "ProcessGroupNCCL.cpp", 495) + "To avoid data inconsistency, we are taking "
                         "the entire process down.")
            term = "[Rank %d] NCCL watchdog thread terminated with exception: %s" % (r, wd)
            lines.append(self.cpp("E", r, t, "ProcessGroupNCCL.cpp", 916) + term)
        else:
            lines.append(self.cpp("E", r, t, "ProcessGroupNCCL.cpp", 414) + "Some NCCL operations have failed or timed "
                         "out. Due to the asynchronous nature of CUDA kernels, subsequent GPU operations might run on "
                         "corrupted/incomplete data. To avoid this inconsistency, we are taking the entire process down.")
            term = wd
        lines.append("terminate called after throwing an instance of '%s'" % P["term"])
        lines.append("  what():  " + term)
        if tv >= (2, 1):
            lines.append("Exception raised from checkTimeout at ../torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp:%d "
                         "(most recent call first):" % (P["wd_cpp"] + 2))
            lib = self.sp + "/torch/lib/"
            lines += ["frame #0: c10::Error::Error(c10::SourceLocation, std::string) + 0x96 (0x7f3b6d41df86 in %slibc10.so)" % lib,
                      "frame #1: c10d::ProcessGroupNCCL::WorkNCCL::checkTimeout(std::optional<std::chrono::duration<long, "
                      "std::ratio<1l, 1000l> > >) + 0x1d2 (0x7f3b6e71a8d2 in %slibtorch_cuda.so)" % lib,
                      "frame #2: c10d::ProcessGroupNCCL::watchdogHandler() + 0x233 (0x7f3b6e721313 in %slibtorch_cuda.so)" % lib,
                      "frame #3: c10d::ProcessGroupNCCL::ncclCommWatchdog() + 0x10c (0x7f3b6e7236fc in %slibtorch_cuda.so)" % lib,
                      "frame #4: <unknown function> + 0xd6df4 (0x7f3bca9d5df4 in /usr/lib/x86_64-linux-gnu/libstdc++.so.6)",
                      "frame #5: <unknown function> + 0x8609 (0x7f3c74f76609 in /usr/lib/x86_64-linux-gnu/libpthread.so.0)",
                      "frame #6: clone + 0x43 (0x7f3c750b0353 in /usr/lib/x86_64-linux-gnu/libc.so.6)", ""]
        self.emit_lines(tt, src, lines, dt=0.0003, wd=True)
        return t + rng.uniform(0.2, 1.5)

    def remote_error(self, r, t):
        """A rank whose NCCL peer vanished raises ncclRemoteError (collateral)."""
        fr, exc = self.nccl_frames(False, remote=True)
        lines = self.traceback(fr, exc)
        self.emit_lines(t, ("rank", r), lines, dt=0.0004, hook=True, coll=True)
        return t + self.rng.uniform(0.3, 2)

    def waiter_plan(self, t_fail, kill_local):
        """Which ranks hit the watchdog, on which process group / SeqNum, when."""
        rng = self.rng
        step_seq = rng.randrange(200, 90000)
        ops = rng.choice(["ALLREDUCE", "ALLREDUCE", "_ALLGATHER_BASE", "_REDUCE_SCATTER_BASE", "BROADCAST"])
        numel = rng.choice([1, 8192, 16777216, 29360128, 466119168])
        plan = {}
        for r in range(self.W):
            if r == self.F:
                continue
            if kill_local and self.node(r) == self.fnode:
                continue
            if self.W > 16 and self.node(r) == self.fnode:
                # the initiator's tensor-parallel group (its node) waits on its own process group
                plan[r] = (2, step_seq // 3, "ALLREDUCE", numel)
            else:
                plan[r] = (0, step_seq, ops, numel)
        tw = t_fail + self.timeout_ms / 1000.0 + rng.uniform(0.5, 3)
        return plan, tw

    def run_waiters(self, plan, tw):
        """Emits the watchdog lines; returns {rank: abort time}."""
        rng = self.rng
        full_n = self.o.collateral_sample
        ranks = sorted(plan)
        full = set(ranks) if len(ranks) <= full_n else set(rng.sample(ranks, full_n))
        # the initiator's group (same node) always gets the whole dump when small
        full |= {r for r in ranks if self.node(r) == self.fnode}
        aborts = {}
        for r in ranks:
            pg, seq, op, numel = plan[r]
            t = tw + rng.uniform(0, 0.08) + (0.0 if self.node(r) == self.fnode else rng.uniform(0, 0.6))
            aborts[r] = self.watchdog(r, t, pg, seq, op, numel, r in full)
        return aborts

    def table(self, node, t, failures, root, record_exc=None):
        """torchrun's ChildFailedError traceback + table. failures: [(rank, exitcode, time)]."""
        rng = self.rng
        tv = vt(self.P["v"])
        src = ("agent", node)
        lines = ["Traceback (most recent call last):",
                 '  File "%s/torchrun", line 8, in <module>' % self.bindir, "    sys.exit(main())",
                 '  File "%s/torch/distributed/elastic/multiprocessing/errors/__init__.py", line %d, in wrapper' % (
                     self.sp, 346 if tv < (2, 3) else 355), "    return f(*args, **kwargs)",
                 '  File "%s/torch/distributed/run.py", line %d, in main' % (self.sp, 794 if tv < (2, 3) else 919),
                 "    run(args)",
                 '  File "%s/torch/distributed/run.py", line %d, in run' % (self.sp, 785 if tv < (2, 3) else 910),
                 "    elastic_launch(",
                 '  File "%s/torch/distributed/launcher/api.py", line %d, in __call__' % (self.sp, 134 if tv < (2, 3) else 138),
                 "    return launch_agent(self._config, self._entrypoint, list(args))",
                 '  File "%s/torch/distributed/launcher/api.py", line %d, in launch_agent' % (self.sp, 250 if tv < (2, 3) else 269),
                 "    raise ChildFailedError(",
                 "torch.distributed.elastic.multiprocessing.errors.ChildFailedError: ",
                 "=" * 60, "%s FAILED" % self.script, "-" * 60, "Failures:"]
        host = self.host(node)
        others = [f for f in failures if f[0] != root[0]]

        def entry(idx, f, rec):
            r, ec, tt = f
            d = self.clock(node, tt).strftime("%Y-%m-%d_%H:%M:%S")
            out = ["[%d]:" % idx, "  time      : %s" % d, "  host      : %s" % host,
                   "  rank      : %d (local_rank: %d)" % (r, self.local(r)),
                   "  exitcode  : %d (pid: %d)" % (ec, self.pid(r))]
            if rec:
                out.append("  error_file: /tmp/torchelastic_%s/none_%s/attempt_0/%d/error.json" % (
                    self.rid(8), self.rid(8), self.local(r)))
                out.append("  traceback : Traceback (most recent call last):")
                # the @record wrapper is the outermost frame of the recorded traceback
                rec = ['  File "%s/torch/distributed/elastic/multiprocessing/errors/__init__.py", line %d, in wrapper'
                       % (self.sp, 346 if vt(self.P["v"]) < (2, 3) else 355), "    return f(*args, **kwargs)"] + \
                    [x for x in rec[2:]]
                for x in rec:
                    out.append("  " + x)
            else:
                out.append("  error_file: <N/A>")
                if ec < 0:
                    sig = {6: "SIGABRT", 9: "SIGKILL", 11: "SIGSEGV", 15: "SIGTERM", 7: "SIGBUS"}[-ec]
                    out.append("  traceback : Signal %d (%s) received by PID %d" % (-ec, sig, self.pid(r)))
                else:
                    out.append("  traceback : To enable traceback see: https://pytorch.org/docs/stable/elastic/errors.html")
            return out
        if not others:
            lines.append("  <NO_OTHER_FAILURES>")
        for i, f in enumerate(others):
            lines += entry(i + 1, f, None)
        lines += ["-" * 60, "Root Cause (first observed failure):"]
        lines += entry(0, root, record_exc)
        lines.append("=" * 60)
        self.emit_lines(t, src, lines, dt=0.00005)

    def rid(self, n):
        return "".join(self.rng.choice("abcdefghijklmnopqrstuvwxyz0123456789_") for _ in range(n))

    def torchrun_node(self, node, exits, interval, show_table, root_pref=None, record=None, notice_min=None):
        """The torchrun agent of one node after the first child failure. exits: {rank: (time, exitcode)}."""
        rng = self.rng
        ranks = range(node * 8, node * 8 + 8)
        failed = sorted((exits[r][0], r) for r in ranks if r in exits and exits[r][1] != 0)
        if not failed:
            return None
        t_first = failed[0][0]
        t_notice = t_first + rng.uniform(0.02, interval)
        if notice_min is not None:
            t_notice = max(t_notice, notice_min)
        fails = [(r, exits[r][1], tt) for tt, r in failed if tt <= t_notice]
        src = ("agent", node)
        t = t_notice
        for r in ranks:
            if r in exits and exits[r][0] <= t_notice:
                continue
            self.emit(t, src, self.agent_line("W", node, t, "Sending process %d closing signal SIGTERM" % self.pid(r)))
            t += rng.uniform(0.0003, 0.002)
            exits[r] = (t + 0.5, -15)
        if root_pref is not None and any(f[0] == root_pref for f in fails):
            root = [f for f in fails if f[0] == root_pref][0]
        else:
            root = fails[0]
        t += rng.uniform(0.3, 3.0)
        if self.rc:
            return self.torchrun_node_rc(node, t, t_notice, fails, root, show_table, record)
        self.emit(t, src, self.agent_line("E", node, t, "failed (exitcode: %d) local_rank: %d (pid: %d) of binary: %s" % (
            root[1], self.local(root[0]), self.pid(root[0]), self.pybin)), key_agent=(root[0] == self.F))
        poll = t_notice
        fl = [(r, ec, (tt if record else poll)) for r, ec, tt in fails]
        rt = [f for f in fl if f[0] == root[0]][0]
        # what the text shows of the launcher's pick: the failed line alone names the one failure it saw
        # (every other process of the node got SIGTERM); the table, whole seconds, a tie going to the
        # order of its dict: the root is shown first in time only when every other failure's second is later
        sec = lambda f: int(self.clock(node, f[2]).timestamp())  # noqa: E731
        self.root_reliable[node] = len(fails) == 1 or (show_table and all(
            sec(f) > sec(rt) for f in fl if f[0] != root[0]))
        if show_table:
            self.table(node, t + 0.01, fl, rt, record if (record and root[0] == self.F) else None)
        return root[0]

    def torchrun_node_rc(self, node, t, t_notice, fails, root, show_table, record):
        """Rank cases: torchrun's first failure is min(failures, key=timestamp) in whole seconds (the error
        file's time for a Python exception under @record, else the poll), a tie going to the lowest local
        rank; the summary may be left out (--launcher-summary off)."""
        o = self.o
        src = ("agent", node)

        def ts(f):
            return f[2] if (o.record and f[1] == 1) else t_notice

        def sec(f):
            return int(self.clock(node, ts(f)).timestamp())
        if len(fails) > 1 and not (o.root_cause == "other" and o.kind in ALL_RANK_KINDS):
            root = min(fails, key=lambda f: (sec(f), self.local(f[0])))
        reliable = all(sec(f) > sec(root) for f in fails if f is not root)
        self.node_exit[node] = t + 0.05
        if not o.launcher_summary:
            return root[0]
        self.emit(t, src, self.agent_line("E", node, t, "failed (exitcode: %d) local_rank: %d (pid: %d) of binary: %s" % (
            root[1], self.local(root[0]), self.pid(root[0]), self.pybin)), key_agent=(root[0] == self.F))
        # the failed line alone does not show whether other failures were folded into the same poll
        self.records.append({"t": t, "src": src, "rank": None, "local": self.local(root[0]), "ec": root[1],
                             "reliable": reliable and (len(fails) == 1 or show_table), "what": "failed line"})
        if show_table:
            fl = [(r, ec, ts((r, ec, tt))) for r, ec, tt in fails]
            rt = [f for f in fl if f[0] == root[0]][0]
            self.table(node, t + 0.01, fl, rt, record if (record and root[0] == self.F) else None)
            self.records.append({"t": t + 0.01, "src": src, "rank": root[0], "local": self.local(root[0]),
                                 "ec": root[1], "reliable": reliable, "what": "table"})
            self.fact(src, node)  # the table names the node's global ranks
        return root[0]

    # ------------------------------------------------------------ the failure
    def build(self):
        o, rng = self.o, self.rng
        t_train = self.header(0)
        kind = o.kind
        init_fail = kind == "batch-assert" or (kind == "nccl-system" and o.nccl_at_init)
        if init_fail:
            t0 = t_train + rng.uniform(5, 60)
            step = 0
        else:
            t0 = t_train + rng.uniform(300, 20000)
            step = rng.randrange(30, 20000)
            self.training(t_train, t0 - 2, step)
            if kind == "loss-scale":
                self.overflow_cascade(t0 - 0.5)
        F = self.F
        fsrc = ("rank", F)
        hook = True
        raisers = {}  # rank -> time its error (key) line is printed
        exits = self.exit
        record_exc = None
        kill = o.collateral == "kill"
        # ---- the initiating failure
        if kind in ("oom", "ds-oom"):
            nogpu = o.nogpu
            fr = self.oom_frames(kind == "ds-oom")
            msg = self.oom_message(self.local(F), nogpu)
            lines = self.traceback(fr, [msg])
            self.emit_lines(t0, fsrc, lines, dt=0.0004, key=len(lines) - 1, hook=hook, tb=True)
            f_times = self.last_times
            raisers[F] = self.last_t(F)
            record_exc = lines[1:]
            for k in range(o.echo):
                # another rank runs out of memory too, a little later (same step, bigger batch)
                r = self.pick_other(prefer_node=self.fnode if rng.random() < 0.6 else None, avoid=raisers)
                if o.interleave == "off":
                    te = raisers[F] + rng.uniform(0.3, 4)
                else:
                    te = t0 + 0.0002 + 0.0001 * k
                lines_e = self.traceback(self.oom_frames(kind == "ds-oom"), [self.oom_message(self.local(r), nogpu)])
                if o.interleave == "off":
                    self.emit_lines(te, ("rank", r), lines_e, dt=0.0004, hook=hook, tb=True)
                else:
                    self.emit_following(f_times, ("rank", r), lines_e, 0.0003 * (k + 1), hook=hook, tb=True)
                raisers[r] = self.last_t(r)
        elif kind in ALL_RANK_KINDS:
            if kind == "loss-scale":
                fr, exc = self.loss_scale_frames()
            else:
                dp = self.W // (8 if (self.W >= 64 and rng.random() < 0.5) else 1) if self.W >= 16 else self.W
                mb = rng.choice([1, 2, 4, 8])
                ga = rng.choice([1, 2, 4, 8, 16])
                tb = rng.choice([32, 64, 128, 256, 512, 1024])
                if tb == mb * ga * dp:
                    tb *= 2
                fr, exc = self.batch_frames(dp, (tb, mb, ga))
            lines = self.traceback(fr, exc)
            record_exc = lines[1:]
            who = self.rank_sample(o.collateral_sample, must=range(self.fnode * 8, self.fnode * 8 + 8))
            # every rank of the world raising it alike: a failure of every process (a config
            # check, the loss scale's floor), so no rank started it; ddx says "unknown"
            self.every_rank_raised = len(set(who)) >= self.W
            starts = {}
            for r in who:
                if r == F:
                    starts[r] = t0
                elif kind == "loss-scale":
                    starts[r] = t0 + rng.uniform(0.001, 0.03) + (0.02 if self.node(r) != self.fnode else 0)
                else:
                    starts[r] = t0 + rng.uniform(0.05, 1.5) + (rng.uniform(3, 12) if self.node(r) != self.fnode else 0)
            dt = 0.0004
            if o.interleave == "off":
                # whole blocks, one after the other in start order
                order = sorted(who, key=lambda r: starts[r])
                t = t0
                for r in order:
                    t = max(t, starts[r])
                    t = self.emit_lines(t, ("rank", r), lines, dt=dt * 0.01, key=len(lines) - 1 if r == F else None,
                                        hook=hook, tb=True)
                    raisers[r] = t
                    t += 0.00001
            else:
                # the ranks close in time print their lines interleaved, the initiator a step ahead
                self.emit_lines(t0, fsrc, lines, dt=dt, key=len(lines) - 1, hook=hook, tb=True)
                f_times = self.last_times
                for r in who:
                    if r == F:
                        continue
                    if kind == "loss-scale" or self.node(r) == self.fnode:
                        self.emit_following(f_times, ("rank", r), lines, rng.uniform(0.00005, dt * 2.5), hook=hook, tb=True)
                    else:
                        self.emit_lines(starts[r], ("rank", r), lines, dt=dt, hook=hook, tb=True)
                for r in who:
                    raisers[r] = self.last_t(r)
        elif kind == "nccl-system":
            if o.nccl_debug:
                tag = self.nccl_tag(F, self.pid(F) + rng.randrange(100, 900))
                peer = "10.1.%d.%d<%d>" % (rng.randrange(0, 2), rng.randrange(2, 200), rng.randrange(30000, 60000))
                nl = ["%s misc/socket.cc:484 NCCL WARN socketStartConnect: Connect to %s failed : Software caused "
                      "connection abort" % (tag, peer),
                      "%s NCCL INFO misc/socket.cc:565 -> 2" % tag, "%s NCCL INFO misc/socket.cc:619 -> 2" % tag,
                      "%s NCCL INFO bootstrap.cc:274 -> 2" % tag, "%s NCCL INFO init.cc:1403 -> 2" % tag,
                      "%s NCCL INFO group.cc:64 -> 2 [Async thread]" % tag, "%s NCCL INFO group.cc:418 -> 2" % tag,
                      "%s NCCL INFO init.cc:1902 -> 2" % tag]
                self.emit_lines(t0 - 0.05, fsrc, nl, dt=0.0002, stream="stdout")
            fr, exc = self.nccl_frames(init_fail)
            lines = self.traceback(fr, exc)
            self.emit_lines(t0, fsrc, lines, dt=0.0004, key=len(lines) - len(exc), hook=hook, tb=True)
            raisers[F] = self.last_t(F)
            record_exc = lines[1:]
            # echoes: peers see the broken connection a little later
            n_echo = min(self.W - 1, rng.randrange(1, 4))
            if self.rc:
                n_echo = 0  # rank cases: one raiser
            for k in range(n_echo):
                r = self.pick_other(prefer_node=None, avoid=raisers)
                te = raisers[F] + rng.uniform(0.5, 20)
                fr2, exc2 = self.nccl_frames(init_fail, remote=rng.random() < 0.5)
                self.emit_lines(te, ("rank", r), self.traceback(fr2, exc2), dt=0.0004, hook=hook, tb=True)
                raisers[r] = te
        elif kind == "segfault":
            fr = self.oom_frames(self.stack == "ds")
            lines = ["Fatal Python error: Segmentation fault", ""]
            if rng.random() < 0.5:
                lines += ["Thread 0x%016x (most recent call first):" % rng.randrange(0x7f0000000000, 0x7fffffffffff),
                          '  File "/usr/lib/python%s/threading.py", line 324 in wait' % self.P["py"],
                          '  File "/usr/lib/python%s/threading.py", line 607 in wait' % self.P["py"],
                          '  File "%s/tqdm/_monitor.py", line 60 in run' % self.sp,
                          '  File "/usr/lib/python%s/threading.py", line 1016 in _bootstrap_inner' % self.P["py"],
                          '  File "/usr/lib/python%s/threading.py", line 973 in _bootstrap' % self.P["py"], ""]
            lines.append("Current thread 0x%016x (most recent call first):" % rng.randrange(0x7f0000000000, 0x7fffffffffff))
            lines += self.traceback(list(reversed(fr)), [], faulthandler=True)
            if vt(self.P["py"]) >= (3, 10):
                lines += ["", "Extension modules: numpy.core._multiarray_umath, numpy.core._multiarray_tests, "
                          "numpy.linalg._umath_linalg, torch._C, torch._C._fft, torch._C._linalg, torch._C._nested, "
                          "torch._C._nn, torch._C._sparse, torch._C._special, yaml._yaml, sentencepiece._sentencepiece "
                          "(total: %d)" % rng.randrange(20, 60)]
            self.emit_lines(t0, fsrc, lines, dt=0.0002, key=0, hook=False)
            raisers[F] = t0
        elif kind == "host-oom":
            raisers[F] = t0  # the victim prints nothing
        elif kind == "assert":
            fr, exc = self.assert_frames(step)
            lines = self.traceback(fr, exc)
            self.emit_lines(t0, fsrc, lines, dt=0.0004, key=len(lines) - 1, hook=hook, tb=True)
            raisers[F] = self.last_t(F)
            record_exc = lines[1:]
        # ---- exits of the raisers
        if kind in ("segfault", "host-oom"):
            exits[F] = (t0 + 0.01, -11 if kind == "segfault" else -9)
            kill = True
        else:
            tf = raisers[F] + rng.uniform(0.2, 1.5)
            if kill:
                exits[F] = (tf, 1)
            # (hang: the initiator lingers after its exception and never exits by itself)
            for r, tr in raisers.items():
                if r != F:
                    # raisers leave after the initiator did (the launcher's root cause is the initiator
                    # unless --root-cause other moves one of them first, below)
                    exits[r] = (max(tr + rng.uniform(0.2, 1.5), tf + rng.uniform(0.01, 0.5)), 1)
        if self.rc and o.kind in ("oom", "ds-oom") and not o.nogpu:
            self.cause_local = self.local(F)  # "GPU N" in the message
        if self.rc and self.launcher == "spawn":
            record_exc = self.spawn_cause(kind)
        self.collateral(t0, raisers, kill, record_exc)
        self.tail()

    def pick_other(self, prefer_node=None, avoid=()):
        rng = self.rng
        for _ in range(1000):
            if prefer_node is not None:
                r = prefer_node * 8 + rng.randrange(8)
            else:
                r = rng.randrange(self.W)
            if r != self.F and r not in avoid:
                return r
        return (self.F + 1) % self.W

    def last_t(self, r):
        return max(e[0] for e in self.events if e[2] == ("rank", r))

    def fix_first(self, F, n):
        """Interleaved blocks: make sure the initiator's error line is the first error line in time."""
        keyt = None
        for e in self.events:
            if e[5].get("key") and e[2] == ("rank", F):
                keyt = e[0]
        if keyt is None:
            return
        # per other rank: its last traceback line must come after the initiator's key line
        last = {}
        for e in self.events:
            if e[5].get("tb") and e[2][0] == "rank" and e[2] != ("rank", F):
                last.setdefault(e[2], []).append(e)
        for src, evs in last.items():
            evs.sort(key=lambda e: e[0])
            if evs[-1][0] <= keyt:
                shift = keyt - evs[-1][0] + 0.00002 + self.rng.uniform(0, 0.0002)
                for e in evs:
                    e[0] += shift

    def collateral(self, t0, raisers, kill, record_exc):
        o, rng = self.o, self.rng
        F = self.F
        exits = self.exit
        kind = o.kind
        launcher = self.launcher
        root_pref = None
        if o.root_cause == "other" and kind in ALL_RANK_KINDS and not o.record:
            same = [r for r in raisers if r != F and self.node(r) == self.fnode]
            if same:
                root_pref = rng.choice(same)
                # the agent polled both exits together
                exits[root_pref] = (exits[F][0] + rng.uniform(-0.3, 0.05), 1)
        # ---- who waits in NCCL, and when the watchdog fires
        global_kill = launcher in ("srun", "mpirun") and kill
        waiters_needed = not (kind in ALL_RANK_KINDS)
        plan, tw = ({}, None)
        if waiters_needed and not global_kill:
            plan, tw = self.waiter_plan(t0, kill_local=kill)
            if kind == "nccl-system":
                for r in raisers:
                    plan.pop(r, None)
            for r in list(plan):
                if r in exits:
                    plan.pop(r)
        # remote errors on other nodes, before their watchdog
        if kill and self.multi and o.remote_errors and waiters_needed and not global_kill:
            others = [r for r in plan if self.node(r) != self.fnode]
            for r in rng.sample(others, min(len(others), rng.randrange(1, 4))):
                te = t0 + rng.uniform(1, 30)
                if self.rc:  # after the initiator's node reported it (the launcher's first failure stays the initiator)
                    te = max(te, exits[F][0] + 6.0 + rng.uniform(0, 3))
                exits[r] = (self.remote_error(r, te), 1)
                plan.pop(r, None)
        if self.rc:
            self.rc_collateral(plan, tw, exits)
        if plan:
            aborts = self.run_waiters(plan, tw)
            for r, ta in aborts.items():
                if r not in exits:
                    exits[r] = (ta, -6)
        # ---- launchers
        if launcher == "torchrun":
            interval = 5.0 if vt(self.P["v"]) <= (1, 13) else 0.1 * rng.choice([1, 5, 10, 50])
            notice_min = self.table_multi_peers(exits, interval) if (self.rc and o.table_multi) else None
            nodes = [self.fnode] + [n for n in self.visible if n != self.fnode]
            shown_tables = 0
            self.root_rank = None
            for n in nodes:
                rp = root_pref if n == self.fnode else None
                rec = record_exc if (o.record and n == self.fnode) else None
                show = o.table and (n == self.fnode or shown_tables < 3)
                rr = self.torchrun_node(n, exits, interval, show, root_pref=rp, record=rec,
                                        notice_min=notice_min if n == self.fnode else None)
                if n == self.fnode:
                    self.root_rank = rr
                if show and rr is not None:
                    shown_tables += 1
        elif launcher == "deepspeed":
            self.root_rank = None
            for n in [self.fnode] + [x for x in self.visible if x != self.fnode]:
                ranks = range(n * 8, n * 8 + 8)
                failed = sorted((exits[r][0], r) for r in ranks if r in exits and exits[r][1] != 0)
                if not failed:
                    continue
                t = failed[0][0] + rng.uniform(0.05, 1.0)
                first = [r for tt, r in failed if tt <= t]
                rc = exits[rng.choice(first)][1]
                src = ("launcher", n)
                summ = not self.rc or o.launcher_summary
                for r in ranks:
                    if summ:
                        self.emit(t, src, self.ds_log(n, t, "INFO", "launch.py:%d:sigkill_handler" % (
                            316 if vt(self.ds_ver) >= (0, 10) else 131), "Killing subprocess %d" % self.pid(r)), "stdout")
                    t += rng.uniform(0.0005, 0.003)
                    if r not in exits:
                        exits[r] = (t, -15)
                if not summ:
                    continue
                cmd = [self.pybin, "-u", self.script, "--local_rank=7"] + self.script_args
                self.emit(t + 0.002, src, self.ds_log(n, t, "ERROR", "launch.py:%d:sigkill_handler" % (
                    322 if vt(self.ds_ver) >= (0, 10) else 137), "%s exits with return code = %d" % (cmd, rc)), "stdout",
                    key_agent=(n == self.fnode and self.F in first))
                if self.o.dialect == "pdsh":
                    self.emit(t + rng.uniform(0.05, 0.5), ("plain",), "pdsh@%s: %s: ssh exited with exit code %d" % (
                        self.host(0), self.host(n), rc & 255))
        elif launcher == "srun":
            if not self.rc or o.launcher_summary:
                self.srun_tail(exits, kill)
        elif launcher == "mpirun":
            self.mpirun_tail(exits, kill)
        elif launcher == "spawn":
            self.spawn_tail(exits)
        if self.rc:
            self.outer_tail()
        self.final_t = max([e[0] for e in self.events] + [t0]) + 1

    # ------------------------------------------------------------ rank cases: collateral pieces
    def rc_collateral(self, plan, tw, exits):
        """--silent-peers: look-alikes of the initiator (same local rank elsewhere when the cause shows its
        local rank, else the same node) whose output is missing from the paste."""
        o, rng = self.o, self.rng
        if not o.silent_peers or not plan:
            return
        gives_local = self.scheme in ("local", "host-local", "task-local") or self.launcher == "spawn" or \
            self.cause_local is not None
        if gives_local:
            look = sorted(r for r in plan if self.local(r) == self.flocal)
        else:
            look = sorted(r for r in plan if self.node(r) == self.fnode)
        pick = rng.sample(look, min(len(look), o.silent_peers))
        if len(pick) < o.silent_peers:
            rest = sorted(set(plan) - set(pick))
            pick += rng.sample(rest, min(len(rest), o.silent_peers - len(pick)))
        for r in pick:
            plan.pop(r)
            self.silent.add(r)
            exits[r] = (tw + rng.uniform(0.05, 1.0), -6)

    def table_multi_peers(self, exits, interval):
        """--table multi: node-local peers of the initiator lose their NCCL peer and fail within the agent's
        poll; returns the earliest time the agent may notice (all of them in one poll)."""
        rng = self.rng
        F = self.F
        peers = [r for r in range(self.fnode * 8, self.fnode * 8 + 8) if r != F and r not in self.exit]
        tF = exits[F][0]
        last = tF
        for r in rng.sample(peers, min(len(peers), rng.randrange(2, 4))):
            end = self.remote_error(r, tF + rng.uniform(0.05, 0.9))
            exits[r] = (end, 1)
            last = max(last, end)
        return last + rng.uniform(0.01, 0.1)

    def spawn_frames(self):
        t = vt(self.P["v"])
        a, b, c, w = ((230, 188, 150, 69) if t <= (1, 13) else (239, 197, 160, 69) if t <= (2, 1) else
                      (241, 197, 158, 68) if t <= (2, 3) else (328, 284, 203, 90))
        sp = self.sp + "/torch/multiprocessing/spawn.py"
        if not hasattr(self, "spawn_main_line"):
            self.spawn_main_line = self.rng.randrange(380, 460)
        head = ["Traceback (most recent call last):",
                '  File "%s/%s", line %d, in <module>' % (self.workdir, self.script, self.spawn_main_line),
                "    mp.spawn(main, args=(args,), nprocs=%d, join=True)" % NPN,
                '  File "%s", line %d, in spawn' % (sp, a),
                '    return start_processes(fn, args, nprocs, join, daemon, start_method="spawn")',
                '  File "%s", line %d, in start_processes' % (sp, b),
                "    while not context.join():",
                '  File "%s", line %d, in join' % (sp, c)]
        wrap = ['  File "%s", line %d, in _wrap' % (sp, w), "    fn(i, *args)"]
        return head, wrap

    def spawn_cause(self, kind):
        """mp.spawn: the child's exception reaches the parent through the error file; the parent prints it as
        ProcessRaisedException "-- Process N terminated with the following error:" (N = spawn index = local
        rank) and terminates the node's other children. A segfault: the child's faulthandler dump, then the
        parent's ProcessExitedException (spawn_tail)."""
        F, rng = self.F, self.rng
        if kind == "segfault":
            return None
        evs = sorted([e for e in self.events if e[2] == ("rank", F) and e[5].get("tb")], key=lambda e: (e[0], e[1]))
        gone = {id(e) for e in evs}
        self.events = [e for e in self.events if id(e) not in gone]
        lines = [e[4] for e in evs]
        ki = [i for i, e in enumerate(evs) if e[5].get("key")][0]
        head, wrap = self.spawn_frames()
        child = ["Traceback (most recent call last):"] + wrap + lines[3:]  # _wrap calls main(i, *args): no <module>
        block = head + ["    raise ProcessRaisedException(msg, error_index, failed_process.pid)",
                        "torch.multiprocessing.spawn.ProcessRaisedException: ", "",
                        "-- Process %d terminated with the following error:" % self.flocal] + child
        key = len(block) - len(child) + ki
        t = self.exit[F][0] + rng.uniform(0.01, 0.3)
        end = self.emit_lines(t, ("spawn", self.fnode), block, dt=0.0001, key=key, spawn=True)
        self.cause_local = self.flocal
        for r in range(self.fnode * 8, self.fnode * 8 + 8):
            if r not in self.exit:
                self.exit[r] = (t - 0.001, -15)  # terminated by the parent before it raises
        self.node_exit[self.fnode] = end + 0.05
        return None

    def spawn_tail(self, exits):
        """The spawn parents of the other (visible) nodes: the first child to die (a watchdog abort) is reported
        as ProcessExitedException; a segfaulting initiator's parent reports SIGSEGV."""
        rng = self.rng
        names = {6: "SIGABRT", 9: "SIGKILL", 11: "SIGSEGV", 15: "SIGTERM"}
        for n in [self.fnode] + [x for x in self.visible if x != self.fnode]:
            if n in self.node_exit:
                continue
            ranks = range(n * 8, n * 8 + 8)
            failed = sorted((exits[r][0], r) for r in ranks if r in exits and exits[r][1] != 0)
            if not failed:
                continue
            tt, r = failed[0]
            ec = exits[r][1]
            t = tt + rng.uniform(0.01, 0.3)
            for x in ranks:
                if x not in exits:
                    exits[x] = (t - 0.001, -15)
            head, _ = self.spawn_frames()
            msg = ("process %d terminated with signal %s" % (self.local(r), names.get(-ec, "SIG%d" % -ec)) if ec < 0
                   else "process %d terminated with exit code %d" % (self.local(r), ec))
            src = ("spawn", n)
            # a child that died of a watchdog abort is collateral; SIGSEGV / exit 1 is the failure itself
            end = self.emit_lines(t, src, head + ["    raise ProcessExitedException(",
                                                 "torch.multiprocessing.spawn.ProcessExitedException: " + msg],
                                  dt=0.0001, spawn_exit=self.local(r) if ec not in (1, -11) else None)
            if ec in (1, -11):
                self.records.append({"t": end, "src": src, "rank": None, "local": self.local(r), "ec": ec,
                                     "reliable": True, "what": "spawn"})
            self.node_exit[n] = end + 0.05

    def outer_tail(self):
        """srun (no --kill-on-bad-exit: each task is reported as it exits) or pdsh around the node launchers."""
        o, rng = self.o, self.rng
        if not o.launcher_summary or o.outer is None or self.launcher in ("srun", "deepspeed"):
            return
        for n, t in sorted(self.node_exit.items(), key=lambda kv: kv[1]):
            t2 = t + rng.uniform(0.1, 1.0)
            if o.outer == "srun":
                self.emit(t2, ("plain",), "srun: error: %s: task %d: Exited with exit code 1" % (
                    self.host(n), self.task_of[n]))
            else:
                self.emit(t2, ("plain",), "pdsh@%s: %s: ssh exited with exit code 1" % (self.host(0), self.host(n)))

    def srun_rec(self, t, n, rs, ec):
        if self.rc:
            self.facts.append((("host", self.host(n)), n))
            self.records.append({"t": t, "src": ("plain",), "ranks": list(rs), "ec": ec, "reliable": True,
                                 "what": "srun"})

    def srun_tail(self, exits, kill):
        rng = self.rng
        desc = {1: "Exited with exit code 1", -6: "Aborted (core dumped)", -9: "Killed", -11: "Segmentation fault (core dumped)",
                -15: "Terminated"}
        if self.o.kind == "host-oom":
            desc[-9] = "Out Of Memory"
        failed = sorted((tt, r) for r, (tt, ec) in exits.items() if ec != 0)
        t_first = failed[0][0]
        self.root_rank = failed[0][1]
        if self.o.kind == "host-oom":
            self.emit(t_first + 0.05, ("plain",), "slurmstepd: error: Detected 1 oom-kill event(s) in StepId=%d.0. Some of "
                      "your processes may have been killed by the cgroup out-of-memory handler." % self.jobid)
        if kill:
            first_batch = [(tt, r) for tt, r in failed if tt <= t_first + 0.5]
            by_ec = {}
            for tt, r in first_batch:
                by_ec.setdefault((self.node(r), exits[r][1]), []).append(r)
            t = t_first + 0.3
            for (n, ec), rs in sorted(by_ec.items(), key=lambda kv: min(exits[x][0] for x in kv[1])):
                self.emit(t, ("plain",), "srun: error: %s: task%s %s: %s" % (
                    self.host(n), "s" if len(rs) > 1 else "", ranges(rs), desc.get(ec, "Exited with exit code %d" % ec)),
                    key_agent=self.F in rs)
                self.srun_rec(t, n, rs, ec)
                t += 0.001
            self.emit(t + 0.01, ("plain",), "srun: Job step aborted: Waiting up to 32 seconds for job step to finish.")
            d = self.clock(0, t + 0.02)
            self.emit(t + 0.02, ("plain",), "slurmstepd: error: *** STEP %d.0 ON %s CANCELLED AT %s ***" % (
                self.jobid, self.host(0), d.strftime("%Y-%m-%dT%H:%M:%S")))
            t += rng.uniform(1, 3)
            for n in self.visible:
                rs = [r for r in range(n * 8, n * 8 + 8) if r not in dict((x, 1) for _, x in first_batch)]
                if rs:
                    self.emit(t, ("plain",), "srun: error: %s: task%s %s: Terminated" % (
                        self.host(n), "s" if len(rs) > 1 else "", ranges(rs)))
                    self.srun_rec(t, n, rs, -15)
                    t += 0.001
                for r in rs:
                    exits.setdefault(r, (t, -15))
        else:
            # no --kill-on-bad-exit: tasks are reported as they die; the initiator hangs until the time limit
            t = t_first
            groups = {}
            for tt, r in failed:
                groups.setdefault((self.node(r), exits[r][1]), []).append((tt, r))
            for (n, ec), items in sorted(groups.items(), key=lambda kv: kv[1][0][0]):
                if n not in self.visible:
                    continue
                rs = [r for _, r in items]
                tt = items[0][0] + 0.2
                self.emit(tt, ("plain",), "srun: error: %s: task%s %s: %s" % (
                    self.host(n), "s" if len(rs) > 1 else "", ranges(rs), desc.get(ec, "Exited with exit code %d" % ec)))
                self.srun_rec(tt, n, rs, ec)
                t = max(t, tt)
            t += rng.uniform(600, 3600)
            d = self.clock(0, t)
            self.emit(t, ("plain",), "slurmstepd: error: *** STEP %d.0 ON %s CANCELLED AT %s DUE TO TIME LIMIT ***" % (
                self.jobid, self.host(0), d.strftime("%Y-%m-%dT%H:%M:%S")))
            self.emit(t + 1, ("plain",), "srun: error: %s: task %d: Terminated" % (self.host(self.fnode), self.F))

    def mpirun_tail(self, exits, kill):
        failed = sorted((tt, r) for r, (tt, ec) in exits.items() if ec != 0)
        t, r = failed[0]
        ec = exits[r][1]
        self.root_rank = r
        if not self.o.table:
            return
        t += self.rng.uniform(0.2, 1.5)
        dash = "-" * 74
        if ec < 0:
            name = {6: "Aborted", 9: "Killed", 11: "Segmentation fault", 15: "Terminated"}[-ec]
            lines = [dash, "mpirun noticed that process rank %d with PID %d on node %s exited on signal %d (%s)." % (
                r, self.pid(r), self.host(self.node(r)), -ec, name), dash]
        else:
            lines = [dash, "Primary job  terminated normally, but 1 process returned",
                     "a non-zero exit code. Per user-direction, the job has been aborted.", dash, dash,
                     "mpirun detected that one or more processes exited with non-zero status, thus causing",
                     "the job to be terminated. The first process to do so was:", "",
                     "  Process name: [[%d,1],%d]" % (self.jobid % 65536, r), "  Exit code:    %d" % ec, dash]
        self.emit_lines(t, ("plain",), lines, dt=0.0001, key_agent=(r == self.F))

    def tail(self):
        """Things pasted after the log: dmesg output."""
        o, rng = self.o, self.rng
        if not o.kernel_line or o.kind not in ("host-oom", "segfault"):
            return
        t = self.final_t + rng.uniform(30, 600)
        kt = self.exit[self.F][0]
        d = self.clock(self.fnode, kt)
        pid = self.pid(self.F)
        pname = "pt_main_thread" if vt(self.P["v"]) >= (2, 0) and rng.random() < 0.6 else "python"
        host = self.host(self.fnode)
        prompt = rng.choice(["root@%s:~# " % host, "[user@%s ~]$ " % host, "$ "])
        ts = ("[%s]" % d.strftime("%a %b %d %H:%M:%S %Y")) if rng.random() < 0.6 else "[%d.%06d]" % (
            rng.randrange(100000, 9000000), rng.randrange(0, 999999))
        if o.kind == "host-oom":
            cmd = prompt + rng.choice(['dmesg -T | grep -i -E "killed process|out of memory"', "sudo dmesg | tail -n 2"])
            lines = [cmd,
                     "%s %s invoked oom-killer: gfp_mask=0x140cca(GFP_HIGHUSER_MOVABLE|__GFP_COMP), order=0, oom_score_adj=0"
                     % (ts, pname),
                     "%s Out of memory: Killed process %d (%s) total-vm:%dkB, anon-rss:%dkB, file-rss:%dkB, shmem-rss:%dkB, "
                     "UID:0 pgtables:%dkB oom_score_adj:0" % (ts, pid, pname, rng.randrange(6 * 10 ** 8, 9 * 10 ** 8),
                                                              rng.randrange(10 ** 8, 5 * 10 ** 8), rng.randrange(10 ** 5, 10 ** 6),
                                                              rng.randrange(10 ** 5, 10 ** 7), rng.randrange(10 ** 5, 10 ** 6))]
            if rng.random() < 0.5:
                lines.pop(1)
        else:
            cmd = prompt + "dmesg -T | grep segfault"
            lines = [cmd, "%s %s[%d]: segfault at 18 ip 00007f3b6e7236fc sp 00007ffd1c3a8b70 error 4 in "
                          "libtorch_cuda.so[7f3b6a000000+4e1a000]" % (ts, pname, pid)]
        self.emit_lines(t, ("plain",), lines, dt=0.01, key_agent=True)

    # ------------------------------------------------------------ rendering
    def prefix(self, src, stream):
        if self.rc:
            return self.rc_prefix(src)
        d = self.o.dialect
        if src[0] == "rank":
            r = src[1]
            n = self.node(r)
            if d == "tee":
                p = "[default%d]:" % self.local(r)
                return ("%s: " % self.host(n) + p) if self.multi else p
            if d == "pdsh":
                return "%s: " % self.host(n)
            if d == "srun":
                return "%*d: " % (len(str(self.W - 1)), r)
            if d == "mpirun":
                return "[1,%d]<%s>:" % (r, stream)
            return ""
        if src[0] in ("agent", "launcher"):
            if d == "pdsh" or (d == "tee" and self.multi):
                return "%s: " % self.host(src[1])
            return ""
        return ""

    def render(self):
        o = self.o
        grng = random.Random(o.seed * 31 + 5)
        evs = sorted(self.events, key=lambda e: (e[0], e[1]))
        out = []
        nlines = 0
        key_line = None
        agent_key = None
        hook = self.P["hook"]
        glue_pending = None
        i = 0
        first_tb_of_F = None
        if o.glue and o.dialect in ("none", "rank"):
            for idx, e in enumerate(evs):
                if e[2] == ("rank", self.F) and e[5].get("tb"):
                    first_tb_of_F = idx
                    break
        while i < len(evs):
            t, _, src, stream, text, fl = evs[i]
            if src[0] == "rank" and fl.get("hook") and hook:
                text = "[rank%d]: %s" % (src[1], text)
            line = self.prefix(src, stream) + text
            if first_tb_of_F is not None and i == first_tb_of_F:
                bar = "\r".join(self.tqdm_bar(40 + k, 1200, 60 + k) for k in range(2))
                line = bar + line  # rank 0's bar had no newline yet
            # token-level glue of two ranks' traceback lines (no prefixes: none dialect only)
            if (o.dialect == "none" and o.interleave == "on" and fl.get("tb") and not fl.get("key") and i + 1 < len(evs)
                    and evs[i + 1][5].get("tb") and not evs[i + 1][5].get("key") and evs[i + 1][2] != src
                    and grng.random() < 0.08):
                nxt = evs[i + 1][4]
                ia = len(text) - len(text.lstrip(" "))
                ib = len(nxt) - len(nxt.lstrip(" "))
                line = text[:ia] + nxt[:ib] + text[ia:] + nxt[ib:] + "\n"
                i += 1
            if fl.get("key") and key_line is None:
                key_line = nlines + 1
            if fl.get("key_agent") and agent_key is None:
                agent_key = nlines + 1
            out.append(line)
            nlines += 1 + line.count("\r") + line.count("\n")
            i += 1
        self.key_line = key_line or agent_key
        return "\n".join(out) + "\n"


# ---------------------------------------------------------------- rank cases: rendering and knowability

RANK_WORD = re.compile(r"\bRank (\d+)\b")


def _render_rc(job):
    """Rank cases: one text, or {file name: text} with --per-task-files. Records every printed line as
    (event, file, line number, text) in job.out for knowability()."""
    evs = sorted(job.events, key=lambda e: (e[0], e[1]))
    F = job.F
    files, counts = {}, {}
    job.out = []
    key = None
    for e in evs:
        src, text, fl = e[2], e[4], e[5]
        if src[0] == "rank" and fl.get("hook") and job.P["hook"]:
            text = "[rank%d]: %s" % (src[1], text)
        if job.scheme == "rank-all" and not (src == ("rank", F) and text.startswith("[rank%d]:" % F)):
            continue  # the paste keeps the initiator's [rankN]: lines only
        line = job.rc_prefix(src) + text
        f = job.file_of(src)
        n0 = counts.get(f, 0)
        files.setdefault(f, []).append(line)
        counts[f] = n0 + 1 + line.count("\r") + line.count("\n")
        if fl.get("key") and key is None:
            key = (f, n0 + 1)
        job.out.append((e, f, n0 + 1, line))
    job.key_file, job.key_line = key if key else (None, None)
    if job.o.files:
        for name in job.all_files():
            files.setdefault(name, [])
        return {name: ("\n".join(ls) + "\n" if ls else "") for name, ls in files.items()}
    return "\n".join(files.get(None, [])) + "\n"


def knowability(job):
    """What the printed text alone tells about the initiator, by these rules (each sound in this generator):
      R0 prefix: the cause line's prefix or file names its global rank ([rankN]:, srun label = rank,
         slurm-J-<rank>.out).
      R1 node + local: the cause line's node (its host / srun task / file, mapped to a node index by a
         layout line: pdsh's worker list, DeepSpeed's node_rank, torchrun's rendezvous block or table,
         srun's "host: tasks a-b" lines, a line of that group naming its own rank) and its local rank
         ([defaultN]:, "GPU N" in an OOM, spawn's "Process N"); a single node is node 0; a group that is
         the only unmapped one while exactly one node index is unclaimed is that node.
      R2 complement: candidates consistent with R1's partial knowledge, minus every rank shown to be
         collateral: a watchdog line names its own rank; a collateral traceback (ncclRemoteError, a later
         raiser of an every-rank error, spawn's SIGABRT report) whose prefix resolves to a rank.
      R3 launcher: the earliest failure (exit 1 or SIGSEGV) the launcher reports for the cause's group
         (torchrun's failed line / Root Cause, srun's task list, spawn's SIGSEGV report), when reliable:
         torchrun's tie on whole seconds makes it unreliable when several failures share the root's second.
    The rank is knowable when exactly one candidate remains."""
    F, nn = job.F, job.nnodes
    M = {}
    for g, n in job.facts:
        M.setdefault(g, n)
    groups, elim, coll = set(), set(), []
    for e, f, ln, line in job.out:
        src, text, fl = e[2], e[4], e[5]
        g = job.group_of(job.rc_parts(src))
        if g is not None and src[0] != "plain":
            groups.add(g)
        if src[0] == "spawn" and fl.get("spawn_exit") is not None:
            coll.append((src, fl))
        if src[0] != "rank":
            continue
        r = src[1]
        names = (any(int(x) == r for x in RANK_WORD.findall(text)) or (fl.get("hook") and job.P["hook"])
                 or text.startswith("[rank%d]:" % r))
        if names:
            if g is not None:
                if M.setdefault(g, job.node(r)) != job.node(r):
                    raise AssertionError("group %s maps to two nodes" % (g,))
            if fl.get("wd"):
                elim.add(r)
        if fl.get("coll") or (fl.get("tb") and r != F):
            coll.append((src, fl))

    def nodes_of(g):
        if nn == 1:
            return {0}
        if g is None:
            return set(range(nn))
        if g in M:
            return {M[g]}
        return set(range(nn)) - set(M.values())

    def resolve(src, fl):
        p = job.rc_parts(src)
        if src[0] == "rank":
            r = src[1]
            if "label" in p or (p.get("file") or (None,))[0] == "rank" or (fl.get("hook") and job.P["hook"]):
                return r
        loc = fl["spawn_exit"] if (src[0] == "spawn" and fl.get("spawn_exit") is not None) else p.get("local")
        ns = nodes_of(job.group_of(p))
        if loc is not None and len(ns) == 1:
            return ns.pop() * 8 + loc
        return None

    changed = True
    while changed:
        changed = False
        for src, fl in coll:
            r = resolve(src, fl)
            if r is not None and r not in elim:
                writer = src[1] if src[0] == "rank" else src[1] * 8 + fl["spawn_exit"]
                if r != writer:
                    raise AssertionError("a collateral line resolves to %d, written by %d" % (r, writer))
                elim.add(r)
                changed = True
                g = job.group_of(job.rc_parts(src))
                if g is not None and g not in M:
                    M[g] = job.node(r)
        unresolved = groups - set(M)
        free = set(range(nn)) - set(M.values())
        if len(unresolved) == 1 and len(free) == 1:
            M[unresolved.pop()] = free.pop()
            changed = True
    # ---- the cause
    ce = [x for x in job.out if x[0][5].get("key")][0][0]
    src, fl = ce[2], ce[5]
    p = job.rc_parts(src)
    g0 = job.group_of(p)
    by = []
    r0 = resolve(src, fl) if src[0] == "rank" and ("label" in p or (p.get("file") or (None,))[0] == "rank" or (
        fl.get("hook") and job.P["hook"])) else None
    if r0 is not None:
        C = {r0}
        by.append("prefix")
    else:
        l0 = p.get("local", job.cause_local)
        ns = nodes_of(g0)
        C = {n * 8 + lr for n in ns for lr in ([l0] if l0 is not None else range(8))}
        if len(ns) == 1 and l0 is not None:
            by.append("node+local")
        before = len(C)
        C -= elim
        if len(C) < before:
            by.append("complement")
    if F in elim or F not in C:
        raise AssertionError("knowability lost the initiator (a generator bug)")
    # ---- R3: the launcher's first failure
    if len(C) > 1 and job.scheme != "rank-all":
        recs = [x for x in sorted(job.records, key=lambda x: x["t"]) if x["ec"] in (1, -11)]
        recs = [x for x in recs if g0 is None or job.group_of(job.rc_parts(x["src"])) in (None, g0)]
        if recs:
            # the first report: its records (torchrun's failed line and table) describe the same failure
            same = [x for x in recs if x["src"] == recs[0]["src"] and x["t"] - recs[0]["t"] < 1.0]
            S = None
            for x in same:
                if not x["reliable"]:
                    job.notes.append("the launcher's first failure (%s) is not reliable" % x["what"])
                    continue
                if x.get("ranks"):
                    Sx = set(x["ranks"])
                elif x["rank"] is not None:
                    Sx = {x["rank"]}
                else:
                    Sx = {n * 8 + x["local"] for n in nodes_of(job.group_of(job.rc_parts(x["src"])))}
                S = Sx if S is None else S & Sx
            if S is not None:
                C2 = C & S
                if F in C2:
                    if C2 != C:
                        by.append("launcher")
                    C = C2
                else:
                    job.notes.append("the launcher's first failure (%s) is not the initiator" % "+".join(
                        x["what"] for x in same))
    knowable = C == {F}
    info = {"knowable": knowable, "knowable_by": by if knowable else [], "n_candidates": len(C),
            "rank_candidates": sorted(C) if len(C) <= 64 else None}
    nodes = {job.node(r) for r in C}
    locs = {job.local(r) for r in C}
    info["knowable_host"] = p.get("host")
    if len(nodes) == 1:
        n = nodes.pop()
        info["knowable_node"] = n
        info["knowable_rank_range"] = [n * 8, n * 8 + 7]
    else:
        info["knowable_node"] = None
        info["knowable_rank_range"] = None
    info["knowable_local_rank"] = locs.pop() if len(locs) == 1 else None
    return info


# ---------------------------------------------------------------- options

def on_off(v):
    if v is None:
        return None
    return v in ("on", "1", "yes", "true")


def is_rank_case(a):
    """Any of the rank-case options (all off by default: the default grid's logs stay as they were)."""
    return bool(a.prefix or a.spawn == "on" or a.per_task_files == "on" or a.launcher_summary or a.table == "multi"
                or a.skew_one or a.silent_peers or a.node_order or a.kind in EXTRA_KINDS)


def resolve(a):
    """Draws every option left out, then forces what decidability needs."""
    if is_rank_case(a):
        return resolve_rc(a)
    rng = random.Random(a.seed)
    forced = []
    o = argparse.Namespace(**vars(a))
    o.dialect = a.dialect or rng.choice(DIALECTS)
    o.kind = a.kind or rng.choice(list(KINDS))
    if a.world_size is None:
        o.world_size = 8 if o.dialect == "none" else rng.choice([8, 16, 32, 64, 128, 256, 512, 1024])
    if o.world_size % 8 or not 8 <= o.world_size <= 1024:
        raise SystemExit("--world-size must be a multiple of 8 in 8..1024")
    if o.dialect == "none" and o.world_size != 8:
        raise SystemExit("the none dialect is single node: --world-size 8")
    W = o.world_size
    multi = W > 8
    o.table = on_off(a.table) if a.table else rng.random() < 0.6
    o.interleave = a.interleave or rng.choice(["on", "off"])
    o.skew = a.skew if a.skew is not None else (rng.choice([0.0, 0.0, 1.0, 3.0]) if multi else 0.0)
    o.noise = a.noise if a.noise is not None else rng.randrange(1, 4)
    o.ansi = a.ansi or rng.choice(["color", "color", "lost", "off"])
    o.glue = on_off(a.glue) if a.glue else rng.random() < 0.3
    o.echo = a.echo if a.echo is not None else (rng.choice([0, 0, 1, 2]) if o.kind in ("oom", "ds-oom") else 0)
    o.nccl_debug = on_off(a.nccl_debug) if a.nccl_debug else rng.random() < 0.35
    o.nccl_at_init = rng.random() < 0.35
    o.remote_errors = on_off(a.remote_errors) if a.remote_errors else rng.random() < 0.25
    o.kernel_line = on_off(a.kernel_line) if a.kernel_line else rng.random() < 0.5
    o.record = on_off(a.record) if a.record else rng.random() < 0.15
    o.rendezvous = on_off(a.rendezvous) if a.rendezvous else rng.random() < 0.3
    o.layout = a.layout or rng.choice(["dict", "nnodes", "both"])
    o.spawn_lines = rng.random() < 0.5
    o.nogpu = False
    o.collateral_sample = a.collateral_sample if a.collateral_sample is not None else 24
    o.initiator = a.initiator if a.initiator is not None else (
        rng.choice([0, rng.randrange(W)]) if rng.random() < 0.15 else rng.randrange(W))
    if not 0 <= o.initiator < W:
        raise SystemExit("--initiator out of range")
    o.none_launcher = "torchrun"
    # ---- torch version and the [rankN] excepthook prefix
    rp = on_off(a.rank_prefix) if a.rank_prefix else None
    if o.dialect == "rank":
        if rp is False:
            raise SystemExit("the rank dialect is the [rankN] prefix: --rank-prefix off contradicts it")
        rp = True
    elif o.dialect == "none":
        if rp:
            raise SystemExit("the none dialect has no prefix: --rank-prefix on contradicts it")
        rp = False
    elif rp is None:
        rp = rng.random() < 0.5
    if o.dialect == "pdsh" and o.kind in ALL_RANK_KINDS and not rp:
        if a.rank_prefix:
            raise SystemExit("pdsh + %s needs --rank-prefix on to name the rank" % o.kind)
        rp = True
        forced.append("rank-prefix on: a DeepSpeed exception alone names no rank")
    if a.torch:
        if rp != (vt(a.torch) >= (2, 3)):
            raise SystemExit("--torch %s %s the [rankN] prefix this dialect/flag needs" % (
                a.torch, "lacks" if rp else "has"))
        o.torch = a.torch
    else:
        o.torch = rng.choice([v for v in TORCH_VERSIONS if (vt(v) >= (2, 3)) == rp])
    o.rank_prefix = rp
    # ---- collateral mode / root cause
    single_exc = o.kind in ("oom", "ds-oom", "nccl-system")
    rc = a.root_cause
    col = a.collateral
    if o.kind in ("segfault", "host-oom"):
        if col == "hang" or rc == "other":
            forced.append("collateral kill: a dead process is noticed at once")
        col, rc = "kill", "initiator"
    elif single_exc:
        if col is None and rc is None:
            col = rng.choice(["kill", "kill", "hang"])
        if col is None:
            col = "hang" if rc == "other" else "kill"
        rc = "other" if col == "hang" else "initiator"
    else:  # every rank raises
        col = "kill"
        rc = rc or rng.choice(["initiator", "initiator", "other"])
    # ---- decidability
    if o.dialect == "none":
        if o.kind in ALL_RANK_KINDS and rc == "other":
            rc = "initiator"
            forced.append("root-cause initiator: in the none dialect only torchrun's failed line names the rank")
        if o.kind == "nccl-system" and not o.nccl_debug:
            o.nccl_debug = True
            forced.append("nccl-debug on: NCCL's [cudaDev] is the only rank in a prefix-less NCCL error")
        if o.kind in ("oom", "ds-oom") and rng.random() < 0.3 and col == "kill":
            o.none_launcher = "deepspeed"
    if o.dialect == "pdsh":
        if o.kind == "nccl-system" and not rp and not o.nccl_debug:
            o.nccl_debug = True
            forced.append("nccl-debug on: pdsh shows the host, NCCL's [cudaDev] the GPU")
        if o.kind in ("segfault", "host-oom"):
            if not o.kernel_line:
                forced.append("kernel-line on: the DeepSpeed launcher never names the dead local rank")
            o.kernel_line = True
            o.spawn_lines = True
    if o.dialect == "tee" and multi and not o.rendezvous and not (rp and o.kind in EXC_KINDS):
        o.rendezvous = True
        forced.append("rendezvous on: [defaultN] is local; the host needs a layout")
    if o.dialect in ("rank", "tee") and multi and o.kind in ("segfault", "host-oom") and not o.table:
        if o.dialect == "rank":
            o.table = True
            forced.append("table on: no prefix names the dead rank's node")
    if o.dialect == "mpirun" and o.kind in ("segfault", "host-oom") and not o.table:
        o.table = True
        forced.append("table on: mpirun's summary is the only rank for a silent death")
    if o.kind in ("oom", "ds-oom") and not (o.dialect in ("none",) or (o.dialect == "pdsh" and not rp)):
        o.nogpu = (vt(o.torch) in ((2, 2), (2, 3))) and rng.random() < 0.25
    if a.layout is None and o.dialect == "pdsh" and o.kind in ("segfault", "host-oom"):
        o.layout = rng.choice(["dict", "nnodes", "both"])
    o.collateral = col
    o.root_cause = rc
    o.forced = forced
    return o


def resolve_rc(a):
    """Rank cases: the initiator's own lines may carry no global rank. Nothing is forced for decidability;
    the sidecar says instead whether the rank is knowable from the text (Job.knowability)."""
    rng = random.Random(a.seed * 3 + 1)
    forced = []
    o = argparse.Namespace(**vars(a))
    o.rc = True
    o.kind = a.kind or rng.choice(["oom", "assert", "nccl-system", "segfault", "batch-assert"])
    if o.kind == "host-oom":
        raise SystemExit("host-oom is not a rank case: the victim prints nothing of its own")
    o.spawn = a.spawn == "on"
    o.files = a.per_task_files == "on"
    pre = a.prefix
    if pre is None:
        if o.spawn:
            pre = rng.choice(["host", "task", "bare"])
        elif o.files:
            pre = rng.choice(["label", "task", "task-local"])
        else:
            pre = {"rank": "rank-all", "tee": rng.choice(["local", "host-local"]), "pdsh": "host",
                   "srun": rng.choice(["label", "host", "task", "task-local", "bare"])}.get(
                a.dialect, rng.choice(["host", "local", "host-local", "task", "task-local", "bare"]))
    o.prefix = pre
    # dialect (launcher family) and the outer launcher
    dia = {"label": "srun", "local": "tee", "host-local": "tee", "task": "srun", "task-local": "srun", "bare": "srun",
           "rank-all": "rank"}.get(pre)
    if pre == "host":
        dia = a.dialect if a.dialect in ("pdsh", "srun") else rng.choice(["pdsh", "srun"])
    if a.dialect and a.dialect != dia:
        raise SystemExit("--prefix %s is the %s dialect, not %s" % (pre, dia, a.dialect))
    o.dialect = dia
    if o.spawn and pre not in ("host", "task", "bare"):
        raise SystemExit("--spawn on: the node's prefix is host, task or bare (no torchrun, no [defaultN])")
    if o.files and pre not in ("label", "task", "task-local") and not (o.spawn and pre == "task"):
        raise SystemExit("--per-task-files on: srun tasks (--prefix label, task or task-local)")
    if o.spawn:
        o.launcher = "spawn"
    elif pre == "label" or (pre == "host" and dia == "srun"):
        o.launcher = "srun"
    elif pre == "host":
        o.launcher = "deepspeed"
    else:
        o.launcher = "torchrun"
    o.outer = "srun" if (pre in ("label", "task", "task-local", "bare", "local") or (pre == "host" and dia == "srun")) \
        else ("pdsh" if pre in ("host", "host-local") else None)
    if pre == "rank-all" and o.kind == "segfault":
        raise SystemExit("--prefix rank-all keeps the [rankN]: lines: a faulthandler dump has none")
    if o.kind in ALL_RANK_KINDS and (o.spawn or o.files):
        raise SystemExit("%s raises on every rank: its initiator is the first in time, which neither spawn's "
                         "one report per node nor per-task files (tracebacks carry no time) show" % o.kind)
    if a.world_size is None:
        o.world_size = rng.choice([8, 32, 256, 1024])
    if o.world_size % 8 or not 8 <= o.world_size <= 1024:
        raise SystemExit("--world-size must be a multiple of 8 in 8..1024")
    W = o.world_size
    multi = W > 8
    o.table_multi = a.table == "multi"
    o.table = True if o.table_multi else (on_off(a.table) if a.table else rng.random() < 0.6)
    if o.table_multi and (o.launcher != "torchrun" or o.kind in ALL_RANK_KINDS or o.kind == "segfault"):
        raise SystemExit("--table multi: a torchrun launcher and a single-raiser exception kind")
    o.launcher_summary = on_off(a.launcher_summary) if a.launcher_summary else True
    o.interleave = a.interleave or rng.choice(["on", "off"])
    o.skew = a.skew if a.skew is not None else (rng.choice([0.0, 0.0, 1.0, 3.0]) if multi else 0.0)
    o.skew_one = a.skew_one or 0.0
    o.silent_peers = a.silent_peers or 0
    o.noise = a.noise if a.noise is not None else rng.randrange(1, 4)
    o.ansi = a.ansi or rng.choice(["color", "color", "lost", "off"])
    o.glue = False
    o.echo = 0
    if a.echo:
        raise SystemExit("rank cases have one raiser: --echo is not supported")
    o.nccl_debug = False  # NCCL's host:pid [cudaDev] tags would name the rank on their own
    o.nccl_at_init = rng.random() < 0.35
    o.remote_errors = (on_off(a.remote_errors) if a.remote_errors else rng.random() < 0.25) and not o.spawn
    o.kernel_line = False
    o.record = on_off(a.record) if a.record else rng.random() < (0.5 if o.table_multi else 0.15)
    o.rendezvous = on_off(a.rendezvous) if a.rendezvous else rng.random() < 0.4
    o.layout = a.layout or rng.choice(["dict", "nnodes", "both"])
    o.spawn_lines = rng.random() < 0.5
    o.nogpu = False
    o.collateral_sample = a.collateral_sample if a.collateral_sample is not None else 24
    o.node_order = a.node_order or rng.choice(["static", "c10d"])
    if a.initiator is not None:
        o.initiator = a.initiator
    elif pre == "rank-all":
        o.initiator = 0 if rng.random() < 0.7 else rng.randrange(W)
    else:
        o.initiator = rng.choice([0, rng.randrange(W)]) if rng.random() < 0.15 else rng.randrange(W)
    if not 0 <= o.initiator < W:
        raise SystemExit("--initiator out of range")
    if not 0 <= o.silent_peers < W - 1:
        raise SystemExit("--silent-peers out of range")
    o.none_launcher = "torchrun"
    # ---- torch: no [rankN] excepthook prefix (< 2.3) unless the prefix is the rank, or mp.spawn (the
    # excepthook never sees a spawned child's exception; c10 lines keep their [rankN]: from 2.3 on)
    if pre == "rank-all":
        lo, hi = (2, 3), None
    elif pre == "label" or o.spawn:
        lo, hi = None, None
    else:
        lo, hi = None, (2, 2)
    ok = [v for v in TORCH_VERSIONS if (lo is None or vt(v) >= lo) and (hi is None or vt(v) <= hi)]
    if a.torch:
        if a.torch not in ok:
            raise SystemExit("--torch %s: --prefix %s needs one of %s" % (a.torch, pre, " ".join(ok)))
        o.torch = a.torch
    else:
        o.torch = rng.choice(ok)
    o.rank_prefix = vt(o.torch) >= (2, 3)
    if a.rank_prefix and on_off(a.rank_prefix) != o.rank_prefix:
        raise SystemExit("--rank-prefix: rank cases derive it from --prefix and --torch")
    # ---- collateral mode / root cause
    col, rcause = a.collateral, a.root_cause
    if o.kind == "segfault" or o.spawn or o.table_multi:
        if col == "hang":
            raise SystemExit("--collateral hang: a dead process (%s) is noticed at once" % (
                "spawn child" if o.spawn else "segfault" if o.kind == "segfault" else "--table multi"))
        col, rcause = "kill", "initiator"
    elif o.kind in ALL_RANK_KINDS:
        col = "kill"
        rcause = rcause or rng.choice(["initiator", "initiator", "other"])
    else:
        col = col or ("hang" if rcause == "other" else rng.choice(["kill", "kill", "hang"]))
        rcause = "other" if col == "hang" else "initiator"
    o.collateral = col
    o.root_cause = rcause
    o.forced = forced
    return o


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 epilog="\n\n".join(__doc__.split("\n\n")[1:]),
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--dialect", choices=DIALECTS)
    ap.add_argument("--kind", choices=list(CLASSES))
    ap.add_argument("--world-size", type=int)
    ap.add_argument("--table", choices=["on", "off", "multi"])
    ap.add_argument("--interleave", choices=["on", "off"])
    ap.add_argument("--skew", type=float, help="max per-node clock skew, seconds")
    ap.add_argument("--collateral", choices=["kill", "hang"])
    ap.add_argument("--root-cause", choices=["initiator", "other"])
    ap.add_argument("--record", choices=["on", "off"])
    ap.add_argument("--rank-prefix", choices=["on", "off"])
    ap.add_argument("--torch", choices=TORCH_VERSIONS)
    ap.add_argument("--layout", choices=["dict", "nnodes", "both"])
    ap.add_argument("--rendezvous", choices=["on", "off"])
    ap.add_argument("--echo", type=int)
    ap.add_argument("--kernel-line", choices=["on", "off"])
    ap.add_argument("--nccl-debug", choices=["on", "off"])
    ap.add_argument("--remote-errors", choices=["on", "off"])
    ap.add_argument("--noise", type=int, choices=[0, 1, 2, 3])
    ap.add_argument("--glue", choices=["on", "off"])
    ap.add_argument("--ansi", choices=["color", "lost", "off"])
    ap.add_argument("--initiator", type=int)
    ap.add_argument("--collateral-sample", type=int)
    # rank cases (all off by default)
    ap.add_argument("--prefix", choices=PREFIXES, help="rank cases: how rank lines are prefixed")
    ap.add_argument("--spawn", choices=["on", "off"], help="rank cases: torch.multiprocessing.spawn per node")
    ap.add_argument("--per-task-files", choices=["on", "off"],
                    help="rank cases: Slurm --output=slurm-%%j-%%t.out, one file per task; -o is a folder")
    ap.add_argument("--launcher-summary", choices=["on", "off"],
                    help="rank cases: the launcher's failure lines (table, DeepSpeed/srun summary)")
    ap.add_argument("--skew-one", type=float, help="rank cases: the initiator's node's clock shifted by S seconds")
    ap.add_argument("--silent-peers", type=int, help="rank cases: N look-alike ranks print nothing")
    ap.add_argument("--node-order", choices=["static", "c10d"],
                    help="rank cases: torchrun's group_rank follows the srun task id (static) or not (c10d)")
    ap.add_argument("-o", "--output", help="log path (sidecar: same name, .json); stdout when absent")
    a = ap.parse_args(argv)
    o = resolve(a)
    job = Job(o)
    job.build()
    rc = getattr(o, "rc", False)
    text = _render_rc(job) if rc else job.render()
    side = {
        "class": CLASSES[o.kind],
        "initiating_rank": o.initiator,
        "dialect": o.dialect,
        "world_size": o.world_size,
        "kind": o.kind,
        "initiating_host": job.host(job.fnode),
        "initiating_local_rank": job.flocal,
        "line": job.key_line,
        "launcher": job.launcher,
        "launcher_root_cause_rank": getattr(job, "root_rank", None),
        # grid: in the none dialect an every-rank error's rank is only in torchrun's pick, which the text shows
        # to be the first in time only when that pick is reliable (see torchrun_node); else it is unknowable
        "rank_knowable": rc or not ((o.dialect == "none" and o.kind in ALL_RANK_KINDS and job.launcher == "torchrun"
                                     and not job.root_reliable.get(job.fnode, True))
                                    or (o.dialect != "none" and o.kind in ALL_RANK_KINDS
                                        and getattr(job, "every_rank_raised", False))),
        "torch": o.torch,
        "deepspeed": job.ds_ver if job.stack == "ds" else None,
        "seed": o.seed,
        "options": {k: getattr(o, k) for k in (
            "table", "interleave", "skew", "collateral", "root_cause", "record", "rank_prefix", "layout",
            "rendezvous", "echo", "kernel_line", "nccl_debug", "remote_errors", "noise", "glue", "ansi",
            "nogpu", "nccl_at_init", "spawn_lines", "none_launcher", "collateral_sample")},
        "forced": o.forced,
    }
    if rc:
        side["options"].update({k: getattr(o, k) for k in (
            "prefix", "spawn", "files", "table_multi", "launcher_summary", "skew_one", "silent_peers", "node_order",
            "outer")})
        side["rank_case"] = True
        side["nproc_per_node"] = NPN
        side["nnodes"] = job.nnodes
        side["layout"] = "node-major: rank = node * %d + local_rank" % NPN
        side["hosts"] = job.hosts
        side["initiating_node"] = job.fnode
        side["file"] = job.key_file
        if job.launcher == "torchrun" and o.outer == "srun":
            side["srun_task_of_node"] = job.task_of
        side["silent_ranks"] = sorted(job.silent)
        side.update(knowability(job))
        side["notes"] = job.notes
    if rc and o.files:
        if not o.output:
            raise SystemExit("--per-task-files on writes a folder: -o DIR")
        out = o.output.rstrip("/")
        os.makedirs(out, exist_ok=True)
        for name, body in sorted(text.items()):
            with open(os.path.join(out, name), "w", encoding="utf-8", newline="") as f:
                f.write(body)
        with open(out + ".json", "w") as f:
            json.dump(side, f, indent=1)
            f.write("\n")
        return side
    if o.output:
        with open(o.output, "w", encoding="utf-8", newline="") as f:
            f.write(text)
        sp = o.output[:-4] + ".json" if o.output.endswith(".log") else o.output + ".json"
        with open(sp, "w") as f:
            json.dump(side, f, indent=1)
            f.write("\n")
    else:
        sys.stdout.write(text)
        sys.stderr.write(json.dumps(side) + "\n")
    return side


if __name__ == "__main__":
    main()
