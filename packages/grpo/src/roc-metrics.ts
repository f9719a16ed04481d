/**
 * What RoC did to a batch. "Positives" statistics cover the groups RoC down-sampled (N > n):
 * `...Before` over all their positives, `...After` over the positives it kept, so the pair shows
 * how much cleaner the kept positives are than what was sampled.
 */
export interface RocMetrics {
  groupsIn: number;
  /** groups of N > n cut to n */
  groupsDownsampled: number;
  /** groups of exactly n, kept as they are */
  groupsKeptWhole: number;
  /** groups smaller than n, dropped */
  groupsDroppedTooSmall: number;
  /** groups whose rewards were all equal, dropped (rejectEqualReward) */
  groupsDroppedEqualReward: number;
  /** of those, how many were all-zero (nothing solved) */
  groupsDroppedAllZero: number;
  trajectoriesIn: number;
  trajectoriesKept: number;
  trajectoriesDropped: number;
  /** positives and negatives in the down-sampled groups, and how many of each were kept */
  positivesIn: number;
  positivesKept: number;
  negativesIn: number;
  negativesKept: number;
  /** failed tool calls / tool calls over every input trajectory (pooled; 0 when no call) */
  toolErrorRatioAll: number;
  /** failed / calls pooled over the positives of down-sampled groups, before and after */
  positiveToolErrorRatioBefore: number;
  positiveToolErrorRatioAfter: number;
  /** mean per-trajectory tool-error ratio (0.5 for no call) of those positives, before and after */
  positiveMeanToolErrorPenaltyBefore: number;
  positiveMeanToolErrorPenaltyAfter: number;
  /** mean answer-format penalty of those positives, before and after */
  positiveMeanFormatPenaltyBefore: number;
  positiveMeanFormatPenaltyAfter: number;
  /** mean ranking penalty (the enabled terms summed) of those positives, before and after */
  positiveMeanPenaltyBefore: number;
  positiveMeanPenaltyAfter: number;
}

/** Running sums over positives; `finish` turns them into means. */
export class PositiveStats {
  count = 0;
  failed = 0;
  calls = 0;
  toolPenalty = 0;
  formatPenalty = 0;
  penalty = 0;

  add(failed: number, calls: number, toolPenalty: number, formatPenalty: number, penalty: number): void {
    this.count++;
    this.failed += failed;
    this.calls += calls;
    this.toolPenalty += toolPenalty;
    this.formatPenalty += formatPenalty;
    this.penalty += penalty;
  }

  finish(): { ratio: number; tool: number; format: number; penalty: number } {
    const c = this.count || 1;
    return {
      ratio: this.calls === 0 ? 0 : this.failed / this.calls,
      tool: this.toolPenalty / c,
      format: this.formatPenalty / c,
      penalty: this.penalty / c,
    };
  }
}
