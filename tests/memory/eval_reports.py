#!/usr/bin/env python3
"""Scores `ddx check-config` on real reports of DeepSpeed runs (make eval-memory).

Each tests/memory/reports/*.json is one run from a public thread (its URL and
the facts as the thread states them): the model (a published config.json in
tests/memory/models/), the ds_config, the GPUs, the micro batch, the sequence
length, and the outcome ("oom" or "fits") or a measured peak ("measured":
{"kind": "allocated" | "reserved" | "nvidia-smi", "gib": ...}). The real
binary is run on each; its JSON verdict is compared with the outcome.

The split is fixed by file order, decided before any result was seen: every
third report (index 2, 5, 8, ... of the sorted names) is held out, the rest
are the development part. Both parts are reported.

Usage: eval_reports.py path/to/ddx [--min-right F] [--max-tight F] [--verbose]
"""
import json
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
GIB = 1024.0 ** 3


def run(ddx, rep):
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
        json.dump(rep["ds_config"], f)
        cfg = f.name
    try:
        cmd = [ddx, "check-config", cfg, "--model",
               os.path.join(HERE, "models", rep["model"] + ".json"), "--format", "json",
               "--world-size", str(rep["world_size"]), "--gpu-memory", str(rep["gpu_gib"]),
               "--micro-batch", str(rep["micro_batch"]), "--seq-len", str(rep["seq_len"])]
        for key, flag in (("flash_attention", "--flash-attention"),
                          ("checkpointing", "--checkpointing"), ("optim", "--optim"),
                          ("trainable", "--trainable"), ("params", "--params"), ("tp", "--tp"), ("pp", "--pp"),
                          ("target_len", "--target-len"), ("ref_models", "--ref-models")):
            if rep.get(key) is not None:
                cmd += [flag, str(rep[key])]
        p = subprocess.run(cmd, capture_output=True, text=True)
        if p.returncode == 2:
            raise RuntimeError(f"ddx refused: {p.stderr.strip()}")
        return json.loads(p.stdout)["memory_model"]
    finally:
        os.unlink(cfg)


def main():
    args = sys.argv[1:]
    if not args:
        print(__doc__)
        return 2
    ddx = args[0]
    min_right = float(args[args.index("--min-right") + 1]) if "--min-right" in args else None
    max_tight = float(args[args.index("--max-tight") + 1]) if "--max-tight" in args else None
    verbose = "--verbose" in args
    names = sorted(n for n in os.listdir(os.path.join(HERE, "reports")) if n.endswith(".json"))
    parts = {"dev": [], "held": []}
    for i, name in enumerate(names):
        rep = json.load(open(os.path.join(HERE, "reports", name)))
        mm = run(ddx, rep)
        row = {"name": name, "verdict": mm["verdict"], "lo": mm["nvidia_smi"]["lo"] / GIB,
               "hi": mm["nvidia_smi"]["hi"] / GIB, "phase": mm["peak_phase"],
               "gpu": rep["gpu_gib"], "url": rep["url"]}
        if "outcome" in rep:
            row["outcome"] = rep["outcome"]
            row["right"] = mm["verdict"] == rep["outcome"]
        if "measured" in rep:
            meas = rep["measured"]
            key = {"allocated": "allocated", "reserved": "reserved"}.get(meas["kind"], "nvidia_smi")
            lo, hi = mm[key]["lo"] / GIB, mm[key]["hi"] / GIB
            row["measured"] = meas["gib"]
            row["mlo"], row["mhi"], row["mkind"] = lo, hi, key
            row["inside"] = lo <= meas["gib"] <= hi
            row["mid_err"] = abs((lo + hi) / 2 - meas["gib"]) / meas["gib"]
        parts["held" if i % 3 == 2 else "dev"].append(row)
    ok = True
    for part in ("dev", "held", "all"):
        rows = parts["dev"] + parts["held"] if part == "all" else parts[part]
        out = [r for r in rows if "outcome" in r]
        meas = [r for r in rows if "measured" in r]
        right = sum(r["right"] for r in out)
        tight = sum(r["verdict"] == "tight" for r in rows)
        line = (f"{part:5}: {len(rows)} reports; verdict right {right}/{len(out)}"
                f" ({100 * right / max(1, len(out)):.0f}%), tight {tight}/{len(rows)}"
                f" ({100 * tight / max(1, len(rows)):.0f}%)")
        if meas:
            inside = sum(r["inside"] for r in meas)
            errs = sorted(r["mid_err"] for r in meas)
            line += (f"; measured peaks inside {inside}/{len(meas)}, median midpoint error "
                     f"{100 * errs[len(errs) // 2]:.0f}%")
        print(line)
        if part == "all":
            if min_right is not None and right < min_right * len(out):
                ok = False
            if max_tight is not None and tight > max_tight * len(rows):
                ok = False
    if verbose:
        for part in ("dev", "held"):
            for r in parts[part]:
                line = (f"  [{part}] {r['name']}: {r['verdict']} {r['lo']:.1f}-{r['hi']:.1f} GiB "
                        f"({r['phase']}) on {r['gpu']} GiB; reported {r.get('outcome', '-')}")
                if "measured" in r:
                    line += (f"; measured {r['measured']} GiB ({r['mkind']}: ddx {r['mlo']:.2f}-"
                             f"{r['mhi']:.2f}, {'inside' if r['inside'] else 'outside'}, "
                             f"midpoint error {100 * r['mid_err']:.0f}%)")
                print(line)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
