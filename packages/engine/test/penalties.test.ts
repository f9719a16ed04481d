import { describe, expect, it } from 'vitest';
import { packSequences } from '../src/batch.js';
import { createGenerator } from '../src/generator.js';
import { createModel } from '../src/model.js';
import { applyPenalties } from '../src/penalties.js';
import { logSoftmaxAt, tinyConfig } from './helpers.js';

const V = 50;

describe('presence / frequency penalties (vLLM apply_penalties, before the sampler)', () => {
  it('greedy with penalties picks the argmax of the penalised logits of the output so far; logprobs stay the model’s', async () => {
    const model = createModel(tinyConfig(), { seed: 4 });
    const prompt = [1, 2, 3, 2, 1];
    const params = { temperature: 0, maxNewTokens: 16, presencePenalty: 0.7, frequencyPenalty: 0.9 };
    const [out] = await createGenerator(model).generate([{ cacheId: 'a', tokenIds: prompt, params }]);
    const [plain] = await createGenerator(model).generate([
      { cacheId: 'a', tokenIds: prompt, params: { temperature: 0, maxNewTokens: 16 } },
    ]);
    expect(out!.tokenIds).not.toEqual(plain!.tokenIds); // the penalties changed the draw
    const seq = [...prompt, ...out!.tokenIds];
    const logits = model.forwardLogits(packSequences([seq]));
    const counts = new Map<number, number>(); // output tokens only: the prompt is not penalised
    out!.tokenIds.forEach((token, i) => {
      const at = prompt.length - 1 + i;
      const row = logits.subarray(at * V, (at + 1) * V);
      const penalised = applyPenalties(row, counts, params);
      const argmax = penalised.indexOf(Math.max(...penalised));
      expect(token).toBe(argmax);
      expect(out!.logprobs[i]).toBeCloseTo(logSoftmaxAt(logits, V, at, token), 4);
      counts.set(token, (counts.get(token) ?? 0) + 1);
    });
  });

  it('applyPenalties subtracts frequency × count + presence from generated tokens only, on a copy', () => {
    const row = new Float32Array([1, 2, 3, 4]);
    const out = applyPenalties(
      row,
      new Map([
        [1, 3],
        [3, 1],
      ]),
      { presencePenalty: 0.5, frequencyPenalty: 0.25 },
    );
    expect([...out]).toEqual([1, 2 - 0.75 - 0.5, 3, 4 - 0.25 - 0.5]);
    expect([...row]).toEqual([1, 2, 3, 4]);
  });

  it('zero penalties draw what no penalties draw, seeded sampling included', async () => {
    const model = createModel(tinyConfig(), { seed: 5 });
    const base = { temperature: 1, maxNewTokens: 12, seed: 3 };
    const gen = async (params: object) =>
      (await createGenerator(model).generate([{ cacheId: 'b', tokenIds: [4, 5], params }]))[0];
    expect(await gen({ ...base, presencePenalty: 0, frequencyPenalty: 0 })).toEqual(await gen(base));
  });
});

describe('allowedTokens (constrained decoding before the sampler)', () => {
  it('draws only allowed tokens while constrained, freely after, and records the model’s logprobs', async () => {
    const model = createModel(tinyConfig(), { seed: 6 });
    const prompt = [3, 1, 4];
    const forced = [7, 9, 7];
    const [out] = await createGenerator(model).generate([
      {
        cacheId: 'c',
        tokenIds: prompt,
        params: { temperature: 1, maxNewTokens: 6, seed: 1 },
        allowedTokens: (g) => (g.length < forced.length ? new Set([forced[g.length]!]) : null),
      },
    ]);
    expect(out!.tokenIds.slice(0, 3)).toEqual(forced);
    const logits = model.forwardLogits(packSequences([[...prompt, ...out!.tokenIds]]));
    out!.tokenIds.forEach((t, i) => {
      expect(out!.logprobs[i]).toBeCloseTo(logSoftmaxAt(logits, V, prompt.length - 1 + i, t), 4);
    });
  });
});
