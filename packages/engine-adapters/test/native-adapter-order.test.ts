import { createGenerator, createModel } from '@agentrl/engine';
import type { SamplingParams } from '@agentrl/protocol';
import type { EngineAdapter, GenerateResult } from '@agentrl/rollout';
import { describe, expect, it } from 'vitest';
import { createNativeAdapter } from '../src/native-adapter.js';

// Down projection K = 300 > 256: a batch-dependent GEMM path would show up in these logprobs.
const model = createModel(
  {
    architectures: ['Qwen3ForCausalLM'],
    vocab_size: 60,
    hidden_size: 32,
    intermediate_size: 300,
    num_hidden_layers: 2,
    num_attention_heads: 4,
    num_key_value_heads: 2,
    head_dim: 8,
    max_position_embeddings: 256,
    tie_word_embeddings: true,
    initializer_range: 0.1,
  },
  { seed: 5 },
);
const V = 60;

interface Job {
  id: string;
  prompt: number[];
  /** ms the "tool" takes between the two turns */
  toolMs: number;
  seed: number | undefined;
}

const params = (job: Job, turn: number, maxNewTokens: number): SamplingParams => ({
  temperature: 1,
  topK: 0,
  topP: 1,
  maxNewTokens,
  stopTokenIds: [],
  stopStrings: [],
  ...(job.seed !== undefined ? { seed: job.seed + turn * 7919 } : {}),
});

/** Two turns per trajectory with a tool response in between, like the agent loop. */
async function trajectory(engine: EngineAdapter, job: Job, startMs: number): Promise<GenerateResult[]> {
  await new Promise((r) => setTimeout(r, startMs));
  const first = await engine.generate({ cacheId: job.id, tokenIds: job.prompt, params: params(job, 0, 6) });
  await new Promise((r) => setTimeout(r, job.toolMs));
  const toolResponse = [1, 2, (job.prompt.length * 3) % V];
  const second = await engine.generate({
    cacheId: job.id,
    tokenIds: [...job.prompt, ...first.tokenIds, ...toolResponse],
    params: params(job, 1, 5 + (job.prompt.length % 4)),
  });
  await engine.release(job.id);
  return [first, second];
}

async function runAll(jobs: Job[], order: number[], starts: number[], toolMs: number[]) {
  const engine = createNativeAdapter({ generator: createGenerator(model), maxBatch: 5 });
  const out = new Map<string, GenerateResult[]>();
  await Promise.all(
    order.map(async (i, at) => {
      const job = { ...(jobs[i] as Job), toolMs: toolMs[i] ?? 0 };
      out.set(job.id, await trajectory(engine, job, starts[at] ?? 0));
    }),
  );
  await engine.close();
  return out;
}

const identical = (a: GenerateResult[] | undefined, b: GenerateResult[] | undefined) =>
  JSON.stringify(a?.map((r) => r.tokenIds)) === JSON.stringify(b?.map((r) => r.tokenIds)) &&
  (a ?? []).every((r, t) => r.logprobs.every((lp, i) => Object.is(lp, b?.[t]?.logprobs[i])));

describe('native adapter: results do not depend on arrival order', () => {
  for (const seeded of [true, false]) {
    it(`the same trajectories submitted in other orders, with tool responses coming back in other orders, are identical (${seeded ? 'seeded requests' : 'no seeds: streams keyed by cacheId'})`, async () => {
      const jobs: Job[] = Array.from({ length: 12 }, (_, i) => ({
        id: `p${i % 4}/0/${Math.floor(i / 4)}`,
        prompt: Array.from({ length: 3 + ((i * 7) % 20) }, (_, t) => (t * 11 + i * 5 + 3) % V),
        toolMs: 0,
        seed: seeded ? 1000 + i * 1_000_003 : undefined,
      }));
      const ids = jobs.map((_, i) => i);
      const base = await runAll(
        jobs,
        ids,
        ids.map(() => 0),
        ids.map(() => 0),
      );
      const reversed = [...ids].reverse();
      const variants = [
        await runAll(
          jobs,
          reversed,
          ids.map(() => 0),
          ids.map((i) => (i % 3) * 4),
        ),
        await runAll(
          jobs,
          ids,
          ids.map((i) => (i * 7) % 5),
          ids.map((i) => ((11 - i) % 4) * 3),
        ),
        await runAll(
          jobs,
          [...ids.filter((i) => i % 2), ...ids.filter((i) => !(i % 2))],
          ids.map((i) => i % 2),
          ids.map((i) => (i * 5) % 7),
        ),
      ];
      for (const v of variants) {
        for (const job of jobs) expect(identical(v.get(job.id), base.get(job.id)), job.id).toBe(true);
      }
      // The trajectories differ from each other (the streams are not all the same).
      expect(new Set(jobs.map((j) => JSON.stringify(base.get(j.id)?.[1]?.tokenIds))).size).toBeGreaterThan(6);
    });
  }
});
