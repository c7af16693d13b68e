// The failure catalog: every id the server knows, a side-by-side webview (list + entry) and the
// "Explain Failure…" quick pick. Entries come from the server (ddx.explain).
import { execFile } from 'child_process';
import * as vscode from 'vscode';
import { CatalogEntry, CatalogItem, isCatalogEntry } from './report';
import { DdxServer } from './server';
import { commonAction, createDdxPanel, isWebMessage, pageHtml } from './panel';
import { catalogEntryHtml, esc } from './view';

function isItemArray(v: unknown): v is CatalogItem[] {
  return Array.isArray(v) && v.every((x) => typeof x === 'object' && x !== null && typeof (x as { id?: unknown }).id === 'string');
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

export class Catalog implements vscode.Disposable {
  private items: CatalogItem[] | undefined;
  private panel: vscode.WebviewPanel | undefined;
  private selected: string | undefined;
  private readonly disposables: vscode.Disposable[] = [];

  constructor(private readonly server: DdxServer, private readonly extensionUri: vscode.Uri) {}

  invalidate(): void {
    this.items = undefined;
  }

  /** Every failure class: from the server's ddx.catalog command when it has one, else `ddx rules list`. */
  async list(): Promise<CatalogItem[]> {
    if (this.items) return this.items;
    await this.server.start();
    if (this.server.hasCommand('ddx.catalog')) {
      const v = await this.server.execute<unknown>('ddx.catalog', []);
      const arr = typeof v === 'object' && v !== null && 'failures' in v ? (v as { failures: unknown }).failures : v;
      if (isItemArray(arr)) return (this.items = arr);
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
    const v = await this.server.execute<unknown>('ddx.explain', [{ id }]);
    if (!isCatalogEntry(v)) throw new Error(`ddx.explain returned no entry for ${id}`);
    return v;
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

  async open(id?: string): Promise<void> {
    const items = await this.list();
    const first = id ?? this.selected ?? items[0]?.id;
    if (!this.panel) {
      this.panel = createDdxPanel(this.extensionUri, 'ddx.catalog', 'ddx: failure catalog', false,
        (m: unknown) => void this.onMessage(m), () => {
          this.panel = undefined;
        }, this.disposables);
      this.panel.webview.html = pageHtml(this.panel.webview, this.extensionUri, 'ddx catalog', this.shell(items), 'catalog.js');
    } else {
      this.panel.reveal();
    }
    if (first) await this.select(first);
  }

  private shell(items: CatalogItem[]): string {
    const groups = new Map<string, CatalogItem[]>();
    for (const i of items) {
      const g = i.id.split('.')[0];
      const arr = groups.get(g) ?? [];
      arr.push(i);
      groups.set(g, arr);
    }
    const nav = [...groups.entries()]
      .map(([g, v]) => `<h4>${esc(g)}</h4>` + v.map((i) =>
        `<button class="item" data-action="select" data-id="${esc(i.id)}" title="${esc(i.title)}" aria-current="false">` +
        `<code>${esc(i.id)}</code><span class="t">${esc(i.title)}</span></button>`).join(''))
      .join('');
    return `<div class="catalog"><nav aria-label="failure classes"><input id="filter" type="search" placeholder="Filter ${items.length} failures" aria-label="Filter the failure classes">${nav}</nav>` +
      `<div id="entry" aria-live="polite"><p class="muted">Pick a failure.</p></div></div>`;
  }

  private async select(id: string): Promise<void> {
    this.selected = id;
    let html: string;
    try {
      html = catalogEntryHtml(await this.explain(id));
    } catch (e) {
      html = `<p>${esc(e instanceof Error ? e.message : String(e))}</p>`;
    }
    if (this.panel) {
      this.panel.title = `ddx catalog: ${id}`;
      await this.panel.webview.postMessage({ type: 'entry', id, html });
    }
  }

  private async onMessage(raw: unknown): Promise<void> {
    if (!isWebMessage(raw)) return;
    try {
      if (raw.action === 'select' && raw.id) await this.select(raw.id);
      else if (raw.action === 'explain' && raw.id) await this.select(raw.id);
      else await commonAction(raw);
    } catch (e) {
      void vscode.window.showErrorMessage(`ddx: ${e instanceof Error ? e.message : String(e)}`);
    }
  }

  dispose(): void {
    this.panel?.dispose();
    for (const d of this.disposables) d.dispose();
  }
}
