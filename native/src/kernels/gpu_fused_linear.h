// The fused-linear GRPO-RoC policy loss on device buffers (kernels/cuda/fused_linear.cu), for the
// engine's device model and for the kernels component's `cuda` / `hip` backends.
#pragma once
#include <cstddef>
#include <cstdint>

#include "kernels/token_math.h"

extern "C" {

/** Host-array entry (copies hidden and weight in, dhidden and dweight out): the kernels component's path. */
struct AgentrlFusedLinearArgs {
  agentrl::kernels::LossConfig config;
  agentrl::kernels::TokenInputs tokens;
  const float* hidden;  // [T, H]
  const float* weight;  // [V, H]
  int64_t H, V;
  float* dhidden;  // [T, H] out
  float* dweight;  // [V, H] out (added to when accumulate)
  int32_t accumulate;
  float* logp;     // [T] out
  float* entropy;  // [T] out or null
  agentrl::kernels::Metrics metrics;  // out
  int64_t workspace_bytes;            // out: device bytes beyond inputs and outputs
  int32_t precision;                  // 0: fp32 products, 1: bf16 tensor-core products (fp32 accumulation)
  int32_t repeat;                     // runs on the uploaded buffers (a bench: > 1); the outputs are the last run's
  int32_t passes;                     // out: 1 (one pass over the logits) or 2 (recomputed in the backward)
  double device_seconds;              // out: median of the runs' times, device buffers only (no copies)
};

typedef int (*agentrl_fused_linear_fn)(AgentrlFusedLinearArgs* args, char* err, int err_len);
}

#if defined(__CUDACC__) || defined(__HIPCC__) || defined(AGENTRL_HIP_CPU)
namespace agentrl::kernels::gpu {

/** Grow-only device scratch of FusedLinearDevice, kept by the caller so repeated calls allocate nothing. */
class FusedLinearScratch {
 public:
  FusedLinearScratch() = default;
  ~FusedLinearScratch();
  FusedLinearScratch(const FusedLinearScratch&) = delete;
  FusedLinearScratch& operator=(const FusedLinearScratch&) = delete;
  /** At least `bytes` of device memory (contents undefined after a growth). */
  void* Reserve(size_t bytes);

 private:
  void* p_ = nullptr;
  size_t cap_ = 0;
};

/**
 * hidden, weight, dhidden, dweight: device pointers; token inputs, logp and entropy: host arrays
 * (O(T), copied once each way). dweight is accumulated when `accumulate_dweight`, else written.
 * Logits exist only as one chunk of rows [chunk, V] at a time (one pass, or recomputed in the
 * backward: fused_linear.cu's header; `passes` gets which, when not null). Every device array of
 * the call lives in `scratch`.
 */
Metrics FusedLinearDevice(const LossConfig& c, const TokenInputs& in, const float* hidden, const float* weight,
                          int64_t H, int64_t V, float* dhidden, float* dweight, bool accumulate_dweight, float* logp,
                          float* entropy, int64_t* workspace_bytes, int precision,
                          FusedLinearScratch* scratch, int* passes = nullptr);

}  // namespace agentrl::kernels::gpu
#endif
