// Block-wide reductions in shared memory for kernels of both GPU objects: a fixed tree order (the
// same bits every call) and no warp shuffles (warp 32 on NVIDIA, wavefront 64 on CDNA). Every
// thread of the block must call them; blockDim.x must be a power of two <= kMaxBlock.
#pragma once
#include "gpu/gpu_compat.h"

namespace agentrl::gpu {

constexpr int kMaxBlock = 256;

template <typename T, typename Op>
__device__ inline T BlockReduce(T v, T* sh, Op op) {
  sh[threadIdx.x] = v;
  __syncthreads();
  for (int s = blockDim.x / 2; s > 0; s >>= 1) {
    if (static_cast<int>(threadIdx.x) < s) sh[threadIdx.x] = op(sh[threadIdx.x], sh[threadIdx.x + s]);
    __syncthreads();
  }
  T out = sh[0];
  __syncthreads();
  return out;
}

struct SumOp {
  template <typename T>
  __device__ T operator()(T a, T b) const { return a + b; }
};
struct MaxOp {
  template <typename T>
  __device__ T operator()(T a, T b) const { return a > b ? a : b; }
};

}  // namespace agentrl::gpu
