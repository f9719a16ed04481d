import type { EngineAdapter, EngineLoad, GenerateResult, WeightUpdate } from '../engine-adapter.js';
import { RolloutError, RolloutErrorCode } from '../errors.js';
import { createJsonClient, type JsonClientOptions } from '../http/json-client.js';
import { metricSum, parsePrometheus } from '../http/prometheus.js';

export interface VllmAdapterOptions extends JsonClientOptions {
  /** The served model name (`--served-model-name`, else the model path). */
  model: string;
  /**
   * The directory the server loads weights from. vLLM's reload re-reads the launch path, so a
   * disk weight update must write its safetensors there.
   */
  modelDir?: string;
}

/** The part of vLLM's `/v1/completions` response the adapter reads. */
interface VllmCompletion {
  choices?: Array<{
    token_ids?: number[] | null;
    logprobs?: { token_logprobs?: Array<number | null> } | null;
    finish_reason?: string | null;
  }>;
}

/**
 * An OpenAI-compatible vLLM server (`vllm serve`). Token ids go in as `prompt` (a list of ints) and
 * come back through `return_token_ids` (vLLM >= 0.10.2), with the sampled tokens' logprobs from
 * `logprobs: 0`; special tokens are kept so the text the loop decodes matches what was sampled.
 * Load comes from `/metrics`; weight sync from vLLM's dev-mode RL endpoints (`VLLM_SERVER_DEV_MODE=1`).
 */
export function createVllmAdapter(options: VllmAdapterOptions): EngineAdapter & {
  health(): Promise<boolean>;
  resetPrefixCache(): Promise<void>;
} {
  const client = createJsonClient(options);
  return {
    name: `vllm@${client.baseUrl}`,
    async generate({ tokenIds, params, signal }): Promise<GenerateResult> {
      const body = {
        model: options.model,
        prompt: tokenIds,
        max_tokens: params.maxNewTokens,
        temperature: params.temperature,
        top_p: params.topP,
        top_k: params.topK === 0 ? -1 : params.topK,
        ...(params.seed !== undefined ? { seed: params.seed } : {}),
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
      const res = await client.post<VllmCompletion>('/v1/completions', body, signal);
      const choice = res.choices?.[0];
      const ids = choice?.token_ids;
      const lps = choice?.logprobs?.token_logprobs;
      if (!choice || !Array.isArray(ids) || !Array.isArray(lps) || lps.length !== ids.length) {
        throw new RolloutError(
          RolloutErrorCode.ENGINE_BAD_RESPONSE,
          `rollout: ${client.baseUrl}/v1/completions did not return token_ids with one logprob each; vLLM >= 0.10.2 is needed for return_token_ids`,
        );
      }
      if (choice.finish_reason === 'abort') {
        throw new RolloutError(
          RolloutErrorCode.ENGINE_FAILED,
          `rollout: ${client.baseUrl} aborted the request`,
        );
      }
      return {
        tokenIds: ids,
        logprobs: lps.map((x) => x ?? 0),
        finishReason: choice.finish_reason === 'length' ? 'length' : 'stop',
      };
    },
    // vLLM keeps no per-trajectory state; its automatic prefix cache reuses earlier turns.
    async release() {},
    async load(): Promise<EngineLoad> {
      const samples = parsePrometheus(await client.getText('/metrics'));
      const info = samples.find((s) => s.name === 'vllm:cache_config_info');
      // Newer vLLM labels the capacity directly; older ones give blocks × block size.
      const direct = Number(info?.labels.kv_cache_size_tokens);
      const blocks = Number(info?.labels.num_gpu_blocks) * Number(info?.labels.block_size);
      const capacity =
        Number.isFinite(direct) && direct > 0
          ? direct
          : Number.isFinite(blocks) && blocks > 0
            ? blocks
            : null;
      return {
        kvCapacityTokens: capacity,
        // Older vLLM named the gauge gpu_cache_usage_perc.
        kvUsage:
          metricSum(samples, 'vllm:kv_cache_usage_perc') ?? metricSum(samples, 'vllm:gpu_cache_usage_perc'),
        running: metricSum(samples, 'vllm:num_requests_running'),
        waiting: metricSum(samples, 'vllm:num_requests_waiting'),
      };
    },
    async health() {
      try {
        await client.getText('/health');
        return true;
      } catch {
        return false;
      }
    },
    async resetPrefixCache() {
      await client.postText('/reset_prefix_cache', {});
    },
    async updateWeights(update: WeightUpdate) {
      if (update.kind !== 'disk') {
        throw new RolloutError(
          RolloutErrorCode.UNSUPPORTED,
          'rollout: a vLLM server takes new weights from disk; save a safetensors checkpoint and pass { kind: "disk", path }',
        );
      }
      if (options.modelDir !== undefined && update.path !== options.modelDir) {
        throw new RolloutError(
          RolloutErrorCode.UNSUPPORTED,
          `rollout: vLLM reloads from its launch directory ${options.modelDir}; write the checkpoint there, not to ${update.path}`,
        );
      }
      // Dev-mode RL endpoints: every worker re-reads the weights, then stale prefix-cache entries go.
      await client.post('/collective_rpc', { method: 'reload_weights' });
      await client.postText('/reset_prefix_cache', {});
    },
    close: () => client.close(),
  };
}
