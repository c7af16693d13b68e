// Builds ddx (cmake, RelWithDebInfo) and puts the binary, the rule catalog, the catalog's site and
// the shared libraries it needs into client-vscode/server/<platform>-<arch>/, which the .vsix of
// that platform carries (client-vscode/scripts/package-target.js).
//   node client-vscode/scripts/bundle-server.js [path/to/ddx]                       this machine's platform
//   node client-vscode/scripts/bundle-server.js --target linux-arm64 [path/to/ddx]  cross: Debian's aarch64
//        toolchain (make deps-arm64); the catalog site is made by the host's ddx (--host-bin, else build/ddx)
// A given binary skips the build (its ELF machine must be the target's).
'use strict';
const { execFileSync } = require('child_process');
const fs = require('fs');
const os = require('os');
const path = require('path');
const root = path.resolve(__dirname, '..', '..');
const run = (cmd, args, opts = {}) => execFileSync(cmd, args, { cwd: root, stdio: 'inherit', ...opts });
const die = (msg) => {
  console.error(`bundle-server: ${msg}`);
  process.exit(2);
};
const jobs = `-j${Math.max(2, os.cpus().length)}`;

// The Linux targets this script knows: the GNU triplet (cross tools, multiarch library folders),
// the ELF machine of its binaries, the cmake toolchain and build folder of a cross build.
const TARGETS = {
  'linux-x64': { triplet: 'x86_64-linux-gnu', machine: 0x3e, machineName: 'x86-64', build: 'build' },
  'linux-arm64': {
    triplet: 'aarch64-linux-gnu', machine: 0xb7, machineName: 'aarch64', build: 'build-arm64',
    toolchain: 'cmake/aarch64-linux-gnu.cmake', emulator: 'qemu-aarch64-static', loader: '/lib/ld-linux-aarch64.so.1',
  },
};
// glibc stays the system's (libc, libm, the loader, ...): a bundled one would not match its loader.
const SYSTEM_LIB = /^(libc|libm|libpthread|libdl|librt|libresolv|libutil|ld-linux[^.]*)\.so/;

let target = `${process.platform}-${process.arch}`;
const host = target;
let bin;
let hostBin = process.env.DDX_HOST_BIN;
const args = process.argv.slice(2);
for (let i = 0; i < args.length; i++) {
  if (args[i] === '--target' && i + 1 < args.length) target = args[++i];
  else if (args[i] === '--host-bin' && i + 1 < args.length) hostBin = args[++i];
  else if (args[i].startsWith('-')) die(`unknown option ${args[i]} (usage: bundle-server.js [--target PLATFORM-ARCH] [--host-bin DDX] [path/to/ddx])`);
  else bin = args[i];
}
const cross = target !== host;
const t = TARGETS[target];
if (cross && !t) die(`no cross build for ${target} (known: ${Object.keys(TARGETS).join(', ')})`);
if (cross && !t.toolchain) die(`no cross build for ${target} from ${host}: build it there, or give its binary`);
if (!bin && !cross) bin = process.env.DDX_BIN;
const dest = path.join(root, 'client-vscode', 'server', target);

const onPath = (name) =>
  (process.env.PATH || '').split(path.delimiter).some((d) => d && fs.existsSync(path.join(d, name)));

/** cmake configure + build of the ddx target into BUILD (a cross build with TOOLCHAIN). */
function cmakeBuild(build, toolchain) {
  const conf = ['-S', '.', '-B', build, '-DCMAKE_BUILD_TYPE=RelWithDebInfo'];
  if (toolchain) conf.push(`-DCMAKE_TOOLCHAIN_FILE=${toolchain}`);
  run('cmake', conf, { stdio: ['ignore', 'ignore', 'inherit'] });
  run('cmake', ['--build', build, '--target', 'ddx', jobs]);
  return path.join(build, 'ddx');
}

if (!bin) {
  if (cross && !onPath(`${t.triplet}-gcc`)) die(`${t.triplet}-gcc is missing: make deps-arm64 installs the ${target} toolchain`);
  const build = path.join(root, process.env.DDX_BUILD_DIR || (t ? t.build : 'build'));
  bin = cmakeBuild(build, cross ? t.toolchain : undefined);
}
bin = path.resolve(bin);
if (!fs.existsSync(bin)) die(`no binary at ${bin}`);

// The binary's ELF machine must be the target's (a linux-x64 ddx in the arm64 package would not run).
if (t) {
  const hdr = Buffer.alloc(20);
  const fd = fs.openSync(bin, 'r');
  fs.readSync(fd, hdr, 0, 20, 0);
  fs.closeSync(fd);
  if (hdr.readUInt32BE(0) !== 0x7f454c46 || hdr.readUInt16LE(18) !== t.machine)
    die(`${bin} is not an ELF ${t.machineName} binary, the ${target} package needs one`);
}

fs.rmSync(dest, { recursive: true, force: true });
fs.mkdirSync(path.join(dest, 'lib'), { recursive: true });
const exe = path.join(dest, 'ddx');
fs.copyFileSync(bin, exe);
fs.chmodSync(exe, 0o755);
const strip = cross ? `${t.triplet}-strip` : 'strip';
try {
  run(strip, ['--strip-debug', exe], { stdio: ['ignore', 'ignore', 'ignore'] });
} catch {
  /* keep the symbols */
}
// The catalog next to the binary (the server looks in <exe dir>/rules), without tests or docs.
fs.cpSync(path.join(root, 'rules'), path.join(dest, 'rules'), {
  recursive: true,
  filter: (src) => fs.statSync(src).isDirectory() || src.endsWith('.json'),
});

// Shared libraries that a plain Linux may lack (jansson, libuv, pcre2): bundled, found through
// LD_LIBRARY_PATH set by the extension. libc and the loader stay the system's.
const libs = [];
if (!cross && process.platform === 'linux') {
  const ldd = execFileSync('ldd', [bin], { encoding: 'utf8' });
  for (const m of ldd.matchAll(/^\s*(\S+) => (\/\S+)/gm)) {
    if (SYSTEM_LIB.test(m[1])) continue;
    fs.copyFileSync(fs.realpathSync(m[2]), path.join(dest, 'lib', m[1]));
    libs.push(m[1]);
  }
} else if (cross) {
  // No ldd for another architecture: the NEEDED entries (readelf -d), followed through the
  // libraries found in the target's multiarch folders (Debian's :arm64 runtime packages).
  const readelf = onPath(`${t.triplet}-readelf`) ? `${t.triplet}-readelf` : 'readelf';
  const dirs = [`/usr/lib/${t.triplet}`, `/lib/${t.triplet}`];
  const needed = (file) =>
    [...execFileSync(readelf, ['-d', file], { encoding: 'utf8' }).matchAll(/\(NEEDED\)\s+Shared library: \[([^\]]+)\]/g)].map((m) => m[1]);
  const queue = needed(bin);
  const seen = new Set();
  while (queue.length) {
    const so = queue.shift();
    if (seen.has(so) || SYSTEM_LIB.test(so)) continue;
    seen.add(so);
    const dir = dirs.find((d) => fs.existsSync(path.join(d, so)));
    if (!dir) die(`${so} (needed by ddx) is not in ${dirs.join(' or ')}: make deps-arm64 installs the :arm64 packages`);
    const real = fs.realpathSync(path.join(dir, so));
    fs.copyFileSync(real, path.join(dest, 'lib', so));
    libs.push(so);
    queue.push(...needed(real));
  }
}
const libEnv = { ...process.env, LD_LIBRARY_PATH: path.join(dest, 'lib') };

// The encyclopedia's site next to the binary (<exe dir>/catalog): the page a diagnostic links to.
// It is the same for every platform, so a cross build makes it with the host's ddx.
let siteBin = exe;
let siteEnv = libEnv;
if (cross) {
  siteEnv = { ...process.env };
  if (!hostBin) {
    hostBin = path.join(root, 'build', 'ddx');
    if (!fs.existsSync(hostBin)) hostBin = cmakeBuild(path.join(root, 'build'));
  }
  siteBin = path.resolve(hostBin);
  if (!fs.existsSync(siteBin)) die(`no host ddx at ${siteBin} for the catalog site (--host-bin)`);
}
execFileSync(siteBin, ['catalog', '--html', path.join(dest, 'catalog'), '--rules', path.join(dest, 'rules')], {
  stdio: ['ignore', 'ignore', 'inherit'], env: siteEnv,
});
if (!fs.existsSync(path.join(dest, 'catalog', 'index.html'))) die(`${siteBin} catalog --html wrote no index.html`);

// What it says it is: run it (a cross binary under qemu-user when there is one, with the multiarch
// loader: scripts/ddx-arm64.sh says why not -L /usr/<triplet>).
let out;
if (!cross) {
  out = execFileSync(exe, ['version'], { encoding: 'utf8', env: libEnv }).trim();
} else if (t.emulator && onPath(t.emulator) && fs.existsSync(t.loader)) {
  out = `${execFileSync(t.emulator, [exe, 'version'], { encoding: 'utf8', env: libEnv }).trim()} (under ${t.emulator})`;
} else {
  out = `${target} binary (not run: no ${t.emulator || 'emulator'} with the ${target} loader here)`;
}
console.log(`bundle-server: ${path.relative(root, dest)}: ${out}; ${libs.join(', ') || 'no bundled libraries'}`);
