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

#include "engine/engine_args.h"
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
  throw BadArgument("device must be cuda or rocm, got " + device);
}

std::string DeviceName(const Napi::Value& v) {
  if (!v.IsString()) throw BadArgument("device must be the string cuda or rocm");
  return v.As<Napi::String>().Utf8Value();
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
  int64_t forward_tokens = 0;  // T of the latest forward (0 before any): what backward and the losses take
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

// Type tags tell a device model handle from a device cache handle, and both from the CPU engine's.
constexpr napi_type_tag kGpuModelTag = {0x6167656e74726c47ULL, 0x5f2a91c3d4e60b03ULL};
constexpr napi_type_tag kGpuCacheTag = {0x6167656e74726c4bULL, 0x71c08e2f9ab34d04ULL};

GpuPtr& GetModel(const Napi::Value& v) { return Handle<BadArgument, GpuPtr>(v, kGpuModelTag, "a device model handle"); }

GpuCache& GetCache(const Napi::Value& v) {
  return Handle<BadArgument, GpuCache>(v, kGpuCacheTag, "a device KV cache handle");
}

// A numeric option of the loss config: finite when present, `fallback` when absent.
double GetNum(const Napi::Object& o, const char* key, double fallback) {
  Napi::Value v = o.Get(key);
  return v.IsUndefined() ? fallback : Number(v, key);
}

int64_t RequireForward(const GpuModel& g, const char* what) {
  if (g.forward_tokens <= 0) throw BadArgument(std::string(what) + " needs a forward first");
  return g.forward_tokens;
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

// createModel(config, device, precision: 0 fp32 | 1 bf16): the arguments are checked before the device object is
// loaded, so a bad call fails the same way on a machine without a GPU.
Napi::Value CreateModel(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  const ModelConfig c = ConfigFromJs(info[0]);
  const gpu::Backend backend = BackendOf(DeviceName(info[1]));
  const int precision = static_cast<int>(Integer(info[2], "precision", 0, 1));
  auto host = std::make_shared<Model>(c);
  auto g = std::make_shared<GpuModel>();
  g->api = LoadApi(backend);
  g->host = host;
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
                   c.rope_theta, c.qk_norm, c.qkv_bias, c.o_bias, c.tied, precision};
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
  auto handle = Napi::External<GpuPtr>::New(env, new GpuPtr(g), [](Napi::Env, GpuPtr* p) { delete p; });
  handle.TypeTag(&kGpuModelTag);
  out.Set("handle", handle);
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
  const int64_t seed = Integer(info[1], "seed", 0, (1LL << 53));
  const double std = Number(info[2], "std");
  if (std < 0) throw BadArgument("std must be >= 0");
  g.host->InitParams(static_cast<uint64_t>(seed), static_cast<float>(std));
  Upload(g, 0);
  return info.Env().Undefined();
}

// forward(handle, tokens, cu, recompute, download = true): the hidden states [T, H] as a new
// Float32Array, or (download false) undefined with them kept on the device only.
Napi::Value Forward(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  auto tokens = Typed<int32_t>(info[1], "tokenIds");
  auto cu = Typed<int32_t>(info[2], "cuSeqlens");
  CheckPackedBatch(tokens, cu);
  GpuModel& g = *GetModel(info[0]);
  CheckTokens(tokens.Data(), tokens.ElementLength(), g.host->config().vocab, "tokenIds");
  const int total = static_cast<int>(tokens.ElementLength());
  const bool download = info.Length() < 5 || info[4].IsUndefined() || info[4].ToBoolean();
  Napi::Float32Array out;
  if (download) out = Napi::Float32Array::New(env, static_cast<size_t>(total) * g.host->config().hidden);
  Call([&](char* e, int n) {
    return g.api.forward(g.dev, tokens.Data(), cu.Data(), static_cast<int>(cu.ElementLength()) - 1, total,
                         info[3].ToBoolean() ? 1 : 0, download ? out.Data() : nullptr, e, n);
  });
  g.forward_tokens = total;
  if (!download) return env.Undefined();
  return out;
}

Napi::Value Backward(const Napi::CallbackInfo& info) {
  Typed<float>(info[1], "dHidden");
  GpuModel& g = *GetModel(info[0]);
  const ModelConfig& c = g.host->config();
  auto dh = Typed<float>(info[1], "dHidden", RequireForward(g, "backward") * c.hidden);
  const float* dlm = nullptr;
  if (!info[2].IsUndefined()) dlm = Typed<float>(info[2], "dLmHead", static_cast<int64_t>(c.vocab) * c.hidden).Data();
  Call([&](char* e, int n) { return g.api.backward(g.dev, dh.Data(), dlm, e, n); });
  return info.Env().Undefined();
}

Napi::Value CrossEntropy(const Napi::CallbackInfo& info) {
  Typed<int32_t>(info[1], "targets");
  const double scale = Number(info[2], "scale");
  GpuModel& g = *GetModel(info[0]);
  auto targets = Typed<int32_t>(info[1], "targets", RequireForward(g, "crossEntropy"));
  CheckTokens(targets.Data(), targets.ElementLength(), g.host->config().vocab, "targets");
  double loss = 0;
  Call([&](char* e, int n) {
    return g.api.cross_entropy(g.dev, targets.Data(), static_cast<float>(scale), &loss, e, n);
  });
  return Napi::Number::New(info.Env(), loss);
}

Napi::Value Logits(const Napi::CallbackInfo& info) {
  Typed<float>(info[1], "logits");
  GpuModel& g = *GetModel(info[0]);
  auto out = Typed<float>(info[1], "logits", RequireForward(g, "logits") * g.host->config().vocab);
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
  const AdamWArgs a = AdamWFromJs(info);
  GpuModel& g = *GetModel(info[0]);
  Call([&](char* e, int n) {
    return g.api.adamw(g.dev, a.lr, a.beta1, a.beta2, a.eps, a.weight_decay, a.step, a.grad_scale, e, n);
  });
  return info.Env().Undefined();
}

Napi::Value CreateCache(const Napi::CallbackInfo& info) {
  GpuPtr& g = GetModel(info[0]);
  auto* handle = new GpuCache{g, nullptr};
  Call([&](char* e, int n) { return g->api.cache_create(g->dev, &handle->cache, e, n); });
  auto out = Napi::External<GpuCache>::New(info.Env(), handle, [](Napi::Env, GpuCache* p) { delete p; });
  out.TypeTag(&kGpuCacheTag);
  return out;
}

Napi::Value CacheLength(const Napi::CallbackInfo& info) {
  GpuCache& c = GetCache(info[0]);
  return Napi::Number::New(info.Env(), c.model->api.cache_length(c.cache));
}

Napi::Value CacheTruncate(const Napi::CallbackInfo& info) {
  GpuCache& c = GetCache(info[0]);
  const int n = static_cast<int>(Integer(info[1], "length", 0, c.model->api.cache_length(c.cache)));
  c.model->api.cache_truncate(c.cache, n);
  return info.Env().Undefined();
}

Napi::Value Extend(const Napi::CallbackInfo& info) {
  auto tokens = Typed<int32_t>(info[2], "tokenIds");
  GpuPtr& model = GetModel(info[0]);
  GpuModel& g = *model;
  if (!info[1].IsArray()) throw BadArgument("caches must be an array of device KV cache handles");
  Napi::Array arr = info[1].As<Napi::Array>();
  const uint32_t batch = arr.Length();
  if (batch < 1) throw BadArgument("caches must hold at least one device KV cache handle");
  std::vector<void*> caches(batch);
  for (uint32_t i = 0; i < batch; ++i) {
    GpuCache& h = GetCache(arr.Get(i));
    if (h.model.get() != model.get()) throw BadArgument("caches[" + std::to_string(i) + "] belongs to another model");
    for (uint32_t j = 0; j < i; ++j)
      if (caches[j] == h.cache) throw BadArgument("caches[" + std::to_string(i) + "] appears twice");
    caches[i] = h.cache;
  }
  auto counts = Typed<int32_t>(info[3], "counts", batch);
  int64_t sum = 0;
  for (uint32_t b = 0; b < batch; ++b) {
    if (counts[b] < 1) throw BadArgument("counts[" + std::to_string(b) + "] is " + std::to_string(counts[b]) + ", must be >= 1");
    sum += counts[b];
  }
  if (sum != static_cast<int64_t>(tokens.ElementLength())) {
    throw BadArgument("counts sum to " + std::to_string(sum) + " but tokenIds has " +
                      std::to_string(tokens.ElementLength()) + " tokens");
  }
  CheckTokens(tokens.Data(), tokens.ElementLength(), g.host->config().vocab, "tokenIds");
  // The logits are optional on the device (sampling can stay there): undefined skips the download.
  float* out = info[4].IsUndefined() || info[4].IsNull()
                   ? nullptr
                   : Typed<float>(info[4], "logits", static_cast<int64_t>(batch) * g.host->config().vocab).Data();
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
  auto params = Typed<double>(info[1], "sampling params");
  const size_t len = params.ElementLength();
  if (len == 0 || len % 4 != 0)
    throw BadArgument("sample params must hold 4 numbers per row, got " + std::to_string(len));
  const double* p = params.Data();
  for (size_t r = 0; r < len / 4; ++r) {
    const double t = p[r * 4], k = p[r * 4 + 1], top_p = p[r * 4 + 2], u = p[r * 4 + 3];
    if (!(t >= 0) || !(top_p > 0 && top_p <= 1) || !(u >= 0 && u < 1) || !(k >= -2147483647.0 && k <= 2147483647.0) ||
        std::floor(k) != k) {
      throw BadArgument("sample row " + std::to_string(r) +
                                           " needs temperature >= 0, an integer topK, topP in (0, 1] and a uniform "
                                           "in [0, 1); got " +
                                           std::to_string(t) + ", " + std::to_string(k) + ", " +
                                           std::to_string(top_p) + ", " + std::to_string(u));
    }
  }
  GpuModel& g = *GetModel(info[0]);
  const int rows = static_cast<int>(len / 4);
  auto out = Napi::Float64Array::New(env, static_cast<size_t>(rows) * 2);
  Call([&](char* e, int n) { return g.api.sample(g.dev, rows, p, out.Data(), e, n); });
  return out;
}

// policyLoss(handle, args): the fused-linear loss on the latest forward, then its backward. args
// holds the config fields and typed arrays of @agentrl/kernels' fusedLinearPolicyLoss (validated in TS).
Napi::Value PolicyLoss(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  if (!info[1].IsObject() || !info[1].As<Napi::Object>().Get("config").IsObject())
    throw BadArgument("policyLoss takes (handle, { config, targets, ... })");
  Napi::Object o = info[1].As<Napi::Object>();
  Napi::Object co = o.Get("config").As<Napi::Object>();
  // Element types first (no device needed), then the lengths of the latest forward.
  auto targets = Typed<int32_t>(o.Get("targets"), "targets");
  auto cu = Typed<int32_t>(o.Get("cuSeqlens"), "cuSeqlens");
  auto old_logp = Typed<float>(o.Get("oldLogprobs"), "oldLogprobs");
  auto adv = Typed<float>(o.Get("advantages"), "advantages");
  auto mask = Typed<uint8_t>(o.Get("lossMask"), "lossMask");
  auto logp = Typed<float>(o.Get("logp"), "logp");
  GpuModel& g = *GetModel(info[0]);
  const int64_t T = RequireForward(g, "policyLoss");
  AgentrlGpuPolicyLossArgs a{};
  kernels::LossConfig& c = a.config;
  c.temperature = static_cast<float>(GetNum(co, "temperature", 1));
  c.clip_low = static_cast<float>(GetNum(co, "clipLow", 0.2));
  c.clip_high = static_cast<float>(GetNum(co, "clipHigh", 0.28));
  c.dual_clip = static_cast<float>(GetNum(co, "dualClip", 0));
  c.max_log_ratio = static_cast<float>(GetNum(co, "maxLogRatio", 20));
  // Integers are range-checked before the casts (a NaN or huge double cast to an integer is UB).
  auto integer = [&](const char* key, int64_t fallback, int64_t lo, int64_t hi) {
    const Napi::Value v = co.Get(key);
    return v.IsUndefined() ? fallback : Integer(v, key, lo, hi);
  };
  c.aggregation = static_cast<kernels::Aggregation>(integer("aggregation", 0, 0, 3));
  c.sequence_ratio = GetNum(co, "sequenceRatio", 0) != 0;
  c.horizon = GetNum(co, "horizon", 0);
  c.token_count = integer("tokenCount", -1, -1, 1LL << 53);
  c.seq_count = integer("seqCount", -1, -1, 1LL << 53);
  c.entropy = GetNum(co, "entropy", 0) != 0;
  Typed<int32_t>(o.Get("targets"), "targets", T);
  CheckPackedBatch(targets, cu);
  CheckTokens(targets.Data(), targets.ElementLength(), g.host->config().vocab, "targets");
  Typed<float>(o.Get("oldLogprobs"), "oldLogprobs", T);
  Typed<float>(o.Get("advantages"), "advantages", T);
  Typed<uint8_t>(o.Get("lossMask"), "lossMask", T);
  Typed<float>(o.Get("logp"), "logp", T);
  a.tokens.T = T;
  a.tokens.targets = targets.Data();
  a.tokens.old_logp = old_logp.Data();
  a.tokens.adv = adv.Data();
  a.tokens.mask = mask.Data();
  a.tokens.S = static_cast<int64_t>(cu.ElementLength()) - 1;
  a.tokens.cu_seqlens = cu.Data();
  a.logp = logp.Data();
  a.entropy = c.entropy ? Typed<float>(o.Get("entropy"), "entropy", T).Data() : nullptr;
  Call([&](char* e, int n) { return g.api.policy_loss(g.dev, &a, e, n); });
  Napi::Object r = kernels::MetricsToJs(env, a.metrics);
  r.Set("workspaceBytes", static_cast<double>(a.workspace_bytes));
  return r;
}

// gemmPath(device): which matrix-product path the device object takes here.
Napi::Value GemmPath(const Napi::CallbackInfo& info) {
  const gpu::Backend b = BackendOf(DeviceName(info[0]));
  char out[256] = {0};
  Sym<agentrl_engine_info_fn>(b, "agentrl_engine_info")(out, sizeof(out));
  return Napi::String::New(info.Env(), out);
}

// transfers(device): bytes the device object copied host -> device and device -> host so far, and
// the device allocations it made.
Napi::Value Transfers(const Napi::CallbackInfo& info) {
  const gpu::Backend b = BackendOf(DeviceName(info[0]));
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
  auto starts = Typed<double>(info[2], "bucket starts");
  const size_t nb = starts.ElementLength();
  if (nb == 0 || nb > (1u << 30)) throw BadArgument("reduceSetup needs 1 to 2^30 buckets");
  auto ends = Typed<double>(info[3], "bucket ends", static_cast<int64_t>(nb));
  auto stages = Typed<int32_t>(info[4], "bucket stages", static_cast<int64_t>(nb));
  GpuModel& g = *GetModel(info[0]);
  const parallel::NcclDeviceComm nc = parallel::NcclDeviceOf(info[1]);
  const double floats = static_cast<double>(g.host->num_params());
  std::vector<int64_t> st(nb), en(nb);
  for (size_t b = 0; b < nb; ++b) {
    // Offsets into the gradient buffer: integers with 0 <= start < end <= its length, before any cast.
    if (!(starts[b] >= 0 && starts[b] < ends[b] && ends[b] <= floats) || starts[b] != std::floor(starts[b]) ||
        ends[b] != std::floor(ends[b])) {
      throw BadArgument("bucket " + std::to_string(b) + " [" + std::to_string(starts[b]) + ", " +
                        std::to_string(ends[b]) + ") is not an integer range inside the " +
                        std::to_string(g.host->num_params()) + " gradients");
    }
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
  const gpu::Backend b = BackendOf(DeviceName(info[0]));
  const int index = static_cast<int>(Integer(info[1], "device index", -1, 65535));
  int count = 0;
  Call([&](char* e, int n) {
    return Sym<agentrl_engine_set_device_fn>(b, "agentrl_engine_set_device")(index, &count, e, n);
  });
  return Napi::Number::New(info.Env(), count);
}

Napi::Value SetThreads(const Napi::CallbackInfo& info) { return Napi::Number::New(info.Env(), 1); }

void InitEngineGpu(Napi::Env env, Napi::Object exports) {
  auto fn = [&](const char* name, Napi::Function f) { exports.Set(name, f); };
  fn("createModel", Napi::Function::New(env, Guard<kEngineCodes, CreateModel>, "createModel"));
  fn("buffers", Napi::Function::New(env, Guard<kEngineCodes, Buffers>, "buffers"));
  fn("optimizerBuffers", Napi::Function::New(env, Guard<kEngineCodes, OptimizerBuffers>, "optimizerBuffers"));
  fn("enableTraining", Napi::Function::New(env, Guard<kEngineCodes, EnableTraining>, "enableTraining"));
  fn("memoryBytes", Napi::Function::New(env, Guard<kEngineCodes, MemoryBytes>, "memoryBytes"));
  fn("syncToHost", Napi::Function::New(env, Guard<kEngineCodes, SyncToHost>, "syncToHost"));
  fn("syncToDevice", Napi::Function::New(env, Guard<kEngineCodes, SyncToDevice>, "syncToDevice"));
  fn("initParams", Napi::Function::New(env, Guard<kEngineCodes, InitParams>, "initParams"));
  fn("forward", Napi::Function::New(env, Guard<kEngineCodes, Forward>, "forward"));
  fn("backward", Napi::Function::New(env, Guard<kEngineCodes, Backward>, "backward"));
  fn("crossEntropy", Napi::Function::New(env, Guard<kEngineCodes, CrossEntropy>, "crossEntropy"));
  fn("logits", Napi::Function::New(env, Guard<kEngineCodes, Logits>, "logits"));
  fn("zeroGrad", Napi::Function::New(env, Guard<kEngineCodes, ZeroGrad>, "zeroGrad"));
  fn("gradNormSquared", Napi::Function::New(env, Guard<kEngineCodes, GradNormSquared>, "gradNormSquared"));
  fn("adamw", Napi::Function::New(env, Guard<kEngineCodes, AdamW>, "adamw"));
  fn("createCache", Napi::Function::New(env, Guard<kEngineCodes, CreateCache>, "createCache"));
  fn("cacheLength", Napi::Function::New(env, Guard<kEngineCodes, CacheLength>, "cacheLength"));
  fn("cacheTruncate", Napi::Function::New(env, Guard<kEngineCodes, CacheTruncate>, "cacheTruncate"));
  fn("extend", Napi::Function::New(env, Guard<kEngineCodes, Extend>, "extend"));
  fn("sample", Napi::Function::New(env, Guard<kEngineCodes, Sample>, "sample"));
  fn("policyLoss", Napi::Function::New(env, Guard<kEngineCodes, PolicyLoss>, "policyLoss"));
  fn("gemmPath", Napi::Function::New(env, Guard<kEngineCodes, GemmPath>, "gemmPath"));
  fn("transfers", Napi::Function::New(env, Guard<kEngineCodes, Transfers>, "transfers"));
  fn("setThreads", Napi::Function::New(env, Guard<kEngineCodes, SetThreads>, "setThreads"));
  fn("reduceSetup", Napi::Function::New(env, Guard<kEngineCodes, ReduceSetup>, "reduceSetup"));
  fn("reduceAccumulate", Napi::Function::New(env, Guard<kEngineCodes, ReduceAccumulate>, "reduceAccumulate"));
  fn("reduceArm", Napi::Function::New(env, Guard<kEngineCodes, ReduceArm>, "reduceArm"));
  fn("reduceFinish", Napi::Function::New(env, Guard<kEngineCodes, ReduceFinish>, "reduceFinish"));
  fn("setDevice", Napi::Function::New(env, Guard<kEngineCodes, SetDevice>, "setDevice"));
}

}  // namespace

AGENTRL_REGISTER_MODULE(engineGpu, InitEngineGpu);

}  // namespace agentrl::engine
