// The extension's settings in a hostile workspace, checked without VS Code (tests/vscode/run.sh
// runs it after compiling; `node tests/vscode/manifest-check.js` from the repository root):
//   1. package.json: every setting that names a program, or files and folders outside the
//      workspace, has "scope": "machine" (no workspace value), and they are exactly the ones
//      client-vscode/src/settings.ts reads as machine settings; ddx.terminal.maxOutputBytes has
//      the "maximum" the code clamps to.
//   2. client-vscode/out/settings.js (compiled) with a stand-in `vscode` module: a workspace or
//      folder value of a machine setting is never taken, the notice names it; the byte limit is
//      clamped; settings files (JSONC) are read for the keys they set.
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
}

console.log(`manifest-check: ${passed} passed, ${failed} failed`);
process.exit(failed ? 1 : 0);
