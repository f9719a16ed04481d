import type { Scheduler } from '@agentrl/rollout';
import { createKvAwareScheduler } from '../kv-aware-scheduler.js';
import { createStaticScheduler } from '../static-scheduler.js';
import { createSimClock } from './sim-clock.js';
import { createSimEngine, type SimEngine, type SimEngineConfig } from './sim-engine.js';
import { playTrajectory, type TrajectorySpec } from './workload.js';

export interface SimulationConfig {
  engines: number;
  engine: SimEngineConfig;
  scheduler: 'kv-aware' | 'static';
  /** The KV budget each trajectory reserves: prompt + this (its worst case). */
  maxResponseTokens: number;
  /** KV-aware only: reservations may reach this multiple of capacity (1 = never overflow). */
  overcommit?: number;
}

export interface SimulationResult {
  scheduler: 'kv-aware' | 'static';
  overcommit: number;
  engines: number;
  trajectories: number;
  /** Simulated seconds from the first request to the last trajectory's end. */
  makespanSeconds: number;
  /** Engine-seconds with nothing running or prefilling, over engines × makespan. */
  idleFraction: number;
  idleEngineSeconds: number;
  preemptions: number;
  recomputedTokens: number;
  generatedTokens: number;
  /** Generated tokens per simulated second, all engines. */
  throughputTokensPerSecond: number;
  /** Mean seconds a trajectory waited for the scheduler before its first turn. */
  meanQueueSeconds: number;
}

/**
 * Runs one rollout step in simulated time: each trajectory asks the real scheduler for an engine,
 * keeps it for all its turns (prefix cache), waits for its tool calls between turns, and releases
 * it at the end. Engines are fluid models of continuous batching with a bounded KV cache.
 */
export async function simulateStep(
  config: SimulationConfig,
  workload: readonly TrajectorySpec[],
): Promise<SimulationResult> {
  const clock = createSimClock();
  const engines = Array.from({ length: config.engines }, () => createSimEngine(clock, config.engine));
  const scheduled = engines.map((engine) => ({ engine, capacityTokens: engine.config.kvCapacityTokens }));
  const scheduler: Scheduler<SimEngine> =
    config.scheduler === 'kv-aware'
      ? createKvAwareScheduler(scheduled, { overcommit: config.overcommit ?? 1 })
      : createStaticScheduler(scheduled);
  let queueSeconds = 0;
  let generated = 0;
  const runOne = async (spec: TrajectorySpec) => {
    const lease = await scheduler.acquire(spec.promptTokens + config.maxResponseTokens);
    queueSeconds += clock.now();
    try {
      await playTrajectory(
        lease.engine,
        spec,
        (call) => clock.sleep(call.seconds),
        (tokens) => {
          generated += tokens;
        },
      );
    } finally {
      lease.release();
    }
  };
  await clock.run(() => Promise.all(workload.map(runOne)));
  const makespan = clock.now();
  for (const e of engines) e.finish();
  const idle = engines.reduce((s, e) => s + e.stats.idleSeconds, 0);
  return {
    scheduler: config.scheduler,
    overcommit: config.scheduler === 'kv-aware' ? (config.overcommit ?? 1) : 0,
    engines: config.engines,
    trajectories: workload.length,
    makespanSeconds: makespan,
    idleFraction: idle / (config.engines * makespan),
    idleEngineSeconds: idle,
    preemptions: engines.reduce((s, e) => s + e.stats.preemptions, 0),
    recomputedTokens: engines.reduce((s, e) => s + e.stats.recomputedTokens, 0),
    generatedTokens: generated,
    throughputTokensPerSecond: generated / makespan,
    meanQueueSeconds: queueSeconds / workload.length,
  };
}
