import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { group } from '../test/fixtures.js';
import { advantagesFromRewards, broadcastAdvantage, computeGroupAdvantages } from './advantages.js';
import { AdvantageConfigSchema } from './config.js';

const GRPO = AdvantageConfigSchema.parse({});
const DR_GRPO = AdvantageConfigSchema.parse({ normalizeStd: false });

describe('advantagesFromRewards', () => {
  it('is (r - mean) / (std + eps) with the unbiased std, like verl', () => {
    // rewards 1, 0, 0, 0: mean 0.25, unbiased std sqrt(0.75 / 3) = 0.5
    const { advantages, mean, std } = advantagesFromRewards([1, 0, 0, 0], GRPO);
    expect(mean).toBe(0.25);
    expect(std).toBeCloseTo(0.5, 12);
    expect(Array.from(advantages)).toEqual([0.75, -0.25, -0.25, -0.25].map((x) => x / (0.5 + 1e-6)));
  });

  it('uses the population std when asked, and r - mean for Dr. GRPO', () => {
    const pop = advantagesFromRewards([1, 0], AdvantageConfigSchema.parse({ unbiasedStd: false }));
    expect(pop.std).toBe(0.5);
    expect(Array.from(advantagesFromRewards([1, 0, 0, 0], DR_GRPO).advantages)).toEqual([
      0.75, -0.25, -0.25, -0.25,
    ]);
  });

  it('gives 0 to a group of one and to a group whose rewards are all equal', () => {
    expect(Array.from(advantagesFromRewards([1], GRPO).advantages)).toEqual([0]);
    expect(Array.from(advantagesFromRewards([1, 1, 1], GRPO).advantages)).toEqual([0, 0, 0]);
  });

  it('sums to ~0 in every group and is finite (property)', () => {
    const rewards = fc.array(fc.double({ min: -10, max: 10, noNaN: true }), { minLength: 1, maxLength: 64 });
    fc.assert(
      fc.property(rewards, fc.boolean(), (r, normalizeStd) => {
        const cfg = normalizeStd ? GRPO : DR_GRPO;
        const { advantages } = advantagesFromRewards(r, cfg);
        let sum = 0;
        for (const a of advantages) {
          expect(Number.isFinite(a)).toBe(true);
          sum += a;
        }
        const scale = normalizeStd ? (r.length * 10) / 1e-6 : r.length * 10;
        expect(Math.abs(sum)).toBeLessThanOrEqual(1e-12 * scale + 1e-9);
      }),
      { numRuns: 1000 },
    );
  });

  it('with std normalisation, a group of differing rewards has unit-ish std (property)', () => {
    const r = fc
      .array(fc.constantFrom(0, 1), { minLength: 2, maxLength: 64 })
      .filter((x) => new Set(x).size > 1);
    fc.assert(
      fc.property(r, (rewards) => {
        const { advantages } = advantagesFromRewards(rewards, GRPO);
        const sq = advantages.reduce((s, a) => s + a * a, 0);
        expect(Math.sqrt(sq / (rewards.length - 1))).toBeCloseTo(1, 4);
      }),
    );
  });
});

describe('computeGroupAdvantages and broadcastAdvantage', () => {
  it('computes per group and puts the advantage on loss-masked tokens only', () => {
    const [a, b] = computeGroupAdvantages(
      [group([{ reward: 1 }, { reward: 0 }], 'a'), group([{ reward: 1 }], 'b')],
      {
        normalizeStd: false,
      },
    );
    expect(Array.from(a!.advantages)).toEqual([0.5, -0.5]);
    expect(b).toMatchObject({ promptId: 'b', mean: 1, std: 0 });
    const t = group([{ reward: 1, tokens: 5 }]).trajectories[0]!;
    expect(Array.from(broadcastAdvantage(t, 0.5))).toEqual([0, 0, 0.5, 0.5, 0.5]);
    const out = new Float32Array(8).fill(9);
    broadcastAdvantage(t, -1, out, 2);
    expect(Array.from(out)).toEqual([9, 9, 0, 0, -1, -1, -1, 9]);
  });

  it('rejects a NaN reward naming the field', () => {
    const g = group([{ reward: 1 }, { reward: Number.NaN }]);
    expect(() => computeGroupAdvantages([g, g])).toThrow(/groups\[0\]\.trajectories\[1\]\.reward is NaN/);
  });
});
