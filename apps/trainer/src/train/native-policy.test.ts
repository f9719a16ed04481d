import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import {
  type AdamW,
  createCharTokenizer,
  createModel,
  type Device,
  deviceUnavailableReason,
  firstRunnableDevice,
  loadModel,
  saveModel,
} from '@agentrl/engine';
import type { MicroBatch } from '@agentrl/grpo';
import { fusedLinearPolicyLoss } from '@agentrl/kernels';
import { afterAll, describe, expect, it } from 'vitest';
import { parseConfig } from '../config/load.js';
import { hfConfigFor, NativeTrainer, shiftForNextToken } from './native-policy.js';
import type { RunTokenizer } from './tokenizer-source.js';

const dirs: string[] = [];
afterAll(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});
const tempDir = () => {
  const d = mkdtempSync(join(tmpdir(), 'agentrl-native-policy-'));
  dirs.push(d);
  return d;
};

/** A tokenizer of `vocabSize` ids: only its size and end id shape the model (no text is encoded). */
const tokenizerOfSize = (vocabSize: number): RunTokenizer => ({
  tokenizer: Object.create(createCharTokenizer(), {
    vocabSize: { value: vocabSize },
    eosTokenId: { value: 0 },
  }),
  dir: null,
});

/** Sequences of pseudo-random ids with recorded logprobs and ±1 advantages on the response half. */
function microBatch(seed: number, lengths: number[], vocab: number): MicroBatch {
  const T = lengths.reduce((a, b) => a + b, 0);
  const mb = {
    tokenIds: new Int32Array(T),
    cuSeqlens: new Int32Array(lengths.length + 1),
    lossMask: new Uint8Array(T),
    oldLogprobs: new Float32Array(T),
    advantages: new Float32Array(T),
    sequenceAdvantages: new Float32Array(lengths.length),
    trajectoryIds: lengths.map((_, i) => `t${seed}-${i}`),
    promptIds: lengths.map(() => `p${seed}`),
  };
  let at = 0;
  lengths.forEach((n, s) => {
    for (let i = 0; i < n; i++) {
      mb.tokenIds[at + i] = 1 + ((seed * 7919 + s * 131 + i * 37) % (vocab - 1));
      if (i >= n / 2) {
        mb.lossMask[at + i] = 1;
        mb.oldLogprobs[at + i] = -Math.log(vocab) + 0.01 * ((i % 5) - 2);
        mb.advantages[at + i] = s % 2 ? 1 : -1;
      }
    }
    mb.sequenceAdvantages[s] = s % 2 ? 1 : -1;
    at += n;
    mb.cuSeqlens[s + 1] = at;
  });
  return mb as MicroBatch;
}

const LOSS = {
  clipLow: 0.2,
  clipHigh: 0.28,
  dualClip: 3,
  aggregation: 'token-mean' as const,
  temperature: 1,
};

const paramsOf = (t: NativeTrainer) => t.model.parameters().map((p) => p.data.slice());

describe('NativeTrainer.policyStep accumulates the lm_head gradient in place', () => {
  it('gives the same weights, bit for bit, as a separate [V, H] gradient per micro-batch', async () => {
    const cfg = parseConfig({ model: { hiddenSize: 64, intermediateSize: 128, maxPositions: 512 } });
    const tok = tokenizerOfSize(300);
    const inPlace = await NativeTrainer.create(cfg, { initDir: null, tokenizer: tok });
    const separate = await NativeTrainer.create(cfg, { initDir: null, tokenizer: tok });
    inPlace.startRl();
    separate.startRl();
    // 3 micro-batches, one over the kernel's 192-token block, so the tiles' sums cross blocks
    const mbs = [microBatch(1, [120, 130], 300), microBatch(2, [60, 40, 50], 300), microBatch(3, [90], 300)];
    const initial = paramsOf(inPlace);
    expect(inPlace.policyStep(mbs, LOSS).gradNorm).toBeGreaterThan(0);

    // the previous recipe: a new dWeight per micro-batch, handed to backwardFromHidden
    const m = separate.model;
    const shifted = mbs.map(shiftForNextToken);
    const tokenCount = shifted.reduce((n, s) => n + s.count, 0);
    mbs.forEach((mb, i) => {
      const s = shifted[i]!;
      const { hidden } = m.forwardHidden({ tokenIds: mb.tokenIds, cuSeqlens: mb.cuSeqlens });
      const r = fusedLinearPolicyLoss(
        { hidden, weight: m.lmHeadWeight(), hiddenSize: 64, vocabSize: 300, ...s, cuSeqlens: mb.cuSeqlens },
        {
          ...LOSS,
          tokenCount,
          seqCount: 6,
          horizon: cfg.rl.stages.reduce((h, st) => Math.max(h, st.maxResponseTokens), 1),
        },
      );
      m.backwardFromHidden(r.dHidden, { dLmHead: r.dWeight });
    });
    (separate as unknown as { optimizer: AdamW }).optimizer.step();

    const a = paramsOf(inPlace);
    const b = paramsOf(separate);
    a.forEach((x, i) => {
      expect(Buffer.from(x.buffer).equals(Buffer.from(b[i]!.buffer))).toBe(true);
    });
    expect(a.filter((x, i) => x.some((v, j) => v !== initial[i]![j])).length).toBe(a.length);
  });

  it('allocates no [V, H] array per micro-batch at the Qwen3 vocabulary (V = 151,936)', async () => {
    setFlagsFromString('--expose-gc');
    const gc = runInNewContext('gc') as () => void;
    const V = 151_936;
    const H = 64;
    const cfg = parseConfig({ model: { hiddenSize: H, intermediateSize: 128, maxPositions: 256 } });
    const trainer = await NativeTrainer.create(cfg, { initDir: null, tokenizer: tokenizerOfSize(V) });
    trainer.startRl();
    const mbs = [1, 2, 3, 4].map((s) => microBatch(s, [24, 24], V));
    trainer.policyStep(mbs, LOSS); // warm-up: first-call buffers
    gc();
    const before = process.memoryUsage().arrayBuffers;
    trainer.policyStep(mbs, LOSS);
    const grown = process.memoryUsage().arrayBuffers - before;
    const perMicroBatch = V * H * 4; // what each micro-batch allocated before (38.9 MB here)
    console.log(
      `policyStep, 4 micro-batches, V=${V} H=${H}: ${(grown / 1e6).toFixed(2)} MB of new ArrayBuffers; ` +
        `a [V, H] fp32 gradient per micro-batch is ${(perMicroBatch / 1e6).toFixed(1)} MB here, ` +
        `${((V * 1024 * 4) / 2 ** 30).toFixed(2)} GiB at Qwen3-0.6B's H = 1024`,
    );
    expect(grown).toBeLessThan(perMicroBatch / 4);
  });
});

describe("a fresh model's layout and init come from the config", () => {
  it('initStd defaults to 0.8/sqrt(hiddenSize) (0.1 for tiny), qkNormInit sets the q/k norm gains, llama drops them', async () => {
    const std = (t: NativeTrainer) => {
      const w = t.model.parameter('model.layers.0.self_attn.q_proj.weight')!.data;
      return Math.sqrt(w.reduce((a, x) => a + x * x, 0) / w.length);
    };
    const tiny = await NativeTrainer.create(parseConfig({}), {
      initDir: null,
      tokenizer: tokenizerOfSize(64),
    });
    expect(hfConfigFor(parseConfig({}), 64, 0).initializer_range).toBe(0.1);
    expect(std(tiny)).toBeGreaterThan(0.09);
    expect(std(tiny)).toBeLessThan(0.11);
    expect([...tiny.model.parameter('model.layers.1.self_attn.k_norm.weight')!.data]).toEqual(
      Array(32).fill(1),
    );
    const wide = parseConfig({ model: { hiddenSize: 256, intermediateSize: 512 } });
    expect(hfConfigFor(wide, 64, 0).initializer_range).toBe(0.05);
    const hf = await NativeTrainer.create(parseConfig({ model: { initStd: 0.02, qkNormInit: 1.5 } }), {
      initDir: null,
      tokenizer: tokenizerOfSize(64),
    });
    expect(std(hf)).toBeLessThan(0.025);
    for (const name of ['model.layers.0.self_attn.q_norm.weight', 'model.layers.1.self_attn.k_norm.weight'])
      expect([...hf.model.parameter(name)!.data], name).toEqual(Array(32).fill(1.5));
    const llama = await NativeTrainer.create(parseConfig({ model: { architecture: 'llama' } }), {
      initDir: null,
      tokenizer: tokenizerOfSize(64),
    });
    expect(llama.model.config.architectures).toEqual(['LlamaForCausalLM']);
    expect(llama.model.parameter('model.layers.0.self_attn.q_norm.weight')).toBeUndefined();
  });
});

describe('NativeTrainer checkpoints are fp32 whatever the init dtype', () => {
  it('init from a bf16 checkpoint, train, save, resume: the same weights and the same next step, bit for bit', async () => {
    const V = 300;
    const init = tempDir();
    const cfg = parseConfig({ model: { maxPositions: 512 } });
    // the configured tiny model's own config.json, saved in bf16 as a bf16 HF checkpoint is
    const hf = createModel(hfConfigFor(cfg, V, 0), { seed: 3 });
    await saveModel(hf, init, { dtype: 'bfloat16' });
    expect(JSON.parse(readFileSync(join(init, 'config.json'), 'utf8')).torch_dtype).toBe('bfloat16');

    const tok = tokenizerOfSize(V);
    const first = await NativeTrainer.create(cfg, { initDir: init, tokenizer: tok });
    expect(first.model.dtype).toBe('bfloat16');
    first.startRl();
    const mbs = [microBatch(5, [40, 50], V)];
    first.policyStep(mbs, { ...LOSS, temperature: 0.8 });
    const ckpt = tempDir();
    await first.save(ckpt);
    expect(JSON.parse(readFileSync(join(ckpt, 'config.json'), 'utf8')).torch_dtype).toBe('float32');

    const resumed = await NativeTrainer.create(cfg, { initDir: ckpt, tokenizer: tok, resumePhase: 'rl' });
    const same = (x: NativeTrainer, y: NativeTrainer) => {
      const b = paramsOf(y);
      return paramsOf(x).every((p, i) => Buffer.from(p.buffer).equals(Buffer.from(b[i]!.buffer)));
    };
    expect(same(first, resumed)).toBe(true);
    const next = [microBatch(6, [30, 70], V)];
    const m1 = first.policyStep(next, LOSS);
    const m2 = resumed.policyStep(next, LOSS);
    expect(m2).toEqual(m1);
    expect(same(first, resumed)).toBe(true);
  });
});

describe('NativeTrainer resumes from sharded checkpoints', () => {
  it('restores optimizer state written as optimizer-0000i-of-0000n shards + index', async () => {
    const cfg = parseConfig({ model: { maxPositions: 256 } });
    const tok = tokenizerOfSize(300);
    const first = await NativeTrainer.create(cfg, { initDir: null, tokenizer: tok });
    first.startRl();
    first.policyStep([microBatch(7, [40, 30], 300)], LOSS);
    const ckpt = tempDir();
    await first.save(ckpt, { maxShardBytes: 64 * 1024 });
    const files = readdirSync(ckpt);
    expect(files).toContain('optimizer.safetensors.index.json');
    expect(files).not.toContain('optimizer.safetensors');
    const resumed = await NativeTrainer.create(cfg, { initDir: ckpt, tokenizer: tok, resumePhase: 'rl' });
    const next = [microBatch(8, [50, 20], 300)];
    // the same next step needs the same AdamW moments and step count, not fresh ones
    expect(resumed.policyStep(next, LOSS)).toEqual(first.policyStep(next, LOSS));
    const b = paramsOf(resumed);
    for (const [i, p] of paramsOf(first).entries())
      expect(Buffer.from(p.buffer).equals(Buffer.from(b[i]!.buffer))).toBe(true);
  });
});

describe('a policy opened for eval', () => {
  it('has no gradients and no Adam moments (trainable: false, what createEnvironment passes for eval), and refuses to step', async () => {
    const cfg = parseConfig({ model: { maxPositions: 256 } });
    const ckpt = tempDir();
    const tok = tokenizerOfSize(300);
    const trained = await NativeTrainer.create(cfg, { initDir: null, tokenizer: tok });
    await trained.save(ckpt);
    const params = trained.model.memoryBytes().params;
    expect(trained.model.memoryBytes()).toEqual({ params, grads: params, optimizer: 2 * params });
    const evalPolicy = await NativeTrainer.create(cfg, { initDir: ckpt, tokenizer: tok, trainable: false });
    expect(evalPolicy.model.memoryBytes()).toEqual({ params, grads: 0, optimizer: 0 });
    expect(paramsOf(evalPolicy)).toEqual(paramsOf(trained));
    expect(() => evalPolicy.policyStep([microBatch(1, [10], 300)], LOSS)).toThrow(/opened for eval/);
  });
});

// The trainer on a GPU device against the same trainer on the CPU. Runs where cuda or rocm can run
// the engine (scripts/gpu-check.sh sets AGENTRL_GPU_TEST_DEVICE=cuda); elsewhere listed as skipped
// with the reason in the name.
const wanted = process.env.AGENTRL_GPU_TEST_DEVICE as Device | undefined;
const { device: gpu, reasons } = firstRunnableDevice(wanted ? [wanted] : ['cuda', 'rocm']);
const where = gpu ? `on ${gpu}` : `skipped, no GPU: ${reasons}`;

/** max |a - b| / max |b| over two tensors */
const rel = (a: Float32Array, b: Float32Array) =>
  b.reduce((m, v, i) => Math.max(m, Math.abs((a[i] ?? 0) - v)), 0) /
  b.reduce((m, v) => Math.max(m, Math.abs(v)), 1e-12);

describe(`NativeTrainer with --device (${where})`, () => {
  it.skipIf(gpu === 'cuda')('device cuda that cannot run here is refused with the reason', async () => {
    const cfg = parseConfig({ device: 'cuda', model: { maxPositions: 256 } });
    await expect(
      NativeTrainer.create(cfg, { initDir: null, tokenizer: tokenizerOfSize(300) }),
    ).rejects.toThrow(`device 'cuda' cannot run the engine here: ${deviceUnavailableReason('cuda')}`);
  });

  it.skipIf(!gpu)(
    '--precision bf16: the model is bf16 on the device, its SFT step within 2% of the CPU',
    async () => {
      const V = 300;
      const init = tempDir();
      const base = { model: { hiddenSize: 64, intermediateSize: 128, maxPositions: 512 } };
      await saveModel(createModel(hfConfigFor(parseConfig(base), V, 0), { seed: 4 }), init, {
        dtype: 'float32',
      });
      const tok = tokenizerOfSize(V);
      const cpu = await NativeTrainer.create(parseConfig(base), { initDir: init, tokenizer: tok });
      const dev = await NativeTrainer.create(parseConfig({ ...base, device: gpu, precision: 'bf16' }), {
        initDir: init,
        tokenizer: tok,
      });
      expect(dev.model.precision).toBe('bf16');
      const mb = microBatch(10, [50, 40], V);
      const sft = [
        { tokenIds: Array.from(mb.tokenIds), lossMask: Array.from(mb.lossMask, (m) => (m ? 1 : 0) as 0 | 1) },
      ];
      const sc = cpu.sftStep(sft);
      const sd = dev.sftStep(sft);
      // bf16 rounding shows (fp32 on the device agrees to 1e-5) and stays small.
      expect(Math.abs(sd.loss - sc.loss)).toBeGreaterThan(1e-5 * sc.loss);
      expect(Math.abs(sd.loss - sc.loss)).toBeLessThan(2e-2 * sc.loss);
    },
  );

  it.skipIf(!gpu)(
    'SFT and GRPO steps on the device track the CPU trainer; the device checkpoint loads back (fp32)',
    async () => {
      const V = 300;
      const init = tempDir();
      const base = { model: { hiddenSize: 64, intermediateSize: 128, maxPositions: 512 } };
      const cpuCfg = parseConfig(base);
      await saveModel(createModel(hfConfigFor(cpuCfg, V, 0), { seed: 4 }), init, { dtype: 'float32' });
      const tok = tokenizerOfSize(V);
      const cpu = await NativeTrainer.create(cpuCfg, { initDir: init, tokenizer: tok });
      const dev = await NativeTrainer.create(parseConfig({ ...base, device: gpu }), {
        initDir: init,
        tokenizer: tok,
      });
      expect(dev.model.device).toBe(gpu);
      const initial = paramsOf(cpu);
      const sft = [0, 1, 2].map((i) => {
        const mb = microBatch(10 + i, [50, 40], V);
        return {
          tokenIds: Array.from(mb.tokenIds),
          lossMask: Array.from(mb.lossMask, (m) => (m ? 1 : 0) as 0 | 1),
        };
      });
      const sc = cpu.sftStep(sft);
      const sd = dev.sftStep(sft);
      expect(Math.abs(sd.loss - sc.loss)).toBeLessThan(1e-5 * sc.loss);
      expect(Math.abs(sd.gradNorm - sc.gradNorm)).toBeLessThan(1e-4 * sc.gradNorm);
      cpu.startRl();
      dev.startRl();
      const mbs = [microBatch(1, [120, 130], V), microBatch(2, [60, 40, 50], V)];
      for (let step = 0; step < 2; step++) {
        const rc = cpu.policyStep(mbs, LOSS);
        const rd = dev.policyStep(mbs, LOSS);
        expect(Math.abs(rd.loss - rc.loss)).toBeLessThan(1e-4 * Math.max(1, Math.abs(rc.loss)));
        expect(Math.abs(rd.gradNorm - rc.gradNorm)).toBeLessThan(1e-4 * rc.gradNorm);
        expect(rd.trainTokens).toBe(rc.trainTokens);
        expect(Math.abs(rd.clipFracHigh - rc.clipFracHigh)).toBeLessThan(1e-6);
      }
      // AdamW divides by sqrt(v): on coordinates whose gradient is near zero, fp32 rounding
      // differences of the gradient become visible update differences. Bound them by the update
      // itself: each tensor is within 5% of how far 3 steps moved it (HIP-CPU: 1.5% at worst, most
      // tensors 0.05%).
      const pc = paramsOf(cpu);
      paramsOf(dev).forEach((p, i) => {
        expect(rel(p, pc[i]!)).toBeLessThan(0.05 * rel(pc[i]!, initial[i]!));
      });
      const ckpt = tempDir();
      await dev.save(ckpt);
      expect(JSON.parse(readFileSync(join(ckpt, 'config.json'), 'utf8')).torch_dtype).toBe('float32');
      const back = await loadModel(ckpt);
      const pd = paramsOf(dev);
      back.parameters().forEach((p, i) => {
        expect(Buffer.from(p.data.buffer, p.data.byteOffset, p.data.byteLength)).toEqual(
          Buffer.from(pd[i]!.buffer),
        );
      });
      // resuming onto the device restores the RL optimizer: the next step is the CPU resume's
      const resumed = await NativeTrainer.create(parseConfig({ ...base, device: gpu }), {
        initDir: ckpt,
        tokenizer: tok,
        resumePhase: 'rl',
      });
      const next = [microBatch(6, [30, 70], V)];
      const r1 = dev.policyStep(next, LOSS);
      const r2 = resumed.policyStep(next, LOSS);
      expect(Math.abs(r2.loss - r1.loss)).toBeLessThan(1e-5 * Math.max(1, Math.abs(r1.loss)));
      expect(Math.abs(r2.gradNorm - r1.gradNorm)).toBeLessThan(1e-5 * r1.gradNorm);
    },
  );
});
