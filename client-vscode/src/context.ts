// The one context object every feature registers itself with: the shared services (output, the
// language server, the diagnosis view, the catalog), the last diagnosis, and the helpers the
// commands share (publish a diagnosis, guard a command, diagnose a text).
import * as vscode from 'vscode';
import { Catalog } from './catalog';
import { Diagnosis, Fixes } from './fixes';
import { LogStore } from './logstore';
import { DiagnosisPanel } from './panel';
import { DiagnoseFileRequest, DiagnoseTextRequest, REQUEST_CANCELLED } from './protocol';
import { Report } from './report';
import { DdxServer, ProgressSink } from './server';
import { IgnoredSettings } from './settings';

/** A cancelled request (by the user's Cancel, or the server's reply): not an error to show. */
export function isCancellation(e: unknown): boolean {
  if (e instanceof vscode.CancellationError) return true;
  return typeof e === 'object' && e !== null && (e as { code?: unknown }).code === REQUEST_CANCELLED;
}

export class DdxContext implements vscode.Disposable {
  readonly output: vscode.LogOutputChannel;
  readonly ignored: IgnoredSettings;
  readonly server: DdxServer;
  readonly logs: LogStore;
  readonly fixes: Fixes;
  readonly panel: DiagnosisPanel;
  readonly catalog: Catalog;
  private readonly diagnosedEmitter = new vscode.EventEmitter<Diagnosis>();
  /** Fires after each diagnosis is published (the status bar, the API). */
  readonly onDidDiagnose = this.diagnosedEmitter.event;
  private lastDiagnosis: Diagnosis | undefined;

  constructor(readonly ext: vscode.ExtensionContext) {
    this.output = vscode.window.createOutputChannel('ddx', { log: true });
    this.ignored = new IgnoredSettings(this.output);
    this.server = new DdxServer(ext, this.output, this.ignored.notice);
    this.logs = new LogStore();
    this.fixes = new Fixes(this.logs, this.server);
    this.panel = new DiagnosisPanel(ext.extensionUri, this.fixes);
    this.catalog = new Catalog(this.server, ext.extensionUri);
    this.register(this.output, this.server, this.logs, this.panel, this.catalog, this.diagnosedEmitter);
  }

  /** Disposed with the extension. */
  register(...d: vscode.Disposable[]): void {
    this.ext.subscriptions.push(...d);
  }

  /** A command whose errors are shown (a cancellation is not) instead of thrown. */
  command<A extends unknown[], R>(name: string, fn: (...a: A) => Promise<R> | R): void {
    this.register(vscode.commands.registerCommand(name, this.guard(fn)));
  }

  guard<A extends unknown[], R>(fn: (...a: A) => Promise<R> | R): (...a: A) => Promise<R | undefined> {
    return async (...a: A) => {
      try {
        return await fn(...a);
      } catch (e) {
        this.errorOut(e);
        return undefined;
      }
    };
  }

  errorOut(e: unknown): void {
    if (isCancellation(e)) return;
    void vscode.window.showErrorMessage(`ddx: ${e instanceof Error ? e.message : String(e)}`);
  }

  get last(): Diagnosis | undefined {
    return this.lastDiagnosis;
  }

  publish(d: Diagnosis, showPanel: boolean): void {
    this.lastDiagnosis = d;
    this.diagnosedEmitter.fire(d);
    if (showPanel) this.panel.show(d);
  }

  noFailure(label: string): void {
    void vscode.window.showInformationMessage(`ddx: no known failure in ${label}.`, 'Open Catalog').then((p) => {
      if (p) void vscode.commands.executeCommand('ddx.openCatalog');
    });
  }

  diagnoseText(text: string, token?: vscode.CancellationToken): Promise<Report> {
    return this.server.request(DiagnoseTextRequest, { command: 'ddx.diagnoseText', arguments: [{ text }] }, token);
  }

  /** ddx.diagnoseFile: the server streams the file on its thread pool (progress, Cancel). */
  diagnoseFile(uri: vscode.Uri, token?: vscode.CancellationToken, progress?: ProgressSink): Promise<Report> {
    return this.server.request(DiagnoseFileRequest, { command: 'ddx.diagnoseFile', arguments: [{ uri: uri.toString() }] }, token, progress);
  }

  dispose(): void {
    /* the registered disposables go with ext.subscriptions */
  }
}
