import * as os from 'os';
import * as path from 'path';
import * as vscode from 'vscode';

/** The settings the language server reads (server/lsp_diag.c, ddx_lsp_apply_settings). */
export interface ServerSettings {
  rules: { extraPaths: string[] };
  dsConfig: { path: string | null };
  model: { parameters: number | null };
  world: { size: number | null };
  diagnoseFile: { allowOutsideWorkspace: boolean };
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

export function serverSettings(): ServerSettings {
  const c = vscode.workspace.getConfiguration('ddx');
  const extra = c.get<unknown>('rules.extraPaths');
  const ds = c.get<string>('dsConfig.path') ?? '';
  const ws = num(c.get<unknown>('world.size'));
  return {
    rules: { extraPaths: Array.isArray(extra) ? extra.filter((e): e is string => typeof e === 'string' && e !== '').map(expandPath) : [] },
    dsConfig: { path: ds.trim() ? expandPath(ds) : null },
    model: { parameters: num(c.get<unknown>('model.parameters')) },
    world: { size: ws !== null ? Math.trunc(ws) : null },
    diagnoseFile: { allowOutsideWorkspace: c.get<boolean>('diagnoseFile.allowOutsideWorkspace') === true },
  };
}

export function autoDiagnoseTerminal(): boolean {
  return vscode.workspace.getConfiguration('ddx').get<boolean>('terminal.autoDiagnose') !== false;
}

export function terminalMaxBytes(): number {
  const v = vscode.workspace.getConfiguration('ddx').get<number>('terminal.maxOutputBytes');
  return typeof v === 'number' && v >= 65536 ? v : 8 * 1024 * 1024;
}

export function serverPathSetting(): string {
  return (vscode.workspace.getConfiguration('ddx').get<string>('server.path') ?? '').trim();
}
