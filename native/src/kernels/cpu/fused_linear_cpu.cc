// Fused-linear policy loss on the CPU: logits tiles of kTokens x kVocab are computed from hidden and
// the lm_head weight, reduced to per-token (max, sum, entropy sum) partials, and dropped; backward
// recomputes each tile to form dlogits on the fly and accumulates dweight (rows owned by the tile,
// so no races) and per-thread dhidden partials. Every product runs on the engine's packed SGEMM
// (engine/cpu/sgemm.h, one GEMM in the addon), one tile per thread. Memory beyond inputs and
// outputs: O(T x vocab tiles) partials plus O(threads x (kTokens x kVocab + kTokens x H)).
#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "engine/cpu/sgemm.h"
#include "kernels/cpu/row_ops.h"
#include "kernels/policy_loss.h"

#ifdef AGENTRL_HAVE_OPENMP
#include <omp.h>
#endif

namespace agentrl::kernels {
AGENTRL_ISA_BEGIN
namespace {

// 192 token rows = 16 micro-kernel panels of the SGEMM (MR = 12) and its MC block: the [kVocab, H]
// weight tile is packed once per 192 tokens, and dweight is read and written once per token block.
constexpr int64_t kTokens = 192;
constexpr int64_t kVocab = 256;

int Threads() {
#ifdef AGENTRL_HAVE_OPENMP
  return omp_get_max_threads();
#else
  return 1;
#endif
}

int ThreadId() {
#ifdef AGENTRL_HAVE_OPENMP
  return omp_get_thread_num();
#else
  return 0;
#endif
}

/**
 * tile[i * ldt + j] = scale * dot(a_i, b_j) for na rows of a and nb <= kVocab rows of b, on the
 * engine's packed SGEMM (the calling thread only: this runs inside the vocabulary-tile loop).
 */
void LogitsTile(const float* a, int64_t na, const float* b, int64_t nb, int64_t H, float scale, float* tile,
                int64_t ldt) {
  engine::cpu::SgemmSerial(false, true, static_cast<int>(na), static_cast<int>(nb), static_cast<int>(H), scale, a,
                           static_cast<int>(H), b, static_cast<int>(H), 0.0f, tile, static_cast<int>(ldt));
}

struct Partial {
  float m;
  float s;  // Σ e^{z - m}
  float u;  // Σ e^{z - m} (z - m)
  int bad;
};

}  // namespace

Metrics FusedLinearCpu(const LossConfig& c, const TokenInputs& in, const float* hidden, const float* weight, int64_t H,
                       int64_t V, float* dhidden, float* dweight, float* logp_out, int64_t* workspace_bytes,
                       bool accumulate_dweight) {
  const int64_t T = in.T;
  const float inv_tau = 1.f / c.temperature;
  const int64_t n_vt = (V + kVocab - 1) / kVocab;
  const int threads = Threads();
  std::vector<Partial> partial(static_cast<size_t>(std::min<int64_t>(T, kTokens) * n_vt));
  std::vector<float> tiles(static_cast<size_t>(threads) * kTokens * kVocab);
  std::vector<float> dh_part(static_cast<size_t>(threads) * kTokens * H);
  std::vector<float> row_max(static_cast<size_t>(T)), log_s(static_cast<size_t>(T)), entropy(c.entropy ? static_cast<size_t>(T) : 0);
  std::vector<double> grad(static_cast<size_t>(T));
  *workspace_bytes = static_cast<int64_t>(partial.size() * sizeof(Partial) + tiles.size() * 4 + dh_part.size() * 4 +
                                          row_max.size() * 8 + entropy.size() * 4 + grad.size() * 8 + T * 8);

  // ---- forward: per token block, vocab tiles in parallel -----------------------------------------
  for (int64_t t0 = 0; t0 < T; t0 += kTokens) {
    const int64_t nt = std::min(kTokens, T - t0);
#pragma omp parallel for schedule(dynamic, 1)
    for (int64_t vt = 0; vt < n_vt; ++vt) {
      const int64_t v0 = vt * kVocab, nv = std::min(kVocab, V - v0);
      const int tid = ThreadId();
      float* tile = tiles.data() + static_cast<int64_t>(tid) * kTokens * kVocab;
      LogitsTile(hidden + t0 * H, nt, weight + v0 * H, nv, H, inv_tau, tile, kVocab);
      for (int64_t i = 0; i < nt; ++i) {
        const float* z = tile + i * kVocab;
        float m = -INFINITY;
        int bad = 0;
#pragma omp simd reduction(max : m) reduction(| : bad)
        for (int64_t j = 0; j < nv; ++j) {
          bad |= !(std::fabs(z[j]) <= FLT_MAX);
          m = z[j] > m ? z[j] : m;
        }
        float s = 0, u = 0;
#pragma omp simd reduction(+ : s, u)
        for (int64_t j = 0; j < nv; ++j) {
          float e = cpu::FastExp(z[j] - m);
          s += e;
          u += e * (z[j] - m);
        }
        partial[i * n_vt + vt] = {m, s, u, bad};
        const int32_t tgt = in.targets[t0 + i];
        if (tgt >= v0 && tgt < v0 + nv) logp_out[t0 + i] = z[tgt - v0];  // the target logit, for now
      }
    }
    for (int64_t i = 0; i < nt; ++i) {
      const Partial* p = partial.data() + i * n_vt;
      float m = -INFINITY;
      int bad = 0;
      for (int64_t vt = 0; vt < n_vt; ++vt) {
        m = std::max(m, p[vt].m);
        bad |= p[vt].bad;
      }
      double s = 0, u = 0;
      for (int64_t vt = 0; vt < n_vt; ++vt) {
        double k = std::exp(static_cast<double>(p[vt].m) - m);
        s += p[vt].s * k;
        u += (p[vt].u + p[vt].s * (static_cast<double>(p[vt].m) - m)) * k;
      }
      if (bad) {
        throw InvalidArgument("hidden or weight produce a non-finite logit for token " + std::to_string(t0 + i) +
                              ": check them for NaN/inf");
      }
      row_max[t0 + i] = m;
      log_s[t0 + i] = static_cast<float>(std::log(s));
      logp_out[t0 + i] = static_cast<float>(static_cast<double>(logp_out[t0 + i] - m) - std::log(s));
      if (c.entropy) entropy[t0 + i] = static_cast<float>(std::log(s) - u / s);
    }
  }

  std::vector<double> w = AggregationWeights(c, in);
  Metrics metrics = TokenMath(c, in, w, logp_out, c.entropy ? entropy.data() : nullptr, grad.data());

  // ---- backward: recompute tiles, dlogits on the fly ---------------------------------------------
  if (!accumulate_dweight) std::memset(dweight, 0, sizeof(float) * V * H);
  std::memset(dhidden, 0, sizeof(float) * T * H);
  for (int64_t t0 = 0; t0 < T; t0 += kTokens) {
    const int64_t nt = std::min(kTokens, T - t0);
    bool any = false;
    for (int64_t i = 0; i < nt; ++i) any |= grad[t0 + i] != 0.0;
    if (!any) continue;  // a block of masked-out tokens contributes nothing
    std::fill(dh_part.begin(), dh_part.end(), 0.f);
    // Static: each thread sums a fixed set of tiles into its dHidden partial, so the float sums (and
    // the trainer's metrics, and a resumed run) are the same on every call with the same threads.
#pragma omp parallel for schedule(static)
    for (int64_t vt = 0; vt < n_vt; ++vt) {
      const int64_t v0 = vt * kVocab, nv = std::min(kVocab, V - v0);
      const int tid = ThreadId();
      float* tile = tiles.data() + static_cast<int64_t>(tid) * kTokens * kVocab;
      float* dh = dh_part.data() + static_cast<int64_t>(tid) * kTokens * H;
      LogitsTile(hidden + t0 * H, nt, weight + v0 * H, nv, H, inv_tau, tile, kVocab);
      for (int64_t i = 0; i < nt; ++i) {
        float* z = tile + i * kVocab;
        const float gs = static_cast<float>(grad[t0 + i] * inv_tau);
        if (gs == 0.f) {
          std::memset(z, 0, sizeof(float) * nv);
          continue;
        }
        const float m = row_max[t0 + i], ls = log_s[t0 + i];
#pragma omp simd
        for (int64_t j = 0; j < nv; ++j) z[j] = -gs * cpu::FastExp((z[j] - m) - ls);
        const int32_t tgt = in.targets[t0 + i];
        if (tgt >= v0 && tgt < v0 + nv) z[tgt - v0] += gs;
      }
      // dweight rows [v0, v0 + nv) += G^T hidden_block (rows owned by this tile: no race);
      // this thread's dhidden partial += G weight_tile
      engine::cpu::SgemmSerial(true, false, static_cast<int>(nv), static_cast<int>(H), static_cast<int>(nt), 1.0f,
                               tile, kVocab, hidden + t0 * H, static_cast<int>(H), 1.0f, dweight + v0 * H,
                               static_cast<int>(H));
      engine::cpu::SgemmSerial(false, false, static_cast<int>(nt), static_cast<int>(H), static_cast<int>(nv), 1.0f,
                               tile, kVocab, weight + v0 * H, static_cast<int>(H), 1.0f, dh, static_cast<int>(H));
    }
    for (int th = 0; th < threads; ++th) {
      const float* src = dh_part.data() + static_cast<int64_t>(th) * kTokens * H;
      float* dst = dhidden + t0 * H;
#pragma omp simd
      for (int64_t k = 0; k < nt * H; ++k) dst[k] += src[k];
    }
  }
  return metrics;
}

AGENTRL_ISA_END
}  // namespace agentrl::kernels
