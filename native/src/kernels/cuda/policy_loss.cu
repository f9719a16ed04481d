// Policy-loss row kernels for CUDA and HIP from this one source (see src/gpu/gpu_compat.h).
// row_stats: one block per row streams the vocabulary once with a per-thread online (max, sum,
// entropy sum), then merges across the block in shared memory; probabilities are never stored.
// row_grad: one block per row writes dlogits = g/τ (onehot - exp(z - log Z)).
// The O(T) token math between them runs on the host with the same code as the CPU backend.
#include <cstdio>
#include <cstring>
#include <exception>
#include <vector>

#include "gpu/gpu_compat.h"
#include "kernels/gpu_policy_loss.h"

namespace {

constexpr int kThreads = 256;

__device__ __forceinline__ float Load(const float* p, int64_t i) { return p[i]; }
__device__ __forceinline__ float Load(const uint16_t* p, int64_t i) {
  return __uint_as_float(static_cast<uint32_t>(p[i]) << 16);  // bf16 -> fp32 is a shift
}

template <typename In>
__global__ void RowStatsKernel(const In* logits, int64_t V, float inv_tau, const int32_t* targets, float* row_max,
                               float* log_s, float* logp, float* entropy, int* bad) {
  __shared__ float sm[kThreads], ss[kThreads], su[kThreads];
  const int64_t t = blockIdx.x;
  const In* row = logits + t * V;
  float m = -INFINITY, s = 0.f, u = 0.f;
  int b = 0;
  for (int64_t j = threadIdx.x; j < V; j += blockDim.x) {
    float z = Load(row, j) * inv_tau;
    b |= !(z <= 3.402823466e38f);
    if (z == -INFINITY) continue;
    if (z > m) {  // online rescale (one exp per new max)
      float k = m == -INFINITY ? 0.f : __expf(m - z);
      u = (m == -INFINITY) ? 0.f : (u + s * (m - z)) * k;
      s = s * k + 1.f;
      m = z;
    } else {
      float e = __expf(z - m);
      s += e;
      u += e * (z - m);
    }
  }
  sm[threadIdx.x] = m;
  ss[threadIdx.x] = s;
  su[threadIdx.x] = u;
  if (b) atomicOr(bad, 1);
  __syncthreads();
  for (int stride = blockDim.x / 2; stride > 0; stride >>= 1) {
    if (threadIdx.x < stride) {
      float m1 = sm[threadIdx.x], m2 = sm[threadIdx.x + stride];
      float s1 = ss[threadIdx.x], s2 = ss[threadIdx.x + stride];
      float u1 = su[threadIdx.x], u2 = su[threadIdx.x + stride];
      float mm = fmaxf(m1, m2);
      if (mm == -INFINITY) {
        s1 = 0.f; u1 = 0.f;
      } else {
        float k1 = m1 == -INFINITY ? 0.f : __expf(m1 - mm), k2 = m2 == -INFINITY ? 0.f : __expf(m2 - mm);
        float d1 = m1 == -INFINITY ? 0.f : (m1 - mm), d2 = m2 == -INFINITY ? 0.f : (m2 - mm);
        u1 = (u1 + s1 * d1) * k1 + (u2 + s2 * d2) * k2;
        s1 = s1 * k1 + s2 * k2;
      }
      sm[threadIdx.x] = mm;
      ss[threadIdx.x] = s1;
      su[threadIdx.x] = u1;
    }
    __syncthreads();
  }
  if (threadIdx.x == 0) {
    float mm = sm[0];
    if (mm == -INFINITY) atomicOr(bad, 1);
    // max and log s stay apart so (z - max) - log s keeps its precision for large |z|
    row_max[t] = mm;
    log_s[t] = logf(ss[0]);
    logp[t] = (Load(row, targets[t]) * inv_tau - mm) - logf(ss[0]);
    if (entropy) entropy[t] = logf(ss[0]) - su[0] / ss[0];
  }
}

template <typename In>
__global__ void RowGradKernel(const In* logits, float* dlogits, int64_t V, float inv_tau, const int32_t* targets,
                              const float* row_max, const float* log_s, const float* g_over_tau) {
  const int64_t t = blockIdx.x;
  const In* row = logits + t * V;
  float* out = dlogits + t * V;
  const float g = g_over_tau[t], m = row_max[t], ls = log_s[t];
  const int32_t tgt = targets[t];
  for (int64_t j = threadIdx.x; j < V; j += blockDim.x) {
    float v = g == 0.f ? 0.f : -g * __expf((Load(row, j) * inv_tau - m) - ls);
    out[j] = j == tgt ? v + g : v;
  }
}

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
  Check(gpuMemcpy(d_logits.p, a->logits, sizeof(In) * T * V, gpuMemcpyHostToDevice), "copy logits");
  Check(gpuMemcpy(d_targets.p, a->tokens.targets, 4 * T, gpuMemcpyHostToDevice), "copy targets");
  Check(gpuMemset(d_bad.p, 0, sizeof(int)), "memset");
  RowStatsKernel<In><<<static_cast<unsigned>(T), kThreads>>>(d_logits.as<In>(), V, inv_tau, d_targets.as<int32_t>(),
                                                             d_max.as<float>(), d_ls.as<float>(), d_logp.as<float>(),
                                                             a->config.entropy ? d_ent.as<float>() : nullptr,
                                                             d_bad.as<int>());
  Check(gpuGetLastError(), "row_stats launch");
  int bad = 0;
  Check(gpuMemcpy(&bad, d_bad.p, sizeof(int), gpuMemcpyDeviceToHost), "copy flag");
  if (bad) throw k::InvalidArgument("logits have NaN or +inf, or an all -inf row");
  Check(gpuMemcpy(a->logp, d_logp.p, 4 * T, gpuMemcpyDeviceToHost), "copy logp");
  if (a->entropy) Check(gpuMemcpy(a->entropy, d_ent.p, 4 * T, gpuMemcpyDeviceToHost), "copy entropy");
  std::vector<double> w = k::AggregationWeights(a->config, a->tokens), grad(T);
  a->metrics = k::TokenMath(a->config, a->tokens, w, a->logp, a->entropy, grad.data());
  std::vector<float> g(T);
  for (int64_t t = 0; t < T; ++t) g[t] = static_cast<float>(grad[t] * inv_tau);
  Check(gpuMemcpy(d_g.p, g.data(), 4 * T, gpuMemcpyHostToDevice), "copy grad");
  RowGradKernel<In><<<static_cast<unsigned>(T), kThreads>>>(d_logits.as<In>(), d_grad.as<float>(), V, inv_tau,
                                                            d_targets.as<int32_t>(), d_max.as<float>(), d_ls.as<float>(),
                                                            d_g.as<float>());
  Check(gpuGetLastError(), "row_grad launch");
  Check(gpuMemcpy(a->dlogits, d_grad.p, sizeof(float) * T * V, gpuMemcpyDeviceToHost), "copy dlogits");
}

}  // namespace

extern "C" __attribute__((visibility("default"))) int agentrl_policy_loss(AgentrlPolicyLossArgs* args, char* err,
                                                                           int err_len) {
  try {
    if (args->logits_bf16) {
      Run<uint16_t>(args);
    } else {
      Run<float>(args);
    }
    return 0;
  } catch (const agentrl::kernels::InvalidArgument& e) {
    std::snprintf(err, err_len, "invalid:%s", e.what());
    return 2;
  } catch (const std::exception& e) {
    std::snprintf(err, err_len, "%s", e.what());
    return 1;
  }
}
