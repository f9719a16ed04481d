import type { ServerContext } from '../context.js';
import { EngineServerError } from '../errors.js';
import type { Generation } from '../served-engine.js';

/** One `[logprob, token_id, text|null]` entry (text only with `return_text_in_logprobs`). */
type Entry = [number | null, number, string | null];

export interface SglangLogprobRequest {
  ids: number[];
  gen: Generation;
  /** `logprob_start_len`: -1 (default) = from the last prompt token */
  start: number;
  /** `top_logprobs_num` */
  k: number;
  withText: boolean;
}

/** The first prompt position of `input_token_logprobs`; a start past the prompt is refused as SGLang does. */
export function logprobStart(promptTokens: number, requested: number): number {
  const start = requested === -1 ? promptTokens - 1 : requested;
  if (start >= promptTokens)
    throw new EngineServerError(
      'INVALID_REQUEST',
      `logprob_start_len=${requested} is higher than the number of input tokens len(input_ids)=${promptTokens}. Please use a smaller logprob_start_len.`,
    );
  if (start < 0)
    throw new EngineServerError(
      'INVALID_REQUEST',
      `logprob_start_len=${requested}: use -1 (logprobs of the output only) or a prompt position from 0`,
    );
  return start;
}

/**
 * The `meta_info` logprob fields of one SGLang `/generate` answer, as its scheduler builds them
 * (`scheduler_output_processor_mixin.py`, `add_input_logprob_return_values`): the input entries
 * are the prompt from `logprob_start_len` on (-1 means the last prompt token), the first of them
 * always with logprob null; then one entry per generated token. `top_logprobs_num` adds the k
 * most likely tokens per position (`input_top_logprobs` starts with null, as SGLang's does).
 * A start past the prompt is refused with SGLang's message.
 */
export function sglangLogprobMeta(ctx: ServerContext, r: SglangLogprobRequest): Record<string, unknown> {
  const n = r.ids.length;
  const start = logprobStart(n, r.start);
  const piece = (id: number) => (r.withText ? ctx.codec.piece(id) : null);
  // entry i of positionLogprobs is token i+1 given tokens 0..i; no forward when only the null entry is asked
  const positions = start + 1 < n ? ctx.served.positionLogprobs(r.ids, r.k).slice(start) : [];
  const input: Entry[] = [
    [null, r.ids[start]!, piece(r.ids[start]!)],
    ...positions.map((p): Entry => [p.logprob, p.id, piece(p.id)]),
  ];
  const meta: Record<string, unknown> = {
    input_token_logprobs: input,
    output_token_logprobs: r.gen.tokenIds.map((t, i): Entry => [r.gen.logprobs[i]!, t, piece(t)]),
  };
  if (r.k > 0) {
    const top = (list: Array<[number, number]>) => list.map(([v, lp]): Entry => [lp, v, piece(v)]);
    meta.input_top_logprobs = [null, ...positions.map((p) => top(p.top))];
    meta.output_top_logprobs = (r.gen.top ?? []).map((p) => top(p.top));
  }
  return meta;
}
