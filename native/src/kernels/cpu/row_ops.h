// Vectorisable row primitives for the CPU backend: a polynomial exp that GCC/Clang turn into SIMD
// under `omp simd` (libm's expf does not vectorise without -ffast-math, which would also break -inf
// handling), and the streaming online log-sum-exp over one row. Included by the ISA-level kernel
// sources only (engine/cpu/isa.h): every function is static, so each level keeps its own copy
// (an `inline` one would be merged at link time into the portable level's).
#pragma once
#include <cfloat>
#include <cmath>
#include <cstdint>
#include <cstring>

namespace agentrl::kernels::cpu {

#pragma omp declare simd
static inline float FastExp(float x) {
  // Cephes expf: x = n ln2 + r, |r| <= ln2/2, e^r by a degree-6 polynomial, 2^n from the exponent bits.
  // About 1 ulp on [-87.3, 0], the only range the kernels use (z - max <= 0): no overflow clamp.
  // Below -87.3 (and for -inf) it returns exactly 0; NaN stays NaN.
  float xc = x < -87.3f ? -87.3f : x;
  const float shifter = 12582912.f;  // 1.5 * 2^23: adding it rounds to an integer in the low mantissa bits
  float t = xc * 1.44269504088896341f + shifter;
  float n = t - shifter;
  float r = xc - n * 0.693359375f;
  r = r - n * -2.12194440e-4f;
  float p = 1.9875691500E-4f;
  p = p * r + 1.3981999507E-3f;
  p = p * r + 8.3334519073E-3f;
  p = p * r + 4.1665795894E-2f;
  p = p * r + 1.6666665459E-1f;
  p = p * r + 5.0000001201E-1f;
  float e = p * r * r + r + 1.f;
  int32_t ni = static_cast<int32_t>(n);
  int32_t bits = (ni + 127) << 23;
  float scale;
  std::memcpy(&scale, &bits, sizeof(scale));
  float y = e * scale;
  return x < -87.3f ? 0.f : y;
}

struct RowStat {
  // log Z = max + log_s, kept apart: z - log Z is then computed as (z - max) - log_s, which stays
  // exact when |z| is large (3e4 has a float spacing of 0.002; folding max into log Z would lose it).
  float max;
  float log_s;
  float logp;
  float entropy;
  bool bad;  // NaN, +inf, or all -inf
};

/**
 * One streaming pass over a row: chunks of 2048 values (8 KiB, in L1) get their max, then their
 * sum of exp(z - max) (and of exp * z for the entropy); chunks merge by the online-softmax rescale.
 * Probabilities are never stored.
 */
constexpr int64_t kChunk = 2048;

/**
 * With `park` (the row's dlogits, which may alias `row`), each exp(z - chunk max) is also stored
 * there and the chunk max goes to chunk_max[c]: RowGradParked then needs one multiply per logit
 * instead of re-reading the logits and a second exp. Nothing beyond the output row is written.
 */
static inline RowStat RowStats(const float* row, int64_t V, float inv_tau, int32_t target, bool want_entropy,
                        float* park = nullptr, float* chunk_max = nullptr) {
  const float target_z = row[target] * inv_tau;  // read first: `park` may overwrite the row
  // NaN and +inf need no test of their own: either makes some exp(z - max) NaN (inf - inf for
  // +inf), so the sum is not finite; an all -inf row leaves the max at -inf. Keeping the max loop a
  // bare reduction lets it stay in registers.
  float m = -INFINITY;
  double s = 0, u = 0;
  for (int64_t c0 = 0; c0 < V; c0 += kChunk) {
    int64_t c1 = c0 + kChunk < V ? c0 + kChunk : V;
    float cm = -INFINITY;
#pragma omp simd reduction(max : cm)
    for (int64_t j = c0; j < c1; ++j) {
      float z = row[j] * inv_tau;
      cm = z > cm ? z : cm;
    }
    if (cm != cm) cm = INFINITY;  // (max may have dropped a NaN; any non-finite cm marks the row bad)
    if (park) chunk_max[c0 / kChunk] = cm;
    if (cm == -INFINITY) {  // an all -inf chunk adds nothing
      if (park) std::memset(park + c0, 0, sizeof(float) * (c1 - c0));
      continue;
    }
    float cs = 0, cu = 0;
    if (park && want_entropy) {
#pragma omp simd reduction(+ : cs, cu)
      for (int64_t j = c0; j < c1; ++j) {
        float z = row[j] * inv_tau;
        float e = FastExp(z - cm);
        park[j] = e;
        cs += e;
        cu += e == 0.f ? 0.f : e * (z - cm);
      }
    } else if (park) {
#pragma omp simd reduction(+ : cs)
      for (int64_t j = c0; j < c1; ++j) {
        float e = FastExp(row[j] * inv_tau - cm);
        park[j] = e;
        cs += e;
      }
    } else if (want_entropy) {
#pragma omp simd reduction(+ : cs, cu)
      for (int64_t j = c0; j < c1; ++j) {
        float z = row[j] * inv_tau;
        float e = FastExp(z - cm);
        cs += e;
        cu += e == 0.f ? 0.f : e * (z - cm);  // z - cm keeps the products small; -inf gives e = 0
      }
    } else {
#pragma omp simd reduction(+ : cs)
      for (int64_t j = c0; j < c1; ++j) cs += FastExp(row[j] * inv_tau - cm);
    }
    // merge: sums are relative to the chunk max; u holds Σ e^{z-m} (z - m)
    if (cm > m) {
      double k = m == -INFINITY ? 0.0 : std::exp(static_cast<double>(m) - cm);
      u = (u + s * (static_cast<double>(m) - cm)) * k;  // re-centre Σ e (z - m) on the new max
      if (m == -INFINITY) u = 0;
      s = s * k + cs;
      u += cu;
      m = cm;
    } else {
      double k = std::exp(static_cast<double>(cm) - m);
      s += cs * k;
      u += (cu + cs * (static_cast<double>(cm) - m)) * k;
    }
  }
  RowStat out{};
  out.bad = m == -INFINITY || !std::isfinite(s) || !std::isfinite(m);
  out.max = m;
  out.log_s = static_cast<float>(std::log(s));
  out.logp = static_cast<float>(static_cast<double>(target_z - m) - std::log(s));
  // H = log Z - Σ p z = log s - Σ p (z - m) = log s - u / s
  out.entropy = want_entropy ? static_cast<float>(std::log(s) - u / s) : NAN;
  return out;
}

/** dlogits row: g/τ (onehot(target) - exp((z - max) - log_s)); `out` may alias `row`. */
static inline void RowGrad(const float* row, float* out, int64_t V, float inv_tau, float max, float log_s, float g_over_tau,
                    int32_t target) {
  if (g_over_tau == 0.f) {
    std::memset(out, 0, sizeof(float) * V);
    return;
  }
  float neg = -g_over_tau;
#pragma omp simd
  for (int64_t j = 0; j < V; ++j) out[j] = neg * FastExp((row[j] * inv_tau - max) - log_s);
  out[target] += g_over_tau;
}

/** dlogits from a row parked by RowStats: g/τ (onehot - e * exp(chunk max - max - log s)). */
static inline void RowGradParked(float* out, int64_t V, const float* chunk_max, float max, float log_s, float g_over_tau,
                          int32_t target) {
  if (g_over_tau == 0.f) {
    std::memset(out, 0, sizeof(float) * V);
    return;
  }
  for (int64_t c0 = 0; c0 < V; c0 += kChunk) {
    int64_t c1 = c0 + kChunk < V ? c0 + kChunk : V;
    const float cm = chunk_max[c0 / kChunk];
    // exp((cm - max) - log s): the chunk's share of 1/Z, in double so tiny shares do not round
    const float k = cm == -INFINITY ? 0.f
                                    : static_cast<float>(-g_over_tau * std::exp(static_cast<double>(cm - max) - log_s));
#pragma omp simd
    for (int64_t j = c0; j < c1; ++j) out[j] *= k;
  }
  out[target] += g_over_tau;
}

}  // namespace agentrl::kernels::cpu
