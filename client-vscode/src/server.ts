// Finds the ddx binary and runs `ddx lsp` through vscode-languageclient.
import * as fs from 'fs';
import * as path from 'path';
import * as vscode from 'vscode';
import { linkDiagnostics, linkHover } from './links';
import {
  CancellationToken,
  DidChangeConfigurationNotification,
  LanguageClient,
  LanguageClientOptions,
  RevealOutputChannelOn,
  ServerOptions,
  RequestType,
  State,
  TransportKind,
  WorkDoneProgress,
  WorkDoneProgressBegin,
  WorkDoneProgressEnd,
  WorkDoneProgressReport,
} from 'vscode-languageclient/node';
import { CommandParams, DdxCommand } from './protocol';
import { expandPath, IgnoredNotice, serverPathSetting, serverSettings } from './settings';

export type BinarySource = 'setting' | 'bundled' | 'PATH';

export interface ServerBinary {
  path: string;
  source: BinarySource;
  env: NodeJS.ProcessEnv;
}

export type Resolution = { ok: true; binary: ServerBinary } | { ok: false; reason: string };

function isExecutable(p: string): boolean {
  try {
    const st = fs.statSync(p);
    if (!st.isFile()) return false;
    fs.accessSync(p, fs.constants.X_OK);
    return true;
  } catch {
    return false;
  }
}

/** The folder of the binary bundled for this platform (client-vscode/server/<platform>-<arch>/). */
export function bundledDir(extensionPath: string): string {
  return path.join(extensionPath, 'client-vscode', 'server', `${process.platform}-${process.arch}`);
}

function onPath(name: string): string | undefined {
  for (const dir of (process.env.PATH ?? '').split(path.delimiter)) {
    if (!dir) continue;
    const cand = path.join(dir, name);
    if (isExecutable(cand)) return cand;
  }
  return undefined;
}

/**
 * The binary: `ddx.server.path` when the user set it (an explicit choice wins; a workspace value
 * is ignored: a repository cannot choose what runs), else the one bundled for this platform, else
 * `ddx` on PATH.
 */
export function resolveBinary(extensionPath: string, notice?: IgnoredNotice): Resolution {
  const configured = serverPathSetting(notice);
  if (configured) {
    const p = expandPath(configured);
    if (isExecutable(p)) return { ok: true, binary: { path: p, source: 'setting', env: { ...process.env } } };
    return {
      ok: false,
      reason: `ddx.server.path is set to "${configured}", which is not an executable file${p !== configured ? ` (${p})` : ''}.`,
    };
  }
  const dir = bundledDir(extensionPath);
  const bundled = path.join(dir, process.platform === 'win32' ? 'ddx.exe' : 'ddx');
  if (isExecutable(bundled)) {
    const env: NodeJS.ProcessEnv = { ...process.env };
    const lib = path.join(dir, 'lib');
    if (fs.existsSync(lib)) env.LD_LIBRARY_PATH = env.LD_LIBRARY_PATH ? `${lib}${path.delimiter}${env.LD_LIBRARY_PATH}` : lib;
    return { ok: true, binary: { path: bundled, source: 'bundled', env } };
  }
  const found = onPath(process.platform === 'win32' ? 'ddx.exe' : 'ddx');
  if (found) return { ok: true, binary: { path: found, source: 'PATH', env: { ...process.env } } };
  return {
    ok: false,
    reason: `no ddx binary: none is bundled for ${process.platform}-${process.arch}, ddx.server.path is empty and there is no ddx on PATH.`,
  };
}

export const FIX_HINT = 'Build it (make build in the ddx repository) and set ddx.server.path to build/ddx, or put ddx on PATH.';

/** Text documents the server diagnoses (logs) or reads (ds_config.json and other JSON). */
export const documentSelector = [
  { scheme: 'file', language: 'log' },
  { scheme: 'file', pattern: '**/*.{log,out,err}' },
  { scheme: 'untitled', language: 'log' },
  { scheme: 'ddx-log' },
  { scheme: 'file', language: 'json' },
  { scheme: 'file', language: 'jsonc' },
  { scheme: 'untitled', language: 'json' },
];

export interface ProgressSink {
  report(message: string | undefined, percentage: number | undefined): void;
}

/** The running language client, restartable, with the state the UI shows. */
export class DdxServer implements vscode.Disposable {
  client: LanguageClient | undefined;
  binary: ServerBinary | undefined;
  lastError: string | undefined;
  private readonly stateEmitter = new vscode.EventEmitter<void>();
  readonly onDidChangeState = this.stateEmitter.event;
  private readonly startedEmitter = new vscode.EventEmitter<ServerBinary>();
  /** Fires each time a server has started and answered initialize (a start, each restart). */
  readonly onDidStart = this.startedEmitter.event;
  /** Starts, restarts and stops run one after the other, never overlapping. */
  private queue: Promise<unknown> = Promise.resolve();
  private starting: Promise<boolean> | undefined;
  private commands: string[] = [];
  /** Servers started so far (the first start and every restart that came up). */
  starts = 0;

  constructor(
    private readonly ctx: vscode.ExtensionContext,
    readonly output: vscode.LogOutputChannel,
    private readonly notice?: IgnoredNotice,
  ) {}

  get running(): boolean {
    return this.client !== undefined && this.client.state === State.Running;
  }

  /** Runs one lifecycle step after those queued before it (a restart never overlaps a start). */
  private serial<T>(step: () => Promise<T>): Promise<T> {
    const p = this.queue.then(step, step);
    this.queue = p.catch(() => undefined);
    return p;
  }

  /** Resolves once every lifecycle step queued so far (starts, restarts) has run. */
  settled(): Promise<void> {
    return this.queue.then(() => undefined);
  }

  /** Starts the server once; later callers wait for the same start. Resolves false when none runs. */
  start(): Promise<boolean> {
    if (this.running) return Promise.resolve(true);
    if (!this.starting) {
      this.starting = this.serial(() => (this.running ? Promise.resolve(true) : this.doStart())).finally(() => {
        this.starting = undefined;
      });
    }
    return this.starting;
  }

  private async doStart(): Promise<boolean> {
    const res = resolveBinary(this.ctx.extensionPath, this.notice);
    if (!res.ok) {
      this.fail(res.reason);
      return false;
    }
    const bin = res.binary;
    this.binary = bin;
    this.output.info(`starting ${bin.path} lsp (${bin.source === 'setting' ? 'ddx.server.path' : bin.source})`);
    if (bin.source === 'PATH')
      this.output.warn(
        `this package bundles no server for ${process.platform}-${process.arch} (install the .vsix built for it); using ddx found on PATH: ${bin.path}`,
      );
    const run = { command: bin.path, args: ['lsp'], transport: TransportKind.stdio, options: { env: bin.env } };
    const serverOptions: ServerOptions = { run, debug: run };
    const clientOptions: LanguageClientOptions = {
      documentSelector,
      outputChannel: this.output,
      revealOutputChannelOn: RevealOutputChannelOn.Never,
      initializationOptions: { ddx: serverSettings(this.notice) },
      // JSON files changed on disk (a ds_config edited outside the editor) reach the
      // server's config index as workspace/didChangeWatchedFiles.
      synchronize: { configurationSection: 'ddx', fileEvents: vscode.workspace.createFileSystemWatcher('**/*.json') },
      // The settings sent on a change are the ones read here (machine settings: the user's
      // value only), not VS Code's merged view of the section.
      middleware: {
        // a class's page link opens the Failure Catalog view on it (links.ts)
        handleDiagnostics: (uri, diagnostics, next) => next(uri, linkDiagnostics(diagnostics)),
        provideHover: async (document, position, token, next) => linkHover(await next(document, position, token)),
        workspace: {
          didChangeConfiguration: () =>
            this.sendSettings(client),
        },
      },
      initializationFailedHandler: (error) => {
        this.output.error(`initialize failed: ${String(error)}`);
        return false;
      },
    };
    const client = new LanguageClient('ddx', 'ddx', serverOptions, clientOptions);
    client.onDidChangeState(() => this.stateEmitter.fire());
    this.client = client;
    this.stateEmitter.fire();
    try {
      await client.start();
    } catch (e) {
      this.client = undefined;
      await client.dispose().catch(() => undefined);
      this.fail(`${bin.path} lsp did not start: ${e instanceof Error ? e.message : String(e)}.`);
      return false;
    }
    const caps = client.initializeResult?.capabilities.executeCommandProvider?.commands;
    this.commands = Array.isArray(caps) ? caps : [];
    this.lastError = undefined;
    this.starts++;
    this.stateEmitter.fire();
    this.startedEmitter.fire(bin);
    return true;
  }

  /**
   * Sends the settings as read now (machine settings: the user's value only; paths expanded, as
   * at start). Resolves once written: a request sent after it is read after it by the server.
   */
  async sendSettings(client: LanguageClient | undefined = this.client): Promise<void> {
    if (!client) return;
    await client.sendNotification(DidChangeConfigurationNotification.type, { settings: { ddx: serverSettings(this.notice) } });
  }

  private fail(reason: string): void {
    this.lastError = reason;
    this.output.error(reason);
    this.stateEmitter.fire();
    void vscode.window
      .showErrorMessage(`ddx: the language server is not running: ${reason} ${FIX_HINT}`, 'Open Settings', 'Show Log')
      .then((pick) => {
        if (pick === 'Open Settings') void vscode.commands.executeCommand('workbench.action.openSettings', 'ddx.server.path');
        else if (pick === 'Show Log') this.output.show(true);
      });
  }

  /**
   * Stops the running server and starts a new one with the settings read then. Restarts queue:
   * two settings changes in a row give two restarts in order, the last one's settings win.
   */
  restart(): Promise<boolean> {
    return this.serial(() => this.replace());
  }

  /** Stops the running server, if any, and starts a new one (one lifecycle step). */
  private async replace(): Promise<boolean> {
    const c = this.client;
    this.client = undefined;
    this.stateEmitter.fire();
    if (c) await c.dispose(2000).catch(() => undefined);
    return this.doStart();
  }

  /**
   * After a change of ddx.server.path: a restart when the binary it names differs from the running
   * one (or none runs). VS Code also reports the setting as changed when it only re-reads the
   * settings files (code-server at startup, running a task); that keeps the running server.
   */
  restartIfBinaryChanged(): Promise<boolean> {
    return this.serial(async () => {
      const res = resolveBinary(this.ctx.extensionPath, this.notice);
      const cur = this.binary;
      if (this.running && cur && res.ok && res.binary.path === cur.path && res.binary.source === cur.source) {
        this.output.info(`ddx.server.path still names ${cur.path}: the server keeps running`);
        return true;
      }
      return this.replace();
    });
  }

  hasCommand(name: DdxCommand): boolean {
    return this.commands.includes(name);
  }

  /** A typed request (protocol.ts) with optional work-done progress and cancellation. */
  async request<P extends CommandParams<string, unknown[]>, R, E>(
    type: RequestType<P, R, E>,
    params: P,
    token?: CancellationToken,
    progress?: ProgressSink,
  ): Promise<R> {
    if (!(await this.start()) || !this.client) throw new Error(`the ddx language server is not running${this.lastError ? `: ${this.lastError}` : ''}`);
    const client = this.client;
    let sub: vscode.Disposable | undefined;
    if (progress) {
      const wt = `ddx-vscode-${Date.now()}-${Math.random().toString(36).slice(2)}`;
      params.workDoneToken = wt;
      sub = client.onProgress(WorkDoneProgress.type, wt, (v: WorkDoneProgressBegin | WorkDoneProgressReport | WorkDoneProgressEnd) => {
        if (v.kind === 'end') progress.report(v.message, 100);
        else progress.report(v.message, v.percentage);
      });
    }
    try {
      // the method of the typed request, with its declared result (a generic P defeats the
      // overloads); always a token: an undefined last argument would be sent as a second param
      return await client.sendRequest<R>(type.method, params, token ?? CancellationToken.None);
    } finally {
      sub?.dispose();
    }
  }

  dispose(): void {
    void this.client?.dispose(2000).catch(() => undefined);
    this.client = undefined;
    this.stateEmitter.dispose();
    this.startedEmitter.dispose();
  }
}
