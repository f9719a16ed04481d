import { describe, expect, it } from 'vitest';
import { resampleOnCorrect } from './roc.js';
import { createSyntheticGroups } from './synthetic.js';
import { parseGroups } from './validate.js';

describe('createSyntheticGroups', () => {
  it('makes groups that pass the full protocol parse, the same for the same seed', () => {
    const groups = createSyntheticGroups({ prompts: 3, groupSize: 8, tokens: 64, seed: 9 });
    expect(parseGroups(JSON.parse(JSON.stringify(groups)))).toEqual(groups);
    expect(createSyntheticGroups({ prompts: 3, groupSize: 8, tokens: 64, seed: 9 })).toEqual(groups);
    expect(createSyntheticGroups({ prompts: 3, groupSize: 8, tokens: 64, seed: 10 })).not.toEqual(groups);
  });

  it('gives RoC something to do: kept positives make fewer tool errors than sampled ones', () => {
    const groups = createSyntheticGroups({ prompts: 32, groupSize: 32, tokens: 64, seed: 1 });
    const m = resampleOnCorrect(groups, { seed: 1 }).metrics;
    expect(m.groupsDownsampled).toBeGreaterThan(0);
    expect(m.positiveToolErrorRatioAfter).toBeLessThan(m.positiveToolErrorRatioBefore);
    expect(m.positiveMeanPenaltyAfter).toBeLessThan(m.positiveMeanPenaltyBefore);
  });
});
