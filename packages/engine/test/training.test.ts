import { describe, expect, it } from 'vitest';
import { packSequences } from '../src/batch.js';
import { createModel } from '../src/model.js';
import { setEngineThreads } from '../src/native.js';
import { AdamWConfigSchema, createAdamW, learningRateAt } from '../src/optimizer.js';
import { createCharTokenizer } from '../src/tokenizer/char.js';
import { tinyConfig } from './helpers.js';

describe('training', () => {
  it('a tiny model overfits a small corpus (loss near zero)', () => {
    const tok = createCharTokenizer();
    const corpus = [
      '<|im_start|>user\n2+2?<|im_end|>',
      '<|im_start|>assistant\n4<|im_end|>',
      'the cat sat on the mat',
    ];
    const seqs = corpus.map((s) => tok.encode(s));
    const model = createModel(
      tinyConfig({ vocab_size: tok.vocabSize, hidden_size: 64, intermediate_size: 128 }),
      { seed: 1 },
    );
    const opt = createAdamW(model, { lr: 1e-2, weightDecay: 0, warmupSteps: 5 });
    const batch = packSequences(seqs);
    const mask = new Uint8Array(batch.tokenIds.length).fill(1);
    let first = 0;
    let last = 0;
    for (let i = 0; i < 150; i++) {
      const { loss } = model.sftLoss(batch, mask);
      if (i === 0) first = loss;
      last = loss;
      opt.step();
    }
    expect(first).toBeGreaterThan(4);
    expect(last).toBeLessThan(0.05);
  });

  it('two micro-batches accumulate the same gradient as one batch of both', () => {
    const model = createModel(tinyConfig(), { seed: 2 });
    const a = [1, 2, 3, 4, 5];
    const b = [6, 7, 8];
    model.zeroGrad();
    model.sftLoss(packSequences([a, b]), new Array(8).fill(1), { normalizer: 6 });
    const whole = model.parameters().map((p) => p.grad.slice());
    model.zeroGrad();
    model.sftLoss(packSequences([a]), new Array(5).fill(1), { normalizer: 6 });
    model.sftLoss(packSequences([b]), new Array(3).fill(1), { normalizer: 6, recompute: true });
    model.parameters().forEach((p, i) => {
      const w = whole[i] as Float32Array;
      for (let j = 0; j < w.length; j += 7) expect(p.grad[j]).toBeCloseTo(w[j] ?? 0, 6);
    });
  });

  it('lmHeadGrad() is the live lm_head gradient: a loss that accumulates into it (no [V, H] buffer per micro-batch) gives the gradients of dLmHead', () => {
    for (const tied of [true, false]) {
      const config = tinyConfig({ tie_word_embeddings: tied });
      const [a, b] = [createModel(config, { seed: 9 }), createModel(config, { seed: 9 })];
      const batch = packSequences([
        [1, 2, 3, 4, 5],
        [6, 7],
      ]);
      const V = a.shape.vocab;
      const H = a.shape.hidden;
      const dW = Float32Array.from({ length: V * H }, (_, i) => Math.cos(i) * 1e-2);
      for (let micro = 0; micro < 2; micro++) {
        const { hidden } = a.forwardHidden(batch);
        b.forwardHidden(batch);
        const dH = hidden.map((_, i) => Math.sin(i + micro) * 1e-2);
        a.backwardFromHidden(dH, { dLmHead: dW });
        const g = b.lmHeadGrad();
        for (let i = 0; i < g.length; i++) g[i] = (g[i] as number) + (dW[i] as number);
        b.backwardFromHidden(dH);
      }
      a.parameters().forEach((p, i) => {
        expect(
          Buffer.from(p.grad.slice().buffer).equals(Buffer.from(b.parameters()[i]!.grad.slice().buffer)),
          p.name,
        ).toBe(true);
      });
      expect(b.lmHeadGrad()).toBe(b.lmHeadGrad());
      expect(b.lmHeadGrad().buffer).toBe(b.parameters()[tied ? 0 : b.parameters().length - 1]!.grad.buffer);
    }
  });

  it('is deterministic for a seed and resumes bit-exactly from a saved optimizer state', () => {
    const run = (steps: number, resumeAt?: number) => {
      const model = createModel(tinyConfig(), { seed: 9 });
      let opt = createAdamW(model, {
        lr: 3e-3,
        schedule: 'cosine',
        totalSteps: 6,
        warmupSteps: 2,
        maxGradNorm: 0.5,
      });
      for (let s = 0; s < steps; s++) {
        if (s === resumeAt) {
          const state = opt.state();
          opt = createAdamW(model, opt.config);
          opt.loadState(state);
        }
        model.sftLoss(
          packSequences([
            [1, 2, 3, 4, 5, 6, 7],
            [9, 9, 8],
          ]),
          new Array(10).fill(1),
        );
        opt.step();
      }
      return model.parameters().map((p) => p.data.slice());
    };
    const a = run(6);
    const b = run(6, 3);
    a.forEach((w, i) => {
      expect(Buffer.from(w.buffer).equals(Buffer.from((b[i] as Float32Array).buffer))).toBe(true);
    });
  });

  it('gives bit-identical gradients on 1 and 2 threads (large enough to run parallel GEMMs and attention)', () => {
    const model = createModel(tinyConfig({ hidden_size: 128, intermediate_size: 384, head_dim: 32 }), {
      seed: 8,
    });
    const batch = packSequences([
      Array.from({ length: 120 }, (_, i) => (i * 7) % 50),
      Array.from({ length: 100 }, (_, i) => (i * 3) % 50),
    ]);
    const mask = new Array(220).fill(1);
    const original = setEngineThreads(0);
    const grads = (threads: number) => {
      setEngineThreads(threads);
      model.zeroGrad();
      model.sftLoss(batch, mask);
      setEngineThreads(original);
      return model.parameters().map((p) => Buffer.from(p.grad.slice().buffer));
    };
    const one = grads(1);
    const two = grads(2);
    one.forEach((g, i) => {
      expect(g.equals(two[i] as Buffer)).toBe(true);
    });
  });

  it('clips the global gradient norm and follows warmup + cosine', () => {
    const cfg = AdamWConfigSchema.parse({
      lr: 1,
      warmupSteps: 4,
      schedule: 'cosine',
      totalSteps: 14,
      minLrRatio: 0.1,
    });
    expect(learningRateAt(cfg, 1)).toBeCloseTo(0.25);
    expect(learningRateAt(cfg, 4)).toBeCloseTo(1);
    expect(learningRateAt(cfg, 9)).toBeCloseTo(0.55);
    expect(learningRateAt(cfg, 14)).toBeCloseTo(0.1);
    const model = createModel(tinyConfig(), { seed: 3 });
    model.sftLoss(packSequences([[1, 2, 3, 4]]), [1, 1, 1, 1]);
    const norm = model.gradNorm();
    const manual = Math.sqrt(
      model.parameters().reduce((s, p) => s + p.grad.reduce((t, g) => t + g * g, 0), 0),
    );
    expect(norm).toBeCloseTo(manual, 5);
    const result = createAdamW(model, { maxGradNorm: norm / 2 }).step();
    expect(result.clipped).toBe(true);
    expect(model.gradNorm()).toBe(0);
  });
});
