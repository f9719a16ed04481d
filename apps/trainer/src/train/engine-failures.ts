import { type Group, isEngineFailedTrajectory } from '@agentrl/protocol';
import { TrainerError } from '../errors.js';

/**
 * Separates what the engine broke (`engine_error`, `timeout`, `aborted`: not the policy's answer)
 * from what can be trained on. Stops the run when more than `maxFailedFraction` of the step's
 * trajectories failed (the adapters have already retried): an engine that is down must not let a
 * run "complete" on trajectories that are all reward 0.
 */
export function withoutEngineFailures(
  groups: readonly Group[],
  opts: { step: number; maxFailedFraction: number },
): { groups: Group[]; failed: number } {
  const all = groups.flatMap((g) => g.trajectories);
  const failed = all.filter(isEngineFailedTrajectory);
  if (all.length > 0 && failed.length / all.length > opts.maxFailedFraction) {
    const first = failed[0]!;
    throw new TrainerError(
      'ENGINE_UNREACHABLE',
      `engine: ${failed.length} of ${all.length} trajectories of RL step ${opts.step} failed in the engine after retries (first: ${first.finishReason}${first.engineError ? `: ${first.engineError}` : ''}); the run stopped before training on them (more than engine.maxFailedFraction ${opts.maxFailedFraction}): bring the engine back and continue with --resume`,
    );
  }
  if (failed.length === 0) return { groups: [...groups], failed: 0 };
  return {
    groups: groups.map((g) => ({
      ...g,
      trajectories: g.trajectories.filter((t) => !isEngineFailedTrajectory(t)),
    })),
    failed: failed.length,
  };
}
