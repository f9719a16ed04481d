// The policy loss's two row kernels for CUDA and HIP, shared by the logits loss (policy_loss.cu) and
// the fused-linear loss (fused_linear.cu). row_stats: one block per row streams the vocabulary once
// with a per-thread online (max, sum, entropy sum), merged across the block in shared memory;
// probabilities are never stored. row_grad: one block per row writes dlogits = g/tau (onehot -
// exp(z - log Z)); it may write in place over the logits row it reads.
#pragma once
#include <cstdint>

#include "gpu/gpu_compat.h"

namespace agentrl::kernels::gpu {

constexpr int kThreads = 256;

__device__ inline float Load(const float* p, int64_t i) { return p[i]; }
__device__ inline float Load(const uint16_t* p, int64_t i) {
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

}  // namespace agentrl::kernels::gpu
