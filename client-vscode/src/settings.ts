import * as os from 'os';
import * as path from 'path';
import * as vscode from 'vscode';

/** The settings the language server reads (server/lsp/workspace.c, ddx_lsp_apply_settings). */
export interface ServerSettings {
  rules: { extraPaths: string[] };
  dsConfig: { path: string | null };
  model: { parameters: number | null };
  world: { size: number | null };
  memory: { modelConfig: string | null; seqLen: number | null; gpuMemoryGiB: number | null };
  diagnoseFile: { allowOutsideWorkspace: boolean };
  hang: { stallSeconds: number };
}

/**
 * The settings that name a program to run, or files and folders outside the workspace. Any
 * repository can carry a .vscode/settings.json, so only the user's (or the remote machine's) value
 * counts: a workspace or folder value is ignored, with a notice (package.json gives them
 * `"scope": "machine"`, so VS Code drops such values too).
 */
export const MACHINE_SETTINGS = ['server.path', 'rules.extraPaths', 'dsConfig.path', 'memory.modelConfig', 'diagnoseFile.allowOutsideWorkspace'] as const;
export type MachineSetting = (typeof MACHINE_SETTINGS)[number];

/**
 * The same settings, named in package.json's capabilities.untrustedWorkspaces.restrictedConfigurations:
 * in Restricted Mode VS Code gives the extension no workspace value of them either.
 */
export const RESTRICTED_SETTINGS: readonly MachineSetting[] = MACHINE_SETTINGS;

/**
 * The most output kept per terminal command (ddx.terminal.maxOutputBytes, its "maximum" in
 * package.json): the kept text goes to the server as one ddx.diagnoseText request, and 64 MiB
 * stays within the server's 128 MiB message limit (DDX_LSP_DEFAULT_MAX_FRAME) even when JSON
 * escaping doubles it; it is also more than the 64 MiB from which the CLI splits a file.
 */
export const MAX_OUTPUT_BYTES = 64 * 1024 * 1024;
export const MIN_OUTPUT_BYTES = 65536;
export const DEFAULT_OUTPUT_BYTES = 8 * 1024 * 1024;

/** Called with "ddx.server.path" and the like when a workspace value of it was ignored. */
export type IgnoredNotice = (setting: string) => void;

/** A machine setting's user value, else its default; a workspace or folder value is never taken. */
export function machineSetting<T>(key: MachineSetting, notice?: IgnoredNotice): T | undefined {
  const i = vscode.workspace.getConfiguration('ddx').inspect<T>(key);
  if (!i) return undefined;
  const fromWorkspace = [i.workspaceValue, i.workspaceFolderValue, i.workspaceLanguageValue, i.workspaceFolderLanguageValue];
  if (notice && fromWorkspace.some((v) => v !== undefined)) notice(`ddx.${key}`);
  return i.globalValue !== undefined ? i.globalValue : i.defaultValue;
}

/** Drops // and /* *\/ comments and trailing commas outside strings: settings files are JSONC. */
export function stripJsonc(text: string): string {
  let out = '';
  for (let i = 0; i < text.length; i++) {
    const c = text[i];
    if (c === '"') {
      let j = i + 1;
      while (j < text.length && text[j] !== '"') j += text[j] === '\\' ? 2 : 1;
      out += text.slice(i, j + 1);
      i = j;
    } else if (c === '/' && text[i + 1] === '/') {
      while (i < text.length && text[i] !== '\n') i++;
      out += '\n';
    } else if (c === '/' && text[i + 1] === '*') {
      const end = text.indexOf('*/', i + 2);
      i = end < 0 ? text.length : end + 1;
    } else out += c;
  }
  return out.replace(/,(\s*[}\]])/g, '$1');
}

/** The dotted keys of a settings object ({"ddx.server": {"path": 1}} has "ddx.server.path"). */
function settingKeys(v: unknown, prefix = '', out: Set<string> = new Set()): Set<string> {
  if (typeof v !== 'object' || v === null || Array.isArray(v)) {
    if (prefix) out.add(prefix);
    return out;
  }
  for (const [k, x] of Object.entries(v)) {
    const key = prefix ? `${prefix}.${k}` : k;
    out.add(key);
    settingKeys(x, key, out);
  }
  return out;
}

/** The machine settings a settings file's text sets (a .code-workspace file: under "settings"). */
export function machineSettingsIn(text: string, workspaceFile = false): string[] {
  let v: unknown;
  try {
    v = JSON.parse(stripJsonc(text));
  } catch {
    return [];
  }
  if (workspaceFile) v = typeof v === 'object' && v !== null ? (v as { settings?: unknown }).settings : undefined;
  const keys = settingKeys(v);
  return MACHINE_SETTINGS.map((k) => `ddx.${k}`).filter((k) => keys.has(k));
}

/**
 * Tells once per setting, in a warning and the ddx log, that the workspace sets a machine setting
 * and that ddx ignores it.
 */
export class IgnoredSettings {
  private readonly told = new Set<string>();

  constructor(private readonly log: vscode.LogOutputChannel) {}

  readonly notice: IgnoredNotice = (setting) => {
    if (this.told.has(setting)) return;
    this.told.add(setting);
    this.log.warn(`${setting} is set in the workspace settings: ignored (only user settings may set it)`);
    void vscode.window
      .showWarningMessage(
        `ddx: this workspace sets ${setting}, which ddx ignores: a repository's settings may not choose a program to run or files outside it. Set it in your user settings if you want it.`,
        'Open User Settings',
      )
      .then((pick) => {
        if (pick) void vscode.commands.executeCommand('workbench.action.openSettings', setting);
      });
  };

  /** The settings told about so far. */
  get ignored(): string[] {
    return [...this.told];
  }

  /**
   * VS Code itself drops a workspace value of a "machine" setting before the extension sees it;
   * the workspace's settings files still tell that one was set.
   */
  async checkWorkspaceFiles(): Promise<void> {
    const files: { uri: vscode.Uri; workspaceFile: boolean }[] = (vscode.workspace.workspaceFolders ?? []).map((f) => ({
      uri: vscode.Uri.joinPath(f.uri, '.vscode', 'settings.json'),
      workspaceFile: false,
    }));
    const wf = vscode.workspace.workspaceFile;
    if (wf && wf.scheme !== 'untitled') files.push({ uri: wf, workspaceFile: true });
    for (const f of files) {
      let text: string;
      try {
        text = new TextDecoder().decode(await vscode.workspace.fs.readFile(f.uri));
      } catch {
        continue;
      }
      for (const s of machineSettingsIn(text, f.workspaceFile)) this.notice(s);
    }
  }
}

/** Expands `~` and `${workspaceFolder}`; a relative path is taken from the first workspace folder. */
export function expandPath(p: string): string {
  const folder = vscode.workspace.workspaceFolders?.[0]?.uri.fsPath;
  let out = p.trim();
  if (out === '') return out;
  if (folder) out = out.replace(/\$\{workspaceFolder\}/g, folder);
  out = out.replace(/\$\{userHome\}/g, os.homedir());
  if (out === '~' || out.startsWith('~/')) out = path.join(os.homedir(), out.slice(1));
  if (!path.isAbsolute(out) && folder) out = path.join(folder, out);
  return out;
}

function num(v: unknown): number | null {
  return typeof v === 'number' && Number.isFinite(v) ? v : null;
}

/** ddx.hang.stallSeconds: how long a growing log may be quiet before its hang shows. */
export function stallSeconds(v: unknown): number {
  return typeof v === 'number' && Number.isFinite(v) && v > 0 && v <= 86400 ? v : 60;
}

export function serverSettings(notice?: IgnoredNotice): ServerSettings {
  const c = vscode.workspace.getConfiguration('ddx');
  const extra = machineSetting<unknown>('rules.extraPaths', notice);
  const dsRaw = machineSetting<unknown>('dsConfig.path', notice);
  const ds = typeof dsRaw === 'string' ? dsRaw : '';
  const ws = num(c.get<unknown>('world.size'));
  const mcRaw = machineSetting<unknown>('memory.modelConfig', notice);
  const mc = typeof mcRaw === 'string' ? mcRaw : '';
  const seq = num(c.get<unknown>('memory.seqLen'));
  const gpu = num(c.get<unknown>('memory.gpuMemoryGiB'));
  return {
    rules: { extraPaths: Array.isArray(extra) ? extra.filter((e): e is string => typeof e === 'string' && e !== '').map(expandPath) : [] },
    dsConfig: { path: ds.trim() ? expandPath(ds) : null },
    model: { parameters: num(c.get<unknown>('model.parameters')) },
    world: { size: ws !== null ? Math.trunc(ws) : null },
    memory: {
      modelConfig: mc.trim() ? expandPath(mc) : null,
      seqLen: seq !== null && seq > 0 ? Math.trunc(seq) : null,
      gpuMemoryGiB: gpu !== null && gpu > 0 ? gpu : null,
    },
    diagnoseFile: { allowOutsideWorkspace: machineSetting<unknown>('diagnoseFile.allowOutsideWorkspace', notice) === true },
    hang: { stallSeconds: stallSeconds(c.get<unknown>('hang.stallSeconds')) },
  };
}

export function autoDiagnoseTerminal(): boolean {
  return vscode.workspace.getConfiguration('ddx').get<boolean>('terminal.autoDiagnose') !== false;
}

/** ddx.terminal.maxOutputBytes, at most MAX_OUTPUT_BYTES whatever a settings file says. */
export function clampOutputBytes(v: unknown): number {
  if (typeof v !== 'number' || !Number.isFinite(v) || v < MIN_OUTPUT_BYTES) return DEFAULT_OUTPUT_BYTES;
  return Math.min(Math.floor(v), MAX_OUTPUT_BYTES);
}

export function terminalMaxBytes(): number {
  return clampOutputBytes(vscode.workspace.getConfiguration('ddx').get<unknown>('terminal.maxOutputBytes'));
}

export function serverPathSetting(notice?: IgnoredNotice): string {
  const v = machineSetting<unknown>('server.path', notice);
  return (typeof v === 'string' ? v : '').trim();
}
