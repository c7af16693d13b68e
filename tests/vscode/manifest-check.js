// The extension's settings in a hostile workspace, checked without VS Code (tests/vscode/run.sh
// runs it after compiling; `node tests/vscode/manifest-check.js` from the repository root):
//   1. package.json: every setting that names a program, or files and folders outside the
//      workspace, has "scope": "machine" (no workspace value), and they are exactly the ones
//      client-vscode/src/settings.ts reads as machine settings; ddx.terminal.maxOutputBytes has
//      the "maximum" the code clamps to.
//   2. client-vscode/out/settings.js (compiled) with a stand-in `vscode` module: a workspace or
//      folder value of a machine setting is never taken, the notice names it; the byte limit is
//      clamped; settings files (JSONC) are read for the keys they set; ~/ paths are expanded at
//      start and after a change; in Restricted Mode the user's values, never the workspace's.
//   3. capabilities: Restricted Mode "limited", restrictedConfigurations = the machine settings.
//   4. the $ddx problem matcher over a sample and over `build/ddx diagnose` of the example.
//   5. the walkthrough: its media and commands exist, the example log is shipped.
//   6. terminal links (client-vscode/out/terminal-lines.js): real failure lines of tests/corpus are links,
//      progress and NCCL INFO lines are not.
// Prints "N passed, M failed"; exit 0 only when all pass.
'use strict';
const fs = require('fs');
const path = require('path');
const Module = require('module');

const root = path.resolve(__dirname, '..', '..');
let passed = 0;
let failed = 0;
const check = (ok, what) => {
  if (ok) passed++;
  else {
    failed++;
    console.log(`FAIL: ${what}`);
  }
};

// ------------------------------------------------------------------------------ 1. the manifest
const pkg = JSON.parse(fs.readFileSync(path.join(root, 'package.json'), 'utf8'));
const props = pkg.contributes.configuration.properties;
const src = fs.readFileSync(path.join(root, 'client-vscode', 'src', 'settings.ts'), 'utf8');
const listed = /MACHINE_SETTINGS = \[([^\]]*)\]/.exec(src);
check(listed, 'settings.ts declares MACHINE_SETTINGS');
const machineInCode = listed ? [...listed[1].matchAll(/'([^']+)'/g)].map((m) => `ddx.${m[1]}`).sort() : [];
const machineInManifest = Object.keys(props).filter((k) => props[k].scope === 'machine').sort();
check(JSON.stringify(machineInCode) === JSON.stringify(machineInManifest),
  `the machine-scoped settings of package.json (${machineInManifest}) are the ones settings.ts reads as such (${machineInCode})`);
for (const k of ['ddx.server.path', 'ddx.rules.extraPaths', 'ddx.dsConfig.path', 'ddx.diagnoseFile.allowOutsideWorkspace'])
  check(props[k] && props[k].scope === 'machine', `${k} has "scope": "machine" (got ${props[k] && props[k].scope})`);
// any other setting that looks like a path, a program or a folder must be machine-scoped too
for (const [k, v] of Object.entries(props)) {
  const text = `${k} ${v.description || ''} ${v.markdownDescription || ''}`;
  const names = /\.(path|paths|binary|command|executable|folder|dir)s?$/i.test(k) || /outside the workspace/i.test(text);
  if (names) check(v.scope === 'machine', `${k} names a program or files outside the workspace: "scope": "machine" (got ${v.scope})`);
  check(v.scope !== 'machine-overridable', `${k} is not machine-overridable (a workspace value would win)`);
}
const maxBytes = props['ddx.terminal.maxOutputBytes'];
const codeMax = /MAX_OUTPUT_BYTES = ([\d *]+);/.exec(src);
const codeMaxValue = codeMax ? codeMax[1].split('*').reduce((a, b) => a * Number(b.trim()), 1) : NaN;
check(maxBytes && maxBytes.maximum === 64 * 1024 * 1024, `ddx.terminal.maxOutputBytes has "maximum": 67108864 (got ${maxBytes && maxBytes.maximum})`);
check(maxBytes && maxBytes.maximum === codeMaxValue, `the manifest's maximum is settings.ts's MAX_OUTPUT_BYTES (${codeMaxValue})`);
check(maxBytes && maxBytes.default <= maxBytes.maximum && maxBytes.default >= maxBytes.minimum, 'its default is within its bounds');

// ---------------------------------------------------------- 2. the compiled code, stand-in vscode
const out = path.join(root, 'client-vscode', 'out', 'settings.js');
if (!fs.existsSync(out)) {
  check(false, `${out} is missing (npm run compile)`);
} else {
  let inspected = {};
  const vscode = {
    workspace: {
      workspaceFolders: [{ uri: { fsPath: '/ws' } }],
      getConfiguration: () => ({
        inspect: (key) => ({ key, defaultValue: undefined, ...(inspected[key] || {}) }),
        get: (key) => {
          const i = inspected[key] || {};
          return i.workspaceFolderValue ?? i.workspaceValue ?? i.globalValue ?? i.defaultValue;
        },
      }),
    },
    window: {},
  };
  const load = Module._load;
  Module._load = function (request, ...rest) {
    return request === 'vscode' ? vscode : load.call(this, request, ...rest);
  };
  const s = require(out);
  Module._load = load;

  const told = [];
  const notice = (k) => told.push(k);
  inspected = {
    'server.path': { defaultValue: '', globalValue: '/usr/bin/ddx', workspaceValue: '.vscode/evil.sh' },
    'rules.extraPaths': { defaultValue: [], workspaceFolderValue: ['evil-rules'] },
    'dsConfig.path': { defaultValue: '', workspaceValue: '/etc/passwd' },
    'diagnoseFile.allowOutsideWorkspace': { defaultValue: false, workspaceLanguageValue: true },
    'terminal.maxOutputBytes': { defaultValue: 8388608, workspaceValue: 1e12 },
  };
  check(s.serverPathSetting(notice) === '/usr/bin/ddx', 'ddx.server.path: the user value, not the workspace one');
  const st = s.serverSettings(notice);
  check(st.rules.extraPaths.length === 0, `ddx.rules.extraPaths: the workspace folder value is ignored (got ${st.rules.extraPaths})`);
  check(st.dsConfig.path === null, `ddx.dsConfig.path: the workspace value is ignored (got ${st.dsConfig.path})`);
  check(st.diagnoseFile.allowOutsideWorkspace === false, 'ddx.diagnoseFile.allowOutsideWorkspace: a workspace language value is ignored');
  check(JSON.stringify([...new Set(told)].sort()) === JSON.stringify(['ddx.diagnoseFile.allowOutsideWorkspace', 'ddx.dsConfig.path', 'ddx.rules.extraPaths', 'ddx.server.path']),
    `the notice names each ignored setting (got ${told})`);
  inspected = { 'server.path': { defaultValue: '', workspaceValue: '/tmp/evil' } };
  check(s.serverPathSetting() === '', 'a workspace-only ddx.server.path leaves the default (bundled or PATH)');
  inspected = { 'rules.extraPaths': { defaultValue: [], globalValue: ['/home/me/rules'] } };
  told.length = 0;
  check(JSON.stringify(s.serverSettings(notice).rules.extraPaths) === '["/home/me/rules"]' && told.length === 0, 'a user value is taken, with no notice');

  inspected = { 'terminal.maxOutputBytes': { defaultValue: 8388608, workspaceValue: 1e12 } };
  check(s.terminalMaxBytes() === 64 * 1024 * 1024, `a huge ddx.terminal.maxOutputBytes is clamped to 64 MiB (got ${s.terminalMaxBytes()})`);
  check(s.clampOutputBytes(1e6 + 0.5) === 1e6, 'a fractional byte limit is cut to an integer');
  check(s.clampOutputBytes(10) === 8 * 1024 * 1024, 'a byte limit below the minimum gives the default');
  check(s.clampOutputBytes('64') === 8 * 1024 * 1024, 'a byte limit that is not a number gives the default');
  check(s.clampOutputBytes(Infinity) === 8 * 1024 * 1024, 'an infinite byte limit gives the default');

  const jsonc = `// comment "ddx.world.size"
  { "ddx.server.path": "a//b", /* "ddx.dsConfig.path": 1 */
    "ddx.rules": { "extraPaths": ["x",], },
    "other": "ddx.diagnoseFile.allowOutsideWorkspace \\" , }" ,
  }`;
  check(JSON.stringify(s.machineSettingsIn(jsonc)) === JSON.stringify(['ddx.server.path', 'ddx.rules.extraPaths']),
    `a JSONC settings file names the machine settings it sets (got ${JSON.stringify(s.machineSettingsIn(jsonc))})`);
  check(JSON.stringify(s.machineSettingsIn('{"settings": {"ddx.dsConfig.path": "/x"}}', true)) === '["ddx.dsConfig.path"]',
    'a .code-workspace file: its "settings"');
  check(s.machineSettingsIn('{ not json').length === 0, 'an unreadable settings file names nothing');

  // ~/ and ${workspaceFolder} are expanded in what goes to the server, at start and after a
  // settings change alike (server.ts sends serverSettings() from both places)
  const os = require('os');
  inspected = {
    'rules.extraPaths': { defaultValue: [], globalValue: ['~/my-rules', '${workspaceFolder}/r', 'rel'] },
    'dsConfig.path': { defaultValue: '', globalValue: '~/ds_config.json' },
  };
  const ex = s.serverSettings();
  check(JSON.stringify(ex.rules.extraPaths) === JSON.stringify([path.join(os.homedir(), 'my-rules'), '/ws/r', '/ws/rel']),
    `ddx.rules.extraPaths: ~/, \${workspaceFolder} and relative paths are expanded (got ${ex.rules.extraPaths})`);
  check(ex.dsConfig.path === path.join(os.homedir(), 'ds_config.json'), `ddx.dsConfig.path: ~/ is expanded (got ${ex.dsConfig.path})`);
  const serverSrc = fs.readFileSync(path.join(root, 'client-vscode', 'src', 'server.ts'), 'utf8');
  check(/initializationOptions: \{ ddx: serverSettings\(/.test(serverSrc), 'the server starts with serverSettings() (expanded paths)');
  check(/didChangeConfiguration: \(\) =>\s*this\.sendSettings\(client\)/.test(serverSrc) &&
    /sendNotification\(DidChangeConfigurationNotification\.type, \{ settings: \{ ddx: serverSettings\(/.test(serverSrc),
    'a settings change sends serverSettings() too (expanded paths), not VS Code\'s raw section');

  // Restricted Mode: the user's own values of the machine settings (the issue: "the bundled
  // server runs with the user's settings only"); workspace values never count, trusted or not
  vscode.workspace.isTrusted = false;
  inspected = {
    'server.path': { defaultValue: '', globalValue: '/usr/bin/ddx', workspaceValue: '/repo/evil.sh' },
    'rules.extraPaths': { defaultValue: [], globalValue: ['/home/me/rules'], workspaceValue: ['/repo/rules'] },
    'dsConfig.path': { defaultValue: '', globalValue: '/home/me/ds_config.json' },
    'diagnoseFile.allowOutsideWorkspace': { defaultValue: false, workspaceValue: true },
    'world.size': { globalValue: 8 },
  };
  const un = s.serverSettings();
  check(s.serverPathSetting() === '/usr/bin/ddx' && un.rules.extraPaths.length === 1 && un.rules.extraPaths[0] === '/home/me/rules' &&
    un.diagnoseFile.allowOutsideWorkspace === false,
    `an untrusted workspace: the user's values, never the workspace's (got ${JSON.stringify({ p: s.serverPathSetting(), ...un })})`);
  check(un.world.size === 8, 'an untrusted workspace: the other settings still apply');
  vscode.workspace.isTrusted = true;
  check(s.serverPathSetting() === '/usr/bin/ddx', 'a trusted workspace: the user value of ddx.server.path again');
}

// ------------------------------------------------- 3. Restricted Mode and virtual workspaces
const caps = pkg.capabilities || {};
const untrusted = caps.untrustedWorkspaces || {};
check(untrusted.supported === 'limited' && typeof untrusted.description === 'string' && untrusted.description.length > 20,
  `capabilities.untrustedWorkspaces: "supported": "limited" with a description (got ${JSON.stringify(untrusted.supported)})`);
check(JSON.stringify([...(untrusted.restrictedConfigurations || [])].sort()) === JSON.stringify(machineInManifest),
  `restrictedConfigurations are exactly the machine-scoped settings (${machineInManifest}; got ${untrusted.restrictedConfigurations})`);
check(caps.virtualWorkspaces !== undefined, 'capabilities.virtualWorkspaces is declared');
// every feature module registers its own commands: read them all
const srcDir = path.join(root, 'client-vscode', 'src');
const extSrc = fs.readdirSync(srcDir).filter((f) => f.endsWith('.ts')).map((f) => fs.readFileSync(path.join(srcDir, f), 'utf8')).join('\n');
check(/onDidGrantWorkspaceTrust\(\(\) => \{[^}]*server\.restart\(\)/.test(extSrc), 'the extension restarts its server when the workspace becomes trusted');
check(!/if \(!workspaceTrusted\(\)\)/.test(src), 'settings.ts: machineSetting() reads the user value the same way in Restricted Mode');

// ------------------------------------------------------------ 4. the $ddx problem matcher
const matchers = pkg.contributes.problemMatchers || [];
const pm = matchers.find((m) => m.name === 'ddx');
check(pm && Array.isArray(pm.pattern) && pm.pattern.length === 2, 'contributes.problemMatchers has "ddx" with a two-line pattern');
check(pm && pm.owner !== 'ddx' && pm.source && pm.source !== 'ddx',
  'the matcher has its own owner and source (the language client\'s collection "ddx" would replace its problems)');
/** What VS Code's multi-line matcher makes of `text` (one problem per headline + where). */
const runMatcher = (text) => {
  const [head, where] = pm.pattern.map((p) => ({ ...p, re: new RegExp(p.regexp) }));
  const found = [];
  let cur;
  for (const line of text.split('\n')) {
    const h = head.re.exec(line);
    if (h) { cur = { severity: h[head.severity], message: h[head.message], code: h[head.code] }; continue; }
    const w = cur && where.re.exec(line);
    if (w) found.push({ ...cur, file: w[where.file], line: Number(w[where.line]) });
    cur = undefined;
  }
  return found;
};
if (pm) {
  const sample = [
    'Rank 5: CUDA out of memory while ZeRO-3 all-gathers / prefetches parameters, at examples/zero3-oom-8gpu.log:46. Then, as a consequence: nccl.watchdog-timeout (14 x, ranks 0-4,6-7).',
    '',
    'error CUDA out of memory while ZeRO-3 all-gathers / prefetches parameters  [ds.oom.zero3-gather, cause, confidence 0.93]',
    '  where     rank 5, examples/zero3-oom-8gpu.log:46',
    '  > torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 3.91 GiB.',
    'warning fp16 overflows still skipping steps after warm-up (loss scale at or below 512)  [ds.fp16.overflow, cause, confidence 0.93]',
    '  where     rank unknown (one of ranks 0,3) on node-1, logs/a b.log:2 (seen on ranks 0-3)',
  ].join('\n');
  const got = runMatcher(sample);
  check(got.length === 2, `the matcher finds the two incidents of a sample (got ${JSON.stringify(got)})`);
  check(got[0] && got[0].file === 'examples/zero3-oom-8gpu.log' && got[0].line === 46 && got[0].severity === 'error' && got[0].code === 'ds.oom.zero3-gather' &&
    got[0].message === 'CUDA out of memory while ZeRO-3 all-gathers / prefetches parameters', `its first problem (got ${JSON.stringify(got[0])})`);
  check(got[1] && got[1].file === 'logs/a b.log' && got[1].line === 2 && got[1].severity === 'warning', `its second problem (got ${JSON.stringify(got[1])})`);
  // the real binary's text output, when it is built
  const ddxBin = process.env.DDX_BIN || path.join(root, 'build', 'ddx');
  if (fs.existsSync(ddxBin)) {
    const { spawnSync } = require('child_process');
    const r = spawnSync(ddxBin, ['diagnose', '--no-color', 'examples/zero3-oom-8gpu.log'], { cwd: root, encoding: 'utf8' });
    const real = runMatcher(r.stdout || '');
    check(real.length >= 1 && real[0].file === 'examples/zero3-oom-8gpu.log' && real[0].line === 46 && real[0].code === 'ds.oom.zero3-gather',
      `the matcher reads \`ddx diagnose\` of the example (got ${JSON.stringify(real)})`);
  }
}

// ---------------------------------------------------------------- 5. the walkthrough
const walks = pkg.contributes.walkthroughs || [];
check(walks.length === 1 && walks[0].steps.length >= 2, 'contributes.walkthroughs: one walkthrough with its steps');
const commands = new Set(pkg.contributes.commands.map((c) => c.command));
const ignore = fs.readFileSync(path.join(root, '.vscodeignore'), 'utf8');
for (const w of walks) {
  for (const st of w.steps) {
    const md = st.media && (st.media.markdown || st.media.image);
    check(md && fs.existsSync(path.join(root, md)) && md.startsWith('client-vscode/media/'), `walkthrough step ${st.id}: its media ${md} exists and is packaged (media/**)`);
    for (const m of st.description.matchAll(/\(command:([\w.]+)\)/g))
      check(commands.has(m[1]) && extSrc.includes(`'${m[1]}'`), `walkthrough step ${st.id}: command ${m[1]} is declared and registered`);
  }
}
const example = path.join(root, 'client-vscode', 'media', 'example', 'zero3-oom-8gpu.log');
check(fs.existsSync(example) && fs.readFileSync(example, 'utf8') === fs.readFileSync(path.join(root, 'examples', 'zero3-oom-8gpu.log'), 'utf8'),
  'the example the walkthrough opens is examples/zero3-oom-8gpu.log, shipped in client-vscode/media/example/');
check(/^!client-vscode\/media\/\*\*$/m.test(ignore), '.vscodeignore ships client-vscode/media/**');

// ---------------------------------------------------- 6. terminal links: real lines of the corpus
const linksJs = path.join(root, 'client-vscode', 'out', 'terminal-lines.js');
if (!fs.existsSync(linksJs)) check(false, `${linksJs} is missing (npm run compile)`);
else {
  const L = require(linksJs);
  const yes = [
    // tests/corpus/dev, as printed
    ['[rank3]: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.63 GiB. GPU 3 has a total capacity of 79.11 GiB of which 2.61 GiB is free.', 'torch.OutOfMemoryError'],
    ['  what():  [PG 1 Rank 1] Process group watchdog thread terminated with exception: [Rank 1] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=199, OpType=_REDUCE_SCATTER_BASE, NumelIn=7098994688, NumelOut=443687168, Timeout(ms)=600000)', 'Watchdog caught collective operation timeout'],
    ['torch.distributed.elastic.multiprocessing.errors.ChildFailedError: ', 'ChildFailedError'],
    ['Traceback (most recent call last):', 'Traceback (most recent call last)'],
    ['torch.distributed.DistBackendError: NCCL error in: /pytorch/torch/csrc/distributed/c10d/NCCLUtils.hpp:268, remote process exited or there was a network error, NCCL version 2.21.5', 'DistBackendError'],
    ['compute-dy-p4d24xlarge-77: ncclInternalError: Internal check failed. This is either a bug in NCCL or due to memory corruption', 'ncclInternalError'],
    [' (SGLangEngine pid=12589) torch.AcceleratorError: CUDA error: device-side assert triggered', 'CUDA error: d'],
    ['  exitcode  : 1 (pid: 2680833)', 'exitcode  : 1'],
    ['a100-st-p4d24xlarge-22:183006:183220 [1] misc/socket.cc:518 NCCL WARN Net : Call to recv from 10.1.0.1<58355> failed : Broken pipe', 'NCCL WARN'],
  ];
  for (const [line, text] of yes) {
    const m = L.failureLinkIn(line);
    check(m && line.slice(m.startIndex, m.startIndex + m.length).startsWith(text.slice(0, 8)) && m.length > 0,
      `a terminal link on "${line.slice(0, 60)}" (got ${JSON.stringify(m)})`);
  }
  const no = [
    'g2001:34292:39682 [7] NCCL INFO [Service thread] Connection closed by localRank 0',
    ' | learning rate: 5.333333E-06 | global batch size:     4 | lm loss: 1.420515E+00 | loss scale: 1.0 | grad norm: 13.636',
    '=>> [Epoch 000] Global Step 002464 =>> Learning Rate :: 0.000020 - Loss :: 0.0830:  5%|',
    '$ ls -la',
    '',
  ];
  for (const line of no) check(L.failureLinkIn(line) === undefined, `no terminal link on "${line.slice(0, 60)}"`);
  // a link provider runs on every rendered line: a long one is cut at MAX_LINK_LINE
  check(L.failureLinkIn('x'.repeat(L.MAX_LINK_LINE) + ' CUDA out of memory') === undefined, 'a marker past MAX_LINK_LINE is not looked for');
  const recent = 'step 1\nTraceback (most recent call last):\n  File "t.py", line 3\nRuntimeError: x\nafter\n';
  check(L.textAroundLine('Traceback (most recent call last):', recent, 2) === 'step 1\nTraceback (most recent call last):\n  File "t.py", line 3\nRuntimeError: x',
    `a link's text is the recent output up to a little past its line (got ${JSON.stringify(L.textAroundLine('Traceback (most recent call last):', recent, 2))})`);
  check(L.textAroundLine('CUDA out of memory', undefined) === 'CUDA out of memory', 'without recent output, the line alone');
}

console.log(`manifest-check: ${passed} passed, ${failed} failed`);
process.exit(failed ? 1 : 0);
