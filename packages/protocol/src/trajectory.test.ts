import { describe, expect, it } from 'vitest';
import { isToolFailure, type Trajectory, TrajectorySchema } from './index.js';

function trajectory(over: Partial<Trajectory> = {}): Trajectory {
  return {
    id: 't0',
    promptId: 'p0',
    tokenIds: [1, 2, 3, 4],
    promptLength: 2,
    logprobs: [0, 0, -0.5, -0.1],
    lossMask: [0, 0, 1, 1],
    turns: [],
    toolCalls: [],
    finishReason: 'stop',
    reward: 1,
    ...over,
  };
}

describe('TrajectorySchema', () => {
  it('accepts a well-formed trajectory', () => {
    expect(TrajectorySchema.parse(trajectory()).tokenIds).toEqual([1, 2, 3, 4]);
  });

  it('names the field whose length disagrees with tokenIds', () => {
    const r = TrajectorySchema.safeParse(trajectory({ logprobs: [0] }));
    expect(r.success).toBe(false);
    expect(r.error?.issues[0]?.path).toEqual(['logprobs']);
    expect(r.error?.issues[0]?.message).toContain('tokenIds has 4');
  });

  it('rejects a NaN reward', () => {
    const r = TrajectorySchema.safeParse(trajectory({ reward: Number.NaN }));
    expect(r.success).toBe(false);
    expect(r.error?.issues.map((i) => i.path.join('.'))).toEqual(['reward']);
  });

  it('rejects a prompt longer than the sequence', () => {
    const r = TrajectorySchema.safeParse(trajectory({ promptLength: 9 }));
    expect(r.success).toBe(false);
    expect(r.error?.issues[0]?.path).toEqual(['promptLength']);
    expect(r.error?.issues[0]?.message).toContain('past the 4 tokens');
  });

  it('rejects a loss mask value other than 0 or 1', () => {
    const r = TrajectorySchema.safeParse({ ...trajectory(), lossMask: [0, 0, 2, 1] });
    expect(r.success).toBe(false);
    expect(r.error?.issues[0]?.path).toEqual(['lossMask', 2]);
  });
});

describe('isToolFailure', () => {
  it('classifies from the structured status only', () => {
    expect(isToolFailure({ status: 'ok' })).toBe(false);
    expect(isToolFailure({ status: 'output_truncated' })).toBe(false);
    for (const s of [
      'runtime_error',
      'timeout',
      'memory_exceeded',
      'sandbox_error',
      'parse_error',
      'tool_error',
    ] as const) {
      expect(isToolFailure({ status: s })).toBe(true);
    }
  });
});

describe('policyVersion and engine failures', () => {
  it('keeps the optional policyVersion and engineError, and tells engine failures apart', async () => {
    const { isEngineFailedTrajectory } = await import('./index.js');
    const t = TrajectorySchema.parse(
      trajectory({ finishReason: 'engine_error', policyVersion: 3, engineError: 'refused' }),
    );
    expect(t.policyVersion).toBe(3);
    expect(t.engineError).toBe('refused');
    expect(TrajectorySchema.safeParse(trajectory({ policyVersion: -1 })).success).toBe(false);
    expect(isEngineFailedTrajectory(t)).toBe(true);
    expect(isEngineFailedTrajectory({ finishReason: 'aborted' })).toBe(true);
    expect(isEngineFailedTrajectory({ finishReason: 'timeout' })).toBe(true);
    expect(isEngineFailedTrajectory({ finishReason: 'length' })).toBe(false);
  });
});
