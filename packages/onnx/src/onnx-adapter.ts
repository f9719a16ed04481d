import { createRng, requestSeed, sampleToken } from '@agentrl/engine';
import { isAgentrlError, type SamplingParams } from '@agentrl/protocol';
import {
  type EngineAdapter,
  type EngineLoad,
  type GenerateResult,
  RolloutError,
  RolloutErrorCode,
  type WeightUpdate,
} from '@agentrl/rollout';
import type * as ort from 'onnxruntime-node';
import { OnnxError, OnnxErrorCode } from './errors.js';
import type { DecoderShape } from './export-decoder.js';
import { emptyKvCache, extendKvCache, type KvCache } from './kv-session.js';

export interface OnnxAdapterOptions {
  /** `onnxruntime-node` itself (passed in so that the native binding loads only when used). */
  ort: typeof ort;
  /** A decoder in the HF ONNX layout with past key values (see exportDecoderToOnnx). */
  session: ort.InferenceSession;
  shape: DecoderShape;
  /** Needed for stop strings: decodes new tokens to text. */
  decode?: (ids: readonly number[]) => string;
  /** Builds a session for new weights (in-process weight sync), e.g. by exporting the updated model. */
  createSession?: (model: unknown) => Promise<ort.InferenceSession>;
  /**
   * Base seed of requests without a seed of their own: each draws from @agentrl/engine's
   * `requestSeed(seed, cacheId, token count)` stream, as the native generator does, so results do not
   * depend on the order requests arrive in. Default 0 (the generator's default too).
   */
  seed?: number;
  name?: string;
}

/**
 * ONNX Runtime as an engine (CPU, or the WebGPU backend the package bundles): one KV cache (the
 * `present.*` outputs fed back as `past_key_values.*`) per trajectory, so later turns prefill only
 * their new tokens. Sampling uses @agentrl/engine's sampler, so logprobs mean the same thing as the
 * native engine's, and an unseeded request's stream is keyed by its cacheId and token count, as the
native generator keys it. Requests run one at a time per cacheId and interleave across trajectories.
 */
export function createOnnxAdapter(options: OnnxAdapterOptions): EngineAdapter {
  const { ort: rt, shape } = options;
  let session = options.session;
  const caches = new Map<string, KvCache>();
  let running = 0;
  const extend = (cache: KvCache, tokens: number[]) => extendKvCache(rt, session, shape, cache, tokens);

  return {
    name: options.name ?? 'onnxruntime',
    async generate({ cacheId, tokenIds, params, signal }): Promise<GenerateResult> {
      if (params.stopStrings.length > 0 && !options.decode) {
        throw new OnnxError(
          OnnxErrorCode.INVALID_CONFIG,
          "onnx: stop strings need the ONNX adapter's decode option",
        );
      }
      running += 1;
      try {
        let cache = caches.get(cacheId);
        // Reuse the cache when the request extends it; otherwise start over.
        const extendsCache =
          cache !== undefined &&
          cache.tokens.length < tokenIds.length &&
          cache.tokens.every((t, i) => t === tokenIds[i]);
        if (!cache || !extendsCache) {
          cache = emptyKvCache(rt, shape);
          caches.set(cacheId, cache);
        }
        const random = createRng(params.seed ?? requestSeed(options.seed ?? 0, cacheId, tokenIds.length));
        const logits = await extend(cache, tokenIds.slice(cache.tokens.length));
        return await sampleTurn(
          logits,
          params,
          random,
          (token) => extend(cache, [token]),
          options.decode,
          signal,
        );
      } catch (err) {
        if (isAgentrlError(err)) throw err;
        caches.delete(cacheId);
        throw new RolloutError(
          RolloutErrorCode.ENGINE_FAILED,
          `rollout: ONNX Runtime failed: ${(err as Error).message}`,
          { cause: err },
        );
      } finally {
        running -= 1;
      }
    },
    async release(cacheId) {
      caches.delete(cacheId);
    },
    async load(): Promise<EngineLoad> {
      return { kvCapacityTokens: null, kvUsage: null, running, waiting: 0 };
    },
    async updateWeights(update: WeightUpdate) {
      if (update.kind !== 'in-process' || !options.createSession) {
        throw new RolloutError(
          RolloutErrorCode.UNSUPPORTED,
          'rollout: the ONNX adapter swaps sessions in process; pass { kind: "in-process", model } and a createSession option',
        );
      }
      session = await options.createSession(update.model);
      caches.clear();
    },
    async close() {
      caches.clear();
      await session.release();
    },
  };
}

/**
 * Samples one turn from the logits after the prompt: a token at a time, each fed back through
 * `next`, until a stop token, a stop string (decoded with `decode`) or `maxNewTokens`.
 */
async function sampleTurn(
  first: Float32Array,
  params: SamplingParams,
  random: () => number,
  next: (token: number) => Promise<Float32Array>,
  decode: ((ids: readonly number[]) => string) | undefined,
  signal: AbortSignal | undefined,
): Promise<GenerateResult> {
  let logits = first;
  const out: GenerateResult = { tokenIds: [], logprobs: [], finishReason: 'length' };
  for (;;) {
    if (signal?.aborted)
      throw new RolloutError(RolloutErrorCode.ABORTED, 'rollout: the request was cancelled');
    const { token, logprob } = sampleToken(logits, params, random);
    out.tokenIds.push(token);
    out.logprobs.push(logprob);
    const stopString =
      params.stopStrings.length > 0 && params.stopStrings.some((s) => decode!(out.tokenIds).includes(s));
    if (params.stopTokenIds.includes(token) || stopString) {
      out.finishReason = 'stop';
      break;
    }
    if (out.tokenIds.length >= params.maxNewTokens) break;
    logits = await next(token);
  }
  return out;
}
