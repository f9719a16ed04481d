/** A trajectory's hold on one engine: sticky for all its turns, released when it ends. */
export interface SchedulerLease<E> {
  readonly engine: E;
  readonly engineIndex: number;
  /** KV-cache tokens reserved on the engine (0 for the static split). */
  readonly tokens: number;
  /** Gives the reservation back and wakes waiting trajectories. Idempotent. */
  release(): void;
}

/** Places trajectories on engines. */
export interface Scheduler<E> {
  readonly kind: 'kv-aware' | 'static';
  readonly engines: readonly E[];
  /**
   * Resolves with a lease once an engine can hold `tokens` KV-cache tokens (the trajectory's worst
   * case: prompt + max response). Waits without polling: releases and capacity updates wake it.
   */
  acquire(tokens: number, signal?: AbortSignal): Promise<SchedulerLease<E>>;
  /** Updates an engine's KV capacity from its own report (tokens); may wake waiters. */
  setCapacity(engineIndex: number, capacityTokens: number): void;
  /** Reserved and total tokens per engine, and how many acquisitions wait. */
  snapshot(): SchedulerSnapshot;
}

export interface SchedulerSnapshot {
  /** KV capacity per engine as reported (before any overcommit). */
  capacity: number[];
  reserved: number[];
  active: number[];
  waiting: number;
}

/** One engine and the KV-cache capacity (tokens) it starts with. */
export interface ScheduledEngine<E> {
  engine: E;
  capacityTokens: number;
}
