// pnpm --filter @agentrl/engine bench: training and sampling throughput of the native engine, as
// ratios against the machine's FMA peak and an independent tfjs-core CPU model, measured in one run.
import { mkdirSync, writeFileSync } from 'node:fs';
import { cpus } from 'node:os';
import { dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import type * as TF from '@tensorflow/tfjs-core';
import { it } from 'vitest';
import { packSequences } from '../src/batch.js';
import type { ModelConfigInput } from '../src/config.js';
import { createModel, type Model } from '../src/model.js';
import { engineBinding } from '../src/native.js';
import { referenceCrossEntropy, referenceForward, tf } from '../test/tfjs-reference.js';
import { decodeRun, LLAMA_100M } from './decode-run.js';

it('engine benchmark', async () => {
  const quick = process.env.ENGINE_BENCH_QUICK === '1';
  const native = engineBinding() as ReturnType<typeof engineBinding> & {
    peakGflops(iters: number): { gflops: number; threads: number; isa: string };
    gemmSeconds(m: number, n: number, k: number, ta: boolean, tb: boolean, reps: number): number;
  };

  const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] ?? Number.NaN;
  const now = () => performance.now() / 1000;
  const peaks: number[] = [];
  const samplePeak = () => peaks.push(native.peakGflops(1e7).gflops);

  const configs: Record<string, ModelConfigInput> = {
    '10M': {
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
    },
    '100M': LLAMA_100M,
  };

  /** Matmul and attention FLOPs of one forward+backward over `seqLens` (backward = 2x forward). */
  function trainFlops(model: Model, seqLens: number[]): { matmul: number; attention: number } {
    const s = model.shape;
    const perLayer =
      s.hidden * (s.heads * s.headDim) * 2 +
      s.hidden * (s.kvHeads * s.headDim) * 2 +
      3 * s.hidden * s.intermediate;
    const tokens = seqLens.reduce((a, b) => a + b, 0);
    const matmul = 6 * tokens * (perLayer * s.layers + s.vocab * s.hidden);
    const attention = 3 * s.layers * seqLens.reduce((a, L) => a + 2 * L * L * s.heads * s.headDim, 0);
    return { matmul, attention };
  }

  function batchOf(vocab: number, seqs: number, len: number) {
    const seqsArr = Array.from({ length: seqs }, (_, i) =>
      Array.from({ length: len }, (_, t) => (i * 131 + t * 7) % vocab),
    );
    return packSequences(seqsArr);
  }

  function trainStep(model: Model, batch: ReturnType<typeof packSequences>): number {
    const t0 = now();
    model.sftLoss(batch, new Uint8Array(batch.tokenIds.length).fill(1));
    model.zeroGrad();
    return now() - t0;
  }

  const results: Record<string, unknown> = {};
  samplePeak();

  // Training throughput at ~10M and ~100M.
  for (const [name, config] of Object.entries(configs)) {
    const model = createModel(config, { seed: 1 });
    const seqs = name === '10M' ? 4 : 2;
    const len = 256;
    const batch = batchOf(model.shape.vocab, seqs, len);
    trainStep(model, batch);
    const times: number[] = [];
    const ratios: number[] = [];
    const reps = quick ? 1 : 3;
    const flops = trainFlops(model, new Array(seqs).fill(len));
    for (let i = 0; i < reps; i++) {
      samplePeak();
      const dt = trainStep(model, batch);
      times.push(dt);
      // The machine is shared: each step is read against the peak sampled just before it.
      ratios.push((flops.matmul + flops.attention) / dt / 1e9 / (peaks.at(-1) ?? 1));
    }
    const t = median(times);
    results[`train_${name}`] = {
      params: model.numParameters,
      tokens: seqs * len,
      seconds_per_step: t,
      tokens_per_s: (seqs * len) / t,
      gflops: (flops.matmul + flops.attention) / t / 1e9,
      matmul_share_of_flops: flops.matmul / (flops.matmul + flops.attention),
      fraction_of_adjacent_peak: median(ratios),
    };
    console.log(
      `train ${name} (${(model.numParameters / 1e6).toFixed(1)}M params, ${seqs}x${len} tokens): ${t.toFixed(3)} s/step, ${((seqs * len) / t).toFixed(0)} tokens/s, ${((flops.matmul + flops.attention) / t / 1e9).toFixed(1)} GFLOP/s`,
    );
  }

  // The 100M config's GEMMs alone (T = 1024 tokens), forward and both backward products.
  {
    const T = 512;
    const c = configs['100M'] as { hidden_size: number; intermediate_size: number; vocab_size: number };
    const H = c.hidden_size;
    const shapes: Array<[number, number]> = [
      [H, 768],
      [H, 256],
      [H, 256],
      [768, H],
      [H, c.intermediate_size],
      [H, c.intermediate_size],
      [c.intermediate_size, H],
    ];
    const rates: number[] = [];
    const ratios: number[] = [];
    for (let round = 0; round < (quick ? 1 : 5); round++) {
      let flops = 0;
      let secs = 0;
      samplePeak();
      for (const [inF, outF] of shapes) {
        secs += native.gemmSeconds(T, outF, inF, false, true, 1); // Y = X W^T
        secs += native.gemmSeconds(T, inF, outF, false, false, 1); // dX = dY W
        secs += native.gemmSeconds(outF, inF, T, true, false, 1); // dW = dY^T X
        flops += 3 * 2 * T * inF * outF;
      }
      rates.push(flops / secs / 1e9);
      ratios.push(flops / secs / 1e9 / (peaks.at(-1) ?? 1));
    }
    results.gemm_100M = { gflops: median(rates), tokens: T, fraction_of_adjacent_peak: median(ratios) };
    console.log(
      `100M-config GEMMs (T=${T}): ${median(rates).toFixed(1)} GFLOP/s, ${(100 * median(ratios)).toFixed(0)}% of the FMA peak sampled just before (median of ${rates.length} rounds)`,
    );
  }

  // Against the tfjs-core CPU model: the same 10M model, the same batch, forward + backward.
  {
    await tf.setBackend('cpu');
    const model = createModel(configs['10M'] as ModelConfigInput, { seed: 2 });
    const seqs = 1;
    const len = 16;
    const batch = batchOf(model.shape.vocab, seqs, len);
    const P: Record<string, TF.Variable> = {};
    for (const p of model.parameters())
      P[p.name] = tf.variable(tf.tensor(p.data, p.shape), true, `bench/${p.name}`);
    const tokens = Array.from(batch.tokenIds);
    const cu = Array.from(batch.cuSeqlens);
    const targets = tokens.map((_, t) => (cu.includes(t + 1) ? -1 : (tokens[t + 1] ?? -1)));
    const tfStep = () => {
      const t0 = now();
      const { value, grads } = tf.variableGrads(() =>
        referenceCrossEntropy(referenceForward(model.shape, P, tokens, cu).logits, targets),
      );
      value.dataSync();
      for (const g of Object.values(grads)) g.dataSync();
      tf.dispose([value, ...Object.values(grads)]);
      return now() - t0;
    };
    // tfjs-core needs ~25 s for this one step on a quiet 2-core machine: one run, no warm-up.
    const tfTimes: number[] = [];
    const nativeTimes: number[] = [];
    trainStep(model, batch);
    tfTimes.push(tfStep());
    for (let i = 0; i < 3; i++) nativeTimes.push(trainStep(model, batch));
    const speedup = median(tfTimes) / median(nativeTimes);
    results.vs_tfjs_10M = {
      tokens: seqs * len,
      tfjs_seconds: median(tfTimes),
      native_seconds: median(nativeTimes),
      speedup,
      // tfjs seconds per token against the native 10M training step at its own batch size
      speedup_per_token_at_train_batch:
        median(tfTimes) / len / (1 / (results.train_10M as { tokens_per_s: number }).tokens_per_s),
    };
    console.log(
      `vs tfjs-core CPU (10M, ${seqs}x${len} tokens fwd+bwd): tfjs ${median(tfTimes).toFixed(2)} s, native ${median(nativeTimes).toFixed(3)} s: ${speedup.toFixed(1)}x`,
    );
  }

  // Sampling throughput with the KV cache: prefill (32-token prompts) and decode timed apart.
  for (const name of ['10M', '100M']) {
    const model = createModel(configs[name] as ModelConfigInput, { seed: 3 });
    for (const batchSize of [1, 64]) {
      const newTokens = quick ? 4 : name === '100M' ? 16 : 32;
      samplePeak();
      const run = await decodeRun(model, batchSize, newTokens, true);
      const produced = batchSize * newTokens;
      const decode = produced / run.decodeTokensPerS;
      const prefill = (32 * batchSize) / run.prefillTokensPerS;
      results[`sample_${name}_batch${batchSize}`] = {
        decode_tokens_per_s: run.decodeTokensPerS,
        prefill_tokens_per_s: run.prefillTokensPerS,
        new_tokens: produced,
      };
      console.log(
        `sample ${name} batch ${batchSize}: decode ${(produced / decode).toFixed(0)} tokens/s, prefill ${((32 * batchSize) / prefill).toFixed(0)} tokens/s`,
      );
    }
  }

  const peak = Math.max(...peaks);
  const gemm = results.gemm_100M as { gflops: number };
  const train100 = results.train_100M as { gflops: number };
  const summary = {
    machine: `${cpus().length} x ${cpus()[0]?.model ?? 'cpu'}`,
    date: new Date().toISOString(),
    fma_peak_gflops: peak,
    fma_peak_median_gflops: median(peaks),
    gemm_100M_fraction_of_best_peak: gemm.gflops / peak,
    train_100M_fraction_of_best_peak: train100.gflops / peak,
    ...results,
  };
  console.log(
    `fp32 FMA peak: best ${peak.toFixed(1)}, median ${median(peaks).toFixed(1)} GFLOP/s of ${peaks.length} samples; against the best: 100M GEMMs ${((100 * gemm.gflops) / peak).toFixed(0)}%, 100M training step ${((100 * train100.gflops) / peak).toFixed(0)}%`,
  );
  const root = resolve(dirname(fileURLToPath(import.meta.url)), '../../..');
  mkdirSync(resolve(root, 'bench-results'), { recursive: true });
  writeFileSync(resolve(root, 'bench-results/engine.json'), `${JSON.stringify(summary, null, 2)}\n`);
});
