// Quick fixes in a hostile workspace (issue 17): the ds_config search runs
// on the thread pool, never on the loop thread. A FIFO or a /dev/stdin link
// named like a config cannot block the server; a config reached through a
// symlink out of the workspace is not edited; a workspace of many large
// JSON files does not hold up other requests.
'use strict';
const test = require('node:test');
const assert = require('node:assert/strict');
const fs = require('node:fs');
const path = require('node:path');
const { spawnSync } = require('node:child_process');
const { performance } = require('node:perf_hooks');
const { Session, Raw, CAPS, EXAMPLE, uri, tmpdir, withTimeout } = require('./lib');

const LOG = fs.readFileSync(EXAMPLE, 'utf8');
const OOM_LINE = 45; // LSP line of the initiating OOM in the example
const STAGE3 = {
  train_micro_batch_size_per_gpu: 8, gradient_accumulation_steps: 4, bf16: { enabled: true },
  zero_optimization: { stage: 3, overlap_comm: true, stage3_prefetch_bucket_size: 50000000, stage3_max_live_parameters: 1000000000, stage3_max_reuse_distance: 1000000000, stage3_param_persistence_threshold: 100000 },
};
const CONFIG = JSON.stringify(STAGE3, null, 2) + '\n';

function mkfifo(p) {
  const r = spawnSync('mkfifo', [p]);
  assert.equal(r.status, 0, `mkfifo ${p}: ${r.stderr}`);
}

// A server stuck in open() of a FIFO (the code before the fix) is let go,
// so the test process can end: a writer that opens and closes again.
function unblock(fifos) {
  for (const f of fifos) {
    for (let i = 0; i < 3; i++) {
      try {
        fs.closeSync(fs.openSync(f, fs.constants.O_WRONLY | fs.constants.O_NONBLOCK));
      } catch (_) { /* no reader (ENXIO): nothing waits on it */ }
    }
  }
}

async function openLog(s, file, text) {
  fs.writeFileSync(file, text);
  const u = await s.open(file);
  const p = await s.diagnosticsFor(u, { ms: 20000 });
  const oom = p.diagnostics.filter((d) => d.code === 'ds.oom.zero3-gather');
  assert.ok(oom.length, 'the OOM is diagnosed');
  return { u, oom };
}

function actionParams(u, oom) {
  return { textDocument: { uri: u }, range: oom[0].range, context: { diagnostics: oom, only: ['quickfix'] } };
}

// The files the enabled actions edit (local paths).
const editedUris = (actions) =>
  actions.filter((a) => !a.disabled).map((a) => decodeURIComponent(a.edit.documentChanges[0].textDocument.uri.replace(/^file:\/\//, '')));

// Ends a session that may be stuck; never throws. The server's exit code,
// or null when it had to be killed.
async function finish(s, fifos = []) {
  unblock(fifos);
  try {
    await withTimeout(s.conn.sendRequest('shutdown'), 5000, 'shutdown');
    await s.conn.sendNotification('exit');
    s.child.stdin.end(); // a wrapping `cat |` ends with it
    const r = await withTimeout(s.exited, 5000, 'exit');
    s.conn.dispose();
    return r.code;
  } catch (_) {
    s.kill();
    return null;
  } finally {
    unblock(fifos);
  }
}

test('a /dev/stdin link and a FIFO named like configs (and named by the log): 200 code actions and 200 hovers are all answered', async (t) => {
  const ws = tmpdir();
  fs.mkdirSync(path.join(ws, 'model'));
  fs.symlinkSync('/dev/stdin', path.join(ws, 'model/config.json'));
  const fifo = path.join(ws, 'ds_config.json');
  mkfifo(fifo);
  // stdin a real pipe, as under some editors: /dev/stdin is the server's own input
  const s = new Session({ wrap: ['sh', '-c', 'cat | exec "$0" "$@"'] });
  let code;
  try {
    await s.initialize({ folders: [ws] });
    const log = LOG + 'cmd = deepspeed train.py --deepspeed ds_config.json --deepspeed_config model/config.json\n';
    const { u, oom } = await openLog(s, path.join(ws, 'train.log'), log);
    const hoverParams = { textDocument: { uri: u }, position: { line: OOM_LINE, character: 10 } };
    let answered = 0;
    const counted = (p) => p.then((r) => { answered++; return r; });
    // one at a time first, then all at once
    const results = [];
    for (let i = 0; i < 50; i++) {
      results.push(await withTimeout(counted(s.request('textDocument/codeAction', actionParams(u, oom))), 10000, `code action ${i}`));
      await withTimeout(counted(s.request('textDocument/hover', hoverParams)), 10000, `hover ${i}`);
    }
    const burst = [];
    for (let i = 0; i < 150; i++) {
      burst.push(counted(s.request('textDocument/codeAction', actionParams(u, oom))));
      burst.push(counted(s.request('textDocument/hover', hoverParams)));
    }
    const rest = await withTimeout(Promise.all(burst), 30000, `the burst (${answered} of 400 answered)`);
    assert.equal(answered, 400);
    for (let i = 0; i < rest.length; i += 2) results.push(rest[i]);
    assert.match(rest[1].contents.value, /CUDA out of memory while ZeRO-3 all-gathers/);
    // neither the FIFO nor the link is a config: nothing to edit, and it says why
    for (const acts of results) {
      assert.deepEqual(editedUris(acts), []);
      assert.ok(acts.some((a) => a.disabled && /no DeepSpeed config found/.test(a.disabled.reason)));
    }
    t.diagnostic(`answered ${answered} of 400 requests`);
  } finally {
    code = await finish(s, [fifo]);
  }
  assert.equal(code, 0); // after the body: its own failure is the one reported
});

test('ddx.dsConfig.path names a FIFO, another FIFO lies at the top: code actions still answer; the setting may point outside', async () => {
  const root = tmpdir();
  const ws = path.join(root, 'ws');
  const other = path.join(root, 'elsewhere');
  fs.mkdirSync(ws);
  fs.mkdirSync(other);
  const top = path.join(ws, 'deepspeed_zero3.json');
  const named = path.join(other, 'ds_config.json');
  mkfifo(top);
  mkfifo(named);
  const s = new Session();
  let code;
  try {
    await s.initialize({ folders: [ws], options: { dsConfig: { path: named } } });
    const { u, oom } = await openLog(s, path.join(ws, 'train.log'), LOG);
    const acts = await withTimeout(s.request('textDocument/codeAction', actionParams(u, oom)), 10000, 'the code action');
    assert.deepEqual(editedUris(acts), []);
    assert.ok(acts.some((a) => a.disabled && /no DeepSpeed config found/.test(a.disabled.reason)));
    const h = await withTimeout(s.request('textDocument/hover', { textDocument: { uri: u }, position: { line: OOM_LINE, character: 10 } }), 10000, 'the hover');
    assert.match(h.contents.value, /CUDA out of memory/);
    // the setting changed to a real file outside the workspace: the one
    // file read wherever it is
    const real = path.join(other, 'zero3.json');
    fs.writeFileSync(real, CONFIG);
    await s.notify('workspace/didChangeConfiguration', { settings: { ddx: { dsConfig: { path: real } } } });
    const acts2 = await withTimeout(s.request('textDocument/codeAction', actionParams(u, oom)), 10000, 'the code action after the setting');
    const edited = editedUris(acts2);
    assert.ok(edited.length && edited.every((f) => f === real), edited.join());
    const lines = (acts) => acts.filter((a) => !a.disabled).flatMap((a) => a.edit.documentChanges[0].edits.map((e) => e.range.start.line));
    assert.ok(lines(acts2).some((l) => l > 0));
    // the file changed on disk (now one line) and the client says so: the
    // next code action plans against the new bytes
    fs.writeFileSync(real, JSON.stringify(STAGE3) + '\n');
    await s.notify('workspace/didChangeWatchedFiles', { changes: [{ uri: uri(real), type: 2 }] });
    const acts3 = await withTimeout(s.request('textDocument/codeAction', actionParams(u, oom)), 10000, 'the code action after the change');
    assert.ok(lines(acts3).length && lines(acts3).every((l) => l === 0), lines(acts3).join());
  } finally {
    code = await finish(s, [top, named]);
  }
  assert.equal(code, 0);
});

test('a config reached through a symlink out of the workspace is never edited; the search goes on inside', async () => {
  const root = tmpdir();
  const outside = path.join(root, 'outside');
  fs.mkdirSync(outside);
  const outFile = path.join(outside, 'ds_config.json');
  fs.writeFileSync(outFile, CONFIG);
  const run = async (name, setup, log = LOG) => {
    const ws = path.join(root, name);
    fs.mkdirSync(ws);
    setup(ws);
    const s = new Session();
    let code, r;
    try {
      await s.initialize({ folders: [ws] });
      const { u, oom } = await openLog(s, path.join(ws, 'train.log'), log);
      const acts = await withTimeout(s.request('textDocument/codeAction', actionParams(u, oom)), 10000, `the code action (${name})`);
      r = { ws, edited: editedUris(acts), acts };
    } finally {
      code = await finish(s);
    }
    assert.equal(code, 0);
    return r;
  };
  const noneOutside = (r) => {
    for (const f of r.edited) assert.ok(!f.startsWith(outside + '/'), `${f} is outside the workspace`);
  };
  // 1. a committed link: ds_config.json -> ../outside/ds_config.json
  let r = await run('link', (ws) => fs.symlinkSync('../outside/ds_config.json', path.join(ws, 'ds_config.json')));
  noneOutside(r);
  assert.deepEqual(r.edited, []);
  assert.ok(r.acts.some((a) => a.disabled && /no DeepSpeed config found/.test(a.disabled.reason)));
  // 2. a symlinked subfolder
  r = await run('subfolder', (ws) => fs.symlinkSync('../outside', path.join(ws, 'conf')));
  noneOutside(r);
  assert.deepEqual(r.edited, []);
  // 3. named by the log (the launcher's own path on a pod): the same name in the workspace is a link out
  r = await run('named', (ws) => fs.symlinkSync(outFile, path.join(ws, 'ds_config.json')),
    LOG + 'cmd = deepspeed train.py --deepspeed /workspace/job/ds_config.json\n');
  noneOutside(r);
  assert.deepEqual(r.edited, []);
  // 4. the link first by name, a real config inside after it: that one is edited
  r = await run('both', (ws) => {
    fs.symlinkSync('../outside/ds_config.json', path.join(ws, 'ds_config.json'));
    fs.mkdirSync(path.join(ws, 'zz'));
    fs.writeFileSync(path.join(ws, 'zz/ds_config.json'), CONFIG);
  });
  noneOutside(r);
  assert.ok(r.edited.length && r.edited.every((f) => f === path.join(fs.realpathSync(r.ws), 'zz/ds_config.json')), r.edited.join());
  // the outside file was never the target
  assert.equal(fs.readFileSync(outFile, 'utf8'), CONFIG);
});

// Resolves when responses to every id have arrived: their order of arrival
// and their latency from t0 (ms).
function arrivals(raw, ids, t0, ms = 30000) {
  const at = {};
  let seq = 0;
  return withTimeout(new Promise((res) => {
    const check = () => {
      for (const m of raw.messages)
        if (ids.includes(m.id) && !m.method && !(m.id in at)) at[m.id] = { order: seq++, ms: performance.now() - t0, msg: m };
      if (ids.every((id) => id in at)) {
        raw.waiters.splice(raw.waiters.indexOf(check), 1);
        res(at);
      }
    };
    raw.waiters.push(check);
    check();
  }), ms, `responses to ${ids.join(', ')}`);
}

test('300 JSON files of 100 KB: a hover sent right after a code action is answered first (the loop is free)', async (t) => {
  const ws = tmpdir();
  fs.mkdirSync(path.join(ws, 'data'));
  // JSON that is not a DeepSpeed config: the search reads every one by content
  const row = JSON.stringify({ id: 1, text: 'x'.repeat(80), values: [1, 2, 3, 4, 5, 6, 7, 8] });
  const body = '{"rows": [' + Array(Math.ceil(100000 / (row.length + 1))).fill(row).join(',') + ']}\n';
  const files = [];
  for (let i = 0; i < 300; i++) files.push(path.join(ws, i < 150 ? '' : 'data', `part_${String(i).padStart(3, '0')}.json`));
  for (const f of files) fs.writeFileSync(f, body);
  const logPath = path.join(ws, 'train.log');
  fs.writeFileSync(logPath, LOG);
  const raw = new Raw({ args: ['lsp', '--stdio'] });
  try {
    await raw.send({ jsonrpc: '2.0', id: 1, method: 'initialize', params: { processId: null, rootUri: uri(ws), workspaceFolders: [{ uri: uri(ws), name: 'ws' }], capabilities: CAPS } });
    await raw.response(1);
    await raw.send({ jsonrpc: '2.0', method: 'initialized', params: {} });
    const u = uri(logPath);
    await raw.send({ jsonrpc: '2.0', method: 'textDocument/didOpen', params: { textDocument: { uri: u, languageId: 'log', version: 1, text: LOG } } });
    const pub = await raw.next((m) => m.method === 'textDocument/publishDiagnostics' && m.params.uri === u, 20000, 'diagnostics');
    const oom = pub.params.diagnostics.filter((d) => d.code === 'ds.oom.zero3-gather');
    assert.ok(oom.length);
    const ca = (id) => ({ jsonrpc: '2.0', id, method: 'textDocument/codeAction', params: actionParams(u, oom) });
    const hover = (id) => ({ jsonrpc: '2.0', id, method: 'textDocument/hover', params: { textDocument: { uri: u }, position: { line: OOM_LINE, character: 10 } } });
    // Each round is one write: the server reads the messages together.
    const round = async (name, msgs, caId, hoverId) => {
      const t0 = performance.now();
      await raw.write(Buffer.concat(msgs.map((m) => Raw.frame(m))));
      const at = await arrivals(raw, [caId, hoverId], t0);
      t.diagnostic(`${name}: hover answered after ${at[hoverId].ms.toFixed(1)} ms, code action after ${at[caId].ms.toFixed(1)} ms, ${at[hoverId].order < at[caId].order ? 'hover first' : 'code action first'}`);
      assert.ok(at[hoverId].msg.result && /CUDA out of memory/.test(at[hoverId].msg.result.contents.value));
      const acts = at[caId].msg.result;
      assert.ok(Array.isArray(acts) && acts.some((a) => a.disabled && /no DeepSpeed config found/.test(a.disabled.reason)), JSON.stringify(at[caId].msg).slice(0, 300));
      return at;
    };
    // the first code action: no index yet, it is built on the thread pool
    let at = await round('first', [ca(10), hover(11)], 10, 11);
    assert.ok(at[11].order < at[10].order, 'the hover waited for the code action');
    // files changed: the index is refreshed (unchanged files only stat'ed)
    at = await round('after didChangeWatchedFiles', [{ jsonrpc: '2.0', method: 'workspace/didChangeWatchedFiles', params: { changes: [{ uri: uri(path.join(ws, 'part_000.json')), type: 2 }] } }, ca(20), hover(21)], 20, 21);
    assert.ok(at[21].order < at[20].order, 'the hover waited for the code action');
    // a fresh index answers at once; both are answered
    await round('fresh index', [ca(30), hover(31)], 30, 31);
    // older than ~2 s: refreshed before it answers
    await new Promise((r) => setTimeout(r, 2300));
    at = await round('stale index', [ca(40), hover(41)], 40, 41);
    assert.ok(at[41].order < at[40].order, 'the hover waited for the code action');
    // a code action waiting for the refresh, cancelled: answered as cancelled
    // (every file touched, so the refresh reads all 30 MB again meanwhile)
    const later = new Date(Date.now() + 60000);
    for (const f of files) fs.utimesSync(f, later, later);
    await raw.write(Buffer.concat([{ jsonrpc: '2.0', method: 'workspace/didChangeWatchedFiles', params: { changes: [] } }, ca(50)].map((m) => Raw.frame(m))));
    await new Promise((r) => setTimeout(r, 2));
    await raw.send({ jsonrpc: '2.0', method: '$/cancelRequest', params: { id: 50 } });
    const c = await raw.response(50, 10000);
    assert.equal(c.error && c.error.code, -32800, JSON.stringify(c).slice(0, 200));
    // shutdown answers one still waiting
    await raw.write(Buffer.concat([{ jsonrpc: '2.0', method: 'workspace/didChangeWatchedFiles', params: { changes: [] } }, ca(60), { jsonrpc: '2.0', id: 'bye', method: 'shutdown' }].map((m) => Raw.frame(m))));
    const w = await raw.response(60, 10000);
    assert.equal(w.error && w.error.code, -32800);
    await raw.response('bye', 10000);
    await raw.send({ jsonrpc: '2.0', method: 'exit' });
    assert.equal((await withTimeout(raw.exited, 10000, 'exit')).code, 0);
  } finally {
    raw.kill();
  }
});
