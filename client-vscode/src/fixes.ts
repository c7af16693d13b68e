// ds_config.json quick fixes: the code actions the language server computes for a log diagnostic,
// asked of the ddx server itself (textDocument/codeAction: every action is ddx's, no title to
// match) and applied as WorkspaceEdits (so Undo works).
import * as fs from 'fs';
import * as vscode from 'vscode';
import { CodeActionRequest } from 'vscode-languageclient/node';
import { Incident, Report } from './report';
import { LogStore } from './logstore';
import { DdxServer, documentSelector } from './server';

/** Where a report's lines live. */
export type Source =
  | { kind: 'document'; uri: vscode.Uri; lineOffset: number; whole: boolean; label: string }
  | { kind: 'file'; uri: vscode.Uri; label: string }
  | { kind: 'virtual'; uri: vscode.Uri; label: string };

export interface Diagnosis {
  report: Report;
  source: Source;
  /** The text that was diagnosed, when it is not a whole file (for the quick fixes). */
  text?: string;
  at: Date;
}

/** The most a file may weigh for the quick fixes to open it (VS Code syncs up to 50 MB). */
const OPEN_MAX_BYTES = 32 * 1024 * 1024;

export function codeOf(d: vscode.Diagnostic): string | undefined {
  const c = d.code;
  if (c === undefined) return undefined;
  if (typeof c === 'object') return String(c.value);
  return String(c);
}

/** Resolves when the document has ddx diagnostics (or after `timeoutMs`). */
export async function waitForDdxDiagnostics(uri: vscode.Uri, timeoutMs: number, rule?: string): Promise<vscode.Diagnostic[]> {
  const has = (): vscode.Diagnostic[] =>
    vscode.languages.getDiagnostics(uri).filter((d) => d.source === 'ddx' && (rule === undefined || codeOf(d) === rule));
  const now = has();
  if (now.length) return now;
  return new Promise((resolve) => {
    const timer = setTimeout(() => {
      sub.dispose();
      resolve(has());
    }, timeoutMs);
    const sub = vscode.languages.onDidChangeDiagnostics((e) => {
      if (!e.uris.some((u) => u.toString() === uri.toString())) return;
      const d = has();
      if (d.length) {
        clearTimeout(timer);
        sub.dispose();
        resolve(d);
      }
    });
  });
}

/**
 * The id of the rule's config patch a ddx quick fix applies: the server sends it as the code
 * action's data.patch (server/lsp/actions.c), which vscode-languageclient keeps on the action.
 */
export function patchIdOf(a: vscode.CodeAction): string | undefined {
  const data = (a as vscode.CodeAction & { data?: unknown }).data;
  if (typeof data !== 'object' || data === null) return undefined;
  const id = (data as { patch?: unknown }).patch;
  return typeof id === 'string' ? id : undefined;
}

export class Fixes {
  private readonly excerpts = new WeakMap<Diagnosis, vscode.Uri>();

  constructor(
    private readonly logs: LogStore,
    private readonly server: DdxServer,
  ) {}

  /** The open log document (and 0-based line) where the server knows this incident. */
  private async location(d: Diagnosis, inc: Incident): Promise<{ uri: vscode.Uri; line: number } | undefined> {
    const line = Math.max(0, (inc.line ?? 1) - 1);
    const src = d.source;
    if (src.kind === 'virtual') return { uri: src.uri, line };
    if (src.kind === 'document' && src.whole) {
      const doc = vscode.workspace.textDocuments.find((t) => t.uri.toString() === src.uri.toString());
      if (doc && vscode.languages.match(documentSelector, doc) > 0) return { uri: src.uri, line };
    }
    if (src.kind === 'file') {
      let size = Infinity;
      try {
        size = fs.statSync(src.uri.fsPath).size;
      } catch {
        /* not a local file */
      }
      if (size <= OPEN_MAX_BYTES) return { uri: src.uri, line };
      // Too big to open: the server diagnoses an excerpt with the initiating line.
      if (!inc.text) return undefined;
      return { uri: this.logs.add('excerpt', src.label, `${inc.text}\n`), line: 0 };
    }
    if (d.text === undefined) return undefined;
    let uri = this.excerpts.get(d);
    if (!uri) {
      uri = this.logs.add('selection', src.label, d.text);
      this.excerpts.set(d, uri);
    }
    return { uri, line };
  }

  /** The server's quick fixes (enabled and disabled ones) for one incident of a diagnosis. */
  async resolve(d: Diagnosis, index: number): Promise<vscode.CodeAction[]> {
    const inc = d.report.incidents[index];
    if (!inc || !inc.patches || inc.patches.length === 0) return [];
    const loc = await this.location(d, inc);
    if (!loc) return [];
    const doc = await vscode.workspace.openTextDocument(loc.uri);
    // The server has the document once it published its diagnostics: the request comes after.
    const diags = await waitForDdxDiagnostics(loc.uri, 10000, inc.rule);
    const line = Math.min(loc.line, Math.max(0, doc.lineCount - 1));
    const range = doc.lineAt(line).range;
    if (!(await this.server.start()) || !this.server.client) return [];
    const client = this.server.client;
    const c2p = client.code2ProtocolConverter;
    const result = await client.sendRequest(CodeActionRequest.type, {
      textDocument: c2p.asTextDocumentIdentifier(doc),
      range: c2p.asRange(range),
      context: {
        diagnostics: await c2p.asDiagnostics(diags.filter((d) => d.range.intersection(range) !== undefined)),
        only: [vscode.CodeActionKind.QuickFix.value],
        triggerKind: vscode.CodeActionTriggerKind.Invoke,
      },
    });
    const actions = (await client.protocol2CodeConverter.asCodeActionResult(result ?? [])) ?? [];
    return actions.filter((a): a is vscode.CodeAction => {
      if (!(a instanceof vscode.CodeAction)) return false;
      const diags = a.diagnostics;
      return !diags || diags.length === 0 || diags.some((x) => codeOf(x) === inc.rule);
    });
  }

  /** Applies a quick fix as the editor would, then shows the changed config. */
  async apply(action: vscode.CodeAction, reveal = true): Promise<boolean> {
    if (action.disabled) {
      void vscode.window.showWarningMessage(`ddx: ${action.title.replace(/^ddx: /, '')} is not available: ${action.disabled.reason}`);
      return false;
    }
    let ok = true;
    if (action.edit) ok = await vscode.workspace.applyEdit(action.edit);
    if (ok && action.command) await vscode.commands.executeCommand(action.command.command, ...(action.command.arguments ?? []));
    if (!ok) {
      void vscode.window.showErrorMessage(`ddx: could not apply "${action.title}" (the config changed meanwhile? diagnose again).`);
      return false;
    }
    const first = action.edit?.entries()[0];
    if (reveal && first) {
      const [uri, edits] = first;
      const doc = await vscode.workspace.openTextDocument(uri);
      const at = edits[0]?.range.start ?? new vscode.Position(0, 0);
      await vscode.window.showTextDocument(doc, { viewColumn: vscode.ViewColumn.One, preview: false, selection: new vscode.Range(at, at) });
    }
    return true;
  }
}
