// ddx for VS Code: runs `ddx lsp`, and adds Diagnose Selection / Terminal Selection / Log File,
// failed-command notifications, the diagnosis view and the failure catalog.
import * as path from 'path';
import * as vscode from 'vscode';
import { State } from 'vscode-languageclient/node';
import { Catalog } from './catalog';
import { Diagnosis, Fixes, Source } from './fixes';
import { LOG_SCHEME, LogStore } from './logstore';
import { DiagnosisPanel } from './panel';
import { incidentHeadline, isReport, Report } from './report';
import { DdxServer } from './server';
import { IgnoredSettings } from './settings';
import { FailedCommand, TerminalWatcher } from './terminal';

/** What the extension returns from activate(): used by its tests, usable by other extensions. */
export interface DdxApi {
  readonly server: DdxServer;
  readonly panel: DiagnosisPanel;
  readonly fixes: Fixes;
  readonly catalog: Catalog;
  /** Fires when a failed terminal command was diagnosed (and tells what the notification said). */
  readonly onDidDiagnoseTerminal: vscode.Event<{ command: FailedCommand; report: Report; message: string | undefined }>;
  readonly onDidDiagnose: vscode.Event<Diagnosis>;
  lastDiagnosis(): Diagnosis | undefined;
  diagnoseText(text: string, label?: string): Promise<Report>;
  /** The machine settings (ddx.server.path, ...) whose workspace value was ignored, with a notice. */
  ignoredSettings(): string[];
}

const STATUS_IDLE = '$(pulse) ddx';

export function activate(ctx: vscode.ExtensionContext): DdxApi {
  const output = vscode.window.createOutputChannel('ddx', { log: true });
  const ignored = new IgnoredSettings(output);
  const server = new DdxServer(ctx, output, ignored.notice);
  const logs = new LogStore();
  const fixes = new Fixes(logs);
  const panel = new DiagnosisPanel(ctx.extensionUri, fixes);
  const catalog = new Catalog(server, ctx.extensionUri);
  const terminalEmitter = new vscode.EventEmitter<{ command: FailedCommand; report: Report; message: string | undefined }>();
  const diagnosedEmitter = new vscode.EventEmitter<Diagnosis>();
  let last: Diagnosis | undefined;

  const status = vscode.window.createStatusBarItem('ddx.status', vscode.StatusBarAlignment.Left, 20);
  status.name = 'ddx';
  status.command = 'ddx.showLastDiagnosis';
  const updateStatus = (): void => {
    const primary = last?.report.incidents[0];
    if (!server.running && server.lastError) {
      status.text = '$(error) ddx: no server';
      status.tooltip = `${server.lastError}\nClick to show the ddx log.`;
      status.command = 'ddx.showOutput';
      status.backgroundColor = new vscode.ThemeColor('statusBarItem.errorBackground');
    } else if (primary) {
      status.text = `$(${primary.severity === 'error' ? 'error' : 'warning'}) ${incidentHeadline(primary)}`;
      // The label and the title come from a log and a rule pack: text, not Markdown.
      const md = new vscode.MarkdownString('**ddx — last diagnosis** (')
        .appendText(last?.source.label ?? '')
        .appendMarkdown(')\n\n')
        .appendText(primary.title)
        .appendMarkdown('\n\nClick to show the diagnosis.');
      status.tooltip = md;
      status.command = 'ddx.showLastDiagnosis';
      status.backgroundColor = undefined;
    } else {
      const st = server.client?.state;
      status.text = st === State.Starting ? '$(sync~spin) ddx' : STATUS_IDLE;
      status.tooltip = server.running
        ? `ddx language server running (${server.binary?.path ?? ''})${last ? '\nLast diagnosis: no known failure.' : ''}`
        : 'ddx language server not started yet';
      status.command = last ? 'ddx.showLastDiagnosis' : 'ddx.showOutput';
      status.backgroundColor = undefined;
    }
    status.show();
  };
  server.onDidChangeState(updateStatus);
  updateStatus();

  const diagnoseText = async (text: string, token?: vscode.CancellationToken): Promise<Report> => {
    const v = await server.execute<unknown>('ddx.diagnoseText', [{ text }], token);
    if (!isReport(v)) throw new Error('ddx.diagnoseText returned no report');
    return v;
  };

  const publish = (d: Diagnosis, showPanel: boolean): void => {
    last = d;
    updateStatus();
    diagnosedEmitter.fire(d);
    if (showPanel) panel.show(d);
  };

  const noFailure = (label: string): void => {
    void vscode.window.showInformationMessage(`ddx: no known failure in ${label}.`, 'Open Catalog').then((p) => {
      if (p) void vscode.commands.executeCommand('ddx.openCatalog');
    });
  };

  const errorOut = (e: unknown): void => {
    const msg = e instanceof Error ? e.message : String(e);
    if (/cancel/i.test(msg)) return;
    void vscode.window.showErrorMessage(`ddx: ${msg}`);
  };

  // --- Diagnose Selection (or the whole document)
  const diagnoseSelection = async (): Promise<Report | undefined> => {
    const ed = vscode.window.activeTextEditor;
    if (!ed) {
      void vscode.window.showWarningMessage('ddx: open a log (or select a traceback) first.');
      return undefined;
    }
    const sel = ed.selection;
    const whole = sel.isEmpty;
    const text = whole ? ed.document.getText() : ed.document.getText(sel);
    if (!text.trim()) {
      void vscode.window.showWarningMessage('ddx: nothing to diagnose: the selection is empty.');
      return undefined;
    }
    const name = path.basename(ed.document.uri.path) || 'untitled';
    const label = whole ? name : `${name}, lines ${sel.start.line + 1}-${sel.end.line + 1}`;
    const report = await vscode.window.withProgress(
      { location: vscode.ProgressLocation.Window, title: 'ddx: diagnosing…' },
      () => diagnoseText(text),
    );
    const source: Source = { kind: 'document', uri: ed.document.uri, lineOffset: whole ? 0 : sel.start.line, whole, label };
    publish({ report, source, text, at: new Date() }, report.incidents.length > 0);
    if (!report.incidents.length) noFailure(whole ? name : 'the selection');
    return report;
  };

  // --- Diagnose Terminal Selection: copySelection + clipboard, the clipboard restored after
  const diagnoseTerminalSelection = async (): Promise<Report | undefined> => {
    const term = vscode.window.activeTerminal;
    if (!term) {
      void vscode.window.showWarningMessage('ddx: no active terminal.');
      return undefined;
    }
    const saved = await vscode.env.clipboard.readText();
    let text = '';
    try {
      await vscode.env.clipboard.writeText('');
      await vscode.commands.executeCommand('workbench.action.terminal.copySelection');
      text = await vscode.env.clipboard.readText();
    } finally {
      await vscode.env.clipboard.writeText(saved);
    }
    if (!text.trim()) {
      void vscode.window.showWarningMessage('ddx: select the failure in the terminal first (drag over it), then run Diagnose Terminal Selection.');
      return undefined;
    }
    const uri = logs.add('terminal', `${term.name}-selection`, text);
    const report = await diagnoseText(text);
    publish({ report, source: { kind: 'virtual', uri, label: `terminal "${term.name}" selection` }, at: new Date() }, report.incidents.length > 0);
    if (!report.incidents.length) noFailure('the terminal selection');
    return report;
  };

  // --- Diagnose Log File…: streamed by the server, with progress and Cancel
  const diagnoseLogFile = async (arg?: vscode.Uri): Promise<Report | undefined> => {
    let uri = arg instanceof vscode.Uri ? arg : undefined;
    if (!uri) {
      const picked = await vscode.window.showOpenDialog({
        canSelectMany: false,
        openLabel: 'Diagnose',
        title: 'ddx: Diagnose Log File',
        filters: { 'Training logs': ['log', 'out', 'err', 'txt'], 'All files': ['*'] },
      });
      uri = picked?.[0];
    }
    if (!uri) return undefined;
    const target = uri;
    const label = path.basename(target.path);
    const run = (): Thenable<Report> =>
      vscode.window.withProgress(
        { location: vscode.ProgressLocation.Notification, title: `ddx: diagnosing ${label}`, cancellable: true },
        async (progress, token) => {
          let lastPct = 0;
          const v = await server.execute<unknown>('ddx.diagnoseFile', [{ uri: target.toString() }], token, {
            report: (message, pct) => {
              const inc = pct !== undefined && pct > lastPct ? pct - lastPct : undefined;
              if (pct !== undefined && pct > lastPct) lastPct = pct;
              progress.report({ message, increment: inc });
            },
          });
          if (!isReport(v)) throw new Error('ddx.diagnoseFile returned no report');
          return v;
        },
      );
    let report: Report;
    try {
      report = await run();
    } catch (e) {
      const msg = e instanceof Error ? e.message : String(e);
      if (/outside the workspace folders/.test(msg)) {
        const pick = await vscode.window.showWarningMessage(`ddx: ${label} is outside the workspace folders.`, 'Allow and Diagnose');
        if (pick !== 'Allow and Diagnose') return undefined;
        await vscode.workspace.getConfiguration('ddx').update('diagnoseFile.allowOutsideWorkspace', true, vscode.ConfigurationTarget.Global);
        await new Promise((r) => setTimeout(r, 300)); // the server gets the setting first
        report = await run();
      } else throw e;
    }
    publish({ report, source: { kind: 'file', uri: target, label }, at: new Date() }, report.incidents.length > 0);
    if (!report.incidents.length) noFailure(label);
    return report;
  };

  // --- Failed terminal commands
  const onFailed = async (c: FailedCommand): Promise<Report | undefined> => {
    let report: Report;
    try {
      report = await diagnoseText(c.text);
    } catch (e) {
      output.warn(`could not diagnose the output of "${c.commandLine}": ${e instanceof Error ? e.message : String(e)}`);
      return undefined;
    }
    const primary = report.incidents[0];
    if (!primary || primary.severity !== 'error') {
      terminalEmitter.fire({ command: c, report, message: undefined });
      return report;
    }
    const uri = logs.add('terminal', c.commandLine || c.terminal.name, c.text);
    const cmd = c.commandLine.length > 60 ? `${c.commandLine.slice(0, 57)}…` : c.commandLine;
    const d: Diagnosis = { report, source: { kind: 'virtual', uri, label: `\`${cmd}\` (exit ${c.exitCode})` }, at: new Date() };
    publish(d, false);
    const message = `${incidentHeadline(primary)} — ${primary.title}`;
    const buttons = ['Show diagnosis'];
    if (primary.patches && primary.patches.length) buttons.push('Apply fix');
    output.info(`terminal: \`${c.commandLine}\` exited with ${c.exitCode}: ${incidentHeadline(primary)}`);
    terminalEmitter.fire({ command: c, report, message });
    void vscode.window.showErrorMessage(`ddx: ${message}`, ...buttons).then(async (pick) => {
      try {
        if (pick === 'Show diagnosis') panel.show(d);
        else if (pick === 'Apply fix') await applyPreferredFix(d);
      } catch (e) {
        errorOut(e);
      }
    });
    return report;
  };

  const applyPreferredFix = async (d: Diagnosis): Promise<boolean> => {
    const acts = await fixes.resolve(d, 0);
    const best = acts.find((a) => a.isPreferred && !a.disabled) ?? acts.find((a) => !a.disabled);
    if (!best) {
      const reason = acts[0]?.disabled?.reason ?? 'the language server offered none';
      const pick = await vscode.window.showWarningMessage(`ddx: no quick fix to apply: ${reason}`, 'Show diagnosis');
      if (pick) panel.show(d);
      return false;
    }
    return fixes.apply(best);
  };

  const watcher = new TerminalWatcher(onFailed, output);
  // A workspace value of a machine setting never reaches the extension: its files tell.
  const settingsWatcher = vscode.workspace.createFileSystemWatcher('**/.vscode/settings.json');

  const guard = <A extends unknown[], R>(fn: (...a: A) => Promise<R>) => async (...a: A): Promise<R | undefined> => {
    try {
      return await fn(...a);
    } catch (e) {
      errorOut(e);
      return undefined;
    }
  };

  ctx.subscriptions.push(
    output,
    server,
    logs,
    panel,
    catalog,
    watcher,
    status,
    terminalEmitter,
    diagnosedEmitter,
    vscode.workspace.registerTextDocumentContentProvider(LOG_SCHEME, logs),
    settingsWatcher,
    settingsWatcher.onDidCreate(() => void ignored.checkWorkspaceFiles()),
    settingsWatcher.onDidChange(() => void ignored.checkWorkspaceFiles()),
    vscode.commands.registerCommand('ddx.diagnoseSelection', guard(diagnoseSelection)),
    vscode.commands.registerCommand('ddx.diagnoseTerminalSelection', guard(diagnoseTerminalSelection)),
    vscode.commands.registerCommand('ddx.diagnoseLogFile', guard(diagnoseLogFile)),
    vscode.commands.registerCommand('ddx.showLastDiagnosis', () => {
      if (last) panel.show(last);
      else void vscode.window.showInformationMessage('ddx: no diagnosis yet. Open a log, or run ddx: Diagnose Selection.');
    }),
    vscode.commands.registerCommand('ddx.applyPreferredFix', guard(async () => (last ? applyPreferredFix(last) : false))),
    vscode.commands.registerCommand('ddx.openCatalog', guard(async (id?: unknown) => catalog.open(typeof id === 'string' ? id : undefined))),
    vscode.commands.registerCommand('ddx.explainFailure', guard(async (id?: unknown) => {
      const pick = typeof id === 'string' ? id : await catalog.pick();
      if (pick) await catalog.open(pick);
      return pick;
    })),
    vscode.commands.registerCommand('ddx.restartServer', guard(async () => {
      catalog.invalidate();
      return server.restart();
    })),
    vscode.commands.registerCommand('ddx.showOutput', () => output.show(true)),
    vscode.workspace.onDidChangeConfiguration((e) => {
      if (e.affectsConfiguration('ddx')) void ignored.checkWorkspaceFiles();
      if (e.affectsConfiguration('ddx.server.path')) {
        catalog.invalidate();
        void server.restart();
      } else if (e.affectsConfiguration('ddx.rules.extraPaths')) catalog.invalidate();
    }),
  );

  void ignored.checkWorkspaceFiles();
  void server.start();

  return {
    server,
    panel,
    fixes,
    catalog,
    onDidDiagnoseTerminal: terminalEmitter.event,
    onDidDiagnose: diagnosedEmitter.event,
    lastDiagnosis: () => last,
    diagnoseText: (text: string) => diagnoseText(text),
    ignoredSettings: () => ignored.ignored,
  };
}

export function deactivate(): void {
  /* the subscriptions stop the client */
}
