// Restricted Mode, in the real extension host of code-server with workspace trust ON and a folder
// never trusted (tests/vscode/run.sh: a fresh user-data-dir, security.workspace.trust.enabled,
// startupPrompt "never"). The folder is a hostile repository: its .vscode/settings.json points
// ddx.server.path at .vscode/evil-server.sh, which would leave .vscode/PWNED. The extension
// ("untrustedWorkspaces": "limited") still runs, with the user's settings only, and the log's
// diagnostics appear. Results are JSON lines in $DDX_TEST_OUT, closed by tests-pass / tests-fail.
import * as assert from 'assert';
import * as fs from 'fs';
import * as path from 'path';
import * as vscode from 'vscode';
import { codeOf, nextEvent, suite, until } from './harness';

interface DdxApi {
  server: {
    start(): Promise<boolean>;
    running: boolean;
    lastError: string | undefined;
    binary?: { path: string; source: string };
    starts: number;
    settled(): Promise<void>;
    onDidStart: vscode.Event<{ path: string; source: string }>;
  };
  ignoredSettings(): string[];
}

const OUT = process.env.DDX_TEST_OUT ?? '/tmp/ddx-vscode-restricted.jsonl';
const WS = vscode.workspace.workspaceFolders?.[0]?.uri.fsPath ?? '';
const LOG = 'logs/zero3-oom-8gpu.log';
const { log, test, run: runTests } = suite(OUT);

/** The diagnostics of `uri` once `pred` holds: now, or at a diagnostics change of that document. */
function diagnosticsWhere(uri: vscode.Uri, ms: number, pred: (d: vscode.Diagnostic[]) => boolean): Promise<vscode.Diagnostic[]> {
  const now = vscode.languages.getDiagnostics(uri);
  if (pred(now)) return Promise.resolve(now);
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      sub.dispose();
      reject(new Error(`timed out after ${ms} ms waiting for the diagnostics of ${uri.fsPath}`));
    }, ms);
    const sub = vscode.languages.onDidChangeDiagnostics((e) => {
      if (!e.uris.some((u) => u.toString() === uri.toString())) return;
      const d = vscode.languages.getDiagnostics(uri);
      if (!pred(d)) return;
      clearTimeout(timer);
      sub.dispose();
      resolve(d);
    });
  });
}

let api: DdxApi;

test('restricted: the folder is untrusted and the extension still activates and runs `ddx lsp`', async () => {
  assert.strictEqual(vscode.workspace.isTrusted, false, 'the workspace is in Restricted Mode');
  const ext = vscode.extensions.getExtension<DdxApi>('ddx-dev.ddx');
  assert.ok(ext, 'extension ddx-dev.ddx is loaded');
  api = await ext.activate();
  assert.strictEqual(await api.server.start(), true, `server started (${api.server.lastError ?? ''})`);
});

test("restricted: the workspace's ddx.server.path never runs; the user's settings choose the server", async () => {
  const evil = path.join(WS, '.vscode', 'evil-server.sh');
  assert.ok(fs.existsSync(evil), 'the hostile workspace settings are in place');
  const user = vscode.workspace.getConfiguration('ddx').inspect<string>('server.path')?.globalValue;
  assert.ok(user && fs.existsSync(user), `the user's ddx.server.path (${user})`);
  assert.strictEqual(api.server.binary?.path, user, "the user's ddx.server.path runs");
  assert.strictEqual(api.server.binary?.source, 'setting');
  assert.strictEqual(vscode.workspace.getConfiguration('ddx').get('server.path'), user, 'VS Code gives the extension no workspace value of it');
  assert.ok(!fs.existsSync(path.join(WS, '.vscode', 'PWNED')), "the workspace's ddx.server.path never ran");
  // the extension reads the workspace's settings files after activation, asynchronously
  await until('the ignored workspace value named in a notice', 10000, () => api.ignoredSettings().includes('ddx.server.path') || undefined);
});

test("restricted: the log's diagnostics appear (the initiating failure, rank 5)", async () => {
  const uri = vscode.Uri.file(path.join(WS, LOG));
  await vscode.window.showTextDocument(await vscode.workspace.openTextDocument(uri), { preview: false });
  const diags = await diagnosticsWhere(uri, 15000, (d) => d.some((x) => x.source === 'ddx' && x.severity === vscode.DiagnosticSeverity.Error));
  const err = diags.find((x) => x.source === 'ddx' && x.severity === vscode.DiagnosticSeverity.Error)!;
  assert.strictEqual(codeOf(err), 'ds.oom.zero3-gather');
  assert.match(err.message, /rank 5\b/);
  assert.ok(!fs.existsSync(path.join(WS, '.vscode', 'PWNED')), 'still no marker');
});

// The driver (run-tests.js) clicks the Workspace Trust editor's Trust button when it reads the
// grant-trust line: the extension API cannot grant trust, a user does.
test('restricted: trusting the folder restarts the server, still with the user\'s ddx.server.path', async () => {
  const user = vscode.workspace.getConfiguration('ddx').inspect<string>('server.path')?.globalValue;
  const granted = nextEvent(vscode.workspace.onDidGrantWorkspaceTrust, 'the trust grant', 40000);
  const started = nextEvent(api.server.onDidStart, 'the server restarted after the grant', 40000);
  // once trusted, VS Code re-reads the settings and reports ddx.server.path as changed although it
  // names the same binary: that must not restart the server a second time
  const reread = nextEvent(vscode.workspace.onDidChangeConfiguration, 'the settings re-read', 40000,
    (e) => e.affectsConfiguration('ddx.server.path')).then(() => true, () => false);
  const starts = api.server.starts;
  await vscode.commands.executeCommand('workbench.trust.manage');
  log({ event: 'grant-trust' });
  await granted;
  assert.strictEqual(vscode.workspace.isTrusted, true, 'the workspace is trusted');
  const bin = await started;
  assert.strictEqual(bin.path, user, "the restarted server is the user's ddx.server.path");
  assert.ok(api.server.running, 'and runs');
  const fired = await Promise.race([reread, new Promise<boolean>((res) => setTimeout(() => res(false), 5000))]);
  await api.server.settled(); // a restart the re-read queued has run by now
  assert.ok(api.server.running, 'the server runs after the re-read');
  log({ event: 'settings-reread', fired });
  assert.strictEqual(api.server.starts, starts + 1, `one restart for the grant, none for the settings re-read (it ${fired ? 'came' : 'did not come'})`);
  assert.ok(!fs.existsSync(path.join(WS, '.vscode', 'PWNED')), "the workspace's ddx.server.path never ran, trusted either");
}, 45000);

export async function run(): Promise<void> {
  await runTests(WS);
}
