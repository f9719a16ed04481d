// BLIS-style SGEMM: pack a KC x NC block of op(B) into NR-wide panels and an MC x KC block of op(A)
// into MR-tall panels, then run an MR x NR register-blocked FMA micro-kernel over them. The packed
// B micro-panel (KC x NR, 32 KiB) stays in L1 while A panels stream from L2. Threads split the
// larger of M and N into independent sub-problems, so there are no barriers inside one GEMM.
#if defined(__GNUC__) && !defined(__clang__)
// GCC 12 reports false "may be used uninitialized" warnings from inside avx512fintrin.h.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
#include "engine/cpu/sgemm.h"

#include <algorithm>
#include <cstdlib>
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
namespace {

constexpr int kMr = 12;
constexpr int kNr = 32;
constexpr int kKc = kSgemmKc;
constexpr int kMc = 192;
constexpr int kNc = 3072;

struct PackBuffers {
  float* a = nullptr;
  float* b = nullptr;
  PackBuffers() {
    a = static_cast<float*>(std::aligned_alloc(64, sizeof(float) * kMc * kKc));
    b = static_cast<float*>(std::aligned_alloc(64, sizeof(float) * kKc * kNc));
  }
  ~PackBuffers() {
    std::free(a);
    std::free(b);
  }
};

PackBuffers& ThreadBuffers() {
  thread_local PackBuffers buffers;
  return buffers;
}

#if defined(__AVX512F__)
// In-register 16x16 transpose: afterwards r[x] lane c holds what r[c] lane x held.
inline void Transpose16x16(__m512 r[16]) {
  __m512 t[16];
  for (int c = 0; c < 16; c += 2) {
    t[c] = _mm512_unpacklo_ps(r[c], r[c + 1]);
    t[c + 1] = _mm512_unpackhi_ps(r[c], r[c + 1]);
  }
  for (int c = 0; c < 16; c += 4) {
    r[c] = _mm512_shuffle_ps(t[c], t[c + 2], 0x44);
    r[c + 1] = _mm512_shuffle_ps(t[c], t[c + 2], 0xEE);
    r[c + 2] = _mm512_shuffle_ps(t[c + 1], t[c + 3], 0x44);
    r[c + 3] = _mm512_shuffle_ps(t[c + 1], t[c + 3], 0xEE);
  }
  for (int c = 0; c < 16; c += 8) {
    for (int d = 0; d < 4; ++d) {
      t[c + d] = _mm512_shuffle_f32x4(r[c + d], r[c + d + 4], 0x88);
      t[c + d + 4] = _mm512_shuffle_f32x4(r[c + d], r[c + d + 4], 0xDD);
    }
  }
  for (int d = 0; d < 8; ++d) {
    r[d] = _mm512_shuffle_f32x4(t[d], t[d + 8], 0x88);
    r[d + 8] = _mm512_shuffle_f32x4(t[d], t[d + 8], 0xDD);
  }
}
#endif

// Packs op(A)[i0:i0+mc, k0:k0+kc] into panels of kMr rows, k-major inside a panel, zero-padded.
#if !defined(__AVX512F__) && defined(__AVX2__) && defined(__FMA__)
// r[i] = row i of an 8 x 8 block -> r[j] = column j. Packing copies values, so it has no effect on
// any result's bits; on the avx2 level it replaced per-element strided copies, which cost the
// forward product (both operands packed across their rows) ~10 % of its time (BENCHMARKS.md).
inline void Transpose8x8(__m256 r[8]) {
  __m256 t[8];
  for (int i = 0; i < 8; i += 2) {
    t[i] = _mm256_unpacklo_ps(r[i], r[i + 1]);
    t[i + 1] = _mm256_unpackhi_ps(r[i], r[i + 1]);
  }
  __m256 u[8];
  for (int i = 0; i < 8; i += 4) {
    u[i] = _mm256_shuffle_ps(t[i], t[i + 2], 0x44);
    u[i + 1] = _mm256_shuffle_ps(t[i], t[i + 2], 0xEE);
    u[i + 2] = _mm256_shuffle_ps(t[i + 1], t[i + 3], 0x44);
    u[i + 3] = _mm256_shuffle_ps(t[i + 1], t[i + 3], 0xEE);
  }
  for (int i = 0; i < 4; ++i) {
    r[i] = _mm256_permute2f128_ps(u[i], u[i + 4], 0x20);
    r[i + 4] = _mm256_permute2f128_ps(u[i], u[i + 4], 0x31);
  }
}
#endif

void PackA(bool trans, const float* a, int lda, int i0, int mc, int k0, int kc, float* dst) {
  for (int p = 0; p < mc; p += kMr) {
    const int rows = std::min(kMr, mc - p);
    float* panel = dst + static_cast<size_t>(p) * kc;
    if (!trans) {
      int k_done = 0;
#if defined(__AVX512F__)
      if (rows == kMr) {
        // 12 rows x 16 k at a time through the 16x16 transpose (4 zero rows), 12-lane masked stores.
        const __mmask16 keep = 0x0FFF;
        for (; k_done + 16 <= kc; k_done += 16) {
          __m512 r[16];
          for (int q = 0; q < kMr; ++q) r[q] = _mm512_loadu_ps(a + static_cast<size_t>(i0 + p + q) * lda + k0 + k_done);
          for (int q = kMr; q < 16; ++q) r[q] = _mm512_setzero_ps();
          Transpose16x16(r);
          for (int x = 0; x < 16; ++x) _mm512_mask_storeu_ps(panel + (k_done + x) * kMr, keep, r[x]);
        }
      }
#elif defined(__AVX2__) && defined(__FMA__)
      if (rows == kMr) {
        const float* src = a + static_cast<size_t>(i0 + p) * lda + k0;
        for (; k_done + 8 <= kc; k_done += 8) {
          // Rows 0-7, then rows 8-11 with four zero rows (their low halves stored).
          __m256 r[8], s[8];
          for (int q = 0; q < 8; ++q) r[q] = _mm256_loadu_ps(src + static_cast<size_t>(q) * lda + k_done);
          for (int q = 0; q < 4; ++q) s[q] = _mm256_loadu_ps(src + static_cast<size_t>(8 + q) * lda + k_done);
          for (int q = 4; q < 8; ++q) s[q] = _mm256_setzero_ps();
          Transpose8x8(r);
          Transpose8x8(s);
          for (int x = 0; x < 8; ++x) {
            _mm256_storeu_ps(panel + (k_done + x) * kMr, r[x]);
            _mm_storeu_ps(panel + (k_done + x) * kMr + 8, _mm256_castps256_ps128(s[x]));
          }
        }
      }
#endif
      for (int r = 0; r < rows; ++r) {
        const float* src = a + static_cast<size_t>(i0 + p + r) * lda + k0;
        for (int k = k_done; k < kc; ++k) panel[k * kMr + r] = src[k];
      }
    } else {
      for (int k = 0; k < kc; ++k) {
        const float* src = a + static_cast<size_t>(k0 + k) * lda + i0 + p;
        for (int r = 0; r < rows; ++r) panel[k * kMr + r] = src[r];
      }
    }
    if (rows < kMr) {
      for (int k = 0; k < kc; ++k)
        for (int r = rows; r < kMr; ++r) panel[k * kMr + r] = 0.0f;
    }
  }
}

// Packs op(B)[k0:k0+kc, j0:j0+nc] into panels of kNr columns, k-major inside a panel, zero-padded.
void PackB(bool trans, const float* b, int ldb, int k0, int kc, int j0, int nc, float* dst) {
  for (int p = 0; p < nc; p += kNr) {
    const int cols = std::min(kNr, nc - p);
    float* panel = dst + static_cast<size_t>(p) * kc;
    if (!trans) {
      for (int k = 0; k < kc; ++k) {
        const float* src = b + static_cast<size_t>(k0 + k) * ldb + j0 + p;
        float* out = panel + k * kNr;
        if (cols == kNr) {
          std::memcpy(out, src, sizeof(float) * kNr);
        } else {
          for (int c = 0; c < cols; ++c) out[c] = src[c];
          for (int c = cols; c < kNr; ++c) out[c] = 0.0f;
        }
      }
    } else {
#if defined(__AVX512F__)
      if (cols == kNr) {
        // Transpose 16 x 16 tiles: rows of B (columns of op(B)) become k-major panel rows.
        int k = 0;
        for (; k + 16 <= kc; k += 16) {
          for (int half = 0; half < 2; ++half) {
            __m512 r[16];
            for (int c = 0; c < 16; ++c)
              r[c] = _mm512_loadu_ps(b + static_cast<size_t>(j0 + p + half * 16 + c) * ldb + k0 + k);
            Transpose16x16(r);
            // r[x] now holds k-index k + x across the 16 columns.
            for (int x = 0; x < 16; ++x) {
              _mm512_storeu_ps(panel + static_cast<size_t>(k + x) * kNr + half * 16, r[x]);
            }
          }
        }
        for (; k < kc; ++k) {
          for (int c = 0; c < kNr; ++c) panel[k * kNr + c] = b[static_cast<size_t>(j0 + p + c) * ldb + k0 + k];
        }
        continue;
      }
#elif defined(__AVX2__) && defined(__FMA__)
      if (cols == kNr) {
        int k = 0;
        for (; k + 8 <= kc; k += 8) {
          for (int g = 0; g < kNr; g += 8) {
            __m256 r[8];
            for (int c = 0; c < 8; ++c) r[c] = _mm256_loadu_ps(b + static_cast<size_t>(j0 + p + g + c) * ldb + k0 + k);
            Transpose8x8(r);
            for (int x = 0; x < 8; ++x) _mm256_storeu_ps(panel + static_cast<size_t>(k + x) * kNr + g, r[x]);
          }
        }
        for (; k < kc; ++k) {
          for (int c = 0; c < kNr; ++c) panel[k * kNr + c] = b[static_cast<size_t>(j0 + p + c) * ldb + k0 + k];
        }
        continue;
      }
#endif
      for (int c = 0; c < cols; ++c) {
        const float* src = b + static_cast<size_t>(j0 + p + c) * ldb + k0;
        for (int k = 0; k < kc; ++k) panel[k * kNr + c] = src[k];
      }
      if (cols < kNr) {
        for (int k = 0; k < kc; ++k)
          for (int c = cols; c < kNr; ++c) panel[k * kNr + c] = 0.0f;
      }
    }
  }
}

// acc = Apanel(kMr x kc) * Bpanel(kc x kNr); C tile = alpha * acc + beta * C (rows x cols valid).
void MicroKernel(int kc, const float* a, const float* b, float* c, int ldc, int rows, int cols, float alpha,
                 float beta) {
#if defined(__AVX512F__)
  // The C tile is read (beta != 0) or written only after the k loop: ask for its lines now, so a
  // tile out of cache (a weight gradient's rows, ldc apart) arrives while the FMAs run.
  for (int r = 0; r < rows; ++r) {
    _mm_prefetch(reinterpret_cast<const char*>(c + r * ldc), _MM_HINT_T0);
    _mm_prefetch(reinterpret_cast<const char*>(c + r * ldc + cols - 1), _MM_HINT_T0);
  }
  __m512 acc[kMr][2];
#pragma GCC unroll 12
  for (int r = 0; r < kMr; ++r) {
    acc[r][0] = _mm512_setzero_ps();
    acc[r][1] = _mm512_setzero_ps();
  }
  for (int k = 0; k < kc; ++k) {
    const __m512 b0 = _mm512_load_ps(b);
    const __m512 b1 = _mm512_load_ps(b + 16);
#pragma GCC unroll 12
    for (int r = 0; r < kMr; ++r) {
      const __m512 av = _mm512_set1_ps(a[r]);
      acc[r][0] = _mm512_fmadd_ps(av, b0, acc[r][0]);
      acc[r][1] = _mm512_fmadd_ps(av, b1, acc[r][1]);
    }
    a += kMr;
    b += kNr;
  }
  const __m512 va = _mm512_set1_ps(alpha);
  if (rows == kMr && cols == kNr) {
    if (beta == 0.0f) {
#pragma GCC unroll 12
      for (int r = 0; r < kMr; ++r) {
        _mm512_storeu_ps(c + r * ldc, _mm512_mul_ps(va, acc[r][0]));
        _mm512_storeu_ps(c + r * ldc + 16, _mm512_mul_ps(va, acc[r][1]));
      }
    } else {
      const __m512 vb = _mm512_set1_ps(beta);
#pragma GCC unroll 12
      for (int r = 0; r < kMr; ++r) {
        float* row = c + r * ldc;
        _mm512_storeu_ps(row, _mm512_fmadd_ps(va, acc[r][0], _mm512_mul_ps(vb, _mm512_loadu_ps(row))));
        _mm512_storeu_ps(row + 16,
                         _mm512_fmadd_ps(va, acc[r][1], _mm512_mul_ps(vb, _mm512_loadu_ps(row + 16))));
      }
    }
    return;
  }
  alignas(64) float tile[kMr * kNr];
  for (int r = 0; r < kMr; ++r) {
    _mm512_store_ps(tile + r * kNr, acc[r][0]);
    _mm512_store_ps(tile + r * kNr + 16, acc[r][1]);
  }
#elif defined(__AVX2__) && defined(__FMA__)
  // Four 6 x 16 sub-tiles, each with its 12 accumulators in registers over the whole k-block: the
  // same FMA chain per element as the AVX-512 kernel and the portable loop below.
  alignas(32) float tile[kMr * kNr];
  for (int r0 = 0; r0 < kMr; r0 += 6) {
    for (int c0 = 0; c0 < kNr; c0 += 16) {
      __m256 acc[6][2];
      for (int r = 0; r < 6; ++r) acc[r][0] = acc[r][1] = _mm256_setzero_ps();
      const float* ap = a + r0;
      const float* bp = b + c0;
      for (int k = 0; k < kc; ++k) {
        const __m256 b0 = _mm256_loadu_ps(bp + k * kNr);
        const __m256 b1 = _mm256_loadu_ps(bp + k * kNr + 8);
#pragma GCC unroll 6
        for (int r = 0; r < 6; ++r) {
          const __m256 av = _mm256_broadcast_ss(ap + k * kMr + r);
          acc[r][0] = _mm256_fmadd_ps(av, b0, acc[r][0]);
          acc[r][1] = _mm256_fmadd_ps(av, b1, acc[r][1]);
        }
      }
      for (int r = 0; r < 6; ++r) {
        _mm256_store_ps(tile + (r0 + r) * kNr + c0, acc[r][0]);
        _mm256_store_ps(tile + (r0 + r) * kNr + c0 + 8, acc[r][1]);
      }
    }
  }
#else
  float tile[kMr * kNr] = {0};
  for (int k = 0; k < kc; ++k) {
    for (int r = 0; r < kMr; ++r) {
      const float av = a[k * kMr + r];
      for (int j = 0; j < kNr; ++j) tile[r * kNr + j] += av * b[k * kNr + j];
    }
  }
#endif
  for (int r = 0; r < rows; ++r) {
    float* row = c + r * ldc;
    if (beta == 0.0f) {
      for (int j = 0; j < cols; ++j) row[j] = alpha * tile[r * kNr + j];
    } else {
      // As the AVX-512 full tile's _mm512_fmadd_ps(alpha, acc, beta * C): the same bits on every FMA level.
      for (int j = 0; j < cols; ++j) row[j] = MulAdd(alpha, tile[r * kNr + j], beta * row[j]);
    }
  }
}

// Small-M NT case (decode: M <= kSmallM rows against a weight stored [N, K]): register-blocked dot
// products, 4 rows x 4 weight rows at a time with 16 independent vector accumulators along k, and
// no packing, which would cost as much as the product itself at this M.
constexpr int kSmallM = 16;

#if defined(__AVX512F__)
inline float Hsum(__m512 v) { return _mm512_reduce_add_ps(v); }

// One dot product in exactly the order the 4x4 blocks below use.
inline float Dot16(const float* x, const float* y, int k16, __mmask16 tail) {
  __m512 acc = _mm512_setzero_ps();
  for (int p = 0; p < k16; p += 16) acc = _mm512_fmadd_ps(_mm512_loadu_ps(x + p), _mm512_loadu_ps(y + p), acc);
  if (tail) acc = _mm512_fmadd_ps(_mm512_maskz_loadu_ps(tail, x + k16), _mm512_maskz_loadu_ps(tail, y + k16), acc);
  return Hsum(acc);
}
#endif

void SmallMNt(int m, int n_begin, int n_end, int k, float alpha, const float* a, int lda, const float* b, int ldb,
              float beta, float* c, int ldc) {
  auto store = [&](int i, int j, float s) {
    float* out = c + static_cast<size_t>(i) * ldc + j;
    *out = beta == 0.0f ? alpha * s : alpha * s + beta * *out;
  };
  int i0 = 0;
#if defined(__AVX512F__)
  const int k16 = k / 16 * 16;
  const __mmask16 tail = static_cast<__mmask16>((1u << (k - k16)) - 1u);
  for (; i0 + 4 <= m; i0 += 4) {
    const float* ar[4];
    for (int r = 0; r < 4; ++r) ar[r] = a + static_cast<size_t>(i0 + r) * lda;
    int j = n_begin;
    for (; j + 4 <= n_end; j += 4) {
      const float* br[4];
      for (int q = 0; q < 4; ++q) br[q] = b + static_cast<size_t>(j + q) * ldb;
      __m512 acc[4][4];
      for (int r = 0; r < 4; ++r)
        for (int q = 0; q < 4; ++q) acc[r][q] = _mm512_setzero_ps();
      for (int p = 0; p < k16; p += 16) {
        __m512 bv[4];
        for (int q = 0; q < 4; ++q) bv[q] = _mm512_loadu_ps(br[q] + p);
        for (int r = 0; r < 4; ++r) {
          const __m512 av = _mm512_loadu_ps(ar[r] + p);
          for (int q = 0; q < 4; ++q) acc[r][q] = _mm512_fmadd_ps(av, bv[q], acc[r][q]);
        }
      }
      if (tail) {
        __m512 bv[4];
        for (int q = 0; q < 4; ++q) bv[q] = _mm512_maskz_loadu_ps(tail, br[q] + k16);
        for (int r = 0; r < 4; ++r) {
          const __m512 av = _mm512_maskz_loadu_ps(tail, ar[r] + k16);
          for (int q = 0; q < 4; ++q) acc[r][q] = _mm512_fmadd_ps(av, bv[q], acc[r][q]);
        }
      }
      for (int r = 0; r < 4; ++r)
        for (int q = 0; q < 4; ++q) store(i0 + r, j + q, Hsum(acc[r][q]));
    }
    for (; j < n_end; ++j) {
      for (int r = 0; r < 4; ++r) store(i0 + r, j, Dot16(ar[r], b + static_cast<size_t>(j) * ldb, k16, tail));
    }
  }
  // Leftover rows use the same per-element arithmetic as the blocks: results never depend on how
  // rows or columns were grouped (or split between threads).
  for (int i = i0; i < m; ++i) {
    const float* ai = a + static_cast<size_t>(i) * lda;
    for (int j = n_begin; j < n_end; ++j) store(i, j, Dot16(ai, b + static_cast<size_t>(j) * ldb, k16, tail));
  }
#else
  for (int i = i0; i < m; ++i) {
    const float* ai = a + static_cast<size_t>(i) * lda;
    for (int j = n_begin; j < n_end; ++j) {
      const float* bj = b + static_cast<size_t>(j) * ldb;
      float s = 0.0f;
      for (int p = 0; p < k; ++p) s += ai[p] * bj[p];
      store(i, j, s);
    }
  }
#endif
}

}  // namespace

void SgemmSerial(bool trans_a, bool trans_b, int m, int n, int k, float alpha, const float* a, int lda,
                 const float* b, int ldb, float beta, float* c, int ldc, bool allow_small_m) {
  if (m <= 0 || n <= 0) return;
  if (k <= 0) {
    for (int i = 0; i < m; ++i)
      for (int j = 0; j < n; ++j) c[static_cast<size_t>(i) * ldc + j] = beta == 0.0f ? 0.0f : beta * c[static_cast<size_t>(i) * ldc + j];
    return;
  }
  if (allow_small_m && m <= kSmallM && !trans_a && trans_b) {
    SmallMNt(m, 0, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
    return;
  }
  PackBuffers& buf = ThreadBuffers();
  for (int j0 = 0; j0 < n; j0 += kNc) {
    const int nc = std::min(kNc, n - j0);
    for (int k0 = 0; k0 < k; k0 += kKc) {
      const int kc = std::min(kKc, k - k0);
      const float beta_here = k0 == 0 ? beta : 1.0f;
      PackB(trans_b, b, ldb, k0, kc, j0, nc, buf.b);
      for (int i0 = 0; i0 < m; i0 += kMc) {
        const int mc = std::min(kMc, m - i0);
        PackA(trans_a, a, lda, i0, mc, k0, kc, buf.a);
        for (int jr = 0; jr < nc; jr += kNr) {
          const float* bp = buf.b + static_cast<size_t>(jr) * kc;
          const int cols = std::min(kNr, nc - jr);
          for (int ir = 0; ir < mc; ir += kMr) {
            const int rows = std::min(kMr, mc - ir);
            MicroKernel(kc, buf.a + static_cast<size_t>(ir) * kc, bp,
                        c + static_cast<size_t>(i0 + ir) * ldc + j0 + jr, ldc, rows, cols, alpha, beta_here);
          }
        }
      }
    }
  }
}

namespace {

void SgemmThreads(bool trans_a, bool trans_b, int m, int n, int k, float alpha, const float* a, int lda,
                  const float* b, int ldb, float beta, float* c, int ldc, bool small_m) {
#if defined(AGENTRL_HAVE_OPENMP)
  const double flops = 2.0 * m * n * static_cast<double>(k);
  const int threads = omp_in_parallel() ? 1 : omp_get_max_threads();
  // Below ~20 MFLOP (every decode step of a small model) waking a second thread costs more than
  // it saves, above all on a shared machine.
  if (threads > 1 && flops > 2e7) {
    // Each thread runs an independent GEMM on its share of N (columns) or of M (rows), and packs
    // all of the other operand: split the dimension whose operand is the larger (op(B) is K x N,
    // op(A) M x K), as long as the shares are whole micro-tiles. A weight gradient [out, in] with
    // out > in (gate/up, q, the lm_head) splits its rows, so each thread packs half of dY^T.
    const bool split_n = m < threads * 2 * kMr || (n >= threads * 2 * kNr && n >= m);
    const int extent = split_n ? n : m;
    const int align = split_n ? kNr : kMr;
    int chunk = (extent + threads - 1) / threads;
    chunk = (chunk + align - 1) / align * align;
#pragma omp parallel num_threads(threads)
    {
      const int t = omp_get_thread_num();
      const int begin = t * chunk;
      const int end = std::min(extent, begin + chunk);
      if (begin < end) {
        if (split_n) {
          const float* bt = trans_b ? b + static_cast<size_t>(begin) * ldb : b + begin;
          SgemmSerial(trans_a, trans_b, m, end - begin, k, alpha, a, lda, bt, ldb, beta, c + begin, ldc, small_m);
        } else {
          const float* at = trans_a ? a + begin : a + static_cast<size_t>(begin) * lda;
          SgemmSerial(trans_a, trans_b, end - begin, n, k, alpha, at, lda, b, ldb, beta,
                      c + static_cast<size_t>(begin) * ldc, ldc, small_m && m <= kSmallM);
        }
      }
    }
    return;
  }
#endif
  SgemmSerial(trans_a, trans_b, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc, small_m);
}

}  // namespace

void Sgemm(bool trans_a, bool trans_b, int m, int n, int k, float alpha, const float* a, int lda, const float* b,
           int ldb, float beta, float* c, int ldc) {
  SgemmThreads(trans_a, trans_b, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc, false);
}

void SgemmSmallM(bool trans_a, bool trans_b, int m, int n, int k, float alpha, const float* a, int lda,
                 const float* b, int ldb, float beta, float* c, int ldc) {
  SgemmThreads(trans_a, trans_b, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc, true);
}

AGENTRL_ISA_END
}  // namespace agentrl::engine::cpu
