import { RolloutError, RolloutErrorCode } from '@agentrl/rollout';

export interface RetryOptions {
  /** Tries in all, the first included; default 5. */
  attempts?: number;
  /** Wait before the second try, ms; doubles each time; default 250. */
  baseDelayMs?: number;
  /** Longest wait between tries, ms; default 4000. */
  maxDelayMs?: number;
}

const sleep = (ms: number, signal?: AbortSignal) =>
  new Promise<void>((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason);
    const timer = setTimeout(resolve, ms);
    signal?.addEventListener(
      'abort',
      () => {
        clearTimeout(timer);
        reject(signal.reason);
      },
      { once: true },
    );
  });

/**
 * Runs `fn`, retrying while it fails with ENGINE_UNREACHABLE (a server restarting, a dropped
 * connection) with capped exponential backoff; then throws one error that says how long it tried.
 * Other failures (HTTP errors, timeouts, aborts) are not retried: they are not the network's fault.
 */
export async function withRetry<T>(
  what: string,
  fn: () => Promise<T>,
  options: RetryOptions = {},
  signal?: AbortSignal,
): Promise<T> {
  const attempts = Math.max(1, options.attempts ?? 5);
  const base = options.baseDelayMs ?? 250;
  const cap = options.maxDelayMs ?? 4_000;
  const started = Date.now();
  for (let i = 1; ; i++) {
    try {
      return await fn();
    } catch (err) {
      if (!(err instanceof RolloutError) || err.code !== RolloutErrorCode.ENGINE_UNREACHABLE) throw err;
      if (i >= attempts) {
        throw new RolloutError(
          RolloutErrorCode.ENGINE_UNREACHABLE,
          `${err.message} (gave up on ${what} after ${attempts} attempts over ${Date.now() - started} ms)`,
          { cause: err },
        );
      }
      await sleep(Math.min(cap, base * 2 ** (i - 1)), signal);
    }
  }
}
