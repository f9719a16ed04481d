// The engine bench's FMA-bound ceiling (bench.cc peakGflops): independent FMA chains (more than
// ports x latency) on registers, compiled once per ISA level like the kernels it is read against.
#if defined(__GNUC__) && !defined(__clang__)
// GCC 12 reports false "may be used uninitialized" warnings from inside avx512fintrin.h.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
#include "engine/cpu/isa.h"

#if defined(__AVX512F__)
#include <immintrin.h>
#endif

namespace agentrl::engine::cpu {
AGENTRL_ISA_BEGIN

double PeakFma(long iters, double* flops) {
#if defined(__AVX512F__)
  __m512 acc[16];
  for (int j = 0; j < 16; ++j) acc[j] = _mm512_set1_ps(0.001f * j);
  const __m512 a = _mm512_set1_ps(0.999999f), b = _mm512_set1_ps(1e-7f);
  for (long i = 0; i < iters; ++i) {
#pragma GCC unroll 16
    for (int j = 0; j < 16; ++j) acc[j] = _mm512_fmadd_ps(acc[j], a, b);
  }
  __m512 s = acc[0];
  for (int j = 1; j < 16; ++j) s = _mm512_add_ps(s, acc[j]);
  float out[16];
  _mm512_storeu_ps(out, s);
  *flops = 16.0 * 16 * 2 * static_cast<double>(iters);
  return out[0];
#else
  // Auto-vectorised: 16 ymm FMA chains on the avx2 level, a multiply and an add per lane on portable.
  float acc[16 * 8] = {0};
  for (long i = 0; i < iters; ++i)
    for (int j = 0; j < 16 * 8; ++j) acc[j] = acc[j] * 0.999999f + 1e-7f;
  *flops = 16.0 * 8 * 2 * static_cast<double>(iters);
  return acc[0];
#endif
}

AGENTRL_ISA_END
}  // namespace agentrl::engine::cpu
