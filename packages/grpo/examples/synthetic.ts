/**
 * GRPO-RoC on seeded synthetic groups: what `pnpm train` runs until the trainer exists.
 * Oversamples 32 trajectories for each of 8 prompts, cuts each group to 16 with Resample-on-Correct,
 * computes group advantages and packs the result into micro-batches.
 */
import {
  computeGroupAdvantages,
  createSyntheticGroups,
  GRPO_DEFAULTS,
  packMicroBatches,
  resampleOnCorrect,
} from '@agentrl/grpo';

const seed = Number(process.env.AGENTRL_SEED ?? 42);
const cfg = GRPO_DEFAULTS;
const groups = createSyntheticGroups({ prompts: 8, groupSize: cfg.roc.groupSize, tokens: 1024, seed });

const t0 = performance.now();
const roc = resampleOnCorrect(groups, { ...cfg.roc, seed });
const advantages = computeGroupAdvantages(roc.groups, cfg.advantage);
const batches = packMicroBatches(roc.groups, advantages, {
  maxTokensPerMicroBatch: 32768,
  keepGroupsWhole: true,
});
const ms = performance.now() - t0;

const m = roc.metrics;
const pct = (x: number) => `${(100 * x).toFixed(1)}%`;
const fixed = (x: number) => x.toFixed(3);
console.log('agentrl: GRPO-RoC on synthetic groups (no model is trained: the trainer is not built yet)\n');
console.log(
  `config: keep n=${cfg.roc.n} of N=${cfg.roc.groupSize}, min ${cfg.roc.minPositive} positives / ${cfg.roc.minNegative} negatives, seed ${seed}\n`,
);
console.log('prompt     rewards  fate                  kept +/-  mean   std    advantage +/-');
roc.decisions.forEach((d) => {
  const a = advantages.find((x) => x.promptId === d.promptId);
  const pos = a ? Math.max(...a.advantages) : Number.NaN;
  const neg = a ? Math.min(...a.advantages) : Number.NaN;
  console.log(
    [
      d.promptId.padEnd(10),
      `${d.numPositive}/${d.size}`.padEnd(8),
      d.fate.padEnd(21),
      `${d.keptPositive}/${d.keptNegative}`.padEnd(9),
      (a ? fixed(a.mean) : '-').padEnd(6),
      (a ? fixed(a.std) : '-').padEnd(6),
      a ? `${fixed(pos)} / ${fixed(neg)}` : '-',
    ].join(' '),
  );
});
console.log(`
groups: ${m.groupsIn} in, ${m.groupsDownsampled} down-sampled, ${m.groupsKeptWhole} kept whole, ${m.groupsDroppedEqualReward} dropped (all rewards equal), ${m.groupsDroppedTooSmall} dropped (smaller than n)
trajectories: ${m.trajectoriesIn} in, ${m.trajectoriesKept} kept, ${m.trajectoriesDropped} dropped
tool-call error ratio, all trajectories:      ${pct(m.toolErrorRatioAll)}
tool-call error ratio, positives before RoC:  ${pct(m.positiveToolErrorRatioBefore)}
tool-call error ratio, positives after RoC:   ${pct(m.positiveToolErrorRatioAfter)}
answer-format penalty, positives before/after: ${fixed(m.positiveMeanFormatPenaltyBefore)} / ${fixed(m.positiveMeanFormatPenaltyAfter)}
ranking penalty, positives before/after:       ${fixed(m.positiveMeanPenaltyBefore)} / ${fixed(m.positiveMeanPenaltyAfter)}
micro-batches (32768-token budget, groups whole): ${batches.length}, tokens ${batches.map((b) => b.numTokens).join(', ')}
RoC + advantages + packing took ${ms.toFixed(1)} ms`);
