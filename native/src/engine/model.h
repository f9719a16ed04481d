// The decoder-only transformer (Llama / Qwen2 / Qwen3 family) held by the engine: one flat fp32
// parameter buffer (HF tensor names, 64-byte aligned offsets), a gradient buffer of the same layout,
// AdamW moments, and the activations of the latest training forward.
//
// Device boundary: everything a backend must provide is the set of kernels in cpu/ (GEMM, norms,
// RoPE, attention) plus the Buffer type below. A CUDA/HIP backend supplies device Buffers and the
// same kernels; the N-API surface (bindings.cc) and the TS API do not change.
#pragma once
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

namespace agentrl::engine {

struct ModelConfig {
  int vocab = 0, hidden = 0, intermediate = 0, layers = 0, heads = 0, kv_heads = 0, head_dim = 0;
  float eps = 1e-6f, rope_theta = 10000.0f;
  bool qk_norm = false, qkv_bias = false, o_bias = false, tied = false;
};

// A 64-byte aligned host array that only grows; the unit a device backend would replace.
class Buffer {
 public:
  Buffer() = default;
  explicit Buffer(size_t n) { Resize(n); }
  ~Buffer();
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;
  Buffer(Buffer&& o) noexcept : data_(o.data_), size_(o.size_), capacity_(o.capacity_) {
    o.data_ = nullptr;
    o.size_ = o.capacity_ = 0;
  }
  Buffer& operator=(Buffer&& o) noexcept {
    std::swap(data_, o.data_);
    std::swap(size_, o.size_);
    std::swap(capacity_, o.capacity_);
    return *this;
  }
  void Resize(size_t n);  // keeps nothing; contents are undefined after a growth
  void Zero();
  float* data() const { return data_; }
  size_t size() const { return size_; }

 private:
  float* data_ = nullptr;
  size_t size_ = 0, capacity_ = 0;
};

struct TensorInfo {
  std::string name;
  std::vector<int64_t> shape;
  size_t offset = 0, numel = 0;
  bool decay = false;  // AdamW weight decay applies to matrices and embeddings, not norms or biases
};

constexpr size_t kAbsent = static_cast<size_t>(-1);

struct LayerOffsets {
  size_t ln1, wq, bq, wk, bk, wv, bv, wo, bo, qn, kn, ln2, wg, wu, wd;
};

// Pointers of one layer's tensors inside a flat buffer (params or grads); nullptr when absent.
struct LayerView {
  float *ln1, *wq, *bq, *wk, *bk, *wv, *bv, *wo, *bo, *qn, *kn, *ln2, *wg, *wu, *wd;
};

struct LayerActs {
  Buffer xn1, r1, qpre, kpre, rq, rk, q, k, v, att, lse, xmid, xn2, r2, g, u;
};

struct KvCache {
  int len = 0, cap = 0;
  std::vector<Buffer> k, v;  // per layer: k transposed [kv_heads * head_dim][cap], v [cap][kv_heads * head_dim]
};

// Called by Backward as gradients become final (see Model::Backward).
using LayerDone = std::function<void(int stage)>;

class Model {
 public:
  // `training` false: no gradient buffer (eval, serving); EnableTraining() adds it later. The AdamW
  // moments are allocated on first use (adam_m / AdamW), never for a model nobody optimises.
  explicit Model(const ModelConfig& cfg, bool training = true);
  const ModelConfig& config() const { return cfg_; }
  const std::vector<TensorInfo>& tensors() const { return tensors_; }
  size_t num_params() const { return num_params_; }
  float* params() const { return params_.data(); }
  float* grads() const { return grads_.data(); }
  float* adam_m();
  float* adam_v();
  bool training() const { return training_; }
  bool has_optimizer_state() const { return adam_ready_; }
  void EnableTraining();
  // Tokens of the latest training Forward (0 before the first): what Backward / Logits will read.
  int forward_tokens() const { return total_; }

  void InitParams(uint64_t seed, float stddev);
  // Training forward over a packed batch; keeps what the backward needs. Returns hidden [T, H].
  const float* Forward(const int32_t* tokens, const int32_t* cu, int num_seqs, int total, bool recompute);
  // Accumulates gradients from dHidden (and an optional lm_head gradient) through every layer.
  // `done` (optional) is told each time a group of gradients is final for this backward, last layer
  // first: `layers` once the final norm (and an untied lm_head) are, then each layer l, then -1 once
  // the embedding is. What data-parallel training needs to start reducing a bucket early.
  void Backward(const float* d_hidden, const float* d_lm_head, const LayerDone* done = nullptr);
  // Masked next-token cross-entropy on the latest Forward: targets[t] < 0 are ignored; gradients are
  // scaled by `scale` and accumulated (lm_head and the whole stack). Returns the unscaled loss sum.
  double CrossEntropyBackward(const int32_t* targets, float scale, const LayerDone* done = nullptr);
  // logits [T, V] of the latest Forward.
  void Logits(float* out);
  void ZeroGrad();
  double GradNormSquared() const;
  void AdamW(float lr, float beta1, float beta2, float eps, float weight_decay, int64_t step, float grad_scale);

  // Appends counts[b] tokens to caches[b] and returns the logits of each sequence's last new token [B, V].
  // With `invariant`, every product runs on the weights' panel copy (see PackForDecode and
  // cpu/panel_gemm.h): a token's logits are then bit-identical whatever else shares the call, and
  // equal to the training forward's. Without it, small batches take the faster-to-write but
  // batch-dependent dot-product GEMM path.
  // `hidden_out` (optional, [B, H]) receives the final-normed hidden state the logits came from.
  void Extend(const std::vector<KvCache*>& caches, const int32_t* tokens, const int32_t* counts, float* logits,
              bool invariant = false, float* hidden_out = nullptr);
  // Packs every matrix into the panel layout of invariant Extend unless the copy already holds
  // weights version `version` (the caller's count of weight changes). Returns whether it packed.
  bool PackForDecode(int64_t version);
  // Bytes of the panel copy (0 before the first PackForDecode).
  size_t PanelBytes() const { return panels_.size() * sizeof(float); }
  std::unique_ptr<KvCache> NewCache() const;

 private:
  LayerView View(float* base, int layer) const;
  float* Lm(float* base) const { return base + (cfg_.tied ? embed_off_ : lm_off_); }
  void EnsureRope(int positions);
  void LayerForward(int layer, const float* x_in, float* x_out, LayerActs& a, int total,
                    const std::vector<KvCache*>* caches);
  void LayerBackward(int layer, const float* x_in, LayerActs& a, float* dres);
  // y[rows, n] = x[rows, k] w^T (+ y when accumulate), w stored [n, k]: the one place that picks the
  // GEMM of the current mode (training, decode, invariant decode).
  void Linear(const float* w, int rows, int n, int k, const float* x, bool accumulate, float* y);

  ModelConfig cfg_;
  std::vector<TensorInfo> tensors_;
  std::vector<LayerOffsets> layer_off_;
  size_t embed_off_ = 0, norm_off_ = 0, lm_off_ = kAbsent, num_params_ = 0;
  Buffer params_, grads_, m_, v_;
  bool adam_ready_ = false, training_ = false;

  // Activations of the latest training forward.
  int total_ = 0, num_seqs_ = 0;
  bool recompute_ = false;
  std::vector<int32_t> tokens_, cu_, pos_, seq_of_;
  std::vector<Buffer> xs_;  // xs_[l]: input of layer l; xs_[L]: output of the last layer
  std::vector<LayerActs> acts_;
  LayerActs scratch_;
  Buffer hidden_, rf_, act_, dact_, dxn_, dres_, datt_, dq_, dk_, dv_, dtmp_, x_scratch_;
  // Scratch of CrossEntropyBackward, kept between calls: its logits chunk alone is 256 x vocab floats
  // (155 MB at 151,936), whose page faults and zeroing a fresh allocation paid on every call.
  Buffer ce_dh_, ce_h_, ce_logits_, ce_dh_chunk_;
  Buffer rope_cos_, rope_sin_;
  // Scratch of Extend (inference), separate from the training activations.
  LayerActs infer_acts_;
  Buffer infer_x_, infer_y_, infer_last_, infer_normed_, infer_r_;
  int rope_len_ = 0;
  // Panel copies of the weights for invariant Extend, and the mode LayerForward's products run in.
  enum class LinearMode { kTrain, kDecode, kInvariant };
  LinearMode linear_mode_ = LinearMode::kTrain;
  Buffer panels_;
  std::unordered_map<const float*, size_t> panel_at_;
  int64_t panels_version_ = -1;
};

}  // namespace agentrl::engine
