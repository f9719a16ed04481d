// On-device sampling from logits rows (see device_ops.h): one block per row, no sort. The top-p cut
// is found by bisection on the probability threshold (40 block reductions over the row), the draw
// by a fixed-order prefix over per-thread chunks, so a row and its uniform give the same token on
// every run. Ties at the cut are all kept (a sort-based sampler may keep only some of them).
#include <cmath>

#include "engine/cuda/device_ops.h"
#include "gpu/block_reduce.h"
#include "gpu/gpu_compat.h"

namespace agentrl::engine::gpu {
namespace {

using agentrl::gpu::BlockReduce;
using agentrl::gpu::MaxOp;
using agentrl::gpu::SumOp;

constexpr int kThreads = 256;

__global__ void SampleKernel(const float* logits, int vocab, float temperature, float top_p, const float* u,
                             int32_t* out, float* probs_all) {
  __shared__ float sh[kThreads];
  __shared__ int ish[kThreads];
  __shared__ float chunk_sum[kThreads];
  __shared__ int owner;
  __shared__ float owner_target;
  const int64_t row = blockIdx.x;
  const float* z = logits + row * vocab;
  float* p = probs_all + row * vocab;
  const int tid = threadIdx.x;
  if (temperature <= 0.f) {
    float best = -INFINITY;
    int arg = vocab;
    for (int j = tid; j < vocab; j += blockDim.x) {
      if (z[j] > best) {
        best = z[j];
        arg = j;
      }
    }
    sh[tid] = best;
    ish[tid] = arg;
    __syncthreads();
    for (int s = blockDim.x / 2; s > 0; s >>= 1) {
      if (tid < s) {
        const float b = sh[tid + s];
        const int bi = ish[tid + s];
        if (b > sh[tid] || (b == sh[tid] && bi < ish[tid])) {
          sh[tid] = b;
          ish[tid] = bi;
        }
      }
      __syncthreads();
    }
    if (tid == 0) out[row] = ish[0] < vocab ? ish[0] : 0;
    return;
  }
  const float inv_t = 1.0f / temperature;
  float mx = -INFINITY;
  for (int j = tid; j < vocab; j += blockDim.x) mx = fmaxf(mx, z[j] * inv_t);
  mx = BlockReduce(mx, sh, MaxOp());
  float sum = 0.f;
  for (int j = tid; j < vocab; j += blockDim.x) {
    const float e = expf(z[j] * inv_t - mx);
    p[j] = e;
    sum += e;
  }
  sum = BlockReduce(sum, sh, SumOp());
  const float inv_sum = 1.0f / sum;
  float pmax = 0.f;
  for (int j = tid; j < vocab; j += blockDim.x) {
    p[j] *= inv_sum;
    pmax = fmaxf(pmax, p[j]);
  }
  pmax = BlockReduce(pmax, sh, MaxOp());
  // The cut: the largest threshold whose kept mass still reaches top_p.
  float lo = 0.f, hi = pmax;
  if (top_p < 1.f) {
    for (int it = 0; it < 40; ++it) {
      const float mid = 0.5f * (lo + hi);
      float mass = 0.f;
      for (int j = tid; j < vocab; j += blockDim.x) mass += p[j] >= mid ? p[j] : 0.f;
      mass = BlockReduce(mass, sh, SumOp());
      if (mass >= top_p) {
        lo = mid;
      } else {
        hi = mid;
      }
    }
  }
  // Chunk sums of kept mass in vocabulary order, then the chunk and token that hold u * mass.
  const int chunk = (vocab + blockDim.x - 1) / blockDim.x;
  const int b0 = tid * chunk, b1 = b0 + chunk < vocab ? b0 + chunk : vocab;
  float cs = 0.f;
  for (int j = b0; j < b1; ++j) cs += p[j] >= lo ? p[j] : 0.f;
  chunk_sum[tid] = cs;
  __syncthreads();
  if (tid == 0) {
    float total = 0.f;
    for (int i = 0; i < static_cast<int>(blockDim.x); ++i) total += chunk_sum[i];
    const float target = u[row] * total;
    float run = 0.f;
    int who = -1, last_kept = 0;
    for (int i = 0; i < static_cast<int>(blockDim.x); ++i) {
      if (chunk_sum[i] <= 0.f) continue;
      last_kept = i;
      if (run + chunk_sum[i] > target) {
        who = i;
        break;
      }
      run += chunk_sum[i];
    }
    // Rounding can leave target at the very top: then the last kept token of the last chunk.
    owner = who >= 0 ? who : last_kept;
    owner_target = who >= 0 ? target - run : INFINITY;
  }
  __syncthreads();
  if (tid == owner) {
    float run = 0.f;
    int last = -1;
    for (int j = b0; j < b1; ++j) {
      if (p[j] < lo) continue;
      last = j;
      run += p[j];
      if (run > owner_target) break;
    }
    out[row] = last;
  }
}

}  // namespace

void Sample(const float* logits, int rows, int vocab, float temperature, float top_p, const float* u, int32_t* out,
            float* scratch) {
  if (rows == 0) return;
  AGENTRL_LAUNCH(SampleKernel, rows, kThreads, 0, logits, vocab, temperature, top_p, u, out, scratch);
  agentrl::gpu::Check(gpuGetLastError(), "sample");
}

}  // namespace agentrl::engine::gpu
