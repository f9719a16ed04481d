import { hashSeed, Rng } from '@agentrl/protocol';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { createRng, requestSeed, sampleToken } from './sampling.js';
import { sampleTokenReference } from './sampling-reference.js';

/** Logits of one of four shapes: peaked, flat (random init), many exact ties, a few huge outliers. */
const logitsArb = fc
  .record({
    V: fc.integer({ min: 1, max: 3000 }),
    kind: fc.constantFrom('peaked', 'flat', 'ties', 'outliers'),
    seed: fc.integer({ min: 0, max: 2 ** 31 - 1 }),
  })
  .map(({ V, kind, seed }) => {
    const rng = Rng.seeded(seed);
    return Float32Array.from({ length: V }, () => {
      const u = rng.next();
      if (kind === 'peaked') return 12 * u ** 6;
      if (kind === 'flat') return 0.02 * (u - 0.5);
      if (kind === 'ties') return Math.floor(u * 4);
      return u < 0.002 ? 40 : u;
    });
  });

const paramsArb = fc.record({
  temperature: fc.constantFrom(0, 0.3, 0.7, 1, 1.5),
  topK: fc.constantFrom(0, 1, 2, 5, 50, 10_000),
  topP: fc.constantFrom(0.01, 0.5, 0.9, 0.95, 0.999999, 1),
});

describe('sampleToken', () => {
  it('picks the same token with the same logprob as the full-sort reference, for every uniform draw', () => {
    fc.assert(
      fc.property(
        logitsArb,
        paramsArb,
        fc.double({ min: 0, max: 1, maxExcluded: true, noNaN: true }),
        (logits, params, u) => {
          const fast = sampleToken(logits, params, () => u);
          const ref = sampleTokenReference(logits, params, () => u);
          expect(fast.token).toBe(ref.token);
          expect(Object.is(fast.logprob, ref.logprob)).toBe(true);
        },
      ),
      { numRuns: 400 },
    );
  });

  it('at the edges of the draw: u = 0 and u just below 1 over a flat 151,936-token vocabulary', () => {
    const V = 151_936;
    const logits = Float32Array.from({ length: V }, (_, i) => 0.01 * Math.sin(i * 12.9898));
    for (const params of [
      { temperature: 1, topK: 0, topP: 0.95 },
      { temperature: 1, topK: 40, topP: 1 },
    ]) {
      for (const u of [0, 0.5, 1 - 2 ** -40]) {
        expect(sampleToken(logits, params, () => u)).toEqual(sampleTokenReference(logits, params, () => u));
      }
    }
  });

  it('requestSeed keys a stream by base seed, id and position, not by call order', () => {
    expect(requestSeed(1, 'traj-3', 40)).toBe(requestSeed(1, 'traj-3', 40));
    const seeds = new Set([
      requestSeed(1, 'traj-3', 40),
      requestSeed(2, 'traj-3', 40),
      requestSeed(1, 'traj-4', 40),
      requestSeed(1, 'traj-3', 41),
    ]);
    expect(seeds.size).toBe(4);
  });

  it("draws a request's stream from protocol's Rng (the one PRNG), seeded by hashSeed", () => {
    expect(requestSeed(1, 'traj-3', 40)).toBe(hashSeed(1, 'traj-3', 40));
    const random = createRng(requestSeed(1, 'traj-3', 40));
    const same = Rng.seeded(hashSeed(1, 'traj-3', 40));
    expect(Array.from({ length: 6 }, random)).toEqual(Array.from({ length: 6 }, () => same.next()));
  });
});
