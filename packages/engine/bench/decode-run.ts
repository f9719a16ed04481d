import type { ModelConfigInput } from '../src/config.js';
import { createGenerator } from '../src/generator.js';
import type { Model } from '../src/model.js';

const now = () => performance.now() / 1000;

/** The ~100M Llama-shaped model of both benchmarks (GQA 12/4, tied 32K vocabulary). */
export const LLAMA_100M: ModelConfigInput = {
  architectures: ['LlamaForCausalLM'],
  vocab_size: 32000,
  hidden_size: 768,
  intermediate_size: 2048,
  num_hidden_layers: 12,
  num_attention_heads: 12,
  num_key_value_heads: 4,
  head_dim: 64,
  tie_word_embeddings: true,
  max_position_embeddings: 2048,
};

/**
 * Prefill (`promptLength`-token prompts, default 32, timed with the first sampled token) then decode
 * `newTokens` more per sequence (timed apart), `batch` sequences at once, temperature 1, no stop tokens.
 */
export async function decodeRun(
  model: Model,
  batch: number,
  newTokens: number,
  batchInvariant: boolean,
  promptLength = 32,
) {
  const gen = createGenerator(model, { batchInvariant });
  const prompts = Array.from({ length: batch }, (_, i) =>
    Array.from({ length: promptLength }, (_, t) => (i * 31 + t * 3) % model.shape.vocab),
  );
  let t0 = now();
  const first = await gen.generate(
    prompts.map((tokenIds, i) => ({
      cacheId: `r${i}`,
      tokenIds,
      params: { temperature: 1, maxNewTokens: 1, seed: i },
    })),
  );
  const prefill = now() - t0;
  t0 = now();
  const cpu0 = process.cpuUsage();
  const out = await gen.generate(
    prompts.map((p, i) => ({
      cacheId: `r${i}`,
      tokenIds: [...p, ...(first[i]?.tokenIds ?? [])],
      params: { temperature: 1, maxNewTokens: newTokens, seed: i, stopTokenIds: [] },
    })),
  );
  const decode = now() - t0;
  const cpu = process.cpuUsage(cpu0);
  const produced = out.reduce((n, o) => n + o.tokenIds.length, 0);
  return {
    decodeTokensPerS: produced / decode,
    /** CPU time of the whole process per decode step (all threads): what the step costs, whatever the load. */
    decodeCpuMsPerStep: (cpu.user + cpu.system) / 1000 / newTokens,
    prefillTokensPerS: (promptLength * batch) / prefill,
    steps: newTokens,
    decode,
  };
}
