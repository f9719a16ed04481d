import { createGenerator, loadModel, type Model, packSequences, type Tokenizer } from '@agentrl/engine';
import { createNativeAdapter } from '@agentrl/engine-adapters';
import type { EngineAdapter, GenerateResult } from '@agentrl/rollout';
import { EngineServerError } from './errors.js';
import { SERVED } from './open-checkpoint.js';
import { createPrefixCache } from './prefix-cache.js';
import type { GenerationSpec } from './sampling.js';

/** What `/release_memory_occupation` and `/sleep` release (SGLang's `GPU_MEMORY_TYPE_*` tags). */
export type MemoryTag = 'kv_cache' | 'weights';
export const MEMORY_TAGS: readonly MemoryTag[] = ['kv_cache', 'weights'];

/** Most logits one top-k / prompt-logprobs forward may hold (1 GiB of floats). */
const MAX_LOGIT_FLOATS = 2 ** 28;

/** One position's distribution: the token there and the k most likely ones, as [id, logprob]. */
export interface PositionLogprobs {
  id: number;
  logprob: number;
  top: Array<[number, number]>;
}

export interface Generation extends GenerateResult {
  /** per generated token, when top-k logprobs were asked for */
  top?: PositionLogprobs[];
}

/**
 * The checkpoint the server serves: its model, tokenizer, the batched in-process engine, a prefix
 * cache so that a trajectory's later turns prefill only their new tokens, and the weight version.
 * Reloading weights waits for running generations, copies the new tensors into the same model and
 * bumps its version (the generator rebuilds stale KV caches on its own).
 */
export class ServedEngine {
  readonly engine: EngineAdapter;
  /** requests inside the engine now */
  running = 0;
  /** requests waiting for a weight reload to finish */
  waiting = 0;
  /** tokens sampled since the start (vLLM's `generation_tokens_total`), cancelled requests' too */
  generatedTokens = 0;
  /** how many times the weights were replaced */
  modelVersion = 0;
  weightVersion = 'default';
  /** where the weights served now came from (SGLang's model_path) */
  modelPath: string;
  /** the directory the server was started on (what vLLM's reload_weights re-reads) */
  readonly launchPath: string;
  private readonly prefixes;
  private readonly controllers = new Map<string, AbortController>();
  private reloading: Promise<void> | null = null;
  private idle: (() => void) | null = null;

  constructor(
    readonly model: Model,
    readonly tokenizer: Tokenizer,
    modelPath: string,
    options: { maxBatch?: number } = {},
  ) {
    this.modelPath = modelPath;
    this.launchPath = modelPath;
    const generator = createGenerator(model, { decode: (ids) => tokenizer.decode(ids) });
    this.engine = createNativeAdapter({ generator, maxBatch: options.maxBatch ?? 64, name: 'agentrl' });
    this.prefixes = createPrefixCache(this.engine);
  }

  /** The longest sequence (prompt + output) the model takes. */
  get maxModelLen(): number {
    return this.model.config.max_position_embeddings;
  }

  /** Refuses an empty prompt, one that does not fit the context with `maxNewTokens`, or an id outside the vocabulary. */
  checkPrompt(tokenIds: readonly number[], maxNewTokens: number): void {
    if (tokenIds.length === 0)
      throw new EngineServerError('INVALID_REQUEST', 'the prompt is empty; send at least one token');
    const wanted = tokenIds.length + maxNewTokens;
    // vLLM's wording (serving_engine.py `_validate_input`): the request does not fit the context.
    if (wanted > this.maxModelLen)
      throw new EngineServerError(
        'INVALID_REQUEST',
        `This model's maximum context length is ${this.maxModelLen} tokens. However, you requested ${wanted} tokens (${tokenIds.length} in the messages, ${maxNewTokens} in the completion). Please reduce the length of the messages or completion.`,
      );
    const vocab = this.model.config.vocab_size;
    const bad = tokenIds.find((t) => t >= vocab);
    if (bad !== undefined)
      throw new EngineServerError(
        'INVALID_REQUEST',
        `token id ${bad} is out of vocabulary (vocab_size ${vocab})`,
      );
  }

  /**
   * Samples one continuation of `tokenIds`; `topLogprobs` > 0 adds the k most likely tokens per step.
   * `onToken` sees each token as it is sampled (streaming), with its top k taken from the logits
   * row it was drawn from (a device model keeps those on the device: its tokens then reach
   * `onToken` after the generation, tops from one forward); it does not change what is sampled.
   * `allowedTokens` constrains each draw (forced tool calls); the logprobs stay the model's.
   */
  async generate(
    rid: string,
    tokenIds: number[],
    spec: GenerationSpec,
    topLogprobs = 0,
    onToken?: (token: number, logprob: number, top?: Array<[number, number]>) => void,
    allowedTokens?: (generated: readonly number[]) => ReadonlySet<number> | null,
  ): Promise<Generation> {
    this.checkPrompt(tokenIds, spec.params.maxNewTokens);
    await this.waitForReload();
    if (this.released.size > 0)
      throw new EngineServerError(
        'RELEASED',
        `the server's ${[...this.released].join(' and ')} memory is released (/release_memory_occupation or /sleep); call /resume_memory_occupation or /wake_up first`,
      );
    const controller = new AbortController();
    this.controllers.set(rid, controller);
    this.running += 1;
    const t = spec.params.temperature > 0 ? spec.params.temperature : 1;
    /** tokens whose logits stayed on a device: they reach onToken after the generation */
    const deferred: number[] = [];
    const streamed: PositionLogprobs[] = [];
    const counted = (token: number, logprob: number, logits?: Float32Array) => {
      this.generatedTokens += 1;
      if (!onToken) return;
      if (topLogprobs <= 0) return onToken(token, logprob);
      if (!logits) return void deferred.push(token);
      streamed.push(rowLogprobs(logits, topLogprobs, t, token));
      onToken(token, logprob, streamed.at(-1)!.top);
    };
    try {
      const entry = await this.prefixes.acquire(tokenIds);
      let result: GenerateResult | null = null;
      try {
        result = await this.engine.generate({
          cacheId: entry.id,
          tokenIds,
          params: spec.params,
          signal: controller.signal,
          onToken: counted,
          ...(allowedTokens ? { allowedTokens } : {}),
        });
      } finally {
        await this.prefixes.done(entry, result ? [...tokenIds, ...result.tokenIds] : null);
      }
      if (topLogprobs <= 0 || result.tokenIds.length === 0) return result;
      // Streamed from the decode steps' own logits: no second forward.
      if (onToken && deferred.length === 0) return { ...result, top: streamed };
      const all = this.positionLogprobs([...tokenIds, ...result.tokenIds], topLogprobs, t);
      const top = all.slice(tokenIds.length - 1, tokenIds.length - 1 + result.tokenIds.length);
      const late = result.tokenIds.length - deferred.length;
      for (const [i, token] of deferred.entries())
        onToken?.(token, result.logprobs[late + i]!, top[late + i]!.top);
      return { ...result, top };
    } finally {
      this.running -= 1;
      this.controllers.delete(rid);
      if (this.running === 0) this.idle?.();
    }
  }

  /**
   * Log-softmax(logits / temperature) of the model at each position of `ids`: entry i is the
   * distribution of token i+1 given tokens 0..i, with that token's logprob and the top k.
   */
  positionLogprobs(ids: readonly number[], k: number, temperature = 1): PositionLogprobs[] {
    const vocab = this.model.config.vocab_size;
    // One forward over the whole sequence writes [T, V] logits: bound that buffer.
    if (ids.length * vocab > MAX_LOGIT_FLOATS)
      throw new EngineServerError(
        'INVALID_REQUEST',
        `top-k / prompt logprobs over ${ids.length} tokens need ${((ids.length * vocab * 4) / 2 ** 30).toFixed(1)} GiB of logits here (limit ${(MAX_LOGIT_FLOATS * 4) / 2 ** 30} GiB); ask for logprobs=0 (the sampled tokens' logprobs cost nothing) or a shorter sequence`,
      );
    const logits = this.model.forwardLogits(packSequences([ids]));
    const out: PositionLogprobs[] = [];
    for (let i = 0; i + 1 < ids.length; i++)
      out.push(rowLogprobs(logits.subarray(i * vocab, (i + 1) * vocab), k, temperature, ids[i + 1]!));
    return out;
  }

  /** Cancels a request by id (SGLang `/abort_request`), or all of them. */
  abort(rid?: string): void {
    if (rid === undefined) for (const c of this.controllers.values()) c.abort();
    else this.controllers.get(rid)?.abort();
  }

  async flushCache(): Promise<void> {
    await this.prefixes.flush();
  }

  /**
   * Loads the weights of checkpoint `path` into the served model in place: waits until no request
   * runs (new ones queue), copies every tensor, bumps the version, drops the prefix cache. A path
   * without a checkpoint, or one of another shape, is refused and the old weights stay.
   */
  async reload(path: string, weightVersion?: string | null): Promise<void> {
    await this.exclusive(async () => {
      let next: Model;
      try {
        next = await loadModel(path, SERVED);
      } catch (err) {
        throw new EngineServerError(
          'WEIGHTS_REFUSED',
          `Failed to load model weights from ${path}: ${(err as Error).message}`,
          { cause: err },
        );
      }
      const target = this.model.parameters();
      const source = new Map(next.parameters().map((p) => [p.name, p]));
      for (const p of target) {
        const q = source.get(p.name);
        if (!q || q.data.length !== p.data.length)
          throw new EngineServerError(
            'WEIGHTS_REFUSED',
            `Failed to load model weights from ${path}: tensor ${p.name} is ${q ? `[${q.shape.join(', ')}]` : 'missing'}, the served model has [${p.shape.join(', ')}]; the new checkpoint must have the served architecture`,
          );
      }
      for (const p of target) p.data.set(source.get(p.name)!.data);
      this.modelPath = path;
      await this.weightsChanged(weightVersion);
    });
  }

  /**
   * Copies named fp32 tensors into the served parameters of the same name in place (SGLang's
   * `/update_weights_from_tensor`: any subset of the parameters), then bumps the version. Every
   * name and size is checked before anything is written: a refused update leaves the old weights.
   */
  async updateTensors(
    tensors: ReadonlyMap<string, Float32Array>,
    weightVersion?: string | null,
  ): Promise<void> {
    await this.exclusive(async () => {
      for (const [name, data] of tensors) {
        const p = this.model.parameter(name);
        if (!p || p.data.length !== data.length)
          throw new EngineServerError(
            'WEIGHTS_REFUSED',
            `Failed to update weights from tensor: ${name} ${p ? `has ${data.length} values, the served parameter [${p.shape.join(', ')}] has ${p.data.length}` : 'is not a parameter of the served model'}`,
          );
      }
      for (const [name, data] of tensors) this.model.parameter(name)!.data.set(data);
      await this.weightsChanged(weightVersion);
    });
  }

  /** After new weights: the model's version is bumped (stale KV caches are rebuilt), the prefix cache dropped. */
  private async weightsChanged(weightVersion: string | null | undefined): Promise<void> {
    this.model.markWeightsChanged();
    await this.prefixes.flush();
    this.modelVersion += 1;
    this.weightVersion = weightVersion ?? String(this.modelVersion);
  }

  /** Runs `change` alone: new requests wait, running ones finish first. */
  private async exclusive(change: () => Promise<void>): Promise<void> {
    await this.waitForReload();
    let done!: () => void;
    this.reloading = new Promise<void>((r) => {
      done = r;
    });
    try {
      if (this.running > 0) await new Promise<void>((r) => (this.idle = r));
      this.idle = null;
      await change();
    } finally {
      this.reloading = null;
      done();
    }
  }

  /**
   * SGLang's `/release_memory_occupation` and vLLM's `/sleep`: drops every KV cache (`kv_cache`)
   * and marks the weights (`weights`) unusable until resumed. This engine keeps its weights in host
   * memory, so releasing them frees nothing by itself; what it guarantees is what verl relies on:
   * no generation runs on them until `resume`, and the weights sent in between are the ones served.
   * Waits for running requests; requests that arrive while released are refused (503).
   */
  async release(tags: readonly MemoryTag[]): Promise<void> {
    await this.exclusive(async () => {
      for (const t of tags) this.released.add(t);
      if (tags.includes('kv_cache')) await this.prefixes.flush();
    });
  }

  /** SGLang's `/resume_memory_occupation` and vLLM's `/wake_up`: serves again. */
  resume(tags: readonly MemoryTag[]): void {
    for (const t of tags) this.released.delete(t);
  }

  /** what is released now (vLLM's `/is_sleeping` is true while anything is) */
  readonly released = new Set<MemoryTag>();

  private async waitForReload(): Promise<void> {
    while (this.reloading) {
      this.waiting += 1;
      try {
        await this.reloading;
      } finally {
        this.waiting -= 1;
      }
    }
  }

  async close(): Promise<void> {
    this.abort();
    await this.engine.close();
  }
}

/** Log-softmax(row / temperature) at `id`, and the k most likely tokens with theirs. */
function rowLogprobs(row: Float32Array, k: number, temperature: number, id: number): PositionLogprobs {
  const vocab = row.length;
  let max = Number.NEGATIVE_INFINITY;
  for (let v = 0; v < vocab; v++) max = Math.max(max, row[v]! / temperature);
  let sum = 0;
  for (let v = 0; v < vocab; v++) sum += Math.exp(row[v]! / temperature - max);
  const logZ = max + Math.log(sum);
  const lp = (v: number) => row[v]! / temperature - logZ;
  const top: Array<[number, number]> = [];
  for (let v = 0; v < vocab && k > 0; v++) {
    const x = row[v]!;
    if (top.length < k) top.push([v, x]);
    else if (x > top[top.length - 1]![1]) top[top.length - 1] = [v, x];
    else continue;
    top.sort((a, b) => b[1] - a[1]);
  }
  return { id, logprob: lp(id), top: top.map(([v]) => [v, lp(v)]) };
}
