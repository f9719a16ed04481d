import type { ScheduledEngine, Scheduler, SchedulerLease } from '@agentrl/rollout';
import { SchedulerError, SchedulerErrorCode } from './errors.js';

/**
 * The baseline: trajectory k goes to engine k mod E, whatever the engines' load. Nothing is reserved
 * and nothing waits here; an overloaded engine queues or preempts internally.
 */
export function createStaticScheduler<E>(engines: readonly ScheduledEngine<E>[]): Scheduler<E> {
  if (engines.length === 0) {
    throw new SchedulerError(
      SchedulerErrorCode.INVALID_CONFIG,
      'scheduler: the scheduler needs at least one engine',
    );
  }
  const capacity = engines.map((e) => e.capacityTokens);
  const active = engines.map(() => 0);
  let next = 0;
  return {
    kind: 'static',
    engines: engines.map((e) => e.engine),
    acquire(_tokens, signal) {
      if (signal?.aborted) {
        return Promise.reject(
          new SchedulerError(SchedulerErrorCode.ABORTED, 'scheduler: acquisition cancelled'),
        );
      }
      const index = next;
      next = (next + 1) % engines.length;
      active[index]! += 1;
      let released = false;
      const lease: SchedulerLease<E> = {
        engine: engines[index]!.engine,
        engineIndex: index,
        tokens: 0,
        release() {
          if (released) return;
          released = true;
          active[index]! -= 1;
        },
      };
      return Promise.resolve(lease);
    },
    setCapacity(engineIndex, capacityTokens) {
      capacity[engineIndex] = capacityTokens;
    },
    snapshot: () => ({
      capacity: [...capacity],
      reserved: capacity.map(() => 0),
      active: [...active],
      waiting: 0,
    }),
  };
}
