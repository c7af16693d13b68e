// Hover, quick fixes on real ds_config.json files in many styles,
// workspace/executeCommand, progress, cancellation and settings.
'use strict';
const test = require('node:test');
const assert = require('node:assert/strict');
const fs = require('node:fs');
const path = require('node:path');
const { Session, CAPS, EXAMPLE, ROOT, uri, tmpdir } = require('./lib');

const LOG = fs.readFileSync(EXAMPLE, 'utf8');
const OOM_LINE = 45; // LSP line of the initiating OOM in the example

// Applies LSP TextEdits to text with the negotiated encoding.
function applyEdits(text, edits, enc = 'utf-16') {
  const lines = [];
  const re = /\r\n|\r|\n/g;
  let start = 0, m;
  while ((m = re.exec(text))) {
    lines.push(start);
    start = m.index + m[0].length;
  }
  lines.push(start);
  const offset = (p) => {
    if (p.line >= lines.length) return text.length;
    const ls = lines[p.line];
    const rest = text.slice(ls);
    if (enc === 'utf-16') return ls + p.character;
    return ls + Buffer.from(rest, 'utf8').slice(0, p.character).toString('utf8').length;
  };
  const sorted = edits.map((e) => ({ a: offset(e.range.start), b: offset(e.range.end), t: e.newText })).sort((x, y) => y.a - x.a);
  for (const e of sorted) text = text.slice(0, e.a) + e.t + text.slice(e.b);
  return text;
}

async function setup({ files = {}, log = LOG, caps = CAPS, options, logName = 'train.log' } = {}) {
  const ws = tmpdir();
  for (const [name, content] of Object.entries(files)) {
    fs.mkdirSync(path.dirname(path.join(ws, name)), { recursive: true });
    fs.writeFileSync(path.join(ws, name), content);
  }
  fs.writeFileSync(path.join(ws, logName), log);
  const s = new Session();
  await s.initialize({ folders: [ws], caps, options });
  const u = await s.open(path.join(ws, logName));
  const p = await s.diagnosticsFor(u);
  return { s, ws, u, diags: p.diagnostics };
}

function actionsFor(s, u, diags, line = OOM_LINE) {
  const inRange = diags.filter((d) => d.range.start.line === line);
  return s.request('textDocument/codeAction', {
    textDocument: { uri: u },
    range: { start: { line, character: 0 }, end: { line, character: 0 } },
    context: { diagnostics: inRange, only: ['quickfix'] },
  });
}

// ---------------------------------------------------------------- hover

test('hover on the diagnosed line: catalog entry with this occurrence\'s facts', async () => {
  const { s, u } = await setup();
  const h = await s.request('textDocument/hover', { textDocument: { uri: u }, position: { line: OOM_LINE, character: 10 } });
  const md = h.contents.value;
  assert.equal(h.contents.kind, 'markdown');
  assert.match(md, /CUDA out of memory while ZeRO-3 all-gathers/);
  assert.match(md, /Initiating failure\*\* on rank 5/);
  assert.match(md, /tried to allocate 3\.91 GiB on GPU 5: 79\.15 GiB total, 316\.88 MiB free/);
  for (const section of ['**Summary**', '**Why**', '**Confirm**', '**Fix**', '**Verify**', '**Related:**']) assert.ok(md.includes(section), section);
  assert.match(md, /\(<file:\/\/\/[^>]*\/catalog\/ds\.oom\.zero3-gather\.html>\)/); // the class's page
  assert.match(md, /\*\*Memory:\*\* 3\.60 GiB short on rank 5 during the ZeRO-3 parameter gather/);
  assert.equal(h.range.start.line, OOM_LINE);
  // a collateral line
  const c = await s.request('textDocument/hover', { textDocument: { uri: u }, position: { line: 46, character: 0 } });
  assert.match(c.contents.value, /\*\*Collateral\*\* of `ds\.oom\.zero3-gather`/);
  assert.match(c.contents.value, /NCCL watchdog/);
  // a line nothing matched
  assert.equal(await s.request('textDocument/hover', { textDocument: { uri: u }, position: { line: 0, character: 0 } }), null);
  assert.equal(await s.request('textDocument/hover', { textDocument: { uri: u }, position: { line: 100000, character: 0 } }), null);
  assert.equal((await s.close()).code, 0);
});

test('hover on ds_config keys: what it does, default, memory', async () => {
  const s = new Session();
  await s.initialize();
  const text = [
    '{',
    '  "train_batch_size": 64,',
    '  "train_micro_batch_size_per_gpu": 4,',
    '  "gradient_accumulation_steps": 2,',
    '  "gradient_clipping": 1.0,',
    '  "bf16": {"enabled": true},',
    '  "fp16": {"enabled": false},',
    '  "zero_optimization": {',
    '    "stage": 3,',
    '    "offload_optimizer": {"device": "cpu", "pin_memory": true},',
    '    "offload_param": {"device": "cpu"},',
    '    "stage3_prefetch_bucket_size": 5e7,',
    '    "stage3_param_persistence_threshold": 1e5,',
    '    "stage3_max_live_parameters": 1e9',
    '  },',
    '  "my_custom_key": 1',
    '}',
  ].join('\n');
  const u = 'file:///tmp/cfg/ds_config.json';
  await s.open(null, { docUri: u, languageId: 'json', text });
  const lines = text.split('\n');
  const hover = async (line, key, at = 1) => {
    const character = lines[line].indexOf(key) + at;
    const h = await s.request('textDocument/hover', { textDocument: { uri: u }, position: { line, character } });
    return h && h.contents.value;
  };
  assert.match(await hover(8, 'stage'), /`zero_optimization\.stage`[\s\S]*16\/N/);
  assert.match(await hover(8, '3', 0), /`zero_optimization\.stage`/); // on the value
  assert.match(await hover(2, 'train_micro'), /activations grow linearly/);
  assert.match(await hover(3, 'gradient_acc'), /Micro batches accumulated/);
  assert.match(await hover(1, 'train_batch'), /Global batch/);
  assert.match(await hover(4, 'gradient_clip'), /global gradient norm/);
  assert.match(await hover(5, 'bf16'), /bfloat16/);
  assert.match(await hover(5, 'enabled'), /`bf16\.enabled`/);
  assert.match(await hover(6, 'fp16'), /loss scaling/);
  assert.match(await hover(9, 'offload_optimizer'), /ZeRO-Offload/);
  assert.match(await hover(9, 'device'), /`cpu` or `nvme`/);
  assert.match(await hover(10, 'offload_param'), /Stage 3 only/);
  assert.match(await hover(11, 'stage3_prefetch'), /prefetched ahead/);
  assert.match(await hover(12, 'stage3_param'), /unpartitioned/);
  assert.match(await hover(13, 'stage3_max_live'), /gathered parameters/);
  assert.equal(await hover(15, 'my_custom_key'), null);
  assert.equal((await s.close()).code, 0);
});

// ---------------------------------------------------------- code actions

const STAGE3 = {
  train_micro_batch_size_per_gpu: 8,
  gradient_accumulation_steps: 4,
  bf16: { enabled: true },
  optimizer: { type: 'AdamW', params: { lr: 2e-5 } },
  zero_optimization: { stage: 3, overlap_comm: true, stage3_prefetch_bucket_size: 50000000, stage3_max_live_parameters: 1000000000, stage3_max_reuse_distance: 1000000000, stage3_param_persistence_threshold: 100000 },
};

const STYLES = {
  'two-space': JSON.stringify(STAGE3, null, 2) + '\n',
  'four-space, no final newline': JSON.stringify(STAGE3, null, 4),
  tabs: JSON.stringify(STAGE3, null, '\t') + '\n',
  crlf: JSON.stringify(STAGE3, null, 2).replace(/\n/g, '\r\n') + '\r\n',
  'one line': JSON.stringify(STAGE3) + '\n',
  'spaced one line': JSON.stringify(STAGE3).replace(/,/g, ', ').replace(/:/g, ': ') + '\n',
  'non-ASCII before the keys': JSON.stringify({ comment: 'Modèle 𝄞 ünïcode ✓', ...STAGE3 }, null, 2) + '\n',
};

for (const [style, text] of Object.entries(STYLES)) {
  test(`quick fixes on a ds_config.json in style: ${style}`, async () => {
    const { s, u, diags } = await setup({ files: { 'ds_config.json': text } });
    const actions = await actionsFor(s, u, diags);
    const enabled = actions.filter((a) => !a.disabled);
    assert.ok(enabled.length >= 3, JSON.stringify(actions.map((a) => [a.title, a.disabled])));
    assert.equal(actions.filter((a) => a.isPreferred).length, 1);
    assert.equal(enabled[0].isPreferred, true);
    const cfgUri = uri(fs.realpathSync(path.join(path.dirname(u.slice(7)), 'ds_config.json')));
    // data.patch: the id of the rule's config patch each action applies, one action per patch
    for (const a of actions) assert.ok(a.data && typeof a.data.patch === 'string' && a.data.patch !== '', `data.patch: ${JSON.stringify(a.data)} (${a.title})`);
    assert.equal(new Set(actions.map((a) => a.data.patch)).size, actions.length, 'one action per patch id');
    for (const a of enabled) {
      assert.equal(a.kind, 'quickfix');
      assert.equal(a.diagnostics[0].code, 'ds.oom.zero3-gather');
      const dc = a.edit.documentChanges;
      assert.equal(dc.length, 1);
      assert.equal(decodeURIComponent(dc[0].textDocument.uri), decodeURIComponent(cfgUri));
      assert.equal(dc[0].textDocument.version, null); // not open
      const out = applyEdits(text, dc[0].edits);
      const before = JSON.parse(text), after = JSON.parse(out);
      assert.notDeepEqual(after, before, a.title);
      // untouched top-level keys stay as they were
      for (const k of ['bf16', 'optimizer']) assert.deepEqual(after[k], before[k], `${a.title}: ${k}`);
      // line endings, indentation and final newline are kept
      assert.equal(/\r\n/.test(out), /\r\n/.test(text), a.title);
      assert.equal(out.endsWith('\n'), text.endsWith('\n'), a.title);
      if (text.includes('\t')) assert.ok(!/\n {2}"/.test(out), a.title);
      const lb = text.split(/\r?\n/), la = out.split(/\r?\n/);
      if (lb.length > 3) {
        const changed = la.filter((l) => !lb.includes(l)).length;
        assert.ok(changed <= 4, `${a.title}: ${changed} lines changed`);
      }
    }
    const prefetch = enabled.find((a) => /stage3_prefetch_bucket_size/.test(a.title));
    assert.ok(prefetch, actions.map((a) => a.title).join(' | '));
    const after = JSON.parse(applyEdits(text, prefetch.edit.documentChanges[0].edits));
    assert.equal(after.zero_optimization.stage3_prefetch_bucket_size, 1e7);
    const micro = enabled.find((a) => /micro batch/i.test(a.title));
    const m = JSON.parse(applyEdits(text, micro.edit.documentChanges[0].edits));
    assert.equal(m.train_micro_batch_size_per_gpu, 4);
    assert.equal(m.gradient_accumulation_steps, 8);
    assert.equal((await s.close()).code, 0);
  });
}

test('an open ds_config document wins, with its version; utf-8 positions', async () => {
  const text = STYLES['non-ASCII before the keys'];
  const caps = { ...CAPS, general: { positionEncodings: ['utf-8'] } };
  const { s, u, diags } = await setup({ files: { 'ds_config.json': '{"zero_optimization": {"stage": 1}}' }, caps });
  const cfgUri = 'file:///elsewhere/my_settings.json';
  await s.open(null, { docUri: cfgUri, languageId: 'json', text, version: 7 });
  const actions = await actionsFor(s, u, diags);
  const a = actions.find((x) => !x.disabled && /stage3_prefetch_bucket_size/.test(x.title));
  assert.ok(a);
  assert.equal(a.edit.documentChanges[0].textDocument.uri, cfgUri);
  assert.equal(a.edit.documentChanges[0].textDocument.version, 7);
  const after = JSON.parse(applyEdits(text, a.edit.documentChanges[0].edits, 'utf-8'));
  assert.equal(after.zero_optimization.stage3_prefetch_bucket_size, 1e7);
  assert.equal(after.comment, 'Modèle 𝄞 ünïcode ✓');
  assert.equal((await s.close()).code, 0);
});

test('the config path named in the log (--deepspeed X) is found inside the workspace', async () => {
  const log = LOG.replace(/^/, 'launch: deepspeed train.py --deepspeed configs/zero_three.json --bf16\n');
  const { s, u, diags } = await setup({
    log,
    files: { 'configs/zero_three.json': JSON.stringify(STAGE3, null, 2), 'ds_config.json': '{"zero_optimization": {"stage": 1}, "train_batch_size": 8}' },
  });
  const actions = await actionsFor(s, u, diags, OOM_LINE + 1);
  const a = actions.find((x) => !x.disabled);
  assert.ok(a, JSON.stringify(actions));
  assert.match(a.edit.documentChanges[0].textDocument.uri, /configs\/zero_three\.json$/);
  assert.match(a.title, /zero_three\.json/);
  assert.equal((await s.close()).code, 0);
});

test('workspace search: by name at the top two levels, then by content', async () => {
  let r = await setup({ files: { 'conf/deepspeed_z3.json': JSON.stringify(STAGE3) } });
  let a = (await actionsFor(r.s, r.u, r.diags)).find((x) => !x.disabled);
  assert.match(a.edit.documentChanges[0].textDocument.uri, /conf\/deepspeed_z3\.json$/);
  await r.s.close();
  r = await setup({ files: { 'package.json': '{"name": "x"}', 'exp/z3.json': JSON.stringify(STAGE3), 'a/b/ds_config.json': JSON.stringify(STAGE3) } });
  a = (await actionsFor(r.s, r.u, r.diags)).find((x) => !x.disabled);
  assert.match(a.edit.documentChanges[0].textDocument.uri, /exp\/z3\.json$/);
  await r.s.close();
});

test('the setting ddx.dsConfig.path is the last resort; without any config a disabled action says why', async () => {
  const outside = tmpdir();
  fs.writeFileSync(path.join(outside, 'cfg.json'), JSON.stringify(STAGE3, null, 2));
  const r = await setup();
  let actions = await actionsFor(r.s, r.u, r.diags);
  assert.equal(actions.length, 1);
  assert.ok(actions[0].disabled.reason.includes('no DeepSpeed config found'));
  await r.s.notify('workspace/didChangeConfiguration', { settings: { ddx: { dsConfig: { path: path.join(outside, 'cfg.json') } } } });
  actions = await actionsFor(r.s, r.u, r.diags);
  const a = actions.find((x) => !x.disabled);
  assert.match(a.edit.documentChanges[0].textDocument.uri, /cfg\.json$/);
  assert.equal((await r.s.close()).code, 0);
});

test('refusals: "auto" values, failing preconditions and unparseable files get disabled actions with the reason', async () => {
  const hf = { ...STAGE3, train_micro_batch_size_per_gpu: 'auto', gradient_accumulation_steps: 'auto' };
  let r = await setup({ files: { 'ds_config.json': JSON.stringify(hf, null, 2) } });
  let actions = await actionsFor(r.s, r.u, r.diags);
  // "auto" batch keys are the HF Trainer's: its flags, not an edit (ddx.showFix)
  const micro = actions.find((a) => /micro batch/i.test(a.title));
  assert.ok(!micro.disabled && !micro.edit, JSON.stringify(micro));
  assert.equal(micro.command.command, 'ddx.showFix');
  assert.match(micro.title, /--per_device_train_batch_size .* --gradient_accumulation_steps /);
  await r.s.close();
  for (const [bad, why] of [
    ['{\n  "zero_optimization": {"stage": 3,},\n}\n', /trailing comma/],
    ['// comment\n{"zero_optimization": {"stage": 3}}\n', /comment/],
    ['', /./],
  ]) {
    r = await setup({ files: { 'ds_config.json': bad } });
    actions = await actionsFor(r.s, r.u, r.diags);
    assert.equal(actions.length, 1, bad);
    assert.ok(actions[0].disabled, bad);
    assert.match(actions[0].disabled.reason, why);
    assert.equal(actions[0].edit, undefined);
    await r.s.close();
  }
  // stage 2: the stage-3-only fixes are refused with their precondition
  r = await setup({ files: { 'ds_config.json': JSON.stringify({ ...STAGE3, zero_optimization: { stage: 2 } }, null, 2) } });
  actions = await actionsFor(r.s, r.u, r.diags);
  assert.ok(actions.some((a) => a.disabled && /zero_optimization\.stage/.test(a.disabled.reason)));
  assert.ok(actions.some((a) => !a.disabled));
  await r.s.close();
});

test('clients without documentChanges get `changes`; without disabledSupport no disabled actions', async () => {
  const caps = { ...CAPS, workspace: {}, textDocument: { ...CAPS.textDocument, codeAction: {} } };
  const { s, u, diags } = await setup({ caps, files: { 'ds_config.json': JSON.stringify({ ...STAGE3, zero_optimization: { stage: 2 } }, null, 2) } });
  const actions = await actionsFor(s, u, diags);
  assert.ok(actions.length >= 1);
  for (const a of actions) {
    assert.equal(a.disabled, undefined);
    assert.equal(a.edit.documentChanges, undefined);
    assert.equal(Object.keys(a.edit.changes).length, 1);
  }
  // only=refactor: nothing
  const none = await s.request('textDocument/codeAction', {
    textDocument: { uri: u }, range: { start: { line: OOM_LINE, character: 0 }, end: { line: OOM_LINE, character: 0 } },
    context: { diagnostics: [], only: ['refactor'] },
  });
  assert.deepEqual(none, []);
  // range-based: no diagnostics in the context still finds the incident on the line
  const byRange = await s.request('textDocument/codeAction', {
    textDocument: { uri: u }, range: { start: { line: OOM_LINE, character: 0 }, end: { line: OOM_LINE, character: 5 } },
    context: { diagnostics: [] },
  });
  assert.equal(byRange.length, actions.length);
  assert.equal((await s.close()).code, 0);
});

// ---------------------------------------------------------- commands

test('ddx.diagnoseText returns the JSON report and publishes nothing', async () => {
  const s = new Session();
  await s.initialize();
  const r = await s.request('workspace/executeCommand', { command: 'ddx.diagnoseText', arguments: [LOG] });
  assert.equal(r.version, 1);
  assert.equal(r.incidents[0].rule, 'ds.oom.zero3-gather');
  assert.equal(r.incidents[0].line, OOM_LINE + 1);
  assert.equal(r.incidents[0].rank, 5);
  const r2 = await s.request('workspace/executeCommand', { command: 'ddx.diagnoseText', arguments: [{ text: 'all good\n' }] });
  assert.deepEqual(r2.incidents, []);
  assert.equal(s.diagnostics.size, 0);
  assert.equal((await s.close()).code, 0);
});

test('ddx.explain returns the catalog entry', async () => {
  const s = new Session();
  await s.initialize();
  const e = await s.request('workspace/executeCommand', { command: 'ddx.explain', arguments: ['ds.oom.activations'] });
  assert.equal(e.id, 'ds.oom.activations');
  assert.ok(e.summary && e.mechanism && e.fix.length && e.config_patches.length);
  assert.equal(e.samples, undefined);
  assert.match(e.href, /^file:\/\/\/.*\/catalog\/ds\.oom\.activations\.html$/);
  assert.match(e.rule_file, /rules\/deepspeed\/ds\.oom\.activations\.json$/);
  assert.equal((await s.close()).code, 0);
});

test('ddx.catalog lists every failure class, extra rule folders included', async () => {
  const extra = tmpdir();
  fs.writeFileSync(path.join(extra, 'site.custom.json'), JSON.stringify({
    id: 'site.custom', title: 'Our cluster quirk', phase: 'step', severity: 'error', role: 'cause', priority: 50,
    signatures: [{ regex: 'QUIRK-42', literals: ['QUIRK-42'] }],
    summary: 's', mechanism: 'm', fix: ['f'], samples: { positive: [{ text: 'QUIRK-42' }] },
  }));
  const s = new Session();
  const init = await s.initialize();
  assert.ok(init.capabilities.executeCommandProvider.commands.includes('ddx.catalog'));
  const before = await s.request('workspace/executeCommand', { command: 'ddx.catalog', arguments: [] });
  const ids = before.failures.map((f) => f.id);
  assert.ok(ids.length >= 56 && ids.includes('ds.oom.activations') && ids.includes('train.hang'));
  const oom = before.failures.find((f) => f.id === 'torch.oom.generic');
  assert.equal(oom.severity, 'error');
  assert.equal(oom.role, 'cause');
  assert.ok(oom.title.length > 0);
  s.notify('workspace/didChangeConfiguration', { settings: { ddx: { rules: { extraPaths: [extra] } } } });
  let after;
  for (let i = 0; i < 50; i++) {
    after = await s.request('workspace/executeCommand', { command: 'ddx.catalog', arguments: [] });
    if (after.failures.some((f) => f.id === 'site.custom')) break;
    await new Promise((r) => setTimeout(r, 100));
  }
  assert.ok(after.failures.some((f) => f.id === 'site.custom'));
  assert.equal((await s.close()).code, 0);
  fs.rmSync(extra, { recursive: true });
});

function bigLog(file, mb) {
  const fd = fs.openSync(file, 'w');
  const chunk = ('[2024-05-14 10:21:33,412] [INFO] [logging.py:96:log_dist] [Rank 3] step=17, skipped=0, lr=[1e-05]\n').repeat(10000);
  for (let n = 0; n < mb * 1048576; n += chunk.length) fs.writeSync(fd, chunk);
  fs.writeSync(fd, LOG);
  fs.closeSync(fd);
}

test('ddx.diagnoseFile streams a file in the workspace with progress and publishes its diagnostics', async (t) => {
  const ws = tmpdir();
  const file = path.join(ws, 'big.log');
  bigLog(file, 100);
  const s = new Session();
  await s.initialize({ folders: [ws] });
  const t0 = Date.now();
  const r = await s.request('workspace/executeCommand', { command: 'ddx.diagnoseFile', arguments: [uri(file)] });
  t.diagnostic(`ddx.diagnoseFile of ${(fs.statSync(file).size / 1048576).toFixed(0)} MiB: ${Date.now() - t0} ms`);
  assert.equal(r.incidents[0].rule, 'ds.oom.zero3-gather');
  const p = await s.diagnosticsFor(uri(file));
  assert.equal(p.diagnostics[0].range.start.line, r.incidents[0].line - 1);
  assert.equal(s.creates.length, 1);
  const kinds = s.progress.filter((x) => x.token === s.creates[0].token).map((x) => x.value.kind);
  assert.equal(kinds[0], 'begin');
  assert.equal(kinds[kinds.length - 1], 'end');
  assert.ok(kinds.includes('report') || Date.now() - t0 < 500);
  // With the client's own token.
  const n = s.progress.length;
  await s.request('workspace/executeCommand', { command: 'ddx.diagnoseFile', arguments: [uri(file)], workDoneToken: 'mine' });
  const mine = s.progress.slice(n).filter((x) => x.token === 'mine').map((x) => x.value.kind);
  assert.equal(mine[0], 'begin');
  assert.equal(mine[mine.length - 1], 'end');
  assert.equal(s.creates.length, 1);
  assert.equal((await s.close()).code, 0);
  fs.rmSync(ws, { recursive: true });
});

test('ddx.diagnoseFile: cancellation by $/cancelRequest and by the progress Cancel button', async () => {
  const ws = tmpdir();
  const file = path.join(ws, 'big.log');
  bigLog(file, 200);
  const s = new Session();
  await s.initialize({ folders: [ws] });
  const source = new (require('vscode-jsonrpc').CancellationTokenSource)();
  const p = s.conn.sendRequest('workspace/executeCommand', { command: 'ddx.diagnoseFile', arguments: [uri(file)] }, source.token);
  setTimeout(() => source.cancel(), 50);
  await assert.rejects(p, (e) => e.code === -32800);
  const p2 = s.request('workspace/executeCommand', { command: 'ddx.diagnoseFile', arguments: [uri(file)], workDoneToken: 'tok' });
  await s.until(() => s.progress.some((x) => x.token === 'tok' && x.value.kind === 'begin'), 10000, 'progress begin');
  assert.equal(s.progress.find((x) => x.token === 'tok').value.cancellable, true);
  await s.notify('window/workDoneProgress/cancel', { token: 'tok' });
  await assert.rejects(p2, (e) => e.code === -32800);
  assert.equal(s.diagnostics.size, 0);
  assert.equal((await s.close()).code, 0);
  fs.rmSync(ws, { recursive: true });
});

test('ddx.diagnoseFile refuses paths outside the workspace unless the setting allows it', async () => {
  const ws = tmpdir();
  const outside = tmpdir();
  fs.writeFileSync(path.join(outside, 'x.log'), LOG);
  fs.symlinkSync(path.join(outside, 'x.log'), path.join(ws, 'link.log'));
  const s = new Session();
  await s.initialize({ folders: [ws] });
  for (const target of [path.join(outside, 'x.log'), path.join(ws, 'link.log'), path.join(ws, '..', path.basename(outside), 'x.log')]) {
    await assert.rejects(s.request('workspace/executeCommand', { command: 'ddx.diagnoseFile', arguments: [uri(target)] }), (e) => /outside the workspace/.test(e.message) && e.data?.reason === 'outsideWorkspace', target);
  }
  await assert.rejects(s.request('workspace/executeCommand', { command: 'ddx.diagnoseFile', arguments: [uri(path.join(ws, 'missing.log'))] }), /No such file/);
  await assert.rejects(s.request('workspace/executeCommand', { command: 'ddx.diagnoseFile', arguments: ['https://example.com/x.log'] }), (e) => e.code === -32602);
  await s.notify('workspace/didChangeConfiguration', { settings: { ddx: { diagnoseFile: { allowOutsideWorkspace: true } } } });
  const r = await s.request('workspace/executeCommand', { command: 'ddx.diagnoseFile', arguments: [uri(path.join(outside, 'x.log'))] });
  assert.equal(r.incidents[0].rule, 'ds.oom.zero3-gather');
  assert.equal((await s.close()).code, 0);
});

// ---------------------------------------------------------- settings

test('didChangeConfiguration: extra rule folders reload the catalog; a broken one is reported and the built-in catalog stays', async () => {
  const rulesDir = tmpdir();
  const rule = JSON.parse(fs.readFileSync(path.join(ROOT, 'rules/host/proc.segfault.json'), 'utf8'));
  rule.id = 'custom.widget-broke';
  rule.title = 'The widget broke';
  rule.framework = 'train';
  rule.signatures = [{ id: 'widget', regex: 'WIDGET_BROKE code=(?<code>\\d+)', literals: ['WIDGET_BROKE'], confidence: 0.9 }];
  rule.context = [];
  rule.explains = [];
  rule.related = [];
  rule.samples = { positive: [{ text: 'WIDGET_BROKE code=7', source: 'test', facts: { code: '7' } }], negative: [] };
  delete rule.config_patches;
  fs.writeFileSync(path.join(rulesDir, 'custom.widget-broke.json'), JSON.stringify(rule, null, 2));
  const s = new Session();
  await s.initialize();
  const u = 'file:///tmp/custom.log';
  await s.open(null, { docUri: u, text: 'hello\n[rank2]: WIDGET_BROKE code=7\n' });
  let p = await s.diagnosticsFor(u);
  assert.equal(p.diagnostics.length, 0);
  await s.notify('workspace/didChangeConfiguration', { settings: { ddx: { rules: { extraPaths: [rulesDir] } } } });
  p = await s.diagnosticsFor(u, { after: 1 });
  assert.equal(p.diagnostics[0].code, 'custom.widget-broke');
  assert.match(p.diagnostics[0].codeDescription.href, /^file:\/\/.*custom\.widget-broke\.json$/);
  assert.match(p.diagnostics[0].message, /rank 2/);
  const h = await s.request('textDocument/hover', { textDocument: { uri: u }, position: { line: 1, character: 3 } });
  assert.match(h.contents.value, /`code` = `7`/);
  // A broken rule folder: an error message, the working catalog stays.
  const bad = tmpdir();
  fs.writeFileSync(path.join(bad, 'x.json'), '{"id": 1}');
  await s.notify('workspace/didChangeConfiguration', { settings: { 'ddx.rules.extraPaths': [bad] } });
  await s.until(() => s.logs.some((l) => l.show && /rule catalog did not load/.test(l.message)), 5000, 'the error message');
  const r = await s.request('workspace/executeCommand', { command: 'ddx.diagnoseText', arguments: [LOG] });
  assert.equal(r.incidents[0].rule, 'ds.oom.zero3-gather');
  assert.equal((await s.close()).code, 0);
});

test('initializationOptions carry the same settings', async () => {
  const ws = tmpdir();
  fs.writeFileSync(path.join(ws, 'mine.json'), JSON.stringify(STAGE3, null, 2));
  fs.writeFileSync(path.join(ws, 'train.log'), LOG);
  const s = new Session();
  await s.initialize({ folders: [], options: { dsConfig: { path: path.join(ws, 'mine.json') } } });
  const u = await s.open(path.join(ws, 'train.log'));
  const p = await s.diagnosticsFor(u);
  const actions = await actionsFor(s, u, p.diagnostics);
  assert.ok(actions.some((a) => !a.disabled && /mine\.json$/.test(a.edit.documentChanges[0].textDocument.uri)));
  assert.equal((await s.close()).code, 0);
});

test('workspace/didChangeWorkspaceFolders: added folders become readable, removed ones not', async () => {
  const a = tmpdir();
  const b = tmpdir();
  fs.writeFileSync(path.join(b, 'x.log'), LOG);
  const s = new Session();
  await s.initialize({ folders: [a] });
  const run = () => s.request('workspace/executeCommand', { command: 'ddx.diagnoseFile', arguments: [uri(path.join(b, 'x.log'))] });
  await assert.rejects(run(), /outside the workspace/);
  await s.notify('workspace/didChangeWorkspaceFolders', { event: { added: [{ uri: uri(b), name: 'b' }], removed: [] } });
  assert.equal((await run()).incidents[0].rule, 'ds.oom.zero3-gather');
  await s.notify('workspace/didChangeWorkspaceFolders', { event: { added: [], removed: [{ uri: uri(b), name: 'b' }] } });
  await assert.rejects(run(), /outside the workspace/);
  assert.equal((await s.close()).code, 0);
});

test('a long document scan reports work-done progress on a token the server creates', async () => {
  const s = new Session();
  await s.initialize();
  const text = ('[2024-05-14 10:21:33,412] [INFO] [engine.py:1:f] [Rank 1] step=1 loss=0.5 DeepSpeed\n').repeat(700000) + LOG;
  const u = 'file:///tmp/progress.log';
  await s.open(null, { docUri: u, text });
  await s.diagnosticsFor(u, { ms: 60000 });
  assert.equal(s.creates.length, 1);
  const tok = s.creates[0].token;
  const kinds = s.progress.filter((p) => p.token === tok).map((p) => p.value.kind);
  // A scan faster than the first report interval says nothing at all.
  if (kinds.length) {
    assert.equal(kinds[0], 'begin');
    await s.until(() => s.progress.some((p) => p.token === tok && p.value.kind === 'end'), 5000, 'progress end');
  }
  assert.equal((await s.close()).code, 0);
});
