import type { LogprobScorer, Model } from '@agentrl/engine';
import { fusedLinearPolicyLoss } from '@agentrl/kernels';

/**
 * The rollout's logprob scorer for the in-process engine: the fused-linear kernel the policy loss
 * runs, applied to the sampler's own final hidden states. With batch-invariant generation those
 * hidden states are bit-identical to the training forward's, so the recorded logprobs equal the
 * ones policyStep recomputes (rolloutTrainLogprobMaxAbsDiff = 0: truly on-policy), except for the
 * last <= 3 rows of a micro-batch, which the kernel's logits GEMM sums on its leftover-row loop (up
 * to 1 float32 ulp; the fix belongs in the kernel).
 */
export function createTrainerLogprobScorer(model: Model): LogprobScorer {
  const H = model.shape.hidden;
  const V = model.shape.vocab;
  let dWeight: Float32Array | undefined;
  return ({ hidden: rows, targets: rowTargets, temperature }) => {
    // The kernel's logits GEMM runs rows in blocks of 4 and leftover rows on another loop whose
    // sums can differ in the last bit; the trainer's rows sit in blocks of 4 (all but the last <= 3
    // rows of a micro-batch), so the scorer pads to whole blocks to take the same path.
    const T = Math.ceil(rowTargets.length / 4) * 4;
    const hidden = new Float32Array(T * H);
    hidden.set(rows);
    const targets = new Int32Array(T);
    targets.set(rowTargets);
    // No token is in the loss, so the kernel's backward does nothing and the [V, H] scratch it
    // accumulates into is never written (nor cleared): one allocation for the whole run.
    dWeight ??= new Float32Array(V * H);
    return fusedLinearPolicyLoss(
      {
        hidden,
        weight: model.lmHeadWeight(),
        hiddenSize: H,
        vocabSize: V,
        targets,
        oldLogprobs: new Float32Array(T),
        advantages: new Float32Array(T),
        lossMask: new Uint8Array(T),
        cuSeqlens: Int32Array.of(0, T),
      },
      { temperature, dWeightOut: dWeight, accumulate: true },
    ).logprobs.subarray(0, rowTargets.length);
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
