// ddx for VS Code: runs `ddx lsp`, and adds Diagnose Selection / Terminal Selection / Log File,
// failed-command notifications, terminal links, the diagnosis view, the failure catalog and the
// walkthrough. activate() builds one context object; each feature registers itself with it.
import * as vscode from 'vscode';
import { Catalog, registerCatalog } from './catalog';
import { DdxContext } from './context';
import { registerDiagnose } from './diagnose';
import { Diagnosis, Fixes } from './fixes';
import { registerLifecycle } from './lifecycle';
import { DiagnosisPanel } from './panel';
import { ProgressSink } from './server';
import { Report } from './report';
import { DdxServer } from './server';
import { registerStatus } from './status';
import { registerTerminal, TerminalDiagnosis } from './terminal';
import { registerTerminalLinks } from './terminal-links';
import { registerWalkthrough } from './walkthrough';

/** What the extension returns from activate(): used by its tests, usable by other extensions. */
export interface DdxApi {
  readonly server: DdxServer;
  readonly panel: DiagnosisPanel;
  readonly fixes: Fixes;
  readonly catalog: Catalog;
  /** Fires when a failed terminal command was diagnosed (and tells what the notification said). */
  readonly onDidDiagnoseTerminal: vscode.Event<TerminalDiagnosis>;
  readonly onDidDiagnose: vscode.Event<Diagnosis>;
  lastDiagnosis(): Diagnosis | undefined;
  diagnoseText(text: string, label?: string): Promise<Report>;
  /** ddx.diagnoseFile, streamed by the server (progress, Cancel). */
  diagnoseFile(uri: vscode.Uri, token?: vscode.CancellationToken, progress?: ProgressSink): Promise<Report>;
  /** The machine settings (ddx.server.path, ...) whose workspace value was ignored, with a notice. */
  ignoredSettings(): string[];
  /** What a terminal link on `line` (in `terminal`, or none) does: diagnose it, show the view. */
  diagnoseTerminalLine(line: string, terminal?: vscode.Terminal): Promise<Report | undefined>;
  /** The bundled example log (the walkthrough opens it). */
  readonly exampleUri: vscode.Uri;
}

export function activate(ext: vscode.ExtensionContext): DdxApi {
  const ctx = new DdxContext(ext);
  registerStatus(ctx);
  registerDiagnose(ctx);
  registerCatalog(ctx);
  const terminal = registerTerminal(ctx);
  const diagnoseTerminalLine = registerTerminalLinks(ctx, terminal.watcher);
  const exampleUri = registerWalkthrough(ctx);
  registerLifecycle(ctx); // last: starts the server
  return {
    server: ctx.server,
    panel: ctx.panel,
    fixes: ctx.fixes,
    catalog: ctx.catalog,
    onDidDiagnoseTerminal: terminal.onDidDiagnoseTerminal,
    onDidDiagnose: ctx.onDidDiagnose,
    lastDiagnosis: () => ctx.last,
    diagnoseText: (text: string) => ctx.diagnoseText(text),
    diagnoseFile: (uri, token, progress) => ctx.diagnoseFile(uri, token, progress),
    ignoredSettings: () => ctx.ignored.ignored,
    diagnoseTerminalLine,
    exampleUri,
  };
}

export function deactivate(): void {
  /* the subscriptions stop the client */
}
