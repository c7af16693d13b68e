#!/usr/bin/python3
"""Activation memory, measured against ddx's model (ddx/memory.h,
ddx_mem_layer_activation_bytes, through `ddx check-config --model`).

For GPT-style blocks (LayerNorm, multi-head attention, 4h GELU MLP, dropout
0.1) and Llama-style blocks (RMSNorm computed in fp32 as Hugging Face's
LlamaRMSNorm does, RoPE, GQA with repeat_kv, fp32 softmax, SwiGLU MLP of
intermediate_size, no dropout) at several (s, b, h, a, kv_heads, I, layers),
it runs the forward pass in bf16 on the CPU under
torch.autograd.graph.saved_tensors_hooks and sums the bytes of the unique
tensors autograd saves for backward (one count per storage: data_ptr,
storage bytes; the parameters and the shared RoPE cos/sin constants left
out), with and without torch.utils.checkpoint (reentrant: each layer's
input is what is kept). No backward is run: what is saved is known when the
forward ends. Tensors that only `mean` keeps are left out: Debian's
PyTorch 1.13 saves mean's input, PyTorch 2.x (what GPU jobs run) keeps only
its sizes (only_mean_saved); the raw 1.13 bytes are printed beside.

Attention kernels:
  math  - the eager path (softmax of Q K^T, dropout, times V); it saves the
          s^2 tensors.
  flash - Debian's torch (1.13) has no scaled_dot_product_attention, so the
          flash case uses a stand-in autograd.Function that computes the same
          output and saves exactly what FlashAttention's kernel saves for
          backward (flash_attn's ctx.save_for_backward(q, k, v, out,
          softmax_lse)): q, k and v as given (K/V at kv_heads width, no
          repeat), the output and the fp32 log-sum-exp.
Dropout uses torch.native_dropout, the kernel CUDA runs (a 1-byte bool
mask); on the CPU F.dropout multiplies by a mask of the input's dtype.

Exit 1 when a case is off by more than --tolerance (10%). --markdown FILE
writes the table for docs/memory.md.
"""
import argparse
import json
import math
import os
import subprocess
import sys
import tempfile
import time

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.checkpoint import checkpoint

DT = torch.bfloat16
torch.manual_seed(0)
torch.set_num_threads(max(1, min(2, os.cpu_count() or 1)))


class Dropout(nn.Module):
    """CUDA's fused dropout: saves a 1-byte mask."""

    def __init__(self, p):
        super().__init__()
        self.p = p

    def forward(self, x):
        if self.p <= 0 or not self.training:
            return x
        return torch.native_dropout(x, self.p, True)[0]


class FlashLike(torch.autograd.Function):
    """Math attention that saves what FlashAttention saves. q: (b, s, a, d),
    k, v: (b, s, kv, d); returns (b, s, a, d)."""

    @staticmethod
    def forward(ctx, q, k, v):
        with torch.no_grad():
            b, s, a, d = q.shape
            rep = a // k.shape[2]
            qh = q.transpose(1, 2).float()
            kh = k.transpose(1, 2).float().repeat_interleave(rep, dim=1)
            vh = v.transpose(1, 2).float().repeat_interleave(rep, dim=1)
            sc = qh @ kh.transpose(-2, -1) / math.sqrt(d)
            sc = sc + torch.full((s, s), float("-inf")).triu(1)
            lse = torch.logsumexp(sc, dim=-1)  # (b, a, s) fp32
            out = (torch.exp(sc - lse.unsqueeze(-1)) @ vh).transpose(1, 2).to(q.dtype).contiguous()
        ctx.save_for_backward(q, k, v, out, lse)
        return out

    @staticmethod
    def backward(ctx, g):  # measurement only
        raise NotImplementedError


def causal_mask(s):
    return torch.full((s, s), float("-inf"), dtype=DT).triu(1)


class GPTBlock(nn.Module):
    def __init__(self, h, a, p=0.1):
        super().__init__()
        self.h, self.a = h, a
        self.ln1, self.ln2 = nn.LayerNorm(h), nn.LayerNorm(h)
        self.qkv, self.proj = nn.Linear(h, 3 * h), nn.Linear(h, h)
        self.fc1, self.fc2 = nn.Linear(h, 4 * h), nn.Linear(4 * h, h)
        self.drop_attn, self.drop_resid, self.drop_mlp = Dropout(p), Dropout(p), Dropout(p)

    def forward(self, x, flash, mask):
        b, s, h = x.shape
        a, d = self.a, h // self.a
        qkv = self.qkv(self.ln1(x)).view(b, s, 3, a, d)
        q, k, v = qkv.unbind(2)
        if flash:
            o = FlashLike.apply(q, k, v)
        else:
            q, k, v = (t.transpose(1, 2) for t in (q, k, v))
            att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(d)) + mask
            att = self.drop_attn(F.softmax(att, dim=-1))
            o = (att @ v).transpose(1, 2)
        x = x + self.drop_resid(self.proj(o.reshape(b, s, h)))
        return x + self.drop_mlp(self.fc2(F.gelu(self.fc1(self.ln2(x)))))


class RMSNorm(nn.Module):
    """transformers' LlamaRMSNorm, line for line."""

    def __init__(self, h, eps=1e-6):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(h))
        self.eps = eps

    def forward(self, x):
        dtype = x.dtype
        x = x.to(torch.float32)
        var = x.pow(2).mean(-1, keepdim=True)
        x = x * torch.rsqrt(var + self.eps)
        return self.weight * x.to(dtype)


def rotate_half(x):
    x1, x2 = x[..., : x.shape[-1] // 2], x[..., x.shape[-1] // 2 :]
    return torch.cat((-x2, x1), dim=-1)


def repeat_kv(x, n):
    if n == 1:
        return x
    b, kv, s, d = x.shape
    return x[:, :, None, :, :].expand(b, kv, n, s, d).reshape(b, kv * n, s, d)


class LlamaBlock(nn.Module):
    """transformers' LlamaDecoderLayer with eager attention (or the flash
    stand-in as flash_attention_2 calls it: no repeat_kv)."""

    def __init__(self, h, a, kv, inter, head_dim=0):
        super().__init__()
        self.h, self.a, self.kv, self.d = h, a, kv, head_dim or h // a
        d = self.d
        self.n1, self.n2 = RMSNorm(h), RMSNorm(h)
        self.q = nn.Linear(h, a * d, bias=False)
        self.k = nn.Linear(h, kv * d, bias=False)
        self.v = nn.Linear(h, kv * d, bias=False)
        self.o = nn.Linear(a * d, h, bias=False)
        self.gate = nn.Linear(h, inter, bias=False)
        self.up = nn.Linear(h, inter, bias=False)
        self.down = nn.Linear(inter, h, bias=False)

    def forward(self, x, flash, mask, cos, sin):
        b, s, h = x.shape
        a, kv, d = self.a, self.kv, self.d
        y = self.n1(x)
        q = self.q(y).view(b, s, a, d).transpose(1, 2)
        k = self.k(y).view(b, s, kv, d).transpose(1, 2)
        v = self.v(y).view(b, s, kv, d).transpose(1, 2)
        q = q * cos + rotate_half(q) * sin
        k = k * cos + rotate_half(k) * sin
        if flash:
            o = FlashLike.apply(q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2))
        else:
            k, v = repeat_kv(k, a // kv), repeat_kv(v, a // kv)
            att = torch.matmul(q, k.transpose(2, 3)) * (1.0 / math.sqrt(d)) + mask
            att = F.softmax(att, dim=-1, dtype=torch.float32).to(q.dtype)
            o = torch.matmul(att, v).transpose(1, 2).contiguous()
        x = x + self.o(o.reshape(b, s, a * d))
        y = self.n2(x)
        return x + self.down(F.silu(self.gate(y)) * self.up(y))


def only_mean_saved(root):
    """Storages that only MeanBackward nodes keep. PyTorch 1.13's mean.dim
    saves its input (MeanBackward1._saved_self); PyTorch 2.x keeps only the
    sizes (derivatives.yaml: mean_backward(grad, self.sym_sizes(), dim,
    self.sym_numel(), keepdim)), so what a GPU user's PyTorch saves is the
    measurement without them."""
    savers, seen, keep, todo = {}, set(), [], [root]
    while todo:
        node = todo.pop()
        if node is None or id(node) in seen:
            continue
        seen.add(id(node))
        keep.append(node)  # a freed node's id could be reused by the next one
        for attr in dir(node):
            if attr.startswith("_saved_"):
                try:
                    t = getattr(node, attr)
                except Exception:  # a saved tensor already freed, or not readable
                    continue
                if isinstance(t, torch.Tensor):
                    savers.setdefault(t.storage().data_ptr(), set()).add(type(node).__name__)
        todo.extend(fn for fn, _ in node.next_functions)
    return {p for p, names in savers.items() if all(n.startswith("MeanBackward") for n in names)}


def measure(kind, s, b, h, a, kv, inter, layers, flash, ckpt, head_dim=0):
    """Bytes of the unique tensors saved for backward by `layers` blocks, as
    (PyTorch 2.x, this PyTorch): the first leaves out what only `mean`
    keeps (see only_mean_saved)."""
    if kind == "gpt":
        blocks = [GPTBlock(h, a).to(DT) for _ in range(layers)]
    else:
        blocks = [LlamaBlock(h, a, kv, inter, head_dim).to(DT) for _ in range(layers)]
    for blk in blocks:
        blk.train()
    mask = causal_mask(s)
    d = head_dim or h // a
    inv = 1.0 / (10000 ** (torch.arange(0, d, 2).float() / d))
    ang = torch.outer(torch.arange(s).float(), inv)
    emb = torch.cat((ang, ang), dim=-1)
    cos, sin = emb.cos().to(DT)[None, None], emb.sin().to(DT)[None, None]
    skip = {p.data_ptr() for blk in blocks for p in blk.parameters()}
    skip |= {cos.data_ptr(), sin.data_ptr(), mask.data_ptr()}
    seen = {}

    def pack(t):
        st = t.storage()
        ptr = st.data_ptr()
        if ptr not in skip and ptr not in seen:
            seen[ptr] = st.nbytes()
        return t

    x = torch.randn(b, s, h, dtype=DT, requires_grad=True)
    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        for blk in blocks:
            args = (flash, mask) if kind == "gpt" else (flash, mask, cos, sin)
            if ckpt:
                x = checkpoint(blk, x, *args, use_reentrant=True)
            else:
                x = blk(x, *args)
    raw = sum(seen.values())
    mean_only = only_mean_saved(x.grad_fn)
    return raw - sum(n for p, n in seen.items() if p in mean_only), raw


def predict(ddx, tmp, kind, s, b, h, a, kv, inter, layers, flash, ckpt, head_dim=0):
    """ddx's activation bytes for the same layers (check-config --model)."""
    if kind == "gpt":
        model = {"model_type": "gpt2", "n_embd": h, "n_layer": layers, "n_head": a,
                 "vocab_size": 1000, "attn_pdrop": 0.1, "resid_pdrop": 0.1,
                 "activation_function": "gelu"}
    else:
        model = {"model_type": "llama", "hidden_size": h, "num_hidden_layers": layers,
                 "num_attention_heads": a, "num_key_value_heads": kv,
                 "intermediate_size": inter, "hidden_act": "silu", "rms_norm_eps": 1e-6,
                 "rope_theta": 10000.0, "attention_dropout": 0.0, "vocab_size": 1000}
        if head_dim:
            model["head_dim"] = head_dim
    mpath, cpath = os.path.join(tmp, "config.json"), os.path.join(tmp, "ds_config.json")
    with open(mpath, "w") as f:
        json.dump(model, f)
    with open(cpath, "w") as f:
        json.dump({"bf16": {"enabled": True}, "train_micro_batch_size_per_gpu": b}, f)
    r = subprocess.run([ddx, "check-config", cpath, "--model", mpath, "--seq-len", str(s),
                        "--world-size", "1", "--flash-attention", "yes" if flash else "no",
                        "--checkpointing", "yes" if ckpt else "no", "--format", "json"],
                       capture_output=True, text=True)
    if r.returncode not in (0, 1):
        raise SystemExit(f"ddx check-config failed ({r.returncode}): {r.stderr}")
    mm = json.loads(r.stdout)["memory_model"]
    # the forward's saved tensors: every layer's (no checkpointing) or each
    # layer's input (checkpointing; the one layer recomputed in backward is
    # not saved in the forward)
    want = "checkpointed layer inputs" if ckpt else "layer activations"
    terms = [t for t in mm["terms"] if t["what"] == want]
    if len(terms) != 1 or terms[0]["lo"] != terms[0]["hi"]:
        raise SystemExit(f"no single '{want}' term: {mm['terms']}")
    return terms[0]["lo"]


# (kind, s, b, h, a, kv_heads, intermediate, layers[, head_dim where a x head_dim != h])
CASES = [
    ("gpt", 256, 2, 256, 4, 4, 1024, 2),
    ("gpt", 512, 1, 512, 8, 8, 2048, 2),
    ("gpt", 128, 4, 768, 12, 12, 3072, 2),
    ("gpt", 1024, 1, 256, 8, 8, 1024, 1),
    ("llama", 256, 2, 256, 4, 4, 688, 2),
    ("llama", 512, 1, 512, 8, 2, 1376, 2),
    ("llama", 128, 2, 768, 12, 4, 2048, 2),
    ("llama", 1024, 1, 256, 8, 1, 704, 1),
    ("llama", 256, 2, 256, 4, 2, 688, 2, 128),
]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("ddx")
    ap.add_argument("--tolerance", type=float, default=0.10)
    ap.add_argument("--markdown")
    args = ap.parse_args()
    t0 = time.time()
    rows, bad = [], 0
    with tempfile.TemporaryDirectory() as tmp:
        for case in CASES:
            kind, s, b, h, a, kv, inter, layers = case[:8]
            hd = case[8] if len(case) > 8 else 0
            for flash, ckpt in ((False, False), (True, False), (False, True)):
                got, raw = measure(kind, s, b, h, a, kv, inter, layers, flash, ckpt, hd)
                pred = predict(args.ddx, tmp, kind, s, b, h, a, kv, inter, layers, flash, ckpt, hd)
                err = (pred - got) / got
                ok = abs(err) <= args.tolerance
                bad += not ok
                attn = "flash" if flash else "math"
                name = kind + (f" (head_dim {hd})" if hd else "")
                rows.append((name, s, b, h, a, kv, inter, layers, attn, "yes" if ckpt else "no",
                             got, pred, err, ok, raw))
                print(f"{'ok ' if ok else 'BAD'} {name:5} s={s:<5} b={b} h={h:<4} a={a:<2} "
                      f"kv={kv:<2} I={inter:<5} L={layers} {attn:5} ckpt={'yes' if ckpt else 'no ':3} "
                      f"measured {got / 2**20:9.2f} MiB (torch {torch.__version__} raw {raw / 2**20:.2f})  "
                      f"predicted {pred / 2**20:9.2f} MiB  "
                      f"{err * 100:+6.1f}%", flush=True)
    if args.markdown:
        with open(args.markdown, "w") as f:
            f.write("| block | s | b | h | a | kv | I | layers | attention | checkpointing "
                    f"| measured MiB | torch {torch.__version__} raw MiB | predicted MiB | error |\n"
                    "|---|---:|---:|---:|---:|---:|---:|---:|---|---|---:|---:|---:|---:|\n")
            for r in rows:
                f.write(f"| {r[0]} | {r[1]} | {r[2]} | {r[3]} | {r[4]} | {r[5]} | {r[6]} | {r[7]} "
                        f"| {r[8]} | {r[9]} | {r[10] / 2**20:.2f} | {r[14] / 2**20:.2f} "
                        f"| {r[11] / 2**20:.2f} "
                        f"| {r[12] * 100:+.1f}% |\n")
    print(f"memory: {len(rows) - bad}/{len(rows)} cases within {args.tolerance * 100:.0f}% "
          f"({time.time() - t0:.1f} s)")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
