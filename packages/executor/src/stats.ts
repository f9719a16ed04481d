import type { ExecutorStats, RunResult } from './types.js';

const WINDOW = 16_384;

/** Per-call latency over the last WINDOW calls and counts per status, for stats() and /metrics. */
export class StatsRecorder {
  private readonly ring = new Float64Array(WINDOW);
  private filled = 0;
  private next = 0;
  calls = 0;
  inFlight = 0;
  readonly byStatus: Record<string, number> = {};

  record(result: Pick<RunResult, 'status' | 'latencyMs'>): void {
    this.calls++;
    this.byStatus[result.status] = (this.byStatus[result.status] ?? 0) + 1;
    this.ring[this.next] = result.latencyMs;
    this.next = (this.next + 1) % WINDOW;
    this.filled = Math.min(WINDOW, this.filled + 1);
  }

  snapshot(): ExecutorStats {
    const xs = Array.from(this.ring.subarray(0, this.filled)).sort((a, b) => a - b);
    return {
      calls: this.calls,
      inFlight: this.inFlight,
      byStatus: { ...this.byStatus },
      latencyMs: {
        p50: quantile(xs, 0.5),
        p90: quantile(xs, 0.9),
        p99: quantile(xs, 0.99),
        max: xs.at(-1) ?? 0,
        mean: xs.length ? xs.reduce((a, b) => a + b, 0) / xs.length : 0,
      },
    };
  }
}

/** Nearest-rank quantile of sorted values (0 for none). */
export function quantile(sorted: readonly number[], q: number): number {
  if (sorted.length === 0) return 0;
  const i = Math.min(sorted.length - 1, Math.max(0, Math.ceil(q * sorted.length) - 1));
  return sorted[i] as number;
}
