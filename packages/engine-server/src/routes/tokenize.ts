import { renderChat } from '@agentrl/engine';
import type { FastifyInstance } from 'fastify';
import { checkModel, type ServerContext } from '../context.js';
import { DetokenizeRequestSchema, TokenizeRequestSchema } from '../request-schemas.js';
import { templateMessages } from './chat.js';

/**
 * `POST /tokenize` and `POST /detokenize` in the shapes vLLM (`vllm/entrypoints/openai/protocol.py`
 * TokenizeRequest → `{count, max_model_len, tokens, token_strs}`, Detokenize → `{prompt}`) and
 * SGLang (`{tokens, count, max_model_len}`, `{text}`) answer; one reply carries both spellings.
 * `add_special_tokens` adds nothing: the checkpoint tokenizers have no BOS to add (the chat
 * template writes every special token).
 */
export async function tokenizeRoutes(app: FastifyInstance, ctx: ServerContext): Promise<void> {
  app.post('/tokenize', async (req) => {
    const body = TokenizeRequestSchema.parse(req.body);
    checkModel(ctx, body.model);
    const encode = (t: string) => ctx.tokenizer.encode(t);
    let tokens: number[] | number[][];
    if (body.messages) {
      tokens = encode(
        renderChat(ctx.tokenizer, templateMessages(body.messages), {
          addGenerationPrompt: body.add_generation_prompt ?? true,
        }),
      );
    } else if (Array.isArray(body.prompt)) {
      tokens = body.prompt.map(encode);
    } else {
      tokens = encode(body.prompt as string);
    }
    const count = Array.isArray(tokens[0]) ? (tokens as number[][]).map((t) => t.length) : tokens.length;
    return { count, max_model_len: ctx.served.maxModelLen, tokens, token_strs: null };
  });
  app.post('/detokenize', async (req) => {
    const body = DetokenizeRequestSchema.parse(req.body);
    checkModel(ctx, body.model);
    const text = Array.isArray(body.tokens[0])
      ? (body.tokens as number[][]).map((t) => ctx.tokenizer.decode(t))
      : ctx.tokenizer.decode(body.tokens as number[]);
    return { prompt: text, text };
  });
}
