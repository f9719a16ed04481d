// The sampler's tempered probabilities (sampler.h), bit-identical to the JavaScript loop
//   p_i = Math.exp(z_i / t - max / t); sum += p_i
// on every ISA level. Math.exp in V8 (src/base/ieee754.cc) is fdlibm's e_exp.c: reduce x = k ln2 + r
// with ln2 split in two, a degree-5 rational correction, scale by 2^k. That algorithm is written out
// below once for one double (every special case: NaN, +-inf, overflow, underflow, |x| < 2^-28, x = 1)
// and once for a vector of lanes, which covers only the common case 1.5 ln2 <= |x| <= 708 (-1021 <= k
// <= 1021, where fdlibm takes one branch); a vector with any other lane goes through the scalar code.
// Each vector operation is the scalar one per lane: IEEE add, sub, mul and div round the same, the
// truncation to k is cvttpd like the C cast, 2^k is built from its bits. No FMA may fuse a product
// into a sum here: the file is compiled with -ffp-contract=off (native/CMakeLists.txt).
#if defined(__GNUC__) && !defined(__clang__)
// GCC 12 reports false "may be used uninitialized" warnings from inside avx512fintrin.h.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
#include "engine/cpu/sampler.h"

#include <cstdint>
#include <cstring>
#include <limits>

#if defined(__AVX512F__) || defined(__AVX2__)
#include <immintrin.h>
#endif

namespace agentrl::engine::cpu {
AGENTRL_ISA_BEGIN
namespace {

// fdlibm's constants, as hexadecimal literals of the bit patterns e_exp.c lists beside them.
constexpr double kOverflow = 0x1.62e42fefa39efp+9;    // 709.78...: exp(x) overflows above
constexpr double kUnderflow = -0x1.74910d52d3051p+9;  // -745.13...: exp(x) underflows to 0 below
constexpr double kLn2Hi = 0x1.62e42feep-1;            // ln2's leading bits: k * kLn2Hi is exact
constexpr double kLn2Lo = 0x1.a39ef35793c76p-33;      // ln2 - kLn2Hi
constexpr double kInvLn2 = 0x1.71547652b82fep+0;
constexpr double kP1 = 0x1.555555555553ep-3;
constexpr double kP2 = -0x1.6c16c16bebd93p-9;
constexpr double kP3 = 0x1.1566aaf25de2cp-14;
constexpr double kP4 = -0x1.bbd41c5d26bf1p-20;
constexpr double kP5 = 0x1.6376972bea4d0p-25;
constexpr double kE = 0x1.5bf0a8b145769p+1;       // V8 returns Math.E for exp(1) exactly
constexpr double kTwoM1000 = 0x1p-1000;
constexpr double kTwo1023 = 0x1p1023;
// The vector path's range: |x| from 1.5 ln2 (high word 0x3ff0a2b2, fdlibm's threshold) to 708.
constexpr double kFastLow = 0x1.0a2b2p+0;
constexpr double kFastHigh = 708.0;

inline uint64_t Bits(double x) {
  uint64_t b;
  std::memcpy(&b, &x, sizeof b);
  return b;
}

inline double FromBits(uint64_t b) {
  double x;
  std::memcpy(&x, &b, sizeof x);
  return x;
}

// The common tail: x reduced to r = hi - lo, 2^k applied (k != 0).
inline double Scale(double hi, double lo, int k) {
  const double r = hi - lo;
  const double rr = r * r;
  const double c = r - rr * (kP1 + rr * (kP2 + rr * (kP3 + rr * (kP4 + rr * kP5))));
  const double y = 1.0 - ((lo - (r * c) / (2.0 - c)) - hi);
  if (k >= -1021) {
    if (k == 1024) return y * 2.0 * kTwo1023;
    return y * FromBits(static_cast<uint64_t>(k + 1023) << 52);
  }
  return y * FromBits(static_cast<uint64_t>(k + 1000 + 1023) << 52) * kTwoM1000;
}

// Math.exp(x), fdlibm's branches in fdlibm's order.
double ExpScalar(double x) {
  const uint64_t bits = Bits(x);
  const bool negative = (bits >> 63) != 0;
  const uint32_t high = static_cast<uint32_t>(bits >> 32) & 0x7fffffffu;  // |x|'s high word
  if (high >= 0x40862e42u) {                                              // |x| >= 709.78...
    if (high >= 0x7ff00000u) {                                            // NaN or +-inf
      if ((bits & 0x000fffffffffffffull) != 0) return x + x;
      return negative ? 0.0 : x;
    }
    if (x > kOverflow) return std::numeric_limits<double>::infinity();
    if (x < kUnderflow) return 0.0;
  }
  if (high > 0x3fd62e42u) {    // |x| > 0.5 ln2
    if (high < 0x3ff0a2b2u) {  // and < 1.5 ln2: k = +-1
      if (x == 1.0) return kE;
      return negative ? Scale(x + kLn2Hi, -kLn2Lo, -1) : Scale(x - kLn2Hi, kLn2Lo, 1);
    }
    const int k = static_cast<int>(kInvLn2 * x + (negative ? -0.5 : 0.5));
    const double t = k;
    return Scale(x - t * kLn2Hi, t * kLn2Lo, k);
  }
  if (high < 0x3e300000u) return 1.0 + x;  // |x| < 2^-28
  const double rr = x * x;                 // k = 0
  const double c = x - rr * (kP1 + rr * (kP2 + rr * (kP3 + rr * (kP4 + rr * kP5))));
  return 1.0 - ((x * c) / (c - 2.0) - x);
}

#if defined(__AVX512F__) || defined(__AVX2__)
// One ISA's lanes: doubles (D), their int32 k (I), and the float lanes of the argmax scan (F).
#if defined(__AVX512F__)
struct Lanes {
  static constexpr int kDoubles = 8, kFloats = 16;
  using D = __m512d;
  using I = __m256i;
  using F = __m512;
  static D Set(double x) { return _mm512_set1_pd(x); }
  static D FromFloats(const float* p) { return _mm512_cvtps_pd(_mm256_loadu_ps(p)); }
  static D Load(const double* p) { return _mm512_loadu_pd(p); }
  static void Store(double* p, D v) { _mm512_storeu_pd(p, v); }
  static D Add(D a, D b) { return _mm512_add_pd(a, b); }
  static D Sub(D a, D b) { return _mm512_sub_pd(a, b); }
  static D Mul(D a, D b) { return _mm512_mul_pd(a, b); }
  static D Div(D a, D b) { return _mm512_div_pd(a, b); }
  static bool AllFast(D x) {
    const D a = _mm512_abs_pd(x);
    return (_mm512_cmp_pd_mask(a, Set(kFastLow), _CMP_GE_OQ) & _mm512_cmp_pd_mask(a, Set(kFastHigh), _CMP_LE_OQ)) ==
           0xff;
  }
  // +-0.5 with x's sign (fdlibm's halF[xsb])
  static D HalfSigned(D x) {
    const __m512i sign = _mm512_and_si512(_mm512_castpd_si512(x), _mm512_set1_epi64(INT64_MIN));
    return _mm512_castsi512_pd(_mm512_or_si512(sign, _mm512_castpd_si512(Set(0.5))));
  }
  static I Truncate(D x) { return _mm512_cvttpd_epi32(x); }
  static D ToDouble(I k) { return _mm512_cvtepi32_pd(k); }
  static D Pow2(I k) {
    const __m512i e = _mm512_cvtepi32_epi64(_mm256_add_epi32(k, _mm256_set1_epi32(1023)));
    return _mm512_castsi512_pd(_mm512_slli_epi64(e, 52));
  }
  static F LoadF(const float* p) { return _mm512_loadu_ps(p); }
  static F SetF(float x) { return _mm512_set1_ps(x); }
  static F MaxF(F z, F m) { return _mm512_max_ps(z, m); }  // z > m ? z : m per lane, as the JS scan
  static void StoreF(float* p, F v) { _mm512_storeu_ps(p, v); }
  static unsigned EqualMask(F z, F m) { return _mm512_cmp_ps_mask(z, m, _CMP_EQ_OQ); }
};
#else
struct Lanes {
  static constexpr int kDoubles = 4, kFloats = 8;
  using D = __m256d;
  using I = __m128i;
  using F = __m256;
  static D Set(double x) { return _mm256_set1_pd(x); }
  static D FromFloats(const float* p) { return _mm256_cvtps_pd(_mm_loadu_ps(p)); }
  static D Load(const double* p) { return _mm256_loadu_pd(p); }
  static void Store(double* p, D v) { _mm256_storeu_pd(p, v); }
  static D Add(D a, D b) { return _mm256_add_pd(a, b); }
  static D Sub(D a, D b) { return _mm256_sub_pd(a, b); }
  static D Mul(D a, D b) { return _mm256_mul_pd(a, b); }
  static D Div(D a, D b) { return _mm256_div_pd(a, b); }
  static bool AllFast(D x) {
    const D a = _mm256_andnot_pd(Set(-0.0), x);
    const D in = _mm256_and_pd(_mm256_cmp_pd(a, Set(kFastLow), _CMP_GE_OQ), _mm256_cmp_pd(a, Set(kFastHigh), _CMP_LE_OQ));
    return _mm256_movemask_pd(in) == 0xf;
  }
  static D HalfSigned(D x) { return _mm256_or_pd(_mm256_and_pd(x, Set(-0.0)), Set(0.5)); }
  static I Truncate(D x) { return _mm256_cvttpd_epi32(x); }
  static D ToDouble(I k) { return _mm256_cvtepi32_pd(k); }
  static D Pow2(I k) {
    const __m256i e = _mm256_cvtepi32_epi64(_mm_add_epi32(k, _mm_set1_epi32(1023)));
    return _mm256_castsi256_pd(_mm256_slli_epi64(e, 52));
  }
  static F LoadF(const float* p) { return _mm256_loadu_ps(p); }
  static F SetF(float x) { return _mm256_set1_ps(x); }
  static F MaxF(F z, F m) { return _mm256_max_ps(z, m); }  // z > m ? z : m per lane, as the JS scan
  static void StoreF(float* p, F v) { _mm256_storeu_ps(p, v); }
  static unsigned EqualMask(F z, F m) {
    return static_cast<unsigned>(_mm256_movemask_ps(_mm256_cmp_ps(z, m, _CMP_EQ_OQ)));
  }
};
#endif
using L = Lanes;

// ExpScalar's general branch on every lane (AllFast(x) holds): the same operations, lane by lane.
inline L::D ExpFast(L::D x) {
  const L::I k = L::Truncate(L::Add(L::Mul(L::Set(kInvLn2), x), L::HalfSigned(x)));
  const L::D t = L::ToDouble(k);
  const L::D hi = L::Sub(x, L::Mul(t, L::Set(kLn2Hi)));
  const L::D lo = L::Mul(t, L::Set(kLn2Lo));
  const L::D r = L::Sub(hi, lo);
  const L::D rr = L::Mul(r, r);
  L::D poly = L::Add(L::Set(kP4), L::Mul(rr, L::Set(kP5)));
  poly = L::Add(L::Set(kP3), L::Mul(rr, poly));
  poly = L::Add(L::Set(kP2), L::Mul(rr, poly));
  poly = L::Add(L::Set(kP1), L::Mul(rr, poly));
  const L::D c = L::Sub(r, L::Mul(rr, poly));
  const L::D q = L::Div(L::Mul(r, c), L::Sub(L::Set(2.0), c));
  const L::D y = L::Sub(L::Set(1.0), L::Sub(L::Sub(lo, q), hi));
  return L::Mul(y, L::Pow2(k));
}

inline void ExpLanes(L::D x, double* out) {
  if (L::AllFast(x)) {
    L::Store(out, ExpFast(x));
    return;
  }
  alignas(64) double lane[L::kDoubles];
  L::Store(lane, x);
  for (int j = 0; j < L::kDoubles; ++j) out[j] = ExpScalar(lane[j]);
}

// The largest logit under the JS scan's rule (z > max: NaN never wins), then its first id.
inline void Argmax(const float* z, size_t n, TemperedRow* row) {
  const float ninf = -std::numeric_limits<float>::infinity();
  L::F acc = L::SetF(ninf);
  size_t i = 0;
  for (; i + L::kFloats <= n; i += L::kFloats) acc = L::MaxF(L::LoadF(z + i), acc);
  alignas(64) float lane[L::kFloats];
  L::StoreF(lane, acc);
  float m = ninf;
  for (int j = 0; j < L::kFloats; ++j) m = lane[j] > m ? lane[j] : m;
  for (; i < n; ++i) m = z[i] > m ? z[i] : m;
  row->max = -std::numeric_limits<double>::infinity();
  row->argmax = 0;
  if (!(m > ninf)) return;
  const L::F target = L::SetF(m);
  for (i = 0; i + L::kFloats <= n; i += L::kFloats) {
    const unsigned hit = L::EqualMask(L::LoadF(z + i), target);
    if (hit != 0) {
      row->argmax = static_cast<int64_t>(i) + __builtin_ctz(hit);
      row->max = z[row->argmax];  // the first equal one: its sign when the max is a zero
      return;
    }
  }
  for (; i < n; ++i) {
    if (z[i] == m) {
      row->argmax = static_cast<int64_t>(i);
      row->max = z[i];
      return;
    }
  }
}
#else
inline void Argmax(const float* z, size_t n, TemperedRow* row) {
  double max = -std::numeric_limits<double>::infinity();
  int64_t argmax = 0;
  for (size_t i = 0; i < n; ++i) {
    if (z[i] > max) {
      max = z[i];
      argmax = static_cast<int64_t>(i);
    }
  }
  row->max = max;
  row->argmax = argmax;
}
#endif

}  // namespace

void ExpF64(const double* x, double* out, size_t n) {
  size_t i = 0;
#if defined(__AVX512F__) || defined(__AVX2__)
  for (; i + L::kDoubles <= n; i += L::kDoubles) ExpLanes(L::Load(x + i), out + i);
#endif
  for (; i < n; ++i) out[i] = ExpScalar(x[i]);
}

TemperedRow TemperedProbs(const float* logits, size_t n, double t, double* probs) {
  TemperedRow row{0.0, 0.0, 0};
  Argmax(logits, n, &row);
  const double scaled = row.max / t;
  double sum = 0.0;
  size_t i = 0;
#if defined(__AVX512F__) || defined(__AVX2__)
  const L::D tv = L::Set(t), sv = L::Set(scaled);
  const bool unit = t == 1.0;  // z / 1 is z, bit for bit (NaN and -0 included): skip the division
  for (; i + L::kDoubles <= n; i += L::kDoubles) {
    const L::D z = L::FromFloats(logits + i);
    ExpLanes(L::Sub(unit ? z : L::Div(z, tv), sv), probs + i);
    for (int j = 0; j < L::kDoubles; ++j) sum += probs[i + j];  // in id order, as the JS loop adds
  }
#endif
  for (; i < n; ++i) {
    const double p = ExpScalar(static_cast<double>(logits[i]) / t - scaled);
    probs[i] = p;
    sum += p;
  }
  row.sum = sum;
  return row;
}

AGENTRL_ISA_END
}  // namespace agentrl::engine::cpu
