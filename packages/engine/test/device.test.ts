import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { SamplingParams } from '@agentrl/protocol';
import { afterAll, describe, expect, it } from 'vitest';
import { packSequences } from '../src/batch.js';
import { loadModel, saveModel } from '../src/checkpoint.js';
import {
  type Device,
  deviceGemmPath,
  devicePolicyLoss,
  deviceTransfers,
  deviceUnavailableReason,
  firstRunnableDevice,
  sampleOnDevice,
} from '../src/device.js';
import { createGenerator } from '../src/generator.js';
import { createModel, type Model } from '../src/model.js';
import type { CacheHandle } from '../src/native.js';
import { createAdamW } from '../src/optimizer.js';
import { createRng, sampleToken } from '../src/sampling.js';
import { GRPO_ROC_NATIVE_LOSS } from '../src/testing.js';
import { logSoftmaxAt, rel, tinyConfig } from './helpers.js';

// The engine on a GPU device against the CPU engine: same seed, same batch, same numbers (fp32 to
// about 1e-5 relative). Runs where cuda or rocm can run the engine (a GPU, or the HIP-CPU build of
// the kernels: scripts/hip-cpu-check.sh sets AGENTRL_GPU_TEST_DEVICE=rocm); elsewhere every test
// is listed as skipped with the reason in its name.
const wanted = process.env.AGENTRL_GPU_TEST_DEVICE as Device | undefined;
const { device, reasons } = firstRunnableDevice(wanted ? [wanted] : ['cuda', 'rocm']);
const where = device ? `on ${device}` : `skipped, no GPU: ${reasons}`;
const gpu = device ?? 'cuda';
// AGENTRL_GPU_PRECISION=bf16 (scripts/gpu-check.sh): bf16 tensor-core products, compared at 3e-2.
const precision = process.env.AGENTRL_GPU_PRECISION === 'bf16' ? 'bf16' : 'fp32';
const forwardTol = precision === 'bf16' ? 3e-2 : 1e-5;

// Lengths that cross the attention kernels' 32-row blocks and 32-key tiles, in one packed batch.
const seqs = [
  Array.from({ length: 70 }, (_, i) => (i * 7 + 3) % 50),
  [4, 9, 1, 3, 3],
  Array.from({ length: 33 }, (_, i) => (i * 11 + 5) % 50),
];
const configs = {
  qwen3: tinyConfig(),
  qwen2: tinyConfig({ architectures: ['Qwen2ForCausalLM'], tie_word_embeddings: false, head_dim: 16 }),
  llama: tinyConfig({ architectures: ['LlamaForCausalLM'], num_key_value_heads: 4, attention_bias: true }),
};

// The attention kernels give each row to 8 lanes of float4 chunks (columns 4 (lane + 8 i)): head_dim
// 128 (Qwen3's) fills every chunk, 40 leaves lanes past the first 32 columns half empty, 6 ends
// inside a chunk; GQA 2:1, 4:1 and none; a fourth sequence of 100 tokens spans 4 key tiles.
const attnSeqs = [...seqs, Array.from({ length: 100 }, (_, i) => (i * 13 + 1) % 50)];
const attnConfigs = {
  'head_dim 128, GQA 2:1': tinyConfig({ head_dim: 128, max_position_embeddings: 256 }),
  'head_dim 40, GQA 4:1': tinyConfig({ head_dim: 40, num_key_value_heads: 1, max_position_embeddings: 256 }),
  'head_dim 6, no GQA': tinyConfig({
    architectures: ['Qwen2ForCausalLM'],
    head_dim: 6,
    num_key_value_heads: 4,
    max_position_embeddings: 256,
  }),
};

function pair(cfg: (typeof configs)[keyof typeof configs], seed = 3): [Model, Model] {
  return [createModel(cfg, { seed }), createModel(cfg, { seed, device: gpu, precision })];
}

type Step = (tokens: number[], counts: number[]) => void;
/** Logits of each `step` through two KV caches of `m` (extend: counts[b] new tokens of cache b). */
function cachedLogits(
  m: Model,
  steps: (m: Model, step: Step, caches: CacheHandle[]) => void,
): Float32Array[] {
  const V = m.shape.vocab;
  const caches = [m.native.createCache(m.handle), m.native.createCache(m.handle)];
  const out: Float32Array[] = [];
  steps(
    m,
    (tokens, counts) => {
      const logits = new Float32Array(counts.length * V);
      m.native.extend(m.handle, caches, Int32Array.from(tokens), Int32Array.from(counts), logits);
      out.push(logits);
    },
    caches,
  );
  return out;
}

describe(`engine on a GPU device vs the CPU engine (${where})`, () => {
  it.skipIf(!device).each(Object.entries(configs))(
    `%s: forward hidden states match (${precision}: ${forwardTol})`,
    (_n, cfg) => {
      const [cpu, dev] = pair(cfg);
      const batch = packSequences(seqs);
      const a = cpu.forwardHidden(batch).hidden;
      const b = dev.forwardHidden(batch).hidden;
      expect(rel(b, a)).toBeLessThan(forwardTol);
      expect(rel(dev.forwardLogits(batch), cpu.forwardLogits(batch))).toBeLessThan(forwardTol);
    },
  );

  it.skipIf(!device).each(Object.entries(configs))('%s: sftLoss and every gradient match', (_n, cfg) => {
    for (const recompute of [false, true]) {
      const [cpu, dev] = pair(cfg, 5);
      const batch = packSequences(seqs);
      const mask = new Uint8Array(batch.tokenIds.length).fill(1);
      const lc = cpu.sftLoss(batch, mask, { recompute });
      const ld = dev.sftLoss(batch, mask, { recompute });
      expect(Math.abs(ld.loss - lc.loss)).toBeLessThan(1e-5 * lc.loss);
      const pc = cpu.parameters();
      dev.parameters().forEach((p, i) => {
        const ref = pc[i];
        expect(p.name).toBe(ref?.name);
        expect(rel(p.grad, ref?.grad ?? []), p.name).toBeLessThan(1e-4);
      });
      expect(Math.abs(dev.gradNorm() - cpu.gradNorm())).toBeLessThan(1e-5 * cpu.gradNorm());
    }
  });

  it.skipIf(!device)(
    'AdamW with fp32 master weights and grad-norm clipping tracks the CPU over 3 steps',
    () => {
      const [cpu, dev] = pair(configs.qwen3, 7);
      const oc = createAdamW(cpu, { lr: 1e-2, maxGradNorm: 0.5, warmupSteps: 0 });
      const od = createAdamW(dev, { lr: 1e-2, maxGradNorm: 0.5, warmupSteps: 0 });
      const batch = packSequences(seqs);
      const mask = new Uint8Array(batch.tokenIds.length).fill(1);
      for (let s = 0; s < 3; s++) {
        cpu.zeroGrad();
        dev.zeroGrad();
        cpu.sftLoss(batch, mask);
        dev.sftLoss(batch, mask);
        const rc = oc.step();
        const rd = od.step();
        expect(rd.clipped).toBe(rc.clipped);
        expect(Math.abs(rd.gradNorm - rc.gradNorm)).toBeLessThan(1e-4 * rc.gradNorm);
      }
      const pc = cpu.parameters();
      dev.parameters().forEach((p, i) => {
        expect(rel(p.data, pc[i]?.data ?? []), p.name).toBeLessThan(1e-4);
      });
      const mc = cpu.adamMoments();
      const md = dev.adamMoments();
      expect(rel(md.m, mc.m)).toBeLessThan(1e-4);
      expect(rel(md.v, mc.v)).toBeLessThan(1e-3);
    },
  );

  it.skipIf(!device)('weights written through the host views reach the device (a checkpoint load)', () => {
    const [cpu, dev] = pair(configs.qwen3, 1);
    const src = createModel(configs.qwen3, { seed: 99 });
    const ps = src.parameters();
    for (const m of [cpu, dev]) {
      for (const [i, p] of m.parameters().entries()) p.data.set(ps[i]?.data ?? []);
      m.markWeightsChanged();
    }
    const batch = packSequences(seqs);
    expect(rel(dev.forwardHidden(batch).hidden, cpu.forwardHidden(batch).hidden)).toBeLessThan(1e-5);
  });

  it.skipIf(!device)('KV-cache prefill, decode and truncation give the CPU logits', () => {
    const [cpu, dev] = pair(configs.qwen2, 11);
    const steps = (m: Model, step: Step, caches: CacheHandle[]) => {
      step([...(seqs[0] ?? []).slice(0, 40), ...(seqs[2] ?? [])], [40, 33]);
      for (let s = 0; s < 3; s++) step([s + 1, s + 2], [1, 1]);
      m.native.cacheTruncate(caches[0]!, 20);
      step([5, 6, 7, 8], [3, 1]);
    };
    const a = cachedLogits(cpu, steps);
    cachedLogits(dev, steps).forEach((l, i) => {
      expect(rel(l, a[i] ?? [])).toBeLessThan(1e-5);
    });
  });

  it.skipIf(!device)(
    "on-device sampling draws the CPU engine's sampleToken tokens and logprobs from the same streams",
    () => {
      // qwen2 (untied): lm_head rows 10..39 copy row 9, so 31 of the 50 tokens share one logit: they
      // fill ranks [r, r + 31) with r <= 19, and top-k 25 always cuts inside them (ties by id).
      const [cpu, dev] = pair(configs.qwen2, 13);
      const V = cpu.shape.vocab;
      const lm = dev.parameter('lm_head.weight')?.data ?? new Float32Array(0);
      const H = dev.shape.hidden;
      for (let j = 10; j < 40; j++) lm.copyWithin(j * H, 9 * H, 10 * H);
      dev.markWeightsChanged();
      // Three prompts, four rows each: every row its own stream (2,100 draws in 175 launches).
      const prompts = [[1, 2, 3], (seqs[0] ?? []).slice(0, 20), [7]].flatMap((p) => [p, p, p, p]);
      const caches = prompts.map(() => dev.native.createCache(dev.handle));
      const logits = new Float32Array(prompts.length * V);
      dev.native.extend(
        dev.handle,
        caches,
        Int32Array.from(prompts.flat()),
        Int32Array.from(prompts, (p) => p.length),
        logits,
      );
      const knobs: Pick<SamplingParams, 'temperature' | 'topK' | 'topP'>[] = [
        { temperature: 0, topK: 0, topP: 1 },
        { temperature: 0.7, topK: 0, topP: 1 },
        { temperature: 1, topK: 25, topP: 1 },
        { temperature: 0.8, topK: 0, topP: 0.9 },
        { temperature: 1.3, topK: 12, topP: 0.6 },
        { temperature: 1, topK: 0, topP: 0.3 },
        { temperature: 2, topK: 3, topP: 0.999 },
      ];
      let draws = 0;
      for (const [k, knob] of knobs.entries()) {
        // One stream per row, as the generator keeps one per request; the CPU replays the same seeds.
        const hostRngs = prompts.map((_, r) => createRng(100 * k + r));
        const devRngs = prompts.map((_, r) => createRng(100 * k + r));
        for (let step = 0; step < 25; step++) {
          const got = sampleOnDevice(
            dev,
            prompts.map((_, r) => ({
              ...knob,
              uniform: knob.temperature > 0 ? (devRngs[r] as () => number)() : 0,
            })),
          );
          prompts.forEach((_, r) => {
            const want = sampleToken(logits.subarray(r * V, (r + 1) * V), knob, hostRngs[r] as () => number);
            expect(got.tokens[r], `knob ${k} row ${r} step ${step}`).toBe(want.token);
            expect(Math.abs((got.logprobs[r] ?? 0) - want.logprob)).toBeLessThan(
              1e-12 * Math.max(1, -want.logprob),
            );
            draws++;
          });
        }
      }
      expect(draws).toBe(knobs.length * 25 * prompts.length);
      expect(() => sampleOnDevice(dev, [{ temperature: 1, topK: 0, topP: 1, uniform: 1 }])).toThrow(
        /uniform must be in \[0, 1\)/,
      );
      expect(() =>
        sampleOnDevice(dev, [
          { temperature: 1, topK: 0, topP: 1, uniform: 0.5 },
          { temperature: 1, topK: 0, topP: 1, uniform: 0.5 },
        ]),
      ).toThrow(/sample got 2 rows; the latest extend has 12/);
    },
  );

  it.skipIf(!device)(
    'on-device sampling: an inverse-CDF grid gives each token N * p of the kept set, within 1',
    () => {
      const [, dev] = pair(configs.qwen3, 13);
      const V = dev.shape.vocab;
      // B rows of the same prompt: one launch draws B points of the grid.
      const B = 100;
      const caches = Array.from({ length: B }, () => dev.native.createCache(dev.handle));
      const all = new Float32Array(B * V);
      const prompt = [1, 2, 3];
      dev.native.extend(
        dev.handle,
        caches,
        Int32Array.from({ length: 3 * B }, (_, i) => prompt[i % 3] ?? 0),
        new Int32Array(B).fill(3),
        all,
      );
      const logits = all.subarray(0, V);
      const scaled = Array.from(logits, (z) => z / 0.7);
      const order = [...Array(V).keys()].sort((x, y) => (scaled[y] ?? 0) - (scaled[x] ?? 0) || x - y);
      const p = order.map((j) => Math.exp(logSoftmaxAt(Float32Array.from(scaled), V, 0, j)));
      for (const { topK, topP } of [
        { topK: 0, topP: 1 },
        { topK: 6, topP: 1 },
        { topK: 0, topP: 0.5 },
      ]) {
        let kept = topK > 0 ? topK : V;
        if (topP < 1) {
          let mass = 0;
          kept = 0;
          while (mass < topP) mass += p[kept++] ?? 1;
        }
        const mass = p.slice(0, kept).reduce((a, b) => a + b, 0);
        const N = 1000;
        const counts = new Map<number, number>();
        for (let i0 = 0; i0 < N; i0 += B) {
          const rows = Array.from({ length: B }, (_, i) => ({
            temperature: 0.7,
            topK,
            topP,
            uniform: (i0 + i + 0.5) / N,
          }));
          for (const t of sampleOnDevice(dev, rows).tokens) counts.set(t, (counts.get(t) ?? 0) + 1);
        }
        order.forEach((j, rank) => {
          const want = rank < kept ? (N * (p[rank] ?? 0)) / mass : 0;
          expect(Math.abs((counts.get(j) ?? 0) - want), `token ${j} topK ${topK} topP ${topP}`).toBeLessThan(
            1.01,
          );
        });
      }
    },
  );

  it.skipIf(!device)(
    'a Generator on the device: the CPU generator tokens, no logits to the host, batch and order independent',
    async () => {
      const [cpu, dev] = pair(configs.qwen3, 19);
      const requests = [
        { cacheId: 'a', tokenIds: [1, 2, 3], params: { temperature: 0.9, maxNewTokens: 12 } },
        {
          cacheId: 'b',
          tokenIds: (seqs[0] ?? []).slice(0, 30),
          params: { temperature: 1, topK: 8, maxNewTokens: 12 },
        },
        { cacheId: 'c', tokenIds: [9, 9], params: { temperature: 0.8, topP: 0.7, maxNewTokens: 12 } },
        { cacheId: 'd', tokenIds: [4], params: { temperature: 0, maxNewTokens: 12 } },
      ];
      const want = await createGenerator(cpu, { seed: 5 }).generate(requests);
      const before = deviceTransfers(dev);
      const got = await createGenerator(dev, { seed: 5 }).generate(requests);
      const after = deviceTransfers(dev);
      got.forEach((g, i) => {
        expect(g.tokenIds, requests[i]?.cacheId).toEqual(want[i]?.tokenIds);
        g.logprobs.forEach((lp, t) => {
          expect(Math.abs(lp - (want[i]?.logprobs[t] ?? 0))).toBeLessThan(forwardTol * 10);
        });
      });
      // Per decode step: 16 bytes per row (token, logprob) come back; a row of logits would be 4 * V.
      const steps = Math.max(...got.map((g) => g.tokenIds.length));
      expect(after.toHost - before.toHost).toBeLessThanOrEqual(steps * requests.length * 16);
      // Alone, or in another order beside other requests: the same tokens (its own stream and cache).
      const alone = await createGenerator(dev, { seed: 5 }).generate([requests[2]!]);
      expect(alone[0]?.tokenIds).toEqual(got[2]?.tokenIds);
      const shuffled = await createGenerator(dev, { seed: 5 }).generate([
        requests[3]!,
        requests[2]!,
        requests[0]!,
      ]);
      expect(shuffled[1]?.tokenIds).toEqual(got[2]?.tokenIds);
      expect(shuffled[2]?.tokenIds).toEqual(got[0]?.tokenIds);
    },
  );

  it.skipIf(!device)(
    'a training step keeps the hidden states on the device: O(T) bytes to the host, same losses and gradients',
    () => {
      const cfg = configs.qwen2;
      const [, dev] = pair(cfg, 23);
      const batch = packSequences(seqs);
      const T = batch.tokenIds.length;
      const V = dev.shape.vocab;
      const args = {
        config: GRPO_ROC_NATIVE_LOSS,
        targets: Int32Array.from(batch.tokenIds, (t, i) => (t * 5 + i) % V),
        oldLogprobs: Float32Array.from({ length: T }, (_, i) => -4 + 0.2 * Math.cos(i)),
        advantages: Float32Array.from({ length: T }, (_, i) => (i % 4) - 1.5),
        lossMask: Uint8Array.from({ length: T }, (_, i) => (i % 7 === 0 ? 0 : 1)),
        cuSeqlens: batch.cuSeqlens,
      };
      // Reference: the hidden states downloaded by forwardHidden, then the same device loss.
      dev.zeroGrad();
      const r0 = deviceTransfers(dev);
      dev.forwardHidden(batch);
      // The counter sees a download: forwardHidden brings [T, H] floats back.
      expect(deviceTransfers(dev).toHost - r0.toHost).toBe(T * dev.shape.hidden * 4);
      const logpRef = new Float32Array(T);
      const ref = devicePolicyLoss(dev, { ...args, logp: logpRef });
      const gradRef = dev.parameters().map((p) => Float32Array.from(p.grad));
      dev.zeroGrad();
      const before = deviceTransfers(dev);
      dev.forward(batch);
      const logp = new Float32Array(T);
      const m = devicePolicyLoss(dev, { ...args, logp });
      const mid = deviceTransfers(dev);
      // logp [T] floats, 8 metrics, one flag, and the one-pass input scan's 4 words (its NaN flag and
      // max |hidden|, |weight|): nothing [T, H] (that would be T * H * 4 bytes).
      expect(mid.toHost - before.toHost).toBeLessThanOrEqual(4 * T + 8 * 8 + 4 + 16);
      expect(m.loss).toBe(ref.loss);
      expect(logp).toEqual(logpRef);
      dev.parameters().forEach((p, i) => {
        expect(p.grad, p.name).toEqual(gradRef[i]);
      });
      // The same step again (forward, loss, grad norm, AdamW) allocates no device memory.
      const opt = createAdamW(dev, { lr: 1e-3, warmupSteps: 0 });
      const step = () => {
        dev.zeroGrad();
        dev.forward(batch);
        devicePolicyLoss(dev, { ...args, logp });
        opt.step();
      };
      step();
      const a0 = deviceTransfers(dev).allocations;
      step();
      expect(deviceTransfers(dev).allocations - a0).toBe(0);
      // sftLoss too: per-row losses come back, not the hidden states.
      const mask = new Uint8Array(T).fill(1);
      const s0 = deviceTransfers(dev);
      dev.sftLoss(batch, mask);
      const s1 = deviceTransfers(dev);
      expect(s1.toHost - s0.toHost).toBeLessThanOrEqual(4 * T);
    },
  );

  it.skipIf(!device).each(Object.entries(attnConfigs))(
    `attention at %s: forward, sftLoss and every gradient match (${precision}: ${forwardTol})`,
    (_n, cfg) => {
      const [cpu, dev] = pair(cfg, 13);
      const batch = packSequences(attnSeqs);
      expect(rel(dev.forwardHidden(batch).hidden, cpu.forwardHidden(batch).hidden)).toBeLessThan(forwardTol);
      const mask = new Uint8Array(batch.tokenIds.length).fill(1);
      const lc = cpu.sftLoss(batch, mask);
      expect(Math.abs(dev.sftLoss(batch, mask).loss - lc.loss)).toBeLessThan(1e-5 * lc.loss);
      const pc = cpu.parameters();
      dev.parameters().forEach((p, i) => {
        expect(rel(p.grad, pc[i]?.grad ?? []), p.name).toBeLessThan(1e-4);
      });
    },
  );

  it.skipIf(!device).each(Object.entries(attnConfigs))(
    'attention at %s: KV-cache decode past a 128-key tile gives the CPU logits',
    (_n, cfg) => {
      const [cpu, dev] = pair(cfg, 19);
      const steps = (_m: Model, step: Step) => {
        step([...(attnSeqs[3] ?? []), ...(attnSeqs[0] ?? [])], [100, 70]);
        step([...(attnSeqs[3] ?? []).slice(1), 9], [99, 1]); // cache 0: 199 keys, 2 key tiles
        for (let s = 0; s < 3; s++) step([s + 1, s + 7], [1, 1]);
      };
      const a = cachedLogits(cpu, steps);
      cachedLogits(dev, steps).forEach((l, i) => {
        expect(rel(l, a[i] ?? []), `step ${i}`).toBeLessThan(forwardTol);
      });
    },
  );

  it.skipIf(!device)(
    'devicePolicyLoss: the fused-linear GRPO loss and its backward match a CPU reference',
    () => {
      const cfg = configs.qwen2;
      const [cpu, dev] = pair(cfg, 17);
      const V = cpu.shape.vocab;
      const H = cpu.shape.hidden;
      const batch = packSequences(seqs);
      const T = batch.tokenIds.length;
      const targets = Int32Array.from(batch.tokenIds, (t, i) => (t * 3 + i) % V);
      const oldLogprobs = Float32Array.from({ length: T }, (_, i) => -4 + 0.3 * Math.sin(i));
      const advantages = Float32Array.from({ length: T }, (_, i) => (i % 3) - 1);
      const lossMask = Uint8Array.from({ length: T }, (_, i) => (i % 5 === 0 ? 0 : 1));
      // CPU reference: token-level ratios, clip-higher 0.28 / low 0.2, dual clip 3, token-mean.
      const hidden = cpu.forwardHidden(batch).hidden;
      const W = cpu.lmHeadWeight();
      const logits = new Float32Array(T * V);
      cpu.native.logits(cpu.handle, logits);
      const n = lossMask.reduce((s, m) => s + m, 0);
      const dLogits = new Float32Array(T * V);
      let loss = 0;
      for (let t = 0; t < T; t++) {
        if (!lossMask[t]) continue;
        const lp = logSoftmaxAt(logits, V, t, targets[t] ?? 0);
        const r = Math.exp(lp - (oldLogprobs[t] ?? 0));
        const a = advantages[t] ?? 0;
        let l = -a * r;
        let dr = -a;
        if (a > 0 && r > 1.28) [l, dr] = [-a * 1.28, 0];
        if (a < 0 && r > 3) [l, dr] = [-a * 3, 0];
        else if (a < 0 && r < 0.8) [l, dr] = [-a * 0.8, 0];
        loss += l / n;
        const g = (dr * r) / n;
        for (let j = 0; j < V; j++) {
          const p = Math.exp(logSoftmaxAt(logits, V, t, j));
          dLogits[t * V + j] = g * ((j === targets[t] ? 1 : 0) - p);
        }
      }
      const dHidden = new Float32Array(T * H);
      const dW = new Float32Array(V * H);
      for (let t = 0; t < T; t++)
        for (let j = 0; j < V; j++) {
          const d = dLogits[t * V + j] ?? 0;
          if (d === 0) continue;
          for (let k = 0; k < H; k++) {
            dHidden[t * H + k] = (dHidden[t * H + k] ?? 0) + d * (W[j * H + k] ?? 0);
            dW[j * H + k] = (dW[j * H + k] ?? 0) + d * (hidden[t * H + k] ?? 0);
          }
        }
      cpu.zeroGrad();
      cpu.backwardFromHidden(dHidden, { dLmHead: dW });
      dev.zeroGrad();
      dev.forwardHidden(batch);
      const logp = new Float32Array(T);
      const m = devicePolicyLoss(dev, {
        config: GRPO_ROC_NATIVE_LOSS,
        targets,
        oldLogprobs,
        advantages,
        lossMask,
        cuSeqlens: batch.cuSeqlens,
        logp,
      });
      expect(Math.abs(m.loss - loss)).toBeLessThan(1e-5 * Math.max(1, Math.abs(loss)));
      expect(m.tokens).toBe(n);
      const pc = cpu.parameters();
      dev.parameters().forEach((p, i) => {
        expect(rel(p.grad, pc[i]?.grad ?? []), p.name).toBeLessThan(2e-4);
      });
    },
  );

  it.skipIf(!device)(
    'devicePolicyLoss with a NaN in lm_head fails and leaves the accumulated gradients as they were',
    () => {
      const [, dev] = pair(configs.qwen2, 23); // untied: lm_head is its own tensor
      const batch = packSequences(seqs);
      const T = batch.tokenIds.length;
      const args = {
        config: GRPO_ROC_NATIVE_LOSS,
        targets: Int32Array.from(batch.tokenIds, (t, i) => (t + i) % dev.shape.vocab),
        oldLogprobs: new Float32Array(T).fill(-4),
        advantages: Float32Array.from({ length: T }, (_, i) => (i % 2 ? 1 : -1)),
        lossMask: new Uint8Array(T).fill(1),
        cuSeqlens: batch.cuSeqlens,
        logp: new Float32Array(T),
      };
      dev.zeroGrad();
      dev.forwardHidden(batch);
      devicePolicyLoss(dev, args); // a first micro-batch's gradients
      const before = dev.parameters().map((p) => Float32Array.from(p.grad));
      const norm = dev.gradNorm(); // computed on the device, from the device's gradients
      const head = dev.parameters().find((p) => p.name === 'lm_head.weight')!;
      head.data[3 * dev.shape.hidden + 1] = Number.NaN;
      dev.markWeightsChanged();
      dev.forwardHidden(batch);
      expect(() => devicePolicyLoss(dev, args)).toThrow(/non-finite/);
      expect(dev.gradNorm()).toBe(norm);
      dev.parameters().forEach((p, i) => {
        expect(p.grad, p.name).toEqual(before[i]);
      });
    },
  );

  // AGENTRL_GPU_TEST_GEMM names the path every product of the tests above must have taken:
  // "cublasLt" (gpu-check.sh, where it finds cuBLASLt), "hipblasLt" (hip-cpu-check.sh, through its host
  // stand-in). A product the library refuses runs on the fallback kernel without an error; the path
  // then reads "cublasLt (N of M products fell back to the kernel; first: ...)" and this fails.
  const wantGemm = process.env.AGENTRL_GPU_TEST_GEMM;
  it.skipIf(!device || !wantGemm)(
    `every matrix product above ran on ${wantGemm ?? 'the library (AGENTRL_GPU_TEST_GEMM unset)'}`,
    () => {
      // products of its own too (forward and backward), so that it cannot pass on none
      const [, dev] = pair(configs.qwen3);
      const batch = packSequences(seqs);
      dev.sftLoss(batch, new Uint8Array(batch.tokenIds.length).fill(1));
      expect(deviceGemmPath(dev)).toBe(wantGemm);
    },
  );
});

const ckptRoot = await mkdtemp(join(tmpdir(), 'agentrl-device-'));
afterAll(() => rm(ckptRoot, { recursive: true, force: true }));

/** A tiny HF checkpoint of a CPU model (seed 21), saved once, shared by the loadModel tests. */
let saved: Promise<{ dir: string; src: Model }> | undefined;
function checkpoint(): Promise<{ dir: string; src: Model }> {
  saved ??= (async () => {
    const src = createModel(configs.qwen2, { seed: 21 });
    const dir = join(ckptRoot, 'qwen2');
    await saveModel(src, dir, { dtype: 'float32' });
    return { dir, src };
  })();
  return saved;
}

describe(`loadModel(dir, { device }) (${where})`, () => {
  it('device cpu loads as before: same weights, on the cpu', async () => {
    const { dir, src } = await checkpoint();
    const m = await loadModel(dir, { device: 'cpu' });
    expect(m.device).toBe('cpu');
    const ps = src.parameters();
    m.parameters().forEach((p, i) => {
      expect(p.data).toEqual(ps[i]?.data);
    });
  });

  it.skipIf(device === 'cuda')(
    'device cuda that cannot run here fails before reading, naming the device and the reason',
    async () => {
      const why = deviceUnavailableReason('cuda') ?? '';
      expect(why.length).toBeGreaterThan(0);
      // A directory that does not exist: the device error comes first, not CHECKPOINT_NOT_FOUND.
      await expect(loadModel(join(ckptRoot, 'absent'), { device: 'cuda' })).rejects.toThrow(
        `device 'cuda' cannot run the engine here: ${why}. Use device: 'cpu'`,
      );
      const { dir } = await checkpoint();
      await expect(loadModel(dir, { device: 'cuda', training: false })).rejects.toThrow(
        /device 'cuda' cannot run the engine here/,
      );
    },
  );

  it.skipIf(device === 'rocm')('device rocm that cannot run here fails with its reason', async () => {
    const { dir } = await checkpoint();
    await expect(loadModel(dir, { device: 'rocm' })).rejects.toThrow(
      `device 'rocm' cannot run the engine here: ${deviceUnavailableReason('rocm')}.`,
    );
  });

  it.skipIf(!device)(
    'a checkpoint loaded onto the device gives the CPU forward and trains there',
    async () => {
      const { dir, src } = await checkpoint();
      const dev = await loadModel(dir, { device: gpu, precision });
      expect(dev.device).toBe(gpu);
      const batch = packSequences(seqs);
      expect(rel(dev.forwardHidden(batch).hidden, src.forwardHidden(batch).hidden)).toBeLessThan(forwardTol);
      const mask = new Uint8Array(batch.tokenIds.length).fill(1);
      const before = dev.sftLoss(batch, mask).loss;
      createAdamW(dev, { lr: 1e-2, warmupSteps: 0 }).step();
      dev.zeroGrad();
      expect(dev.sftLoss(batch, mask).loss).toBeLessThan(before);
      // The trained weights come back to the host for a save (fp32), and differ from the checkpoint's.
      const out = join(ckptRoot, `trained-${gpu}`);
      await saveModel(dev, out, { dtype: 'float32' });
      const back = await loadModel(out);
      const moved = back.parameters().some((p, i) => rel(p.data, src.parameters()[i]?.data ?? []) > 0);
      expect(moved).toBe(true);
    },
  );
});

describe(`bf16 matrix products on the device (${where})`, () => {
  it.skipIf(!device)(
    'within 3e-2 of the fp32 CPU engine (forward, loss, gradients), and AdamW keeps fp32 master weights',
    () => {
      const cpu = createModel(configs.qwen3, { seed: 29 });
      const dev = createModel(configs.qwen3, { seed: 29, device: gpu, precision: 'bf16' });
      const batch = packSequences(seqs);
      const h = rel(dev.forwardHidden(batch).hidden, cpu.forwardHidden(batch).hidden);
      // bf16 really rounds (fp32 on the device agrees to 1e-5), and stays within bf16's 8 bits.
      expect(h).toBeGreaterThan(1e-4);
      expect(h).toBeLessThan(3e-2);
      const mask = new Uint8Array(batch.tokenIds.length).fill(1);
      const lc = cpu.sftLoss(batch, mask).loss;
      const ld = dev.sftLoss(batch, mask).loss;
      expect(Math.abs(ld - lc)).toBeLessThan(1e-2 * lc);
      const pc = cpu.parameters();
      dev.parameters().forEach((p, i) => {
        expect(rel(p.grad, pc[i]?.grad ?? []), p.name).toBeLessThan(5e-2);
      });
      // A step of lr = 1e-5 on weights of ~0.1 is far below bf16's resolution there (~4e-4): fp32
      // master weights keep it whole (the first AdamW step moves each weight by about lr).
      const name = 'model.layers.0.self_attn.q_proj.weight';
      const w0 = Float32Array.from(dev.parameter(name)?.data ?? []);
      createAdamW(dev, { lr: 1e-5, warmupSteps: 0, weightDecay: 0 }).step();
      const w1 = dev.parameter(name)?.data ?? new Float32Array(0);
      let whole = 0;
      for (let i = 0; i < w0.length; i++) {
        if (Math.abs(Math.abs((w1[i] ?? 0) - (w0[i] ?? 0)) - 1e-5) < 2e-6) whole++;
      }
      expect(whole / w0.length).toBeGreaterThan(0.9);
    },
  );

  it("precision 'bf16' on the cpu is refused with the way out", async () => {
    expect(() => createModel(configs.qwen3, { precision: 'bf16' })).toThrow(
      /precision 'bf16' needs a GPU device \(cuda or rocm\): the CPU engine computes in fp32/,
    );
    await expect(loadModel(join(ckptRoot, 'absent'), { precision: 'bf16' })).rejects.toThrow(
      /precision 'bf16' needs a GPU device/,
    );
    expect(createModel(configs.qwen3, { precision: 'fp32' }).device).toBe('cpu');
  });
});

describe('choosing the device', () => {
  it('cpu is the default and needs no GPU', () => {
    expect(createModel(configs.qwen3).device).toBe('cpu');
  });

  it.skipIf(device === 'cuda')('a device that cannot run here fails with the reason and what to do', () => {
    expect(() => createModel(configs.qwen3, { device: 'cuda' })).toThrow(
      /device 'cuda' cannot run the engine here: .+Use device: 'cpu'/,
    );
  });

  it.skipIf(device === 'cuda')(
    'firstRunnableDevice: the first that runs, and why the ones before do not',
    () => {
      expect(firstRunnableDevice(['cpu'])).toEqual({ device: 'cpu', reasons: '' });
      expect(firstRunnableDevice(['cuda', 'cpu'])).toEqual({
        device: 'cpu',
        reasons: `cuda: ${deviceUnavailableReason('cuda')}`,
      });
      expect(firstRunnableDevice(['cuda']).device).toBeUndefined();
    },
  );

  it('an unknown device is rejected', () => {
    expect(() => createModel(configs.qwen3, { device: 'tpu' as Device })).toThrow(
      /device must be one of cpu, cuda, rocm/,
    );
  });
});
