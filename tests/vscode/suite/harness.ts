// What the two in-host suites share (index.ts, and restricted.ts in Restricted Mode): tests
// registered in order and run one at a time, each under its own timeout, every result a JSON line
// in the results file, closed by a `tests-pass` / `tests-fail` line (the extension host exits 0
// even when run() rejects, so run-tests.js reads only that file); and two small waits.
// Only types come from 'vscode' here: the modules that import this one load the API itself.
import * as fs from 'fs';
import type * as vscode from 'vscode';

export interface Suite {
  /** Appends one JSON line to the results file. */
  log(o: object): void;
  /** Registers a test; they run in the order registered. */
  test(name: string, fn: () => Promise<void>, timeout?: number): void;
  /**
   * Runs the tests and writes start, one line a test, then tests-pass / tests-fail. With `only`,
   * just the tests whose names it matches, and the first (it activates the extension).
   */
  run(ws: string, only?: RegExp): Promise<void>;
}

export function suite(out: string): Suite {
  const log = (o: object): void => fs.appendFileSync(out, JSON.stringify(o) + '\n');
  const tests: { name: string; fn: () => Promise<void>; timeout: number }[] = [];
  const test = (name: string, fn: () => Promise<void>, timeout = 30000): void => {
    tests.push({ name, fn, timeout });
  };
  const run = async (ws: string, only?: RegExp): Promise<void> => {
    let passed = 0;
    let failed = 0;
    log({ event: 'start', tests: tests.length, ws });
    for (const t of tests) {
      if (only && !only.test(t.name) && t !== tests[0]) continue;
      const t0 = Date.now();
      try {
        await Promise.race([
          t.fn(),
          new Promise((_, rej) => setTimeout(() => rej(new Error(`timeout after ${t.timeout} ms`)), t.timeout)),
        ]);
        passed++;
        log({ test: t.name, ok: true, ms: Date.now() - t0 });
      } catch (e) {
        failed++;
        log({ test: t.name, ok: false, ms: Date.now() - t0, error: e instanceof Error ? e.message : String(e) });
      }
    }
    log({ event: failed ? 'tests-fail' : 'tests-pass', passed, failed });
  };
  return { log, test, run };
}

/** The next value of `ev` for which `pred` holds, or a rejection after `ms`. */
export function nextEvent<T>(ev: vscode.Event<T>, what: string, ms: number, pred: (v: T) => boolean = () => true): Promise<T> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      sub.dispose();
      reject(new Error(`timed out after ${ms} ms waiting for ${what}`));
    }, ms);
    const sub = ev((v) => {
      if (!pred(v)) return;
      clearTimeout(timer);
      sub.dispose();
      resolve(v);
    });
  });
}

/** A diagnostic's code as text (a bare code, or the value of a code with a link). */
export const codeOf = (d: vscode.Diagnostic): string => (typeof d.code === 'object' ? String(d.code.value) : String(d.code));

/** The first value of fn() that is neither undefined nor false, polled every 100 ms for ms. */
export function until<T>(what: string, ms: number, fn: () => T | undefined | Promise<T | undefined>): Promise<T> {
  return new Promise((resolve, reject) => {
    const t0 = Date.now();
    const tick = async (): Promise<void> => {
      try {
        const v = await fn();
        if (v !== undefined && v !== false) return resolve(v);
      } catch (e) {
        if (Date.now() - t0 > ms) return reject(e);
      }
      if (Date.now() - t0 > ms) return reject(new Error(`timed out after ${ms} ms waiting for ${what}`));
      setTimeout(() => void tick(), 100);
    };
    void tick();
  });
}
