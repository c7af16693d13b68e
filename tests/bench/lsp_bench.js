// Language-server benchmarks: the real `ddx lsp` over real pipes, driven by
// vscode-jsonrpc as an editor drives it. Prints Markdown rows for
// docs/performance.md. usage (from the repo root):
//   DDX=build/ddx node tests/bench/lsp_bench.js DATA_DIR [BIG_FILE]
// DATA_DIR holds (or gets) bench-1M.log, bench-10M.log, bench-50M.log from
// gen_bench.py; BIG_FILE (e.g. bench-1G.log in DATA_DIR) is diagnosed with
// ddx.diagnoseFile while hovers keep coming, to show the loop never waits
// on a scan.
'use strict';
const fs = require('node:fs');
const path = require('node:path');
const { spawnSync } = require('node:child_process');
const { Session, Raw, uri } = require('../lsp/lib.js');

const data = path.resolve(process.argv[2] || 'tests/bench/data');
const big = process.argv[3] ? path.resolve(process.argv[3]) : null;
const ROOT = path.resolve(__dirname, '../..');

function ensure(size) {
  const f = path.join(data, `bench-${size}.log`);
  if (!fs.existsSync(f)) {
    const r = spawnSync('python3', [path.join(ROOT, 'tests/bench/gen_bench.py'), size, f], { stdio: 'inherit' });
    if (r.status !== 0) throw new Error(`gen_bench.py ${size} failed`);
  }
  return f;
}

const ms = (t0) => Number(process.hrtime.bigint() - t0) / 1e6;
function pct(xs, p) {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))];
}

async function main() {
  fs.mkdirSync(data, { recursive: true });
  const rows = [];
  const s = new Session();
  await s.initialize({ folders: [data] });

  // didOpen -> publishDiagnostics, the median of 5 opens per size.
  let tenUri = null;
  let tenDiags = null;
  for (const size of ['1M', '10M', '50M']) {
    const file = ensure(size);
    const text = fs.readFileSync(file, 'utf8');
    const times = [];
    for (let k = 0; k < 5; k++) {
      const u = uri(file) + `?open=${k}`;
      const t0 = process.hrtime.bigint();
      await s.notify('textDocument/didOpen', { textDocument: { uri: u, languageId: 'log', version: 1, text } });
      const p = await s.diagnosticsFor(u, { ms: 60000 });
      times.push(ms(t0));
      if (size === '10M' && k === 0) {
        tenUri = u;
        tenDiags = p.diagnostics;
      } else {
        await s.notify('textDocument/didClose', { textDocument: { uri: u } });
      }
    }
    rows.push([`didOpen to publishDiagnostics, ${(text.length / 1048576).toFixed(0)} MiB document, vscode-jsonrpc client`, 'median of 5', pct(times, 50)]);
  }
  if (!tenDiags || !tenDiags.length) throw new Error('no diagnostics on the 10 MB document');

  // hover and code action on the diagnosed line, 1,000 each: once through
  // vscode-jsonrpc as an editor sends them, once through bare framing
  // (Raw), which leaves out most of the client's own time.
  const d = tenDiags[0];
  const line = d.range.start.line;
  const raw = new Raw();
  await raw.initialize(1, {});
  // didOpen again through bare framing, the message encoded before the
  // clock starts: what the server itself takes (plus the pipe).
  for (const size of ['1M', '10M', '50M']) {
    const text = fs.readFileSync(ensure(size), 'utf8');
    const times = [];
    for (let k = 0; k < 5; k++) {
      const u = `file:///raw-${size}-${k}.log`;
      const frame = Raw.frame({ jsonrpc: '2.0', method: 'textDocument/didOpen', params: { textDocument: { uri: u, languageId: 'log', version: 1, text } } });
      const t0 = process.hrtime.bigint();
      await raw.write(frame);
      await raw.next((m) => m.method === 'textDocument/publishDiagnostics' && m.params.uri === u, 60000);
      times.push(ms(t0));
      await raw.send({ jsonrpc: '2.0', method: 'textDocument/didClose', params: { textDocument: { uri: u } } });
    }
    rows.push([`didOpen to publishDiagnostics, ${(text.length / 1048576).toFixed(0)} MiB document, bare-framing client (message encoded beforehand)`, 'median of 5', pct(times, 50)]);
  }
  const tenText = fs.readFileSync(ensure('10M'), 'utf8');
  await raw.send({ jsonrpc: '2.0', method: 'textDocument/didOpen', params: { textDocument: { uri: 'file:///ten.log', languageId: 'log', version: 1, text: tenText } } });
  await raw.next((m) => m.method === 'textDocument/publishDiagnostics' && m.params.diagnostics.length > 0, 60000);
  let id = 100;
  const hoverP = { position: { line, character: 1 } };
  const actionP = { range: d.range, context: { diagnostics: [d], only: ['quickfix'] } };
  for (const [name, method, params] of [['hover', 'textDocument/hover', hoverP], ['codeAction', 'textDocument/codeAction', actionP]]) {
    for (const [client, call] of [
      ['vscode-jsonrpc client', () => s.request(method, { textDocument: { uri: tenUri }, ...params })],
      ['bare-framing client', async () => {
        const k = id++;
        await raw.send({ jsonrpc: '2.0', id: k, method, params: { textDocument: { uri: 'file:///ten.log' }, ...params } });
        return (await raw.response(k)).result;
      }],
    ]) {
      const times = [];
      for (let k = 0; k < 1000; k++) {
        const t0 = process.hrtime.bigint();
        const r = await call();
        times.push(ms(t0));
        if (k === 0 && !r) throw new Error(`${name} on the diagnosed line returned nothing`);
      }
      rows.push([`${name} on the diagnosed line of the 10 MiB document, ${client}`, 'p50', pct(times, 50)]);
      rows.push([`${name} on the diagnosed line of the 10 MiB document, ${client}`, 'p99', pct(times, 99)]);
    }
  }
  await raw.close();

  // ddx.diagnoseFile on a big file in the workspace, with hovers meanwhile.
  if (big) {
    const t0 = process.hrtime.bigint();
    let done = false;
    const job = s.request('workspace/executeCommand', { command: 'ddx.diagnoseFile', arguments: [uri(big)] })
      .then((r) => { done = true; return r; });
    const during = [];
    while (!done) {
      const h0 = process.hrtime.bigint();
      await s.request('textDocument/hover', { textDocument: { uri: tenUri }, position: { line, character: 1 } });
      during.push(ms(h0));
      await new Promise((r) => setTimeout(r, 2));
    }
    const r = await job;
    const secs = ms(t0) / 1000;
    const gb = fs.statSync(big).size / 1e9;
    rows.push([`ddx.diagnoseFile, ${gb.toFixed(2)} GB file (${r.incidents[0].rule})`, 'wall', secs * 1000]);
    rows.push([`hover while that scan runs (${during.length} requests)`, 'p99', pct(during, 99)]);
  }
  await s.close();

  console.log('| measurement | statistic | ms |');
  console.log('|---|---|---|');
  for (const [what, stat, v] of rows) console.log(`| ${what} | ${stat} | ${v.toFixed(v < 10 ? 3 : 0)} |`);
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
