/** What ended a generation, after the fact. */
export type StopCause =
  | { kind: 'eos'; tokenId: number }
  | { kind: 'token'; tokenId: number }
  | { kind: 'string'; text: string; index: number }
  | { kind: 'length' };

/** The earliest of `stops` in `text` (the first listed on a tie), or null. */
export function firstStopString(
  text: string,
  stops: readonly string[],
): { text: string; index: number } | null {
  let best: { text: string; index: number } | null = null;
  for (const s of stops) {
    const i = text.indexOf(s);
    if (i >= 0 && (best === null || i < best.index)) best = { text: s, index: i };
  }
  return best;
}

/**
 * Why the engine stopped: the last id is a client stop id or an EOS id, else the earliest stop
 * string in `text` (the text the client will see), else the length limit.
 */
export function stopCause(
  tokenIds: readonly number[],
  finishReason: 'stop' | 'length',
  text: string,
  spec: { stopTokenIds: readonly number[]; eosIds: readonly number[]; stopStrings: readonly string[] },
): StopCause {
  const last = tokenIds.at(-1);
  if (last !== undefined && spec.stopTokenIds.includes(last)) return { kind: 'token', tokenId: last };
  if (last !== undefined && spec.eosIds.includes(last)) return { kind: 'eos', tokenId: last };
  const best = firstStopString(text, spec.stopStrings);
  if (best) return { kind: 'string', ...best };
  void finishReason;
  return { kind: 'length' };
}

/**
 * vLLM's view (`vllm/v1/engine/detokenizer.py` stop-string check and `serving_completion.py`):
 * the text ends before a stop string unless `include_stop_str_in_output`; finish_reason "stop" with
 * `stop_reason` the string or the client's stop token id, null for EOS; "length" otherwise.
 */
export function vllmFinish(cause: StopCause, text: string, includeStopStr: boolean) {
  switch (cause.kind) {
    case 'string':
      return {
        text: text.slice(0, cause.index + (includeStopStr ? cause.text.length : 0)),
        finish_reason: 'stop' as const,
        stop_reason: cause.text as string | number | null,
      };
    case 'token':
      return { text, finish_reason: 'stop' as const, stop_reason: cause.tokenId as string | number | null };
    case 'eos':
      return { text, finish_reason: 'stop' as const, stop_reason: null };
    default:
      return { text, finish_reason: 'length' as const, stop_reason: null };
  }
}

/**
 * SGLang's view (`python/sglang/srt/managers/detokenizer_manager.py` `trim_matched_stop`,
 * `schedule_batch.py` FINISH_MATCHED_STR / FINISH_MATCHED_TOKEN / FINISH_LENGTH): `matched` is the
 * stop string or the token id; unless `no_stop_trim`, the text ends before the matched string
 * (a matched token is left out of the text).
 */
export function sglangFinish(
  cause: StopCause,
  text: string,
  textWithoutLast: string,
  noStopTrim: boolean,
  length: number,
) {
  switch (cause.kind) {
    case 'string':
      return {
        text: noStopTrim ? text : text.slice(0, cause.index),
        finish_reason: { type: 'stop', matched: cause.text } as Record<string, unknown>,
      };
    case 'token':
    case 'eos':
      return {
        text: noStopTrim ? text : textWithoutLast,
        finish_reason: { type: 'stop', matched: cause.tokenId } as Record<string, unknown>,
      };
    default:
      return { text, finish_reason: { type: 'length', length } as Record<string, unknown> };
  }
}
