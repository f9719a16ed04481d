import type { EngineAdapter, EngineLoad, GenerateResult, WeightUpdate } from '@agentrl/rollout';
import { createJsonClient } from './http/json-client.js';
import { withRetry } from './http/retry.js';
import {
  checkTokenizerAgreement,
  probeEngine,
  type RemoteEngineInfo,
  resolveServedModel,
} from './remote-checks.js';
import {
  readSglangCapacity,
  readSglangGenerate,
  readSglangLoad,
  type SglangGenerate,
  sglangGenerateBody,
  updateSglangWeights,
} from './sglang-protocol.js';
import type { RemoteAdapterOptions } from './vllm-adapter.js';

export type SglangAdapter = EngineAdapter & {
  /** Probe, resolve the served model name, compare tokenizers. Call once before the first request. */
  connect(): Promise<RemoteEngineInfo>;
  flushCache(): Promise<void>;
  abort(rid: string): Promise<void>;
  /** The policy version the server holds now. */
  readonly policyVersion: number;
};

/**
 * An SGLang server (`python -m sglang.launch_server`) through its native API: `/generate` with
 * `input_ids` and `return_logprob`, reading `meta_info.output_token_logprobs`; `/get_load` and
 * `/get_server_info` for load and KV capacity; `/abort_request` when a trajectory is cancelled;
 * weight sync by `POST /update_weights_from_disk {model_path, weight_version}` (SGLang
 * `python/sglang/srt/entrypoints/http_server.py`, `UpdateWeightFromDiskReqInput` in
 * `python/sglang/srt/managers/io_struct.py`), which flushes the radix cache itself.
 */
export function createSglangAdapter(options: RemoteAdapterOptions): SglangAdapter {
  const client = createJsonClient(options);
  let counter = 0;
  let capacity: number | null | undefined;
  let version = options.policyVersion ?? 0;
  const abort = async (rid: string) => {
    await client.post('/abort_request', { rid }, AbortSignal.timeout(5_000));
  };
  const post = (body: Record<string, unknown>, signal?: AbortSignal) =>
    withRetry(
      `${client.baseUrl}/generate`,
      () => client.post<SglangGenerate>('/generate', body, signal),
      options.retry,
      signal,
    );
  return {
    name: `sglang@${client.baseUrl}`,
    get policyVersion() {
      return version;
    },
    async connect() {
      await probeEngine(client, 'SGLang');
      const model = await resolveServedModel(client, options.model);
      if (!options.tokenizer) return { model, tokenizerCheck: 'skipped' };
      const tokenizer = options.tokenizer;
      const tokenizerCheck = await checkTokenizerAgreement(client, tokenizer, model, async () => {
        const res = await post({
          input_ids: tokenizer.encode('Hello'),
          sampling_params: { max_new_tokens: 1, temperature: 0, skip_special_tokens: false },
        });
        const id = res.output_ids?.[0];
        return id !== undefined && typeof res.text === 'string' ? { id, text: res.text } : null;
      });
      return { model, tokenizerCheck };
    },
    async generate({ cacheId, tokenIds, params, signal }): Promise<GenerateResult> {
      const served = version;
      const rid = `${cacheId}#${counter++}`;
      // Tell the server to stop working on it; the local request is cancelled by the same signal.
      const onAbort = () => void abort(rid).catch(() => {});
      signal?.addEventListener('abort', onAbort, { once: true });
      try {
        return readSglangGenerate(
          await post(sglangGenerateBody(rid, tokenIds, params), signal),
          client.baseUrl,
          served,
        );
      } finally {
        signal?.removeEventListener('abort', onAbort);
      }
    },
    // SGLang's radix cache keeps earlier turns by prefix; there is nothing per trajectory to free.
    async release() {},
    async load(): Promise<EngineLoad> {
      if (capacity === undefined) capacity = await readSglangCapacity(client);
      return readSglangLoad(client, capacity);
    },
    async updateWeights(update: WeightUpdate) {
      const next = update.version ?? version + 1;
      await updateSglangWeights(client, update, next);
      version = next;
    },
    async flushCache() {
      await client.getText('/flush_cache');
    },
    abort,
    close: () => client.close(),
  };
}
