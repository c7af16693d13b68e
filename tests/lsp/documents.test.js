// Documents and diagnostics: sync (full, incremental, out of range, batches
// against a reference, 50,000 changes at once), file: URIs,
// encodings, line counting, and diagnostics that agree with the CLI.
'use strict';
const test = require('node:test');
const assert = require('node:assert/strict');
const fs = require('node:fs');
const path = require('node:path');
const { Session, CAPS, EXAMPLE, CORPUS, uri, tmpdir, cliReport, withTimeout } = require('./lib');

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
  assert.ok(primary.message.includes('3.60 GiB short on rank 5 during the ZeRO-3 parameter gather'), primary.message);
  // the class's page of the encyclopedia built next to the binary (build/catalog), a real file
  assert.match(primary.codeDescription.href, /^file:\/\/\/.*\/catalog\/ds\.oom\.zero3-gather\.html$/);
  assert.ok(fs.statSync(new URL(primary.codeDescription.href)).isFile(), primary.codeDescription.href);
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

// ------------------------------------------------- batches of incremental edits

// Runs fn(s); a failure kills the server (one still busy would keep the
// test file waiting).
async function withSession(s, fn) {
  try {
    return await fn(s);
  } catch (e) {
    s.kill();
    throw e;
  }
}

// A fact of a hover: `name` = `value`, the value one Markdown code span
// (fenced by more backticks than it holds, padded when it starts or ends
// with one); returns [whole, value] like a regexp match, or null.
function factOf(md, name) {
  const m = new RegExp('`' + name + '` = (`+)(.*?)\\1(?:, `|\\n)').exec(md);
  if (!m) return null;
  let v = m[2];
  if (v.length >= 2 && v[0] === ' ' && v[v.length - 1] === ' ' && (v[1] === '`' || v[v.length - 2] === '`')) v = v.slice(1, -1);
  return [m[0], v];
}

// A line the hover reveals: the fact xid_text is the rest of the line, and
// the hover's range is the whole line.
const XID = 'NVRM: Xid (PCI:0000:3b:00): 79, ';

function mulberry32(seed) {
  return () => {
    seed = (seed + 0x6d2b79f5) | 0;
    let t = Math.imul(seed ^ (seed >>> 15), 1 | seed);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

// The reference: LSP sync applied to a JS string, lines ending at \n, \r\n
// or a bare \r, positions in UTF-16 units or UTF-8 bytes, clamped as LSP says.
class RefDoc {
  constructor(text, enc) {
    this.text = text;
    this.enc = enc;
  }
  starts() {
    const t = this.text, st = [0];
    for (let i = 0; i < t.length; i++) if (t[i] === '\n' || (t[i] === '\r' && t[i + 1] !== '\n')) st.push(i + 1);
    return st;
  }
  lines() {
    return lspLines(this.text);
  }
  lineEnd(st, k) {
    if (k + 1 >= st.length) return this.text.length;
    let e = st[k + 1];
    if (this.text[e - 1] === '\n') {
      e--;
      if (e > st[k] && this.text[e - 1] === '\r') e--;
    } else if (this.text[e - 1] === '\r') e--;
    return e;
  }
  units(s) {
    return this.enc === 'utf-8' ? Buffer.byteLength(s) : s.length;
  }
  offset({ line, character }) {
    const st = this.starts();
    if (line >= st.length) return this.text.length;
    const start = st[line], end = this.lineEnd(st, line);
    let p = start, units = 0;
    while (p < end && units < character) {
      const cp = this.text.codePointAt(p);
      const k = cp > 0xffff ? 2 : 1;
      const u = this.enc === 'utf-8' ? Buffer.byteLength(String.fromCodePoint(cp)) : k;
      if (units + u > character) {
        if (this.enc === 'utf-8') throw new Error('generated a position inside a UTF-8 sequence');
        break; // inside a surrogate pair: its start, as the server does
      }
      units += u;
      p += k;
    }
    return p;
  }
  apply(change) {
    if (typeof change.text !== 'string') return false;
    if (!change.range) {
      this.text = change.text;
      return true;
    }
    const a = this.offset(change.range.start), b = this.offset(change.range.end);
    if (a > b) return false;
    this.text = this.text.slice(0, a) + change.text + this.text.slice(b);
    return true;
  }
}

const PIECES = ['x', 'y', 'z', '0', '7', ' ', 'é', '✓', '𝄞', '𝄞', '\r', '\n', '\r\n', '\r', '\n', 'ab'];

function randomText(rng, n) {
  let s = '';
  for (let i = 0; i < n; i++) s += PIECES[Math.floor(rng() * PIECES.length)];
  return s;
}

function randomDoc(rng, nlines) {
  const terms = ['\n', '\r\n', '\r'];
  let s = '';
  for (let i = 0; i < nlines; i++) {
    const body = randomText(rng, Math.floor(rng() * 6)).replace(/[\r\n]/g, 'z');
    s += (rng() < 0.6 ? XID : '') + body + terms[Math.floor(rng() * terms.length)];
  }
  return s;
}

// A position in ref: mostly on a code point boundary of a line; sometimes
// past the line end, past the last line, or inside a surrogate pair.
function randomPos(rng, ref, line) {
  const lines = ref.lines();
  if (line === undefined) line = rng() < 0.04 ? lines.length + Math.floor(rng() * 3) : Math.floor(rng() * lines.length);
  if (line >= lines.length) return { line, character: Math.floor(rng() * 5) };
  const c = lines[line];
  const x = rng();
  if (x < 0.06) return { line, character: ref.units(c) + 1 + Math.floor(rng() * 30) };
  const cps = Array.from(c);
  if (x < 0.12 && ref.enc === 'utf-16') {
    const astral = [];
    let u = 0;
    for (const ch of cps) {
      if (ch.length === 2) astral.push(u + 1);
      u += ch.length;
    }
    if (astral.length) return { line, character: astral[Math.floor(rng() * astral.length)] };
  }
  const j = Math.floor(rng() * (cps.length + 1));
  return { line, character: ref.units(cps.slice(0, j).join('')) };
}

function randomChange(rng, ref) {
  const lines = ref.lines();
  const st = ref.starts();
  const r = rng();
  // \r\n pairs made by an edit: a \n inserted right after a bare \r ...
  const bareCr = [];
  for (let k = 0; k + 1 < st.length; k++) if (ref.text[st[k + 1] - 1] === '\r') bareCr.push(k);
  if (r < 0.08 && bareCr.length) {
    const k = bareCr[Math.floor(rng() * bareCr.length)];
    const at = { line: k + 1, character: 0 };
    return { range: { start: at, end: at }, text: rng() < 0.5 ? '\n' : '\n' + randomText(rng, 2) };
  }
  // ... or the text between them deleted
  if (r < 0.14) {
    const cand = bareCr.filter((k) => lines[k + 1].length > 0 && lines[k + 1].length < 6 && ref.text[ref.lineEnd(st, k + 1)] === '\n');
    if (cand.length) {
      const k = cand[Math.floor(rng() * cand.length)];
      return { range: { start: { line: k + 1, character: 0 }, end: { line: k + 1, character: ref.units(lines[k + 1]) } }, text: '' };
    }
  }
  // a new revealing line
  if (r < 0.24) {
    const at = rng() < 0.2 ? { line: lines.length + 2, character: 0 } : { line: Math.floor(rng() * lines.length), character: 0 };
    const body = XID + randomText(rng, Math.floor(rng() * 5)).replace(/[\r\n]/g, 'y');
    const term = ['\n', '\r\n', '\r'][Math.floor(rng() * 3)];
    return { range: { start: at, end: at }, text: at.line >= lines.length ? term + body : body + term };
  }
  const start = randomPos(rng, ref);
  let end = start;
  if (rng() < 0.55) {
    const l = Math.min(start.line + (rng() < 0.3 ? 1 + Math.floor(rng() * 3) : 0), lines.length);
    end = randomPos(rng, ref, l);
  }
  if (ref.offset(start) > ref.offset(end)) [end] = [start];
  // a shrinking document is mostly cut, a growing one mostly grown
  const big = ref.text.length > 3000;
  const n = rng() < (big ? 0.6 : 0.2) ? 0 : 1 + Math.floor(rng() * 5);
  return { range: { start, end }, text: randomText(rng, n) };
}

// The server's text, checked against the reference: its size in bytes (the
// trace log of each diagnosis), and every line that starts with XID through
// a hover (range = the whole line, xid_text = the rest of it); lines without
// it are no match at all.
async function checkText(s, u, ref, version, what) {
  await s.diagnosticsFor(u, { version, ms: 30000 });
  const re = new RegExp(`^diagnosed ${u.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')} \\(version ${version}, (\\d+) bytes\\)`);
  await s.until(() => s.logs.some((l) => re.test(l.message)), 10000, `the trace of version ${version}`);
  const bytes = Number(re.exec(s.logs.find((l) => re.test(l.message)).message)[1]);
  assert.equal(bytes, Buffer.byteLength(ref.text), `${what}: size in bytes`);
  const lines = ref.lines();
  let revealed = 0;
  const hovers = await Promise.all(lines.map((c, k) => (c.startsWith(XID) || !/Xid|NVRM/.test(c)
    ? s.request('textDocument/hover', { textDocument: { uri: u }, position: { line: k, character: 0 } })
    : null)));
  for (let k = 0; k < lines.length; k++) {
    const c = lines[k], h = hovers[k];
    if (c.startsWith(XID)) {
      assert.ok(h, `${what}: line ${k} ${JSON.stringify(c)} is no match in the server`);
      assert.deepEqual(h.range, { start: { line: k, character: 0 }, end: { line: k, character: ref.units(c) } }, `${what}: line ${k} ${JSON.stringify(c)}`);
      if (Buffer.byteLength(c) < 200) {
        const got = factOf(h.contents.value, 'xid_text');
        assert.equal(got && got[1], c.slice(XID.length).replace(/^\s+/, ''), `${what}: line ${k}`);
      }
      revealed++;
    } else if (!/Xid|NVRM/.test(c)) {
      assert.equal(h, null, `${what}: line ${k} ${JSON.stringify(c)} should be no match`);
    }
  }
  const past = await s.request('textDocument/hover', { textDocument: { uri: u }, position: { line: lines.length, character: 0 } });
  assert.equal(past, null, `${what}: the server has more than ${lines.length} lines`);
  return revealed;
}

async function randomBatches(enc, seed, nedits) {
  const s = new Session();
  return withSession(s, async () => {
    const caps = { ...CAPS, general: { positionEncodings: [enc] } };
    const init = await s.initialize({ caps, trace: 'messages' });
    assert.equal(init.capabilities.positionEncoding, enc);
    const rng = mulberry32(seed);
    const u = `file:///tmp/batches-${enc}-${seed}.log`;
    const ref = new RefDoc(randomDoc(rng, 40), enc);
    await s.open(null, { docUri: u, text: ref.text });
    await checkText(s, u, ref, 1, 'didOpen');
    const SIZES = [1, 1, 1, 2, 2, 3, 4, 5, 8, 13, 21, 40, 90];
    let version = 1, edits = 0, revealed = 0, rejected = 0, full = 0;
    while (edits < nedits) {
      const size = SIZES[Math.floor(rng() * SIZES.length)];
      const bad = rng() < 0.06 ? Math.floor(rng() * size) : -1;
      const reset = rng() < 0.05 ? Math.floor(rng() * size) : -1;
      const changes = [];
      let applying = true;
      for (let i = 0; i < size; i++) {
        let ch;
        if (i === reset) {
          ch = { text: randomDoc(rng, 5 + Math.floor(rng() * 30)) };
          full++;
        } else if (i === bad) {
          // rejected, and the rest of the batch with it: a reversed range, or no text
          const k = Math.floor(rng() * ref.lines().length);
          ch = { range: { start: { line: k + 1, character: 0 }, end: { line: k, character: 0 } }, text: 'BAD' };
          if (ref.offset(ch.range.start) <= ref.offset(ch.range.end)) delete ch.text;
        } else {
          ch = applying ? randomChange(rng, ref) : { range: { start: { line: 0, character: 0 }, end: { line: 0, character: 0 } }, text: 'LOST' };
        }
        if (applying && ref.apply(ch)) {
          edits++;
        } else if (applying) {
          applying = false;
          rejected++;
        }
        changes.push(ch);
      }
      version++;
      await s.notify('textDocument/didChange', { textDocument: { uri: u, version }, contentChanges: changes });
      revealed += await checkText(s, u, ref, version, `batch v${version} (${size} changes, seed ${seed})`);
    }
    // Reveal everything: XID at the start of every line (one batch, in order)
    // and a last line, appended past the end.
    const n = ref.lines().length;
    const changes = [];
    for (let k = 0; k < n; k++) changes.push({ range: { start: { line: k, character: 0 }, end: { line: k, character: 0 } }, text: XID });
    changes.push({ range: { start: { line: n + 5, character: 0 }, end: { line: n + 9, character: 3 } }, text: '\r\n' + XID + 'END' });
    for (const ch of changes) ref.apply(ch);
    version++;
    await s.notify('textDocument/didChange', { textDocument: { uri: u, version }, contentChanges: changes });
    assert.equal(await checkText(s, u, ref, version, 'the final reveal'), n + 1);
    assert.equal((await s.close()).code, 0);
    return { edits, revealed, rejected, full, version };
  });
}

test('didChange batches of random incremental edits give exactly the reference text (utf-16)', async (t) => {
  for (const seed of [17, 4242]) {
    const r = await randomBatches('utf-16', seed, 400);
    t.diagnostic(`seed ${seed}: ${r.edits} edits in ${r.version - 1} notifications (${r.rejected} batches cut by a rejected change, ${r.full} full syncs), ${r.revealed} lines compared`);
  }
});

test('didChange batches of random incremental edits give exactly the reference text (utf-8)', async (t) => {
  const r = await randomBatches('utf-8', 99, 400);
  t.diagnostic(`${r.edits} edits in ${r.version - 1} notifications, ${r.revealed} lines compared`);
});

test('one didChange of 50,000 single-character insertions into a 5 MB log is applied quickly (time reported)', async (t) => {
  const s = new Session();
  return withSession(s, async () => {
    await s.initialize({ trace: 'messages' });
    const noise = [];
    for (let i = 0, size = 0; size < 5 * 1024 * 1024; i++) {
      const l = `[2024-05-14 10:21:33,412] [INFO] [logging.py:96:log_dist] [Rank ${i % 8}] step=${i}, skipped=0, lr=[1e-05]\n`;
      noise.push(l);
      size += l.length;
    }
    const text = noise.join('') + `[rank3]: ${OOM}\n`;
    const u = 'file:///tmp/typing5mb.log';
    await s.open(null, { docUri: u, text });
    const p1 = await s.diagnosticsFor(u, { ms: 30000 });
    assert.equal(p1.diagnostics[0].range.start.line, noise.length);
    // One character into every line but the last, top to bottom (a multi-cursor
    // edit, a formatter): 50,000 changes, each relative to the previous result.
    const K = 50000;
    const changes = [];
    for (let i = 0; i < K; i++) {
      const line = Math.floor((i * noise.length) / K);
      changes.push({ range: { start: { line, character: 27 + (i % 3) }, end: { line, character: 27 + (i % 3) } }, text: i % 2 ? 'é' : '𝄞' });
    }
    const t0 = process.hrtime.bigint();
    await s.notify('textDocument/didChange', { textDocument: { uri: u, version: 2 }, contentChanges: changes });
    const h = await withTimeout(s.request('textDocument/hover', { textDocument: { uri: u }, position: { line: noise.length, character: 0 } }), 60000, 'the hover after the 50,000 changes');
    const ms = Number(process.hrtime.bigint() - t0) / 1e6;
    t.diagnostic(`didChange of ${K} insertions into ${(text.length / 1048576).toFixed(1)} MiB -> the next answer: ${ms.toFixed(0)} ms`);
    assert.ok(h === null || h.contents, JSON.stringify(h));
    const p2 = await s.diagnosticsFor(u, { version: 2, ms: 60000 });
    assert.equal(p2.diagnostics[0].range.start.line, noise.length);
    assert.equal(p2.diagnostics[0].range.end.character, `[rank3]: ${OOM}`.length);
    const re = new RegExp(`^diagnosed ${u.replace(/[.]/g, '\\.')} \\(version 2, (\\d+) bytes\\)`);
    await s.until(() => s.logs.some((l) => re.test(l.message)), 10000, 'the trace of version 2');
    const bytes = Number(re.exec(s.logs.find((l) => re.test(l.message)).message)[1]);
    assert.equal(bytes, Buffer.byteLength(text) + (K / 2) * (Buffer.byteLength('é') + Buffer.byteLength('𝄞')));
    // the inserted characters are where the reference puts them (two lines shown)
    const shown = [changes[1].range.start.line, changes[K - 1].range.start.line];
    await s.notify('textDocument/didChange', {
      textDocument: { uri: u, version: 3 },
      contentChanges: shown.map((line) => ({ range: { start: { line, character: 0 }, end: { line, character: 0 } }, text: XID })),
    });
    await s.diagnosticsFor(u, { version: 3, ms: 60000 });
    for (const line of shown) {
      let ref = noise[line].slice(0, -1);
      for (const c of changes.filter((x) => x.range.start.line === line)) ref = ref.slice(0, c.range.start.character) + c.text + ref.slice(c.range.start.character);
      assert.notEqual(ref, noise[line].slice(0, -1));
      const hx = await s.request('textDocument/hover', { textDocument: { uri: u }, position: { line, character: 0 } });
      assert.equal(factOf(hx.contents.value, 'xid_text')[1], ref, `line ${line}`);
    }
    assert.equal((await s.close()).code, 0);
  });
});

// ------------------------------------------------------------------- URIs

test('file:/abs URIs (RFC 8089, no authority) are local paths; other hosts, relative paths and %00 are not', async () => {
  // The log names its config relative to its own folder: only a log whose
  // URI gave a path finds run/ds_config.json; without one, the file name
  // is looked up in the workspace and a/ds_config.json comes first.
  const stage3 = JSON.stringify({ train_micro_batch_size_per_gpu: 8, zero_optimization: { stage: 3, stage3_prefetch_bucket_size: 50000000, stage3_max_live_parameters: 1000000000 } }, null, 2);
  const ws = tmpdir();
  for (const d of ['a', 'run']) {
    fs.mkdirSync(path.join(ws, d));
    fs.writeFileSync(path.join(ws, d, 'ds_config.json'), stage3);
  }
  const log = path.join(ws, 'run', 'train.log');
  const text = 'launch: deepspeed train.py --deepspeed ds_config.json\n' + fs.readFileSync(EXAMPLE, 'utf8');
  fs.writeFileSync(log, text);
  const oomLine = lspLines(text).findIndex((l) => l.includes('OutOfMemoryError'));
  const configOf = async (s, u) => {
    const p = await s.diagnosticsFor(u);
    assert.equal(p.diagnostics[0].code, 'ds.oom.zero3-gather', u);
    const actions = await s.request('textDocument/codeAction', {
      textDocument: { uri: u },
      range: { start: { line: oomLine, character: 0 }, end: { line: oomLine, character: 0 } },
      context: { diagnostics: p.diagnostics.filter((d) => d.range.start.line === oomLine), only: ['quickfix'] },
    });
    const a = actions.find((x) => !x.disabled);
    return a ? a.edit.documentChanges[0].textDocument.uri : null;
  };
  const s = new Session();
  await withSession(s, async () => {
    await s.initialize({ folders: [ws] });
    const local = [`file:${log}`, `file://${log}`, `file://localhost${log}`, `FILE:${log}`, `file:${log.replace('/run/', '/%72un/')}`, `file:${log.replace('/run/', '/run%2F')}`];
    const foreign = [`file://otherhost${log}`, `file:${log.slice(1)}`, `file:%2F${log.slice(1)}`, `file:${log.replace('train.log', 'tr%00ain.log')}`, `file://127.0.0.1${log}`];
    for (const u of [...local, ...foreign]) await s.open(null, { docUri: u, text });
    for (const u of local) assert.match(await configOf(s, u), /\/run\/ds_config\.json$/, u);
    for (const u of foreign) assert.match(await configOf(s, u), /\/a\/ds_config\.json$/, u);
    assert.equal((await s.close()).code, 0);
  });
  // A workspace folder named file:/abs is a workspace folder too.
  const s2 = new Session();
  await withSession(s2, async () => {
    await s2.conn.sendRequest('initialize', { processId: null, rootUri: null, capabilities: CAPS, workspaceFolders: [{ uri: `file:${ws}`, name: 'ws' }] });
    await s2.conn.sendNotification('initialized', {});
    const u = await s2.open(log);
    assert.match(await configOf(s2, u), /\/run\/ds_config\.json$/);
    assert.equal((await s2.close()).code, 0);
  });
});
