/* dsconfig_gen.h - generates ds_config.json texts for the property tests of
 * dsconfig.c: the same kinds of content (ZeRO blocks present or absent, HF
 * "auto" values, non-ASCII strings, legacy keys) written in many styles (2 or
 * 4 spaces, tabs, CRLF, one line, compact, shuffled keys, inline nested
 * blocks, with or without a final newline). Deterministic from a seed. */
#ifndef DDX_TEST_DSCONFIG_GEN_H
#define DDX_TEST_DSCONFIG_GEN_H

#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "ddx/util.h"

#define GEN_MAX_KIDS 24
#define GEN_MAX_NODES 160

typedef struct gen_node {
  const char *key; /* NULL for array elements */
  const char *raw; /* a scalar as written; NULL for containers */
  char kind;       /* 'o' object, 'a' array, 's' scalar */
  bool inline_;    /* this object is written on one line */
  int n;
  struct gen_node *kids[GEN_MAX_KIDS];
} gen_node_t;

typedef struct gen_style {
  const char *unit;  /* "  ", "    ", "\t"; NULL writes everything on one line */
  const char *eol;   /* "\n" or "\r\n" */
  const char *sep;   /* ": " or ":" */
  const char *comma; /* between inline members: ", " or "," */
  bool final_eol;
  const char *name;
} gen_style_t;

typedef struct gen {
  uint64_t rng;
  int used;
  gen_node_t pool[GEN_MAX_NODES];
} gen_t;

static uint32_t gen_rand(gen_t *g) {
  g->rng ^= g->rng << 13;
  g->rng ^= g->rng >> 7;
  g->rng ^= g->rng << 17;
  return (uint32_t)(g->rng >> 11);
}

static int gen_pick(gen_t *g, int n) {
  return (int)(gen_rand(g) % (uint32_t)n);
}

static gen_node_t *gen_new(gen_t *g, char kind, const char *key, const char *raw) {
  if (g->used == GEN_MAX_NODES) return NULL;
  gen_node_t *n = &g->pool[g->used++];
  memset(n, 0, sizeof *n);
  n->kind = kind;
  n->key = key;
  n->raw = raw;
  return n;
}

static gen_node_t *gen_add(gen_t *g, gen_node_t *parent, char kind, const char *key,
                           const char *raw) {
  gen_node_t *n = parent && parent->n < GEN_MAX_KIDS ? gen_new(g, kind, key, raw) : NULL;
  if (n) parent->kids[parent->n++] = n;
  return n;
}

/* Adds key with one of the raw values of choices (NULL in choices = absent). */
static void gen_maybe(gen_t *g, gen_node_t *obj, const char *key, const char *const *choices,
                      int nchoices) {
  const char *raw = choices[gen_pick(g, nchoices)];
  if (raw) gen_add(g, obj, 's', key, raw);
}

#define GEN_MAYBE(g, obj, key, ...)                                                                \
  do {                                                                                             \
    static const char *const c_[] = {__VA_ARGS__};                                                 \
    gen_maybe(g, obj, key, c_, (int)(sizeof c_ / sizeof *c_));                                     \
  } while (0)

static void gen_shuffle(gen_t *g, gen_node_t *obj) {
  for (int i = obj->n - 1; i > 0; i--) {
    int j = gen_pick(g, i + 1);
    gen_node_t *t = obj->kids[i];
    obj->kids[i] = obj->kids[j];
    obj->kids[j] = t;
  }
}

static void gen_offload(gen_t *g, gen_node_t *zero, const char *key) {
  int shape = gen_pick(g, 6);
  if (shape == 0) return;
  if (shape == 1) {
    gen_add(g, zero, 's', key, "true"); /* the invalid bool form */
    return;
  }
  gen_node_t *o = gen_add(g, zero, 'o', key, NULL);
  if (!o) return;
  o->inline_ = gen_pick(g, 3) == 0;
  if (shape == 2) return; /* {} */
  GEN_MAYBE(g, o, "device", "\"cpu\"", "\"nvme\"", "\"cpu\"");
  if (gen_pick(g, 2)) gen_add(g, o, 's', "nvme_path", "\"/local_nvme/路径\"");
  GEN_MAYBE(g, o, "pin_memory", NULL, "true", "false");
  if (gen_pick(g, 2)) gen_add(g, o, 's', "buffer_count", "4");
}

/* The content of config number seed, before its style is chosen. */
static gen_node_t *gen_config(gen_t *g) {
  gen_node_t *root = gen_new(g, 'o', NULL, NULL);
  GEN_MAYBE(g, root, "train_batch_size", NULL, "32", "\"auto\"", "256");
  GEN_MAYBE(g, root, "train_micro_batch_size_per_gpu", NULL, "1", "2", "4", "16", "\"auto\"");
  GEN_MAYBE(g, root, "gradient_accumulation_steps", NULL, "1", "8", "\"auto\"", "3", "\"4\"");
  GEN_MAYBE(g, root, "gradient_clipping", NULL, "0", "1.0", "\"auto\"", "0.5");
  GEN_MAYBE(g, root, "steps_per_print", NULL, "10", "2000");
  GEN_MAYBE(g, root, "wall_clock_breakdown", NULL, "false");
  GEN_MAYBE(g, root, "zero_allow_untested_optimizer", NULL, NULL, NULL, "true");
  int fp = gen_pick(g, 5);
  if (fp) {
    gen_node_t *f = gen_add(g, root, 'o', "fp16", NULL);
    f->inline_ = gen_pick(g, 4) == 0;
    if (fp > 1) GEN_MAYBE(g, f, "enabled", "true", "false", "\"auto\"", "true");
    if (fp > 2) {
      GEN_MAYBE(g, f, "loss_scale", "0", NULL);
      GEN_MAYBE(g, f, "initial_scale_power", "16", "12", "32", NULL);
      GEN_MAYBE(g, f, "hysteresis", "2", NULL, "4");
      GEN_MAYBE(g, f, "min_loss_scale", "1", NULL);
    }
  }
  if (gen_pick(g, 2)) {
    gen_node_t *b = gen_add(g, root, 'o', "bf16", NULL);
    b->inline_ = gen_pick(g, 3) == 0;
    GEN_MAYBE(g, b, "enabled", "true", "false", "\"auto\"");
  }
  if (gen_pick(g, 5)) {
    gen_node_t *z = gen_add(g, root, 'o', "zero_optimization", NULL);
    GEN_MAYBE(g, z, "stage", "0", "1", "2", "3", "3", "2", NULL);
    gen_offload(g, z, "offload_optimizer");
    gen_offload(g, z, "offload_param");
    GEN_MAYBE(g, z, "cpu_offload", NULL, NULL, "true");
    GEN_MAYBE(g, z, "contiguous_gradients", NULL, "true", "false");
    GEN_MAYBE(g, z, "overlap_comm", NULL, "true");
    GEN_MAYBE(g, z, "reduce_bucket_size", NULL, "5e8", "\"auto\"", "500000000");
    GEN_MAYBE(g, z, "stage3_prefetch_bucket_size", NULL, "5e7", "\"auto\"");
    GEN_MAYBE(g, z, "stage3_gather_fp16_weights_on_model_save", NULL, NULL, "true");
    GEN_MAYBE(g, z, "stage3_gather_16bit_weights_on_model_save", NULL, NULL, NULL, "false");
    if (gen_pick(g, 2)) gen_shuffle(g, z);
  }
  if (gen_pick(g, 2)) {
    gen_node_t *o = gen_add(g, root, 'o', "optimizer", NULL);
    GEN_MAYBE(g, o, "type", "\"AdamW\"", "\"Adam\"");
    gen_node_t *p = gen_add(g, o, 'o', "params", NULL);
    p->inline_ = gen_pick(g, 3) == 0;
    GEN_MAYBE(g, p, "lr", "3e-5", "\"auto\"", "0.0001");
    if (gen_pick(g, 2)) {
      gen_node_t *betas = gen_add(g, p, 'a', "betas", NULL);
      gen_add(g, betas, 's', NULL, "0.9");
      gen_add(g, betas, 's', NULL, "0.999");
    } else {
      gen_add(g, p, 's', "betas", "\"auto\"");
    }
    GEN_MAYBE(g, p, "eps", "1e-8", "\"auto\"");
    GEN_MAYBE(g, p, "weight_decay", "0.01", "\"auto\"", "0");
  }
  if (gen_pick(g, 2)) {
    gen_node_t *s = gen_add(g, root, 'o', "scheduler", NULL);
    GEN_MAYBE(g, s, "type", "\"WarmupLR\"", "\"WarmupDecayLR\"");
    gen_node_t *p = gen_add(g, s, 'o', "params", NULL);
    GEN_MAYBE(g, p, "warmup_min_lr", "0", NULL);
    GEN_MAYBE(g, p, "warmup_max_lr", "\"auto\"", "3e-5");
    GEN_MAYBE(g, p, "warmup_num_steps", "\"auto\"", "100");
  }
  if (gen_pick(g, 3) == 0) {
    gen_node_t *c = gen_add(g, root, 'o', "checkpoint", NULL);
    GEN_MAYBE(g, c, "load_universal", "false", "true", NULL);
  }
  if (gen_pick(g, 3) == 0) {
    gen_node_t *w = gen_add(g, root, 'o', "wandb", NULL);
    gen_add(g, w, 's', "enabled", "true");
    gen_add(g, w, 's', "project", "\"路径 🚀 训练 naïve\"");
  }
  if (gen_pick(g, 3) == 0)
    gen_add(g, root, 's', "comment", "\"emoji 🤖 \\u00e9 \\\"quoted\\\"\"");
  if (gen_pick(g, 4) == 0) {
    gen_node_t *a = gen_add(g, root, 'a', "tags", NULL);
    gen_add(g, a, 's', NULL, "\"a\"");
    gen_add(g, a, 's', NULL, "{}");
  }
  if (!root->n || gen_pick(g, 3) == 0) gen_shuffle(g, root);
  if (!root->n) gen_add(g, root, 's', "train_batch_size", "8");
  return root;
}

static void gen_write(ddx_sb_t *b, const gen_node_t *n, const gen_style_t *st, int depth,
                      bool inl) {
  if (n->kind == 's') {
    ddx_sb_puts(b, n->raw);
    return;
  }
  bool obj = n->kind == 'o';
  inl = inl || n->inline_ || !obj || !st->unit;
  ddx_sb_puts(b, obj ? "{" : "[");
  for (int i = 0; i < n->n; i++) {
    if (i) ddx_sb_puts(b, inl ? st->comma : ",");
    if (!inl) {
      ddx_sb_puts(b, st->eol);
      for (int d = 0; d <= depth; d++)
        ddx_sb_puts(b, st->unit);
    }
    if (n->kids[i]->key) ddx_sb_printf(b, "\"%s\"%s", n->kids[i]->key, st->sep);
    gen_write(b, n->kids[i], st, depth + 1, inl);
  }
  if (!inl && n->n) {
    ddx_sb_puts(b, st->eol);
    for (int d = 0; d < depth; d++)
      ddx_sb_puts(b, st->unit);
  }
  ddx_sb_puts(b, obj ? "}" : "]");
}

/* Config number seed: returns a malloc'd text and its style. */
static char *gen_text(unsigned seed, gen_style_t *st) {
  static const gen_style_t styles[] = {
      {"  ", "\n", ": ", ", ", true, "2-space"},
      {"    ", "\n", ": ", ", ", true, "4-space"},
      {"\t", "\n", ": ", ", ", true, "tabs"},
      {"  ", "\r\n", ": ", ", ", true, "2-space CRLF"},
      {"    ", "\r\n", ": ", ", ", false, "4-space CRLF"},
      {NULL, "\n", ": ", ", ", true, "one line"},
      {NULL, "\n", ":", ",", false, "compact"},
      {"  ", "\n", ":", ",", false, "2-space no-space"},
      {"\t", "\r\n", ": ", ", ", false, "tabs CRLF"},
  };
  gen_t *g = calloc(1, sizeof *g);
  if (!g) return NULL;
  g->rng = 0x9E3779B97F4A7C15ull ^ ((uint64_t)seed * 0x100000001B3ull);
  for (int i = 0; i < 4; i++)
    gen_rand(g);
  *st = styles[seed % (sizeof styles / sizeof *styles)];
  if (gen_pick(g, 3) == 0) st->final_eol = !st->final_eol;
  gen_node_t *root = gen_config(g);
  ddx_sb_t b;
  ddx_sb_init(&b);
  gen_write(&b, root, st, 0, false);
  if (st->final_eol) ddx_sb_puts(&b, st->eol);
  free(g);
  return ddx_sb_take(&b);
}

/* ---- configuration states ----
 *
 * The states an OOM's quick fixes must cover, forced onto a generated
 * config: the ZeRO block and stage (no block, no stage, 0-3), the
 * optimizer offload (absent, "device": "none", cpu), a DeepSpeed optimizer
 * block or the client's, the precision (fp32, fp16, bf16, and "auto" from
 * the HF Trainer), and the HF "auto" batch keys or numbers (a config
 * without "auto" anywhere is not the Trainer's). */

typedef struct gen_state {
  int zero;       /* -2 no zero_optimization, -1 no stage, 0..3 the stage */
  int offload;    /* 0 no offload_optimizer, 1 {"device": "none"}, 2 {"device": "cpu"} */
  bool optimizer; /* an "optimizer" block */
  int precision;  /* 0 fp32, 1 fp16, 2 bf16, 3 "auto" (only with autos) */
  bool autos;     /* HF "auto" batch keys; false: no "auto" value anywhere */
} gen_state_t;

#define GEN_NSTATES (6 * 3 * 2 * 7)

static gen_state_t gen_state(int k) {
  gen_state_t s;
  s.zero = k % 6 - 2;
  k /= 6;
  s.offload = k % 3;
  k /= 3;
  s.optimizer = k % 2;
  k /= 2;
  /* 7 (autos, precision) pairs: "auto" precision only with autos */
  s.autos = k >= 3;
  s.precision = s.autos ? k - 3 : k;
  return s;
}

static void gen_state_name(const gen_state_t *s, char *buf, size_t cap) {
  static const char *const prec[] = {"fp32", "fp16", "bf16", "auto precision"};
  static const char *const off[] = {"no offload", "offload none", "offload cpu"};
  char z[24];
  if (s->zero == -2)
    snprintf(z, sizeof z, "no zero block");
  else if (s->zero == -1)
    snprintf(z, sizeof z, "no stage");
  else
    snprintf(z, sizeof z, "stage %d", s->zero);
  snprintf(buf, cap, "%s, %s, %s, %s, %s", z, off[s->offload],
           s->optimizer ? "optimizer block" : "no optimizer block", prec[s->precision],
           s->autos ? "HF auto batch" : "no auto");
}

static gen_node_t *gen_find(gen_node_t *obj, const char *key) {
  for (int i = 0; obj && i < obj->n; i++)
    if (obj->kids[i]->key && !strcmp(obj->kids[i]->key, key)) return obj->kids[i];
  return NULL;
}

static void gen_remove(gen_node_t *obj, const char *key) {
  for (int i = 0; obj && i < obj->n; i++)
    if (obj->kids[i]->key && !strcmp(obj->kids[i]->key, key)) {
      memmove(&obj->kids[i], &obj->kids[i + 1], (size_t)(obj->n - i - 1) * sizeof *obj->kids);
      obj->n--;
      return;
    }
}

/* obj[key] = raw (a scalar), replacing what was there. */
static void gen_put(gen_t *g, gen_node_t *obj, const char *key, const char *raw) {
  gen_node_t *n = gen_find(obj, key);
  if (n) {
    n->kind = 's';
    n->raw = raw;
    n->n = 0;
  } else {
    gen_add(g, obj, 's', key, raw);
  }
}

/* obj[key] as an object (made, or replacing a scalar). */
static gen_node_t *gen_obj(gen_t *g, gen_node_t *obj, const char *key) {
  gen_node_t *n = gen_find(obj, key);
  if (n && n->kind == 'o') return n;
  if (n) {
    n->kind = 'o';
    n->raw = NULL;
    n->n = 0;
    return n;
  }
  return gen_add(g, obj, 'o', key, NULL);
}

static void gen_no_auto(gen_node_t *n) {
  if (n->kind == 's' && n->raw && !strcmp(n->raw, "\"auto\"")) n->raw = "100";
  for (int i = 0; i < n->n; i++)
    gen_no_auto(n->kids[i]);
}

static void gen_force(gen_t *g, gen_node_t *root, const gen_state_t *s) {
  if (s->zero == -2) {
    gen_remove(root, "zero_optimization");
  } else {
    gen_node_t *z = gen_obj(g, root, "zero_optimization");
    static const char *const stages[] = {"0", "1", "2", "3"};
    if (s->zero < 0)
      gen_remove(z, "stage");
    else
      gen_put(g, z, "stage", stages[s->zero]);
    gen_remove(z, "offload_optimizer");
    gen_remove(z, "cpu_offload");
    if (s->offload) {
      gen_node_t *o = gen_add(g, z, 'o', "offload_optimizer", NULL);
      if (o) gen_add(g, o, 's', "device", s->offload == 1 ? "\"none\"" : "\"cpu\"");
      if (o && s->offload == 2 && gen_pick(g, 2)) gen_add(g, o, 's', "pin_memory", "true");
      if (o) o->inline_ = gen_pick(g, 2);
    }
    if (s->zero != 3) gen_remove(z, "offload_param");
  }
  if (!s->optimizer) {
    gen_remove(root, "optimizer");
  } else if (!gen_find(root, "optimizer")) {
    gen_node_t *o = gen_add(g, root, 'o', "optimizer", NULL);
    gen_add(g, o, 's', "type", "\"AdamW\"");
    gen_node_t *p = gen_add(g, o, 'o', "params", NULL);
    gen_add(g, p, 's', "lr", s->autos ? "\"auto\"" : "3e-5");
  }
  gen_remove(root, "fp16");
  gen_remove(root, "bf16");
  if (s->precision == 1 || (s->precision == 0 && gen_pick(g, 2))) {
    gen_node_t *f = gen_add(g, root, 'o', "fp16", NULL);
    gen_add(g, f, 's', "enabled", s->precision == 1 ? "true" : "false");
    f->inline_ = gen_pick(g, 2);
  }
  if (s->precision == 2 || s->precision == 3 || (s->precision == 0 && gen_pick(g, 2))) {
    gen_node_t *b = gen_add(g, root, 'o', "bf16", NULL);
    gen_add(g, b, 's', "enabled",
            s->precision == 2   ? "true"
            : s->precision == 3 ? "\"auto\""
                                : "false");
    b->inline_ = gen_pick(g, 2);
  }
  if (s->precision == 3) {
    gen_node_t *f = gen_add(g, root, 'o', "fp16", NULL);
    gen_add(g, f, 's', "enabled", "\"auto\"");
  }
  if (s->autos) {
    gen_put(g, root, "train_batch_size", "\"auto\"");
    gen_put(g, root, "train_micro_batch_size_per_gpu", "\"auto\"");
    gen_put(g, root, "gradient_accumulation_steps", "\"auto\"");
  } else {
    static const char *const micro[] = {"1", "2", "4", "6", "16"};
    static const char *const gas[] = {"1", "4", "8"};
    gen_remove(root, "train_batch_size");
    gen_put(g, root, "train_micro_batch_size_per_gpu", micro[gen_pick(g, 5)]);
    if (gen_pick(g, 4))
      gen_put(g, root, "gradient_accumulation_steps", gas[gen_pick(g, 3)]);
    else
      gen_remove(root, "gradient_accumulation_steps");
    gen_no_auto(root);
  }
}

/* Config number seed forced into state s, in style number style (0-8):
 * the content of gen_text's config (seed rounded to style), then forced. */
static char *gen_text_state(unsigned seed, int style, const gen_state_t *s, gen_style_t *st) {
  unsigned pick = seed - seed % 9 + (unsigned)style;
  free(gen_text(pick, st)); /* its style, final newline included */
  gen_t *g = calloc(1, sizeof *g);
  if (!g) return NULL;
  g->rng = 0x9E3779B97F4A7C15ull ^ ((uint64_t)pick * 0x100000001B3ull);
  for (int i = 0; i < 4; i++) /* the draws gen_text makes before the content */
    gen_rand(g);
  gen_pick(g, 3);
  gen_node_t *root = gen_config(g);
  gen_force(g, root, s);
  ddx_sb_t b;
  ddx_sb_init(&b);
  gen_write(&b, root, st, 0, false);
  if (st->final_eol) ddx_sb_puts(&b, st->eol);
  free(g);
  return ddx_sb_take(&b);
}

#endif
