import type { MicroBatch } from '@agentrl/grpo';
import { LocalCommunicator } from '@agentrl/parallel';
import { describe, expect, it } from 'vitest';
import { parseConfig } from '../config/load.js';
import { leadRollsOut, shareStep, stepTotals } from './distributed-rollout.js';
import { shiftForNextToken } from './native-policy.js';

function microBatch(lengths: number[], seed: number): MicroBatch {
  const T = lengths.reduce((a, b) => a + b, 0);
  const cu = [0];
  for (const l of lengths) cu.push(cu.at(-1)! + l);
  const lossMask = Uint8Array.from({ length: T }, (_, t) => ((t * 7 + seed) % 3 === 0 ? 0 : 1));
  return {
    tokenIds: Int32Array.from({ length: T }, (_, t) => (t * 13 + seed) % 50),
    cuSeqlens: Int32Array.from(cu),
    lossMask,
    oldLogprobs: Float32Array.from(lossMask, (m, t) => (m ? -0.1 * ((t % 5) + 1) : 0)),
    advantages: Float32Array.from(lossMask, (m) => (m ? 0.5 : 0)),
    sequenceAdvantages: Float32Array.from(lengths, () => 0.5),
    trajectoryIds: lengths.map((_, i) => `t${seed}-${i}`),
    promptIds: lengths.map(() => `p${seed}`),
    numTokens: T,
    numLossTokens: lossMask.reduce((a, b) => a + b, 0),
    maxSeqlen: Math.max(...lengths),
  };
}

describe('distributed rollout (--engine under mpirun)', () => {
  it('stepTotals counts the loss tokens and sequences policyStep normalises by', () => {
    const mbs = [microBatch([5, 9], 1), microBatch([12], 2), microBatch([3, 4, 8], 3)];
    const totals = stepTotals(mbs);
    expect(totals.tokenCount).toBe(mbs.reduce((n, mb) => n + shiftForNextToken(mb).count, 0));
    expect(totals.seqCount).toBe(6);
    expect(stepTotals([])).toEqual({ tokenCount: 0, seqCount: 0 });
  });

  it('only applies to several ranks with an engine URL', () => {
    const engine = parseConfig({ engine: { url: 'http://127.0.0.1:8000' } });
    expect(leadRollsOut(engine, { size: 2 })).toBe(true);
    expect(leadRollsOut(engine, { size: 1 })).toBe(false);
    expect(leadRollsOut(parseConfig({}), { size: 2 })).toBe(false);
  });

  it('on one process hands the whole step back as it is', () => {
    const mbs = [microBatch([5, 9], 1), microBatch([12], 2)];
    const header = {
      metrics: { reward: 0.5, timeGenerate: Number.NaN },
      solvedAll: ['a'],
      notSolvedAll: ['b'],
      count: 2,
      totals: stepTotals(mbs),
    };
    const shared = shareStep(new LocalCommunicator(), { header, microBatches: mbs });
    expect(shared.header).toEqual(header);
    expect(shared.microBatches).toEqual(mbs);
  });
});
