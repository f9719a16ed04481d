// The sampler's native exp (native/src/engine/cpu/sampler.cc) against V8's Math.exp, bit for bit, on
// every CPU kernel path this machine runs: arbitrary doubles (NaN, +-inf, -0, subnormals), fdlibm's
// branch thresholds and their neighbours, and 2^20 draws from [-100, 0] (the sampler's range).
// Inputs go through in arrays, so one vector of lanes mixes the fast path with the scalar one.
import { Rng } from '@agentrl/protocol';
import fc from 'fast-check';
import { expect, it } from 'vitest';
import { samplerBinding } from '../src/native.js';
import { bitMismatches } from './bits.js';
import { describeEachCpuKernelPath } from './helpers.js';

const native = samplerBinding();

/** The indices (and the first inputs) where the native exp differs from Math.exp. */
function differences(xs: ArrayLike<number>) {
  const x = Float64Array.from(xs);
  const got = new Float64Array(x.length);
  native.expF64(x, got);
  const bad = bitMismatches(got, x.map(Math.exp));
  return bad.slice(0, 5).map((i) => ({ x: x[i], got: got[i], want: Math.exp(x[i] ?? 0) }));
}

/** x and its `k` neighbours either side in the float64 order. */
function neighbours(x: number, k = 3): number[] {
  const f = Float64Array.of(x);
  const bits = new BigInt64Array(f.buffer);
  const base = bits[0] ?? 0n;
  const out: number[] = [];
  for (let d = -k; d <= k; d++) {
    bits[0] = base + BigInt(x < 0 || Object.is(x, -0) ? -d : d);
    out.push(f[0] ?? 0);
  }
  return out;
}

const fromBits = (hi: number, lo = 0) => {
  const v = new DataView(new ArrayBuffer(8));
  v.setUint32(0, hi);
  v.setUint32(4, lo);
  return v.getFloat64(0);
};

// fdlibm's thresholds (high words of e_exp.c) and where k leaves the vector path (|x| > 708).
const LN2 = Math.LN2;
const edges = [
  fromBits(0x40862e42, 0xfefa39ef), // overflow threshold
  fromBits(0xc0874910, 0xd52d3051), // underflow threshold
  fromBits(0x40862e42),
  fromBits(0xc0862e42),
  fromBits(0x3fd62e42),
  fromBits(0xbfd62e42),
  fromBits(0x3ff0a2b2),
  fromBits(0xbff0a2b2),
  fromBits(0x3e300000),
  fromBits(0xbe300000),
  0.5 * LN2,
  -0.5 * LN2,
  1.5 * LN2,
  -1.5 * LN2,
  708,
  -708,
  709.43,
  709.44,
  -708.39,
  -708.4,
  -709.09,
  -744.44,
  -745,
  1,
  -1,
  2,
  -2,
  Number.MIN_VALUE,
  -Number.MIN_VALUE,
  2.2250738585072014e-308,
];
const specials = [0, -0, Number.POSITIVE_INFINITY, Number.NEGATIVE_INFINITY, Number.NaN, 1e300, -1e300];

describeEachCpuKernelPath('native exp', () => {
  it("equals Math.exp at fdlibm's thresholds, their neighbours, and the special values", () => {
    const xs = [...specials, ...edges.flatMap((x) => neighbours(x))];
    // each value once in every lane position of a vector, beside values of the other branches
    const shifted = Array.from({ length: 8 }, (_, s) => [...xs.slice(s), ...xs.slice(0, s)]).flat();
    expect(differences(shifted)).toEqual([]);
  });

  it('equals Math.exp on arbitrary doubles (fast-check), including NaN, infinities and subnormals', () => {
    const anywhere = fc.oneof(
      fc.double(),
      fc.double({ min: -746, max: -700 }),
      fc.double({ min: 700, max: 710 }),
      fc.double({ min: -2, max: 2 }),
      fc.double({ min: -1e-8, max: 1e-8 }),
      fc.double({ min: -120, max: 0 }),
    );
    fc.assert(
      fc.property(fc.array(anywhere, { minLength: 1, maxLength: 40 }), (xs) => {
        expect(differences(xs)).toEqual([]);
      }),
      { numRuns: 3000 },
    );
  });

  it('equals Math.exp on 2^20 random draws from [-100, 0]', () => {
    const rng = Rng.seeded(26);
    const xs = Float64Array.from({ length: 1 << 20 }, () => -100 * rng.next());
    expect(differences(xs)).toEqual([]);
  });
});
