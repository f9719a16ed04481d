import { randomUUID } from 'node:crypto';
import { RolloutError, RolloutErrorCode } from '@agentrl/rollout';
import type { FastifyInstance } from 'fastify';
import type { ServerContext } from '../context.js';
import { EngineServerError } from '../errors.js';
import {
  type SglangGenerateRequest,
  SglangGenerateRequestSchema,
  type SglangSampling,
} from '../request-schemas.js';
import { type GenerationSpec, generationSpec, refuseNonNeutral } from '../sampling.js';
import type { Generation } from '../served-engine.js';
import { sglangFinish, stopCause } from '../stop.js';
import { logprobStart, sglangLogprobMeta } from './sglang-logprobs.js';
import { sendEvents } from './sse.js';

/** One prompt of a (possibly batched) `/generate` request with its own sampling params and rid. */
interface Item {
  ids: number[];
  sampling: SglangSampling;
  rid: string;
  returnLogprob: boolean;
  logprobStartLen: number;
  topLogprobsNum: number;
}

function items(ctx: ServerContext, body: SglangGenerateRequest): { items: Item[]; batched: boolean } {
  let prompts: number[][];
  let batched: boolean;
  if (body.input_ids !== undefined) {
    batched = body.input_ids.length > 0 && Array.isArray(body.input_ids[0]);
    prompts = batched ? (body.input_ids as number[][]) : [body.input_ids as number[]];
  } else {
    batched = Array.isArray(body.text);
    prompts = (batched ? (body.text as string[]) : [body.text as string]).map((t) => ctx.tokenizer.encode(t));
  }
  const pick = <T>(value: T | T[] | undefined, i: number, what: string): T | undefined => {
    if (!Array.isArray(value)) return value;
    if (value.length !== prompts.length)
      throw new EngineServerError(
        'INVALID_REQUEST',
        `${what} is a list of ${value.length}, the batch has ${prompts.length} prompts`,
      );
    return value[i];
  };
  const list = prompts.map((ids, i) => ({
    ids,
    sampling: pick(body.sampling_params, i, 'sampling_params') ?? {},
    rid: pick(body.rid, i, 'rid') ?? randomUUID().replaceAll('-', ''),
    returnLogprob: pick(body.return_logprob, i, 'return_logprob') ?? false,
    logprobStartLen: pick(body.logprob_start_len, i, 'logprob_start_len') ?? -1,
    topLogprobsNum: pick(body.top_logprobs_num, i, 'top_logprobs_num') ?? 0,
  }));
  // Parallel sampling (SGLang `io_struct.py` GenerateReqInput.normalize: `parallel_sample_num` =
  // sampling_params.n; `tokenizer_manager.py` _handle_batch_request): each prompt runs n times,
  // prompt-major, each copy under a fresh rid, and the answer is a list even for one prompt.
  const n = list[0]?.sampling.n ?? 1;
  if (list.some((it) => (it.sampling.n ?? 1) !== n))
    throw new EngineServerError(
      'INVALID_REQUEST',
      'The parallel_sample_num should be the same for all samples in sample params (sampling_params.n differs between prompts)',
    );
  if (n === 1) return { batched, items: list };
  return {
    batched: true,
    items: list.flatMap((it) =>
      Array.from({ length: n }, (_, j) => ({ ...it, rid: j === 0 ? it.rid : `${it.rid}-${j}` })),
    ),
  };
}

/** SGLang's sampling params mapped onto the engine's (`max_new_tokens` 128 by default, as SGLang). */
function sglangSpec(ctx: ServerContext, sp: SglangSampling): GenerationSpec {
  refuseNonNeutral(sp);
  return generationSpec(
    {
      temperature: sp.temperature,
      topP: sp.top_p,
      topK: sp.top_k,
      maxNewTokens: sp.max_new_tokens ?? 128,
      stop: sp.stop,
      stopTokenIds: sp.stop_token_ids,
      ignoreEos: sp.ignore_eos,
      seed: sp.sampling_seed,
      presencePenalty: sp.presence_penalty,
      frequencyPenalty: sp.frequency_penalty,
    },
    ctx.eosIds,
  );
}

/** `meta_info` of one answer: the rid, prompt size and weight version, then what the answer adds. */
function meta(ctx: ServerContext, item: Item, extra: Record<string, unknown>) {
  return { id: item.rid, prompt_tokens: item.ids.length, weight_version: ctx.served.weightVersion, ...extra };
}

/** Answers one prompt of a `/generate` request: generated, stopped and trimmed as SGLang does. */
async function generateOne(ctx: ServerContext, item: Item, withText: boolean) {
  const sp = item.sampling;
  const spec = sglangSpec(ctx, sp);
  const k = item.returnLogprob ? item.topLogprobsNum : 0;
  if (item.returnLogprob) logprobStart(item.ids.length, item.logprobStartLen); // refused before sampling
  let gen: Generation = { tokenIds: [], logprobs: [], finishReason: 'length' };
  try {
    // max_new_tokens 0: prefill only (how SGLang clients score a prompt), nothing sampled
    if (sp.max_new_tokens === 0) ctx.served.checkPrompt(item.ids, 0);
    else gen = await ctx.served.generate(item.rid, item.ids, spec, k);
  } catch (err) {
    if (err instanceof RolloutError && err.code === RolloutErrorCode.ABORTED)
      return {
        text: '',
        output_ids: [],
        meta_info: meta(ctx, item, {
          finish_reason: { type: 'abort', message: 'Abort in waiting queue' },
          completion_tokens: 0,
        }),
      };
    throw err;
  }
  const skip = sp.skip_special_tokens ?? true;
  const text = ctx.codec.decode(gen.tokenIds, skip);
  const finish = sglangFinish(
    stopCause(gen.tokenIds, gen.finishReason, text, spec),
    text,
    ctx.codec.decode(gen.tokenIds.slice(0, -1), skip),
    sp.no_stop_trim ?? false,
    gen.tokenIds.length,
  );
  const logprobs = item.returnLogprob
    ? sglangLogprobMeta(ctx, { ids: item.ids, gen, start: item.logprobStartLen, k, withText })
    : {};
  return {
    text: finish.text,
    output_ids: gen.tokenIds,
    meta_info: meta(ctx, item, {
      finish_reason: finish.finish_reason,
      completion_tokens: gen.tokenIds.length,
      cached_tokens: 0,
      ...logprobs,
    }),
  };
}

/**
 * SGLang's native `POST /generate` (`python/sglang/srt/entrypoints/http_server.py`,
 * `GenerateReqInput`): `text` or `input_ids`, one or a batch (lists of prompts or of token lists,
 * answered with a list), `sampling_params`, `return_logprob` with `meta_info.output_token_logprobs`
 * and `input_token_logprobs` as `[logprob, token_id, text|null]` (sglang-logprobs.ts),
 * `top_logprobs_num`, `logprob_start_len` (each also per prompt), `max_new_tokens: 0` to score a prompt,
 * `finish_reason` `{type: "stop", matched}` / `{type: "length", length}` / `{type: "abort"}`;
 * `sampling_params.n` > 1 answers a list of n outputs per prompt (a seeded request repeats its
 * seed in every copy, as SGLang's copies share their sampling params);
 * `stream` as server-sent events (one final, cumulative chunk per prompt, then `[DONE]`).
 */
export async function generateRoutes(app: FastifyInstance, ctx: ServerContext): Promise<void> {
  // SGLang registers /generate for both POST and PUT.
  app.route({
    method: ['POST', 'PUT'],
    url: '/generate',
    handler: async (req, reply) => {
      const body = SglangGenerateRequestSchema.parse(req.body);
      const { items: list, batched } = items(ctx, body);
      const withText = body.return_text_in_logprobs ?? false;
      const out = await Promise.all(list.map((item) => generateOne(ctx, item, withText)));
      if (!body.stream) return batched ? out : out[0];
      return sendEvents(
        reply,
        out.map((o, index) => (batched ? { ...o, index } : o)),
      );
    },
  });
}
