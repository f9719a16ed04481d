import { LossAggregationModeSchema } from '@agentrl/grpo';
import { z } from 'zod';
import { KernelError, KernelErrorCode } from './errors.js';

/** @agentrl/grpo's aggregation modes: the weights come from its `lossGradientWeights`. */
export const AggregationModeSchema = LossAggregationModeSchema;
export type AggregationMode = z.infer<typeof AggregationModeSchema>;

/** The policy-loss knobs; defaults are the rStar2-Agent recipe (clip-higher 0.2/0.28, dual clip 3, token-mean). */
export const PolicyLossConfigSchema = z
  .object({
    temperature: z
      .number()
      .positive()
      .default(1)
      .describe('logits are divided by this before log-softmax (the sampling temperature)'),
    clipLow: z.number().min(0).max(1).default(0.2).describe('ratio is clipped below at 1 - clipLow'),
    clipHigh: z
      .number()
      .min(0)
      .default(0.28)
      .describe('ratio is clipped above at 1 + clipHigh (clip-higher)'),
    dualClip: z
      .number()
      .gt(1)
      .nullable()
      .default(3)
      .describe('dual-clip constant c for negative advantages (loss capped at -A*c); null disables'),
    maxLogRatio: z
      .number()
      .positive()
      .default(20)
      .describe('log-ratio clamp: log(pi/pi_old) is clamped to [-this, this]'),
    ratioLevel: z
      .enum(['token', 'sequence'])
      .default('token')
      .describe('token: PPO/GRPO per-token ratio; sequence: GSPO length-normalised sequence ratio'),
    aggregation: AggregationModeSchema.default('token-mean'),
    horizon: z
      .number()
      .positive()
      .optional()
      .describe(
        'constant divisor of seq-mean-token-sum-norm (the max response length); required for that mode',
      ),
    tokenCount: z
      .number()
      .int()
      .nonnegative()
      .optional()
      .describe(
        'token-mean divisor override (loss tokens of the whole mini-batch when accumulating micro-batches)',
      ),
    seqCount: z
      .number()
      .int()
      .nonnegative()
      .optional()
      .describe('seq-mean-* divisor override, like tokenCount'),
    computeEntropy: z
      .boolean()
      .default(false)
      .describe('also return the mean entropy of the policy over loss tokens'),
  })
  .describe('GRPO-RoC policy loss settings');
export type PolicyLossConfig = z.infer<typeof PolicyLossConfigSchema>;
export type PolicyLossConfigInput = z.input<typeof PolicyLossConfigSchema>;

export const POLICY_LOSS_DEFAULTS: PolicyLossConfig = PolicyLossConfigSchema.parse({});

/** Parses the knobs once and turns a zod failure into a KernelError naming the field. */
export function parsePolicyLossConfig(input: PolicyLossConfigInput = {}): PolicyLossConfig {
  const r = PolicyLossConfigSchema.safeParse(input);
  if (!r.success) {
    const issue = r.error.issues[0];
    const field = issue?.path.join('.') || 'config';
    throw new KernelError(
      KernelErrorCode.INVALID_CONFIG,
      `is invalid: ${issue?.message ?? r.error.message}`,
      {
        field: `config.${field}`,
      },
    );
  }
  const cfg = r.data;
  if (cfg.aggregation === 'seq-mean-token-sum-norm' && cfg.horizon === undefined) {
    throw new KernelError(
      KernelErrorCode.INVALID_CONFIG,
      'is missing: seq-mean-token-sum-norm needs a constant horizon (the max response length of the run)',
      { field: 'config.horizon' },
    );
  }
  return cfg;
}
