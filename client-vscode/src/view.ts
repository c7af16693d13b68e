// HTML of the diagnosis view and the catalog, rendered in the extension host from the server's
// JSON (every string escaped); the webview script only forwards clicks (media/*.js).
import { Candidate, CatalogEntry, CatalogExample, CatalogItem, Collateral, Incident, PatchOp, Report, formatRanks } from './report';

/** The one HTML escape of the webviews: every text from a report, a log or a rule pack goes through it. */
export function esc(s: unknown): string {
  return String(s ?? '')
    .replace(/&/g, '&amp;')
    .replace(/</g, '&lt;')
    .replace(/>/g, '&gt;')
    .replace(/"/g, '&quot;')
    .replace(/'/g, '&#39;');
}

/** Prose from the catalog: `code` spans become <code>. */
export function prose(s: string | undefined): string {
  if (!s) return '';
  return esc(s).replace(/`([^`]+)`/g, '<code>$1</code>');
}

/** The command of a verify text: its first `backticked` span that looks like a command line. */
export function verifyCommand(verify: string | undefined): string | undefined {
  if (!verify) return undefined;
  for (const m of verify.matchAll(/`([^`]+)`/g)) {
    const c = m[1].trim();
    if (/^[A-Za-z_./$-][\w./:=-]*(\s|$)/.test(c) && !/^[\w.]+\(\)?$/.test(c)) return c;
  }
  return undefined;
}

function list(items: (string | { text?: string })[] | string | undefined, ordered = false): string {
  const v = (Array.isArray(items) ? items : items ? [items] : []).map((x) => (typeof x === 'string' ? x : x.text ?? JSON.stringify(x)));
  if (!v.length) return '';
  const tag = ordered ? 'ol' : 'ul';
  return `<${tag}>${v.map((x) => `<li>${prose(x)}</li>`).join('')}</${tag}>`;
}

function roleLabel(role: string): string {
  return role === 'wrapper' ? 'wrapper' : role === 'collateral' ? 'collateral' : 'cause';
}

function confidenceHtml(c: number | undefined, fallback: boolean | undefined): string {
  if (c === undefined) return '';
  const pct = Math.round(c * 100);
  const level = c >= 0.8 ? 'high' : c >= 0.5 ? 'medium' : 'low';
  return `<span class="confidence conf-${level}" role="img" aria-label="confidence ${pct} percent, ${level}">` +
    `<span class="meter"><span style="width:${pct}%"></span></span>confidence ${c.toFixed(2)}${fallback ? ' · weak evidence (exit code only)' : ''}</span>`;
}

/** A line of the report as the user's document numbers it. */
function shown(line: number): number {
  return line + (ctxNow.lineOffset ?? 0);
}

function lineButton(line: number | undefined, label: string): string {
  if (!line) return esc(label);
  return `<button class="link" data-action="reveal" data-line="${esc(line)}" title="Show line ${esc(shown(line))} in the log">${esc(label)}</button>`;
}

function shortFile(f: string | undefined): string {
  if (ctxNow.file) return ctxNow.file;
  if (!f) return 'log';
  const parts = f.split('/');
  return parts[parts.length - 1] || f;
}

function collateralTable(rows: Collateral[]): string {
  if (!rows.length) return '';
  const body = rows
    .map((c) => {
      const ranks = formatRanks(c.ranks);
      return `<tr><td><code>${esc(c.rule)}</code><div class="sub">${esc(c.title)}</div></td>` +
        `<td>${esc(roleLabel(c.role))}</td><td class="num">${esc(c.count)}</td>` +
        `<td>${ranks ? esc(ranks) : '<span class="muted">unknown</span>'}</td>` +
        `<td>${c.first_line ? lineButton(c.first_line, `line ${shown(c.first_line)}`) : ''}</td></tr>`;
    })
    .join('');
  return `<section aria-labelledby="coll-h"><h2 id="coll-h">Collateral <span class="muted">— consequences of it, not causes</span></h2>` +
    `<table class="collateral"><thead><tr><th scope="col">Class</th><th scope="col">Role</th><th scope="col" class="num">Events</th>` +
    `<th scope="col">Ranks</th><th scope="col">First</th></tr></thead><tbody>${body}</tbody></table></section>`;
}

function whereHtml(inc: Incident): string {
  const who: string[] = [];
  if (inc.rank !== null && inc.rank !== undefined) who.push(`rank <strong>${esc(inc.rank)}</strong>`);
  else who.push('rank <strong>unknown</strong>');
  if (inc.local_rank !== null && inc.local_rank !== undefined && inc.local_rank !== inc.rank) who.push(`local rank ${esc(inc.local_rank)}`);
  if (inc.host) who.push(`host <strong>${esc(inc.host)}</strong>`);
  const at = inc.line ? ` at ${lineButton(inc.line, `${shortFile(inc.file)}:${shown(inc.line)}`)}` : '';
  const ranks = inc.ranks && inc.ranks.length > 1 ? ` <span class="muted">(${esc(inc.count ?? inc.ranks.length)} events on ranks ${esc(formatRanks(inc.ranks))})</span>` : '';
  const facts = inc.facts && Object.keys(inc.facts).length
    ? `<dl class="facts">${Object.entries(inc.facts).map(([k, v]) => `<div><dt>${esc(k)}</dt><dd>${esc(v)}</dd></div>`).join('')}</dl>`
    : '';
  const tb = inc.traceback ?? [];
  const raised = tb.length ? tb[tb.length - 1] : undefined;
  const frames: string[] = [];
  if (raised) frames.push(`raised in <code>${esc(raised.file)}:${esc(raised.line)}</code>${raised.function ? ` in <code>${esc(raised.function)}</code>` : ''}${raised.log_line ? ` (${lineButton(raised.log_line, `log line ${shown(raised.log_line)}`)})` : ''}`);
  if (inc.user_frame) frames.push(`your code <code>${esc(inc.user_frame.file)}:${esc(inc.user_frame.line)}</code>${inc.user_frame.function ? ` in <code>${esc(inc.user_frame.function)}</code>` : ''}`);
  return `<section aria-labelledby="where-h"><h2 id="where-h">Where it started</h2>` +
    `<p class="where">Started on ${who.join(', ')}${at}${ranks}</p>` +
    (inc.rank_note ? `<p class="muted">${prose(inc.rank_note)}</p>` : '') +
    (inc.text ? `<pre class="evidence" tabindex="0" aria-label="the initiating line">${esc(inc.text)}</pre>` : '') +
    facts +
    (frames.length ? `<p class="frames">${frames.join('<br>')}</p>` : '') +
    `</section>`;
}

function verifyHtml(verify: string | undefined, idx: number): string {
  if (!verify) return '';
  const cmd = verifyCommand(verify);
  const buttons = cmd
    ? `<div class="cmd"><code>${esc(cmd)}</code><span class="buttons">` +
      `<button class="secondary" data-action="copy" data-text="${esc(cmd)}" aria-label="Copy the verification command">Copy</button>` +
      `<button class="secondary" data-action="run" data-text="${esc(cmd)}" aria-label="Run the verification command in a terminal">Run in terminal</button></span></div>`
    : `<div class="cmd"><span class="buttons"><button class="secondary" data-action="copy" data-text="${esc(verify)}">Copy</button></span></div>`;
  return `<section aria-labelledby="verify-h-${idx}"><h2 id="verify-h-${idx}">Verify</h2><p>${prose(verify)}</p>${buttons}</section>`;
}

function referencesHtml(refs: string[] | undefined): string {
  if (!refs || !refs.length) return '';
  return `<details><summary>References (${refs.length})</summary><ul class="refs">` +
    refs.map((r) => `<li><button class="link" data-action="open" data-url="${esc(r)}">${esc(r.replace(/^https?:\/\//, ''))}</button></li>`).join('') +
    `</ul></details>`;
}

/** One incident: the primary in full, the others the same way inside a <details>. */
export function incidentHtml(inc: Incident, idx: number, primary: boolean): string {
  const kicker = primary ? 'Initiating failure' : 'Independent failure';
  const patches = inc.patches ?? [];
  const fixes = `<section aria-labelledby="fix-h-${idx}"><h2 id="fix-h-${idx}">Fix</h2>${list(inc.fix, true)}` +
    (patches.length
      ? `<div class="quickfixes" id="fixes-${idx}" aria-live="polite"><h3>ds_config.json quick fixes</h3>` +
        `<p class="muted">Looking for the project's ds_config.json…</p></div>`
      : '') +
    `</section>`;
  const body =
    `<header class="incident-head sev-${esc(inc.severity)}">` +
    `<div class="kicker">${kicker}${inc.phase ? ` · ${esc(inc.phase)}` : ''}</div>` +
    `<h1>${esc(inc.title)}</h1>` +
    `<div class="meta"><code class="id" title="failure id">${esc(inc.rule)}</code>` +
    `<span class="badge sev-${esc(inc.severity)}">${esc(inc.severity)}</span>` +
    `<button class="link small" data-action="explain" data-id="${esc(inc.rule)}" title="Open this failure in the catalog">catalog entry</button>` +
    `${confidenceHtml(inc.confidence, inc.fallback)}</div></header>` +
    whereHtml(inc) +
    collateralTable(inc.collateral ?? []) +
    (inc.summary || inc.mechanism
      ? `<section aria-labelledby="why-h-${idx}"><h2 id="why-h-${idx}">Why</h2>${inc.summary ? `<p><strong>${prose(inc.summary)}</strong></p>` : ''}${inc.mechanism ? `<p>${prose(inc.mechanism)}</p>` : ''}</section>`
      : '') +
    fixes +
    verifyHtml(inc.verify, idx) +
    (inc.missing && inc.missing.length
      ? `<section aria-labelledby="miss-h-${idx}"><h2 id="miss-h-${idx}">Missing facts <span class="muted">— what would make it certain</span></h2>${list(inc.missing)}</section>`
      : '') +
    (inc.checklist && inc.checklist.length ? `<details><summary>Checklist (${inc.checklist.length})</summary>${list(inc.checklist)}</details>` : '') +
    referencesHtml(inc.references);
  if (primary) return `<article class="incident primary" aria-label="${esc(inc.rule)}">${body}</article>`;
  return `<details class="incident other"><summary><span class="badge sev-${esc(inc.severity)}">${esc(inc.severity)}</span> <code>${esc(inc.rule)}</code> ${esc(inc.title)}${inc.rank !== null && inc.rank !== undefined ? ` — rank ${esc(inc.rank)}` : ''}</summary><article>${body}</article></details>`;
}

export interface ReportContext {
  /** What was diagnosed, for the footer. */
  label: string;
  /** The file name to show for line references (the report says "text" for diagnosed text). */
  file?: string;
  /** Added to report lines for display (a selection starting at line N of its document). */
  lineOffset?: number;
}

let ctxNow: ReportContext = { label: '' };

export function reportHtml(report: Report, ctx: ReportContext): string {
  ctxNow = ctx;
  const st = report.stats;
  const meta = [
    esc(ctx.label),
    st?.lines !== undefined ? `${esc(st.lines.toLocaleString('en-US'))} lines` : '',
    st?.rules !== undefined ? `${esc(st.rules)} rules` : '',
    st?.seconds !== undefined ? `${(st.seconds * 1000).toFixed(st.seconds < 0.01 ? 2 : 0)} ms` : '',
    esc(report.tool ?? ''),
    'diagnosed on this machine',
  ].filter(Boolean).join(' · ');
  if (!report.incidents.length) {
    return `<main><article class="incident none"><header class="incident-head"><div class="kicker">No known failure</div>` +
      `<h1>ddx found no known failure in this text</h1></header>` +
      `<p>None of the catalog's failure classes matched. If the job did fail, the log may stop before the error line, or the failure is new: ` +
      `<button class="link" data-action="catalog">browse the catalog</button>.</p></article><footer>${meta}</footer></main>`;
  }
  const [first, ...rest] = report.incidents;
  const diff = differentialHtml(first, report.differential ?? [], report.separator ?? null);
  const others = rest.length
    ? `<section class="others" aria-labelledby="others-h"><h2 id="others-h">Also found (${rest.length})</h2>${rest.map((inc, i) => incidentHtml(inc, i + 1, false)).join('')}</section>`
    : '';
  return `<main>${incidentHtml(first, 0, true)}${diff}${others}<footer>${meta}</footer></main>`;
}

/** The differential beside the primary: the other classes the evidence
 * touches, with their share and the evidence for and against each, and
 * what would tell the first two apart. */
export function differentialHtml(first: Incident, cands: Candidate[], separator: string | null): string {
  const others = cands.filter((c) => c.rule !== first.rule && c.score >= 0.05);
  if (!others.length && !separator && !first.inferred && !first.lifecycle) return '';
  const rows = others.map((c) =>
    `<tr><td><button class="link" data-action="explain" data-id="${esc(c.rule)}"><code>${esc(c.rule)}</code></button> ${esc(c.title)}</td>` +
    `<td class="num">${Math.round(c.score * 100)}%</td>` +
    `<td>${c.for.map(esc).join('; ')}</td><td>${c.against.map(esc).join('; ')}</td></tr>`).join('');
  return `<section class="differential" aria-labelledby="diff-h"><h2 id="diff-h">Differential</h2>` +
    (first.lifecycle ? `<p>Phase: <strong>${esc(first.lifecycle.title)}</strong></p>` : '') +
    (first.inferred ? `<p class="muted">Inferred from a traceback cut before its error line.</p>` : '') +
    (rows
      ? `<table><thead><tr><th scope="col">Also possible</th><th scope="col" class="num">Share</th>` +
        `<th scope="col">For</th><th scope="col">Against</th></tr></thead><tbody>${rows}</tbody></table>`
      : '') +
    (separator ? `<p><strong>Tell apart:</strong> ${esc(separator)}</p>` : '') +
    `</section>`;
}

export interface FixView {
  title: string;
  disabled?: string;
  preferred: boolean;
  changes: string[];
}

export function fixesHtml(fixes: FixView[], idx: number, note?: string): string {
  if (!fixes.length) {
    return `<h3>ds_config.json quick fixes</h3><p class="muted">${esc(note ?? 'No quick fix applies here.')}</p>`;
  }
  const items = fixes
    .map((f, i) => {
      const changes = f.changes.length ? `<div class="changes">${f.changes.map((c) => `<code>${esc(c)}</code>`).join(' ')}</div>` : '';
      if (f.disabled) {
        return `<li class="disabled"><button class="secondary" disabled aria-disabled="true">Apply</button>` +
          `<div><div>${esc(f.title)}</div><div class="reason">${esc(f.disabled)}</div>${changes}</div></li>`;
      }
      return `<li><button class="${f.preferred ? 'primary' : 'secondary'}" data-action="fix" data-incident="${idx}" data-fix="${i}" ` +
        `aria-label="Apply: ${esc(f.title)}">Apply</button><div><div>${esc(f.title)}${f.preferred ? ' <span class="badge pref">first to try</span>' : ''}</div>${changes}</div></li>`;
    })
    .join('');
  return `<h3>ds_config.json quick fixes</h3>${note ? `<p class="muted">${esc(note)}</p>` : ''}<ul class="qf">${items}</ul>` +
    `<p class="muted small">Each fix is an ordinary edit of the config: Undo (Ctrl+Z) in its editor takes it back.</p>`;
}

// ------------------------------------------------------------------------------------ catalog

/** An axis of the catalog's matrix (the hub's, server/engine/hub.c): an id and its heading. */
export interface Axis {
  id: string;
  title: string;
}

/** The matrix's rows: the phase a failure happens in, in the order of a job's life. */
export const CATALOG_PHASES: readonly Axis[] = [
  { id: 'launch', title: 'Launch' },
  { id: 'init', title: 'Init: build, load, engine' },
  { id: 'step', title: 'Training step' },
  { id: 'communication', title: 'Communication' },
  { id: 'numerics', title: 'Numerics' },
  { id: 'checkpoint', title: 'Checkpoint' },
  { id: 'serving', title: 'Serving' },
];

/** The matrix's columns: the family of a failure (an item that names none is Unclassified). */
export const CATALOG_FAMILIES: readonly Axis[] = [
  { id: 'memory', title: 'Memory' },
  { id: 'communication', title: 'Communication' },
  { id: 'numerics', title: 'Numerics' },
  { id: 'configuration', title: 'Configuration' },
  { id: 'environment', title: 'Build / environment' },
  { id: 'checkpoint', title: 'Checkpoint' },
  { id: 'parallelism', title: 'Parallelism' },
  { id: 'generic', title: 'Generic' },
];

const UNCLASSIFIED: Axis = { id: 'unclassified', title: 'Unclassified' };
const OTHER_PHASE: Axis = { id: 'other', title: 'Other phase' };

const STACKS = new Map<unknown, string>([
  ['pytorch', 'PyTorch'],
  ['hf', 'HF Trainer / Accelerate'],
  ['deepspeed', 'DeepSpeed'],
  ['megatron', 'Megatron-LM'],
  ['vllm', 'vLLM'],
]);

const AFFECTED = new Map<unknown, string>([['yes', 'Yes'], ['no', 'No'], ['partly', 'Partly']]);

/** A string field of a rule (rule packs are JSON from anywhere: anything else counts as absent). */
function text(v: unknown): string | undefined {
  return typeof v === 'string' && v.trim() !== '' ? v : undefined;
}

function axisOf(axes: readonly Axis[], v: unknown): Axis | undefined {
  return axes.find((a) => a.id === v);
}

function titleOf(axes: readonly Axis[], v: unknown): string {
  return axisOf(axes, v)?.title ?? String(v ?? '');
}

/** The column of an item: its family, or Unclassified (none, or one the matrix does not know). */
export function familyColumn(i: CatalogItem): Axis {
  return axisOf(CATALOG_FAMILIES, i.family) ?? UNCLASSIFIED;
}

/** The row of an item: its phase, or "Other phase" (an old server's list names none). */
export function phaseRow(i: CatalogItem): Axis {
  return axisOf(CATALOG_PHASES, i.phase) ?? OTHER_PHASE;
}

function matrixItem(i: CatalogItem): string {
  return `<button class="item sev-${esc(i.severity)}" data-action="select" data-id="${esc(i.id)}" title="${esc(i.title)}" ` +
    `aria-label="${esc(i.id)}: ${esc(i.title)}"><code>${esc(i.id).replace(/\./g, '.<wbr>')}</code><span class="t">${esc(i.title)}</span></button>`;
}

/**
 * The hub: every failure class in a phase x family table, each a button that opens its entry.
 * Rows are the 7 phases, columns the 8 families, plus "Unclassified" only when an item names no
 * family (and an "Other phase" row only when an item's phase is not one of the 7).
 */
export function catalogMatrixHtml(items: readonly CatalogItem[]): string {
  const sorted = [...items].sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
  const cols: Axis[] = [...CATALOG_FAMILIES];
  if (sorted.some((i) => familyColumn(i) === UNCLASSIFIED)) cols.push(UNCLASSIFIED);
  const rows: Axis[] = [...CATALOG_PHASES];
  if (sorted.some((i) => phaseRow(i) === OTHER_PHASE)) rows.push(OTHER_PHASE);
  const count = (n: number): string => (n ? ` <span class="count">${n}</span>` : '');
  const head = cols
    .map((c) => `<th scope="col" data-family="${esc(c.id)}">${esc(c.title)}${count(sorted.filter((i) => familyColumn(i) === c).length)}</th>`)
    .join('');
  const body = rows
    .map((r) => {
      const inRow = sorted.filter((i) => phaseRow(i) === r);
      const cells = cols
        .map((c) => {
          const here = inRow.filter((i) => familyColumn(i) === c);
          return `<td data-phase="${esc(r.id)}" data-family="${esc(c.id)}"${here.length ? '' : ' class="empty"'}>${here.map(matrixItem).join('')}</td>`;
        })
        .join('');
      return `<tr data-phase="${esc(r.id)}"><th scope="row">${esc(r.title)}${count(inRow.length)}</th>${cells}</tr>`;
    })
    .join('');
  return `<table class="matrix" aria-label="Failure classes by phase (rows) and family (columns)">` +
    `<thead><tr><th scope="col" class="corner">Phase \\ family</th>${head}</tr></thead><tbody>${body}</tbody></table>`;
}

/** What the catalog page shows first: the matrix, or an entry (its HTML). */
export interface CatalogInitial {
  id: string;
  html: string;
}

/**
 * The catalog page: a bar (back to the matrix, the filter), the matrix and the entry; one of the
 * two is hidden (media/catalog.js switches them when the extension posts another view).
 */
export function catalogShellHtml(items: readonly CatalogItem[], page: string, entry?: CatalogInitial): string {
  const view = entry ? 'entry' : 'matrix';
  return `<div class="catalog" id="catalog" data-view="${view}" data-page="${esc(page)}"${entry ? ` data-id="${esc(entry.id)}"` : ''}>` +
    `<div class="bar" role="toolbar" aria-label="Failure catalog">` +
    `<button class="secondary" id="to-matrix" data-action="matrix" title="All failure classes by phase and family"${entry ? '' : ' hidden'}>← Phase × family</button>` +
    `<input id="filter" type="search" placeholder="Filter ${items.length} failures" aria-label="Filter the failure classes"${entry ? ' hidden' : ''}>` +
    `</div>` +
    `<section id="matrix" aria-labelledby="matrix-h"${entry ? ' hidden' : ''}>` +
    `<h1 id="matrix-h">Failure catalog</h1>` +
    `<p class="muted">${items.length} failure classes by the phase they happen in (rows) and their family (columns). Pick one to read its entry.</p>` +
    `<div class="matrix-wrap">${catalogMatrixHtml(items)}</div></section>` +
    `<div id="entry" aria-live="polite"${entry ? '' : ' hidden'}>${entry ? entry.html : ''}</div></div>`;
}

/** What an entry links to besides itself: the catalog list and the look-alikes' own entries. */
export interface CatalogEntryContext {
  /** The catalog list (`ddx.catalog`): the look-alike group's other members, the related titles. */
  items?: readonly CatalogItem[];
  /** The look-alikes' entries, for their "where" and "what separates it" (absent ones: the list's title only). */
  lookalikes?: readonly CatalogEntry[];
}

function idLink(id: string, items: readonly CatalogItem[] | undefined): string {
  const item = items?.find((i) => i.id === id);
  if (items && !item) return `<code>${esc(id)}</code> <span class="muted">(not in this catalog)</span>`;
  return `<button class="link" data-action="explain" data-id="${esc(id)}" title="${esc(item?.title ?? id)}"><code>${esc(id)}</code></button>`;
}

function examplesHtml(examples: unknown): string {
  const v = Array.isArray(examples)
    ? examples.filter((x): x is CatalogExample => typeof x === 'object' && x !== null && text((x as CatalogExample).code) !== undefined)
    : [];
  if (!v.length) return '';
  return `<section class="examples"><h2>Code per stack</h2>` +
    v.map((x) => {
      const stack = STACKS.get(x.stack) ?? text(x.stack) ?? 'Any stack';
      const title = text(x.title);
      const lang = text(x.lang);
      return `<h3 class="stack" data-stack="${esc(x.stack)}">${esc(stack)}${title ? `: ${esc(title)}` : ''}</h3>` +
        `<pre class="code" tabindex="0"${lang ? ` data-lang="${esc(lang)}"` : ''} aria-label="${esc(stack)} code"><code>${esc(x.code)}</code></pre>` +
        (text(x.why) ? `<p><em>Why it works:</em> ${prose(x.why)}</p>` : '');
    }).join('') +
    `</section>`;
}

function inferenceHtml(inf: CatalogEntry['inference']): string {
  if (typeof inf !== 'object' || inf === null) return '';
  const affected = text(inf.affected);
  const note = text(inf.note);
  if (!affected && !note) return '';
  const word = affected ? AFFECTED.get(affected) ?? affected : '';
  return `<section class="inference"><h2>Inference</h2><p>${word ? `<strong>${esc(word)}.</strong> ` : ''}${prose(note)}</p></section>`;
}

/** The look-alikes: the other classes of its group, each a link, with what separates them. */
function lookalikesHtml(e: CatalogEntry, ctx: CatalogEntryContext): string {
  const cmp = typeof e.compare === 'object' && e.compare !== null ? e.compare : undefined;
  const group = text(cmp?.group) ?? text(ctx.items?.find((i) => i.id === e.id)?.group);
  if (!group) return '';
  const others = (ctx.items ?? []).filter((i) => i.id !== e.id && i.group === group);
  const entries = new Map((ctx.lookalikes ?? []).map((x) => [x.id, x]));
  const row = (id: string, title: string, phase: unknown, where: unknown, separates: unknown, self: boolean): string =>
    `<tr${self ? ' class="self"' : ''}><td>${self ? `<code>${esc(id)}</code> <span class="muted">(this one)</span>` : idLink(id, ctx.items)}` +
    `<div class="sub">${esc(title)}</div></td><td>${esc(titleOf(CATALOG_PHASES, phase))}</td>` +
    `<td>${prose(text(where))}</td><td>${prose(text(separates))}</td></tr>`;
  const rows = others.map((i) => {
    const x = entries.get(i.id);
    const c = x && typeof x.compare === 'object' && x.compare !== null ? x.compare : undefined;
    return row(i.id, i.title, i.phase, c?.where, c?.separates, false);
  });
  return `<section class="lookalikes" aria-labelledby="lookalikes-h"><h2 id="lookalikes-h">Look-alikes <span class="muted">— ${esc(group)}</span></h2>` +
    (text(cmp?.separates) ? `<p><strong>What separates it:</strong> ${prose(cmp?.separates)}</p>` : '') +
    (rows.length
      ? `<table class="collateral compare"><thead><tr><th scope="col">Class</th><th scope="col">Phase</th><th scope="col">Where</th>` +
        `<th scope="col">What separates it</th></tr></thead><tbody>` +
        row(e.id, e.title, e.phase, cmp?.where, cmp?.separates, true) + rows.join('') + `</tbody></table>`
      : `<p class="muted">No other class of this catalog is in this group.</p>`) +
    `</section>`;
}

export function catalogEntryHtml(e: CatalogEntry, ctx: CatalogEntryContext = {}): string {
  const family = text(e.family) ?? text(ctx.items?.find((i) => i.id === e.id)?.family);
  const related = Array.isArray(e.related) ? e.related.filter((r): r is string => typeof r === 'string' && r !== '') : [];
  return `<article class="incident primary"><header class="incident-head sev-${esc(e.severity ?? 'error')}">` +
    `<div class="kicker">${esc([e.framework, e.phase, family ? titleOf(CATALOG_FAMILIES, family) : undefined, e.role].filter(Boolean).join(' · '))}</div>` +
    `<h1 tabindex="-1">${esc(e.title)}</h1>` +
    `<div class="meta"><code class="id">${esc(e.id)}</code>${e.severity ? `<span class="badge sev-${esc(e.severity)}">${esc(e.severity)}</span>` : ''}` +
    `${(Array.isArray(e.tags) ? e.tags : []).map((t) => `<span class="tag">${esc(t)}</span>`).join('')}</div></header>` +
    (e.summary ? `<section><h2>Summary</h2><p><strong>${prose(e.summary)}</strong></p></section>` : '') +
    (e.mechanism ? `<section><h2>Why it happens</h2><p>${prose(e.mechanism)}</p></section>` : '') +
    (e.symptoms ? `<section><h2>Symptoms</h2>${list(e.symptoms)}</section>` : '') +
    (e.affects ? `<section><h2>Affects</h2>${list(e.affects)}</section>` : '') +
    (e.checklist ? `<section><h2>Checklist</h2>${list(e.checklist)}</section>` : '') +
    (text(e.confirm) ? `<section class="confirm"><h2>Cheapest confirmation</h2><p>${prose(e.confirm)}</p></section>` : '') +
    (e.fix ? `<section><h2>Fix</h2>${list(e.fix, true)}</section>` : '') +
    (e.config_patches && e.config_patches.length
      ? `<section><h2>ds_config.json quick fixes</h2><ul>${e.config_patches.map((p) => `<li>${esc(p.title)}${(p.ops ?? []).length ? ` <span class="changes">${(p.ops ?? []).map((o) => `<code>${esc(describeOp(o))}</code>`).join(' ')}</span>` : ''}</li>`).join('')}</ul></section>`
      : '') +
    examplesHtml(e.examples) +
    verifyHtml(e.verify, 0) +
    (e.prevention ? `<section><h2>Prevention</h2>${list(e.prevention)}</section>` : '') +
    (text(e.scale) ? `<section class="scale"><h2>From 1 to 1000+ GPUs</h2><p>${prose(e.scale)}</p></section>` : '') +
    inferenceHtml(e.inference) +
    (e.missing ? `<section><h2>Facts that decide it</h2>${list(e.missing)}</section>` : '') +
    lookalikesHtml(e, ctx) +
    (related.length ? `<section class="related"><h2>Related</h2><p>${related.map((r) => idLink(r, ctx.items)).join(' · ')}</p></section>` : '') +
    referencesHtml(e.references) +
    (e.href ? `<p class="muted small">Rule file: <button class="link" data-action="open" data-url="${esc(e.href)}">${esc(e.href.replace(/^.*\/rules\//, 'rules/'))}</button></p>` : '') +
    `</article>`;
}

export function describeOp(o: PatchOp): string {
  const v = o.value === undefined ? '' : ` = ${JSON.stringify(o.value)}`;
  if (o.op === 'set') return `${o.path}${v}`;
  if (o.op === 'remove' || o.op === 'delete') return `remove ${o.path}`;
  if (o.op === 'multiply' && o.factor !== undefined) {
    const bound = o.min !== undefined ? ` (min ${o.min})` : o.max !== undefined ? ` (max ${o.max})` : '';
    return `${o.path} × ${o.factor}${bound}`;
  }
  return `${o.op} ${o.path}${v}`;
}
