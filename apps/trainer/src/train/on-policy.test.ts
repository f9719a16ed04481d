import { createCharTokenizer, createGenerator } from '@agentrl/engine';
import type { MicroBatch } from '@agentrl/grpo';
import { describe, expect, it } from 'vitest';
import { parseConfig } from '../config/load.js';
import { NativeTrainer } from './native-policy.js';
import { createTrainerLogprobScorer } from './on-policy.js';

/** A micro-batch of generated sequences with their recorded logprobs, as packMicroBatches lays it out. */
function microBatchOf(seqs: { prompt: number[]; tokens: number[]; logprobs: number[] }[]): MicroBatch {
  const T = seqs.reduce((n, s) => n + s.prompt.length + s.tokens.length, 0);
  const mb = {
    tokenIds: new Int32Array(T),
    cuSeqlens: new Int32Array(seqs.length + 1),
    lossMask: new Uint8Array(T),
    oldLogprobs: new Float32Array(T),
    advantages: new Float32Array(T),
    sequenceAdvantages: new Float32Array(seqs.length),
    trajectoryIds: seqs.map((_, i) => `t${i}`),
    promptIds: seqs.map(() => 'p'),
  };
  let at = 0;
  seqs.forEach((s, i) => {
    mb.tokenIds.set([...s.prompt, ...s.tokens], at);
    at += s.prompt.length;
    s.tokens.forEach((_, j) => {
      mb.lossMask[at + j] = 1;
      mb.oldLogprobs[at + j] = s.logprobs[j] ?? 0;
      mb.advantages[at + j] = i % 2 ? 1 : -1;
    });
    at += s.tokens.length;
    mb.cuSeqlens[i + 1] = at;
  });
  return mb as unknown as MicroBatch;
}

describe('true on-policy: recorded logprobs equal the trainer recompute', () => {
  for (const hiddenSize of [64, 320]) {
    it(`policyStep reports rolloutTrainLogprobMaxAbsDiff = 0 for rollouts scored by the trainer's kernel (hidden ${hiddenSize})`, async () => {
      const cfg = parseConfig({ model: { hiddenSize, intermediateSize: 300, maxPositions: 256 } });
      const run = async (scored: boolean, temperature: number) => {
        const trainer = await NativeTrainer.create(cfg, {
          initDir: null,
          // a 60-token vocabulary: only its size and end id shape the random-init model
          tokenizer: {
            tokenizer: Object.create(createCharTokenizer(), {
              vocabSize: { value: 60 },
              eosTokenId: { value: 0 },
            }),
            dir: null,
          },
        });
        const model = trainer.model;
        const gen = createGenerator(
          model,
          scored ? { scoreLogprobs: createTrainerLogprobScorer(model) } : {},
        );
        const prompts = Array.from({ length: 9 }, (_, i) =>
          Array.from({ length: 2 + ((i * 5) % 17) }, (_, t) => 1 + ((t * 7 + i) % 59)),
        );
        const out = await gen.generate(
          prompts.map((p, i) => ({
            cacheId: `s${i}`,
            tokenIds: p,
            params: { temperature, maxNewTokens: 10 + i, seed: i, stopTokenIds: [] },
          })),
        );
        const mb = microBatchOf(
          prompts.map((p, i) => ({
            prompt: p,
            tokens: out[i]?.tokenIds ?? [],
            logprobs: out[i]?.logprobs ?? [],
          })),
        );
        expect(mb.lossMask.reduce((a, b) => a + b, 0)).toBeGreaterThan(100);
        const opts = {
          clipLow: 0.2,
          clipHigh: 0.28,
          dualClip: 3,
          aggregation: 'token-mean' as const,
          temperature,
        };
        return trainer.policyStep([mb], opts).rolloutTrainLogprobMaxAbsDiff;
      };
      for (const temperature of [1, 0.7]) {
        expect(await run(true, temperature)).toBe(0);
        // sampleToken's float64 log-softmax differs in the last bits: the metric does see it.
        expect(await run(false, temperature)).toBeGreaterThan(0);
      }
    });
  }
});
