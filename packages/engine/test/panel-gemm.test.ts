// PanelGemm (decode's batch-invariant product on weights packed once into 16-column panels) against
// the packed Sgemm bit for bit on every CPU kernel path: each output element must be the same FMA
// chain per 256-long k-block (panel_gemm.h), for every row count a decode step can give it (1..64,
// then the 64-row chunks above), every row of the block (the row blocks, 6 rows on AVX2 and 8 on
// AVX-512, and the rows left over), widths with a partial last panel and groups of panels left over,
// and with C accumulated or not.
import { beforeAll, describe, expect, it } from 'vitest';
import { productEntries } from '../src/native.js';
import { createRng } from '../src/sampling.js';
import { describeEachCpuKernelPath } from './helpers.js';

const native = productEntries();

const fill = (len: number, seed: number) => {
  const r = createRng(seed);
  return Float32Array.from({ length: len }, () => r() * 2 - 1);
};
const same = (x: Float32Array, y: Float32Array) => Buffer.from(x.buffer).equals(Buffer.from(y.buffer));

/** The first row and column where two [m, n] results differ, or '' when they are bit-identical. */
function firstDifference(x: Float32Array, y: Float32Array, n: number): string {
  for (let e = 0; e < x.length; e++)
    if (!Object.is(x[e], y[e])) return `row ${Math.floor(e / n)} column ${e % n}: ${x[e]} vs ${y[e]}`;
  return '';
}

// n = 37: two panels and a partial one; n = 149: two groups of four, one panel left over and a
// partial one. k = 300 gives two k-blocks (256 + 44).
const ROWS = [...Array.from({ length: 64 }, (_, i) => i + 1), 65, 70, 130];
const SHAPES = [
  { n: 37, k: 300 },
  { n: 149, k: 300 },
];

describeEachCpuKernelPath('PanelGemm equals the packed Sgemm bit for bit', () => {
  for (const { n, k } of SHAPES) {
    const w = fill(n * k, n + k);
    const a = fill(130 * k, 7 * k);
    const c0 = fill(130 * n, 11 * n);
    let panels: Float32Array = new Float32Array(0);
    beforeAll(() => {
      panels = native.packPanels(w, n, k); // on the path under test
    });
    it.each(ROWS)(`m = %i, n = ${n}, k = ${k}, C overwritten and accumulated`, (m) => {
      const am = a.subarray(0, m * k);
      for (const accumulate of [false, true]) {
        const start = c0.slice(0, m * n);
        const want = native.gemm(false, true, m, n, k, 1, am, w, accumulate ? 1 : 0, start.slice(), false);
        const got = native.panelGemm(m, n, k, am, w, panels, start.slice(), accumulate);
        expect(firstDifference(got, want, n), `accumulate ${accumulate}`).toBe('');
      }
    });
  }
});

describe('PanelGemm: the test above can fail', () => {
  it('a changed element of the panel copy changes the product', () => {
    const n = 37;
    const k = 300;
    const w = fill(n * k, 1);
    const panels = native.packPanels(w, n, k);
    const a = fill(8 * k, 2);
    const before = native.panelGemm(8, n, k, a, w, panels, new Float32Array(8 * n), false);
    panels[5 * 16 + 3] = (panels[5 * 16 + 3] ?? 0) + 1e-3; // k = 5, column 3 of panel 0
    const after = native.panelGemm(8, n, k, a, w, panels, new Float32Array(8 * n), false);
    expect(same(before, after)).toBe(false);
    expect(firstDifference(before, after, n)).toMatch(/^row 0 column 3:/);
  });

  it('refuses operands of the wrong size, naming which', () => {
    const w = fill(37 * 300, 1);
    const panels = native.packPanels(w, 37, 300);
    expect(() =>
      native.panelGemm(2, 37, 300, new Float32Array(599), w, panels, new Float32Array(74), false),
    ).toThrow('panelGemm a must have 600 elements, not 599');
    expect(() =>
      native.panelGemm(2, 37, 300, new Float32Array(600), w, panels.subarray(1), new Float32Array(74), false),
    ).toThrow(/panelGemm panels must have/);
    expect(() => native.packPanels(w, 36, 300)).toThrow('packPanels w must have 10800 elements, not 11100');
  });
});
