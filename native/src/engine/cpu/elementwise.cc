// The training step's element-wise loops with an exp (SwiGLU and its backward, a softmax
// cross-entropy row), once per ISA level with expf_simd.h's vector expf. Compiled with
// -ffp-contract=off (native/CMakeLists.txt): each product and sum rounds on its own, as in the
// baseline-compiled loops of model.cc these replaced, so every result keeps its bits.
#if defined(__GNUC__) && !defined(__clang__)
// GCC 12 reports false "may be used uninitialized" warnings from inside avx512fintrin.h.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
#include <algorithm>
#include <cmath>
#include <cstddef>

#include "engine/cpu/expf_simd.h"
#include "engine/cpu/ops.h"

#if defined(__AVX512F__) || (defined(__AVX2__) && defined(__FMA__))
#include <immintrin.h>
#endif

namespace agentrl::engine::cpu {
AGENTRL_ISA_BEGIN
namespace {

inline float Sigmoid(float x) { return 1.0f / (1.0f + std::exp(-x)); }

#if defined(__AVX512F__)
inline __m512 Sigmoid16(__m512 x) {
  const __m512 one = _mm512_set1_ps(1.0f);
  const __m512 neg = _mm512_castsi512_ps(
      _mm512_xor_si512(_mm512_castps_si512(x), _mm512_set1_epi32(static_cast<int>(0x80000000u))));
  return _mm512_div_ps(one, _mm512_add_ps(one, expf_simd::Exp16(neg)));
}
#elif defined(__AVX2__) && defined(__FMA__)
inline __m256 Sigmoid8(__m256 x) {
  const __m256 one = _mm256_set1_ps(1.0f);
  const __m256 neg = _mm256_xor_ps(x, _mm256_castsi256_ps(_mm256_set1_epi32(static_cast<int>(0x80000000u))));
  return _mm256_div_ps(one, _mm256_add_ps(one, expf_simd::Exp8(neg)));
}
#endif

// Parallel over blocks of elements when there are enough of them (as the loops in model.cc were).
constexpr size_t kParallelMin = 65536;
constexpr size_t kBlock = 4096;

void SwigluForwardRange(const float* g, const float* u, float* act, size_t begin, size_t end) {
  size_t i = begin;
#if defined(__AVX512F__)
  for (; i + 16 <= end; i += 16) {
    const __m512 gv = _mm512_loadu_ps(g + i);
    _mm512_storeu_ps(act + i, _mm512_mul_ps(_mm512_mul_ps(gv, Sigmoid16(gv)), _mm512_loadu_ps(u + i)));
  }
#elif defined(__AVX2__) && defined(__FMA__)
  for (; i + 8 <= end; i += 8) {
    const __m256 gv = _mm256_loadu_ps(g + i);
    _mm256_storeu_ps(act + i, _mm256_mul_ps(_mm256_mul_ps(gv, Sigmoid8(gv)), _mm256_loadu_ps(u + i)));
  }
#endif
  for (; i < end; ++i) act[i] = g[i] * Sigmoid(g[i]) * u[i];
}

void SwigluBackwardRange(const float* g, const float* u, float* dg, float* du, size_t begin, size_t end) {
  size_t i = begin;
#if defined(__AVX512F__)
  const __m512 one = _mm512_set1_ps(1.0f);
  for (; i + 16 <= end; i += 16) {
    const __m512 gv = _mm512_loadu_ps(g + i);
    const __m512 sg = Sigmoid16(gv);
    const __m512 da = _mm512_loadu_ps(dg + i);
    _mm512_storeu_ps(du + i, _mm512_mul_ps(_mm512_mul_ps(da, gv), sg));
    const __m512 tail = _mm512_add_ps(one, _mm512_mul_ps(gv, _mm512_sub_ps(one, sg)));
    _mm512_storeu_ps(dg + i, _mm512_mul_ps(_mm512_mul_ps(_mm512_mul_ps(da, _mm512_loadu_ps(u + i)), sg), tail));
  }
#elif defined(__AVX2__) && defined(__FMA__)
  const __m256 one = _mm256_set1_ps(1.0f);
  for (; i + 8 <= end; i += 8) {
    const __m256 gv = _mm256_loadu_ps(g + i);
    const __m256 sg = Sigmoid8(gv);
    const __m256 da = _mm256_loadu_ps(dg + i);
    _mm256_storeu_ps(du + i, _mm256_mul_ps(_mm256_mul_ps(da, gv), sg));
    const __m256 tail = _mm256_add_ps(one, _mm256_mul_ps(gv, _mm256_sub_ps(one, sg)));
    _mm256_storeu_ps(dg + i, _mm256_mul_ps(_mm256_mul_ps(_mm256_mul_ps(da, _mm256_loadu_ps(u + i)), sg), tail));
  }
#endif
  for (; i < end; ++i) {
    const float sg = Sigmoid(g[i]);
    const float da = dg[i];
    du[i] = da * g[i] * sg;
    dg[i] = da * u[i] * sg * (1.0f + g[i] * (1.0f - sg));
  }
}

template <typename F>
void ForBlocks(size_t n, F&& f) {
  const long blocks = static_cast<long>((n + kBlock - 1) / kBlock);
#pragma omp parallel for schedule(static) if (n > kParallelMin)
  for (long b = 0; b < blocks; ++b) {
    const size_t begin = static_cast<size_t>(b) * kBlock;
    f(begin, std::min(n, begin + kBlock));
  }
}

}  // namespace

void ExpF32(const float* x, float* out, size_t n) {
  for (size_t i = 0; i < n; i += kBlock) {
    const size_t len = std::min(kBlock, n - i);
    expf_simd::ExpSub(x + i, 0.0f, out + i, static_cast<int>(len));  // x - 0 is x, -0 included
  }
}

void SwigluForward(const float* g, const float* u, float* act, size_t n) {
  ForBlocks(n, [&](size_t begin, size_t end) { SwigluForwardRange(g, u, act, begin, end); });
}

void SwigluBackward(const float* g, const float* u, float* dg, float* du, size_t n) {
  ForBlocks(n, [&](size_t begin, size_t end) { SwigluBackwardRange(g, u, dg, du, begin, end); });
}

float SoftmaxXentRow(float* z, int vocab, int target, float scale) {
  const float mx = expf_simd::RowMax(z, vocab);
  const float sum = expf_simd::SumExpSub(z, mx, vocab);
  const float lse = mx + std::log(sum);
  const float loss = lse - z[target];
  expf_simd::ExpSub(z, lse, z, vocab);
  int j = 0;
#if defined(__AVX512F__)
  const __m512 vs = _mm512_set1_ps(scale);
  for (; j + 16 <= vocab; j += 16) _mm512_storeu_ps(z + j, _mm512_mul_ps(_mm512_loadu_ps(z + j), vs));
#elif defined(__AVX2__) && defined(__FMA__)
  const __m256 vs = _mm256_set1_ps(scale);
  for (; j + 8 <= vocab; j += 8) _mm256_storeu_ps(z + j, _mm256_mul_ps(_mm256_loadu_ps(z + j), vs));
#endif
  for (; j < vocab; ++j) z[j] *= scale;
  z[target] -= scale;
  return loss;
}

AGENTRL_ISA_END
}  // namespace agentrl::engine::cpu
