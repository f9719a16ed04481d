// N-API surface of the engine's device backend (`addon.engineGpu`): the same entry points as the
// CPU engine (bindings.cc) plus syncToHost / syncToDevice / sample / policyLoss. A device model is
// a CPU Model (the host mirror: layout, init, the Float32Array views JS sees) plus the device model
// inside agentrl_cuda.so / agentrl_hip.so (engine/cuda/device_model.cu), reached through the C ABI
// of engine/gpu_engine.h. The mirror and the device copy meet only when JS asks (sync*) or at init.
#include <napi.h>

#include <cmath>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "engine/gpu_engine.h"
#include "engine/model.h"
#include "gpu/gpu_library.h"
#include "kernels/metrics_js.h"
#include "parallel/nccl_device.h"
#include "registry.h"

namespace agentrl::engine {
namespace {

struct GpuApi {
  agentrl_engine_create_fn create;
  agentrl_engine_destroy_fn destroy;
  agentrl_engine_copy_fn copy;
  agentrl_engine_forward_fn forward;
  agentrl_engine_backward_fn backward;
  agentrl_engine_cross_entropy_fn cross_entropy;
  agentrl_engine_logits_fn logits;
  agentrl_engine_zero_grad_fn zero_grad;
  agentrl_engine_grad_norm_fn grad_norm;
  agentrl_engine_adamw_fn adamw;
  agentrl_engine_cache_create_fn cache_create;
  agentrl_engine_cache_destroy_fn cache_destroy;
  agentrl_engine_cache_length_fn cache_length;
  agentrl_engine_cache_truncate_fn cache_truncate;
  agentrl_engine_extend_fn extend;
  agentrl_engine_sample_fn sample;
  agentrl_engine_policy_loss_fn policy_loss;
  agentrl_engine_info_fn info;
  agentrl_engine_transfers_fn transfers;
  agentrl_engine_reduce_setup_fn reduce_setup;
  agentrl_engine_reduce_accumulate_fn reduce_accumulate;
  agentrl_engine_reduce_arm_fn reduce_arm;
  agentrl_engine_reduce_finish_fn reduce_finish;
};

gpu::Backend BackendOf(const std::string& device) {
  if (device == "cuda") return gpu::Backend::kCuda;
  if (device == "hip" || device == "rocm") return gpu::Backend::kHip;
  throw std::invalid_argument("device must be cuda or rocm, got " + device);
}

template <typename F>
F Sym(gpu::Backend b, const char* name) {
  return reinterpret_cast<F>(gpu::Symbol(b, name));
}

GpuApi LoadApi(gpu::Backend b) {
  return {Sym<agentrl_engine_create_fn>(b, "agentrl_engine_create"),
          Sym<agentrl_engine_destroy_fn>(b, "agentrl_engine_destroy"),
          Sym<agentrl_engine_copy_fn>(b, "agentrl_engine_copy"),
          Sym<agentrl_engine_forward_fn>(b, "agentrl_engine_forward"),
          Sym<agentrl_engine_backward_fn>(b, "agentrl_engine_backward"),
          Sym<agentrl_engine_cross_entropy_fn>(b, "agentrl_engine_cross_entropy"),
          Sym<agentrl_engine_logits_fn>(b, "agentrl_engine_logits"),
          Sym<agentrl_engine_zero_grad_fn>(b, "agentrl_engine_zero_grad"),
          Sym<agentrl_engine_grad_norm_fn>(b, "agentrl_engine_grad_norm"),
          Sym<agentrl_engine_adamw_fn>(b, "agentrl_engine_adamw"),
          Sym<agentrl_engine_cache_create_fn>(b, "agentrl_engine_cache_create"),
          Sym<agentrl_engine_cache_destroy_fn>(b, "agentrl_engine_cache_destroy"),
          Sym<agentrl_engine_cache_length_fn>(b, "agentrl_engine_cache_length"),
          Sym<agentrl_engine_cache_truncate_fn>(b, "agentrl_engine_cache_truncate"),
          Sym<agentrl_engine_extend_fn>(b, "agentrl_engine_extend"),
          Sym<agentrl_engine_sample_fn>(b, "agentrl_engine_sample"),
          Sym<agentrl_engine_policy_loss_fn>(b, "agentrl_engine_policy_loss"),
          Sym<agentrl_engine_info_fn>(b, "agentrl_engine_info"),
          Sym<agentrl_engine_transfers_fn>(b, "agentrl_engine_transfers"),
          Sym<agentrl_engine_reduce_setup_fn>(b, "agentrl_engine_reduce_setup"),
          Sym<agentrl_engine_reduce_accumulate_fn>(b, "agentrl_engine_reduce_accumulate"),
          Sym<agentrl_engine_reduce_arm_fn>(b, "agentrl_engine_reduce_arm"),
          Sym<agentrl_engine_reduce_finish_fn>(b, "agentrl_engine_reduce_finish")};
}

struct GpuModel {
  GpuApi api;
  std::shared_ptr<Model> host;
  void* dev = nullptr;
  ~GpuModel() {
    if (dev) api.destroy(dev);
  }
};
using GpuPtr = std::shared_ptr<GpuModel>;

struct GpuCache {
  GpuPtr model;
  void* cache = nullptr;
  ~GpuCache() {
    if (cache) model->api.cache_destroy(cache);
  }
};

// Runs one ABI call and turns its error string into a C++ exception.
template <typename F>
void Call(F&& f) {
  char err[512] = {0};
  const int rc = f(err, static_cast<int>(sizeof(err)));
  if (rc == 2) throw std::invalid_argument(err + 8);  // "invalid:" prefix
  if (rc != 0) throw std::runtime_error(err);
}

GpuPtr& GetModel(const Napi::Value& v) {
  if (!v.IsExternal()) throw Napi::TypeError::New(v.Env(), "engine: expected a device model handle");
  return *v.As<Napi::External<GpuPtr>>().Data();
}

GpuCache& GetCache(const Napi::Value& v) {
  if (!v.IsExternal()) throw Napi::TypeError::New(v.Env(), "engine: expected a device KV cache handle");
  return *v.As<Napi::External<GpuCache>>().Data();
}

template <typename T>
Napi::TypedArrayOf<T> Typed(const Napi::Value& v, const char* what) {
  if (!v.IsTypedArray()) throw Napi::TypeError::New(v.Env(), std::string("engine: expected a typed array for ") + what);
  return v.As<Napi::TypedArrayOf<T>>();
}

int GetInt(const Napi::Object& o, const char* key) { return o.Get(key).As<Napi::Number>().Int32Value(); }
double GetNum(const Napi::Object& o, const char* key, double fallback) {
  Napi::Value v = o.Get(key);
  return v.IsNumber() ? v.As<Napi::Number>().DoubleValue() : fallback;
}

// The slot of a layer tensor in AgentrlGpuLayout::layer_offsets, from its HF name.
int SlotOf(const std::string& rest) {
  static const char* kNames[kAgentrlLayerSlots] = {
      "input_layernorm.weight", "self_attn.q_proj.weight", "self_attn.q_proj.bias", "self_attn.k_proj.weight",
      "self_attn.k_proj.bias",  "self_attn.v_proj.weight", "self_attn.v_proj.bias", "self_attn.o_proj.weight",
      "self_attn.o_proj.bias",  "self_attn.q_norm.weight", "self_attn.k_norm.weight",
      "post_attention_layernorm.weight", "mlp.gate_proj.weight", "mlp.up_proj.weight", "mlp.down_proj.weight"};
  for (int i = 0; i < kAgentrlLayerSlots; ++i)
    if (rest == kNames[i]) return i;
  throw std::logic_error("engine: unknown layer tensor " + rest);
}

void Upload(GpuModel& g, int which) {
  float* host = which == 0 ? g.host->params() : which == 1 ? g.host->grads() : which == 2 ? g.host->adam_m()
                                                                                          : g.host->adam_v();
  Call([&](char* e, int n) { return g.api.copy(g.dev, which, host, 1, e, n); });
}

Napi::ArrayBuffer View(Napi::Env env, const GpuPtr& model, float* data, size_t floats) {
  auto* keep = new GpuPtr(model);
  return Napi::ArrayBuffer::New(
      env, data, floats * sizeof(float), [](Napi::Env, void*, GpuPtr* hint) { delete hint; }, keep);
}

Napi::Value CreateModel(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  Napi::Object o = info[0].As<Napi::Object>();
  const gpu::Backend backend = BackendOf(info[1].ToString().Utf8Value());
  ModelConfig c;
  c.vocab = GetInt(o, "vocab");
  c.hidden = GetInt(o, "hidden");
  c.intermediate = GetInt(o, "intermediate");
  c.layers = GetInt(o, "layers");
  c.heads = GetInt(o, "heads");
  c.kv_heads = GetInt(o, "kvHeads");
  c.head_dim = GetInt(o, "headDim");
  c.eps = o.Get("eps").As<Napi::Number>().FloatValue();
  c.rope_theta = o.Get("ropeTheta").As<Napi::Number>().FloatValue();
  c.qk_norm = o.Get("qkNorm").ToBoolean();
  c.qkv_bias = o.Get("qkvBias").ToBoolean();
  c.o_bias = o.Get("oBias").ToBoolean();
  c.tied = o.Get("tied").ToBoolean();
  auto g = std::make_shared<GpuModel>();
  g->api = LoadApi(backend);
  g->host = std::make_shared<Model>(c);
  const auto& tensors = g->host->tensors();
  std::vector<int64_t> layer_off(static_cast<size_t>(c.layers) * kAgentrlLayerSlots, -1), off, numel;
  std::vector<int32_t> decay;
  AgentrlGpuLayout layout{};
  layout.lm = -1;
  for (const TensorInfo& t : tensors) {
    off.push_back(static_cast<int64_t>(t.offset));
    numel.push_back(static_cast<int64_t>(t.numel));
    decay.push_back(t.decay ? 1 : 0);
    if (t.name == "model.embed_tokens.weight") layout.embed = static_cast<int64_t>(t.offset);
    else if (t.name == "model.norm.weight") layout.norm = static_cast<int64_t>(t.offset);
    else if (t.name == "lm_head.weight") layout.lm = static_cast<int64_t>(t.offset);
    else {
      const std::string rest = t.name.substr(std::strlen("model.layers."));
      const size_t dot = rest.find('.');
      const int layer = std::stoi(rest.substr(0, dot));
      layer_off[static_cast<size_t>(layer) * kAgentrlLayerSlots + SlotOf(rest.substr(dot + 1))] =
          static_cast<int64_t>(t.offset);
    }
  }
  layout.config = {c.vocab, c.hidden, c.intermediate, c.layers, c.heads, c.kv_heads, c.head_dim, c.eps,
                   c.rope_theta, c.qk_norm, c.qkv_bias, c.o_bias, c.tied, info[2].ToNumber().Int32Value()};
  layout.num_params = static_cast<int64_t>(g->host->num_params());
  layout.layer_offsets = layer_off.data();
  layout.num_tensors = static_cast<int>(tensors.size());
  layout.tensor_offset = off.data();
  layout.tensor_numel = numel.data();
  layout.tensor_decay = decay.data();
  Call([&](char* e, int n) { return g->api.create(&layout, &g->dev, e, n); });
  Napi::Array ts = Napi::Array::New(env, tensors.size());
  for (size_t i = 0; i < tensors.size(); ++i) {
    Napi::Object to = Napi::Object::New(env);
    to.Set("name", tensors[i].name);
    Napi::Array shape = Napi::Array::New(env, tensors[i].shape.size());
    for (size_t j = 0; j < tensors[i].shape.size(); ++j)
      shape.Set(static_cast<uint32_t>(j), static_cast<double>(tensors[i].shape[j]));
    to.Set("shape", shape);
    to.Set("offset", static_cast<double>(tensors[i].offset));
    to.Set("numel", static_cast<double>(tensors[i].numel));
    ts.Set(static_cast<uint32_t>(i), to);
  }
  Napi::Object out = Napi::Object::New(env);
  out.Set("handle", Napi::External<GpuPtr>::New(env, new GpuPtr(g), [](Napi::Env, GpuPtr* p) { delete p; }));
  out.Set("tensors", ts);
  out.Set("numFloats", static_cast<double>(g->host->num_params()));
  return out;
}

// The host mirror's views. A device model always has gradients (the device allocates them with
// the model), so `training: false` only matters on the CPU.
Napi::Value Buffers(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  GpuPtr& g = GetModel(info[0]);
  Model& m = *g->host;
  Napi::Object out = Napi::Object::New(env);
  out.Set("params", View(env, g, m.params(), m.num_params()));
  out.Set("grads", View(env, g, m.grads(), m.num_params()));
  return out;
}

Napi::Value OptimizerBuffers(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  GpuPtr& g = GetModel(info[0]);
  Model& m = *g->host;
  Napi::Object out = Napi::Object::New(env);
  out.Set("adamM", View(env, g, m.adam_m(), m.num_params()));
  out.Set("adamV", View(env, g, m.adam_v(), m.num_params()));
  return out;
}

Napi::Value EnableTraining(const Napi::CallbackInfo& info) {
  GpuPtr& g = GetModel(info[0]);
  return View(info.Env(), g, g->host->grads(), g->host->num_params());
}

// Device bytes: weights and gradients always, both moments once AdamW ran or the host asked.
Napi::Value MemoryBytes(const Napi::CallbackInfo& info) {
  GpuModel& g = *GetModel(info[0]);
  const double bytes = static_cast<double>(g.host->num_params()) * sizeof(float);
  Napi::Object out = Napi::Object::New(info.Env());
  out.Set("params", bytes);
  out.Set("grads", bytes);
  out.Set("optimizer", g.host->has_optimizer_state() ? 2 * bytes : 0.0);
  return out;
}

// Device -> mirror: parameters, gradients and both AdamW moments.
Napi::Value SyncToHost(const Napi::CallbackInfo& info) {
  GpuModel& g = *GetModel(info[0]);
  float* hosts[4] = {g.host->params(), g.host->grads(), g.host->adam_m(), g.host->adam_v()};
  for (int w = 0; w < 4; ++w) Call([&](char* e, int n) { return g.api.copy(g.dev, w, hosts[w], 0, e, n); });
  return info.Env().Undefined();
}

// Mirror -> device, after JS wrote weights (a checkpoint load) or optimizer state (a resume).
Napi::Value SyncToDevice(const Napi::CallbackInfo& info) {
  GpuModel& g = *GetModel(info[0]);
  for (int w = 0; w < 4; ++w) Upload(g, w);
  return info.Env().Undefined();
}

Napi::Value InitParams(const Napi::CallbackInfo& info) {
  GpuModel& g = *GetModel(info[0]);
  g.host->InitParams(static_cast<uint64_t>(info[1].As<Napi::Number>().Int64Value()),
                     info[2].As<Napi::Number>().FloatValue());
  Upload(g, 0);
  return info.Env().Undefined();
}

// forward(handle, tokens, cu, recompute, download = true): the hidden states [T, H] as a new
// Float32Array, or (download false) undefined with them kept on the device only.
Napi::Value Forward(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  GpuModel& g = *GetModel(info[0]);
  auto tokens = Typed<int32_t>(info[1], "tokenIds");
  auto cu = Typed<int32_t>(info[2], "cuSeqlens");
  const int total = static_cast<int>(tokens.ElementLength());
  const bool download = info.Length() < 5 || info[4].IsUndefined() || info[4].ToBoolean();
  Napi::Float32Array out;
  if (download) out = Napi::Float32Array::New(env, static_cast<size_t>(total) * g.host->config().hidden);
  Call([&](char* e, int n) {
    return g.api.forward(g.dev, tokens.Data(), cu.Data(), static_cast<int>(cu.ElementLength()) - 1, total,
                         info[3].ToBoolean() ? 1 : 0, download ? out.Data() : nullptr, e, n);
  });
  if (!download) return env.Undefined();
  return out;
}

Napi::Value Backward(const Napi::CallbackInfo& info) {
  GpuModel& g = *GetModel(info[0]);
  auto dh = Typed<float>(info[1], "dHidden");
  const float* dlm = info[2].IsTypedArray() ? info[2].As<Napi::Float32Array>().Data() : nullptr;
  Call([&](char* e, int n) { return g.api.backward(g.dev, dh.Data(), dlm, e, n); });
  return info.Env().Undefined();
}

Napi::Value CrossEntropy(const Napi::CallbackInfo& info) {
  GpuModel& g = *GetModel(info[0]);
  auto targets = Typed<int32_t>(info[1], "targets");
  double loss = 0;
  Call([&](char* e, int n) {
    return g.api.cross_entropy(g.dev, targets.Data(), info[2].As<Napi::Number>().FloatValue(), &loss, e, n);
  });
  return Napi::Number::New(info.Env(), loss);
}

Napi::Value Logits(const Napi::CallbackInfo& info) {
  GpuModel& g = *GetModel(info[0]);
  auto out = Typed<float>(info[1], "logits");
  Call([&](char* e, int n) { return g.api.logits(g.dev, out.Data(), e, n); });
  return info.Env().Undefined();
}

Napi::Value ZeroGrad(const Napi::CallbackInfo& info) {
  GpuModel& g = *GetModel(info[0]);
  Call([&](char* e, int n) { return g.api.zero_grad(g.dev, e, n); });
  return info.Env().Undefined();
}

Napi::Value GradNormSquared(const Napi::CallbackInfo& info) {
  GpuModel& g = *GetModel(info[0]);
  double out = 0;
  Call([&](char* e, int n) { return g.api.grad_norm(g.dev, &out, e, n); });
  return Napi::Number::New(info.Env(), out);
}

Napi::Value AdamW(const Napi::CallbackInfo& info) {
  GpuModel& g = *GetModel(info[0]);
  auto f = [&](int i) { return info[i].As<Napi::Number>().FloatValue(); };
  Call([&](char* e, int n) {
    return g.api.adamw(g.dev, f(1), f(2), f(3), f(4), f(5), info[6].As<Napi::Number>().Int64Value(), f(7), e, n);
  });
  return info.Env().Undefined();
}

Napi::Value CreateCache(const Napi::CallbackInfo& info) {
  GpuPtr& g = GetModel(info[0]);
  auto* handle = new GpuCache{g, nullptr};
  Call([&](char* e, int n) { return g->api.cache_create(g->dev, &handle->cache, e, n); });
  return Napi::External<GpuCache>::New(info.Env(), handle, [](Napi::Env, GpuCache* p) { delete p; });
}

Napi::Value CacheLength(const Napi::CallbackInfo& info) {
  GpuCache& c = GetCache(info[0]);
  return Napi::Number::New(info.Env(), c.model->api.cache_length(c.cache));
}

Napi::Value CacheTruncate(const Napi::CallbackInfo& info) {
  GpuCache& c = GetCache(info[0]);
  const int n = info[1].As<Napi::Number>().Int32Value();
  if (n < 0 || n > c.model->api.cache_length(c.cache))
    throw Napi::RangeError::New(info.Env(), "engine: cache truncation out of range");
  c.model->api.cache_truncate(c.cache, n);
  return info.Env().Undefined();
}

Napi::Value Extend(const Napi::CallbackInfo& info) {
  GpuModel& g = *GetModel(info[0]);
  Napi::Array arr = info[1].As<Napi::Array>();
  std::vector<void*> caches(arr.Length());
  for (uint32_t i = 0; i < arr.Length(); ++i) caches[i] = GetCache(arr.Get(i)).cache;
  auto tokens = Typed<int32_t>(info[2], "tokenIds");
  auto counts = Typed<int32_t>(info[3], "counts");
  float* out = info[4].IsTypedArray() ? info[4].As<Napi::Float32Array>().Data() : nullptr;
  Call([&](char* e, int n) {
    return g.api.extend(g.dev, caches.data(), static_cast<int>(caches.size()), tokens.Data(), counts.Data(), out, e,
                        n);
  });
  return info.Env().Undefined();
}

// sample(handle, params) -> Float64Array [rows * 2] of (token, logprob): params is a Float64Array
// [rows * 4] of (temperature, topK, topP, uniform), one row per sequence of the latest extend.
Napi::Value Sample(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  GpuModel& g = *GetModel(info[0]);
  auto params = Typed<double>(info[1], "sampling params");
  if (params.TypedArrayType() != napi_float64_array)
    throw Napi::TypeError::New(env, "engine: sample params must be a Float64Array");
  const size_t len = params.ElementLength();
  if (len == 0 || len % 4 != 0)
    throw Napi::RangeError::New(env, "engine: sample params must hold 4 numbers per row, got " + std::to_string(len));
  const double* p = params.Data();
  for (size_t r = 0; r < len / 4; ++r) {
    const double t = p[r * 4], k = p[r * 4 + 1], top_p = p[r * 4 + 2], u = p[r * 4 + 3];
    if (!(t >= 0) || !(top_p > 0 && top_p <= 1) || !(u >= 0 && u < 1) || !(k >= -2147483647.0 && k <= 2147483647.0) ||
        std::floor(k) != k) {
      throw Napi::RangeError::New(env, "engine: sample row " + std::to_string(r) +
                                           " needs temperature >= 0, an integer topK, topP in (0, 1] and a uniform "
                                           "in [0, 1); got " +
                                           std::to_string(t) + ", " + std::to_string(k) + ", " +
                                           std::to_string(top_p) + ", " + std::to_string(u));
    }
  }
  const int rows = static_cast<int>(len / 4);
  auto out = Napi::Float64Array::New(env, static_cast<size_t>(rows) * 2);
  Call([&](char* e, int n) { return g.api.sample(g.dev, rows, p, out.Data(), e, n); });
  return out;
}

// policyLoss(handle, args): the fused-linear loss on the latest forward, then its backward. args
// holds the config fields and typed arrays of @agentrl/kernels' fusedLinearPolicyLoss (validated in TS).
Napi::Value PolicyLoss(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  GpuModel& g = *GetModel(info[0]);
  Napi::Object o = info[1].As<Napi::Object>();
  Napi::Object co = o.Get("config").As<Napi::Object>();
  AgentrlGpuPolicyLossArgs a{};
  kernels::LossConfig& c = a.config;
  c.temperature = static_cast<float>(GetNum(co, "temperature", 1));
  c.clip_low = static_cast<float>(GetNum(co, "clipLow", 0.2));
  c.clip_high = static_cast<float>(GetNum(co, "clipHigh", 0.28));
  c.dual_clip = static_cast<float>(GetNum(co, "dualClip", 0));
  c.max_log_ratio = static_cast<float>(GetNum(co, "maxLogRatio", 20));
  c.aggregation = static_cast<kernels::Aggregation>(static_cast<int>(GetNum(co, "aggregation", 0)));
  c.sequence_ratio = GetNum(co, "sequenceRatio", 0) != 0;
  c.horizon = GetNum(co, "horizon", 0);
  c.token_count = static_cast<int64_t>(GetNum(co, "tokenCount", -1));
  c.seq_count = static_cast<int64_t>(GetNum(co, "seqCount", -1));
  c.entropy = GetNum(co, "entropy", 0) != 0;
  auto targets = Typed<int32_t>(o.Get("targets"), "targets");
  auto cu = Typed<int32_t>(o.Get("cuSeqlens"), "cuSeqlens");
  a.tokens.T = static_cast<int64_t>(targets.ElementLength());
  a.tokens.targets = targets.Data();
  a.tokens.old_logp = Typed<float>(o.Get("oldLogprobs"), "oldLogprobs").Data();
  a.tokens.adv = Typed<float>(o.Get("advantages"), "advantages").Data();
  a.tokens.mask = Typed<uint8_t>(o.Get("lossMask"), "lossMask").Data();
  a.tokens.S = static_cast<int64_t>(cu.ElementLength()) - 1;
  a.tokens.cu_seqlens = cu.Data();
  auto logp = Typed<float>(o.Get("logp"), "logp");
  a.logp = logp.Data();
  a.entropy = c.entropy ? Typed<float>(o.Get("entropy"), "entropy").Data() : nullptr;
  Call([&](char* e, int n) { return g.api.policy_loss(g.dev, &a, e, n); });
  Napi::Object r = kernels::MetricsToJs(env, a.metrics);
  r.Set("workspaceBytes", static_cast<double>(a.workspace_bytes));
  return r;
}

// gemmPath(device): which matrix-product path the device object takes here.
Napi::Value GemmPath(const Napi::CallbackInfo& info) {
  const gpu::Backend b = BackendOf(info[0].ToString().Utf8Value());
  char out[256] = {0};
  Sym<agentrl_engine_info_fn>(b, "agentrl_engine_info")(out, sizeof(out));
  return Napi::String::New(info.Env(), out);
}

// transfers(device): bytes the device object copied host -> device and device -> host so far, and
// the device allocations it made.
Napi::Value Transfers(const Napi::CallbackInfo& info) {
  const gpu::Backend b = BackendOf(info[0].ToString().Utf8Value());
  int64_t to_device = 0, to_host = 0, allocations = 0;
  Sym<agentrl_engine_transfers_fn>(b, "agentrl_engine_transfers")(&to_device, &to_host, &allocations);
  Napi::Object out = Napi::Object::New(info.Env());
  out.Set("toDevice", static_cast<double>(to_device));
  out.Set("toHost", static_cast<double>(to_host));
  out.Set("allocations", static_cast<double>(allocations));
  return out;
}

// reduceSetup(handle, ncclComm, starts, ends, stages, exact): the data-parallel gradient buckets
// (Float64Array offsets, Int32Array stages; @agentrl/parallel's DeviceGradientAllReduce builds them)
// reduced with that NCCL / RCCL communicator's ncclAllReduce on a side stream.
Napi::Value ReduceSetup(const Napi::CallbackInfo& info) {
  GpuModel& g = *GetModel(info[0]);
  const parallel::NcclDeviceComm nc = parallel::NcclDeviceOf(info[1]);
  auto starts = Typed<double>(info[2], "bucket starts");
  auto ends = Typed<double>(info[3], "bucket ends");
  auto stages = Typed<int32_t>(info[4], "bucket stages");
  if (starts.TypedArrayType() != napi_float64_array || ends.TypedArrayType() != napi_float64_array ||
      stages.TypedArrayType() != napi_int32_array)
    throw Napi::TypeError::New(info.Env(), "engine: reduceSetup takes Float64Array starts and ends, Int32Array stages");
  const size_t nb = starts.ElementLength();
  if (ends.ElementLength() != nb || stages.ElementLength() != nb || nb == 0 || nb > (1u << 30))
    throw Napi::RangeError::New(info.Env(), "engine: reduceSetup needs as many bucket ends and stages as starts");
  std::vector<int64_t> st(nb), en(nb);
  for (size_t b = 0; b < nb; ++b) {
    st[b] = static_cast<int64_t>(starts[b]);
    en[b] = static_cast<int64_t>(ends[b]);
  }
  AgentrlGpuReduce spec{};
  spec.all_reduce = reinterpret_cast<agentrl_nccl_allreduce_fn>(nc.all_reduce);
  spec.comm = nc.comm;
  spec.exact = info[5].ToBoolean() ? 1 : 0;
  spec.num_buckets = static_cast<int>(nb);
  spec.start = st.data();
  spec.end = en.data();
  spec.stage = stages.Data();
  Call([&](char* e, int n) { return g.api.reduce_setup(g.dev, &spec, e, n); });
  return info.Env().Undefined();
}

Napi::Value ReduceAccumulate(const Napi::CallbackInfo& info) {
  GpuModel& g = *GetModel(info[0]);
  Call([&](char* e, int n) { return g.api.reduce_accumulate(g.dev, e, n); });
  return info.Env().Undefined();
}

Napi::Value ReduceArm(const Napi::CallbackInfo& info) {
  GpuModel& g = *GetModel(info[0]);
  Call([&](char* e, int n) { return g.api.reduce_arm(g.dev, e, n); });
  return info.Env().Undefined();
}

// reduceFinish(handle) -> the number of buckets the backward had started.
Napi::Value ReduceFinish(const Napi::CallbackInfo& info) {
  GpuModel& g = *GetModel(info[0]);
  int started = 0;
  Call([&](char* e, int n) { return g.api.reduce_finish(g.dev, &started, e, n); });
  return Napi::Number::New(info.Env(), started);
}

// setDevice(device, index) -> the devices visible; index >= 0 makes that one current (this thread).
Napi::Value SetDevice(const Napi::CallbackInfo& info) {
  const gpu::Backend b = BackendOf(info[0].ToString().Utf8Value());
  const int index = info[1].As<Napi::Number>().Int32Value();
  int count = 0;
  Call([&](char* e, int n) {
    return Sym<agentrl_engine_set_device_fn>(b, "agentrl_engine_set_device")(index, &count, e, n);
  });
  return Napi::Number::New(info.Env(), count);
}

Napi::Value SetThreads(const Napi::CallbackInfo& info) { return Napi::Number::New(info.Env(), 1); }

template <Napi::Value (*F)(const Napi::CallbackInfo&)>
Napi::Value Guard(const Napi::CallbackInfo& info) {
  try {
    return F(info);
  } catch (const Napi::Error&) {
    throw;
  } catch (const std::exception& e) {
    throw Napi::Error::New(info.Env(), std::string("engine: ") + e.what());
  }
}

void InitEngineGpu(Napi::Env env, Napi::Object exports) {
  auto fn = [&](const char* name, Napi::Function f) { exports.Set(name, f); };
  fn("createModel", Napi::Function::New(env, Guard<CreateModel>, "createModel"));
  fn("buffers", Napi::Function::New(env, Guard<Buffers>, "buffers"));
  fn("optimizerBuffers", Napi::Function::New(env, Guard<OptimizerBuffers>, "optimizerBuffers"));
  fn("enableTraining", Napi::Function::New(env, Guard<EnableTraining>, "enableTraining"));
  fn("memoryBytes", Napi::Function::New(env, Guard<MemoryBytes>, "memoryBytes"));
  fn("syncToHost", Napi::Function::New(env, Guard<SyncToHost>, "syncToHost"));
  fn("syncToDevice", Napi::Function::New(env, Guard<SyncToDevice>, "syncToDevice"));
  fn("initParams", Napi::Function::New(env, Guard<InitParams>, "initParams"));
  fn("forward", Napi::Function::New(env, Guard<Forward>, "forward"));
  fn("backward", Napi::Function::New(env, Guard<Backward>, "backward"));
  fn("crossEntropy", Napi::Function::New(env, Guard<CrossEntropy>, "crossEntropy"));
  fn("logits", Napi::Function::New(env, Guard<Logits>, "logits"));
  fn("zeroGrad", Napi::Function::New(env, Guard<ZeroGrad>, "zeroGrad"));
  fn("gradNormSquared", Napi::Function::New(env, Guard<GradNormSquared>, "gradNormSquared"));
  fn("adamw", Napi::Function::New(env, Guard<AdamW>, "adamw"));
  fn("createCache", Napi::Function::New(env, Guard<CreateCache>, "createCache"));
  fn("cacheLength", Napi::Function::New(env, Guard<CacheLength>, "cacheLength"));
  fn("cacheTruncate", Napi::Function::New(env, Guard<CacheTruncate>, "cacheTruncate"));
  fn("extend", Napi::Function::New(env, Guard<Extend>, "extend"));
  fn("sample", Napi::Function::New(env, Guard<Sample>, "sample"));
  fn("policyLoss", Napi::Function::New(env, Guard<PolicyLoss>, "policyLoss"));
  fn("gemmPath", Napi::Function::New(env, Guard<GemmPath>, "gemmPath"));
  fn("transfers", Napi::Function::New(env, Guard<Transfers>, "transfers"));
  fn("setThreads", Napi::Function::New(env, Guard<SetThreads>, "setThreads"));
  fn("reduceSetup", Napi::Function::New(env, Guard<ReduceSetup>, "reduceSetup"));
  fn("reduceAccumulate", Napi::Function::New(env, Guard<ReduceAccumulate>, "reduceAccumulate"));
  fn("reduceArm", Napi::Function::New(env, Guard<ReduceArm>, "reduceArm"));
  fn("reduceFinish", Napi::Function::New(env, Guard<ReduceFinish>, "reduceFinish"));
  fn("setDevice", Napi::Function::New(env, Guard<SetDevice>, "setDevice"));
}

}  // namespace

AGENTRL_REGISTER_MODULE(engineGpu, InitEngineGpu);

}  // namespace agentrl::engine
