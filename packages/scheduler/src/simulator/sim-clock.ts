/** A discrete-event clock: simulated time in seconds, advanced by the event loop, never by the wall. */
export interface SimClock {
  /** Simulated seconds since the start. */
  now(): number;
  /** Resolves after `seconds` of simulated time. */
  sleep(seconds: number): Promise<void>;
  /** Runs `fn` at simulated time `at` (>= now); returns a cancel function. */
  at(at: number, fn: () => void): () => void;
  /**
   * Drives the simulation until `main` settles: between events it lets every promise chain run to
   * its next wait, so async code (the real scheduler, the trajectory processes) runs unmodified.
   */
  run<T>(main: () => Promise<T>): Promise<T>;
}

interface Event {
  time: number;
  seq: number;
  fn: () => void;
  cancelled: boolean;
}

export function createSimClock(): SimClock {
  let now = 0;
  let seq = 0;
  const heap: Event[] = [];
  const push = (e: Event) => {
    heap.push(e);
    let i = heap.length - 1;
    while (i > 0) {
      const p = (i - 1) >> 1;
      if (!before(heap[i]!, heap[p]!)) break;
      [heap[i], heap[p]] = [heap[p]!, heap[i]!];
      i = p;
    }
  };
  const pop = (): Event | undefined => {
    const top = heap[0];
    const last = heap.pop();
    if (heap.length > 0 && last) {
      heap[0] = last;
      let i = 0;
      for (;;) {
        const l = 2 * i + 1;
        const r = l + 1;
        let m = i;
        if (l < heap.length && before(heap[l]!, heap[m]!)) m = l;
        if (r < heap.length && before(heap[r]!, heap[m]!)) m = r;
        if (m === i) break;
        [heap[i], heap[m]] = [heap[m]!, heap[i]!];
        i = m;
      }
    }
    return top;
  };
  const at = (time: number, fn: () => void) => {
    const e: Event = { time: Math.max(time, now), seq: seq++, fn, cancelled: false };
    push(e);
    return () => {
      e.cancelled = true;
    };
  };
  return {
    now: () => now,
    at,
    sleep: (seconds) => new Promise<void>((resolve) => at(now + seconds, resolve)),
    async run(main) {
      let settled = false;
      const result = main().finally(() => {
        settled = true;
      });
      result.catch(() => {});
      await yieldToPromises();
      while (!settled) {
        const e = pop();
        if (!e) throw new Error('simulation deadlock: nothing is scheduled but the run has not finished');
        if (e.cancelled) continue;
        now = e.time;
        e.fn();
        await yieldToPromises();
      }
      return result;
    },
  };
}

function before(a: Event, b: Event): boolean {
  return a.time < b.time || (a.time === b.time && a.seq < b.seq);
}

/** Every queued microtask (promise continuation) runs before a macrotask. */
function yieldToPromises(): Promise<void> {
  return new Promise((resolve) => setImmediate(resolve));
}
