// The diagnosis view: one webview panel that shows the latest report.
import * as crypto from 'crypto';
import * as vscode from 'vscode';
import { Diagnosis, Fixes, patchIdOf, Source } from './fixes';
import { describeOp, esc, fixesHtml, FixView, reportHtml } from './view';

export function nonce(): string {
  return crypto.randomBytes(16).toString('base64').replace(/[^A-Za-z0-9]/g, '');
}

/**
 * A ddx webview panel beside the editor: scripts on, kept when hidden, local
 * media only, the ddx icon; onMessage gets what its page posts, onDispose runs
 * when the user closes it.
 */
export function createDdxPanel(
  extensionUri: vscode.Uri,
  viewType: string,
  title: string,
  preserveFocus: boolean,
  onMessage: (m: unknown) => void,
  onDispose: () => void,
  disposables: vscode.Disposable[],
): vscode.WebviewPanel {
  const media = vscode.Uri.joinPath(extensionUri, 'client-vscode', 'media');
  const panel = vscode.window.createWebviewPanel(viewType, title, { viewColumn: vscode.ViewColumn.Two, preserveFocus }, {
    enableScripts: true,
    retainContextWhenHidden: true,
    localResourceRoots: [media],
  });
  panel.iconPath = vscode.Uri.joinPath(media, 'ddx.svg');
  panel.onDidDispose(onDispose, null, disposables);
  panel.webview.onDidReceiveMessage(onMessage, null, disposables);
  return panel;
}

/** A full webview page: no remote content, styles from the extension, one nonce'd script. */
export function pageHtml(webview: vscode.Webview, extensionUri: vscode.Uri, title: string, body: string, script: string): string {
  const n = nonce();
  const css = webview.asWebviewUri(vscode.Uri.joinPath(extensionUri, 'client-vscode', 'media', 'ddx.css'));
  const js = webview.asWebviewUri(vscode.Uri.joinPath(extensionUri, 'client-vscode', 'media', script));
  const csp = [
    "default-src 'none'",
    `style-src ${webview.cspSource}`,
    `img-src ${webview.cspSource}`,
    `font-src ${webview.cspSource}`,
    `script-src 'nonce-${n}'`,
  ].join('; ');
  return `<!DOCTYPE html><html lang="en"><head><meta charset="UTF-8">` +
    `<meta http-equiv="Content-Security-Policy" content="${csp}">` +
    `<meta name="viewport" content="width=device-width, initial-scale=1.0">` +
    `<link rel="stylesheet" href="${css}"><title>${esc(title)}</title></head>` +
    `<body>${body}<script nonce="${n}" src="${js}"></script></body></html>`;
}

export interface WebMessage {
  action?: string;
  line?: string;
  text?: string;
  url?: string;
  id?: string;
  incident?: string;
  fix?: string;
  /** The page a catalog page's `ready` comes from. */
  page?: string;
}

export function isWebMessage(m: unknown): m is WebMessage {
  return typeof m === 'object' && m !== null;
}

/** Opens a log at a 1-based line of a report. */
export async function revealLine(source: Source, line: number): Promise<void> {
  const offset = source.kind === 'document' ? source.lineOffset : 0;
  const doc = await vscode.workspace.openTextDocument(source.uri);
  const l = Math.min(Math.max(0, line - 1 + offset), Math.max(0, doc.lineCount - 1));
  const range = doc.lineAt(l).range;
  const editor = await vscode.window.showTextDocument(doc, { viewColumn: vscode.ViewColumn.One, preview: true, selection: new vscode.Range(range.start, range.end) });
  editor.revealRange(range, vscode.TextEditorRevealType.InCenter);
}

let verifyTerminal: vscode.Terminal | undefined;

export async function runInTerminal(cmd: string): Promise<void> {
  if (!verifyTerminal || verifyTerminal.exitStatus !== undefined) verifyTerminal = vscode.window.createTerminal({ name: 'ddx: verify' });
  verifyTerminal.show(false);
  verifyTerminal.sendText(cmd, true);
}

/** Handles the clicks every ddx webview forwards. Returns true when it knew the action. */
export async function commonAction(m: WebMessage): Promise<boolean> {
  switch (m.action) {
    case 'copy':
      await vscode.env.clipboard.writeText(m.text ?? '');
      vscode.window.setStatusBarMessage('ddx: copied', 2000);
      return true;
    case 'run':
      if (m.text) await runInTerminal(m.text);
      return true;
    case 'open':
      if (m.url && /^(https?|file|vscode):/.test(m.url)) {
        const uri = vscode.Uri.parse(m.url);
        if (uri.scheme === 'file') await vscode.window.showTextDocument(uri, { viewColumn: vscode.ViewColumn.One });
        else await vscode.env.openExternal(uri);
      }
      return true;
    case 'explain':
      if (m.id) await vscode.commands.executeCommand('ddx.openCatalog', m.id);
      return true;
    case 'catalog':
      await vscode.commands.executeCommand('ddx.openCatalog');
      return true;
    default:
      return false;
  }
}

export class DiagnosisPanel implements vscode.Disposable {
  static readonly viewType = 'ddx.diagnosis';
  private panel: vscode.WebviewPanel | undefined;
  private current: Diagnosis | undefined;
  private actions = new Map<number, vscode.CodeAction[]>();
  private generation = 0;
  private readonly disposables: vscode.Disposable[] = [];
  /** Each render: the report (index undefined), then each incident's quick fixes as they load. */
  private readonly renderedEmitter = new vscode.EventEmitter<{ html: string; fixes: number; index?: number }>();
  /** Fires after each render and after the quick fixes arrive (for tests and screenshots). */
  readonly onDidRender = this.renderedEmitter.event;
  lastHtml = '';

  constructor(private readonly extensionUri: vscode.Uri, private readonly fixes: Fixes) {}

  get visible(): boolean {
    return this.panel !== undefined;
  }

  show(d: Diagnosis, preserveFocus = false): void {
    this.current = d;
    this.actions.clear();
    const gen = ++this.generation;
    if (!this.panel) {
      this.panel = createDdxPanel(this.extensionUri, DiagnosisPanel.viewType, 'ddx diagnosis', preserveFocus,
        (m: unknown) => void this.onMessage(m), () => {
          this.panel = undefined;
        }, this.disposables);
    } else {
      this.panel.reveal(undefined, preserveFocus);
    }
    const primary = d.report.incidents[0];
    this.panel.title = primary ? `ddx: ${primary.rule}` : 'ddx: no known failure';
    const src = d.source;
    const file = src.kind === 'virtual' ? 'output' : src.uri.path.split('/').pop();
    const body = reportHtml(d.report, { label: src.label, file, lineOffset: src.kind === 'document' ? src.lineOffset : 0 });
    this.lastHtml = body;
    this.panel.webview.html = pageHtml(this.panel.webview, this.extensionUri, 'ddx diagnosis', body, 'diagnosis.js');
    this.renderedEmitter.fire({ html: body, fixes: 0 });
    d.report.incidents.forEach((inc, i) => {
      if (inc.patches && inc.patches.length) void this.loadFixes(d, i, gen);
    });
  }

  private async loadFixes(d: Diagnosis, index: number, gen: number): Promise<void> {
    let html: string;
    let count = 0;
    try {
      const acts = await this.fixes.resolve(d, index);
      if (gen !== this.generation) return;
      this.actions.set(index, acts);
      const patches = d.report.incidents[index].patches ?? [];
      const views: FixView[] = acts.map((a) => {
        // paired by the patch id the server puts in the action's data, not by its words
        const pid = patchIdOf(a);
        const patch = pid === undefined ? undefined : patches.find((p) => p.id === pid);
        return {
          title: a.title.replace(/^ddx: /, ''),
          disabled: a.disabled?.reason,
          preferred: a.isPreferred === true,
          changes: (patch?.ops ?? []).map((o) => describeOp(o)),
        };
      });
      count = views.filter((v) => !v.disabled).length;
      html = fixesHtml(views, index, views.length ? undefined : 'The server offered no quick fix for this log (is the language server running?).');
    } catch (e) {
      html = fixesHtml([], index, `Could not get the quick fixes: ${e instanceof Error ? e.message : String(e)}`);
    }
    if (gen !== this.generation || !this.panel) return;
    await this.panel.webview.postMessage({ type: 'fixes', index, html });
    this.renderedEmitter.fire({ html, fixes: count, index });
  }

  /** The enabled quick fixes found for an incident of the current diagnosis. */
  fixesFor(index: number): vscode.CodeAction[] {
    return this.actions.get(index) ?? [];
  }

  private async onMessage(raw: unknown): Promise<void> {
    if (!isWebMessage(raw)) return;
    const d = this.current;
    try {
      if (await commonAction(raw)) return;
      if (!d) return;
      if (raw.action === 'reveal' && raw.line) await revealLine(d.source, Number(raw.line));
      else if (raw.action === 'fix') {
        const act = this.actions.get(Number(raw.incident))?.[Number(raw.fix)];
        if (act && (await this.fixes.apply(act))) void this.loadFixes(d, Number(raw.incident), this.generation);
      }
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
