// Blocked, packed single-precision GEMM for the engine's CPU backend: AVX-512, AVX2+FMA and portable
// micro-kernels, one chosen at load time (cpu_kernels.h).
#pragma once

#include "engine/cpu/isa.h"

namespace agentrl::engine::cpu {

// The k-block of the packed SGEMM: an element's FMA chain restarts every kSgemmKc values of k.
constexpr int kSgemmKc = 256;

AGENTRL_ISA_BEGIN

// C[M,N] = alpha * op(A)[M,K] * op(B)[K,N] + beta * C, all row-major.
// op(A) = A (stored [M,K], lda) or A^T (stored [K,M]); op(B) = B (stored [K,N]) or B^T (stored [N,K]).
// beta == 0 never reads C. Runs on all OpenMP threads when the problem is large enough.
// Every element is one FMA chain over k per 256-long k-block, the blocks added to C in order: its
// value depends on its row of op(A), its column of op(B) and K only (not on M, N, the threads or
// the element's place in a tile), which is what batch-invariant generation builds on.
void Sgemm(bool trans_a, bool trans_b, int m, int n, int k, float alpha, const float* a, int lda,
           const float* b, int ldb, float beta, float* c, int ldc);

// Sgemm, except that M <= 16 with op(B) = B^T takes a register-blocked dot-product path without
// packing (16-lane partial sums): faster for decode, but an element's value then depends on M,
// i.e. on the batch. Used only by generation with batch invariance switched off.
void SgemmSmallM(bool trans_a, bool trans_b, int m, int n, int k, float alpha, const float* a, int lda,
                 const float* b, int ldb, float beta, float* c, int ldc);

// The same, on the calling thread only (for use inside an OpenMP region). `allow_small_m` lets
// M <= 16 take the dot-product path (see SgemmSmallM); off by default.
void SgemmSerial(bool trans_a, bool trans_b, int m, int n, int k, float alpha, const float* a, int lda,
                 const float* b, int ldb, float beta, float* c, int ldc, bool allow_small_m = false);

AGENTRL_ISA_END
}  // namespace agentrl::engine::cpu
