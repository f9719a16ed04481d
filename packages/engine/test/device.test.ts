import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { packSequences } from '../src/batch.js';
import { loadModel, saveModel } from '../src/checkpoint.js';
import {
  type Device,
  devicePolicyLoss,
  deviceUnavailableReason,
  firstRunnableDevice,
  sampleOnDevice,
} from '../src/device.js';
import { createModel, type Model } from '../src/model.js';
import { createAdamW } from '../src/optimizer.js';
import { logSoftmaxAt, tinyConfig } from './helpers.js';

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

/** max |a - b| / max |b|: one number per tensor, robust to entries near zero. */
function rel(a: ArrayLike<number>, b: ArrayLike<number>): number {
  let num = 0;
  let den = 1e-12;
  for (let i = 0; i < b.length; i++) {
    num = Math.max(num, Math.abs((a[i] ?? 0) - (b[i] ?? 0)));
    den = Math.max(den, Math.abs(b[i] ?? 0));
  }
  return num / den;
}

// Lengths that cross the attention kernels' 64-row blocks and 32-key tiles, in one packed batch.
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

function pair(cfg: (typeof configs)[keyof typeof configs], seed = 3): [Model, Model] {
  return [createModel(cfg, { seed }), createModel(cfg, { seed, device: gpu, precision })];
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
    const V = cpu.shape.vocab;
    const run = (m: Model): Float32Array[] => {
      const caches = [m.native.createCache(m.handle), m.native.createCache(m.handle)];
      const out: Float32Array[] = [];
      const step = (tokens: number[], counts: number[]) => {
        const logits = new Float32Array(counts.length * V);
        m.native.extend(m.handle, caches, Int32Array.from(tokens), Int32Array.from(counts), logits);
        out.push(logits);
      };
      step([...(seqs[0] ?? []).slice(0, 40), ...(seqs[2] ?? [])], [40, 33]);
      for (let s = 0; s < 3; s++) step([s + 1, s + 2], [1, 1]);
      m.native.cacheTruncate(caches[0]!, 20);
      step([5, 6, 7, 8], [3, 1]);
      return out;
    };
    const a = run(cpu);
    const b = run(dev);
    a.forEach((l, i) => {
      expect(rel(b[i] ?? [], l)).toBeLessThan(1e-5);
    });
  });

  it.skipIf(!device)(
    'on-device sampling: argmax at temperature 0, the exact softmax mass per token, top-p',
    () => {
      const [cpu, dev] = pair(configs.qwen3, 13);
      const V = cpu.shape.vocab;
      const caches = [dev.native.createCache(dev.handle)];
      const cpuCache = [cpu.native.createCache(cpu.handle)];
      const logits = new Float32Array(V);
      dev.native.extend(dev.handle, caches, Int32Array.from([1, 2, 3]), Int32Array.from([3]), logits);
      cpu.native.extend(
        cpu.handle,
        cpuCache,
        Int32Array.from([1, 2, 3]),
        Int32Array.from([3]),
        new Float32Array(V),
      );
      let argmax = 0;
      for (let j = 1; j < V; j++) if ((logits[j] ?? 0) > (logits[argmax] ?? 0)) argmax = j;
      expect(sampleOnDevice(dev, 0, 1, Float32Array.of(0.7))[0]).toBe(argmax);
      // A grid of N uniforms gives each token a count within 1 of N * p(token) (inverse-CDF sampling).
      const N = 2000;
      const counts = new Array<number>(V).fill(0);
      for (let i = 0; i < N; i++) {
        const [tok] = sampleOnDevice(dev, 0.7, 1, Float32Array.of((i + 0.5) / N));
        counts[tok ?? 0] = (counts[tok ?? 0] ?? 0) + 1;
      }
      const scaled = logits.map((z) => z / 0.7);
      for (let j = 0; j < V; j++) {
        const p = Math.exp(logSoftmaxAt(scaled, V, 0, j));
        expect(Math.abs((counts[j] ?? 0) - N * p)).toBeLessThan(1.5);
      }
      // top-p: only the smallest set of most likely tokens whose mass reaches topP is ever drawn.
      const order = [...Array(V).keys()].sort((x, y) => (scaled[y] ?? 0) - (scaled[x] ?? 0));
      const keep = new Set<number>();
      let mass = 0;
      for (const j of order) {
        keep.add(j);
        mass += Math.exp(logSoftmaxAt(scaled, V, 0, j));
        if (mass >= 0.5) break;
      }
      for (let i = 0; i < 200; i++) {
        const [tok] = sampleOnDevice(dev, 0.7, 0.5, Float32Array.of((i + 0.5) / 200));
        expect(keep.has(tok ?? -1)).toBe(true);
      }
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
        config: {
          temperature: 1,
          clipLow: 0.2,
          clipHigh: 0.28,
          dualClip: 3,
          maxLogRatio: 20,
          aggregation: 0,
        },
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
