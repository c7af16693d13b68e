// A hostile workspace (issue 17): links to /dev/stdin and FIFOs named like
// configs, /dev/zero as a rule folder, a FIFO or an outside file behind
// ddx.diagnoseFile, thousands of open logs, a live log that keeps growing.
// Every request is answered, nothing blocks the loop, memory stays bounded.
'use strict';
const test = require('node:test');
const assert = require('node:assert/strict');
const fs = require('node:fs');
const path = require('node:path');
const { spawnSync } = require('node:child_process');
const { Session, uri, tmpdir, EXAMPLE, DDX } = require('./lib.js');

// A sanitizer build doubles memory and time: fewer documents, its own bound.
const sanitized = /libasan|libubsan/.test(spawnSync('ldd', [DDX], { encoding: 'utf8' }).stdout || '');

const DS = JSON.stringify({ train_micro_batch_size_per_gpu: 4, gradient_accumulation_steps: 1, zero_optimization: { stage: 3 } }, null, 2);
const OOM =
  '[rank2]: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 2 has a total capacity of 79.15 GiB of which 1.06 GiB is free.';

function peakKb(pid) {
  return Number(/VmHWM:\s+(\d+)/.exec(fs.readFileSync(`/proc/${pid}/status`, 'utf8'))[1]);
}

function mkfifo(p) {
  const r = spawnSync('mkfifo', [p]);
  assert.equal(r.status, 0, 'mkfifo');
}

// Every one of n requests gets its answer (no request is lost to a reader
// of the server's own stdin, none waits on a blocked loop).
async function allAnswered(s, u, n) {
  const ps = [];
  for (let i = 0; i < n; i++) ps.push(s.request('textDocument/hover', { textDocument: { uri: u }, position: { line: 1, character: 3 } }));
  let t;
  const timeout = new Promise((_, rej) => (t = setTimeout(() => rej(new Error('requests unanswered after 30 s')), 30000)));
  await Promise.race([Promise.all(ps), timeout]).finally(() => clearTimeout(t));
}

test('a model config.json linked to /dev/stdin, and FIFOs named config.json: every request is answered', async () => {
  const ws = tmpdir();
  fs.symlinkSync('/dev/stdin', path.join(ws, 'config.json'));
  fs.mkdirSync(path.join(ws, 'model'));
  mkfifo(path.join(ws, 'model', 'config.json'));
  fs.writeFileSync(path.join(ws, 'ds_config.json'), DS);
  const s = new Session();
  await s.initialize({ folders: [ws] });
  const u = await s.open(path.join(ws, 'ds_config.json'), { languageId: 'json' });
  await allAnswered(s, u, 3000);
  // the config checks still ran (once the model search was over)
  await s.diagnosticsFor(u, { ms: 10000 });
  assert.equal((await s.close()).code, 0);
  fs.rmSync(ws, { recursive: true });
});

test('ddx.rules.extraPaths naming /dev/zero or a FIFO: a clear error, bounded memory, the built-in catalog still serves', async (t) => {
  const ws = tmpdir();
  const rules = path.join(ws, 'rules');
  fs.mkdirSync(rules);
  fs.symlinkSync('/dev/zero', path.join(rules, 'zero.json'));
  mkfifo(path.join(rules, 'fifo.json'));
  for (const extra of [['/dev/zero'], [path.join(rules, 'fifo.json')], [rules]]) {
    const s = new Session();
    await s.initialize({ folders: [ws], options: { settings: { ddx: { rules: { extraPaths: extra } } } } });
    await s.notify('workspace/didChangeConfiguration', { settings: { ddx: { rules: { extraPaths: extra } } } });
    const log = path.join(ws, 'x.log');
    fs.writeFileSync(log, OOM + '\n');
    const u = await s.open(log);
    const p = await s.diagnosticsFor(u, { ms: 20000 });
    assert.equal(p.diagnostics[0].code, 'torch.oom.generic', `extraPaths ${extra}`);
    await s.until(() => s.logs.some((l) => /not a regular file/.test(l.message)), 10000, 'the refusal in the log');
    const kb = peakKb(s.child.pid);
    t.diagnostic(`extraPaths ${extra}: server peak RSS ${kb} kB`);
    assert.ok(kb < (sanitized ? 400 : 200) * 1024, `peak RSS ${kb} kB`);
    assert.equal((await s.close()).code, 0);
  }
  fs.rmSync(ws, { recursive: true });
});

test('ddx.diagnoseFile: a FIFO is refused at once; a link out of the workspace is refused by its real path', async () => {
  const ws = tmpdir();
  const outside = tmpdir();
  mkfifo(path.join(ws, 'pipe.log'));
  fs.writeFileSync(path.join(outside, 'secret.log'), OOM + '\n');
  fs.symlinkSync(path.join(outside, 'secret.log'), path.join(ws, 'link.log'));
  fs.symlinkSync(outside, path.join(ws, 'linkdir'));
  const s = new Session();
  await s.initialize({ folders: [ws] });
  // four FIFOs at once would take all four pool threads if they blocked
  const fifo = [1, 2, 3, 4].map(() => assert.rejects(s.request('workspace/executeCommand', { command: 'ddx.diagnoseFile', arguments: [uri(path.join(ws, 'pipe.log'))] }), /not a regular file/));
  await Promise.all(fifo);
  await assert.rejects(s.request('workspace/executeCommand', { command: 'ddx.diagnoseFile', arguments: [uri(path.join(ws, 'link.log'))] }), /outside the workspace/);
  await assert.rejects(s.request('workspace/executeCommand', { command: 'ddx.diagnoseFile', arguments: [uri(path.join(ws, 'linkdir', 'secret.log'))] }), /outside the workspace/);
  // the pool still scans
  fs.writeFileSync(path.join(ws, 'ok.log'), OOM + '\n');
  const r = await s.request('workspace/executeCommand', { command: 'ddx.diagnoseFile', arguments: [uri(path.join(ws, 'ok.log'))] });
  assert.equal(r.incidents[0].rule, 'torch.oom.generic');
  assert.equal((await s.close()).code, 0);
  fs.rmSync(ws, { recursive: true });
  fs.rmSync(outside, { recursive: true });
});

test('ddx.diagnoseFile: a FIFO swapped in after the request is refused by the worker, not waited on', async () => {
  const ws = tmpdir();
  const big = path.join(ws, 'big.log');
  fs.closeSync(fs.openSync(big, 'w'));
  fs.truncateSync(big, 1024 * 1024 * 1024); // sparse: keeps the one pool thread busy a while
  const swap = path.join(ws, 'swap.log');
  fs.writeFileSync(swap, OOM + '\n');
  // one pool thread: the second request waits behind the first
  const s = new Session({ env: { UV_THREADPOOL_SIZE: '1' } });
  await s.initialize({ folders: [ws] });
  const first = s.request('workspace/executeCommand', { command: 'ddx.diagnoseFile', arguments: [uri(big)] });
  const second = s.request('workspace/executeCommand', { command: 'ddx.diagnoseFile', arguments: [uri(swap)] });
  await new Promise((r) => setTimeout(r, 50)); // both requests are in
  fs.rmSync(swap);
  mkfifo(swap);
  await first;
  let t;
  const timeout = new Promise((_, rej) => (t = setTimeout(() => rej(new Error('the swapped request was never answered')), 30000)));
  await Promise.race([assert.rejects(second, /not a regular file/), timeout]).finally(() => clearTimeout(t));
  assert.equal((await s.close()).code, 0);
  fs.rmSync(ws, { recursive: true });
});

test('20,000 open logs: memory grows with the texts, not with a scanner per document', async (t) => {
  const s = new Session();
  await s.initialize({});
  const base = peakKb(s.child.pid);
  const text = fs.readFileSync(EXAMPLE, 'utf8');
  const N = sanitized ? 2000 : 20000;
  for (let i = 0; i < N; i++) {
    s.notify('textDocument/didOpen', { textDocument: { uri: `file:///ws/run${i}/rank.log`, languageId: 'log', version: 1, text } });
  }
  await s.until(() => s.diagnostics.size === N, 600000, `${N} publishes`);
  const kb = peakKb(s.child.pid);
  const per = ((kb - base) / N).toFixed(1);
  t.diagnostic(`${N} open logs of ${text.length} bytes: peak RSS ${kb} kB (${per} kB per document)`);
  // 2 MiB read buffer + 400 KB layout per document before: 8.6 GB for 20,000
  assert.ok(kb < (sanitized ? 1536 : 2048) * 1024, `peak RSS ${kb} kB`);
  const last = s.diagnostics.get(`file:///ws/run${N - 1}/rank.log`).pop();
  assert.equal(last.diagnostics[0].code, 'ds.oom.zero3-gather');
  assert.equal((await s.close()).code, 0);
});

test('a live log that keeps growing: no hang while progress goes on, one when it stops, withdrawn when it resumes', async () => {
  const s = new Session();
  await s.initialize({ options: { settings: { ddx: { hang: { stallSeconds: 1.5 } } } } });
  await s.notify('workspace/didChangeConfiguration', { settings: { ddx: { hang: { stallSeconds: 1.5 } } } });
  const u = 'file:///ws/live/train.log';
  let text = '';
  let version = 1;
  const step = (i) => `[Rank 0] step=${i}, skipped=0, lr=[1e-05], mom=[(0.9, 0.999)]\n`;
  for (let i = 1; i <= 5; i++) text += step(i);
  await s.notify('textDocument/didOpen', { textDocument: { uri: u, languageId: 'log', version, text } });
  const hangs = () => (s.diagnostics.get(u) || []).filter((p) => p.diagnostics.some((d) => d.code === 'train.hang'));
  // a log opened as it stands (a finished run) shows its hang at once
  await s.until(() => hangs().length === 1, 10000, 'the hang of the log as opened');
  // progress continues: 20 appends, 100 ms apart
  const before = (s.diagnostics.get(u) || []).length;
  for (let i = 6; i <= 25; i++) {
    const lines = text.split('\n').length - 1;
    text += step(i);
    version++;
    await s.notify('textDocument/didChange', {
      textDocument: { uri: u, version },
      contentChanges: [{ range: { start: { line: lines, character: 0 }, end: { line: lines, character: 0 } }, text: step(i) }],
    });
    await new Promise((r) => setTimeout(r, 100));
  }
  await s.until(() => s.logs.some((l) => /output resumed/.test(l.message)), 5000, 'the resumed line');
  const during = (s.diagnostics.get(u) || []).slice(before);
  assert.ok(during.length > 0, 'the growing log was published');
  assert.ok(!during.some((p) => p.diagnostics.some((d) => d.code === 'train.hang')), 'no hang while progress continues');
  // it stops: exactly one hang, after the stall
  await s.until(() => hangs().length === 2, 10000, 'the hang after the stall');
  await new Promise((r) => setTimeout(r, 2500));
  assert.equal(hangs().length, 2, 'one hang per stall');
  assert.equal(s.logs.filter((l) => /no new output/.test(l.message)).length, 1);
  // it resumes: the hang is withdrawn and the resume logged once more
  const lines = text.split('\n').length - 1;
  version++;
  await s.notify('textDocument/didChange', {
    textDocument: { uri: u, version },
    contentChanges: [{ range: { start: { line: lines, character: 0 }, end: { line: lines, character: 0 } }, text: step(26) }],
  });
  const p = await s.diagnosticsFor(u, { version, ms: 10000 });
  assert.ok(!p.diagnostics.some((d) => d.code === 'train.hang'));
  assert.equal(s.logs.filter((l) => /output resumed/.test(l.message)).length, 2);
  // a real error is published at once while the log grows
  const l2 = text.split('\n').length;
  version++;
  await s.notify('textDocument/didChange', {
    textDocument: { uri: u, version },
    contentChanges: [{ range: { start: { line: l2, character: 0 }, end: { line: l2, character: 0 } }, text: OOM + '\n' }],
  });
  const pe = await s.diagnosticsFor(u, { version, ms: 10000 });
  assert.equal(pe.diagnostics[0].code, 'torch.oom.generic');
  assert.equal((await s.close()).code, 0);
});
