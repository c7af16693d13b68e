// UI run: drives code-server (VS Code web) in headless Chromium like a user and screenshots what
// they see: the Problems panel for a multi-rank log, the diagnosis view, the notification of a
// failed terminal command, the failure catalog (its matrix and an entry).
//   node ui.js PORT EXTENSION_DIR       (env WS_DIR: the workspace; SHOTS: where the PNGs go)
'use strict';
const { chromium } = require('playwright-core');
const fs = require('fs');
const os = require('os');
const path = require('path');

const [port, extDir] = process.argv.slice(2);
const auth = `127.0.0.1:${port}`;
const payload = [['extensionDevelopmentPath', `vscode-remote://${auth}${extDir}`]];
const URL = `http://${auth}/?folder=${encodeURIComponent(process.env.WS_DIR)}&payload=${encodeURIComponent(JSON.stringify(payload))}`;
const SHOTS = process.env.SHOTS || path.join(extDir, 'docs', 'screenshots');
const t0 = Date.now();
const lap = (msg) => console.log(`  [ui ${((Date.now() - t0) / 1000).toFixed(1)}s] ${msg}`);
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

async function palette(page, text) {
  const input = page.locator('.quick-input-widget input');
  // A focused terminal can swallow F1 (its shell gets the key): when the
  // palette does not open, leave the terminal (Escape, a click on the
  // status bar) and open it with the other binding. Three tries.
  for (let i = 0; ; i++) {
    await page.keyboard.press(i === 0 ? 'F1' : 'Control+Shift+P');
    try {
      await input.waitFor({ state: 'visible', timeout: 5000 });
      await input.fill('>' + text, { timeout: 5000 });
      break;
    } catch (e) {
      if (i === 2) throw e;
      await page.keyboard.press('Escape');
      await page.locator('.statusbar').click({ position: { x: 5, y: 5 } }).catch(() => {});
    }
  }
  await page.locator('.quick-input-list .monaco-list-row', { hasText: text }).first().waitFor({ timeout: 15000 });
  await page.keyboard.press('Enter');
}

async function quickOpen(page, name) {
  await page.keyboard.press('Control+P');
  const qi = page.locator('.quick-input-widget input');
  await qi.waitFor({ state: 'visible' });
  await qi.fill(name);
  await page.locator('.quick-input-list .monaco-list-row', { hasText: name }).first().waitFor({ timeout: 15000 });
  await page.keyboard.press('Enter');
  await page.locator('.tabs-container .tab.active', { hasText: name }).waitFor();
}

/** The frame of a webview whose document holds `text` (webviews are nested iframes). */
async function webviewFrame(page, text, ms = 20000) {
  const end = Date.now() + ms;
  const sel = text.startsWith('#') ? text : `text=${text}`;
  while (Date.now() < end) {
    for (const f of page.frames()) {
      try {
        if (await f.locator(sel).count()) return f;
      } catch { /* detached */ }
    }
    await sleep(200);
  }
  throw new Error(`no webview shows "${text}"`);
}

async function shot(page, name) {
  const file = path.join(SHOTS, name);
  await page.screenshot({ path: file });
  lap(`screenshot ${path.relative(process.cwd(), file)}`);
}

(async () => {
  fs.mkdirSync(SHOTS, { recursive: true });
  const profile = fs.mkdtempSync(path.join(os.tmpdir(), 'ddx-chromium-'));
  const ctx = await chromium.launchPersistentContext(profile, {
    executablePath: process.env.CHROMIUM || '/usr/bin/chromium',
    headless: true,
    viewport: { width: 1440, height: 900 },
    permissions: ['clipboard-read', 'clipboard-write'],
    args: ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking',
      '--disable-component-update', '--disable-sync', '--disable-dev-shm-usage'],
  });
  const outside = new Set();
  await ctx.route(/^https?:\/\/(?!127\.0\.0\.1)/, (r) => { outside.add(r.request().url().slice(0, 120)); return r.abort(); });
  const page = ctx.pages()[0] || await ctx.newPage();
  page.on('pageerror', (e) => console.log('  pageerror:', e.message.slice(0, 200)));
  let ok = false;
  try {
    await page.goto(URL);
    await page.locator('.monaco-workbench').waitFor({ timeout: 60000 });
    await page.locator('.explorer-folders-view .monaco-list-row', { hasText: 'logs' }).waitFor({ timeout: 60000 });
    lap('workbench ready');

    // 1. a multi-rank log opened: the squiggle at the initiating line, Problems lists cause + collateral
    await quickOpen(page, 'zero3-oom-8gpu.log');
    await page.locator('.monaco-editor .view-lines', { hasText: 'rank5' }).first().waitFor();
    await palette(page, 'View: Focus Problems');
    const markers = page.locator('.markers-panel');
    await markers.locator('.monaco-list-row', { hasText: 'Initiating failure' }).first().waitFor({ timeout: 30000 });
    await markers.locator('.monaco-list-row', { hasText: 'Collateral of ds.oom.zero3-gather' }).first().waitFor({ timeout: 30000 });
    const rows = await markers.locator('.monaco-list-row').allInnerTexts();
    lap(`Problems: ${rows.length} rows, first: ${JSON.stringify(rows[1] || rows[0]).slice(0, 120)}`);
    // go to the failure line so the editor shows the squiggle
    await page.keyboard.press('Control+G');
    await page.locator('.quick-input-widget input').fill(':46');
    await page.keyboard.press('Enter');
    await sleep(600);
    await shot(page, 'problems.png');

    // 2. the diagnosis view (Diagnose Selection with nothing selected = the whole log)
    await page.keyboard.press('Escape');
    await palette(page, 'View: Toggle Panel Visibility');
    await palette(page, 'ddx: Diagnose Selection');
    const view = await webviewFrame(page, 'Where it started');
    await view.locator('button[data-action="fix"]').first().waitFor({ timeout: 20000 });
    await view.locator('text=Collateral').first().waitFor();
    lap('diagnosis view shows the report and its quick fixes');
    await palette(page, 'View: Close Primary Side Bar');
    await sleep(800);
    await shot(page, 'diagnosis.png');
    await view.locator('#fixes-0').scrollIntoViewIfNeeded();
    await view.evaluate(() => document.getElementById('fixes-0').closest('section').scrollIntoView({ block: 'start' }));
    await sleep(300);
    await shot(page, 'diagnosis-fixes.png');
    await view.evaluate(() => window.scrollTo(0, 0));
    // keyboard: the view's buttons are reachable with Tab
    await view.locator('button').first().focus();
    const focused = await view.evaluate(() => document.activeElement && document.activeElement.tagName);
    if (focused !== 'BUTTON') throw new Error('the view\'s buttons take no keyboard focus');

    // 3. a failed command in the terminal: the notification
    await palette(page, 'Terminal: Create New Terminal');
    await page.locator('.terminal-wrapper .xterm').first().waitFor({ timeout: 20000 });
    await sleep(2500); // shell integration is injected at shell start
    await page.keyboard.type("sleep 0.5; while IFS= read -r l; do printf '%s\\n' \"$l\"; sleep 0.02; done < logs/076-ds-zero3-optimizer-step-oom-236b-interleaved.log; (exit 1)");
    await page.keyboard.press('Enter');
    const toast = page.locator('.notifications-toasts .notification-toast', { hasText: 'ds.oom' });
    await toast.first().waitFor({ timeout: 30000 });
    lap(`notification: ${(await toast.first().innerText()).replace(/\s+/g, ' ').slice(0, 160)}`);
    await sleep(500);
    await shot(page, 'terminal-notification.png');

    // 4. the failure catalog, side by side: it opens on the phase x family matrix, a cell opens
    // its entry in the same view, its links open other entries, the bar goes back to the matrix
    await page.locator('.notifications-toasts .notification-toast .codicon-notifications-clear').first().click().catch(() => {});
    await palette(page, 'View: Toggle Panel Visibility');
    await palette(page, 'ddx: Failure Catalog');
    await webviewFrame(page, '#matrix');
    await palette(page, 'View: Join All Editor Groups');
    await sleep(500);
    const cat = await webviewFrame(page, '#matrix'); // the view may be re-created by the move
    const cellItem = cat.locator('#matrix td button.item[data-id="ds.oom.activations"]');
    await cellItem.waitFor({ state: 'visible', timeout: 15000 });
    const phases = await cat.locator('#matrix table.matrix tbody tr').count();
    const families = await cat.locator('#matrix table.matrix thead th[data-family]').count();
    if (phases !== 7 || families < 8) throw new Error(`the catalog opens on a ${phases} x ${families} matrix, not 7 phases x 8+ families`);
    await cat.locator('#entry').waitFor({ state: 'hidden' });
    lap(`catalog opens on the matrix (${phases} phases x ${families} families, ${await cat.locator('#matrix button.item').count()} classes)`);
    await palette(page, 'Notifications: Clear All Notifications');
    await page.locator('.notifications-toasts .notification-toast').first().waitFor({ state: 'hidden' }).catch(() => {});
    await shot(page, 'catalog.png');
    await cellItem.click();
    const entry = cat.locator('#entry', { hasText: 'ds.oom.activations' });
    await entry.waitFor({ state: 'visible', timeout: 15000 });
    await cat.locator('#matrix').waitFor({ state: 'hidden' });
    lap('a cell opens its entry in the same view');
    await shot(page, 'catalog-entry.png');
    // a look-alike (or, while the rules lack groups, a related class) opens its own entry
    const links = cat.locator('#entry section.lookalikes button[data-action="explain"], #entry section.related button[data-action="explain"]');
    if (await links.count()) {
      const other = await links.first().getAttribute('data-id');
      await links.first().click();
      await cat.locator('#entry .meta code.id', { hasText: other }).waitFor({ state: 'visible', timeout: 15000 });
      lap(`its link opens ${other}`);
    }
    await cat.locator('#to-matrix').click();
    await cat.locator('#matrix').waitFor({ state: 'visible', timeout: 15000 });
    await cat.locator('#entry').waitFor({ state: 'hidden' });
    lap('the bar goes back to the matrix');
    ok = outside.size === 0;
    if (!ok) console.log('  non-local requests:', JSON.stringify([...outside]));
    console.log(`  UI run: ${ok ? 'PASS' : 'FAIL'} in ${((Date.now() - t0) / 1000).toFixed(1)} s`);
  } catch (e) {
    console.log('  UI run: FAIL', e.message.split('\n')[0]);
    await page.screenshot({ path: path.join(os.tmpdir(), 'ddx-ui-fail.png') }).catch(() => {});
    console.log(`  (what the page showed: ${path.join(os.tmpdir(), 'ddx-ui-fail.png')})`);
  } finally {
    await ctx.close();
    fs.rmSync(profile, { recursive: true, force: true });
  }
  process.exit(ok ? 0 : 1);
})();
