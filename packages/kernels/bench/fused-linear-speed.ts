// pnpm --filter @agentrl/kernels bench:fused-linear
// Fused-linear policy loss (forward + backward, dWeight accumulated in place) at a 151,936-token
// vocabulary over T x H, as GFLOP/s (8 T V H flops: logits, recomputed logits, dWeight, dHidden)
// against the engine's FMA peak measured in the same run. With KERNELS_BENCH_BASELINE=/path/to/
// another build's agentrl.node, the same calls run on that addon too, interleaved, side by side.
import { mkdirSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { cpus } from 'node:os';
import { dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { loadNative } from '@agentrl/native';
import { Rng } from '@agentrl/protocol';
import type { KernelsAddon } from '../src/native/binding.js';
import { fmt, medianSeconds } from './timing.js';

const here = dirname(fileURLToPath(import.meta.url));
const root = resolve(here, '../../..');
const V = 151_936;
const quick = process.env.AGENTRL_BENCH_QUICK === '1';
const SHAPES: [number, number][] = quick
  ? [[256, 64]]
  : [
      [512, 64],
      [2048, 64],
      [512, 256],
      [2048, 256],
      [512, 1024],
    ];
/** The baseline (the 4x32 unpacked multiply of before) is slow: it runs only up to this many flops. */
const BASELINE_MAX_FLOPS = Number(process.env.KERNELS_BENCH_BASELINE_MAX_GFLOP ?? 200) * 1e9;

function inputs(T: number, H: number) {
  const rng = Rng.seeded(987654321);
  const rnd = () => rng.next() - 0.5;
  const hidden = Float32Array.from({ length: T * H }, () => rnd() * 2);
  const weight = Float32Array.from({ length: V * H }, () => rnd() * 0.05);
  const targets = Int32Array.from({ length: T }, (_, t) => (t * 7919) % V);
  const oldLogprobs = new Float32Array(T).fill(-Math.log(V));
  const advantages = Float32Array.from({ length: T }, (_, t) => (Math.floor(t / 256) % 2 === 0 ? 1 : -1));
  const lossMask = new Uint8Array(T).fill(1);
  const S = Math.ceil(T / 256);
  const cuSeqlens = Int32Array.from({ length: S + 1 }, (_, s) => Math.min(T, s * 256));
  return { hidden, weight, targets, oldLogprobs, advantages, lossMask, cuSeqlens };
}

function call(k: KernelsAddon, inp: ReturnType<typeof inputs>, T: number, H: number, dWeight: Float32Array) {
  return k.fusedLinear({
    ...inp,
    hiddenSize: H,
    vocabSize: V,
    dHidden: new Float32Array(T * H),
    dWeight,
    accumulate: true,
    logp: new Float32Array(T),
    config: {
      temperature: 1,
      clipLow: 0.2,
      clipHigh: 0.28,
      dualClip: 3,
      maxLogRatio: 20,
      aggregation: 0,
      sequenceRatio: 0,
      horizon: 0,
      tokenCount: -1,
      seqCount: -1,
      entropy: 0,
    },
  });
}

const addon = loadNative();
const current = addon.kernels as KernelsAddon;
const basePath = process.env.KERNELS_BENCH_BASELINE;
const baseline = basePath ? (createRequire(import.meta.url)(basePath).kernels as KernelsAddon) : undefined;
const peak = (addon.engine as { peakGflops(iters: number): { gflops: number; threads: number } }).peakGflops(
  20_000_000,
);
console.log(
  `FMA peak ${fmt(peak.gflops, 0)} GFLOP/s on ${peak.threads} threads (${cpus()[0]?.model ?? 'cpu'})`,
);
const rows: Record<string, unknown>[] = [];
for (const [T, H] of SHAPES) {
  const inp = inputs(T, H);
  const dWeight = new Float32Array(V * H);
  const flops = 8 * T * V * H;
  const runs = flops > 100e9 ? 1 : 3;
  const row: Record<string, number | string> = { T, H, V };
  // side by side per shape: baseline, then current (the machine is shared). The baseline runs once
  // (after a warm-up call below 100 GFLOP): at ~1 GFLOP/s one call takes minutes.
  if (baseline && flops <= BASELINE_MAX_FLOPS) {
    if (flops <= 100e9) call(baseline, inp, T, H, dWeight);
    const t0 = performance.now();
    call(baseline, inp, T, H, dWeight);
    row.baselineSeconds = (performance.now() - t0) / 1000;
  }
  row.seconds = await medianSeconds(runs, () => call(current, inp, T, H, dWeight));
  row.gflops = flops / (row.seconds as number) / 1e9;
  row.fractionOfPeak = (row.gflops as number) / peak.gflops;
  let line = `fused-linear T=${T} H=${H} V=${V}: ${fmt((row.seconds as number) * 1000, 0)} ms, ${fmt(row.gflops as number, 1)} GFLOP/s (${fmt(100 * (row.fractionOfPeak as number), 0)} % of peak)`;
  if (row.baselineSeconds !== undefined) {
    row.baselineGflops = flops / (row.baselineSeconds as number) / 1e9;
    row.speedup = (row.baselineSeconds as number) / (row.seconds as number);
    line += `; baseline ${fmt((row.baselineSeconds as number) * 1000, 0)} ms, ${fmt(row.baselineGflops as number, 1)} GFLOP/s; ${fmt(row.speedup as number)}x`;
  }
  console.log(line);
  rows.push(row);
}
mkdirSync(resolve(root, 'bench-results'), { recursive: true });
writeFileSync(
  resolve(root, 'bench-results/kernels-fused-linear.json'),
  `${JSON.stringify({ date: new Date().toISOString(), peak, baseline: basePath ?? null, rows }, null, 2)}\n`,
);
console.log('wrote bench-results/kernels-fused-linear.json');
