import type { SimClock } from './sim-clock.js';

/** Cost model of one inference engine (continuous batching, paged KV cache, recompute preemption). */
export interface SimEngineConfig {
  /** KV-cache capacity in tokens. */
  kvCapacityTokens: number;
  /** Most sequences decoded together (vLLM max_num_seqs). */
  maxRunning: number;
  /** Decode step time independent of batch: reading the weights (ms). */
  stepBaseMs: number;
  /** Extra decode step time per running sequence (ms). */
  stepPerSeqMs: number;
  /** Extra decode step time per KV token in use: reading the cache (ms). */
  stepPerKvTokenMs: number;
  /** Prefill time per uncached prompt token (ms); the batch pauses while it runs. */
  prefillPerTokenMs: number;
}

export interface SimRequest {
  /** Tokens of context the request continues (all in the KV cache once admitted). */
  contextTokens: number;
  /** Of those, tokens still cached on this engine from the trajectory's earlier turns. */
  cachedTokens: number;
  /** Tokens to generate. */
  generateTokens: number;
}

interface Seq {
  ctx: number;
  prefill: number;
  remaining: number;
  vStart: number;
  done: () => void;
}

export interface SimEngineStats {
  busySeconds: number;
  idleSeconds: number;
  preemptions: number;
  recomputedTokens: number;
  decodedTokens: number;
  peakKvTokens: number;
}

/**
 * One engine as a fluid model: between events every running sequence advances one token per decode
 * step, whose time grows with batch size and KV in use. Admission is FIFO while the batch and the KV
 * cache have room for the context; when decoding grows the cache past capacity the newest sequence
 * is preempted and later recomputed from scratch, as vLLM's default recompute preemption does.
 */
export function createSimEngine(clock: SimClock, config: SimEngineConfig) {
  const running: Seq[] = [];
  const waiting: Seq[] = [];
  let v = 0; // tokens decoded per running sequence since the start
  let last = 0;
  let stallUntil = 0;
  let cancelNext: (() => void) | null = null;
  const stats: SimEngineStats = {
    busySeconds: 0,
    idleSeconds: 0,
    preemptions: 0,
    recomputedTokens: 0,
    decodedTokens: 0,
    peakKvTokens: 0,
  };

  const kvUsed = () => {
    let s = 0;
    for (const q of running) s += q.ctx + (v - q.vStart);
    return s;
  };
  const stepSeconds = (kv: number) =>
    (config.stepBaseMs + config.stepPerSeqMs * running.length + config.stepPerKvTokenMs * kv) / 1000;

  /** Advances the fluid state from `last` to now. */
  const sync = () => {
    const now = clock.now();
    const dt = now - last;
    if (dt <= 0) return;
    const stalled = Math.max(0, Math.min(now, stallUntil) - last);
    const busy = running.length > 0 ? dt : stalled;
    stats.busySeconds += busy;
    stats.idleSeconds += dt - busy;
    if (running.length > 0) {
      const dv = (dt - stalled) / stepSeconds(kvUsed());
      v += dv;
      stats.decodedTokens += dv * running.length;
    }
    last = now;
  };

  const settle = () => {
    // Finished sequences leave the batch.
    for (let i = running.length - 1; i >= 0; i--) {
      const q = running[i]!;
      if (v - q.vStart >= q.remaining - 1e-9) {
        running.splice(i, 1);
        q.done();
      }
    }
    // Overflow: preempt the newest sequence; it keeps its output and is recomputed later.
    let kv = kvUsed();
    while (kv > config.kvCapacityTokens && running.length > 0) {
      const q = running.pop()!;
      const generated = v - q.vStart;
      q.ctx += generated;
      q.remaining -= generated;
      q.prefill = q.ctx;
      stats.preemptions += 1;
      stats.recomputedTokens += q.ctx;
      waiting.unshift(q);
      kv = kvUsed();
    }
    // Admission, FIFO, while the batch and the cache have room for the context.
    const now = clock.now();
    while (waiting.length > 0 && running.length < config.maxRunning) {
      const q = waiting[0]!;
      if (kv + q.ctx + 1 > config.kvCapacityTokens) break;
      waiting.shift();
      q.vStart = v;
      running.push(q);
      kv += q.ctx;
      stallUntil = Math.max(stallUntil, now) + (q.prefill * config.prefillPerTokenMs) / 1000;
    }
    stats.peakKvTokens = Math.max(stats.peakKvTokens, kv);
    scheduleNext(kv);
  };

  const scheduleNext = (kv: number) => {
    cancelNext?.();
    cancelNext = null;
    const now = clock.now();
    const stallLeft = Math.max(0, stallUntil - now);
    if (running.length === 0) {
      if (stallLeft > 0) cancelNext = clock.at(stallUntil, onEvent);
      return;
    }
    let dv = Number.POSITIVE_INFINITY;
    for (const q of running) dv = Math.min(dv, q.remaining - (v - q.vStart));
    const room = (config.kvCapacityTokens - kv) / running.length;
    dv = Math.min(dv, Math.max(room, 0) + 1e-6);
    // Re-evaluate at least every 2 s: step time drifts as the cache grows.
    const wait = Math.min(stallLeft + Math.max(dv, 0) * stepSeconds(kv), stallLeft + 2);
    cancelNext = clock.at(now + Math.max(wait, 1e-9), onEvent);
  };

  const onEvent = () => {
    cancelNext = null;
    sync();
    settle();
  };

  return {
    config,
    stats,
    /** Resolves when the request's tokens are generated (in simulated time). */
    generate(request: SimRequest): Promise<void> {
      return new Promise<void>((done) => {
        sync();
        waiting.push({
          ctx: request.contextTokens,
          prefill: request.contextTokens - request.cachedTokens,
          remaining: Math.max(1, request.generateTokens),
          vStart: 0,
          done,
        });
        settle();
      });
    },
    /** Closes the accounting at the end of the step. */
    finish() {
      sync();
    },
    load: () => ({ running: running.length, waiting: waiting.length, kvTokens: kvUsed() }),
  };
}
export type SimEngine = ReturnType<typeof createSimEngine>;
