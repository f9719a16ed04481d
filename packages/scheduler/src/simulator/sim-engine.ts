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

/** The fluid state of one engine; `v` is tokens decoded per running sequence since the start. */
interface EngineState {
  clock: SimClock;
  config: SimEngineConfig;
  running: Seq[];
  waiting: Seq[];
  v: number;
  /** Simulated time the state was last advanced to. */
  last: number;
  /** The batch pauses for prefill until then. */
  stallUntil: number;
  cancelNext: (() => void) | null;
  stats: SimEngineStats;
}

function kvUsed(e: EngineState): number {
  let s = 0;
  for (const q of e.running) s += q.ctx + (e.v - q.vStart);
  return s;
}

function stepSeconds(e: EngineState, kv: number): number {
  const c = e.config;
  return (c.stepBaseMs + c.stepPerSeqMs * e.running.length + c.stepPerKvTokenMs * kv) / 1000;
}

/** Advances the fluid state from `last` to now. */
function advance(e: EngineState): void {
  const now = e.clock.now();
  const dt = now - e.last;
  if (dt <= 0) return;
  const stalled = Math.max(0, Math.min(now, e.stallUntil) - e.last);
  const busy = e.running.length > 0 ? dt : stalled;
  e.stats.busySeconds += busy;
  e.stats.idleSeconds += dt - busy;
  if (e.running.length > 0) {
    const dv = (dt - stalled) / stepSeconds(e, kvUsed(e));
    e.v += dv;
    e.stats.decodedTokens += dv * e.running.length;
  }
  e.last = now;
}

/** Finished sequences leave the batch. */
function retireFinished(e: EngineState): void {
  for (let i = e.running.length - 1; i >= 0; i--) {
    const q = e.running[i]!;
    if (e.v - q.vStart >= q.remaining - 1e-9) {
      e.running.splice(i, 1);
      q.done();
    }
  }
}

/** Overflow: preempt the newest sequence; it keeps its output and is recomputed later. Returns the KV in use. */
function preemptOverflow(e: EngineState): number {
  let kv = kvUsed(e);
  while (kv > e.config.kvCapacityTokens && e.running.length > 0) {
    const q = e.running.pop()!;
    const generated = e.v - q.vStart;
    q.ctx += generated;
    q.remaining -= generated;
    q.prefill = q.ctx;
    e.stats.preemptions += 1;
    e.stats.recomputedTokens += q.ctx;
    e.waiting.unshift(q);
    kv = kvUsed(e);
  }
  return kv;
}

/** Admission, FIFO, while the batch and the cache have room for the context. Returns the KV in use. */
function admitWaiting(e: EngineState, kvBefore: number): number {
  let kv = kvBefore;
  const now = e.clock.now();
  while (e.waiting.length > 0 && e.running.length < e.config.maxRunning) {
    const q = e.waiting[0]!;
    if (kv + q.ctx + 1 > e.config.kvCapacityTokens) break;
    e.waiting.shift();
    q.vStart = e.v;
    e.running.push(q);
    kv += q.ctx;
    e.stallUntil = Math.max(e.stallUntil, now) + (q.prefill * e.config.prefillPerTokenMs) / 1000;
  }
  return kv;
}

/** Schedules `onEvent` at the next finish, overflow or prefill end (at most 2 s ahead). */
function scheduleNext(e: EngineState, kv: number, onEvent: () => void): void {
  e.cancelNext?.();
  e.cancelNext = null;
  const now = e.clock.now();
  const stallLeft = Math.max(0, e.stallUntil - now);
  if (e.running.length === 0) {
    if (stallLeft > 0) e.cancelNext = e.clock.at(e.stallUntil, onEvent);
    return;
  }
  let dv = Number.POSITIVE_INFINITY;
  for (const q of e.running) dv = Math.min(dv, q.remaining - (e.v - q.vStart));
  const room = (e.config.kvCapacityTokens - kv) / e.running.length;
  dv = Math.min(dv, Math.max(room, 0) + 1e-6);
  // Re-evaluate at least every 2 s: step time drifts as the cache grows.
  const wait = Math.min(stallLeft + Math.max(dv, 0) * stepSeconds(e, kv), stallLeft + 2);
  e.cancelNext = e.clock.at(now + Math.max(wait, 1e-9), onEvent);
}

/**
 * One engine as a fluid model: between events every running sequence advances one token per decode
 * step, whose time grows with batch size and KV in use. Admission is FIFO while the batch and the KV
 * cache have room for the context; when decoding grows the cache past capacity the newest sequence
 * is preempted and later recomputed from scratch, as vLLM's default recompute preemption does.
 */
export function createSimEngine(clock: SimClock, config: SimEngineConfig) {
  const e: EngineState = {
    clock,
    config,
    running: [],
    waiting: [],
    v: 0,
    last: 0,
    stallUntil: 0,
    cancelNext: null,
    stats: {
      busySeconds: 0,
      idleSeconds: 0,
      preemptions: 0,
      recomputedTokens: 0,
      decodedTokens: 0,
      peakKvTokens: 0,
    },
  };
  const settle = () => {
    retireFinished(e);
    const kv = admitWaiting(e, preemptOverflow(e));
    e.stats.peakKvTokens = Math.max(e.stats.peakKvTokens, kv);
    scheduleNext(e, kv, onEvent);
  };
  const onEvent = () => {
    e.cancelNext = null;
    advance(e);
    settle();
  };

  return {
    config,
    stats: e.stats,
    /** Resolves when the request's tokens are generated (in simulated time). */
    generate(request: SimRequest): Promise<void> {
      return new Promise<void>((done) => {
        advance(e);
        e.waiting.push({
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
      advance(e);
    },
    load: () => ({ running: e.running.length, waiting: e.waiting.length, kvTokens: kvUsed(e) }),
  };
}
export type SimEngine = ReturnType<typeof createSimEngine>;
