import { describe, expect, it } from 'vitest';
import { packSequences } from '../src/batch.js';
import { createModel } from '../src/model.js';
import { tinyConfig } from './helpers.js';

/**
 * The backward's per-stage report (Model.setGradientsDoneHook), what data-parallel training starts
 * its bucketed all-reduce on: stages come last layer first, and when stage s is reported the
 * gradients of every parameter of that stage already have their final values.
 */
describe('gradients-done hook', () => {
  for (const tied of [true, false]) {
    it(`reports numLayers, each layer down to 0, then -1, each gradient final when reported (${tied ? 'tied' : 'untied'} lm_head)`, () => {
      const model = createModel(tinyConfig({ num_hidden_layers: 3, tie_word_embeddings: tied }), { seed: 4 });
      const L = model.shape.layers;
      const batch = packSequences([
        [1, 2, 3, 4, 5, 6],
        [7, 8, 9],
      ]);
      const mask = new Uint8Array(batch.tokenIds.length).fill(1);
      const params = model.parameters();
      const stages: number[] = [];
      const snapshots = new Map<string, Float32Array>();
      model.setGradientsDoneHook((stage) => {
        stages.push(stage);
        for (const p of params)
          if (model.gradientStage(p.name) === stage) snapshots.set(p.name, p.grad.slice());
      });
      model.sftLoss(batch, mask);
      model.setGradientsDoneHook(null);
      expect(stages).toEqual([L, ...Array.from({ length: L }, (_, i) => L - 1 - i), -1]);
      // every parameter belongs to a reported stage and did not change after its report
      for (const p of params) {
        expect(snapshots.get(p.name), p.name).toEqual(p.grad);
        expect(
          p.grad.some((g) => g !== 0),
          p.name,
        ).toBe(true);
      }
      expect(model.gradientStage('model.layers.2.mlp.down_proj.weight')).toBe(2);
      expect(model.gradientStage('model.norm.weight')).toBe(L);
      expect(model.gradientStage('model.embed_tokens.weight')).toBe(-1);
      if (!tied) expect(model.gradientStage('lm_head.weight')).toBe(L);

      // removed: the next backward reports nothing; a hook that throws ends the backward with its error
      model.zeroGrad();
      model.sftLoss(batch, mask);
      expect(stages).toHaveLength(L + 2);
      model.setGradientsDoneHook(() => {
        throw new Error('stop here');
      });
      expect(() => model.sftLoss(batch, mask)).toThrow('stop here');
      model.setGradientsDoneHook(null);
    });
  }

  it('is refused when it is not a function, by the native layer too', () => {
    const model = createModel(tinyConfig(), { seed: 1 });
    const batch = packSequences([[1, 2, 3]]);
    model.forwardHidden(batch);
    const native = (model as unknown as { native: { backward: (...a: unknown[]) => void }; handle: unknown })
      .native;
    const handle = (model as unknown as { handle: unknown }).handle;
    expect(() => native.backward(handle, new Float32Array(3 * model.shape.hidden), undefined, 42)).toThrow(
      /onGradientsDone must be a function/,
    );
  });
});
