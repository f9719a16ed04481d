/** A request waiting for its batch, with the promise callbacks that settle it. */
export interface Pending<Req, Res> {
  request: Req;
  resolve: (r: Res) => void;
  reject: (e: Error) => void;
}

export interface BatchQueue<Req, Res> {
  /** Queues a request; it runs in the next batch with room. */
  push(entry: Pending<Req, Res>): void;
  /** Takes a request out before its batch starts; false when it already runs (or ran). */
  remove(entry: Pending<Req, Res>): boolean;
  /** Requests in the batch that runs now. */
  readonly running: number;
  /** Requests waiting for a batch. */
  readonly waiting: number;
  /** Resolves when the batch running now (if any) has finished. */
  idle(): Promise<void>;
}

/**
 * Continuous batching at request granularity: requests issued while a batch runs wait, and the
 * next batch takes up to `maxBatch` of them once it finishes. Requests issued in the same tick
 * join one batch. `runBatch` settles every entry it is given and never rejects.
 */
export function createBatchQueue<Req, Res>(
  maxBatch: number,
  runBatch: (batch: Pending<Req, Res>[]) => Promise<void>,
): BatchQueue<Req, Res> {
  const pending: Pending<Req, Res>[] = [];
  let running = 0;
  let scheduled = false;
  let inFlight: Promise<void> = Promise.resolve();

  const pump = () => {
    if (scheduled || running > 0 || pending.length === 0) return;
    scheduled = true;
    // Wait one macrotask so that requests issued in the same tick join the batch.
    setImmediate(() => {
      scheduled = false;
      const batch = pending.splice(0, maxBatch);
      if (batch.length === 0) return;
      running = batch.length;
      inFlight = runBatch(batch).finally(() => {
        running = 0;
        pump();
      });
    });
  };

  return {
    push(entry) {
      pending.push(entry);
      pump();
    },
    remove(entry) {
      const at = pending.indexOf(entry);
      if (at < 0) return false;
      pending.splice(at, 1);
      return true;
    },
    get running() {
      return running;
    },
    get waiting() {
      return pending.length;
    },
    idle: () => inFlight,
  };
}
