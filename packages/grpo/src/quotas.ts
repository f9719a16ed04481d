import { roundHalfEvenRatio } from './rounding.js';

/** How many positives and negatives RoC keeps from one group; they always add up to n. */
export interface RocQuotas {
  positives: number;
  negatives: number;
}

/**
 * The RoC quotas of a group of N = numPositive + numNegative > n trajectories.
 *
 * 1. positives = round-half-to-even(numPositive * n / N), negatives = n - positives. (The
 *    reference rounds both quotas separately and asserts they add up to n, which fails in rare
 *    splits such as N = 6, n = 3, one positive; elsewhere the two agree.)
 * 2. If negatives <= min(minNegative, numNegative): negatives = that minimum, positives = n - it.
 * 3. If positives <= min(minPositive, numPositive): positives = that minimum, negatives = n - it.
 *
 * Neither quota ever exceeds what the group has, and with minPositive + minNegative <= n both
 * minimums hold whenever the group has that many.
 */
export function rocQuotas(
  numPositive: number,
  numNegative: number,
  n: number,
  minPositive: number,
  minNegative: number,
): RocQuotas {
  const total = numPositive + numNegative;
  let positives = roundHalfEvenRatio(numPositive, n, total);
  let negatives = n - positives;
  const negFloor = Math.min(minNegative, numNegative);
  if (negatives <= negFloor) {
    negatives = negFloor;
    positives = n - negatives;
  }
  const posFloor = Math.min(minPositive, numPositive);
  if (positives <= posFloor) {
    positives = posFloor;
    negatives = n - positives;
  }
  return { positives, negatives };
}
