import { expect, it } from 'vitest';
import { packSequences } from '../src/batch.js';
import { createGenerator, type GenerateRequest } from '../src/generator.js';
import { createModel, type Model } from '../src/model.js';
import { setEngineThreads } from '../src/native.js';
import { describeEachCpuKernelPath, edgeConfig } from './helpers.js';

// every edge of the products (helpers.ts)
const config = edgeConfig();
const V = 50;

const prompt = (len: number, salt: number) =>
  Array.from({ length: len }, (_, t) => (t * 7 + salt * 13 + 1) % V);
const target: GenerateRequest = {
  cacheId: 'target',
  tokenIds: prompt(40, 0),
  params: { temperature: 1, maxNewTokens: 20, seed: 77 },
};
const others = (count: number): GenerateRequest[] =>
  Array.from({ length: count }, (_, i) => ({
    cacheId: `other${i}`,
    tokenIds: prompt(1 + ((i * 37) % 90), i + 1),
    params: { temperature: 1, maxNewTokens: 1 + ((i * 5) % 30), seed: i },
  }));

function sameFloats(a: ArrayLike<number>, b: ArrayLike<number>): boolean {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (!Object.is(a[i], b[i])) return false;
  return true;
}

async function targetAmong(model: Model, count: number, batchInvariant: boolean, at: number) {
  const batch = others(count);
  batch.splice(Math.min(at, batch.length), 0, target);
  const out = await createGenerator(model, { batchInvariant }).generate(batch);
  return out[batch.indexOf(target)];
}

describeEachCpuKernelPath('batch-invariant generation', () => {
  it('scoreLogprobs replaces each recorded logprob by its value on the same hidden state', async () => {
    const seen: number[] = [];
    const [o] = await createGenerator(model, {
      scoreLogprobs: ({ hidden, targets, temperature }) => {
        expect(hidden).toHaveLength(targets.length * 48);
        expect(temperature).toBe(1);
        return Array.from(targets, (t) => {
          seen.push(t);
          return -t;
        });
      },
    }).generate([target]);
    expect(seen).toEqual(o?.tokenIds);
    expect(o?.logprobs).toEqual(o?.tokenIds.map((t) => -t));
  });

  const model = createModel(config, { seed: 21 });

  it('one sequence alone and inside batches of 1..64 others gives bit-identical tokens and logprobs', async () => {
    const [alone] = await createGenerator(model).generate([target]);
    expect(alone?.tokenIds).toHaveLength(20);
    for (let count = 1; count <= 64; count++) {
      const got = await targetAmong(model, count, true, count % 7);
      expect(got?.tokenIds).toEqual(alone?.tokenIds);
      expect(sameFloats(got?.logprobs ?? [], alone?.logprobs ?? []), `batch with ${count} others`).toBe(true);
    }
  });

  it('the batch-dependent path (batchInvariant: false) does differ, so the check above can fail', async () => {
    const [alone] = await createGenerator(model, { batchInvariant: false }).generate([target]);
    let differs = false;
    for (const count of [16, 32, 64]) {
      const got = await targetAmong(model, count, false, 3);
      differs ||= !sameFloats(got?.logprobs ?? [], alone?.logprobs ?? []);
    }
    expect(differs).toBe(true);
  });

  it('mixed prefill and decode steps: logits of a sequence fed token by token or in chunks beside other prefills are identical, and equal the training forward', () => {
    const native = model.native;
    const seq = prompt(300, 5); // past one 256-long block of keys in attention
    const extendAll = (chunks: number[], withOthers: boolean): Float32Array[] => {
      native.packForDecode(model.handle, model.version);
      const cache = native.createCache(model.handle);
      const side = [native.createCache(model.handle), native.createCache(model.handle)];
      const rows: Float32Array[] = [];
      let at = 0;
      chunks.forEach((n, step) => {
        const caches = withOthers ? [side[0], cache, side[1]] : [cache];
        const feeds = withOthers
          ? [prompt(1 + (step % 5), step), seq.slice(at, at + n), [step % V]]
          : [seq.slice(at, at + n)];
        const logits = new Float32Array(caches.length * V);
        native.extendInvariant(
          model.handle,
          caches as typeof side,
          Int32Array.from(feeds.flat()),
          Int32Array.from(feeds, (f) => f.length),
          logits,
        );
        const row = withOthers ? 1 : 0;
        rows.push(logits.slice(row * V, (row + 1) * V));
        at += n;
      });
      return rows;
    };
    // Chunks end at the same positions, so the logits of each chunk's last token are comparable.
    const ends = [17, 64, 65, 130, 200, 257, 300];
    const chunks = ends.map((e, i) => e - (ends[i - 1] ?? 0));
    const chunked = extendAll(chunks, true);
    const alone = extendAll(chunks, false);
    const full = model.forwardLogits(packSequences([prompt(9, 2), seq, prompt(33, 3)]));
    ends.forEach((e, i) => {
      expect(sameFloats(chunked[i] as Float32Array, alone[i] as Float32Array), `chunk ending at ${e}`).toBe(
        true,
      );
      const trainRow = full.subarray((9 + e - 1) * V, (9 + e) * V);
      expect(sameFloats(chunked[i] as Float32Array, trainRow), `training forward at ${e}`).toBe(true);
    });
  });

  it('the training forward of a sequence is identical alone and packed with others (also under 16 tokens)', () => {
    for (const len of [70, 9]) {
      const seq = prompt(len, 9);
      const alone = model.forwardLogits(packSequences([seq]));
      for (const count of [1, 5, 20]) {
        const rest = Array.from({ length: count }, (_, i) => prompt(3 + ((i * 29) % 60), i));
        const packed = model.forwardLogits(packSequences([...rest.slice(0, 1), seq, ...rest.slice(1)]));
        const start = (rest[0]?.length ?? 0) * V;
        expect(
          sameFloats(packed.subarray(start, start + len * V), alone),
          `${len} tokens packed with ${count}`,
        ).toBe(true);
      }
    }
  });

  it('a product split between threads (a 40K-vocabulary lm_head at batch >= 2) equals the one-thread product', async () => {
    const before = setEngineThreads(0); // 0 reads the thread count without changing it
    setEngineThreads(2);
    try {
      const big = createModel({ ...config, vocab_size: 40_000, hidden_size: 128 }, { seed: 4 });
      const one: GenerateRequest = {
        cacheId: 'one',
        tokenIds: [5, 6, 7],
        params: { maxNewTokens: 4, seed: 1 },
      };
      const [alone] = await createGenerator(big).generate([one]);
      const batch = [one, ...others(7)];
      const [inBatch] = await createGenerator(big).generate(batch);
      expect(inBatch?.tokenIds).toEqual(alone?.tokenIds);
      expect(sameFloats(inBatch?.logprobs ?? [], alone?.logprobs ?? [])).toBe(true);
    } finally {
      setEngineThreads(before);
    }
  });

  it('refuses malformed invariant extends instead of reading past its arrays', () => {
    const native = model.native;
    native.packForDecode(model.handle, model.version);
    const cache = native.createCache(model.handle);
    expect(() =>
      native.extendInvariant(
        model.handle,
        [cache],
        Int32Array.of(1, 2),
        Int32Array.of(3),
        new Float32Array(V),
      ),
    ).toThrow(/sum of counts/);
    expect(() =>
      native.extendInvariant(
        model.handle,
        [cache],
        Int32Array.of(1),
        Int32Array.of(1),
        new Float32Array(V - 1),
      ),
    ).toThrow(/logits/);
    expect(() =>
      native.extendInvariant(model.handle, [cache], Int32Array.of(V), Int32Array.of(1), new Float32Array(V)),
    ).toThrow(/vocabulary/);
    expect(() => native.packForDecode(model.handle, -1)).toThrow(/non-negative integer/);
    expect(() =>
      createGenerator(model, {
        batchInvariant: false,
        scoreLogprobs: ({ targets }) => new Float32Array(targets.length),
      }),
    ).toThrow(/needs batchInvariant/);
  });
});
