import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { saveModel } from '@agentrl/engine';
import { Ajv } from 'ajv';
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { chatFormat, QUESTION, tokenizer, trainToolModel } from '../../rollout/test/helpers/tool-model.js';
import { argumentsPrefix } from '../src/json-prefix.js';
import { spawnServer } from './helpers/serve-process.js';

let dir: string;
let server: Awaited<ReturnType<typeof spawnServer>>;
let client: OpenAI;
const prompt = chatFormat.renderPrompt(QUESTION);
const PYTHON = { type: 'function' as const, function: { name: 'python', parameters: { type: 'object' } } };

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'agentrl-openai-'));
  await saveModel(trainToolModel(), join(dir, 'ckpt'));
  server = await spawnServer(['--checkpoint', join(dir, 'ckpt'), '--served-model-name', 'tiny']);
  client = new OpenAI({ baseURL: `${server.url}/v1`, apiKey: 'unused' });
}, 180_000);
afterAll(async () => {
  await server?.stop();
  await rm(dir, { recursive: true, force: true });
});

/** Requests the server is generating for now (SGLang's /get_load). */
async function running(): Promise<number> {
  const load = (await (await fetch(`${server.url}/get_load`)).json()) as Array<{ num_reqs: number }>;
  return load[0]!.num_reqs;
}

describe('streaming with the openai client against agentrl serve as its own process', () => {
  it('completions: tokens leave while the engine still generates, and join to the non-streamed text', async () => {
    // A long sampled run (ignore_eos) so the generation outlives the first chunk by many steps.
    const request = { model: 'tiny', prompt, max_tokens: 400, temperature: 1, seed: 7, ignore_eos: true };
    const whole = await client.completions.create(request);
    const stream = await client.completions.create({
      ...request,
      stream: true,
      stream_options: { include_usage: true },
    });
    let text = '';
    let runningAtFirst = -1;
    const chunks = [];
    for await (const chunk of stream) {
      chunks.push(chunk);
      const piece = chunk.choices[0]?.text ?? '';
      if (piece && runningAtFirst < 0) runningAtFirst = await running();
      text += piece;
    }
    expect(runningAtFirst).toBe(1); // the first text arrived before the generation ended
    expect(chunks.length).toBeGreaterThan(50); // token by token, not one piece
    expect(text).toBe(whole.choices[0]!.text);
    expect(chunks.at(-2)!.choices[0]!.finish_reason).toBe('length');
    const last = chunks.at(-1)!;
    expect(last.choices).toEqual([]);
    expect(last.usage).toEqual(whole.usage);
    expect(last.usage!.completion_tokens).toBe(400);
  });

  it('top-k logprobs leave with each token as it is sampled, equal to the non-streamed ones', async () => {
    const request = {
      model: 'tiny',
      prompt,
      max_tokens: 300,
      temperature: 1,
      seed: 11,
      ignore_eos: true,
      logprobs: 3,
    };
    const whole = (await client.completions.create(request)).choices[0]!.logprobs!;
    let runningAtFirst = -1;
    const tokens: string[] = [];
    const tops: Array<Record<string, number>> = [];
    for await (const chunk of await client.completions.create({ ...request, stream: true })) {
      const lp = chunk.choices[0]?.logprobs;
      if (!lp?.tokens?.length) continue;
      if (runningAtFirst < 0) runningAtFirst = await running();
      tokens.push(...lp.tokens);
      tops.push(...(lp.top_logprobs as Array<Record<string, number>>));
    }
    expect(runningAtFirst).toBe(1); // the first alternatives arrived before the generation ended
    expect(tokens).toEqual(whole.tokens);
    expect(tops).toHaveLength(300);
    for (const [i, top] of tops.entries()) {
      const expected = (whole.top_logprobs as Array<Record<string, number>>)[i]!;
      expect(Object.keys(top).sort()).toEqual(Object.keys(expected).sort());
      for (const [t, v] of Object.entries(top)) expect(v).toBeCloseTo(expected[t]!, 4);
    }
  });

  it('a stop string is held back while it could still complete: the pieces join to the cut text', async () => {
    const request = { model: 'tiny', prompt, max_tokens: 200, temperature: 0, stop: ['</tool_call>'] };
    const whole = await client.completions.create(request);
    expect(whole.choices[0]!.text).toBe('<tool_call>{"name":"python","arguments":{"code":"print(6*7)"}}');
    let text = '';
    for await (const chunk of await client.completions.create({ ...request, stream: true }))
      text += chunk.choices[0]?.text ?? '';
    expect(text).toBe(whole.choices[0]!.text);
  });

  it('chat: role first, content deltas as sampled, the same text and usage as non-streamed', async () => {
    const request = {
      model: 'tiny',
      messages: QUESTION,
      max_tokens: 300,
      temperature: 1,
      seed: 3,
      ignore_eos: true,
    } as OpenAI.ChatCompletionCreateParamsNonStreaming;
    const whole = await client.chat.completions.create(request);
    const stream = await client.chat.completions.create({
      ...request,
      stream: true,
      stream_options: { include_usage: true },
    });
    const chunks = [];
    let runningAtFirst = -1;
    for await (const chunk of stream) {
      chunks.push(chunk);
      if (chunk.choices[0]?.delta.content && runningAtFirst < 0) runningAtFirst = await running();
    }
    expect(runningAtFirst).toBe(1);
    expect(chunks[0]!.choices[0]!.delta).toEqual({ role: 'assistant', content: '' });
    const text = chunks.map((c) => c.choices[0]?.delta.content ?? '').join('');
    expect(text).toBe(whole.choices[0]!.message.content);
    expect(chunks.at(-1)!.choices).toEqual([]);
    expect(chunks.at(-1)!.usage).toEqual(whole.usage);
    expect(whole.choices[0]!.message).not.toHaveProperty('tool_calls');
    expect(whole.choices[0]!.message).toMatchObject({ reasoning: null, reasoning_content: null });
  });

  it('chat with tools streams the call as vLLM does: the name first, then argument pieces', async () => {
    const request = {
      model: 'tiny',
      messages: QUESTION,
      temperature: 0,
      max_tokens: 80,
      tools: [PYTHON],
    } as OpenAI.ChatCompletionCreateParamsNonStreaming;
    const whole = await client.chat.completions.create(request);
    const call = whole.choices[0]!.message.tool_calls![0]! as {
      function: { name: string; arguments: string };
    };
    expect(call.function).toEqual({ name: 'python', arguments: '{"code": "print(6*7)"}' });
    const streamed = await streamedCall({ ...request, stream: true });
    expect(streamed.first).toEqual({
      index: 0,
      id: expect.stringMatching(/^chatcmpl-tool-[0-9a-f]{32}$/),
      type: 'function',
      function: { name: 'python', arguments: '' },
    });
    expect(streamed.argumentDeltas).toBeGreaterThan(5); // the arguments arrive in pieces
    expect(streamed.function).toEqual(call.function);
    expect(streamed.finish).toBe('tool_calls');
    // The openai client's own accumulator reads the same call.
    const final = await client.chat.completions.stream({ ...request, stream: true }).finalChatCompletion();
    expect(final.choices[0]!.finish_reason).toBe('tool_calls');
    // vLLM's first delta is `{role, content: ""}`: the accumulated content is "" where the whole reply's is null.
    expect(whole.choices[0]!.message.content).toBeNull();
    expect(final.choices[0]!.message.content).toBe('');
    expect((final.choices[0]!.message.tool_calls![0]! as { function: unknown }).function).toEqual(
      call.function,
    );
  });
});

/**
 * A streamed chat turn's one tool call as a client accumulates it, with the first delta of the
 * call, how many deltas carried argument text, and whether the name came before the last of them.
 */
async function streamedCall(request: OpenAI.ChatCompletionCreateParamsStreaming) {
  let first: unknown;
  let name = '';
  let args = '';
  let argumentDeltas = 0;
  let finish: string | null = null;
  for await (const chunk of await client.chat.completions.create(request)) {
    const choice = chunk.choices[0];
    for (const d of choice?.delta.tool_calls ?? []) {
      first ??= d;
      name += d.function?.name ?? '';
      if (d.function?.arguments) {
        expect(name).not.toBe(''); // the name leaves before any argument text
        argumentDeltas += 1;
        args += d.function.arguments;
      }
    }
    finish = choice?.finish_reason ?? finish;
  }
  return { first, function: { name, arguments: args }, argumentDeltas, finish };
}

describe('a client that goes away mid-stream', () => {
  /** vLLM's counter of sampled tokens, read from the server's /metrics. */
  const generated = async () =>
    Number(
      /^vllm:generation_tokens_total\{[^}]*\} (\d+)/m.exec(
        await (await fetch(`${server.url}/metrics`)).text(),
      )![1],
    );

  it('stops its decode: the engine takes no more steps for it, and the next request is served at once', async () => {
    const before = await generated();
    const controller = new AbortController();
    const request = { model: 'tiny', prompt, max_tokens: 450, temperature: 0, ignore_eos: true };
    const stream = await client.completions.create(
      { ...request, stream: true },
      { signal: controller.signal },
    );
    let chunks = 0;
    try {
      for await (const _ of stream) if (++chunks === 3) controller.abort();
    } catch {
      // the client's own abort: how the openai client ends a stream it stopped (or not)
    }
    expect(chunks).toBe(3);
    const deadline = Date.now() + 5_000;
    while ((await running()) > 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 2));
    expect(await running()).toBe(0);
    const spent = (await generated()) - before;
    // 450 tokens were asked for; the decode stopped within a few steps of the disconnect.
    expect(spent).toBeGreaterThanOrEqual(3);
    expect(spent).toBeLessThan(100);
    const next = await client.completions.create({ ...request, max_tokens: 4 });
    expect(next.usage!.completion_tokens).toBe(4);
    expect((await generated()) - before).toBe(spent + 4);
  });
});

describe('tool_choice forces a call by constrained decoding', () => {
  const SEARCH = { type: 'function' as const, function: { name: 'search', parameters: { type: 'object' } } };
  const frame = (name: string) => `<tool_call>\n{"name": "${name}", "arguments": `;
  const forced = async (tool_choice: OpenAI.ChatCompletionToolChoiceOption) => {
    const chat = await client.chat.completions.create({
      model: 'tiny',
      messages: QUESTION,
      temperature: 0,
      max_tokens: 120,
      tools: [PYTHON, SEARCH],
      tool_choice,
      ...({ return_token_ids: true, skip_special_tokens: false } as object),
    });
    const ids = (chat.choices[0] as unknown as { token_ids: number[] }).token_ids;
    return { chat, text: tokenizer.decode(ids) };
  };

  it('a named function the model would not pick opens the turn, in the Hermes frame', async () => {
    const free = await forced('auto');
    expect(free.text.startsWith('<tool_call>{"name":"python"')).toBe(true); // what it was taught
    const { chat, text } = await forced({ type: 'function', function: { name: 'search' } });
    expect(text.startsWith(frame('search'))).toBe(true);
    // The tiny model never closes its arguments in 120 tokens; what it wrote is held to a JSON object's start.
    // The arguments are held to a JSON object, the frame is closed, and the turn ends there (EOS).
    const args = argumentsPrefix('search', SEARCH.function.parameters)();
    const rest = [...text.slice(frame('search').length)];
    let i = 0;
    for (; i < rest.length && !args.done; i++) expect(args.feed(rest[i]!)).toBe(true);
    expect(args.done).toBe(true);
    expect(rest.slice(i).join('')).toBe('}\n</tool_call><|im_end|>');
    for (const call of chat.choices[0]!.message.tool_calls ?? [])
      expect((call as { function: { name: string } }).function.name).toBe('search');
  });

  it("the arguments are held to the tool's parameters schema: a required integer and an enum, at any seed and temperature", async () => {
    // The tiny model only ever learnt {"code": "print(6*7)"}: left to itself (a JSON object and
    // nothing more, as before the schema mask) it writes that, which this schema refuses.
    const RUN = {
      type: 'function' as const,
      function: {
        name: 'run',
        parameters: {
          type: 'object',
          properties: { n: { type: 'integer' }, mode: { type: 'string', enum: ['fast', 'exact'] } },
          required: ['n', 'mode'],
          additionalProperties: false,
        },
      },
    };
    const validate = new Ajv({ strict: false }).compile(RUN.function.parameters);
    const settings = [
      { temperature: 0 },
      ...[1, 2, 3, 4, 5].map((seed) => ({ temperature: 1, seed })),
      ...[6, 7].map((seed) => ({ temperature: 1.5, seed })),
    ];
    for (const setting of settings) {
      const request = {
        model: 'tiny',
        messages: QUESTION,
        max_tokens: 300,
        tools: [PYTHON, RUN],
        tool_choice: { type: 'function', function: { name: 'run' } },
        ...setting,
      } as OpenAI.ChatCompletionCreateParamsNonStreaming;
      const chat = await client.chat.completions.create(request);
      const choice = chat.choices[0]!;
      const call = choice.message.tool_calls?.[0] as
        | { function: { name: string; arguments: string } }
        | undefined;
      expect(choice.finish_reason, JSON.stringify({ setting, message: choice.message })).toBe('tool_calls');
      expect(call!.function.name).toBe('run');
      const args = JSON.parse(call!.function.arguments);
      expect(validate(args), JSON.stringify({ setting, args, errors: validate.errors })).toBe(true);
      // Streamed with the same seed: the same call, its name first, its arguments in pieces.
      const streamed = await streamedCall({ ...request, stream: true });
      expect(streamed.function).toEqual(call!.function);
      expect(streamed.argumentDeltas).toBeGreaterThan(5);
      expect(streamed.finish).toBe('tool_calls');
    }
  });

  it('"required" opens a call to one of the tools; an unknown name or no tools is a 400', async () => {
    const { text } = await forced('required');
    expect([frame('python'), frame('search')].some((f) => text.startsWith(f))).toBe(true);
    await expect(forced({ type: 'function', function: { name: 'nope' } })).rejects.toThrow(
      /names the function "nope", which is not among the request's tools/,
    );
  });
});

describe('completions with echo and logprobs', () => {
  it("covers the prompt tokens too: the first null, offsets from 0, vLLM's layout", async () => {
    const ids = tokenizer.encode(prompt);
    const c = await client.completions.create({
      model: 'tiny',
      prompt,
      max_tokens: 4,
      temperature: 0,
      echo: true,
      logprobs: 2,
      ...({ skip_special_tokens: false } as object),
    });
    const lp = c.choices[0]!.logprobs!;
    expect(c.choices[0]!.text.startsWith(prompt)).toBe(true);
    expect(lp.tokens).toHaveLength(ids.length + 4);
    expect(lp.token_logprobs![0]).toBeNull();
    expect(lp.top_logprobs![0]).toBeNull();
    expect(lp.text_offset![0]).toBe(0);
    expect(lp.text_offset![ids.length]).toBe(prompt.length);
    for (let i = 1; i < ids.length + 4; i++) {
      expect(lp.token_logprobs![i]!).toBeLessThanOrEqual(0);
      expect(lp.text_offset![i]).toBe(lp.text_offset![i - 1]! + lp.tokens![i - 1]!.length);
    }
    // The prompt's own logprobs are prompt_logprobs' (the untempered model).
    const scored = await client.completions.create({
      model: 'tiny',
      prompt,
      max_tokens: 0,
      ...({ prompt_logprobs: 0 } as object),
    });
    const entries = (
      scored.choices[0] as unknown as { prompt_logprobs: Array<Record<string, { logprob: number }> | null> }
    ).prompt_logprobs;
    expect(lp.token_logprobs![1]).toBeCloseTo(entries[1]![String(ids[1])]!.logprob, 5);
  });
});
