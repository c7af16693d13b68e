// The OOM quick-fix ladder through the real server (issue 19, items 2 and
// 4): 40 generated ds_config.json files (HF "auto" values, ZeRO-3 already
// on, "offload_optimizer": {"device": "none"}, no optimizer block, every
// stage and precision, several styles) opened beside an 8-rank
// activation-OOM log: every one gets an applicable fix (an edit that keeps
// the file JSON, or the HF Trainer's flags through ddx.showFix) or, where
// none exists, the reason; every memory fix carries its saving in its
// title; with the model's config.json (ddx.memory.modelConfig, outside the
// workspace) and ddx.memory.seqLen the saving is in GiB with "enough" or
// not, and the preferred fix is the cheapest that is enough; hover on the
// ds_config shows the memory table; a config whose predicted peak exceeds
// the GPU gets a warning.
'use strict';
const test = require('node:test');
const assert = require('node:assert/strict');
const fs = require('node:fs');
const path = require('node:path');
const { Session, CAPS, uri, tmpdir } = require('./lib');

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

// An 8-rank activation OOM in backward under DeepSpeed (ds.oom.activations).
function oomLog({ batchBanner = false } = {}) {
  const l = ['[2025-03-14 09:12:19,031] [INFO] [comm.py:652:init_distributed] Initializing TorchBackend in DeepSpeed with backend nccl'];
  if (batchBanner) {
    l.push('[INFO|trainer.py:2134] 2025-03-14 09:12:42,001 >> ***** Running training *****');
    l.push('[INFO|trainer.py:2137] 2025-03-14 09:12:42,001 >>   Instantaneous batch size per device = 8');
    l.push('[INFO|trainer.py:2140] 2025-03-14 09:12:42,001 >>   Gradient Accumulation steps = 4');
  }
  for (let r = 0; r < 8; r++) {
    l.push(`[rank${r}]: Traceback (most recent call last):`);
    l.push(`[rank${r}]:   File "/workspace/train.py", line 211, in <module>`);
    l.push(`[rank${r}]:     trainer.train()`);
    l.push(`[rank${r}]:   File "/usr/local/lib/python3.10/dist-packages/deepspeed/runtime/engine.py", line 1976, in backward`);
    l.push(`[rank${r}]:     self.optimizer.backward(loss, retain_graph=retain_graph)`);
    l.push(`[rank${r}]:   File "/usr/local/lib/python3.10/dist-packages/torch/autograd/__init__.py", line 289, in backward`);
    l.push(`[rank${r}]:     _engine_run_backward(`);
    l.push(
      `[rank${r}]: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 3.91 GiB. GPU ${r} has a total capacity of 79.15 GiB of which 1.06 GiB is free. ` +
        'Including non-PyTorch memory, this process has 78.08 GiB memory in use. Of the allocated memory 74.12 GiB is allocated by PyTorch, and 2.47 GiB is reserved by PyTorch but unallocated.',
    );
  }
  return l.join('\n') + '\n';
}

// Config number k of 40: the states a new user's configs are in.
function genConfig(k) {
  const autos = k % 2 === 0; // HF "auto" values
  const stage = [3, 3, 2, 1, 0, null, 3, 2][k % 8]; // ZeRO-3 already on, most often
  const offload = [{ device: 'none' }, { device: 'none', pin_memory: true }, null, { device: 'cpu' }, { device: 'none' }][k % 5];
  const optimizer = Math.floor(k / 5) % 2 === 1; // no optimizer block in half of them
  const precision = ['bf16', 'auto', 'fp16', 'fp32'][Math.floor(k / 3) % 4];
  const c = {};
  if (autos) {
    c.train_batch_size = 'auto';
    c.train_micro_batch_size_per_gpu = 'auto';
    c.gradient_accumulation_steps = 'auto';
    c.gradient_clipping = 'auto';
  } else {
    c.train_micro_batch_size_per_gpu = [1, 2, 4, 8][k % 4];
    if (k % 3) c.gradient_accumulation_steps = [1, 4, 8][k % 3];
  }
  if (precision === 'bf16') c.bf16 = { enabled: true };
  if (precision === 'fp16') c.fp16 = { enabled: true, loss_scale: 0, initial_scale_power: 16 };
  if (precision === 'auto' && autos) {
    c.fp16 = { enabled: 'auto' };
    c.bf16 = { enabled: 'auto' };
  }
  if (precision === 'fp32' && k % 2) c.bf16 = { enabled: false };
  if (stage !== null || offload) {
    const z = {};
    if (stage !== null) z.stage = stage;
    if (offload) z.offload_optimizer = offload;
    z.overlap_comm = true;
    z.contiguous_gradients = true;
    if (stage === 3) {
      z.stage3_prefetch_bucket_size = autos ? 'auto' : 50000000;
      z.stage3_param_persistence_threshold = autos ? 'auto' : 100000;
      if (k % 7 === 0) z.offload_param = { device: 'cpu', pin_memory: true };
      z.stage3_gather_16bit_weights_on_model_save = true;
    }
    c.zero_optimization = z;
  }
  if (optimizer) c.optimizer = { type: 'AdamW', params: { lr: autos ? 'auto' : 2e-5, weight_decay: autos ? 'auto' : 0.0 } };
  if (k % 4 === 1) c.wandb = { enabled: true, project: 'llama-微调 🚀' };
  const style = k % 5;
  let text;
  if (style === 0) text = JSON.stringify(c, null, 2) + '\n';
  else if (style === 1) text = JSON.stringify(c, null, 4);
  else if (style === 2) text = JSON.stringify(c, null, '\t') + '\n';
  else if (style === 3) text = JSON.stringify(c, null, 2).replace(/\n/g, '\r\n') + '\r\n';
  else text = JSON.stringify(c) + '\n';
  return text;
}

const LLAMA_7B = {
  architectures: ['LlamaForCausalLM'],
  model_type: 'llama',
  hidden_size: 4096,
  intermediate_size: 11008,
  num_attention_heads: 32,
  num_hidden_layers: 32,
  num_key_value_heads: 32,
  vocab_size: 32000,
  max_position_embeddings: 4096,
  tie_word_embeddings: false,
  torch_dtype: 'bfloat16',
};

async function logActions(s, logUri, diag) {
  return s.request('textDocument/codeAction', {
    textDocument: { uri: logUri },
    range: diag.range,
    context: { diagnostics: [diag], only: ['quickfix'] },
  });
}

test('40 generated ds_config.json beside an 8-rank activation OOM: 40 of 40 get a fix or a reason', async () => {
  const ws = tmpdir('ddx-oom40-');
  const logPath = path.join(ws, 'train.log');
  fs.writeFileSync(logPath, oomLog());
  const s = new Session();
  await s.initialize({ folders: [ws] });
  const logUri = await s.open(logPath);
  const p = await s.diagnosticsFor(logUri);
  const primary = p.diagnostics.find((d) => d.code === 'ds.oom.activations');
  assert.ok(primary, `an activation OOM: ${p.diagnostics.map((d) => d.code)}`);
  let withFix = 0;
  let withReason = 0;
  let edits = 0;
  let flags = 0;
  const noFix = [];
  for (let k = 0; k < 40; k++) {
    const text = genConfig(k);
    const cfgUri = uri(path.join(ws, 'ds_config.json'));
    await s.open(null, { docUri: cfgUri, languageId: 'json', text, version: 1 });
    const acts = await logActions(s, logUri, primary);
    const enabled = acts.filter((a) => !a.disabled);
    const disabled = acts.filter((a) => a.disabled);
    for (const a of disabled) assert.ok(a.disabled.reason && a.disabled.reason.length > 10, `a reason: ${a.title}`);
    for (const a of enabled) {
      // every memory quick fix carries its saving in its title
      assert.match(a.title, /saves ~|costs ~|saving unknown/, a.title);
      if (a.edit) {
        edits++;
        const docEdits = a.edit.documentChanges[0].edits;
        const out = applyEdits(text, docEdits);
        assert.doesNotThrow(() => JSON.parse(out), `config ${k} stays JSON after ${a.title}:\n${out}`);
        assert.notEqual(out, text);
        // the file's line endings are kept
        if (text.includes('\r\n')) assert.ok(!/[^\r]\n/.test(out), 'CRLF kept');
      } else {
        flags++;
        assert.equal(a.command.command, 'ddx.showFix');
        const flag = a.command.arguments[0].copy;
        assert.match(flag, /^--[a-z_]+/);
        assert.ok(a.title.includes(flag), `the title names the flags: ${a.title}`);
        assert.ok(text.includes('"auto"'), 'flags only for the HF Trainer config');
      }
    }
    assert.ok(enabled.filter((a) => a.isPreferred).length <= 1, 'at most one preferred');
    if (enabled.length) {
      withFix++;
      assert.equal(enabled.filter((a) => a.isPreferred).length, 1, 'one preferred');
    } else if (disabled.length) {
      withReason++;
      noFix.push(k);
    }
    await s.notify('textDocument/didClose', { textDocument: { uri: cfgUri } });
  }
  console.log(
    `40 configs beside an 8-rank activation OOM: ${withFix} with an applicable fix, ${withReason} with only reasons ` +
      `(${edits} edits, ${flags} HF Trainer flag actions)${noFix.length ? `; no fix: ${noFix}` : ''}`,
  );
  assert.equal(withFix + withReason, 40);
  assert.equal(withFix, 40, `configs without an applicable fix: ${noFix}`);
  // the flag action runs: the server shows the flags and returns them
  const hf = genConfig(0);
  const cfgUri = uri(path.join(ws, 'ds_config.json'));
  await s.open(null, { docUri: cfgUri, languageId: 'json', text: hf, version: 1 });
  const acts = await logActions(s, logUri, primary);
  const ck = acts.find((a) => a.command && a.command.arguments[0].copy === '--gradient_checkpointing');
  assert.ok(ck, `--gradient_checkpointing offered: ${acts.map((a) => a.title).join('\n')}`);
  assert.ok(!acts.some((a) => a.edit && JSON.stringify(a.edit).includes('activation_checkpointing')), 'no ds_config checkpointing edit in the HF config');
  const batch = acts.find((a) => a.command && a.command.arguments[0].copy.includes('--per_device_train_batch_size'));
  assert.ok(batch, 'the auto batch keys: the Trainer flags');
  const before = s.logs.length;
  const r = await s.request('workspace/executeCommand', { command: ck.command.command, arguments: ck.command.arguments });
  assert.equal(r.copy, '--gradient_checkpointing');
  await s.until(() => s.logs.slice(before).some((m) => m.show && m.message.includes('--gradient_checkpointing')), 5000, 'the flags shown');
  await s.close();
});

test('savings: GiB with the model config.json (a setting outside the workspace) and seqLen; the preferred is the cheapest that is enough', async () => {
  const ws = tmpdir('ddx-oomsave-');
  const outside = tmpdir('ddx-model-');
  const modelPath = path.join(outside, 'config.json');
  fs.writeFileSync(modelPath, JSON.stringify(LLAMA_7B, null, 2));
  const logPath = path.join(ws, 'train.log');
  fs.writeFileSync(logPath, oomLog({ batchBanner: true }));
  const s = new Session();
  await s.initialize({ folders: [ws], options: { settings: { ddx: { memory: { modelConfig: modelPath, seqLen: 4096 } } } } });
  await s.notify('workspace/didChangeConfiguration', { settings: { ddx: { memory: { modelConfig: modelPath, seqLen: 4096 } } } });
  const logUri = await s.open(logPath);
  const p = await s.diagnosticsFor(logUri);
  const primary = p.diagnostics.find((d) => d.code === 'ds.oom.activations');
  assert.ok(primary);
  // a numeric config (no "auto"): edits with savings in GiB
  const cfg = {
    train_micro_batch_size_per_gpu: 8,
    gradient_accumulation_steps: 4,
    bf16: { enabled: true },
    zero_optimization: { stage: 2, overlap_comm: true },
    optimizer: { type: 'AdamW', params: { lr: 2e-5 } },
  };
  const cfgUri = uri(path.join(ws, 'ds_config.json'));
  await s.open(null, { docUri: cfgUri, languageId: 'json', text: JSON.stringify(cfg, null, 2) + '\n' });
  // the model search runs on the thread pool: wait until the titles have numbers
  let acts = [];
  for (let i = 0; i < 50; i++) {
    acts = await logActions(s, logUri, primary);
    if (acts.some((a) => /saves ~[\d.]+/.test(a.title))) break;
    await new Promise((r) => setTimeout(r, 100));
  }
  const enabled = acts.filter((a) => !a.disabled);
  console.log(enabled.map((a) => `${a.isPreferred ? '* ' : '  '}${a.title}`).join('\n'));
  assert.ok(enabled.length >= 3);
  for (const a of enabled) assert.match(a.title, /saves ~[\d.]+(-[\d.]+)? GiB per GPU|costs ~|saves ~0 GiB/, a.title);
  assert.ok(enabled.every((a) => /enough|not enough|maybe enough/.test(a.title) || /~0 GiB|costs/.test(a.title)), 'enough or not');
  const pref = enabled.filter((a) => a.isPreferred);
  assert.equal(pref.length, 1);
  const enough = enabled.filter((a) => /, enough/.test(a.title));
  if (enough.length) assert.equal(pref[0], enough[0], 'the cheapest (first rung) that is enough');
  // the HF Trainer config: the flags priced from the log's batch (8 per device)
  await s.notify('textDocument/didClose', { textDocument: { uri: cfgUri } });
  await s.open(null, { docUri: cfgUri, languageId: 'json', text: genConfig(0), version: 2 });
  acts = await logActions(s, logUri, primary);
  const batch = acts.find((a) => a.command && a.command.arguments[0].copy.includes('--per_device_train_batch_size'));
  assert.ok(batch);
  assert.equal(batch.command.arguments[0].copy, '--per_device_train_batch_size 4 --gradient_accumulation_steps 8');
  assert.match(batch.title, /saves ~[\d.]+/);
  await s.close();
});

test('without the model: a share, never a number; hover shows the memory table; an OOM-predicted config gets a warning', async () => {
  const ws = tmpdir('ddx-oommem-');
  fs.writeFileSync(path.join(ws, 'train.log'), oomLog());
  const s = new Session();
  await s.initialize({ folders: [ws] });
  const logUri = await s.open(path.join(ws, 'train.log'));
  const p = await s.diagnosticsFor(logUri);
  const primary = p.diagnostics.find((d) => d.code === 'ds.oom.activations');
  const cfgText = JSON.stringify({ train_micro_batch_size_per_gpu: 4, gradient_accumulation_steps: 2, zero_optimization: { stage: 2 } }, null, 2) + '\n';
  const cfgUri = uri(path.join(ws, 'ds_config.json'));
  await s.open(null, { docUri: cfgUri, languageId: 'json', text: cfgText });
  const acts = (await logActions(s, logUri, primary)).filter((a) => !a.disabled);
  assert.ok(acts.length);
  for (const a of acts) {
    assert.match(a.title, /saving unknown \(the model is unknown/, a.title);
    assert.doesNotMatch(a.title, /saves ~\d/);
  }
  assert.ok(acts.some((a) => a.title.includes('~halves activations')));
  await s.close();

  // hover and warning with a 7B model on a 16 GiB GPU
  const ws2 = tmpdir('ddx-oomwarn-');
  fs.writeFileSync(path.join(ws2, 'config.json'), JSON.stringify(LLAMA_7B));
  const s2 = new Session();
  await s2.initialize({ folders: [ws2] });
  await s2.notify('workspace/didChangeConfiguration', { settings: { ddx: { memory: { seqLen: 4096, gpuMemoryGiB: 16 } } } });
  const big = JSON.stringify({ train_micro_batch_size_per_gpu: 8, gradient_accumulation_steps: 1, bf16: { enabled: true }, zero_optimization: { stage: 0 } }, null, 2) + '\n';
  const u2 = uri(path.join(ws2, 'ds_config.json'));
  await s2.open(null, { docUri: u2, languageId: 'json', text: big });
  await s2.until(() => (s2.diagnostics.get(u2) || []).some((q) => q.diagnostics.some((d) => d.code === 'ds-config.memory-peak')), 10000, 'the memory warning');
  const warn = s2.diagnostics
    .get(u2)
    .flatMap((q) => q.diagnostics)
    .find((d) => d.code === 'ds-config.memory-peak');
  assert.equal(warn.severity, 2);
  assert.match(warn.message, /OOM predicted/);
  const line = big.split('\n').findIndex((l) => l.includes('zero_optimization'));
  assert.equal(warn.range.start.line, line);
  const h = await s2.request('textDocument/hover', { textDocument: { uri: u2 }, position: { line, character: 4 } });
  assert.ok(h && h.contents.value.includes('Peak memory per GPU'), h && h.contents.value);
  assert.match(h.contents.value, /\|/); // the table
  assert.match(h.contents.value, /Sequence length: 4096/);
  // a config that fits gets no warning
  const small = JSON.stringify({ train_micro_batch_size_per_gpu: 1, bf16: { enabled: true }, zero_optimization: { stage: 3, offload_param: { device: 'cpu' }, offload_optimizer: { device: 'cpu' } } }, null, 2) + '\n';
  const n = (s2.diagnostics.get(u2) || []).length;
  await s2.notify('textDocument/didChange', { textDocument: { uri: u2, version: 2 }, contentChanges: [{ text: small }] });
  const q = await s2.diagnosticsFor(u2, { after: n, version: 2 });
  assert.ok(!q.diagnostics.some((d) => d.code === 'ds-config.memory-peak'), JSON.stringify(q.diagnostics));
  await s2.close();
});

test('a client without disabledSupport still hears why no fix applies', async () => {
  const ws = tmpdir('ddx-oomwhy-');
  fs.writeFileSync(path.join(ws, 'train.log'), oomLog());
  const caps = JSON.parse(JSON.stringify(CAPS));
  delete caps.textDocument.codeAction.disabledSupport;
  const s = new Session();
  await s.initialize({ folders: [ws], caps });
  const logUri = await s.open(path.join(ws, 'train.log'));
  const p = await s.diagnosticsFor(logUri);
  const primary = p.diagnostics.find((d) => d.code === 'ds.oom.activations');
  // every rung done already: ZeRO-3, both offloads, micro batch 1, bf16, checkpointing in CPU memory
  const done = {
    train_micro_batch_size_per_gpu: 1,
    gradient_accumulation_steps: 16,
    bf16: { enabled: true },
    activation_checkpointing: { partition_activations: true, cpu_checkpointing: true },
    zero_optimization: { stage: 3, offload_param: { device: 'cpu' }, offload_optimizer: { device: 'cpu' } },
    optimizer: { type: 'AdamW', params: { lr: 1e-5 } },
  };
  const cfgUri = uri(path.join(ws, 'ds_config.json'));
  await s.open(null, { docUri: cfgUri, languageId: 'json', text: JSON.stringify(done, null, 2) });
  const acts = await logActions(s, logUri, primary);
  assert.equal(acts.length, 1, JSON.stringify(acts));
  assert.match(acts[0].title, /no quick fix applies in ds_config\.json: /);
  assert.equal(acts[0].command.command, 'ddx.showFix');
  await s.close();
});
