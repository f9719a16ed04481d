import { createGenerator, createModel, type Model, packSequences } from '@agentrl/engine';
import { createNativeAdapter } from '@agentrl/engine-adapters';
import {
  AgentLoopConfigSchema,
  createPythonTool,
  createToolRegistry,
  type EngineAdapter,
  type GenerateResult,
  runTrajectory,
} from '@agentrl/rollout';
import * as ort from 'onnxruntime-node';
import { describe, expect, it } from 'vitest';
import { useExecutor } from '../../rollout/test/helpers/executor.js';
import { chatFormat, QUESTION, tokenizer, trainToolModel } from '../../rollout/test/helpers/tool-model.js';
import { type DecoderConfig, decoderShape, exportDecoderToOnnx } from '../src/export-decoder.js';
import { createOnnxAdapter } from '../src/onnx-adapter.js';

const executor = useExecutor();

const config = {
  architectures: ['Qwen3ForCausalLM'],
  vocab_size: 50,
  hidden_size: 32,
  intermediate_size: 64,
  num_hidden_layers: 2,
  num_attention_heads: 4,
  num_key_value_heads: 2,
  head_dim: 8,
  max_position_embeddings: 128,
  tie_word_embeddings: true,
  initializer_range: 0.1,
};

function exportModel(model: Model): Uint8Array {
  const byName = new Map(model.parameters().map((p) => [p.name, p.data]));
  return exportDecoderToOnnx({ config: model.config as DecoderConfig, weight: (n) => byName.get(n) });
}

/** Runs the exported decoder over `chunk` after `start` cached tokens; returns logits and the new cache. */
async function step(
  session: ort.InferenceSession,
  shape: ReturnType<typeof decoderShape>,
  chunk: number[],
  start: number,
  past?: Record<string, ort.Tensor>,
) {
  const cache = past ?? {};
  if (!past) {
    for (let l = 0; l < shape.layers; l++) {
      for (const k of ['key', 'value'])
        cache[`past_key_values.${l}.${k}`] = new ort.Tensor('float32', new Float32Array(0), [
          1,
          shape.kvHeads,
          0,
          shape.headDim,
        ]);
    }
  }
  const out = await session.run({
    input_ids: new ort.Tensor('int64', BigInt64Array.from(chunk, BigInt), [1, chunk.length]),
    attention_mask: new ort.Tensor('int64', new BigInt64Array(start + chunk.length).fill(1n), [
      1,
      start + chunk.length,
    ]),
    position_ids: new ort.Tensor(
      'int64',
      BigInt64Array.from(chunk, (_, i) => BigInt(start + i)),
      [1, chunk.length],
    ),
    ...cache,
  });
  const next: Record<string, ort.Tensor> = {};
  for (let l = 0; l < shape.layers; l++) {
    next[`past_key_values.${l}.key`] = out[`present.${l}.key`]!;
    next[`past_key_values.${l}.value`] = out[`present.${l}.value`]!;
  }
  return { logits: out.logits!.data as Float32Array, past: next };
}

const maxAbsDiff = (a: Float32Array, b: Float32Array) =>
  a.reduce((m, x, i) => Math.max(m, Math.abs(x - b[i]!)), 0);

/** WebGPU needs a GPU adapter (here: Mesa lavapipe through Vulkan); skip visibly without one. */
const webgpuReason = await Promise.race([
  ort.InferenceSession.create(exportModel(createModel(config, { seed: 1 })), {
    executionProviders: ['webgpu'],
  })
    .then(async (s) => {
      await s.release();
      return null;
    })
    .catch((e: Error) => `(skipped: no WebGPU adapter: ${e.message})`),
  new Promise<string>((r) =>
    setTimeout(() => r('(skipped: WebGPU did not start within 20 s)'), 20_000).unref(),
  ),
]);

describe('ONNX export of the native engine model', () => {
  const model = createModel(config, { seed: 3 });
  const shape = decoderShape(model.config as DecoderConfig);
  const ids = [1, 7, 3, 9, 4, 22, 5, 11, 30, 2];
  const native = model.forwardLogits(packSequences([ids]));

  it.skipIf(webgpuReason !== null)(
    `gives the native logits on the WebGPU backend ${webgpuReason ?? ''}`,
    async () => {
      const session = await ort.InferenceSession.create(exportModel(model), {
        executionProviders: ['webgpu'],
      });
      expect(maxAbsDiff((await step(session, shape, ids, 0)).logits, native)).toBeLessThan(1e-3);
      await session.release();
    },
  );

  it('gives the native logits on the CPU backend, in one pass and step by step with past key values', async () => {
    const session = await ort.InferenceSession.create(exportModel(model));
    expect(maxAbsDiff((await step(session, shape, ids, 0)).logits, native)).toBeLessThan(1e-5);
    const first = await step(session, shape, ids.slice(0, 6), 0);
    let past = first.past;
    for (let t = 6; t < ids.length; t++) {
      const s = await step(session, shape, [ids[t]!], t, past);
      past = s.past;
      expect(maxAbsDiff(s.logits, native.subarray(t * shape.vocab, (t + 1) * shape.vocab))).toBeLessThan(
        1e-5,
      );
    }
    await session.release();
  });
});

describe('the ONNX Runtime adapter', () => {
  it('samples, turn by turn with its KV cache, the trajectory the native engine samples', async () => {
    const model = trainToolModel();
    const session = await ort.InferenceSession.create(exportModel(model));
    const decode = (ids: readonly number[]) => tokenizer.decode(ids);
    const onnxEngine = createOnnxAdapter({
      ort,
      session,
      shape: decoderShape(model.config as DecoderConfig),
      decode,
    });
    const nativeEngine = createNativeAdapter({ generator: createGenerator(model, { decode }) });
    const ctx = {
      tokenizer,
      chatFormat,
      tools: createToolRegistry([createPythonTool(executor(), { name: 'python' })]),
      config: AgentLoopConfigSchema.parse({
        maxResponseTokens: 400,
        sampling: { temperature: 1, maxNewTokens: 120 },
      }),
    };
    const promptText = chatFormat.renderPrompt(QUESTION);
    const job = { id: 'o', promptId: 'q', promptIds: tokenizer.encode(promptText), promptText };
    for (const seed of [5, 6]) {
      const a = await runTrajectory(ctx, onnxEngine, { ...job, seed });
      const b = await runTrajectory(ctx, nativeEngine, { ...job, seed });
      expect(a.tokenIds).toEqual(b.tokenIds);
      for (let i = 0; i < a.logprobs.length; i++) expect(a.logprobs[i]).toBeCloseTo(b.logprobs[i]!, 4);
    }
    await onnxEngine.close();
  });

  it('unseeded requests: the same tokens whatever the arrival order, and the native engine draws the same', async () => {
    const model = createModel(config, { seed: 4 });
    const shape = decoderShape(model.config as DecoderConfig);
    const prompts = [
      [1, 7, 3],
      [9, 4, 22, 5],
      [11, 30],
      [2, 8, 8, 13, 6],
    ];
    const params = { temperature: 1, topK: 0, topP: 1, maxNewTokens: 8, stopTokenIds: [], stopStrings: [] };
    const run = async (engine: EngineAdapter, order: number[]) => {
      const out: GenerateResult[] = [];
      for (const i of order)
        out[i] = await engine.generate({ cacheId: `t${i}`, tokenIds: prompts[i]!, params });
      await engine.close();
      return out.map((r) => r.tokenIds);
    };
    const onnx = async () =>
      createOnnxAdapter({
        ort,
        session: await ort.InferenceSession.create(exportModel(model)),
        shape,
        seed: 3,
      });
    const forward = await run(await onnx(), [0, 1, 2, 3]);
    const backward = await run(await onnx(), [3, 2, 1, 0]);
    expect(backward).toEqual(forward);
    // two requests of one order never share a stream (keyed by cacheId, not by a call counter)
    expect(new Set(forward.map((t) => JSON.stringify(t))).size).toBe(prompts.length);
    const native = await run(
      createNativeAdapter({ generator: createGenerator(model, { seed: 3 }) }),
      [2, 0, 3, 1],
    );
    expect(native).toEqual(forward);
  });
});
