import { createSyntheticGroups } from '@agentrl/grpo';
import type { Group } from '@agentrl/protocol';
import { describe, expect, it } from 'vitest';
import { TrainerError } from '../errors.js';
import { withoutEngineFailures } from './engine-failures.js';

/** Synthetic groups with the given trajectories ended by the engine. */
function groupsWithFailures(
  failures: Array<[number, number, 'engine_error' | 'timeout' | 'aborted']>,
): Group[] {
  const groups = createSyntheticGroups({ prompts: 3, groupSize: 4, tokens: 64, seed: 3 });
  for (const [g, t, reason] of failures) {
    groups[g]!.trajectories[t] = {
      ...groups[g]!.trajectories[t]!,
      finishReason: reason,
      reward: 0,
      engineError: `${reason} at the server`,
    };
  }
  return groups;
}

describe('engine-failed trajectories', () => {
  it('are left out of what is trained on, and counted', () => {
    const groups = groupsWithFailures([
      [0, 1, 'engine_error'],
      [2, 0, 'timeout'],
      [2, 3, 'aborted'],
    ]);
    const r = withoutEngineFailures(groups, { step: 4, maxFailedFraction: 0.5 });
    expect(r.failed).toBe(3);
    expect(r.groups.map((g) => g.trajectories.length)).toEqual([3, 4, 2]);
    for (const g of r.groups)
      for (const t of g.trajectories)
        expect(['engine_error', 'timeout', 'aborted']).not.toContain(t.finishReason);
    expect(groups[0]!.trajectories).toHaveLength(4); // the input is not changed
    expect(withoutEngineFailures(groupsWithFailures([]), { step: 1, maxFailedFraction: 0.5 }).failed).toBe(0);
  });

  it('stop the run when more than maxFailedFraction of a step failed, with the engine error', () => {
    const all = Array.from(
      { length: 12 },
      (_, i) => [Math.floor(i / 4), i % 4, 'engine_error'] as [number, number, 'engine_error'],
    );
    let err: unknown;
    try {
      withoutEngineFailures(groupsWithFailures(all), { step: 7, maxFailedFraction: 0.5 });
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(TrainerError);
    expect((err as TrainerError).code).toBe('TRAINER_ENGINE_UNREACHABLE');
    expect((err as Error).message).toMatch(
      /12 of 12 trajectories of RL step 7 failed in the engine after retries \(first: engine_error: engine_error at the server\).*--resume/,
    );
  });
});
