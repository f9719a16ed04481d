import { createRequire } from 'node:module';
import { pathToFileURL } from 'node:url';
import { Worker } from 'node:worker_threads';
import { resolveOptions, type VerifyOptions } from './config.js';
import { MathVerifyError } from './errors.js';
import type { VerifyResult } from './verify.js';

export interface IsolatedOptions extends Partial<VerifyOptions> {
  /**
   * Wall-clock limit per item in ms, enforced by terminating the worker thread: covers what the
   * in-process budget cannot interrupt (the CAS fallback). Default: 20 × timeoutMs, at least 1 s.
   */
  hardTimeoutMs?: number;
}

/** Extra time for the first item: thread start, module load, tsx from source, the CAS warm-up. */
const STARTUP_ALLOWANCE_MS = 15_000;

type Message = { i: number; result: VerifyResult } | { done: true };

/**
 * The worker for this build: `dist/worker.js` from the built package; from source (tests, tsx) the
 * `.ts` worker behind tsx's loader, registered inside the worker before it imports the file.
 */
function createWorker(): Worker {
  if (!import.meta.url.endsWith('.ts')) return new Worker(new URL('./worker.js', import.meta.url));
  // require.resolve answers with the CommonJS build; the worker needs its ES module twin
  const tsx = pathToFileURL(
    createRequire(import.meta.url)
      .resolve('tsx/esm/api')
      .replace(/\.cjs$/, '.mjs'),
  ).href;
  const entry = new URL('./worker.ts', import.meta.url).href;
  const code = `import(${JSON.stringify(tsx)}).then((m) => { m.register(); return import(${JSON.stringify(entry)}); });`;
  return new Worker(code, { eval: true });
}

/**
 * `verifyBatch` in a worker thread with a hard kill: an item that overruns `hardTimeoutMs` gets
 * `{ correct: false, reason: 'timeout' }`, the worker is terminated and a fresh one carries on with
 * the rest. Use this form when `casFallback` is on, or when the trainer must never stall.
 */
export async function verifyBatchIsolated(
  items: readonly { gold: string; response: string }[],
  opts: IsolatedOptions = {},
): Promise<VerifyResult[]> {
  const { hardTimeoutMs, ...verifyOpts } = opts;
  const resolved = resolveOptions(verifyOpts);
  const hard = hardTimeoutMs ?? Math.max(1_000, 20 * resolved.timeoutMs);
  const results: VerifyResult[] = new Array(items.length);
  let next = 0;
  while (next < items.length) {
    const start = next;
    const rest = items.slice(start);
    next = await runWorker(rest, resolved, hard, (i, r) => {
      results[start + i] = r;
    }).then((done) => start + done);
    if (next < items.length && results[next] === undefined) {
      results[next] = { correct: false, extracted: null, reason: 'timeout' };
      next++;
    }
  }
  return results;
}

/** Resolves with how many items finished before the worker ended (all of them, or up to a kill). */
function runWorker(
  items: readonly { gold: string; response: string }[],
  opts: VerifyOptions,
  hardMs: number,
  onResult: (i: number, r: VerifyResult) => void,
): Promise<number> {
  return new Promise((resolve, reject) => {
    let finished = 0;
    let settled = false;
    const worker = createWorker();
    // the first item also pays for the worker's start-up (module load, tsx in source mode)
    let timer = setTimeout(kill, hardMs + STARTUP_ALLOWANCE_MS);
    function settle(n: number): void {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      void worker.terminate();
      resolve(n);
    }
    function kill(): void {
      settle(finished);
    }
    worker.on('message', (m: Message) => {
      if ('done' in m) return settle(items.length);
      onResult(m.i, m.result);
      finished = m.i + 1;
      clearTimeout(timer);
      timer = setTimeout(kill, hardMs);
    });
    worker.on('error', (e) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      reject(
        new MathVerifyError(
          'WORKER_FAILED',
          `math-verify: the verify worker failed (${String(e)}); run verifyBatch in-process instead`,
          { cause: e },
        ),
      );
    });
    worker.on('exit', () => settle(finished));
    worker.postMessage({ items, opts });
  });
}
