// The failure encyclopedia as a browser sees it: `ddx catalog --html` into a temporary folder,
// opened from file:// in headless Debian Chromium (playwright-core), with and without JavaScript.
// Checks that every class is in the matrix and the list once (in its phase's row and its family's
// column), that every local link and #fragment on the hub and on every entry page resolves, that
// nothing is requested outside file://, the search, an entry page's sections and diff, a team
// catalog (--rules twice), and takes the screenshots.
//   node tests/catalog/site.test.js path/to/ddx    (env SHOTS: where the PNGs go, default
//   build/screenshots; CHROMIUM: the browser, default /usr/bin/chromium)
// Prints "N passed, M failed"; exit 0 only when all pass.
'use strict';
const { chromium } = require('playwright-core');
const { spawnSync } = require('node:child_process');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { pathToFileURL } = require('node:url');

const ROOT = path.resolve(__dirname, '../..');
const DDX = path.resolve(process.argv[2] || process.env.DDX || path.join(ROOT, 'build/ddx'));
const SHOTS = path.resolve(process.env.SHOTS || path.join(ROOT, 'build/screenshots'));
const ENTRY = 'ds.oom.zero3-gather';
const QUERY = 'zero3';
const t0 = Date.now();

let passed = 0;
let failed = 0;
function ok(name) {
  passed++;
  console.log(`  ok   ${name}`);
}
function bad(name, why) {
  failed++;
  console.log(`  FAIL ${name}\n       ${String(why).split('\n').slice(0, 12).join('\n       ')}`);
}
/** One named check: passes when fn returns without throwing; a returned string is a note. */
async function check(name, fn) {
  try {
    const note = await fn();
    ok(note ? `${name} (${note})` : name);
  } catch (e) {
    bad(name, e && e.message ? e.message : e);
  }
}
function assert(cond, msg) {
  if (!cond) throw new Error(msg);
}
/** At most n items of a list for a message. */
function few(list, n = 8) {
  const l = [...list];
  return l.slice(0, n).join(', ') + (l.length > n ? `, ... (${l.length} in all)` : '');
}

function ddx(args) {
  const r = spawnSync(DDX, args, { encoding: 'utf8' });
  if (r.status !== 0) throw new Error(`ddx ${args.join(' ')}: exit ${r.status}\n${r.stderr}`);
  return r.stdout;
}

/** `ddx catalog`: one line per class, "id phase family title" ("-" for no family). */
function catalogList(extra = []) {
  const classes = new Map();
  for (const line of ddx(['catalog', ...extra]).split('\n')) {
    if (!line.trim()) continue;
    const [id, phase, family] = line.trim().split(/\s+/);
    classes.set(id, { phase, family: family === '-' ? '' : family });
  }
  return classes;
}

/** Whatever the page does, records what it asks for outside file:// and what goes wrong. */
function watch(ctx, page, log) {
  page.on('pageerror', (e) => log.errors.push(`pageerror: ${e.message.split('\n')[0]}`));
  page.on('console', (m) => {
    if (m.type() === 'error') log.errors.push(`console: ${m.text().slice(0, 200)}`);
  });
  ctx.on('request', (r) => {
    const u = r.url();
    if (!/^(file|data|about):/.test(u)) log.outside.add(u.slice(0, 160));
  });
}

/** What the checks need from a page of the site, read in the browser. */
function readPage(page) {
  return page.evaluate(() => {
    const ids = [...document.querySelectorAll('[id]')].map((e) => e.id);
    const links = [...document.querySelectorAll('a[href]')].map((a) => ({
      href: a.getAttribute('href'),
      cls: a.className,
      text: a.textContent.trim().slice(0, 60),
    }));
    const csp = document.querySelector('meta[http-equiv="Content-Security-Policy"]');
    return {
      ids,
      links,
      csp: csp ? csp.getAttribute('content') : null,
      external: [...document.querySelectorAll('script[src],link[href],img[src],iframe,object,embed')].map(
        (e) => e.outerHTML.slice(0, 120)),
    };
  });
}

/** The broken links of one page: local files that are missing, fragments with no element. */
function brokenLinks(file, info, idsOf, siteDir) {
  const out = [];
  for (const { href, cls } of info.links) {
    if (/^https?:/i.test(href)) {
      let u = null;
      try {
        u = new URL(href);
      } catch { /* not a URL */ }
      if (!u || !/^https?:$/.test(u.protocol) || !u.host) out.push(`${href}: not an absolute http(s) URL`);
      else if (!/\bext\b/.test(cls)) out.push(`${href}: an external link without class "ext"`);
      continue;
    }
    if (/^mailto:/i.test(href)) continue;
    if (href.startsWith('#')) {
      const frag = decodeURIComponent(href.slice(1));
      if (!idsOf(file).has(frag)) out.push(`${href}: no element with that id on the page`);
      continue;
    }
    if (/^[a-z][a-z0-9+.-]*:/i.test(href)) {
      out.push(`${href}: a link to another scheme`);
      continue;
    }
    const [p, frag] = href.split('#');
    const target = path.resolve(path.dirname(file), decodeURIComponent(p));
    if (!target.startsWith(siteDir + path.sep)) out.push(`${href}: points outside the site`);
    else if (!fs.existsSync(target)) out.push(`${href}: no such file`);
    else if (frag !== undefined && !idsOf(target).has(decodeURIComponent(frag)))
      out.push(`${href}: ${path.basename(target)} has no element id "${frag}"`);
  }
  return out;
}

/** Visits the hub and every entry page of a site; returns the pages read, by file. */
async function crawl(page, siteDir, ids) {
  const pages = new Map();
  for (const name of ['index.html', ...[...ids].map((id) => `${id}.html`)]) {
    const file = path.join(siteDir, name);
    if (!fs.existsSync(file)) continue;
    await page.goto(pathToFileURL(file).href);
    pages.set(file, await readPage(page));
  }
  return pages;
}

/** The link checks of a crawled site, one check per kind of page. */
async function checkLinks(label, pages, siteDir) {
  const idsOf = (file) => new Set((pages.get(file) || { ids: [] }).ids);
  const hub = path.join(siteDir, 'index.html');
  for (const [what, files] of [['the hub', [hub]], ['every entry page', [...pages.keys()].filter((f) => f !== hub)]]) {
    await check(`${label}: every local link and #fragment on ${what} resolves`, () => {
      const broken = [];
      let local = 0;
      let ext = 0;
      for (const f of files) {
        const info = pages.get(f);
        for (const l of info.links) {
          if (/^https?:/i.test(l.href)) ext++;
          else local++;
        }
        for (const b of brokenLinks(f, info, idsOf, siteDir)) broken.push(`${path.basename(f)}: ${b}`);
      }
      assert(!broken.length, `${broken.length} broken: ${few(broken, 6)}`);
      return `${files.length} page${files.length > 1 ? 's' : ''}, ${local} local links, ${ext} external (not fetched)`;
    });
  }
  await check(`${label}: no page has a duplicate element id, a remote resource or a missing CSP`, () => {
    const probs = [];
    for (const [f, info] of pages) {
      const seen = new Set();
      for (const id of info.ids) {
        if (seen.has(id)) probs.push(`${path.basename(f)}: id "${id}" twice`);
        seen.add(id);
      }
      if (!info.csp || !/default-src 'none'/.test(info.csp)) probs.push(`${path.basename(f)}: CSP ${info.csp}`);
      for (const e of info.external) probs.push(`${path.basename(f)}: ${e}`);
    }
    assert(!probs.length, few(probs, 6));
  });
}

/** Where each class is in the hub: its matrix links (with row phase and column family) and list items. */
function hubPlaces(page) {
  return page.evaluate(() => {
    const fams = [...document.querySelectorAll('table#matrix thead th')].map((th) => th.getAttribute('data-family'));
    const matrix = [];
    for (const a of document.querySelectorAll('table#matrix a.entry')) {
      const tr = a.closest('tr[data-phase]');
      const td = a.closest('td');
      matrix.push({
        href: a.getAttribute('href'),
        text: a.textContent.trim(),
        phase: tr ? tr.getAttribute('data-phase') : null,
        family: td ? fams[td.cellIndex] : null,
      });
    }
    const list = [...document.querySelectorAll('ul.entries > li')].map((li) => {
      const a = li.querySelector('a[href]');
      return { href: a ? a.getAttribute('href') : null, search: li.getAttribute('data-search') };
    });
    const stray = document.querySelectorAll('a.entry:not(table#matrix a.entry)').length;
    return { matrix, list, stray, unclassified: fams.includes('') };
  });
}

function checkPlaces(places, classes) {
  const idOf = (href) => (href || '').replace(/\.html$/, '');
  const count = (list) => {
    const m = new Map();
    for (const x of list) m.set(idOf(x.href), (m.get(idOf(x.href)) || 0) + 1);
    return m;
  };
  const inMatrix = count(places.matrix);
  const inList = count(places.list);
  const probs = [];
  for (const id of classes.keys()) {
    if (inMatrix.get(id) !== 1) probs.push(`${id}: ${inMatrix.get(id) || 0} times in the matrix`);
    if (inList.get(id) !== 1) probs.push(`${id}: ${inList.get(id) || 0} times in the list`);
  }
  for (const id of new Set([...inMatrix.keys(), ...inList.keys()]))
    if (!classes.has(id)) probs.push(`${id}: on the hub but not in ddx catalog`);
  for (const m of places.matrix) {
    const c = classes.get(idOf(m.href));
    if (!c) continue;
    if (m.text !== idOf(m.href)) probs.push(`${m.href}: the link reads "${m.text}"`);
    if (m.phase !== c.phase) probs.push(`${m.href}: in the row of phase ${m.phase}, its phase is ${c.phase}`);
    if (m.family !== c.family)
      probs.push(`${m.href}: in the column of family "${m.family}", its family is "${c.family}"`);
  }
  if (places.stray) probs.push(`${places.stray} a.entry links outside table#matrix`);
  return probs;
}

/** Which elements with data-search are rendered (display:none ones have no boxes). */
function searchState(page) {
  return page.evaluate(() => ({
    items: [...document.querySelectorAll('[data-search]')].map((e) => ({
      tag: e.tagName.toLowerCase(),
      what: (e.getAttribute('href') || (e.querySelector('a[href]') || {}).textContent || '').toString().trim(),
      search: e.getAttribute('data-search'),
      shown: e.getClientRects().length > 0,
    })),
    count: (document.getElementById('count') || {}).textContent,
    box: (() => {
      const q = document.getElementById('search');
      return q ? { hidden: q.hidden, shown: q.getClientRects().length > 0 } : null;
    })(),
  }));
}

function copyRule(id, dir, newId, newTitle) {
  const walk = (d) => fs.readdirSync(d, { withFileTypes: true }).flatMap((e) =>
    e.isDirectory() ? walk(path.join(d, e.name)) : [path.join(d, e.name)]);
  const src = walk(path.join(ROOT, 'rules')).find((f) => path.basename(f) === `${id}.json`);
  assert(src, `no rules/**/${id}.json`);
  const rule = JSON.parse(fs.readFileSync(src, 'utf8'));
  rule.id = newId;
  rule.title = newTitle;
  delete rule.related;
  delete rule.explains;
  delete rule.family; // a team rule without a family: the hub's "Unclassified" column
  fs.mkdirSync(dir, { recursive: true });
  fs.writeFileSync(path.join(dir, `${newId}.json`), JSON.stringify(rule, null, 2) + '\n');
}

(async () => {
  const T = fs.mkdtempSync(path.join(os.tmpdir(), 'ddx-catalog-site-'));
  const site = path.join(T, 'site');
  fs.mkdirSync(SHOTS, { recursive: true });
  let browser;
  const log = { outside: new Set(), errors: [] };
  try {
    assert(fs.existsSync(DDX), `no ddx binary at ${DDX}`);
    const classes = catalogList();
    assert(classes.size > 0 && classes.has(ENTRY), `ddx catalog lists ${classes.size} classes, ${ENTRY} ${classes.has(ENTRY) ? 'among them' : 'missing'}`);
    ddx(['catalog', '--html', site]);
    await check('ddx catalog --html writes index.html and one page per class', () => {
      const missing = [...classes.keys()].filter((id) => !fs.existsSync(path.join(site, `${id}.html`)));
      assert(fs.existsSync(path.join(site, 'index.html')), 'no index.html');
      assert(!missing.length, `missing pages: ${few(missing)}`);
      return `${classes.size} classes`;
    });

    browser = await chromium.launch({
      executablePath: process.env.CHROMIUM || '/usr/bin/chromium',
      headless: true,
      args: ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking',
        '--disable-component-update', '--disable-sync', '--disable-dev-shm-usage'],
    });
    const ctx = await browser.newContext({ viewport: { width: 1280, height: 900 } });
    // nothing may leave file://: recorded by watch(), and refused here should the page try
    await ctx.route(/^(https?|wss?|ftp):/i, (r) => r.abort());
    const page = await ctx.newPage();
    watch(ctx, page, log);
    const hubUrl = pathToFileURL(path.join(site, 'index.html')).href;

    // --- the hub: every class once in the matrix (its row, its column) and once in the list
    await page.goto(hubUrl);
    const places = await hubPlaces(page);
    await check('every class of ddx catalog is once in table#matrix (its phase row, its family column) and once in ul.entries', () => {
      const probs = checkPlaces(places, classes);
      assert(!probs.length, few(probs, 10));
      const uncl = [...classes.values()].filter((c) => !c.family).length;
      return `${places.matrix.length} in the matrix, ${places.list.length} listed, ${uncl} unclassified`;
    });
    await check('the look-alike groups: each h3[id^=cmp-] is followed by its table.compare', () =>
      page.evaluate(() => {
        const hs = [...document.querySelectorAll('h3[id^="cmp-"]')];
        for (const h of hs) {
          const t = h.nextElementSibling;
          if (!t || !t.matches('table.compare')) throw new Error(`${h.id}: no table.compare after it`);
          for (const a of t.querySelectorAll('tbody tr a[href]'))
            if (!/\.html$/.test(a.getAttribute('href'))) throw new Error(`${h.id}: row link ${a.getAttribute('href')}`);
        }
        return `${hs.length} groups, ${document.querySelectorAll('table.compare tbody tr').length} rows`;
      }));
    await page.screenshot({ path: path.join(SHOTS, 'site-hub.png') });

    // --- the search
    const before = await searchState(page);
    await check('the search box is shown when scripts run', () => {
      assert(before.box && !before.box.hidden && before.box.shown, `#search: ${JSON.stringify(before.box)}`);
      assert(before.items.every((i) => i.shown), `hidden before any search: ${few(before.items.filter((i) => !i.shown).map((i) => i.what))}`);
    });
    const listTotal = before.items.filter((i) => i.tag === 'li').length;
    await page.locator('#search').pressSequentially(QUERY, { delay: 10 });
    const during = await searchState(page);
    await check(`typing "${QUERY}" shows exactly the entries whose data-search holds it (list, matrix, look-alike rows)`, () => {
      const wrong = during.items.filter((i) => i.shown !== i.search.includes(QUERY));
      assert(!wrong.length, `${wrong.length} wrong: ${few(wrong.map((i) => `${i.tag} ${i.what} ${i.shown ? 'shown' : 'hidden'}`))}`);
      const shown = during.items.filter((i) => i.shown);
      assert(shown.some((i) => i.what.includes(ENTRY)), `${ENTRY} is not shown`);
      assert(shown.length < during.items.length, 'nothing was filtered out');
      return `${shown.length} of ${during.items.length} elements shown`;
    });
    await check('the count says how many list entries match', () => {
      const k = during.items.filter((i) => i.tag === 'li' && i.shown).length;
      assert(during.count !== before.count, `the count did not change: "${during.count}"`);
      assert(during.count.trim() === `${k} of ${listTotal}`, `"${during.count}", expected "${k} of ${listTotal}"`);
      return `"${before.count}" -> "${during.count}"`;
    });
    await page.locator('#search').fill('ZERO3  Gather ');
    const two = await searchState(page);
    await check('the search ignores case and wants every word', () => {
      const want = (s) => s.includes('zero3') && s.includes('gather');
      const wrong = two.items.filter((i) => i.shown !== want(i.search));
      assert(!wrong.length, `${wrong.length} wrong: ${few(wrong.map((i) => `${i.tag} ${i.what}`))}`);
      assert(two.items.some((i) => i.shown), 'nothing shown');
    });
    await page.locator('#search').fill('');
    const after = await searchState(page);
    await check('clearing the search shows every entry again', () => {
      const hidden = after.items.filter((i) => !i.shown);
      assert(!hidden.length, `still hidden: ${few(hidden.map((i) => i.what))}`);
      assert(after.count.trim() === `${listTotal} of ${listTotal}`, `count "${after.count}"`);
    });

    // --- without JavaScript: no search box, every entry listed and shown
    const noJs = await browser.newContext({ viewport: { width: 1280, height: 900 }, javaScriptEnabled: false });
    await noJs.route(/^(https?|wss?|ftp):/i, (r) => r.abort());
    const plain = await noJs.newPage();
    watch(noJs, plain, log);
    await plain.goto(hubUrl);
    const st = await searchState(plain);
    await check('without JavaScript the search box is hidden and every entry is listed and shown', () => {
      assert(st.box && st.box.hidden && !st.box.shown, `#search: ${JSON.stringify(st.box)}`);
      const lis = st.items.filter((i) => i.tag === 'li');
      assert(lis.length === classes.size, `${lis.length} list entries for ${classes.size} classes`);
      const hidden = st.items.filter((i) => !i.shown);
      assert(!hidden.length, `not shown: ${few(hidden.map((i) => i.what))}`);
      return `${st.items.length} elements shown`;
    });
    await noJs.close();

    // --- every page of the site: links, fragments, ids, CSP
    const pages = await crawl(page, site, classes.keys());
    await checkLinks('site', pages, site);
    await check('every entry page links back to index.html and names its class', async () => {
      const probs = [];
      for (const id of classes.keys()) {
        const info = pages.get(path.join(site, `${id}.html`));
        if (!info) { probs.push(`${id}: not read`); continue; }
        if (!info.links.some((l) => l.href === 'index.html')) probs.push(`${id}: no link to index.html`);
      }
      assert(!probs.length, few(probs));
    });

    // --- one entry page in full
    await page.goto(pathToFileURL(path.join(site, `${ENTRY}.html`)).href);
    await check(`${ENTRY}.html has its summary, the sections mechanism/symptoms/checklist/fix/patches/references and a diff`, () =>
      page.evaluate((id) => {
        const probs = [];
        const h1 = document.querySelector('h1');
        if (!h1 || !h1.textContent.trim()) probs.push('no h1');
        const code = document.querySelector('code.id');
        if (!code || code.textContent !== id) probs.push(`code.id: ${code && code.textContent}`);
        const sum = document.querySelector('p.summary');
        if (!sum || sum.textContent.trim().length < 20) probs.push('no summary paragraph (p.summary)');
        for (const s of ['mechanism', 'symptoms', 'checklist', 'fix', 'patches', 'references']) {
          const h = document.querySelector(`h2#${s}`);
          if (!h) { probs.push(`no h2#${s}`); continue; }
          const next = h.nextElementSibling;
          if (!next || next.tagName === 'H2' || !next.textContent.trim()) probs.push(`h2#${s} is empty`);
        }
        const adds = document.querySelectorAll('pre.diff span.add');
        if (!adds.length) probs.push('no pre.diff with span.add');
        for (const a of adds) if (!a.textContent.startsWith('+')) probs.push(`span.add "${a.textContent}"`);
        for (const d of document.querySelectorAll('pre.diff span.del')) if (!d.textContent.startsWith('-')) probs.push(`span.del "${d.textContent}"`);
        if (!document.querySelector('#references a.ext') && !document.querySelector('h2#references + ul a.ext'))
          probs.push('no external reference link');
        if (probs.length) throw new Error(probs.join('; '));
        return `${adds.length} added diff lines, ${document.querySelectorAll('h2[id]').length} sections`;
      }, ENTRY));
    await page.screenshot({ path: path.join(SHOTS, 'site-entry.png'), fullPage: true, clip: { x: 0, y: 0, width: 1280, height: 2000 } });

    // --- a team catalog: the built-in rules and a folder of one's own
    const team = path.join(T, 'team');
    const site2 = path.join(T, 'site2');
    const TEAM_ID = 'team.custom-oom';
    const TEAM_TITLE = 'Our cluster: CUDA out of memory in the nightly fine-tune';
    copyRule(ENTRY, team, TEAM_ID, TEAM_TITLE);
    const rulesArgs = ['--rules', path.join(ROOT, 'rules'), '--rules', team];
    let classes2 = null;
    await check('ddx catalog --rules BUILTIN --rules TEAM lists the team class', () => {
      classes2 = catalogList(rulesArgs);
      assert(classes2.has(TEAM_ID), `${TEAM_ID} is not listed`);
      assert(classes2.size === classes.size + 1, `${classes2.size} classes, expected ${classes.size + 1}`);
      ddx(['catalog', '--html', site2, ...rulesArgs]);
    });
    if (classes2 && fs.existsSync(path.join(site2, 'index.html'))) {
      await page.goto(pathToFileURL(path.join(site2, 'index.html')).href);
      const places2 = await hubPlaces(page);
      await check('the team catalog\'s hub lists every class, the team class under "Unclassified"', () => {
        const probs = checkPlaces(places2, classes2);
        assert(!probs.length, few(probs, 10));
        const m = places2.matrix.find((x) => x.href === `${TEAM_ID}.html`);
        assert(m && m.family === '', `${TEAM_ID} in column "${m && m.family}"`);
        assert(places2.unclassified, 'no Unclassified column');
      });
      await page.goto(pathToFileURL(path.join(site2, `${TEAM_ID}.html`)).href);
      await check('the team class has its page', async () => {
        const h1 = await page.locator('h1').innerText();
        const id = await page.locator('code.id').innerText();
        assert(h1 === TEAM_TITLE && id === TEAM_ID, `h1 "${h1}", id "${id}"`);
      });
      const pages2 = await crawl(page, site2, [TEAM_ID]);
      await checkLinks('team site', pages2, site2);
    }

    await check('no request left file:// and no page reported an error', () => {
      assert(!log.outside.size, `requests: ${few(log.outside)}`);
      assert(!log.errors.length, few(log.errors, 5));
    });
    for (const f of ['site-hub.png', 'site-entry.png']) {
      await check(`screenshot ${path.relative(ROOT, path.join(SHOTS, f))}`, () => {
        const p = path.join(SHOTS, f);
        assert(fs.existsSync(p) && fs.statSync(p).size > 10000, 'missing or empty');
      });
    }
  } catch (e) {
    bad('the run', e && e.stack ? e.stack.split('\n').slice(0, 4).join('\n') : e);
  } finally {
    if (browser) await browser.close().catch(() => {});
    fs.rmSync(T, { recursive: true, force: true });
  }
  console.log(`catalog site: ${passed} passed, ${failed} failed (${((Date.now() - t0) / 1000).toFixed(1)} s)`);
  process.exit(failed ? 1 : 0);
})();
