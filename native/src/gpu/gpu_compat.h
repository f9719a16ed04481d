// One source for CUDA and HIP: kernels under src/**/cuda/*.cu include this header and use the gpu*
// names below; nvcc builds them into agentrl_cuda.so and hipcc (HIP_PLATFORM=amd) into agentrl_hip.so.
// Kernels avoid warp shuffles (warp 32 on NVIDIA, wavefront 64 on CDNA) and reduce in shared memory.
#pragma once

#if defined(__HIPCC__) || defined(__HIP_PLATFORM_AMD__)
#include <hip/hip_runtime.h>
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
#endif

#include <stdexcept>
#include <string>

namespace agentrl::gpu {

/** Throws with the call site and the runtime's message; the C ABI wrappers turn it into an error string. */
inline void Check(gpuError_t err, const char* what) {
  if (err != gpuSuccess) {
    throw std::runtime_error(std::string(AGENTRL_GPU_NAME) + ": " + what + ": " + gpuGetErrorString(err));
  }
}

}  // namespace agentrl::gpu
