import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { group, times } from '../test/fixtures.js';
import { broadcastPacked, computeGroupAdvantages } from './advantages.js';
import { packMicroBatches } from './pack.js';

describe('packMicroBatches', () => {
  it('lays sequences end to end with cu_seqlens, masks, old logprobs and advantages', () => {
    const groups = [
      group(
        [
          { reward: 1, tokens: 4 },
          { reward: 0, tokens: 3 },
        ],
        'a',
      ),
    ];
    const adv = computeGroupAdvantages(groups, { normalizeStd: false });
    const [mb, ...rest] = packMicroBatches(groups, adv, { maxTokensPerMicroBatch: 8 });
    expect(rest).toHaveLength(0);
    expect(Array.from(mb!.cuSeqlens)).toEqual([0, 4, 7]);
    expect(Array.from(mb!.tokenIds)).toEqual([1, 2, 3, 4, 1, 2, 3]);
    expect(Array.from(mb!.lossMask)).toEqual([0, 0, 1, 1, 0, 0, 1]);
    expect(Array.from(mb!.oldLogprobs)).toEqual([0, 0, -0.25, -0.25, 0, 0, -0.25]);
    expect(Array.from(mb!.advantages)).toEqual([0, 0, 0.5, 0.5, 0, 0, -0.5]);
    expect(mb).toMatchObject({ numTokens: 7, numLossTokens: 3, maxSeqlen: 4, trajectoryIds: ['a-0', 'a-1'] });
    expect(broadcastPacked(mb!, mb!.sequenceAdvantages)).toEqual(mb!.advantages);
    expect(() => broadcastPacked(mb!, [1])).toThrow(/sequenceAdvantages has 1 entries for 2 sequences/);
  });

  it('keeps groups whole when asked and says which group is too big for the budget', () => {
    const groups = [
      group(times(3, { reward: 1, tokens: 4 }), 'a'),
      group(times(3, { reward: 0, tokens: 4 }), 'b'),
    ];
    const adv = groups.map((g) => new Float64Array(g.trajectories.length));
    const whole = packMicroBatches(groups, adv, { maxTokensPerMicroBatch: 16, keepGroupsWhole: true });
    expect(whole.map((m) => new Set(m.promptIds).size)).toEqual([1, 1]);
    const loose = packMicroBatches(groups, adv, { maxTokensPerMicroBatch: 16 });
    expect(loose.map((m) => m.numTokens)).toEqual([16, 8]);
    expect(() =>
      packMicroBatches(groups, adv, { maxTokensPerMicroBatch: 10, keepGroupsWhole: true }),
    ).toThrow(/groups\[0\] has 12 tokens/);
    expect(() => packMicroBatches(groups, adv, { maxTokensPerMicroBatch: 3 })).toThrow(
      /groups\[0\]\.trajectories\[0\]\.tokenIds has 4 tokens/,
    );
    expect(() => packMicroBatches(groups, [adv[0]!], {})).toThrow(/advantages has 1 entries for 2 groups/);
  });

  it('places every trajectory exactly once, within budget, contents intact (property)', () => {
    const arb = fc.record({
      sizes: fc.array(fc.array(fc.integer({ min: 2, max: 40 }), { minLength: 1, maxLength: 6 }), {
        minLength: 1,
        maxLength: 8,
      }),
      budget: fc.integer({ min: 40, max: 300 }),
      whole: fc.boolean(),
    });
    fc.assert(
      fc.property(arb, ({ sizes, budget, whole }) => {
        const groups = sizes.map((s, g) =>
          group(
            s.map((tokens, i) => ({ reward: i % 2, tokens })),
            `g${g}`,
          ),
        );
        const tooBig = whole && sizes.some((s) => s.reduce((a, b) => a + b, 0) > budget);
        const adv = computeGroupAdvantages(groups);
        if (tooBig)
          return void expect(() =>
            packMicroBatches(groups, adv, { maxTokensPerMicroBatch: budget, keepGroupsWhole: true }),
          ).toThrow();
        const mbs = packMicroBatches(groups, adv, { maxTokensPerMicroBatch: budget, keepGroupsWhole: whole });
        const seen = mbs.flatMap((m) => m.trajectoryIds).sort();
        expect(seen).toEqual(groups.flatMap((g) => g.trajectories.map((t) => t.id)).sort());
        for (const m of mbs) {
          expect(m.numTokens).toBeLessThanOrEqual(budget);
          expect(m.cuSeqlens[m.cuSeqlens.length - 1]).toBe(m.numTokens);
          m.trajectoryIds.forEach((id, s) => {
            const [g, i] = id.slice(1).split('-').map(Number) as [number, number];
            const t = groups[g]!.trajectories[i]!;
            expect(Array.from(m.tokenIds.subarray(m.cuSeqlens[s], m.cuSeqlens[s + 1]))).toEqual(t.tokenIds);
            expect(m.sequenceAdvantages[s]).toBe(Math.fround(adv[g]!.advantages[i]!));
          });
          if (whole)
            for (const p of new Set(m.promptIds))
              expect(mbs.filter((x) => x.promptIds.includes(p))).toHaveLength(1);
        }
      }),
      { numRuns: 200 },
    );
  });
});
