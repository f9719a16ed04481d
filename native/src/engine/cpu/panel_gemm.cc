// See panel_gemm.h. The micro-kernel keeps R rows x NP panels of accumulators in registers over one
// k-block (one FMA chain per output element, as sgemm.cc's MicroKernel does), then adds the block's
// sums to C; R and NP only change which elements share a loop, never an element's arithmetic.
#if defined(__GNUC__) && !defined(__clang__)
// GCC 12 reports false "may be used uninitialized" warnings from inside avx512fintrin.h.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
#include "engine/cpu/panel_gemm.h"

#include <algorithm>
#include <cstring>

#include "engine/cpu/chunk_pool.h"
#include "engine/cpu/sgemm.h"

#if defined(__AVX512F__) || (defined(__AVX2__) && defined(__FMA__))
#include <immintrin.h>
#endif
#if defined(AGENTRL_HAVE_OPENMP)
#include <omp.h>
#endif

namespace agentrl::engine::cpu {
AGENTRL_ISA_BEGIN
namespace {

#if defined(__AVX512F__)
using Vec = __m512;
constexpr int kLanes = 16;
inline Vec Zero() { return _mm512_setzero_ps(); }
inline Vec Load(const float* p) { return _mm512_load_ps(p); }
inline Vec LoadU(const float* p) { return _mm512_loadu_ps(p); }
inline void StoreU(float* p, Vec v) { _mm512_storeu_ps(p, v); }
inline Vec Bcast(float x) { return _mm512_set1_ps(x); }
inline Vec Fma(Vec a, Vec b, Vec c) { return _mm512_fmadd_ps(a, b, c); }
inline Vec Add(Vec a, Vec b) { return _mm512_add_ps(a, b); }
#elif defined(__AVX2__) && defined(__FMA__)
using Vec = __m256;
constexpr int kLanes = 8;
inline Vec Zero() { return _mm256_setzero_ps(); }
inline Vec Load(const float* p) { return _mm256_load_ps(p); }
inline Vec LoadU(const float* p) { return _mm256_loadu_ps(p); }
inline void StoreU(float* p, Vec v) { _mm256_storeu_ps(p, v); }
inline Vec Bcast(float x) { return _mm256_set1_ps(x); }
inline Vec Fma(Vec a, Vec b, Vec c) { return _mm256_fmadd_ps(a, b, c); }
inline Vec Add(Vec a, Vec b) { return _mm256_add_ps(a, b); }
#else
// Same expression as sgemm.cc's portable micro-kernel (`acc += a * b`), so both contract alike.
using Vec = float;
constexpr int kLanes = 1;
inline Vec Zero() { return 0.0f; }
inline Vec Load(const float* p) { return *p; }
inline Vec LoadU(const float* p) { return *p; }
inline void StoreU(float* p, Vec v) { *p = v; }
inline Vec Bcast(float x) { return x; }
inline Vec Fma(Vec a, Vec b, Vec c) { return c + a * b; }
inline Vec Add(Vec a, Vec b) { return a + b; }
#endif

constexpr int kVecs = kPanelWidth / kLanes;  // vectors per panel row
static_assert(kPanelWidth % kLanes == 0, "a panel row is whole vectors");

// C[0:R, 0:NP*16] (ldc) (+)= A[0:R, 0:k] times NP consecutive panels. C has whole panels of room.
// `ahead` (optional): a panel to prefetch one cache line of per k, so the memory stream of the
// next panels runs while this one is computed from cache.
template <int R, int NP>
void Block(int k, const float* a, int lda, const float* panel, size_t panel_stride, bool accumulate, float* c,
           int ldc, const float* ahead = nullptr) {
  for (int k0 = 0; k0 < k; k0 += kPanelKc) {
    const int kc = std::min(kPanelKc, k - k0);
    Vec acc[R][NP][kVecs];
    for (int r = 0; r < R; ++r)
      for (int q = 0; q < NP; ++q)
        for (int v = 0; v < kVecs; ++v) acc[r][q][v] = Zero();
    const float* b = panel + static_cast<size_t>(k0) * kPanelWidth;
    const float* ak = a + k0;
    const float* pf = ahead ? ahead + static_cast<size_t>(k0) * kPanelWidth : nullptr;
    for (int kk = 0; kk < kc; ++kk) {
      if (pf)
        for (int q = 0; q < NP; ++q) __builtin_prefetch(pf + q * panel_stride + kk * kPanelWidth, 0, 3);
      Vec bv[NP][kVecs];
      for (int q = 0; q < NP; ++q)
        for (int v = 0; v < kVecs; ++v) bv[q][v] = Load(b + q * panel_stride + kk * kPanelWidth + v * kLanes);
      for (int r = 0; r < R; ++r) {
        const Vec av = Bcast(ak[static_cast<size_t>(r) * lda + kk]);
        for (int q = 0; q < NP; ++q)
          for (int v = 0; v < kVecs; ++v) acc[r][q][v] = Fma(av, bv[q][v], acc[r][q][v]);
      }
    }
    const bool add = k0 > 0 || accumulate;
    for (int r = 0; r < R; ++r) {
      for (int q = 0; q < NP; ++q) {
        for (int v = 0; v < kVecs; ++v) {
          float* out = c + static_cast<size_t>(r) * ldc + q * kPanelWidth + v * kLanes;
          StoreU(out, add ? Add(LoadU(out), acc[r][q][v]) : acc[r][q][v]);
        }
      }
    }
  }
}

template <int R, int NP>
void Rows(int k, const float* a, int lda, const float* panels, int p, bool accumulate, float* c, int ldc,
          int prefetch_panel = -1) {
  const size_t stride = static_cast<size_t>(k) * kPanelWidth;
  Block<R, NP>(k, a, lda, panels + p * stride, stride, accumulate, c + p * kPanelWidth, ldc,
               prefetch_panel >= 0 ? panels + prefetch_panel * stride : nullptr);
}

// One panel whose last columns lie past n: computed into a padded tile, valid columns copied out.
void PartialPanel(int m, int n, int k, const float* a, int lda, const float* panels, int p, bool accumulate, float* c,
                  int ldc) {
  const int cols = n - p * kPanelWidth;
  alignas(64) float tile[4 * kPanelWidth];
  const size_t stride = static_cast<size_t>(k) * kPanelWidth;
  for (int i = 0; i < m; i += 4) {
    const int rows = std::min(4, m - i);
    for (int r = 0; r < rows; ++r) {
      std::memset(tile + r * kPanelWidth, 0, sizeof(float) * kPanelWidth);
      if (accumulate)
        std::memcpy(tile + r * kPanelWidth, c + static_cast<size_t>(i + r) * ldc + p * kPanelWidth, sizeof(float) * cols);
    }
    const float* ai = a + static_cast<size_t>(i) * lda;
    const float* pp = panels + p * stride;
    switch (rows) {
      case 4: Block<4, 1>(k, ai, lda, pp, stride, accumulate, tile, kPanelWidth); break;
      case 3: Block<3, 1>(k, ai, lda, pp, stride, accumulate, tile, kPanelWidth); break;
      case 2: Block<2, 1>(k, ai, lda, pp, stride, accumulate, tile, kPanelWidth); break;
      default: Block<1, 1>(k, ai, lda, pp, stride, accumulate, tile, kPanelWidth); break;
    }
    for (int r = 0; r < rows; ++r)
      std::memcpy(c + static_cast<size_t>(i + r) * ldc + p * kPanelWidth, tile + r * kPanelWidth, sizeof(float) * cols);
  }
}

// Rows [i, m) of one group of G consecutive panels starting at p, the rows that do not fill a
// row block (up to 5 on AVX2; up to 7 on AVX-512, where 6 and 7 start with a 6-row pass): the kernel
// that keeps the most FMA chains in flight for that many rows (the panels are in L2 from the row
// blocks before them, so reading them again costs no memory traffic).
template <int G>
void LeftoverRows(int rows, int k, const float* a, int lda, const float* panels, int p, bool accumulate, float* c,
                  int ldc) {
  if (rows >= 6) {
    for (int q = 0; q < G; ++q) Rows<6, 1>(k, a, lda, panels, p + q, accumulate, c, ldc);
    rows -= 6;
    a += 6 * static_cast<size_t>(lda);
    c += 6 * static_cast<size_t>(ldc);
  }
  const float* a2 = a + 2 * static_cast<size_t>(lda);
  float* c2 = c + 2 * static_cast<size_t>(ldc);
  int q = 0;
  // 1, 2 and 4 rows take panels four or two at a time (8 chains) while the group has them.
  if (rows == 1)
    for (; q + 4 <= G; q += 4) Rows<1, 4>(k, a, lda, panels, p + q, accumulate, c, ldc);
  if (rows == 2 || rows == 4) {
    for (; q + 2 <= G; q += 2) {
      Rows<2, 2>(k, a, lda, panels, p + q, accumulate, c, ldc);
      if (rows == 4) Rows<2, 2>(k, a2, lda, panels, p + q, accumulate, c2, ldc);
    }
  }
  for (; q < G; ++q) {
    switch (rows) {
      case 1: Rows<1, 1>(k, a, lda, panels, p + q, accumulate, c, ldc); break;
      case 2: Rows<2, 1>(k, a, lda, panels, p + q, accumulate, c, ldc); break;
      case 3: Rows<3, 1>(k, a, lda, panels, p + q, accumulate, c, ldc); break;
      case 4: Rows<4, 1>(k, a, lda, panels, p + q, accumulate, c, ldc); break;
      case 5: Rows<5, 1>(k, a, lda, panels, p + q, accumulate, c, ldc); break;
      default: break;
    }
  }
}

// Whole panels [p0, p1) for m <= 64 rows: groups of 4 panels outer (they stay in L2 over the rows,
// so each weight is read from memory once per call), row blocks inner, then the leftover rows on the
// same group. The first row block of each step prefetches the panels kPrefetchAhead further on (see
// Block), so the memory stream runs while the block computes from cache.
// - AVX2 (16 registers): 6-row blocks of one panel (12 accumulators), prefetching the same panel of
//   the next group. Every row in one pass per panel (8 rows as 4 + 4, or one 8-row block, which
//   spills on AVX2) measured slower at batch-8 decode on AVX2 (BENCHMARKS.md, issue 26).
// - AVX-512 (32 registers, one 16-wide panel per vector): 8-row blocks over two panels at once (16
//   chains, enough for two FMA ports of 4-cycle latency; a 6 x 1 block keeps 6), prefetching the next
//   two panels. On a 2-core Zen 5 (0.6B shape, 2 threads, medians of 3-6 alternating processes) it
//   decoded 92 / 135 tokens/s at batch 8 / 32 against 77 / 104 for the AVX2 layout; 8 x 1 blocks gave
//   81 / 117, and 8 x 2 prefetching a group ahead 86-90 / 111-137.
#if defined(__AVX512F__)
constexpr int kBlockRows = 8, kBlockPanels = 2, kPrefetchAhead = 2;
#else
constexpr int kBlockRows = 6, kBlockPanels = 1, kPrefetchAhead = 4;
#endif
void PanelRangeRows(int m, int k, const float* a, int lda, const float* panels, int p0, int p1, int whole,
                    bool accumulate, float* c, int ldc) {
  constexpr int kGroup = 4;
  static_assert(kGroup % kBlockPanels == 0, "a group is whole blocks of panels");
  const int full = m / kBlockRows * kBlockRows;
  const float* al = a + static_cast<size_t>(full) * lda;
  float* cl = c + static_cast<size_t>(full) * ldc;
  int p = p0;
  for (; p + kGroup <= p1; p += kGroup) {
    for (int q = 0; q < kGroup; q += kBlockPanels) {
      const int ahead = p + q + kPrefetchAhead + kBlockPanels <= whole ? p + q + kPrefetchAhead : -1;
      for (int i = 0; i < full; i += kBlockRows)
        Rows<kBlockRows, kBlockPanels>(k, a + static_cast<size_t>(i) * lda, lda, panels, p + q, accumulate,
                                       c + static_cast<size_t>(i) * ldc, ldc, i == 0 ? ahead : -1);
    }
    LeftoverRows<kGroup>(m - full, k, al, lda, panels, p, accumulate, cl, ldc);
  }
  for (; p < p1; ++p) {
    for (int i = 0; i < full; i += kBlockRows)
      Rows<kBlockRows, 1>(k, a + static_cast<size_t>(i) * lda, lda, panels, p, accumulate,
                          c + static_cast<size_t>(i) * ldc, ldc);
    LeftoverRows<1>(m - full, k, al, lda, panels, p, accumulate, cl, ldc);
  }
}

// Rows in chunks of 64, so the chunk of A (64 x k) stays in L2 while every panel passes over it.
// `whole` (the number of whole panels) bounds the prefetch, which may run past p1 into the next range.
void PanelRange(int m, int k, const float* a, int lda, const float* panels, int p0, int p1, int whole,
                bool accumulate, float* c, int ldc) {
  for (int i0 = 0; i0 < m; i0 += 64) {
    PanelRangeRows(std::min(64, m - i0), k, a + static_cast<size_t>(i0) * lda, lda, panels, p0, p1, whole, accumulate,
                   c + static_cast<size_t>(i0) * ldc, ldc);
  }
}

// Panels per chunk of a split product: 8 panels of k = 768 are ~400 KB of weights (~20 us of
// memory stream), two prefetch groups.
constexpr int kChunkPanels = 8;

struct SplitProduct {
  int m, n, k, lda, ldc, whole, total;
  const float *a, *panels;
  float* c;
  bool accumulate;
};

void RunSplitChunk(void* ctx, int chunk) {
  const SplitProduct& s = *static_cast<const SplitProduct*>(ctx);
  const int p0 = chunk * kChunkPanels, p1 = std::min(s.whole, p0 + kChunkPanels);
  if (p0 < p1) PanelRange(s.m, s.k, s.a, s.lda, s.panels, p0, p1, s.whole, s.accumulate, s.c, s.ldc);
  if (p1 == s.whole && s.whole < s.total)
    PartialPanel(s.m, s.n, s.k, s.a, s.lda, s.panels, s.whole, s.accumulate, s.c, s.ldc);
}

// Above this many rows the packed SGEMM (same arithmetic, see panel_gemm.h) amortises its packing
// on the avx512 path; on the others it is slower than the panels at every size (on an AVX2 EPYC:
// 18 ms against 2.8 ms for 64 x 2048 x 768), so there it is unused.
#if defined(__AVX512F__)
constexpr int kPanelMaxRows = 64;
#else
constexpr int kPanelMaxRows = 1 << 30;
#endif

}  // namespace

void PackPanels(const float* w, int n, int k, float* dst) {
  const int panels = (n + kPanelWidth - 1) / kPanelWidth;
#pragma omp parallel for schedule(static) if (static_cast<double>(n) * k > 1e6)
  for (int p = 0; p < panels; ++p) {
    float* out = dst + static_cast<size_t>(p) * k * kPanelWidth;
    const int cols = std::min(kPanelWidth, n - p * kPanelWidth);
    for (int kk = 0; kk < k; ++kk) {
      for (int cidx = 0; cidx < cols; ++cidx)
        out[static_cast<size_t>(kk) * kPanelWidth + cidx] = w[static_cast<size_t>(p * kPanelWidth + cidx) * k + kk];
      for (int cidx = cols; cidx < kPanelWidth; ++cidx) out[static_cast<size_t>(kk) * kPanelWidth + cidx] = 0.0f;
    }
  }
}

void PanelGemm(int m, int n, int k, const float* a, int lda, const float* w, const float* panels, bool accumulate,
               float* c, int ldc) {
  if (m <= 0 || n <= 0) return;
  if (k <= 0) {
    for (int i = 0; i < m && !accumulate; ++i) std::memset(c + static_cast<size_t>(i) * ldc, 0, sizeof(float) * n);
    return;
  }
  if (m > kPanelMaxRows) {
    // Sgemm never takes its dot-product path: the same arithmetic, with packing amortised over m.
    Sgemm(false, true, m, n, k, 1.0f, a, lda, w, k, accumulate ? 1.0f : 0.0f, c, ldc);
    return;
  }
  const int whole = n / kPanelWidth;
  const int total = (n + kPanelWidth - 1) / kPanelWidth;
  int threads = 1;
#if defined(AGENTRL_HAVE_OPENMP)
  threads = omp_in_parallel() ? 1 : omp_get_max_threads();
#endif
  // Split when the product is long enough to share: a decode product streams its weights once, so
  // the measure is their size (>= 1 MB, ~50 us of memory stream) as well as its FLOPs. RunChunks
  // never waits for a helper that is not running (see chunk_pool.h); the result is the same for
  // any thread count and any split.
  const double weight_bytes = 4.0 * n * static_cast<double>(k);
  if (threads > 1 && (weight_bytes >= (1 << 20) || 2.0 * m * n * static_cast<double>(k) > 2e7)) {
    SplitProduct s{m, n, k, lda, ldc, whole, total, a, panels, c, accumulate};
    const int chunks = std::max(1, (whole + kChunkPanels - 1) / kChunkPanels);
    RunChunks(chunks, threads, RunSplitChunk, &s);
    return;
  }
  PanelRange(m, k, a, lda, panels, 0, whole, whole, accumulate, c, ldc);
  if (whole < total) PartialPanel(m, n, k, a, lda, panels, whole, accumulate, c, ldc);
}

AGENTRL_ISA_END
}  // namespace agentrl::engine::cpu
