// Batch-invariant products against weights packed once into column panels, for generation.
//
// Every output element C[i, j] is computed with exactly the arithmetic of the packed SGEMM
// (sgemm.cc's micro-kernel): an FMA chain over k from zero inside each block of kPanelKc values of
// k, each block's sum added to C in order of k. That arithmetic depends only on row i of A, column j
// of W and K, never on how many rows share the call, which rows they are, how columns are split
// between threads or which of PanelGemm / Sgemm ran it: so a token's result does not depend on the
// batch it was computed in, and the sampler's logits equal the training forward's.
#pragma once
#include <cstddef>

#include "engine/cpu/isa.h"
#include "engine/cpu/sgemm.h"

namespace agentrl::engine::cpu {

// Width of a column panel (floats) and the k-block of the packed SGEMM the arithmetic follows.
constexpr int kPanelWidth = 16;
constexpr int kPanelKc = kSgemmKc;

// Floats a packed copy of a [n, k] weight takes (n rounded up to whole panels).
inline size_t PanelFloats(int n, int k) {
  return static_cast<size_t>((n + kPanelWidth - 1) / kPanelWidth) * kPanelWidth * static_cast<size_t>(k);
}

AGENTRL_ISA_BEGIN

// Packs W stored [n, k] (row j = output column j, as nn.Linear stores it) into panels of
// kPanelWidth columns, k-major inside a panel, zero-padded: dst[p][k][c] = W[p * 16 + c][k].
void PackPanels(const float* w, int n, int k, float* dst);

// C[m, n] = A[m, k] W^T + (accumulate ? C : 0): `w` is W [n, k] itself and `panels` its PackPanels
// copy. Rows run on the panels (no packing per call), except above 64 rows on the avx512 path, whose
// packed SGEMM is faster there for long prefills. Splits panels between the OpenMP threads when the
// weight is large enough; the result is the same for any thread count.
void PanelGemm(int m, int n, int k, const float* a, int lda, const float* w, const float* panels, bool accumulate,
               float* c, int ldc);

AGENTRL_ISA_END
}  // namespace agentrl::engine::cpu
