// The logits policy loss for CUDA and HIP from this one source (see src/gpu/gpu_compat.h), on host
// arrays: the [T, V] logits are copied in, the two row kernels (kernels/cuda/row_kernels.h) run, and
// dlogits is copied back. The device-resident path is the fused-linear loss (fused_linear.cu).
// The O(T) token math between them runs on the host with the same code as the CPU backend.
#include <cstdio>
#include <cstring>
#include <exception>
#include <vector>

#include "gpu/abi_guard.h"
#include "gpu/gpu_compat.h"
#include "gpu/transfers.h"
#include "kernels/cuda/row_kernels.h"
#include "kernels/gpu_policy_loss.h"

namespace {

using agentrl::kernels::gpu::kThreads;
using agentrl::kernels::gpu::RowGradKernel;
using agentrl::kernels::gpu::RowStatsKernel;

struct DeviceBuffer {
  void* p = nullptr;
  explicit DeviceBuffer(size_t bytes) {
    if (bytes) agentrl::gpu::Check(gpuMalloc(&p, bytes), "malloc");
  }
  ~DeviceBuffer() {
    if (p) (void)gpuFree(p);
  }
  template <typename X>
  X* as() const { return static_cast<X*>(p); }
};

template <typename In>
void Run(AgentrlPolicyLossArgs* a) {
  using agentrl::gpu::Check;
  namespace k = agentrl::kernels;
  const int64_t T = a->tokens.T, V = a->V;
  if (T == 0) {
    std::vector<double> w, g;
    a->metrics = k::TokenMath(a->config, a->tokens, w, a->logp, a->entropy, g.data());
    return;
  }
  const float inv_tau = 1.f / a->config.temperature;
  DeviceBuffer d_logits(sizeof(In) * T * V), d_grad(sizeof(float) * T * V), d_targets(4 * T), d_max(4 * T), d_ls(4 * T),
      d_logp(4 * T), d_ent(a->config.entropy ? 4 * T : 0), d_g(4 * T), d_bad(sizeof(int));
  Check(agentrl::gpu::CopyToDevice(d_logits.p, a->logits, sizeof(In) * T * V), "copy logits");
  Check(agentrl::gpu::CopyToDevice(d_targets.p, a->tokens.targets, 4 * T), "copy targets");
  Check(gpuMemset(d_bad.p, 0, sizeof(int)), "memset");
  AGENTRL_LAUNCH(RowStatsKernel<In>, static_cast<unsigned>(T), kThreads, 0, d_logits.as<In>(), V, inv_tau,
                 d_targets.as<int32_t>(), d_max.as<float>(), d_ls.as<float>(), d_logp.as<float>(),
                 a->config.entropy ? d_ent.as<float>() : nullptr, d_bad.as<int>());
  Check(gpuGetLastError(), "row_stats launch");
  int bad = 0;
  Check(agentrl::gpu::CopyToHost(&bad, d_bad.p, sizeof(int)), "copy flag");
  if (bad) throw k::InvalidArgument("logits have NaN or +inf, or an all -inf row");
  Check(agentrl::gpu::CopyToHost(a->logp, d_logp.p, 4 * T), "copy logp");
  if (a->entropy) Check(agentrl::gpu::CopyToHost(a->entropy, d_ent.p, 4 * T), "copy entropy");
  std::vector<double> w = k::AggregationWeights(a->config, a->tokens), grad(T);
  a->metrics = k::TokenMath(a->config, a->tokens, w, a->logp, a->entropy, grad.data());
  std::vector<float> g(T);
  for (int64_t t = 0; t < T; ++t) g[t] = static_cast<float>(grad[t] * inv_tau);
  Check(agentrl::gpu::CopyToDevice(d_g.p, g.data(), 4 * T), "copy grad");
  AGENTRL_LAUNCH(RowGradKernel<In>, static_cast<unsigned>(T), kThreads, 0, d_logits.as<In>(), d_grad.as<float>(), V,
                 inv_tau, d_targets.as<int32_t>(), d_max.as<float>(), d_ls.as<float>(), d_g.as<float>());
  Check(gpuGetLastError(), "row_grad launch");
  Check(agentrl::gpu::CopyToHost(a->dlogits, d_grad.p, sizeof(float) * T * V), "copy dlogits");
}

}  // namespace

extern "C" __attribute__((visibility("default"))) int agentrl_policy_loss(AgentrlPolicyLossArgs* args, char* err,
                                                                           int err_len) {
  return agentrl::gpu::AbiGuard(err, err_len, [&] {
    if (args->logits_bf16) {
      Run<uint16_t>(args);
    } else {
      Run<float>(args);
    }
  });
}
