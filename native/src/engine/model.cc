#include "engine/model.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <string>

#include <sys/mman.h>

#include "engine/cpu/ops.h"
#include "engine/cpu/panel_gemm.h"
#include "engine/cpu/sgemm.h"

namespace agentrl::engine {

using cpu::Sgemm;

Buffer::~Buffer() { std::free(data_); }

void Buffer::Resize(size_t n) {
  size_ = n;
  if (n <= capacity_) return;
  std::free(data_);
  size_t bytes = ((n * sizeof(float)) + 63) / 64 * 64;
#if defined(MADV_HUGEPAGE)
  // Buffers of 4 MiB and more (weights, gradients, moments, activations, the logits chunk) on 2 MiB
  // pages where the kernel's transparent huge pages allow it on request ("madvise" mode, common):
  // the packed SGEMM reads 12-32 rows a page or more apart and writes gradient tiles at a stride, and
  // the 0.6B training step ran ~8 % faster so (a 2-core Zen 5, BENCHMARKS.md). Values are unchanged.
  constexpr size_t kHuge = size_t{2} << 20;
  if (bytes >= 2 * kHuge) {
    bytes = (bytes + kHuge - 1) / kHuge * kHuge;
    data_ = static_cast<float*>(std::aligned_alloc(kHuge, bytes));
    if (data_) madvise(data_, bytes, MADV_HUGEPAGE);  // advice only: failure leaves 4 KiB pages
  } else {
    data_ = static_cast<float*>(std::aligned_alloc(64, bytes));
  }
#else
  data_ = static_cast<float*>(std::aligned_alloc(64, bytes));
#endif
  if (!data_) throw std::runtime_error("engine: out of memory allocating " + std::to_string(bytes) + " bytes");
  capacity_ = n;
}

void Buffer::Zero() {
  if (data_) std::memset(data_, 0, size_ * sizeof(float));
}

Model::Model(const ModelConfig& cfg, bool training) : cfg_(cfg) {
  const int h = cfg.hidden, d = cfg.head_dim, qd = cfg.heads * d, kd = cfg.kv_heads * d, im = cfg.intermediate;
  size_t off = 0;
  auto add = [&](const std::string& name, std::vector<int64_t> shape, bool decay) {
    size_t numel = 1;
    for (auto s : shape) numel *= static_cast<size_t>(s);
    tensors_.push_back({name, shape, off, numel, decay});
    const size_t at = off;
    off += (numel + 15) / 16 * 16;
    return at;
  };
  embed_off_ = add("model.embed_tokens.weight", {cfg.vocab, h}, true);
  for (int l = 0; l < cfg.layers; ++l) {
    const std::string p = "model.layers." + std::to_string(l) + ".";
    LayerOffsets o;
    o.ln1 = add(p + "input_layernorm.weight", {h}, false);
    o.wq = add(p + "self_attn.q_proj.weight", {qd, h}, true);
    o.bq = cfg.qkv_bias ? add(p + "self_attn.q_proj.bias", {qd}, false) : kAbsent;
    o.wk = add(p + "self_attn.k_proj.weight", {kd, h}, true);
    o.bk = cfg.qkv_bias ? add(p + "self_attn.k_proj.bias", {kd}, false) : kAbsent;
    o.wv = add(p + "self_attn.v_proj.weight", {kd, h}, true);
    o.bv = cfg.qkv_bias ? add(p + "self_attn.v_proj.bias", {kd}, false) : kAbsent;
    o.wo = add(p + "self_attn.o_proj.weight", {h, qd}, true);
    o.bo = cfg.o_bias ? add(p + "self_attn.o_proj.bias", {h}, false) : kAbsent;
    o.qn = cfg.qk_norm ? add(p + "self_attn.q_norm.weight", {d}, false) : kAbsent;
    o.kn = cfg.qk_norm ? add(p + "self_attn.k_norm.weight", {d}, false) : kAbsent;
    o.ln2 = add(p + "post_attention_layernorm.weight", {h}, false);
    o.wg = add(p + "mlp.gate_proj.weight", {im, h}, true);
    o.wu = add(p + "mlp.up_proj.weight", {im, h}, true);
    o.wd = add(p + "mlp.down_proj.weight", {h, im}, true);
    layer_off_.push_back(o);
  }
  norm_off_ = add("model.norm.weight", {h}, false);
  if (!cfg.tied) lm_off_ = add("lm_head.weight", {cfg.vocab, h}, true);
  num_params_ = off;
  params_.Resize(off);
  params_.Zero();
  if (training) EnableTraining();
  acts_.resize(cfg.layers);
}

void Model::EnableTraining() {
  if (training_) return;
  grads_.Resize(num_params_);
  grads_.Zero();
  training_ = true;
}

namespace {
void RequireTraining(bool training, const char* what) {
  if (!training) {
    throw std::invalid_argument(std::string(what) +
                                " needs gradients, but this model was opened without them (training: false)");
  }
}
}  // namespace

float* Model::adam_m() {
  if (!adam_ready_) {
    m_.Resize(num_params_);
    m_.Zero();
    v_.Resize(num_params_);
    v_.Zero();
    adam_ready_ = true;
  }
  return m_.data();
}

float* Model::adam_v() {
  adam_m();
  return v_.data();
}

LayerView Model::View(float* base, int layer) const {
  const LayerOffsets& o = layer_off_[layer];
  auto at = [&](size_t off) { return off == kAbsent ? nullptr : base + off; };
  return {at(o.ln1), at(o.wq), at(o.bq), at(o.wk), at(o.bk), at(o.wv), at(o.bv), at(o.wo),
          at(o.bo),  at(o.qn), at(o.kn), at(o.ln2), at(o.wg), at(o.wu), at(o.wd)};
}

void Model::InitParams(uint64_t seed, float stddev) {
  // splitmix64 + Box-Muller, sequential over tensors so the result depends on the seed only.
  uint64_t state = seed * 0x9E3779B97F4A7C15ull + 0x632BE59BD9B4E019ull;
  auto next = [&]() {
    uint64_t z = (state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  };
  auto uniform = [&]() { return (static_cast<double>(next() >> 11) + 0.5) * (1.0 / 9007199254740992.0); };
  float* p = params_.data();
  for (const auto& t : tensors_) {
    float* w = p + t.offset;
    const bool is_norm = t.name.find("norm") != std::string::npos;
    const bool is_bias = t.shape.size() == 1 && !is_norm;
    for (size_t i = 0; i < t.numel; i += 2) {
      const double u1 = uniform(), u2 = uniform();
      const double r = std::sqrt(-2.0 * std::log(u1));
      w[i] = static_cast<float>(r * std::cos(2 * M_PI * u2) * stddev);
      if (i + 1 < t.numel) w[i + 1] = static_cast<float>(r * std::sin(2 * M_PI * u2) * stddev);
    }
    if (is_norm) std::fill(w, w + t.numel, 1.0f);
    if (is_bias) std::fill(w, w + t.numel, 0.0f);
  }
}

void Model::EnsureRope(int positions) {
  if (positions <= rope_len_) return;
  const int n = std::max(positions, std::max(256, rope_len_ * 2));
  const int half = cfg_.head_dim / 2;
  rope_cos_.Resize(static_cast<size_t>(n) * half);
  rope_sin_.Resize(static_cast<size_t>(n) * half);
  for (int i = 0; i < half; ++i) {
    // Same float32 rounding steps as Hugging Face's default rotary embedding.
    const float inv = static_cast<float>(1.0 / std::pow(static_cast<double>(cfg_.rope_theta),
                                                        static_cast<double>(2 * i) / cfg_.head_dim));
    for (int p = 0; p < n; ++p) {
      const float arg = static_cast<float>(p) * inv;
      rope_cos_.data()[static_cast<size_t>(p) * half + i] = static_cast<float>(std::cos(static_cast<double>(arg)));
      rope_sin_.data()[static_cast<size_t>(p) * half + i] = static_cast<float>(std::sin(static_cast<double>(arg)));
    }
  }
  rope_len_ = n;
}

namespace {

void AddBias(float* y, const float* b, int rows, int n) {
  if (!b) return;
  for (int t = 0; t < rows; ++t) {
    float* r = y + static_cast<size_t>(t) * n;
#pragma omp simd
    for (int i = 0; i < n; ++i) r[i] += b[i];
  }
}

void ColumnSum(const float* x, float* out, int rows, int n) {
  if (!out) return;
  for (int t = 0; t < rows; ++t) {
    const float* r = x + static_cast<size_t>(t) * n;
#pragma omp simd
    for (int i = 0; i < n; ++i) out[i] += r[i];
  }
}

}  // namespace

void Model::LayerForward(int layer, const float* x_in, float* x_out, LayerActs& a, int total,
                         const std::vector<KvCache*>* caches) {
  const ModelConfig& c = cfg_;
  const int h = c.hidden, d = c.head_dim, qd = c.heads * d, kd = c.kv_heads * d, im = c.intermediate;
  const size_t T = static_cast<size_t>(total);
  const LayerView p = View(params_.data(), layer);
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
  cpu::RmsNormForward(x_in, p.ln1, a.xn1.data(), a.r1.data(), total, h, c.eps);
  Linear(p.wq, total, qd, h, a.xn1.data(), false, a.q.data());
  Linear(p.wk, total, kd, h, a.xn1.data(), false, a.k.data());
  Linear(p.wv, total, kd, h, a.xn1.data(), false, a.v.data());
  AddBias(a.q.data(), p.bq, total, qd);
  AddBias(a.k.data(), p.bk, total, kd);
  AddBias(a.v.data(), p.bv, total, kd);
  if (c.qk_norm) {
    a.qpre.Resize(T * qd);
    a.kpre.Resize(T * kd);
    a.rq.Resize(T * c.heads);
    a.rk.Resize(T * c.kv_heads);
    std::memcpy(a.qpre.data(), a.q.data(), T * qd * sizeof(float));
    std::memcpy(a.kpre.data(), a.k.data(), T * kd * sizeof(float));
    cpu::RmsNormForward(a.qpre.data(), p.qn, a.q.data(), a.rq.data(), total * c.heads, d, c.eps);
    cpu::RmsNormForward(a.kpre.data(), p.kn, a.k.data(), a.rk.data(), total * c.kv_heads, d, c.eps);
  }
  const int32_t* pos = caches ? seq_of_.data() + total : pos_.data();  // see Extend: pos stored after seq ids
  cpu::Rope(a.q.data(), pos, total, c.heads, d, qd, rope_cos_.data(), rope_sin_.data(), false);
  cpu::Rope(a.k.data(), pos, total, c.kv_heads, d, kd, rope_cos_.data(), rope_sin_.data(), false);
  const cpu::AttnShape shape{c.heads, c.kv_heads, d, 1.0f / std::sqrt(static_cast<float>(d))};
  if (!caches) {
    a.lse.Resize(T * c.heads);
    cpu::AttentionForward(a.q.data(), a.k.data(), a.v.data(), a.att.data(), a.lse.data(), cu_.data(), num_seqs_,
                          total, shape);
  } else {
    std::vector<const float*> kc(caches->size()), vc(caches->size());
    std::vector<int32_t> caps(caches->size());
    for (size_t b = 0; b < caches->size(); ++b) {
      kc[b] = (*caches)[b]->k[layer].data();
      vc[b] = (*caches)[b]->v[layer].data();
      caps[b] = (*caches)[b]->cap;
    }
    for (int t = 0; t < total; ++t) {
      KvCache* cache = (*caches)[seq_of_[t]];
      const size_t cap = static_cast<size_t>(cache->cap);
      float* kt = cache->k[layer].data();
      const float* kn = a.k.data() + static_cast<size_t>(t) * kd;
      for (int i = 0; i < kd; ++i) kt[static_cast<size_t>(i) * cap + pos[t]] = kn[i];  // keys stored transposed
      std::memcpy(cache->v[layer].data() + static_cast<size_t>(pos[t]) * kd, a.v.data() + t * kd, kd * sizeof(float));
    }
    cpu::AttentionCached(a.q.data(), a.att.data(), seq_of_.data(), pos, total, kc.data(), caps.data(), vc.data(),
                         shape);
  }
  std::memcpy(a.xmid.data(), x_in, T * h * sizeof(float));
  Linear(p.wo, total, h, qd, a.att.data(), true, a.xmid.data());
  AddBias(a.xmid.data(), p.bo, total, h);
  cpu::RmsNormForward(a.xmid.data(), p.ln2, a.xn2.data(), a.r2.data(), total, h, c.eps);
  Linear(p.wg, total, im, h, a.xn2.data(), false, a.g.data());
  Linear(p.wu, total, im, h, a.xn2.data(), false, a.u.data());
  act_.Resize(T * im);
  float* act = act_.data();
  const float* g = a.g.data();
  const float* u = a.u.data();
  cpu::SwigluForward(g, u, act, T * im);
  std::memcpy(x_out, a.xmid.data(), T * h * sizeof(float));
  Linear(p.wd, total, h, im, act, true, x_out);
}

void Model::Linear(const float* w, int rows, int n, int k, const float* x, bool accumulate, float* y) {
  const float beta = accumulate ? 1.0f : 0.0f;
  switch (linear_mode_) {
    case LinearMode::kTrain:
      Sgemm(false, true, rows, n, k, 1.0f, x, k, w, k, beta, y, n);
      return;
    case LinearMode::kDecode:
      cpu::SgemmSmallM(false, true, rows, n, k, 1.0f, x, k, w, k, beta, y, n);
      return;
    case LinearMode::kInvariant: {
      const auto at = panel_at_.find(w);
      if (at == panel_at_.end()) throw std::logic_error("engine: invariant decode without a panel copy of a weight");
      cpu::PanelGemm(rows, n, k, x, k, w, panels_.data() + at->second, accumulate, y, n);
      return;
    }
  }
}

bool Model::PackForDecode(int64_t version) {
  if (version == panels_version_) return false;
  const ModelConfig& c = cfg_;
  const int h = c.hidden, qd = c.heads * c.head_dim, kd = c.kv_heads * c.head_dim, im = c.intermediate;
  std::vector<std::pair<const float*, std::pair<int, int>>> mats;
  for (int l = 0; l < c.layers; ++l) {
    const LayerView p = View(params_.data(), l);
    mats.push_back({p.wq, {qd, h}});
    mats.push_back({p.wk, {kd, h}});
    mats.push_back({p.wv, {kd, h}});
    mats.push_back({p.wo, {h, qd}});
    mats.push_back({p.wg, {im, h}});
    mats.push_back({p.wu, {im, h}});
    mats.push_back({p.wd, {h, im}});
  }
  mats.push_back({Lm(params_.data()), {c.vocab, h}});
  size_t total = 0;
  panel_at_.clear();
  for (const auto& m : mats) {
    panel_at_[m.first] = total;
    total += (cpu::PanelFloats(m.second.first, m.second.second) + 15) / 16 * 16;  // 64-byte aligned panels
  }
  panels_.Resize(total);
  for (const auto& m : mats)
    cpu::PackPanels(m.first, m.second.first, m.second.second, panels_.data() + panel_at_[m.first]);
  panels_version_ = version;
  return true;
}

void Model::LayerBackward(int layer, const float* x_in, LayerActs& a, float* dres) {
  const ModelConfig& c = cfg_;
  const int h = c.hidden, d = c.head_dim, qd = c.heads * d, kd = c.kv_heads * d, im = c.intermediate;
  const int total = total_;
  const size_t T = static_cast<size_t>(total);
  const LayerView p = View(params_.data(), layer);
  const LayerView gr = View(grads_.data(), layer);
  // MLP: x_out = xmid + down(silu(g) * u).
  act_.Resize(T * im);
  dact_.Resize(T * im);
  float* act = act_.data();
  const float* g = a.g.data();
  const float* u = a.u.data();
  cpu::SwigluForward(g, u, act, T * im);
  Sgemm(true, false, h, im, total, 1.0f, dres, h, act, im, 1.0f, gr.wd, im);
  Sgemm(false, false, total, im, h, 1.0f, dres, h, p.wd, im, 0.0f, dact_.data(), im);
  float* dg = dact_.data();
  float* du = act_.data();
  cpu::SwigluBackward(g, u, dg, du, T * im);
  Sgemm(true, false, im, h, total, 1.0f, dg, im, a.xn2.data(), h, 1.0f, gr.wg, h);
  Sgemm(true, false, im, h, total, 1.0f, du, im, a.xn2.data(), h, 1.0f, gr.wu, h);
  dxn_.Resize(T * h);
  Sgemm(false, false, total, h, im, 1.0f, dg, im, p.wg, h, 0.0f, dxn_.data(), h);
  Sgemm(false, false, total, h, im, 1.0f, du, im, p.wu, h, 1.0f, dxn_.data(), h);
  cpu::RmsNormBackward(a.xmid.data(), p.ln2, a.r2.data(), dxn_.data(), dres, gr.ln2, total, h, true);
  // Attention: xmid = x_in + o_proj(att).
  Sgemm(true, false, h, qd, total, 1.0f, dres, h, a.att.data(), qd, 1.0f, gr.wo, qd);
  ColumnSum(dres, gr.bo, total, h);
  datt_.Resize(T * qd);
  Sgemm(false, false, total, qd, h, 1.0f, dres, h, p.wo, qd, 0.0f, datt_.data(), qd);
  dq_.Resize(T * qd);
  dk_.Resize(T * kd);
  dv_.Resize(T * kd);
  const cpu::AttnShape shape{c.heads, c.kv_heads, d, 1.0f / std::sqrt(static_cast<float>(d))};
  cpu::AttentionBackward(a.q.data(), a.k.data(), a.v.data(), a.att.data(), datt_.data(), a.lse.data(), dq_.data(),
                         dk_.data(), dv_.data(), cu_.data(), num_seqs_, total, shape);
  cpu::Rope(dq_.data(), pos_.data(), total, c.heads, d, qd, rope_cos_.data(), rope_sin_.data(), true);
  cpu::Rope(dk_.data(), pos_.data(), total, c.kv_heads, d, kd, rope_cos_.data(), rope_sin_.data(), true);
  float* dq = dq_.data();
  float* dk = dk_.data();
  if (c.qk_norm) {
    dtmp_.Resize(T * std::max(qd, kd));
    cpu::RmsNormBackward(a.qpre.data(), p.qn, a.rq.data(), dq, dtmp_.data(), gr.qn, total * c.heads, d, false);
    std::memcpy(dq, dtmp_.data(), T * qd * sizeof(float));
    cpu::RmsNormBackward(a.kpre.data(), p.kn, a.rk.data(), dk, dtmp_.data(), gr.kn, total * c.kv_heads, d, false);
    std::memcpy(dk, dtmp_.data(), T * kd * sizeof(float));
  }
  ColumnSum(dq, gr.bq, total, qd);
  ColumnSum(dk, gr.bk, total, kd);
  ColumnSum(dv_.data(), gr.bv, total, kd);
  Sgemm(true, false, qd, h, total, 1.0f, dq, qd, a.xn1.data(), h, 1.0f, gr.wq, h);
  Sgemm(true, false, kd, h, total, 1.0f, dk, kd, a.xn1.data(), h, 1.0f, gr.wk, h);
  Sgemm(true, false, kd, h, total, 1.0f, dv_.data(), kd, a.xn1.data(), h, 1.0f, gr.wv, h);
  Sgemm(false, false, total, h, qd, 1.0f, dq, qd, p.wq, h, 0.0f, dxn_.data(), h);
  Sgemm(false, false, total, h, kd, 1.0f, dk, kd, p.wk, h, 1.0f, dxn_.data(), h);
  Sgemm(false, false, total, h, kd, 1.0f, dv_.data(), kd, p.wv, h, 1.0f, dxn_.data(), h);
  cpu::RmsNormBackward(x_in, p.ln1, a.r1.data(), dxn_.data(), dres, gr.ln1, total, h, true);
}

const float* Model::Forward(const int32_t* tokens, const int32_t* cu, int num_seqs, int total, bool recompute) {
  const ModelConfig& c = cfg_;
  const int h = c.hidden;
  const size_t T = static_cast<size_t>(total);
  total_ = total;
  num_seqs_ = num_seqs;
  recompute_ = recompute;
  tokens_.assign(tokens, tokens + total);
  cu_.assign(cu, cu + num_seqs + 1);
  pos_.resize(T);
  int longest = 0;
  for (int s = 0; s < num_seqs; ++s) {
    longest = std::max(longest, cu[s + 1] - cu[s]);
    for (int t = cu[s]; t < cu[s + 1]; ++t) pos_[t] = t - cu[s];
  }
  EnsureRope(longest + 1);
  xs_.resize(c.layers + 1);
  for (auto& x : xs_) x.Resize(T * h);
  const float* emb = params_.data() + embed_off_;
  for (size_t t = 0; t < T; ++t)
    std::memcpy(xs_[0].data() + t * h, emb + static_cast<size_t>(tokens[t]) * h, h * sizeof(float));
  for (int l = 0; l < c.layers; ++l) {
    LayerForward(l, xs_[l].data(), xs_[l + 1].data(), recompute ? scratch_ : acts_[l], total, nullptr);
  }
  hidden_.Resize(T * h);
  rf_.Resize(T);
  cpu::RmsNormForward(xs_[c.layers].data(), params_.data() + norm_off_, hidden_.data(), rf_.data(), total, h, c.eps);
  return hidden_.data();
}

void Model::Backward(const float* d_hidden, const float* d_lm_head, const LayerDone* done) {
  RequireTraining(training_, "backward");
  const ModelConfig& c = cfg_;
  const int h = c.hidden;
  const size_t T = static_cast<size_t>(total_);
  if (d_lm_head) {
    float* g = Lm(grads_.data());
    const size_t n = static_cast<size_t>(c.vocab) * h;
#pragma omp parallel for schedule(static) if (n > 65536)
    for (size_t i = 0; i < n; ++i) g[i] += d_lm_head[i];
  }
  dres_.Resize(T * h);
  cpu::RmsNormBackward(xs_[c.layers].data(), params_.data() + norm_off_, rf_.data(), d_hidden, dres_.data(),
                       grads_.data() + norm_off_, total_, h, false);
  if (done) (*done)(c.layers);
  for (int l = c.layers - 1; l >= 0; --l) {
    if (recompute_) {
      x_scratch_.Resize(T * h);
      LayerForward(l, xs_[l].data(), x_scratch_.data(), scratch_, total_, nullptr);
    }
    LayerBackward(l, xs_[l].data(), recompute_ ? scratch_ : acts_[l], dres_.data());
    if (done) (*done)(l);
  }
  float* ge = grads_.data() + embed_off_;
  for (size_t t = 0; t < T; ++t) {
    float* row = ge + static_cast<size_t>(tokens_[t]) * h;
    const float* dr = dres_.data() + t * h;
#pragma omp simd
    for (int i = 0; i < h; ++i) row[i] += dr[i];
  }
  if (done) (*done)(-1);
}

double Model::CrossEntropyBackward(const int32_t* targets, float scale, const LayerDone* done) {
  RequireTraining(training_, "crossEntropy");
  const ModelConfig& c = cfg_;
  const int h = c.hidden, vocab = c.vocab;
  const size_t T = static_cast<size_t>(total_);
  std::vector<int> rows;
  for (size_t t = 0; t < T; ++t)
    if (targets[t] >= 0) rows.push_back(static_cast<int>(t));
  Buffer& dh = ce_dh_;
  dh.Resize(T * h);
  dh.Zero();
  const float* w = Lm(params_.data());
  float* gw = Lm(grads_.data());
  // Rows per pass over the lm_head: 512 streams its weight (and gradient) half as often as 256.
  // Any multiple of the SGEMM's 256-long k-block gives the lm_head gradient the same bits (its k is
  // the rows: each 256-row block adds its FMA chain to the gradient in order, in one product or two).
  constexpr int kChunk = 512;
  static_assert(kChunk % cpu::kSgemmKc == 0, "the chunk must be whole k-blocks of the SGEMM");
  constexpr int kLossRows = 256;
  const size_t chunk = std::min<size_t>(kChunk, std::max<size_t>(rows.size(), 1));
  Buffer &hb = ce_h_, &lg = ce_logits_, &dhb = ce_dh_chunk_;
  hb.Resize(chunk * h);
  lg.Resize(chunk * vocab);
  dhb.Resize(chunk * h);
  double loss = 0.0;
  for (size_t r0 = 0; r0 < rows.size(); r0 += kChunk) {
    const int n = static_cast<int>(std::min<size_t>(kChunk, rows.size() - r0));
    for (int i = 0; i < n; ++i)
      std::memcpy(hb.data() + static_cast<size_t>(i) * h, hidden_.data() + static_cast<size_t>(rows[r0 + i]) * h,
                  h * sizeof(float));
    Sgemm(false, true, n, vocab, h, 1.0f, hb.data(), h, w, h, 0.0f, lg.data(), vocab);
    // The loss sums 256 rows at a time, each group's rows split between the threads, as when the
    // chunk was 256 rows: the same double for the same thread count.
    for (int s0 = 0; s0 < n; s0 += kLossRows) {
      const int sn = std::min(kLossRows, n - s0);
      double part = 0.0;
#pragma omp parallel for schedule(static) reduction(+ : part) if (sn * vocab > 65536)
      for (int i = s0; i < s0 + sn; ++i)
        part += static_cast<double>(
            cpu::SoftmaxXentRow(lg.data() + static_cast<size_t>(i) * vocab, vocab, targets[rows[r0 + i]], scale));
      loss += part;
    }
    Sgemm(true, false, vocab, h, n, 1.0f, lg.data(), vocab, hb.data(), h, 1.0f, gw, h);
    Sgemm(false, false, n, h, vocab, 1.0f, lg.data(), vocab, w, h, 0.0f, dhb.data(), h);
    for (int i = 0; i < n; ++i)
      std::memcpy(dh.data() + static_cast<size_t>(rows[r0 + i]) * h, dhb.data() + static_cast<size_t>(i) * h,
                  h * sizeof(float));
  }
  Backward(dh.data(), nullptr, done);
  return loss;
}

void Model::Logits(float* out) {
  Sgemm(false, true, total_, cfg_.vocab, cfg_.hidden, 1.0f, hidden_.data(), cfg_.hidden, Lm(params_.data()),
        cfg_.hidden, 0.0f, out, cfg_.vocab);
}

void Model::ZeroGrad() {
  if (training_) grads_.Zero();
}

double Model::GradNormSquared() const {
  RequireTraining(training_, "gradNorm");
  // Fixed-size blocks summed in order: the same result for any thread count.
  constexpr size_t kBlock = 1 << 16;
  const size_t n = num_params_;
  const size_t blocks = (n + kBlock - 1) / kBlock;
  std::vector<double> part(blocks, 0.0);
  const float* g = grads_.data();
#pragma omp parallel for schedule(static) if (blocks > 4)
  for (size_t b = 0; b < blocks; ++b) {
    double s = 0.0;
    const size_t end = std::min(n, (b + 1) * kBlock);
    for (size_t i = b * kBlock; i < end; ++i) s += static_cast<double>(g[i]) * g[i];
    part[b] = s;
  }
  double total = 0.0;
  for (double s : part) total += s;
  return total;
}

void Model::AdamW(float lr, float beta1, float beta2, float eps, float weight_decay, int64_t step,
                  float grad_scale) {
  RequireTraining(training_, "adamw");
  float* m = adam_m();
  float* v = adam_v();
  float* p = params_.data();
  const float* g = grads_.data();
  const double bc1 = 1.0 - std::pow(static_cast<double>(beta1), static_cast<double>(step));
  const double bc2 = 1.0 - std::pow(static_cast<double>(beta2), static_cast<double>(step));
  const float step_size = static_cast<float>(lr / bc1);
  const float bc2_sqrt = static_cast<float>(std::sqrt(bc2));
  for (const auto& t : tensors_) {
    const float decay = t.decay ? 1.0f - lr * weight_decay : 1.0f;
    cpu::AdamWUpdate(p, m, v, g, t.offset, t.offset + t.numel, grad_scale, beta1, beta2, step_size, bc2_sqrt, eps,
                     decay);
  }
}

std::unique_ptr<KvCache> Model::NewCache() const {
  auto cache = std::make_unique<KvCache>();
  cache->k.resize(cfg_.layers);
  cache->v.resize(cfg_.layers);
  return cache;
}

void Model::Extend(const std::vector<KvCache*>& caches, const int32_t* tokens, const int32_t* counts, float* logits,
                   bool invariant, float* hidden_out) {
  if (invariant && panels_version_ < 0) throw std::logic_error("engine: invariant extend before PackForDecode");
  struct ModeScope {
    LinearMode& mode;
    ~ModeScope() { mode = LinearMode::kTrain; }
  } scope{linear_mode_};
  linear_mode_ = invariant ? LinearMode::kInvariant : LinearMode::kDecode;
  const ModelConfig& c = cfg_;
  const int h = c.hidden, kd = c.kv_heads * c.head_dim;
  const int batch = static_cast<int>(caches.size());
  int total = 0;
  for (int b = 0; b < batch; ++b) total += counts[b];
  const size_t T = static_cast<size_t>(total);
  // seq_of_ holds [sequence of each token | position of each token] for LayerForward's cached mode.
  seq_of_.resize(2 * T);
  int longest = 0;
  for (int b = 0, t = 0; b < batch; ++b) {
    KvCache* cache = caches[b];
    const int need = cache->len + counts[b];
    longest = std::max(longest, need);
    if (need > cache->cap) {
      const int cap = std::max(need, std::max(64, cache->cap * 2));
      for (int l = 0; l < c.layers; ++l) {
        Buffer grown_v(static_cast<size_t>(cap) * kd);
        if (cache->len > 0)
          std::memcpy(grown_v.data(), cache->v[l].data(), static_cast<size_t>(cache->len) * kd * sizeof(float));
        std::swap(cache->v[l], grown_v);
        // Keys are [kd][cap]: each of the kd rows moves to its new stride.
        Buffer grown_k(static_cast<size_t>(cap) * kd);
        for (int i = 0; i < kd && cache->len > 0; ++i) {
          std::memcpy(grown_k.data() + static_cast<size_t>(i) * cap,
                      cache->k[l].data() + static_cast<size_t>(i) * cache->cap, static_cast<size_t>(cache->len) * sizeof(float));
        }
        std::swap(cache->k[l], grown_k);
      }
      cache->cap = cap;
    }
    for (int i = 0; i < counts[b]; ++i, ++t) {
      seq_of_[t] = b;
      seq_of_[T + t] = cache->len + i;
    }
  }
  EnsureRope(longest + 1);
  // Scratch lives in the model (decode calls are many and small: no allocation per step).
  Buffer& x = infer_x_;
  Buffer& y = infer_y_;
  x.Resize(T * h);
  y.Resize(T * h);
  const float* emb = params_.data() + embed_off_;
  for (size_t t = 0; t < T; ++t) {
    std::memcpy(x.data() + t * h, emb + static_cast<size_t>(tokens[t]) * h, h * sizeof(float));
  }
  for (int l = 0; l < c.layers; ++l) {
    LayerForward(l, x.data(), y.data(), infer_acts_, total, &caches);
    std::swap(x, y);
  }
  // Final norm and lm_head only on each sequence's last new token.
  Buffer& last = infer_last_;
  Buffer& normed = infer_normed_;
  Buffer& r = infer_r_;
  last.Resize(static_cast<size_t>(batch) * h);
  normed.Resize(static_cast<size_t>(batch) * h);
  r.Resize(batch);
  for (int b = 0, t = 0; b < batch; ++b) {
    t += counts[b];
    std::memcpy(last.data() + static_cast<size_t>(b) * h, x.data() + static_cast<size_t>(t - 1) * h, h * sizeof(float));
    caches[b]->len += counts[b];
  }
  cpu::RmsNormForward(last.data(), params_.data() + norm_off_, normed.data(), r.data(), batch, h, c.eps);
  Linear(Lm(params_.data()), batch, c.vocab, h, normed.data(), false, logits);
  if (hidden_out) std::memcpy(hidden_out, normed.data(), static_cast<size_t>(batch) * h * sizeof(float));
}

}  // namespace agentrl::engine
