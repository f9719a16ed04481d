import { z } from 'zod';
import { GrpoError, GrpoErrorCode } from './errors.js';

/** Resample-on-Correct knobs; defaults are the rStar2-Agent run (oversample 32, keep 16, min 2 and 2). */
export const RocConfigSchema = z
  .object({
    groupSize: z
      .number()
      .int()
      .positive()
      .default(32)
      .describe('N: trajectories sampled per prompt (the oversampled group size)'),
    n: z.number().int().positive().default(16).describe('trajectories kept per prompt after down-sampling'),
    minPositive: z
      .number()
      .int()
      .nonnegative()
      .default(2)
      .describe('keep at least this many positives (reward > 0) when the group has them'),
    minNegative: z
      .number()
      .int()
      .nonnegative()
      .default(2)
      .describe('keep at least this many negatives (reward <= 0) when the group has them'),
    rejectEqualReward: z
      .boolean()
      .default(true)
      .describe('drop groups whose rewards are all equal (their advantages are all zero)'),
    toolErrorPenalty: z
      .boolean()
      .default(true)
      .describe('rank positives by tool-error ratio: failed calls / calls, 0.5 when no call was made'),
    formatPenalty: z
      .boolean()
      .default(true)
      .describe('rank positives by answer-format penalty: missing or repeated final answers, in [0, 1]'),
    seed: z
      .number()
      .int()
      .default(0)
      .describe('seed of the tie-breaks and of the uniform draw of negatives; vary it per step'),
  })
  .superRefine((c, ctx) => {
    if (c.n > c.groupSize)
      ctx.addIssue({
        code: 'custom',
        path: ['n'],
        message: `is ${c.n}, larger than groupSize ${c.groupSize}: sample at least n per prompt or lower n`,
      });
    if (c.minPositive + c.minNegative > c.n)
      ctx.addIssue({
        code: 'custom',
        path: ['minPositive'],
        message: `+ minNegative is ${c.minPositive + c.minNegative}, more than n = ${c.n}: lower the minimums`,
      });
  })
  .describe('Resample-on-Correct down-sampling');
export type RocConfig = z.infer<typeof RocConfigSchema>;
export type RocConfigInput = z.input<typeof RocConfigSchema>;

/** Group-advantage knobs; defaults are GRPO as rStar2-Agent runs it (std-normalised, torch's unbiased std). */
export const AdvantageConfigSchema = z
  .object({
    normalizeStd: z
      .boolean()
      .default(true)
      .describe('divide (r - mean) by (std + eps); false gives Dr. GRPO advantages r - mean'),
    unbiasedStd: z
      .boolean()
      .default(true)
      .describe('std with n - 1 in the denominator (torch.std, as verl does); false uses n'),
    eps: z.number().positive().default(1e-6).describe('added to the std so that a zero std stays finite'),
  })
  .describe('group-relative advantages');
export type AdvantageConfig = z.infer<typeof AdvantageConfigSchema>;
export type AdvantageConfigInput = z.input<typeof AdvantageConfigSchema>;

export const LossAggregationModeSchema = z
  .enum(['token-mean', 'seq-mean-token-sum', 'seq-mean-token-mean', 'seq-mean-token-sum-norm'])
  .describe('how per-token losses become one scalar (verl agg_loss modes)');
export type LossAggregationMode = z.infer<typeof LossAggregationModeSchema>;

/** Micro-batch packing knobs. */
export const PackingConfigSchema = z
  .object({
    maxTokensPerMicroBatch: z
      .number()
      .int()
      .positive()
      .default(16384)
      .describe('token budget of one micro-batch (prompt and response tokens of every packed sequence)'),
    keepGroupsWhole: z
      .boolean()
      .default(false)
      .describe('put all trajectories of one prompt in the same micro-batch'),
  })
  .describe('packing trajectories into micro-batches');
export type PackingConfig = z.infer<typeof PackingConfigSchema>;
export type PackingConfigInput = z.input<typeof PackingConfigSchema>;

/** The whole package config, as the trainer's config file holds it under `grpo`. */
export const GrpoConfigSchema = z
  .object({
    roc: RocConfigSchema.default(() => RocConfigSchema.parse({})),
    advantage: AdvantageConfigSchema.default(() => AdvantageConfigSchema.parse({})),
    lossAggregation: LossAggregationModeSchema.default('token-mean'),
    packing: PackingConfigSchema.default(() => PackingConfigSchema.parse({})),
  })
  .describe('GRPO-RoC algorithm settings');
export type GrpoConfig = z.infer<typeof GrpoConfigSchema>;
export type GrpoConfigInput = z.input<typeof GrpoConfigSchema>;

/** The defaults, parsed once: the rStar2-Agent recipe. */
export const GRPO_DEFAULTS: GrpoConfig = GrpoConfigSchema.parse({});

/**
 * Parses a config section with its schema and turns a zod failure into a GrpoError naming the
 * field (`roc.n is 20, larger than groupSize 16: ...`).
 */
export function parseConfig<S extends z.ZodType>(schema: S, input: unknown, prefix: string): z.infer<S> {
  const r = schema.safeParse(input ?? {});
  if (r.success) return r.data;
  const issue = r.error.issues[0]!;
  const path = [prefix, ...issue.path.map(String)].filter((s) => s !== '').join('.');
  throw new GrpoError(GrpoErrorCode.INVALID_CONFIG, issue.message, { field: path, cause: r.error });
}
