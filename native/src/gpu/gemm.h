// Row-major GEMM on device memory for the GPU objects: C = alpha op(A) op(B) + beta C, the same
// argument order as the CPU engine's Sgemm (engine/cpu/sgemm.h), so device code reads like model.cc.
// Runs on cuBLASLt / hipBLASLt when the library loads at run time (dlopen, see gpu/cuda/gemm.cu),
// else on a plain tiled fp32 kernel (the path HIP-CPU checks and the path of a machine without the
// library). Device code only: include from src/**/cuda/*.cu.
#pragma once
#include <cstdint>
#include <string>

namespace agentrl::gpu {

enum class GemmPrecision : int {
  kFp32 = 0,  // fp32 inputs, fp32 compute (CUBLAS_COMPUTE_32F)
  kBf16 = 1,  // fp32 storage, bf16 tensor-core products, fp32 accumulation (COMPUTE_32F_FAST_16BF)
};

void Gemm(bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K, float alpha, const float* A, int64_t lda,
          const float* B, int64_t ldb, float beta, float* C, int64_t ldc, GemmPrecision precision);

/** "cublasLt 13.0.x", "hipblaslt", or "fallback kernel (why)": which path Gemm takes here. */
std::string GemmPath();

}  // namespace agentrl::gpu
