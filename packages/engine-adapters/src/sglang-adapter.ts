import {
  type EngineAdapter,
  type EngineLoad,
  type GenerateResult,
  RolloutError,
  RolloutErrorCode,
  type WeightUpdate,
} from '@agentrl/rollout';
import { createJsonClient } from './http/json-client.js';
import { withRetry } from './http/retry.js';
import {
  checkTokenizerAgreement,
  probeEngine,
  type RemoteEngineInfo,
  resolveServedModel,
} from './remote-checks.js';
import type { RemoteAdapterOptions } from './vllm-adapter.js';

/** The part of SGLang's `/generate` response the adapter reads. */
interface SglangGenerate {
  text?: string;
  output_ids?: number[];
  meta_info?: {
    finish_reason?: { type?: string; message?: string } | null;
    /** One `[logprob, token_id, token_text | null]` per generated token. */
    output_token_logprobs?: Array<[number, number, string | null]>;
  };
}

/** `/get_load`: one entry per data-parallel rank (older servers: `{ load }`). */
type SglangLoad =
  | Array<{ num_reqs?: number; num_waiting_reqs?: number; num_tokens?: number }>
  | { load?: number };

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
      const body = {
        rid,
        input_ids: tokenIds,
        sampling_params: {
          max_new_tokens: params.maxNewTokens,
          temperature: params.temperature,
          top_p: params.topP,
          top_k: params.topK === 0 ? -1 : params.topK,
          stop: params.stopStrings,
          stop_token_ids: params.stopTokenIds,
          skip_special_tokens: false,
          no_stop_trim: true,
          ...(params.seed !== undefined ? { sampling_seed: params.seed } : {}),
        },
        return_logprob: true,
        stream: false,
      };
      // Tell the server to stop working on it; the local request is cancelled by the same signal.
      const onAbort = () => void abort(rid).catch(() => {});
      signal?.addEventListener('abort', onAbort, { once: true });
      let res: SglangGenerate;
      try {
        res = await post(body, signal);
      } finally {
        signal?.removeEventListener('abort', onAbort);
      }
      const entries = res.meta_info?.output_token_logprobs;
      if (!Array.isArray(entries)) {
        throw new RolloutError(
          RolloutErrorCode.ENGINE_BAD_RESPONSE,
          `rollout: ${client.baseUrl}/generate returned no meta_info.output_token_logprobs`,
        );
      }
      const ids = entries.map((e) => e[1]);
      if (Array.isArray(res.output_ids) && res.output_ids.join() !== ids.join()) {
        throw new RolloutError(
          RolloutErrorCode.ENGINE_BAD_RESPONSE,
          `rollout: ${client.baseUrl}/generate returned output_ids that differ from its logprob token ids`,
        );
      }
      const type = res.meta_info?.finish_reason?.type;
      if (type === 'abort') {
        throw new RolloutError(
          RolloutErrorCode.ENGINE_FAILED,
          `rollout: ${client.baseUrl} aborted the request: ${res.meta_info?.finish_reason?.message ?? ''}`,
        );
      }
      return {
        tokenIds: ids,
        logprobs: entries.map((e) => e[0]),
        finishReason: type === 'length' ? 'length' : 'stop',
        policyVersion: served,
      };
    },
    // SGLang's radix cache keeps earlier turns by prefix; there is nothing per trajectory to free.
    async release() {},
    async load(): Promise<EngineLoad> {
      if (capacity === undefined) {
        const info = await client.get<{ max_total_num_tokens?: number }>('/get_server_info');
        capacity = typeof info.max_total_num_tokens === 'number' ? info.max_total_num_tokens : null;
      }
      const load = await client.get<SglangLoad>('/get_load');
      if (!Array.isArray(load)) {
        return { kvCapacityTokens: capacity, kvUsage: null, running: load.load ?? null, waiting: null };
      }
      const sum = (k: 'num_reqs' | 'num_waiting_reqs' | 'num_tokens') =>
        load.reduce((a, r) => a + (r[k] ?? 0), 0);
      return {
        kvCapacityTokens: capacity,
        kvUsage: capacity ? sum('num_tokens') / capacity : null,
        running: sum('num_reqs'),
        waiting: sum('num_waiting_reqs'),
      };
    },
    async updateWeights(update: WeightUpdate) {
      if (update.kind !== 'disk') {
        throw new RolloutError(
          RolloutErrorCode.UNSUPPORTED,
          'rollout: an SGLang server takes new weights from disk; save a safetensors checkpoint and pass { kind: "disk", path }',
        );
      }
      const next = update.version ?? version + 1;
      let res: { success?: boolean; message?: string };
      try {
        res = await client.post<{ success?: boolean; message?: string }>('/update_weights_from_disk', {
          model_path: update.path,
          weight_version: String(next),
        });
      } catch (err) {
        // SGLang answers a failed load with 400 and { success: false, message }.
        const m = err instanceof RolloutError ? /answered 400: (.*)$/s.exec(err.message) : null;
        const body = m ? (safeJson(m[1]!) as { message?: string } | null) : null;
        if (body?.message !== undefined) res = { success: false, message: body.message };
        else throw err;
      }
      if (res.success === false) {
        throw new RolloutError(
          RolloutErrorCode.ENGINE_FAILED,
          `rollout: ${client.baseUrl} refused the weights at ${update.path}: ${res.message ?? 'no reason given'}`,
        );
      }
      version = next;
    },
    async flushCache() {
      await client.getText('/flush_cache');
    },
    abort,
    close: () => client.close(),
  };
}

function safeJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return null;
  }
}
