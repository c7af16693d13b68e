#!/usr/bin/env python3
"""train.py - a tiny data-parallel job (gloo, CPU) that fails by design on one rank.

Launched by run.py through torchrun, torchrun --tee, torchrun --log_dir, the legacy
torch.distributed.launch, or by itself with --spawn N (torch.multiprocessing.spawn).
Every rank trains a 2-layer MLP for --steps steps, all-reducing the gradients, and
prints `rank R step S loss L` each step before the all-reduce (--log all: every rank;
--log rank0: rank 0 only, as many scripts do). At step --fail-step
rank --bad does what --mode says (see MODES). The rank comes from RANK (launchers),
the spawn index, or --local_rank (legacy launch without --use_env).
"""
import argparse
import ctypes
import datetime
import mmap
import os
import signal
import sys
import tempfile
import time

import torch
import torch.distributed as dist
import torch.multiprocessing as mp
import torch.nn as nn
from torch.distributed.elastic.multiprocessing.errors import record

MODES = (
    "value", "key", "assert", "shape", "zerodiv", "fnf",  # exceptions on one rank
    "sigkill", "segfault", "sigbus",                       # signals on one rank
    "hang", "desync", "nan",                               # collective-level failures
    "rdzv", "port", "missing-all", "missing-one", "alloc", "ok",
)


def parse():
    p = argparse.ArgumentParser()
    p.add_argument("--mode", choices=MODES, required=True)
    p.add_argument("--bad", type=int, default=0, help="the failing rank")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--steps", type=int, default=3)
    p.add_argument("--fail-step", type=int, default=2)
    p.add_argument("--pg-timeout", type=float, default=5.0, help="process group timeout, seconds")
    p.add_argument("--spawn", type=int, default=0, help="start N processes with torch.multiprocessing.spawn")
    p.add_argument("--port", type=int, default=29500, help="MASTER_PORT for --spawn")
    p.add_argument("--record", action="store_true", help="decorate main with torch's @record")
    p.add_argument("--log", choices=("all", "rank0"), default="all", help="which ranks print their loss")
    p.add_argument("--local_rank", "--local-rank", type=int, default=None)  # legacy launch without --use_env
    return p.parse_args()


def batch(gen, rank, step):
    x = torch.randn(8, 16, generator=gen)
    y = torch.randn(8, 1, generator=gen)
    return x, y


def fail(o, rank, model, x):
    """The failure of the bad rank at the fail step (modes that act on one rank alone)."""
    m = o.mode
    if m == "value":
        int("n/a")  # a label column that holds text
    elif m == "key":
        sample = {"input_ids": x, "attention_mask": torch.ones_like(x)}
        return sample["labels"]
    elif m == "assert":
        n = x.shape[0] - 1
        assert n == x.shape[0], f"micro batch has {n} samples, expected {x.shape[0]}"
    elif m == "shape":
        return model(x[:, :15])  # a feature dropped: mat1 and mat2 shapes cannot be multiplied
    elif m == "zerodiv":
        tokens, seen = 0, 0
        return tokens / seen
    elif m == "fnf":
        return torch.load(os.path.join(tempfile.gettempdir(), "ddx-launch-data", "shard-%05d.pt" % rank))
    elif m == "sigkill":
        os.kill(os.getpid(), signal.SIGKILL)
    elif m == "segfault":
        ctypes.string_at(0)
    elif m == "sigbus":
        # a real bus error: touch a page of a mapping whose file was truncated under it
        fd, path = tempfile.mkstemp(prefix="ddx-sigbus-")
        os.ftruncate(fd, 2 * mmap.PAGESIZE)
        mm = mmap.mmap(fd, 2 * mmap.PAGESIZE)
        os.ftruncate(fd, 0)
        os.unlink(path)
        mm[mmap.PAGESIZE] = 1
    elif m == "alloc":
        return torch.empty(1 << 46, dtype=torch.float32)  # 256 TiB
    elif m == "hang":
        time.sleep(600)  # a data loader that never returns; the others wait in the all-reduce
    return None


def run(rank, world, o):
    torch.set_num_threads(1)
    if o.mode == "missing-all" or (o.mode == "missing-one" and rank == o.bad):
        import flash_attn  # noqa: F401  (not installed)
    ws = world + 1 if o.mode == "rdzv" else world  # one process more than were started
    dist.init_process_group("gloo", rank=rank, world_size=ws,
                            timeout=datetime.timedelta(seconds=o.pg_timeout))
    torch.manual_seed(o.seed)
    model = nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 1))
    opt = torch.optim.SGD(model.parameters(), lr=0.05)
    gen = torch.Generator().manual_seed(o.seed * 1000 + rank)
    for step in range(1, o.steps + 1):
        x, y = batch(gen, rank, step)
        bad = rank == o.bad and step == o.fail_step
        if bad:
            if o.mode == "nan":
                x[3, 5] = float("nan")  # a corrupt sample
            else:
                fail(o, rank, model, x)
        loss = nn.functional.mse_loss(model(x), y)
        if o.log == "all" or rank == 0:
            print(f"rank {rank} step {step} loss {loss.item():.4f}", flush=True)
        opt.zero_grad()
        loss.backward()
        for p in model.parameters():
            if bad and o.mode == "desync":
                dist.broadcast(p.grad, src=0)  # this rank took another code path
            else:
                dist.all_reduce(p.grad)
                p.grad /= world
        opt.step()
        if torch.isnan(loss):
            raise FloatingPointError(f"loss is nan at step {step}")
    dist.barrier()
    dist.destroy_process_group()


def spawned(index, world, o):
    run(index, world, o)


def main():
    o = parse()
    if o.spawn:
        os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
        os.environ["MASTER_PORT"] = str(o.port)
        mp.spawn(spawned, args=(o.spawn, o), nprocs=o.spawn, join=True)
        return
    rank = int(os.environ.get("RANK", o.local_rank if o.local_rank is not None else 0))
    run(rank, int(os.environ["WORLD_SIZE"]), o)


if __name__ == "__main__":
    if "--record" in sys.argv:
        main = record(main)
    main()
