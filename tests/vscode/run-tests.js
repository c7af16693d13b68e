// Opens code-server with extensionDevelopmentPath + extensionTestsPath in headless Chromium and
// waits for the tests' marker line in the results file (the extension host exits 0 even when the
// tests fail, so the file is the only truth).
//   node run-tests.js PORT EXTENSION_DIR TESTS_DIR RESULTS_FILE [SCREENSHOT]     (env WS_DIR)
'use strict';
const { chromium } = require('playwright-core');
const fs = require('fs');
const os = require('os');
const path = require('path');

const [port, extDir, testsDir, out, shot] = process.argv.slice(2);
const auth = `127.0.0.1:${port}`;
const payload = [['extensionDevelopmentPath', `vscode-remote://${auth}${extDir}`],
  ['extensionTestsPath', `vscode-remote://${auth}${testsDir}`]];
const url = `http://${auth}/?folder=${encodeURIComponent(process.env.WS_DIR)}&payload=${encodeURIComponent(JSON.stringify(payload))}`;
const LIMIT_MS = Number(process.env.DDX_TEST_LIMIT_MS || 200000);

(async () => {
  const t0 = Date.now();
  const profile = fs.mkdtempSync(path.join(os.tmpdir(), 'ddx-chromium-'));
  const ctx = await chromium.launchPersistentContext(profile, {
    executablePath: process.env.CHROMIUM || '/usr/bin/chromium',
    headless: true,
    viewport: { width: 1400, height: 900 },
    permissions: ['clipboard-read', 'clipboard-write'],
    args: ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking',
      '--disable-component-update', '--disable-sync', '--disable-dev-shm-usage'],
  });
  await ctx.grantPermissions(['clipboard-read', 'clipboard-write'], { origin: `http://${auth}` });
  const outside = new Set();
  await ctx.route(/^https?:\/\/(?!127\.0\.0\.1)/, (r) => { outside.add(r.request().url().slice(0, 120)); return r.abort(); });
  const page = ctx.pages()[0] || await ctx.newPage();
  page.on('pageerror', (e) => console.log('  pageerror:', e.message.slice(0, 200)));
  await page.goto(url);
  let res;
  let seen = 0;
  while (!res && Date.now() - t0 < LIMIT_MS) {
    await new Promise((r) => setTimeout(r, 100));
    const lines = fs.existsSync(out) ? fs.readFileSync(out, 'utf8').split('\n').filter(Boolean) : [];
    for (; seen < lines.length; seen++) {
      const r = JSON.parse(lines[seen]);
      if (r.test) process.stdout.write(r.ok ? '.' : 'F');
      // Restricted Mode (suite/restricted.ts): a user grants trust in the Workspace Trust editor
      if (r.event === 'grant-trust') {
        await page.locator('.workspace-trust-editor .workspace-trust-buttons .monaco-button').first().click({ timeout: 20000 })
          .catch((e) => console.log('  run-tests.js: no Trust button:', e.message.split('\n')[0]));
      }
    }
    res = lines.find((l) => /tests-(pass|fail)/.test(l));
  }
  console.log(`\n  in-host tests after ${((Date.now() - t0) / 1000).toFixed(1)} s: ${res || 'TIMEOUT'}`);
  if (outside.size) console.log('  blocked non-local requests:', JSON.stringify([...outside]));
  if (shot) await page.screenshot({ path: shot }).catch(() => {});
  await ctx.close();
  fs.rmSync(profile, { recursive: true, force: true });
  process.exit(res && /tests-pass/.test(res) ? 0 : 1);
})().catch((e) => { console.log('run-tests.js:', e.message); process.exit(1); });
