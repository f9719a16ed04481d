// Element-wise, norm and optimizer kernels of the engine's device backend (see device_ops.h). Each
// follows the CPU kernel of the same name in engine/cpu/ops.cc or model.cc, operation for operation.
#include <cmath>

#include "engine/cuda/device_ops.h"
#include "gpu/block_reduce.h"
#include "gpu/gpu_compat.h"
#include "gpu/transfers.h"

namespace agentrl::engine::gpu {
namespace {

using agentrl::gpu::BlockReduce;
using agentrl::gpu::Check;
using agentrl::gpu::MaxOp;
using agentrl::gpu::SumOp;

constexpr int kThreads = 256;

unsigned Blocks(int64_t n, int per = kThreads) { return static_cast<unsigned>((n + per - 1) / per); }

__global__ void EmbedForwardKernel(const float* emb, const int32_t* tokens, float* x, int h) {
  const int64_t t = blockIdx.x;
  const float* src = emb + static_cast<int64_t>(tokens[t]) * h;
  for (int i = threadIdx.x; i < h; i += blockDim.x) x[t * h + i] = src[i];
}

__global__ void EmbedBackwardKernel(float* grad, const int32_t* tokens, const float* dx, int rows, int h) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= h) return;
  for (int t = 0; t < rows; ++t) grad[static_cast<int64_t>(tokens[t]) * h + i] += dx[static_cast<int64_t>(t) * h + i];
}

__global__ void RmsNormForwardKernel(const float* x, const float* w, float* y, float* rstd, int n, float eps) {
  __shared__ float sh[kThreads];
  const int64_t t = blockIdx.x;
  const float* xr = x + t * n;
  float ss = 0.f;
  for (int i = threadIdx.x; i < n; i += blockDim.x) ss += xr[i] * xr[i];
  ss = BlockReduce(ss, sh, SumOp());
  const float r = 1.0f / sqrtf(ss / static_cast<float>(n) + eps);
  if (threadIdx.x == 0) rstd[t] = r;
  for (int i = threadIdx.x; i < n; i += blockDim.x) y[t * n + i] = xr[i] * r * w[i];
}

__global__ void RmsNormBackwardDxKernel(const float* x, const float* w, const float* rstd, const float* dy, float* dx,
                                        int n, int accumulate) {
  __shared__ float sh[kThreads];
  const int64_t t = blockIdx.x;
  const float *xr = x + t * n, *dyr = dy + t * n;
  float* dxr = dx + t * n;
  const float r = rstd[t];
  float dot = 0.f;
  for (int i = threadIdx.x; i < n; i += blockDim.x) dot += dyr[i] * w[i] * xr[i];
  dot = BlockReduce(dot, sh, SumOp());
  const float c = dot * r * r * r / static_cast<float>(n);
  for (int i = threadIdx.x; i < n; i += blockDim.x) {
    const float v = r * w[i] * dyr[i] - c * xr[i];
    dxr[i] = accumulate ? dxr[i] + v : v;
  }
}

// Column sums over many rows in two fixed-order stages, so a [rows, n] reduction with few columns
// (q/k norm: n = head_dim, rows = T * heads) still spreads over the GPU: partial[c][i] sums rows
// c * kRowChunk .. of column i; then out[i] += the partials in chunk order. Same bits every run.
constexpr int kRowChunk = 128;

__global__ void ColumnPartialsKernel(const float* x, const float* y, const float* rstd, float* partial, int rows,
                                     int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  const int r0 = blockIdx.y * kRowChunk, r1 = r0 + kRowChunk < rows ? r0 + kRowChunk : rows;
  float acc = 0.f;
  for (int t = r0; t < r1; ++t) {
    const int64_t at = static_cast<int64_t>(t) * n + i;
    acc += y ? x[at] * y[at] * rstd[t] : x[at];  // RMSNorm's dw term, or a plain column sum
  }
  partial[static_cast<int64_t>(blockIdx.y) * n + i] = acc;
}

__global__ void SumPartialsKernel(const float* partial, float* out, int chunks, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  float acc = 0.f;
  for (int c = 0; c < chunks; ++c) acc += partial[static_cast<int64_t>(c) * n + i];
  out[i] += acc;
}

__global__ void RopeKernel(float* x, const int32_t* pos, int rows, int heads, int d, int stride, const float* ct,
                           const float* st, float sign) {
  const int half = d / 2;
  const int64_t idx = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (idx >= static_cast<int64_t>(rows) * heads * half) return;
  const int i = static_cast<int>(idx % half);
  const int h = static_cast<int>((idx / half) % heads);
  const int64_t t = idx / (static_cast<int64_t>(half) * heads);
  float* v = x + t * stride + h * d;
  const int64_t at = static_cast<int64_t>(pos[t]) * half + i;
  const float c = ct[at], s = sign * st[at];
  const float a = v[i], b = v[i + half];
  v[i] = a * c - b * s;
  v[i + half] = b * c + a * s;
}

__device__ inline float Sigmoid(float x) { return 1.0f / (1.0f + expf(-x)); }

__global__ void SwigluForwardKernel(const float* g, const float* u, float* act, int64_t n) {
  const int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < n) act[i] = g[i] * Sigmoid(g[i]) * u[i];
}

__global__ void SwigluBackwardKernel(const float* g, const float* u, float* dg, float* du, int64_t n) {
  const int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= n) return;
  const float sg = Sigmoid(g[i]);
  const float da = dg[i];
  du[i] = da * g[i] * sg;
  dg[i] = da * u[i] * sg * (1.0f + g[i] * (1.0f - sg));
}

__global__ void AddBiasKernel(float* y, const float* b, int rows, int n) {
  const int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < static_cast<int64_t>(rows) * n) y[i] += b[i % n];
}

__global__ void AddKernel(float* y, const float* x, int64_t n) {
  const int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < n) y[i] += x[i];
}

__global__ void AccumulateF64Kernel(double* acc, float* g, int64_t n) {
  const int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < n) {
    acc[i] += static_cast<double>(g[i]);
    g[i] = 0.f;
  }
}

__global__ void WriteBackF64Kernel(float* g, double* acc, int64_t n) {
  const int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < n) {
    g[i] = static_cast<float>(acc[i]);
    acc[i] = 0.0;
  }
}

__global__ void GatherRowsKernel(const float* src, const int32_t* rows, float* dst, int width) {
  const int64_t r = blockIdx.x;
  const float* s = src + static_cast<int64_t>(rows[r]) * width;
  for (int i = threadIdx.x; i < width; i += blockDim.x) dst[r * width + i] = s[i];
}

__global__ void ScatterRowsKernel(const float* src, const int32_t* rows, float* dst, int width) {
  const int64_t r = blockIdx.x;
  float* d = dst + static_cast<int64_t>(rows[r]) * width;
  for (int i = threadIdx.x; i < width; i += blockDim.x) d[i] = src[r * width + i];
}

__global__ void SoftmaxCrossEntropyKernel(float* logits, const int32_t* rows, const int32_t* targets, float* loss,
                                          int vocab, float scale) {
  __shared__ float sh[kThreads];
  const int64_t r = blockIdx.x;
  float* z = logits + r * vocab;
  float mx = -INFINITY;
  for (int j = threadIdx.x; j < vocab; j += blockDim.x) mx = fmaxf(mx, z[j]);
  mx = BlockReduce(mx, sh, MaxOp());
  float sum = 0.f;
  for (int j = threadIdx.x; j < vocab; j += blockDim.x) sum += expf(z[j] - mx);
  sum = BlockReduce(sum, sh, SumOp());
  const float lse = mx + logf(sum);
  const int tgt = targets[rows[r]];
  const float zt = z[tgt];
  __syncthreads();
  for (int j = threadIdx.x; j < vocab; j += blockDim.x) z[j] = expf(z[j] - lse) * scale;
  __syncthreads();
  if (threadIdx.x == 0) {
    z[tgt] -= scale;
    loss[r] = lse - zt;
  }
}

constexpr int64_t kNormBlock = 1 << 16;

__global__ void SumSquaresKernel(const float* g, int64_t n, double* partial) {
  __shared__ double sh[kThreads];
  const int64_t begin = static_cast<int64_t>(blockIdx.x) * kNormBlock;
  const int64_t end = begin + kNormBlock < n ? begin + kNormBlock : n;
  double s = 0.0;
  for (int64_t i = begin + threadIdx.x; i < end; i += blockDim.x) s += static_cast<double>(g[i]) * g[i];
  s = BlockReduce(s, sh, SumOp());
  if (threadIdx.x == 0) partial[blockIdx.x] = s;
}

__global__ void AdamWKernel(float* p, float* m, float* v, const float* g, int64_t n, float beta1, float beta2,
                            float eps, float step_size, float bc2_sqrt, float decay, float grad_scale) {
  const int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= n) return;
  const float gi = g[i] * grad_scale;
  const float mi = beta1 * m[i] + (1.0f - beta1) * gi;
  const float vi = beta2 * v[i] + (1.0f - beta2) * gi * gi;
  m[i] = mi;
  v[i] = vi;
  p[i] = p[i] * decay - step_size * mi / (sqrtf(vi) / bc2_sqrt + eps);
}

void Launched(const char* what) { Check(gpuGetLastError(), what); }

// out[i] += sum over rows of (y ? x * y * rstd : x)[row, i], through a grow-only scratch of partials.
void ColumnReduce(const float* x, const float* y, const float* rstd, float* out, int rows, int n) {
  static float* scratch = nullptr;
  static size_t capacity = 0;
  const int chunks = (rows + kRowChunk - 1) / kRowChunk;
  const size_t need = static_cast<size_t>(chunks) * n;
  if (need == 0) return;
  if (need > capacity) {
    if (scratch) (void)gpuFree(scratch);
    scratch = nullptr;
    Check(agentrl::gpu::DeviceMalloc(reinterpret_cast<void**>(&scratch), need * sizeof(float)), "column-sum scratch");
    capacity = need;
  }
  AGENTRL_LAUNCH(ColumnPartialsKernel, dim3(Blocks(n), chunks), kThreads, 0, x, y, rstd, scratch, rows, n);
  AGENTRL_LAUNCH(SumPartialsKernel, Blocks(n), kThreads, 0, scratch, out, chunks, n);
  Launched("column sum");
}

}  // namespace

void EmbedForward(const float* emb, const int32_t* tokens, float* x, int rows, int h) {
  if (rows == 0) return;
  AGENTRL_LAUNCH(EmbedForwardKernel, rows, kThreads, 0, emb, tokens, x, h);
  Launched("embed forward");
}

void EmbedBackward(float* grad, const int32_t* tokens, const float* dx, int rows, int h) {
  AGENTRL_LAUNCH(EmbedBackwardKernel, Blocks(h), kThreads, 0, grad, tokens, dx, rows, h);
  Launched("embed backward");
}

void RmsNormForward(const float* x, const float* w, float* y, float* rstd, int rows, int n, float eps) {
  if (rows == 0) return;
  AGENTRL_LAUNCH(RmsNormForwardKernel, rows, kThreads, 0, x, w, y, rstd, n, eps);
  Launched("rmsnorm forward");
}

void RmsNormBackward(const float* x, const float* w, const float* rstd, const float* dy, float* dx, float* dw,
                     int rows, int n, bool accumulate_dx) {
  if (rows == 0) return;
  AGENTRL_LAUNCH(RmsNormBackwardDxKernel, rows, kThreads, 0, x, w, rstd, dy, dx, n, accumulate_dx ? 1 : 0);
  Launched("rmsnorm backward");
  ColumnReduce(dy, x, rstd, dw, rows, n);
}

void Rope(float* x, const int32_t* pos, int rows, int heads, int d, int stride, const float* cos_table,
          const float* sin_table, bool inverse) {
  const int64_t n = static_cast<int64_t>(rows) * heads * (d / 2);
  if (n == 0) return;
  AGENTRL_LAUNCH(RopeKernel, Blocks(n), kThreads, 0, x, pos, rows, heads, d, stride, cos_table, sin_table,
                 inverse ? -1.0f : 1.0f);
  Launched("rope");
}

void SwigluForward(const float* g, const float* u, float* act, int64_t n) {
  if (n == 0) return;
  AGENTRL_LAUNCH(SwigluForwardKernel, Blocks(n), kThreads, 0, g, u, act, n);
  Launched("swiglu forward");
}

void SwigluBackward(const float* g, const float* u, float* dg, float* du, int64_t n) {
  if (n == 0) return;
  AGENTRL_LAUNCH(SwigluBackwardKernel, Blocks(n), kThreads, 0, g, u, dg, du, n);
  Launched("swiglu backward");
}

void AddBias(float* y, const float* b, int rows, int n) {
  if (!b || rows == 0) return;
  AGENTRL_LAUNCH(AddBiasKernel, Blocks(static_cast<int64_t>(rows) * n), kThreads, 0, y, b, rows, n);
  Launched("bias");
}

void ColumnSum(const float* x, float* out, int rows, int n) {
  if (!out || rows == 0) return;
  ColumnReduce(x, nullptr, nullptr, out, rows, n);
}

void Add(float* y, const float* x, int64_t n) {
  if (n == 0) return;
  AGENTRL_LAUNCH(AddKernel, Blocks(n), kThreads, 0, y, x, n);
  Launched("add");
}

void AccumulateF64(double* acc, float* g, int64_t n) {
  if (n == 0) return;
  AGENTRL_LAUNCH(AccumulateF64Kernel, Blocks(n), kThreads, 0, acc, g, n);
  Launched("gradient accumulate");
}

void WriteBackF64(float* g, double* acc, int64_t n) {
  if (n == 0) return;
  AGENTRL_LAUNCH(WriteBackF64Kernel, Blocks(n), kThreads, 0, g, acc, n);
  Launched("gradient write-back");
}

void GatherRows(const float* src, const int32_t* rows, float* dst, int n, int width) {
  if (n == 0) return;
  AGENTRL_LAUNCH(GatherRowsKernel, n, kThreads, 0, src, rows, dst, width);
  Launched("gather rows");
}

void ScatterRows(const float* src, const int32_t* rows, float* dst, int n, int width) {
  if (n == 0) return;
  AGENTRL_LAUNCH(ScatterRowsKernel, n, kThreads, 0, src, rows, dst, width);
  Launched("scatter rows");
}

void SoftmaxCrossEntropy(float* z, const int32_t* rows, const int32_t* targets, float* loss, int n, int vocab,
                         float scale) {
  if (n == 0) return;
  AGENTRL_LAUNCH(SoftmaxCrossEntropyKernel, n, kThreads, 0, z, rows, targets, loss, vocab, scale);
  Launched("cross entropy");
}

int SumSquaresPartials(const float* g, int64_t n, double* partial) {
  const int blocks = static_cast<int>((n + kNormBlock - 1) / kNormBlock);
  if (blocks == 0) return 0;
  AGENTRL_LAUNCH(SumSquaresKernel, blocks, kThreads, 0, g, n, partial);
  Launched("grad norm");
  return blocks;
}

void AdamW(float* p, float* m, float* v, const float* g, int64_t n, float beta1, float beta2, float eps,
           float step_size, float bc2_sqrt, float decay, float grad_scale) {
  if (n == 0) return;
  AGENTRL_LAUNCH(AdamWKernel, Blocks(n), kThreads, 0, p, m, v, g, n, beta1, beta2, eps, step_size, bc2_sqrt, decay,
                 grad_scale);
  Launched("adamw");
}

}  // namespace agentrl::engine::gpu
