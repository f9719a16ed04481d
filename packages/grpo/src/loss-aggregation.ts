import { type LossAggregationMode, LossAggregationModeSchema } from './config.js';
import { GrpoError, GrpoErrorCode } from './errors.js';

/**
 * Where the per-token losses come from: a packed batch of sequences laid end to end, sequence s
 * spanning tokens [cuSeqlens[s], cuSeqlens[s + 1]).
 */
export interface LossLayout {
  /** 1 where the token counts in the loss (sampled tokens), 0 elsewhere. */
  lossMask: ArrayLike<number>;
  /** S + 1 offsets, starting at 0 and ending at the token count, non-decreasing. */
  cuSeqlens: Int32Array;
}

export interface AggregationOptions {
  mode: LossAggregationMode;
  /**
   * The constant divisor of `seq-mean-token-sum-norm` (Dr. GRPO): the maximum response length of
   * the run, kept fixed through training. Required for that mode, ignored by the others.
   */
  horizon?: number;
  /**
   * Override the token count of `token-mean` (e.g. the loss tokens of the whole mini-batch, when
   * this micro-batch is one of several accumulated into one step). Default: this batch's.
   */
  tokenCount?: number;
  /** Override the sequence count of the `seq-mean-*` modes, as `tokenCount` does. Default: this batch's. */
  seqCount?: number;
}

function check(layout: LossLayout, options: AggregationOptions, tokens: number): void {
  if (!LossAggregationModeSchema.safeParse(options.mode).success)
    throw new GrpoError(
      GrpoErrorCode.INVALID_CONFIG,
      `is "${options.mode}": use one of token-mean, seq-mean-token-sum, seq-mean-token-mean, seq-mean-token-sum-norm`,
      { field: 'mode' },
    );
  const cu = layout.cuSeqlens;
  if (cu.length < 1 || cu[0] !== 0 || cu[cu.length - 1] !== tokens)
    throw new GrpoError(
      GrpoErrorCode.INVALID_INPUT,
      `must start at 0 and end at the ${tokens} tokens (got ${cu[0]} .. ${cu[cu.length - 1]})`,
      { field: 'cuSeqlens' },
    );
  for (let s = 1; s < cu.length; s++)
    if (cu[s]! < cu[s - 1]!)
      throw new GrpoError(GrpoErrorCode.INVALID_INPUT, `decreases at ${s} (${cu[s - 1]} then ${cu[s]})`, {
        field: 'cuSeqlens',
      });
  if (layout.lossMask.length !== tokens)
    throw new GrpoError(
      GrpoErrorCode.INVALID_INPUT,
      `has ${layout.lossMask.length} entries, the loss has ${tokens}`,
      { field: 'lossMask' },
    );
  if (options.mode === 'seq-mean-token-sum-norm' && !(options.horizon! > 0))
    throw new GrpoError(
      GrpoErrorCode.INVALID_CONFIG,
      `is ${options.horizon}: seq-mean-token-sum-norm needs a positive constant horizon (the max response length)`,
      { field: 'horizon' },
    );
}

/**
 * Aggregates per-token losses into one scalar, as verl's `agg_loss` does on a padded batch:
 * - `token-mean`: Σ masked loss / masked token count (0 when there is none);
 * - `seq-mean-token-sum`: mean over sequences of each sequence's masked sum;
 * - `seq-mean-token-mean`: mean over sequences of each sequence's masked mean (a sequence with no
 *   masked token contributes 0 and still counts);
 * - `seq-mean-token-sum-norm`: Σ over sequences of masked sums / horizon (verl sums here, it does
 *   not divide by the sequence count).
 * Masked-out tokens are skipped, not multiplied by 0, so a NaN there does not leak. Accumulates
 * in float64. This is the plain reference the policy-loss kernels are tested against.
 */
export function aggregateLoss(
  tokenLoss: ArrayLike<number>,
  layout: LossLayout,
  options: AggregationOptions,
): number {
  check(layout, options, tokenLoss.length);
  const { lossMask: mask, cuSeqlens: cu } = layout;
  const S = cu.length - 1;
  let total = 0;
  let tokens = 0;
  let seqTerms = 0;
  for (let s = 0; s < S; s++) {
    let sum = 0;
    let count = 0;
    for (let i = cu[s]!; i < cu[s + 1]!; i++) {
      if (mask[i] !== 1) continue;
      sum += tokenLoss[i]!;
      count++;
    }
    total += sum;
    tokens += count;
    seqTerms += options.mode === 'seq-mean-token-mean' ? sum / Math.max(count, 1) : sum;
  }
  const seqs = options.seqCount ?? S;
  switch (options.mode) {
    case 'token-mean': {
      const d = options.tokenCount ?? tokens;
      return d === 0 ? 0 : total / d;
    }
    case 'seq-mean-token-sum':
    case 'seq-mean-token-mean':
      return seqs === 0 ? 0 : seqTerms / seqs;
    case 'seq-mean-token-sum-norm':
      return total / options.horizon!;
  }
}

/**
 * d(aggregateLoss)/d(tokenLoss[i]) for every token: the weight the policy-loss kernels multiply
 * each token's loss gradient by, in float64. 0 on masked-out tokens. The one TS source of these
 * weights: @agentrl/kernels' reference and WebGPU backend call it, and its tests check the native
 * kernels (native/src/kernels/token_math.h) against it. The aggregate is linear in the token
 * losses, so `aggregateLoss === Σ weights[i] * tokenLoss[i]` over masked tokens.
 */
export function lossGradientWeights(layout: LossLayout, options: AggregationOptions): Float64Array {
  const tokens = layout.lossMask.length;
  check(layout, options, tokens);
  const { lossMask: mask, cuSeqlens: cu } = layout;
  const S = cu.length - 1;
  const out = new Float64Array(tokens);
  let count = 0;
  for (let i = 0; i < tokens; i++) if (mask[i] === 1) count++;
  const seqs = options.seqCount ?? S;
  for (let s = 0; s < S; s++) {
    let w: number;
    switch (options.mode) {
      case 'token-mean': {
        const d = options.tokenCount ?? count;
        w = d === 0 ? 0 : 1 / d;
        break;
      }
      case 'seq-mean-token-sum':
        w = seqs === 0 ? 0 : 1 / seqs;
        break;
      case 'seq-mean-token-mean': {
        let c = 0;
        for (let i = cu[s]!; i < cu[s + 1]!; i++) if (mask[i] === 1) c++;
        w = seqs === 0 ? 0 : 1 / (seqs * Math.max(c, 1));
        break;
      }
      case 'seq-mean-token-sum-norm':
        w = 1 / options.horizon!;
        break;
    }
    for (let i = cu[s]!; i < cu[s + 1]!; i++) out[i] = mask[i] === 1 ? w : 0;
  }
  return out;
}
