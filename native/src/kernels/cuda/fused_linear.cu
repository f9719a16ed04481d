// The fused-linear GRPO-RoC policy loss on the device: hidden [T, H] and the lm_head weight [V, H]
// in, loss, metrics, dHidden and dWeight out. Logits exist only as one chunk of rows at a time
// ([chunk, V], about 256 MB), never as [T, V]. Two schedules:
//  - one pass (token-level ratios, the default; 3 GEMMs of T x V x H, as many as materialised
//    logits): each chunk's logits -> row statistics (max, log-sum-exp, entropy, target logp) -> the
//    token's d loss / d logp, which needs only that token's numbers and its aggregation weight
//    (known from the mask before any logit) -> dlogits in place -> dW += dlogits^T h, dh = dlogits W.
//    A gradient written chunk by chunk could not be taken back if a later chunk's logit were not
//    finite, so this schedule runs only when none can be: hidden and weight are checked first (no
//    NaN/inf, and H max|h| max|w| / tau far below FLT_MAX), else the call fails or takes two passes.
//  - two passes (sequence-level ratios, whose d loss / d logp needs every token of the sequence;
//    4 GEMMs): forward GEMM -> row statistics -> dropped; the O(T) token math; then the backward
//    recomputes each chunk's logits and goes on as above.
// The O(T) token math (ratios, clip-higher, dual clip, token or sequence ratios, the four
// aggregations, metrics) runs in one device block. Only O(T) arrays cross to the host (the token
// inputs in, logp/entropy and 8 metrics out). AGENTRL_FUSED_LINEAR=two-pass forces two passes;
// AGENTRL_FUSED_LINEAR_CHUNK_ROWS caps the rows of a chunk.
#include <algorithm>
#include <cfloat>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <vector>

#include "gpu/abi_guard.h"
#include "gpu/block_reduce.h"
#include "gpu/gemm.h"
#include "gpu/gpu_compat.h"
#include "gpu/transfers.h"
#include "kernels/cuda/row_kernels.h"
#include "kernels/gpu_fused_linear.h"

namespace agentrl::kernels::gpu {
namespace {

using agentrl::gpu::BlockReduce;
using agentrl::gpu::Check;
using agentrl::gpu::SumOp;

constexpr int kBlock = 256;
constexpr int64_t kChunkFloats = int64_t{1} << 26;  // 256 MB of fp32 logits per chunk

struct DeviceLossConfig {
  double clip_low, clip_high, dual_clip, max_log_ratio, horizon, token_count, seq_count, inv_tau;
  int aggregation, sequence_ratio, entropy;
};

// Device twin of token_math.h's SurrogateOf (that header is host-only C++).
struct DSurrogate {
  double loss, d_ratio;
  int clip;
};
__device__ inline DSurrogate Surrogate(double r, double a, const DeviceLossConfig& c) {
  if (a > 0) {
    const double hi = 1.0 + c.clip_high;
    if (r > hi) return {-a * hi, 0, 2};
    return {-a * r, -a, 0};
  }
  if (a < 0) {
    if (c.dual_clip > 0 && r > c.dual_clip) return {-a * c.dual_clip, 0, 3};
    const double lo = 1.0 - c.clip_low;
    if (r < lo) return {-a * lo, 0, 1};
    return {-a * r, -a, 0};
  }
  return {0, 0, 0};
}
__device__ inline double Clamp(double x, double m) { return x < -m ? -m : (x > m ? m : x); }

// A token-level ratio's surrogate and d loss / d logp[t] / tau: token t's own numbers and weight w
// only (the one-pass chunks and TokenMathKernel both take it from here, so both get the same bits).
struct DTokenTerms {
  DSurrogate s;
  float g_over_tau;
};
__device__ inline DTokenTerms TokenTerms(const DeviceLossConfig& c, double w, float logp, float old_logp, float adv) {
  const double M = c.max_log_ratio;
  const double raw = static_cast<double>(logp) - old_logp;
  const double r = exp(Clamp(raw, M));
  const DSurrogate s = Surrogate(r, adv, c);
  const double g = (raw >= -M && raw <= M) ? w * s.d_ratio * r : 0.0;
  return {s, static_cast<float>(g * c.inv_tau)};
}

// Each token's aggregation weight w[t] (0 where masked out), from the mask and the sequence bounds
// alone; returns the masked token count. Every thread of the block calls it.
__device__ double TokenWeights(const DeviceLossConfig& c, int64_t T, int64_t S, const int32_t* cu, const uint8_t* mask,
                               double* w, double* sh) {
  const int tid = threadIdx.x;
  double n = 0;
  for (int64_t t = tid; t < T; t += blockDim.x) {
    n += mask[t] == 1;
    w[t] = 0;
  }
  n = BlockReduce(n, sh, SumOp());
  const double seqs = c.seq_count >= 0 ? c.seq_count : static_cast<double>(S);
  const double tokens = c.token_count >= 0 ? c.token_count : n;
  for (int64_t s = tid; s < S; s += blockDim.x) {
    const int64_t a = cu[s], b = cu[s + 1];
    double ws = 0;
    if (c.aggregation == 0) {
      ws = tokens == 0 ? 0 : 1.0 / tokens;
    } else if (c.aggregation == 1) {
      ws = seqs == 0 ? 0 : 1.0 / seqs;
    } else if (c.aggregation == 2) {
      int64_t cnt = 0;
      for (int64_t t = a; t < b; ++t) cnt += mask[t] == 1;
      ws = seqs == 0 ? 0 : 1.0 / (seqs * static_cast<double>(cnt > 1 ? cnt : 1));
    } else {
      ws = 1.0 / c.horizon;
    }
    for (int64_t t = a; t < b; ++t) w[t] = mask[t] == 1 ? ws : 0;
  }
  __syncthreads();
  return n;
}

__global__ void TokenWeightsKernel(DeviceLossConfig c, int64_t T, int64_t S, const int32_t* cu, const uint8_t* mask,
                                   double* w) {
  __shared__ double sh[kBlock];
  TokenWeights(c, T, S, cu, mask, w, sh);
}

// The one-pass schedule's per-chunk token math: g_over_tau of rows [0, n) of the chunk.
__global__ void ChunkTokenGradKernel(DeviceLossConfig c, int64_t n, const uint8_t* mask, const float* old_logp,
                                     const float* adv, const float* logp, const double* w, float* g_over_tau) {
  const int64_t t = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (t >= n) return;
  g_over_tau[t] = mask[t] == 1 ? TokenTerms(c, w[t], logp[t], old_logp[t], adv[t]).g_over_tau : 0.f;
}

// max |x| over x[0, n) into *max_bits (a non-negative float's bits order like the float), and
// *bad = 1 if any entry is NaN or inf.
__global__ void AbsMaxKernel(const float* x, int64_t n, unsigned* max_bits, int* bad) {
  __shared__ float sh[kBlock];
  float m = 0.f;
  int b = 0;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const float a = fabsf(x[i]);
    b |= !(a <= FLT_MAX);
    m = a > m ? a : m;
  }
  if (b) atomicOr(bad, 1);
  m = BlockReduce(m, sh, agentrl::gpu::MaxOp());
  if (threadIdx.x == 0) {
    unsigned u;
    memcpy(&u, &m, sizeof u);
    atomicMax(max_bits, u);
  }
}

// TokenMath (token_math.h) in one block, double precision. metrics: loss, tokens, clip_low,
// clip_high, clip_dual, approx_kl, ppo_kl, entropy. g_over_tau[t] = d loss / d logp[t] / tau.
__global__ void TokenMathKernel(DeviceLossConfig c, int64_t T, int64_t S, const int32_t* cu, const uint8_t* mask,
                                const float* old_logp, const float* adv, const float* logp, const float* entropy,
                                double* w, float* g_over_tau, double* metrics) {
  __shared__ double sh[kBlock];
  const int tid = threadIdx.x;
  for (int64_t t = tid; t < T; t += blockDim.x) g_over_tau[t] = 0.f;
  const double n = TokenWeights(c, T, S, cu, mask, w, sh);
  const double M = c.max_log_ratio;
  double akl = 0, pkl = 0, ent = 0, loss = 0, cnt_low = 0, cnt_high = 0, cnt_dual = 0;
  for (int64_t t = tid; t < T; t += blockDim.x) {
    if (mask[t] != 1) continue;
    const double lr = Clamp(static_cast<double>(logp[t]) - old_logp[t], M);
    akl += exp(lr) - 1 - lr;
    pkl -= lr;
    if (c.entropy) ent += entropy[t];
  }
  auto count = [&](int clip) {
    cnt_low += clip == 1;
    cnt_high += clip == 2;
    cnt_dual += clip == 3;
  };
  if (!c.sequence_ratio) {
    for (int64_t t = tid; t < T; t += blockDim.x) {
      if (mask[t] != 1) continue;
      const DTokenTerms k = TokenTerms(c, w[t], logp[t], old_logp[t], adv[t]);
      count(k.s.clip);
      loss += w[t] * k.s.loss;
      g_over_tau[t] = k.g_over_tau;
    }
  } else {
    for (int64_t q = tid; q < S; q += blockDim.x) {
      const int64_t a = cu[q], b = cu[q + 1];
      double cnt = 0, sum = 0;
      for (int64_t t = a; t < b; ++t) {
        if (mask[t] != 1) continue;
        cnt += 1;
        sum += static_cast<double>(logp[t]) - old_logp[t];
      }
      if (cnt == 0) continue;
      const double raw = sum / cnt;
      const double r = exp(Clamp(raw, M));
      double d_r = 0;
      for (int64_t t = a; t < b; ++t) {
        if (mask[t] != 1) continue;
        const DSurrogate s = Surrogate(r, adv[t], c);
        count(s.clip);
        loss += w[t] * s.loss;
        d_r += w[t] * s.d_ratio;
      }
      const double g = (raw >= -M && raw <= M) ? d_r * r / cnt : 0.0;
      for (int64_t t = a; t < b; ++t)
        if (mask[t] == 1) g_over_tau[t] = static_cast<float>(g * c.inv_tau);
    }
  }
  akl = BlockReduce(akl, sh, SumOp());
  pkl = BlockReduce(pkl, sh, SumOp());
  ent = BlockReduce(ent, sh, SumOp());
  loss = BlockReduce(loss, sh, SumOp());
  cnt_low = BlockReduce(cnt_low, sh, SumOp());
  cnt_high = BlockReduce(cnt_high, sh, SumOp());
  cnt_dual = BlockReduce(cnt_dual, sh, SumOp());
  if (tid == 0) {
    const double d = n > 1 ? n : 1.0;
    metrics[0] = loss;
    metrics[1] = n;
    metrics[2] = cnt_low / d;
    metrics[3] = cnt_high / d;
    metrics[4] = cnt_dual / d;
    metrics[5] = akl / d;
    metrics[6] = pkl / d;
    metrics[7] = c.entropy ? ent / d : NAN;
  }
}

// One array of the call, carved from its FusedLinearScratch.
class Dev {
 public:
  explicit Dev(void* p) : p_(p) {}
  template <typename X>
  X* as() const { return static_cast<X*>(p_); }

 private:
  void* p_;
};

template <typename X>
void Up(const Dev& d, const X* host, int64_t n) {
  if (n > 0) Check(agentrl::gpu::CopyToDevice(d.as<void>(), host, sizeof(X) * n), "copy in");
}

}  // namespace

FusedLinearScratch::~FusedLinearScratch() {
  if (p_) (void)gpuFree(p_);
}

void* FusedLinearScratch::Reserve(size_t bytes) {
  if (bytes <= cap_) return p_;
  if (p_) (void)gpuFree(p_);
  p_ = nullptr;
  cap_ = 0;
  Check(agentrl::gpu::DeviceMalloc(&p_, std::max<size_t>(bytes, 1)), "fused-linear scratch");
  cap_ = bytes;
  return p_;
}

// One chunk's backward from its logits z [nc, V] (turned into dlogits in place): dW += dz^T h,
// dh = dz W for rows c0 .. c0 + nc - 1.
void ChunkBackward(float* z, int64_t nc, int64_t c0, int64_t V, int64_t H, float inv_tau, const Dev& targets,
                   const Dev& row_max, const Dev& log_s, const Dev& g, const float* hidden, const float* weight,
                   float* dhidden, float* dweight, agentrl::gpu::GemmPrecision prec) {
  using agentrl::gpu::Gemm;
  AGENTRL_LAUNCH(RowGradKernel<float>, static_cast<unsigned>(nc), kThreads, 0, z, z, V, inv_tau,
                 targets.as<int32_t>() + c0, row_max.as<float>() + c0, log_s.as<float>() + c0, g.as<float>() + c0);
  Check(gpuGetLastError(), "row grad");
  Gemm(true, false, V, H, nc, 1.f, z, V, hidden + c0 * H, H, 1.f, dweight, H, prec);
  Gemm(false, false, nc, H, V, 1.f, z, V, weight, H, 0.f, dhidden + c0 * H, H, prec);
}

Metrics FusedLinearDevice(const LossConfig& c, const TokenInputs& in, const float* hidden, const float* weight,
                          int64_t H, int64_t V, float* dhidden, float* dweight, bool accumulate_dweight, float* logp,
                          float* entropy, int64_t* workspace_bytes, int precision,
                          FusedLinearScratch* scratch, int* passes) {
  using agentrl::gpu::Gemm;
  const auto prec = static_cast<agentrl::gpu::GemmPrecision>(precision);
  const int64_t T = in.T, S = in.S;
  int64_t chunk = std::max<int64_t>(1, std::min<int64_t>(T, kChunkFloats / std::max<int64_t>(V, 1)));
  // AGENTRL_FUSED_LINEAR_CHUNK_ROWS=n: at most n rows of logits at a time (less memory; tests use it
  // to cross chunk boundaries at a small V).
  if (const char* rows = std::getenv("AGENTRL_FUSED_LINEAR_CHUNK_ROWS"); rows && std::atoll(rows) > 0)
    chunk = std::min<int64_t>(chunk, std::atoll(rows));
  // Every array at a 256-byte aligned offset of one scratch block.
  size_t used = 0;
  auto carve = [&](int64_t bytes) {
    const size_t at = used;
    used += (static_cast<size_t>(bytes) + 255) / 256 * 256;
    return at;
  };
  const size_t o_ws = carve(sizeof(float) * chunk * V), o_targets = carve(4 * T), o_old = carve(4 * T),
               o_adv = carve(4 * T), o_mask = carve(T), o_cu = carve(4 * (S + 1)), o_max = carve(4 * T),
               o_logs = carve(4 * T), o_logp = carve(4 * T), o_ent = carve(c.entropy ? 4 * T : 0),
               o_g = carve(4 * T), o_w = carve(8 * T), o_metrics = carve(8 * 8), o_bad = carve(4 * sizeof(int));
  char* base = static_cast<char*>(scratch->Reserve(used));
  const Dev ws(base + o_ws), targets(base + o_targets), old_logp(base + o_old), adv(base + o_adv),
      mask(base + o_mask), cu(base + o_cu), row_max(base + o_max), log_s(base + o_logs), logp_d(base + o_logp),
      ent_d(base + o_ent), g(base + o_g), w(base + o_w), metrics(base + o_metrics), bad(base + o_bad);
  *workspace_bytes = static_cast<int64_t>(sizeof(float) * chunk * V + T * (4 * 8 + 8 + 1) + 4 * (S + 1) + 64);
  Up(targets, in.targets, T);
  Up(old_logp, in.old_logp, T);
  Up(adv, in.adv, T);
  Up(mask, in.mask, T);
  Up(cu, in.cu_seqlens, S + 1);
  // bad[0]: a non-finite logit (row stats); bad[1]: a NaN/inf in hidden or weight; bad[2], bad[3]:
  // max |hidden| and max |weight| as float bits.
  Check(gpuMemset(bad.as<void>(), 0, 4 * sizeof(int)), "memset");
  const float inv_tau = 1.f / c.temperature;
  const DeviceLossConfig dc{c.clip_low,      c.clip_high, c.dual_clip,
                            c.max_log_ratio, c.horizon,   static_cast<double>(c.token_count),
                            static_cast<double>(c.seq_count), 1.0 / c.temperature, static_cast<int>(c.aggregation),
                            c.sequence_ratio ? 1 : 0, c.entropy ? 1 : 0};
  const char* force = std::getenv("AGENTRL_FUSED_LINEAR");
  bool one_pass = !c.sequence_ratio && !(force && std::strcmp(force, "two-pass") == 0);
  if (one_pass && T > 0) {
    // No logit can be NaN/inf: finite inputs, and |z| <= H max|h| max|w| / tau (with room for bf16
    // rounding of both operands and the fp32 sums) far below FLT_MAX.
    unsigned* bits = reinterpret_cast<unsigned*>(bad.as<int>() + 2);
    auto grid = [](int64_t n) { return static_cast<unsigned>(std::min<int64_t>((n + kBlock - 1) / kBlock, 1024)); };
    AGENTRL_LAUNCH(AbsMaxKernel, grid(T * H), kBlock, 0, hidden, T * H, bits, bad.as<int>() + 1);
    AGENTRL_LAUNCH(AbsMaxKernel, grid(V * H), kBlock, 0, weight, V * H, bits + 1, bad.as<int>() + 1);
    Check(gpuGetLastError(), "abs max");
    int flags[4];
    Check(agentrl::gpu::CopyToHost(flags, bad.as<void>(), sizeof(flags)), "copy flags");
    if (flags[1]) throw InvalidArgument("hidden or weight produce a non-finite logit: check them for NaN/inf");
    float mh, mw;
    std::memcpy(&mh, &flags[2], sizeof mh);
    std::memcpy(&mw, &flags[3], sizeof mw);
    one_pass = static_cast<double>(H) * mh * mw * inv_tau * 1.1 < 1e36;
  }
  if (passes) *passes = one_pass ? 1 : 2;
  if (!accumulate_dweight) Check(gpuMemset(dweight, 0, sizeof(float) * V * H), "memset dweight");
  if (one_pass) {
    AGENTRL_LAUNCH(TokenWeightsKernel, 1, kBlock, 0, dc, T, S, cu.as<int32_t>(), mask.as<uint8_t>(), w.as<double>());
    Check(gpuGetLastError(), "token weights");
  }
  // The chunk loop: logits, row statistics, and in one pass also the gradient of the chunk.
  for (int64_t c0 = 0; c0 < T; c0 += chunk) {
    const int64_t nc = std::min(chunk, T - c0);
    float* z = ws.as<float>();
    Gemm(false, true, nc, V, H, 1.f, hidden + c0 * H, H, weight, H, 0.f, z, V, prec);
    AGENTRL_LAUNCH(RowStatsKernel<float>, static_cast<unsigned>(nc), kThreads, 0, z, V, inv_tau,
                   targets.as<int32_t>() + c0, row_max.as<float>() + c0, log_s.as<float>() + c0,
                   logp_d.as<float>() + c0, c.entropy ? ent_d.as<float>() + c0 : nullptr, bad.as<int>());
    Check(gpuGetLastError(), "row stats");
    if (!one_pass) continue;
    AGENTRL_LAUNCH(ChunkTokenGradKernel, static_cast<unsigned>((nc + kBlock - 1) / kBlock), kBlock, 0, dc, nc,
                   mask.as<uint8_t>() + c0, old_logp.as<float>() + c0, adv.as<float>() + c0,
                   logp_d.as<float>() + c0, w.as<double>() + c0, g.as<float>() + c0);
    Check(gpuGetLastError(), "chunk token grad");
    ChunkBackward(z, nc, c0, V, H, inv_tau, targets, row_max, log_s, g, hidden, weight, dhidden, dweight, prec);
  }
  int flag = 0;
  Check(agentrl::gpu::CopyToHost(&flag, bad.as<void>(), sizeof(int)), "copy flag");
  if (flag) throw InvalidArgument("hidden or weight produce a non-finite logit: check them for NaN/inf");
  // Metrics (and, for two passes, each token's d loss / d logp) from all of logp.
  AGENTRL_LAUNCH(TokenMathKernel, 1, kBlock, 0, dc, T, S, cu.as<int32_t>(), mask.as<uint8_t>(), old_logp.as<float>(),
                 adv.as<float>(), logp_d.as<float>(), c.entropy ? ent_d.as<float>() : nullptr, w.as<double>(),
                 g.as<float>(), metrics.as<double>());
  Check(gpuGetLastError(), "token math");
  double m[8];
  Check(agentrl::gpu::CopyToHost(m, metrics.as<void>(), sizeof(m)), "copy metrics");
  if (T > 0) Check(agentrl::gpu::CopyToHost(logp, logp_d.as<void>(), 4 * T), "copy logp");
  if (entropy && c.entropy && T > 0)
    Check(agentrl::gpu::CopyToHost(entropy, ent_d.as<void>(), 4 * T), "copy entropy");
  Metrics out;
  out.loss = m[0];
  out.tokens = m[1];
  out.clip_low = m[2];
  out.clip_high = m[3];
  out.clip_dual = m[4];
  out.approx_kl = m[5];
  out.ppo_kl = m[6];
  out.entropy = m[7];
  if (one_pass) return out;
  for (int64_t c0 = 0; c0 < T; c0 += chunk) {
    const int64_t nc = std::min(chunk, T - c0);
    float* z = ws.as<float>();
    Gemm(false, true, nc, V, H, 1.f, hidden + c0 * H, H, weight, H, 0.f, z, V, prec);
    ChunkBackward(z, nc, c0, V, H, inv_tau, targets, row_max, log_s, g, hidden, weight, dhidden, dweight, prec);
  }
  return out;
}

}  // namespace agentrl::kernels::gpu

extern "C" __attribute__((visibility("default"))) int agentrl_fused_linear(AgentrlFusedLinearArgs* a, char* err,
                                                                            int err_len) {
  using agentrl::gpu::Check;
  return agentrl::gpu::AbiGuard(err, err_len, [&] {
    const int64_t T = a->tokens.T, H = a->H, V = a->V;
    void *h = nullptr, *w = nullptr, *dh = nullptr, *dw = nullptr;
    struct Free {
      void** ps[4];
      ~Free() {
        for (void** p : ps)
          if (*p) (void)gpuFree(*p);
      }
    } guard{{&h, &w, &dh, &dw}};
    Check(gpuMalloc(&h, sizeof(float) * std::max<int64_t>(T * H, 1)), "malloc hidden");
    Check(gpuMalloc(&w, sizeof(float) * V * H), "malloc weight");
    Check(gpuMalloc(&dh, sizeof(float) * std::max<int64_t>(T * H, 1)), "malloc dhidden");
    Check(gpuMalloc(&dw, sizeof(float) * V * H), "malloc dweight");
    if (T > 0) Check(agentrl::gpu::CopyToDevice(h, a->hidden, sizeof(float) * T * H), "copy hidden");
    Check(agentrl::gpu::CopyToDevice(w, a->weight, sizeof(float) * V * H), "copy weight");
    agentrl::kernels::gpu::FusedLinearScratch scratch;  // host-array entry: everything is per call anyway
    std::vector<double> times;
    for (int run = 0; run < std::max(1, a->repeat); ++run) {
      if (a->accumulate) Check(agentrl::gpu::CopyToDevice(dw, a->dweight, sizeof(float) * V * H), "copy dweight");
      Check(gpuDeviceSynchronize(), "synchronize");
      const auto t0 = std::chrono::steady_clock::now();
      int passes = 0;
      a->metrics = agentrl::kernels::gpu::FusedLinearDevice(
          a->config, a->tokens, static_cast<float*>(h), static_cast<float*>(w), H, V, static_cast<float*>(dh),
          static_cast<float*>(dw), a->accumulate != 0, a->logp, a->entropy, &a->workspace_bytes, a->precision,
          &scratch, &passes);
      Check(gpuDeviceSynchronize(), "synchronize");
      times.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
      a->passes = passes;
    }
    std::sort(times.begin(), times.end());
    a->device_seconds = times[times.size() / 2];
    if (T > 0) Check(agentrl::gpu::CopyToHost(a->dhidden, dh, sizeof(float) * T * H), "copy dhidden");
    Check(agentrl::gpu::CopyToHost(a->dweight, dw, sizeof(float) * V * H), "copy dweight");
  });
}
