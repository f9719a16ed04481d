import type { LogprobScorer, Model } from '@agentrl/engine';
import { fusedLinearPolicyLoss } from '@agentrl/kernels';

/**
 * The rollout's logprob scorer for the in-process engine: the fused-linear kernel the policy loss
 * runs, applied to the sampler's own final hidden states. With batch-invariant generation those
 * hidden states are bit-identical to the training forward's, so the recorded logprobs equal the
 * ones policyStep recomputes (rolloutTrainLogprobMaxAbsDiff = 0: truly on-policy). That also needs
 * the kernel to give a row the same logprob wherever it sits in a batch (its logits GEMM runs every
 * row on the same zero-padded register panels: packages/kernels fused-linear-row-position.test.ts),
 * so the few rows of a decode step are scored as they are, without padding.
 */
export function createTrainerLogprobScorer(model: Model): LogprobScorer {
  const H = model.shape.hidden;
  const V = model.shape.vocab;
  let dWeight: Float32Array | undefined;
  return ({ hidden: rows, targets: rowTargets, temperature }) => {
    const T = rowTargets.length;
    // No token is in the loss, so the kernel's backward does nothing and the [V, H] scratch it
    // accumulates into is never written (nor cleared): one allocation for the whole run.
    dWeight ??= new Float32Array(V * H);
    return fusedLinearPolicyLoss(
      {
        hidden: rows,
        weight: model.lmHeadWeight(),
        hiddenSize: H,
        vocabSize: V,
        targets: rowTargets,
        oldLogprobs: new Float32Array(T),
        advantages: new Float32Array(T),
        lossMask: new Uint8Array(T),
        cuSeqlens: Int32Array.of(0, T),
      },
      { temperature, dWeightOut: dWeight, accumulate: true },
    ).logprobs;
  };
}

/** max |recorded - recomputed| over the tokens in the loss (0 when none). */
export function maxAbsDiffMasked(
  recorded: ArrayLike<number>,
  recomputed: ArrayLike<number>,
  mask: ArrayLike<number>,
): number {
  let max = 0;
  for (let t = 0; t < mask.length; t++) {
    if (mask[t]) max = Math.max(max, Math.abs((recorded[t] ?? 0) - (recomputed[t] ?? 0)));
  }
  return max;
}
