// Causal attention over packed sequences on NVIDIA tensor cores (sm_80+): FlashAttention-2's
// forward, dK/dV pass and dQ pass (attention.cu's algorithm and contract) with every product a warp
// mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32: bf16 operands, fp32 accumulation; the online
// softmax, lse and dS in fp32. Opt-in (AGENTRL_GPU_ATTENTION=mma, see attention_mma.h); attention.cu's
// host wrappers fall back to the SIMT kernels when it does not apply.
//
// Layout: a block is 4 warps; a warp owns 16 rows (queries, or keys in the dK/dV pass) and holds its
// accumulators in mma C fragments (mma_fragments.h): a 16 x D tile is D / 2 floats per lane. Q and dO
// (forward, dQ pass) go from global memory straight into A fragments, converted fp32 -> bf16 once;
// the streamed tiles (K and V, or Q and dO) are converted into shared memory as bf16 rows padded by 8
// (16 bytes: the fragment reads below hit 32 distinct banks, and ldmatrix rows stay 16-byte
// aligned). Fragments come out of shared memory by ldmatrix.x4 (kLdm; .trans for an operand read by
// its columns: V in P V, dO in P^T dO, Q in dS^T Q, K in dS K), or with kLdm false
// (AGENTRL_GPU_ATTENTION=mma-lds) by plain loads: one 32-bit read per register of a tile's rows, two
// 16-bit reads per register of its columns; the same bits either way. The scores' C fragments become the next product's A
// fragments in registers (CToA*), as in FlashAttention-2. Warps whose rows see none of a tile (other
// sequences, or keys past the diagonal) skip its products, not its barriers. No atomics: dK / dV sum
// the group's heads and the query tiles in a fixed order, so every run gives the same bits.
//
// NEVER RUN ON A GPU: none where this was written, and HIP-CPU (scripts/hip-cpu-check.sh) cannot run
// PTX. The kernels themselves did run on the host, unchanged, through an emulation of the CUDA
// functions they use (AGENTRL_MMA_EMULATE: packages/engine/test/attention-mma-emulate.test.ts, within
// bf16 error, <= 4e-3, of a float64 attention); they compile for sm_80 and sm_90a without spills
// (packages/engine/test/attention-registers.test.ts, figures in BENCHMARKS.md);
// packages/engine/test/attention-mma.test.ts compares them with SIMT on the next GPU. HIP builds get
// the stubs at the bottom (never called: MmaAttentionApplies is false).
#include "engine/cuda/attention_mma.h"

#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <string>

#if defined(AGENTRL_MMA_EMULATE)
// The kernels alone, built by g++ against a host stand-in for the CUDA device functions they use
// (packages/engine/test/fixtures/mma_emulate.h: threads, barriers, shuffles, an mma.sync assembled
// from the 32 lanes' fragments), so their tiling, masking and softmax run without a GPU.
#include "mma_emulate.h"
#define AGENTRL_MMA_KERNELS 1
#else
#include "gpu/gpu_compat.h"
#if !defined(AGENTRL_GPU_IS_HIP)
#include <cuda_bf16.h>
#define AGENTRL_MMA_KERNELS 1
#endif
#endif

#if defined(AGENTRL_MMA_KERNELS)
#include <cmath>

#include "engine/cuda/mma_fragments.h"

namespace agentrl::engine::gpu {
namespace {

using namespace mma;  // NOLINT: the fragment maps

constexpr int kWarps = 4, kThreads = 32 * kWarps, kRowsPerWarp = 16, kPad = 8;

struct Packed {
  const int32_t* cu;
  const int32_t* seq_of;
  int total;
};

__device__ inline uint32_t Pack(float lo, float hi) {
  const __nv_bfloat162 v = __floats2bfloat162_rn(lo, hi);  // .x (low 16 bits) = lo
  uint32_t r;
  memcpy(&r, &v, sizeof r);
  return r;
}
__device__ inline uint32_t Ld32(const uint16_t* p) { return *reinterpret_cast<const uint32_t*>(p); }
__device__ inline uint32_t Pair(uint16_t lo, uint16_t hi) {
  return static_cast<uint32_t>(lo) | (static_cast<uint32_t>(hi) << 16);
}

// c += a b (16 x 16 by 16 x 8).
__device__ inline void Mma(float (&c)[4], const uint32_t (&a)[4], uint32_t b0, uint32_t b1) {
#if defined(AGENTRL_MMA_EMULATE)
  EmulatedMma(c, a, b0, b1);
#elif defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  asm("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
      "{%0, %1, %2, %3};\n"
      : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
#else
  __trap();  // built for an older architecture: MmaAttentionApplies never lets a launch through
#endif
}

// Rows row0 .. row0 + R - 1 of a [*, stride] fp32 matrix at column `col` (zero past `last`) into a
// bf16 tile [R][D + kPad]: float4 reads (D, col and stride are multiples of 4, the base 16-byte
// aligned: MmaAttentionApplies checks), 8-byte writes. Between the caller's barriers.
template <int R, int D>
__device__ inline void Stage(const float* src, uint16_t (*dst)[D + kPad], int row0, int last, int64_t stride,
                             int col) {
  constexpr int kVec = D / 4;
  for (int e = threadIdx.x; e < R * kVec; e += kThreads) {
    const int r = e / kVec, c = (e % kVec) * 4, j = row0 + r;
    float4 x = make_float4(0.f, 0.f, 0.f, 0.f);
    if (j <= last) x = *reinterpret_cast<const float4*>(src + static_cast<int64_t>(j) * stride + col + c);
    *reinterpret_cast<uint2*>(&dst[r][c]) = make_uint2(Pack(x.x, x.y), Pack(x.z, x.w));
  }
}

// A fragments of the warp's 16 rows (`row[0]` = its lane's first, `row[1]` = that + 8) of a
// [*, stride] fp32 matrix at column `col`, all D columns: KC = D / 16 fragments, zero for dead rows.
template <int D>
__device__ inline void LoadAGlobal(uint32_t (&a)[D / 16][4], const float* src, const int (&row)[2], const bool (&live)[2],
                             int64_t stride, int col, int lane) {
#pragma unroll
  for (int kk = 0; kk < D / 16; ++kk) {
#pragma unroll
    for (int r = 0; r < 4; ++r) {
      const int w = r & 1;  // ARow(lane, r) is row[0] or row[1]
      const float* p = src + static_cast<int64_t>(row[w]) * stride + col + kk * kK + ACol(lane, r);
      const float2 x = live[w] ? *reinterpret_cast<const float2*>(p) : make_float2(0.f, 0.f);
      a[kk][r] = Pack(x.x, x.y);
    }
  }
}

// A register `reg` of k-chunk `kc` from 16-column-wide pairs of C tiles (P or dS in bf16).
template <int NT>
__device__ inline void CToA(uint32_t (&a)[4], const float (&c)[NT][4], int kc) {
#pragma unroll
  for (int r = 0; r < 4; ++r) {
    const float* t = c[2 * kc + CToATile(r)];
    a[r] = Pack(t[CToAIndex(r)], t[CToAIndex(r) + 1]);
  }
}

// B fragments of a tile stored [n][k] (rows are the product's columns: K in Q K^T, V in dO V^T,
// Q and dO in K Q^T / V dO^T): one 32-bit read per register.
template <int D>
__device__ inline void BRows(uint32_t& b0, uint32_t& b1, const uint16_t (*t)[D + kPad], int n0, int k0, int lane) {
  b0 = Ld32(&t[n0 + BN(lane)][k0 + BK(lane, 0)]);
  b1 = Ld32(&t[n0 + BN(lane)][k0 + BK(lane, 1)]);
}
// B fragments of a tile stored [k][n] (V in P V, dO in P^T dO, Q in dS^T Q, K in dS K): 16-bit reads.
template <int D>
__device__ inline void BCols(uint32_t& b0, uint32_t& b1, const uint16_t (*t)[D + kPad], int k0, int n0, int lane) {
  const int n = n0 + BN(lane), k = k0 + BK(lane, 0);
  b0 = Pair(t[k][n], t[k + 1][n]);
  b1 = Pair(t[k + 8][n], t[k + 9][n]);
}

// ldmatrix.sync.aligned.m8n8.x4(.trans).shared.b16: lane l gives the address of row l % 8 of the
// 8 x 8 matrix l / 8 (16 contiguous bytes); register i receives matrix i as an mma fragment (see
// mma_fragments.h, LdmRow* / LdmCol*). One instruction for what BRows / BCols read in 4 to 8.
template <bool kTrans>
__device__ inline void LdMatrix4(uint32_t (&r)[4], const uint16_t* row) {
#if defined(AGENTRL_MMA_EMULATE)
  EmulatedLdMatrix4(r, row, kTrans);
#elif defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  const unsigned addr = static_cast<unsigned>(__cvta_generic_to_shared(row));
  if constexpr (kTrans) {
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];\n"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                 : "r"(addr));
  } else {
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                 : "r"(addr));
  }
#else
  (void)row;
  r[0] = r[1] = r[2] = r[3] = 0;
  __trap();
#endif
}

// The three fragment reads from shared memory, by ldmatrix (kLdm) or by plain 32 / 16-bit loads
// (AGENTRL_GPU_ATTENTION=mma-lds: the same numbers, to compare or to fall back on).
// A fragment of the 16 x 16 block at (r0, c0) of a row-major tile (K or V in the dK/dV pass).
template <bool kLdm, int D>
__device__ inline void LoadA(uint32_t (&a)[4], const uint16_t (*t)[D + kPad], int r0, int c0, int lane) {
  if constexpr (kLdm) {
    LdMatrix4<false>(a, &t[r0 + LdmRowA(lane)][c0 + LdmColA(lane)]);
  } else {
#pragma unroll
    for (int r = 0; r < 4; ++r) a[r] = Ld32(&t[r0 + ARow(lane, r)][c0 + ACol(lane, r)]);
  }
}
// B fragments of n-tiles n0 and n0 + 8 (b[0..1], b[2..3]) at k-chunk k0 of a [n][k] tile.
template <bool kLdm, int D>
__device__ inline void LoadBRows(uint32_t (&b)[4], const uint16_t (*t)[D + kPad], int n0, int k0, int lane) {
  if constexpr (kLdm) {
    LdMatrix4<false>(b, &t[n0 + LdmRowB(lane)][k0 + LdmColB(lane)]);
  } else {
    BRows<D>(b[0], b[1], t, n0, k0, lane);
    BRows<D>(b[2], b[3], t, n0 + kN, k0, lane);
  }
}
// B fragments of n-tiles n0 and n0 + 8 at k-chunk k0 of a [k][n] tile (transposed reads).
template <bool kLdm, int D>
__device__ inline void LoadBCols(uint32_t (&b)[4], const uint16_t (*t)[D + kPad], int k0, int n0, int lane) {
  if constexpr (kLdm) {
    LdMatrix4<true>(b, &t[k0 + LdmRowA(lane)][n0 + LdmColA(lane)]);
  } else {
    BCols<D>(b[0], b[1], t, k0, n0, lane);
    BCols<D>(b[2], b[3], t, k0, n0 + kN, lane);
  }
}

// sc[nt] = A B over D: A the warp's 16 rows as fragments (qa), B from the rows of a [n][k] tile
// (keys of K, or of V): scores for NT * 8 of the tile's rows.
template <bool kLdm, int D, int NT>
__device__ inline void RowProducts(float (&sc)[NT][4], const uint32_t (&a)[D / 16][4], const uint16_t (*t)[D + kPad],
                                   int lane) {
#pragma unroll
  for (int kk = 0; kk < D / kK; ++kk) {
#pragma unroll
    for (int nt = 0; nt < NT; nt += 2) {
      uint32_t b[4];
      LoadBRows<kLdm, D>(b, t, nt * kN, kk * kK, lane);
      Mma(sc[nt], a[kk], b[0], b[1]);
      Mma(sc[nt + 1], a[kk], b[2], b[3]);
    }
  }
}
// acc += C T: C the NT * 8 columns of C tiles (P or dS) as A fragments, T a [k][n] tile of D columns.
template <bool kLdm, int D, int NT>
__device__ inline void ColumnProducts(float (&acc)[D / 8][4], const float (&c)[NT][4], const uint16_t (*t)[D + kPad],
                                      int lane) {
#pragma unroll
  for (int kc = 0; kc < NT / 2; ++kc) {
    uint32_t a[4];
    CToA<NT>(a, c, kc);
#pragma unroll
    for (int dt = 0; dt < D / kN; dt += 2) {
      uint32_t b[4];
      LoadBCols<kLdm, D>(b, t, kc * kK, dt * kN, lane);
      Mma(acc[dt], a, b[0], b[1]);
      Mma(acc[dt + 1], a, b[2], b[3]);
    }
  }
}

__device__ inline float QuadMax(float v) {
  v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, 1));
  return fmaxf(v, __shfl_xor_sync(0xffffffffu, v, 2));
}
__device__ inline float QuadSum(float v) {
  v += __shfl_xor_sync(0xffffffffu, v, 1);
  return v + __shfl_xor_sync(0xffffffffu, v, 2);
}

// The rows this lane's C elements sit on: warp row0 + CRow(lane, 0) and + 8.
struct Rows {
  int row[2];
  bool live[2];
  int bound[2];  // forward / dQ: the row's sequence start; dK/dV: its sequence end
  int first, last;  // the warp's first and last live row (last < first: the warp has none)
};
__device__ inline Rows WarpRows(const Packed& pk, int warp_row0, int lane, bool want_end) {
  Rows w;
#pragma unroll
  for (int i = 0; i < 2; ++i) {
    w.row[i] = warp_row0 + CRow(lane, 2 * i);
    w.live[i] = w.row[i] < pk.total;
    w.bound[i] = w.live[i] ? pk.cu[pk.seq_of[w.row[i]] + (want_end ? 1 : 0)] : 0;
  }
  w.first = warp_row0;
  w.last = min(warp_row0 + kRowsPerWarp, pk.total) - 1;
  return w;
}

// The warp's live rows of a 16 x D accumulator tile into row `row` of `dst` (+ `col`), times scale[r].
template <int D>
__device__ inline void StoreRows(float* dst, int64_t stride, int col, const Rows& w, const float (&acc)[D / 8][4],
                                 const float (&scale)[2], int lane) {
#pragma unroll
  for (int r = 0; r < 2; ++r) {
    if (!w.live[r]) continue;
    float* row = dst + static_cast<int64_t>(w.row[r]) * stride + col;
#pragma unroll
    for (int dt = 0; dt < D / kN; ++dt) {
      *reinterpret_cast<float2*>(row + dt * kN + CCol(lane, 2 * r)) =
          make_float2(acc[dt][2 * r] * scale[r], acc[dt][2 * r + 1] * scale[r]);
    }
  }
}

// A block of 64 query rows of head blockIdx.y (forward, dQ pass): its first and last row, the kv head,
// this lane's rows and the warp's sequence start.
struct QueryBlock {
  int h, g, first, last, warp_begin;
  Rows w;
  // Whether any of the warp's rows sees a key in j0 .. j0 + n - 1 (the same answer on every lane).
  __device__ bool Sees(int j0, int n) const { return w.first <= w.last && j0 <= w.last && j0 + n > warp_begin; }
};
__device__ inline QueryBlock QueryRows(const Packed& pk, const AttnShape& s, int lane) {
  QueryBlock b;
  b.h = blockIdx.y;
  b.g = b.h / (s.heads / s.kv_heads);
  b.first = blockIdx.x * kWarps * kRowsPerWarp;
  b.last = min(b.first + kWarps * kRowsPerWarp, pk.total) - 1;
  b.w = WarpRows(pk, b.first + static_cast<int>(threadIdx.x / 32) * kRowsPerWarp, lane, false);
  b.warp_begin = b.w.first <= b.w.last ? pk.cu[pk.seq_of[b.w.first]] : 0;
  return b;
}

// The key tile j0 .. j0 + R - 1 of K and V (kv column `col`) into shared memory, between barriers
// (the previous tile's readers are done; this one is complete).
template <int R, int D>
__device__ inline void StageTiles(const float* k, const float* v, uint16_t (*ks)[D + kPad], uint16_t (*vs)[D + kPad],
                                  int j0, int last, int64_t stride, int col) {
  __syncthreads();
  Stage<R, D>(k, ks, j0, last, stride, col);
  Stage<R, D>(v, vs, j0, last, stride, col);
  __syncthreads();
}

// Forward: 64 query rows per block, key tiles of 64.
template <int D, bool kLdm>
__global__ void __launch_bounds__(kThreads)
    MmaForwardKernel(const float* q, const float* k, const float* v, float* out, float* lse, Packed pk, AttnShape s) {
  constexpr int Bc = 64, KC = D / 16, NT = Bc / 8, DT = D / 8;
  alignas(16) __shared__ uint16_t ks[Bc][D + kPad];
  alignas(16) __shared__ uint16_t vs[Bc][D + kPad];
  const int qs = s.heads * D, kvs = s.kv_heads * D, lane = threadIdx.x % 32;
  const QueryBlock b = QueryRows(pk, s, lane);
  const int h = b.h, g = b.g, first = b.first, last = b.last;
  const Rows& w = b.w;
  uint32_t qa[KC][4];
  LoadAGlobal<D>(qa, q, w.row, w.live, qs, h * D, lane);
  float o[DT][4] = {};
  float m[2] = {-INFINITY, -INFINITY}, l[2] = {0.f, 0.f};
  for (int j0 = pk.cu[pk.seq_of[first]]; j0 <= last; j0 += Bc) {
    StageTiles<Bc, D>(k, v, ks, vs, j0, last, kvs, g * D);
    if (!b.Sees(j0, Bc)) continue;  // warp-uniform
    float sc[NT][4] = {};
    RowProducts<kLdm, D, NT>(sc, qa, ks, lane);
    float mx[2] = {-INFINITY, -INFINITY};
#pragma unroll
    for (int nt = 0; nt < NT; ++nt) {
#pragma unroll
      for (int i = 0; i < 4; ++i) {
        const int r = i >> 1, j = j0 + nt * kN + CCol(lane, i);
        const bool seen = w.live[r] && j >= w.bound[r] && j <= w.row[r];
        sc[nt][i] = seen ? sc[nt][i] * s.scale : -INFINITY;
        mx[r] = fmaxf(mx[r], sc[nt][i]);
      }
    }
    float corr[2];
#pragma unroll
    for (int r = 0; r < 2; ++r) {
      const float m_new = fmaxf(m[r], QuadMax(mx[r]));
      corr[r] = m[r] == -INFINITY ? 0.f : __expf(m[r] - m_new);  // nothing accumulated yet: 0 * 0
      m[r] = m_new;
      l[r] *= corr[r];
    }
#pragma unroll
    for (int nt = 0; nt < NT; ++nt) {
#pragma unroll
      for (int i = 0; i < 4; ++i) {
        const int r = i >> 1;
        sc[nt][i] = sc[nt][i] == -INFINITY ? 0.f : __expf(sc[nt][i] - m[r]);
        l[r] += sc[nt][i];  // this lane's share; the quad's sum at the end
      }
    }
#pragma unroll
    for (int dt = 0; dt < DT; ++dt) {
#pragma unroll
      for (int i = 0; i < 4; ++i) o[dt][i] *= corr[i >> 1];
    }
    ColumnProducts<kLdm, D, NT>(o, sc, vs, lane);
  }
  float inv[2];
#pragma unroll
  for (int r = 0; r < 2; ++r) {
    l[r] = QuadSum(l[r]);
    inv[r] = w.live[r] ? 1.0f / l[r] : 0.f;
    if (w.live[r] && (lane & 3) == 0) lse[static_cast<int64_t>(h) * pk.total + w.row[r]] = m[r] + __logf(l[r]);
  }
  StoreRows<D>(out, qs, h * D, w, o, inv, lane);
}

// dK/dV: 64 key rows per block (16 per warp) of kv head g, K and V tiles in shared memory; query
// tiles of Bq rows of each head of the group, the queries >= the block's first key of the same
// sequences. dK_j = scale sum_i dS_ij Q_i, dV_j = sum_i P_ij dO_i over the queries i >= j of j's sequence.
template <int D, bool kLdm>
__global__ void __launch_bounds__(kThreads)
    MmaDkDvKernel(const float* q, const float* k, const float* v, const float* dout, const float* lse,
                  const float* delta, float* dk, float* dv, Packed pk, AttnShape s) {
  constexpr int Bk = kWarps * kRowsPerWarp, Bq = D == 128 ? 16 : 32, KC = D / 16, NT = Bq / 8, DT = D / 8;
  alignas(16) __shared__ uint16_t ks[Bk][D + kPad];
  alignas(16) __shared__ uint16_t vs[Bk][D + kPad];
  alignas(16) __shared__ uint16_t qsh[Bq][D + kPad];
  alignas(16) __shared__ uint16_t dosh[Bq][D + kPad];
  __shared__ float lsh[Bq], dsh[Bq];
  const int qs = s.heads * D, kvs = s.kv_heads * D;
  const int g = blockIdx.y, group = s.heads / s.kv_heads;
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int first = blockIdx.x * Bk;
  const int last_key = min(first + Bk, pk.total) - 1;
  const int q_end = pk.cu[pk.seq_of[last_key] + 1];
  const Rows w = WarpRows(pk, first + warp * kRowsPerWarp, lane, true);
  const int warp_end = w.first <= w.last ? pk.cu[pk.seq_of[w.last] + 1] : 0;
  Stage<Bk, D>(k, ks, first, last_key, kvs, g * D);  // ordered before use by the loop's barriers
  Stage<Bk, D>(v, vs, first, last_key, kvs, g * D);
  float dka[DT][4] = {}, dva[DT][4] = {};
  const int krow = warp * kRowsPerWarp;
  for (int h = g * group; h < (g + 1) * group; ++h) {
    for (int i0 = first; i0 < q_end; i0 += Bq) {
      __syncthreads();
      Stage<Bq, D>(q, qsh, i0, q_end - 1, qs, h * D);
      Stage<Bq, D>(dout, dosh, i0, q_end - 1, qs, h * D);
      for (int r = threadIdx.x; r < Bq; r += kThreads) {
        const int i = i0 + r;
        lsh[r] = i < q_end ? lse[static_cast<int64_t>(h) * pk.total + i] : 0.f;
        dsh[r] = i < q_end ? delta[static_cast<int64_t>(h) * pk.total + i] : 0.f;
      }
      __syncthreads();
      if (w.first > w.last || i0 >= warp_end || i0 + Bq <= w.first) continue;  // warp-uniform
      float st[NT][4] = {}, dpt[NT][4] = {};  // S^T = K Q^T, dP^T = V dO^T: keys x queries
#pragma unroll
      for (int kk = 0; kk < KC; ++kk) {
        uint32_t ka[4], va[4];
        LoadA<kLdm, D>(ka, ks, krow, kk * kK, lane);
        LoadA<kLdm, D>(va, vs, krow, kk * kK, lane);
#pragma unroll
        for (int nt = 0; nt < NT; nt += 2) {
          uint32_t b[4];
          LoadBRows<kLdm, D>(b, qsh, nt * kN, kk * kK, lane);
          Mma(st[nt], ka, b[0], b[1]);
          Mma(st[nt + 1], ka, b[2], b[3]);
          LoadBRows<kLdm, D>(b, dosh, nt * kN, kk * kK, lane);
          Mma(dpt[nt], va, b[0], b[1]);
          Mma(dpt[nt + 1], va, b[2], b[3]);
        }
      }
#pragma unroll
      for (int nt = 0; nt < NT; ++nt) {
#pragma unroll
        for (int i = 0; i < 4; ++i) {
          const int r = i >> 1, c = nt * kN + CCol(lane, i), qi = i0 + c;
          const bool seen = w.live[r] && qi >= w.row[r] && qi < w.bound[r];
          const float p = seen ? __expf(st[nt][i] * s.scale - lsh[c]) : 0.f;
          dpt[nt][i] = seen ? p * (dpt[nt][i] - dsh[c]) * s.scale : 0.f;
          st[nt][i] = p;
        }
      }
      ColumnProducts<kLdm, D, NT>(dva, st, dosh, lane);  // dV += P^T dO
      ColumnProducts<kLdm, D, NT>(dka, dpt, qsh, lane);  // dK += dS^T Q
    }
  }
  constexpr float kOne[2] = {1.f, 1.f};
  StoreRows<D>(dk, kvs, g * D, w, dka, kOne, lane);
  StoreRows<D>(dv, kvs, g * D, w, dva, kOne, lane);
}

// dQ: 64 query rows per block (16 per warp), key tiles of 32: dQ_i = scale sum_j dS_ij K_j.
template <int D, bool kLdm>
__global__ void __launch_bounds__(kThreads)
    MmaDqKernel(const float* q, const float* k, const float* v, const float* dout, const float* lse,
                const float* delta, float* dq, Packed pk, AttnShape s) {
  constexpr int Bc = 32, KC = D / 16, NT = Bc / 8, DT = D / 8;
  alignas(16) __shared__ uint16_t ks[Bc][D + kPad];
  alignas(16) __shared__ uint16_t vs[Bc][D + kPad];
  const int qs = s.heads * D, kvs = s.kv_heads * D, lane = threadIdx.x % 32;
  const QueryBlock b = QueryRows(pk, s, lane);
  const int h = b.h, g = b.g, first = b.first, last = b.last;
  const Rows& w = b.w;
  uint32_t qa[KC][4], oa[KC][4];
  LoadAGlobal<D>(qa, q, w.row, w.live, qs, h * D, lane);
  LoadAGlobal<D>(oa, dout, w.row, w.live, qs, h * D, lane);
  float lr[2], dl[2];
#pragma unroll
  for (int r = 0; r < 2; ++r) {
    lr[r] = w.live[r] ? lse[static_cast<int64_t>(h) * pk.total + w.row[r]] : 0.f;
    dl[r] = w.live[r] ? delta[static_cast<int64_t>(h) * pk.total + w.row[r]] : 0.f;
  }
  float dqa[DT][4] = {};
  for (int j0 = pk.cu[pk.seq_of[first]]; j0 <= last; j0 += Bc) {
    StageTiles<Bc, D>(k, v, ks, vs, j0, last, kvs, g * D);
    if (!b.Sees(j0, Bc)) continue;  // warp-uniform
    float sc[NT][4] = {}, dp[NT][4] = {};
    RowProducts<kLdm, D, NT>(sc, qa, ks, lane);  // S = Q K^T
    RowProducts<kLdm, D, NT>(dp, oa, vs, lane);  // dP = dO V^T
#pragma unroll
    for (int nt = 0; nt < NT; ++nt) {
#pragma unroll
      for (int i = 0; i < 4; ++i) {
        const int r = i >> 1, j = j0 + nt * kN + CCol(lane, i);
        const bool seen = w.live[r] && j >= w.bound[r] && j <= w.row[r];
        const float p = seen ? __expf(sc[nt][i] * s.scale - lr[r]) : 0.f;
        dp[nt][i] = seen ? p * (dp[nt][i] - dl[r]) * s.scale : 0.f;
      }
    }
    ColumnProducts<kLdm, D, NT>(dqa, dp, ks, lane);  // dQ += dS K
  }
  constexpr float kOne[2] = {1.f, 1.f};
  StoreRows<D>(dq, qs, h * D, w, dqa, kOne, lane);
}

}  // namespace
}  // namespace agentrl::engine::gpu
#endif  // AGENTRL_MMA_KERNELS

#if defined(AGENTRL_MMA_KERNELS) && !defined(AGENTRL_MMA_EMULATE)
namespace agentrl::engine::gpu {
namespace {

void Launched(const char* what) { agentrl::gpu::Check(gpuGetLastError(), what); }

// AGENTRL_GPU_ATTENTION, read once: 0 simt (default), 1 mma (fragments by ldmatrix), 2 mma-lds
// (the same kernels reading fragments with plain shared loads).
int Mode() {
  static const int mode = [] {
    const char* e = std::getenv("AGENTRL_GPU_ATTENTION");
    if (e == nullptr || *e == '\0' || std::strcmp(e, "simt") == 0) return 0;
    if (std::strcmp(e, "mma") == 0) return 1;
    if (std::strcmp(e, "mma-lds") == 0) return 2;
    throw std::runtime_error(std::string("AGENTRL_GPU_ATTENTION=") + e +
                             ": expected simt (fp32 SIMT kernels, the default) or mma (bf16 tensor cores, sm_80+; "
                             "mma-lds: the same without ldmatrix)");
  }();
  return mode;
}

// The compute capability of the device current at the first call (one device per process).
int Major() {
  static const int major = [] {
    int dev = 0, value = 0;
    if (cudaGetDevice(&dev) != cudaSuccess) return 0;
    if (cudaDeviceGetAttribute(&value, cudaDevAttrComputeCapabilityMajor, dev) != cudaSuccess) return 0;
    return value;
  }();
  return major;
}

// The architecture the kernels were compiled (or JIT-compiled from PTX) for on this device: a build
// for sm_75 run on an H200 JITs compute_75 code, whose Mma traps.
int BinaryVersion() {
  static const int version = [] {
    cudaFuncAttributes attr{};
    return cudaFuncGetAttributes(&attr, MmaForwardKernel<64, true>) == cudaSuccess ? attr.binaryVersion : 0;
  }();
  return version;
}

bool Aligned(const void* p) { return p == nullptr || reinterpret_cast<uintptr_t>(p) % 16 == 0; }

}  // namespace

bool MmaAttentionApplies(const AttnShape& s, const float* q, const float* k, const float* v, const float* dout) {
  if (Mode() == 0) return false;
  return Major() >= 8 && BinaryVersion() >= 80 && (s.head_dim == 64 || s.head_dim == 128) && Aligned(q) &&
         Aligned(k) && Aligned(v) && Aligned(dout);
}

namespace {
template <int D, bool kLdm>
void Forward(const float* q, const float* k, const float* v, float* out, float* lse, const Packed& pk,
             const AttnShape& s) {
  MmaForwardKernel<D, kLdm><<<dim3((pk.total + 63) / 64, s.heads), kThreads>>>(q, k, v, out, lse, pk, s);
}
template <int D, bool kLdm>
void Backward(const float* q, const float* k, const float* v, const float* dout, const float* lse, const float* delta,
              float* dq, float* dk, float* dv, const Packed& pk, const AttnShape& s) {
  const unsigned tiles = (pk.total + 63) / 64;
  MmaDkDvKernel<D, kLdm><<<dim3(tiles, s.kv_heads), kThreads>>>(q, k, v, dout, lse, delta, dk, dv, pk, s);
  MmaDqKernel<D, kLdm><<<dim3(tiles, s.heads), kThreads>>>(q, k, v, dout, lse, delta, dq, pk, s);
}
}  // namespace

void MmaAttentionForward(const float* q, const float* k, const float* v, float* out, float* lse, const int32_t* cu,
                         const int32_t* seq_of, int total, const AttnShape& s) {
  const Packed pk{cu, seq_of, total};
  const bool ldm = Mode() == 1;
  if (s.head_dim == 128) {
    (ldm ? Forward<128, true> : Forward<128, false>)(q, k, v, out, lse, pk, s);
  } else {
    (ldm ? Forward<64, true> : Forward<64, false>)(q, k, v, out, lse, pk, s);
  }
  Launched("attention forward (mma)");
}

void MmaAttentionBackward(const float* q, const float* k, const float* v, const float* dout, const float* lse,
                          const float* delta, float* dq, float* dk, float* dv, const int32_t* cu,
                          const int32_t* seq_of, int total, const AttnShape& s) {
  const Packed pk{cu, seq_of, total};
  const bool ldm = Mode() == 1;
  if (s.head_dim == 128) {
    (ldm ? Backward<128, true> : Backward<128, false>)(q, k, v, dout, lse, delta, dq, dk, dv, pk, s);
  } else {
    (ldm ? Backward<64, true> : Backward<64, false>)(q, k, v, dout, lse, delta, dq, dk, dv, pk, s);
  }
  Launched("attention backward (mma)");
}

}  // namespace agentrl::engine::gpu

#elif !defined(AGENTRL_MMA_EMULATE)  // HIP (hipcc, HIP-CPU): no mma.sync; SIMT takes every call.

namespace agentrl::engine::gpu {

bool MmaAttentionApplies(const AttnShape&, const float*, const float*, const float*, const float*) {
  const char* e = std::getenv("AGENTRL_GPU_ATTENTION");
  if (e != nullptr && *e != '\0' && std::strcmp(e, "simt") != 0 && std::strcmp(e, "mma") != 0 &&
      std::strcmp(e, "mma-lds") != 0) {
    throw std::runtime_error(std::string("AGENTRL_GPU_ATTENTION=") + e +
                             ": expected simt (the default) or mma (CUDA sm_80+ only; HIP always runs simt)");
  }
  return false;
}
void MmaAttentionForward(const float*, const float*, const float*, float*, float*, const int32_t*, const int32_t*, int,
                         const AttnShape&) {
  throw std::logic_error("attention (mma): not built for HIP");
}
void MmaAttentionBackward(const float*, const float*, const float*, const float*, const float*, const float*, float*,
                          float*, float*, const int32_t*, const int32_t*, int, const AttnShape&) {
  throw std::logic_error("attention (mma): not built for HIP");
}

}  // namespace agentrl::engine::gpu

#endif
