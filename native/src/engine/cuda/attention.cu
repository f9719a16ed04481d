// Causal attention over packed sequences on the device, FlashAttention-style: query rows stream
// over tiles of keys held in shared memory with an online softmax (running max and sum), so no
// T x T score matrix exists anywhere; the backward recomputes the scores from q, k and the saved
// log-sum-exp (FlashAttention-2's dK/dV pass over query tiles, then a dQ pass over key tiles, both
// without atomics, so the result is the same every run).
//
// Register budget: a group of G lanes (one warp holds 32 / G groups) owns one query (or key) row;
// lane l keeps the float4 chunks at columns 4 (l + G i), i < D / (4 G), so G = 8 lanes hold a
// 128-wide row as 16 floats each, and a key row in shared memory is read by the 8 lanes as 32
// consecutive floats per step (all 32 banks, no conflicts; the other groups of the warp read the
// same words: a broadcast). A q.k dot product is each lane's partial sum reduced with xor shuffles
// over the group: every lane ends with the same bits (the butterfly adds the same pairs), so the
// softmax state is replicated across the group without another exchange. Columns past head_dim are
// zero in registers and in the tiles, so any even head_dim <= 128 takes the same code. Shuffles sit
// outside any per-row branch (dead and masked rows run the loop and mask their scores): CUDA's
// full-mask shuffle needs the whole warp, HIP-CPU's is a block barrier.
//
// At head_dim 128 no kernel spills, on sm_90a (ptxas: at most 123 registers, dK/dV's) or gfx90a
// (hipcc: no scratch); figures in BENCHMARKS.md, kept by packages/engine/test/attention-registers
// .test.ts. Plain fp32 FMA, not yet run on a GPU: correct and tiled, speed unmeasured, no tensor
// cores here: AGENTRL_GPU_ATTENTION=mma sends head_dim 64 / 128 on sm_80+ to the bf16 tensor-core
// kernels of attention_mma.cu instead (the host wrappers below choose; never yet run on a GPU).
#include <cmath>

#include "engine/cuda/attention_mma.h"
#include "engine/cuda/device_ops.h"
#include "gpu/block_reduce.h"
#include "gpu/gpu_compat.h"

namespace agentrl::engine::gpu {
namespace {

using agentrl::gpu::BlockReduce;
using agentrl::gpu::Check;
using agentrl::gpu::gpuShflXor;
using agentrl::gpu::MaxOp;
using agentrl::gpu::SumOp;

constexpr int D = kMaxHeadDim;

struct alignas(16) F4 {
  float x, y, z, w;
};
__device__ inline float Dot4(const F4& a, const F4& b) { return a.x * b.x + a.y * b.y + a.z * b.z + a.w * b.w; }
__device__ inline void Fma4(F4& acc, float a, const F4& b) {
  acc.x += a * b.x;
  acc.y += a * b.y;
  acc.z += a * b.z;
  acc.w += a * b.w;
}

// One row's share held by one lane: chunk i covers columns 4 (lane + G i) .. + 3.
template <int G>
struct RowPart {
  static constexpr int kChunks = D / (4 * G);
  static_assert(D % (4 * G) == 0, "the lane group must split a row into float4 chunks");
  F4 c[kChunks];

  __device__ static int Col(int lane, int i) { return 4 * (lane + G * i); }

  __device__ void Zero() {
#pragma unroll
    for (int i = 0; i < kChunks; ++i) c[i] = F4{0.f, 0.f, 0.f, 0.f};
  }
  // From global memory (row of `d` floats, any even d, so no vector loads), times `scale`.
  __device__ void Load(const float* row, int d, int lane, bool live, float scale) {
#pragma unroll
    for (int i = 0; i < kChunks; ++i) {
      const int col = Col(lane, i);
      float e[4];
#pragma unroll
      for (int u = 0; u < 4; ++u) e[u] = (live && col + u < d) ? row[col + u] * scale : 0.f;
      c[i] = F4{e[0], e[1], e[2], e[3]};
    }
  }
  __device__ void Store(float* row, int d, int lane, float scale) const {
#pragma unroll
    for (int i = 0; i < kChunks; ++i) {
      const int col = Col(lane, i);
      const float e[4] = {c[i].x, c[i].y, c[i].z, c[i].w};
#pragma unroll
      for (int u = 0; u < 4; ++u) {
        if (col + u < d) row[col + u] = e[u] * scale;
      }
    }
  }
  // This lane's chunks of a 16-byte aligned row of D floats in shared memory.
  __device__ void LoadShared(const float* sh, int lane) {
    const F4* r = reinterpret_cast<const F4*>(sh);
#pragma unroll
    for (int i = 0; i < kChunks; ++i) c[i] = r[lane + G * i];
  }
  // This lane's part of the dot product with another row held the same way, or with a row in
  // shared memory read chunk by chunk at its use (a RowPart temporary there let nvcc hoist the
  // reads: the forward took 80 registers instead of 69).
  __device__ float Dot(const RowPart& b) const {
    float s = 0.f;
#pragma unroll
    for (int i = 0; i < kChunks; ++i) s += Dot4(c[i], b.c[i]);
    return s;
  }
  __device__ float Dot(const float* sh, int lane) const {
    const F4* r = reinterpret_cast<const F4*>(sh);
    float s = 0.f;
#pragma unroll
    for (int i = 0; i < kChunks; ++i) s += Dot4(c[i], r[lane + G * i]);
    return s;
  }
  // this += a * b
  __device__ void Axpy(float a, const RowPart& b) {
#pragma unroll
    for (int i = 0; i < kChunks; ++i) Fma4(c[i], a, b.c[i]);
  }
  __device__ void Axpy(float a, const float* sh, int lane) {
    const F4* r = reinterpret_cast<const F4*>(sh);
#pragma unroll
    for (int i = 0; i < kChunks; ++i) Fma4(c[i], a, r[lane + G * i]);
  }
  __device__ void Scale(float a) {
#pragma unroll
    for (int i = 0; i < kChunks; ++i) {
      c[i].x *= a;
      c[i].y *= a;
      c[i].z *= a;
      c[i].w *= a;
    }
  }
};

// Sums over the G lanes of a group (xor butterfly): every lane gets the same bits.
template <int G>
__device__ inline float GroupSum(float v) {
#pragma unroll
  for (int o = G / 2; o > 0; o >>= 1) v += gpuShflXor(v, o);
  return v;
}
// Two sums at once, the shuffles interleaved.
template <int G>
__device__ inline void GroupSum2(float& a, float& b) {
#pragma unroll
  for (int o = G / 2; o > 0; o >>= 1) {
    const float ta = gpuShflXor(a, o), tb = gpuShflXor(b, o);
    a += ta;
    b += tb;
  }
}

// Rows `row0 .. row0 + T - 1` (zero past `last` and past column d) of a [*, stride] matrix at
// column `col` into a [T][D] tile, and the same rows of a second matrix; between two barriers
// (the previous tile's readers are done; this tile is complete).
template <int T>
__device__ inline void LoadTiles(const float* a, const float* b, float (*as)[D], float (*bs)[D], int row0,
                                 int last, int64_t stride, int col, int d) {
  __syncthreads();
  for (int e = threadIdx.x; e < T * D; e += blockDim.x) {
    const int r = e / D, c = e % D, j = row0 + r;
    const bool in = j <= last && c < d;
    as[r][c] = in ? a[static_cast<int64_t>(j) * stride + col + c] : 0.f;
    bs[r][c] = in ? b[static_cast<int64_t>(j) * stride + col + c] : 0.f;
  }
  __syncthreads();
}

struct Packed {
  const int32_t* cu;
  const int32_t* seq_of;
  int total;
};

// Forward: kFwdRows query rows per block, G = kFwdLanes lanes each; key tiles of kFwdTile in shared
// memory, scored kFwdChunk keys at a time into registers (an unrolled chunk: its max is known before
// any exp, and the running state is rescaled once per chunk, only when the max moved). A whole tile
// unrolled at once lets the compilers hoist every load of it: hipcc then needed 512 registers and
// still spilled at head_dim 128.
constexpr int kFwdLanes = 8, kFwdRows = 32, kFwdTile = 32, kFwdChunk = 8;

__global__ void __launch_bounds__(kFwdRows* kFwdLanes)
    ForwardKernel(const float* q, const float* k, const float* v, float* out, float* lse, Packed pk, AttnShape s) {
  constexpr int G = kFwdLanes, T = kFwdTile, C = kFwdChunk;
  static_assert(T % C == 0, "a key tile is whole chunks");
  alignas(16) __shared__ float ks[T][D];
  alignas(16) __shared__ float vs[T][D];
  const int d = s.head_dim, qs = s.heads * d, kvs = s.kv_heads * d;
  const int h = blockIdx.y, g = h / (s.heads / s.kv_heads);
  const int lane = threadIdx.x % G;
  const int first = blockIdx.x * kFwdRows;
  const int t = first + static_cast<int>(threadIdx.x) / G;
  const bool live = t < pk.total;
  const int last = (first + kFwdRows < pk.total ? first + kFwdRows : pk.total) - 1;
  const int begin = live ? pk.cu[pk.seq_of[t]] : 0;
  RowPart<G> qr, acc;
  qr.Load(q + static_cast<int64_t>(t) * qs + h * d, d, lane, live, s.scale);
  acc.Zero();
  float m = -INFINITY, l = 0.f;
  for (int j0 = pk.cu[pk.seq_of[first]]; j0 <= last; j0 += T) {
    LoadTiles<T>(k, v, ks, vs, j0, last, kvs, g * d, d);
#pragma unroll 1
    for (int r0 = 0; r0 < T; r0 += C) {
      float sc[C];
      float chunk_max = -INFINITY;
#pragma unroll
      for (int u = 0; u < C; ++u) {
        const float dot = GroupSum<G>(qr.Dot(ks[r0 + u], lane));
        const int j = j0 + r0 + u;
        sc[u] = (live && j >= begin && j <= t) ? dot : -INFINITY;
        chunk_max = fmaxf(chunk_max, sc[u]);
      }
      if (chunk_max == -INFINITY) continue;  // nothing of this chunk is visible to this row
      const float m_new = fmaxf(m, chunk_max);
      if (m_new != m) {
        const float corr = m == -INFINITY ? 0.f : expf(m - m_new);
        l *= corr;
        acc.Scale(corr);
        m = m_new;
      }
#pragma unroll
      for (int u = 0; u < C; ++u) {
        const float p = sc[u] == -INFINITY ? 0.f : expf(sc[u] - m);
        l += p;
        acc.Axpy(p, vs[r0 + u], lane);
      }
    }
  }
  if (!live) return;
  acc.Store(out + static_cast<int64_t>(t) * qs + h * d, d, lane, 1.0f / l);
  if (lane == 0) lse[static_cast<int64_t>(h) * pk.total + t] = m + logf(l);
}

__global__ void DeltaKernel(const float* out, const float* dout, float* delta, int total, int heads, int d) {
  const int64_t idx = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (idx >= static_cast<int64_t>(total) * heads) return;
  const int64_t t = idx / heads;
  const int h = static_cast<int>(idx % heads);
  const float* o = out + t * heads * d + h * d;
  const float* g = dout + t * heads * d + h * d;
  float acc = 0.f;
  for (int i = 0; i < d; ++i) acc += g[i] * o[i];
  delta[static_cast<int64_t>(h) * total + t] = acc;
}

// Backward tiles: kBwdRows rows per block of kBwdLanes lanes each, tiles of kBwdTile rows.
constexpr int kBwdLanes = 8, kBwdRows = 32, kBwdTile = 32;

// One lane group per key row j of kv head g: dK_j, dV_j summed over the group's heads and the
// queries i >= j of the same sequence, in a fixed order.
__global__ void __launch_bounds__(kBwdRows* kBwdLanes)
    DkDvKernel(const float* q, const float* k, const float* v, const float* dout, const float* lse,
               const float* delta, float* dk, float* dv, Packed pk, AttnShape s) {
  constexpr int G = kBwdLanes, T = kBwdTile;
  alignas(16) __shared__ float qsh[T][D];
  alignas(16) __shared__ float dosh[T][D];
  __shared__ float lsh[T], dsh[T];
  const int d = s.head_dim, qs = s.heads * d, kvs = s.kv_heads * d;
  const int g = blockIdx.y, group = s.heads / s.kv_heads;
  const int lane = threadIdx.x % G;
  const int first = blockIdx.x * kBwdRows;
  const int j = first + static_cast<int>(threadIdx.x) / G;
  const bool live = j < pk.total;
  const int last_key = (first + kBwdRows < pk.total ? first + kBwdRows : pk.total) - 1;
  const int end = live ? pk.cu[pk.seq_of[j] + 1] : 0;
  const int q_end = pk.cu[pk.seq_of[last_key] + 1];
  RowPart<G> kr, vr, dkr, dvr;
  kr.Load(k + static_cast<int64_t>(j) * kvs + g * d, d, lane, live, 1.f);
  vr.Load(v + static_cast<int64_t>(j) * kvs + g * d, d, lane, live, 1.f);
  dkr.Zero();
  dvr.Zero();
  for (int h = g * group; h < (g + 1) * group; ++h) {
    for (int i0 = first; i0 < q_end; i0 += T) {
      LoadTiles<T>(q, dout, qsh, dosh, i0, q_end - 1, qs, h * d, d);
      // lse / delta of the tile: written after the barrier above, read after the one below.
      for (int r = threadIdx.x; r < T; r += blockDim.x) {
        const int i = i0 + r;
        lsh[r] = i < q_end ? lse[static_cast<int64_t>(h) * pk.total + i] : 0.f;
        dsh[r] = i < q_end ? delta[static_cast<int64_t>(h) * pk.total + i] : 0.f;
      }
      __syncthreads();
      for (int r = 0; r < T; ++r) {
        const int i = i0 + r;
        float sc = kr.Dot(qsh[r], lane), dp = vr.Dot(dosh[r], lane);
        GroupSum2<G>(sc, dp);
        const bool seen = live && i >= j && i < end;
        const float p = seen ? expf(sc * s.scale - lsh[r]) : 0.f;
        const float ds = seen ? p * (dp - dsh[r]) * s.scale : 0.f;
        dvr.Axpy(p, dosh[r], lane);
        dkr.Axpy(ds, qsh[r], lane);
      }
    }
  }
  if (!live) return;
  dkr.Store(dk + static_cast<int64_t>(j) * kvs + g * d, d, lane, 1.f);
  dvr.Store(dv + static_cast<int64_t>(j) * kvs + g * d, d, lane, 1.f);
}

// One lane group per query row: dQ_i = sum_j dS_ij K_j over the keys it saw, in key order.
__global__ void __launch_bounds__(kBwdRows* kBwdLanes)
    DqKernel(const float* q, const float* k, const float* v, const float* dout, const float* lse,
             const float* delta, float* dq, Packed pk, AttnShape s) {
  constexpr int G = kBwdLanes, T = kBwdTile;
  alignas(16) __shared__ float ks[T][D];
  alignas(16) __shared__ float vs[T][D];
  const int d = s.head_dim, qs = s.heads * d, kvs = s.kv_heads * d;
  const int h = blockIdx.y, g = h / (s.heads / s.kv_heads);
  const int lane = threadIdx.x % G;
  const int first = blockIdx.x * kBwdRows;
  const int t = first + static_cast<int>(threadIdx.x) / G;
  const bool live = t < pk.total;
  const int last = (first + kBwdRows < pk.total ? first + kBwdRows : pk.total) - 1;
  const int begin = live ? pk.cu[pk.seq_of[t]] : 0;
  RowPart<G> qr, dor, dqr;
  qr.Load(q + static_cast<int64_t>(t) * qs + h * d, d, lane, live, 1.f);
  dor.Load(dout + static_cast<int64_t>(t) * qs + h * d, d, lane, live, 1.f);
  dqr.Zero();
  const float l = live ? lse[static_cast<int64_t>(h) * pk.total + t] : 0.f;
  const float dl = live ? delta[static_cast<int64_t>(h) * pk.total + t] : 0.f;
  for (int j0 = pk.cu[pk.seq_of[first]]; j0 <= last; j0 += T) {
    LoadTiles<T>(k, v, ks, vs, j0, last, kvs, g * d, d);
    for (int r = 0; r < T; ++r) {
      const int j = j0 + r;
      RowPart<G> kj;  // read once, used twice
      kj.LoadShared(ks[r], lane);
      float sc = qr.Dot(kj), dp = dor.Dot(vs[r], lane);
      GroupSum2<G>(sc, dp);
      const bool seen = live && j >= begin && j <= t;
      const float p = seen ? expf(sc * s.scale - l) : 0.f;
      const float ds = seen ? p * (dp - dl) * s.scale : 0.f;
      dqr.Axpy(ds, kj);
    }
  }
  if (!live) return;
  dqr.Store(dq + static_cast<int64_t>(t) * qs + h * d, d, lane, 1.f);
}

__global__ void CacheWriteKernel(const float* k, const float* v, const CachePtrs* caches, const int32_t* seq_of,
                                 const int32_t* pos, int kd) {
  const int64_t t = blockIdx.x;
  const CachePtrs c = caches[seq_of[t]];
  const int64_t at = static_cast<int64_t>(pos[t]) * kd;
  for (int i = threadIdx.x; i < kd; i += blockDim.x) {
    c.k[at + i] = k[t * kd + i];
    c.v[at + i] = v[t * kd + i];
  }
}

// Decode: one block (kMaxHeadDim threads) per (token, head), tiles of D cached keys. Groups of
// kDecLanes lanes score the tile's keys (lane l reads columns l, l + G, ...: a group reads 32
// consecutive bytes per step, and q is 16 floats per lane); then one score per thread, the running
// max and sum through shared memory, one output component per thread (V rows read coalesced).
constexpr int kDecLanes = 8;

__global__ void __launch_bounds__(D) CachedKernel(const float* q, float* out, const CachePtrs* caches,
                                                  const int32_t* seq_of, const int32_t* pos, AttnShape s) {
  constexpr int G = kDecLanes, kGroups = D / G, kPer = D / G;
  __shared__ float p[D];
  __shared__ float red[D];
  const int d = s.head_dim, qs = s.heads * d, kvs = s.kv_heads * d;
  const int64_t t = blockIdx.x;
  const int h = blockIdx.y, g = h / (s.heads / s.kv_heads);
  const int n = pos[t] + 1;
  const CachePtrs c = caches[seq_of[t]];
  const int i = threadIdx.x, lane = i % G, grp = i / G;
  float qr[kPer];
#pragma unroll
  for (int e = 0; e < kPer; ++e) {
    const int col = lane + G * e;
    qr[e] = col < d ? q[t * qs + h * d + col] : 0.f;
  }
  float m = -INFINITY, l = 0.f, acc = 0.f;
  for (int j0 = 0; j0 < n; j0 += D) {
    for (int r = grp; r < D; r += kGroups) {  // the same trip count in every group
      const int j = j0 + r;
      float dot = 0.f;
      if (j < n) {
        const float* kr = c.k + static_cast<int64_t>(j) * kvs + g * d;
#pragma unroll
        for (int e = 0; e < kPer; ++e) {
          const int col = lane + G * e;
          if (col < d) dot += qr[e] * kr[col];
        }
      }
      dot = GroupSum<G>(dot);
      if (lane == 0) p[r] = j < n ? dot * s.scale : -INFINITY;
    }
    __syncthreads();
    const int j = j0 + i;
    const float sc = p[i];  // each thread reads only its own slot before rewriting it below
    const float tile_max = BlockReduce(sc, red, MaxOp());
    const float m_new = fmaxf(m, tile_max);
    const float e = j < n ? expf(sc - m_new) : 0.f;
    p[i] = e;
    const float tile_sum = BlockReduce(e, red, SumOp());  // also orders p[] before the reads below
    const float corr = m == -INFINITY ? 0.f : expf(m - m_new);
    l = l * corr + tile_sum;
    acc *= corr;
    const int cnt = n - j0 < D ? n - j0 : D;
    if (i < d) {
      for (int r = 0; r < cnt; ++r) acc += p[r] * c.v[static_cast<int64_t>(j0 + r) * kvs + g * d + i];
    }
    m = m_new;
    __syncthreads();
  }
  if (i < d) out[t * qs + h * d + i] = acc / l;
}

void Launched(const char* what) { Check(gpuGetLastError(), what); }

}  // namespace

void AttentionForward(const float* q, const float* k, const float* v, float* out, float* lse, const int32_t* cu,
                      const int32_t* seq_of, int num_seqs, int total, const AttnShape& s) {
  if (total == 0) return;
  if (MmaAttentionApplies(s, q, k, v, nullptr)) {
    MmaAttentionForward(q, k, v, out, lse, cu, seq_of, total, s);
    return;
  }
  const dim3 grid((total + kFwdRows - 1) / kFwdRows, s.heads);
  AGENTRL_LAUNCH(ForwardKernel, grid, kFwdRows * kFwdLanes, 0, q, k, v, out, lse, Packed{cu, seq_of, total}, s);
  Launched("attention forward");
}

void AttentionBackward(const float* q, const float* k, const float* v, const float* out, const float* dout,
                       const float* lse, float* delta, float* dq, float* dk, float* dv, const int32_t* cu,
                       const int32_t* seq_of, int num_seqs, int total, const AttnShape& s) {
  if (total == 0) return;
  const int64_t rows = static_cast<int64_t>(total) * s.heads;
  AGENTRL_LAUNCH(DeltaKernel, static_cast<unsigned>((rows + 255) / 256), 256, 0, out, dout, delta, total, s.heads,
                 s.head_dim);
  if (MmaAttentionApplies(s, q, k, v, dout)) {
    MmaAttentionBackward(q, k, v, dout, lse, delta, dq, dk, dv, cu, seq_of, total, s);
    Launched("attention backward");
    return;
  }
  const Packed pk{cu, seq_of, total};
  const unsigned tiles = (total + kBwdRows - 1) / kBwdRows;
  constexpr int threads = kBwdRows * kBwdLanes;
  AGENTRL_LAUNCH(DkDvKernel, dim3(tiles, s.kv_heads), threads, 0, q, k, v, dout, lse, delta, dk, dv, pk, s);
  AGENTRL_LAUNCH(DqKernel, dim3(tiles, s.heads), threads, 0, q, k, v, dout, lse, delta, dq, pk, s);
  Launched("attention backward");
}

void CacheWrite(const float* k, const float* v, const CachePtrs* caches, const int32_t* seq_of, const int32_t* pos,
                int total, int kd) {
  if (total == 0) return;
  AGENTRL_LAUNCH(CacheWriteKernel, total, 128, 0, k, v, caches, seq_of, pos, kd);
  Launched("kv cache write");
}

void AttentionCached(const float* q, float* out, const CachePtrs* caches, const int32_t* seq_of, const int32_t* pos,
                     int total, const AttnShape& s) {
  if (total == 0) return;
  AGENTRL_LAUNCH(CachedKernel, dim3(total, s.heads), D, 0, q, out, caches, seq_of, pos, s);
  Launched("cached attention");
}

}  // namespace agentrl::engine::gpu
