import type { ModelConfigInput } from '../src/config.js';
import type { Model } from '../src/model.js';

/** Qwen3-0.6B's shape (its config.json; random weights: the cost does not depend on them). */
export const QWEN3_0_6B: ModelConfigInput = {
  architectures: ['Qwen3ForCausalLM'],
  vocab_size: 151_936,
  hidden_size: 1024,
  intermediate_size: 3072,
  num_hidden_layers: 28,
  num_attention_heads: 16,
  num_key_value_heads: 8,
  head_dim: 128,
  max_position_embeddings: 40_960,
  rope_theta: 1_000_000,
  rms_norm_eps: 1e-6,
  tie_word_embeddings: true,
};

/** The same shape for the PyTorch peer (torch-peer.py's TORCH_PEER_CONFIG). */
export function torchPeerConfig(s: Model['shape']) {
  return {
    vocab: s.vocab,
    hidden: s.hidden,
    intermediate: s.intermediate,
    layers: s.layers,
    heads: s.heads,
    kv_heads: s.kvHeads,
    head_dim: s.headDim,
    rope_theta: s.ropeTheta,
    eps: s.eps,
  };
}

/** Matrix FLOPs per token of a forward (every linear and the lm_head), 2 per multiply-add. */
export function forwardMatmulFlopsPerToken(s: Model['shape']): number {
  const perLayer =
    2 * s.hidden * s.heads * s.headDim + 2 * s.hidden * s.kvHeads * s.headDim + 3 * s.hidden * s.intermediate;
  return 2 * (s.layers * perLayer + s.vocab * s.hidden);
}

/**
 * Matrix FLOPs per prompt token of a prefill of `promptLength`-token prompts: every layer's linears
 * for each token, the lm_head once per prompt (only the last token's logits are computed).
 */
export function prefillMatmulFlopsPerToken(s: Model['shape'], promptLength: number): number {
  return forwardMatmulFlopsPerToken(s) - (2 * s.vocab * s.hidden * (promptLength - 1)) / promptLength;
}

/** Attention FLOPs of a causal forward over sequences of these lengths (scores and values). */
export function forwardAttentionFlops(s: Model['shape'], seqLens: readonly number[]): number {
  return s.layers * seqLens.reduce((a, L) => a + 2 * L * L * s.heads * s.headDim, 0);
}

/** Bytes of weights one decode step reads: every matrix once, lm_head included (tied: the embedding). */
export function weightBytesPerStep(s: Model['shape']): number {
  return (4 * forwardMatmulFlopsPerToken(s)) / 2;
}
