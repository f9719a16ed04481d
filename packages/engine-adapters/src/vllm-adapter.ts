import type { EngineAdapter, GenerateResult, RolloutTokenizer, WeightUpdate } from '@agentrl/rollout';
import { createJsonClient, type JsonClientOptions } from './http/json-client.js';
import { type RetryOptions, withRetry } from './http/retry.js';
import {
  checkTokenizerAgreement,
  probeEngine,
  type RemoteEngineInfo,
  resolveServedModel,
} from './remote-checks.js';
import {
  readOneToken,
  readVllmCompletion,
  readVllmLoad,
  reloadVllmWeights,
  type VllmCompletion,
  vllmCompletionBody,
} from './vllm-protocol.js';

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
      const tokenizerCheck = await checkTokenizerAgreement(client, tokenizer, name, async () =>
        readOneToken(
          await complete({
            prompt: tokenizer.encode('Hello'),
            max_tokens: 1,
            temperature: 0,
            skip_special_tokens: false,
            return_token_ids: true,
          }),
        ),
      );
      return { model: name, tokenizerCheck };
    },
    async generate({ tokenIds, params, signal }): Promise<GenerateResult> {
      const served = version;
      const res = await complete(vllmCompletionBody(tokenIds, params), signal);
      return readVllmCompletion(res, client.baseUrl, served);
    },
    // vLLM keeps no per-trajectory state; its automatic prefix cache reuses earlier turns.
    async release() {},
    load: () => readVllmLoad(client),
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
      await reloadVllmWeights(client, update, options.modelDir);
      version = update.version ?? version + 1;
    },
    close: () => client.close(),
  };
}
