#!/bin/bash
# ddx check-config's memory model on the real binary (make test-memory):
# the issue's command line, text and JSON, the verdicts, "auto" keys with
# --micro-batch, hjson comments, and the refusals (unreadable or shapeless
# model config, bad flag values). Run from the repo root: cli.sh path/to/ddx
source tests/cli/lib.sh
PY_BIN=${PY:-/usr/bin/python3}

cat >"$T/llama.json" <<'J'
{"architectures": ["LlamaForCausalLM"], "hidden_act": "silu", "hidden_size": 4096,
 "intermediate_size": 11008, "num_attention_heads": 32, "num_hidden_layers": 32,
 "num_key_value_heads": 32, "rms_norm_eps": 1e-05, "tie_word_embeddings": false,
 "vocab_size": 32000, "rope_theta": 10000.0}
J
cat >"$T/ds.json" <<'J'
{
  // HF Trainer style: "auto" batch keys, ZeRO-3
  "bf16": {"enabled": "auto"},
  "train_micro_batch_size_per_gpu": "auto",
  "gradient_accumulation_steps": "auto",
  "zero_optimization": {"stage": 3, "reduce_bucket_size": "auto",
    "stage3_prefetch_bucket_size": "auto", "stage3_param_persistence_threshold": "auto",},
}
J
run() { "$DDX" check-config "$@" >"$T/out" 2>"$T/err"; echo $?; }

# 1. the issue's command: fits with checkpointing and flash
rc=$(run "$T/ds.json" --model "$T/llama.json" --seq-len 4096 --gpu-memory 80 --world-size 8 \
  --micro-batch 1 --flash-attention yes --checkpointing yes)
[ "$rc" = 0 ] && grep -q "^fits, [0-9.]* GiB headroom" "$T/out" && grep -q "Model states per GPU" "$T/out" \
  && grep -q "checkpointed layer inputs" "$T/out" && ok || bad "fits: rc $rc: $(cat "$T/out" "$T/err")"

# 2. no checkpointing, math attention, micro batch 8: OOM predicted
rc=$(run "$T/ds.json" --model "$T/llama.json" --seq-len 4096 --gpu-memory 80 --world-size 8 \
  --micro-batch 8 --flash-attention no --checkpointing no)
grep -q "^OOM predicted: .* GiB > 80 GiB" "$T/out" && ok || bad "oom: $(cat "$T/out")"

# 3. unknown kernel and checkpointing: a range, said so
rc=$(run "$T/ds.json" --model "$T/llama.json" --seq-len 4096 --gpu-memory 80 --world-size 8 --micro-batch 1)
grep -q "^tight: .* on an 80 GiB GPU" "$T/out" && grep -q "Would sharpen it:.*checkpointing" "$T/out" \
  && ok || bad "range: $(cat "$T/out")"

# 4. JSON: the old memory keys stay, memory_model is added
rc=$(run "$T/ds.json" --model "$T/llama.json" --seq-len 4096 --gpu-memory 80 --world-size 8 \
  --micro-batch 2 --flash-attention yes --checkpointing yes --tp 2 --format json)
$PY_BIN - "$T/out" <<'P' && ok || bad "json: $(head -c 600 "$T/out")"
import json, sys
d = json.load(open(sys.argv[1]))
m, mm = d["memory"], d["memory_model"]
assert {"stage", "params", "dp_world_size", "gpu_bytes", "cpu_bytes", "terms"} <= set(m), m.keys()
assert mm["verdict"] == "fits", mm["verdict"]
assert mm["config"]["stage"] == 3 and mm["config"]["dp"] == 4 and mm["config"]["micro_batch"] == 2
assert mm["peak"]["lo"] <= mm["peak"]["hi"] and mm["headroom"] > 0
groups = {t["group"] for t in mm["terms"]}
assert {"model_states", "activations", "logits", "buffers", "runtime"} <= groups, groups
assert "shape" in mm["model_from"]
P

# 5. --params alone: model states, no verdict but a lower bound
rc=$(run "$T/ds.json" --params 70B --world-size 8 --gpu-memory 80)
grep -q "^OOM predicted" "$T/out" && ok || bad "params only: $(cat "$T/out")"

# 6. refusals: a missing model file, a model file without a shape, bad values
rc=$(run "$T/ds.json" --model "$T/missing.json")
[ "$rc" = 2 ] && grep -q "missing.json" "$T/err" && ok || bad "missing model: rc $rc $(cat "$T/err")"
echo '{"foo": 1}' >"$T/noshape.json"
rc=$(run "$T/ds.json" --model "$T/noshape.json")
[ "$rc" = 2 ] && grep -q "no model shape" "$T/err" && ok || bad "shapeless: rc $rc $(cat "$T/err")"
rc=$(run "$T/ds.json" --model /dev/zero)
[ "$rc" = 2 ] && ok || bad "/dev/zero model: rc $rc"
for flags in "--seq-len 0" "--micro-batch x" "--tp -1" "--flash-attention maybe" "--checkpointing 2" \
  "--reserve 1.5" "--cuda-context abc"; do
  # shellcheck disable=SC2086
  rc=$(run "$T/ds.json" $flags)
  [ "$rc" = 2 ] && ok || bad "$flags: rc $rc"
done
grep -q -- "--seq-len" <("$DDX" help) && ok || bad "usage lacks --seq-len"

# 7. issue 29: the three quantities labelled, the phase of the peak
rc=$(run "$T/ds.json" --model "$T/llama.json" --seq-len 2048 --gpu-memory 80 --world-size 8 \
  --micro-batch 1 --flash-attention yes --checkpointing yes)
grep -q "allocated peak (max_memory_allocated)" "$T/out" && grep -q "reserved peak (max_memory_reserved)" "$T/out" \
  && grep -q "what nvidia-smi shows" "$T/out" && grep -q "fp32 gradient partition (optimizer step)" "$T/out" \
  && ok || bad "quantities: $(cat "$T/out")"

# 8. issue 29: bad input is an error naming the option, never accepted
rc=$(run "$T/ds.json" --model "$T/llama.json" --world-size 3 --tp 2)
[ "$rc" = 2 ] && grep -q -- "--world-size 3 is not a multiple" "$T/err" && ok || bad "ws 3 tp 2: rc $rc $(cat "$T/err")"
rc=$(run "$T/ds.json" --model "$T/llama.json" --world-size 6 --tp 3)
[ "$rc" = 2 ] && grep -q -- "--tp 3 does not divide" "$T/err" && ok || bad "tp 3: rc $rc $(cat "$T/err")"
rc=$(run "$T/ds.json" --model "$T/llama.json" --world-size 64 --pp 64)
[ "$rc" = 2 ] && grep -q -- "--pp 64 is more" "$T/err" && ok || bad "pp 64: rc $rc $(cat "$T/err")"
rc=$(run "$T/ds.json" --model "$T/llama.json" --gpu-memory inf)
[ "$rc" = 2 ] && ok || bad "gpu inf: rc $rc"
rc=$(run "$T/ds.json" --model "$T/llama.json" --optim adamw_magic)
[ "$rc" = 2 ] && grep -q -- "--optim" "$T/err" && ok || bad "optim: rc $rc"
echo '{"model_type": "llama", "hidden_size": 4096, "num_hidden_layers": 32, "num_attention_heads": 0}' >"$T/zeroheads.json"
rc=$(run "$T/ds.json" --model "$T/zeroheads.json")
[ "$rc" = 2 ] && grep -q "num_attention_heads is 0" "$T/err" && ok || bad "heads 0: rc $rc $(cat "$T/err")"
rc=$(run "$T/ds.json" --model "$T/llama.json" --target-len 128)
[ "$rc" = 2 ] && grep -q -- "--target-len" "$T/err" && ok || bad "target-len: rc $rc"
# "zero_optimization": true is stage 1 in the estimate, as in the warning
echo '{"bf16": {"enabled": true}, "zero_optimization": true}' >"$T/ztrue.json"
rc=$(run "$T/ztrue.json" --model "$T/llama.json" --world-size 8 --format json)
$PY_BIN -c 'import json,sys; d=json.load(open(sys.argv[1])); assert d["memory_model"]["config"]["stage"] == 1' "$T/out" \
  && ok || bad "zero true: $(head -c 300 "$T/out")"
# T5: the decoder stack and d_kv read (t5-3b: 2.85B parameters)
cat >"$T/t5.json" <<'J'
{"architectures": ["T5ForConditionalGeneration"], "model_type": "t5", "d_model": 1024, "d_ff": 16384,
 "d_kv": 128, "num_heads": 32, "num_layers": 24, "vocab_size": 32128, "feed_forward_proj": "relu",
 "dropout_rate": 0.1}
J
rc=$(run "$T/ds.json" --model "$T/t5.json" --world-size 8 --format json)
$PY_BIN -c 'import json,sys; d=json.load(open(sys.argv[1])); p=d["memory"]["params"]; assert 2.80e9 < p < 2.90e9, p' "$T/out" \
  && ok || bad "t5-3b: $(head -c 300 "$T/out")"
finish
