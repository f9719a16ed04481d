import { fnv1a, type Group, Rng, type Trajectory } from '@agentrl/protocol';
import { parseConfig, type RocConfig, type RocConfigInput, RocConfigSchema } from './config.js';
import { answerFormatPenalty, countToolErrors, NO_TOOL_CALL_ERROR_RATIO } from './penalty.js';
import { rocQuotas } from './quotas.js';
import { PositiveStats, type RocMetrics } from './roc-metrics.js';
import { checkGroups } from './validate.js';

/** What happened to one input group. */
export type RocFate = 'downsampled' | 'kept_whole' | 'dropped_too_small' | 'dropped_equal_reward';

export interface RocDecision {
  promptId: string;
  fate: RocFate;
  /** trajectories in the input group (N) */
  size: number;
  numPositive: number;
  numNegative: number;
  /** indices into the input group of the kept trajectories, ascending; empty when dropped */
  kept: Int32Array;
  keptPositive: number;
  keptNegative: number;
}

export interface RocResult {
  /** The kept groups, in input order, each with its kept trajectories in input order. */
  groups: Group[];
  /** One decision per input group, in input order. */
  decisions: RocDecision[];
  metrics: RocMetrics;
}

/** A trajectory is positive when its reward is above 0, as in the reference. */
export function isPositive(t: Pick<Trajectory, 'reward'>): boolean {
  return (t.reward as number) > 0;
}

/** numpy/torch `allclose(r0, r)` with their default tolerances (rtol 1e-5, atol 1e-8). */
function allRewardsEqual(ts: readonly Trajectory[]): boolean {
  const r0 = ts[0]!.reward as number;
  for (let i = 1; i < ts.length; i++) {
    const r = ts[i]!.reward as number;
    if (Math.abs(r0 - r) > 1e-8 + 1e-5 * Math.abs(r)) return false;
  }
  return true;
}

/**
 * Resample-on-Correct (rStar2-Agent): cuts each oversampled group of N to n trajectories.
 * Positives are ranked by penalty (tool-error ratio + answer-format penalty, each switchable),
 * lowest first, ties broken by the seed; negatives are drawn uniformly with the seed; quotas
 * follow `rocQuotas`. Groups smaller than n are dropped, groups of exactly n kept whole, and with
 * `rejectEqualReward` groups whose rewards are all equal are dropped first.
 *
 * A pure function of (groups, config): each group draws from its own stream, seeded by
 * `config.seed` and the group's prompt id, so a group's outcome does not depend on its neighbours.
 */
export function resampleOnCorrect(groups: readonly Group[], config: RocConfigInput = {}): RocResult {
  const cfg = parseConfig(RocConfigSchema, config, 'roc');
  checkGroups(groups);
  const m: RocMetrics = emptyMetrics(groups.length);
  const before = new PositiveStats();
  const after = new PositiveStats();
  let failedAll = 0;
  let callsAll = 0;
  const kept: Group[] = [];
  const decisions: RocDecision[] = [];

  for (const group of groups) {
    const ts = group.trajectories;
    m.trajectoriesIn += ts.length;
    for (const t of ts) {
      const c = countToolErrors(t);
      failedAll += c.failed;
      callsAll += c.calls;
    }
    let numPositive = 0;
    for (const t of ts) if (isPositive(t)) numPositive++;
    const d: RocDecision = {
      promptId: group.promptId,
      fate: 'kept_whole',
      size: ts.length,
      numPositive,
      numNegative: ts.length - numPositive,
      kept: new Int32Array(0),
      keptPositive: 0,
      keptNegative: 0,
    };
    decisions.push(d);

    if (cfg.rejectEqualReward && allRewardsEqual(ts)) {
      d.fate = 'dropped_equal_reward';
      m.groupsDroppedEqualReward++;
      if (ts[0]!.reward === 0) m.groupsDroppedAllZero++;
      continue;
    }
    if (ts.length < cfg.n) {
      d.fate = 'dropped_too_small';
      m.groupsDroppedTooSmall++;
      continue;
    }
    if (ts.length === cfg.n) {
      d.kept = Int32Array.from(ts.keys());
      m.groupsKeptWhole++;
    } else {
      d.fate = 'downsampled';
      d.kept = downsampleGroup(ts, cfg, Rng.seeded(cfg.seed, fnv1a(group.promptId)), before, after, m);
      m.groupsDownsampled++;
    }
    for (const i of d.kept) if (isPositive(ts[i]!)) d.keptPositive++;
    d.keptNegative = d.kept.length - d.keptPositive;
    m.trajectoriesKept += d.kept.length;
    kept.push({ ...group, trajectories: Array.from(d.kept, (i) => ts[i]!) });
  }

  m.trajectoriesDropped = m.trajectoriesIn - m.trajectoriesKept;
  m.toolErrorRatioAll = callsAll === 0 ? 0 : failedAll / callsAll;
  const b = before.finish();
  const a = after.finish();
  m.positiveToolErrorRatioBefore = b.ratio;
  m.positiveToolErrorRatioAfter = a.ratio;
  m.positiveMeanToolErrorPenaltyBefore = b.tool;
  m.positiveMeanToolErrorPenaltyAfter = a.tool;
  m.positiveMeanFormatPenaltyBefore = b.format;
  m.positiveMeanFormatPenaltyAfter = a.format;
  m.positiveMeanPenaltyBefore = b.penalty;
  m.positiveMeanPenaltyAfter = a.penalty;
  return { groups: kept, decisions, metrics: m };
}

/** Picks the kept indices of one group of N > n; returns them ascending. */
function downsampleGroup(
  ts: readonly Trajectory[],
  cfg: RocConfig,
  rng: Rng,
  before: PositiveStats,
  after: PositiveStats,
  m: RocMetrics,
): Int32Array {
  const N = ts.length;
  const pos: number[] = [];
  const neg: number[] = [];
  for (let i = 0; i < N; i++) (isPositive(ts[i]!) ? pos : neg).push(i);
  const q = rocQuotas(pos.length, neg.length, cfg.n, cfg.minPositive, cfg.minNegative);

  // Rank positives by penalty; equal penalties fall in a seeded random order (key), then by index.
  const P = pos.length;
  const penalty = new Float64Array(P);
  const key = new Uint32Array(P);
  const parts = new Float64Array(P * 4); // failed, calls, tool penalty, format penalty
  for (let k = 0; k < P; k++) {
    const t = ts[pos[k]!]!;
    const { failed, calls } = countToolErrors(t);
    const tool = calls === 0 ? NO_TOOL_CALL_ERROR_RATIO : failed / calls;
    const format = answerFormatPenalty(t);
    penalty[k] = (cfg.toolErrorPenalty ? tool : 0) + (cfg.formatPenalty ? format : 0);
    key[k] = rng.nextU32();
    parts[k * 4] = failed;
    parts[k * 4 + 1] = calls;
    parts[k * 4 + 2] = tool;
    parts[k * 4 + 3] = format;
    before.add(failed, calls, tool, format, penalty[k]!);
  }
  const order = Array.from(pos.keys()).sort(
    (x, y) => penalty[x]! - penalty[y]! || key[x]! - key[y]! || x - y,
  );
  const out = new Int32Array(cfg.n);
  let w = 0;
  for (let r = 0; r < q.positives; r++) {
    const k = order[r]!;
    out[w++] = pos[k]!;
    after.add(parts[k * 4]!, parts[k * 4 + 1]!, parts[k * 4 + 2]!, parts[k * 4 + 3]!, penalty[k]!);
  }

  // Negatives: a uniform draw of q.negatives without replacement (partial Fisher-Yates).
  for (let r = 0; r < q.negatives; r++) {
    const j = r + rng.below(neg.length - r);
    const tmp = neg[r]!;
    neg[r] = neg[j]!;
    neg[j] = tmp;
    out[w++] = neg[r]!;
  }
  m.positivesIn += P;
  m.positivesKept += q.positives;
  m.negativesIn += neg.length;
  m.negativesKept += q.negatives;
  return out.sort();
}

function emptyMetrics(groupsIn: number): RocMetrics {
  return {
    groupsIn,
    groupsDownsampled: 0,
    groupsKeptWhole: 0,
    groupsDroppedTooSmall: 0,
    groupsDroppedEqualReward: 0,
    groupsDroppedAllZero: 0,
    trajectoriesIn: 0,
    trajectoriesKept: 0,
    trajectoriesDropped: 0,
    positivesIn: 0,
    positivesKept: 0,
    negativesIn: 0,
    negativesKept: 0,
    toolErrorRatioAll: 0,
    positiveToolErrorRatioBefore: 0,
    positiveToolErrorRatioAfter: 0,
    positiveMeanToolErrorPenaltyBefore: 0,
    positiveMeanToolErrorPenaltyAfter: 0,
    positiveMeanFormatPenaltyBefore: 0,
    positiveMeanFormatPenaltyAfter: 0,
    positiveMeanPenaltyBefore: 0,
    positiveMeanPenaltyAfter: 0,
  };
}
