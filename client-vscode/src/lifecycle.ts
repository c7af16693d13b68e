// The server's life: started at activation, restarted when ddx.server.path changes or the
// workspace is trusted (Restricted Mode ends), Restart Server and Show Server Log; the notices
// about workspace settings ddx ignores.
import * as vscode from 'vscode';
import { DdxContext } from './context';
import { RESTRICTED_SETTINGS } from './settings';

/** vscode.workspace.isTrusted; true on hosts without workspace trust. */
export function workspaceTrusted(): boolean {
  return vscode.workspace.isTrusted !== false;
}

export function registerLifecycle(ctx: DdxContext): void {
  const { server, catalog, ignored, output } = ctx;
  // A workspace value of a machine setting never reaches the extension: its files tell.
  const settingsWatcher = vscode.workspace.createFileSystemWatcher('**/.vscode/settings.json');
  ctx.register(
    settingsWatcher,
    settingsWatcher.onDidCreate(() => void ignored.checkWorkspaceFiles()),
    settingsWatcher.onDidChange(() => void ignored.checkWorkspaceFiles()),
    vscode.workspace.onDidChangeConfiguration((e) => {
      if (e.affectsConfiguration('ddx')) void ignored.checkWorkspaceFiles();
      if (e.affectsConfiguration('ddx.server.path')) {
        catalog.invalidate();
        void server.restartIfBinaryChanged();
      } else if (e.affectsConfiguration('ddx.rules.extraPaths')) catalog.invalidate();
    }),
    // Restricted Mode ends: a fresh server, so nothing read while the folder was untrusted stays.
    vscode.workspace.onDidGrantWorkspaceTrust(() => {
      output.info('the workspace is trusted now: restarting the server');
      catalog.invalidate();
      void server.restart();
    }),
  );
  ctx.command('ddx.restartServer', () => {
    catalog.invalidate();
    return server.restart();
  });
  ctx.command('ddx.showOutput', () => output.show(true));

  void ignored.checkWorkspaceFiles();
  if (!workspaceTrusted())
    output.info(`Restricted Mode: ddx only reads text, so logs are diagnosed as usual; ${RESTRICTED_SETTINGS.map((k) => `ddx.${k}`).join(', ')} come from your user settings only, never from the workspace`);
  void server.start();
}
