// Where a diagnostic's code link goes in VS Code. The server links each class to its page of the
// encyclopedia shipped with it (file:///…/catalog/<id>.html): a browser shows that page, but VS
// Code would open the HTML source in a text editor. Inside VS Code the same link opens the
// Failure Catalog view on that entry instead, through a command URI (VS Code opens a diagnostic's
// code target with commands allowed). A team rule's link (its rule file) is left as it is.
import * as vscode from 'vscode';

/** The class id when target is the server's page of that class, else undefined. */
export function catalogPageId(target: vscode.Uri, code: string): string | undefined {
  if (target.scheme !== 'file') return undefined;
  return target.path.endsWith(`/catalog/${code}.html`) ? code : undefined;
}

export function catalogCommandUri(id: string): vscode.Uri {
  return vscode.Uri.parse(`command:ddx.openCatalog?${encodeURIComponent(JSON.stringify([id]))}`);
}

/** The diagnostics with their catalog page links turned into links to the catalog view. */
export function linkDiagnostics(diagnostics: vscode.Diagnostic[]): vscode.Diagnostic[] {
  for (const d of diagnostics) {
    const code = d.code;
    if (typeof code !== 'object' || code === null) continue;
    const id = catalogPageId(code.target, String(code.value));
    if (id) d.code = { value: code.value, target: catalogCommandUri(id) };
  }
  return diagnostics;
}

const PAGE_LINK = /\(<file:\/\/[^>]*\/catalog\/([a-z0-9]+(?:\.[a-z0-9-]+)+)\.html>\)/g;

/** A hover with its catalog page links turned into links to the catalog view (only that command
 * is enabled in it; the server escapes every text it puts in a hover). */
export function linkHover(hover: vscode.Hover | null | undefined): vscode.Hover | null | undefined {
  if (!hover) return hover;
  const contents = hover.contents.map((c) => {
    if (!(c instanceof vscode.MarkdownString) || !PAGE_LINK.test(c.value)) return c;
    PAGE_LINK.lastIndex = 0;
    const md = new vscode.MarkdownString(
      c.value.replace(PAGE_LINK, (_m, id: string) => `(${catalogCommandUri(id).toString()})`),
      c.supportThemeIcons,
    );
    md.isTrusted = { enabledCommands: ['ddx.openCatalog'] };
    return md;
  });
  return new vscode.Hover(contents, hover.range);
}
