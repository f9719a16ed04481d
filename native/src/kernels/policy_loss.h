// Entry points of the policy-loss kernels (CPU here; CUDA/HIP through gpu_policy_loss.h).
#pragma once
#include <cstdint>

#include "engine/cpu/isa.h"
#include "kernels/token_math.h"

namespace agentrl::kernels {

// Compiled once per ISA level with the engine's CPU kernels (engine/cpu/isa.h); these names
// forward to the active level (kernels/cpu/dispatch.cc).
AGENTRL_ISA_BEGIN

/**
 * Fused policy loss on [T, V] logits: one streaming pass per row for the log-normaliser and one for
 * dlogits (written to `dlogits`, which may be `logits` itself). With token-level ratios both passes
 * run back to back on each row while it is still in cache. Fills logp_out [T] (and entropy_out [T]
 * when config.entropy).
 */
Metrics PolicyLossCpu(const LossConfig& c, const TokenInputs& in, const float* logits, int64_t V, float* dlogits,
                      float* logp_out, float* entropy_out);

/**
 * Fused-linear policy loss: logits = hidden [T, H] @ weight [V, H]^T / τ, tiled over tokens and
 * vocabulary, never stored. Forward keeps per-token log Z; backward recomputes each tile and
 * accumulates dhidden [T, H] (overwritten) and dweight [V, H] (overwritten, or added to with
 * accumulate_dweight, for gradient accumulation over micro-batches). Returns the workspace bytes it
 * allocated in `workspace_bytes`.
 */
Metrics FusedLinearCpu(const LossConfig& c, const TokenInputs& in, const float* hidden, const float* weight, int64_t H,
                       int64_t V, float* dhidden, float* dweight, float* logp_out, int64_t* workspace_bytes,
                       bool accumulate_dweight = false);

AGENTRL_ISA_END

/** Multithreaded copy of `n` floats, for the benchmark's bandwidth baseline. */
void CopyFloats(const float* src, float* dst, int64_t n);

/** Multithreaded in-place x *= factor: the read-modify-write stream an in-place kernel does. */
void ScaleFloats(float* data, int64_t n, float factor);

}  // namespace agentrl::kernels
