import { describe, expect, it } from 'vitest';
import { packSequences } from '../src/batch.js';
import { createGenerator } from '../src/generator.js';
import { createModel } from '../src/model.js';
import { createAdamW } from '../src/optimizer.js';
import { logSoftmaxAt, tinyConfig } from './helpers.js';

const V = 50;

/** logprob of each token of `seq` from position `from` on, by one full forward. */
function fullForwardLogprobs(model: ReturnType<typeof createModel>, seq: number[], from: number): number[] {
  const logits = model.forwardLogits(packSequences([seq]));
  return seq.slice(from).map((tok, i) => logSoftmaxAt(logits, V, from + i - 1, tok));
}

describe('KV-cache generation', () => {
  it('sampled logprobs equal a full forward over the same tokens, for a batch of different prompts', async () => {
    const model = createModel(tinyConfig(), { seed: 1 });
    const gen = createGenerator(model);
    const prompts = [[1, 2, 3], [4, 5, 6, 7, 8, 9, 10], [11]];
    const params = { temperature: 1, maxNewTokens: 12, seed: 5 };
    const out = await gen.generate(prompts.map((tokenIds, i) => ({ cacheId: `s${i}`, tokenIds, params })));
    out.forEach((o, i) => {
      const prompt = prompts[i] as number[];
      expect(o.tokenIds).toHaveLength(12);
      expect(o.finishReason).toBe('length');
      const expected = fullForwardLogprobs(model, [...prompt, ...o.tokenIds], prompt.length);
      o.logprobs.forEach((lp, j) => {
        expect(lp).toBeCloseTo(expected[j] ?? 0, 4);
      });
    });
  });

  it.each([8, 16, 32])(
    'stays exact while the caches grow (head_dim %i: scalar and vector paths)',
    async (headDim) => {
      const model = createModel(tinyConfig({ max_position_embeddings: 256, head_dim: headDim }), {
        seed: 11,
      });
      const gen = createGenerator(model);
      const prompt = Array.from({ length: 70 }, (_, i) => (i * 13) % V);
      const params = { temperature: 1, maxNewTokens: 80, seed: 3 };
      const [a] = await gen.generate([{ cacheId: 'g', tokenIds: prompt, params }]);
      const expected = fullForwardLogprobs(model, [...prompt, ...(a?.tokenIds ?? [])], prompt.length);
      a?.logprobs.forEach((lp, i) => {
        expect(lp).toBeCloseTo(expected[i] ?? 0, 4);
      });
    },
  );

  it('a cancelled request takes no further step; the rest of its batch draws what it draws alone', async () => {
    const model = createModel(tinyConfig(), { seed: 2 });
    const params = { temperature: 1, maxNewTokens: 20, seed: 4 };
    const [alone] = await createGenerator(model).generate([{ cacheId: 'b', tokenIds: [4, 5], params }]);
    const controller = new AbortController();
    const onToken = () => controller.abort(); // cancelled as its first token leaves
    const [cancelled, kept] = await createGenerator(model).generate([
      { cacheId: 'a', tokenIds: [1, 2, 3], params, onToken, signal: controller.signal },
      { cacheId: 'b', tokenIds: [4, 5], params },
    ]);
    expect(cancelled!.tokenIds).toHaveLength(1);
    expect(kept!.tokenIds).toEqual(alone!.tokenIds);
    expect(kept!.tokenIds).toHaveLength(20);
    const [none] = await createGenerator(model).generate([
      { cacheId: 'c', tokenIds: [1], params, signal: AbortSignal.abort() },
    ]);
    expect(none!.tokenIds).toEqual([]);
  });

  it("onToken gets the logits row each token was drawn from: its log-softmax is the token's logprob", async () => {
    const model = createModel(tinyConfig(), { seed: 3 });
    const params = { temperature: 0.7, maxNewTokens: 8, seed: 2 };
    const seen: Array<[number, number, number]> = [];
    const onToken = (token: number, logprob: number, logits?: Float32Array) => {
      expect(logits).toHaveLength(V);
      seen.push([
        token,
        logprob,
        logSoftmaxAt(
          logits!.map((x) => x / 0.7),
          V,
          0,
          token,
        ),
      ]);
    };
    await createGenerator(model).generate([
      { cacheId: 'b', tokenIds: [7], params: { ...params, seed: 5, maxNewTokens: 3 } },
      { cacheId: 'a', tokenIds: [1, 2, 3], params, onToken }, // row 1, then row 0 once b is done
    ]);
    expect(seen).toHaveLength(8);
    for (const [, logprob, fromRow] of seen) expect(fromRow).toBeCloseTo(logprob, 5);
  });

  it('onToken sees each token as it is sampled, in step order, and changes no draw', async () => {
    const model = createModel(tinyConfig(), { seed: 2 });
    const params = { temperature: 1, maxNewTokens: 10, seed: 9 };
    const prompts = [
      [1, 2, 3],
      [4, 5],
    ];
    const plain = await createGenerator(model).generate(
      prompts.map((tokenIds, i) => ({ cacheId: `p${i}`, tokenIds, params })),
    );
    const seen: Array<[number, number, number]> = [];
    const streamed = await createGenerator(model).generate(
      prompts.map((tokenIds, i) => ({
        cacheId: `p${i}`,
        tokenIds,
        params,
        onToken: (token: number, logprob: number) => seen.push([i, token, logprob]),
      })),
    );
    expect(streamed).toEqual(plain);
    // Interleaved step by step (request 0, 1, 0, 1, …): each token left before the next step ran.
    expect(seen.slice(0, 4).map(([i]) => i)).toEqual([0, 1, 0, 1]);
    for (const i of [0, 1]) {
      const mine = seen.filter(([r]) => r === i);
      expect(mine.map(([, t]) => t)).toEqual(plain[i]!.tokenIds);
      expect(mine.map(([, , lp]) => lp)).toEqual(plain[i]!.logprobs);
    }
  });

  it('temperature scales the reported logprob (log-softmax of logits / T)', async () => {
    const model = createModel(tinyConfig(), { seed: 2 });
    const [o] = await createGenerator(model).generate([
      { cacheId: 'a', tokenIds: [3, 4], params: { temperature: 0.5, maxNewTokens: 1, seed: 1 } },
    ]);
    const logits = model.forwardLogits(packSequences([[3, 4]]));
    const scaled = logits.map((z) => z / 0.5);
    expect(o?.logprobs[0]).toBeCloseTo(logSoftmaxAt(scaled, V, 1, o?.tokenIds[0] ?? 0), 4);
  });

  it('greedy generation is deterministic and picks the argmax', async () => {
    const model = createModel(tinyConfig(), { seed: 3 });
    const req = { tokenIds: [7, 8, 9], params: { temperature: 0, maxNewTokens: 10 } };
    const a = await createGenerator(model).generate([{ cacheId: 'x', ...req }]);
    const b = await createGenerator(model).generate([{ cacheId: 'y', ...req }]);
    expect(a[0]?.tokenIds).toEqual(b[0]?.tokenIds);
    const seq = [7, 8, 9, ...(a[0]?.tokenIds ?? [])];
    const logits = model.forwardLogits(packSequences([seq]));
    for (let i = 0; i < 10; i++) {
      const row = logits.subarray((2 + i) * V, (3 + i) * V);
      expect(row.indexOf(Math.max(...row))).toBe(seq[3 + i]);
    }
  });

  it('continuing after appended tokens prefills only the suffix and equals a from-scratch run', async () => {
    const model = createModel(tinyConfig(), { seed: 4 });
    const gen = createGenerator(model);
    const params = { temperature: 0, maxNewTokens: 5 };
    const [first] = await gen.generate([{ cacheId: 't', tokenIds: [1, 2, 3], params }]);
    const turn2 = [1, 2, 3, ...(first?.tokenIds ?? []), 40, 41, 42];
    expect(gen.cachedLength('t')).toBe(3 + 4); // the last sampled token is not yet in the cache
    const [cont] = await gen.generate([{ cacheId: 't', tokenIds: turn2, params }]);
    const [scratch] = await createGenerator(model).generate([{ cacheId: 'fresh', tokenIds: turn2, params }]);
    expect(cont?.tokenIds).toEqual(scratch?.tokenIds);
    cont?.logprobs.forEach((lp, i) => {
      expect(lp).toBeCloseTo(scratch?.logprobs[i] ?? 0, 5);
    });
    const expected = fullForwardLogprobs(model, [...turn2, ...(cont?.tokenIds ?? [])], turn2.length);
    cont?.logprobs.forEach((lp, i) => {
      expect(lp).toBeCloseTo(expected[i] ?? 0, 4);
    });
  });

  it('a request that diverges from its cache keeps the common prefix and equals a fresh run', async () => {
    const model = createModel(tinyConfig(), { seed: 8 });
    const gen = createGenerator(model);
    const params = { temperature: 0, maxNewTokens: 4 };
    await gen.generate([{ cacheId: 'd', tokenIds: [1, 2, 3, 4, 5, 6], params }]);
    const [diverged] = await gen.generate([{ cacheId: 'd', tokenIds: [1, 2, 9], params }]);
    const [fresh] = await createGenerator(model).generate([{ cacheId: 'f', tokenIds: [1, 2, 9], params }]);
    expect(diverged?.tokenIds).toEqual(fresh?.tokenIds);
    diverged?.logprobs.forEach((lp, i) => {
      expect(lp).toBeCloseTo(fresh?.logprobs[i] ?? 0, 5);
    });
    gen.release('d');
    expect(gen.cachedLength('d')).toBe(0);
    expect(model.kvBytesPerToken()).toBe(2 * 2 * 2 * 8 * 4);
  });

  it('refuses bad requests with a clear message', async () => {
    const model = createModel(tinyConfig(), { seed: 9 });
    const gen = createGenerator(model);
    await expect(gen.generate([{ cacheId: 'a', tokenIds: [1, 99], params: {} }])).rejects.toThrow(
      /outside \[0, 50\)/,
    );
    await expect(
      gen.generate([{ cacheId: 'a', tokenIds: [1], params: { stopStrings: ['x'] } }]),
    ).rejects.toThrow(/decode/);
    await expect(
      gen.generate([
        { cacheId: 'a', tokenIds: [1], params: {} },
        { cacheId: 'a', tokenIds: [2], params: {} },
      ]),
    ).rejects.toThrow(/twice/);
  });

  it('a sequence with no room left ends with finishReason length while the others generate', async () => {
    const model = createModel(tinyConfig({ max_position_embeddings: 16 }), { seed: 10 });
    const out = await createGenerator(model).generate([
      { cacheId: 'full', tokenIds: new Array(16).fill(3), params: { maxNewTokens: 4 } },
      { cacheId: 'room', tokenIds: [1, 2], params: { maxNewTokens: 4 } },
      { cacheId: 'edge', tokenIds: new Array(14).fill(5), params: { maxNewTokens: 8 } },
    ]);
    expect(out[0]).toEqual({ tokenIds: [], logprobs: [], finishReason: 'length' });
    expect(out[1]?.tokenIds).toHaveLength(4);
    expect(out[2]?.tokenIds).toHaveLength(2);
    expect(out[2]?.finishReason).toBe('length');
  });

  it('stops on stop tokens and stop strings, keeping them in the output', async () => {
    const model = createModel(tinyConfig(), { seed: 5 });
    const [free] = await createGenerator(model).generate([
      { cacheId: 'a', tokenIds: [1], params: { temperature: 0, maxNewTokens: 8 } },
    ]);
    const stopAt = free?.tokenIds[2] as number;
    const first = free?.tokenIds.indexOf(stopAt) as number;
    const [stopped] = await createGenerator(model).generate([
      { cacheId: 'a', tokenIds: [1], params: { temperature: 0, maxNewTokens: 8, stopTokenIds: [stopAt] } },
    ]);
    expect(stopped?.tokenIds).toEqual(free?.tokenIds.slice(0, first + 1));
    expect(stopped?.finishReason).toBe('stop');
    const decode = (ids: readonly number[]) => ids.map((i) => String.fromCharCode(65 + i)).join('');
    const [byString] = await createGenerator(model, { decode }).generate([
      {
        cacheId: 'a',
        tokenIds: [1],
        params: { temperature: 0, maxNewTokens: 8, stopStrings: [decode([stopAt])] },
      },
    ]);
    expect(byString?.tokenIds).toEqual(stopped?.tokenIds);
  });

  it('uses weights updated by training at the next generate (stale caches are rebuilt)', async () => {
    const model = createModel(tinyConfig(), { seed: 6 });
    const gen = createGenerator(model);
    const params = { temperature: 0, maxNewTokens: 4 };
    await gen.generate([{ cacheId: 'w', tokenIds: [5, 6, 7], params }]);
    const opt = createAdamW(model, { lr: 0.05 });
    model.sftLoss(packSequences([[5, 6, 7, 8, 9]]), [1, 1, 1, 1, 1]);
    opt.step();
    const [after] = await gen.generate([{ cacheId: 'w', tokenIds: [5, 6, 7], params }]);
    const expected = fullForwardLogprobs(model, [5, 6, 7, ...(after?.tokenIds ?? [])], 3);
    after?.logprobs.forEach((lp, i) => {
      expect(lp).toBeCloseTo(expected[i] ?? 0, 4);
    });
  });

  it('seeded sampling with top-k / top-p is reproducible and stays inside the kept set', async () => {
    const model = createModel(tinyConfig(), { seed: 7 });
    const params = { temperature: 1, topK: 3, topP: 0.9, maxNewTokens: 6, seed: 42 };
    const a = await createGenerator(model).generate([{ cacheId: 'p', tokenIds: [2, 3], params }]);
    const b = await createGenerator(model).generate([{ cacheId: 'q', tokenIds: [2, 3], params }]);
    expect(a).toEqual(b);
    const seq = [2, 3, ...(a[0]?.tokenIds ?? [])];
    const logits = model.forwardLogits(packSequences([seq]));
    for (let i = 0; i < 6; i++) {
      const row = Array.from(logits.subarray((1 + i) * V, (2 + i) * V));
      const top3 = [...row].sort((x, y) => y - x)[2] ?? 0;
      expect(row[seq[2 + i] ?? 0]).toBeGreaterThanOrEqual(top3);
    }
  });
});
