// The engine's model on the device: parameters, gradients, AdamW moments and every activation of
// the latest training forward live in device memory. The layer code follows model.cc step for step
// (same layouts, same packed-sequence and RoPE conventions, same order of accumulation), with the
// CPU kernels replaced by device_ops.h and Sgemm by gpu::Gemm (cuBLASLt / hipBLASLt or the fallback
// kernel). The C ABI at the bottom is what the addon (engine/gpu_bindings.cc) calls.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <exception>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "engine/cuda/device_ops.h"
#include "engine/gpu_engine.h"
#include "gpu/abi_guard.h"
#include "gpu/gemm.h"
#include "gpu/gpu_compat.h"
#include "gpu/transfers.h"
#include "kernels/gpu_fused_linear.h"

namespace agentrl::engine::gpu {
namespace {

using agentrl::gpu::Check;
using agentrl::gpu::GemmPrecision;

// A grow-only device array; contents are undefined after a growth (like engine::Buffer).
template <typename X>
class DevArray {
 public:
  DevArray() = default;
  ~DevArray() {
    if (p_) (void)gpuFree(p_);
  }
  DevArray(const DevArray&) = delete;
  DevArray& operator=(const DevArray&) = delete;
  DevArray(DevArray&& o) noexcept : p_(o.p_), n_(o.n_), cap_(o.cap_) { o.p_ = nullptr, o.n_ = o.cap_ = 0; }
  DevArray& operator=(DevArray&& o) noexcept {
    std::swap(p_, o.p_);
    std::swap(n_, o.n_);
    std::swap(cap_, o.cap_);
    return *this;
  }
  void Resize(size_t n) {
    n_ = n;
    if (n <= cap_) return;
    if (p_) (void)gpuFree(p_);
    p_ = nullptr;
    Check(agentrl::gpu::DeviceMalloc(reinterpret_cast<void**>(&p_), std::max<size_t>(n, 1) * sizeof(X)),
          ("allocating " + std::to_string(n * sizeof(X)) + " bytes").c_str());
    cap_ = n;
  }
  void Zero() {
    if (n_) Check(gpuMemset(p_, 0, n_ * sizeof(X)), "memset");
  }
  void Upload(const X* host, size_t n) {
    Resize(n);
    if (n) Check(agentrl::gpu::CopyToDevice(p_, host, n * sizeof(X)), "copy to device");
  }
  void Download(X* host, size_t n) const {
    if (n) Check(agentrl::gpu::CopyToHost(host, p_, n * sizeof(X)), "copy to host");
  }
  X* data() const { return p_; }
  size_t size() const { return n_; }

 private:
  X* p_ = nullptr;
  size_t n_ = 0, cap_ = 0;
};
using Buf = DevArray<float>;
using IBuf = DevArray<int32_t>;

void CopyD2D(float* dst, const float* src, size_t n) {
  if (n) Check(gpuMemcpy(dst, src, n * sizeof(float), gpuMemcpyDeviceToDevice), "copy on device");
}

struct View {
  float *ln1, *wq, *bq, *wk, *bk, *wv, *bv, *wo, *bo, *qn, *kn, *ln2, *wg, *wu, *wd;
};

struct Acts {
  Buf xn1, r1, qpre, kpre, rq, rk, q, k, v, att, lse, xmid, xn2, r2, g, u;
};

struct Cache {
  int len = 0, cap = 0;
  std::vector<Buf> k, v;  // per layer: [cap][kv_heads * head_dim] each
};

// Data-parallel gradient reduction state: the buckets, the float64 accumulator (exact mode) and the
// side stream the all-reduces run on, ordered after the compute (default) stream by events.
struct Reducer {
  AgentrlGpuReduce spec{};
  std::vector<int64_t> start, end;
  std::vector<int32_t> stage;
  DevArray<double> acc;
  gpuStream_t comm = nullptr;
  gpuEvent_t ready = nullptr, done = nullptr;
  bool armed = false;
  int next = 0, started = 0;
  Reducer() = default;
  Reducer(const Reducer&) = delete;
  Reducer& operator=(const Reducer&) = delete;
  ~Reducer() {
    if (comm) (void)gpuStreamSynchronize(comm);
    if (ready) (void)gpuEventDestroy(ready);
    if (done) (void)gpuEventDestroy(done);
    if (comm) (void)gpuStreamDestroy(comm);
  }
};

class DeviceModel {
 public:
  explicit DeviceModel(const AgentrlGpuLayout& l) : c_(l.config), num_(static_cast<size_t>(l.num_params)) {
    embed_ = l.embed;
    norm_ = l.norm;
    lm_ = l.lm < 0 ? l.embed : l.lm;
    layer_off_.assign(l.layer_offsets, l.layer_offsets + static_cast<size_t>(c_.layers) * kAgentrlLayerSlots);
    for (int i = 0; i < l.num_tensors; ++i)
      tensors_.push_back({l.tensor_offset[i], l.tensor_numel[i], l.tensor_decay[i] != 0});
    params_.Resize(num_);
    params_.Zero();
    grads_.Resize(num_);
    grads_.Zero();
    acts_.resize(c_.layers);
    prec_ = static_cast<GemmPrecision>(c_.precision);
  }

  Buf& Which(int which) {
    if (which == 0) return params_;
    if (which == 1) return grads_;
    EnsureAdam();
    return which == 2 ? m_ : v_;
  }

  void Forward(const int32_t* tokens, const int32_t* cu, int num_seqs, int total, bool recompute, float* hidden_out);
  void Backward(const float* d_hidden_dev, const float* d_lm_dev);
  double CrossEntropy(const int32_t* targets, float scale);
  void Logits(float* out_host);
  void ZeroGrad() { grads_.Zero(); }
  double GradNormSquared();
  void AdamW(float lr, float b1, float b2, float eps, float wd, int64_t step, float grad_scale);
  void Extend(Cache* const* caches, int batch, const int32_t* tokens, const int32_t* counts, float* logits_out);
  void SampleLast(int rows, const double* params, double* out);
  kernels::Metrics PolicyLoss(AgentrlGpuPolicyLossArgs* a);
  void ReduceSetup(const AgentrlGpuReduce& spec);
  void ReduceAccumulate();
  void ReduceArm();
  int ReduceFinish();

  void BackwardHost(const float* d_hidden, const float* d_lm) {
    d_hidden_.Upload(d_hidden, static_cast<size_t>(total_) * c_.hidden);
    if (d_lm) d_lm_.Upload(d_lm, static_cast<size_t>(c_.vocab) * c_.hidden);
    Backward(d_hidden_.data(), d_lm ? d_lm_.data() : nullptr);
  }
  std::unique_ptr<Cache> NewCache() const {
    auto cache = std::make_unique<Cache>();
    cache->k.resize(c_.layers);
    cache->v.resize(c_.layers);
    return cache;
  }

 private:
  Buf d_hidden_, d_lm_;
  View ViewOf(float* base, int layer) const {
    const int64_t* o = layer_off_.data() + static_cast<size_t>(layer) * kAgentrlLayerSlots;
    auto at = [&](int i) { return o[i] < 0 ? nullptr : base + o[i]; };
    return {at(0), at(1), at(2), at(3), at(4), at(5), at(6), at(7), at(8), at(9), at(10), at(11), at(12), at(13), at(14)};
  }
  void G(bool ta, bool tb, int M, int N, int K, float alpha, const float* A, int lda, const float* B, int ldb,
         float beta, float* C, int ldc) {
    agentrl::gpu::Gemm(ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc, prec_);
  }
  void EnsureAdam() {
    if (adam_ready_) return;
    m_.Resize(num_);
    m_.Zero();
    v_.Resize(num_);
    v_.Zero();
    adam_ready_ = true;
  }
  void EnsureRope(int positions);
  void LayerForward(int layer, const float* x_in, float* x_out, Acts& a, int total, bool cached,
                    const IBuf* seq_of, const IBuf* pos, const DevArray<CachePtrs>* caches);
  void LayerBackward(int layer, const float* x_in, Acts& a, float* dres);
  // The backward calls this after each stage's gradients are final (see AgentrlGpuReduce::stage).
  void StageDone(int stage);
  void StartBucket(int b);
  Reducer& Red();

  AgentrlGpuModelConfig c_;
  size_t num_;
  int64_t embed_, norm_, lm_;
  std::vector<int64_t> layer_off_;
  struct Tensor {
    int64_t offset, numel;
    bool decay;
  };
  std::vector<Tensor> tensors_;
  GemmPrecision prec_;
  Buf params_, grads_, m_, v_;
  bool adam_ready_ = false;

  int total_ = 0, num_seqs_ = 0;
  bool recompute_ = false;
  std::vector<int32_t> tokens_host_;
  IBuf tokens_, cu_, pos_, seq_of_;
  std::vector<Buf> xs_;
  std::vector<Acts> acts_;
  Acts scratch_;
  Buf hidden_, rf_, act_, dact_, dxn_, dres_, datt_, dq_, dk_, dv_, dtmp_, x_scratch_, delta_;
  Buf rope_cos_, rope_sin_;
  int rope_len_ = 0;
  Acts infer_acts_;
  Buf infer_x_, infer_y_, infer_last_, infer_normed_, infer_r_, last_logits_;
  IBuf infer_tokens_, infer_seq_, infer_pos_, infer_last_rows_;
  DevArray<double> sample_params_, sample_out_, sample_probs_, sample_cand_v_;
  IBuf sample_cand_i_;
  // Cross-entropy and policy-loss scratch, grown once (no device allocation per micro-batch).
  Buf ce_dh_, ce_hb_, ce_lg_, ce_dhb_, ce_loss_, policy_dh_;
  kernels::gpu::FusedLinearScratch policy_scratch_;
  DevArray<double> norm_partials_;
  IBuf ce_rows_, ce_targets_;
  DevArray<CachePtrs> cache_ptrs_;
  int last_batch_ = 0;
  // Declared last, so destroyed first: its destructor waits for a reduce still reading the
  // gradients before they are freed.
  std::unique_ptr<Reducer> reduce_;
};

void DeviceModel::EnsureRope(int positions) {
  if (positions <= rope_len_) return;
  const int n = std::max(positions, std::max(256, rope_len_ * 2));
  const int half = c_.head_dim / 2;
  std::vector<float> cs(static_cast<size_t>(n) * half), sn(static_cast<size_t>(n) * half);
  for (int i = 0; i < half; ++i) {
    // The CPU engine's table, bit for bit (model.cc EnsureRope).
    const float inv = static_cast<float>(1.0 / std::pow(static_cast<double>(c_.rope_theta),
                                                        static_cast<double>(2 * i) / c_.head_dim));
    for (int p = 0; p < n; ++p) {
      const float arg = static_cast<float>(p) * inv;
      cs[static_cast<size_t>(p) * half + i] = static_cast<float>(std::cos(static_cast<double>(arg)));
      sn[static_cast<size_t>(p) * half + i] = static_cast<float>(std::sin(static_cast<double>(arg)));
    }
  }
  rope_cos_.Upload(cs.data(), cs.size());
  rope_sin_.Upload(sn.data(), sn.size());
  rope_len_ = n;
}

void DeviceModel::LayerForward(int layer, const float* x_in, float* x_out, Acts& a, int total, bool cached,
                               const IBuf* seq_of, const IBuf* pos, const DevArray<CachePtrs>* caches) {
  const int h = c_.hidden, d = c_.head_dim, qd = c_.heads * d, kd = c_.kv_heads * d, im = c_.intermediate;
  const size_t T = static_cast<size_t>(total);
  const View p = ViewOf(params_.data(), layer);
  a.xn1.Resize(T * h);
  a.r1.Resize(T);
  a.q.Resize(T * qd);
  a.k.Resize(T * kd);
  a.v.Resize(T * kd);
  a.att.Resize(T * qd);
  a.xmid.Resize(T * h);
  a.xn2.Resize(T * h);
  a.r2.Resize(T);
  a.g.Resize(T * im);
  a.u.Resize(T * im);
  RmsNormForward(x_in, p.ln1, a.xn1.data(), a.r1.data(), total, h, c_.eps);
  G(false, true, total, qd, h, 1.0f, a.xn1.data(), h, p.wq, h, 0.0f, a.q.data(), qd);
  G(false, true, total, kd, h, 1.0f, a.xn1.data(), h, p.wk, h, 0.0f, a.k.data(), kd);
  G(false, true, total, kd, h, 1.0f, a.xn1.data(), h, p.wv, h, 0.0f, a.v.data(), kd);
  AddBias(a.q.data(), p.bq, total, qd);
  AddBias(a.k.data(), p.bk, total, kd);
  AddBias(a.v.data(), p.bv, total, kd);
  if (c_.qk_norm) {
    a.qpre.Resize(T * qd);
    a.kpre.Resize(T * kd);
    a.rq.Resize(T * c_.heads);
    a.rk.Resize(T * c_.kv_heads);
    CopyD2D(a.qpre.data(), a.q.data(), T * qd);
    CopyD2D(a.kpre.data(), a.k.data(), T * kd);
    RmsNormForward(a.qpre.data(), p.qn, a.q.data(), a.rq.data(), total * c_.heads, d, c_.eps);
    RmsNormForward(a.kpre.data(), p.kn, a.k.data(), a.rk.data(), total * c_.kv_heads, d, c_.eps);
  }
  const int32_t* ps = pos->data();
  Rope(a.q.data(), ps, total, c_.heads, d, qd, rope_cos_.data(), rope_sin_.data(), false);
  Rope(a.k.data(), ps, total, c_.kv_heads, d, kd, rope_cos_.data(), rope_sin_.data(), false);
  const AttnShape shape{c_.heads, c_.kv_heads, d, 1.0f / std::sqrt(static_cast<float>(d))};
  if (!cached) {
    a.lse.Resize(T * c_.heads);
    AttentionForward(a.q.data(), a.k.data(), a.v.data(), a.att.data(), a.lse.data(), cu_.data(), seq_of->data(),
                     num_seqs_, total, shape);
  } else {
    CacheWrite(a.k.data(), a.v.data(), caches->data(), seq_of->data(), ps, total, kd);
    AttentionCached(a.q.data(), a.att.data(), caches->data(), seq_of->data(), ps, total, shape);
  }
  CopyD2D(a.xmid.data(), x_in, T * h);
  G(false, true, total, h, qd, 1.0f, a.att.data(), qd, p.wo, qd, 1.0f, a.xmid.data(), h);
  AddBias(a.xmid.data(), p.bo, total, h);
  RmsNormForward(a.xmid.data(), p.ln2, a.xn2.data(), a.r2.data(), total, h, c_.eps);
  G(false, true, total, im, h, 1.0f, a.xn2.data(), h, p.wg, h, 0.0f, a.g.data(), im);
  G(false, true, total, im, h, 1.0f, a.xn2.data(), h, p.wu, h, 0.0f, a.u.data(), im);
  act_.Resize(T * im);
  SwigluForward(a.g.data(), a.u.data(), act_.data(), static_cast<int64_t>(T) * im);
  CopyD2D(x_out, a.xmid.data(), T * h);
  G(false, true, total, h, im, 1.0f, act_.data(), im, p.wd, im, 1.0f, x_out, h);
}

void DeviceModel::LayerBackward(int layer, const float* x_in, Acts& a, float* dres) {
  const int h = c_.hidden, d = c_.head_dim, qd = c_.heads * d, kd = c_.kv_heads * d, im = c_.intermediate;
  const int total = total_;
  const size_t T = static_cast<size_t>(total);
  const View p = ViewOf(params_.data(), layer);
  const View gr = ViewOf(grads_.data(), layer);
  // MLP: x_out = xmid + down(silu(g) * u); dres is d x_out and becomes d xmid.
  act_.Resize(T * im);
  dact_.Resize(T * im);
  float* g = a.g.data();
  float* u = a.u.data();
  SwigluForward(g, u, act_.data(), static_cast<int64_t>(T) * im);
  G(true, false, h, im, total, 1.0f, dres, h, act_.data(), im, 1.0f, gr.wd, im);
  G(false, false, total, im, h, 1.0f, dres, h, p.wd, im, 0.0f, dact_.data(), im);
  float* dg = dact_.data();
  float* du = act_.data();
  SwigluBackward(g, u, dg, du, static_cast<int64_t>(T) * im);
  G(true, false, im, h, total, 1.0f, dg, im, a.xn2.data(), h, 1.0f, gr.wg, h);
  G(true, false, im, h, total, 1.0f, du, im, a.xn2.data(), h, 1.0f, gr.wu, h);
  dxn_.Resize(T * h);
  G(false, false, total, h, im, 1.0f, dg, im, p.wg, h, 0.0f, dxn_.data(), h);
  G(false, false, total, h, im, 1.0f, du, im, p.wu, h, 1.0f, dxn_.data(), h);
  RmsNormBackward(a.xmid.data(), p.ln2, a.r2.data(), dxn_.data(), dres, gr.ln2, total, h, true);
  // Attention: xmid = x_in + o_proj(att).
  G(true, false, h, qd, total, 1.0f, dres, h, a.att.data(), qd, 1.0f, gr.wo, qd);
  ColumnSum(dres, gr.bo, total, h);
  datt_.Resize(T * qd);
  G(false, false, total, qd, h, 1.0f, dres, h, p.wo, qd, 0.0f, datt_.data(), qd);
  dq_.Resize(T * qd);
  dk_.Resize(T * kd);
  dv_.Resize(T * kd);
  delta_.Resize(T * c_.heads);
  const AttnShape shape{c_.heads, c_.kv_heads, d, 1.0f / std::sqrt(static_cast<float>(d))};
  AttentionBackward(a.q.data(), a.k.data(), a.v.data(), a.att.data(), datt_.data(), a.lse.data(), delta_.data(),
                    dq_.data(), dk_.data(), dv_.data(), cu_.data(), seq_of_.data(), num_seqs_, total, shape);
  Rope(dq_.data(), pos_.data(), total, c_.heads, d, qd, rope_cos_.data(), rope_sin_.data(), true);
  Rope(dk_.data(), pos_.data(), total, c_.kv_heads, d, kd, rope_cos_.data(), rope_sin_.data(), true);
  float* dq = dq_.data();
  float* dk = dk_.data();
  if (c_.qk_norm) {
    dtmp_.Resize(T * std::max(qd, kd));
    RmsNormBackward(a.qpre.data(), p.qn, a.rq.data(), dq, dtmp_.data(), gr.qn, total * c_.heads, d, false);
    CopyD2D(dq, dtmp_.data(), T * qd);
    RmsNormBackward(a.kpre.data(), p.kn, a.rk.data(), dk, dtmp_.data(), gr.kn, total * c_.kv_heads, d, false);
    CopyD2D(dk, dtmp_.data(), T * kd);
  }
  ColumnSum(dq, gr.bq, total, qd);
  ColumnSum(dk, gr.bk, total, kd);
  ColumnSum(dv_.data(), gr.bv, total, kd);
  G(true, false, qd, h, total, 1.0f, dq, qd, a.xn1.data(), h, 1.0f, gr.wq, h);
  G(true, false, kd, h, total, 1.0f, dk, kd, a.xn1.data(), h, 1.0f, gr.wk, h);
  G(true, false, kd, h, total, 1.0f, dv_.data(), kd, a.xn1.data(), h, 1.0f, gr.wv, h);
  G(false, false, total, h, qd, 1.0f, dq, qd, p.wq, h, 0.0f, dxn_.data(), h);
  G(false, false, total, h, kd, 1.0f, dk, kd, p.wk, h, 1.0f, dxn_.data(), h);
  G(false, false, total, h, kd, 1.0f, dv_.data(), kd, p.wv, h, 1.0f, dxn_.data(), h);
  RmsNormBackward(x_in, p.ln1, a.r1.data(), dxn_.data(), dres, gr.ln1, total, h, true);
}

void DeviceModel::Forward(const int32_t* tokens, const int32_t* cu, int num_seqs, int total, bool recompute,
                          float* hidden_out) {
  const int h = c_.hidden;
  const size_t T = static_cast<size_t>(total);
  total_ = total;
  num_seqs_ = num_seqs;
  recompute_ = recompute;
  tokens_host_.assign(tokens, tokens + total);
  std::vector<int32_t> pos(T), seq(T);
  int longest = 0;
  for (int s = 0; s < num_seqs; ++s) {
    longest = std::max(longest, cu[s + 1] - cu[s]);
    for (int t = cu[s]; t < cu[s + 1]; ++t) {
      pos[t] = t - cu[s];
      seq[t] = s;
    }
  }
  tokens_.Upload(tokens, T);
  cu_.Upload(cu, static_cast<size_t>(num_seqs) + 1);
  pos_.Upload(pos.data(), T);
  seq_of_.Upload(seq.data(), T);
  EnsureRope(longest + 1);
  xs_.resize(c_.layers + 1);
  for (auto& x : xs_) x.Resize(T * h);
  EmbedForward(params_.data() + embed_, tokens_.data(), xs_[0].data(), total, h);
  for (int l = 0; l < c_.layers; ++l)
    LayerForward(l, xs_[l].data(), xs_[l + 1].data(), recompute ? scratch_ : acts_[l], total, false, &seq_of_, &pos_,
                 nullptr);
  hidden_.Resize(T * h);
  rf_.Resize(T);
  RmsNormForward(xs_[c_.layers].data(), params_.data() + norm_, hidden_.data(), rf_.data(), total, h, c_.eps);
  if (hidden_out) hidden_.Download(hidden_out, T * h);
}

void DeviceModel::Backward(const float* d_hidden, const float* d_lm) {
  const int h = c_.hidden;
  const size_t T = static_cast<size_t>(total_);
  if (d_lm) Add(grads_.data() + lm_, d_lm, static_cast<int64_t>(c_.vocab) * h);
  dres_.Resize(T * h);
  RmsNormBackward(xs_[c_.layers].data(), params_.data() + norm_, rf_.data(), d_hidden, dres_.data(),
                  grads_.data() + norm_, total_, h, false);
  StageDone(c_.layers);
  for (int l = c_.layers - 1; l >= 0; --l) {
    if (recompute_) {
      x_scratch_.Resize(T * h);
      LayerForward(l, xs_[l].data(), x_scratch_.data(), scratch_, total_, false, &seq_of_, &pos_, nullptr);
    }
    LayerBackward(l, xs_[l].data(), recompute_ ? scratch_ : acts_[l], dres_.data());
    StageDone(l);
  }
  EmbedBackward(grads_.data() + embed_, tokens_.data(), dres_.data(), total_, h);
  StageDone(-1);
}

Reducer& DeviceModel::Red() {
  if (!reduce_) throw std::runtime_error("data-parallel reduce: call reduce setup first");
  return *reduce_;
}

void DeviceModel::ReduceSetup(const AgentrlGpuReduce& spec) {
  if (spec.all_reduce == nullptr || spec.comm == nullptr)
    throw kernels::InvalidArgument("data-parallel reduce: no all-reduce function or communicator");
  if (spec.num_buckets <= 0) throw kernels::InvalidArgument("data-parallel reduce: no buckets");
  auto r = std::make_unique<Reducer>();
  r->spec = spec;
  r->start.assign(spec.start, spec.start + spec.num_buckets);
  r->end.assign(spec.end, spec.end + spec.num_buckets);
  r->stage.assign(spec.stage, spec.stage + spec.num_buckets);
  // The buckets must cover every gradient exactly once (each is written back from its sum).
  std::vector<std::pair<int64_t, int64_t>> ranges;
  for (int b = 0; b < spec.num_buckets; ++b) {
    if (!(r->start[b] >= 0 && r->start[b] < r->end[b] && r->end[b] <= static_cast<int64_t>(num_)))
      throw kernels::InvalidArgument("data-parallel reduce: bucket " + std::to_string(b) + " is out of range");
    ranges.emplace_back(r->start[b], r->end[b]);
  }
  std::sort(ranges.begin(), ranges.end());
  int64_t at = 0;
  for (const auto& range : ranges) {
    if (range.first != at) break;
    at = range.second;
  }
  if (at != static_cast<int64_t>(num_))
    throw kernels::InvalidArgument("data-parallel reduce: the buckets must cover the gradients exactly once");
  reduce_.reset();  // waits for a previous reducer's reduce in flight
  if (spec.exact) {
    r->acc.Resize(num_);
    r->acc.Zero();
  }
#if !defined(AGENTRL_HIP_CPU)
  Check(gpuStreamCreateWithFlags(&r->comm, gpuStreamNonBlocking), "creating the reduce stream");
  Check(gpuEventCreateWithFlags(&r->ready, gpuEventDisableTiming), "creating a reduce event");
  Check(gpuEventCreateWithFlags(&r->done, gpuEventDisableTiming), "creating a reduce event");
#endif
  // HIP-CPU (the no-GPU check): no side stream. Its runtime drains every stream whenever the null
  // stream synchronises, so a stream waiting on a null-stream event deadlocks there; and its
  // launches already complete before the next call (AGENTRL_LAUNCH), so the all-reduce is called
  // on finished gradients with the null stream, in order.
  reduce_ = std::move(r);
}

void DeviceModel::ReduceAccumulate() {
  Reducer& r = Red();
  if (r.armed) throw std::runtime_error("data-parallel reduce: accumulate while a reduce is armed");
  if (r.spec.exact) AccumulateF64(r.acc.data(), grads_.data(), static_cast<int64_t>(num_));
}

void DeviceModel::ReduceArm() {
  Reducer& r = Red();
  r.armed = true;
  r.next = 0;
  r.started = 0;
}

void DeviceModel::StartBucket(int b) {
  Reducer& r = *reduce_;
  const int64_t at = r.start[b], n = r.end[b] - r.start[b];
  void* buf = grads_.data() + at;
  int dtype = 7;  // ncclFloat32
  if (r.spec.exact) {
    AccumulateF64(r.acc.data() + at, grads_.data() + at, n);
    buf = r.acc.data() + at;
    dtype = 8;  // ncclFloat64
  }
  // The side stream waits for what the compute stream has queued so far (this bucket's gradients).
  if (r.comm) {
    Check(gpuEventRecord(r.ready, nullptr), "recording a reduce event");
    Check(gpuStreamWaitEvent(r.comm, r.ready, 0), "ordering the reduce stream");
  }
  const int rc = r.spec.all_reduce(buf, buf, static_cast<size_t>(n), dtype, 0 /* ncclSum */, r.spec.comm, r.comm);
  if (rc != 0) {
    throw std::runtime_error("ncclAllReduce of gradient bucket " + std::to_string(b) + " failed (ncclResult " +
                             std::to_string(rc) + ")");
  }
}

void DeviceModel::StageDone(int stage) {
  if (!reduce_ || !reduce_->armed) return;
  Reducer& r = *reduce_;
  while (r.next < static_cast<int>(r.start.size()) && r.stage[r.next] >= stage) {
    StartBucket(r.next++);
    r.started++;
  }
}

int DeviceModel::ReduceFinish() {
  Reducer& r = Red();
  if (!r.armed) ReduceArm();
  const int started = r.started;
  while (r.next < static_cast<int>(r.start.size())) StartBucket(r.next++);
  r.armed = false;
  // The compute stream (the write-back, the optimizer step, the next forward) waits for every bucket.
  if (r.comm) {
    Check(gpuEventRecord(r.done, r.comm), "recording a reduce event");
    Check(gpuStreamWaitEvent(nullptr, r.done, 0), "ordering the compute stream");
  }
  if (r.spec.exact) WriteBackF64(grads_.data(), r.acc.data(), static_cast<int64_t>(num_));
  return started;
}

double DeviceModel::CrossEntropy(const int32_t* targets, float scale) {
  const int h = c_.hidden, vocab = c_.vocab;
  const size_t T = static_cast<size_t>(total_);
  std::vector<int32_t> rows;
  for (size_t t = 0; t < T; ++t)
    if (targets[t] >= 0) rows.push_back(static_cast<int32_t>(t));
  Buf& dh = ce_dh_;
  dh.Resize(T * h);
  dh.Zero();
  IBuf& d_rows = ce_rows_;
  IBuf& d_targets = ce_targets_;
  d_rows.Upload(rows.data(), rows.size());
  d_targets.Upload(targets, T);
  const float* w = params_.data() + lm_;
  float* gw = grads_.data() + lm_;
  constexpr int kChunk = 256;
  Buf &hb = ce_hb_, &lg = ce_lg_, &dhb = ce_dhb_, &loss = ce_loss_;
  hb.Resize(static_cast<size_t>(kChunk) * h);
  lg.Resize(static_cast<size_t>(kChunk) * vocab);
  dhb.Resize(static_cast<size_t>(kChunk) * h);
  loss.Resize(std::max<size_t>(rows.size(), 1));
  for (size_t r0 = 0; r0 < rows.size(); r0 += kChunk) {
    const int n = static_cast<int>(std::min<size_t>(kChunk, rows.size() - r0));
    GatherRows(hidden_.data(), d_rows.data() + r0, hb.data(), n, h);
    G(false, true, n, vocab, h, 1.0f, hb.data(), h, w, h, 0.0f, lg.data(), vocab);
    SoftmaxCrossEntropy(lg.data(), d_rows.data() + r0, d_targets.data(), loss.data() + r0, n, vocab, scale);
    G(true, false, vocab, h, n, 1.0f, lg.data(), vocab, hb.data(), h, 1.0f, gw, h);
    G(false, false, n, h, vocab, 1.0f, lg.data(), vocab, w, h, 0.0f, dhb.data(), h);
    ScatterRows(dhb.data(), d_rows.data() + r0, dh.data(), n, h);
  }
  std::vector<float> per_row(rows.size());
  loss.Download(per_row.data(), rows.size());
  double total = 0.0;
  for (float l : per_row) total += static_cast<double>(l);
  Backward(dh.data(), nullptr);
  return total;
}

void DeviceModel::Logits(float* out) {
  Buf lg;
  lg.Resize(static_cast<size_t>(total_) * c_.vocab);
  G(false, true, total_, c_.vocab, c_.hidden, 1.0f, hidden_.data(), c_.hidden, params_.data() + lm_, c_.hidden, 0.0f,
    lg.data(), c_.vocab);
  lg.Download(out, static_cast<size_t>(total_) * c_.vocab);
}

double DeviceModel::GradNormSquared() {
  DevArray<double>& part = norm_partials_;
  part.Resize((num_ >> 16) + 1);
  const int blocks = SumSquaresPartials(grads_.data(), static_cast<int64_t>(num_), part.data());
  std::vector<double> host(blocks);
  part.Download(host.data(), host.size());
  double total = 0.0;
  for (double s : host) total += s;
  return total;
}

void DeviceModel::AdamW(float lr, float b1, float b2, float eps, float wd, int64_t step, float grad_scale) {
  EnsureAdam();
  const double bc1 = 1.0 - std::pow(static_cast<double>(b1), static_cast<double>(step));
  const double bc2 = 1.0 - std::pow(static_cast<double>(b2), static_cast<double>(step));
  const float step_size = static_cast<float>(lr / bc1);
  const float bc2_sqrt = static_cast<float>(std::sqrt(bc2));
  for (const auto& t : tensors_) {
    const float decay = t.decay ? 1.0f - lr * wd : 1.0f;
    gpu::AdamW(params_.data() + t.offset, m_.data() + t.offset, v_.data() + t.offset, grads_.data() + t.offset,
               t.numel, b1, b2, eps, step_size, bc2_sqrt, decay, grad_scale);
  }
}

void DeviceModel::Extend(Cache* const* caches, int batch, const int32_t* tokens, const int32_t* counts,
                         float* logits_out) {
  const int h = c_.hidden, kd = c_.kv_heads * c_.head_dim;
  int total = 0;
  for (int b = 0; b < batch; ++b) total += counts[b];
  const size_t T = static_cast<size_t>(total);
  std::vector<int32_t> seq(T), pos(T), last_rows(batch);
  int longest = 0;
  for (int b = 0, t = 0; b < batch; ++b) {
    Cache* cache = caches[b];
    const int need = cache->len + counts[b];
    longest = std::max(longest, need);
    if (need > cache->cap) {
      const int cap = std::max(need, std::max(64, cache->cap * 2));
      for (int l = 0; l < c_.layers; ++l) {
        for (Buf* kv : {&cache->k[l], &cache->v[l]}) {
          Buf grown;
          grown.Resize(static_cast<size_t>(cap) * kd);
          if (cache->len > 0) CopyD2D(grown.data(), kv->data(), static_cast<size_t>(cache->len) * kd);
          std::swap(*kv, grown);
        }
      }
      cache->cap = cap;
    }
    for (int i = 0; i < counts[b]; ++i, ++t) {
      seq[t] = b;
      pos[t] = cache->len + i;
    }
    last_rows[b] = t - 1;
  }
  EnsureRope(longest + 1);
  infer_tokens_.Upload(tokens, T);
  infer_seq_.Upload(seq.data(), T);
  infer_pos_.Upload(pos.data(), T);
  infer_last_rows_.Upload(last_rows.data(), batch);
  Buf& x = infer_x_;
  Buf& y = infer_y_;
  x.Resize(T * h);
  y.Resize(T * h);
  EmbedForward(params_.data() + embed_, infer_tokens_.data(), x.data(), total, h);
  std::vector<CachePtrs> ptrs(batch);
  for (int l = 0; l < c_.layers; ++l) {
    for (int b = 0; b < batch; ++b) ptrs[b] = {caches[b]->k[l].data(), caches[b]->v[l].data()};
    cache_ptrs_.Upload(ptrs.data(), ptrs.size());
    LayerForward(l, x.data(), y.data(), infer_acts_, total, true, &infer_seq_, &infer_pos_, &cache_ptrs_);
    std::swap(x, y);
  }
  infer_last_.Resize(static_cast<size_t>(batch) * h);
  infer_normed_.Resize(static_cast<size_t>(batch) * h);
  infer_r_.Resize(batch);
  GatherRows(x.data(), infer_last_rows_.data(), infer_last_.data(), batch, h);
  for (int b = 0; b < batch; ++b) caches[b]->len += counts[b];
  RmsNormForward(infer_last_.data(), params_.data() + norm_, infer_normed_.data(), infer_r_.data(), batch, h, c_.eps);
  last_logits_.Resize(static_cast<size_t>(batch) * c_.vocab);
  G(false, true, batch, c_.vocab, h, 1.0f, infer_normed_.data(), h, params_.data() + lm_, h, 0.0f,
    last_logits_.data(), c_.vocab);
  last_batch_ = batch;
  if (logits_out) last_logits_.Download(logits_out, static_cast<size_t>(batch) * c_.vocab);
}

// One upload of the rows' parameters and uniforms, one download of their tokens and logprobs.
void DeviceModel::SampleLast(int rows, const double* params, double* out) {
  if (last_batch_ == 0) throw std::runtime_error("sample needs an extend first");
  if (rows != last_batch_) {
    throw kernels::InvalidArgument("sample got " + std::to_string(rows) + " rows; the latest extend has " +
                                   std::to_string(last_batch_));
  }
  const size_t R = static_cast<size_t>(rows);
  sample_params_.Upload(params, R * 4);
  sample_out_.Resize(R * 2);
  sample_probs_.Resize(R * c_.vocab);
  const size_t stride = static_cast<size_t>(SampleCandidateStride(c_.vocab));
  sample_cand_v_.Resize(R * stride);
  sample_cand_i_.Resize(R * stride);
  Sample(last_logits_.data(), rows, c_.vocab, sample_params_.data(), sample_out_.data(), sample_probs_.data(),
         sample_cand_v_.data(), sample_cand_i_.data());
  sample_out_.Download(out, R * 2);
}

kernels::Metrics DeviceModel::PolicyLoss(AgentrlGpuPolicyLossArgs* a) {
  if (a->tokens.T != total_) throw std::runtime_error("policy loss: token count differs from the latest forward");
  const int h = c_.hidden;
  Buf& dh = policy_dh_;
  dh.Resize(static_cast<size_t>(total_) * h);
  // dWeight accumulates straight into the lm_head gradient (the embedding's when tied).
  kernels::Metrics m = kernels::gpu::FusedLinearDevice(a->config, a->tokens, hidden_.data(), params_.data() + lm_, h,
                                                       c_.vocab, dh.data(), grads_.data() + lm_, true, a->logp,
                                                       a->entropy, &a->workspace_bytes, c_.precision,
                                                       &policy_scratch_);
  Backward(dh.data(), nullptr);
  return m;
}


DeviceModel* M(void* p) { return static_cast<DeviceModel*>(p); }

}  // namespace
}  // namespace agentrl::engine::gpu

using agentrl::engine::gpu::Cache;
using agentrl::engine::gpu::DeviceModel;
using agentrl::engine::gpu::M;
using agentrl::gpu::AbiGuard;
#define AGENTRL_EXPORT extern "C" __attribute__((visibility("default")))

AGENTRL_EXPORT int agentrl_engine_create(const AgentrlGpuLayout* layout, void** model, char* err, int err_len) {
  return AbiGuard(err, err_len, [&] {
    if (layout->config.head_dim > agentrl::engine::gpu::kMaxHeadDim || layout->config.head_dim % 2 != 0) {
      throw agentrl::kernels::InvalidArgument("the device attention kernels take an even head_dim <= 128; got " +
                                              std::to_string(layout->config.head_dim));
    }
    *model = new DeviceModel(*layout);
  });
}
AGENTRL_EXPORT void agentrl_engine_destroy(void* model) { delete M(model); }
AGENTRL_EXPORT int agentrl_engine_copy(void* model, int which, float* host, int to_device, char* err, int err_len) {
  return AbiGuard(err, err_len, [&] {
    auto& buf = M(model)->Which(which);
    if (to_device) {
      buf.Upload(host, buf.size());
    } else {
      buf.Download(host, buf.size());
    }
  });
}
AGENTRL_EXPORT int agentrl_engine_forward(void* model, const int32_t* tokens, const int32_t* cu, int num_seqs,
                                          int total, int recompute, float* hidden_out, char* err, int err_len) {
  return AbiGuard(err, err_len, [&] { M(model)->Forward(tokens, cu, num_seqs, total, recompute != 0, hidden_out); });
}
AGENTRL_EXPORT int agentrl_engine_backward(void* model, const float* d_hidden, const float* d_lm, char* err,
                                           int err_len) {
  return AbiGuard(err, err_len, [&] { M(model)->BackwardHost(d_hidden, d_lm); });
}
AGENTRL_EXPORT int agentrl_engine_cross_entropy(void* model, const int32_t* targets, float scale, double* loss,
                                                char* err, int err_len) {
  return AbiGuard(err, err_len, [&] { *loss = M(model)->CrossEntropy(targets, scale); });
}
AGENTRL_EXPORT int agentrl_engine_logits(void* model, float* out, char* err, int err_len) {
  return AbiGuard(err, err_len, [&] { M(model)->Logits(out); });
}
AGENTRL_EXPORT int agentrl_engine_zero_grad(void* model, char* err, int err_len) {
  return AbiGuard(err, err_len, [&] { M(model)->ZeroGrad(); });
}
AGENTRL_EXPORT int agentrl_engine_grad_norm(void* model, double* out, char* err, int err_len) {
  return AbiGuard(err, err_len, [&] { *out = M(model)->GradNormSquared(); });
}
AGENTRL_EXPORT int agentrl_engine_adamw(void* model, float lr, float beta1, float beta2, float eps, float wd,
                                        int64_t step, float grad_scale, char* err, int err_len) {
  return AbiGuard(err, err_len, [&] { M(model)->AdamW(lr, beta1, beta2, eps, wd, step, grad_scale); });
}
AGENTRL_EXPORT int agentrl_engine_cache_create(void* model, void** cache, char* err, int err_len) {
  return AbiGuard(err, err_len, [&] { *cache = M(model)->NewCache().release(); });
}
AGENTRL_EXPORT void agentrl_engine_cache_destroy(void* cache) { delete static_cast<Cache*>(cache); }
AGENTRL_EXPORT int agentrl_engine_cache_length(void* cache) { return static_cast<Cache*>(cache)->len; }
AGENTRL_EXPORT void agentrl_engine_cache_truncate(void* cache, int length) { static_cast<Cache*>(cache)->len = length; }
AGENTRL_EXPORT int agentrl_engine_extend(void* model, void* const* caches, int batch, const int32_t* tokens,
                                         const int32_t* counts, float* logits_out, char* err, int err_len) {
  return AbiGuard(err, err_len, [&] {
    M(model)->Extend(reinterpret_cast<Cache* const*>(caches), batch, tokens, counts, logits_out);
  });
}
AGENTRL_EXPORT int agentrl_engine_sample(void* model, int rows, const double* params, double* out, char* err,
                                         int err_len) {
  return AbiGuard(err, err_len, [&] { M(model)->SampleLast(rows, params, out); });
}
AGENTRL_EXPORT int agentrl_engine_policy_loss(void* model, AgentrlGpuPolicyLossArgs* args, char* err, int err_len) {
  return AbiGuard(err, err_len, [&] { args->metrics = M(model)->PolicyLoss(args); });
}
AGENTRL_EXPORT int agentrl_engine_reduce_setup(void* model, const AgentrlGpuReduce* spec, char* err, int err_len) {
  return AbiGuard(err, err_len, [&] { M(model)->ReduceSetup(*spec); });
}
AGENTRL_EXPORT int agentrl_engine_reduce_accumulate(void* model, char* err, int err_len) {
  return AbiGuard(err, err_len, [&] { M(model)->ReduceAccumulate(); });
}
AGENTRL_EXPORT int agentrl_engine_reduce_arm(void* model, char* err, int err_len) {
  return AbiGuard(err, err_len, [&] { M(model)->ReduceArm(); });
}
AGENTRL_EXPORT int agentrl_engine_reduce_finish(void* model, int* started, char* err, int err_len) {
  return AbiGuard(err, err_len, [&] { *started = M(model)->ReduceFinish(); });
}
AGENTRL_EXPORT int agentrl_engine_set_device(int device, int* count, char* err, int err_len) {
  return AbiGuard(err, err_len, [&] {
    agentrl::gpu::Check(gpuGetDeviceCount(count), "counting devices");
    if (device >= *count) {
      throw agentrl::kernels::InvalidArgument("device " + std::to_string(device) + " does not exist: " +
                                              std::to_string(*count) + " visible");
    }
    if (device >= 0) agentrl::gpu::Check(gpuSetDevice(device), "selecting the device");
  });
}
AGENTRL_EXPORT void agentrl_engine_transfers(int64_t* to_device, int64_t* to_host, int64_t* allocations) {
  *to_device = agentrl::gpu::Transfers().to_device.load();
  *to_host = agentrl::gpu::Transfers().to_host.load();
  *allocations = agentrl::gpu::Transfers().allocations.load();
}
AGENTRL_EXPORT int agentrl_engine_info(char* out, int out_len) {
  std::snprintf(out, out_len, "%s", agentrl::gpu::GemmPath().c_str());
  return 0;
}
