// Causal attention over packed sequences on the device, FlashAttention-style: query rows stream
// over tiles of keys held in shared memory with an online softmax (running max and sum), so no
// T x T score matrix exists anywhere; the backward recomputes the scores from q, k and the saved
// log-sum-exp (FlashAttention-2's dK/dV pass over query tiles, then a dQ pass over key tiles, both
// without atomics, so the result is the same every run). One thread owns one query (or key) row
// and keeps it in registers (head_dim <= 128). Plain fp32 FMA: correct and tiled, not yet tuned for
// tensor cores (a wgmma / MFMA version is the next step once this has run on a GPU).
#include <cmath>

#include "engine/cuda/device_ops.h"
#include "gpu/block_reduce.h"
#include "gpu/gpu_compat.h"

namespace agentrl::engine::gpu {
namespace {

using agentrl::gpu::BlockReduce;
using agentrl::gpu::Check;
using agentrl::gpu::MaxOp;
using agentrl::gpu::SumOp;

constexpr int D = kMaxHeadDim;
constexpr int kRows = 64;  // query (or key) rows per block, one per thread
constexpr int kTile = 32;  // keys (or queries) per shared-memory tile

// Keys and values j0 .. j0 + kTile - 1 (zero past `last`) of one kv head into shared memory,
// between two barriers (the previous tile's readers are done; this tile is complete).
__device__ inline void LoadKvTile(const float* k, const float* v, float (*ks)[D], float (*vs)[D], int j0, int last,
                                  int kvs, int col, int d) {
  __syncthreads();
  for (int e = threadIdx.x; e < kTile * d; e += blockDim.x) {
    const int r = e / d, c = e % d, j = j0 + r;
    const bool in = j <= last;
    ks[r][c] = in ? k[static_cast<int64_t>(j) * kvs + col + c] : 0.f;
    vs[r][c] = in ? v[static_cast<int64_t>(j) * kvs + col + c] : 0.f;
  }
  __syncthreads();
}

struct Packed {
  const int32_t* cu;
  const int32_t* seq_of;
  int total;
};

__global__ void ForwardKernel(const float* q, const float* k, const float* v, float* out, float* lse, Packed pk,
                              AttnShape s) {
  __shared__ float ks[kTile][D];
  __shared__ float vs[kTile][D];
  __shared__ float ssc[kTile][kRows];
  const int d = s.head_dim, qs = s.heads * d, kvs = s.kv_heads * d;
  const int h = blockIdx.y, g = h / (s.heads / s.kv_heads);
  const int first = blockIdx.x * kRows;
  const int t = first + threadIdx.x;
  const bool live = t < pk.total;
  const int last = (first + kRows < pk.total ? first + kRows : pk.total) - 1;
  const int seq = live ? pk.seq_of[t] : 0;
  const int begin = live ? pk.cu[seq] : 0;
  float qr[D], acc[D];
#pragma unroll
  for (int i = 0; i < D; ++i) {
    qr[i] = (live && i < d) ? q[static_cast<int64_t>(t) * qs + h * d + i] * s.scale : 0.f;
    acc[i] = 0.f;
  }
  float m = -INFINITY, l = 0.f;
  for (int j0 = pk.cu[pk.seq_of[first]]; j0 <= last; j0 += kTile) {
    LoadKvTile(k, v, ks, vs, j0, last, kvs, g * d, d);
    if (!live) continue;
    // This thread's scores of the tile, in shared memory (column per thread: no bank conflicts;
    // a register array indexed by the key would need the key loop unrolled, slow to compile).
    float tile_max = -INFINITY;
    for (int r = 0; r < kTile; ++r) {
      const int j = j0 + r;
      float dot = 0.f;
#pragma unroll
      for (int i = 0; i < D; ++i) dot += qr[i] * ks[r][i];
      const float sc = (j >= begin && j <= t) ? dot : -INFINITY;
      ssc[r][threadIdx.x] = sc;
      tile_max = fmaxf(tile_max, sc);
    }
    if (tile_max == -INFINITY) continue;
    const float m_new = fmaxf(m, tile_max);
    const float corr = m == -INFINITY ? 0.f : expf(m - m_new);
    l *= corr;
#pragma unroll
    for (int i = 0; i < D; ++i) acc[i] *= corr;
    for (int r = 0; r < kTile; ++r) {
      const float sc = ssc[r][threadIdx.x];
      const float p = sc == -INFINITY ? 0.f : expf(sc - m_new);
      l += p;
#pragma unroll
      for (int i = 0; i < D; ++i) acc[i] += p * vs[r][i];
    }
    m = m_new;
  }
  if (!live) return;
  const float inv = 1.0f / l;
  for (int i = 0; i < d; ++i) out[static_cast<int64_t>(t) * qs + h * d + i] = acc[i] * inv;
  lse[static_cast<int64_t>(h) * pk.total + t] = m + logf(l);
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

// One thread per key row j of kv head g: dK_j, dV_j summed over the group's heads and the queries
// i >= j of the same sequence, in a fixed order.
__global__ void DkDvKernel(const float* q, const float* k, const float* v, const float* dout, const float* lse,
                           const float* delta, float* dk, float* dv, Packed pk, AttnShape s) {
  __shared__ float qsh[kTile][D];
  __shared__ float dosh[kTile][D];
  __shared__ float lsh[kTile], dsh[kTile];
  const int d = s.head_dim, qs = s.heads * d, kvs = s.kv_heads * d;
  const int g = blockIdx.y, group = s.heads / s.kv_heads;
  const int first = blockIdx.x * kRows;
  const int j = first + threadIdx.x;
  const bool live = j < pk.total;
  const int last_key = (first + kRows < pk.total ? first + kRows : pk.total) - 1;
  const int seq = live ? pk.seq_of[j] : 0;
  const int end = live ? pk.cu[seq + 1] : 0;
  const int q_end = pk.cu[pk.seq_of[last_key] + 1];
  float kr[D], vr[D], dkr[D], dvr[D];
#pragma unroll
  for (int i = 0; i < D; ++i) {
    kr[i] = (live && i < d) ? k[static_cast<int64_t>(j) * kvs + g * d + i] : 0.f;
    vr[i] = (live && i < d) ? v[static_cast<int64_t>(j) * kvs + g * d + i] : 0.f;
    dkr[i] = dvr[i] = 0.f;
  }
  for (int h = g * group; h < (g + 1) * group; ++h) {
    for (int i0 = first; i0 < q_end; i0 += kTile) {
      __syncthreads();
      for (int e = threadIdx.x; e < kTile * d; e += blockDim.x) {
        const int r = e / d, c = e % d, i = i0 + r;
        const bool in = i < q_end;
        qsh[r][c] = in ? q[static_cast<int64_t>(i) * qs + h * d + c] : 0.f;
        dosh[r][c] = in ? dout[static_cast<int64_t>(i) * qs + h * d + c] : 0.f;
      }
      for (int r = threadIdx.x; r < kTile; r += blockDim.x) {
        const int i = i0 + r;
        lsh[r] = i < q_end ? lse[static_cast<int64_t>(h) * pk.total + i] : 0.f;
        dsh[r] = i < q_end ? delta[static_cast<int64_t>(h) * pk.total + i] : 0.f;
      }
      __syncthreads();
      if (!live) continue;
      for (int r = 0; r < kTile; ++r) {
        const int i = i0 + r;
        if (i < j || i >= end) continue;
        float sc = 0.f, dp = 0.f;
#pragma unroll
        for (int c = 0; c < D; ++c) {
          sc += qsh[r][c] * kr[c];
          dp += dosh[r][c] * vr[c];
        }
        const float p = expf(sc * s.scale - lsh[r]);
        const float ds = p * (dp - dsh[r]) * s.scale;
#pragma unroll
        for (int c = 0; c < D; ++c) {
          dvr[c] += p * dosh[r][c];
          dkr[c] += ds * qsh[r][c];
        }
      }
    }
  }
  if (!live) return;
  for (int i = 0; i < d; ++i) {
    dk[static_cast<int64_t>(j) * kvs + g * d + i] = dkr[i];
    dv[static_cast<int64_t>(j) * kvs + g * d + i] = dvr[i];
  }
}

// One thread per query row: dQ_i = sum_j dS_ij K_j over the keys it saw, in key order.
__global__ void DqKernel(const float* q, const float* k, const float* v, const float* dout, const float* lse,
                         const float* delta, float* dq, Packed pk, AttnShape s) {
  __shared__ float ks[kTile][D];
  __shared__ float vs[kTile][D];
  const int d = s.head_dim, qs = s.heads * d, kvs = s.kv_heads * d;
  const int h = blockIdx.y, g = h / (s.heads / s.kv_heads);
  const int first = blockIdx.x * kRows;
  const int t = first + threadIdx.x;
  const bool live = t < pk.total;
  const int last = (first + kRows < pk.total ? first + kRows : pk.total) - 1;
  const int begin = live ? pk.cu[pk.seq_of[t]] : 0;
  float qr[D], dor[D], dqr[D];
#pragma unroll
  for (int i = 0; i < D; ++i) {
    qr[i] = (live && i < d) ? q[static_cast<int64_t>(t) * qs + h * d + i] : 0.f;
    dor[i] = (live && i < d) ? dout[static_cast<int64_t>(t) * qs + h * d + i] : 0.f;
    dqr[i] = 0.f;
  }
  const float l = live ? lse[static_cast<int64_t>(h) * pk.total + t] : 0.f;
  const float dl = live ? delta[static_cast<int64_t>(h) * pk.total + t] : 0.f;
  for (int j0 = pk.cu[pk.seq_of[first]]; j0 <= last; j0 += kTile) {
    LoadKvTile(k, v, ks, vs, j0, last, kvs, g * d, d);
    if (!live) continue;
    for (int r = 0; r < kTile; ++r) {
      const int j = j0 + r;
      if (j < begin || j > t) continue;
      float sc = 0.f, dp = 0.f;
#pragma unroll
      for (int c = 0; c < D; ++c) {
        sc += qr[c] * ks[r][c];
        dp += dor[c] * vs[r][c];
      }
      const float p = expf(sc * s.scale - l);
      const float ds = p * (dp - dl) * s.scale;
#pragma unroll
      for (int c = 0; c < D; ++c) dqr[c] += ds * ks[r][c];
    }
  }
  if (!live) return;
  for (int i = 0; i < d; ++i) dq[static_cast<int64_t>(t) * qs + h * d + i] = dqr[i];
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

// One block (kMaxHeadDim threads) per (token, head): tiles of D keys, one score per thread, the
// running max and sum in shared memory, one output component per thread.
__global__ void CachedKernel(const float* q, float* out, const CachePtrs* caches, const int32_t* seq_of,
                             const int32_t* pos, AttnShape s) {
  __shared__ float qsh[D];
  __shared__ float p[D];
  __shared__ float red[D];
  const int d = s.head_dim, qs = s.heads * d, kvs = s.kv_heads * d;
  const int64_t t = blockIdx.x;
  const int h = blockIdx.y, g = h / (s.heads / s.kv_heads);
  const int n = pos[t] + 1;
  const CachePtrs c = caches[seq_of[t]];
  const int i = threadIdx.x;
  qsh[i] = i < d ? q[t * qs + h * d + i] : 0.f;
  __syncthreads();
  float m = -INFINITY, l = 0.f, acc = 0.f;
  for (int j0 = 0; j0 < n; j0 += D) {
    const int j = j0 + i;
    float sc = -INFINITY;
    if (j < n) {
      const float* kr = c.k + static_cast<int64_t>(j) * kvs + g * d;
      float dot = 0.f;
      for (int e = 0; e < d; ++e) dot += qsh[e] * kr[e];
      sc = dot * s.scale;
    }
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
  const dim3 grid((total + kRows - 1) / kRows, s.heads);
  AGENTRL_LAUNCH(ForwardKernel, grid, kRows, 0, q, k, v, out, lse, Packed{cu, seq_of, total}, s);
  Launched("attention forward");
}

void AttentionBackward(const float* q, const float* k, const float* v, const float* out, const float* dout,
                       const float* lse, float* delta, float* dq, float* dk, float* dv, const int32_t* cu,
                       const int32_t* seq_of, int num_seqs, int total, const AttnShape& s) {
  if (total == 0) return;
  const int64_t rows = static_cast<int64_t>(total) * s.heads;
  AGENTRL_LAUNCH(DeltaKernel, static_cast<unsigned>((rows + 255) / 256), 256, 0, out, dout, delta, total, s.heads,
                 s.head_dim);
  const Packed pk{cu, seq_of, total};
  const unsigned tiles = (total + kRows - 1) / kRows;
  AGENTRL_LAUNCH(DkDvKernel, dim3(tiles, s.kv_heads), kRows, 0, q, k, v, dout, lse, delta, dk, dv, pk, s);
  AGENTRL_LAUNCH(DqKernel, dim3(tiles, s.heads), kRows, 0, q, k, v, dout, lse, delta, dq, pk, s);
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
