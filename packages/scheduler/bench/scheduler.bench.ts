/**
 * Scheduler benchmark in simulated time: the real KV-aware and static schedulers place one RL
 * step's trajectories on 8, 16 and 64 simulated engines. Prints makespan and GPU idle time of each
 * policy as ratios against the static split of the same run (same workload draws), medians over
 * seeds, and writes the headline figures to <repo>/bench-results/scheduler.json.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { SimEngineConfig } from '../src/simulator/sim-engine.js';
import { type SimulationResult, simulateStep } from '../src/simulator/simulate.js';
import { DEFAULT_WORKLOAD, generateWorkload } from '../src/simulator/workload.js';

const ENGINE_COUNTS = [8, 16, 64];
const SEEDS = [1, 2, 3];
const TRAJECTORIES_PER_ENGINE = 256; // rStar2-Agent: 512 prompts × 32 samples over 64 GPUs
const MAX_RESPONSE = 8192;

/** A 14B model on one large GPU: decode is memory-bound (weights + KV read per step). */
const BASE_ENGINE: Omit<SimEngineConfig, 'kvCapacityTokens'> = {
  maxRunning: 256,
  stepBaseMs: 6,
  stepPerSeqMs: 0.02,
  stepPerKvTokenMs: 3.7e-5,
  prefillPerTokenMs: 0.03,
};
const REGIMES = [
  { name: 'kv-rich (400K tokens/engine)', kvCapacityTokens: 400_000 },
  { name: 'kv-bound (100K tokens/engine)', kvCapacityTokens: 100_000 },
];
const POLICIES = [
  { label: 'static round-robin', scheduler: 'static' as const, overcommit: 1 },
  { label: 'kv-aware, worst-case', scheduler: 'kv-aware' as const, overcommit: 1 },
  { label: 'kv-aware, overcommit 2', scheduler: 'kv-aware' as const, overcommit: 2 },
  { label: 'kv-aware, overcommit 4', scheduler: 'kv-aware' as const, overcommit: 4 },
];

const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? s[m]! : (s[m - 1]! + s[m]!) / 2;
};

const json: Record<string, unknown> = {
  machine: 'simulated time (host speed irrelevant)',
  trajectoriesPerEngine: TRAJECTORIES_PER_ENGINE,
  maxResponseTokens: MAX_RESPONSE,
  seeds: SEEDS,
  results: [] as unknown[],
};
const started = performance.now();
for (const regime of REGIMES) {
  console.log(
    `\n${regime.name}; ${TRAJECTORIES_PER_ENGINE} trajectories per engine; medians over ${SEEDS.length} seeds`,
  );
  console.log(
    'engines  policy                   makespan s  ×static  idle %  ×static  preemptions  recomputed Mtok',
  );
  for (const engines of ENGINE_COUNTS) {
    const runs = new Map<string, SimulationResult[]>();
    for (const seed of SEEDS) {
      const workload = generateWorkload({
        ...DEFAULT_WORKLOAD,
        maxResponseTokens: MAX_RESPONSE,
        trajectories: TRAJECTORIES_PER_ENGINE * engines,
        seed,
      });
      for (const p of POLICIES) {
        const r = await simulateStep(
          {
            engines,
            engine: { ...BASE_ENGINE, kvCapacityTokens: regime.kvCapacityTokens },
            scheduler: p.scheduler,
            overcommit: p.overcommit,
            maxResponseTokens: MAX_RESPONSE,
          },
          workload,
        );
        runs.set(p.label, [...(runs.get(p.label) ?? []), r]);
      }
    }
    const staticRuns = runs.get(POLICIES[0]!.label)!;
    for (const p of POLICIES) {
      const rs = runs.get(p.label)!;
      const makespan = median(rs.map((r) => r.makespanSeconds));
      const idle = median(rs.map((r) => r.idleFraction));
      const makespanRatio = median(rs.map((r, i) => r.makespanSeconds / staticRuns[i]!.makespanSeconds));
      const idleRatio = median(rs.map((r, i) => r.idleEngineSeconds / staticRuns[i]!.idleEngineSeconds));
      const preemptions = median(rs.map((r) => r.preemptions));
      const recomputed = median(rs.map((r) => r.recomputedTokens)) / 1e6;
      console.log(
        `${String(engines).padStart(7)}  ${p.label.padEnd(23)}  ${makespan.toFixed(1).padStart(10)}  ${makespanRatio.toFixed(2).padStart(7)}  ${(idle * 100).toFixed(1).padStart(6)}  ${idleRatio.toFixed(2).padStart(7)}  ${String(Math.round(preemptions)).padStart(11)}  ${recomputed.toFixed(1).padStart(15)}`,
      );
      (json.results as unknown[]).push({
        regime: regime.name,
        engines,
        policy: p.label,
        makespanSeconds: +makespan.toFixed(2),
        makespanVsStatic: +makespanRatio.toFixed(3),
        idlePercent: +(idle * 100).toFixed(2),
        idleEngineSecondsVsStatic: +idleRatio.toFixed(3),
        preemptions,
        recomputedTokens: Math.round(recomputed * 1e6),
        throughputTokensPerSecond: Math.round(median(rs.map((r) => r.throughputTokensPerSecond))),
      });
    }
  }
}
console.log(`\n(${((performance.now() - started) / 1000).toFixed(1)} s of wall time)`);
const root = resolve(dirname(fileURLToPath(import.meta.url)), '../../..');
mkdirSync(resolve(root, 'bench-results'), { recursive: true });
writeFileSync(resolve(root, 'bench-results/scheduler.json'), `${JSON.stringify(json, null, 2)}\n`);
console.log('wrote bench-results/scheduler.json');
