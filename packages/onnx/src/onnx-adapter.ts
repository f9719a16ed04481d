import { createRng, requestSeed, sampleToken } from '@agentrl/engine';
import { isAgentrlError } from '@agentrl/protocol';
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

interface Cache {
  tokens: number[];
  past: Record<string, ort.Tensor>;
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
  const caches = new Map<string, Cache>();
  let running = 0;

  const emptyPast = (): Record<string, ort.Tensor> => {
    const past: Record<string, ort.Tensor> = {};
    for (let l = 0; l < shape.layers; l++) {
      for (const kind of ['key', 'value']) {
        past[`past_key_values.${l}.${kind}`] = new rt.Tensor('float32', new Float32Array(0), [
          1,
          shape.kvHeads,
          0,
          shape.headDim,
        ]);
      }
    }
    return past;
  };

  /** Feeds `tokens` after what the cache holds; returns the logits of the last one. */
  const extend = async (cache: Cache, tokens: number[]): Promise<Float32Array> => {
    const start = cache.tokens.length;
    const n = tokens.length;
    const out = await session.run({
      input_ids: new rt.Tensor('int64', BigInt64Array.from(tokens, BigInt), [1, n]),
      attention_mask: new rt.Tensor('int64', new BigInt64Array(start + n).fill(1n), [1, start + n]),
      position_ids: new rt.Tensor(
        'int64',
        BigInt64Array.from(tokens, (_, i) => BigInt(start + i)),
        [1, n],
      ),
      ...cache.past,
    });
    for (let l = 0; l < shape.layers; l++) {
      cache.past[`past_key_values.${l}.key`] = out[`present.${l}.key`]!;
      cache.past[`past_key_values.${l}.value`] = out[`present.${l}.value`]!;
    }
    cache.tokens.push(...tokens);
    const logits = out.logits!.data as Float32Array;
    return logits.subarray((n - 1) * shape.vocab, n * shape.vocab);
  };

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
          cache = { tokens: [], past: emptyPast() };
          caches.set(cacheId, cache);
        }
        const random = createRng(params.seed ?? requestSeed(options.seed ?? 0, cacheId, tokenIds.length));
        let logits = await extend(cache, tokenIds.slice(cache.tokens.length));
        const out: GenerateResult = { tokenIds: [], logprobs: [], finishReason: 'length' };
        for (;;) {
          if (signal?.aborted)
            throw new RolloutError(RolloutErrorCode.ABORTED, 'rollout: the request was cancelled');
          const { token, logprob } = sampleToken(logits, params, random);
          out.tokenIds.push(token);
          out.logprobs.push(logprob);
          const stopString =
            params.stopStrings.length > 0 &&
            params.stopStrings.some((s) => options.decode!(out.tokenIds).includes(s));
          if (params.stopTokenIds.includes(token) || stopString) {
            out.finishReason = 'stop';
            break;
          }
          if (out.tokenIds.length >= params.maxNewTokens) break;
          logits = await extend(cache, [token]);
        }
        return out;
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
