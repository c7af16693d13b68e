#!/usr/bin/env python3
"""Writes a realistic multi-rank training log of about SIZE bytes for the
benchmarks: 64 ranks' interleaved output (DeepSpeed step lines, HF loss
dicts, tqdm bars rewritten with \\r, ANSI colours, UserWarnings and
op-compat warnings that look like errors, NCCL INFO lines), then one real
failure with its collateral at the end (tests/gen/genlog.py, ZeRO OOM on a
known rank). Deterministic: python3 gen_bench.py SIZE OUT [--seed N]
Above 1 GiB the first 256 MiB of lines are repeated up to SIZE (writing
10 GB line by line in Python would take a quarter of an hour)."""
import os
import random
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))


def parse_size(s):
    m = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}
    return int(float(s[:-1]) * m[s[-1].upper()]) if s[-1].upper() in m else int(s)


def main():
    size = parse_size(sys.argv[1])
    out = sys.argv[2]
    seed = int(sys.argv[4]) if len(sys.argv) > 4 and sys.argv[3] == "--seed" else 7
    rnd = random.Random(seed)
    templates = [
        "[rank{r}]: {{'loss': {l:.4f}, 'grad_norm': {g:.3f}, 'learning_rate': 1.9e-05, 'epoch': {e:.2f}}}\n",
        "[2025-03-14 09:{m:02d}:{s:02d},{ms:03d}] [INFO] [logging.py:128:log_dist] [Rank 0] step={st}, skipped=0, lr=[1.9e-05], mom=[(0.9, 0.95)]\n",
        "[2025-03-14 09:{m:02d}:{s:02d},{ms:03d}] [INFO] [timer.py:260:stop] epoch=0/micro_step={st}/global_step={st}, RunningAvgSamplesPerSec=29.8, CurrSamplesPerSec=31.2, MemAllocated=17.9GB, MaxMemAllocated=35.1GB\n",
        " {p}%|{bar}| {st}/20000 [1:0{m}:{s:02d}<3:12:00,  1.67s/it]\r",
        "\x1b[33m[rank{r}]: /usr/local/lib/python3.10/dist-packages/torch/utils/checkpoint.py:91: UserWarning: None of the inputs have requires_grad=True. Gradients will be None\x1b[0m\n",
        "[rank{r}]:   warnings.warn(\n",
        "node{n}:{pid}:{tid} [{lr}] NCCL INFO Channel {c:02d}/0 : {r} -> {r2} via P2P/IPC/read\n",
        " [WARNING]  async_io requires the dev libaio .so object and headers but these were not found.\n",
        "[2025-03-14 09:{m:02d}:{s:02d},{ms:03d}] [WARNING] [stage3.py:2114:step] 1 pytorch allocator cache flushes since last step. this happens when there is high memory pressure and is detrimental to performance.\n",
    ]
    weights = [30, 10, 10, 25, 8, 4, 10, 1, 2]
    written = 0
    st = 0
    unique = size if size <= (1 << 30) else 256 << 20
    with open(out, "w", newline="") as f:
        buf = []
        block = [] if unique < size else None
        while written < unique:
            t = rnd.choices(templates, weights)[0]
            st += 1
            p = rnd.randrange(100)
            line = t.format(r=rnd.randrange(64), r2=rnd.randrange(64), l=rnd.random() * 3, g=rnd.random() * 5,
                            e=rnd.random(), m=rnd.randrange(60), s=rnd.randrange(60), ms=rnd.randrange(1000),
                            st=st, p=p, bar="#" * (p // 10) + " " * (10 - p // 10), n=rnd.randrange(8),
                            pid=1000 + rnd.randrange(64), tid=2000 + rnd.randrange(64), lr=rnd.randrange(8),
                            c=rnd.randrange(32))
            buf.append(line)
            written += len(line)
            if len(buf) >= 4096:
                chunk = "".join(buf)
                f.write(chunk)
                if block is not None:
                    block.append(chunk)
                buf = []
        chunk = "".join(buf)
        f.write(chunk)
        if block is not None:
            block.append(chunk)
            whole = "".join(block)
            while written < size:
                part = whole[: size - written] if size - written < len(whole) else whole
                cut = part.rfind("\n") + 1 if len(part) < len(whole) else len(part)
                f.write(part[:cut] if cut else part)
                written += cut if cut else len(part)
                if cut == 0:
                    break
        tail = subprocess.run([sys.executable, os.path.join(HERE, "..", "gen", "genlog.py"), "--seed", str(seed),
                               "--dialect", "rank", "--kind", "ds-oom", "--world-size", "64", "--table", "on",
                               "-o", out + ".tail"], capture_output=True, text=True)
        if tail.returncode != 0:
            sys.exit(tail.stderr)
        f.write(open(out + ".tail", newline="").read())
    if os.path.exists(out + ".tail.json"):
        os.replace(out + ".tail.json", out + ".truth.json")
    if os.path.exists(out + ".tail"):
        os.remove(out + ".tail")


if __name__ == "__main__":
    main()
