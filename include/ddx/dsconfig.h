/* ddx/dsconfig.h - owns ds_config.json: parsing it with byte positions,
 * reading values by dotted path, checking a quick fix's preconditions and
 * turning its operations (rules/README.md, "config_patches") into minimal
 * text edits that keep the file's indentation, key order, line endings and
 * final newline. It never writes a file: callers (the LSP server) send the
 * edits to the editor as a WorkspaceEdit the user can undo. A file that is
 * not plain JSON (comments, trailing commas, not an object, duplicate keys,
 * invalid UTF-8) is refused with a reason, never "repaired". */
#ifndef DDX_DSCONFIG_H
#define DDX_DSCONFIG_H

#include <stdbool.h>
#include <stddef.h>

#include "ddx/util.h"

typedef struct ddx_dsconfig ddx_dsconfig_t;

/* One replacement of the original bytes [start, end) by text. Edits of one
 * plan are sorted by start and do not overlap. */
typedef struct ddx_text_edit {
  size_t start, end;
  char *text; /* malloc'd */
} ddx_text_edit_t;

typedef struct ddx_patch_plan {
  ddx_text_edit_t *edits;
  size_t nedits;
  char *title; /* the patch's title, malloc'd */
} ddx_patch_plan_t;

/* Parses text (not NUL-terminated necessarily). On refusal returns
 * DDX_EINVAL with err->msg saying why and where ("line 7, column 3: trailing
 * comma: ds_config.json must be plain JSON for a safe automatic edit");
 * the column is 1-based and counts characters. Edit offsets everywhere in
 * this module are bytes: the LSP layer converts them to its positions. */
int ddx_dsconfig_parse(ddx_dsconfig_t **out, const char *text, size_t len, ddx_error_t *err);
void ddx_dsconfig_free(ddx_dsconfig_t *c);

/* Value at a dotted path ("zero_optimization.stage"). Returns true when
 * present; *json gets a malloc'd compact JSON rendering of the value. */
bool ddx_dsconfig_get(const ddx_dsconfig_t *c, const char *path, char **json);

/* True when a JSON text looks like a DeepSpeed config, from its top-level
 * keys in one pass without building a tree (hjson comments skipped; a text
 * that stops parsing is judged by the keys before the break): a key only
 * DeepSpeed uses with a value of the kind it takes (zero_optimization,
 * train_micro_batch_size_per_gpu, fp16/bf16 objects, an optimizer or
 * scheduler of DeepSpeed's shape, "auto" batch sizes, ...), or two that
 * other tools share too (train_batch_size, gradient_accumulation_steps,
 * gradient_clipping as numbers). A top-level object with more than 256 keys
 * (a tokenizer vocab) is data, not a config. */
bool ddx_dsconfig_text_is_deepspeed(const char *text, size_t len);

/* ddx_dsconfig_text_is_deepspeed of the parsed text. */
bool ddx_dsconfig_is_deepspeed(const ddx_dsconfig_t *c);

/* Plans one config_patches entry (its JSON text, as in a rule file) against
 * the parsed config. Returns 0 and fills plan, or DDX_EINVAL with err->msg
 * giving the reason it is not offered (a precondition that fails, a value
 * that is "auto" and so owned by the HF Trainer, a non-numeric value to
 * multiply, ...). A patch whose operations change nothing is refused too.
 * Refusal messages start with "precondition not met:", "already applied:"
 * or "invalid patch:". An absent path passes "!=" and "not-auto" and fails
 * every other precondition. */
int ddx_dsconfig_plan(const ddx_dsconfig_t *c, const char *patch_json, ddx_patch_plan_t *plan,
                      ddx_error_t *err);
void ddx_patch_plan_free(ddx_patch_plan_t *plan);

/* Applies edits to text; returns the new malloc'd text (len in *out_len),
 * or NULL when the edits are unsorted, overlap or fall outside the text. */
char *ddx_text_apply(const char *text, size_t len, const ddx_text_edit_t *edits, size_t n,
                     size_t *out_len);

/* ---- where a fix lives outside the config: the Hugging Face Trainer ----
 *
 * A config with "auto" values is the HF Trainer's (or Accelerate's): it
 * fills them from its TrainingArguments, and checks that the values it
 * does not fill match them (train_micro_batch_size_per_gpu must equal
 * --per_device_train_batch_size, ...). Its models checkpoint activations
 * through --gradient_checkpointing, not DeepSpeed's activation_checkpointing
 * block (which takes effect only where the model calls
 * deepspeed.checkpointing.checkpoint, as Megatron-DeepSpeed does). */

/* True when any value of the config is the string "auto". */
bool ddx_dsconfig_has_auto(const ddx_dsconfig_t *c);

/* What the log said the Trainer used (0: unknown): DeepSpeed's config print
 * after the Trainer filled it in, or the Trainer's "Instantaneous batch size
 * per device = 8" / "Gradient Accumulation steps = 4". */
typedef struct ddx_hf_known {
  long long micro_batch, grad_accum;
} ddx_hf_known_t;

/* A config_patches entry whose change is the Trainer's: every key it
 * changes is "auto" and filled from a Trainer flag (micro batch, gradient
 * accumulation, bf16/fp16), or it sets activation_checkpointing in a config
 * with "auto" values (--gradient_checkpointing). The other preconditions
 * must hold. Returns 0 with *flags (malloc'd, the exact arguments to add to
 * the training command: "--per_device_train_batch_size 4
 * --gradient_accumulation_steps 8", "--gradient_checkpointing"; values the
 * log did not give are written as "N/2" with *flags_exact false), or
 * DDX_EINVAL with err saying why it is not the Trainer's. */
int ddx_dsconfig_plan_hf(const ddx_dsconfig_t *c, const char *patch_json,
                         const ddx_hf_known_t *known, char **flags, bool *flags_exact,
                         ddx_error_t *err);

/* In a config with "auto" values, the Trainer flags that must change along
 * with a plan's edits (the Trainer refuses to start when a key it checks,
 * such as train_micro_batch_size_per_gpu, disagrees with its flag): written
 * into buf ("--per_device_train_batch_size 2 --gradient_accumulation_steps
 * 16"); false (buf "") when none. */
bool ddx_dsconfig_hf_flags_after(const ddx_dsconfig_t *c, const ddx_patch_plan_t *plan, char *buf,
                                 size_t cap);

#endif
