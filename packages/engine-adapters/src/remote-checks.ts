import { RolloutError, RolloutErrorCode, type RolloutTokenizer } from '@agentrl/rollout';
import type { JsonClient } from './http/json-client.js';

/** `/v1/models` (OpenAI shape; vLLM and SGLang both serve it). */
interface ModelList {
  data?: Array<{ id?: string }>;
}

/**
 * Waits for the server to answer `/health` (vLLM and SGLang both serve it), so that a wrong URL
 * fails at start with one clear error instead of turning every trajectory into `engine_error`.
 */
export async function probeEngine(client: JsonClient, kind: string, timeoutMs = 10_000): Promise<void> {
  try {
    await client.getText('/health', AbortSignal.timeout(timeoutMs));
  } catch (err) {
    const why = err instanceof Error ? err.message : String(err);
    throw new RolloutError(
      RolloutErrorCode.ENGINE_UNREACHABLE,
      `rollout: the ${kind} engine at ${client.baseUrl} is not reachable (${why}); start it there (or \`agentrl serve\`) or fix the engine URL`,
      { cause: err },
    );
  }
}

/**
 * The served model name: `given` when the server lists it, else the only model it serves. A name
 * the server does not know fails here (vLLM answers 404 to every request for it).
 */
export async function resolveServedModel(client: JsonClient, given?: string): Promise<string> {
  const list = await client.get<ModelList>('/v1/models');
  const ids = (list.data ?? []).map((m) => m.id).filter((x): x is string => typeof x === 'string');
  if (given !== undefined) {
    if (ids.length > 0 && !ids.includes(given))
      throw new RolloutError(
        RolloutErrorCode.INVALID_CONFIG,
        `rollout: ${client.baseUrl} does not serve model "${given}"; it serves ${ids.map((i) => `"${i}"`).join(', ')} (its --served-model-name); pass one of those as the engine model`,
      );
    return given;
  }
  if (ids.length === 1) return ids[0]!;
  throw new RolloutError(
    RolloutErrorCode.INVALID_CONFIG,
    ids.length === 0
      ? `rollout: ${client.baseUrl}/v1/models lists no model; pass the served model name explicitly`
      : `rollout: ${client.baseUrl} serves ${ids.length} models (${ids.join(', ')}); pass the one to use as the engine model`,
  );
}

/** Text whose ids depend on every part of a tokenizer: BPE merges, bytes, digits, specials. */
export const TOKENIZER_PROBE =
  'Hello, world! 12345 ünïcödé  spaced\tout\n<|im_start|>user\n<tool_call>\n{"name": "python", "arguments": {}}\n</tool_call><|im_end|>';

/**
 * Checks that the server tokenizes like the local tokenizer: the server's `/tokenize` (vLLM
 * `vllm/entrypoints/openai/protocol.py` TokenizeCompletionRequest → `{tokens, count}`; SGLang
 * `python/sglang/srt/entrypoints/openai/protocol.py` TokenizeRequest → `{tokens, count}`) on a probe
 * text, against `tokenizer.encode`. Servers without `/tokenize` answer 404; then `fallback` (a
 * one-token generation whose id the local tokenizer must decode to the server's text) decides.
 */
export async function checkTokenizerAgreement(
  client: JsonClient,
  tokenizer: RolloutTokenizer,
  model: string,
  fallback: () => Promise<{ id: number; text: string } | null>,
): Promise<'tokenize' | 'generate'> {
  const local = tokenizer.encode(TOKENIZER_PROBE);
  let remote: number[] | undefined;
  try {
    const res = await client.post<{ tokens?: unknown }>('/tokenize', {
      model,
      prompt: TOKENIZER_PROBE,
      add_special_tokens: false,
    });
    if (Array.isArray(res.tokens) && res.tokens.every((x) => Number.isInteger(x)))
      remote = res.tokens as number[];
  } catch (err) {
    if (!(err instanceof RolloutError && err.code === RolloutErrorCode.ENGINE_HTTP_ERROR)) throw err;
  }
  if (remote) {
    const at = firstDifference(local, remote);
    if (at >= 0)
      throw new RolloutError(
        RolloutErrorCode.INVALID_CONFIG,
        `rollout: ${client.baseUrl} tokenizes differently from the local tokenizer (first difference at token ${at}: server ${remote[at] ?? 'none'}, local ${local[at] ?? 'none'}); serve the same checkpoint directory (its tokenizer.json) that the trainer loads`,
      );
    return 'tokenize';
  }
  const sample = await fallback();
  if (sample && tokenizer.decode([sample.id]) !== sample.text)
    throw new RolloutError(
      RolloutErrorCode.INVALID_CONFIG,
      `rollout: ${client.baseUrl} generated token ${sample.id} as ${JSON.stringify(sample.text)}, the local tokenizer decodes it as ${JSON.stringify(tokenizer.decode([sample.id]))}; serve the same checkpoint directory (its tokenizer.json) that the trainer loads`,
    );
  return 'generate';
}

function firstDifference(a: readonly number[], b: readonly number[]): number {
  const n = Math.max(a.length, b.length);
  for (let i = 0; i < n; i++) if (a[i] !== b[i]) return i;
  return -1;
}

/** What `connect()` found out about a remote engine. */
export interface RemoteEngineInfo {
  /** The served model name every request sends. */
  model: string;
  /** How the tokenizers were compared: the server's `/tokenize`, a one-token generation, or not at all. */
  tokenizerCheck: 'tokenize' | 'generate' | 'skipped';
}
