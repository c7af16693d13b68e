// Failed terminal commands: with shell integration each command's output is read while it runs
// (bounded), and when it exits non-zero the output is diagnosed.
import * as vscode from 'vscode';
import { BoundedText, stripTerminalEscapes } from './logstore';
import { Report } from './report';
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
  }

  private async end(e: vscode.TerminalShellExecutionEndEvent): Promise<void> {
    const r = this.readings.get(e.execution);
    this.readings.delete(e.execution);
    if (!r) return;
    // The stream ends with the execution; wait a little for its last chunks.
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
  }
}
