// Builds ddx (cmake, RelWithDebInfo) and puts the binary, the rule catalog and the shared
// libraries it needs into client-vscode/server/<platform>-<arch>/, which the .vsix carries.
//   node client-vscode/scripts/bundle-server.js [path/to/ddx]   (a given binary skips the build)
'use strict';
const { execFileSync } = require('child_process');
const fs = require('fs');
const path = require('path');
const root = path.resolve(__dirname, '..', '..');
const dest = path.join(root, 'client-vscode', 'server', `${process.platform}-${process.arch}`);
const run = (cmd, args, opts = {}) => execFileSync(cmd, args, { cwd: root, stdio: 'inherit', ...opts });

let bin = process.argv[2] || process.env.DDX_BIN;
if (!bin) {
  const build = path.join(root, process.env.DDX_BUILD_DIR || 'build');
  run('cmake', ['-S', '.', '-B', build, '-DCMAKE_BUILD_TYPE=RelWithDebInfo'], { stdio: ['ignore', 'ignore', 'inherit'] });
  run('cmake', ['--build', build, '--target', 'ddx', `-j${Math.max(2, require('os').cpus().length)}`]);
  bin = path.join(build, 'ddx');
}
bin = path.resolve(bin);
if (!fs.existsSync(bin)) { console.error(`bundle-server: no binary at ${bin}`); process.exit(2); }

fs.rmSync(dest, { recursive: true, force: true });
fs.mkdirSync(path.join(dest, 'lib'), { recursive: true });
fs.copyFileSync(bin, path.join(dest, 'ddx'));
fs.chmodSync(path.join(dest, 'ddx'), 0o755);
try { run('strip', ['--strip-debug', path.join(dest, 'ddx')]); } catch { /* keep the symbols */ }
// The catalog next to the binary (the server looks in <exe dir>/rules), without tests or docs.
fs.cpSync(path.join(root, 'rules'), path.join(dest, 'rules'), {
  recursive: true,
  filter: (src) => fs.statSync(src).isDirectory() || src.endsWith('.json'),
});
// Shared libraries that a plain Linux may lack (jansson, libuv, pcre2): bundled, found through
// LD_LIBRARY_PATH set by the extension. libc and the loader stay the system's.
if (process.platform === 'linux') {
  const ldd = execFileSync('ldd', [bin], { encoding: 'utf8' });
  for (const m of ldd.matchAll(/^\s*(\S+) => (\/\S+)/gm)) {
    if (/^(libc|libm|libpthread|libdl|librt|ld-linux)[.-]/.test(m[1])) continue;
    fs.copyFileSync(fs.realpathSync(m[2]), path.join(dest, 'lib', m[1]));
  }
}
// The encyclopedia's site next to the binary (<exe dir>/catalog): the page a diagnostic links to.
execFileSync(path.join(dest, 'ddx'), ['catalog', '--html', path.join(dest, 'catalog'), '--rules', path.join(dest, 'rules')], {
  stdio: ['ignore', 'ignore', 'inherit'], env: { ...process.env, LD_LIBRARY_PATH: path.join(dest, 'lib') },
});
const out = execFileSync(path.join(dest, 'ddx'), ['version'], {
  encoding: 'utf8', env: { ...process.env, LD_LIBRARY_PATH: path.join(dest, 'lib') },
}).trim();
console.log(`bundle-server: ${path.relative(root, dest)}: ${out}; ${fs.readdirSync(path.join(dest, 'lib')).join(', ')}`);
