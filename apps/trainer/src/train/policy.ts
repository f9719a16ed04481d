import type { MicroBatch } from '@agentrl/grpo';

/** A token sequence with its loss mask (1 = trained on). */
export interface MaskedSequence {
  tokenIds: number[];
  lossMask: (0 | 1)[];
}

export interface PolicyLossOptions {
  clipLow: number;
  clipHigh: number;
  dualClip: number;
  aggregation: 'token-mean' | 'seq-mean-token-sum' | 'seq-mean-token-mean' | 'seq-mean-token-sum-norm';
  temperature: number;
}

export interface PolicyStepMetrics {
  loss: number;
  gradNorm: number;
  lr: number;
  clipFracLow: number;
  clipFracHigh: number;
  approxKl: number;
  trainTokens: number;
  /** max |sampler logprob - recomputed logprob| over the trained tokens (0 = truly on-policy). */
  rolloutTrainLogprobMaxAbsDiff: number;
}

/**
 * What the recipe needs from a trainable policy: the seam between this app and the compute
 * (@agentrl/engine + @agentrl/kernels); `NativeTrainer` implements it. Learning-rate schedules,
 * clipping and AdamW live behind it, configured from the run config.
 */
export interface TrainablePolicy {
  /** One optimizer step of masked cross-entropy (SFT). */
  sftStep(batch: readonly MaskedSequence[]): { loss: number; gradNorm: number; tokens: number; lr: number };
  /** Switch from the SFT to the RL optimizer (fresh moments). Idempotent. */
  startRl(): void;
  /**
   * One GRPO policy update through the fused-linear loss kernel: every micro-batch (packed by
   * @agentrl/grpo) accumulates into one optimizer step; token-mean counts the loss tokens of all.
   * Under mpirun with --engine a rank gets only micro-batch i with i % size === rank (holes elsewhere).
   */
  policyStep(
    microBatches: readonly (MicroBatch | undefined)[],
    opts: PolicyLossOptions,
    /** The step's normalisers when this rank holds only its share (undefined: count them here). */
    totals?: { tokenCount: number; seqCount: number },
  ): PolicyStepMetrics;
  /** Writes model.safetensors + config.json (an HF checkpoint) and the optimizer state into `dir`. */
  save(dir: string): Promise<void>;
}
