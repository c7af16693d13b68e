// Documents and diagnostics: sync (full, incremental, out of range),
// encodings, line counting, and diagnostics that agree with the CLI.
'use strict';
const test = require('node:test');
const assert = require('node:assert/strict');
const fs = require('node:fs');
const path = require('node:path');
const { Session, CAPS, EXAMPLE, CORPUS, uri, tmpdir, cliReport } = require('./lib');

const OOM = 'torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 3.91 GiB. GPU 5 has a total capacity of 79.15 GiB of which 316.88 MiB is free.';
const lspLines = (text) => text.split(/\r\n|\r|\n/);

test('diagnostics on the example log: error, collateral, links, catalog URL', async () => {
  const s = new Session();
  await s.initialize();
  const u = await s.open(EXAMPLE);
  const p = await s.diagnosticsFor(u);
  const cli = cliReport(EXAMPLE).incidents[0];
  assert.equal(p.version, 1);
  const primary = p.diagnostics[0];
  const rest = p.diagnostics.filter((x) => x.data.incident === 0 && x.data.role === 'collateral');
  assert.equal(primary.severity, 1);
  assert.equal(primary.code, cli.rule);
  assert.equal(primary.source, 'ddx');
  assert.equal(primary.range.start.line, cli.line - 1);
  assert.equal(primary.range.start.character, 0);
  const lines = lspLines(fs.readFileSync(EXAMPLE, 'utf8'));
  assert.equal(primary.range.end.character, lines[cli.line - 1].length);
  assert.match(primary.message, /CUDA out of memory while ZeRO-3/);
  assert.match(primary.message, /rank 5\b/);
  assert.ok(primary.message.includes('Fix: Shrink the gather window'), primary.message);
  assert.equal(primary.codeDescription.href, 'https://github.com/ddx-dev/ddx/blob/main/rules/deepspeed/ds.oom.zero3-gather.json');
  // collateral: one Information diagnostic per class, at its first line
  assert.equal(rest.length, cli.collateral.length);
  for (const c of cli.collateral) {
    const d = rest.find((x) => x.code === c.rule);
    assert.ok(d, c.rule);
    assert.equal(d.severity, 3);
    assert.equal(d.range.start.line, c.first_line - 1);
    assert.match(d.message, new RegExp(`${c.count} events?`));
    assert.match(d.message, /Collateral of ds\.oom\.zero3-gather \(rank 5/);
    assert.equal(d.relatedInformation[0].location.range.start.line, cli.line - 1);
    assert.ok(primary.relatedInformation.some((r) => r.location.range.start.line === c.first_line - 1));
  }
  assert.match(rest.find((x) => x.code === 'nccl.watchdog-timeout').message, /ranks 0-4,6-7/);
  assert.equal((await s.close()).code, 0);
});

test('every corpus log: the primary diagnosis and its line agree with `ddx diagnose`', async () => {
  const s = new Session();
  await s.initialize();
  const files = fs.readdirSync(CORPUS).filter((f) => f.endsWith('.log')).sort();
  assert.ok(files.length >= 50);
  const uris = [];
  for (const f of files) uris.push(await s.open(path.join(CORPUS, f)));
  let multiRank = 0;
  for (let i = 0; i < files.length; i++) {
    const p = await s.diagnosticsFor(uris[i]);
    const cli = cliReport(path.join(CORPUS, files[i]));
    if (!cli.incidents.length) {
      assert.equal(p.diagnostics.length, 0, files[i]);
      continue;
    }
    const inc = cli.incidents[0];
    const d = p.diagnostics[0];
    assert.equal(d.code, inc.rule, files[i]);
    assert.equal(d.range.start.line, inc.line - 1, files[i]);
    assert.equal(d.severity, inc.severity === 'error' ? 1 : inc.severity === 'warning' ? 2 : 3, files[i]);
    if (inc.rank !== null) assert.match(d.message, new RegExp(`rank ${inc.rank}\\b`), files[i]);
    else assert.match(d.message, /rank unknown/, files[i]);
    const infos = p.diagnostics.filter((x) => x.data.role === 'collateral' && x.data.incident === 0);
    assert.equal(infos.length, inc.collateral.length, files[i]);
    if (inc.ranks.length > 1 || inc.collateral.length) multiRank++;
  }
  assert.ok(multiRank >= 10, `multi-rank logs: ${multiRank}`);
  assert.equal((await s.close()).code, 0);
});

test('bare \\r (tqdm) counts as a line end, as in the editor', async () => {
  const s = new Session();
  await s.initialize();
  const dir = tmpdir();
  const bars = Array.from({ length: 40 }, (_, i) => ` ${i}%|##    | ${i}/100 [00:0${i % 10}<00:10]`).join('\r');
  const text = `[rank0]: starting\n${bars}\r\n[rank3]: ${OOM}\r\nmore\rlines\n`;
  const file = path.join(dir, 'tqdm.log');
  fs.writeFileSync(file, text);
  const u = await s.open(file);
  const p = await s.diagnosticsFor(u);
  const expected = lspLines(text).findIndex((l) => l.includes('OutOfMemoryError'));
  assert.equal(expected, 41);
  assert.equal(p.diagnostics[0].range.start.line, expected);
  assert.equal(cliReport(file).incidents[0].line - 1, expected);
  assert.match(p.diagnostics[0].message, /rank 3/);
  assert.equal((await s.close()).code, 0);
});

async function columns(encodings) {
  const s = new Session();
  const r = await s.initialize({ caps: { ...CAPS, general: { positionEncodings: encodings } } });
  const prefix = 'héllo 𝄞 wörld ✓ ';
  const text = `start\n${prefix}[rank2]: ${OOM}\nend\n`;
  const u = await s.open('/tmp/cols.log', { text, docUri: 'file:///tmp/cols-' + encodings.join('_') + '.log' });
  const p = await s.diagnosticsFor(u);
  // An edit right after the 𝄞 (a surrogate pair in UTF-16, 4 bytes in UTF-8).
  const col = r.capabilities.positionEncoding === 'utf-8' ? Buffer.byteLength('héllo 𝄞') : 'héllo 𝄞'.length;
  await s.notify('textDocument/didChange', {
    textDocument: { uri: u, version: 2 },
    contentChanges: [{ range: { start: { line: 1, character: col }, end: { line: 1, character: col } }, text: ' ♥' }],
  });
  const p2 = await s.diagnosticsFor(u, { version: 2 });
  const hover = await s.request('textDocument/hover', { textDocument: { uri: u }, position: { line: 1, character: 2 } });
  await s.close();
  return { enc: r.capabilities.positionEncoding, line: `${prefix}[rank2]: ${OOM}`, d: p.diagnostics[0], d2: p2.diagnostics[0], hover };
}

test('positionEncoding utf-16 (default): columns count UTF-16 code units', async () => {
  const { enc, line, d, d2, hover } = await columns(['utf-16']);
  assert.equal(enc, 'utf-16');
  assert.equal(d.range.start.line, 1);
  assert.equal(d.range.end.character, line.length);
  assert.notEqual(line.length, Buffer.byteLength(line));
  assert.equal(d2.range.end.character, line.length + 2);
  assert.equal(hover.range.end.character, line.length + 2);
});

test('positionEncoding utf-8 when the client offers it: columns count bytes', async () => {
  const { enc, line, d, d2 } = await columns(['utf-8', 'utf-16']);
  assert.equal(enc, 'utf-8');
  assert.equal(d.range.end.character, Buffer.byteLength(line));
  assert.equal(d2.range.end.character, Buffer.byteLength(line) + Buffer.byteLength(' ♥'));
});

test('no positionEncodings at all means utf-16', async () => {
  const { enc } = await columns([]);
  assert.equal(enc, 'utf-16');
});

test('didChange: incremental edits add and remove the failure; full sync replaces the text', async () => {
  const s = new Session();
  await s.initialize();
  const u = 'file:///tmp/inc.log';
  await s.open(null, { docUri: u, text: 'line 0\nline 1\nline 2\n' });
  let p = await s.diagnosticsFor(u);
  assert.equal(p.diagnostics.length, 0);
  await s.notify('textDocument/didChange', {
    textDocument: { uri: u, version: 2 },
    contentChanges: [{ range: { start: { line: 2, character: 0 }, end: { line: 2, character: 0 } }, text: `[rank6]: ${OOM}\n` }],
  });
  p = await s.diagnosticsFor(u, { version: 2 });
  assert.equal(p.diagnostics[0].range.start.line, 2);
  assert.match(p.diagnostics[0].message, /rank 6/);
  // Two changes in one notification, each relative to the previous result.
  await s.notify('textDocument/didChange', {
    textDocument: { uri: u, version: 3 },
    contentChanges: [
      { range: { start: { line: 0, character: 0 }, end: { line: 0, character: 0 } }, text: 'new first\r\n' },
      { range: { start: { line: 0, character: 0 }, end: { line: 0, character: 3 } }, text: 'NEW' },
    ],
  });
  p = await s.diagnosticsFor(u, { version: 3 });
  assert.equal(p.diagnostics[0].range.start.line, 3);
  // Delete the failure line again.
  await s.notify('textDocument/didChange', {
    textDocument: { uri: u, version: 4 },
    contentChanges: [{ range: { start: { line: 3, character: 0 }, end: { line: 4, character: 0 } }, text: '' }],
  });
  p = await s.diagnosticsFor(u, { version: 4 });
  assert.equal(p.diagnostics.length, 0);
  await s.notify('textDocument/didChange', { textDocument: { uri: u, version: 5 }, contentChanges: [{ text: `a\rb\r[rank1]: ${OOM}` }] });
  p = await s.diagnosticsFor(u, { version: 5 });
  assert.equal(p.diagnostics[0].range.start.line, 2);
  assert.equal((await s.close()).code, 0);
});

test('didChange out of range clamps, a reversed range is rejected, unknown documents are ignored', async () => {
  const s = new Session();
  await s.initialize();
  const u = 'file:///tmp/oob.log';
  await s.open(null, { docUri: u, text: 'one\ntwo' });
  await s.diagnosticsFor(u);
  // Past the last line: the end of the document (LSP clamps).
  await s.notify('textDocument/didChange', {
    textDocument: { uri: u, version: 2 },
    contentChanges: [{ range: { start: { line: 99, character: 5 }, end: { line: 120, character: 0 } }, text: `\n[rank4]: ${OOM}` }],
  });
  let p = await s.diagnosticsFor(u, { version: 2 });
  assert.equal(p.diagnostics[0].range.start.line, 2);
  // Past the line end: the line end.
  await s.notify('textDocument/didChange', {
    textDocument: { uri: u, version: 3 },
    contentChanges: [{ range: { start: { line: 0, character: 500 }, end: { line: 0, character: 900 } }, text: '!' }],
  });
  p = await s.diagnosticsFor(u, { version: 3 });
  assert.equal(p.diagnostics[0].range.start.line, 2);
  await s.notify('textDocument/didChange', {
    textDocument: { uri: u, version: 4 },
    contentChanges: [{ range: { start: { line: 2, character: 0 }, end: { line: 0, character: 0 } }, text: 'x' }],
  });
  await s.until(() => s.logs.some((l) => /change 0 rejected: range start is after its end/.test(l.message)), 5000, 'the rejection log');
  await s.notify('textDocument/didChange', { textDocument: { uri: 'file:///tmp/never-opened.log', version: 1 }, contentChanges: [{ text: 'x' }] });
  await s.until(() => s.logs.some((l) => /never-opened\.log, which is not open/.test(l.message)), 5000, 'the unknown-document log');
  await s.notify('textDocument/didChange', { textDocument: { uri: u, version: 5 }, contentChanges: 'nope' });
  await s.notify('textDocument/didOpen', { textDocument: { uri: 5 } });
  const h = await s.request('textDocument/hover', { textDocument: { uri: u }, position: { line: 2, character: 1 } });
  assert.match(h.contents.value, /OutOfMemory|out of memory/);
  assert.equal((await s.close()).code, 0);
});

test('didClose clears the diagnostics; didSave is accepted', async () => {
  const s = new Session();
  await s.initialize();
  const u = await s.open(EXAMPLE);
  await s.diagnosticsFor(u);
  await s.notify('textDocument/didSave', { textDocument: { uri: u } });
  await s.notify('textDocument/didClose', { textDocument: { uri: u } });
  const p = await s.diagnosticsFor(u, { after: 1 });
  assert.deepEqual(p.diagnostics, []);
  assert.equal(await s.request('textDocument/hover', { textDocument: { uri: u }, position: { line: 45, character: 0 } }), null);
  assert.equal((await s.close()).code, 0);
});

test('which documents are logs: languageId log/plaintext, *.log, *.out, *.err, slurm-*.out', async () => {
  const s = new Session();
  await s.initialize();
  const text = `[rank1]: ${OOM}\n`;
  const logs = [
    ['file:///w/a.txt', 'plaintext'],
    ['file:///w/b', 'log'],
    ['file:///w/job.out', 'foo'],
    ['file:///w/job.ERR', 'foo'],
    ['file:///w/slurm-1234.out', 'foo'],
  ];
  await s.open(null, { docUri: 'file:///w/train.py', languageId: 'python', text });
  for (const [u, lang] of logs) await s.open(null, { docUri: u, languageId: lang, text });
  for (const [u] of logs) assert.equal((await s.diagnosticsFor(u)).diagnostics[0].code, 'torch.oom.generic');
  assert.equal(s.diagnostics.has('file:///w/train.py'), false);
  assert.equal((await s.close()).code, 0);
});

test('results for an older version are dropped: the last publish has the last version', async () => {
  const s = new Session();
  await s.initialize();
  const u = 'file:///tmp/versions.log';
  const base = 'x'.repeat(100) + '\n';
  await s.open(null, { docUri: u, text: base.repeat(20000) });
  for (let v = 2; v <= 30; v++) {
    await s.notify('textDocument/didChange', {
      textDocument: { uri: u, version: v },
      contentChanges: [{ range: { start: { line: v, character: 0 }, end: { line: v, character: 0 } }, text: v === 30 ? `[rank7]: ${OOM}\n` : 'y' }],
    });
  }
  const p = await s.diagnosticsFor(u, { version: 30 });
  assert.equal(p.diagnostics[0].range.start.line, 30);
  const versions = s.diagnostics.get(u).map((x) => x.version);
  for (let i = 1; i < versions.length; i++) assert.ok(versions[i] > versions[i - 1], versions.join(','));
  assert.equal((await s.close()).code, 0);
});

test('10 MB open log: diagnostics arrive quickly (time reported)', async (t) => {
  const s = new Session();
  await s.initialize();
  const noise = [];
  let size = 0;
  for (let i = 0; size < 10 * 1024 * 1024; i++) {
    const l = i % 50 === 0
      ? `Epoch 1: ${i % 100}%|##   | ${i}/10000 [00:${String(i % 60).padStart(2, '0')}<01:00, 2.1it/s]\r`
      : `[2024-05-14 10:21:33,412] [INFO] [logging.py:96:log_dist] [Rank ${i % 8}] step=${i}, skipped=0, lr=[1e-05]\n`;
    noise.push(l);
    size += l.length;
  }
  const text = noise.join('') + fs.readFileSync(EXAMPLE, 'utf8');
  const u = 'file:///tmp/big10.log';
  const t0 = process.hrtime.bigint();
  await s.open(null, { docUri: u, text });
  const p = await s.diagnosticsFor(u, { ms: 30000 });
  const ms = Number(process.hrtime.bigint() - t0) / 1e6;
  t.diagnostic(`didOpen -> publishDiagnostics for ${(text.length / 1048576).toFixed(1)} MiB: ${ms.toFixed(0)} ms`);
  assert.equal(p.diagnostics[0].code, 'ds.oom.zero3-gather');
  assert.equal(p.diagnostics[0].range.start.line, lspLines(text).findIndex((l) => l.includes('OutOfMemoryError')));
  assert.ok(ms < Number(process.env.DDX_LSP_10MB_MS || 5000), `${ms} ms`);
  assert.equal((await s.close()).code, 0);
});

test('NUL bytes and a long single line are diagnosed without trouble', async () => {
  const s = new Session();
  await s.initialize();
  const u = 'file:///tmp/nul.log';
  await s.open(null, { docUri: u, text: '\u0000\u0000bin\u0000ary\n' + 'z'.repeat(5 << 20) + '\n' + `[rank2]: ${OOM}\n` });
  const p = await s.diagnosticsFor(u, { ms: 20000 });
  assert.equal(p.diagnostics[0].range.start.line, 2);
  assert.equal((await s.close()).code, 0);
});
