import type { ScheduledEngine, Scheduler, SchedulerLease, SchedulerSnapshot } from '@agentrl/rollout';
import { SchedulerError, SchedulerErrorCode } from './errors.js';

export interface KvAwareSchedulerOptions {
  /**
   * Reservations may add up to `overcommit` × each engine's capacity. 1 (the default) guarantees
   * that no engine ever overflows its KV cache, since every trajectory holds its worst case; most
   * trajectories end far below it, so values above 1 buy batch size at the risk of preemptions.
   */
  overcommit?: number;
}

interface Waiter {
  tokens: number;
  grant: (index: number) => void;
  reject: (err: Error) => void;
}

/**
 * The KV-cache-aware scheduler of rStar2-Agent: each trajectory reserves its worst-case KV budget on
 * the engine with the most free capacity, so no engine overflows its cache (no preemption, no
 * recomputation) and load follows what is actually free rather than a static split. Waiters queue
 * FIFO and are woken by releases and capacity reports.
 */
export function createKvAwareScheduler<E>(
  engines: readonly ScheduledEngine<E>[],
  options: KvAwareSchedulerOptions = {},
): Scheduler<E> {
  const overcommit = checkOptions(engines, options.overcommit ?? 1);
  /** Reservable tokens per engine: the reported capacity × overcommit. */
  const capacity = engines.map((e) => e.capacityTokens * overcommit);
  const reserved = engines.map(() => 0);
  const active = engines.map(() => 0);
  const queue: Waiter[] = [];

  const best = () => mostFree(capacity, reserved, active);

  const lease = (index: number, tokens: number): SchedulerLease<E> => {
    reserved[index]! += tokens;
    active[index]! += 1;
    let released = false;
    return {
      engine: engines[index]!.engine,
      engineIndex: index,
      tokens,
      release() {
        if (released) return;
        released = true;
        reserved[index]! -= tokens;
        active[index]! -= 1;
        drain();
      },
    };
  };

  const drain = () => {
    while (queue.length > 0) {
      const head = queue[0]!;
      const index = best();
      if (capacity[index]! - reserved[index]! < head.tokens) return;
      queue.shift();
      head.grant(index);
    }
  };

  const maxCapacity = () => Math.max(...capacity);

  return {
    kind: 'kv-aware',
    engines: engines.map((e) => e.engine),
    acquire(tokens, signal) {
      if (tokens > maxCapacity()) {
        return Promise.reject(
          new SchedulerError(
            SchedulerErrorCode.NO_CAPACITY,
            `scheduler: a trajectory needs ${tokens} KV tokens but the largest engine holds ${maxCapacity()}; lower maxResponseTokens or add KV cache`,
          ),
        );
      }
      if (signal?.aborted) return Promise.reject(abortError());
      const index = best();
      if (queue.length === 0 && capacity[index]! - reserved[index]! >= tokens) {
        return Promise.resolve(lease(index, tokens));
      }
      return waitInQueue(queue, tokens, signal, (i) => lease(i, tokens), drain);
    },
    setCapacity(engineIndex, capacityTokens) {
      if (!(engineIndex in capacity)) {
        throw new SchedulerError(SchedulerErrorCode.INVALID_CONFIG, `scheduler: no engine ${engineIndex}`);
      }
      capacity[engineIndex] = capacityTokens * overcommit;
      drain();
      // A shrink can leave waiters that can never fit anywhere: fail them instead of hanging.
      rejectUnfittable(queue, maxCapacity());
    },
    snapshot: (): SchedulerSnapshot => ({
      capacity: capacity.map((c) => c / overcommit),
      reserved: [...reserved],
      active: [...active],
      waiting: queue.length,
    }),
  };
}

function abortError(): SchedulerError {
  return new SchedulerError(SchedulerErrorCode.ABORTED, 'scheduler: the wait for an engine was cancelled');
}

function checkOptions<E>(engines: readonly ScheduledEngine<E>[], overcommit: number): number {
  if (engines.length === 0) {
    throw new SchedulerError(
      SchedulerErrorCode.INVALID_CONFIG,
      'scheduler: the scheduler needs at least one engine',
    );
  }
  if (!(overcommit >= 1) || !Number.isFinite(overcommit)) {
    throw new SchedulerError(
      SchedulerErrorCode.INVALID_CONFIG,
      `scheduler: overcommit must be a finite number >= 1, got ${overcommit}; use 1 to never overflow an engine's KV cache`,
    );
  }
  return overcommit;
}

/** The engine with the most free tokens (ties: fewest trajectories, then lowest index). */
function mostFree(
  capacity: readonly number[],
  reserved: readonly number[],
  active: readonly number[],
): number {
  let pick = 0;
  for (let i = 1; i < capacity.length; i++) {
    const free = capacity[i]! - reserved[i]!;
    const bestFree = capacity[pick]! - reserved[pick]!;
    if (free > bestFree || (free === bestFree && active[i]! < active[pick]!)) pick = i;
  }
  return pick;
}

/** Queues an acquisition until `drain` grants it an engine, or `signal` cancels it. */
function waitInQueue<L>(
  queue: Waiter[],
  tokens: number,
  signal: AbortSignal | undefined,
  lease: (index: number) => L,
  drain: () => void,
): Promise<L> {
  return new Promise<L>((resolve, reject) => {
    const onAbort = () => {
      const at = queue.indexOf(waiter);
      if (at >= 0) queue.splice(at, 1);
      reject(abortError());
      drain();
    };
    const waiter: Waiter = {
      tokens,
      grant: (i) => {
        signal?.removeEventListener('abort', onAbort);
        resolve(lease(i));
      },
      reject,
    };
    signal?.addEventListener('abort', onAbort, { once: true });
    queue.push(waiter);
  });
}

/** Rejects the waiters that ask for more than `most` tokens, the largest engine's capacity. */
function rejectUnfittable(queue: Waiter[], most: number): void {
  for (let i = queue.length - 1; i >= 0; i--) {
    if (queue[i]!.tokens > most) {
      const [w] = queue.splice(i, 1);
      w!.reject(
        new SchedulerError(
          SchedulerErrorCode.NO_CAPACITY,
          `scheduler: no engine can hold ${w!.tokens} KV tokens any more`,
        ),
      );
    }
  }
}
