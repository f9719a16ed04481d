import type { RolloutTokenizer, WeightUpdate } from '@agentrl/rollout';
import type { RetryOptions } from './http/retry.js';
import type { RemoteEngineInfo } from './remote-checks.js';
import { createSglangAdapter, type SglangAdapter } from './sglang-adapter.js';
import { createVllmAdapter, type VllmAdapter } from './vllm-adapter.js';

export interface ConnectEnginesOptions {
  kind: 'vllm' | 'sglang';
  /** one or more server URLs (`--engine URL[,URL…]`) */
  urls: readonly string[];
  /** the served model name; read from each server's `/v1/models` when unset */
  model?: string;
  /** the local tokenizer, compared with each server's */
  tokenizer?: RolloutTokenizer;
  /** vLLM: the directory the servers were launched on (its reload re-reads it) */
  modelDir?: string;
  retry?: RetryOptions;
  apiKey?: string;
  timeoutMs?: number;
}

export type RemoteEngine = (VllmAdapter | SglangAdapter) & { readonly info: RemoteEngineInfo };

/**
 * Creates and connects one adapter per URL, in parallel (probe, model name, tokenizer check). If
 * any fails, the others are closed and its error is thrown: a run does not start on half its engines.
 */
export async function connectEngines(options: ConnectEnginesOptions): Promise<RemoteEngine[]> {
  const adapters = options.urls.map((baseUrl) => {
    const common = {
      baseUrl,
      ...(options.model !== undefined ? { model: options.model } : {}),
      ...(options.tokenizer ? { tokenizer: options.tokenizer } : {}),
      ...(options.retry ? { retry: options.retry } : {}),
      ...(options.apiKey !== undefined ? { apiKey: options.apiKey } : {}),
      ...(options.timeoutMs !== undefined ? { timeoutMs: options.timeoutMs } : {}),
    };
    return options.kind === 'sglang'
      ? createSglangAdapter(common)
      : createVllmAdapter({
          ...common,
          ...(options.modelDir !== undefined ? { modelDir: options.modelDir } : {}),
        });
  });
  const results = await Promise.allSettled(adapters.map((a) => a.connect()));
  const failed = results.find((r): r is PromiseRejectedResult => r.status === 'rejected');
  if (failed) {
    await Promise.allSettled(adapters.map((a) => a.close()));
    throw failed.reason;
  }
  return adapters.map((a, i) =>
    Object.assign(a, { info: (results[i] as PromiseFulfilledResult<RemoteEngineInfo>).value }),
  );
}

/** Sends the same weight update to every engine, in parallel; the first failure is thrown. */
export async function syncEngineWeights(
  engines: ReadonlyArray<{ updateWeights(update: WeightUpdate): Promise<void> }>,
  update: WeightUpdate,
): Promise<void> {
  await Promise.all(engines.map((e) => e.updateWeights(update)));
}
