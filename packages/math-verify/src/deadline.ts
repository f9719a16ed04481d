/**
 * A per-call time budget. JavaScript cannot pre-empt synchronous code, so every loop that can grow
 * with the input (tokenising, parsing, sampling, candidate search) calls `check()`; once the budget is
 * spent it throws `DeadlineExceeded`, which `verify` turns into `{ correct: false, reason: 'timeout' }`.
 * The loops between checks are bounded by the input limits in `limits.ts`, so the overrun past the
 * budget is bounded too (measured in the adversarial tests).
 */
export class DeadlineExceeded extends Error {
  override readonly name = 'DeadlineExceeded';
}

export class Deadline {
  private readonly end: number;
  private ticks = 0;

  constructor(readonly budgetMs: number) {
    this.end = performance.now() + budgetMs;
  }

  /** Throws once the budget is spent; reads the clock only every 64 calls to stay cheap. */
  check(): void {
    this.ticks += 1;
    if ((this.ticks & 63) === 0 && performance.now() > this.end) throw new DeadlineExceeded('budget spent');
  }

  /** Reads the clock now (use before a step that is costly on its own, such as a CAS call). */
  checkNow(): void {
    if (performance.now() > this.end) throw new DeadlineExceeded('budget spent');
  }

  remainingMs(): number {
    return this.end - performance.now();
  }
}

/** A deadline that never fires, for internal helpers called outside `verify`. */
export function unlimited(): Deadline {
  return new Deadline(Number.POSITIVE_INFINITY);
}
