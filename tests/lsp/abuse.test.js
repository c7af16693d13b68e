// Hostile inputs for the language server: each is answered, nothing is
// lost, and the server still serves afterwards (issue: reliability).
'use strict';
const test = require('node:test');
const assert = require('node:assert/strict');
const fs = require('node:fs');
const path = require('node:path');
const { Session, uri, tmpdir } = require('./lib.js');

const OOM =
  'torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 1 has a total capacity of 79.15 GiB of which 1.06 GiB is free.';

test('a 50 MB single line, binary bytes and invalid UTF-8 in open documents', async () => {
  const s = new Session();
  await s.initialize({});
  const long = 'file:///ws/long.log';
  s.notify('textDocument/didOpen', {
    textDocument: { uri: long, languageId: 'log', version: 1, text: 'x'.repeat(50 * 1024 * 1024) + ' ' + OOM + '\n' },
  });
  const p = await s.diagnosticsFor(long, 60000);
  assert.equal(p.diagnostics[0].code, 'torch.oom.generic');
  assert.equal(p.diagnostics[0].range.start.line, 0);
  let bin = '';
  for (let i = 0; i < 20000; i++) bin += String.fromCharCode(i % 0xd7ff);
  const b = 'file:///ws/binary.log';
  s.notify('textDocument/didOpen', {
    textDocument: { uri: b, languageId: 'log', version: 1, text: '\u0000\ufffd' + bin + '\n[rank3]: ' + OOM + '\n' },
  });
  const pb = await s.diagnosticsFor(b, 20000);
  assert.equal(pb.diagnostics[0].code, 'torch.oom.generic');
  // still serving
  const r = await s.request('workspace/executeCommand', { command: 'ddx.diagnoseText', arguments: [OOM] });
  assert.equal(r.incidents[0].rule, 'torch.oom.generic');
  assert.equal((await s.close()).code, 0);
});

test('a 2 GB file through ddx.diagnoseFile streams with bounded memory', async (t) => {
  const ws = tmpdir();
  const file = path.join(ws, 'huge.log');
  fs.closeSync(fs.openSync(file, 'w'));
  fs.truncateSync(file, 2 * 1024 * 1024 * 1024 - 200); // sparse: 2 GB of NUL bytes
  fs.appendFileSync(file, '\n[rank6]: ' + OOM + '\n');
  const s = new Session();
  await s.initialize({ folders: [ws] });
  const t0 = Date.now();
  const r = await s.request('workspace/executeCommand', { command: 'ddx.diagnoseFile', arguments: [uri(file)] });
  t.diagnostic(`ddx.diagnoseFile of 2 GB: ${Date.now() - t0} ms`);
  assert.equal(r.incidents[0].rule, 'torch.oom.generic');
  assert.equal(r.incidents[0].rank, 6);
  assert.equal(r.stats.bytes, fs.statSync(file).size);
  const status = fs.readFileSync(`/proc/${s.child.pid}/status`, 'utf8');
  const rss = Number(/VmHWM:\s+(\d+)/.exec(status)[1]);
  t.diagnostic(`server peak RSS ${rss} kB`);
  assert.ok(rss < 256 * 1024, `peak RSS ${rss} kB`);
  assert.equal((await s.close()).code, 0);
  fs.rmSync(ws, { recursive: true });
});
