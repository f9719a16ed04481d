import type { FastifyReply } from 'fastify';
import { now, type ServerContext } from '../context.js';
import type { VllmCompletionRequest } from '../request-schemas.js';
import { vllmGenerationSpec } from '../sampling.js';
import type { Generation } from '../served-engine.js';
import { stopCause, vllmFinish } from '../stop.js';
import { createTextStream } from '../text-stream.js';
import { openEvents } from './sse.js';
import { streamError, streamUsage } from './stream-common.js';

type LogprobPart = {
  tokens: string[];
  token_logprobs: (number | null)[];
  top_logprobs: (Record<string, number> | null)[];
  text_offset: number[];
};

/** Per-token logprobs of the completions shape, one token at a time (vLLM `_create_completion_logprobs`). */
function tokenLogprobs(ctx: ServerContext, body: VllmCompletionRequest) {
  const name = (t: number) => (body.return_tokens_as_token_ids ? ctx.codec.asTokenId(t) : ctx.codec.piece(t));
  return (token: number, logprob: number, top: Array<[number, number]>, offset: number): LogprobPart => {
    const entry: Record<string, number> = { [name(token)]: logprob };
    for (const [v, lp] of top) entry[name(v)] ??= lp;
    return { tokens: [name(token)], token_logprobs: [logprob], top_logprobs: [entry], text_offset: [offset] };
  };
}

/**
 * One choice of a streamed completion, after vLLM's `completion_stream_generator`
 * (`serving_completion.py`): the echoed prompt first (with its logprobs under `echo` + `logprobs`),
 * then a chunk per sampled token as the engine samples it (its text delta from the incremental
 * detokeniser, and its logprob), then a last chunk with the rest of the text and the finish reason.
 * Top-k alternatives (`logprobs` > 0) come from the logits each token was drawn from, so they
 * leave with it.
 */
async function streamChoice(
  ctx: ServerContext,
  body: VllmCompletionRequest,
  send: (choice: Record<string, unknown>) => void,
  run: { rid: string; ids: number[]; index: number; sample: number; echo: EchoPart | null },
): Promise<number> {
  const maxTokens = body.max_tokens ?? 16;
  const spec = vllmGenerationSpec(body, maxTokens, run.sample, ctx.eosIds);
  const skipSpecial = body.skip_special_tokens ?? true;
  const includeStop = body.include_stop_str_in_output ?? false;
  const text = createTextStream(ctx.codec, {
    skipSpecial,
    stopStrings: spec.stopStrings,
    includeStopStr: includeStop,
  });
  const wantLogprobs = body.logprobs !== undefined && body.logprobs !== null;
  const part = tokenLogprobs(ctx, body);
  const chunk = (
    t: string,
    logprobs: LogprobPart | null,
    finish: string | null,
    stop: string | number | null,
  ) => send({ index: run.index, text: t, logprobs, finish_reason: finish, stop_reason: stop });
  if (run.echo) chunk(run.echo.text, wantLogprobs ? run.echo.logprobs : null, null, null);
  let offset = run.echo?.text.length ?? 0;
  const onToken = (token: number, logprob: number, top: Array<[number, number]> = []) => {
    const delta = text.push(token);
    if (wantLogprobs) chunk(delta, part(token, logprob, top, offset), null, null);
    else if (delta) chunk(delta, null, null, null);
    offset += ctx.codec.piece(token).length;
  };
  const k = body.logprobs ?? 0;
  const gen: Generation =
    maxTokens === 0
      ? { tokenIds: [], logprobs: [], finishReason: 'length' }
      : await ctx.served.generate(run.rid, run.ids, spec, k, onToken);
  const raw = ctx.codec.decode(gen.tokenIds, skipSpecial);
  const finish = vllmFinish(stopCause(gen.tokenIds, gen.finishReason, raw, spec), raw, includeStop);
  chunk(text.finish(finish.text), null, finish.finish_reason, finish.stop_reason);
  return gen.tokenIds.length;
}

/** The echoed prompt of a choice: its text and, for `logprobs`, its tokens' logprobs. */
export interface EchoPart {
  text: string;
  logprobs: LogprobPart | null;
}

/**
 * `POST /v1/completions` with `stream: true`: every choice of every prompt streams at once (they
 * share the engine's batches), chunks interleaved by `index`; with
 * `stream_options.include_usage` a last chunk with `choices: []` and the request's usage
 * (vLLM `serving_completion.py`), then `[DONE]`. A client that goes away cancels its requests: a waiting one leaves the queue, a running one takes no further decode step.
 */
export async function streamCompletions(
  ctx: ServerContext,
  body: VllmCompletionRequest,
  reply: FastifyReply,
  id: string,
  runs: Array<{ ids: number[]; index: number; sample: number; echo: EchoPart | null }>,
): Promise<FastifyReply> {
  const events = openEvents(reply);
  const base = { id, object: 'text_completion', created: now(), model: ctx.modelName };
  const rids = runs.map((r) => `${id}-${r.index}`);
  events.onClose(() => {
    for (const rid of rids) ctx.served.abort(rid);
  });
  const send = (choice: Record<string, unknown>) => events.send({ ...base, choices: [choice] });
  try {
    const counts = await Promise.all(
      runs.map((r, i) => streamChoice(ctx, body, send, { ...r, rid: rids[i]! })),
    );
    const n = body.n ?? 1;
    const prompt = runs.reduce((a, r) => a + r.ids.length, 0) / n;
    if (body.stream_options?.include_usage) events.send(streamUsage(base, prompt, counts));
  } catch (err) {
    events.send(streamError(err));
  }
  events.end();
  return reply;
}
