// One full session under valgrind memcheck: zero errors, zero leaks, every
// libuv handle closed (the loop ends by itself). Skipped without valgrind.
'use strict';
const test = require('node:test');
const assert = require('node:assert/strict');
const fs = require('node:fs');
const path = require('node:path');
const { spawnSync } = require('node:child_process');
const { Session, EXAMPLE, CAPS, DDX, uri, tmpdir } = require('./lib');

const hasValgrind = spawnSync('valgrind', ['--version']).status === 0;
// A sanitizer build cannot run under valgrind (and is checked by ASan/LSan).
const sanitized = /libasan|libubsan/.test(spawnSync('ldd', [DDX], { encoding: 'utf8' }).stdout || '');

test('a session under valgrind memcheck is clean', { skip: (!hasValgrind && 'valgrind is not installed') || (sanitized && 'ASan/UBSan build'), timeout: 240000 }, async () => {
  const ws = tmpdir();
  fs.writeFileSync(path.join(ws, 'train.log'), fs.readFileSync(EXAMPLE));
  fs.writeFileSync(path.join(ws, 'ds_config.json'), JSON.stringify({ train_micro_batch_size_per_gpu: 4, gradient_accumulation_steps: 2, zero_optimization: { stage: 3 }, optimizer: { type: 'AdamW' } }, null, 2));
  const s = new Session({
    wrap: ['valgrind', `--suppressions=${path.join(__dirname, 'valgrind.supp')}`, '--leak-check=full', '--show-leak-kinds=all',
      '--errors-for-leak-kinds=all', '--error-exitcode=99', '-q'],
  });
  await s.initialize({ folders: [ws], caps: CAPS, trace: 'verbose' });
  const u = await s.open(path.join(ws, 'train.log'));
  const p = await s.diagnosticsFor(u, { ms: 60000 });
  assert.equal(p.diagnostics[0].code, 'ds.oom.zero3-gather');
  await s.notify('textDocument/didChange', { textDocument: { uri: u, version: 2 }, contentChanges: [{ range: { start: { line: 0, character: 0 }, end: { line: 1, character: 0 } }, text: 'é𝄞\r' }] });
  await s.diagnosticsFor(u, { version: 2, ms: 60000 });
  await s.request('textDocument/hover', { textDocument: { uri: u }, position: { line: 45, character: 2 } });
  const actions = await s.request('textDocument/codeAction', { textDocument: { uri: u }, range: { start: { line: 45, character: 0 }, end: { line: 45, character: 0 } }, context: { diagnostics: [] } });
  assert.ok(actions.some((a) => !a.disabled));
  await s.request('workspace/executeCommand', { command: 'ddx.diagnoseFile', arguments: [uri(path.join(ws, 'train.log'))] });
  await s.request('workspace/executeCommand', { command: 'ddx.explain', arguments: ['ds.oom.activations'] });
  await s.notify('workspace/didChangeConfiguration', { settings: { ddx: { rules: { extraPaths: ['/nonexistent'] } } } });
  // a request still running at shutdown is answered, then everything closes
  const pending = s.request('workspace/executeCommand', { command: 'ddx.diagnoseText', arguments: ['z'.repeat(4 << 20)] }).catch((e) => e.code);
  await s.notify('textDocument/didClose', { textDocument: { uri: u } });
  const { code } = await s.close(60000);
  assert.equal(code, 0, s.stderr);
  const r = await pending;
  assert.ok(r === -32800 || (r && r.incidents), String(r));
});
