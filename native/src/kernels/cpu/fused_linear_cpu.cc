// Fused-linear policy loss on the CPU: logits tiles of kTokens x kVocab are computed from hidden and
// the lm_head weight, reduced to per-token (max, sum, entropy sum) partials, and dropped; backward
// recomputes each tile to form dlogits on the fly and accumulates dweight (rows owned by the tile,
// so no races) and per-thread dhidden partials. Memory beyond inputs and outputs: O(T x vocab
// tiles) partials plus O(threads x (kTokens x kVocab + kTokens x H)).
#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "kernels/cpu/row_ops.h"
#include "kernels/policy_loss.h"

#ifdef AGENTRL_HAVE_OPENMP
#include <omp.h>
#endif

namespace agentrl::kernels {
namespace {

constexpr int64_t kTokens = 64;
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

/** tile[i * ldt + j] = scale * dot(a_i, b_j), 4 x 4 register blocks vectorised along H. */
void GemmTile(const float* a, int64_t na, const float* b, int64_t nb, int64_t H, float scale, float* tile, int64_t ldt) {
  int64_t i = 0;
  for (; i + 4 <= na; i += 4) {
    const float* a0 = a + i * H;
    const float* a1 = a0 + H;
    const float* a2 = a1 + H;
    const float* a3 = a2 + H;
    int64_t j = 0;
    for (; j + 4 <= nb; j += 4) {
      const float* b0 = b + j * H;
      const float* b1 = b0 + H;
      const float* b2 = b1 + H;
      const float* b3 = b2 + H;
      float c00 = 0, c01 = 0, c02 = 0, c03 = 0, c10 = 0, c11 = 0, c12 = 0, c13 = 0;
      float c20 = 0, c21 = 0, c22 = 0, c23 = 0, c30 = 0, c31 = 0, c32 = 0, c33 = 0;
#pragma omp simd reduction(+ : c00, c01, c02, c03, c10, c11, c12, c13, c20, c21, c22, c23, c30, c31, c32, c33)
      for (int64_t k = 0; k < H; ++k) {
        float x0 = a0[k], x1 = a1[k], x2 = a2[k], x3 = a3[k];
        float y0 = b0[k], y1 = b1[k], y2 = b2[k], y3 = b3[k];
        c00 += x0 * y0; c01 += x0 * y1; c02 += x0 * y2; c03 += x0 * y3;
        c10 += x1 * y0; c11 += x1 * y1; c12 += x1 * y2; c13 += x1 * y3;
        c20 += x2 * y0; c21 += x2 * y1; c22 += x2 * y2; c23 += x2 * y3;
        c30 += x3 * y0; c31 += x3 * y1; c32 += x3 * y2; c33 += x3 * y3;
      }
      float* t0 = tile + i * ldt + j;
      t0[0] = c00 * scale; t0[1] = c01 * scale; t0[2] = c02 * scale; t0[3] = c03 * scale;
      t0 += ldt; t0[0] = c10 * scale; t0[1] = c11 * scale; t0[2] = c12 * scale; t0[3] = c13 * scale;
      t0 += ldt; t0[0] = c20 * scale; t0[1] = c21 * scale; t0[2] = c22 * scale; t0[3] = c23 * scale;
      t0 += ldt; t0[0] = c30 * scale; t0[1] = c31 * scale; t0[2] = c32 * scale; t0[3] = c33 * scale;
    }
    for (; j < nb; ++j) {
      for (int64_t r = 0; r < 4; ++r) {
        const float* ar = a + (i + r) * H;
        const float* bj = b + j * H;
        float acc = 0;
#pragma omp simd reduction(+ : acc)
        for (int64_t k = 0; k < H; ++k) acc += ar[k] * bj[k];
        tile[(i + r) * ldt + j] = acc * scale;
      }
    }
  }
  for (; i < na; ++i) {
    for (int64_t j = 0; j < nb; ++j) {
      const float* ai = a + i * H;
      const float* bj = b + j * H;
      float acc = 0;
#pragma omp simd reduction(+ : acc)
      for (int64_t k = 0; k < H; ++k) acc += ai[k] * bj[k];
      tile[i * ldt + j] = acc * scale;
    }
  }
}

struct Partial {
  float m;
  float s;  // Σ e^{z - m}
  float u;  // Σ e^{z - m} (z - m)
  int bad;
};

}  // namespace

Metrics FusedLinearCpu(const LossConfig& c, const TokenInputs& in, const float* hidden, const float* weight, int64_t H,
                       int64_t V, float* dhidden, float* dweight, float* logp_out, int64_t* workspace_bytes) {
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
      float* tile = tiles.data() + static_cast<int64_t>(ThreadId()) * kTokens * kVocab;
      GemmTile(hidden + t0 * H, nt, weight + v0 * H, nv, H, inv_tau, tile, kVocab);
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
  std::memset(dweight, 0, sizeof(float) * V * H);
  std::memset(dhidden, 0, sizeof(float) * T * H);
  for (int64_t t0 = 0; t0 < T; t0 += kTokens) {
    const int64_t nt = std::min(kTokens, T - t0);
    bool any = false;
    for (int64_t i = 0; i < nt; ++i) any |= grad[t0 + i] != 0.0;
    if (!any) continue;  // a block of masked-out tokens contributes nothing
    std::fill(dh_part.begin(), dh_part.end(), 0.f);
#pragma omp parallel for schedule(dynamic, 1)
    for (int64_t vt = 0; vt < n_vt; ++vt) {
      const int64_t v0 = vt * kVocab, nv = std::min(kVocab, V - v0);
      const int tid = ThreadId();
      float* tile = tiles.data() + static_cast<int64_t>(tid) * kTokens * kVocab;
      float* dh = dh_part.data() + static_cast<int64_t>(tid) * kTokens * H;
      GemmTile(hidden + t0 * H, nt, weight + v0 * H, nv, H, inv_tau, tile, kVocab);
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
      // dweight rows [v0, v0 + nv) += G^T hidden_block ; dh_part += G weight_tile
      for (int64_t j = 0; j < nv; ++j) {
        float* dwj = dweight + (v0 + j) * H;
        const float* wj = weight + (v0 + j) * H;
        for (int64_t i = 0; i < nt; ++i) {
          const float g = tile[i * kVocab + j];
          if (g == 0.f) continue;
          const float* hi = hidden + (t0 + i) * H;
          float* dhi = dh + i * H;
#pragma omp simd
          for (int64_t k = 0; k < H; ++k) {
            dwj[k] += g * hi[k];
            dhi[k] += g * wj[k];
          }
        }
      }
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

}  // namespace agentrl::kernels
