// The catalog's HTML, checked without VS Code (tests/vscode/run.sh runs it after compiling;
// `node tests/vscode/view-check.js` from the repository root): the pure rendering functions of
// client-vscode/out/view.js (compiled) on hand-made catalog items and entries:
//   1. the matrix: rows are the 7 phases, columns the 8 families in order, "Unclassified" only
//      when an item names no family; every class is a button in its cell that opens its entry;
//   2. an entry: code per stack with why, cheapest confirmation, 1 -> 1000+ GPUs, inference; the
//      look-alikes (the other items of its group) as links with what separates them; related ids
//      as links; absent fields leave no trace;
//   3. rule text (a team's rule folder is untrusted) never becomes markup.
// Prints "N passed, M failed"; exit 0 only when all pass.
'use strict';
const fs = require('fs');
const path = require('path');

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

const out = path.join(root, 'client-vscode', 'out', 'view.js');
if (!fs.existsSync(out)) {
  console.log(`FAIL: ${out} is missing (npm run compile)`);
  console.log('view-check: 0 passed, 1 failed');
  process.exit(1);
}
const view = require(out);

const PHASES = ['launch', 'init', 'step', 'communication', 'numerics', 'checkpoint', 'serving'];
const FAMILIES = ['memory', 'communication', 'numerics', 'configuration', 'environment', 'checkpoint', 'parallelism', 'generic'];
const EVIL = '<img src=x onerror=alert(1)>';
/** Markup a rule's text could smuggle in, if anything were not escaped. */
const RAW = /<(img|script|marquee|iframe|b|i|u)[\s>]/i;

const attrs = (html, re) => [...html.matchAll(re)].map((m) => m[1]);
const section = (html, cls) => {
  const m = new RegExp(`<section class="${cls}"[^>]*>([\\s\\S]*?)</section>`).exec(html);
  return m ? m[1] : '';
};
const cell = (html, phase, family) => {
  const m = new RegExp(`<td data-phase="${phase}" data-family="${family}"[^>]*>([\\s\\S]*?)</td>`).exec(html);
  return m ? m[1] : undefined;
};

const item = (id, phase, family, extra = {}) => ({ id, title: `${id} title`, severity: 'error', role: 'cause', phase, family, group: null, related: [], ...extra });
const items = [
  item('ds.oom.a', 'step', 'memory', { group: 'OOM look-alikes' }),
  item('ds.oom.b', 'init', 'memory', { group: 'OOM look-alikes' }),
  item('ds.oom.c', 'checkpoint', 'checkpoint', { group: 'OOM look-alikes' }),
  item('nccl.x', 'communication', 'communication', { severity: 'warning' }),
  item('evil.one', 'serving', 'generic', { title: `Evil ${EVIL}`, group: `G ${EVIL}` }),
];

// ------------------------------------------------------------------------------- 1. the matrix
{
  const html = view.catalogMatrixHtml(items);
  const cols = attrs(html.slice(0, html.indexOf('</thead>')), /<th scope="col" data-family="([^"]*)"/g);
  check(JSON.stringify(cols) === JSON.stringify(FAMILIES), `the columns are the 8 families in order (got ${cols})`);
  const rows = attrs(html, /<tr data-phase="([^"]*)"/g);
  check(JSON.stringify(rows) === JSON.stringify(PHASES), `the rows are the 7 phases in order (got ${rows})`);
  check(!/Unclassified/.test(html), 'no Unclassified column when every item names a family');
  check(/<td data-phase="step" data-family="memory"[^>]*>.*data-id="ds\.oom\.a"/.test(html.replace(/<\/td>/g, '</td>\n')), 'ds.oom.a sits in the step x memory cell');
  check((cell(html, 'init', 'memory') || '').includes('data-id="ds.oom.b"'), 'ds.oom.b sits in the init x memory cell');
  check((cell(html, 'communication', 'communication') || '').includes('data-id="nccl.x"'), 'nccl.x sits in communication x communication');
  check(cell(html, 'launch', 'numerics') === '', 'an empty cell is empty');
  const buttons = attrs(html, /<button class="item[^"]*" data-action="select" data-id="([^"]*)"/g);
  check(JSON.stringify([...buttons].sort()) === JSON.stringify(items.map((i) => i.id).sort()), `every class is one button that selects it (got ${buttons})`);
  check(!RAW.test(html) && html.includes('&lt;img src=x onerror=alert(1)&gt;'), 'a title is escaped in the matrix');
  const cells = html.match(/<td /g) || [];
  check(cells.length === PHASES.length * FAMILIES.length, `7 x 8 cells (got ${cells.length})`);

  const mixed = view.catalogMatrixHtml([...items, item('new.thing', 'step', null), item('weird.family', 'launch', 'banana'), item('old.server', undefined, undefined)]);
  const cols2 = attrs(mixed.slice(0, mixed.indexOf('</thead>')), /<th scope="col" data-family="([^"]*)"/g);
  check(JSON.stringify(cols2) === JSON.stringify([...FAMILIES, 'unclassified']), `an item with no family adds the Unclassified column last (got ${cols2})`);
  check((cell(mixed, 'step', 'unclassified') || '').includes('data-id="new.thing"'), 'an item with no family is in the Unclassified column of its phase');
  check((cell(mixed, 'launch', 'unclassified') || '').includes('data-id="weird.family"'), 'an unknown family counts as Unclassified');
  check(attrs(mixed, /<tr data-phase="([^"]*)"/g).join() === [...PHASES, 'other'].join(), 'an item with no phase (an old server) adds an "Other phase" row');

  const shell = view.catalogShellHtml(items, 'p1');
  check(/data-view="matrix"/.test(shell) && /<section id="matrix"[^>]*>/.test(shell) && !/<section id="matrix"[^>]*hidden/.test(shell), 'the page opens on the matrix');
  check(/<div id="entry"[^>]*hidden/.test(shell), '... with the entry hidden');
  check(/<button[^>]*id="to-matrix" data-action="matrix"[^>]*hidden/.test(shell), 'the bar has the way back to the matrix (hidden on the matrix)');
  check(!/<input id="filter"[^>]*hidden/.test(shell), '... and the filter of the matrix');
  const onEntry = view.catalogShellHtml(items, 'p2', { id: 'ds.oom.a', html: '<article>E</article>' });
  check(/data-view="entry"/.test(onEntry) && /<section id="matrix"[^>]*hidden/.test(onEntry) && /<div id="entry"[^>]*>(?!<\/div>)<article>E<\/article>/.test(onEntry) && !/<div id="entry"[^>]*hidden/.test(onEntry),
    'a page opened for an id shows its entry, the matrix hidden');
  check(!/<button[^>]*id="to-matrix"[^>]*hidden/.test(onEntry) && /<input id="filter"[^>]*hidden/.test(onEntry), '... the way back to the matrix shown, the filter hidden');
}

// --------------------------------------------------------------------------------- 2. an entry
{
  const full = {
    id: 'ds.oom.a', title: `OOM A ${EVIL}`, phase: 'step', family: 'memory', severity: 'error', role: 'cause',
    summary: 's', mechanism: 'm', fix: ['f'],
    examples: [
      { stack: 'deepspeed', title: 'ds_config.json', lang: 'json', code: '{"a": "</code></pre><script>alert(1)</script>"}', why: 'the `a` key <b>x</b>' },
      { stack: 'pytorch', code: 'torch.cuda.empty_cache()', why: 'frees' },
      { stack: 'toString', code: 'x' },
    ],
    confirm: 'a one-GPU toy run `python toy.py` <marquee>',
    scale: 'worse at 1000+ GPUs <iframe>',
    inference: { affected: 'partly', note: 'also when <i>serving</i>' },
    compare: { group: 'OOM look-alikes', where: 'forward', separates: 'A_SEP it <u>says</u> Tried to allocate' },
    related: ['nccl.x', 'gone.away', 'ds.oom.b'],
  };
  const lookalikes = [{ id: 'ds.oom.b', title: 'B', compare: { group: 'OOM look-alikes', where: 'engine init', separates: 'B_SEP at init' } }];
  const html = view.catalogEntryHtml(full, { items, lookalikes });
  check(!RAW.test(html), `no markup from the rule's text (${(RAW.exec(html) || [''])[0]})`);
  check(html.includes('&lt;/code&gt;&lt;/pre&gt;&lt;script&gt;'), 'the code of an example is escaped');
  const ex = section(html, 'examples');
  check(/Code per stack/.test(ex) && /data-stack="deepspeed">DeepSpeed: ds_config\.json</.test(ex) && /data-stack="pytorch">PyTorch</.test(ex), 'code per stack, with the stack names');
  check(/<em>Why it works:<\/em> the <code>a<\/code> key &lt;b&gt;x&lt;\/b&gt;/.test(ex), '... each with its why');
  check(/data-stack="toString">toString</.test(ex), 'an unknown stack is named as written');
  check(/Cheapest confirmation/.test(html) && section(html, 'confirm').includes('<code>python toy.py</code> &lt;marquee&gt;'), 'the cheapest confirmation');
  check(/From 1 to 1000\+ GPUs/.test(html) && section(html, 'scale').includes('&lt;iframe&gt;'), '1 -> 1000+ GPUs');
  check(/<strong>Partly\.<\/strong> also when &lt;i&gt;serving&lt;\/i&gt;/.test(section(html, 'inference')), 'inference: affected and its note');
  const look = section(html, 'lookalikes');
  check(/Look-alikes/.test(look) && look.includes('A_SEP it &lt;u&gt;says&lt;/u&gt; Tried to allocate'), 'the look-alikes say what separates it');
  const lookLinks = attrs(look, /data-action="explain" data-id="([^"]*)"/g);
  check(JSON.stringify(lookLinks.sort()) === JSON.stringify(['ds.oom.b', 'ds.oom.c']), `the other items of its group are links that open them (got ${lookLinks})`);
  check(look.includes('B_SEP at init'), "a look-alike's own entry says what separates it");
  check(!lookLinks.includes('ds.oom.a') && /\(this one\)/.test(look), 'the entry itself is in its table, not as a link');
  const rel = section(html, 'related');
  check(JSON.stringify(attrs(rel, /data-action="explain" data-id="([^"]*)"/g)) === JSON.stringify(['nccl.x', 'ds.oom.b']), 'related ids in the catalog stay links');
  check(/<code>gone\.away<\/code> <span class="muted">\(not in this catalog\)/.test(rel), 'a related id not in the catalog says so');
  check(/memory|Memory/.test(html.slice(0, html.indexOf('</header>'))), 'the kicker names the family');

  // an entry from before the encyclopedia's fields: none of their sections, nothing undefined
  const bare = view.catalogEntryHtml({ id: 'nccl.x', title: 'X', summary: 's', fix: ['f'] }, { items });
  for (const s of ['Code per stack', 'Cheapest confirmation', '1000+ GPUs', 'Inference', 'Look-alikes', 'Related'])
    check(!bare.includes(s), `an entry without the new fields has no "${s}"`);
  check(!/undefined|null|\[object/.test(bare), 'nothing "undefined" in an entry without them');
  check(!/undefined|null|\[object/.test(view.catalogEntryHtml({ id: 'x', title: 'X' })), 'nor in an entry with nothing, without the list');
  // the group from the catalog list when the entry has no compare; alone in its group
  const fromList = view.catalogEntryHtml({ id: 'ds.oom.b', title: 'B' }, { items });
  check(JSON.stringify(attrs(section(fromList, 'lookalikes'), /data-id="([^"]*)"/g).sort()) === JSON.stringify(['ds.oom.a', 'ds.oom.c']), "the group comes from the catalog list when the entry has no compare");
  const alone = view.catalogEntryHtml({ id: 'evil.one', title: EVIL, compare: { group: `G ${EVIL}`, separates: EVIL } }, { items });
  check(/No other class of this catalog is in this group/.test(alone) && !RAW.test(alone), 'alone in its group: said so, the group escaped');
  // wrong types from a rule pack are absent, not a crash
  let threw = '';
  try {
    const odd = view.catalogEntryHtml({ id: 'o', title: 'O', examples: 'no', inference: 'yes', compare: 3, confirm: 7, scale: ['x'], related: 'r' }, { items });
    check(!/Code per stack|Look-alikes|Related/.test(odd), 'fields of the wrong type show nothing');
  } catch (e) {
    threw = e.message;
  }
  check(threw === '', `fields of the wrong type do not throw (${threw})`);
}

console.log(`view-check: ${passed} passed, ${failed} failed`);
process.exit(failed ? 1 : 0);
