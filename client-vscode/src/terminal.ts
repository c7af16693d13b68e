// Failed terminal commands: with shell integration each command's output is read while it runs
// (bounded), and when it exits non-zero the output is diagnosed and a notification tells.
import * as vscode from 'vscode';
import { DdxContext } from './context';
import { applyPreferredFix } from './diagnose';
import { Diagnosis } from './fixes';
import { BoundedText, stripTerminalEscapes } from './logstore';
import { incidentHeadline, Report } from './report';
import { autoDiagnoseTerminal, terminalMaxBytes } from './settings';

export interface FailedCommand {
  commandLine: string;
  exitCode: number;
  text: string;
  terminal: vscode.Terminal;
}

interface Reading {
  buf: BoundedText;
  done: Promise<void>;
}

async function copyLastCommandOutput(): Promise<string> {
  let saved: string | undefined;
  try {
    saved = await vscode.env.clipboard.readText();
    await vscode.env.clipboard.writeText('');
    await vscode.commands.executeCommand('workbench.action.terminal.copyLastCommandOutput');
    return await vscode.env.clipboard.readText();
  } catch {
    return '';
  } finally {
    if (saved !== undefined) await vscode.env.clipboard.writeText(saved);
  }
}

export class TerminalWatcher implements vscode.Disposable {
  private readonly readings = new Map<vscode.TerminalShellExecution, Reading>();
  /** Each terminal's running or last command output (what a terminal link's diagnosis reads). */
  private readonly latest = new Map<vscode.Terminal, BoundedText>();
  private readonly disposables: vscode.Disposable[] = [];

  constructor(
    private readonly onFailed: (c: FailedCommand) => Promise<Report | undefined>,
    private readonly log: vscode.LogOutputChannel,
  ) {
    // Both events are stable from VS Code 1.93; guard for hosts that lack them.
    if (typeof vscode.window.onDidStartTerminalShellExecution !== 'function') return;
    this.disposables.push(
      vscode.window.onDidStartTerminalShellExecution((e) => this.start(e)),
      vscode.window.onDidEndTerminalShellExecution((e) => void this.end(e)),
      vscode.window.onDidCloseTerminal((t) => this.latest.delete(t)),
    );
  }

  private start(e: vscode.TerminalShellExecutionStartEvent): void {
    this.log.debug(`terminal: \`${e.execution.commandLine.value}\` started`);
    if (!autoDiagnoseTerminal()) return;
    const buf = new BoundedText(terminalMaxBytes());
    // read() only yields what is written after the call: call it now, at the start.
    const stream = e.execution.read();
    const done = (async () => {
      try {
        for await (const chunk of stream) buf.push(chunk);
      } catch {
        /* the terminal went away */
      }
    })();
    this.readings.set(e.execution, { buf, done });
    this.latest.set(e.terminal, buf);
  }

  /** The output of the terminal's running or last command, as read (escapes removed), if any. */
  recentOutput(t: vscode.Terminal): string | undefined {
    const b = this.latest.get(t);
    return b ? stripTerminalEscapes(b.text()) : undefined;
  }

  private async end(e: vscode.TerminalShellExecutionEndEvent): Promise<void> {
    const r = this.readings.get(e.execution);
    this.readings.delete(e.execution);
    if (!r) return;
    // The data stream is not sure to have ended when the end event comes (code-server 1.100's
    // stream can stay open): its last chunks are waited for, up to a bound. Not an ordering
    // that could be waited on: without the bound a stream left open would lose the diagnosis.
    await Promise.race([r.done, new Promise((res) => setTimeout(res, 1500))]);
    const code = e.exitCode;
    this.log.debug(`terminal: \`${e.execution.commandLine.value}\` ended with exit code ${code ?? 'unknown'}, ${r.buf.length} characters read`);
    if (code === undefined || code === 0 || !autoDiagnoseTerminal()) return;
    let text = stripTerminalEscapes(r.buf.text());
    // A command that prints everything at once can finish before read() got its first chunk
    // (the start event and the output arrive together): then take the terminal's own record of
    // the last command's output, through the clipboard, which is restored.
    if (!text.trim() && vscode.window.activeTerminal === e.terminal) text = stripTerminalEscapes(await copyLastCommandOutput());
    if (!text.trim()) return;
    await this.onFailed({ commandLine: e.execution.commandLine.value, exitCode: code, text, terminal: e.terminal });
  }

  dispose(): void {
    for (const d of this.disposables) d.dispose();
    this.readings.clear();
    this.latest.clear();
  }
}

export interface TerminalDiagnosis {
  command: FailedCommand;
  report: Report;
  /** What the notification said, or undefined when there was none. */
  message: string | undefined;
}

/** Failed terminal commands diagnosed, with a notification for a known failure. */
export function registerTerminal(ctx: DdxContext): { watcher: TerminalWatcher; onDidDiagnoseTerminal: vscode.Event<TerminalDiagnosis> } {
  const emitter = new vscode.EventEmitter<TerminalDiagnosis>();
  const onFailed = async (c: FailedCommand): Promise<Report | undefined> => {
    let report: Report;
    try {
      report = await ctx.diagnoseText(c.text);
    } catch (e) {
      ctx.output.warn(`could not diagnose the output of "${c.commandLine}": ${e instanceof Error ? e.message : String(e)}`);
      return undefined;
    }
    const primary = report.incidents[0];
    if (!primary || primary.severity !== 'error') {
      emitter.fire({ command: c, report, message: undefined });
      return report;
    }
    const uri = ctx.logs.add('terminal', c.commandLine || c.terminal.name, c.text);
    const cmd = c.commandLine.length > 60 ? `${c.commandLine.slice(0, 57)}…` : c.commandLine;
    const d: Diagnosis = { report, source: { kind: 'virtual', uri, label: `\`${cmd}\` (exit ${c.exitCode})` }, at: new Date() };
    ctx.publish(d, false);
    const message = `${incidentHeadline(primary)} — ${primary.title}`;
    const buttons = ['Show diagnosis'];
    if (primary.patches && primary.patches.length) buttons.push('Apply fix');
    ctx.output.info(`terminal: \`${c.commandLine}\` exited with ${c.exitCode}: ${incidentHeadline(primary)}`);
    emitter.fire({ command: c, report, message });
    void vscode.window.showErrorMessage(`ddx: ${message}`, ...buttons).then(
      ctx.guard(async (pick: string | undefined) => {
        if (pick === 'Show diagnosis') ctx.panel.show(d);
        else if (pick === 'Apply fix') await applyPreferredFix(ctx, d);
      }),
    );
    return report;
  };
  const watcher = new TerminalWatcher(onFailed, ctx.output);
  ctx.register(watcher, emitter);
  return { watcher, onDidDiagnoseTerminal: emitter.event };
}
