// The ddx language server's own commands as typed requests: each is a workspace/executeCommand
// (server/lsp/commands.c, ddx_lsp_execute_command) whose command name, arguments and result are
// declared once here, so a caller sends `DiagnoseTextRequest` with `{ text }` and gets a Report,
// with no string command and no cast at the call site.
import { ExecuteCommandParams, RequestType } from 'vscode-languageclient/node';
import { CatalogEntry, Report } from './report';

/** workspace/executeCommand params naming one command and its arguments' types. */
export interface CommandParams<N extends string, A extends unknown[]> extends ExecuteCommandParams {
  command: N;
  arguments: A;
}

const EXECUTE = 'workspace/executeCommand';

/** ddx.diagnoseText: the report of a text (a selection, a terminal's output). */
export type DiagnoseTextParams = CommandParams<'ddx.diagnoseText', [{ text: string }]>;
export const DiagnoseTextRequest = new RequestType<DiagnoseTextParams, Report, void>(EXECUTE);

/** ddx.diagnoseFile: a file streamed by the server on its thread pool (work-done progress). */
export type DiagnoseFileParams = CommandParams<'ddx.diagnoseFile', [{ uri: string }]>;
export const DiagnoseFileRequest = new RequestType<DiagnoseFileParams, Report, DiagnoseFileError>(EXECUTE);

/**
 * The `data` of a ddx.diagnoseFile error (ResponseError.data): why the file was refused, so the
 * client decides on a code and not on the message's words.
 */
export interface DiagnoseFileError {
  reason?: 'outsideWorkspace';
}

/** ddx.explain: one catalog entry. */
export type ExplainParams = CommandParams<'ddx.explain', [{ id: string }]>;
export const ExplainRequest = new RequestType<ExplainParams, CatalogEntry, void>(EXECUTE);

/** An item of ddx.catalog as the server sends it (catalog.ts's catalogItem normalises it). */
export interface RawCatalogItem {
  id: string;
  title: string;
  severity: string;
  role: string;
  phase?: string;
  priority?: number;
  family?: string | null;
  group?: string | null;
  related?: string[];
}

/** ddx.catalog: every class of the loaded catalog. */
export type CatalogParams = CommandParams<'ddx.catalog', []>;
export const CatalogRequest = new RequestType<CatalogParams, { failures: RawCatalogItem[] }, void>(EXECUTE);

/** Every command the client sends (the initialize result's executeCommandProvider lists them). */
export type DdxCommand = DiagnoseTextParams['command'] | DiagnoseFileParams['command'] | ExplainParams['command'] | CatalogParams['command'];

/** The JSON-RPC code of a request the server (or the client) cancelled. */
export const REQUEST_CANCELLED = -32800;
