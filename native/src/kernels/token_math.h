// The O(T) part of the GRPO-RoC policy loss, after the per-row log-normaliser: ratios (token or GSPO
// sequence level, log-ratio clamped), clipped surrogate with clip-higher and dual clip, aggregation
// weights (same definitions as @agentrl/grpo), metrics and d loss / d logp. Host code in double,
// shared by the CPU backend and the host side of the CUDA/HIP objects; the TS twin is
// packages/kernels/src/reference/token-math.ts.
#pragma once
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <stdexcept>
#include <vector>

namespace agentrl::kernels {

enum class Aggregation : int { kTokenMean = 0, kSeqMeanTokenSum = 1, kSeqMeanTokenMean = 2, kSeqMeanTokenSumNorm = 3 };

struct LossConfig {
  float temperature = 1.f;
  float clip_low = 0.2f;
  float clip_high = 0.28f;
  float dual_clip = 3.f;  // <= 0 disables
  float max_log_ratio = 20.f;
  Aggregation aggregation = Aggregation::kTokenMean;
  bool sequence_ratio = false;  // GSPO
  double horizon = 0;           // seq-mean-token-sum-norm divisor
  int64_t token_count = -1;     // overrides (< 0: this batch's)
  int64_t seq_count = -1;
  bool entropy = false;
};

struct TokenInputs {
  int64_t T = 0;
  const int32_t* targets = nullptr;
  const float* old_logp = nullptr;
  const float* adv = nullptr;
  const uint8_t* mask = nullptr;
  int64_t S = 0;  // sequences; cu_seqlens has S + 1 entries
  const int32_t* cu_seqlens = nullptr;
};

struct Metrics {
  double loss = 0, tokens = 0, clip_low = 0, clip_high = 0, clip_dual = 0, approx_kl = 0, ppo_kl = 0, entropy = 0;
};

struct Surrogate {
  double loss, d_ratio;
  int clip;  // 0 none, 1 low, 2 high, 3 dual
};

inline Surrogate SurrogateOf(double r, double a, const LossConfig& c) {
  if (a > 0) {
    double hi = 1.0 + c.clip_high;
    if (r > hi) return {-a * hi, 0, 2};
    return {-a * r, -a, 0};
  }
  if (a < 0) {
    if (c.dual_clip > 0 && r > c.dual_clip) return {-a * c.dual_clip, 0, 3};
    double lo = 1.0 - c.clip_low;
    if (r < lo) return {-a * lo, 0, 1};
    return {-a * r, -a, 0};
  }
  return {0, 0, 0};
}

/** Aggregation weight of every token (0 where masked out). */
inline std::vector<double> AggregationWeights(const LossConfig& c, const TokenInputs& in) {
  std::vector<double> w(static_cast<size_t>(in.T), 0.0);
  int64_t n = 0;
  for (int64_t t = 0; t < in.T; ++t) n += in.mask[t] == 1;
  double seqs = c.seq_count >= 0 ? static_cast<double>(c.seq_count) : static_cast<double>(in.S);
  double tokens = c.token_count >= 0 ? static_cast<double>(c.token_count) : static_cast<double>(n);
  for (int64_t s = 0; s < in.S; ++s) {
    int64_t a = in.cu_seqlens[s], b = in.cu_seqlens[s + 1];
    double ws = 0;
    switch (c.aggregation) {
      case Aggregation::kTokenMean: ws = tokens == 0 ? 0 : 1.0 / tokens; break;
      case Aggregation::kSeqMeanTokenSum: ws = seqs == 0 ? 0 : 1.0 / seqs; break;
      case Aggregation::kSeqMeanTokenMean: {
        int64_t cnt = 0;
        for (int64_t t = a; t < b; ++t) cnt += in.mask[t] == 1;
        ws = seqs == 0 ? 0 : 1.0 / (seqs * static_cast<double>(std::max<int64_t>(cnt, 1)));
        break;
      }
      case Aggregation::kSeqMeanTokenSumNorm: ws = 1.0 / c.horizon; break;
    }
    for (int64_t t = a; t < b; ++t) w[t] = in.mask[t] == 1 ? ws : 0;
  }
  return w;
}

inline double ClampLr(double x, double m) { return std::min(m, std::max(-m, x)); }

/** d loss / d logp of one token under token-level ratios (the fused per-row path uses this). */
inline double TokenLevelGrad(double logp, double old, double adv, double w, const LossConfig& c) {
  double raw = logp - old, m = c.max_log_ratio;
  double r = std::exp(ClampLr(raw, m));
  Surrogate s = SurrogateOf(r, adv, c);
  return (raw >= -m && raw <= m) ? w * s.d_ratio * r : 0.0;
}

/**
 * Loss, metrics and d loss / d logp (into grad, length T) from the new logp (and per-row entropy
 * when asked). `w` are the aggregation weights.
 */
inline Metrics TokenMath(const LossConfig& c, const TokenInputs& in, const std::vector<double>& w, const float* logp,
                         const float* entropy, double* grad) {
  Metrics out;
  const double M = c.max_log_ratio;
  double counts[4] = {0, 0, 0, 0};
  double n = 0;
  for (int64_t t = 0; t < in.T; ++t) {
    grad[t] = 0;
    if (in.mask[t] != 1) continue;
    n += 1;
    double lr = ClampLr(static_cast<double>(logp[t]) - in.old_logp[t], M);
    out.approx_kl += std::exp(lr) - 1 - lr;
    out.ppo_kl -= lr;
    if (c.entropy) out.entropy += entropy[t];
  }
  if (!c.sequence_ratio) {
    for (int64_t t = 0; t < in.T; ++t) {
      if (in.mask[t] != 1) continue;
      double raw = static_cast<double>(logp[t]) - in.old_logp[t];
      double r = std::exp(ClampLr(raw, M));
      Surrogate s = SurrogateOf(r, in.adv[t], c);
      counts[s.clip] += 1;
      out.loss += w[t] * s.loss;
      grad[t] = (raw >= -M && raw <= M) ? w[t] * s.d_ratio * r : 0.0;
    }
  } else {
    for (int64_t q = 0; q < in.S; ++q) {
      int64_t a = in.cu_seqlens[q], b = in.cu_seqlens[q + 1];
      double cnt = 0, sum = 0;
      for (int64_t t = a; t < b; ++t) {
        if (in.mask[t] != 1) continue;
        cnt += 1;
        sum += static_cast<double>(logp[t]) - in.old_logp[t];
      }
      if (cnt == 0) continue;
      double raw = sum / cnt;
      double r = std::exp(ClampLr(raw, M));
      double d_r = 0;
      for (int64_t t = a; t < b; ++t) {
        if (in.mask[t] != 1) continue;
        Surrogate s = SurrogateOf(r, in.adv[t], c);
        counts[s.clip] += 1;
        out.loss += w[t] * s.loss;
        d_r += w[t] * s.d_ratio;
      }
      double g = (raw >= -M && raw <= M) ? d_r * r / cnt : 0.0;
      for (int64_t t = a; t < b; ++t)
        if (in.mask[t] == 1) grad[t] = g;
    }
  }
  double d = std::max(n, 1.0);
  out.tokens = n;
  out.clip_low = counts[1] / d;
  out.clip_high = counts[2] / d;
  out.clip_dual = counts[3] / d;
  out.approx_kl /= d;
  out.ppo_kl /= d;
  out.entropy = c.entropy ? out.entropy / d : NAN;
  return out;
}

/** Thrown for bad inputs found in native code (the binding maps it to KERNELS_INVALID_ARGUMENT). */
struct InvalidArgument : std::invalid_argument {
  using std::invalid_argument::invalid_argument;
};

}  // namespace agentrl::kernels
