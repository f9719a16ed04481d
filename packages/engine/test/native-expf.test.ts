// The training step's element-wise kernels (native/src/engine/cpu/elementwise.cc and expf_simd.h)
// against the loops they replaced, bit for bit, on every CPU kernel path this machine runs. The
// vector expf runs glibc's expf algorithm with the operations of its FMA variant (the one glibc
// picks on any CPU with the avx2 level's features); the reference is glibc's std::exp itself.
// Every float's bit pattern with a stride (plus the thresholds, their neighbours and the special
// values, in every lane position) goes through one array, so a vector mixes the fast path and the
// scalar fallback. (All 2^32 inputs were checked once, outside the suite: see the engine README.)
import { Rng } from '@agentrl/protocol';
import { describe, expect, it } from 'vitest';
import { elementwiseTestBinding } from '../src/native.js';
import { describeEachCpuKernelPath } from './helpers.js';

const native = elementwiseTestBinding();

/** Indices where two float32 arrays differ in bits (any NaN equals any NaN). */
function mismatches(a: Float32Array, b: Float32Array): number[] {
  const ab = new Uint32Array(a.buffer, a.byteOffset, a.length);
  const bb = new Uint32Array(b.buffer, b.byteOffset, b.length);
  const out: number[] = [];
  for (let i = 0; i < a.length; i++) {
    if (ab[i] !== bb[i] && !(Number.isNaN(a[i]) && Number.isNaN(b[i]))) out.push(i);
  }
  return out;
}

const fromBits = (bits: number) => new Float32Array(Uint32Array.of(bits >>> 0).buffer)[0] ?? Number.NaN;

/** glibc's expf branch points (e_expf.c) and where the 32-entry table's index wraps. */
const edgeBits = [
  0x42b17217, // 88.72283: overflow above
  0xc2cff1b4, // -103.97208: zero below
  0xc2ce8ecf, // -103.27893: may underflow below
  0x42b00000, // 88.0: the scalar lane from here
  0xc2b00000, // -88.0
  0x7f800000, // +inf
  0xff800000, // -inf
  0x7fc00000, // NaN
  0xffc00001, // a negative NaN with a payload
  0x00000001, // the smallest subnormal
  0x80000001,
  0x00000000,
  0x80000000,
  0x3f800000, // 1
  0xbf800000,
  0x3e000000, // 1/8
  0x3d317218, // ln2 / 32
  0xbd317218,
];
const neighbours = edgeBits.flatMap((b) => Array.from({ length: 9 }, (_, d) => (b + d - 4) >>> 0));

function expDifferences(x: Float32Array) {
  const got = new Float32Array(x.length);
  const want = new Float32Array(x.length);
  native.expF32(x, got, false);
  native.expF32(x, want, true);
  return mismatches(got, want)
    .slice(0, 5)
    .map((i) => ({ x: x[i], got: got[i], want: want[i] }));
}

describeEachCpuKernelPath('native expf', () => {
  it("equals glibc's expf at its thresholds, their neighbours and the special values, in every lane", () => {
    const xs = neighbours.map(fromBits);
    const shifted = Array.from({ length: 16 }, (_, s) => [...xs.slice(s), ...xs.slice(0, s)]).flat();
    expect(expDifferences(Float32Array.from(shifted))).toEqual([]);
  });

  it("equals glibc's expf on every 997th float bit pattern (4.3 million inputs, both signs)", () => {
    const n = Math.floor(2 ** 32 / 997);
    const bits = Uint32Array.from({ length: n }, (_, i) => i * 997);
    expect(expDifferences(new Float32Array(bits.buffer))).toEqual([]);
  });

  it('gives the bits of the loops it replaced: SwiGLU, its backward, a cross-entropy row', () => {
    const rng = Rng.seeded(27);
    const n = 70_001; // over the parallel threshold, and not a whole number of vectors
    const g = Float32Array.from({ length: n }, () => (rng.next() - 0.5) * 24);
    const u = Float32Array.from({ length: n }, () => (rng.next() - 0.5) * 4);
    g[5] = 95; // exp(-g) underflows in the scalar lane
    g[6] = -95; // exp(-g) overflows: sigmoid 0
    g[7] = Number.NaN;
    g[8] = -0;
    const [a1, a2] = [new Float32Array(n), new Float32Array(n)];
    native.swiglu(g, u, a1, false);
    native.swiglu(g, u, a2, true);
    expect(mismatches(a1, a2)).toEqual([]);

    const da = Float32Array.from({ length: n }, () => rng.next() - 0.5);
    const [dg1, dg2] = [da.slice(), da.slice()];
    const [du1, du2] = [new Float32Array(n), new Float32Array(n)];
    native.swigluBackward(g, u, dg1, du1, false);
    native.swigluBackward(g, u, dg2, du2, true);
    expect(mismatches(dg1, dg2)).toEqual([]);
    expect(mismatches(du1, du2)).toEqual([]);

    const rows: Float32Array[] = [
      Float32Array.from({ length: 151_936 }, () => (rng.next() - 0.5) * 30),
      Float32Array.from({ length: 1003 }, () => rng.next() * -200), // exps in the scalar lanes
      Float32Array.from({ length: 37 }, (_, i) => (i === 3 ? 0 : i === 9 ? -0 : -1 - i)), // the max is a zero
      Float32Array.from({ length: 50 }, (_, i) => (i % 7 === 0 ? Number.NEGATIVE_INFINITY : i * 0.25)),
      Float32Array.of(2.5),
    ];
    rows.forEach((row, r) => {
      const target = (r * 7919) % row.length;
      const [z1, z2] = [row.slice(), row.slice()];
      const l1 = native.softmaxXentRow(z1, target, 1 / 512, false);
      const l2 = native.softmaxXentRow(z2, target, 1 / 512, true);
      expect(Object.is(l1, l2), `row ${r}: loss ${l1} against ${l2}`).toBe(true);
      expect(mismatches(z1, z2), `row ${r}`).toEqual([]);
    });
  });
});

describe('native expf test surface', () => {
  it('refuses a target outside the row, naming it', () => {
    expect(() => native.softmaxXentRow(new Float32Array(4), 4, 1, false)).toThrow(/target/);
  });
});
