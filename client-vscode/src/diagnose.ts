// The diagnose commands: Diagnose Selection (or the whole document), Diagnose Terminal Selection,
// Diagnose Log File… (streamed by the server, with progress and Cancel), Show Last Diagnosis and
// Apply Preferred Fix.
import * as path from 'path';
import * as vscode from 'vscode';
import { ResponseError } from 'vscode-languageclient/node';
import { DdxContext } from './context';
import { Diagnosis, Source } from './fixes';
import { DiagnoseFileError } from './protocol';
import { Report } from './report';
import { machineSetting } from './settings';

/** Applies the server's preferred quick fix of a diagnosis' first incident, or says why none. */
export async function applyPreferredFix(ctx: DdxContext, d: Diagnosis): Promise<boolean> {
  const acts = await ctx.fixes.resolve(d, 0);
  const best = acts.find((a) => a.isPreferred && !a.disabled) ?? acts.find((a) => !a.disabled);
  if (!best) {
    const reason = acts[0]?.disabled?.reason ?? 'the language server offered none';
    const pick = await vscode.window.showWarningMessage(`ddx: no quick fix to apply: ${reason}`, 'Show diagnosis');
    if (pick) ctx.panel.show(d);
    return false;
  }
  return ctx.fixes.apply(best);
}

/** Resolves once `read()` gives `want` (at once when it already does), on configuration changes. */
function settingReads<T>(read: () => T, want: T): Promise<void> {
  if (read() === want) return Promise.resolve();
  return new Promise((resolve) => {
    const sub = vscode.workspace.onDidChangeConfiguration(() => {
      if (read() !== want) return;
      sub.dispose();
      resolve();
    });
  });
}

export function registerDiagnose(ctx: DdxContext): void {
  const { server, logs } = ctx;

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
      (_p, token) => ctx.diagnoseText(text, token),
    );
    const source: Source = { kind: 'document', uri: ed.document.uri, lineOffset: whole ? 0 : sel.start.line, whole, label };
    ctx.publish({ report, source, text, at: new Date() }, report.incidents.length > 0);
    if (!report.incidents.length) ctx.noFailure(whole ? name : 'the selection');
    return report;
  };

  // copySelection + clipboard, the clipboard restored after
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
    const report = await ctx.diagnoseText(text);
    ctx.publish({ report, source: { kind: 'virtual', uri, label: `terminal "${term.name}" selection` }, at: new Date() }, report.incidents.length > 0);
    if (!report.incidents.length) ctx.noFailure('the terminal selection');
    return report;
  };

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
          return ctx.diagnoseFile(target, token, {
            report: (message, pct) => {
              const inc = pct !== undefined && pct > lastPct ? pct - lastPct : undefined;
              if (pct !== undefined && pct > lastPct) lastPct = pct;
              progress.report({ message, increment: inc });
            },
          });
        },
      );
    let report: Report;
    try {
      report = await run();
    } catch (e) {
      // the server says why in error.data (server/lsp/commands.c), not only in words
      if (!(e instanceof ResponseError) || (e.data as DiagnoseFileError | undefined)?.reason !== 'outsideWorkspace') throw e;
      const pick = await vscode.window.showWarningMessage(`ddx: ${label} is outside the workspace folders.`, 'Allow and Diagnose');
      if (pick !== 'Allow and Diagnose') return undefined;
      const allowed = (): boolean => machineSetting<unknown>('diagnoseFile.allowOutsideWorkspace') === true;
      await vscode.workspace.getConfiguration('ddx').update('diagnoseFile.allowOutsideWorkspace', true, vscode.ConfigurationTarget.Global);
      // the extension reads the new value, then the server gets it before the request that needs it
      await settingReads(allowed, true);
      await server.sendSettings();
      report = await run();
    }
    ctx.publish({ report, source: { kind: 'file', uri: target, label }, at: new Date() }, report.incidents.length > 0);
    if (!report.incidents.length) ctx.noFailure(label);
    return report;
  };

  ctx.command('ddx.diagnoseSelection', diagnoseSelection);
  ctx.command('ddx.diagnoseTerminalSelection', diagnoseTerminalSelection);
  ctx.command('ddx.diagnoseLogFile', diagnoseLogFile);
  ctx.command('ddx.showLastDiagnosis', () => {
    if (ctx.last) ctx.panel.show(ctx.last);
    else void vscode.window.showInformationMessage('ddx: no diagnosis yet. Open a log, or run ddx: Diagnose Selection.');
  });
  ctx.command('ddx.applyPreferredFix', async () => (ctx.last ? applyPreferredFix(ctx, ctx.last) : false));
}
