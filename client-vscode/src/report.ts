// The JSON report `ddx.diagnoseText` / `ddx.diagnoseFile` return (docs/json-contract.md, version 1)
// and the catalog entry `ddx.explain` returns. Fields are only ever added within a version, so
// every field the extension does not strictly need is optional.

export type Severity = 'error' | 'warning' | 'info';
export type Role = 'cause' | 'collateral' | 'wrapper';

export interface PatchOp {
  op: string;
  path: string;
  value?: unknown;
  factor?: number;
  min?: number;
  max?: number;
}

export interface Patch {
  id: string;
  title: string;
  preconditions?: unknown[];
  ops?: PatchOp[];
}

export interface Collateral {
  rule: string;
  title: string;
  role: Role;
  ranks: number[];
  count: number;
  file?: string;
  first_line?: number;
  why?: string;
}

export interface Frame {
  file: string;
  line: number;
  function?: string;
  log_line?: number;
}

export interface Incident {
  rule: string;
  title: string;
  severity: Severity;
  role: Role;
  phase?: string;
  rank: number | null;
  local_rank?: number | null;
  host?: string | null;
  file?: string;
  line?: number;
  column?: number;
  text?: string;
  facts?: Record<string, string>;
  traceback?: Frame[];
  user_frame?: Frame | null;
  ranks?: number[];
  count?: number;
  confidence?: number;
  fallback?: boolean;
  rank_note?: string | null;
  collateral?: Collateral[];
  summary?: string;
  mechanism?: string;
  checklist?: string[];
  fix?: string[];
  verify?: string;
  missing?: string[];
  references?: string[];
  patches?: Patch[];
  /** The class comes from a traceback cut before its error line. */
  inferred?: boolean;
  /** The lifecycle phase the frames place the failure in. */
  lifecycle?: { phase: string; title: string } | null;
  library_frame?: Frame | null;
}

/** One class of the differential: its share of the evidence, for and against. */
export interface Candidate {
  rule: string;
  title: string;
  score: number;
  decisive: boolean;
  for: string[];
  against: string[];
}

export interface Report {
  version: number;
  tool?: string;
  inputs?: { name: string; bytes?: number; lines?: number }[];
  incidents: Incident[];
  differential?: Candidate[];
  separator?: string | null;
  stats?: { bytes?: number; lines?: number; seconds?: number; rules?: number };
}

export interface CatalogEntry {
  id: string;
  title: string;
  framework?: string;
  phase?: string;
  tags?: string[];
  severity?: Severity;
  role?: Role;
  priority?: number;
  summary?: string;
  mechanism?: string;
  symptoms?: (string | { text?: string })[] | string;
  affects?: string[] | string;
  checklist?: string[];
  fix?: string[];
  verify?: string;
  prevention?: string[] | string;
  related?: string[];
  references?: string[];
  missing?: string[];
  config_patches?: Patch[];
  href?: string;
  /** The hub's column (memory, communication, numerics, configuration, environment, checkpoint, parallelism, generic). */
  family?: string;
  /** The fix as code, one per stack where it differs. */
  examples?: CatalogExample[];
  /** The cheapest way to confirm the diagnosis. */
  confirm?: string;
  /** How the failure changes from 1 GPU to 1000+ GPUs. */
  scale?: string;
  /** Whether the failure also hits inference / serving. */
  inference?: { affected?: string; note?: string };
  /** Its row in the table of its look-alikes: every entry with the same group is one table. */
  compare?: { group?: string; where?: string; separates?: string };
}

export interface CatalogExample {
  stack: string;
  title?: string;
  lang?: string;
  code: string;
  why?: string;
}

/** One failure class of the catalog list (`ddx.catalog`, or a line of `ddx rules list`). */
export interface CatalogItem {
  id: string;
  severity: string;
  role: string;
  title: string;
  phase?: string;
  priority?: number;
  /** The hub's column; null (or absent) when the entry names none. */
  family?: string | null;
  /** The title of its look-alike group: items with the same group are look-alikes. */
  group?: string | null;
  related?: string[];
}

/** `[0,1,2,3,4,6,7]` -> `0-4,6-7`. */
export function formatRanks(ranks: readonly number[] | undefined): string {
  if (!ranks || ranks.length === 0) return '';
  const s = [...new Set(ranks)].sort((a, b) => a - b);
  const parts: string[] = [];
  let start = s[0];
  let prev = s[0];
  for (let i = 1; i <= s.length; i++) {
    const r = s[i];
    if (r === prev + 1) {
      prev = r;
      continue;
    }
    parts.push(start === prev ? `${start}` : `${start}-${prev}`);
    start = r;
    prev = r;
  }
  return parts.join(',');
}

/** "ds.oom.activations on rank 7" (the words of the notification and the status bar). */
export function incidentHeadline(inc: Incident): string {
  const where = inc.rank !== null && inc.rank !== undefined ? `on rank ${inc.rank}` : 'rank unknown';
  const host = inc.host ? ` (${inc.host})` : '';
  return `${inc.rule} ${where}${host}`;
}
