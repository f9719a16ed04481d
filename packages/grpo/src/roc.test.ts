import type { Group, ToolStatus } from '@agentrl/protocol';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { group, type TrajectorySpec, times } from '../test/fixtures.js';
import { answerFormatPenalty, toolErrorRatio } from './penalty.js';
import { resampleOnCorrect } from './roc.js';

const ids = (g: Group | undefined) => g?.trajectories.map((t) => t.id) ?? [];

describe('resampleOnCorrect: worked examples', () => {
  it('32 with 3 positives, n = 16: keeps the 2 lowest-penalty positives and 14 negatives', () => {
    const specs: TrajectorySpec[] = [
      { reward: 1, calls: ['ok', 'runtime_error'] }, // penalty 0.5
      { reward: 1, calls: ['ok', 'ok'] }, // 0
      { reward: 1, calls: ['parse_error', 'ok', 'ok', 'ok'] }, // 0.25: a parse failure counts
      ...times(29, { reward: 0, calls: ['ok'] }),
    ];
    const r = resampleOnCorrect([group(specs)], { seed: 7 });
    const kept = r.groups[0]!.trajectories;
    expect(kept).toHaveLength(16);
    expect(kept.filter((t) => t.reward === 1).map((t) => t.id)).toEqual(['p-1', 'p-2']);
    expect(kept.filter((t) => t.reward === 0)).toHaveLength(14);
    expect(r.decisions[0]).toMatchObject({ fate: 'downsampled', keptPositive: 2, keptNegative: 14 });
    expect(r.metrics).toMatchObject({ positivesIn: 3, positivesKept: 2, negativesIn: 29, negativesKept: 14 });
    // errors/calls pooled over positives: (1 + 0 + 1) / 8 before, (0 + 1) / 6 after
    expect(r.metrics.positiveToolErrorRatioBefore).toBeCloseTo(2 / 8);
    expect(r.metrics.positiveToolErrorRatioAfter).toBeCloseTo(1 / 6);
    expect(r.metrics.positiveMeanPenaltyBefore).toBeCloseTo(0.75 / 3);
    expect(r.metrics.positiveMeanPenaltyAfter).toBeCloseTo(0.25 / 2);
  });

  it('ranks by tool-error ratio plus answer-format penalty, each switchable', () => {
    const specs: TrajectorySpec[] = [
      { reward: 1, calls: ['ok'], answer: '\\boxed{1} \\boxed{1}' }, // tool 0, format 0.5: 0.5
      { reward: 1, calls: ['timeout', 'ok', 'ok'], answer: '\\boxed{1}' }, // tool 1/3, format 0: 0.33
      { reward: 1, calls: ['ok', 'ok', 'ok', 'sandbox_error'], answer: '\\boxed{1}'.repeat(3) }, // 0.25 + 0.67
      ...times(5, { reward: 0 }),
    ];
    const keptPositives = (toolErrorPenalty: boolean, formatPenalty: boolean) =>
      ids(
        resampleOnCorrect([group(specs)], {
          groupSize: 8,
          n: 4,
          minPositive: 0,
          minNegative: 0,
          toolErrorPenalty,
          formatPenalty,
        }).groups[0],
      ).filter((id) => ['p-0', 'p-1', 'p-2'].includes(id));
    // quotas: round(3 * 4 / 8) = round(1.5) = 2 positives
    expect(keptPositives(true, true)).toEqual(['p-0', 'p-1']); // 0.5, 0.33 | 0.92
    expect(keptPositives(true, false)).toEqual(['p-0', 'p-2']); // 0, 0.25 | 0.33
    expect(keptPositives(false, true)).toEqual(['p-0', 'p-1']); // 0.5, 0 | 0.67
    expect(keptPositives(false, false)).toHaveLength(2); // all tied: a seeded draw
  });

  it('rounds each quota on its own, as the reference: N = 6, n = 3, one positive, minNegative 2 keeps 1 + 2', () => {
    const g = group([{ reward: 1 }, ...times(5, { reward: 0 })]);
    const r = resampleOnCorrect([g], { groupSize: 6, n: 3, minPositive: 0, minNegative: 2 });
    // negatives round(5 * 3 / 6) = round(2.5) = 2, at the minimum 2: positives 3 - 2 = 1
    expect(r.decisions[0]).toMatchObject({ fate: 'downsampled', keptPositive: 1, keptNegative: 2 });
    expect(ids(r.groups[0])).toContain('p-0');
  });

  it('keeps groups of exactly n whole and drops groups smaller than n', () => {
    const r = resampleOnCorrect(
      [
        group([{ reward: 1 }, { reward: 0 }, { reward: 0 }, { reward: 1 }], 'a'),
        group([{ reward: 1 }, { reward: 0 }], 'b'),
      ],
      { groupSize: 8, n: 4, minPositive: 1, minNegative: 1 },
    );
    expect(r.groups.map((g) => g.promptId)).toEqual(['a']);
    expect(ids(r.groups[0])).toEqual(['a-0', 'a-1', 'a-2', 'a-3']);
    expect(r.decisions.map((d) => d.fate)).toEqual(['kept_whole', 'dropped_too_small']);
    expect(r.metrics).toMatchObject({ groupsKeptWhole: 1, groupsDroppedTooSmall: 1, trajectoriesDropped: 2 });
  });

  it('drops groups whose rewards are all equal when asked, and keeps them otherwise', () => {
    const groups = [group(times(8, { reward: 0 }), 'zero'), group(times(8, { reward: 1 }), 'one')];
    const on = resampleOnCorrect(groups, { groupSize: 8, n: 4, minPositive: 1, minNegative: 1 });
    expect(on.groups).toHaveLength(0);
    expect(on.metrics).toMatchObject({ groupsDroppedEqualReward: 2, groupsDroppedAllZero: 1 });
    const off = resampleOnCorrect(groups, {
      groupSize: 8,
      n: 4,
      minPositive: 1,
      minNegative: 1,
      rejectEqualReward: false,
    });
    expect(off.groups.map((g) => g.trajectories.length)).toEqual([4, 4]);
  });

  it('keeps the original order of the kept trajectories and never mutates its input', () => {
    const g = group([...times(6, { reward: 1, calls: ['ok'] }), ...times(10, { reward: 0 })]);
    const snapshot = structuredClone(g);
    const r = resampleOnCorrect([g], { groupSize: 16, n: 8, seed: 3 });
    const order = ids(r.groups[0]).map((id) => Number(id.slice(2)));
    expect(order).toEqual([...order].sort((a, b) => a - b));
    expect(g).toEqual(snapshot);
  });
});

const STATUSES: ToolStatus[] = ['ok', 'ok', 'runtime_error', 'timeout', 'parse_error', 'output_truncated'];
const specArb = fc.record({
  reward: fc.constantFrom(0, 1),
  calls: fc.array(fc.constantFrom(...STATUSES), { maxLength: 4 }),
  answer: fc.constantFrom('none', '\\boxed{1}', '\\boxed{1}\\boxed{2}', '\\boxed{'),
});
const batchArb = fc
  .record({
    n: fc.integer({ min: 1, max: 12 }),
    minPositive: fc.integer({ min: 0, max: 3 }),
    minNegative: fc.integer({ min: 0, max: 3 }),
    seed: fc.integer(),
    groups: fc.array(fc.array(specArb, { minLength: 1, maxLength: 24 }), { minLength: 1, maxLength: 4 }),
  })
  .map((b) => {
    const minPositive = Math.min(b.minPositive, b.n);
    return {
      config: {
        groupSize: 24,
        n: b.n,
        minPositive,
        minNegative: Math.min(b.minNegative, b.n - minPositive),
        seed: b.seed,
        rejectEqualReward: false,
      },
      groups: b.groups.map((specs, g) => group(specs, `g${g}`)),
    };
  });

describe('resampleOnCorrect: properties', () => {
  it('keeps exactly n from every group of N > n, all of a group of n, none of a smaller one', () => {
    fc.assert(
      fc.property(batchArb, ({ config, groups }) => {
        const r = resampleOnCorrect(groups, config);
        r.decisions.forEach((d, g) => {
          const N = groups[g]!.trajectories.length;
          expect(d.kept.length).toBe(N < config.n ? 0 : config.n);
          expect(new Set(d.kept).size).toBe(d.kept.length);
        });
        expect(r.groups.map((g) => g.trajectories.length)).toEqual(r.groups.map(() => config.n));
      }),
      { numRuns: 300 },
    );
  });

  it('never keeps a positive that ranks worse than a dropped positive', () => {
    fc.assert(
      fc.property(batchArb, ({ config, groups }) => {
        const r = resampleOnCorrect(groups, config);
        r.decisions.forEach((d, g) => {
          if (d.fate !== 'downsampled') return;
          const ts = groups[g]!.trajectories;
          const keptSet = new Set(d.kept);
          const penalty = (i: number) => toolErrorRatio(ts[i]!) + answerFormatPenalty(ts[i]!);
          const pos = [...ts.keys()].filter((i) => ts[i]!.reward! > 0);
          const worstKept = Math.max(...pos.filter((i) => keptSet.has(i)).map(penalty));
          const bestDropped = Math.min(...pos.filter((i) => !keptSet.has(i)).map(penalty));
          expect(worstKept).toBeLessThanOrEqual(bestDropped);
        });
      }),
      { numRuns: 300 },
    );
  });

  it('honours the minimums when the group has that many', () => {
    fc.assert(
      fc.property(batchArb, ({ config, groups }) => {
        for (const d of resampleOnCorrect(groups, config).decisions) {
          if (d.fate !== 'downsampled') continue;
          expect(d.keptPositive).toBeGreaterThanOrEqual(Math.min(config.minPositive, d.numPositive));
          expect(d.keptNegative).toBeGreaterThanOrEqual(Math.min(config.minNegative, d.numNegative));
        }
      }),
      { numRuns: 300 },
    );
  });

  it('is a pure function of input and seed, and a group does not depend on its neighbours', () => {
    fc.assert(
      fc.property(batchArb, ({ config, groups }) => {
        const a = resampleOnCorrect(groups, config);
        const b = resampleOnCorrect(structuredClone(groups), config);
        expect(b.decisions).toEqual(a.decisions);
        expect(b.metrics).toEqual(a.metrics);
        const alone = resampleOnCorrect([groups[0]!], config);
        expect(alone.decisions[0]).toEqual(a.decisions[0]);
      }),
      { numRuns: 200 },
    );
  });

  it('draws negatives uniformly: each negative is kept about n_neg / N_neg of the time over seeds', () => {
    const g = group([...times(2, { reward: 1 }), ...times(14, { reward: 0 })]);
    const hits = new Array<number>(16).fill(0);
    const runs = 4000;
    for (let seed = 0; seed < runs; seed++)
      for (const i of resampleOnCorrect([g], { groupSize: 16, n: 8, seed }).decisions[0]!.kept) hits[i]!++;
    // quotas: round(2 * 8 / 16) = 1 -> raised to 2 positives, 6 of 14 negatives
    expect(hits.slice(0, 2)).toEqual([runs, runs]);
    for (const h of hits.slice(2)) expect(Math.abs(h / runs - 6 / 14)).toBeLessThan(0.04);
  });

  it('breaks penalty ties with the seed, not by position', () => {
    const g = group([...times(8, { reward: 1, calls: ['ok'] }), ...times(8, { reward: 0 })]);
    const firstKept = new Set<number>();
    for (let seed = 0; seed < 50; seed++)
      firstKept.add(resampleOnCorrect([g], { groupSize: 16, n: 8, seed }).decisions[0]!.kept[0]!);
    expect(firstKept.size).toBeGreaterThan(3);
  });
});
