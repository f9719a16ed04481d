import { z } from 'zod';
import { EngineError } from './errors.js';
import type { Model } from './model.js';

/** AdamW + learning-rate schedule + global grad-norm clipping, as the trainer configures it. */
export const AdamWConfigSchema = z
  .object({
    lr: z.number().positive().default(1e-3).describe('peak learning rate'),
    beta1: z.number().min(0).lt(1).default(0.9).describe('AdamW first-moment decay'),
    beta2: z.number().min(0).lt(1).default(0.999).describe('AdamW second-moment decay'),
    eps: z.number().positive().default(1e-8).describe('AdamW denominator epsilon'),
    weightDecay: z
      .number()
      .min(0)
      .default(0.01)
      .describe(
        'decoupled weight decay (torch AdamW); applied to matrices and embeddings, not to norms or biases',
      ),
    warmupSteps: z.number().int().min(0).default(0).describe('linear warmup from lr/warmupSteps to lr'),
    schedule: z.enum(['constant', 'cosine']).default('constant').describe('learning rate after warmup'),
    totalSteps: z
      .number()
      .int()
      .positive()
      .optional()
      .describe('cosine: the step at which lr reaches minLrRatio*lr'),
    minLrRatio: z.number().min(0).max(1).default(0).describe('cosine: floor as a fraction of lr'),
    maxGradNorm: z
      .number()
      .positive()
      .nullable()
      .default(1)
      .describe('clip the global gradient L2 norm to this; null disables clipping'),
  })
  .describe('AdamW optimizer settings');
export type AdamWConfig = z.infer<typeof AdamWConfigSchema>;
export type AdamWConfigInput = z.input<typeof AdamWConfigSchema>;

/** Serialisable optimizer state: with the weights, enough to resume bit-exactly. */
export interface OptimizerState {
  step: number;
  /** AdamW moments, flat in the model's parameter layout order. */
  m: Float32Array;
  v: Float32Array;
}

export interface StepResult {
  step: number;
  lr: number;
  /** global gradient norm before clipping */
  gradNorm: number;
  clipped: boolean;
}

/** Learning rate of 1-based step `step` under this config. */
export function learningRateAt(config: AdamWConfig, step: number): number {
  if (config.warmupSteps > 0 && step <= config.warmupSteps) return (config.lr * step) / config.warmupSteps;
  if (config.schedule === 'constant') return config.lr;
  const total = config.totalSteps ?? step;
  const span = Math.max(1, total - config.warmupSteps);
  const progress = Math.min(1, Math.max(0, (step - config.warmupSteps) / span));
  const floor = config.lr * config.minLrRatio;
  return floor + (config.lr - floor) * 0.5 * (1 + Math.cos(Math.PI * progress));
}

/**
 * AdamW over all of a model's parameters. Gradients accumulate in the model across micro-batches;
 * `step()` clips them by global norm, updates the weights, zeroes the gradients and bumps
 * `model.version` (so generators re-prefill their KV caches with the new weights).
 */
export class AdamW {
  readonly config: AdamWConfig;
  private stepCount = 0;

  constructor(
    readonly model: Model,
    config: AdamWConfigInput = {},
  ) {
    const parsed = AdamWConfigSchema.safeParse(config);
    if (!parsed.success) {
      throw new EngineError('INVALID_CONFIG', `invalid AdamW config: ${parsed.error.message}`, {
        cause: parsed.error,
      });
    }
    if (parsed.data.schedule === 'cosine' && parsed.data.totalSteps === undefined) {
      throw new EngineError('INVALID_CONFIG', 'the cosine schedule needs totalSteps');
    }
    this.config = parsed.data;
    model.adamMoments(); // the moments exist from here on (a model that is never optimised has none)
  }

  /** Steps taken so far. */
  get stepsTaken(): number {
    return this.stepCount;
  }

  /** Learning rate the next step() will use. */
  nextLearningRate(): number {
    return learningRateAt(this.config, this.stepCount + 1);
  }

  /** Clip, update, zero gradients. */
  step(): StepResult {
    const m = this.model;
    const gradNorm = m.gradNorm();
    if (!Number.isFinite(gradNorm)) {
      throw new EngineError(
        'INVALID_BATCH',
        `gradient norm is ${gradNorm}; the step was skipped (lower the lr or check the loss)`,
      );
    }
    const max = this.config.maxGradNorm;
    const clipped = max !== null && gradNorm > max;
    const scale = clipped ? max / (gradNorm + 1e-6) : 1;
    this.stepCount++;
    const lr = learningRateAt(this.config, this.stepCount);
    const c = this.config;
    m.native.adamw(m.handle, lr, c.beta1, c.beta2, c.eps, c.weightDecay, this.stepCount, scale);
    m.zeroGrad();
    m.markWeightsChanged();
    return { step: this.stepCount, lr, gradNorm, clipped };
  }

  /** A copy of the optimizer state. */
  state(): OptimizerState {
    const { m, v } = this.model.adamMoments();
    return { step: this.stepCount, m: m.slice(), v: v.slice() };
  }

  /** Zeroes the moments and the step count in place (a fresh optimizer without new buffers). */
  reset(): void {
    const { m, v } = this.model.adamMoments();
    m.fill(0);
    v.fill(0);
    this.stepCount = 0;
  }

  /** Sets the step count after the moments were written in place (checkpoint loading). @internal */
  restoreStep(step: number): void {
    if (!Number.isInteger(step) || step < 0)
      throw new EngineError(
        'CHECKPOINT_INVALID',
        `optimizer step must be a non-negative integer, got ${step}`,
      );
    this.stepCount = step;
  }

  /** Restores a state taken from state() of an optimizer over a model of the same config. */
  loadState(state: OptimizerState): void {
    const { m, v } = this.model.adamMoments();
    if (state.m.length !== m.length || state.v.length !== v.length) {
      throw new EngineError(
        'CHECKPOINT_MISMATCH',
        `optimizer state has ${state.m.length} moments, the model needs ${m.length}: it belongs to another model config`,
      );
    }
    if (!Number.isInteger(state.step) || state.step < 0)
      throw new EngineError('CHECKPOINT_INVALID', 'optimizer step must be a non-negative integer');
    m.set(state.m);
    v.set(state.v);
    this.stepCount = state.step;
  }
}

/** AdamW over a model's parameters. */
export function createAdamW(model: Model, config: AdamWConfigInput = {}): AdamW {
  return new AdamW(model, config);
}
