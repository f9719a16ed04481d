import { GrpoError, GrpoErrorCode } from './errors.js';
import { roundHalfEvenRatio } from './rounding.js';

/** How many positives and negatives RoC keeps from one group; they always add up to n. */
export interface RocQuotas {
  positives: number;
  negatives: number;
  /**
   * True where the reference (rStar2-Agent's `resample_of_correct`) would fail its own
   * `len(choices) == down_sample_to_n` assertion on this split, so the quotas come from the
   * sum-to-n fallback instead of its arithmetic.
   */
  fallback: boolean;
}

/**
 * The RoC quotas of a group of N = numPositive + numNegative > n trajectories, as rStar2-Agent's
 * `resample_of_correct` computes them (verl `recipe/rstar2_agent/src/down_sample/roc.py`):
 *
 * 1. positives = round(numPositive * n / N), negatives = round(numNegative * n / N), each
 *    rounded half to even (Python's `round`) on its own.
 * 2. If negatives <= min(minNegative, numNegative): negatives = that minimum, positives = n - it.
 * 3. If positives <= min(minPositive, numPositive): positives = that minimum, negatives = n - it.
 * 4. The reference keeps the first `positives` positives and `negatives` negatives (a slice, so
 *    at most what the group has) and asserts that they are n trajectories.
 *
 * Where that assertion holds, these are its quotas exactly. Where it would fail (the two
 * separately rounded quotas miss n and no minimum rule repairs them, e.g. N = 10, n = 5, five
 * positives, no minimums: 2 + 2), negatives are n - positives instead and steps 2 and 3 apply,
 * so the quotas always add up to n and never exceed what the group has.
 */
export function rocQuotas(
  numPositive: number,
  numNegative: number,
  n: number,
  minPositive: number,
  minNegative: number,
): RocQuotas {
  if (minPositive + minNegative > n)
    throw new GrpoError(
      GrpoErrorCode.INVALID_CONFIG,
      `is ${minPositive} + ${minNegative}, more than n = ${n}: lower the minimums`,
      { field: 'minPositive + minNegative' },
    );
  const total = numPositive + numNegative;
  const posFloor = Math.min(minPositive, numPositive);
  const negFloor = Math.min(minNegative, numNegative);
  const positives = roundHalfEvenRatio(numPositive, n, total);
  const reference = applyMinimums(
    positives,
    roundHalfEvenRatio(numNegative, n, total),
    n,
    posFloor,
    negFloor,
  );
  // The reference's slices keep at most what the group has. (Its other branch, both quotas below
  // their minimums, needs them to sum to n - 2 or less; two roundings lose at most 1.)
  const keptPositives = Math.min(reference.positives, numPositive);
  const keptNegatives = Math.min(reference.negatives, numNegative);
  if (keptPositives + keptNegatives === n)
    return { positives: keptPositives, negatives: keptNegatives, fallback: false };
  return { ...applyMinimums(positives, n - positives, n, posFloor, negFloor), fallback: true };
}

/** Steps 2 and 3: a quota at or below its floor becomes the floor, the other one takes the rest. */
function applyMinimums(
  positives: number,
  negatives: number,
  n: number,
  posFloor: number,
  negFloor: number,
): { positives: number; negatives: number } {
  if (negatives <= negFloor) {
    negatives = negFloor;
    positives = n - negatives;
  }
  if (positives <= posFloor) {
    positives = posFloor;
    negatives = n - positives;
  }
  return { positives, negatives };
}
