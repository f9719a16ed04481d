// The CPU kernel paths side by side (issue 22): FMA peak, the 100M config's GEMMs, training steps,
// AdamW and decode, on every path the loaded addon supports, medians of a few repeats. Run it on an
// old -march=native addon too (AGENTRL_NATIVE_PATH=...; it has no path switch and is reported as
// `native`) to compare a dispatched path with the build it replaced:
//   pnpm --filter @agentrl/engine exec vitest run --config bench/vitest.config.ts bench/cpu-kernels.bench-run.ts
// CPU_KERNELS_BENCH_PATHS=avx2,portable limits the paths. Writes bench-results/cpu-kernels-<label>.json
// (label: CPU_KERNELS_BENCH_LABEL, default `dispatch`).
import { execSync } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { cpus } from 'node:os';
import { dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { type CpuKernelPath, loadNative, setCpuKernels } from '@agentrl/native';
import { it } from 'vitest';
import { packSequences } from '../src/batch.js';
import type { ModelConfigInput } from '../src/config.js';
import { createModel, type Model } from '../src/model.js';
import { engineBinding, type ProductEntries } from '../src/native.js';
import { decodeRun, LLAMA_100M } from './decode-run.js';

const TEN_M: ModelConfigInput = {
  architectures: ['Qwen3ForCausalLM'],
  vocab_size: 8192,
  hidden_size: 384,
  intermediate_size: 1024,
  num_hidden_layers: 6,
  num_attention_heads: 6,
  num_key_value_heads: 2,
  head_dim: 64,
  tie_word_embeddings: true,
  max_position_embeddings: 2048,
};

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] ?? Number.NaN;
// CPU_KERNELS_BENCH_CLOCK=cpu times by the process's CPU seconds instead of the wall clock: with
// OMP_NUM_THREADS=1 that is the work done, which a loaded shared machine disturbs far less.
const cpuClock = process.env.CPU_KERNELS_BENCH_CLOCK === 'cpu';
const now = () => {
  if (!cpuClock) return performance.now() / 1000;
  const u = process.cpuUsage();
  return (u.user + u.system) / 1e6;
};

function batchOf(vocab: number, seqs: number, len: number) {
  return packSequences(
    Array.from({ length: seqs }, (_, i) => Array.from({ length: len }, (_, t) => (i * 131 + t * 7) % vocab)),
  );
}

function trainSeconds(model: Model, seqs: number, reps: number): number {
  const batch = batchOf(model.shape.vocab, seqs, 256);
  const mask = new Uint8Array(batch.tokenIds.length).fill(1);
  const step = () => {
    const t0 = now();
    model.sftLoss(batch, mask);
    model.zeroGrad();
    return now() - t0;
  };
  step();
  return median(Array.from({ length: reps }, step));
}

function adamwSeconds(model: Model, reps: number): number {
  const step = (i: number) => {
    const t0 = now();
    model.native.adamw(model.handle, 1e-4, 0.9, 0.95, 1e-8, 0.1, i + 1, 1);
    return now() - t0;
  };
  step(0);
  return median(Array.from({ length: reps }, (_, i) => step(i + 1)));
}

/** Decode tokens per second (by the CPU clock: per CPU second of the whole process), median of 3. */
async function decodeTokensPerS(model: Model, batch: number, tokens: number): Promise<number> {
  const out: number[] = [];
  for (let r = 0; r < 3; r++) {
    const run = await decodeRun(model, batch, tokens, true);
    out.push(cpuClock ? (batch * 1000) / run.decodeCpuMsPerStep : run.decodeTokensPerS);
  }
  return median(out);
}

it('CPU kernel paths', async () => {
  const native = engineBinding() as ReturnType<typeof engineBinding> &
    ProductEntries & { peakGflops(iters: number): { gflops: number; isa: string } };
  const dispatch = loadNative().cpuKernels as { info(): { supported: CpuKernelPath[] } } | undefined;
  const only = process.env.CPU_KERNELS_BENCH_PATHS?.split(',');
  const paths = dispatch
    ? dispatch.info().supported.filter((p) => !only || only.includes(p))
    : ['native' as const];
  const small = createModel(TEN_M, { seed: 1 });
  const big = createModel(LLAMA_100M, { seed: 1 });
  const results: Record<string, Record<string, number>> = {};
  for (const path of paths) {
    if (path !== 'native') setCpuKernels(path);
    const peak = median(Array.from({ length: 5 }, () => native.peakGflops(1e7).gflops));
    const T = 512;
    const H = 768;
    const shapes: Array<[number, number]> = [
      [H, 768],
      [H, 256],
      [H, 256],
      [768, H],
      [H, 2048],
      [H, 2048],
      [2048, H],
    ];
    // Y = X W^T, dX = dY W, dW = dY^T X per linear, operands made once, each product timed by `now`
    const products = shapes.flatMap(([inF, outF]) => [
      { ta: false, tb: true, m: T, n: outF, k: inF },
      { ta: false, tb: false, m: T, n: inF, k: outF },
      { ta: true, tb: false, m: outF, n: inF, k: T },
    ]);
    const operands = products.map((p) => ({
      a: new Float32Array(p.m * p.k).fill(0.5),
      b: new Float32Array(p.k * p.n).fill(0.25),
      c: new Float32Array(p.m * p.n),
    }));
    const flops = products.reduce((f, p) => f + 2 * p.m * p.n * p.k, 0);
    const rates = Array.from({ length: 5 }, () => {
      let secs = 0;
      products.forEach((p, i) => {
        const o = operands[i]!;
        const t0 = now();
        native.gemm(p.ta, p.tb, p.m, p.n, p.k, 1, o.a, o.b, 0, o.c, false);
        secs += now() - t0;
      });
      return flops / secs / 1e9;
    });
    results[path] = {
      fma_peak_gflops: peak,
      gemm_100M_gflops: median(rates),
      train_10M_4x256_seconds: trainSeconds(small, 4, 5),
      train_100M_2x256_seconds: trainSeconds(big, 2, 3),
      adamw_100M_seconds: adamwSeconds(big, 5),
      decode_10M_batch1_tokens_per_s: await decodeTokensPerS(small, 1, 32),
      decode_10M_batch64_tokens_per_s: await decodeTokensPerS(small, 64, 16),
      decode_100M_batch1_tokens_per_s: await decodeTokensPerS(big, 1, 16),
    };
    console.log(path, JSON.stringify(results[path]));
  }
  const root = resolve(dirname(fileURLToPath(import.meta.url)), '../../..');
  const label = process.env.CPU_KERNELS_BENCH_LABEL ?? 'dispatch';
  const summary = {
    machine: `${cpus().length} x ${cpus()[0]?.model ?? 'cpu'}`,
    date: new Date().toISOString(),
    commit: execSync('git rev-parse --short HEAD', { cwd: root, encoding: 'utf8' }).trim(),
    addon: process.env.AGENTRL_NATIVE_PATH ?? 'native/build/Release/agentrl.node',
    clock: cpuClock ? 'process CPU seconds' : 'wall seconds',
    omp_num_threads: process.env.OMP_NUM_THREADS ?? 'default',
    results,
  };
  mkdirSync(resolve(root, 'bench-results'), { recursive: true });
  writeFileSync(
    resolve(root, `bench-results/cpu-kernels-${label}.json`),
    `${JSON.stringify(summary, null, 2)}\n`,
  );
});
