/* ddx/memory.h - owns the memory model: the peak GPU memory of one rank
 * during a training step, as named terms with a low and a high bound, from
 * a DeepSpeed config, a model's shape (Hugging Face config.json fields), the
 * sequence length, the micro batch and the parallel layout. The terms:
 *   - model states: weights, gradients and optimizer states under ZeRO
 *     stage 0-3, fp16/bf16 with the fp32 master copy or plain fp32, Adam /
 *     AdamW, SGD with momentum, Adagrad, 8-bit optimizers, offload of the
 *     optimizer or the parameters to cpu / nvme, ZeRO-3 live parameters,
 *     prefetch bucket and persistence threshold;
 *   - activations per transformer layer (Korthikanti et al. 2022:
 *     s*b*h*(34 + 5*a*s/h) bytes without recomputation; the a*s^2 term gone
 *     with FlashAttention / SDPA; tensor and sequence parallel dividing; full
 *     activation checkpointing keeping ~2*s*b*h per layer plus one layer
 *     recomputed; GQA/MQA heads and the MLP width from intermediate_size);
 *   - logits: b*s*V, with the fp32 upcast for the loss;
 *   - communication buckets, the CUDA context and the allocator's reserve.
 * What is only known roughly is a range (lo < hi), never a promise.
 *
 * Pure engine code: no I/O, no libuv, no LSP, no global state. */
#ifndef DDX_MEMORY_H
#define DDX_MEMORY_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ddx/util.h"

/* A transformer's shape. 0 means unknown. */
typedef struct ddx_mem_model {
  double params;       /* total parameters (derived from the shape when 0) */
  double hidden;       /* h: hidden_size / n_embd / d_model */
  double layers;       /* L: num_hidden_layers / n_layer */
  double heads;        /* a: num_attention_heads / n_head */
  double kv_heads;     /* num_key_value_heads (GQA/MQA); = heads when 0 */
  double head_dim;     /* head_dim where heads x head_dim != hidden (Gemma); 0: h / heads */
  double intermediate; /* MLP width: intermediate_size / n_inner / ffn_dim (4h when 0) */
  double vocab;        /* V: vocab_size */
  bool tied;           /* tie_word_embeddings */
  bool gated_mlp;      /* SwiGLU-style MLP (Llama, Mistral, Qwen: 3 matrices) */
  double experts;      /* MoE: num_local_experts / num_experts (0: dense) */
  double experts_per_token;
  /* What the layer's PyTorch code saves for backward beyond Korthikanti's
   * Megatron kernels (false everywhere = the paper's 34*s*b*h; see
   * docs/memory.md for the tensors each adds). */
  bool rms_norm;         /* RMSNorm computed in fp32 in Python (HF Llama-family: rms_norm_eps) */
  bool no_dropout;       /* attention / residual dropout 0 (no masks saved) */
  bool softmax_fp32;     /* attention softmax upcast to fp32 (HF eager Llama-family) */
  double largest_module; /* params of the largest single module (ZeRO-3 gathers one at a time);
                            0: derived from the shape */
  /* Architecture readers (docs/memory.md "Model configs"): */
  double dec_layers;       /* encoder-decoder (T5, BART): decoder layers; layers = encoder layers */
  double dec_heads;        /* decoder heads where they differ (BART); 0: heads */
  double dec_intermediate; /* decoder FFN width where it differs; 0: intermediate */
  bool classifier;         /* *ForSequenceClassification / *ForTokenClassification: no LM head */
  double num_labels;       /* the classifier's outputs (2 when unsaid) */
  double moe_intermediate; /* MoE expert width (Qwen2-MoE, DeepSeek); 0: intermediate */
  double shared_intermediate; /* always-on shared expert width (Qwen2-MoE, DeepSeek) */
  double dense_layers;        /* leading dense layers of a MoE (first_k_dense_replace) */
  char arch[48];              /* the model_type as read ("llama", "t5", ...) */
  char warning[160];          /* what the reader could not model ("" when read as documented) */
} ddx_mem_model_t;

/* Reads the shape from a Hugging Face config.json text (text_config of a
 * multimodal config too). how (may be NULL) says which fields were found.
 * False when the text holds no usable shape. */
bool ddx_mem_model_from_hf(const char *json, size_t len, ddx_mem_model_t *out, char *how,
                           size_t howcap);

/* What is known beyond the ds_config. 0 / -1 means unknown / "take it from
 * the config". */
typedef struct ddx_mem_inputs {
  ddx_mem_model_t model;
  double seq_len;            /* s */
  double micro_batch;        /* b; 0: the config's train_micro_batch_size_per_gpu */
  int64_t world_size;        /* all ranks; 0: unknown (ZeRO partitions then shown per N) */
  int64_t tp, pp, sp;        /* tensor / pipeline / sequence parallel sizes (0 = 1) */
  double gpu_bytes;          /* memory of one GPU (a flag, a setting or an OOM's total) */
  int flash_attention;       /* 1 yes (SDPA / FlashAttention), 0 no, -1 unknown: a range */
  int checkpointing;         /* 1 full activation checkpointing, 0 none, 2 Megatron's selective
                                recompute (the attention core), -1 unknown: a range. The
                                ds_config's activation_checkpointing block is never taken as
                                "yes" (HF models ignore it) */
  double target_len;         /* encoder-decoder: the decoder's length; 0: seq_len */
  double trainable;          /* trainable parameters (LoRA, frozen layers); 0: all of them */
  const char *optim;         /* the HF Trainer's --optim (client optimizer when the ds_config has
                                no optimizer block): adamw_torch (default), adamw_torch_fused,
                                adamw_apex_fused, adamw_bnb_8bit, adafactor, sgd, ...; NULL */
  int ref_models;            /* frozen copies of the model in the same process (DPO's reference
                                model: 1; PPO's reference + reward of the same shape: 2) */
  double cuda_context_bytes; /* 0: the default (stated in the term) */
  double reserve_fraction;   /* allocator reserve as a fraction of the peak; 0: default */
  const char *gpu_from, *model_from, *world_from; /* where facts came from, for messages */
} ddx_mem_inputs_t;

typedef enum {
  DDX_MEM_MODEL_STATES = 0,
  DDX_MEM_ACTIVATIONS = 1,
  DDX_MEM_LOGITS = 2,
  DDX_MEM_BUFFERS = 3, /* reduce / allgather buckets, ZeRO-3 live params and prefetch */
  DDX_MEM_RUNTIME = 4, /* CUDA context, allocator reserve */
  DDX_MEM_STEP = 5     /* the optimizer step's fp32 gradients and temporaries */
} ddx_mem_group_t;

/* When a term is on the GPU: all along, or in one of the two phases that
 * never coexist (activations are freed before the step). The allocated
 * peak is the resident terms plus the larger phase. */
typedef enum {
  DDX_MEM_PHASE_ALL = 0,    /* resident: weights, gradients, optimizer states */
  DDX_MEM_PHASE_FWDBWD = 1, /* forward/backward: activations, logits, buckets, ZeRO-3 gathers */
  DDX_MEM_PHASE_STEP = 2    /* optimizer step: fp32 gradient partition, optimizer temporaries */
} ddx_mem_phase_t;

#define DDX_MEM_MAX_TERMS 32

typedef struct ddx_mem_term {
  char what[64];    /* "fp32 Adam states (exp_avg, exp_avg_sq)" */
  char formula[64]; /* "8P/N" */
  double lo, hi;    /* bytes; lo == hi when exact */
  ddx_mem_group_t group;
  ddx_mem_phase_t phase;
  bool cpu; /* lives in host memory (offloaded): not in the GPU peak */
} ddx_mem_term_t;

typedef enum {
  DDX_MEM_UNKNOWN = 0, /* no GPU size, or no model: no verdict */
  DDX_MEM_FITS = 1,    /* hi + margin below the GPU */
  DDX_MEM_TIGHT = 2,   /* the GPU lies inside [lo, hi] */
  DDX_MEM_OOM = 3      /* lo above the GPU */
} ddx_mem_verdict_t;

typedef struct ddx_mem_estimate {
  bool valid;        /* the model was known (a shape or a parameter count) */
  char missing[160]; /* what else would sharpen it ("sequence length", ...) */
  char sources[192]; /* "model from config.json; world size from --world-size; ..." */
  /* the config as read */
  int stage;
  const char *precision; /* "bf16", "fp16", "fp32" */
  const char *optimizer; /* "adamw", "adam", "sgd", "adagrad", "8bit-adam", "unknown" */
  const char *offload_optimizer, *offload_param; /* "none", "cpu", "nvme" */
  double micro_batch, seq_len;
  int64_t dp; /* the data-parallel size used for ZeRO partitioning */
  ddx_mem_term_t terms[DDX_MEM_MAX_TERMS];
  size_t nterms;
  /* The three quantities, each [lo, hi] bytes: the allocated peak
   * (torch.cuda.max_memory_allocated: resident + the larger phase), the
   * reserved peak (max_memory_reserved: + the caching allocator's reserve)
   * and what nvidia-smi shows (+ the CUDA context). peak_* is the last one,
   * the quantity the verdict compares with the GPU. */
  double alloc_lo, alloc_hi, reserved_lo, reserved_hi;
  double peak_lo, peak_hi;
  const char *peak_phase; /* "forward/backward" or "optimizer step" (at the high bound) */
  double ds_estimate;     /* DeepSpeed's estimate_zero2/3_model_states_mem_needs (all live)
                             for this config, per GPU; 0 when it has none (stage 0/1) */
  double cpu_bytes;       /* offloaded bytes per rank */
  double gpu_bytes;       /* the GPU's memory, 0 when unknown */
  ddx_mem_verdict_t verdict;
} ddx_mem_estimate_t;

/* The estimate for a ds_config (a parsed JSON object; "auto" values are
 * taken from in, else a range is shown). Returns 0, or DDX_EINVAL with err
 * when config is not an object. */
int ddx_mem_estimate(const json_t *config, const ddx_mem_inputs_t *in, ddx_mem_estimate_t *out,
                     ddx_error_t *err);

/* True when optim is a HF Trainer --optim value the model knows
 * (adamw_torch, adamw_torch_fused, adamw_bnb_8bit, adafactor, ...). */
bool ddx_mem_optim_known(const char *optim);

/* A ds_config text as DeepSpeed reads it (hjson: // and block comments, # lines and
 * trailing commas accepted) into a new JSON reference; NULL with err
 * ("line 3, column 7: ...") when it is not JSON. */
json_t *ddx_mem_config_load(const char *text, size_t len, ddx_error_t *err);

/* The activation bytes of ONE transformer layer kept for backward, per
 * rank, for micro batch b and sequence length s (the model's h, a,
 * kv_heads, intermediate; 2-byte activations), with or without full
 * checkpointing and FlashAttention, divided by tp (and sp when sequence
 * parallel). Exposed for the validation against PyTorch measurements. */
double ddx_mem_layer_activation_bytes(const ddx_mem_model_t *m, double s, double b, double tp,
                                      bool sequence_parallel, bool flash, bool checkpointed);

/* The estimate after applying a rule's config patch (the config_patches
 * entry as JSON text, or a bare ops array: its preconditions checked, then
 * "set", "remove", "rename", "multiply" ops on dotted paths, applied to a
 * deep copy), and the bytes it saves on the GPU (lo/hi of before minus
 * after; negative when it costs memory). False when the patch does not
 * apply to config (a precondition fails, a multiply meets "auto", an
 * unknown op); after (may be NULL) is then an invalid estimate whose
 * missing says so, never left undefined. */
bool ddx_mem_patch_saving(const json_t *config, const char *patch_json, const ddx_mem_inputs_t *in,
                          ddx_mem_estimate_t *after, double *saved_lo, double *saved_hi);

/* Renderings: a text table (check-config), Markdown (hover) and a JSON
 * object (check-config --format json: {valid, peak: {lo, hi}, gpu, verdict
 * ("fits", "tight", "oom", "unknown"), verdict_text, headroom, cpu_bytes,
 * terms: [{what, formula, group ("model_states", "activations", "logits",
 * "buffers", "runtime"), lo, hi, cpu}], config: {stage, precision,
 * optimizer, offload_optimizer, offload_param, micro_batch, seq_len, dp},
 * missing, sources}; bytes throughout, gpu and headroom null when the GPU is
 * unknown). malloc'd / new reference. */
char *ddx_mem_text(const ddx_mem_estimate_t *e);
char *ddx_mem_markdown(const ddx_mem_estimate_t *e);
json_t *ddx_mem_json(const ddx_mem_estimate_t *e);

/* "OOM predicted: 93.1-101.4 GiB > 80 GiB", "fits, 12.3 GiB headroom",
 * "tight: 71-84 GiB on an 80 GiB GPU" into buf. */
void ddx_mem_verdict_text(const ddx_mem_estimate_t *e, char *buf, size_t cap);

#endif
