import { describe, expect, it } from 'vitest';
import { GRPO_DEFAULTS, GrpoConfigSchema } from './config.js';

describe('GrpoConfigSchema', () => {
  it('defaults to the rStar2-Agent recipe', () => {
    expect(GRPO_DEFAULTS).toEqual({
      roc: {
        groupSize: 32,
        n: 16,
        minPositive: 2,
        minNegative: 2,
        rejectEqualReward: true,
        toolErrorPenalty: true,
        formatPenalty: true,
        seed: 0,
      },
      advantage: { normalizeStd: true, unbiasedStd: true, eps: 1e-6 },
      lossAggregation: 'token-mean',
      packing: { maxTokensPerMicroBatch: 16384, keepGroupsWhole: false },
    });
  });

  it('fills a partial section and rejects inconsistent values', () => {
    expect(GrpoConfigSchema.parse({ roc: { n: 8 } }).roc).toMatchObject({ n: 8, groupSize: 32 });
    const r = GrpoConfigSchema.safeParse({ roc: { n: 40 } });
    expect(r.success).toBe(false);
    expect(r.error?.issues[0]?.path).toEqual(['roc', 'n']);
  });
});
