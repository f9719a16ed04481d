/**
 * The packed token-level inputs shared by both variants: T tokens of S sequences laid end to end,
 * sequence s spanning [cuSeqlens[s], cuSeqlens[s + 1]); row t of the logits predicts targets[t].
 */
export interface TokenInputs {
  /** [T] the sampled token ids the logits rows predict. */
  targets: Int32Array;
  /** [T] log-probabilities of `targets` under the sampling (old) policy. */
  oldLogprobs: Float32Array;
  /** [T] advantages (GRPO: the sequence's group-normalised reward on each of its tokens). */
  advantages: Float32Array;
  /** [T] 1 where the token counts in the loss (sampled response tokens), 0 elsewhere (prompt, tool output). */
  lossMask: Uint8Array;
  /** [S + 1] sequence offsets: 0, ..., T, non-decreasing. */
  cuSeqlens: Int32Array;
}

/** Inputs of the logits variant. */
export interface PolicyLossInputs extends TokenInputs {
  /**
   * [T, V] logits, row-major and contiguous: fp32, or bf16 bit patterns in a Uint16Array on the
   * `cuda`, `hip` and `reference` backends (dlogits are fp32 either way; see `float32ToBf16`).
   */
  logits: Float32Array | Uint16Array;
  /** V: the vocabulary size (row length of `logits`). */
  vocabSize: number;
}

/** Inputs of the fused-linear variant: logits = hidden @ weight^T are never materialised. */
export interface FusedLinearInputs extends TokenInputs {
  /** [T, H] final hidden states, row-major. */
  hidden: Float32Array;
  /** [V, H] lm_head weight, row-major (the layout of HF checkpoints). */
  weight: Float32Array;
  /** H */
  hiddenSize: number;
  /** V */
  vocabSize: number;
}

export interface PolicyLossMetrics {
  /** Loss tokens (mask = 1) in this batch. */
  tokens: number;
  /** Fraction of loss tokens whose ratio was clipped below (A < 0, ratio < 1 - clipLow): no gradient. */
  clipFracLow: number;
  /** Fraction clipped above (A > 0, ratio > 1 + clipHigh). */
  clipFracHigh: number;
  /** Fraction caught by the dual clip (A < 0, ratio > c). */
  clipFracDual: number;
  /** Mean over loss tokens of (r - 1) - log r, r the token ratio: the k3 estimate of KL(old || new). */
  approxKl: number;
  /** Mean over loss tokens of old - new log-probability (verl's ppo_kl, the k1 estimate). */
  ppoKl: number;
  /** Mean policy entropy over loss tokens (nats), when `computeEntropy` was set; NaN otherwise. */
  entropy: number;
}

export interface PolicyLossResult {
  loss: number;
  /** [T, V] d loss / d logits: a new array, the given `gradOut`, or `logits` itself when `inPlace`. */
  dlogits: Float32Array;
  /** [T] new log-probabilities of the targets (temperature applied). */
  logprobs: Float32Array;
  metrics: PolicyLossMetrics;
}

export interface FusedLinearResult {
  loss: number;
  /** [T, H] d loss / d hidden. */
  dHidden: Float32Array;
  /** [V, H] d loss / d weight. */
  dWeight: Float32Array;
  logprobs: Float32Array;
  metrics: PolicyLossMetrics;
}

/** Where dlogits go: a fresh array (default), a given buffer, or over the logits. */
export interface GradTarget {
  /** Write dlogits into this [T, V] buffer. */
  gradOut?: Float32Array;
  /** Overwrite `logits` with dlogits (saves T x V x 4 bytes). */
  inPlace?: boolean;
}

export type Backend = 'reference' | 'cpu' | 'cuda' | 'hip' | 'webgpu';
