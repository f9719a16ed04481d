/**
 * The whole RL step at 8, 16 and 64 GPUs in simulated time (issue 15): rollouts on the simulator's
 * engine model with tool calls on a bounded executor pool, then training compute, the gradient
 * all-reduce and the weight sync. Prints where the step's time goes, what asynchronous rollouts
 * (engines and trainers on separate GPUs, one step off-policy) and partial rollouts would save, and
 * writes the figures to <repo>/bench-results/step-time.json. Assumptions: BENCHMARKS.md.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import {
  allReduceSeconds,
  type StepTimeConfig,
  type StepTimeResult,
  simulateStepTime,
} from '../src/simulator/step-time.js';
import { DEFAULT_WORKLOAD, generateWorkload } from '../src/simulator/workload.js';

const GPU_COUNTS = [8, 16, 64];
const PROMPTS = 512;
const SAMPLES = 32; // RoC oversamples 32 and keeps 16
const SEED = 1;

// Qwen3-14B (14.8e9 parameters; 40 layers, 8 KV heads of 128: 160 KiB of bf16 KV per token) on MI300X.
const PARAMS = 14.8e9;
const base: Omit<StepTimeConfig, 'rolloutGpus' | 'trainGpus' | 'toolWorkers'> = {
  gpusPerNode: 8,
  engine: {
    kvCapacityTokens: 800_000, // ~130 GB of a 192 GB GPU after weights and activations
    maxRunning: 256,
    stepBaseMs: 6,
    stepPerSeqMs: 0.02,
    stepPerKvTokenMs: 3.7e-5,
    prefillPerTokenMs: 0.03,
  },
  overcommit: 4,
  maxResponseTokens: 8192,
  toolDispatchSeconds: 0.005,
  keptFraction: 16 / 32,
  parameters: PARAMS,
  flopsPerTokenPerParameter: 8,
  peakFlops: 1307e12,
  mfu: 0.35,
  gradientBytes: 2,
  intraNodeBytesPerSecond: 300e9,
  interNodeBytesPerSecond: 50e9,
  weightSyncSeconds: 3,
  partialRolloutFraction: 0.9,
};
const WORKERS_PER_NODE = 64;
/** Weight sync between separate GPUs: bf16 weights once over the network (NCCL broadcast, pipelined). */
const networkSyncSeconds = (trainGpus: number) =>
  trainGpus + 1 > base.gpusPerNode
    ? (PARAMS * 2) / base.interNodeBytesPerSecond
    : (PARAMS * 2) / base.intraNodeBytesPerSecond;

const workload = generateWorkload({
  ...DEFAULT_WORKLOAD,
  toolCallProbability: 0.85,
  trajectories: PROMPTS * SAMPLES,
  seed: SEED,
});
const f = (x: number) => x.toFixed(1);
const rows: unknown[] = [];
const started = performance.now();
console.log(
  `${PROMPTS} prompts x ${SAMPLES} samples per step; Qwen3-14B on MI300X; colocated (rollout, then training, on every GPU)`,
);
console.log(
  'GPUs  rollout s (tool-exposed)  tool calls  queue ms  train s  all-reduce s  sync s  step s | async best split: rollout+train GPUs, step s, saves | partial 90%: saves s',
);
for (const gpus of GPU_COUNTS) {
  const nodes = Math.ceil(gpus / base.gpusPerNode);
  const toolWorkers = WORKERS_PER_NODE * nodes;
  const sync = await simulateStepTime({ ...base, rolloutGpus: gpus, trainGpus: gpus, toolWorkers }, workload);
  // Asynchronous: split the GPUs; the step time is the slower of the two sides.
  let best: { r: StepTimeResult; step: number; train: number } | undefined;
  for (const share of [0.5, 0.625, 0.75, 0.875]) {
    const rolloutGpus = Math.round(gpus * share);
    const trainGpus = gpus - rolloutGpus;
    const r = await simulateStepTime(
      { ...base, rolloutGpus, trainGpus, toolWorkers, weightSyncSeconds: networkSyncSeconds(trainGpus) },
      workload,
    );
    const train = r.trainComputeSeconds + r.gradientAllReduceSeconds + r.weightSyncSeconds;
    const step = Math.max(r.rolloutSeconds, train);
    if (!best || step < best.step) best = { r, step, train };
  }
  const partialSaves = sync.rolloutSeconds - sync.partialRolloutSeconds;
  console.log(
    `${String(gpus).padStart(4)}  ${f(sync.rolloutSeconds).padStart(9)} (${f(sync.toolExposedSeconds)})  ${String(sync.toolCalls).padStart(10)}  ${(sync.meanToolQueueSeconds * 1000).toFixed(0).padStart(8)}  ${f(sync.trainComputeSeconds).padStart(7)}  ${sync.gradientAllReduceSeconds.toFixed(2).padStart(12)}  ${f(sync.weightSyncSeconds).padStart(6)}  ${f(sync.synchronousStepSeconds).padStart(6)} | ${best!.r.rolloutGpus}+${best!.r.trainGpus}, ${f(best!.step)}, ${f(sync.synchronousStepSeconds - best!.step)} | ${f(partialSaves)}`,
  );
  rows.push({
    gpus,
    toolWorkers,
    synchronous: sync,
    asyncBest: { ...best!.r, stepSeconds: best!.step, trainSideSeconds: best!.train },
    partialRolloutSavesSeconds: partialSaves,
  });
}
console.log(
  `\nall-reduce of bf16 gradients (${((PARAMS * 2) / 1e9).toFixed(1)} GB): ${GPU_COUNTS.map((g) => `${g} GPUs ${allReduceSeconds(PARAMS * 2, g, { ...base, rolloutGpus: g, trainGpus: g, toolWorkers: 0 }).toFixed(2)} s`).join(', ')}`,
);
console.log(`(simulated in ${((performance.now() - started) / 1000).toFixed(0)} s of wall time)`);
const out = resolve(dirname(fileURLToPath(import.meta.url)), '../../../bench-results/step-time.json');
mkdirSync(dirname(out), { recursive: true });
writeFileSync(
  out,
  `${JSON.stringify({ assumptions: { ...base, workersPerNode: WORKERS_PER_NODE, prompts: PROMPTS, samples: SAMPLES, seed: SEED, toolCallProbability: 0.85 }, rows }, null, 2)}\n`,
);
