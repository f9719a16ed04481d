import { type SamplingParams, type SamplingParamsInput, SamplingParamsSchema } from '@agentrl/protocol';
import { restrictTokens } from './allowed-tokens.js';
import { isDeviceBinding, sampleOnDevice } from './device.js';
import { EngineError } from './errors.js';
import type { Model } from './model.js';
import type { CacheHandle } from './native.js';
import { applyPenalties, hasPenalties, modelLogprob } from './penalties.js';
import { createRng, requestSeed, type SampledToken, sampleToken } from './sampling.js';

export interface GenerateRequest {
  /** Names the KV cache of this sequence; reuse it across turns of one trajectory. */
  cacheId: string;
  /** The full sequence so far (prompt, earlier turns, appended tool responses). */
  tokenIds: readonly number[];
  params: SamplingParamsInput | SamplingParams;
  /**
   * Called with each new token as soon as it is sampled (after its logprob is final), before the
   * next decode step: what a streaming server sends. Observes only; the draws are the same with or
   * without it. On the host, `logits` is the model's row the token was drawn from (before
   * penalties and constraints; valid during the call only): top-k alternatives as tokens arrive.
   */
  onToken?: (token: number, logprob: number, logits?: Float32Array) => void;
  /**
   * Constrained decoding: given the tokens generated so far, the set the next one must come from,
   * or null for no constraint at this step. The draw is made over the allowed tokens only; the
   * recorded logprob stays the model's (as with penalties).
   */
  allowedTokens?: (generated: readonly number[]) => ReadonlySet<number> | null;
  /**
   * Cancels this request between decode steps: once aborted it takes no further step (the rest of
   * the batch decodes on) and ends with the tokens sampled so far, finishReason 'length'; a server
   * whose client went away stops spending steps on it.
   */
  signal?: AbortSignal;
}

export interface GenerateResult {
  /** new tokens (a stop token or the token completing a stop string is included) */
  tokenIds: number[];
  /** sampling logprob of each new token (see sampleToken for the exact distribution) */
  logprobs: number[];
  finishReason: 'stop' | 'length';
}

/**
 * Recomputes the logprob of each sampled token from the final-normed hidden state of its position
 * ([rows, hidden]) under softmax(logits / temperature): a trainer passes its own loss kernel here
 * so the logprobs a rollout records are bit-identical to the ones training recomputes.
 */
export type LogprobScorer = (rows: {
  hidden: Float32Array;
  targets: Int32Array;
  temperature: number;
}) => ArrayLike<number>;

export interface GeneratorOptions {
  /** Needed only for stopStrings: decodes new tokens to text. */
  decode?: (ids: readonly number[]) => string;
  /**
   * Base seed of requests that carry no seed of their own: such a request draws from a stream keyed
   * by (seed, cacheId, its token count), never by its place in the batch or the call count.
   */
  seed?: number;
  /**
   * Batch-invariant generation (default true): every product runs on a panel copy of the weights
   * (packed once per weights version, as much memory again as the matrices) with the arithmetic of
   * the training forward, so a token's logits and logprob are bit-identical whatever other
   * sequences share its prefill or decode step. false: small batches take the dot-product GEMM
   * path, whose results depend on the batch size.
   */
  batchInvariant?: boolean;
  /**
   * Records each new token's logprob as this function computes it instead of sampleToken's float64
   * log-softmax (the token is still drawn by sampleToken). Needs batchInvariant.
   */
  scoreLogprobs?: LogprobScorer;
}

interface CacheEntry {
  handle: CacheHandle;
  /** tokens whose keys/values are in the cache */
  tokens: number[];
  version: number;
}

interface Active {
  index: number;
  onToken: GenerateRequest['onToken'];
  allowedTokens: GenerateRequest['allowedTokens'];
  signal: AbortSignal | undefined;
  entry: CacheEntry;
  params: SamplingParams;
  random: () => number;
  /** how often each token was generated so far (kept only under penalties) */
  counts: Map<number, number>;
  out: GenerateResult;
  done: boolean;
}

/**
 * Batched sampling with one KV cache per cacheId. On a GPU model the draws run on the device
 * (sampleOnDevice): the last-token logits never leave it, each request's uniforms come from its own
 * host-side stream exactly as sampleToken would consume them, so a request's tokens follow the same
 * rules and seeds as on the CPU. A request whose tokenIds extend what its cache
 * holds only prefills the new suffix; a request that diverges from the cache keeps the common
 * prefix. Caches computed with older weights (model.version changed) are rebuilt automatically.
 */
export class Generator {
  private readonly caches = new Map<string, CacheEntry>();
  private readonly invariant: boolean;
  private readonly onDevice: boolean;

  constructor(
    readonly model: Model,
    private readonly options: GeneratorOptions = {},
  ) {
    this.invariant = options.batchInvariant ?? true;
    this.onDevice = isDeviceBinding(model.native);
    if (options.scoreLogprobs && this.onDevice) {
      throw new EngineError(
        'INVALID_REQUEST',
        `scoreLogprobs needs the hidden states of each step on the host; a ${model.device} model samples on the device: leave scoreLogprobs unset there`,
      );
    }
    if (options.scoreLogprobs && !this.invariant) {
      throw new EngineError(
        'INVALID_REQUEST',
        'scoreLogprobs needs batchInvariant: true (the hidden states it scores come from the invariant path)',
      );
    }
  }

  /** Whether this generator's results are independent of batch composition (see GeneratorOptions). */
  get batchInvariant(): boolean {
    return this.invariant;
  }

  /** Number of live caches. */
  get cacheCount(): number {
    return this.caches.size;
  }

  /** Tokens held in the cache of this id (0 when none). */
  cachedLength(cacheId: string): number {
    return this.caches.get(cacheId)?.tokens.length ?? 0;
  }

  /** Frees the KV cache of one sequence. */
  release(cacheId: string): void {
    this.caches.delete(cacheId);
  }

  /** Frees every KV cache. */
  releaseAll(): void {
    this.caches.clear();
  }

  async generate(requests: readonly GenerateRequest[]): Promise<GenerateResult[]> {
    const m = this.model;
    const V = m.shape.vocab;
    const version = m.version;
    const ids = new Set<string>();
    const active: Active[] = requests.map((req, index) => {
      if (ids.has(req.cacheId))
        throw new EngineError('INVALID_REQUEST', `cacheId ${req.cacheId} appears twice in one generate call`);
      ids.add(req.cacheId);
      const params = SamplingParamsSchema.parse(req.params);
      if (params.stopStrings.length > 0 && !this.options.decode) {
        throw new EngineError(
          'INVALID_REQUEST',
          'stopStrings need a decode function: createGenerator(model, { decode: tokenizer.decode })',
        );
      }
      if (req.tokenIds.length === 0)
        throw new EngineError('INVALID_REQUEST', `request ${req.cacheId} has no tokens`);
      if (this.onDevice && (hasPenalties(params) || req.allowedTokens))
        throw new EngineError(
          'INVALID_REQUEST',
          `presence / frequency penalties and constrained decoding run on the host; a ${m.device} model samples on the device: leave them out there`,
        );
      for (const t of req.tokenIds) {
        if (!Number.isInteger(t) || t < 0 || t >= V)
          throw new EngineError('INVALID_REQUEST', `token id ${t} is outside [0, ${V})`);
      }
      const seed = params.seed ?? requestSeed(this.options.seed ?? 0, req.cacheId, req.tokenIds.length);
      return {
        index,
        onToken: req.onToken,
        allowedTokens: req.allowedTokens,
        signal: req.signal,
        entry: this.cacheFor(req.cacheId),
        params,
        random: createRng(seed),
        counts: new Map(),
        out: { tokenIds: [], logprobs: [], finishReason: 'length' },
        // A sequence already at max_position_embeddings has no room: it ends at once, with 'length'.
        done: req.tokenIds.length >= m.shape.maxPositions || req.signal?.aborted === true,
      };
    });
    // Prefill: only the part of each sequence its cache does not hold yet.
    const prefilling = active.filter((a) => !a.done);
    if (prefilling.length === 0) return active.map((a) => a.out);
    if (this.invariant && !this.onDevice) m.native.packForDecode(m.handle, version);
    const feeds = prefilling.map((a) => {
      const req = requests[a.index] as GenerateRequest;
      const e = a.entry;
      let common = 0;
      const limit = Math.min(e.tokens.length, req.tokenIds.length);
      while (common < limit && e.tokens[common] === req.tokenIds[common]) common++;
      if (common === req.tokenIds.length) common--; // re-feed the last token to get its logits
      m.native.cacheTruncate(e.handle, common);
      e.tokens.length = common;
      return req.tokenIds.slice(common);
    });
    let logits = this.extend(prefilling, feeds);
    while (active.some((a) => !a.done)) {
      const next: number[][] = [];
      const stepping: Active[] = [];
      const sampled: Active[] = [];
      const rows = active.filter((a) => !a.done);
      const draws = this.draw(rows, logits);
      for (const [r, a] of rows.entries()) {
        const { token, logprob } = draws[r] as SampledToken;
        a.out.tokenIds.push(token);
        a.out.logprobs.push(logprob);
        if (hasPenalties(a.params)) a.counts.set(token, (a.counts.get(token) ?? 0) + 1);
        sampled.push(a);
        if (this.finished(a, token)) {
          a.done = true;
          continue;
        }
        stepping.push(a);
        next.push([token]);
      }
      this.rescore(sampled);
      // Row r of this step's logits is rows[r]'s (sampled lists the rows in order).
      for (const [r, a] of sampled.entries()) {
        const row = logits?.subarray(r * V, (r + 1) * V);
        a.onToken?.(a.out.tokenIds.at(-1) ?? 0, a.out.logprobs.at(-1) ?? 0, row);
      }
      if (stepping.length === 0) break;
      // Let timers and I/O (tool calls of other trajectories, HTTP) run between decode steps.
      await new Promise<void>((resolve) => setImmediate(resolve));
      // A request cancelled meanwhile takes no further step.
      for (let i = stepping.length - 1; i >= 0; i--) {
        if (!stepping[i]!.signal?.aborted) continue;
        stepping[i]!.done = true;
        stepping.splice(i, 1);
        next.splice(i, 1);
      }
      if (stepping.length === 0) break;
      if (m.version !== version) {
        throw new EngineError(
          'INVALID_REQUEST',
          'the weights changed during generate; finish generating before an optimizer step',
        );
      }
      logits = this.extend(stepping, next);
    }
    return active.map((a) => a.out);
  }

  /**
   * One token per row of the latest extend. Host: sampleToken on the downloaded logits. Device:
   * sampleOnDevice with each row's uniform taken from its own stream only where sampleToken would
   * take one (temperature > 0), so the streams advance identically on both.
   */
  private draw(rows: readonly Active[], logits: Float32Array | undefined): SampledToken[] {
    if (logits) {
      const V = this.model.shape.vocab;
      return rows.map((a, r) => {
        const row = logits.subarray(r * V, (r + 1) * V);
        const allowed = a.allowedTokens?.(a.out.tokenIds) ?? null;
        if (!hasPenalties(a.params) && !allowed) return sampleToken(row, a.params, a.random);
        // Penalties and constraints move the draw only; the logprob is the model's (see modelLogprob).
        let processed = hasPenalties(a.params) ? applyPenalties(row, a.counts, a.params) : row;
        if (allowed) processed = restrictTokens(processed, allowed);
        const { token } = sampleToken(processed, a.params, a.random);
        return { token, logprob: modelLogprob(row, a.params.temperature, token) };
      });
    }
    const { tokens, logprobs } = sampleOnDevice(
      this.model,
      rows.map((a) => ({
        temperature: a.params.temperature,
        topK: a.params.topK,
        topP: a.params.topP,
        uniform: a.params.temperature > 0 ? a.random() : 0,
      })),
    );
    return rows.map((_, r) => ({ token: tokens[r] ?? 0, logprob: logprobs[r] ?? 0 }));
  }

  private finished(a: Active, token: number): boolean {
    const p = a.params;
    if (p.stopTokenIds.includes(token)) {
      a.out.finishReason = 'stop';
      return true;
    }
    if (p.stopStrings.length > 0 && this.options.decode) {
      const text = this.options.decode(a.out.tokenIds);
      if (p.stopStrings.some((s) => text.includes(s))) {
        a.out.finishReason = 'stop';
        return true;
      }
    }
    if (
      a.out.tokenIds.length >= p.maxNewTokens ||
      a.entry.tokens.length + 1 >= this.model.shape.maxPositions
    ) {
      a.out.finishReason = 'length';
      return true;
    }
    return false;
  }

  /** Replaces the logprobs just sampled (rows of the latest extend, in order) by scoreLogprobs'. */
  private rescore(sampled: Active[]): void {
    const score = this.options.scoreLogprobs;
    const hidden = this.lastHidden;
    if (!score || !hidden) return;
    const H = this.model.shape.hidden;
    const byTemperature = new Map<number, number[]>();
    sampled.forEach((a, row) => {
      const t = a.params.temperature > 0 ? a.params.temperature : 1;
      byTemperature.set(t, [...(byTemperature.get(t) ?? []), row]);
    });
    for (const [temperature, rows] of byTemperature) {
      const h = new Float32Array(rows.length * H);
      rows.forEach((r, i) => {
        h.set(hidden.subarray(r * H, (r + 1) * H), i * H);
      });
      const targets = Int32Array.from(rows, (r) => (sampled[r] as Active).out.tokenIds.at(-1) ?? 0);
      const lps = score({ hidden: h, targets, temperature });
      rows.forEach((r, i) => {
        const out = (sampled[r] as Active).out.logprobs;
        out[out.length - 1] = Number(lps[i]);
      });
    }
  }

  private lastHidden: Float32Array | undefined;

  /**
   * Runs the model over each sequence's new tokens and returns the logits of each last token, or
   * undefined on a device model (they stay there for the draw).
   */
  private extend(batch: Active[], feeds: number[][]): Float32Array | undefined {
    const m = this.model;
    const counts = Int32Array.from(feeds, (f) => f.length);
    const tokens = Int32Array.from(feeds.flat());
    const handles = batch.map((a) => a.entry.handle);
    if (isDeviceBinding(m.native)) {
      m.native.extendResident(m.handle, handles, tokens, counts);
      batch.forEach((a, i) => {
        a.entry.tokens.push(...(feeds[i] as number[]));
      });
      return undefined;
    }
    const logits = new Float32Array(batch.length * m.shape.vocab);
    if (this.invariant) {
      this.lastHidden = this.options.scoreLogprobs
        ? new Float32Array(batch.length * m.shape.hidden)
        : undefined;
      m.native.extendInvariant(m.handle, handles, tokens, counts, logits, this.lastHidden);
    } else {
      m.native.extend(m.handle, handles, tokens, counts, logits);
    }
    batch.forEach((a, i) => {
      a.entry.tokens.push(...(feeds[i] as number[]));
    });
    return logits;
  }

  private cacheFor(cacheId: string): CacheEntry {
    const m = this.model;
    let e = this.caches.get(cacheId);
    if (e && e.version !== m.version) {
      m.native.cacheTruncate(e.handle, 0);
      e.tokens.length = 0;
      e.version = m.version;
    }
    if (!e) {
      e = { handle: m.native.createCache(m.handle), tokens: [], version: m.version };
      this.caches.set(cacheId, e);
    }
    return e;
  }
}

/** A batched KV-cache sampler over a model; weights updated in place are used by the next generate. */
export function createGenerator(model: Model, options: GeneratorOptions = {}): Generator {
  return new Generator(model, options);
}
