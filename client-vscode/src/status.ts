// The status bar item: the server's state, or the last diagnosis.
import * as vscode from 'vscode';
import { State } from 'vscode-languageclient/node';
import { DdxContext } from './context';
import { incidentHeadline } from './report';

const STATUS_IDLE = '$(pulse) ddx';

export function registerStatus(ctx: DdxContext): void {
  const { server } = ctx;
  const status = vscode.window.createStatusBarItem('ddx.status', vscode.StatusBarAlignment.Left, 20);
  status.name = 'ddx';
  status.command = 'ddx.showLastDiagnosis';
  const update = (): void => {
    const last = ctx.last;
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
  ctx.register(status, server.onDidChangeState(update), ctx.onDidDiagnose(update));
  update();
}
