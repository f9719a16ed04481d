import { listBackends } from '@agentrl/native';
import { describe, expect, it } from 'vitest';
import { fusedLinearPolicyLoss, type PolicyLossConfigInput } from '../src/index.js';
import { relMaxError } from './compare.js';
import { makeFusedInputs } from './fixtures.js';

// The device fused-linear loss (native/src/kernels/cuda/fused_linear.cu) against the CPU kernel.
// Runs where a GPU backend can run it: a CUDA or ROCm GPU, or the HIP-CPU build of the same
// sources (scripts/hip-cpu-check.sh sets AGENTRL_GPU_TEST_DEVICE=rocm). Elsewhere every case is
// listed as skipped, with the reason in its name.
const wanted = process.env.AGENTRL_GPU_TEST_DEVICE;
const names = wanted ? [wanted === 'rocm' ? 'hip' : wanted] : ['cuda', 'hip'];
const backends = listBackends();
const gpu = backends.find((b) => names.includes(b.name) && b.operations.fusedLinearLoss.runnable);
const why = gpu
  ? `on ${gpu.name}: ${gpu.detail}`
  : `skipped, no GPU: ${backends
      .filter((b) => names.includes(b.name))
      .map((b) => `${b.name}: ${b.operations.fusedLinearLoss.detail}`)
      .join('; ')}`;
const backend = (gpu?.name ?? 'cuda') as 'cuda' | 'hip';

describe(`fused-linear device kernel vs the CPU kernel (${why})`, () => {
  const shapes = [
    { seqLens: [5, 3], V: 100, H: 17 },
    { seqLens: [64, 1, 2], V: 513, H: 33 },
    { seqLens: [], V: 40, H: 8 },
  ];
  const configs: PolicyLossConfigInput[] = [
    { computeEntropy: true },
    { ratioLevel: 'sequence', aggregation: 'seq-mean-token-mean', temperature: 0.8 },
    { aggregation: 'seq-mean-token-sum-norm', horizon: 32, dualClip: 3 },
    { aggregation: 'seq-mean-token-sum', clipHigh: 0.1, clipLow: 0.05 },
  ];
  it
    .skipIf(!gpu)
    .each(
      shapes.flatMap((s, i) =>
        configs.map(
          (c, j) => [`T=${s.seqLens.join('+') || 0} V=${s.V} H=${s.H} cfg ${j}`, s, c, i * 10 + j] as const,
        ),
      ),
    )('%s', (_n, shape, cfg, seed) => {
    const inp = makeFusedInputs({ ...shape, seed, drift: 0.3 });
    const cpu = fusedLinearPolicyLoss(inp, { ...cfg, backend: 'cpu' });
    const dev = fusedLinearPolicyLoss(inp, { ...cfg, backend });
    expect(Math.abs(dev.loss - cpu.loss)).toBeLessThan(2e-5 * Math.max(1, Math.abs(cpu.loss)));
    expect(relMaxError(dev.dHidden, cpu.dHidden)).toBeLessThan(2e-4);
    expect(relMaxError(dev.dWeight, cpu.dWeight)).toBeLessThan(2e-4);
    expect(relMaxError(dev.logprobs, cpu.logprobs)).toBeLessThan(2e-5);
    for (const k of ['tokens', 'clipFracLow', 'clipFracHigh', 'clipFracDual'] as const)
      expect(dev.metrics[k]).toBeCloseTo(cpu.metrics[k], 9);
    // the KLs are sums of fp32 logps: relative, like the logps themselves
    for (const k of ['approxKl', 'ppoKl'] as const)
      expect(Math.abs(dev.metrics[k] - cpu.metrics[k])).toBeLessThan(
        1e-5 * Math.max(1, Math.abs(cpu.metrics[k])),
      );
    if (cfg.computeEntropy) expect(dev.metrics.entropy).toBeCloseTo(cpu.metrics.entropy, 4);
  });

  it.skipIf(!gpu)('accumulates dWeight into dWeightOut across micro-batches', () => {
    const a = makeFusedInputs({ seqLens: [6, 3], V: 70, H: 9, seed: 31 });
    const b = makeFusedInputs({ seqLens: [4], V: 70, H: 9, seed: 32 });
    const cpu = new Float32Array(70 * 9);
    fusedLinearPolicyLoss(a, { backend: 'cpu', dWeightOut: cpu });
    fusedLinearPolicyLoss(b, { backend: 'cpu', dWeightOut: cpu, accumulate: true });
    const dev = new Float32Array(70 * 9).fill(5);
    fusedLinearPolicyLoss(a, { backend, dWeightOut: dev });
    fusedLinearPolicyLoss(b, { backend, dWeightOut: dev, accumulate: true });
    expect(relMaxError(dev, cpu)).toBeLessThan(2e-4);
  });

  it.skipIf(!gpu)('rejects a non-finite logit like the CPU kernel', () => {
    const inp = makeFusedInputs({ seqLens: [3], V: 20, H: 4, seed: 3 });
    inp.hidden[2] = Number.NaN;
    expect(() => fusedLinearPolicyLoss(inp, { backend })).toThrow(/non-finite/);
  });

  // Token-level ratios make each chunk's logits once (3 products of T x V x H, as many as
  // materialised logits); sequence-level ratios need every token of a sequence first and recompute
  // them (4). AGENTRL_FUSED_LINEAR=two-pass forces the second schedule: both give the same bits.
  it.skipIf(!gpu).each(configs.map((c, j) => [j, c] as const))(
    'cfg %i: one pass where the ratio is per token, the two-pass numbers bit for bit',
    (_j, cfg) => {
      // chunks of 16 rows (AGENTRL_FUSED_LINEAR_CHUNK_ROWS): the one-pass gradient is written in 5
      const inp = makeFusedInputs({ seqLens: [40, 7, 20], V: 513, H: 33, seed: 41, drift: 0.3 });
      const run = () => fusedLinearPolicyLoss(inp, { ...cfg, backend });
      process.env.AGENTRL_FUSED_LINEAR_CHUNK_ROWS = '16';
      let auto: ReturnType<typeof run>;
      let two: ReturnType<typeof run>;
      try {
        auto = run();
        process.env.AGENTRL_FUSED_LINEAR = 'two-pass';
        two = run();
      } finally {
        delete process.env.AGENTRL_FUSED_LINEAR;
        delete process.env.AGENTRL_FUSED_LINEAR_CHUNK_ROWS;
      }
      // and both as the CPU kernel (one chunk there)
      const cpu = fusedLinearPolicyLoss(inp, { ...cfg, backend: 'cpu' });
      expect(relMaxError(auto.dWeight, cpu.dWeight)).toBeLessThan(2e-4);
      expect(relMaxError(auto.dHidden, cpu.dHidden)).toBeLessThan(2e-4);
      expect(auto.passes).toBe(cfg.ratioLevel === 'sequence' ? 2 : 1);
      expect(two.passes).toBe(2);
      expect(auto.loss).toBe(two.loss);
      expect(auto.metrics).toEqual(two.metrics);
      expect(auto.logprobs).toEqual(two.logprobs);
      expect(auto.dHidden).toEqual(two.dHidden);
      expect(auto.dWeight).toEqual(two.dWeight);
      expect(auto.dWeight.some((x) => x !== 0)).toBe(true);
    },
  );

  it.skipIf(!gpu)('a NaN, or logits that would overflow, fail before any gradient is written', () => {
    const base = makeFusedInputs({ seqLens: [6, 3], V: 70, H: 9, seed: 51 });
    const acc = Float32Array.from({ length: 70 * 9 }, (_, i) => i * 0.25);
    const before = Float32Array.from(acc);
    const nanWeight = { ...base, weight: Float32Array.from(base.weight) };
    nanWeight.weight[100] = Number.NaN;
    expect(() => fusedLinearPolicyLoss(nanWeight, { backend, dWeightOut: acc, accumulate: true })).toThrow(
      /non-finite/,
    );
    // finite inputs whose products pass FLT_MAX: the bound sends it to two passes, whose first pass
    // finds the infinite logit before the backward
    const huge = {
      ...base,
      hidden: base.hidden.map((x) => x * 1e30),
      weight: base.weight.map((x) => x * 1e20),
    };
    expect(() => fusedLinearPolicyLoss(huge, { backend, dWeightOut: acc, accumulate: true })).toThrow(
      /non-finite/,
    );
    expect(acc).toEqual(before);
  });
});

describe('listBackends per operation', () => {
  it('says for every operation of every GPU backend whether it runs here, and why not', () => {
    for (const b of backends) {
      for (const op of ['policyLoss', 'fusedLinearLoss', 'engineTrain', 'engineDecode'] as const) {
        const info = b.operations[op];
        expect(typeof info.runnable).toBe('boolean');
        if (!info.runnable) expect(info.detail.length).toBeGreaterThan(0);
        if (info.runnable) expect(b.runnable).toBe(true);
      }
    }
    expect(backends.find((b) => b.name === 'cpu')?.operations.engineTrain.runnable).toBe(true);
  });
});
