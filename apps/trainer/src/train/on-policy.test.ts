import { createCharTokenizer, createGenerator, type LogprobScorer } from '@agentrl/engine';
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

describe('true on-policy: a sampled token is scored alike wherever its row sits', () => {
  // V = 300 ends the kernel's last vocabulary tile on a partial column panel, where its former 4 x 32
  // multiply summed rows of a 4-row block otherwise than leftover rows (the 1-ulp residual that real
  // runs showed on a micro-batch's last rows); two turns with a tool-like feed between them, and
  // prompts past one 64-row attention block.
  it.each([1, 0.7])(
    "the sampler's hidden states and recorded logprobs equal the training forward's and the kernel's at every offset of a packed batch (temperature %d)",
    async (temperature) => {
      const cfg = parseConfig({ model: { maxPositions: 600 } });
      const V = 300;
      const trainer = await NativeTrainer.create(cfg, {
        initDir: null,
        tokenizer: {
          tokenizer: Object.create(createCharTokenizer(), {
            vocabSize: { value: V },
            eosTokenId: { value: 0 },
          }),
          dir: null,
        },
      });
      const model = trainer.model;
      const H = model.shape.hidden;
      const scorer = createTrainerLogprobScorer(model);
      // every decode step's rows as the generator hands them to the scorer (one temperature: one call)
      let steps: { hidden: Float32Array; lps: number[] }[] = [];
      const recording: LogprobScorer = (rows) => {
        const lps = Array.from(scorer(rows));
        steps.push({ hidden: rows.hidden.slice(), lps });
        return lps;
      };
      const gen = createGenerator(model, { scoreLogprobs: recording });
      const n = 6;
      const maxNew = (i: number) => 6 + 3 * i; // no stop tokens: sequence i samples at steps < maxNew(i)
      const seqs = Array.from({ length: n }, (_, i) => ({
        ids: Array.from({ length: 3 + 29 * i }, (_, t) => 1 + ((t * 7 + i) % (V - 1))),
        // position in ids of each sampled token, with the sampler's hidden row and recorded logprob
        sampled: [] as { pos: number; hidden: Float32Array; lp: number }[],
      }));
      for (const turn of [0, 1]) {
        steps = [];
        const out = await gen.generate(
          seqs.map((s, i) => ({
            cacheId: `s${i}`,
            tokenIds: s.ids,
            params: { temperature, maxNewTokens: maxNew(i), seed: 10 * turn + i, stopTokenIds: [] },
          })),
        );
        seqs.forEach((s, i) => {
          const o = out[i]!;
          o.tokenIds.forEach((tok, j) => {
            const step = steps[j]!;
            const row = seqs.filter((_, k) => j < maxNew(k)).indexOf(s);
            s.sampled.push({
              pos: s.ids.length,
              hidden: step.hidden.slice(row * H, (row + 1) * H),
              lp: o.logprobs[j]!,
            });
            expect(step.lps[row]).toBe(o.logprobs[j]);
            s.ids.push(tok);
          });
          // a tool response between the turns, prefilled as one multi-token extend
          if (turn === 0) s.ids.push(...Array.from({ length: 4 + i }, (_, t) => 1 + ((t * 3 + i) % (V - 1))));
        });
      }
      const sameBits = (a: Float32Array, b: Float32Array) =>
        Buffer.from(a.buffer, a.byteOffset, a.byteLength).equals(
          Buffer.from(b.buffer, b.byteOffset, b.byteLength),
        );
      let checked = 0;
      for (const before of [0, 1, 2, 3, 5, 11, 13, 190]) {
        for (const order of ['forward', 'reverse'] as const) {
          const list = order === 'forward' ? seqs : [...seqs].reverse();
          const all = [
            ...(before ? [Array.from({ length: before }, (_, t) => 1 + (t % 50))] : []),
            ...list.map((s) => s.ids),
          ];
          const cu = [0];
          for (const a of all) cu.push(cu.at(-1)! + a.length);
          const tokenIds = Int32Array.from(all.flat());
          const T = tokenIds.length;
          const hidden = model.forwardHidden({ tokenIds, cuSeqlens: Int32Array.from(cu) }).hidden.slice();
          const targets = new Int32Array(T);
          for (let t = 0; t + 1 < T; t++) targets[t] = tokenIds[t + 1]!;
          // the kernel over the whole packed batch, as policyStep runs it (logprobs do not depend on
          // the loss inputs: the scorer passes none)
          const lp = scorer({ hidden, targets, temperature });
          list.forEach((s, k) => {
            const start = cu[k + (before ? 1 : 0)]!;
            for (const { pos, hidden: h, lp: recorded } of s.sampled) {
              const row = start + pos - 1; // hidden row t predicts token t + 1
              const where = `token ${pos} of sequence ${seqs.indexOf(s)} at row ${row} of ${T}`;
              expect(sameBits(hidden.subarray(row * H, (row + 1) * H), h), `hidden state, ${where}`).toBe(
                true,
              );
              expect(lp[row], `logprob, ${where}`).toBe(Math.fround(recorded));
              checked++;
            }
          });
        }
      }
      expect(checked).toBe(16 * seqs.reduce((c, s) => c + s.sampled.length, 0));
      expect(checked).toBeGreaterThan(16 * 100);
    },
  );
});
