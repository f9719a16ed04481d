import { type CpuKernelPath, cpuKernels, setCpuKernels } from '@agentrl/native';
import { afterAll, describe, expect, it } from 'vitest';
import { type FusedLinearResult, fusedLinearPolicyLoss, type PolicyLossConfigInput } from '../src/index.js';
import { relMaxError } from './compare.js';
import { describeEachCpuKernelPath, notExercised } from './cpu-kernel-paths.js';
import { makeFusedInputs } from './fixtures.js';

describeEachCpuKernelPath('fused-linear CPU kernel vs the reference (which materialises the logits)', () => {
  const shapes = [
    { seqLens: [1], V: 1, H: 1 },
    { seqLens: [5, 3], V: 100, H: 17 },
    // tile edges: 64-token blocks, 256-wide vocabulary tiles, 4 x 4 register blocks
    { seqLens: [64, 1, 2], V: 513, H: 33 },
    { seqLens: [], V: 40, H: 8 },
  ];
  const configs: PolicyLossConfigInput[] = [
    { computeEntropy: true },
    { ratioLevel: 'sequence', aggregation: 'seq-mean-token-mean', temperature: 0.8 },
    { aggregation: 'seq-mean-token-sum-norm', horizon: 32 },
  ];
  it.each(
    shapes.flatMap((s, i) =>
      configs.map(
        (c, j) => [`T=${s.seqLens.join('+') || 0} V=${s.V} H=${s.H} cfg ${j}`, s, c, i * 10 + j] as const,
      ),
    ),
  )('%s', (_n, shape, cfg, seed) => {
    const inp = makeFusedInputs({ ...shape, seed, drift: 0.3 });
    const ref = fusedLinearPolicyLoss(inp, { ...cfg, backend: 'reference' });
    const got = fusedLinearPolicyLoss(inp, { ...cfg, backend: 'cpu' });
    expect(Math.abs(got.loss - ref.loss)).toBeLessThan(2e-5 * Math.max(1, Math.abs(ref.loss)));
    expect(relMaxError(got.dHidden, ref.dHidden)).toBeLessThan(2e-4);
    expect(relMaxError(got.dWeight, ref.dWeight)).toBeLessThan(2e-4);
    expect(relMaxError(got.logprobs, ref.logprobs)).toBeLessThan(2e-5);
    expect(got.metrics.clipFracHigh).toBeCloseTo(ref.metrics.clipFracHigh, 9);
    if (cfg.computeEntropy) expect(got.metrics.entropy).toBeCloseTo(ref.metrics.entropy, 4);
  });

  it('cpu: bit-identical results on every call (the trainer resumes to identical metrics)', () => {
    // Many vocabulary tiles, so each thread sums its own dHidden partial over several of them: the
    // tile-to-thread assignment must not depend on timing, or the float sums change between calls.
    const inp = makeFusedInputs({ seqLens: [70, 30], V: 4100, H: 24, seed: 7, drift: 0.3 });
    const first = fusedLinearPolicyLoss(inp, { backend: 'cpu' });
    for (let k = 0; k < 15; k++) {
      const again = fusedLinearPolicyLoss(inp, { backend: 'cpu' });
      expect(again.loss).toBe(first.loss);
      expect(Buffer.from(again.dHidden.buffer).equals(Buffer.from(first.dHidden.buffer))).toBe(true);
      expect(Buffer.from(again.dWeight.buffer).equals(Buffer.from(first.dWeight.buffer))).toBe(true);
    }
  });
});

describe('fused-linear CPU kernel on each CPU kernel path against the others', () => {
  const initial = cpuKernels().active;
  afterAll(() => setCpuKernels(initial));
  // two k-blocks of 256 in every product (H = 300, 300 tokens), several vocabulary tiles
  const inp = makeFusedInputs({ seqLens: [170, 130], V: 700, H: 300, seed: 5, drift: 0.3 });
  const on = (path: CpuKernelPath): FusedLinearResult => {
    setCpuKernels(path);
    return fusedLinearPolicyLoss(inp, { backend: 'cpu', computeEntropy: true });
  };
  const same = (a: Float32Array, b: Float32Array) => Buffer.from(a.buffer).equals(Buffer.from(b.buffer));

  const both = notExercised('avx512') || notExercised('avx2');
  it.skipIf(both !== '')(
    `avx512 within 1e-5 of avx2 (bit-identical products, @agentrl/engine's sgemm-paths test; the row sums' vectorised reductions are grouped by vector width)${both}`,
    () => {
      const a = on('avx512');
      const b = on('avx2');
      expect(Math.abs(a.loss - b.loss)).toBeLessThan(1e-6 * Math.max(1, Math.abs(b.loss)));
      expect(relMaxError(a.logprobs, b.logprobs)).toBeLessThan(1e-5);
      expect(relMaxError(a.dHidden, b.dHidden)).toBeLessThan(1e-5);
      expect(relMaxError(a.dWeight, b.dWeight)).toBeLessThan(1e-5);
    },
  );

  for (const path of ['avx512', 'avx2'] as const) {
    it.skipIf(notExercised(path) !== '')(
      `${path} within 1e-5 of portable (which has no FMA on x86-64: it rounds products and sums apart)${notExercised(path)}`,
      () => {
        const p = on('portable');
        const got = on(path);
        expect(Math.abs(got.loss - p.loss)).toBeLessThan(1e-6 * Math.max(1, Math.abs(p.loss)));
        expect(relMaxError(got.logprobs, p.logprobs)).toBeLessThan(1e-5);
        expect(relMaxError(got.dHidden, p.dHidden)).toBeLessThan(1e-5);
        expect(relMaxError(got.dWeight, p.dWeight)).toBeLessThan(1e-5);
        if (process.arch === 'x64') expect(same(got.dWeight, p.dWeight)).toBe(false);
      },
    );
  }
});

describe('fused-linear CPU kernel: dWeightOut and the workspace', () => {
  it.each(['cpu', 'reference'] as const)(
    '%s: writes dWeight into dWeightOut, and accumulates across micro-batches',
    (backend) => {
      const a = makeFusedInputs({ seqLens: [6, 3], V: 70, H: 9, seed: 31 });
      const b = makeFusedInputs({ seqLens: [4], V: 70, H: 9, seed: 32 });
      const ra = fusedLinearPolicyLoss(a, { backend });
      const rb = fusedLinearPolicyLoss(b, { backend });
      const buf = new Float32Array(70 * 9).fill(123);
      const first = fusedLinearPolicyLoss(a, { backend, dWeightOut: buf });
      expect(first.dWeight).toBe(buf);
      expect(relMaxError(buf, ra.dWeight)).toBeLessThan(1e-6);
      fusedLinearPolicyLoss(b, { backend, dWeightOut: buf, accumulate: true });
      expect(
        relMaxError(
          buf,
          ra.dWeight.map((x, i) => x + rb.dWeight[i]!),
        ),
      ).toBeLessThan(1e-6);
      expect(() => fusedLinearPolicyLoss(a, { backend, accumulate: true })).toThrow(
        /options.accumulate needs dWeightOut/,
      );
      expect(() => fusedLinearPolicyLoss(a, { backend, dWeightOut: new Float32Array(5) })).toThrow(
        /dWeightOut has 5 elements/,
      );
    },
  );

  it('reports a workspace that does not grow with the vocabulary times tokens', () => {
    const small = fusedLinearPolicyLoss(makeFusedInputs({ seqLens: [64], V: 1024, H: 16, seed: 1 }));
    const big = fusedLinearPolicyLoss(makeFusedInputs({ seqLens: [128], V: 4096, H: 16, seed: 1 }));
    // 8x the logits, but the workspace is per-thread tiles + O(T) and O(vocab tiles) vectors
    expect(big.workspaceBytes!).toBeLessThan(2 * small.workspaceBytes!);
    expect(big.workspaceBytes!).toBeLessThan(128 * 4096 * 4);
  });
});
