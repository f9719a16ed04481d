import { randomUUID } from 'node:crypto';
import type { FastifyInstance } from 'fastify';
import { checkModel, now, type ServerContext } from '../context.js';
import { EngineServerError } from '../errors.js';
import { type VllmCompletionRequest, VllmCompletionRequestSchema } from '../request-schemas.js';
import { type GenerationSpec, refuseNonNeutral, vllmGenerationSpec } from '../sampling.js';
import type { Generation, PositionLogprobs } from '../served-engine.js';
import { stopCause, vllmFinish } from '../stop.js';
import { sendEvents } from './sse.js';

/** Token-id prompts of a completion request: a string, a list of strings, ids, or lists of ids. */
export function promptIdLists(
  ctx: ServerContext,
  prompt: string | string[] | number[] | number[][],
): number[][] {
  if (typeof prompt === 'string') return [ctx.tokenizer.encode(prompt)];
  if (prompt.length === 0) throw new EngineServerError('INVALID_REQUEST', 'prompt must not be empty');
  if (prompt.every((x) => typeof x === 'number')) return [prompt as number[]];
  if (prompt.every((x) => typeof x === 'string'))
    return (prompt as string[]).map((p) => ctx.tokenizer.encode(p));
  return prompt as number[][];
}

/** vLLM's `prompt_logprobs` entry: `{id: {logprob, rank, decoded_token}}` with the actual token first. */
export function promptLogprobEntry(ctx: ServerContext, p: PositionLogprobs) {
  const entry: Record<string, { logprob: number; rank: number; decoded_token: string }> = {};
  const rank = p.top.findIndex(([id]) => id === p.id);
  entry[p.id] = {
    logprob: p.logprob,
    rank: rank >= 0 ? rank + 1 : p.top.length + 1,
    decoded_token: ctx.codec.piece(p.id),
  };
  p.top.forEach(([id, lp], i) => {
    entry[id] ??= { logprob: lp, rank: i + 1, decoded_token: ctx.codec.piece(id) };
  });
  return entry;
}

/** One prompt x sample of a completion request, generated. */
interface Run {
  gen: Generation;
  ids: number[];
  spec: GenerationSpec;
  prompt: (ReturnType<typeof promptLogprobEntry> | null)[] | null;
  index: number;
}

/** Generates sample `j` of prompt `p` (nothing for `max_tokens: 0`), with its prompt logprobs if asked. */
async function completionRun(
  ctx: ServerContext,
  body: VllmCompletionRequest,
  id: string,
  ids: number[],
  p: number,
  j: number,
): Promise<Run> {
  const n = body.n ?? 1;
  const maxTokens = body.max_tokens ?? 16;
  const spec = vllmGenerationSpec(body, maxTokens, j, ctx.eosIds);
  const gen: Generation =
    maxTokens === 0
      ? { tokenIds: [], logprobs: [], finishReason: 'length' }
      : await ctx.served.generate(`${id}-${p}-${j}`, ids, spec, body.logprobs ?? 0);
  const prompt =
    body.prompt_logprobs !== undefined && body.prompt_logprobs !== null
      ? [
          null,
          ...ctx.served.positionLogprobs(ids, body.prompt_logprobs).map((x) => promptLogprobEntry(ctx, x)),
        ]
      : null;
  return { gen, ids, spec, prompt, index: p * n + j };
}

/** The completions shape of a generation's logprobs (`logprobs=k`): tokens, their logprobs, top k, offsets. */
function completionLogprobs(ctx: ServerContext, body: VllmCompletionRequest, gen: Generation, start: number) {
  const name = (t: number) => (body.return_tokens_as_token_ids ? ctx.codec.asTokenId(t) : ctx.codec.piece(t));
  return {
    tokens: gen.tokenIds.map(name),
    token_logprobs: gen.logprobs,
    top_logprobs: gen.tokenIds.map((t, i) => {
      const top: Record<string, number> = { [name(t)]: gen.logprobs[i]! };
      for (const [v, lp] of gen.top?.[i]?.top ?? []) top[name(v)] ??= lp;
      return top;
    }),
    text_offset: offsets(gen.tokenIds, ctx, start),
  };
}

/** One choice: the text stopped as vLLM stops it (after the echoed prompt, with `echo`). */
function completionChoice(ctx: ServerContext, body: VllmCompletionRequest, run: Run) {
  const { gen, ids, spec, prompt, index } = run;
  const skipSpecial = body.skip_special_tokens ?? true;
  const raw = ctx.codec.decode(gen.tokenIds, skipSpecial);
  const cause = stopCause(gen.tokenIds, gen.finishReason, raw, spec);
  const finish = vllmFinish(cause, raw, body.include_stop_str_in_output ?? false);
  const echo = body.echo ? ctx.codec.decode(ids, skipSpecial) : '';
  return {
    index,
    text: echo + finish.text,
    logprobs:
      body.logprobs === undefined || body.logprobs === null
        ? null
        : completionLogprobs(ctx, body, gen, echo.length),
    finish_reason: finish.finish_reason,
    stop_reason: finish.stop_reason,
    prompt_logprobs: prompt,
    ...(body.return_token_ids ? { prompt_token_ids: ids, token_ids: gen.tokenIds } : {}),
  };
}

/**
 * `POST /v1/completions`, shaped as vLLM's `vllm/entrypoints/openai/serving_completion.py` answers:
 * token-id or text prompts, `n`, `logprobs=k` (the sampled token's logprob and the top k),
 * `echo`, `prompt_logprobs`, `return_token_ids`, stop strings and `stop_reason`, streaming as
 * server-sent events (one chunk per choice, then [DONE]).
 */
export async function completionRoutes(app: FastifyInstance, ctx: ServerContext): Promise<void> {
  app.post('/v1/completions', async (req, reply) => {
    const body = VllmCompletionRequestSchema.parse(req.body);
    checkModel(ctx, body.model);
    refuseNonNeutral(body);
    const n = body.n ?? 1;
    const id = `cmpl-${randomUUID().replaceAll('-', '')}`;
    const done = await Promise.all(
      promptIdLists(ctx, body.prompt).flatMap((ids, p) =>
        Array.from({ length: n }, (_, j) => completionRun(ctx, body, id, ids, p, j)),
      ),
    );
    const choices = done.map((run) => completionChoice(ctx, body, run));
    const promptTokens = done.reduce((a, d) => a + d.ids.length, 0) / n;
    const completionTokens = done.reduce((a, d) => a + d.gen.tokenIds.length, 0);
    const response = {
      id,
      object: 'text_completion',
      created: now(),
      model: ctx.modelName,
      choices,
      usage: {
        prompt_tokens: promptTokens,
        completion_tokens: completionTokens,
        total_tokens: promptTokens + completionTokens,
      },
    };
    if (!body.stream) return response;
    return sendEvents(
      reply,
      choices.map((c) => ({ ...response, choices: [c], usage: null })),
    );
  });
}

function offsets(ids: readonly number[], ctx: ServerContext, start: number): number[] {
  const out: number[] = [];
  let at = start;
  for (const id of ids) {
    out.push(at);
    at += ctx.codec.piece(id).length;
  }
  return out;
}
