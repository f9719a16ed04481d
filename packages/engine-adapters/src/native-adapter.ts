import type { SamplingParams } from '@agentrl/protocol';
import {
  type EngineAdapter,
  type EngineLoad,
  type GenerateRequest,
  type GenerateResult,
  RolloutError,
  RolloutErrorCode,
  type WeightUpdate,
} from '@agentrl/rollout';
import { createBatchQueue, type Pending } from './batch-queue.js';

/**
 * The KV-cache generator of @agentrl/engine (`createGenerator(model)`), as this package uses it:
 * a batch of requests, each the full sequence so far; only the suffix past what the cache holds for
 * `cacheId` is prefilled.
 */
export interface BatchGenerator {
  generate(
    requests: Array<{
      cacheId: string;
      tokenIds: number[];
      params: SamplingParams;
      onToken?: (token: number, logprob: number, logits?: Float32Array) => void;
      allowedTokens?: (generated: readonly number[]) => ReadonlySet<number> | null;
      signal?: AbortSignal;
    }>,
  ): Promise<Array<{ tokenIds: number[]; logprobs: number[]; finishReason: 'stop' | 'length' }>>;
  release(cacheId: string): void | Promise<void>;
}

export interface NativeAdapterOptions {
  generator: BatchGenerator;
  /** Builds a generator for new weights (in-process weight sync). */
  createGenerator?: (model: unknown) => BatchGenerator | Promise<BatchGenerator>;
  /** Most requests decoded together in one batch. */
  maxBatch?: number;
  /** KV-cache capacity reported to the scheduler, in tokens. */
  kvCapacityTokens?: number;
  name?: string;
}

type NativePending = Pending<GenerateRequest, GenerateResult>;

/**
 * The in-process engine: concurrent `generate` calls are gathered into one batch per decode run
 * (continuous batching at request granularity), so many trajectories share each forward pass.
 */
export function createNativeAdapter(options: NativeAdapterOptions): EngineAdapter {
  let generator = options.generator;
  /** Tokens each trajectory holds in the generator's KV cache, for `load()`. */
  const lengths = new Map<string, number>();
  const queue = createBatchQueue<GenerateRequest, GenerateResult>(options.maxBatch ?? 32, (batch) =>
    runNativeBatch(generator, batch, lengths),
  );

  return {
    name: options.name ?? 'native',
    generate(request) {
      return new Promise<GenerateResult>((resolve, reject) => {
        const entry: NativePending = { request, resolve, reject };
        const { signal } = request;
        if (signal?.aborted) {
          reject(new RolloutError(RolloutErrorCode.ABORTED, 'rollout: the request was cancelled'));
          return;
        }
        signal?.addEventListener(
          'abort',
          () => {
            if (queue.remove(entry))
              reject(new RolloutError(RolloutErrorCode.ABORTED, 'rollout: the request was cancelled'));
          },
          { once: true },
        );
        queue.push(entry);
      });
    },
    async release(cacheId) {
      lengths.delete(cacheId);
      try {
        await generator.release(cacheId);
      } catch {
        // Releasing is best effort: a cache that is already gone is what we wanted.
      }
    },
    async load(): Promise<EngineLoad> {
      const capacity = options.kvCapacityTokens ?? null;
      let used = 0;
      for (const n of lengths.values()) used += n;
      return {
        kvCapacityTokens: capacity,
        kvUsage: capacity ? used / capacity : null,
        running: queue.running,
        waiting: queue.waiting,
      };
    },
    async updateWeights(update: WeightUpdate) {
      if (update.kind !== 'in-process' || !options.createGenerator) {
        throw new RolloutError(
          RolloutErrorCode.UNSUPPORTED,
          'rollout: the native adapter swaps weights in process; pass { kind: "in-process", model } and a createGenerator option',
        );
      }
      // Let the running batch finish on the old weights; the cached KV of old weights is dropped.
      await queue.idle();
      const old = generator;
      generator = await options.createGenerator(update.model);
      for (const id of lengths.keys()) await Promise.resolve(old.release(id)).catch(() => {});
      lengths.clear();
    },
    async close() {
      await queue.idle();
    },
  };
}

/** Runs one batch on the generator and settles each request; records the cache length of each. */
async function runNativeBatch(
  generator: BatchGenerator,
  batch: NativePending[],
  lengths: Map<string, number>,
): Promise<void> {
  let results: Awaited<ReturnType<BatchGenerator['generate']>>;
  try {
    results = await generator.generate(
      batch.map(({ request }) => ({
        cacheId: request.cacheId,
        tokenIds: [...request.tokenIds],
        params: request.params,
        ...(request.onToken ? { onToken: request.onToken } : {}),
        ...(request.allowedTokens ? { allowedTokens: request.allowedTokens } : {}),
        // In the batch too, a cancelled request stops taking decode steps.
        ...(request.signal ? { signal: request.signal } : {}),
      })),
    );
  } catch (err) {
    const e = new RolloutError(
      RolloutErrorCode.ENGINE_FAILED,
      `rollout: the native engine failed: ${(err as Error).message}`,
      { cause: err },
    );
    for (const p of batch) p.reject(e);
    return;
  }
  batch.forEach((p, i) => {
    const r = results[i];
    if (!r) {
      p.reject(
        new RolloutError(
          RolloutErrorCode.ENGINE_BAD_RESPONSE,
          'rollout: the native engine returned too few results',
        ),
      );
      return;
    }
    lengths.set(p.request.cacheId, p.request.tokenIds.length + r.tokenIds.length);
    if (p.request.signal?.aborted) {
      p.reject(new RolloutError(RolloutErrorCode.ABORTED, 'rollout: the request was cancelled'));
      return;
    }
    p.resolve({ tokenIds: r.tokenIds, logprobs: r.logprobs, finishReason: r.finishReason });
  });
}
