// Which terminal lines are known failure lines, and the text a link on one diagnoses. No `vscode`
// import: the manifest check loads it under plain node.

/** A marker: what it looks like in a line, and a few words for the link's tooltip. */
export interface FailureMarker {
  readonly re: RegExp;
  readonly what: string;
}

/**
 * The catalog's cheapest, most telling literals (rules/*.json signatures). Kept short on purpose:
 * each rendered terminal line is matched against all of them.
 */
export const FAILURE_MARKERS: readonly FailureMarker[] = [
  { re: /CUDA out of memory/, what: 'CUDA out of memory' },
  { re: /\b(?:torch\.)?(?:cuda\.)?OutOfMemoryError\b/, what: 'out of memory' },
  { re: /Watchdog caught collective operation timeout/, what: 'NCCL watchdog timeout' },
  { re: /\bNCCL (?:error|Error|WARN)\b|ncclInternalError|ncclSystemError|ncclUnhandledCudaError|ncclRemoteError|DistBackendError/, what: 'NCCL failure' },
  { re: /\bChildFailedError\b/, what: 'torchrun child failed' },
  { re: /Traceback \(most recent call last\)/, what: 'Python traceback' },
  { re: /CUDA error: [a-z]|device-side assert triggered|illegal memory access/, what: 'CUDA error' },
  { re: /\bexitcode\s*:\s*-?\d+|exited with return code -?\d+/, what: 'failed rank exit' },
];

/** Longest line looked at: a link provider must stay fast on pathological output. */
export const MAX_LINK_LINE = 4096;

export interface FailureLinkMatch {
  readonly startIndex: number;
  readonly length: number;
  readonly what: string;
}

/** The first known failure marker in a terminal line, as a link over the marker's text. */
export function failureLinkIn(line: string): FailureLinkMatch | undefined {
  const s = line.length > MAX_LINK_LINE ? line.slice(0, MAX_LINK_LINE) : line;
  let best: FailureLinkMatch | undefined;
  for (const m of FAILURE_MARKERS) {
    const r = m.re.exec(s);
    if (r && (!best || r.index < best.startIndex)) best = { startIndex: r.index, length: r[0].length, what: m.what };
  }
  return best;
}

/**
 * The text to diagnose for a link on `line`: the terminal's recent output up to and a little past
 * the line when it holds it (the cause is often lines above), else the line alone.
 */
export function textAroundLine(line: string, recent: string | undefined, after = 200): string {
  const l = line.trim();
  if (!recent || !l) return line;
  const at = recent.lastIndexOf(l);
  if (at < 0) return line;
  let end = at + l.length;
  for (let n = 0; n < after && end < recent.length; n++) {
    const nl = recent.indexOf('\n', end + 1);
    end = nl < 0 ? recent.length : nl;
  }
  return recent.slice(0, end);
}
