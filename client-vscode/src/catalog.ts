// The failure catalog: every id the server knows, a webview beside the editor (the hub: a
// phase x family matrix of every class; an entry with its look-alikes) and the "Explain Failure…"
// quick pick. Entries come from the server (ddx.explain).
import { execFile } from 'child_process';
import * as vscode from 'vscode';
import type { DdxContext } from './context';
import { CatalogRequest, ExplainRequest } from './protocol';
import { CatalogEntry, CatalogItem } from './report';
import { DdxServer } from './server';
import { commonAction, createDdxPanel, isWebMessage, nonce, pageHtml } from './panel';
import { catalogEntryHtml, catalogMatrixHtml, catalogShellHtml, esc } from './view';

/** An item of `ddx.catalog` as the views use it: strings or null, whatever a rule pack wrote. */
export function catalogItem(raw: unknown): CatalogItem {
  const o = raw as Record<string, unknown>;
  const str = (v: unknown): string => (typeof v === 'string' ? v : v === undefined || v === null ? '' : String(v));
  const opt = (v: unknown): string | null => (typeof v === 'string' && v !== '' ? v : null);
  return {
    id: str(o.id),
    title: str(o.title),
    severity: str(o.severity),
    role: str(o.role),
    phase: opt(o.phase) ?? undefined,
    priority: typeof o.priority === 'number' ? o.priority : undefined,
    family: opt(o.family),
    group: opt(o.group),
    related: Array.isArray(o.related) ? o.related.filter((r): r is string => typeof r === 'string' && r !== '') : [],
  };
}

/** Parses `ddx rules list`: "id  severity  role  priority  title". */
export function parseRulesList(out: string): CatalogItem[] {
  const items: CatalogItem[] = [];
  for (const line of out.split('\n')) {
    const m = /^(\S+)\s+(error|warning|info)\s+(\S+)\s+(-?\d+)\s+(.*)$/.exec(line.trimEnd());
    if (m) items.push({ id: m[1], severity: m[2], role: m[3], title: m[5] });
  }
  return items;
}

/** What the catalog panel shows: the phase x family matrix, or one entry. */
export type CatalogView = { kind: 'matrix' } | { kind: 'entry'; id: string };

/** One view rendered: its HTML (the matrix's table, or the entry). */
export interface CatalogRender {
  view: CatalogView;
  html: string;
}

function viewKey(v: CatalogView): string {
  return v.kind === 'entry' ? `entry:${v.id}` : 'matrix';
}

/** How many look-alikes' entries are asked for to show their "what separates it". */
const MAX_LOOKALIKES = 16;

export class Catalog implements vscode.Disposable {
  private items: CatalogItem[] | undefined;
  private panel: vscode.WebviewPanel | undefined;
  private view: CatalogView = { kind: 'matrix' };
  /** The list the page was built from (a changed catalog rebuilds it). */
  private pageItems: CatalogItem[] | undefined;
  /** The page's token, and whether its script said it is ready for messages. */
  private page = '';
  private pageView = '';
  private ready = false;
  private navigation = 0;
  private readonly disposables: vscode.Disposable[] = [];
  private readonly renderedEmitter = new vscode.EventEmitter<CatalogRender>();
  /** Fires after each view is shown (for tests and screenshots). */
  readonly onDidRender = this.renderedEmitter.event;
  /** The body of the page last built (the bar, the matrix, the entry it opened on). */
  lastHtml = '';
  /** The HTML of the entry last shown. */
  lastEntryHtml = '';

  constructor(private readonly server: DdxServer, private readonly extensionUri: vscode.Uri) {}

  /** What the panel shows now (the matrix when it is closed). */
  get current(): CatalogView {
    return this.panel ? this.view : { kind: 'matrix' };
  }

  get visible(): boolean {
    return this.panel !== undefined;
  }

  invalidate(): void {
    this.items = undefined;
  }

  /** Every failure class: from the server's ddx.catalog command when it has one, else `ddx rules list`. */
  async list(): Promise<CatalogItem[]> {
    if (this.items) return this.items;
    await this.server.start();
    if (this.server.hasCommand('ddx.catalog')) {
      const v = await this.server.request(CatalogRequest, { command: 'ddx.catalog', arguments: [] });
      return (this.items = v.failures.map(catalogItem));
    }
    const bin = this.server.binary;
    if (!bin) throw new Error('the ddx language server is not running');
    const out = await new Promise<string>((resolve, reject) => {
      execFile(bin.path, ['rules', 'list'], { env: bin.env, maxBuffer: 8 * 1024 * 1024 }, (err, stdout, stderr) => {
        if (err && !stdout) reject(new Error(`${bin.path} rules list: ${stderr || err.message}`));
        else resolve(stdout);
      });
    });
    this.items = parseRulesList(out);
    return this.items;
  }

  async explain(id: string): Promise<CatalogEntry> {
    return this.server.request(ExplainRequest, { command: 'ddx.explain', arguments: [{ id }] });
  }

  /** The quick pick over all ids; resolves the id picked. */
  async pick(): Promise<string | undefined> {
    const items = await this.list();
    const picked = await vscode.window.showQuickPick(
      items.map((i) => ({ label: i.id, description: `${i.severity} · ${i.role}`, detail: i.title })),
      { title: 'ddx: Explain Failure', placeHolder: 'a failure id or words of its title', matchOnDescription: true, matchOnDetail: true },
    );
    return picked?.label;
  }

  /** Opens the panel: on the entry of `id`, else on the phase x family matrix (an open panel keeps its view). */
  async open(id?: string): Promise<void> {
    await this.list(); // no server, no panel: the error says why
    if (!this.panel) {
      this.panel = createDdxPanel(this.extensionUri, 'ddx.catalog', 'ddx: failure catalog', false,
        (m: unknown) => void this.receive(m), () => {
          this.panel = undefined;
          this.pageItems = undefined;
          this.ready = false;
        }, this.disposables);
      this.view = { kind: 'matrix' };
    } else {
      this.panel.reveal();
    }
    await this.show(id ? { kind: 'entry', id } : this.view);
  }

  /** Shows a view: a new page when there is none yet (or the catalog changed), else a message to the page. */
  private async show(view: CatalogView): Promise<void> {
    const nav = ++this.navigation;
    const items = await this.list();
    let html = '';
    if (view.kind === 'entry') html = await this.entryHtml(view.id, items);
    const panel = this.panel;
    if (!panel || nav !== this.navigation) return; // closed, or a later click won
    this.view = view;
    panel.title = view.kind === 'entry' ? `ddx catalog: ${view.id}` : 'ddx: failure catalog';
    if (!this.ready || items !== this.pageItems) {
      // a page of its own, opened on this view: nothing depends on a message reaching a page
      // that is still loading
      this.page = nonce();
      this.pageView = viewKey(view);
      this.ready = false;
      this.pageItems = items;
      this.lastHtml = catalogShellHtml(items, this.page, view.kind === 'entry' ? { id: view.id, html } : undefined);
      panel.webview.html = pageHtml(panel.webview, this.extensionUri, 'ddx catalog', this.lastHtml, 'catalog.js');
    } else {
      await panel.webview.postMessage(view.kind === 'entry' ? { type: 'entry', id: view.id, html } : { type: 'matrix' });
    }
    if (view.kind === 'entry') this.lastEntryHtml = html;
    this.renderedEmitter.fire({ view, html: view.kind === 'entry' ? html : catalogMatrixHtml(items) });
  }

  /** The entry of `id` with its look-alikes (their own entries, for what separates them). */
  private async entryHtml(id: string, items: CatalogItem[]): Promise<string> {
    let entry: CatalogEntry;
    try {
      entry = await this.explain(id);
    } catch (e) {
      return `<p>${esc(e instanceof Error ? e.message : String(e))}</p>`;
    }
    const group = (typeof entry.compare?.group === 'string' && entry.compare.group) || items.find((i) => i.id === id)?.group;
    const others = group ? items.filter((i) => i.id !== id && i.group === group).slice(0, MAX_LOOKALIKES) : [];
    const got = await Promise.allSettled(others.map((i) => this.explain(i.id)));
    const lookalikes = got.flatMap((r) => (r.status === 'fulfilled' ? [r.value] : []));
    return catalogEntryHtml(entry, { items, lookalikes });
  }

  /** What the page posts (a click, or that it is ready); the in-host tests post the same. */
  async receive(raw: unknown): Promise<void> {
    if (!isWebMessage(raw)) return;
    try {
      if (raw.action === 'ready') {
        if (raw.page !== this.page || !this.panel) return;
        this.ready = true;
        // a page loaded again (a move to another editor group can reload it) shows the view it
        // was built on: bring it to the current one
        if (viewKey(this.view) !== this.pageView) {
          const v = this.view;
          await this.panel.webview.postMessage(v.kind === 'entry' ? { type: 'entry', id: v.id, html: this.lastEntryHtml } : { type: 'matrix' });
        }
      } else if ((raw.action === 'select' || raw.action === 'explain') && typeof raw.id === 'string' && raw.id) {
        await this.show({ kind: 'entry', id: raw.id });
      } else if (raw.action === 'matrix') await this.show({ kind: 'matrix' });
      else await commonAction(raw);
    } catch (e) {
      void vscode.window.showErrorMessage(`ddx: ${e instanceof Error ? e.message : String(e)}`);
    }
  }

  dispose(): void {
    this.panel?.dispose();
    this.renderedEmitter.dispose();
    for (const d of this.disposables) d.dispose();
  }
}

/** Open Catalog and Explain Failure… (an id from a diagnostic's link, else the quick pick). */
export function registerCatalog(ctx: DdxContext): void {
  const { catalog } = ctx;
  ctx.command('ddx.openCatalog', async (id?: unknown) => catalog.open(typeof id === 'string' ? id : undefined));
  ctx.command('ddx.explainFailure', async (id?: unknown) => {
    const pick = typeof id === 'string' ? id : await catalog.pick();
    if (pick) await catalog.open(pick);
    return pick;
  });
}
