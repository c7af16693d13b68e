// Terminal links on known failure lines: a small, fast local marker list decides which lines are
// links (a link provider runs on every rendered line); activating one asks the language server
// (ddx.diagnoseText) for the real diagnosis of the line with the terminal's recent output.
import * as vscode from 'vscode';
import type { DdxContext } from './context';
import { failureLinkIn, textAroundLine } from './terminal-lines';
import type { Report } from './report';
import type { TerminalWatcher } from './terminal';

/** A terminal link on a known failure line. */
interface FailureLink extends vscode.TerminalLink {
  line: string;
  terminal: vscode.Terminal;
}

/** What a link on `line` (in `terminal`, or none) does: diagnose it and show the view. */
export type DiagnoseTerminalLine = (line: string, terminal?: vscode.Terminal) => Promise<Report | undefined>;

export function registerTerminalLinks(ctx: DdxContext, watcher: TerminalWatcher): DiagnoseTerminalLine {
  const diagnoseTerminalLine: DiagnoseTerminalLine = async (line, terminal) => {
    const text = textAroundLine(line, terminal ? watcher.recentOutput(terminal) : undefined);
    const name = terminal?.name ?? 'terminal';
    const report = await vscode.window.withProgress(
      { location: vscode.ProgressLocation.Window, title: 'ddx: diagnosing…' },
      (_p, token) => ctx.diagnoseText(text, token),
    );
    const uri = ctx.logs.add('terminal', `${name}-link`, text);
    ctx.publish({ report, source: { kind: 'virtual', uri, label: `terminal "${name}"` }, at: new Date() }, report.incidents.length > 0);
    if (!report.incidents.length) ctx.noFailure('the terminal line');
    return report;
  };
  const provider: vscode.TerminalLinkProvider<FailureLink> = {
    provideTerminalLinks: (context) => {
      const m = failureLinkIn(context.line);
      if (!m) return [];
      return [{ startIndex: m.startIndex, length: m.length, tooltip: `ddx: diagnose this failure (${m.what})`, line: context.line, terminal: context.terminal }];
    },
    handleTerminalLink: (link) => {
      void ctx.guard(diagnoseTerminalLine)(link.line, link.terminal);
    },
  };
  ctx.register(vscode.window.registerTerminalLinkProvider(provider));
  return diagnoseTerminalLine;
}
