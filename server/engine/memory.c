/* memory.c - the memory model (ddx/memory.h): the peak GPU memory of one
 * rank as named terms with a low and a high bound.
 *
 * Sources of the formulas:
 *   - model states: Rajbhandari et al., "ZeRO" (2020), section 3/5 with
 *     mixed-precision Adam K = 12: stage 0 (2+2+K)P, stage 1 (2+2+K/N)P,
 *     stage 2 (2+(2+K)/N)P, stage 3 (2+2+K)P/N; plus what DeepSpeed's
 *     estimators (estimate_zero2/3_model_states_mem_needs) count beyond the
 *     paper: the fp32 gradient partition built at the optimizer step and,
 *     for stage 2, gradients kept unpartitioned until their bucket is
 *     reduced (a range: the paper is the low bound, DeepSpeed the high);
 *   - activations: Korthikanti et al., "Reducing Activation Recomputation
 *     in Large Transformer Models" (2022), s*b*h*(34 + 5*a*s/h) per layer,
 *     generalised tensor by tensor (see layer_tensors) and checked against
 *     the bytes PyTorch's autograd saves (tests/memory/measure.py);
 *   - buckets: DeepSpeed's ZeRO config docs (reduce_bucket_size,
 *     allgather_bucket_size, overlap_comm's 4.5x as the HF docs state it).
 * Everything is bytes per rank; docs/memory.md has the whole model. */
#include "ddx/memory.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define GIB (1024.0 * 1024.0 * 1024.0)

/* ------------------------------------------------------------ JSON helpers */

static const json_t *cfg_at(const json_t *o, const char *dotted) {
  char key[128];
  const char *p = dotted;
  while (o && *p) {
    const char *dot = strchr(p, '.');
    size_t n = dot ? (size_t)(dot - p) : strlen(p);
    if (n >= sizeof key || !json_is_object(o)) return NULL;
    memcpy(key, p, n);
    key[n] = 0;
    o = json_object_get(o, key);
    p = dot ? dot + 1 : p + n;
  }
  return o;
}

static bool is_auto(const json_t *v) {
  return json_is_string(v) && !strcmp(json_string_value(v), "auto");
}

/* A number (a numeric string too: "5e8"), else def. */
static double num_or(const json_t *v, double def) {
  if (json_is_number(v)) return json_number_value(v);
  if (json_is_string(v) && !is_auto(v)) {
    char *e;
    double d = strtod(json_string_value(v), &e);
    if (e != json_string_value(v) && !*e) return d;
  }
  return def;
}

static bool enabled(const json_t *block) {
  if (json_is_true(block)) return true;
  const json_t *e = json_object_get(block, "enabled");
  return json_is_true(e) || (json_is_integer(e) && json_integer_value(e) != 0);
}

static const char *offload_device(const json_t *block) {
  if (json_is_true(block)) return "cpu";
  const char *d = json_string_value(json_object_get(block, "device"));
  if (!d || !strcmp(d, "none") || !strcmp(d, "auto")) return "none";
  if (!strcmp(d, "cpu")) return "cpu";
  if (!strcmp(d, "nvme")) return "nvme";
  return "none";
}

json_t *ddx_mem_config_load(const char *text, size_t len, ddx_error_t *err) {
  /* blank comments and trailing commas outside strings (same length, so
   * jansson's positions stay the text's) */
  char *t = malloc(len + 1);
  if (!t) {
    ddx_error_set(err, DDX_ENOMEM, "out of memory");
    return NULL;
  }
  memcpy(t, text, len);
  t[len] = 0;
  bool str = false;
  for (size_t i = 0; i < len; i++) {
    char c = t[i];
    if (str) {
      if (c == '\\' && i + 1 < len)
        i++;
      else if (c == '"')
        str = false;
    } else if (c == '"') {
      str = true;
    } else if ((c == '/' && i + 1 < len && t[i + 1] == '/') || c == '#') {
      while (i < len && t[i] != '\n')
        t[i++] = ' ';
    } else if (c == '/' && i + 1 < len && t[i + 1] == '*') {
      t[i] = t[i + 1] = ' ';
      for (i += 2; i < len && !(t[i] == '*' && i + 1 < len && t[i + 1] == '/'); i++)
        if (t[i] != '\n') t[i] = ' ';
      if (i < len) t[i] = t[i + 1] = ' ', i++;
    } else if (c == ',') {
      size_t j = i + 1;
      while (j < len && (t[j] == ' ' || t[j] == '\t' || t[j] == '\r' || t[j] == '\n'))
        j++;
      if (j < len && (t[j] == '}' || t[j] == ']')) t[i] = ' ';
    }
  }
  json_error_t je;
  json_t *j = json_loadb(t, len, 0, &je);
  free(t);
  if (!j) ddx_error_set(err, DDX_EINVAL, "line %d, column %d: %s", je.line, je.column, je.text);
  return j;
}

/* ------------------------------------------------------------ model shape */

static double jnum(const json_t *o, const char *const *keys) {
  for (; *keys; keys++) {
    json_t *v = json_object_get(o, *keys);
    if (json_is_number(v) && json_number_value(v) > 0) return json_number_value(v);
  }
  return 0;
}

/* The MLP of one layer: dense (gated: 3 matrices, else 2), or MoE: every
 * expert's MLP at the expert width, the router (h x experts) and the
 * always-on shared expert. */
static double mlp_params(const ddx_mem_model_t *m, bool dense) {
  double h = m->hidden, inter = m->intermediate > 0 ? m->intermediate : 4 * h;
  double per = m->gated_mlp ? 3 : 2;
  if (dense || !(m->experts > 0)) return per * h * inter;
  double ew = m->moe_intermediate > 0 ? m->moe_intermediate : inter;
  return per * h * ew * m->experts + h * m->experts + per * h * m->shared_intermediate;
}

/* Self-attention parameters: Q and O at heads x head_dim, K and V at
 * kv_heads x head_dim (Gemma, Mistral-Nemo, T5: heads x head_dim != h). */
static double attn_params(const ddx_mem_model_t *m, double heads) {
  double h = m->hidden, a = heads > 0 ? heads : 1;
  double kv = m->kv_heads > 0 && heads == m->heads ? m->kv_heads : a;
  double hd = m->head_dim > 0 ? m->head_dim : h / a;
  return 2 * h * a * hd + 2 * h * kv * hd;
}

/* Per-layer parameters of the shape (attention + MLP, experts counted). */
static double layer_params(const ddx_mem_model_t *m) {
  return attn_params(m, m->heads) + mlp_params(m, false) + 4 * m->hidden;
}

static double model_params(const ddx_mem_model_t *m) {
  if (m->params > 0) return m->params;
  if (!(m->hidden > 0 && m->layers > 0)) return 0;
  double h = m->hidden;
  /* the input embedding, and the LM head unless tied or a classifier */
  double emb = m->vocab * h * (m->tied || m->classifier ? 1 : 2);
  if (m->classifier) emb += h * (m->num_labels > 0 ? m->num_labels : 2);
  double dense = m->dense_layers > 0 && m->dense_layers < m->layers ? m->dense_layers : 0;
  double body = (m->layers - dense) * layer_params(m) +
                dense * (attn_params(m, m->heads) + mlp_params(m, true) + 4 * h);
  if (m->dec_layers > 0) {
    /* encoder-decoder: the decoder's self-attention, cross-attention and FFN */
    ddx_mem_model_t d = *m;
    if (m->dec_intermediate > 0) d.intermediate = m->dec_intermediate;
    double dh = m->dec_heads > 0 ? m->dec_heads : m->heads;
    body += m->dec_layers * (2 * attn_params(&d, dh) + mlp_params(&d, true) + 6 * h);
  }
  return body + emb;
}

static double largest_module(const ddx_mem_model_t *m) {
  if (m->largest_module > 0) return m->largest_module;
  double h = m->hidden, inter = m->intermediate > 0 ? m->intermediate : 4 * h;
  double big = h * inter;
  if (m->vocab * h > big) big = m->vocab * h;
  if (h * h > big) big = h * h;
  return big;
}

/* A number field present in o as zero, negative, fractional or not a
 * number (null is "unset"): its name into bad. */
static bool bad_field(const json_t *o, const char *const *keys, char *bad, size_t cap) {
  for (; *keys; keys++) {
    const json_t *v = json_object_get(o, *keys);
    if (!v || json_is_null(v)) continue;
    double d = json_is_number(v) ? json_number_value(v) : -1;
    if (!(d > 0) || d != floor(d) || d > 1e9) {
      char *t = json_dumps(v, JSON_ENCODE_ANY);
      snprintf(bad, cap, "%s is %.40s", *keys, t ? t : "?");
      free(t);
      return true;
    }
  }
  return false;
}

static bool str_ends(const char *s, const char *suffix) {
  size_t n = strlen(s), k = strlen(suffix);
  return n >= k && !strcmp(s + n - k, suffix);
}

/* What the architecture changes beyond the shared fields (docs/memory.md,
 * "Model configs"): encoder-decoder stacks (T5, BART), Qwen v1's doubled
 * intermediate_size, classification heads, MoE widths; an architecture
 * ddx does not read by name gets a warning, a field that makes no shape
 * an error (warning "!..."). */
static void read_architecture(const json_t *root, const json_t *cfg, ddx_mem_model_t *m) {
  static const char *const shape_keys[] = {"hidden_size",
                                           "n_embd",
                                           "d_model",
                                           "num_hidden_layers",
                                           "n_layer",
                                           "num_layers",
                                           "num_attention_heads",
                                           "n_head",
                                           "num_heads",
                                           "num_key_value_heads",
                                           "intermediate_size",
                                           "vocab_size",
                                           "head_dim",
                                           "d_kv",
                                           "d_ff",
                                           "num_decoder_layers",
                                           "encoder_layers",
                                           "decoder_layers",
                                           NULL};
  char bad[96];
  if (bad_field(cfg, shape_keys, bad, sizeof bad)) {
    snprintf(m->warning, sizeof m->warning, "!%s: not a positive integer, so no shape", bad);
    return;
  }
  const char *mt = json_string_value(json_object_get(cfg, "model_type"));
  if (!mt) mt = json_string_value(json_object_get(root, "model_type"));
  snprintf(m->arch, sizeof m->arch, "%s", mt ? mt : "");
  const json_t *archs = json_object_get(root, "architectures");
  const char *a0 = json_string_value(json_array_get(archs, 0));
  if (a0 && (str_ends(a0, "ForSequenceClassification") || str_ends(a0, "ForTokenClassification") ||
             str_ends(a0, "ForQuestionAnswering"))) {
    /* a score head of num_labels outputs instead of the LM head: no
     * vocabulary logits (reward and value models too) */
    m->classifier = true;
    const json_t *id2 = json_object_get(root, "id2label");
    m->num_labels = json_is_object(id2) ? (double)json_object_size(id2) : 0;
    if (!(m->num_labels > 0)) {
      static const char *const nl[] = {"num_labels", NULL};
      m->num_labels = jnum(root, nl);
    }
    if (!(m->num_labels > 0)) m->num_labels = 2;
  }
  if (!mt) {
    snprintf(m->warning, sizeof m->warning,
             "no model_type: read as a decoder-only transformer; check the parameter count");
    return;
  }
  static const char *const t5[] = {"t5", "mt5", "umt5", "longt5", NULL};
  static const char *const bart[] = {"bart",   "mbart",      "marian",  "pegasus",
                                     "plbart", "blenderbot", "m2m_100", NULL};
  static const char *const known[] = {
      "llama",    "mistral",    "mixtral", "qwen2",    "qwen2_moe",   "qwen3",       "qwen3_moe",
      "qwen",     "gemma",      "gemma2",  "gpt2",     "gpt_neox",    "gptj",        "opt",
      "bloom",    "falcon",     "phi",     "phi3",     "starcoder2",  "gpt_bigcode", "baichuan",
      "internlm", "internlm2",  "yi",      "deepseek", "deepseek_v2", "deepseek_v3", "codegen",
      "stablelm", "olmo",       "olmo2",   "cohere",   "mpt",         "gpt_neo",     "llava",
      "qwen2_vl", "qwen2_5_vl", "mllama",  "bert",     "roberta",     "xlm-roberta", "deberta-v2",
      "granite",  "starcoder",  "aquila",  "chatglm",  "glm",         "glm4",        NULL};
  for (const char *const *k = t5; *k; k++)
    if (!strcmp(mt, *k)) {
      /* T5: num_layers encoder + num_decoder_layers decoder blocks, the
       * attention width heads x d_kv (t5-3b: 32 x 128 = 4096 on d_model
       * 1024), T5LayerNorm (RMS in fp32), softmax(scores.float()) */
      static const char *const dl[] = {"num_decoder_layers", "num_layers", NULL};
      static const char *const dkv[] = {"d_kv", NULL};
      m->dec_layers = jnum(cfg, dl);
      double dk = jnum(cfg, dkv);
      m->head_dim = dk > 0 && m->heads > 0 && dk * m->heads != m->hidden ? dk : 0;
      m->kv_heads = 0;
      m->rms_norm = m->softmax_fp32 = true;
      return;
    }
  for (const char *const *k = bart; *k; k++)
    if (!strcmp(mt, *k)) {
      static const char *const el[] = {"encoder_layers", NULL}, *const dl[] = {"decoder_layers",
                                                                               NULL};
      static const char *const eh[] = {"encoder_attention_heads", NULL},
                               *const dh[] = {"decoder_attention_heads", NULL};
      static const char *const ef[] = {"encoder_ffn_dim", NULL}, *const df[] = {"decoder_ffn_dim",
                                                                                NULL};
      if (jnum(cfg, el) > 0) m->layers = jnum(cfg, el);
      m->dec_layers = jnum(cfg, dl) > 0 ? jnum(cfg, dl) : m->layers;
      if (jnum(cfg, eh) > 0) m->heads = jnum(cfg, eh);
      m->dec_heads = jnum(cfg, dh);
      if (jnum(cfg, ef) > 0) m->intermediate = jnum(cfg, ef);
      m->dec_intermediate = jnum(cfg, df);
      m->kv_heads = 0;
      return;
    }
  if (!strcmp(mt, "qwen")) {
    /* Qwen v1 (QWenMLP): w1 and w2 are hidden x intermediate_size / 2,
     * c_proj intermediate_size / 2 x hidden: a SwiGLU of half the field;
     * RMSNorm (layer_norm_epsilon) */
    if (m->intermediate > 0) m->intermediate /= 2;
    m->gated_mlp = m->rms_norm = m->softmax_fp32 = m->no_dropout = true;
    return;
  }
  static const char *const moe_w[] = {"moe_intermediate_size", NULL};
  if (m->experts > 0) {
    m->moe_intermediate = jnum(cfg, moe_w);
    static const char *const sh[] = {"shared_expert_intermediate_size", NULL};
    static const char *const nsh[] = {"n_shared_experts", NULL};
    static const char *const fk[] = {"first_k_dense_replace", NULL};
    m->shared_intermediate = jnum(cfg, sh);
    if (!(m->shared_intermediate > 0) && jnum(cfg, nsh) > 0)
      m->shared_intermediate = jnum(cfg, nsh) * m->moe_intermediate;
    m->dense_layers = jnum(cfg, fk);
  }
  if (json_object_get(cfg, "kv_lora_rank") && json_is_number(json_object_get(cfg, "kv_lora_rank")))
    snprintf(m->warning, sizeof m->warning,
             "%s: multi-head latent attention counted as plain attention (parameters and "
             "activations approximate; --params sharpens it)",
             mt);
  for (const char *const *k = known; *k; k++)
    if (!strcmp(mt, *k)) return;
  snprintf(m->warning, sizeof m->warning,
           "model_type \"%.40s\" is not one ddx reads by name: read as a decoder-only "
           "transformer; check the parameter count",
           mt);
}

bool ddx_mem_model_from_hf(const char *json, size_t len, ddx_mem_model_t *out, char *how,
                           size_t howcap) {
  memset(out, 0, sizeof *out);
  if (how && howcap) how[0] = 0;
  json_t *root = json_loadb(json, len, 0, NULL);
  if (!json_is_object(root)) {
    json_decref(root);
    return false;
  }
  static const char *const count_keys[] = {"num_parameters", "n_params", "num_params", NULL};
  static const char *const hk[] = {"hidden_size", "n_embd", "d_model", "dim", "n_embed", NULL};
  static const char *const lk[] = {"num_hidden_layers", "n_layer",        "num_layers",
                                   "n_layers",          "encoder_layers", NULL};
  static const char *const vk[] = {"vocab_size", "padded_vocab_size", NULL};
  static const char *const ik[] = {"intermediate_size", "n_inner", "ffn_dim",
                                   "ffn_hidden_size",   "d_ff",    NULL};
  static const char *const ak[] = {"num_attention_heads", "n_head", "num_heads", "n_heads", NULL};
  static const char *const kvk[] = {"num_key_value_heads", "num_kv_heads", "n_kv_heads", NULL};
  static const char *const ek[] = {"num_local_experts", "num_experts", "n_routed_experts", NULL};
  static const char *const etk[] = {"num_experts_per_tok", "moe_top_k", "top_k", NULL};
  static const char *const dropk[] = {"attn_pdrop",
                                      "resid_pdrop",
                                      "attention_dropout",
                                      "hidden_dropout",
                                      "dropout",
                                      "attention_probs_dropout_prob",
                                      "hidden_dropout_prob",
                                      "embd_pdrop",
                                      "dropout_rate",
                                      NULL};
  double given = jnum(root, count_keys);
  const json_t *cfg = root;
  bool ok = false;
  for (int pass = 0; pass < 2 && !ok; pass++) {
    double h = jnum(cfg, hk), l = jnum(cfg, lk);
    if (h > 0 && l > 0) {
      out->hidden = h;
      out->layers = l;
      out->vocab = jnum(cfg, vk);
      out->heads = jnum(cfg, ak);
      out->kv_heads = jnum(cfg, kvk);
      if (json_is_true(json_object_get(cfg, "multi_query"))) out->kv_heads = 1;
      out->intermediate = jnum(cfg, ik);
      static const char *const hdk[] = {"head_dim", "kv_channels", NULL};
      out->head_dim = jnum(cfg, hdk);
      if (out->heads > 0 && out->head_dim * out->heads == h) out->head_dim = 0; /* the usual */
      out->experts = jnum(cfg, ek);
      out->experts_per_token = jnum(cfg, etk);
      const char *act = json_string_value(json_object_get(cfg, "hidden_act"));
      if (!act) act = json_string_value(json_object_get(cfg, "activation_function"));
      if (!act) act = json_string_value(json_object_get(cfg, "hidden_activation"));
      /* gated (3 matrices): SiLU/SwiGLU/GeGLU, Gemma's tanh GELU (not
       * StarCoder's: same name, plain MLP), T5's "gated-gelu" */
      const char *mt = json_string_value(json_object_get(root, "model_type"));
      const char *ffp = json_string_value(json_object_get(cfg, "feed_forward_proj"));
      out->gated_mlp =
          (act && (!strcmp(act, "silu") || !strcmp(act, "swiglu") || !strcmp(act, "geglu") ||
                   (!strncmp(act, "gelu_pytorch_tanh", 17) && mt && strstr(mt, "gemma")))) ||
          (ffp && !strncmp(ffp, "gated", 5));
      json_t *tie = json_object_get(cfg, "tie_word_embeddings");
      if (!tie) tie = json_object_get(root, "tie_word_embeddings");
      /* transformers' default is tied */
      out->tied = !json_is_false(tie);
      out->rms_norm = json_object_get(cfg, "rms_norm_eps") != NULL;
      /* rotary embeddings add nothing per layer: q*cos and rotate_half(q)*sin
       * save only cos and sin (constants shared by every layer) */
      /* dropout: any field above 0 keeps the masks; none present follows
       * the family (Llama-style configs carry none and use none) */
      bool any = false, positive = false;
      for (const char *const *k = dropk; *k; k++) {
        json_t *v = json_object_get(cfg, *k);
        if (json_is_number(v)) any = true, positive |= json_number_value(v) > 0;
      }
      out->no_dropout = any ? !positive : out->rms_norm;
      out->softmax_fp32 = out->rms_norm;
      read_architecture(root, cfg, out);
      if (out->warning[0] == '!') { /* a field that makes no shape */
        if (how) snprintf(how, howcap, "%s", out->warning + 1);
        json_decref(root);
        return false;
      }
      out->params = given;
      if (!(out->params > 0)) out->params = model_params(out);
      if (how) {
        char dec[48] = "";
        if (out->dec_layers > 0) snprintf(dec, sizeof dec, " + %g decoder", out->dec_layers);
        snprintf(how, howcap,
                 "%s%s%s%s: h %g, %g layers%s, %g heads (%g kv), intermediate %g, vocab %g%s%s%s, "
                 "%.3gB parameters",
                 given > 0 ? "num_parameters; shape" : "shape", pass ? " (text_config)" : "",
                 out->arch[0] ? " of " : "", out->arch, out->hidden, out->layers, dec, out->heads,
                 out->kv_heads > 0 ? out->kv_heads : out->heads,
                 out->intermediate > 0 ? out->intermediate : 4 * out->hidden, out->vocab,
                 out->gated_mlp ? ", gated MLP" : "", out->experts > 0 ? ", MoE" : "",
                 out->classifier ? ", classifier head" : "", out->params / 1e9);
      }
      ok = true;
    }
    cfg = json_object_get(root, "text_config");
    if (!json_is_object(cfg)) break;
  }
  if (!ok && given > 0) {
    out->params = given;
    if (how) snprintf(how, howcap, "num_parameters (no shape)");
    ok = true;
  }
  json_decref(root);
  return ok;
}

/* ------------------------------------------------------------ activations */

/* The bytes one transformer layer saves for backward, tensor by tensor
 * (Korthikanti et al. 2022, table 2, generalised; 2-byte activations,
 * 1-byte dropout masks as PyTorch's fused dropout keeps them):
 *
 *   norm before attention and before the MLP, each:
 *     LayerNorm: its input 2sbh (+ mean and rstd, fp32: 8sb);
 *     RMSNorm in Python (HF Llama-family): x.to(float32) saved by pow and
 *       mul 4sbh, rsqrt 4sb, the normalised bf16 tensor saved by weight*x
 *       2sbh: 6sbh (PyTorch 2.x; 1.13's mean also keeps x^2, 4sbh more);
 *   attention: the QKV projection's input 2sbh; Q 2sbh; K and V 2sbh each
 *     scaled by kv_heads/heads (GQA) where the kernel takes them as they
 *     are (FlashAttention), at full width where the math path repeats them
 *     (HF repeat_kv); RoPE adds nothing (q*cos saves cos only); without flash the
 *     softmax output 2as^2b (4as^2b when it is upcast to fp32, then 2as^2b
 *     more for the bf16 copy the product with V saves), with dropout its
 *     mask as^2b and output 2as^2b; with flash the output O (the output
 *     projection's input: the same tensor) and the fp32 log-sum-exp 4asb;
 *     the output projection's input 2sbh; the residual dropout mask sbh;
 *   MLP of width I (4h, or intermediate_size): its input 2sbh; plain:
 *     the activation's input 2sbI and output 2sbI (the second matrix's
 *     input); gated (SwiGLU): gate output 2sbI (silu's input), silu output
 *     and up output 2sbI each (saved by the multiply), the product 2sbI (the
 *     down projection's input); MoE: times the experts per token; the
 *     residual dropout mask sbh.
 *
 * For GPT-style layers (LayerNorm, dropout, 4h GELU MLP, MHA) this sums to
 * the paper's s*b*h*(34 + 5*a*s/h) plus the small fp32 norm statistics.
 * Under tensor parallelism the norms' inputs, the two projections' inputs
 * and the dropout masks after them are replicated (10sbh in the paper),
 * the rest divided by tp; sequence parallelism divides everything. */
double ddx_mem_layer_activation_bytes(const ddx_mem_model_t *m, double s, double b, double tp,
                                      bool sequence_parallel, bool flash, bool checkpointed) {
  double h = m->hidden;
  if (!(h > 0) || !(s > 0) || !(b > 0)) return 0;
  if (!(tp >= 1)) tp = 1;
  double a = m->heads > 0 ? m->heads : h / 64.0;
  double r = m->kv_heads > 0 && m->heads > 0 ? m->kv_heads / m->heads : 1.0;
  double inter = m->intermediate > 0 ? m->intermediate : 4 * h;
  double sbh = s * b * h, sb = s * b;
  /* the attention width a*head_dim (= h unless head_dim says otherwise) */
  double sbq = m->head_dim > 0 && m->heads > 0 ? s * b * m->heads * m->head_dim : sbh;
  if (checkpointed) /* only the layer's input is kept */
    return 2 * sbh / (sequence_parallel ? tp : 1);
  bool drop = !m->no_dropout;
  double rep = 0, part = 0; /* replicated across tp ranks / divided by tp */
  /* norms */
  if (m->rms_norm)
    rep += 2 * (6 * sbh + 4 * sb);
  else
    rep += 2 * (2 * sbh + 8 * sb);
  /* attention */
  rep += 2 * sbh; /* QKV input */
  double kvw = flash ? r : 1.0;
  part += 2 * sbq + 2 * 2 * sbq * kvw; /* Q, K, V as the attention kernel saves them */
  if (flash) {
    part += 4 * a * s * b; /* log-sum-exp; O is the projection's input below */
  } else {
    double ss = a * s * s * b;
    part += (m->softmax_fp32 ? 4 : 2) * ss;
    if (drop)
      part += 3 * ss; /* mask + dropout output */
    else if (m->softmax_fp32)
      part += 2 * ss; /* the bf16 probabilities */
  }
  part += 2 * sbq; /* output projection input */
  if (drop) rep += sbh;
  /* MLP */
  rep += 2 * sbh;
  double mlp = (m->gated_mlp ? 8 : 4) * sb * inter;
  if (m->experts > 0) {
    /* each token through experts_per_token experts of the expert width,
     * and the shared expert */
    double ew = m->moe_intermediate > 0 ? m->moe_intermediate : inter;
    double k = m->experts_per_token > 0 ? m->experts_per_token : 1;
    mlp = (m->gated_mlp ? 8 : 4) * sb * (ew * k + m->shared_intermediate);
  }
  part += mlp;
  if (drop) rep += sbh;
  return (sequence_parallel ? rep / tp : rep) + part / tp;
}

/* ------------------------------------------------------------ estimate */

/* A string cut to cap - 1 bytes, never inside a UTF-8 sequence. */
static void copy_trunc(char *dst, size_t cap, const char *src) {
  size_t n = strlen(src);
  if (n >= cap) {
    n = cap - 1;
    while (n > 0 && ((unsigned char)src[n] & 0xC0) == 0x80)
      n--;
  }
  memcpy(dst, src, n);
  dst[n] = 0;
}

static void add_term(ddx_mem_estimate_t *e, ddx_mem_group_t g, ddx_mem_phase_t ph, const char *what,
                     const char *formula, double lo, double hi, bool cpu) {
  if (e->nterms == DDX_MEM_MAX_TERMS) return;
  if (hi < lo) {
    double t = hi;
    hi = lo, lo = t;
  }
  ddx_mem_term_t *t = &e->terms[e->nterms++];
  copy_trunc(t->what, sizeof t->what, what);
  copy_trunc(t->formula, sizeof t->formula, formula);
  t->lo = lo;
  t->hi = hi;
  t->group = g;
  t->phase = ph;
  t->cpu = cpu;
}

/* The copy a reduce collective makes of a full bucket (issue 29): stage
 * 1-2's average_tensor -> allreduce_bucket does self.flatten(bucket), and
 * stage 3's __avg_scatter_grads -> reduce_scatter_coalesced torch.cat()s
 * the bucket's gradients, while the bucket itself is alive. A parameter
 * larger than the bucket is reduced alone (extra_large_param_to_reduce),
 * so the copy is max(bucket, largest module), never more than the
 * trainable parameters T: gb x min(T, max(rbs, largest)). Transient, in
 * the backward. */
static void reduce_flat_copy(ddx_mem_estimate_t *out, double rbs, const ddx_mem_model_t *m,
                             double T, double gb, char *f, size_t cap) {
  double big = m->hidden > 0 || m->largest_module > 0 ? largest_module(m) : 0;
  double n = rbs > big ? rbs : big;
  if (n > T) n = T;
  if (n <= 0) return;
  snprintf(f, cap, "min(T, max(%.3g, largest)) x %g", rbs, gb);
  add_term(out, DDX_MEM_BUFFERS, DDX_MEM_PHASE_FWDBWD, "flattened bucket (reduce collective)", f,
           n * gb, n * gb, false);
}

static void add_missing(ddx_mem_estimate_t *e, const char *what) {
  size_t n = strlen(e->missing);
  snprintf(e->missing + n, sizeof e->missing - n, "%s%s", n ? ", " : "", what);
}

/* The optimizer as it runs on the GPU: the bytes of state per trainable
 * parameter beyond the weights and gradients (the fp32 master copy, 4 with
 * mixed precision, is added by the caller) and the temporaries its step
 * allocates per parameter of the unit it steps at once (docs/memory.md,
 * "The optimizer step"). */
typedef struct {
  const char *name;
  double states;           /* bytes per trainable parameter */
  double temp_lo, temp_hi; /* bytes per parameter of the stepped unit */
  bool assumed;            /* not said by the config nor by --optim */
} opt_kind_t;

static void lower(char *t, size_t cap, const char *s) {
  size_t i = 0;
  for (; s[i] && i + 1 < cap; i++)
    t[i] = (char)(s[i] >= 'A' && s[i] <= 'Z' ? s[i] + 32 : s[i]);
  t[i] = 0;
}

/* DeepSpeed builds the optimizer of an `optimizer` block itself: Adam and
 * AdamW are FusedAdam (one multi-tensor kernel, no temporaries) unless
 * "torch_adam": true; Lamb FusedLamb; Lion FusedLion; 8-bit types
 * bitsandbytes' kernels. Without the block the client's optimizer runs
 * (the HF Trainer's --optim; default adamw_torch: torch.optim.AdamW, whose
 * foreach step (torch >= 2.0 on CUDA) allocates exp_avg_sq.sqrt() once per
 * parameter: 4 bytes; adamw_hf's p.add(p * -lr*wd) and denom 4 .. 8). */
static opt_kind_t optimizer_kind(const json_t *config, const char *optim) {
  const json_t *opt = json_object_get(config, "optimizer");
  const char *type = json_string_value(json_object_get(opt, "type"));
  char t[48];
  if (type) {
    lower(t, sizeof t, type);
    bool torch_adam = json_is_true(cfg_at(opt, "params.torch_adam"));
    if (strstr(t, "8bit") || strstr(t, "bnb")) return (opt_kind_t){"8bit-adam", 2, 0, 0, false};
    if (strstr(t, "sgd")) {
      double mom = num_or(cfg_at(opt, "params.momentum"), 0);
      return (opt_kind_t){"sgd", mom > 0 ? 4 : 0, 0, 4, false};
    }
    if (strstr(t, "adagrad")) return (opt_kind_t){"adagrad", 4, 4, 4, false};
    if (strstr(t, "lion")) return (opt_kind_t){"lion", 4, 0, 0, false};
    if (strstr(t, "lamb")) return (opt_kind_t){"lamb", 8, 0, 0, false};
    if (strstr(t, "adamw"))
      return (opt_kind_t){"adamw", 8, torch_adam ? 4 : 0, torch_adam ? 4 : 0, false};
    if (strstr(t, "adam"))
      return (opt_kind_t){"adam", 8, torch_adam ? 4 : 0, torch_adam ? 4 : 0, false};
    return (opt_kind_t){"unknown", 8, 0, 4, true};
  }
  lower(t, sizeof t, optim ? optim : "adamw_torch");
  if (strstr(t, "8bit") && strstr(t, "lion")) return (opt_kind_t){"lion-8bit", 1, 0, 0, false};
  if (strstr(t, "8bit")) return (opt_kind_t){"8bit-adam", 2, 0, 0, false};
  if (strstr(t, "lion")) return (opt_kind_t){"lion", 4, 0, 0, false};
  if (strstr(t, "adafactor")) /* factored second moment: rows + columns */
    return (opt_kind_t){"adafactor", 0, 4, 8, false};
  if (strstr(t, "sgd")) return (opt_kind_t){"sgd", 0, 0, 0, false};
  if (strstr(t, "fused") || strstr(t, "apex") || strstr(t, "paged") || strstr(t, "bnb"))
    return (opt_kind_t){"adamw (fused)", 8, 0, 0, false};
  if (!strcmp(t, "adamw_hf")) return (opt_kind_t){"adamw (hf)", 8, 4, 8, false};
  return (opt_kind_t){"adamw (torch)", 8, 4, 4, !optim};
}

/* Known --optim values (the HF Trainer's OptimizerNames that ddx models). */
bool ddx_mem_optim_known(const char *optim) {
  static const char *const names[] = {"adamw_torch",
                                      "adamw_torch_fused",
                                      "adamw_hf",
                                      "adamw_apex_fused",
                                      "adamw_bnb_8bit",
                                      "adamw_8bit",
                                      "paged_adamw_8bit",
                                      "paged_adamw_32bit",
                                      "adamw_anyprecision",
                                      "adafactor",
                                      "sgd",
                                      "lion_32bit",
                                      "lion_8bit",
                                      "paged_lion_32bit",
                                      "paged_lion_8bit",
                                      "adamw_torch_xla",
                                      "adamw_torch_npu_fused",
                                      NULL};
  for (const char *const *n = names; *n; n++)
    if (!strcmp(optim, *n)) return true;
  return false;
}

static void fmt_coef(char *out, size_t cap, double c, const char *suffix) {
  snprintf(out, cap, "%g%s", c, suffix);
}

/* Cross-attention of an encoder-decoder's decoder layer (T5, BART): its
 * norm, Q at the decoder length, K and V of the encoder output, the
 * scores a x s_dec x s_enc (fp32 softmax where the model upcasts, dropout
 * mask and output), the output projection's input and the residual
 * dropout mask; divided by tp like the self-attention. */
static double cross_attn_bytes(const ddx_mem_model_t *m, double sd, double se, double b, double tp,
                               bool flash) {
  double h = m->hidden, a = m->dec_heads > 0 ? m->dec_heads : m->heads > 0 ? m->heads : h / 64;
  double hq = m->head_dim > 0 ? a * m->head_dim : h;
  bool drop = !m->no_dropout;
  double rep = (m->rms_norm ? 6 : 2) * sd * b * h + 2 * sd * b * h;      /* norm, Q input */
  double part = 2 * sd * b * hq + 2 * 2 * se * b * hq + 2 * sd * b * hq; /* Q, K, V, out in */
  if (flash) {
    part += 4 * a * sd * b;
  } else {
    double ss = a * sd * se * b;
    part += (m->softmax_fp32 ? 6 : 2) * ss + (drop ? 3 * ss : 0);
  }
  if (drop) rep += sd * b * h;
  return rep + part / tp;
}

int ddx_mem_estimate(const json_t *config, const ddx_mem_inputs_t *in, ddx_mem_estimate_t *out,
                     ddx_error_t *err) {
  memset(out, 0, sizeof *out);
  out->precision = "fp32";
  out->optimizer = "unknown";
  out->offload_optimizer = out->offload_param = "none";
  out->peak_phase = "forward/backward";
  if (!json_is_object(config))
    return ddx_error_set(err, DDX_EINVAL, "the DeepSpeed config is not a JSON object");
  ddx_mem_inputs_t dflt = {0};
  if (!in) in = &dflt;
  const ddx_mem_model_t *m = &in->model;
  out->gpu_bytes = in->gpu_bytes > 0 ? in->gpu_bytes : 0;
  double P = model_params(m);
  const json_t *z = json_object_get(config, "zero_optimization");

  /* --- the config as read */
  int stage = 0;
  if (json_is_true(z)) {
    stage = 1; /* the deprecated boolean: DeepSpeed reads true as stage 1 */
  } else {
    const json_t *st = json_object_get(z, "stage");
    double stv = json_is_number(st) ? json_number_value(st) : num_or(st, 0);
    stage = stv >= 0 && stv <= 3 ? (int)stv : 0;
    if (is_auto(st)) add_missing(out, "ZeRO stage (\"auto\": 0 assumed)");
  }
  out->stage = stage;
  const json_t *fp16 = json_object_get(config, "fp16"), *bf16 = json_object_get(config, "bf16");
  if (!bf16) bf16 = json_object_get(config, "bfloat16");
  bool b_on = enabled(bf16), f_on = enabled(fp16) || enabled(json_object_get(config, "amp"));
  bool b_auto = is_auto(json_object_get(bf16, "enabled"));
  bool f_auto = is_auto(json_object_get(fp16, "enabled"));
  bool mixed = b_on || f_on || b_auto || f_auto;
  out->precision = b_on ? "bf16" : f_on ? "fp16" : b_auto ? "bf16" : f_auto ? "fp16" : "fp32";
  if (!b_on && !f_on && (b_auto || f_auto))
    add_missing(out, "precision (\"auto\": 16-bit assumed)");
  opt_kind_t ok = optimizer_kind(config, in->optim);
  out->optimizer = ok.name;
  if (ok.assumed)
    add_missing(out, json_object_get(config, "optimizer")
                         ? "optimizer (unknown type: Adam's states assumed)"
                         : "optimizer (no optimizer block: the HF Trainer's adamw_torch assumed)");
  const json_t *oo = json_object_get(z, "offload_optimizer");
  const json_t *op = json_object_get(z, "offload_param");
  if (!oo && json_is_true(json_object_get(z, "cpu_offload"))) oo = json_true();
  if (!op && json_is_true(json_object_get(z, "cpu_offload_params"))) op = json_true();
  bool off_opt = stage >= 1 && strcmp(offload_device(oo), "none");
  bool off_param = stage == 3 && strcmp(offload_device(op), "none");
  out->offload_optimizer = off_opt ? offload_device(oo) : "none";
  out->offload_param = off_param ? offload_device(op) : "none";

  int64_t tp = in->tp > 0 ? in->tp : 1, pp = in->pp > 0 ? in->pp : 1, sp = in->sp > 0 ? in->sp : 1;
  int64_t dp = 1;
  if (in->world_size > 0) {
    /* sequence-parallel ranks (Megatron's tp group, DeepSpeed-Ulysses'
     * group) stay inside ZeRO's data-parallel partitioning */
    dp = in->world_size / (tp * pp);
    if (dp < 1) dp = 1;
  } else if (stage > 0) {
    add_missing(out, "world size (N = 1 assumed)");
  }
  out->dp = dp;
  double N = (double)dp;

  /* micro batch: the config's number, else the input, else derived */
  const json_t *mbv = json_object_get(config, "train_micro_batch_size_per_gpu");
  double mb = json_is_number(mbv) ? json_number_value(mbv) : 0;
  if (!(mb > 0) && in->micro_batch > 0) mb = in->micro_batch;
  if (!(mb > 0)) {
    double tb = num_or(json_object_get(config, "train_batch_size"), 0);
    double gas = num_or(json_object_get(config, "gradient_accumulation_steps"), 0);
    if (tb > 0 && gas > 0 && in->world_size > 0) mb = floor(tb / (gas * N));
    if (mb < 1) mb = 0;
  }
  out->micro_batch = mb;
  out->seq_len = in->seq_len > 0 ? in->seq_len : 0;
  {
    size_t n = 0;
    const char *src[3] = {in->model_from, in->world_from, in->gpu_from};
    static const char *const lab[3] = {"model", "world size", "GPU memory"};
    for (int i = 0; i < 3; i++)
      if (src[i] && *src[i] && n < sizeof out->sources)
        n += (size_t)snprintf(out->sources + n, sizeof out->sources - n, "%s%s from %s",
                              n ? "; " : "", lab[i], src[i]);
  }

  if (!(P > 0)) {
    add_missing(out, "model (config.json or the parameter count)");
    out->verdict = DDX_MEM_UNKNOWN;
    return 0;
  }
  out->valid = true;

  /* DeepSpeed's own estimators (estimate_zero2/3_model_states_mem_needs,
   * all live) for the same config: shown beside ddx's terms */
  {
    double lg = m->largest_module > 0 ? m->largest_module : (m->hidden > 0 ? largest_module(m) : 0);
    if (stage == 2)
      out->ds_estimate = off_opt ? 2 * P : 4 * P + floor(16 * P / N);
    else if (stage == 3)
      out->ds_estimate = 4 * lg + (off_param && off_opt ? 0
                                   : off_opt            ? floor(2 * P / N)
                                                        : floor(18 * P / N));
  }

  /* --- model states, per rank: P over tp x pp, partitioned over N; the
   * gradients and optimizer states only for the trainable parameters */
  double Pr = P / (double)(tp * pp);
  double Ptr = in->trainable > 0 && in->trainable < P ? in->trainable / (double)(tp * pp) : Pr;
  bool frozen = Ptr < Pr;
  const char *T = frozen ? "T" : "P"; /* formula letter of the trainable count */
  double wb = mixed ? 2 : 4, gb = mixed ? 2 : 4;
  double master = mixed ? 4 : 0, K = master + ok.states;
  char f[160], what[96];
  const char *prec = mixed ? out->precision : "fp32";
  double ratio = 1.0;
  if (off_opt && stage == 3) {
    ratio = num_or(json_object_get(oo, "ratio"), 1.0);
    if (ratio < 0) ratio = 0;
    if (ratio > 1) ratio = 1;
  }
  const ddx_mem_phase_t ALL = DDX_MEM_PHASE_ALL, FB = DDX_MEM_PHASE_FWDBWD,
                        STEP = DDX_MEM_PHASE_STEP;
  /* weights (frozen ones too) */
  snprintf(what, sizeof what, "%s weights", prec);
  if (stage < 3) {
    fmt_coef(f, sizeof f, wb, "P");
    add_term(out, DDX_MEM_MODEL_STATES, ALL, what, f, wb * Pr, wb * Pr, false);
  } else {
    fmt_coef(f, sizeof f, wb, "P/N");
    add_term(out, DDX_MEM_MODEL_STATES, ALL, what, f, wb * Pr / N, wb * Pr / N, off_param);
  }
  /* gradients: stage 0-1 whole; stage 2 the flat partition buffer
   * (grads_in_partition: each bucket's reduced gradients are copied there
   * and the rest freed); stage 3 the partition */
  snprintf(what, sizeof what, "%s gradients", prec);
  char tf[16];
  if (stage < 2) {
    /* stage 1: cast and freed at the step like stage 2's (below) */
    fmt_coef(f, sizeof f, gb, T);
    add_term(out, DDX_MEM_MODEL_STATES, stage == 1 && !off_opt ? FB : ALL, what, f, gb * Ptr,
             gb * Ptr, false);
  } else if (stage == 2) {
    /* the partition (grads_in_partition): its views become
     * averaged_gradients, flattened and cast to fp32 at the step, then
     * freed (below) */
    snprintf(tf, sizeof tf, "%s/N", T);
    fmt_coef(f, sizeof f, gb, tf);
    add_term(out, DDX_MEM_MODEL_STATES, off_opt ? ALL : FB, what, f, gb * Ptr / N, gb * Ptr / N,
             off_opt);
  } else {
    snprintf(tf, sizeof tf, "%s/N", T);
    fmt_coef(f, sizeof f, gb, tf);
    add_term(out, DDX_MEM_MODEL_STATES, ALL, what, f, gb * Ptr / N, gb * Ptr / N, off_opt);
  }
  /* optimizer states (with the fp32 master copy) */
  if (mixed)
    snprintf(what, sizeof what, "fp32 master + %s states", out->optimizer);
  else
    snprintf(what, sizeof what, "%s states", out->optimizer);
  if (K > 0) {
    if (stage == 0) {
      fmt_coef(f, sizeof f, K, T);
      add_term(out, DDX_MEM_MODEL_STATES, ALL, what, f, K * Ptr, K * Ptr, false);
    } else if (off_opt && ratio < 1.0) {
      snprintf(f, sizeof f, "%g%s/N x %.2f", K, T, 1.0 - ratio);
      add_term(out, DDX_MEM_MODEL_STATES, ALL, what, f, K * Ptr / N * (1 - ratio),
               K * Ptr / N * (1 - ratio), false);
      snprintf(f, sizeof f, "%g%s/N x %.2f", K, T, ratio);
      add_term(out, DDX_MEM_MODEL_STATES, ALL, what, f, K * Ptr / N * ratio, K * Ptr / N * ratio,
               true);
    } else {
      snprintf(f, sizeof f, "%g%s/N", K, T);
      add_term(out, DDX_MEM_MODEL_STATES, ALL, what, f, K * Ptr / N, K * Ptr / N, off_opt);
    }
  }
  /* bf16 without ZeRO: BF16_Optimizer keeps fp32 gradient accumulators */
  if (stage == 0 && b_on) {
    snprintf(f, sizeof f, "4%s", T);
    add_term(out, DDX_MEM_STEP, ALL, "fp32 gradient accumulators (BF16_Optimizer)", f, 4 * Ptr,
             4 * Ptr, false);
  }
  /* frozen copies of the model in the same process (DPO's reference
   * model): 16-bit weights, partitioned under ZeRO-3 */
  if (in->ref_models > 0) {
    double r = (double)in->ref_models, w = (mixed ? 2 : 4) * Pr / (stage == 3 ? N : 1);
    snprintf(f, sizeof f, "%d x %g%s", in->ref_models, mixed ? 2.0 : 4.0, stage == 3 ? "P/N" : "P");
    add_term(out, DDX_MEM_MODEL_STATES, ALL, "frozen reference model weights", f, r * w, r * w,
             off_param);
  }

  /* --- the optimizer step: the fp32 gradient of the unit stepped at once
   * (stage 1-2: the rank's partition of a parameter group, flattened and
   * cast to fp32 before _optimizer_step; stage 3: one sub group of
   * sub_group_size; stage 0 fp16: FP16_Optimizer's flat fp32 gradients)
   * and the optimizer's temporaries on it */
  double unit = stage == 0 ? Ptr : Ptr / N;
  if (stage == 3) {
    double sgs = num_or(json_object_get(z, "sub_group_size"), 1e9);
    if (sgs > 0 && sgs < unit) unit = sgs;
  }
  bool step_on_gpu = !off_opt;
  bool fp32_copy = step_on_gpu && (stage > 0 || f_on);
  if (fp32_copy) {
    snprintf(f, sizeof f,
             stage == 0   ? "4%s"
             : stage == 3 ? "4 x min(sub_group, %s/N)"
                          : "4%s/N",
             T);
    add_term(out, DDX_MEM_STEP, STEP, "fp32 gradient partition (optimizer step)", f, 4 * unit,
             4 * unit, false);
  }
  /* while it is cast: the 16-bit gradients and their flattened copy
   * (_flatten_dense_tensors of the list: torch.cat); stage 1-2 free their
   * 16-bit gradients right after the cast (free_grad_in_param_list,
   * averaged_gradients = None), so the optimizer's temporaries reuse that
   * room; stage 3 keeps its gradient buffer and frees only the copy */
  double cast = 0;
  if (fp32_copy) {
    cast = stage == 1 || stage == 2 ? 2 * unit + gb * unit : gb * unit;
    snprintf(f, sizeof f, stage == 1 || stage == 2 ? "(2 + 2)%s/N" : "2 x the stepped unit", T);
    add_term(out, DDX_MEM_STEP, STEP,
             stage == 1 || stage == 2 ? "16-bit gradients + flat copy (cast at the step)"
                                      : "flat 16-bit copy (cast at the step)",
             f, cast, cast, false);
  }
  if (step_on_gpu && ok.temp_hi > 0) {
    double tlo = fmax(0, ok.temp_lo * unit - cast), thi = fmax(0, ok.temp_hi * unit - cast);
    if (ok.temp_lo == ok.temp_hi)
      snprintf(f, sizeof f, "%g x the stepped unit%s", ok.temp_hi, cast > 0 ? " - the cast" : "");
    else
      snprintf(f, sizeof f, "%g .. %g x the stepped unit%s", ok.temp_lo, ok.temp_hi,
               cast > 0 ? " - the cast" : "");
    if (thi > 0)
      add_term(out, DDX_MEM_STEP, STEP, "optimizer temporaries (beyond the cast's room)", f, tlo,
               thi, false);
  }

  /* --- buffers */
  double h = m->hidden;
  double rbs_auto = h > 0 ? h * h : 5e8;
  const json_t *rbv = json_object_get(z, "reduce_bucket_size");
  double rbs = is_auto(rbv) ? rbs_auto : fmax(0, num_or(rbv, 5e8));
  const json_t *ocv = json_object_get(z, "overlap_comm");
  bool overlap = ocv ? json_is_true(ocv) : stage == 3;
  if (stage == 0 && in->world_size != 1) {
    /* the engine's flattened allreduce buffer (MEMORY_OPT_ALLREDUCE_SIZE 5e8) */
    double ar = Ptr < 5e8 ? Ptr : 5e8;
    add_term(out, DDX_MEM_BUFFERS, FB, "allreduce buffer", "min(P, 5e8) x 2", 0, ar * gb, false);
  } else if (stage == 1 || stage == 2) {
    /* the ipg bucket (contiguous_gradients, the default: an empty tensor
     * of reduce_bucket_size elements, two with overlap_comm); the
     * allgather of the updated 16-bit partitions in the step */
    const json_t *cgv = json_object_get(z, "contiguous_gradients");
    bool contig = cgv ? json_is_true(cgv) : true;
    double ipg = contig ? rbs * gb * (overlap ? 2 : 1) : 0;
    snprintf(f, sizeof f, "%.3g x %g%s", rbs, gb, overlap ? " x 2 (overlap_comm)" : "");
    add_term(out, DDX_MEM_BUFFERS, FB, "reduce bucket (ipg buffer)", f, ipg, ipg, false);
    reduce_flat_copy(out, rbs, m, Ptr, gb, f, sizeof f);
  } else if (stage == 3) {
    double lo = rbs * gb * (overlap ? 2 : 1);
    snprintf(f, sizeof f, "%.3g x %g%s", rbs, gb, overlap ? " x 2" : "");
    add_term(out, DDX_MEM_BUFFERS, FB, "reduce bucket", f, lo, lo, false);
    reduce_flat_copy(out, rbs, m, Ptr, gb, f, sizeof f);
    /* gathered parameters: the largest module and its gradient at least
     * (DeepSpeed's 4 x largest layer), up to a layer plus the prefetch
     * bucket, bounded by stage3_max_live_parameters and P */
    const json_t *pfv = json_object_get(z, "stage3_prefetch_bucket_size");
    if (!pfv) pfv = json_object_get(z, "prefetch_bucket_size");
    double pf = is_auto(pfv) ? (h > 0 ? 0.9 * h * h : 5e7) : fmax(0, num_or(pfv, 5e7));
    const json_t *mlv = json_object_get(z, "stage3_max_live_parameters");
    if (!mlv) mlv = json_object_get(z, "max_live_parameters");
    double live = fmax(0, num_or(mlv, 1e9));
    bool shape = h > 0 || m->largest_module > 0;
    double big = shape ? largest_module(m) / (double)tp : 0;
    double layer = h > 0 ? layer_params(m) / (double)tp : 0;
    if (big > Pr) big = Pr;
    double span = layer + pf;
    if (span > live) span = live;
    if (span > Pr) span = Pr;
    if (span < big) span = big;
    if (shape) {
      snprintf(f, sizeof f, "4 x largest + 0..2 x (layer + %.3g) <= %.3g", pf, live);
      add_term(out, DDX_MEM_BUFFERS, FB, "gathered 16-bit params (ZeRO-3)", f, 4 * big,
               4 * big + 2 * span, false);
    } else {
      double g = live < Pr ? live : Pr;
      snprintf(f, sizeof f, "0 .. 2 x min(%.3g, P)", live);
      add_term(out, DDX_MEM_BUFFERS, FB, "gathered 16-bit params (ZeRO-3)", f, 0, 2 * g, false);
      add_missing(out, "largest layer");
    }
    /* persistent small parameters: every module below the threshold */
    const json_t *ptv = json_object_get(z, "stage3_param_persistence_threshold");
    if (!ptv) ptv = json_object_get(z, "param_persistence_threshold");
    double thr = is_auto(ptv) ? (h > 0 ? 10 * h : 1e5) : num_or(ptv, 1e5);
    if (h > 0 && m->layers > 0) {
      double a = m->heads > 0 ? m->heads : 1, kv = m->kv_heads > 0 ? m->kv_heads : a;
      double inter = m->intermediate > 0 ? m->intermediate : 4 * h;
      double mods[] = {h,
                       h,
                       h * h,
                       h * h * kv / a,
                       h * h * kv / a,
                       h * h,
                       h * inter,
                       h * inter,
                       m->gated_mlp ? h * inter : 0};
      double keep = 0;
      for (size_t i = 0; i < sizeof mods / sizeof mods[0]; i++)
        if (mods[i] > 0 && mods[i] < thr) keep += mods[i];
      keep = keep * (m->layers + m->dec_layers) / (double)(tp * pp) + (h < thr ? h : 0);
      if (keep > 0) {
        snprintf(f, sizeof f, "modules < %.3g params, x 2", thr);
        add_term(out, DDX_MEM_BUFFERS, ALL, "persistent params (ZeRO-3)", f, keep * 2, keep * 2,
                 false);
      }
    }
  }

  /* --- activations (the forward/backward phase) */
  /* an unknown micro batch ("auto" with no input) is counted as 1: a
   * lower bound, so no verdict but OOM */
  bool have_act = m->hidden > 0 && m->layers > 0 && out->seq_len > 0 && mb > 0;
  if (!(m->hidden > 0 && m->layers > 0)) add_missing(out, "model shape");
  if (!(out->seq_len > 0)) add_missing(out, "sequence length");
  if (!(mb > 0)) add_missing(out, "micro batch (\"auto\": 1 counted)");
  if (m->hidden > 0 && m->layers > 0 && out->seq_len > 0) {
    double s = out->seq_len;
    double sd = m->dec_layers > 0 && in->target_len > 0 ? in->target_len : s;
    if (!(mb > 0)) mb = 1;
    /* 1F1B keeps pp micro batches in flight on the first stage (fewer when
     * there are fewer accumulation steps) */
    double inflight = (double)pp;
    double gas = num_or(json_object_get(config, "gradient_accumulation_steps"), 0);
    if (pp > 1 && gas >= 1 && gas < inflight) inflight = gas;
    bool seqp = sp > 1;
    /* Megatron's sequence parallel is the tp group (sp == tp); Ulysses
     * splits the sequence over its own sp ranks */
    double tpd = (double)tp * (seqp && sp != tp ? (double)sp : 1.0);
    int ck = in->checkpointing;
    /* the ds_config's activation_checkpointing block configures
     * deepspeed.checkpointing, which only Megatron-DeepSpeed-style code
     * calls; it never switches checkpointing on in a HF model */
    const json_t *ac = json_object_get(config, "activation_checkpointing");
    bool cpu_ckpt = json_is_true(json_object_get(ac, "cpu_checkpointing"));
    bool part_act = json_is_true(json_object_get(ac, "partition_activations"));
    int fl = in->flash_attention;
    double scale = mixed ? 1 : 2; /* fp32 activations */
    /* the stacks: decoder-only, or encoder (s) + decoder (sd, with
     * cross-attention) */
    double L[2] = {m->layers / (double)pp, m->dec_layers / (double)pp};
    double S[2] = {s, sd};
    double full_lo = 0, full_hi = 0, one_lo = 1e300, one_hi = 0, ck_sum = 0, ck_one = 0;
    for (int k = 0; k < 2; k++) {
      if (!(L[k] > 0)) continue;
      ddx_mem_model_t mk = *m;
      if (k == 1) {
        if (m->dec_heads > 0) mk.heads = m->dec_heads;
        if (m->dec_intermediate > 0) mk.intermediate = m->dec_intermediate;
      }
      double lo = 1e300, hi = 0;
      for (int fa = 0; fa < 2; fa++) {
        if (fl >= 0 && fa != fl) continue;
        double v = ddx_mem_layer_activation_bytes(&mk, S[k], mb, tpd, seqp, fa || ck == 2, false);
        if (k == 1) v += cross_attn_bytes(m, sd, s, mb, tpd, fa || ck == 2);
        v *= scale;
        if (v < lo) lo = v;
        if (v > hi) hi = v;
      }
      full_lo += lo * L[k];
      full_hi += hi * L[k];
      if (lo < one_lo) one_lo = lo;
      if (hi > one_hi) one_hi = hi;
      double c = ddx_mem_layer_activation_bytes(&mk, S[k], mb, tpd, seqp, false, true) * scale;
      if (part_act && tp > 1 && !seqp) c /= tpd;
      ck_sum += c * L[k];
      if (c > ck_one) ck_one = c;
    }
    const char *fl_txt = fl == 1 ? "flash" : fl == 0 ? "math attention" : "flash or math";
    double Ltot = L[0] + L[1];
    if (ck == 1 || ck < 0) {
      /* checkpointed: each layer's input, plus one layer recomputed */
      snprintf(f, sizeof f, "2sbh x %g layers x %g", Ltot, inflight);
      add_term(out, DDX_MEM_ACTIVATIONS, FB, "checkpointed layer inputs", f, ck_sum * inflight,
               ck_sum * inflight, cpu_ckpt && ck == 1);
      snprintf(f, sizeof f, "1 layer (%s)", fl_txt);
      if (ck == 1)
        add_term(out, DDX_MEM_ACTIVATIONS, FB, "one layer recomputed in backward", f, one_lo,
                 one_hi, false);
    }
    if (ck == 0 || ck == 2 || ck < 0) {
      double lo = full_lo * inflight, hi = full_hi * inflight;
      if (ck < 0) {
        /* unknown: from checkpointed (one layer recomputed) to none */
        lo = one_lo;
        hi = hi - ck_sum * inflight;
        snprintf(f, sizeof f, "1 .. %g layers (%s; checkpointing?)", Ltot * inflight, fl_txt);
      } else {
        snprintf(f, sizeof f, "%g layers x %g (%s%s)", Ltot, inflight, fl_txt,
                 ck == 2 ? ", selective recompute" : "");
      }
      add_term(out, DDX_MEM_ACTIVATIONS, FB, "layer activations", f, lo, hi, false);
    }
    if (ck < 0) add_missing(out, "checkpointing (yes/no)");
    if (fl < 0) add_missing(out, "flash attention (yes/no)");
    if (ac && (part_act || cpu_ckpt) && ck < 0)
      add_missing(out, "activation_checkpointing in the ds_config is Megatron-DeepSpeed's: a HF "
                       "model needs --gradient_checkpointing (say --checkpointing)");
    /* logits on the last stage, at the loss: the 16-bit logits while the
     * model's output holds them, and three fp32 b x s x V tensors (forward:
     * logits.float(), the shifted copy or the kept logits, log_softmax's
     * output; backward: the saved log-softmax, the loss gradient and
     * log_softmax's gradient) */
    double bsv = 0;
    if (m->classifier) {
      bsv = 0;
    } else if (m->vocab > 0) {
      bsv = mb * sd * m->vocab / tpd;
      double lb = mixed ? 2 : 4;
      snprintf(f, sizeof f, "bsV x (12 .. %g)", 12 + lb);
      add_term(out, DDX_MEM_LOGITS, FB, "logits + fp32 loss copies", f, bsv * 12, bsv * (12 + lb),
               false);
    } else {
      add_missing(out, "vocab size");
    }
    /* eager attention's backward: grad of the probabilities, the fp32
     * grad through the upcast and softmax's fp32 gradient of the scores,
     * a x s x s each, for the layer being differentiated; after the
     * logits' gradients are freed, so only what exceeds them counts */
    if (fl != 1 && ck != 2) {
      double a = m->heads > 0 ? m->heads : m->hidden / 64.0;
      double smax = s > sd ? s : sd;
      double scr = (m->softmax_fp32 ? 8 : 4) * a * smax * smax * mb / tpd * scale;
      double extra = scr - bsv * 12;
      if (extra > 0)
        add_term(out, DDX_MEM_ACTIVATIONS, FB, "eager attention backward (beyond logits)",
                 m->softmax_fp32 ? "8as^2b - logits" : "4as^2b - logits", fl == 0 ? extra : 0,
                 extra, false);
    }
  }

  /* --- the peak: resident terms + the larger of the two phases, then the
   * allocator's reserve and the CUDA context */
  double res[2] = {0, 0}, ph1[2] = {0, 0}, ph2[2] = {0, 0};
  out->cpu_bytes = 0;
  for (size_t i = 0; i < out->nterms; i++) {
    const ddx_mem_term_t *t = &out->terms[i];
    if (t->cpu) {
      out->cpu_bytes += t->hi;
      continue;
    }
    double *acc = t->phase == DDX_MEM_PHASE_STEP ? ph2 : t->phase == FB ? ph1 : res;
    acc[0] += t->lo;
    acc[1] += t->hi;
  }
  out->alloc_lo = res[0] + fmax(ph1[0], ph2[0]);
  out->alloc_hi = res[1] + fmax(ph1[1], ph2[1]);
  out->peak_phase = ph2[1] > ph1[1] ? "optimizer step" : "forward/backward";
  double rf_lo = 0, rf_hi = 0.05;
  if (in->reserve_fraction > 0) rf_lo = rf_hi = in->reserve_fraction;
  snprintf(f, sizeof f, "%g .. %g%% of the allocated peak", rf_lo * 100, rf_hi * 100);
  if (rf_lo == rf_hi) snprintf(f, sizeof f, "%g%% of the allocated peak", rf_hi * 100);
  add_term(out, DDX_MEM_RUNTIME, ALL, "allocator reserve (fragmentation)", f, out->alloc_lo * rf_lo,
           out->alloc_hi * rf_hi, false);
  out->reserved_lo = out->alloc_lo * (1 + rf_lo);
  out->reserved_hi = out->alloc_hi * (1 + rf_hi);
  double ctx_lo = 0.5 * GIB, ctx_hi = 1.0 * GIB;
  if (in->cuda_context_bytes > 0) ctx_lo = ctx_hi = in->cuda_context_bytes;
  add_term(out, DDX_MEM_RUNTIME, ALL, "CUDA context + kernels",
           in->cuda_context_bytes > 0 ? "given" : "0.5 .. 1 GiB", ctx_lo, ctx_hi, false);
  /* NCCL's buffers, outside PyTorch's allocator (issue 29): per channel
   * and connection NCCL allocates one buffer per protocol (init.cc:
   * Simple DEFAULT_BUFFSIZE 4 MiB; LL128 NCCL_LL128_ELEMS_PER_THREAD 120 x
   * NCCL_LL128_MAX_NTHREADS 640 x NCCL_STEPS 8 x 8 B; LL
   * NCCL_LL_LINES_PER_THREAD 8 x NCCL_LL_MAX_NTHREADS 512 x 8 x 16 B):
   * 9.19 MiB. A communicator holds from one ring channel (one
   * connection) to MAXCHANNELS 32 channels of a ring and a tree (up to 4
   * connections each); one communicator per parallel group of more than
   * one rank (data, tensor, pipeline, sequence). The topology decides
   * the channels and ddx does not know it: a range. A given
   * --cuda-context stands for all memory outside the allocator. */
  double nccl_lo = 0, nccl_hi = 0;
  int groups = (dp > 1) + (tp > 1) + (pp > 1) + (sp > 1);
  if (groups > 0 && !(in->cuda_context_bytes > 0)) {
    double conn = 4194304.0 + 120.0 * 640 * 8 * 8 + 8.0 * 512 * 8 * 16;
    nccl_lo = groups * conn;
    nccl_hi = groups * 32 * 4 * conn;
    snprintf(f, sizeof f, "9.19 MiB x 1 .. 128, x %d group%s", groups, groups > 1 ? "s" : "");
    add_term(out, DDX_MEM_RUNTIME, ALL, "NCCL buffers (outside the allocator)", f, nccl_lo, nccl_hi,
             false);
  }
  out->peak_lo = out->reserved_lo + ctx_lo + nccl_lo;
  out->peak_hi = out->reserved_hi + ctx_hi + nccl_hi;
  if (!(out->gpu_bytes > 0))
    out->verdict = DDX_MEM_UNKNOWN;
  else if (out->peak_lo > out->gpu_bytes)
    out->verdict = DDX_MEM_OOM;
  else if (!have_act)
    out->verdict = DDX_MEM_UNKNOWN; /* a lower bound only */
  else if (out->peak_hi <= out->gpu_bytes)
    out->verdict = DDX_MEM_FITS;
  else
    out->verdict = DDX_MEM_TIGHT;
  return 0;
}

/* ------------------------------------------------------------ patches */

static bool json_equal_loose(const json_t *a, const json_t *b) {
  if (json_is_number(a) && json_is_number(b)) return json_number_value(a) == json_number_value(b);
  return json_equal((json_t *)a, (json_t *)b);
}

static bool precondition_holds(const json_t *config, const json_t *pc) {
  const char *path = json_string_value(json_object_get(pc, "path"));
  const char *op = json_string_value(json_object_get(pc, "op"));
  if (!path || !op) return false;
  const json_t *v = cfg_at(config, path), *want = json_object_get(pc, "value");
  if (!strcmp(op, "exists")) return v != NULL;
  if (!strcmp(op, "absent")) return v == NULL;
  if (!strcmp(op, "not-auto")) return !is_auto(v);
  if (!strcmp(op, "==")) return v && json_equal_loose(v, want);
  if (!strcmp(op, "!=")) return !v || !json_equal_loose(v, want);
  if (!json_is_number(v) || !json_is_number(want)) return false;
  double x = json_number_value(v), y = json_number_value(want);
  if (!strcmp(op, "<")) return x < y;
  if (!strcmp(op, "<=")) return x <= y;
  if (!strcmp(op, ">")) return x > y;
  if (!strcmp(op, ">=")) return x >= y;
  return false;
}

/* The object holding the last key of dotted (created when create), and
 * the last key into key. */
static json_t *parent_of(json_t *root, const char *dotted, bool create, char *key, size_t cap) {
  json_t *o = root;
  const char *p = dotted;
  for (;;) {
    const char *dot = strchr(p, '.');
    size_t n = dot ? (size_t)(dot - p) : strlen(p);
    if (n == 0 || n >= cap) return NULL;
    memcpy(key, p, n);
    key[n] = 0;
    if (!dot) return o;
    json_t *next = json_object_get(o, key);
    if (!json_is_object(next)) {
      if (!create) return NULL;
      next = json_object();
      if (!next || json_object_set_new(o, key, next)) return NULL;
    }
    o = next;
    p = dot + 1;
  }
}

static bool apply_ops(json_t *cfg, const json_t *ops) {
  size_t i;
  json_t *op;
  /* DeepSpeed's identity: micro x accumulation stays when both are
   * multiplied in one patch (rules/README.md) */
  double mb_ratio = 0;
  json_array_foreach(ops, i, op) {
    const char *kind = json_string_value(json_object_get(op, "op"));
    const char *path = json_string_value(json_object_get(op, "path"));
    if (!kind || !path) return false;
    char key[128];
    if (!strcmp(kind, "set")) {
      json_t *par = parent_of(cfg, path, true, key, sizeof key);
      json_t *val = json_object_get(op, "value");
      if (!par || !val || json_object_set_new(par, key, json_deep_copy(val))) return false;
    } else if (!strcmp(kind, "remove")) {
      json_t *par = parent_of(cfg, path, false, key, sizeof key);
      if (par) json_object_del(par, key);
    } else if (!strcmp(kind, "rename")) {
      const char *to = json_string_value(json_object_get(op, "to"));
      json_t *par = parent_of(cfg, path, false, key, sizeof key);
      json_t *v = par ? json_object_get(par, key) : NULL;
      if (!to || !v) return false;
      json_incref(v);
      json_object_del(par, key);
      json_object_set_new(par, to, v);
    } else if (!strcmp(kind, "multiply")) {
      json_t *par = parent_of(cfg, path, false, key, sizeof key);
      json_t *v = par ? json_object_get(par, key) : NULL;
      double fac = num_or(json_object_get(op, "factor"), 0);
      double mn = num_or(json_object_get(op, "min"), 0);
      if (!json_is_number(v) || !(fac > 0)) return false;
      double x = json_number_value(v), y;
      if (!(x >= 0 && x <= 1e12) || fac > 1e6) return false; /* not a batch or a count */
      if (!strcmp(path, "train_micro_batch_size_per_gpu") && fac < 1) {
        /* the largest divisor at or below factor x micro batch */
        y = floor(x * fac);
        for (int steps = 0; y > 1 && fmod(x, y) != 0 && steps < 100000; steps++)
          y--;
        if (y < 1) y = 1;
        mb_ratio = x / y;
      } else if (!strcmp(path, "gradient_accumulation_steps") && mb_ratio > 0) {
        y = x * mb_ratio;
      } else {
        y = floor(x * fac);
      }
      if (y < mn || !(y <= 1e15)) return false;
      if (json_object_set_new(par, key, json_integer((json_int_t)y))) return false;
    } else {
      return false;
    }
  }
  return true;
}

bool ddx_mem_patch_saving(const json_t *config, const char *patch_json, const ddx_mem_inputs_t *in,
                          ddx_mem_estimate_t *after, double *saved_lo, double *saved_hi) {
  if (saved_lo) *saved_lo = 0;
  if (saved_hi) *saved_hi = 0;
  if (after) { /* defined on every path: an invalid estimate that says why */
    memset(after, 0, sizeof *after);
    after->precision = "fp32";
    after->optimizer = "unknown";
    after->offload_optimizer = after->offload_param = "none";
    snprintf(after->missing, sizeof after->missing,
             "the fix does not apply here (a precondition, \"auto\" or an unknown op)");
  }
  if (!json_is_object(config) || !patch_json) return false;
  json_t *patch = json_loads(patch_json, 0, NULL);
  const json_t *ops = json_is_array(patch) ? patch : json_object_get(patch, "ops");
  bool ok = json_is_array(ops) && json_array_size(ops) > 0;
  const json_t *pcs = json_object_get(patch, "preconditions");
  size_t i;
  json_t *pc;
  if (ok && json_is_array(pcs)) json_array_foreach(pcs, i, pc) ok &= precondition_holds(config, pc);
  json_t *copy = ok ? json_deep_copy(config) : NULL;
  ok = ok && copy && apply_ops(copy, ops);
  ddx_mem_estimate_t before, tmp;
  ddx_mem_estimate_t *aft = after ? after : &tmp;
  ddx_error_t err = {0};
  ok = ok && !ddx_mem_estimate(config, in, &before, &err);
  if (ok) ok = !ddx_mem_estimate(copy, in, aft, &err); /* aft is the new estimate from here */
  if (ok) {
    double lo = before.peak_lo - aft->peak_lo, hi = before.peak_hi - aft->peak_hi;
    if (hi < lo) {
      double t = lo;
      lo = hi, hi = t;
    }
    if (saved_lo) *saved_lo = lo;
    if (saved_hi) *saved_hi = hi;
  }
  json_decref(copy);
  json_decref(patch);
  return ok;
}

/* ------------------------------------------------------------ renderings */

static void gib_range(char *out, size_t cap, double lo, double hi) {
  if (fabs(hi - lo) < 0.005 * GIB)
    snprintf(out, cap, "%.2f", hi / GIB);
  else
    snprintf(out, cap, "%.2f-%.2f", lo / GIB, hi / GIB);
}

static const char *group_name(ddx_mem_group_t g) {
  switch (g) {
  case DDX_MEM_MODEL_STATES:
    return "model_states";
  case DDX_MEM_ACTIVATIONS:
    return "activations";
  case DDX_MEM_LOGITS:
    return "logits";
  case DDX_MEM_BUFFERS:
    return "buffers";
  case DDX_MEM_RUNTIME:
    return "runtime";
  case DDX_MEM_STEP:
    return "optimizer_step";
  }
  return "other";
}

static const char *verdict_name(ddx_mem_verdict_t v) {
  switch (v) {
  case DDX_MEM_FITS:
    return "fits";
  case DDX_MEM_TIGHT:
    return "tight";
  case DDX_MEM_OOM:
    return "oom";
  case DDX_MEM_UNKNOWN:
    break;
  }
  return "unknown";
}

void ddx_mem_verdict_text(const ddx_mem_estimate_t *e, char *buf, size_t cap) {
  char r[48];
  gib_range(r, sizeof r, e->peak_lo, e->peak_hi);
  double g = e->gpu_bytes / GIB;
  switch (e->verdict) {
  case DDX_MEM_OOM:
    snprintf(buf, cap, "OOM predicted: %s GiB > %.4g GiB", r, g);
    break;
  case DDX_MEM_FITS:
    snprintf(buf, cap, "fits, %.1f GiB headroom on %.4g GiB", (e->gpu_bytes - e->peak_hi) / GIB, g);
    break;
  case DDX_MEM_TIGHT: {
    char gs[32];
    snprintf(gs, sizeof gs, "%.4g", g);
    /* "an 80 GiB", "an 11 GiB", "a 40 GiB" */
    bool an = gs[0] == '8' || (!strncmp(gs, "11", 2) && (gs[2] == 0 || gs[2] == '.')) ||
              (!strncmp(gs, "18", 2) && (gs[2] == 0 || gs[2] == '.'));
    snprintf(buf, cap, "tight: %s GiB on a%s %s GiB GPU", r, an ? "n" : "", gs);
    break;
  }
  case DDX_MEM_UNKNOWN:
    if (!e->valid)
      snprintf(buf, cap, "no estimate: %s unknown", e->missing[0] ? e->missing : "the model");
    else if (e->gpu_bytes > 0)
      snprintf(buf, cap, "at least %.2f GiB of %.4g GiB (%s unknown)", e->peak_lo / GIB, g,
               e->missing);
    else
      snprintf(buf, cap, "peak %s GiB (GPU memory unknown)", r);
    break;
  }
}

static void config_line(const ddx_mem_estimate_t *e, ddx_sb_t *b) {
  ddx_sb_printf(b, "ZeRO stage %d, %s, %s, N = %lld", e->stage, e->precision, e->optimizer,
                (long long)e->dp);
  if (strcmp(e->offload_optimizer, "none"))
    ddx_sb_printf(b, ", offload_optimizer %s", e->offload_optimizer);
  if (strcmp(e->offload_param, "none")) ddx_sb_printf(b, ", offload_param %s", e->offload_param);
  if (e->micro_batch > 0) ddx_sb_printf(b, ", micro batch %g", e->micro_batch);
  if (e->seq_len > 0) ddx_sb_printf(b, ", seq %g", e->seq_len);
}

/* The opening both reports share: b begun and e's verdict in v. An estimate
 * that is not valid has nothing to show but that verdict, so its whole
 * report is "<title> <verdict>\n" (the title in the report's own markup),
 * written here; false then, and the caller returns b as it is. */
static bool mem_report_open(const ddx_mem_estimate_t *e, const char *title, ddx_sb_t *b, char *v,
                            size_t cap) {
  ddx_sb_init(b);
  ddx_mem_verdict_text(e, v, cap);
  if (e->valid) return true;
  ddx_sb_printf(b, "%s %s\n", title, v);
  return false;
}

char *ddx_mem_text(const ddx_mem_estimate_t *e) {
  ddx_sb_t b;
  char v[256];
  if (!mem_report_open(e, "Memory per GPU:", &b, v, sizeof v)) return ddx_sb_take(&b);
  ddx_sb_puts(&b, "Memory per GPU (");
  config_line(e, &b);
  ddx_sb_puts(&b, ")\n");
  static const char *const phn[] = {"all", "fwd/bwd", "step"};
  ddx_sb_printf(&b, "  %-46s %-44s %-7s %13s\n", "term", "formula", "phase", "GiB");
  for (size_t i = 0; i < e->nterms; i++) {
    const ddx_mem_term_t *t = &e->terms[i];
    char r[48];
    gib_range(r, sizeof r, t->lo, t->hi);
    ddx_sb_printf(&b, "  %-46s %-44s %-7s %13s%s\n", t->what, t->formula, phn[t->phase], r,
                  t->cpu ? "  (host)" : "");
  }
  char r[48];
  gib_range(r, sizeof r, e->alloc_lo, e->alloc_hi);
  ddx_sb_printf(&b, "  %-46s %-44s %-7s %13s\n", "allocated peak (max_memory_allocated)",
                "resident + the larger phase", e->peak_phase[0] == 'o' ? "step" : "fwd/bwd", r);
  gib_range(r, sizeof r, e->reserved_lo, e->reserved_hi);
  ddx_sb_printf(&b, "  %-46s %-44s %-7s %13s\n", "reserved peak (max_memory_reserved)",
                "+ allocator reserve", "", r);
  gib_range(r, sizeof r, e->peak_lo, e->peak_hi);
  ddx_sb_printf(&b, "  %-46s %-44s %-7s %13s\n", "peak on the GPU (what nvidia-smi shows)",
                "+ CUDA context (+ NCCL)", "", r);
  /* subtotals by group */
  static const char *const gname[] = {
      "Model states per GPU", "activations", "logits", "buffers", "runtime", "optimizer step"};
  bool first = true;
  for (int g = 0; g <= DDX_MEM_STEP; g++) {
    double lo = 0, hi = 0;
    bool any = false;
    for (size_t i = 0; i < e->nterms; i++)
      if ((int)e->terms[i].group == g && !e->terms[i].cpu)
        lo += e->terms[i].lo, hi += e->terms[i].hi, any = true;
    if (!any) continue;
    char gr[48];
    gib_range(gr, sizeof gr, lo, hi);
    ddx_sb_printf(&b, "%s%s: %s GiB", first ? "" : "; ", gname[g], gr);
    first = false;
  }
  ddx_sb_puts(&b, "\n");
  if (e->cpu_bytes > 0)
    ddx_sb_printf(&b, "  host memory (offloaded): %.2f GiB per rank\n", e->cpu_bytes / GIB);
  if (e->ds_estimate > 0)
    ddx_sb_printf(&b,
                  "DeepSpeed's estimate_zero%d_model_states_mem_needs (all live): %.2f GiB per "
                  "GPU (model states only)\n",
                  e->stage, e->ds_estimate / GIB);
  ddx_sb_printf(&b, "%s\n", v);
  if (e->missing[0]) ddx_sb_printf(&b, "Would sharpen it: %s\n", e->missing);
  return ddx_sb_take(&b);
}

char *ddx_mem_markdown(const ddx_mem_estimate_t *e) {
  ddx_sb_t b;
  char v[256];
  if (!mem_report_open(e, "**Memory per GPU:**", &b, v, sizeof v)) return ddx_sb_take(&b);
  char r[48];
  gib_range(r, sizeof r, e->peak_lo, e->peak_hi);
  ddx_sb_printf(&b, "**Peak per GPU: %s GiB** — %s\n\n_", r, v);
  config_line(e, &b);
  ddx_sb_puts(&b, "_\n\n| term | formula | GiB | where |\n|---|---|---:|---|\n");
  static const char *const phw[] = {"GPU", "GPU, forward/backward", "GPU, optimizer step"};
  for (size_t i = 0; i < e->nterms; i++) {
    const ddx_mem_term_t *t = &e->terms[i];
    char tr[48];
    gib_range(tr, sizeof tr, t->lo, t->hi);
    ddx_sb_printf(&b, "| %s | `%s` | %s | %s |\n", t->what, t->formula, tr,
                  t->cpu ? "host" : phw[t->phase]);
  }
  char ar[48], rr[48];
  gib_range(ar, sizeof ar, e->alloc_lo, e->alloc_hi);
  gib_range(rr, sizeof rr, e->reserved_lo, e->reserved_hi);
  ddx_sb_printf(&b, "\nAllocated peak %s GiB (%s phase), reserved %s GiB, nvidia-smi %s GiB.\n", ar,
                e->peak_phase, rr, r);
  if (e->cpu_bytes > 0)
    ddx_sb_printf(&b, "\nHost memory (offloaded): %.2f GiB per rank.\n", e->cpu_bytes / GIB);
  if (e->missing[0]) ddx_sb_printf(&b, "\n_Would sharpen it:_ %s.\n", e->missing);
  if (e->sources[0]) ddx_sb_printf(&b, "\n_Sources:_ %s.\n", e->sources);
  return ddx_sb_take(&b);
}

json_t *ddx_mem_json(const ddx_mem_estimate_t *e) {
  json_t *o = json_object();
  if (!o) return NULL;
  char v[256];
  ddx_mem_verdict_text(e, v, sizeof v);
  json_object_set_new(o, "valid", json_boolean(e->valid));
  json_object_set_new(o, "peak", json_pack("{s:f, s:f}", "lo", e->peak_lo, "hi", e->peak_hi));
  json_object_set_new(o, "gpu", e->gpu_bytes > 0 ? json_real(e->gpu_bytes) : json_null());
  json_object_set_new(o, "verdict", json_string(verdict_name(e->verdict)));
  json_object_set_new(o, "verdict_text", json_string(v));
  json_object_set_new(o, "headroom",
                      e->gpu_bytes > 0 ? json_real(e->gpu_bytes - e->peak_hi) : json_null());
  json_object_set_new(o, "cpu_bytes", json_real(e->cpu_bytes));
  json_object_set_new(o, "allocated",
                      json_pack("{s:f, s:f}", "lo", e->alloc_lo, "hi", e->alloc_hi));
  json_object_set_new(o, "reserved",
                      json_pack("{s:f, s:f}", "lo", e->reserved_lo, "hi", e->reserved_hi));
  json_object_set_new(o, "nvidia_smi", json_pack("{s:f, s:f}", "lo", e->peak_lo, "hi", e->peak_hi));
  json_object_set_new(o, "peak_phase", json_string(e->peak_phase ? e->peak_phase : ""));
  json_object_set_new(o, "deepspeed_estimate",
                      e->ds_estimate > 0 ? json_real(e->ds_estimate) : json_null());
  json_t *terms = json_array();
  for (size_t i = 0; i < e->nterms; i++) {
    const ddx_mem_term_t *t = &e->terms[i];
    static const char *const phj[] = {"all", "forward_backward", "optimizer_step"};
    json_array_append_new(terms,
                          json_pack("{s:s, s:s, s:s, s:s, s:f, s:f, s:b}", "what", t->what,
                                    "formula", t->formula, "group", group_name(t->group), "phase",
                                    phj[t->phase], "lo", t->lo, "hi", t->hi, "cpu", t->cpu));
  }
  json_object_set_new(o, "terms", terms);
  json_object_set_new(o, "config",
                      json_pack("{s:i, s:s, s:s, s:s, s:s, s:f, s:f, s:I}", "stage", e->stage,
                                "precision", e->precision ? e->precision : "fp32", "optimizer",
                                e->optimizer ? e->optimizer : "unknown", "offload_optimizer",
                                e->offload_optimizer ? e->offload_optimizer : "none",
                                "offload_param", e->offload_param ? e->offload_param : "none",
                                "micro_batch", e->micro_batch, "seq_len", e->seq_len, "dp",
                                (json_int_t)e->dp));
  json_object_set_new(o, "missing", json_string(e->missing));
  json_object_set_new(o, "sources", json_string(e->sources));
  return o;
}
