// The README's library example, run for real: a model saved and loaded as an HF checkpoint, the
// native engine behind the KV-aware scheduler, the embedded sandboxed executor, the verifier, RoC and
// advantages. Keep the two in step: a change that breaks this test makes the README wrong.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createCharTokenizer, createGenerator, createModel, loadModel, saveModel } from '@agentrl/engine';
import { createNativeAdapter } from '@agentrl/engine-adapters';
import { createExecutor } from '@agentrl/executor';
import { computeGroupAdvantages, resampleOnCorrect } from '@agentrl/grpo';
import { verify } from '@agentrl/math-verify';
import { createPythonTool, createRollout, createToolRegistry } from '@agentrl/rollout';
import { createEngineScheduler } from '@agentrl/scheduler';
import { afterAll, expect, it } from 'vitest';

const dir = mkdtempSync(join(tmpdir(), 'agentrl-example-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

it('runs the README library example end to end', async () => {
  const tokenizer = createCharTokenizer();
  const init = createModel(
    {
      architectures: ['Qwen3ForCausalLM'],
      vocab_size: tokenizer.vocabSize,
      hidden_size: 32,
      intermediate_size: 64,
      num_hidden_layers: 1,
      num_attention_heads: 4,
      num_key_value_heads: 2,
      head_dim: 8,
      max_position_embeddings: 512,
      tie_word_embeddings: true,
    },
    { seed: 1 },
  );
  await saveModel(init, dir);

  // ---- the README example, from here ----
  const model = await loadModel(dir);
  const engine = createNativeAdapter({
    generator: createGenerator(model, { decode: (ids) => tokenizer.decode(ids) }),
    kvCapacityTokens: 1 << 16,
  });
  const executor = await createExecutor({ mode: 'embedded' });
  try {
    const rollout = createRollout({
      scheduler: await createEngineScheduler([engine]),
      tokenizer,
      tools: createToolRegistry([createPythonTool(executor)]),
      config: { maxTurns: 5, maxResponseTokens: 64, sampling: { temperature: 1, maxNewTokens: 32 } },
    });
    const groups = await rollout.run(
      [{ promptId: 'p1', messages: [{ role: 'user', content: 'What is 347 * 582?' }] }],
      16,
    );
    for (const t of groups[0]!.trajectories)
      t.reward = verify('201954', t.turns.at(-1)?.text ?? '').correct ? 1 : 0;
    const { groups: kept, metrics } = resampleOnCorrect(groups, { groupSize: 16, n: 8 });
    const advantages = computeGroupAdvantages(kept);
    // ---- to here ----

    expect(groups[0]!.trajectories).toHaveLength(16);
    for (const t of groups[0]!.trajectories) {
      expect(t.tokenIds).toHaveLength(t.lossMask.length);
      expect(t.lossMask.slice(0, t.promptLength).every((m) => m === 0)).toBe(true);
    }
    // A random model never answers right: every reward is 0, so RoC drops the group (equal rewards
    // carry no signal; reject_equal_reward is on by default) and there is nothing to advantage.
    expect(groups[0]!.trajectories.every((t) => t.reward === 0)).toBe(true);
    expect(metrics.groupsIn).toBe(1);
    expect(metrics.trajectoriesKept).toBe(0);
    expect(kept).toEqual([]);
    expect(advantages).toEqual([]);
  } finally {
    await executor.close();
  }
}, 120_000);
