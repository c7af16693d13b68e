// Helpers for the `ddx lsp` tests: the real binary over real pipes, driven
// either by vscode-languageserver-protocol (as editors do) or by raw bytes
// (to test framing and error paths no well-behaved client produces).
'use strict';
const { spawn, spawnSync } = require('node:child_process');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const rpc = require('vscode-jsonrpc/node');

const ROOT = path.resolve(__dirname, '../..');
const DDX = path.resolve(process.env.DDX || path.join(__dirname, '../../build/ddx'));
const EXAMPLE = path.join(ROOT, 'examples/zero3-oom-8gpu.log');
const CORPUS = path.join(ROOT, 'tests/corpus/dev');

function uri(p) {
  return 'file://' + p.split('/').map(encodeURIComponent).join('/');
}

function tmpdir(prefix = 'ddx-lsp-') {
  return fs.mkdtempSync(path.join(os.tmpdir(), prefix));
}

function withTimeout(p, ms, what) {
  let t;
  return Promise.race([
    p.finally(() => clearTimeout(t)),
    new Promise((_, rej) => {
      t = setTimeout(() => rej(new Error(`timeout after ${ms} ms waiting for ${what}`)), ms);
    }),
  ]);
}

// The CLI's JSON report of a file: the reference the server must agree with.
function cliReport(file) {
  const r = spawnSync(DDX, ['diagnose', '--format', 'json', file], { encoding: 'utf8' });
  return JSON.parse(r.stdout);
}

const CAPS = {
  general: { positionEncodings: ['utf-16'] },
  window: { workDoneProgress: true },
  textDocument: {
    codeAction: { disabledSupport: true, codeActionLiteralSupport: { codeActionKind: { valueSet: ['quickfix'] } } },
    publishDiagnostics: { relatedInformation: true, versionSupport: true },
    hover: { contentFormat: ['markdown', 'plaintext'] },
  },
  workspace: { workspaceEdit: { documentChanges: true }, workspaceFolders: true },
};

// A session through vscode-jsonrpc, as an editor talks to the server.
class Session {
  // wrap: a command line to run the server under (e.g. valgrind).
  constructor({ args = ['lsp', '--stdio'], env = {}, wrap = [] } = {}) {
    const argv = [...wrap, DDX, ...args];
    this.child = spawn(argv[0], argv.slice(1), { stdio: ['pipe', 'pipe', 'pipe'], env: { ...process.env, ...env } });
    this.stderr = '';
    this.child.stderr.on('data', (d) => (this.stderr += d));
    this.exited = new Promise((res) => this.child.on('exit', (code, signal) => res({ code, signal })));
    this.conn = rpc.createMessageConnection(
      new rpc.StreamMessageReader(this.child.stdout),
      new rpc.StreamMessageWriter(this.child.stdin),
    );
    this.diagnostics = new Map(); // uri -> [params...]
    this.waiters = [];
    this.logs = [];
    this.progress = [];
    this.traces = [];
    this.creates = [];
    this.conn.onNotification('textDocument/publishDiagnostics', (p) => {
      if (!this.diagnostics.has(p.uri)) this.diagnostics.set(p.uri, []);
      this.diagnostics.get(p.uri).push(p);
      this._wake();
    });
    this.conn.onNotification('window/logMessage', (p) => {
      this.logs.push(p);
      this._wake();
    });
    this.conn.onNotification('window/showMessage', (p) => {
      this.logs.push({ ...p, show: true });
      this._wake();
    });
    this.conn.onNotification('$/logTrace', (p) => {
      this.traces.push(p);
      this._wake();
    });
    this.conn.onNotification('$/progress', (p) => {
      this.progress.push(p);
      this._wake();
    });
    this.conn.onRequest('window/workDoneProgress/create', (p) => {
      this.creates.push(p);
      return null;
    });
    this.conn.onError(() => {});
    this.conn.onClose(() => {});
    this.conn.listen();
  }

  _wake() {
    for (const w of this.waiters.slice()) {
      if (w.pred()) {
        this.waiters.splice(this.waiters.indexOf(w), 1);
        w.res();
      }
    }
  }

  // Resolves once pred() holds (checked on every notification).
  until(pred, ms = 10000, what = 'a condition') {
    if (pred()) return Promise.resolve();
    return withTimeout(new Promise((res) => this.waiters.push({ pred, res })), ms, what);
  }

  async initialize({ folders = [], caps = CAPS, options, processId = null, trace } = {}) {
    const params = {
      processId,
      clientInfo: { name: 'ddx-node-test' },
      rootUri: folders.length ? uri(folders[0]) : null,
      workspaceFolders: folders.map((f) => ({ uri: uri(f), name: path.basename(f) })),
      capabilities: caps,
    };
    if (options) params.initializationOptions = options;
    if (trace) params.trace = trace;
    const r = await this.conn.sendRequest('initialize', params);
    await this.conn.sendNotification('initialized', {});
    return r;
  }

  open(file, { text, languageId = 'log', version = 1, docUri } = {}) {
    const u = docUri || uri(file);
    return this.conn
      .sendNotification('textDocument/didOpen', {
        textDocument: { uri: u, languageId, version, text: text !== undefined ? text : fs.readFileSync(file, 'utf8') },
      })
      .then(() => u);
  }

  // The next publishDiagnostics for u after `after` earlier ones.
  async diagnosticsFor(u, { after = 0, ms = 10000, version } = {}) {
    await this.until(() => {
      const l = this.diagnostics.get(u) || [];
      return l.length > after && (version === undefined || l.some((p, i) => i >= after && p.version === version));
    }, ms, `publishDiagnostics for ${u}`);
    const l = this.diagnostics.get(u);
    if (version !== undefined) return l.filter((p, i) => i >= after && p.version === version).pop();
    return l[l.length - 1];
  }

  request(method, params) {
    return this.conn.sendRequest(method, params);
  }

  notify(method, params) {
    return this.conn.sendNotification(method, params);
  }

  // ms: how long shutdown and exit may take (a server under valgrind
  // still parses the messages queued before them at a tenth of the speed).
  async close(ms = 5000) {
    try {
      await withTimeout(this.conn.sendRequest('shutdown'), ms, 'shutdown');
      await this.conn.sendNotification('exit');
    } catch (e) {
      this.child.kill('SIGKILL');
      throw e;
    }
    const r = await withTimeout(this.exited, ms, 'exit');
    this.conn.dispose();
    return r;
  }

  kill() {
    this.conn.dispose();
    this.child.kill('SIGKILL');
  }
}

// A session of raw bytes: frames are parsed here, by hand.
class Raw {
  constructor({ args = ['lsp'], env = {} } = {}) {
    this.child = spawn(DDX, args, { stdio: ['pipe', 'pipe', 'pipe'], env: { ...process.env, ...env } });
    this.buf = Buffer.alloc(0);
    this.messages = [];
    this.waiters = [];
    this.stderr = '';
    this.child.stderr.on('data', (d) => (this.stderr += d));
    this.child.stdin.on('error', () => {});
    this.exited = new Promise((res) => this.child.on('exit', (code, signal) => res({ code, signal })));
    this.child.stdout.on('data', (d) => {
      this.buf = Buffer.concat([this.buf, d]);
      for (;;) {
        const h = this.buf.indexOf('\r\n\r\n');
        if (h < 0) break;
        const m = /Content-Length: (\d+)/i.exec(this.buf.slice(0, h).toString());
        const n = Number(m[1]);
        if (this.buf.length < h + 4 + n) break;
        this.messages.push(JSON.parse(this.buf.slice(h + 4, h + 4 + n).toString('utf8')));
        this.buf = this.buf.slice(h + 4 + n);
      }
      for (const w of this.waiters.slice()) w();
    });
  }

  static frame(obj) {
    const body = Buffer.from(typeof obj === 'string' ? obj : JSON.stringify(obj), 'utf8');
    return Buffer.concat([Buffer.from(`Content-Length: ${body.length}\r\n\r\n`), body]);
  }

  write(bytes) {
    return new Promise((res) => this.child.stdin.write(bytes, res));
  }

  send(obj) {
    return this.write(Raw.frame(obj));
  }

  // Resolves with the first message (not yet taken) matching pred.
  next(pred, ms = 10000, what = 'a message') {
    const find = () => {
      const i = this.messages.findIndex(pred);
      if (i < 0) return undefined;
      return this.messages.splice(i, 1)[0];
    };
    const got = find();
    if (got) return Promise.resolve(got);
    return withTimeout(
      new Promise((res) => {
        const w = () => {
          const g = find();
          if (g) {
            this.waiters.splice(this.waiters.indexOf(w), 1);
            res(g);
          }
        };
        this.waiters.push(w);
      }),
      ms,
      what,
    );
  }

  response(id, ms) {
    return this.next((m) => m.id === id && !m.method, ms, `the response to ${id}`);
  }

  async initialize(id = 1, caps = {}) {
    await this.send({ jsonrpc: '2.0', id, method: 'initialize', params: { processId: null, capabilities: caps } });
    const r = await this.response(id);
    await this.send({ jsonrpc: '2.0', method: 'initialized', params: {} });
    return r;
  }

  async close() {
    await this.send({ jsonrpc: '2.0', id: 'bye', method: 'shutdown' });
    await this.response('bye');
    await this.send({ jsonrpc: '2.0', method: 'exit' });
    return withTimeout(this.exited, 5000, 'exit');
  }

  kill() {
    this.child.kill('SIGKILL');
  }
}

module.exports = { DDX, ROOT, EXAMPLE, CORPUS, CAPS, Session, Raw, uri, tmpdir, cliReport, withTimeout };
