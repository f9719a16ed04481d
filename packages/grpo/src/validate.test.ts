import { describe, expect, it } from 'vitest';
import { group, trajectory } from '../test/fixtures.js';
import { GrpoError, GrpoErrorCode } from './errors.js';
import { resampleOnCorrect } from './roc.js';
import { checkGroups, parseGroups } from './validate.js';

function thrown(fn: () => unknown): GrpoError {
  try {
    fn();
  } catch (e) {
    if (e instanceof GrpoError) return e;
    throw e;
  }
  throw new Error('did not throw');
}

describe('bad input is rejected with the field named', () => {
  const ok = () => Array.from({ length: 5 }, (_, g) => group([{ reward: 1 }, { reward: 0 }], `p${g}`));

  it('a NaN reward', () => {
    const groups = Array.from({ length: 4 }, (_, g) =>
      group(
        Array.from({ length: 8 }, () => ({ reward: 0 })),
        `p${g}`,
      ),
    );
    groups[3]!.trajectories[7]!.reward = Number.NaN;
    const e = thrown(() => resampleOnCorrect(groups, { groupSize: 8, n: 4 }));
    expect(e.code).toBe(GrpoErrorCode.INVALID_INPUT);
    expect(e.field).toBe('groups[3].trajectories[7].reward');
    expect(e.message).toMatch(/is NaN/);
  });

  it('an unscored (null) reward', () => {
    const groups = ok();
    groups[1]!.trajectories[0]!.reward = null;
    expect(thrown(() => checkGroups(groups)).message).toMatch(
      /groups\[1\]\.trajectories\[0\]\.reward is null: score/,
    );
  });

  it('an empty group', () => {
    const groups = ok();
    groups[2]!.trajectories = [];
    expect(thrown(() => checkGroups(groups)).field).toBe('groups[2].trajectories');
  });

  it('lengths that disagree, a prompt past the end, a trajectory in the wrong group', () => {
    const g = ok();
    g[0]!.trajectories[1]!.logprobs.pop();
    expect(thrown(() => checkGroups(g)).message).toMatch(
      /groups\[0\]\.trajectories\[1\]\.logprobs has 3 entries, tokenIds has 4/,
    );
    const h = ok();
    h[4]!.trajectories[0]!.lossMask.push(1);
    expect(thrown(() => checkGroups(h)).field).toBe('groups[4].trajectories[0].lossMask');
    const k = ok();
    k[0]!.trajectories[0]!.promptLength = 9;
    expect(thrown(() => checkGroups(k)).field).toBe('groups[0].trajectories[0].promptLength');
    const m = ok();
    m[1]!.trajectories[1] = trajectory({ reward: 0 }, 'x', 'other');
    expect(thrown(() => checkGroups(m)).message).toMatch(/promptId is "other" in the group of prompt "p1"/);
  });

  it('n larger than N, and minimums above n', () => {
    const e = thrown(() => resampleOnCorrect(ok(), { groupSize: 16, n: 20 }));
    expect(e.code).toBe(GrpoErrorCode.INVALID_CONFIG);
    expect(e.message).toMatch(/roc\.n is 20, larger than groupSize 16/);
    expect(thrown(() => resampleOnCorrect(ok(), { n: 3, minPositive: 2, minNegative: 2 })).field).toBe(
      'roc.minPositive',
    );
  });

  it('parseGroups reads every token once at the edge and names the element', () => {
    const groups = ok();
    (groups[0]!.trajectories[1]!.lossMask as number[])[3] = 2;
    expect(thrown(() => parseGroups(JSON.parse(JSON.stringify(groups)))).field).toBe(
      'groups[0].trajectories[1].lossMask[3]',
    );
    expect(parseGroups(JSON.parse(JSON.stringify(ok())))).toHaveLength(5);
  });
});
