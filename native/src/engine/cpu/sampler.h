// The sampler's O(vocabulary) float64 work (packages/engine/src/sampling.ts): exp(z_i / t - max / t)
// for every id, their sum and the argmax, with the same bits as the JavaScript it replaces. exp here
// is V8's Math.exp (its port of fdlibm's e_exp.c), evaluated lane by lane with the same operations in
// the same order and no FMA (this file is compiled with -ffp-contract=off, see native/CMakeLists.txt);
// the sum runs left to right in id order, as the JS loop does.
#pragma once
#include <cstddef>
#include <cstdint>

#include "engine/cpu/isa.h"

namespace agentrl::engine::cpu {

struct TemperedRow {
  double sum;      // probs[0] + probs[1] + ... in id order
  double max;      // the largest logit (the first of equal ones), -inf when none exceeds -inf
  int64_t argmax;  // its id (0 when no logit exceeds -inf, as the JS scan leaves it)
};

AGENTRL_ISA_BEGIN
// out[i] = Math.exp(x[i]) bit for bit (NaN results are NaN, their payload aside).
void ExpF64(const double* x, double* out, size_t n);
// probs[i] = exp(logits[i] / t - max / t) for i < n, with their sum and the argmax.
TemperedRow TemperedProbs(const float* logits, size_t n, double t, double* probs);
AGENTRL_ISA_END

}  // namespace agentrl::engine::cpu
