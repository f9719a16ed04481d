import { randomUUID } from 'node:crypto';
import type { FastifyInstance } from 'fastify';
import { checkModel, now, type ServerContext } from '../context.js';
import { EngineServerError } from '../errors.js';
import { type VllmCompletionRequest, VllmCompletionRequestSchema } from '../request-schemas.js';
import { type GenerationSpec, refuseNonNeutral, vllmGenerationSpec } from '../sampling.js';
import type { Generation, PositionLogprobs } from '../served-engine.js';
import { stopCause, vllmFinish } from '../stop.js';
import { type EchoPart, streamCompletions } from './completions-stream.js';

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

/**
 * The echoed prompt (`echo: true`). With `logprobs`, vLLM scores the prompt too
 * (`serving_completion.py` `request_output_to_completion_response`: prompt logprobs, k = `logprobs`,
 * joined before the output's, `initial_text_offset` 0): the first token's logprob and top entry
 * are null (nothing precedes it), offsets count from the start of the prompt text.
 */
export function echoPart(ctx: ServerContext, body: VllmCompletionRequest, ids: number[]): EchoPart | null {
  if (!body.echo) return null;
  const text = ctx.codec.decode(ids, body.skip_special_tokens ?? true);
  if (body.logprobs === undefined || body.logprobs === null) return { text, logprobs: null };
  const name = (t: number) => (body.return_tokens_as_token_ids ? ctx.codec.asTokenId(t) : ctx.codec.piece(t));
  const scored = ctx.served.positionLogprobs(ids, body.logprobs);
  return {
    text,
    logprobs: {
      tokens: ids.map(name),
      token_logprobs: [null, ...scored.map((p) => p.logprob)],
      top_logprobs: [
        null,
        ...scored.map((p) => {
          const top: Record<string, number> = { [name(p.id)]: p.logprob };
          for (const [v, lp] of p.top) top[name(v)] ??= lp;
          return top;
        }),
      ],
      text_offset: offsets(ids, ctx, 0),
    },
  };
}

/** One choice: the text stopped as vLLM stops it (after the echoed prompt, with `echo`). */
function completionChoice(ctx: ServerContext, body: VllmCompletionRequest, run: Run) {
  const { gen, ids, spec, prompt, index } = run;
  const skipSpecial = body.skip_special_tokens ?? true;
  const raw = ctx.codec.decode(gen.tokenIds, skipSpecial);
  const cause = stopCause(gen.tokenIds, gen.finishReason, raw, spec);
  const finish = vllmFinish(cause, raw, body.include_stop_str_in_output ?? false);
  const echo = echoPart(ctx, body, ids);
  const echoText = echo?.text ?? '';
  const generated =
    body.logprobs === undefined || body.logprobs === null
      ? null
      : completionLogprobs(ctx, body, gen, echoText.length);
  return {
    index,
    text: echoText + finish.text,
    logprobs:
      generated && echo?.logprobs
        ? {
            tokens: [...echo.logprobs.tokens, ...generated.tokens],
            token_logprobs: [...echo.logprobs.token_logprobs, ...generated.token_logprobs],
            top_logprobs: [...echo.logprobs.top_logprobs, ...generated.top_logprobs],
            text_offset: [...echo.logprobs.text_offset, ...generated.text_offset],
          }
        : generated,
    finish_reason: finish.finish_reason,
    stop_reason: finish.stop_reason,
    prompt_logprobs: prompt,
    ...(body.return_token_ids ? { prompt_token_ids: ids, token_ids: gen.tokenIds } : {}),
  };
}

/**
 * `POST /v1/completions`, shaped as vLLM's `vllm/entrypoints/openai/serving_completion.py` answers:
 * token-id or text prompts, `n`, `logprobs=k` (the sampled token's logprob and the top k),
 * `echo` (with the prompt's logprobs), `prompt_logprobs`, `return_token_ids`, stop strings and
 * `stop_reason`; `stream` sends tokens as they are sampled (completions-stream.ts).
 */
export async function completionRoutes(app: FastifyInstance, ctx: ServerContext): Promise<void> {
  app.post('/v1/completions', async (req, reply) => {
    const body = VllmCompletionRequestSchema.parse(req.body);
    checkModel(ctx, body.model);
    refuseNonNeutral(body);
    const n = body.n ?? 1;
    const id = `cmpl-${randomUUID().replaceAll('-', '')}`;
    const prompts = promptIdLists(ctx, body.prompt);
    if (body.stream) {
      // Refused before the 200 leaves: after it, an error can only be an event.
      for (const ids of prompts) ctx.served.checkPrompt(ids, body.max_tokens ?? 16);
      const runs = prompts.flatMap((ids, p) => {
        const echo = echoPart(ctx, body, ids);
        return Array.from({ length: n }, (_, j) => ({ ids, index: p * n + j, sample: j, echo }));
      });
      return streamCompletions(ctx, body, reply, id, runs);
    }
    const done = await Promise.all(
      prompts.flatMap((ids, p) =>
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
    return response;
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
