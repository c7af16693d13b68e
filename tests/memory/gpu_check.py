#!/usr/bin/env python3
"""GPU check of the memory model (not part of `make test`; needs a CUDA GPU,
torch, transformers and deepspeed).

Trains a few steps of a small Llama-style model (random weights from a
config, no download) under DeepSpeed ZeRO-2 and ZeRO-3, records
torch.cuda.max_memory_allocated / max_memory_reserved per phase (after the
forward/backward and after the step), and runs `ddx check-config` with the
same model config, ds_config, micro batch and sequence length. It prints
both and fails when a measured peak lies outside ddx's range.

Run on one GPU:   deepspeed --num_gpus 1 tests/memory/gpu_check.py build/ddx
or on N GPUs:     deepspeed --num_gpus N tests/memory/gpu_check.py build/ddx
"""
import json
import os
import subprocess
import sys
import tempfile

import deepspeed
import torch
from transformers import LlamaConfig, LlamaForCausalLM

GIB = 1024.0 ** 3
MODEL = {"architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_act": "silu",
         "hidden_size": 2048, "intermediate_size": 5504, "num_attention_heads": 16,
         "num_hidden_layers": 8, "num_key_value_heads": 16, "rms_norm_eps": 1e-5,
         "tie_word_embeddings": False, "vocab_size": 32000}
SEQ, MB, STEPS = 1024, 2, 3


def measure(stage, world):
    ds = {"train_micro_batch_size_per_gpu": MB, "gradient_accumulation_steps": 1,
          "bf16": {"enabled": True}, "optimizer": {"type": "AdamW", "params": {"lr": 1e-5}},
          "zero_optimization": {"stage": stage}}
    cfg = LlamaConfig(**{k: v for k, v in MODEL.items() if k not in ("architectures",)})
    cfg._attn_implementation = "sdpa"
    model = LlamaForCausalLM(cfg)
    model.gradient_checkpointing_enable()
    engine, _, _, _ = deepspeed.initialize(model=model, model_parameters=model.parameters(),
                                           config=ds)
    torch.cuda.reset_peak_memory_stats()
    fwd = step = 0
    for _ in range(STEPS):
        ids = torch.randint(0, MODEL["vocab_size"], (MB, SEQ), device=engine.device)
        loss = engine(input_ids=ids, labels=ids).loss
        engine.backward(loss)
        fwd = max(fwd, torch.cuda.max_memory_allocated())
        engine.step()
        step = max(step, torch.cuda.max_memory_allocated())
    res = {"allocated": torch.cuda.max_memory_allocated(), "reserved": torch.cuda.max_memory_reserved(),
           "fwd_bwd": fwd, "step": step}
    del engine, model
    torch.cuda.empty_cache()
    with tempfile.TemporaryDirectory() as d:
        mp, cp = os.path.join(d, "model.json"), os.path.join(d, "ds.json")
        json.dump(MODEL, open(mp, "w"))
        json.dump(ds, open(cp, "w"))
        out = subprocess.run([sys.argv[1], "check-config", cp, "--model", mp, "--format", "json",
                              "--world-size", str(world), "--seq-len", str(SEQ),
                              "--micro-batch", str(MB), "--flash-attention", "yes",
                              "--checkpointing", "yes", "--gpu-memory",
                              str(torch.cuda.get_device_properties(0).total_memory / GIB)],
                             capture_output=True, text=True, check=False)
    mm = json.loads(out.stdout)["memory_model"]
    return res, mm


def main():
    if len(sys.argv) < 2:
        print(__doc__)
        return 2
    world = int(os.environ.get("WORLD_SIZE", "1"))
    bad = 0
    for stage in (2, 3):
        res, mm = measure(stage, world)
        for key in ("allocated", "reserved"):
            lo, hi = mm[key]["lo"], mm[key]["hi"]
            inside = lo <= res[key] <= hi
            bad += not inside
            if int(os.environ.get("RANK", "0")) == 0:
                print(f"ZeRO-{stage} {key}: measured {res[key] / GIB:.2f} GiB, ddx "
                      f"{lo / GIB:.2f}-{hi / GIB:.2f} GiB ({'inside' if inside else 'OUTSIDE'});"
                      f" fwd/bwd {res['fwd_bwd'] / GIB:.2f}, step {res['step'] / GIB:.2f} GiB,"
                      f" ddx peak phase {mm['peak_phase']}")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
