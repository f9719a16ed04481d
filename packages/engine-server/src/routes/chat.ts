import { randomUUID } from 'node:crypto';
import { renderChat, type TemplateMessage } from '@agentrl/engine';
import type { FastifyInstance } from 'fastify';
import { checkModel, now, type ServerContext } from '../context.js';
import { EngineServerError } from '../errors.js';
import { parseHermesToolCalls } from '../hermes.js';
import { type VllmChatRequest, VllmChatRequestSchema } from '../request-schemas.js';
import { refuseNonNeutral, vllmGenerationSpec } from '../sampling.js';
import type { Generation } from '../served-engine.js';
import { stopCause, vllmFinish } from '../stop.js';
import { forcedTools, normalizeTools, toolCallConstraint } from '../tools.js';
import { streamChat } from './chat-stream.js';

/**
 * OpenAI messages as vLLM hands them to the chat template (`vllm/entrypoints/chat_utils.py`):
 * text parts joined, assistant tool-call `arguments` parsed from their JSON string into an object.
 */
export function templateMessages(messages: VllmChatRequest['messages']): TemplateMessage[] {
  return messages.map((m) => {
    const content =
      typeof m.content === 'string' || m.content === null || m.content === undefined
        ? (m.content ?? null)
        : m.content.map((p) => p.text ?? '').join('\n');
    const out: TemplateMessage = { ...m, content: content ?? '' };
    if (m.tool_calls)
      out.tool_calls = m.tool_calls.map((c) => {
        let args: unknown = c.function.arguments;
        if (typeof args === 'string') {
          try {
            args = JSON.parse(args);
          } catch {
            throw new EngineServerError(
              'INVALID_REQUEST',
              `tool call ${c.function.name}: arguments is not valid JSON`,
            );
          }
        }
        return { ...c, function: { ...c.function, arguments: args } };
      });
    return out;
  });
}

/** The prompt of a chat request: the checkpoint's chat template over its messages and tools, tokenized. */
export function chatPrompt(ctx: ServerContext, body: VllmChatRequest) {
  const tools = body.tool_choice === 'none' ? [] : normalizeTools(body.tools ?? []);
  const text = renderChat(ctx.tokenizer, templateMessages(body.messages), {
    addGenerationPrompt: body.add_generation_prompt ?? !body.continue_final_message,
    ...(tools.length > 0 ? { tools } : {}),
    ...(body.chat_template_kwargs ? { extra: body.chat_template_kwargs } : {}),
  });
  const ids = ctx.tokenizer.encode(text);
  const room = ctx.served.maxModelLen - ids.length;
  if (room <= 0)
    throw new EngineServerError(
      'INVALID_REQUEST',
      `the prompt has ${ids.length} tokens; this model's maximum context length is ${ctx.served.maxModelLen}`,
    );
  const maxTokens = Math.min(body.max_completion_tokens ?? body.max_tokens ?? room, room);
  const forced = forcedTools(body);
  const constraint = forced.length > 0 ? toolCallConstraint(ctx, forced) : undefined;
  return { ids, tools, maxTokens, constraint };
}

/** One token of the chat logprobs shape: its text, logprob, bytes and top alternatives. */
export function chatLogprobEntry(ctx: ServerContext, t: number, lp: number, top: Array<[number, number]>) {
  const entry = (v: number, l: number) => ({
    token: ctx.codec.piece(v),
    logprob: l,
    bytes: [...Buffer.from(ctx.codec.piece(v))],
  });
  return { ...entry(t, lp), top_logprobs: top.map(([v, l]) => entry(v, l)) };
}

/** The chat shape of a generation's logprobs: each token with its logprob, bytes and top alternatives. */
function chatLogprobs(ctx: ServerContext, gen: Generation) {
  return {
    content: gen.tokenIds.map((t, i) => chatLogprobEntry(ctx, t, gen.logprobs[i]!, gen.top?.[i]?.top ?? [])),
  };
}

/** One choice: generated, stopped as vLLM stops, and parsed for Hermes tool calls when tools were given. */
async function chatChoice(
  ctx: ServerContext,
  body: VllmChatRequest,
  prompt: ReturnType<typeof chatPrompt>,
  id: string,
  index: number,
) {
  const spec = vllmGenerationSpec(body, prompt.maxTokens, index, ctx.eosIds);
  const k = body.logprobs ? (body.top_logprobs ?? 0) : 0;
  const gen = await ctx.served.generate(`${id}-${index}`, prompt.ids, spec, k, undefined, prompt.constraint);
  const raw = ctx.codec.decode(gen.tokenIds, body.skip_special_tokens ?? true);
  const finish = vllmFinish(
    stopCause(gen.tokenIds, gen.finishReason, raw, spec),
    raw,
    body.include_stop_str_in_output ?? false,
  );
  const parsed =
    prompt.tools.length > 0 ? parseHermesToolCalls(finish.text) : { content: finish.text, toolCalls: [] };
  return {
    index,
    // Current vLLM names the reasoning field `reasoning` and keeps `reasoning_content` as its
    // deprecated alias (vllm-project/vllm#27755); `tool_calls` is left out when there are none.
    message: {
      role: 'assistant',
      content: parsed.content,
      ...(parsed.toolCalls.length > 0 ? { tool_calls: parsed.toolCalls } : {}),
      reasoning: null,
      reasoning_content: null,
    },
    logprobs: body.logprobs ? chatLogprobs(ctx, gen) : null,
    finish_reason: parsed.toolCalls.length > 0 ? 'tool_calls' : finish.finish_reason,
    stop_reason: finish.stop_reason,
    ...(body.return_token_ids ? { token_ids: gen.tokenIds } : {}),
    completionTokens: gen.tokenIds.length,
  };
}

async function chatCompletion(ctx: ServerContext, body: VllmChatRequest) {
  const prompt = chatPrompt(ctx, body);
  const id = `chatcmpl-${randomUUID().replaceAll('-', '')}`;
  const choices = await Promise.all(
    Array.from({ length: body.n ?? 1 }, (_, index) => chatChoice(ctx, body, prompt, id, index)),
  );
  const completion = choices.reduce((a, c) => a + c.completionTokens, 0);
  const { ids } = prompt;
  return {
    id,
    object: 'chat.completion',
    created: now(),
    model: ctx.modelName,
    choices: choices.map(({ completionTokens: _, ...c }) => c),
    usage: {
      prompt_tokens: ids.length,
      completion_tokens: completion,
      total_tokens: ids.length + completion,
    },
    ...(body.return_token_ids ? { prompt_token_ids: ids } : {}),
  };
}

/**
 * `POST /v1/chat/completions` as `vllm/entrypoints/openai/serving_chat.py` answers it: the
 * checkpoint's own chat template (with `tools`, `add_generation_prompt`, `chat_template_kwargs`
 * such as Qwen3's `enable_thinking`), and, when the request has tools, the Hermes tool-call parser
 * (`--enable-auto-tool-choice --tool-call-parser hermes`): `tool_calls` and finish_reason
 * "tool_calls". `logprobs` / `top_logprobs` in the chat shape.
 */
export async function chatRoutes(app: FastifyInstance, ctx: ServerContext): Promise<void> {
  app.post('/v1/chat/completions', async (req, reply) => {
    const body = VllmChatRequestSchema.parse(req.body);
    checkModel(ctx, body.model);
    refuseNonNeutral(body);
    return body.stream ? streamChat(ctx, body, reply) : chatCompletion(ctx, body);
  });
}
