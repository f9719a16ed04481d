import { EngineServerError, vllmError } from '../errors.js';

/**
 * The usage chunk vLLM ends a stream with under `stream_options.include_usage`
 * (`serving_chat.py` / `serving_completion.py`): `choices: []` and the whole request's usage.
 */
export function streamUsage(base: Record<string, unknown>, promptTokens: number, completions: number[]) {
  const completion = completions.reduce((a, c) => a + c, 0);
  return {
    ...base,
    choices: [],
    usage: {
      prompt_tokens: promptTokens,
      completion_tokens: completion,
      total_tokens: promptTokens + completion,
    },
  };
}

/**
 * An error after the stream has started: vLLM's `create_streaming_error_response` sends the error
 * body as one more event (then `[DONE]`), since the 200 status has already left.
 */
export function streamError(err: unknown) {
  return vllmError(err instanceof EngineServerError ? err.status : 500, (err as Error).message);
}
