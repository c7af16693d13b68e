// Platform-specific packages: one .vsix per target, each carrying only its own server folder
// (client-vscode/server/<target>/, made by bundle-server.js --target <target>).
//   node client-vscode/scripts/package-target.js linux-x64 [linux-arm64 ...]   ->  ddx-<target>.vsix
// vsce includes a file that any "!" line of the ignore file names, whatever else excludes it, so
// the package of a target is made with a copy of .vscodeignore whose "!client-vscode/server/**"
// names only that target's folder.
'use strict';
const { execFileSync } = require('child_process');
const fs = require('fs');
const os = require('os');
const path = require('path');
const root = path.resolve(__dirname, '..', '..');
const die = (msg) => {
  console.error(`package-target: ${msg}`);
  process.exit(2);
};

const targets = process.argv.slice(2);
if (!targets.length) die('usage: package-target.js TARGET... (linux-x64, linux-arm64)');
const vsce = path.join(root, 'node_modules', '.bin', 'vsce');
if (!fs.existsSync(vsce)) die('node_modules/.bin/vsce is missing: npm ci');
const ignore = fs.readFileSync(path.join(root, '.vscodeignore'), 'utf8');
const serverLine = /^!client-vscode\/server\/\*\*[ \t]*$/m;
if (!serverLine.test(ignore)) die('.vscodeignore has no "!client-vscode/server/**" line to narrow');

const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'ddx-vsix-'));
try {
  for (const target of targets) {
    if (!/^[a-z0-9]+-[a-z0-9]+$/.test(target)) die(`not a vsce target: ${target}`);
    const dir = path.join(root, 'client-vscode', 'server', target);
    if (!fs.existsSync(path.join(dir, 'ddx'))) die(`no server in client-vscode/server/${target}: node client-vscode/scripts/bundle-server.js --target ${target}`);
    const file = path.join(tmp, `vscodeignore-${target}`);
    fs.writeFileSync(file, ignore.replace(serverLine, `!client-vscode/server/${target}/**`));
    const out = `ddx-${target}.vsix`;
    execFileSync(vsce, ['package', '--target', target, '--readme-path', 'client-vscode/README.md', '--ignoreFile', file, '--out', out], {
      cwd: root, stdio: 'inherit',
    });
    console.log(`package-target: ${out} (${target}, ${Math.round(fs.statSync(path.join(root, out)).size / 1024)} KB)`);
  }
} finally {
  fs.rmSync(tmp, { recursive: true, force: true });
}
