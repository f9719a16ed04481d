export {
  advantagesFromRewards,
  broadcastAdvantage,
  broadcastPacked,
  computeGroupAdvantages,
  type GroupAdvantages,
} from './advantages.js';
export {
  type AdvantageConfig,
  type AdvantageConfigInput,
  AdvantageConfigSchema,
  GRPO_DEFAULTS,
  type GrpoConfig,
  type GrpoConfigInput,
  GrpoConfigSchema,
  type LossAggregationMode,
  LossAggregationModeSchema,
  type PackingConfig,
  type PackingConfigInput,
  PackingConfigSchema,
  type RocConfig,
  type RocConfigInput,
  RocConfigSchema,
} from './config.js';
export { GrpoError, GrpoErrorCode } from './errors.js';
export {
  type AggregationOptions,
  aggregateLoss,
  type LossLayout,
  lossGradientWeights,
} from './loss-aggregation.js';
export { type MicroBatch, packMicroBatches } from './pack.js';
export {
  answerFormatPenalty,
  countBoxedAnswers,
  countToolErrors,
  finalAssistantText,
  formatPenaltyFromCount,
  isFailedToolCall,
  NO_TOOL_CALL_ERROR_RATIO,
  toolErrorRatio,
} from './penalty.js';
export { type RocQuotas, rocQuotas } from './quotas.js';
export { isPositive, type RocDecision, type RocFate, type RocResult, resampleOnCorrect } from './roc.js';
export type { RocMetrics } from './roc-metrics.js';
export { roundHalfEvenRatio } from './rounding.js';
export { createSyntheticGroups, type SyntheticOptions } from './synthetic.js';
export { checkGroups, checkTrajectory, parseGroups } from './validate.js';
