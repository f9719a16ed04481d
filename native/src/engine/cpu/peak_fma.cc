// The engine bench's FMA-bound ceiling (bench.cc peakGflops): independent FMA chains (more than
// ports x latency) on registers, compiled once per ISA level like the kernels it is read against.
#if defined(__GNUC__) && !defined(__clang__)
// GCC 12 reports false "may be used uninitialized" warnings from inside avx512fintrin.h.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
#include "engine/cpu/isa.h"

#if defined(__AVX512F__) || (defined(__AVX2__) && defined(__FMA__))
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
#elif defined(__AVX2__) && defined(__FMA__)
  // 12 chains (2 FMA ports x 4-cycle latency needs 8) in 14 of the 16 ymm registers. Each starts
  // from its own value and all are summed: with equal starts GCC kept one chain and the loop
  // measured one FMA's latency, which it then counted as 16 chains' work (twice the real peak).
  __m256 acc[12];
  for (int j = 0; j < 12; ++j) acc[j] = _mm256_set1_ps(0.001f * static_cast<float>(j + 1));
  const __m256 a = _mm256_set1_ps(0.999999f), b = _mm256_set1_ps(1e-7f);
  for (long i = 0; i < iters; ++i) {
#pragma GCC unroll 12
    for (int j = 0; j < 12; ++j) acc[j] = _mm256_fmadd_ps(acc[j], a, b);
  }
  __m256 s = acc[0];
  for (int j = 1; j < 12; ++j) s = _mm256_add_ps(s, acc[j]);
  float out[8];
  _mm256_storeu_ps(out, s);
  *flops = 12.0 * 8 * 2 * static_cast<double>(iters);
  return out[0];
#else
  // Auto-vectorised to a multiply and an add per lane; distinct starts, all summed (see above).
  float acc[16 * 4];
  for (int j = 0; j < 16 * 4; ++j) acc[j] = 0.001f * static_cast<float>(j + 1);
  for (long i = 0; i < iters; ++i)
    for (int j = 0; j < 16 * 4; ++j) acc[j] = acc[j] * 0.999999f + 1e-7f;
  float sum = 0.0f;
  for (int j = 0; j < 16 * 4; ++j) sum += acc[j];
  *flops = 16.0 * 4 * 2 * static_cast<double>(iters);
  return sum;
#endif
}

AGENTRL_ISA_END
}  // namespace agentrl::engine::cpu
