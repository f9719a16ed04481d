import {
  type EngineAdapter,
  type EngineLoad,
  type GenerateResult,
  RolloutError,
  RolloutErrorCode,
  type RolloutTokenizer,
  type WeightUpdate,
} from '@agentrl/rollout';
import { createJsonClient, type JsonClientOptions } from './http/json-client.js';
import { metricSum, parsePrometheus } from './http/prometheus.js';
import { type RetryOptions, withRetry } from './http/retry.js';
import {
  checkTokenizerAgreement,
  probeEngine,
  type RemoteEngineInfo,
  resolveServedModel,
} from './remote-checks.js';

/** What the vLLM and SGLang adapters share beyond the HTTP client. */
export interface RemoteAdapterOptions extends JsonClientOptions {
  /** The served model name (`--served-model-name`); read from `/v1/models` when unset. */
  model?: string;
  /** The local tokenizer; `connect()` checks the server tokenizes the same way. */
  tokenizer?: RolloutTokenizer;
  /** Retries of a request the server did not accept the connection for (restarts, drops). */
  retry?: RetryOptions;
  /** Policy version of the weights the server holds at start; default 0. */
  policyVersion?: number;
}

export interface VllmAdapterOptions extends RemoteAdapterOptions {
  /**
   * The directory the server loads weights from. vLLM's reload re-reads the launch path, so a
   * disk weight update must write its safetensors there.
   */
  modelDir?: string;
}

/** The part of vLLM's `/v1/completions` response the adapter reads. */
interface VllmCompletion {
  choices?: Array<{
    text?: string;
    token_ids?: number[] | null;
    logprobs?: { token_logprobs?: Array<number | null> } | null;
    finish_reason?: string | null;
  }>;
}

export type VllmAdapter = EngineAdapter & {
  /** Probe, resolve the served model name, compare tokenizers. Call once before the first request. */
  connect(): Promise<RemoteEngineInfo>;
  health(): Promise<boolean>;
  resetPrefixCache(): Promise<void>;
  /** The policy version the server holds now. */
  readonly policyVersion: number;
};

/**
 * An OpenAI-compatible vLLM server (`vllm serve`). Token ids go in as `prompt` (a list of ints) and
 * come back through `return_token_ids` (vLLM >= 0.10.2), with the sampled tokens' logprobs from
 * `logprobs: 0`; special tokens are kept so the text the loop decodes matches what was sampled.
 * Load comes from `/metrics`. Weight sync is vLLM's reload path: `POST /collective_rpc
 * {"method": "reload_weights"}` (dev-mode route, `VLLM_SERVER_DEV_MODE=1`; vLLM
 * `vllm/entrypoints/openai/api_server.py`, later `vllm/entrypoints/serve/dev/rpc/api_router.py`),
 * which makes every worker re-read the weights from the launch directory
 * (`GPUModelRunner.reload_weights`), then `POST /reset_prefix_cache`.
 */
export function createVllmAdapter(options: VllmAdapterOptions): VllmAdapter {
  const client = createJsonClient(options);
  let model: Promise<string> | undefined =
    options.model !== undefined ? Promise.resolve(options.model) : undefined;
  const servedModel = () => {
    model ??= resolveServedModel(client);
    return model;
  };
  let version = options.policyVersion ?? 0;
  const complete = async (body: Record<string, unknown>, signal?: AbortSignal) =>
    withRetry(
      `${client.baseUrl}/v1/completions`,
      async () =>
        client.post<VllmCompletion>('/v1/completions', { model: await servedModel(), ...body }, signal),
      options.retry,
      signal,
    );
  return {
    name: `vllm@${client.baseUrl}`,
    get policyVersion() {
      return version;
    },
    async connect() {
      await probeEngine(client, 'vLLM');
      model = Promise.resolve(await resolveServedModel(client, options.model));
      const name = await model;
      if (!options.tokenizer) return { model: name, tokenizerCheck: 'skipped' };
      const tokenizer = options.tokenizer;
      const tokenizerCheck = await checkTokenizerAgreement(client, tokenizer, name, async () => {
        const res = await complete({
          prompt: tokenizer.encode('Hello'),
          max_tokens: 1,
          temperature: 0,
          skip_special_tokens: false,
          return_token_ids: true,
        });
        const c = res.choices?.[0];
        const id = c?.token_ids?.[0];
        return id !== undefined && typeof c?.text === 'string' ? { id, text: c.text } : null;
      });
      return { model: name, tokenizerCheck };
    },
    async generate({ tokenIds, params, signal }): Promise<GenerateResult> {
      const served = version;
      const res = await complete(
        {
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
        },
        signal,
      );
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
        policyVersion: served,
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
      version = update.version ?? version + 1;
    },
    close: () => client.close(),
  };
}
