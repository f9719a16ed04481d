// Blocked, packed, AVX-512 (AVX2 fallback) single-precision GEMM for the engine's CPU backend.
#pragma once

namespace agentrl::engine::cpu {

// C[M,N] = alpha * op(A)[M,K] * op(B)[K,N] + beta * C, all row-major.
// op(A) = A (stored [M,K], lda) or A^T (stored [K,M]); op(B) = B (stored [K,N]) or B^T (stored [N,K]).
// beta == 0 never reads C. Runs on all OpenMP threads when the problem is large enough.
void Sgemm(bool trans_a, bool trans_b, int m, int n, int k, float alpha, const float* a, int lda,
           const float* b, int ldb, float beta, float* c, int ldc);

// The same, on the calling thread only (for use inside an OpenMP region). `allow_small_m` lets
// M <= 16 take the dot-product path; Sgemm turns it off for row slices it made itself, so every
// element is summed in the same order whatever the thread count.
void SgemmSerial(bool trans_a, bool trans_b, int m, int n, int k, float alpha, const float* a, int lda,
                 const float* b, int ldb, float beta, float* c, int ldc, bool allow_small_m = true);

}  // namespace agentrl::engine::cpu
