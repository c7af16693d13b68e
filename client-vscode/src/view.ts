// HTML of the diagnosis view and the catalog, rendered in the extension host from the server's
// JSON (every string escaped); the webview script only forwards clicks (media/*.js).
import { Candidate, CatalogEntry, Collateral, Incident, PatchOp, Report, formatRanks } from './report';

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

export function catalogEntryHtml(e: CatalogEntry): string {
  return `<article class="incident primary"><header class="incident-head sev-${esc(e.severity ?? 'error')}">` +
    `<div class="kicker">${esc([e.framework, e.phase, e.role].filter(Boolean).join(' · '))}</div><h1>${esc(e.title)}</h1>` +
    `<div class="meta"><code class="id">${esc(e.id)}</code>${e.severity ? `<span class="badge sev-${esc(e.severity)}">${esc(e.severity)}</span>` : ''}` +
    `${(e.tags ?? []).map((t) => `<span class="tag">${esc(t)}</span>`).join('')}</div></header>` +
    (e.summary ? `<section><h2>Summary</h2><p><strong>${prose(e.summary)}</strong></p></section>` : '') +
    (e.mechanism ? `<section><h2>Why it happens</h2><p>${prose(e.mechanism)}</p></section>` : '') +
    (e.symptoms ? `<section><h2>Symptoms</h2>${list(e.symptoms)}</section>` : '') +
    (e.checklist ? `<section><h2>Checklist</h2>${list(e.checklist)}</section>` : '') +
    (e.fix ? `<section><h2>Fix</h2>${list(e.fix, true)}</section>` : '') +
    verifyHtml(e.verify, 0) +
    (e.prevention ? `<section><h2>Prevention</h2>${list(e.prevention)}</section>` : '') +
    (e.config_patches && e.config_patches.length
      ? `<section><h2>ds_config.json quick fixes</h2><ul>${e.config_patches.map((p) => `<li>${esc(p.title)}${(p.ops ?? []).length ? ` <span class="changes">${(p.ops ?? []).map((o) => `<code>${esc(describeOp(o))}</code>`).join(' ')}</span>` : ''}</li>`).join('')}</ul></section>`
      : '') +
    (e.missing ? `<section><h2>Facts that decide it</h2>${list(e.missing)}</section>` : '') +
    (e.related && e.related.length ? `<section><h2>Related</h2><p>${e.related.map((r) => `<button class="link" data-action="explain" data-id="${esc(r)}">${esc(r)}</button>`).join(' · ')}</p></section>` : '') +
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
