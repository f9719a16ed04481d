#include <cstring>
#include <string>
#include <vector>

#include "kernels/cpu/row_ops.h"
#include "kernels/policy_loss.h"

namespace agentrl::kernels {
AGENTRL_ISA_BEGIN

namespace {

[[noreturn]] void BadRow(int64_t t) {
  throw InvalidArgument("logits row " + std::to_string(t) +
                        " has NaN or +inf, or is all -inf: logits must be finite or -inf with at least one finite value");
}

}  // namespace

Metrics PolicyLossCpu(const LossConfig& c, const TokenInputs& in, const float* logits, int64_t V, float* dlogits,
                      float* logp_out, float* entropy_out) {
  const int64_t T = in.T;
  const float inv_tau = 1.f / c.temperature;
  std::vector<double> w = AggregationWeights(c, in);
  std::vector<float> row_max(static_cast<size_t>(T)), log_s(static_cast<size_t>(T));
  std::vector<float> entropy(c.entropy ? static_cast<size_t>(T) : 0);
  std::vector<double> grad(static_cast<size_t>(T));
  int64_t first_bad = -1;
  // Stores row t's statistics; a row with a non-finite logit is noted (the first one is reported) instead.
  auto keep_row = [&](int64_t t, const cpu::RowStat& st) {
    if (st.bad) {
#pragma omp critical
      if (first_bad < 0 || t < first_bad) first_bad = t;
      return false;
    }
    row_max[t] = st.max;
    log_s[t] = st.log_s;
    logp_out[t] = st.logp;
    if (c.entropy) entropy[t] = st.entropy;
    return true;
  };

  if (!c.sequence_ratio) {
    // Token-level ratios: g_t needs only row t. The statistics pass parks exp(z - chunk max) in the
    // row's dlogits (about to be overwritten anyway); the gradient pass rescales it in place while it
    // is in L2: 8 bytes of DRAM traffic and one exp per logit.
    const int64_t n_chunks = (V + cpu::kChunk - 1) / cpu::kChunk;
#pragma omp parallel
    {
      std::vector<float> chunk_max(static_cast<size_t>(n_chunks));
#pragma omp for schedule(dynamic, 4)
      for (int64_t t = 0; t < T; ++t) {
        const float* row = logits + t * V;
        float* out = dlogits + t * V;
        cpu::RowStat st = cpu::RowStats(row, V, inv_tau, in.targets[t], c.entropy, out, chunk_max.data());
        if (!keep_row(t, st)) continue;
        double g = in.mask[t] == 1 ? TokenLevelGrad(st.logp, in.old_logp[t], in.adv[t], w[t], c) : 0.0;
        cpu::RowGradParked(out, V, chunk_max.data(), st.max, st.log_s, static_cast<float>(g * inv_tau), in.targets[t]);
      }
    }
    if (first_bad >= 0) BadRow(first_bad);
    return TokenMath(c, in, w, logp_out, c.entropy ? entropy.data() : nullptr, grad.data());
  }

  // Sequence-level (GSPO) ratios need every logp of a sequence first: two sweeps.
#pragma omp parallel for schedule(dynamic, 4)
  for (int64_t t = 0; t < T; ++t) {
    if (!keep_row(t, cpu::RowStats(logits + t * V, V, inv_tau, in.targets[t], c.entropy))) continue;
  }
  if (first_bad >= 0) BadRow(first_bad);
  Metrics m = TokenMath(c, in, w, logp_out, c.entropy ? entropy.data() : nullptr, grad.data());
#pragma omp parallel for schedule(dynamic, 4)
  for (int64_t t = 0; t < T; ++t) {
    cpu::RowGrad(logits + t * V, dlogits + t * V, V, inv_tau, row_max[t], log_s[t], static_cast<float>(grad[t] * inv_tau),
                 in.targets[t]);
  }
  return m;
}

AGENTRL_ISA_END
}  // namespace agentrl::kernels
