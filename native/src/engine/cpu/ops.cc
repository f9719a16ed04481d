// Norms and RoPE are plain vectorisable loops (O(T*H), far below the GEMMs in the profile); causal
// attention runs its per-block products on the packed SGEMM (see AttentionForward).
#if defined(__GNUC__) && !defined(__clang__)
// GCC 12 reports false "may be used uninitialized" warnings from inside avx512fintrin.h.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
#include "engine/cpu/ops.h"

#include "engine/cpu/chunk_pool.h"
#include "engine/cpu/expf_simd.h"
#include "engine/cpu/sgemm.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

#if defined(__AVX512F__) || (defined(__AVX2__) && defined(__FMA__))
#include <immintrin.h>
#endif
#if defined(AGENTRL_HAVE_OPENMP)
#include <omp.h>
#endif

namespace agentrl::engine::cpu {
AGENTRL_ISA_BEGIN

void RmsNormForward(const float* x, const float* w, float* y, float* rstd, int rows, int n, float eps) {
#pragma omp parallel for schedule(static) if (rows * n > 32768)
  for (int t = 0; t < rows; ++t) {
    const float* xr = x + static_cast<size_t>(t) * n;
    float* yr = y + static_cast<size_t>(t) * n;
    float ss = 0.0f;
#pragma omp simd reduction(+ : ss)
    for (int i = 0; i < n; ++i) ss += xr[i] * xr[i];
    const float r = 1.0f / std::sqrt(ss / static_cast<float>(n) + eps);
    rstd[t] = r;
#pragma omp simd
    for (int i = 0; i < n; ++i) yr[i] = xr[i] * r * w[i];
  }
}

void RmsNormBackward(const float* x, const float* w, const float* rstd, const float* dy, float* dx, float* dw,
                     int rows, int n, bool accumulate_dx) {
  // dw is reduced serially over rows to stay deterministic; dx rows are independent.
#pragma omp parallel for schedule(static) if (rows * n > 32768)
  for (int t = 0; t < rows; ++t) {
    const float* xr = x + static_cast<size_t>(t) * n;
    const float* dyr = dy + static_cast<size_t>(t) * n;
    float* dxr = dx + static_cast<size_t>(t) * n;
    const float r = rstd[t];
    float dot = 0.0f;
#pragma omp simd reduction(+ : dot)
    for (int i = 0; i < n; ++i) dot += dyr[i] * w[i] * xr[i];
    const float c = dot * r * r * r / static_cast<float>(n);
    if (accumulate_dx) {
#pragma omp simd
      for (int i = 0; i < n; ++i) dxr[i] += r * w[i] * dyr[i] - c * xr[i];
    } else {
#pragma omp simd
      for (int i = 0; i < n; ++i) dxr[i] = r * w[i] * dyr[i] - c * xr[i];
    }
  }
  for (int t = 0; t < rows; ++t) {
    const float* xr = x + static_cast<size_t>(t) * n;
    const float* dyr = dy + static_cast<size_t>(t) * n;
    const float r = rstd[t];
#pragma omp simd
    for (int i = 0; i < n; ++i) dw[i] += dyr[i] * xr[i] * r;
  }
}

void Rope(float* x, const int32_t* pos, int rows, int heads, int d, int stride, const float* cos_table,
          const float* sin_table, bool inverse) {
  const int half = d / 2;
  const float sign = inverse ? -1.0f : 1.0f;
#pragma omp parallel for schedule(static) if (rows * heads * d > 32768)
  for (int t = 0; t < rows; ++t) {
    const float* ct = cos_table + static_cast<size_t>(pos[t]) * half;
    const float* st = sin_table + static_cast<size_t>(pos[t]) * half;
    for (int h = 0; h < heads; ++h) {
      float* v = x + static_cast<size_t>(t) * stride + h * d;
#pragma omp simd
      for (int i = 0; i < half; ++i) {
        const float a = v[i];
        const float b = v[i + half];
        const float s = sign * st[i];
        v[i] = a * ct[i] - b * s;
        v[i + half] = b * ct[i] + a * s;
      }
    }
  }
}

void AdamWUpdate(float* p, float* m, float* v, const float* g, size_t begin, size_t end, float grad_scale, float beta1,
                 float beta2, float step_size, float bc2_sqrt, float eps, float decay) {
#pragma omp parallel for schedule(static) if (end - begin > 65536)
  for (size_t i = begin; i < end; ++i) {
    const float gi = g[i] * grad_scale;
    m[i] = beta1 * m[i] + (1.0f - beta1) * gi;
    v[i] = beta2 * v[i] + (1.0f - beta2) * gi * gi;
    p[i] = p[i] * decay - step_size * m[i] / (std::sqrt(v[i]) / bc2_sqrt + eps);
  }
}

namespace {

// row[j] = exp(row[j] - max(row)) for j < n; returns their sum (and the max in *max_out). The
// training forward and the cached (decode) attention both call it, so a token's probabilities
// are the same bits in both.
inline float ExpShifted(float* row, int n, float* max_out = nullptr) {
  const float mx = expf_simd::RowMax(row, n);
  expf_simd::ExpSub(row, mx, row, n);  // glibc's expf bits (expf_simd.h)
  float sum = 0.0f;
  for (int j = 0; j < n; ++j) sum += row[j];
  if (max_out) *max_out = mx;
  return sum;
}

inline float Dot(const float* a, const float* b, int n) {
  float s = 0.0f;
#pragma omp simd reduction(+ : s)
  for (int i = 0; i < n; ++i) s += a[i] * b[i];
  return s;
}

// Parallel regions cost microseconds each (far more on a loaded machine): only open one when the
// attention work (sum of L^2 * heads * d) is worth it.
bool WorthParallel(const int32_t* cu, int num_seqs, const AttnShape& s) {
  double work = 0;
  for (int i = 0; i < num_seqs; ++i) {
    const double len = cu[i + 1] - cu[i];
    work += len * len;
  }
  return work * s.heads * s.head_dim > 4e5;
}

}  // namespace

// Causal attention runs on the packed GEMM, a block of query rows at a time: S = scale * Q K^T only
// for the key columns a block can see (skipping most of the masked upper triangle), a row softmax,
// then O = P V. The backward recomputes P from the saved log-sum-exp (nothing L x L is kept) and
// forms dP = dO V^T, dS = P * (dP - rowsum(dO * O)), dQ = dS K, dK += dS^T Q, dV += P^T dO.
constexpr int kAttnBlock = 64;

void AttentionForward(const float* q, const float* k, const float* v, float* out, float* lse, const int32_t* cu,
                      int num_seqs, int total, const AttnShape& s) {
  const int d = s.head_dim;
  const int qs = s.heads * d;
  const int ks = s.kv_heads * d;
  const int group = s.heads / s.kv_heads;
  const int tasks = num_seqs * s.heads;
#pragma omp parallel if (WorthParallel(cu, num_seqs, s))
  {
    std::vector<float> sc;
#pragma omp for schedule(dynamic, 1)
    for (int task = 0; task < tasks; ++task) {
      const int seq = task / s.heads;
      const int h = task % s.heads;
      const int g = h / group;
      const int begin = cu[seq];
      const int len = cu[seq + 1] - begin;
      const float* qh = q + static_cast<size_t>(begin) * qs + h * d;
      const float* kg = k + static_cast<size_t>(begin) * ks + g * d;
      const float* vg = v + static_cast<size_t>(begin) * ks + g * d;
      float* oh = out + static_cast<size_t>(begin) * qs + h * d;
      for (int i0 = 0; i0 < len; i0 += kAttnBlock) {
        const int rows = std::min(kAttnBlock, len - i0);
        const int cols = i0 + rows;
        if (sc.size() < static_cast<size_t>(rows) * cols) sc.resize(static_cast<size_t>(rows) * cols);
        SgemmSerial(false, true, rows, cols, d, s.scale, qh + static_cast<size_t>(i0) * qs, qs, kg, ks, 0.0f,
                    sc.data(), cols);
        for (int r = 0; r < rows; ++r) {
          float* row = sc.data() + static_cast<size_t>(r) * cols;
          const int n = i0 + r + 1;
          float mx = 0.0f;
          const float sum = ExpShifted(row, n, &mx);
          const float inv = 1.0f / sum;
          for (int j = 0; j < n; ++j) row[j] *= inv;
          for (int j = n; j < cols; ++j) row[j] = 0.0f;
          lse[static_cast<size_t>(h) * total + begin + i0 + r] = mx + std::log(sum);
        }
        SgemmSerial(false, false, rows, d, cols, 1.0f, sc.data(), cols, vg, ks, 0.0f, oh + static_cast<size_t>(i0) * qs,
                    qs);
      }
    }
  }
}

void AttentionBackward(const float* q, const float* k, const float* v, const float* out, const float* dout,
                       const float* lse, float* dq, float* dk, float* dv, const int32_t* cu, int num_seqs,
                       int total, const AttnShape& s) {
  const int d = s.head_dim;
  const int qs = s.heads * d;
  const int ks = s.kv_heads * d;
  const int group = s.heads / s.kv_heads;
  const int tasks = num_seqs * s.kv_heads;
  // One task owns one (sequence, kv head): it is the only writer of those dk/dv rows.
#pragma omp parallel if (WorthParallel(cu, num_seqs, s))
  {
    std::vector<float> p, dp;
#pragma omp for schedule(dynamic, 1)
    for (int task = 0; task < tasks; ++task) {
      const int seq = task / s.kv_heads;
      const int g = task % s.kv_heads;
      const int begin = cu[seq];
      const int len = cu[seq + 1] - begin;
      const float* kg = k + static_cast<size_t>(begin) * ks + g * d;
      const float* vg = v + static_cast<size_t>(begin) * ks + g * d;
      float* dkg = dk + static_cast<size_t>(begin) * ks + g * d;
      float* dvg = dv + static_cast<size_t>(begin) * ks + g * d;
      for (int j = 0; j < len; ++j) {
        std::memset(dkg + static_cast<size_t>(j) * ks, 0, sizeof(float) * d);
        std::memset(dvg + static_cast<size_t>(j) * ks, 0, sizeof(float) * d);
      }
      for (int h = g * group; h < (g + 1) * group; ++h) {
        const float* qh = q + static_cast<size_t>(begin) * qs + h * d;
        const float* oh = out + static_cast<size_t>(begin) * qs + h * d;
        const float* doh = dout + static_cast<size_t>(begin) * qs + h * d;
        float* dqh = dq + static_cast<size_t>(begin) * qs + h * d;
        const float* lh = lse + static_cast<size_t>(h) * total + begin;
        for (int i0 = 0; i0 < len; i0 += kAttnBlock) {
          const int rows = std::min(kAttnBlock, len - i0);
          const int cols = i0 + rows;
          const size_t need = static_cast<size_t>(rows) * cols;
          if (p.size() < need) {
            p.resize(need);
            dp.resize(need);
          }
          const float* qb = qh + static_cast<size_t>(i0) * qs;
          const float* dob = doh + static_cast<size_t>(i0) * qs;
          SgemmSerial(false, true, rows, cols, d, s.scale, qb, qs, kg, ks, 0.0f, p.data(), cols);
          SgemmSerial(false, true, rows, cols, d, 1.0f, dob, qs, vg, ks, 0.0f, dp.data(), cols);
          for (int r = 0; r < rows; ++r) {
            float* pr = p.data() + static_cast<size_t>(r) * cols;
            float* dr = dp.data() + static_cast<size_t>(r) * cols;
            const int n = i0 + r + 1;
            const float l = lh[i0 + r];
            const float di = Dot(dob + static_cast<size_t>(r) * qs, oh + static_cast<size_t>(i0 + r) * qs, d);
            expf_simd::ExpSub(pr, l, pr, n);
            for (int j = 0; j < n; ++j) dr[j] = pr[j] * (dr[j] - di) * s.scale;
            for (int j = n; j < cols; ++j) pr[j] = dr[j] = 0.0f;
          }
          SgemmSerial(false, false, rows, d, cols, 1.0f, dp.data(), cols, kg, ks, 0.0f,
                      dqh + static_cast<size_t>(i0) * qs, qs);
          SgemmSerial(true, false, cols, d, rows, 1.0f, dp.data(), cols, qb, qs, 1.0f, dkg, ks);
          SgemmSerial(true, false, cols, d, rows, 1.0f, p.data(), cols, dob, qs, 1.0f, dvg, ks);
        }
      }
    }
  }
}

namespace {

// scores[j] = scale * q . k_j for j < n, keys stored transposed (row c = component c of every key).
// Blocks of 64 keys keep four vector accumulators in registers across all d components (the AVX2
// level takes CachedScoresPairAvx2 instead).
[[maybe_unused]] void CachedScores(const float* q, const float* kt, size_t cap, int n, int d, float scale, float* scores) {
#if defined(__AVX512F__)
  // Masked loads cover the last partial block without reading past the row (or the buffer).
  const __m512 sc = _mm512_set1_ps(scale);
  for (int j0 = 0; j0 < n; j0 += 64) {
    const int rem = std::min(64, n - j0);
    __mmask16 m[4];
    for (int i = 0; i < 4; ++i) {
      const int left = rem - 16 * i;
      m[i] = left >= 16 ? static_cast<__mmask16>(0xFFFF) : left > 0 ? static_cast<__mmask16>((1u << left) - 1u) : 0;
    }
    __m512 a0 = _mm512_setzero_ps(), a1 = _mm512_setzero_ps(), a2 = _mm512_setzero_ps(), a3 = _mm512_setzero_ps();
    for (int c = 0; c < d; ++c) {
      const __m512 qc = _mm512_set1_ps(q[c]);
      const float* row = kt + static_cast<size_t>(c) * cap + j0;
      a0 = _mm512_fmadd_ps(qc, _mm512_maskz_loadu_ps(m[0], row), a0);
      a1 = _mm512_fmadd_ps(qc, _mm512_maskz_loadu_ps(m[1], row + 16), a1);
      a2 = _mm512_fmadd_ps(qc, _mm512_maskz_loadu_ps(m[2], row + 32), a2);
      a3 = _mm512_fmadd_ps(qc, _mm512_maskz_loadu_ps(m[3], row + 48), a3);
    }
    _mm512_mask_storeu_ps(scores + j0, m[0], _mm512_mul_ps(a0, sc));
    _mm512_mask_storeu_ps(scores + j0 + 16, m[1], _mm512_mul_ps(a1, sc));
    _mm512_mask_storeu_ps(scores + j0 + 32, m[2], _mm512_mul_ps(a2, sc));
    _mm512_mask_storeu_ps(scores + j0 + 48, m[3], _mm512_mul_ps(a3, sc));
  }
#else
  std::memset(scores, 0, sizeof(float) * n);
  for (int c = 0; c < d; ++c) {
    const float qc = q[c];
    const float* row = kt + static_cast<size_t>(c) * cap;
    for (int j = 0; j < n; ++j) scores[j] += qc * row[j];
  }
  for (int j = 0; j < n; ++j) scores[j] *= scale;
#endif
}

#if !defined(__AVX512F__) && defined(__AVX2__) && defined(__FMA__)
// The AVX2 scores of two query heads of one GQA group against a block of up to 32 keys: each key
// row slice is loaded once for both heads, four accumulators each. Per element the arithmetic of
// CachedScores (an FMA chain over c from zero, then times scale), so the results are the same bits.
void CachedScoresPairAvx2(const float* q0, const float* q1, const float* kt, size_t cap, int n, int d, float scale,
                          float* s0, float* s1) {
  alignas(32) static const int kLane[16] = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15};
  __m256i m[4];
  for (int i = 0; i < 4; ++i) {
    const int left = std::min(8, std::max(0, n - 8 * i));
    m[i] = _mm256_cmpgt_epi32(_mm256_set1_epi32(left), _mm256_load_si256(reinterpret_cast<const __m256i*>(kLane)));
  }
  __m256 a[4], b[4];
  for (int i = 0; i < 4; ++i) a[i] = b[i] = _mm256_setzero_ps();
  for (int c = 0; c < d; ++c) {
    const float* row = kt + static_cast<size_t>(c) * cap;
    const __m256 x0 = _mm256_set1_ps(q0[c]);
    const __m256 x1 = _mm256_set1_ps(q1 ? q1[c] : 0.0f);
    for (int i = 0; i < 4; ++i) {
      const __m256 r = n >= 32 ? _mm256_loadu_ps(row + 8 * i) : _mm256_maskload_ps(row + 8 * i, m[i]);
      a[i] = _mm256_fmadd_ps(x0, r, a[i]);
      b[i] = _mm256_fmadd_ps(x1, r, b[i]);
    }
  }
  const __m256 sc = _mm256_set1_ps(scale);
  for (int i = 0; i < 4; ++i) {
    _mm256_maskstore_ps(s0 + 8 * i, m[i], _mm256_mul_ps(a[i], sc));
    if (s1) _mm256_maskstore_ps(s1 + 8 * i, m[i], _mm256_mul_ps(b[i], sc));
  }
}
constexpr int kCachedKeyBlock = 32;
#else
constexpr int kCachedKeyBlock = 64;
#endif

}  // namespace

namespace {

struct CachedAttention {
  const float* q;
  float* out;
  const int32_t *seq_of, *pos;
  const float* const* k_cache_t;
  const int32_t* cache_cap;
  const float* const* v_cache;
  AttnShape s;
  int tasks, per_chunk;
};

// Key blocks of the scores (kCachedKeyBlock keys, above): one block is read from memory once and
// stays in L1 while every query head of its GQA group scores against it.

// Tasks (token, kv head) [chunk * per_chunk, ...): the group's query heads together, so the cached
// keys and values of the kv head are read once per group instead of once per query head. Each query
// head's arithmetic is unchanged (scores per 64-key block, the same ExpShifted, then for each value
// component the same FMA chain over j inside each kSgemmKc block, blocks added in order), so the
// outputs are bit-identical to one head at a time, and to the training forward's O = P V on the
// packed SGEMM: P normalised first, then per component one FMA chain over j inside each
// kSgemmKc-long block of j, the blocks' sums added in order (see panel_gemm.h for the same rule on
// the linears).
void CachedAttentionChunk(void* ctx, int chunk) {
  const CachedAttention& a = *static_cast<const CachedAttention*>(ctx);
  const AttnShape& s = a.s;
  const int d = s.head_dim, qs = s.heads * d, ks = s.kv_heads * d, group = s.heads / s.kv_heads;
  thread_local std::vector<float> p, acc;
  if (static_cast<int>(acc.size()) < group * d) acc.resize(static_cast<size_t>(group) * d);
  const int end = std::min(a.tasks, (chunk + 1) * a.per_chunk);
  for (int task = chunk * a.per_chunk; task < end; ++task) {
    const int t = task / s.kv_heads;
    const int g = task % s.kv_heads;
    const int n = a.pos[t] + 1;
    const size_t cap = static_cast<size_t>(a.cache_cap[a.seq_of[t]]);
    const float* kt = a.k_cache_t[a.seq_of[t]] + static_cast<size_t>(g) * d * cap;
    const float* vg = a.v_cache[a.seq_of[t]] + static_cast<size_t>(g) * d;
    if (p.size() < static_cast<size_t>(group) * n) p.resize(static_cast<size_t>(group) * n);
    const float* qg = a.q + static_cast<size_t>(t) * qs + static_cast<size_t>(g) * group * d;
    float* og = a.out + static_cast<size_t>(t) * qs + static_cast<size_t>(g) * group * d;
    // Scores of every head of the group, a key block at a time (CachedScores on a block equals its
    // slice of the whole row: each block's accumulators start at zero over all d components).
    for (int j0 = 0; j0 < n; j0 += kCachedKeyBlock) {
      const int nb = std::min(kCachedKeyBlock, n - j0);
#if !defined(__AVX512F__) && defined(__AVX2__) && defined(__FMA__)
      for (int r = 0; r < group; r += 2) {
        const bool two = r + 1 < group;
        CachedScoresPairAvx2(qg + static_cast<size_t>(r) * d, two ? qg + static_cast<size_t>(r + 1) * d : nullptr,
                             kt + j0, cap, nb, d, s.scale, p.data() + static_cast<size_t>(r) * n + j0,
                             two ? p.data() + static_cast<size_t>(r + 1) * n + j0 : nullptr);
      }
#else
      for (int r = 0; r < group; ++r)
        CachedScores(qg + static_cast<size_t>(r) * d, kt + j0, cap, nb, d, s.scale, p.data() + static_cast<size_t>(r) * n + j0);
#endif
    }
    for (int r = 0; r < group; ++r) {
      float* pr = p.data() + static_cast<size_t>(r) * n;
      const float inv = 1.0f / ExpShifted(pr, n);
      for (int j = 0; j < n; ++j) pr[j] *= inv;
    }
    // Values: each value row is read once for the group, every head's FMA chains advanced on it.
    for (int j0 = 0; j0 < n; j0 += kSgemmKc) {
      const int j1 = std::min(n, j0 + kSgemmKc);
      for (int r = 0; r < group; ++r)
        std::memset(j0 == 0 ? og + static_cast<size_t>(r) * d : acc.data() + static_cast<size_t>(r) * d, 0,
                    sizeof(float) * d);
      for (int j = j0; j < j1; ++j) {
        const float* vj = vg + static_cast<size_t>(j) * ks;
        for (int r = 0; r < group; ++r) {
          const float pj = p[static_cast<size_t>(r) * n + j];
          float* dst = j0 == 0 ? og + static_cast<size_t>(r) * d : acc.data() + static_cast<size_t>(r) * d;
#pragma omp simd
          for (int c = 0; c < d; ++c) dst[c] = MulAdd(pj, vj[c], dst[c]);
        }
      }
      if (j0 > 0) {
        for (int r = 0; r < group; ++r) {
          float* o = og + static_cast<size_t>(r) * d;
          const float* ar = acc.data() + static_cast<size_t>(r) * d;
#pragma omp simd
          for (int c = 0; c < d; ++c) o[c] += ar[c];
        }
      }
    }
  }
}

}  // namespace

void AttentionCached(const float* q, float* out, const int32_t* seq_of, const int32_t* pos, int total,
                     const float* const* k_cache_t, const int32_t* cache_cap, const float* const* v_cache,
                     const AttnShape& s) {
  const int tasks = total * s.kv_heads;
  int threads = 1;
#if defined(AGENTRL_HAVE_OPENMP)
  threads = omp_in_parallel() ? 1 : omp_get_max_threads();
#endif
  // Split (on the chunk pool, which never waits for a helper that is not running) only when the
  // scores and values are worth it: a short-context decode step's attention is a few microseconds.
  const bool split =
      threads > 1 && static_cast<double>(total) * s.heads * (pos[total - 1] + 1) * s.head_dim > 2e5;
  const int chunks = split ? std::min(tasks, 8 * threads) : 1;
  CachedAttention a{q, out, seq_of, pos, k_cache_t, cache_cap, v_cache, s, tasks, (tasks + chunks - 1) / chunks};
  RunChunks(chunks, threads, CachedAttentionChunk, &a);
}

AGENTRL_ISA_END
}  // namespace agentrl::engine::cpu
