// The Get Started walkthrough's example: a copy of examples/zero3-oom-8gpu.log shipped in media/,
// opened by ddx: Open Example Log (the walkthrough's first step).
import * as vscode from 'vscode';
import { DdxContext } from './context';

export function registerWalkthrough(ctx: DdxContext): vscode.Uri {
  const exampleUri = vscode.Uri.joinPath(ctx.ext.extensionUri, 'client-vscode', 'media', 'example', 'zero3-oom-8gpu.log');
  ctx.command('ddx.openExample', async () => {
    const doc = await vscode.workspace.openTextDocument(exampleUri);
    return vscode.window.showTextDocument(doc, { preview: false });
  });
  return exampleUri;
}
