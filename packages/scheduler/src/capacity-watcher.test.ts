import type { EngineAdapter, EngineLoad } from '@agentrl/rollout';
import { describe, expect, it } from 'vitest';
import { watchEngineCapacity } from './capacity-watcher.js';
import { createKvAwareScheduler } from './kv-aware-scheduler.js';

/** An engine whose only behaviour is its load report. */
function reporting(report: () => EngineLoad | Promise<EngineLoad>): EngineAdapter {
  return {
    name: 'reporting',
    generate: () => Promise.reject(new Error('not used')),
    release: async () => {},
    load: async () => report(),
    updateWeights: async () => {},
    close: async () => {},
  };
}

describe('watchEngineCapacity', () => {
  it('applies reported capacity changes, which wakes waiting trajectories', async () => {
    let cap = 100;
    const a = reporting(() => ({ kvCapacityTokens: cap, kvUsage: null, running: null, waiting: null }));
    const b = reporting(() => {
      throw new Error('down');
    });
    const s = createKvAwareScheduler(
      [
        { engine: a, capacityTokens: 100 },
        { engine: b, capacityTokens: 50 },
      ],
      { overcommit: 2 },
    );
    const watcher = watchEngineCapacity(s, { intervalMs: 60_000 });
    await s.acquire(200);
    const waiting = s.acquire(150);
    cap = 200;
    await watcher.refresh();
    expect((await waiting).engine).toBe(a);
    expect(s.snapshot().capacity).toEqual([200, 50]); // b did not answer: its capacity is kept
    watcher.stop();
  });
});
