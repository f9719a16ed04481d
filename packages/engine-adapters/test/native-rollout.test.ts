import { createGenerator, packSequences } from '@agentrl/engine';
import { TrajectorySchema } from '@agentrl/protocol';
import { createPythonTool, createRollout, createToolRegistry } from '@agentrl/rollout';
import { createKvAwareScheduler, createStaticScheduler } from '@agentrl/scheduler';
import { beforeAll, describe, expect, it } from 'vitest';
import { useExecutor } from '../../rollout/test/helpers/executor.js';
import {
  ANSWER,
  chatFormat,
  QUESTION,
  TOOL_CALL,
  tokenizer,
  trainToolModel,
} from '../../rollout/test/helpers/tool-model.js';
import { createNativeAdapter } from '../src/native-adapter.js';
import { createVllmAdapter } from '../src/vllm-adapter.js';

const executor = useExecutor();

let model: ReturnType<typeof trainToolModel>;
beforeAll(() => {
  model = trainToolModel();
}, 120_000);

const tools = () => createToolRegistry([createPythonTool(executor(), { name: 'python' })]);
const engines = (n: number) =>
  Array.from({ length: n }, (_, i) => ({
    engine: createNativeAdapter({
      generator: createGenerator(model, { decode: (ids) => tokenizer.decode(ids) }),
      name: `native-${i}`,
    }),
    capacityTokens: 4096,
  }));

/** log softmax(logits[row] / T)[token]: what the trainer recomputes. */
function logprobAt(logits: Float32Array, V: number, row: number, token: number, T = 1): number {
  let max = Number.NEGATIVE_INFINITY;
  for (let j = 0; j < V; j++) max = Math.max(max, logits[row * V + j]! / T);
  let sum = 0;
  for (let j = 0; j < V; j++) sum += Math.exp(logits[row * V + j]! / T - max);
  return logits[row * V + token]! / T - max - Math.log(sum);
}

describe('rollouts on the native engine with a real Python tool', () => {
  it('runs the tool turn and keeps tokens, masks and logprobs exact (re-scored by a full forward)', async () => {
    const rollout = createRollout({
      scheduler: createKvAwareScheduler(engines(2)),
      tokenizer,
      tools: tools(),
      chatFormat,
      config: {
        maxTurns: 5,
        maxResponseTokens: 400,
        sampling: { temperature: 1, maxNewTokens: 120, seed: 11 },
      },
    });
    const [group] = await rollout.run([{ promptId: 'q', messages: QUESTION }], 4);
    const V = model.shape.vocab;
    let rescored = 0;
    for (const t of group!.trajectories) {
      TrajectorySchema.parse(t);
      const logits = model.forwardLogits(packSequences([t.tokenIds]));
      for (let i = 0; i < t.tokenIds.length; i++) {
        if (i < t.promptLength) expect(t.lossMask[i]).toBe(0);
        if (t.lossMask[i] === 1) {
          expect(t.logprobs[i]).toBeCloseTo(logprobAt(logits, V, i - 1, t.tokenIds[i]!), 3);
          rescored++;
        } else expect(t.logprobs[i]).toBe(0);
      }
      // Tool responses are appended, never trained on.
      for (const span of t.turns.filter((s) => s.role === 'user')) {
        for (let i = span.tokenStart; i < span.tokenEnd; i++) expect(t.lossMask[i]).toBe(0);
      }
    }
    expect(rescored).toBeGreaterThan(100);
    // The trained model calls the tool and answers from its real output.
    // At temperature 1 a sample may garble the call; the taught one must run and print 42.
    const taught = group!.trajectories
      .flatMap((t) => t.toolCalls)
      .filter((c) => c.call?.arguments.code === 'print(6*7)');
    expect(taught.length).toBeGreaterThan(0);
    for (const c of taught) expect(c.outcome).toMatchObject({ status: 'ok', stdout: '42\n' });
  });

  it('greedy decoding reproduces the taught trajectory exactly', async () => {
    const rollout = createRollout({
      scheduler: createKvAwareScheduler(engines(1)),
      tokenizer,
      tools: tools(),
      chatFormat,
      config: { maxResponseTokens: 400, sampling: { temperature: 0, maxNewTokens: 120 } },
    });
    const [group] = await rollout.run([{ promptId: 'q', messages: QUESTION }], 1);
    const t = group!.trajectories[0]!;
    expect(t.finishReason).toBe('stop');
    expect(t.turns.map((s) => s.text)).toEqual([
      chatFormat.renderPrompt(QUESTION),
      TOOL_CALL,
      expect.stringContaining('<tool_response>\n42\n</tool_response>'),
      ANSWER,
    ]);
  });

  it('a dead engine ends its trajectories with engine_error while the others finish', async () => {
    // Port 9 (discard) is closed here: connection refused.
    const dead = createVllmAdapter({ baseUrl: 'http://127.0.0.1:9', model: 'tiny' });
    const rollout = createRollout({
      scheduler: createStaticScheduler([...engines(1), { engine: dead, capacityTokens: 4096 }]),
      tokenizer,
      tools: tools(),
      chatFormat,
      config: { maxResponseTokens: 400, sampling: { temperature: 0, maxNewTokens: 120 } },
    });
    const [group] = await rollout.run([{ promptId: 'q', messages: QUESTION }], 4);
    const reasons = group!.trajectories.map((t) => t.finishReason);
    expect(reasons).toEqual(['stop', 'engine_error', 'stop', 'engine_error']);
    await dead.close();
  });

  it('a rollout cancelled before it starts rejects with ABORTED and holds no reservation', async () => {
    const scheduler = createKvAwareScheduler(engines(1));
    const rollout = createRollout({
      scheduler,
      tokenizer,
      tools: tools(),
      chatFormat,
      config: { maxResponseTokens: 400 },
    });
    const controller = new AbortController();
    controller.abort();
    await expect(
      rollout.run([{ promptId: 'q', messages: QUESTION }], 2, { signal: controller.signal }),
    ).rejects.toMatchObject({
      code: 'SCHEDULER_ABORTED',
    });
    expect(scheduler.snapshot().reserved).toEqual([0]);
  });
});
