import type { SamplingParams } from '@agentrl/protocol';
import type { EngineLoad, GenerateResult, WeightUpdate } from '@agentrl/rollout';
import { RolloutError, RolloutErrorCode } from '@agentrl/rollout';
import type { JsonClient } from './http/json-client.js';
import { metricSum, parsePrometheus } from './http/prometheus.js';

/** The part of vLLM's `/v1/completions` response the adapter reads. */
export interface VllmCompletion {
  choices?: Array<{
    text?: string;
    token_ids?: number[] | null;
    logprobs?: { token_logprobs?: Array<number | null> } | null;
    finish_reason?: string | null;
  }>;
}

/**
 * One turn as a `/v1/completions` body: token ids in as `prompt`, token ids back through
 * `return_token_ids` (vLLM >= 0.10.2), the sampled tokens' logprobs from `logprobs: 0`, special
 * tokens and stop strings kept so the text the loop decodes matches what was sampled.
 */
export function vllmCompletionBody(
  tokenIds: readonly number[],
  params: SamplingParams,
): Record<string, unknown> {
  return {
    prompt: tokenIds,
    max_tokens: params.maxNewTokens,
    temperature: params.temperature,
    top_p: params.topP,
    top_k: params.topK === 0 ? -1 : params.topK,
    ...(params.seed !== undefined ? { seed: params.seed } : {}),
    ...(params.presencePenalty ? { presence_penalty: params.presencePenalty } : {}),
    ...(params.frequencyPenalty ? { frequency_penalty: params.frequencyPenalty } : {}),
    stop: params.stopStrings,
    stop_token_ids: params.stopTokenIds,
    include_stop_str_in_output: true,
    skip_special_tokens: false,
    spaces_between_special_tokens: false,
    logprobs: 0,
    return_token_ids: true,
    n: 1,
    stream: false,
  };
}

/** The turn in a `/v1/completions` reply, stamped with the policy version that was served. */
export function readVllmCompletion(res: VllmCompletion, baseUrl: string, served: number): GenerateResult {
  const choice = res.choices?.[0];
  const ids = choice?.token_ids;
  const lps = choice?.logprobs?.token_logprobs;
  if (!choice || !Array.isArray(ids) || !Array.isArray(lps) || lps.length !== ids.length) {
    throw new RolloutError(
      RolloutErrorCode.ENGINE_BAD_RESPONSE,
      `rollout: ${baseUrl}/v1/completions did not return token_ids with one logprob each; vLLM >= 0.10.2 is needed for return_token_ids`,
    );
  }
  if (choice.finish_reason === 'abort') {
    throw new RolloutError(RolloutErrorCode.ENGINE_FAILED, `rollout: ${baseUrl} aborted the request`);
  }
  return {
    tokenIds: ids,
    logprobs: lps.map((x) => x ?? 0),
    finishReason: choice.finish_reason === 'length' ? 'length' : 'stop',
    policyVersion: served,
  };
}

/** The first sampled token of a reply and its text, for the tokenizer check's fallback. */
export function readOneToken(res: VllmCompletion): { id: number; text: string } | null {
  const c = res.choices?.[0];
  const id = c?.token_ids?.[0];
  return id !== undefined && typeof c?.text === 'string' ? { id, text: c.text } : null;
}

/** The server's load from its Prometheus `/metrics`. */
export async function readVllmLoad(client: JsonClient): Promise<EngineLoad> {
  const samples = parsePrometheus(await client.getText('/metrics'));
  const info = samples.find((s) => s.name === 'vllm:cache_config_info');
  // Newer vLLM labels the capacity directly; older ones give blocks × block size.
  const direct = Number(info?.labels.kv_cache_size_tokens);
  const blocks = Number(info?.labels.num_gpu_blocks) * Number(info?.labels.block_size);
  const capacity =
    Number.isFinite(direct) && direct > 0 ? direct : Number.isFinite(blocks) && blocks > 0 ? blocks : null;
  return {
    kvCapacityTokens: capacity,
    // Older vLLM named the gauge gpu_cache_usage_perc.
    kvUsage:
      metricSum(samples, 'vllm:kv_cache_usage_perc') ?? metricSum(samples, 'vllm:gpu_cache_usage_perc'),
    running: metricSum(samples, 'vllm:num_requests_running'),
    waiting: metricSum(samples, 'vllm:num_requests_waiting'),
  };
}

/**
 * vLLM's reload path: `POST /collective_rpc {"method": "reload_weights"}` (dev-mode route,
 * `VLLM_SERVER_DEV_MODE=1`), which makes every worker re-read the launch directory, then
 * `POST /reset_prefix_cache`. Only disk updates to that directory can work.
 */
export async function reloadVllmWeights(
  client: JsonClient,
  update: WeightUpdate,
  modelDir: string | undefined,
): Promise<void> {
  if (update.kind !== 'disk') {
    throw new RolloutError(
      RolloutErrorCode.UNSUPPORTED,
      'rollout: a vLLM server takes new weights from disk; save a safetensors checkpoint and pass { kind: "disk", path }',
    );
  }
  if (modelDir !== undefined && update.path !== modelDir) {
    throw new RolloutError(
      RolloutErrorCode.UNSUPPORTED,
      `rollout: vLLM reloads from its launch directory ${modelDir}; write the checkpoint there, not to ${update.path}`,
    );
  }
  try {
    await client.post('/collective_rpc', { method: 'reload_weights' });
  } catch (err) {
    if (
      err instanceof RolloutError &&
      err.code === RolloutErrorCode.ENGINE_HTTP_ERROR &&
      /answered 404/.test(err.message)
    )
      throw new RolloutError(
        RolloutErrorCode.UNSUPPORTED,
        `rollout: ${client.baseUrl} has no /collective_rpc; start vLLM with VLLM_SERVER_DEV_MODE=1 so that weights can be reloaded`,
        { cause: err },
      );
    throw err;
  }
  await client.postText('/reset_prefix_cache', {});
}
