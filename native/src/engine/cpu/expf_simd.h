// expf on AVX-512 and AVX2 vectors with glibc's bits: the training step's exps (softmax
// cross-entropy, SwiGLU's sigmoid, attention's probabilities) called glibc's scalar expf once per
// element, 3-5 % of a training step on the Qwen3-0.6B shape. These run the algorithm of glibc's
// expf (sysdeps/ieee754/flt-32/e_expf.c, since glibc 2.27) with the operations of its FMA variant,
// `__expf_fma`, which glibc selects on every CPU that runs the avx2 or avx512 level: in double
// precision, x * 32/ln2 = k + r, 2^(k/32) from a 32-entry table, a degree-3 polynomial in r, one
// rounding to float. So a result is the same bits as std::exp's on that CPU, and the step's
// results stay what they were. Inputs with |x| >= 88 (or inf / NaN) take glibc's own expf lane by
// lane (its overflow, underflow and special cases). The portable level keeps calling std::exp.
// test/native-expf.test.ts checks the bits against std::exp on every level this machine runs.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>

#if defined(__AVX512F__) || (defined(__AVX2__) && defined(__FMA__))
#include <immintrin.h>
#endif

#include "engine/cpu/isa.h"

namespace agentrl::engine::cpu {
AGENTRL_ISA_BEGIN
namespace expf_simd {

#if defined(__AVX512F__) || (defined(__AVX2__) && defined(__FMA__))
// glibc's __exp2f_data (e_exp2f_data.c): tab[i] = bits(2^(i/32)) - (i << 47), and the constants
// scaled for N = 32 (read from glibc 2.36's libm; the same since 2.27).
alignas(64) inline constexpr uint64_t kTab[32] = {
    0x3ff0000000000000, 0x3fefd9b0d3158574, 0x3fefb5586cf9890f, 0x3fef9301d0125b51, 0x3fef72b83c7d517b,
    0x3fef54873168b9aa, 0x3fef387a6e756238, 0x3fef1e9df51fdee1, 0x3fef06fe0a31b715, 0x3feef1a7373aa9cb,
    0x3feedea64c123422, 0x3feece086061892d, 0x3feebfdad5362a27, 0x3feeb42b569d4f82, 0x3feeab07dd485429,
    0x3feea47eb03a5585, 0x3feea09e667f3bcd, 0x3fee9f75e8ec5f74, 0x3feea11473eb0187, 0x3feea589994cce13,
    0x3feeace5422aa0db, 0x3feeb737b0cdc5e5, 0x3feec49182a3f090, 0x3feed503b23e255d, 0x3feee89f995ad3ad,
    0x3feeff76f2fb5e47, 0x3fef199bdd85529c, 0x3fef3720dcef9069, 0x3fef5818dcfba487, 0x3fef7c97337b9b5f,
    0x3fefa4afa2a490da, 0x3fefd0765b6e4540};
constexpr double kInvLn2N = 0x1.71547652b82fep+5;  // 32 / ln 2
constexpr double kShift = 0x1.8p+52;
constexpr double kC0 = 0x1.c6af84b912394p-20;
constexpr double kC1 = 0x1.ebfce50fac4f3p-13;
constexpr double kC2 = 0x1.62e42ff0c52d6p-6;
// Lanes whose top 12 bits (sign off) reach 88.0f's leave for glibc's scalar expf.
constexpr int kSpecialTop = 0x42b;
#endif

#if defined(__AVX512F__)
// Eight lanes of glibc's expf main path, in its order: kd = fma(x, InvLn2N, Shift); r = fma(x,
// InvLn2N, -(kd - Shift)); s = tab + (ki << 47); y = fma(fma(C0, r, C1), r * r, fma(r, C2, 1)) * s.
inline __m256 Exp8Main(__m256 x) {
  const __m512d xd = _mm512_cvtps_pd(x);
  const __m512d inv = _mm512_set1_pd(kInvLn2N), shift = _mm512_set1_pd(kShift);
  __m512d kd = _mm512_fmadd_pd(inv, xd, shift);
  const __m512i ki = _mm512_castpd_si512(kd);
  kd = _mm512_sub_pd(kd, shift);
  const __m512d r = _mm512_fmsub_pd(inv, xd, kd);
  const __m512i t0 = _mm512_load_si512(kTab), t1 = _mm512_load_si512(kTab + 8);
  const __m512i t2 = _mm512_load_si512(kTab + 16), t3 = _mm512_load_si512(kTab + 24);
  const __m512i lo = _mm512_permutex2var_epi64(t0, ki, t1);  // index bits 0-3
  const __m512i hi = _mm512_permutex2var_epi64(t2, ki, t3);
  const __m512i tab = _mm512_mask_blend_epi64(_mm512_test_epi64_mask(ki, _mm512_set1_epi64(16)), lo, hi);
  const __m512d s = _mm512_castsi512_pd(_mm512_add_epi64(tab, _mm512_slli_epi64(ki, 47)));
  const __m512d z = _mm512_fmadd_pd(_mm512_set1_pd(kC0), r, _mm512_set1_pd(kC1));
  const __m512d r2 = _mm512_mul_pd(r, r);
  __m512d y = _mm512_fmadd_pd(r, _mm512_set1_pd(kC2), _mm512_set1_pd(1.0));
  y = _mm512_fmadd_pd(z, r2, y);
  return _mm512_cvtpd_ps(_mm512_mul_pd(y, s));
}

// expf of 16 lanes.
inline __m512 Exp16(__m512 x) {
  const __m512 lo = _mm512_castps256_ps512(Exp8Main(_mm512_castps512_ps256(x)));
  __m512 y = _mm512_insertf32x8(lo, Exp8Main(_mm512_extractf32x8_ps(x, 1)), 1);
  const __m512i top = _mm512_and_si512(_mm512_srli_epi32(_mm512_castps_si512(x), 20), _mm512_set1_epi32(0x7ff));
  const __mmask16 special = _mm512_cmpge_epi32_mask(top, _mm512_set1_epi32(kSpecialTop));
  if (special) {
    alignas(64) float xs[16], ys[16];
    _mm512_store_ps(xs, x);
    _mm512_store_ps(ys, y);
    for (int i = 0; i < 16; ++i)
      if (special >> i & 1) ys[i] = std::exp(xs[i]);
    y = _mm512_load_ps(ys);
  }
  return y;
}
constexpr int kLanes = 16;
#elif defined(__AVX2__) && defined(__FMA__)
// Four lanes of the main path (see the AVX-512 version).
inline __m128 Exp4Main(__m128 x) {
  const __m256d xd = _mm256_cvtps_pd(x);
  const __m256d inv = _mm256_set1_pd(kInvLn2N), shift = _mm256_set1_pd(kShift);
  __m256d kd = _mm256_fmadd_pd(inv, xd, shift);
  const __m256i ki = _mm256_castpd_si256(kd);
  kd = _mm256_sub_pd(kd, shift);
  const __m256d r = _mm256_fmsub_pd(inv, xd, kd);
  const __m256i idx = _mm256_and_si256(ki, _mm256_set1_epi64x(31));
  const __m256i tab = _mm256_i64gather_epi64(reinterpret_cast<const long long*>(kTab), idx, 8);
  const __m256d s = _mm256_castsi256_pd(_mm256_add_epi64(tab, _mm256_slli_epi64(ki, 47)));
  const __m256d z = _mm256_fmadd_pd(_mm256_set1_pd(kC0), r, _mm256_set1_pd(kC1));
  const __m256d r2 = _mm256_mul_pd(r, r);
  __m256d y = _mm256_fmadd_pd(r, _mm256_set1_pd(kC2), _mm256_set1_pd(1.0));
  y = _mm256_fmadd_pd(z, r2, y);
  return _mm256_cvtpd_ps(_mm256_mul_pd(y, s));
}

// expf of 8 lanes.
inline __m256 Exp8(__m256 x) {
  __m256 y = _mm256_set_m128(Exp4Main(_mm256_extractf128_ps(x, 1)), Exp4Main(_mm256_castps256_ps128(x)));
  const __m256i top = _mm256_and_si256(_mm256_srli_epi32(_mm256_castps_si256(x), 20), _mm256_set1_epi32(0x7ff));
  const int special =
      _mm256_movemask_ps(_mm256_castsi256_ps(_mm256_cmpgt_epi32(top, _mm256_set1_epi32(kSpecialTop - 1))));
  if (special) {
    alignas(32) float xs[8], ys[8];
    _mm256_store_ps(xs, x);
    _mm256_store_ps(ys, y);
    for (int i = 0; i < 8; ++i)
      if (special >> i & 1) ys[i] = std::exp(xs[i]);
    y = _mm256_load_ps(ys);
  }
  return y;
}
constexpr int kLanes = 8;
#else
constexpr int kLanes = 1;
#endif

// out[j] = expf(x[j] - c) for j < n (out may be x); the float subtraction first, as the scalar code.
inline void ExpSub(const float* x, float c, float* out, int n) {
  int j = 0;
#if defined(__AVX512F__)
  const __m512 vc = _mm512_set1_ps(c);
  for (; j + 16 <= n; j += 16) _mm512_storeu_ps(out + j, Exp16(_mm512_sub_ps(_mm512_loadu_ps(x + j), vc)));
#elif defined(__AVX2__) && defined(__FMA__)
  const __m256 vc = _mm256_set1_ps(c);
  for (; j + 8 <= n; j += 8) _mm256_storeu_ps(out + j, Exp8(_mm256_sub_ps(_mm256_loadu_ps(x + j), vc)));
#endif
  for (; j < n; ++j) out[j] = std::exp(x[j] - c);
}

// The sum, in index order and in float, of expf(x[j] - c) for j < n (x is left as it is).
inline float SumExpSub(const float* x, float c, int n) {
  float sum = 0.0f;
  int j = 0;
#if defined(__AVX512F__) || (defined(__AVX2__) && defined(__FMA__))
  alignas(64) float e[kLanes];
  for (; j + kLanes <= n; j += kLanes) {
    ExpSub(x + j, c, e, kLanes);
    for (int q = 0; q < kLanes; ++q) sum += e[q];
  }
#endif
  for (; j < n; ++j) sum += std::exp(x[j] - c);
  return sum;
}

// max over x[0..n) as `for j: mx = std::max(mx, x[j])` from -inf leaves it: NaNs never taken; when
// the maximum is a zero, the first zero's sign (the vector max may pick another, so rescan).
inline float RowMax(const float* x, int n) {
  float mx = -INFINITY;
  int j = 0;
#if defined(__AVX512F__)
  __m512 acc = _mm512_set1_ps(-INFINITY);
  for (; j + 16 <= n; j += 16) acc = _mm512_max_ps(_mm512_loadu_ps(x + j), acc);  // a NaN in x yields acc
  alignas(64) float lanes[16];  // (_mm512_reduce_max_ps trips GCC 12's -Wuninitialized)
  _mm512_store_ps(lanes, acc);
  for (float v : lanes) mx = std::max(mx, v);
#elif defined(__AVX2__) && defined(__FMA__)
  __m256 acc = _mm256_set1_ps(-INFINITY);
  for (; j + 8 <= n; j += 8) acc = _mm256_max_ps(_mm256_loadu_ps(x + j), acc);
  alignas(32) float lanes[8];
  _mm256_store_ps(lanes, acc);
  for (float v : lanes) mx = std::max(mx, v);
#endif
  for (; j < n; ++j) mx = std::max(mx, x[j]);
  if (mx == 0.0f) {
    mx = -INFINITY;
    for (j = 0; j < n; ++j) mx = std::max(mx, x[j]);
  }
  return mx;
}

}  // namespace expf_simd
AGENTRL_ISA_END
}  // namespace agentrl::engine::cpu
