// The table of one ISA level's kernels (the engine's, and the policy-loss kernels' CPU code): each level's compile of kernel_table.cc fills one, and the
// dispatcher (dispatch.cc) forwards the public kernel names through the one chosen at load time.
#pragma once
#include "engine/cpu/ops.h"
#include "engine/cpu/sampler.h"
#include "kernels/policy_loss.h"

namespace agentrl::engine::cpu {

struct KernelTable {
  const char* name;  // "avx512", "avx2" or "portable"
  void (*sgemm)(bool, bool, int, int, int, float, const float*, int, const float*, int, float, float*, int);
  void (*sgemm_small_m)(bool, bool, int, int, int, float, const float*, int, const float*, int, float, float*, int);
  void (*sgemm_serial)(bool, bool, int, int, int, float, const float*, int, const float*, int, float, float*, int,
                       bool);
  void (*pack_panels)(const float*, int, int, float*);
  void (*panel_gemm)(int, int, int, const float*, int, const float*, const float*, bool, float*, int);
  void (*rms_norm_forward)(const float*, const float*, float*, float*, int, int, float);
  void (*rms_norm_backward)(const float*, const float*, const float*, const float*, float*, float*, int, int, bool);
  void (*rope)(float*, const int32_t*, int, int, int, int, const float*, const float*, bool);
  void (*attention_forward)(const float*, const float*, const float*, float*, float*, const int32_t*, int, int,
                            const AttnShape&);
  void (*attention_backward)(const float*, const float*, const float*, const float*, const float*, const float*,
                             float*, float*, float*, const int32_t*, int, int, const AttnShape&);
  void (*attention_cached)(const float*, float*, const int32_t*, const int32_t*, int, const float* const*,
                           const int32_t*, const float* const*, const AttnShape&);
  void (*adamw_update)(float*, float*, float*, const float*, size_t, size_t, float, float, float, float, float, float,
                       float);
  void (*exp_f32)(const float*, float*, size_t);
  void (*swiglu_forward)(const float*, const float*, float*, size_t);
  void (*swiglu_backward)(const float*, const float*, float*, float*, size_t);
  float (*softmax_xent_row)(float*, int, int, float);
  kernels::Metrics (*policy_loss)(const kernels::LossConfig&, const kernels::TokenInputs&, const float*, int64_t, float*,
                                  float*, float*);
  kernels::Metrics (*fused_linear)(const kernels::LossConfig&, const kernels::TokenInputs&, const float*, const float*,
                                   int64_t, int64_t, float*, float*, float*, int64_t*, bool);
  // The sampler's float64 work (sampler.cc): Math.exp's bits, the tempered probabilities of a row.
  void (*exp_f64)(const double*, double*, size_t);
  TemperedRow (*tempered_probs)(const float*, size_t, double, double*);
  // The engine bench's FMA-bound loop (peak_fma.cc): returns a sink value, *flops the work done.
  double (*peak_fma)(long iters, double* flops);
};

AGENTRL_ISA_BEGIN
const KernelTable& Kernels();
AGENTRL_ISA_END

}  // namespace agentrl::engine::cpu
