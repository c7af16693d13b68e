// ds_config.json documents: the server's own DeepSpeed config diagnostics
// (ddx/dscheck.h with rules/ds_config.schema.json), re-checked on change,
// the rename quick fix applied and re-parsed, hover from the schema with the
// memory estimate, the memory warning from a diagnosed log's OOM, the config
// found from DeepSpeed's printed configuration, the bounded write queue, and
// `ddx check-config`'s exit codes.
'use strict';
const test = require('node:test');
const assert = require('node:assert/strict');
const fs = require('node:fs');
const path = require('node:path');
const { spawn, spawnSync } = require('node:child_process');
const { Session, CAPS, EXAMPLE, ROOT, uri, tmpdir } = require('./lib');

const DDX = path.resolve(process.env.DDX || path.join(__dirname, '../../build/ddx'));
const LOG = fs.readFileSync(EXAMPLE, 'utf8');

// Applies LSP TextEdits (utf-16 positions) to text.
function applyEdits(text, edits) {
  const starts = [0];
  const re = /\r\n|\r|\n/g;
  let m;
  while ((m = re.exec(text))) starts.push(m.index + m[0].length);
  const off = (p) => (p.line >= starts.length ? text.length : starts[p.line] + p.character);
  const sorted = edits.map((e) => ({ a: off(e.range.start), b: off(e.range.end), t: e.newText })).sort((x, y) => y.a - x.a);
  for (const e of sorted) text = text.slice(0, e.a) + e.t + text.slice(e.b);
  return text;
}

const BAD = [
  '{',
  '  "train_batch_size": 256,',
  '  "train_micro_batch_size_per_gpu": 4,',
  '  "gradient_accumulation_steps": 8,',
  '  "fp16": {"enabled": true},',
  '  "bf16": {"enabled": true},',
  '  "zero_optimization": {',
  '    "stage": 2,',
  '    "stage3_prefetch_bucket_sise": 50000000,',
  '    "stage3_gather_fp16_weights_on_model_save": true,',
  '    "offload_param": {"device": "cpu"},',
  '    "overlap_comm": "yes"',
  '  },',
  '  "activation_checkpointing": {"partition_activation": true}',
  '}',
  '',
].join('\n');

const codes = (p) => p.diagnostics.map((d) => d.code).sort();

test('diagnostics on a ds_config.json: every kind, re-checked on change, cleared on close', async () => {
  const s = new Session();
  await s.initialize();
  // a JSON document that is not a DeepSpeed config gets nothing
  const other = 'file:///tmp/ddx-cfg/package.json';
  await s.open(null, { docUri: other, languageId: 'json', text: '{"name": "x", "versoin": 1}' });
  const u = 'file:///tmp/ddx-cfg/ds_config.json';
  await s.open(null, { docUri: u, languageId: 'json', text: BAD, version: 3 });
  const p = await s.diagnosticsFor(u, { version: 3 });
  assert.equal(s.diagnostics.has(other), false);
  assert.deepEqual(codes(p), [
    'ds-config.deprecated', 'ds-config.ignored-key', 'ds-config.offload-param-stage',
    'ds-config.precision', 'ds-config.type', 'ds-config.unknown-key',
  ]);
  const lines = BAD.split('\n');
  const unk = p.diagnostics.find((d) => d.code === 'ds-config.unknown-key');
  assert.equal(unk.severity, 1);
  assert.equal(unk.source, 'ddx');
  assert.match(unk.message, /did you mean `stage3_prefetch_bucket_size`\?/);
  assert.deepEqual(unk.range.start, { line: 8, character: lines[8].indexOf('"stage3') });
  assert.equal(unk.range.end.character - unk.range.start.character, '"stage3_prefetch_bucket_sise"'.length);
  assert.equal(unk.data.patch.ops[0].op, 'rename');
  const ign = p.diagnostics.find((d) => d.code === 'ds-config.ignored-key');
  assert.equal(ign.severity, 2);
  assert.match(ign.message, /silently ignores it; did you mean `partition_activations`\?/);
  assert.match(p.diagnostics.find((d) => d.code === 'ds-config.precision').message, /cannot be simultaneously enabled/);
  assert.match(p.diagnostics.find((d) => d.code === 'ds-config.offload-param-stage').message, /only used at ZeRO stage 3 \(stage is 2\)/);
  assert.equal(p.diagnostics.find((d) => d.code === 'ds-config.deprecated').severity, 2);
  // an incremental change: fp16 off -> the precision error goes
  const col = lines[4].indexOf('true');
  await s.notify('textDocument/didChange', {
    textDocument: { uri: u, version: 4 },
    contentChanges: [{ range: { start: { line: 4, character: col }, end: { line: 4, character: col + 4 } }, text: 'false' }],
  });
  const p2 = await s.diagnosticsFor(u, { version: 4 });
  assert.ok(!codes(p2).includes('ds-config.precision'));
  assert.equal(p2.diagnostics.length, 5);
  // a syntax error while typing is reported where it is, and goes away
  const n = (s.diagnostics.get(u) || []).length;
  await s.notify('textDocument/didChange', { textDocument: { uri: u, version: 5 }, contentChanges: [{ text: '{\n  "train_batch_size": 8\n  "bf16": {}\n}' }] });
  const p3 = await s.diagnosticsFor(u, { version: 5, after: n });
  assert.deepEqual(codes(p3), ['ds-config.syntax']);
  assert.equal(p3.diagnostics[0].range.start.line, 2);
  assert.match(p3.diagnostics[0].message, /line 3, column 3: expected ',' or '}'/);
  await s.notify('textDocument/didChange', { textDocument: { uri: u, version: 6 }, contentChanges: [{ text: '{"train_batch_size": 8, "bf16": {"enabled": true}}' }] });
  assert.deepEqual((await s.diagnosticsFor(u, { version: 6 })).diagnostics, []);
  // closing clears
  await s.notify('textDocument/didChange', { textDocument: { uri: u, version: 7 }, contentChanges: [{ text: BAD }] });
  await s.diagnosticsFor(u, { version: 7 });
  const k = s.diagnostics.get(u).length;
  await s.notify('textDocument/didClose', { textDocument: { uri: u } });
  const last = await s.diagnosticsFor(u, { after: k });
  assert.deepEqual(last.diagnostics, []);
  assert.equal((await s.close()).code, 0);
});

test('the rename quick fix: a WorkspaceEdit through the planner, applied and re-parsed', async () => {
  const s = new Session();
  await s.initialize();
  const u = 'file:///tmp/ddx-cfg/my_deepspeed.json';
  const text = BAD.replace(/\n/g, '\r\n');
  await s.open(null, { docUri: u, languageId: 'json', text, version: 9 });
  const p = await s.diagnosticsFor(u, { version: 9 });
  const fixable = p.diagnostics.filter((d) => d.data && d.data.patch);
  assert.deepEqual(fixable.map((d) => d.code).sort(), ['ds-config.deprecated', 'ds-config.ignored-key', 'ds-config.unknown-key']);
  let cur = text, version = 9;
  for (const want of ['stage3_prefetch_bucket_size', 'stage3_gather_16bit_weights_on_model_save', 'partition_activations']) {
    const diag = (s.diagnostics.get(u).slice(-1)[0]).diagnostics.find((d) => d.data && d.data.patch && d.data.patch.ops[0].to === want);
    assert.ok(diag, want);
    const actions = await s.request('textDocument/codeAction', {
      textDocument: { uri: u }, range: diag.range, context: { diagnostics: [diag], only: ['quickfix'] },
    });
    assert.equal(actions.length, 1, JSON.stringify(actions));
    const a = actions[0];
    assert.equal(a.kind, 'quickfix');
    assert.equal(a.isPreferred, true);
    assert.match(a.title, new RegExp(`Rename .* to \`${want}\``));
    assert.deepEqual(a.diagnostics, [diag]);
    const dc = a.edit.documentChanges[0];
    assert.equal(dc.textDocument.uri, u);
    assert.equal(dc.textDocument.version, version);
    const next = applyEdits(cur, dc.edits);
    assert.ok(next.includes(`"${want}"`));
    assert.equal(next.split('\r\n').length, cur.split('\r\n').length); // line endings and lines kept
    JSON.parse(next); // still JSON
    cur = next;
    version++;
    await s.notify('textDocument/didChange', { textDocument: { uri: u, version }, contentChanges: [{ text: cur }] });
    await s.diagnosticsFor(u, { version });
  }
  const fin = s.diagnostics.get(u).slice(-1)[0];
  assert.deepEqual(codes(fin), ['ds-config.offload-param-stage', 'ds-config.precision', 'ds-config.type']);
  // a file with comments (DeepSpeed's hjson allows them) is checked, but not edited
  const cu = 'file:///tmp/ddx-cfg/ds_config_comments.json';
  const ctext = '{\n  // tuned for 8 GPUs\n  "zero_optimization": {"stage": 3, "stage3_max_live_parameter": 1e9}\n}\n';
  await s.open(null, { docUri: cu, languageId: 'jsonc', text: ctext });
  const cp = await s.diagnosticsFor(cu);
  assert.deepEqual(codes(cp), ['ds-config.unknown-key']);
  const acts = await s.request('textDocument/codeAction', {
    textDocument: { uri: cu }, range: cp.diagnostics[0].range, context: { diagnostics: cp.diagnostics },
  });
  assert.equal(acts.length, 1);
  assert.match(acts[0].disabled.reason, /cannot be edited safely: line 2, column 3: a comment/);
  assert.equal((await s.close()).code, 0);
});

test('hover on ds_config keys comes from the schema; zero_optimization shows the memory estimate', async () => {
  const ws = tmpdir();
  // the model's config.json in the workspace gives P (Llama-2-7B's shape)
  fs.mkdirSync(path.join(ws, 'model'));
  fs.writeFileSync(path.join(ws, 'model', 'config.json'), JSON.stringify({
    architectures: ['LlamaForCausalLM'], hidden_act: 'silu', hidden_size: 4096, intermediate_size: 11008,
    num_attention_heads: 32, num_hidden_layers: 32, num_key_value_heads: 32, vocab_size: 32000, tie_word_embeddings: false,
  }));
  const s = new Session();
  await s.initialize({ folders: [ws], options: { world: { size: 8 } } });
  const text = '{\n  "bf16": {"enabled": true},\n  "zero_optimization": {\n    "stage": 2,\n    "offload_optimizer": {"device": "cpu", "pin_memory": true}\n  }\n}\n';
  const u = uri(path.join(ws, 'ds_config.json'));
  await s.open(null, { docUri: u, languageId: 'json', text });
  await s.diagnosticsFor(u);
  const hover = async (line, character) => {
    const h = await s.request('textDocument/hover', { textDocument: { uri: u }, position: { line, character } });
    return h && h.contents.value;
  };
  const z = await hover(2, 5);
  assert.match(z, /\*\*`zero_optimization`\*\* \(DeepSpeed\)/);
  assert.match(z, /unknown keys inside are an error/);
  assert.match(z, /Model states per GPU: ~12\.55 GiB\*\* \(ZeRO stage 2/);
  assert.match(z, /N = 8 data-parallel GPUs/);
  assert.match(z, /\| Adam states \+ fp32 master weights \| 12P\/N \| .* \| host \(offloaded\) \|/);
  assert.match(z, /P from .*model\/config\.json \(derived from hidden_size 4096, 32 layers/);
  assert.match(z, /N from the setting ddx\.world\.size/);
  const pin = await hover(4, 45);
  assert.match(pin, /`zero_optimization\.offload_optimizer\.pin_memory`/);
  assert.match(pin, /Default: `true`/);
  assert.match(pin, /Memory: pinned host memory/);
  // the setting wins over the workspace's model
  await s.notify('workspace/didChangeConfiguration', { settings: { ddx: { model: { parameters: 1e9 } } } });
  assert.match(await hover(2, 5), /P = 1e\+09 parameters/);
  assert.equal((await s.close()).code, 0);
});

// The example log with DeepSpeed's configuration print as DeepSpeed writes
// it (print() then print_user_config()).
function logWithPrint(cfg, worldSize) {
  const lines = LOG.split('\n');
  const at = lines.findIndex((l) => l.includes('DeepSpeedEngine configuration:'));
  const sorted = (v) => (v && typeof v === 'object' && !Array.isArray(v)
    ? Object.fromEntries(Object.keys(v).sort().map((k) => [k, sorted(v[k])])) : v);
  const json = JSON.stringify(sorted(cfg), null, 4).replace(/": /g, '":');
  const print = [
    `[2025-03-14 09:12:41,773] [INFO] [config.py:1004:print]   world_size ................... ${worldSize}`,
    `[2025-03-14 09:12:41,774] [INFO] [config.py:1008:print_user_config]   json = ${json}`,
  ];
  lines.splice(at + 1, 0, ...print.join('\n').split('\n'));
  return lines.join('\n');
}

test('a diagnosed log feeds the checks: the OOM total warns, its world size checks the batch', async () => {
  const ws = tmpdir();
  const s = new Session();
  await s.initialize({ folders: [ws], options: { model: { parameters: 7e9 } } });
  // the config first: no log yet, nothing to say
  const cfg = { train_batch_size: 256, train_micro_batch_size_per_gpu: 4, gradient_accumulation_steps: 8, bf16: { enabled: true }, zero_optimization: { stage: 0 } };
  const text = JSON.stringify(cfg, null, 2) + '\n';
  const u = uri(path.join(ws, 'ds_config.json'));
  await s.open(null, { docUri: u, languageId: 'json', text });
  assert.deepEqual((await s.diagnosticsFor(u)).diagnostics, []);
  // then the log: 79.15 GiB GPUs, a data-parallel size of 16 -> both checks fire
  const n = s.diagnostics.get(u).length;
  const logPath = path.join(ws, 'train.log');
  fs.writeFileSync(logPath, logWithPrint(cfg, 16));
  await s.open(logPath);
  const p = await s.diagnosticsFor(u, { after: n });
  assert.deepEqual(codes(p), ['ds-config.batch', 'ds-config.memory']);
  const mem = p.diagnostics.find((d) => d.code === 'ds-config.memory');
  assert.equal(mem.severity, 2);
  assert.match(mem.message, /model states alone need ~104\.31 GiB per GPU \(ZeRO stage 0, P = 7e\+09, N = 16: 2P 16-bit weights \+ 2P 16-bit gradients/);
  assert.match(mem.message, /79\.15 GiB in total \(the OOM in train\.log\): this config cannot fit/);
  assert.equal(mem.range.start.line, 7); // the zero_optimization key
  const batch = p.diagnostics.find((d) => d.code === 'ds-config.batch');
  assert.match(batch.message, /data-parallel size 16 from train\.log: train_batch_size 256 != micro batch 4 x gradient_accumulation_steps 8 x 16/);
  // the hover on zero_optimization names the sources
  const h = await s.request('textDocument/hover', { textDocument: { uri: u }, position: { line: 7, character: 5 } });
  assert.match(h.contents.value, /GPU total 79\.15 GiB from the OOM in train\.log/);
  // stage 3 fits: the warning goes on the next change
  await s.notify('textDocument/didChange', { textDocument: { uri: u, version: 2 }, contentChanges: [{ text: text.replace('"stage": 0', '"stage": 3').replace('256', '512') }] });
  assert.deepEqual((await s.diagnosticsFor(u, { version: 2 })).diagnostics, []);
  assert.equal((await s.close()).code, 0);
});

const STAGE3 = {
  train_micro_batch_size_per_gpu: 8, gradient_accumulation_steps: 4, bf16: { enabled: true },
  zero_optimization: { stage: 3, overlap_comm: true, stage3_prefetch_bucket_size: 50000000, stage3_max_live_parameters: 1000000000, stage3_max_reuse_distance: 1000000000, stage3_param_persistence_threshold: 100000 },
};

async function fixTargets(files, log) {
  const ws = tmpdir();
  for (const [name, content] of Object.entries(files)) {
    fs.mkdirSync(path.dirname(path.join(ws, name)), { recursive: true });
    fs.writeFileSync(path.join(ws, name), content);
  }
  fs.writeFileSync(path.join(ws, 'train.log'), log);
  const s = new Session();
  await s.initialize({ folders: [ws] });
  const u = await s.open(path.join(ws, 'train.log'));
  const p = await s.diagnosticsFor(u);
  const oom = p.diagnostics.filter((d) => d.code === 'ds.oom.zero3-gather');
  const actions = await s.request('textDocument/codeAction', {
    textDocument: { uri: u }, range: oom[0].range, context: { diagnostics: oom, only: ['quickfix'] },
  });
  assert.equal((await s.close()).code, 0);
  // the edits (the HF Trainer's flags of "auto" keys name no file)
  return actions.filter((a) => !a.disabled && a.edit).map((a) => decodeURIComponent(a.edit.documentChanges[0].textDocument.uri).replace(/^.*\//, ''));
}

test('the config DeepSpeed printed in the log is found among the workspace files', async () => {
  const other = { ...STAGE3, train_micro_batch_size_per_gpu: 2 };
  const used = { ...STAGE3, train_micro_batch_size_per_gpu: 'auto', gradient_accumulation_steps: 'auto' };
  const files = { 'a_other.json': JSON.stringify(other, null, 2), 'b_train.json': JSON.stringify(used, null, 2) };
  // without the print, the first DeepSpeed JSON by name order
  const before = await fixTargets(files, LOG);
  assert.ok(before.length && before.every((f) => f === 'a_other.json'), before.join());
  // with it: the file whose values DeepSpeed printed ("auto" filled in by HF)
  const after = await fixTargets(files, logWithPrint({ ...STAGE3 }, 8));
  assert.ok(after.length && after.every((f) => f === 'b_train.json'), after.join());
  // HF's arguments printed as JSON name it too
  const named = await fixTargets({ ...files, 'configs/zero3.json': JSON.stringify(STAGE3) },
    LOG.replace('DeepSpeedEngine configuration:', 'DeepSpeedEngine configuration:\n{"output_dir": "out", "deepspeed": "configs/zero3.json", "bf16": true}'));
  assert.ok(named.length && named.every((f) => f === 'zero3.json'), named.join());
});

test('JSON that is not a DeepSpeed config gets no ds_config diagnostics; a 1 MB vocab.json does not stall the server', async () => {
  const ws = tmpdir();
  const s = new Session();
  await s.initialize({ folders: [ws] });
  // a tokenizer's vocabulary: one object of 50,000 keys, about 1 MB on one
  // line (GPT-2's vocab.json has 50,257), "fp16" among its tokens
  const vocab = {};
  const parts = ['Ġthe', 'ing', 'Ġmodel', 'ation', 'Ġ', 'er', 'Ġtrain', '▁', 'fp', 'ĉ', 'Ġgradient', 'ĠDeepSpeed'];
  for (let i = 0; i < 50000; i++) vocab[`${parts[i % parts.length]}${parts[(i >> 3) % parts.length]}${i.toString(36)}`] = i;
  vocab.fp16 = 50000;
  const vtext = JSON.stringify(vocab);
  assert.ok(vtext.length > 1000000, String(vtext.length));
  const docs = {
    'vocab.json': vtext,
    'tokenizer.json': JSON.stringify({ version: '1.0', truncation: null, padding: null, added_tokens: [{ id: 0, content: '<s>', special: true }], normalizer: null, model: { type: 'BPE', vocab: { '<s>': 0, fp16: 1 }, merges: ['Ġ t'] } }, null, 2),
    // a model's config.json (Llama), the HF Trainer's trainer_state.json
    // and TrainingArguments (train_batch_size, gradient_accumulation_steps,
    // boolean fp16/bf16: names DeepSpeed shares), package.json, a data file
    'config.json': JSON.stringify({ architectures: ['LlamaForCausalLM'], bos_token_id: 1, hidden_act: 'silu', hidden_size: 4096, intermediate_size: 11008, num_attention_heads: 32, num_hidden_layers: 32, torch_dtype: 'float16', transformers_version: '4.31.0', vocab_size: 32000 }, null, 2),
    'trainer_state.json': JSON.stringify({ best_metric: null, epoch: 3.0, global_step: 1500, is_world_process_zero: true, log_history: [{ epoch: 0.02, learning_rate: 2e-5, loss: 1.93, step: 10 }], max_steps: 1500, train_batch_size: 8, total_flos: 1.2e17, trial_name: null }, null, 2),
    'training_args.json': JSON.stringify({ output_dir: 'out', per_device_train_batch_size: 8, gradient_accumulation_steps: 4, learning_rate: 2e-5, fp16: true, bf16: false, deepspeed: 'ds_config.json' }, null, 2),
    'package.json': JSON.stringify({ name: 'x', version: '1.0.0', scripts: { test: 'node --test' }, devDependencies: { typescript: '^5.0.0' } }, null, 2),
    'results.json': JSON.stringify(Array.from({ length: 2000 }, (_, i) => ({ id: i, text: `sample ${i}`, score: i / 2000 }))),
  };
  const opened = [];
  for (const [name, text] of Object.entries(docs)) opened.push(await s.open(null, { docUri: uri(path.join(ws, name)), languageId: 'json', text }));
  // typing in the vocab: each change is checked again
  for (let v = 2; v <= 4; v++) {
    await s.notify('textDocument/didChange', {
      textDocument: { uri: opened[0], version: v },
      contentChanges: [{ range: { start: { line: 0, character: 1 }, end: { line: 0, character: 1 } }, text: `"Ġnew${v}": ${50000 + v}, ` }],
    });
  }
  // a ds_config opened after them is checked: the server got past them
  const u = uri(path.join(ws, 'ds_config.json'));
  await s.open(null, { docUri: u, languageId: 'json', text: BAD });
  const p = await s.diagnosticsFor(u);
  assert.ok(codes(p).includes('ds-config.unknown-key'));
  // and a request after all of them is answered
  const h = await s.request('textDocument/hover', { textDocument: { uri: u }, position: { line: 6, character: 5 } });
  assert.match(h.contents.value, /\*\*`zero_optimization`\*\* \(DeepSpeed\)/);
  for (const d of opened) assert.equal(s.diagnostics.has(d), false, `diagnostics for ${d}: ${JSON.stringify(s.diagnostics.get(d))}`.slice(0, 600));
  assert.equal((await s.close()).code, 0);
});

test('the micro-batch quick fix keeps train_batch_size = micro x accumulation x data-parallel size', async () => {
  // micro 7, accumulation 1, global 56 on 8 GPUs: halving to 3 x 2 would
  // make 48 and DeepSpeed would assert; the fix makes it 1 x 7
  const plan = async (cfg) => {
    const ws = tmpdir();
    const text = JSON.stringify(cfg, null, 2) + '\n';
    fs.writeFileSync(path.join(ws, 'ds_config.json'), text);
    fs.writeFileSync(path.join(ws, 'train.log'), LOG);
    const s = new Session();
    await s.initialize({ folders: [ws] });
    const u = await s.open(path.join(ws, 'train.log'));
    const p = await s.diagnosticsFor(u);
    const oom = p.diagnostics.filter((d) => d.code === 'ds.oom.zero3-gather');
    assert.ok(oom.length, JSON.stringify(p.diagnostics.map((d) => d.code)));
    const actions = await s.request('textDocument/codeAction', {
      textDocument: { uri: u }, range: oom[0].range, context: { diagnostics: oom, only: ['quickfix'] },
    });
    assert.equal((await s.close()).code, 0);
    const a = actions.find((x) => /micro batch/i.test(x.title));
    assert.ok(a, JSON.stringify(actions.map((x) => x.title)));
    return { a, text };
  };
  const odd = { ...STAGE3, train_batch_size: 56, train_micro_batch_size_per_gpu: 7, gradient_accumulation_steps: 1 };
  const { a, text } = await plan(odd);
  assert.equal(a.disabled, undefined, JSON.stringify(a.disabled));
  // the plan's title, the file, then the saving (unknown here: no model config.json)
  assert.match(a.title, /^ddx: Micro batch 7 -> 1, gradient accumulation 1 -> 7: the same global batch \(1 is the largest divisor of 7 up to 3\) \(ds_config\.json\): saving unknown \(.*\): ~halves activations$/);
  const fixed = JSON.parse(applyEdits(text, a.edit.documentChanges[0].edits));
  assert.deepEqual([fixed.train_batch_size, fixed.train_micro_batch_size_per_gpu, fixed.gradient_accumulation_steps], [56, 1, 7]);
  assert.equal(fixed.train_batch_size, fixed.train_micro_batch_size_per_gpu * fixed.gradient_accumulation_steps * 8);
  // even: halved and doubled, as the title says
  const even = await plan({ ...STAGE3, train_batch_size: 256 });
  assert.match(even.a.title, /^ddx: Halve the micro batch, double gradient accumulation \(global batch unchanged\)/);
  const f2 = JSON.parse(applyEdits(even.text, even.a.edit.documentChanges[0].edits));
  assert.deepEqual([f2.train_batch_size, f2.train_micro_batch_size_per_gpu, f2.gradient_accumulation_steps], [256, 4, 8]);
  // a micro batch of 1, or batch sizes that no data-parallel size fits: refused, with the reason
  const one = await plan({ ...STAGE3, train_micro_batch_size_per_gpu: 1 });
  assert.match(one.a.disabled.reason, /precondition not met: train_micro_batch_size_per_gpu > 1 \(it is 1\)/);
  const off = await plan({ ...odd, train_batch_size: 50 });
  assert.match(off.a.disabled.reason, /cannot shrink the micro batch: train_batch_size 50 is not train_micro_batch_size_per_gpu 7 x gradient_accumulation_steps 1 x a whole data-parallel size/);
});

test('a client that does not read: the write queue stops growing, nothing is lost once it reads', async () => {
  const child = spawn(DDX, ['lsp'], { stdio: ['pipe', 'pipe', 'pipe'], env: { ...process.env, DDX_LSP_MAX_WQUEUE: String(256 << 10) } });
  let stderr = '';
  child.stderr.on('data', (d) => (stderr += d));
  child.stdin.on('error', () => {});
  const frame = (m) => { const b = Buffer.from(JSON.stringify(m)); return Buffer.concat([Buffer.from(`Content-Length: ${b.length}\r\n\r\n`), b]); };
  const N = 600;
  const msgs = [frame({ jsonrpc: '2.0', id: 0, method: 'initialize', params: { processId: null, rootUri: null, capabilities: {} } })];
  for (let i = 1; i <= N; i++)
    msgs.push(frame({ jsonrpc: '2.0', id: i, method: 'workspace/executeCommand', params: { command: 'ddx.explain', arguments: ['ds.oom.zero3-gather'] } }));
  child.stdout.pause(); // we do not read
  child.stdin.write(Buffer.concat(msgs));
  const t0 = Date.now();
  while (!/reading paused/.test(stderr) && Date.now() - t0 < 8000) await new Promise((r) => setTimeout(r, 50));
  assert.match(stderr, /the client is not reading its messages: \d+ bytes queued \(limit 262144\); reading paused/);
  // now read everything: every answer arrives, in order
  let buf = Buffer.alloc(0);
  const ids = [];
  const done = new Promise((res) => {
    child.stdout.on('data', (d) => {
      buf = Buffer.concat([buf, d]);
      for (;;) {
        const h = buf.indexOf('\r\n\r\n');
        if (h < 0) break;
        const len = Number(/Content-Length: (\d+)/.exec(buf.slice(0, h).toString())[1]);
        if (buf.length < h + 4 + len) break;
        const m = JSON.parse(buf.slice(h + 4, h + 4 + len).toString());
        buf = buf.slice(h + 4 + len);
        if (m.id !== undefined) ids.push(m.id);
        if (m.id === N) res();
      }
    });
  });
  child.stdout.resume();
  await done;
  assert.deepEqual(ids, Array.from({ length: N + 1 }, (_, i) => i));
  assert.match(stderr, /reading resumed/);
  child.stdin.write(frame({ jsonrpc: '2.0', id: N + 1, method: 'shutdown' }));
  child.stdin.write(frame({ jsonrpc: '2.0', method: 'exit' }));
  const code = await new Promise((res) => child.on('exit', res));
  assert.equal(code, 0);
});

test('ddx check-config: exit 0 clean, 1 errors, 2 unreadable; text and JSON', () => {
  const dir = tmpdir();
  const w = (name, text) => { fs.writeFileSync(path.join(dir, name), text); return path.join(dir, name); };
  const clean = w('clean.json', JSON.stringify(STAGE3, null, 2));
  let r = spawnSync(DDX, ['check-config', clean], { encoding: 'utf8' });
  assert.equal(r.status, 0, r.stdout + r.stderr);
  assert.match(r.stdout, /0 errors, 0 warnings/);
  const warn = w('warn.json', '{"train_batch_size": 8, "my_key": 1}');
  r = spawnSync(DDX, ['check-config', warn], { encoding: 'utf8' });
  assert.equal(r.status, 0);
  assert.match(r.stdout, /warn\.json:1:25: warning: `my_key` is not a DeepSpeed key/);
  const bad = w('bad.json', BAD);
  r = spawnSync(DDX, ['check-config', bad, '--world-size', '16', '--params', '7B', '--gpu-memory', '16'], { encoding: 'utf8' });
  assert.equal(r.status, 1);
  assert.match(r.stdout, /bad\.json:9:5: error: unknown key `stage3_prefetch_bucket_sise`/);
  assert.match(r.stdout, /\[ds-config\.batch\]/);
  assert.match(r.stdout, /\[ds-config\.memory\]/);
  assert.match(r.stdout, /Model states per GPU/);
  r = spawnSync(DDX, ['check-config', '--format', 'json', bad], { encoding: 'utf8' });
  assert.equal(r.status, 1);
  const j = JSON.parse(r.stdout);
  assert.equal(j.deepspeed, true);
  const unk = j.findings.find((f) => f.code === 'ds-config.unknown-key');
  assert.deepEqual([unk.line, unk.column, unk.severity], [9, 5, 'error']);
  assert.equal(unk.patch.ops[0].to, 'stage3_prefetch_bucket_size');
  r = spawnSync(DDX, ['check-config', w('broken.json', '{"a": [1, 2')], { encoding: 'utf8' });
  assert.equal(r.status, 2);
  assert.match(r.stderr, /line 1, column 12: expected ',' or '\]'/);
  assert.equal(spawnSync(DDX, ['check-config', path.join(dir, 'missing.json')]).status, 2);
  assert.equal(spawnSync(DDX, ['check-config']).status, 2);
  assert.equal(spawnSync(DDX, ['check-config', clean, '--format', 'xml']).status, 2);
});
