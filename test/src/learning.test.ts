import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { cpuKernels } from '@agentrl/engine';
import { afterAll, describe, expect, it } from 'vitest';
import { readJsonl, runCli } from './cli.js';

/**
 * Learning is behaviour: the `learn` preset (the default recipe's model, data and SFT, then 15 RL
 * steps and a 50-problem evaluation; presets.ts) must learn on two seeds on the CPU kernel path this
 * machine runs by default, and on the first seed on the portable one (whose last bits differ: no FMA).
 * The portable path runs one seed only: a portable run takes about three times the CPU of an AVX2 one,
 * so its second seed was 3/8 of this test's CPU time and kept CI over 30 minutes on two cores
 * (BENCHMARKS "Learning" has the portable path over 8 seeds). Floors: held-out
 * avg@4 after the SFT cold start and after the RL steps, well below what the recipe reaches (BENCHMARKS
 * "Learning") and far above what a run scores that never learned to copy the factors (0-1 %). Seeds 3
 * and 4 are the ones where the old recipe failed: its SFT ended at 0.0 % on both.
 */
const runs = mkdtempSync(join(tmpdir(), 'agentrl-learning-'));
afterAll(() => rmSync(runs, { recursive: true, force: true }));

// The old recipe (HF's 0.02 init) ended SFT at 0.0 % on both of these seeds (AVX2, 693b500).
const SEEDS = [3, 4];
const FLOOR_AFTER_SFT = 0.1;
const FLOOR_AFTER_RL = 0.35;
const RL_GAIN = 0.1;
const kernels = cpuKernels();
const pathsFor = (seed: number) => [...new Set([kernels.active, ...(seed === SEEDS[0] ? ['portable'] : [])])];

/**
 * One run of the `learn` preset on one CPU kernel path: one thread on a SIMD path, two on the portable
 * one, whose run is the test's longest: once the SIMD runs end it has both cores (gradients and
 * weights are bit-identical for any thread count, engine README; on one thread it kept a core idle
 * for its last ~7 minutes).
 */
function train(path: string, seed: number) {
  const name = `${path}-s${seed}`;
  const args = ['train', '--preset', 'learn', '--seed', String(seed), '--name', name, '--runsDir', runs];
  const threads = path === 'portable' ? '2' : '1';
  const run = runCli([...args, '--threads', threads, '--no-progress'], { AGENTRL_CPU_KERNELS: path });
  return { name, run };
}
// Every run starts with the first test: the portable run takes longer than the SIMD ones, and once
// those end it gets their cores (started a seed at a time, each seed waited for its slower portable
// run while a core stood idle).
const started = new Map<number, ReturnType<typeof train>[]>();
const runsOf = (seed: number) => {
  if (started.size === 0)
    for (const s of SEEDS)
      started.set(
        s,
        pathsFor(s).map((p) => train(p, s)),
      );
  return started.get(seed)!;
};

describe('the recipe learns (held-out accuracy floors after SFT and after RL)', () => {
  if (!kernels.supported.includes('avx512'))
    it.skip('avx512 CPU kernel path (not supported by this CPU: not exercised)', () => {});
  for (const seed of SEEDS) {
    pathsFor(seed).forEach((path, i) => {
      it(`seed ${seed} on the ${path} CPU kernel path`, { timeout: 900_000 }, async () => {
        const { name, run } = runsOf(seed)[i]!;
        const r = await run;
        expect(r.code, r.stderr).toBe(0);
        const world = JSON.parse(readFileSync(join(runs, name, 'config.json'), 'utf8')).world;
        expect(world.cpuKernels.active).toBe(path);
        const m = readJsonl(join(runs, name, 'metrics.jsonl'));
        const evals = m.filter((x) => x.phase === 'eval').map((x) => x.accuracy as number);
        const rl = m.filter((x) => x.phase === 'rl');
        console.log(`learning: ${name} held-out avg@4 after SFT ${evals[0]}, after RL ${evals.at(-1)}`);
        expect(evals[0], 'held-out accuracy after SFT').toBeGreaterThanOrEqual(FLOOR_AFTER_SFT);
        expect(evals.at(-1), 'held-out accuracy after RL').toBeGreaterThanOrEqual(FLOOR_AFTER_RL);
        expect(evals.at(-1)! - evals[0]!, 'what RL added').toBeGreaterThanOrEqual(RL_GAIN);
        // the RL steps updated the model
        expect(rl.filter((x) => (x.gradNorm as number) > 0).length).toBeGreaterThan(rl.length / 2);
      });
    });
  }
});
