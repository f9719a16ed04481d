import type { EngineAdapter, Scheduler } from '@agentrl/rollout';

export interface CapacityWatcher {
  /** Reads every engine's report once now and applies changed capacities. */
  refresh(): Promise<void>;
  stop(): void;
}

/**
 * Keeps the scheduler's capacities equal to what the engines report (a vLLM restart with a
 * different `--gpu-memory-utilization`, an SGLang server that lost memory): reads `load()` every
 * `intervalMs` and calls `setCapacity` when a figure changed. Waiting trajectories are woken by
 * the scheduler itself; this only keeps its numbers honest. An engine that does not answer keeps
 * its last capacity.
 */
export function watchEngineCapacity(
  scheduler: Scheduler<EngineAdapter>,
  { intervalMs = 10_000 }: { intervalMs?: number } = {},
): CapacityWatcher {
  const refresh = async () => {
    const reports = await Promise.allSettled(scheduler.engines.map((e) => e.load()));
    const current = scheduler.snapshot().capacity;
    reports.forEach((r, i) => {
      const cap = r.status === 'fulfilled' ? r.value.kvCapacityTokens : null;
      if (cap !== null && cap > 0 && cap !== current[i]) scheduler.setCapacity(i, cap);
    });
  };
  const timer = setInterval(() => void refresh().catch(() => {}), intervalMs);
  timer.unref();
  return { refresh, stop: () => clearInterval(timer) };
}
