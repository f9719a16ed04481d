// The packed SGEMM (the addon's one GEMM: training, attention, the fused-linear loss) on every CPU
// kernel path against a float64 reference, and the paths against each other: avx512 and avx2 run
// the same FMA chain per element (bit for bit), portable rounds each product and sum apart.
import { cpuKernels, setCpuKernels } from '@agentrl/native';
import { afterAll, describe, expect, it } from 'vitest';
import { productEntries } from '../src/native.js';
import { createRng } from '../src/sampling.js';
import { describeEachCpuKernelPath, notExercised } from './helpers.js';

const { gemm } = productEntries();

interface Case {
  ta: boolean;
  tb: boolean;
  m: number;
  n: number;
  k: number;
  alpha: number;
  beta: number;
  smallM: boolean;
}

// Partial 12 x 32 tiles, two and three 256-long k-blocks, every transpose, beta 0 / 1 / other, and
// decode's small-M dot-product path.
const CASES: Case[] = [];
for (const [m, n, k] of [
  [1, 1, 1],
  [13, 45, 300],
  [70, 100, 513],
  [24, 64, 256],
] as const) {
  for (const ta of [false, true])
    for (const tb of [false, true])
      CASES.push({ ta, tb, m, n, k, alpha: ta ? 0.5 : 1, beta: tb ? 0 : m === 13 ? 0.25 : 1, smallM: false });
}
for (const m of [1, 5, 16])
  CASES.push({ ta: false, tb: true, m, n: 37, k: 300, alpha: 1, beta: 0, smallM: true });

const name = (c: Case) =>
  `${c.smallM ? 'SgemmSmallM' : 'Sgemm'} ${c.ta ? 'T' : 'N'}${c.tb ? 'T' : 'N'} ${c.m}x${c.n}x${c.k} alpha ${c.alpha} beta ${c.beta}`;

function operands(c: Case) {
  const r = createRng(c.m * 7 + c.n * 13 + c.k);
  const fill = (len: number) => Float32Array.from({ length: len }, () => r() * 2 - 1);
  return { a: fill(c.m * c.k), b: fill(c.k * c.n), c0: fill(c.m * c.n) };
}

function run(c: Case): Float32Array {
  const { a, b, c0 } = operands(c);
  return gemm(c.ta, c.tb, c.m, c.n, c.k, c.alpha, a, b, c.beta, c0.slice(), c.smallM);
}

/** max over elements of |got - exact| / (|alpha| sum_k |a b| + |beta c| + tiny), exact in float64. */
function errorBound(c: Case, got: Float32Array): number {
  const { a, b, c0 } = operands(c);
  let worst = 0;
  for (let i = 0; i < c.m; i++) {
    for (let j = 0; j < c.n; j++) {
      let s = 0;
      let mag = 0;
      for (let p = 0; p < c.k; p++) {
        const x = (c.ta ? a[p * c.m + i] : a[i * c.k + p]) ?? 0;
        const y = (c.tb ? b[j * c.k + p] : b[p * c.n + j]) ?? 0;
        s += x * y;
        mag += Math.abs(x * y);
      }
      const old = c0[i * c.n + j] ?? 0;
      const exact = c.alpha * s + (c.beta === 0 ? 0 : c.beta * old);
      const scale = Math.abs(c.alpha) * mag + Math.abs(c.beta * old) + 1e-30;
      worst = Math.max(worst, Math.abs((got[i * c.n + j] ?? 0) - exact) / scale);
    }
  }
  return worst;
}

describeEachCpuKernelPath('packed SGEMM vs a float64 reference', () => {
  // fp32 sums of up to 513 terms in 256-long FMA chains: far below k * 2^-24 of the magnitudes
  it.each(CASES.map((c) => [name(c), c] as const))('%s', (_n, c) => {
    expect(errorBound(c, run(c))).toBeLessThan(2e-6);
  });
});

describe('packed SGEMM: the CPU kernel paths against each other', () => {
  const initial = cpuKernels().active;
  afterAll(() => setCpuKernels(initial));
  const on = (path: 'avx512' | 'avx2' | 'portable', c: Case) => {
    setCpuKernels(path);
    return run(c);
  };
  const same = (x: Float32Array, y: Float32Array) => Buffer.from(x.buffer).equals(Buffer.from(y.buffer));
  const packed = CASES.filter((c) => !c.smallM);
  const both = notExercised('avx512') || notExercised('avx2');

  it.skipIf(both !== '')(
    `avx512 and avx2 are bit-identical (one FMA chain per element per 256-long k-block)${both}`,
    () => {
      for (const c of packed) expect(same(on('avx512', c), on('avx2', c)), name(c)).toBe(true);
    },
  );

  it.skipIf(notExercised('avx2') !== '')(
    `avx2 differs from portable (no FMA on x86-64) only in rounding${notExercised('avx2')}`,
    () => {
      let differs = false;
      for (const c of packed) {
        const p = on('portable', c);
        const x = on('avx2', c);
        expect(errorBound(c, p), name(c)).toBeLessThan(2e-6);
        differs ||= !same(p, x);
      }
      if (process.arch === 'x64') expect(differs).toBe(true);
    },
  );
});
