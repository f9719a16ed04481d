// One source for CUDA and HIP: kernels under src/**/cuda/*.cu include this header and use the gpu*
// names below; nvcc builds them into agentrl_cuda.so and hipcc (HIP_PLATFORM=amd) into agentrl_hip.so.
// Block-wide reductions stay in shared memory (block_reduce.h); the one warp primitive used is
// gpuShflXor below, within lane groups of at most 32 (so the same on a warp of 32 and a wavefront of 64).
#pragma once

#if defined(__HIPCC__) || defined(__HIP_PLATFORM_AMD__) || defined(AGENTRL_HIP_CPU)
// AGENTRL_HIP_CPU: the same sources built by g++ against ROCm's header-only HIP-CPU runtime (kernels
// run on host threads), used only to check the kernels without a GPU (scripts/hip-cpu-check.sh).
#include <hip/hip_runtime.h>
#define AGENTRL_GPU_IS_HIP 1
#if defined(AGENTRL_HIP_CPU)
#include <cstring>
// Device intrinsics HIP-CPU lacks (glibc declares an __expf it does not export).
#define __expf(x) expf(x)
inline float __uint_as_float(unsigned int x) {
  float f;
  std::memcpy(&f, &x, sizeof f);
  return f;
}
#endif
#define AGENTRL_GPU_NAME "hip"
using gpuError_t = hipError_t;
using gpuStream_t = hipStream_t;
using gpuDeviceProp = hipDeviceProp_t;
#define gpuSuccess hipSuccess
#define gpuMalloc hipMalloc
#define gpuFree hipFree
#define gpuMemcpy hipMemcpy
#define gpuMemset hipMemset
#define gpuMemcpyHostToDevice hipMemcpyHostToDevice
#define gpuMemcpyDeviceToHost hipMemcpyDeviceToHost
#define gpuDeviceSynchronize hipDeviceSynchronize
#define gpuGetLastError hipGetLastError
#define gpuGetErrorString hipGetErrorString
#define gpuGetDeviceCount hipGetDeviceCount
#define gpuGetDeviceProperties hipGetDeviceProperties
#define gpuMemcpyDeviceToDevice hipMemcpyDeviceToDevice
#define gpuMemsetAsync hipMemsetAsync
#define gpuMemcpyAsync hipMemcpyAsync
#define gpuStreamSynchronize hipStreamSynchronize
using gpuEvent_t = hipEvent_t;
#define gpuSetDevice hipSetDevice
#define gpuStreamCreateWithFlags hipStreamCreateWithFlags
#define gpuStreamDestroy hipStreamDestroy
#define gpuStreamNonBlocking hipStreamNonBlocking
#define gpuStreamWaitEvent hipStreamWaitEvent
#define gpuEventCreateWithFlags hipEventCreateWithFlags
#define gpuEventDestroy hipEventDestroy
#define gpuEventRecord hipEventRecord
#define gpuEventDisableTiming hipEventDisableTiming
// HIP-CPU has no triple-chevron launch (plain C++ compilers cannot parse it); hipcc accepts both.
#if defined(AGENTRL_HIP_CPU)
// HIP-CPU's null stream can run two consecutive launches at once (Runtime::wait_all_streams_ drains
// it from two threads), which breaks stream order; the check build waits after every launch.
#define AGENTRL_LAUNCH(kernel, grid, block, stream, ...)                            \
  do {                                                                                \
    hipLaunchKernelGGL(kernel, dim3(grid), dim3(block), 0, stream, __VA_ARGS__);   \
    (void)hipDeviceSynchronize();                                                   \
  } while (0)
#else
#define AGENTRL_LAUNCH(kernel, grid, block, stream, ...) \
  hipLaunchKernelGGL(kernel, dim3(grid), dim3(block), 0, stream, __VA_ARGS__)
#endif
#else
#include <cuda_runtime.h>
#define AGENTRL_GPU_NAME "cuda"
using gpuError_t = cudaError_t;
using gpuStream_t = cudaStream_t;
using gpuDeviceProp = cudaDeviceProp;
#define gpuSuccess cudaSuccess
#define gpuMalloc cudaMalloc
#define gpuFree cudaFree
#define gpuMemcpy cudaMemcpy
#define gpuMemset cudaMemset
#define gpuMemcpyHostToDevice cudaMemcpyHostToDevice
#define gpuMemcpyDeviceToHost cudaMemcpyDeviceToHost
#define gpuDeviceSynchronize cudaDeviceSynchronize
#define gpuGetLastError cudaGetLastError
#define gpuGetErrorString cudaGetErrorString
#define gpuGetDeviceCount cudaGetDeviceCount
#define gpuGetDeviceProperties cudaGetDeviceProperties
#define gpuMemcpyDeviceToDevice cudaMemcpyDeviceToDevice
#define gpuMemsetAsync cudaMemsetAsync
#define gpuMemcpyAsync cudaMemcpyAsync
#define gpuStreamSynchronize cudaStreamSynchronize
using gpuEvent_t = cudaEvent_t;
#define gpuSetDevice cudaSetDevice
#define gpuStreamCreateWithFlags cudaStreamCreateWithFlags
#define gpuStreamDestroy cudaStreamDestroy
#define gpuStreamNonBlocking cudaStreamNonBlocking
#define gpuStreamWaitEvent cudaStreamWaitEvent
#define gpuEventCreateWithFlags cudaEventCreateWithFlags
#define gpuEventDestroy cudaEventDestroy
#define gpuEventRecord cudaEventRecord
#define gpuEventDisableTiming cudaEventDisableTiming
#define AGENTRL_LAUNCH(kernel, grid, block, stream, ...) kernel<<<grid, block, 0, stream>>>(__VA_ARGS__)
#endif

#include <stdexcept>
#include <string>

namespace agentrl::gpu {

/**
 * v from the lane whose index differs from this one's in the bits of `mask` (mask < 32, so the
 * partner is in the same warp on NVIDIA and the same wavefront on CDNA). Every lane of the warp
 * must call it together: full mask on CUDA, and on HIP-CPU the shuffle is a block-wide barrier, so
 * every thread of the block must reach each call (keep calls out of divergent branches).
 */
__device__ inline float gpuShflXor(float v, int mask) {
#if defined(AGENTRL_GPU_IS_HIP)
  return __shfl_xor(v, mask);
#else
  return __shfl_xor_sync(0xffffffffu, v, mask);
#endif
}

/** Throws with the call site and the runtime's message; the C ABI wrappers turn it into an error string. */
inline void Check(gpuError_t err, const char* what) {
  if (err != gpuSuccess) {
    throw std::runtime_error(std::string(AGENTRL_GPU_NAME) + ": " + what + ": " + gpuGetErrorString(err));
  }
}

}  // namespace agentrl::gpu
