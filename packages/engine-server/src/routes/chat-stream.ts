import { randomUUID } from 'node:crypto';
import type { FastifyReply } from 'fastify';
import { now, type ServerContext } from '../context.js';
import { parseHermesToolCalls } from '../hermes.js';
import { createHermesStream, type HermesDelta } from '../hermes-stream.js';
import type { VllmChatRequest } from '../request-schemas.js';
import { vllmGenerationSpec } from '../sampling.js';
import { stopCause, vllmFinish } from '../stop.js';
import { createTextStream } from '../text-stream.js';
import { chatLogprobEntry, chatPrompt } from './chat.js';
import { openEvents } from './sse.js';
import { streamError, streamUsage } from './stream-common.js';

type Prompt = ReturnType<typeof chatPrompt>;

/** A chunk's delta: content and tool-call pieces, each key only when it carries something. */
function deltaOf(d: HermesDelta): Record<string, unknown> {
  return {
    ...(d.content ? { content: d.content } : {}),
    ...(d.toolCalls.length > 0 ? { tool_calls: d.toolCalls } : {}),
  };
}

/**
 * One streamed choice, after vLLM's `chat_completion_stream_generator` (`serving_chat.py`): a first
 * delta `{role: "assistant", content: ""}`, then a delta per sampled token as the engine samples it
 * (with its logprob under `logprobs`), then a last chunk with what is left and the finish reason.
 * With tools, the Hermes stream (hermes-stream.ts) turns the text into content before the first
 * `<tool_call>` and tool-call pieces as vLLM's streaming Hermes parser sends them: the name first
 * (`{index, id, type: "function", function: {name, arguments: ""}}`), then `function.arguments`
 * pieces as their tokens arrive; finish_reason `tool_calls`. Top-k alternatives (`top_logprobs` >
 * 0) come from the logits each token was drawn from, so they leave with it.
 */
async function streamChoice(
  ctx: ServerContext,
  body: VllmChatRequest,
  prompt: Prompt,
  send: (choice: Record<string, unknown>) => void,
  rid: string,
  index: number,
): Promise<number> {
  const spec = vllmGenerationSpec(body, prompt.maxTokens, index, ctx.eosIds);
  const skipSpecial = body.skip_special_tokens ?? true;
  const includeStop = body.include_stop_str_in_output ?? false;
  const tools = prompt.tools.length > 0;
  const text = createTextStream(ctx.codec, {
    skipSpecial,
    stopStrings: spec.stopStrings,
    includeStopStr: includeStop,
  });
  const hermes = tools ? createHermesStream() : null;
  const split = (safe: string): HermesDelta =>
    hermes ? hermes.push(safe) : { content: safe, toolCalls: [] };
  send({ index, delta: { role: 'assistant', content: '' }, logprobs: null, finish_reason: null });
  const onToken = (token: number, logprob: number, top: Array<[number, number]> = []) => {
    const delta = deltaOf(split(text.push(token)));
    if (Object.keys(delta).length === 0 && !body.logprobs) return;
    send({
      index,
      delta,
      logprobs: body.logprobs ? { content: [chatLogprobEntry(ctx, token, logprob, top)] } : null,
      finish_reason: null,
    });
  };
  const k = body.logprobs ? (body.top_logprobs ?? 0) : 0;
  const gen = await ctx.served.generate(rid, prompt.ids, spec, k, onToken, prompt.constraint);
  const raw = ctx.codec.decode(gen.tokenIds, skipSpecial);
  const finish = vllmFinish(stopCause(gen.tokenIds, gen.finishReason, raw, spec), raw, includeStop);
  const parsed = tools ? parseHermesToolCalls(finish.text) : { content: finish.text, toolCalls: [] };
  const rest = split(text.finish(finish.text));
  const last = hermes ? hermes.end(parsed, finish.text) : { content: '', toolCalls: [] };
  send({
    index,
    delta: deltaOf({
      content: rest.content + last.content,
      toolCalls: [...rest.toolCalls, ...last.toolCalls],
    }),
    logprobs: null,
    finish_reason: parsed.toolCalls.length > 0 ? 'tool_calls' : finish.finish_reason,
    stop_reason: finish.stop_reason,
  });
  return gen.tokenIds.length;
}

/**
 * `POST /v1/chat/completions` with `stream: true`: the `n` choices stream at once, chunks
 * interleaved by `index`; `stream_options.include_usage` ends the stream with a chunk holding
 * `choices: []` and the usage, then `[DONE]`. A client that goes away cancels its requests: a waiting one leaves the queue, a running one takes no further decode step.
 */
export async function streamChat(
  ctx: ServerContext,
  body: VllmChatRequest,
  reply: FastifyReply,
): Promise<FastifyReply> {
  const prompt = chatPrompt(ctx, body);
  ctx.served.checkPrompt(prompt.ids, prompt.maxTokens);
  const id = `chatcmpl-${randomUUID().replaceAll('-', '')}`;
  const events = openEvents(reply);
  const base = { id, object: 'chat.completion.chunk', created: now(), model: ctx.modelName };
  const rids = Array.from({ length: body.n ?? 1 }, (_, i) => `${id}-${i}`);
  events.onClose(() => {
    for (const rid of rids) ctx.served.abort(rid);
  });
  const send = (choice: Record<string, unknown>) => events.send({ ...base, choices: [choice] });
  try {
    const counts = await Promise.all(rids.map((rid, i) => streamChoice(ctx, body, prompt, send, rid, i)));
    if (body.stream_options?.include_usage) events.send(streamUsage(base, prompt.ids.length, counts));
  } catch (err) {
    events.send(streamError(err));
  }
  events.end();
  return reply;
}
