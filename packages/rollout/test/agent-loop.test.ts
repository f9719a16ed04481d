import { type ToolOutcome, TrajectorySchema } from '@agentrl/protocol';
import { describe, expect, it } from 'vitest';
import { type AgentLoopContext, runTrajectory } from '../src/agent-loop.js';
import { createChatFormat } from '../src/chat-format.js';
import { AgentLoopConfigSchema } from '../src/config.js';
import { createToolRegistry, type Tool } from '../src/tools.js';
import { createScriptedEngine } from './helpers/scripted-engine.js';
import { createTestTokenizer } from './helpers/test-tokenizer.js';

const tokenizer = createTestTokenizer();
const echoTool: Tool = {
  name: 'python',
  description: 'echo',
  parameters: { type: 'object' },
  async handler(args): Promise<ToolOutcome> {
    return {
      status: 'ok',
      stdout: `ran ${String(args.code)}\n`,
      stderr: '',
      exitCode: 0,
      signal: null,
      wallMs: 1,
      cpuMs: 1,
    };
  },
};

function context(config: Record<string, unknown> = {}): AgentLoopContext {
  return {
    tokenizer,
    chatFormat: createChatFormat(),
    tools: createToolRegistry([echoTool]),
    config: AgentLoopConfigSchema.parse({ sampling: { maxNewTokens: 200 }, ...config }),
  };
}

function job(id = 't0') {
  const promptText = createChatFormat().renderPrompt([{ role: 'user', content: 'ab?' }]);
  return { id, promptId: 'p0', promptIds: tokenizer.encode(promptText), promptText };
}

const call = (code: string) =>
  `Compute.<tool_call>{"name":"python","arguments":{"code":"${code}"}}</tool_call>`;

describe('runTrajectory on a scripted engine', () => {
  it('keeps sampled tokens exactly, masks prompt and tool responses, and records the call', async () => {
    const replies = [call('1+1'), 'The answer is ab.<|im_end|>'];
    // The engine samples "a","b" as two tokens; re-encoding the text would merge them into one.
    const engine = createScriptedEngine(tokenizer, (_, turn) => replies[turn]!, { separateAb: true });
    const j = job();
    const t = await runTrajectory(context(), engine, j);

    expect(TrajectorySchema.parse(t)).toBeTruthy();
    expect(t.finishReason).toBe('stop');
    expect(t.turns.map((x) => x.role)).toEqual(['user', 'assistant', 'user', 'assistant']);
    const [, a1, tool, a2] = t.turns;
    // Sampled spans are exactly the engine's tokens with its logprobs and mask 1.
    for (const span of [a1!, a2!]) {
      for (let i = span.tokenStart; i < span.tokenEnd; i++) expect(t.lossMask[i]).toBe(1);
      expect(t.logprobs[span.tokenStart]).toBeCloseTo(-0.01);
    }
    const sampledA2 = t.tokenIds.slice(a2!.tokenStart, a2!.tokenEnd);
    expect(sampledA2).toEqual([...tokenizer.encode('The answer is a'), ...tokenizer.encode('b.<|im_end|>')]);
    expect(sampledA2).not.toEqual(tokenizer.encode(a2!.text)); // the drift a re-encode would cause
    // Prompt and tool response: mask 0, logprob 0.
    for (let i = 0; i < t.promptLength; i++) expect([t.lossMask[i], t.logprobs[i]]).toEqual([0, 0]);
    for (let i = tool!.tokenStart; i < tool!.tokenEnd; i++)
      expect([t.lossMask[i], t.logprobs[i]]).toEqual([0, 0]);
    expect(tool!.text).toBe(
      '<|im_end|>\n<|im_start|>user\n<tool_response>\nran 1+1\n</tool_response><|im_end|>\n<|im_start|>assistant\n',
    );
    expect(t.toolCalls).toHaveLength(1);
    expect(t.toolCalls[0]!.call).toEqual({ name: 'python', arguments: { code: '1+1' } });
    // Each turn's request extended the previous sequence (checked by the engine) and the cache was released.
    expect(engine.requests[1]!.tokenIds).toEqual(t.tokenIds.slice(0, a2!.tokenStart));
    expect(engine.released).toEqual(['t0']);
  });

  it('feeds a bad tool-call JSON back as a tool error instead of throwing', async () => {
    const replies = ['<tool_call>{"name": python}</tool_call>', 'Sorry.<|im_end|>'];
    const engine = createScriptedEngine(tokenizer, (_, turn) => replies[turn]!);
    const t = await runTrajectory(context(), engine, job());
    expect(t.finishReason).toBe('stop');
    expect(t.toolCalls[0]!.call).toBeNull();
    expect(t.toolCalls[0]!.parseFailure!.kind).toBe('invalid_json');
    expect(t.toolCalls[0]!.outcome.status).toBe('parse_error');
    expect(t.turns[2]!.text).toContain('Error: the tool call is not valid JSON');
  });

  it('stops after maxTurns assistant turns', async () => {
    const engine = createScriptedEngine(tokenizer, () => call('x'));
    const t = await runTrajectory(context({ maxTurns: 3 }), engine, job());
    expect(t.finishReason).toBe('max_turns');
    expect(t.turns.filter((x) => x.role === 'assistant')).toHaveLength(3);
    expect(t.toolCalls).toHaveLength(2);
  });

  it('respects the total token budget', async () => {
    const engine = createScriptedEngine(tokenizer, () => call('y'.repeat(30)));
    const t = await runTrajectory(context({ maxResponseTokens: 150 }), engine, job());
    expect(t.finishReason).toBe('token_budget');
    expect(t.tokenIds.length - t.promptLength).toBeLessThanOrEqual(150);
  });

  it('truncates long tool output in the middle', async () => {
    const replies = [call('z'.repeat(500)), 'done<|im_end|>'];
    const engine = createScriptedEngine(tokenizer, (_, turn) => replies[turn]!);
    const t = await runTrajectory(
      context({ toolResponseMaxChars: 100, sampling: { maxNewTokens: 1000 } }),
      engine,
      job(),
    );
    expect(t.turns[2]!.text).toMatch(/characters truncated/);
    expect(t.turns[2]!.text.length).toBeLessThan(250);
  });

  it('ends with length when one turn hits maxNewTokens', async () => {
    const engine = createScriptedEngine(tokenizer, () => 'x'.repeat(50));
    const t = await runTrajectory(context({ sampling: { maxNewTokens: 10 } }), engine, job());
    expect(t.finishReason).toBe('length');
    expect(t.tokenIds.length - t.promptLength).toBe(10);
  });

  it('marks an engine that never answers as timeout and releases its cache', async () => {
    const engine = createScriptedEngine(tokenizer, () => '');
    engine.generate = () => new Promise(() => {});
    const t = await runTrajectory(context({ requestTimeoutMs: 50 }), engine, job('slow'));
    expect(t.finishReason).toBe('timeout');
    expect(engine.released).toEqual(['slow']);
  });

  it('records a tool that never returns as a timeout and goes on', async () => {
    const replies = [call('x'), 'ok<|im_end|>'];
    const engine = createScriptedEngine(tokenizer, (_, turn) => replies[turn]!);
    const ctx = context({ toolTimeoutMs: 50 });
    ctx.tools = createToolRegistry([{ ...echoTool, handler: () => new Promise(() => {}) }]);
    const t = await runTrajectory(ctx, engine, job());
    expect(t.toolCalls[0]!.outcome.status).toBe('timeout');
    expect(t.finishReason).toBe('stop');
  });
});
