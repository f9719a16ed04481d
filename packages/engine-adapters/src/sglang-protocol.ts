import type { SamplingParams } from '@agentrl/protocol';
import type { EngineLoad, GenerateResult, WeightUpdate } from '@agentrl/rollout';
import { RolloutError, RolloutErrorCode } from '@agentrl/rollout';
import type { JsonClient } from './http/json-client.js';

/** The part of SGLang's `/generate` response the adapter reads. */
export interface SglangGenerate {
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

/** One turn as a `/generate` body with request id `rid`: `input_ids` in, logprobs back. */
export function sglangGenerateBody(
  rid: string,
  tokenIds: readonly number[],
  params: SamplingParams,
): Record<string, unknown> {
  return {
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
      ...(params.presencePenalty ? { presence_penalty: params.presencePenalty } : {}),
      ...(params.frequencyPenalty ? { frequency_penalty: params.frequencyPenalty } : {}),
    },
    return_logprob: true,
    stream: false,
  };
}

/** The turn in a `/generate` reply (`meta_info.output_token_logprobs`), stamped with the served version. */
export function readSglangGenerate(res: SglangGenerate, baseUrl: string, served: number): GenerateResult {
  const entries = res.meta_info?.output_token_logprobs;
  if (!Array.isArray(entries)) {
    throw new RolloutError(
      RolloutErrorCode.ENGINE_BAD_RESPONSE,
      `rollout: ${baseUrl}/generate returned no meta_info.output_token_logprobs`,
    );
  }
  const ids = entries.map((e) => e[1]);
  if (Array.isArray(res.output_ids) && res.output_ids.join() !== ids.join()) {
    throw new RolloutError(
      RolloutErrorCode.ENGINE_BAD_RESPONSE,
      `rollout: ${baseUrl}/generate returned output_ids that differ from its logprob token ids`,
    );
  }
  const type = res.meta_info?.finish_reason?.type;
  if (type === 'abort') {
    throw new RolloutError(
      RolloutErrorCode.ENGINE_FAILED,
      `rollout: ${baseUrl} aborted the request: ${res.meta_info?.finish_reason?.message ?? ''}`,
    );
  }
  return {
    tokenIds: ids,
    logprobs: entries.map((e) => e[0]),
    finishReason: type === 'length' ? 'length' : 'stop',
    policyVersion: served,
  };
}

/** The server's load from `/get_load`, with the KV capacity `/get_server_info` reported. */
export async function readSglangLoad(client: JsonClient, capacity: number | null): Promise<EngineLoad> {
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
}

/** `max_total_num_tokens` of `/get_server_info`: the KV capacity, or null where the server omits it. */
export async function readSglangCapacity(client: JsonClient): Promise<number | null> {
  const info = await client.get<{ max_total_num_tokens?: number }>('/get_server_info');
  return typeof info.max_total_num_tokens === 'number' ? info.max_total_num_tokens : null;
}

/**
 * `POST /update_weights_from_disk {model_path, weight_version}` (SGLang
 * `python/sglang/srt/entrypoints/http_server.py`), which flushes the radix cache itself; `next` is
 * the version the weights become.
 */
export async function updateSglangWeights(
  client: JsonClient,
  update: WeightUpdate,
  next: number,
): Promise<void> {
  if (update.kind !== 'disk') {
    throw new RolloutError(
      RolloutErrorCode.UNSUPPORTED,
      'rollout: an SGLang server takes new weights from disk; save a safetensors checkpoint and pass { kind: "disk", path }',
    );
  }
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
}

function safeJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return null;
  }
}
