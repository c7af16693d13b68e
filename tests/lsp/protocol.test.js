// JSON-RPC and lifecycle: framing, every error code, exit statuses.
'use strict';
const test = require('node:test');
const assert = require('node:assert/strict');
const fs = require('node:fs');
const { spawn } = require('node:child_process');
const { Session, Raw, withTimeout, EXAMPLE } = require('./lib');

test('initialize advertises the features and shutdown + exit ends with 0', async () => {
  const s = new Session();
  const r = await s.initialize();
  assert.equal(r.serverInfo.name, 'ddx');
  assert.equal(r.capabilities.positionEncoding, 'utf-16');
  assert.equal(r.capabilities.textDocumentSync.change, 2);
  assert.equal(r.capabilities.hoverProvider, true);
  assert.deepEqual(r.capabilities.codeActionProvider.codeActionKinds, ['quickfix']);
  assert.deepEqual(r.capabilities.executeCommandProvider.commands, ['ddx.diagnoseText', 'ddx.diagnoseFile', 'ddx.explain', 'ddx.catalog', 'ddx.showFix']);
  const { code } = await s.close();
  assert.equal(code, 0);
});

test('`ddx lsp` without --stdio works too', async () => {
  const s = new Session({ args: ['lsp'] });
  await s.initialize();
  assert.equal((await s.close()).code, 0);
});

test('an unknown option is a usage error (status 2)', async () => {
  const c = spawn(require('./lib').DDX, ['lsp', '--tcp'], { stdio: 'pipe' });
  const code = await new Promise((res) => c.on('exit', res));
  assert.equal(code, 2);
});

test('exit without shutdown ends with 1', async () => {
  const r = new Raw();
  await r.initialize();
  await r.send({ jsonrpc: '2.0', method: 'exit' });
  assert.equal((await r.exited).code, 1);
});

test('exit before initialize ends with 1', async () => {
  const r = new Raw();
  await r.send({ jsonrpc: '2.0', method: 'exit' });
  assert.equal((await r.exited).code, 1);
});

test('closing stdin ends the server (1 without shutdown, 0 after it)', async () => {
  const a = new Raw();
  await a.initialize();
  a.child.stdin.end();
  assert.equal((await a.exited).code, 1);
  const b = new Raw();
  await b.initialize();
  await b.send({ jsonrpc: '2.0', id: 2, method: 'shutdown' });
  await b.response(2);
  b.child.stdin.end();
  assert.equal((await b.exited).code, 0);
});

test('the server exits when the editor process (processId) dies', async () => {
  const editor = spawn('sleep', ['30']);
  const s = new Session();
  await s.initialize({ processId: editor.pid });
  editor.kill('SIGKILL');
  const { code } = await withTimeout(s.exited, 5000, 'the server to notice the dead editor');
  assert.equal(code, 1);
  s.conn.dispose();
});

test('-32002 before initialize; notifications are dropped, not answered', async () => {
  const r = new Raw();
  await r.send({ jsonrpc: '2.0', method: 'textDocument/didOpen', params: { textDocument: { uri: 'file:///a.log', languageId: 'log', version: 1, text: 'x' } } });
  await r.send({ jsonrpc: '2.0', id: 7, method: 'textDocument/hover', params: {} });
  const m = await r.response(7);
  assert.equal(m.error.code, -32002);
  await r.initialize(8);
  assert.equal(r.messages.filter((x) => x.error).length, 0);
  assert.equal((await r.close()).code, 0);
});

test('-32601 for an unknown request; unknown notifications are ignored', async () => {
  const r = new Raw();
  await r.initialize();
  await r.send({ jsonrpc: '2.0', method: 'custom/unknownNotification', params: {} });
  await r.send({ jsonrpc: '2.0', method: '$/unknown', params: {} });
  await r.send({ jsonrpc: '2.0', id: 2, method: 'textDocument/definition', params: {} });
  const m = await r.response(2);
  assert.equal(m.error.code, -32601);
  assert.match(m.error.message, /textDocument\/definition/);
  assert.equal((await r.close()).code, 0);
});

test('-32700 for a body that is not JSON, and the server goes on', async () => {
  const r = new Raw();
  await r.initialize();
  await r.write(Raw.frame('{"jsonrpc": "2.0", "id": 3, "method": '));
  const m = await r.next((x) => x.error && x.error.code === -32700);
  assert.equal(m.id, null);
  await r.send({ jsonrpc: '2.0', id: 4, method: 'workspace/executeCommand', params: { command: 'ddx.explain', arguments: ['ds.oom.activations'] } });
  assert.equal((await r.response(4)).result.id, 'ds.oom.activations');
  assert.equal((await r.close()).code, 0);
});

test('-32600 for messages of the wrong shape', async () => {
  const r = new Raw();
  await r.initialize();
  const cases = [
    ['[1, 2]', null],
    ['"a string"', null],
    ['{"jsonrpc": "1.0", "id": 10, "method": "shutdown"}', 10],
    ['{"jsonrpc": "2.0", "id": 11}', 11],
    ['{"jsonrpc": "2.0", "id": 12, "method": 42}', 12],
    ['{"jsonrpc": "2.0", "id": {"x": 1}, "method": "shutdown"}', null],
    ['{"jsonrpc": "2.0", "id": 13, "method": "initialized"}', 13],
    ['{"jsonrpc": "2.0", "id": 14, "method": "initialize", "params": {"capabilities": {}}}', 14],
  ];
  for (const [body, id] of cases) {
    await r.write(Raw.frame(body));
    const m = await r.next((x) => x.error && x.id === id, 5000, body);
    assert.equal(m.error.code, -32600, body);
  }
  assert.equal((await r.close()).code, 0);
});

test('-32602 for params of the wrong type', async () => {
  const s = new Session();
  await s.initialize();
  const bad = [
    ['textDocument/hover', { textDocument: { uri: 'file:///x.log' }, position: { line: -1, character: 0 } }],
    ['textDocument/hover', { textDocument: {}, position: { line: 0, character: 0 } }],
    ['textDocument/codeAction', { textDocument: { uri: 'file:///x.log' }, range: 'all' }],
    ['workspace/executeCommand', { command: 'ddx.diagnoseText', arguments: [42] }],
    ['workspace/executeCommand', { command: 'ddx.nope', arguments: [] }],
    ['workspace/executeCommand', { command: 'ddx.explain', arguments: ['no.such.rule'] }],
    ['workspace/executeCommand', { arguments: [] }],
  ];
  for (const [method, params] of bad) {
    await assert.rejects(s.request(method, params), (e) => e.code === -32602, `${method} ${JSON.stringify(params)}`);
  }
  assert.equal((await s.close()).code, 0);
});

test('initialize with params of the wrong type is -32602 and the server can still be initialized', async () => {
  const r = new Raw();
  await r.send({ jsonrpc: '2.0', id: 1, method: 'initialize', params: { processId: 'me', capabilities: {} } });
  assert.equal((await r.response(1)).error.code, -32602);
  await r.initialize(2);
  assert.equal((await r.close()).code, 0);
});

test('requests after shutdown are -32600; only exit is accepted', async () => {
  const r = new Raw();
  await r.initialize();
  await r.send({ jsonrpc: '2.0', id: 2, method: 'shutdown' });
  await r.response(2);
  await r.send({ jsonrpc: '2.0', id: 3, method: 'textDocument/hover', params: {} });
  assert.equal((await r.response(3)).error.code, -32600);
  await r.send({ jsonrpc: '2.0', method: 'exit' });
  assert.equal((await r.exited).code, 0);
});

test('frames written byte by byte and frames coalesced in one write', async () => {
  const r = new Raw();
  const init = Raw.frame({ jsonrpc: '2.0', id: 1, method: 'initialize', params: { processId: null, capabilities: {} } });
  for (const b of init) await r.write(Buffer.from([b]));
  assert.ok((await r.response(1)).result.capabilities);
  const many = [];
  for (let i = 0; i < 50; i++) many.push(Raw.frame({ jsonrpc: '2.0', id: 100 + i, method: 'workspace/executeCommand', params: { command: 'ddx.explain', arguments: ['nccl.watchdog-timeout'] } }));
  await r.write(Buffer.concat(many));
  for (let i = 0; i < 50; i++) assert.equal((await r.response(100 + i)).result.id, 'nccl.watchdog-timeout');
  // A frame split inside the header and inside a multi-byte character.
  const f = Raw.frame({ jsonrpc: '2.0', id: 200, method: 'workspace/executeCommand', params: { command: 'ddx.diagnoseText', arguments: ['héllo wörld ✓ 𝄞\n'] } });
  const cut1 = 7, cut2 = f.length - 12;
  await r.write(f.slice(0, cut1));
  await new Promise((res) => setTimeout(res, 30));
  await r.write(f.slice(cut1, cut2));
  await new Promise((res) => setTimeout(res, 30));
  await r.write(f.slice(cut2));
  assert.deepEqual((await r.response(200)).result.incidents, []);
  assert.equal((await r.close()).code, 0);
});

test('headers: case-insensitive, Content-Type accepted, bad or missing Content-Length answered and skipped', async () => {
  const r = new Raw();
  await r.initialize();
  const body = JSON.stringify({ jsonrpc: '2.0', id: 2, method: 'workspace/executeCommand', params: { command: 'ddx.explain', arguments: ['ds.oom.activations'] } });
  await r.write(`content-length: ${Buffer.byteLength(body)}\r\nContent-Type: application/vscode-jsonrpc; charset=utf-8\r\n\r\n${body}`);
  assert.equal((await r.response(2)).result.id, 'ds.oom.activations');
  await r.write('Content-Type: application/json\r\n\r\n{"jsonrpc":"2.0","id":3,"method":"shutdown"}');
  let m = await r.next((x) => x.error && x.error.code === -32700);
  assert.match(m.error.message, /missing Content-Length/);
  await r.write('Content-Length: abc\r\n\r\n');
  m = await r.next((x) => x.error && x.error.code === -32700);
  assert.match(m.error.message, /not a number/);
  await r.write('Content-Length: 5\r\nContent-Length: 6\r\n\r\n');
  m = await r.next((x) => x.error && x.error.code === -32700);
  assert.match(m.error.message, /two different/);
  await r.write('Content-Length: 99999999999999999999999999\r\n\r\n');
  m = await r.next((x) => x.error && x.error.code === -32700);
  await r.send({ jsonrpc: '2.0', id: 4, method: 'workspace/executeCommand', params: { command: 'ddx.explain', arguments: ['ds.oom.activations'] } });
  assert.equal((await r.response(4)).result.id, 'ds.oom.activations');
  assert.equal((await r.close()).code, 0);
});

test('an oversized frame is refused before allocation and the server goes on', async () => {
  const r = new Raw({ env: { DDX_LSP_MAX_FRAME: String(1 << 20) } });
  await r.initialize();
  const big = Raw.frame({ jsonrpc: '2.0', id: 2, method: 'workspace/executeCommand', params: { command: 'ddx.diagnoseText', arguments: ['x'.repeat(3 << 20)] } });
  await r.write(big);
  const m = await r.next((x) => x.error && x.error.code === -32600);
  assert.match(m.error.message, /exceeds the 1048576-byte frame limit/);
  // A header that claims far more than the limit and never sends the body.
  await r.write('Content-Length: 1099511627776\r\n\r\n');
  await r.next((x) => x.error && x.error.code === -32600 && /1099511627776/.test(x.error.message));
  await r.send({ jsonrpc: '2.0', id: 3, method: 'workspace/executeCommand', params: { command: 'ddx.explain', arguments: ['ds.oom.activations'] } });
  assert.equal((await r.response(3)).result.id, 'ds.oom.activations');
  assert.equal(r.messages.filter((x) => x.id === 2).length, 0);
  assert.equal((await r.close()).code, 0);
});

test('$/cancelRequest: -32800 for a request cancelled before or while it runs', async () => {
  const r = new Raw();
  await r.initialize();
  // Cancelled in the same write: it never runs.
  await r.write(Buffer.concat([
    Raw.frame({ jsonrpc: '2.0', id: 2, method: 'workspace/executeCommand', params: { command: 'ddx.explain', arguments: ['ds.oom.activations'] } }),
    Raw.frame({ jsonrpc: '2.0', method: '$/cancelRequest', params: { id: 2 } }),
  ]));
  assert.equal((await r.response(2)).error.code, -32800);
  // Cancelled while the scan of 40 MB runs on the thread pool.
  const text = ('[rank3]: step 1 loss 0.5 ' + 'y'.repeat(70) + '\n').repeat(400000);
  await r.send({ jsonrpc: '2.0', id: 'long', method: 'workspace/executeCommand', params: { command: 'ddx.diagnoseText', arguments: [text] } });
  await r.send({ jsonrpc: '2.0', method: '$/cancelRequest', params: { id: 'long' } });
  assert.equal((await r.response('long')).error.code, -32800);
  // Cancelling what is done or unknown is harmless.
  await r.send({ jsonrpc: '2.0', method: '$/cancelRequest', params: { id: 999 } });
  await r.send({ jsonrpc: '2.0', id: 5, method: 'workspace/executeCommand', params: { command: 'ddx.explain', arguments: ['ds.oom.activations'] } });
  assert.equal((await r.response(5)).result.id, 'ds.oom.activations');
  assert.equal(r.messages.filter((x) => x.id === 'long').length, 0);
  assert.equal((await r.close()).code, 0);
});

test('$/setTrace turns $/logTrace on and off; window/logMessage carries the server log', async () => {
  const s = new Session();
  await s.initialize({ trace: 'off' });
  await s.until(() => s.logs.some((l) => /language server ready/.test(l.message)), 5000, 'the ready log');
  await s.request('workspace/executeCommand', { command: 'ddx.explain', arguments: ['ds.oom.activations'] });
  assert.equal(s.traces.length, 0);
  await s.notify('$/setTrace', { value: 'verbose' });
  await s.request('workspace/executeCommand', { command: 'ddx.explain', arguments: ['ds.oom.activations'] });
  await s.until(() => s.traces.some((t) => /workspace\/executeCommand/.test(t.message) && t.verbose), 5000, 'a verbose trace');
  await s.notify('$/setTrace', { value: 'off' });
  const n = s.traces.length;
  await s.request('workspace/executeCommand', { command: 'ddx.explain', arguments: ['ds.oom.activations'] });
  assert.equal(s.traces.length, n);
  assert.equal((await s.close()).code, 0);
});

test('a burst of 10,000 messages is answered in order', async () => {
  const r = new Raw();
  await r.initialize();
  const frames = [];
  for (let i = 0; i < 10000; i++) {
    frames.push(i % 2
      ? Raw.frame({ jsonrpc: '2.0', id: i, method: 'textDocument/hover', params: { textDocument: { uri: 'file:///none.log' }, position: { line: 0, character: 0 } } })
      : Raw.frame({ jsonrpc: '2.0', method: 'textDocument/didChange', params: { textDocument: { uri: 'file:///none.log', version: i }, contentChanges: [{ text: 'x' }] } }));
  }
  await r.write(Buffer.concat(frames));
  await r.response(9999, 20000);
  const ids = r.messages.filter((m) => m.id !== undefined && !m.method).map((m) => m.id);
  assert.equal(ids.length, 4999); // 9999 taken already
  for (let i = 1; i < ids.length; i++) assert.ok(ids[i] > ids[i - 1]);
  assert.equal((await r.close()).code, 0);
});

// Strings of 256 KiB and more are decoded by the server's own fast path,
// not jansson: every escape must decode the same, and every invalid body
// must still be -32700.
test('big messages: escapes decoded as JSON says; bad big strings are -32700', async () => {
  const fs = require('node:fs');
  const { EXAMPLE, cliReport, tmpdir } = require('./lib');
  const path = require('node:path');
  // ~400 KiB of filler written with every JSON escape, then the example log
  // with "é😀\t" in front of every line (UTF-16 columns move by 4).
  const filler = 'step 1 \\"quoted\\" back\\\\slash \\/ tab\\t caf\\u00e9 smile \\ud83d\\ude00 nul\\u0000 \\b\\f\\r\\n';
  const example = fs.readFileSync(EXAMPLE, 'utf8').split('\n').map((l) => 'é😀\t' + l).join('\n');
  const jsonText = filler.repeat(6000) + JSON.stringify(example).slice(1, -1);
  const body = `{"jsonrpc":"2.0","method":"textDocument/didOpen","params":{"textDocument":{"uri":"file:///big.log","languageId":"log","version":7,"text":"${jsonText}"}}}`;
  assert.ok(body.length > 300000);
  const text = JSON.parse(body).params.textDocument.text;
  const dir = tmpdir();
  fs.writeFileSync(path.join(dir, 'big.log'), text);
  const want = cliReport(path.join(dir, 'big.log')).incidents[0];
  const r = new Raw();
  await r.initialize(1, { textDocument: { publishDiagnostics: { versionSupport: true } } });
  await r.write(Raw.frame(body));
  const p = await r.next((m) => m.method === 'textDocument/publishDiagnostics' && m.params.uri === 'file:///big.log', 20000);
  assert.equal(p.params.version, 7);
  const d = p.params.diagnostics[0];
  assert.equal(d.range.start.line, want.line - 1);
  assert.ok(text.split(/\r\n|\r|\n/)[want.line - 1].startsWith('é😀\t'));
  // ddx.diagnoseText with a big argument goes the same way
  await r.send({ jsonrpc: '2.0', id: 2, method: 'workspace/executeCommand', params: { command: 'ddx.diagnoseText', arguments: [text] } });
  const dt = (await r.response(2, 20000)).result;
  assert.equal(dt.incidents[0].rule, want.rule);
  assert.equal(dt.incidents[0].line, want.line);
  // the server read exactly the bytes JSON.parse gives (NUL, é, 😀 included)
  assert.equal(dt.stats.bytes, Buffer.byteLength(text, 'utf8'));
  assert.equal(dt.stats.lines, want.line + (text.split(/\r\n|\r|\n/).length - want.line) - (/(\r\n|\r|\n)$/.test(text) ? 1 : 0));
  // bad big strings: a raw control byte, a bad escape, a lone surrogate,
  // invalid UTF-8; each is -32700 and the server goes on
  const big = 'x'.repeat(300000);
  const bad = [
    Buffer.from(`{"jsonrpc":"2.0","id":9,"method":"ddx","params":["${big}\u0001"]}`),
    Buffer.from(`{"jsonrpc":"2.0","id":9,"method":"ddx","params":["${big}\\x41"]}`),
    Buffer.from(`{"jsonrpc":"2.0","id":9,"method":"ddx","params":["${big}\\udc00"]}`),
    Buffer.concat([Buffer.from(`{"jsonrpc":"2.0","id":9,"method":"ddx","params":["${big}`), Buffer.from([0xff]), Buffer.from('"]}')]),
  ];
  for (const b of bad) {
    await r.write(Buffer.concat([Buffer.from(`Content-Length: ${b.length}\r\n\r\n`), b]));
    const m = await r.next((x) => x.error && x.error.code === -32700, 20000);
    assert.equal(m.id, null);
  }
  await r.send({ jsonrpc: '2.0', id: 4, method: 'workspace/executeCommand', params: { command: 'ddx.explain', arguments: ['ds.oom.activations'] } });
  assert.equal((await r.response(4)).result.id, 'ds.oom.activations');
  assert.equal((await r.close()).code, 0);
  fs.rmSync(dir, { recursive: true });
});

test('params null or absent where they are optional (eglot): initialized, shutdown and exit are accepted', async () => {
  const r = new Raw();
  await r.send({ jsonrpc: '2.0', id: 1, method: 'initialize', params: { processId: null, capabilities: {} } });
  await r.response(1);
  await r.send({ jsonrpc: '2.0', method: 'initialized', params: null });
  // a request whose params are required still says what is missing
  await r.send({ jsonrpc: '2.0', id: 2, method: 'textDocument/hover', params: null });
  assert.equal((await r.response(2)).error.code, -32602);
  await r.send({ jsonrpc: '2.0', id: 3, method: 'shutdown', params: null });
  const sd = await r.response(3);
  assert.equal(sd.error, undefined, JSON.stringify(sd));
  assert.equal(sd.result, null);
  await r.send({ jsonrpc: '2.0', method: 'exit', params: null });
  assert.equal((await withTimeout(r.exited, 5000, 'exit')).code, 0);
});

test('a .log document is a log whatever languageId a one-language client sends', async () => {
  const s = new Session();
  await s.initialize();
  const u = await s.open(EXAMPLE, { languageId: 'json', docUri: 'file:///ws/train.log' });
  const p = await s.diagnosticsFor(u);
  assert.equal(p.diagnostics[0].code, 'ds.oom.zero3-gather');
  assert.equal((await s.close()).code, 0);
});

test("a document's kind from its content where the name does not decide and the languageId is generic or contradicts it", async () => {
  const s = new Session();
  await s.initialize();
  const text = fs.readFileSync(EXAMPLE, 'utf8');
  // a pasted traceback in an untitled buffer that VS Code's language detection called python
  const u1 = await s.open(EXAMPLE, { languageId: 'python', docUri: 'untitled:Untitled-1' });
  assert.equal((await s.diagnosticsFor(u1)).diagnostics[0].code, 'ds.oom.zero3-gather');
  // a one-language client that sends json for a log without a telling name
  const u2 = await s.open(EXAMPLE, { languageId: 'json', docUri: 'file:///ws/job-output' });
  assert.equal((await s.diagnosticsFor(u2)).diagnostics[0].code, 'ds.oom.zero3-gather');
  // an untitled buffer opened empty, the log pasted into it afterwards
  const u3 = await s.open(EXAMPLE, { languageId: 'plaintext', docUri: 'untitled:Untitled-2', text: '' });
  await s.notify('textDocument/didChange', { textDocument: { uri: u3, version: 2 }, contentChanges: [{ text }] });
  assert.equal((await s.diagnosticsFor(u3, { version: 2 })).diagnostics[0].code, 'ds.oom.zero3-gather');
  // a DeepSpeed config pasted as plaintext is a config: it is linted (a misspelt key), not scanned
  const cfg = '{\n  "zero_optimization": {"stage": 3, "overlap_com": true},\n  "train_micro_batch_size_per_gpu": 4\n}\n';
  const u4 = await s.open(EXAMPLE, { languageId: 'plaintext', docUri: 'untitled:Untitled-3', text: cfg });
  const p4 = await s.diagnosticsFor(u4);
  assert.ok(p4.diagnostics.some((d) => String(d.code).startsWith('ds-config.') && d.range.start.line === 1), JSON.stringify(p4.diagnostics));
  assert.equal((await s.close()).code, 0);
});
