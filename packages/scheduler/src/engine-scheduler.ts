import type { EngineAdapter, Scheduler } from '@agentrl/rollout';
import { createKvAwareScheduler } from './kv-aware-scheduler.js';
import { createStaticScheduler } from './static-scheduler.js';

export interface EngineSchedulerOptions {
  kind?: 'kv-aware' | 'static';
  /** Capacity for engines that do not report theirs (tokens). */
  defaultCapacityTokens?: number;
}

/**
 * Builds a scheduler over adapters, taking each engine's KV capacity from its own load report
 * (vLLM `/metrics` cache_config_info, SGLang `/get_load`, the native generator's cache size).
 */
export async function createEngineScheduler(
  adapters: readonly EngineAdapter[],
  { kind = 'kv-aware', defaultCapacityTokens = 1 << 20 }: EngineSchedulerOptions = {},
): Promise<Scheduler<EngineAdapter>> {
  const capacities = await Promise.all(
    adapters.map(async (a) => {
      try {
        return (await a.load()).kvCapacityTokens ?? defaultCapacityTokens;
      } catch {
        return defaultCapacityTokens;
      }
    }),
  );
  const engines = adapters.map((engine, i) => ({ engine, capacityTokens: capacities[i]! }));
  return kind === 'kv-aware' ? createKvAwareScheduler(engines) : createStaticScheduler(engines);
}
