// N-API surface of the engine: model and KV-cache handles (type-tagged Externals) plus typed-array
// entry points. The TS layer (packages/engine/src) checks arguments first for friendlier messages;
// this file is the guard: every handle kind, element type, length, count and number is checked here,
// so no call from JS can read or write out of bounds. Errors carry a `code`: ENGINE_INVALID_ARGUMENT
// for a bad call, ENGINE_NATIVE_FAILURE for anything else (out of memory, ...).
#include <napi.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <memory>
#include <new>
#include <optional>
#include <stdexcept>
#include <string>
#include <unordered_set>

#include "engine/model.h"
#include "engine/engine_args.h"
#include "registry.h"

#if defined(AGENTRL_HAVE_OPENMP)
#include <omp.h>
#endif

namespace agentrl::engine {

void InitEngineBench(Napi::Env env, Napi::Object exports);    // bench.cc
void InitEngineSampler(Napi::Env env, Napi::Object exports);  // sampler_bindings.cc

namespace {

using ModelPtr = std::shared_ptr<Model>;

struct CacheHandle {
  ModelPtr model;
  std::unique_ptr<KvCache> cache;
};

// Type tags tell a model handle from a cache handle (both Externals) and from any other External.
constexpr napi_type_tag kModelTag = {0x6167656e74726c4dULL, 0x8d1c2f3a5b6e7d01ULL};
constexpr napi_type_tag kCacheTag = {0x6167656e74726c43ULL, 0x3b9e44c1a07f5d02ULL};

ModelPtr& GetModel(const Napi::Value& v) { return Handle<BadArgument, ModelPtr>(v, kModelTag, "a model handle"); }
CacheHandle& GetCache(const Napi::Value& v) {
  return Handle<BadArgument, CacheHandle>(v, kCacheTag, "a KV cache handle");
}

// Wraps model-owned memory in an ArrayBuffer that keeps the model alive while JS holds a view.
Napi::ArrayBuffer View(Napi::Env env, const ModelPtr& model, float* data, size_t floats) {
  auto* keep = new ModelPtr(model);
  return Napi::ArrayBuffer::New(
      env, data, floats * sizeof(float), [](Napi::Env, void*, ModelPtr* hint) { delete hint; }, keep);
}

Napi::Value CreateModel(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  ModelConfig c = ConfigFromJs(info[0]);
  Napi::Object o = info[0].As<Napi::Object>();
  const Napi::Value training = o.Get("training");
  auto model = std::make_shared<Model>(c, training.IsUndefined() ? true : training.ToBoolean().Value());
  Napi::Array tensors = Napi::Array::New(env, model->tensors().size());
  for (size_t i = 0; i < model->tensors().size(); ++i) {
    const TensorInfo& t = model->tensors()[i];
    Napi::Object to = Napi::Object::New(env);
    to.Set("name", t.name);
    Napi::Array shape = Napi::Array::New(env, t.shape.size());
    for (size_t j = 0; j < t.shape.size(); ++j) shape.Set(static_cast<uint32_t>(j), static_cast<double>(t.shape[j]));
    to.Set("shape", shape);
    to.Set("offset", static_cast<double>(t.offset));
    to.Set("numel", static_cast<double>(t.numel));
    tensors.Set(static_cast<uint32_t>(i), to);
  }
  auto handle = Napi::External<ModelPtr>::New(env, new ModelPtr(model), [](Napi::Env, ModelPtr* p) { delete p; });
  handle.TypeTag(&kModelTag);
  Napi::Object out = Napi::Object::New(env);
  out.Set("handle", handle);
  out.Set("tensors", tensors);
  out.Set("numFloats", static_cast<double>(model->num_params()));
  return out;
}

// params always; grads only while the model trains (undefined otherwise).
Napi::Value Buffers(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  ModelPtr& m = GetModel(info[0]);
  Napi::Object out = Napi::Object::New(env);
  out.Set("params", View(env, m, m->params(), m->num_params()));
  out.Set("grads", m->training() ? View(env, m, m->grads(), m->num_params()) : env.Undefined());
  return out;
}

Napi::Value EnableTraining(const Napi::CallbackInfo& info) {
  ModelPtr& m = GetModel(info[0]);
  m->EnableTraining();
  return View(info.Env(), m, m->grads(), m->num_params());
}

// The AdamW moments, allocated (zeroed) on the first call.
Napi::Value OptimizerBuffers(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  ModelPtr& m = GetModel(info[0]);
  if (!m->training()) throw BadArgument("optimizer state needs a training model (training: false has no gradients)");
  Napi::Object out = Napi::Object::New(env);
  out.Set("adamM", View(env, m, m->adam_m(), m->num_params()));
  out.Set("adamV", View(env, m, m->adam_v(), m->num_params()));
  return out;
}

// Bytes the model holds per kind: what an eval/serving model saves by not training.
Napi::Value MemoryBytes(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  ModelPtr& m = GetModel(info[0]);
  const double p = static_cast<double>(m->num_params()) * sizeof(float);
  Napi::Object out = Napi::Object::New(env);
  out.Set("params", p);
  out.Set("grads", m->training() ? p : 0.0);
  out.Set("optimizer", m->has_optimizer_state() ? 2 * p : 0.0);
  return out;
}

Napi::Value InitParams(const Napi::CallbackInfo& info) {
  ModelPtr& m = GetModel(info[0]);
  const int64_t seed = Integer(info[1], "seed", 0, (1LL << 53));
  const double std = Number(info[2], "std");
  if (std < 0) throw BadArgument("std must be >= 0");
  m->InitParams(static_cast<uint64_t>(seed), static_cast<float>(std));
  return info.Env().Undefined();
}

Napi::Value Forward(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  ModelPtr& m = GetModel(info[0]);
  auto tokens = Typed<int32_t>(info[1], "tokenIds");
  auto cu_array = Typed<int32_t>(info[2], "cuSeqlens");
  const int32_t* cu = cu_array.Data();
  const bool recompute = info[3].ToBoolean();
  CheckPackedBatch(tokens, cu_array);
  const size_t total = tokens.ElementLength();
  const size_t ncu = cu_array.ElementLength();
  CheckTokens(tokens.Data(), total, m->config().vocab, "tokenIds");
  const float* hidden = m->Forward(tokens.Data(), cu, static_cast<int>(ncu) - 1, static_cast<int>(total), recompute);
  const size_t n = total * m->config().hidden;
  auto out = Napi::Float32Array::New(env, n);
  std::memcpy(out.Data(), hidden, n * sizeof(float));
  return out;
}

int64_t RequireForward(const Model& m, const char* what) {
  if (m.forward_tokens() <= 0) throw BadArgument(std::string(what) + " needs a forward first");
  return m.forward_tokens();
}

void RequireTraining(const Model& m, const char* what) {
  if (!m.training()) {
    throw BadArgument(std::string(what) + " needs gradients, but this model was opened with training: false");
  }
}

// The optional `onGradientsDone(stage)` callback of backward / crossEntropy (see Model::Backward),
// called synchronously on this thread between layers; what it throws ends the backward.
std::optional<LayerDone> LayerDoneHook(const Napi::Value& v, const char* what) {
  if (v.IsUndefined() || v.IsNull()) return std::nullopt;
  if (!v.IsFunction()) throw BadArgument(std::string(what) + " must be a function (stage) => void or undefined");
  Napi::Function fn = v.As<Napi::Function>();
  Napi::Env env = v.Env();
  return LayerDone([fn, env](int stage) { fn.Call({Napi::Number::New(env, stage)}); });
}

Napi::Value Backward(const Napi::CallbackInfo& info) {
  ModelPtr& m = GetModel(info[0]);
  RequireTraining(*m, "backward");
  const int64_t T = RequireForward(*m, "backward");
  const ModelConfig& c = m->config();
  auto dh = Typed<float>(info[1], "dHidden", T * c.hidden);
  const float* dlm = nullptr;
  if (!info[2].IsUndefined() && !info[2].IsNull()) {
    dlm = Typed<float>(info[2], "dLmHead", static_cast<int64_t>(c.vocab) * c.hidden).Data();
  }
  const auto done = LayerDoneHook(info[3], "onGradientsDone");
  m->Backward(dh.Data(), dlm, done ? &*done : nullptr);
  return info.Env().Undefined();
}

Napi::Value CrossEntropy(const Napi::CallbackInfo& info) {
  ModelPtr& m = GetModel(info[0]);
  RequireTraining(*m, "crossEntropy");
  const int64_t T = RequireForward(*m, "crossEntropy");
  const int32_t* targets = Typed<int32_t>(info[1], "targets", T).Data();
  const int vocab = m->config().vocab;
  for (int64_t t = 0; t < T; ++t) {
    if (targets[t] >= vocab) {
      throw BadArgument("targets[" + std::to_string(t) + "] is " + std::to_string(targets[t]) +
                        ", outside the vocabulary [0, " + std::to_string(vocab) + ") (negative = ignored)");
    }
  }
  const double scale = Number(info[2], "scale");
  const auto done = LayerDoneHook(info[3], "onGradientsDone");
  return Napi::Number::New(info.Env(),
                           m->CrossEntropyBackward(targets, static_cast<float>(scale), done ? &*done : nullptr));
}

Napi::Value Logits(const Napi::CallbackInfo& info) {
  ModelPtr& m = GetModel(info[0]);
  const int64_t T = RequireForward(*m, "logits");
  auto out = Typed<float>(info[1], "logits", T * m->config().vocab);
  m->Logits(out.Data());
  return info.Env().Undefined();
}

Napi::Value ZeroGrad(const Napi::CallbackInfo& info) {
  GetModel(info[0])->ZeroGrad();
  return info.Env().Undefined();
}

Napi::Value GradNormSquared(const Napi::CallbackInfo& info) {
  ModelPtr& m = GetModel(info[0]);
  RequireTraining(*m, "gradNormSquared");
  return Napi::Number::New(info.Env(), m->GradNormSquared());
}

Napi::Value AdamW(const Napi::CallbackInfo& info) {
  ModelPtr& m = GetModel(info[0]);
  RequireTraining(*m, "adamw");
  const AdamWArgs a = AdamWFromJs(info);
  m->AdamW(a.lr, a.beta1, a.beta2, a.eps, a.weight_decay, a.step, a.grad_scale);
  return info.Env().Undefined();
}

Napi::Value CreateCache(const Napi::CallbackInfo& info) {
  ModelPtr& m = GetModel(info[0]);
  auto* handle = new CacheHandle{m, m->NewCache()};
  auto out = Napi::External<CacheHandle>::New(info.Env(), handle, [](Napi::Env, CacheHandle* p) { delete p; });
  out.TypeTag(&kCacheTag);
  return out;
}

Napi::Value CacheLength(const Napi::CallbackInfo& info) {
  return Napi::Number::New(info.Env(), GetCache(info[0]).cache->len);
}

Napi::Value CacheTruncate(const Napi::CallbackInfo& info) {
  CacheHandle& c = GetCache(info[0]);
  c.cache->len = static_cast<int>(Integer(info[1], "length", 0, c.cache->len));
  return info.Env().Undefined();
}

Napi::Value Extend(const Napi::CallbackInfo& info) {
  ModelPtr& m = GetModel(info[0]);
  if (!info[1].IsArray()) throw BadArgument("caches must be an array of KV cache handles");
  Napi::Array arr = info[1].As<Napi::Array>();
  const uint32_t batch = arr.Length();
  if (batch < 1) throw BadArgument("caches must hold at least one KV cache handle");
  std::vector<KvCache*> caches(batch);
  std::unordered_set<KvCache*> seen;
  for (uint32_t i = 0; i < batch; ++i) {
    CacheHandle& h = GetCache(arr.Get(i));
    if (h.model.get() != m.get()) throw BadArgument("caches[" + std::to_string(i) + "] belongs to another model");
    if (!seen.insert(h.cache.get()).second) throw BadArgument("caches[" + std::to_string(i) + "] appears twice");
    caches[i] = h.cache.get();
  }
  auto tokens = Typed<int32_t>(info[2], "tokenIds");
  const int32_t* counts = Typed<int32_t>(info[3], "counts", batch).Data();
  int64_t sum = 0;
  for (uint32_t b = 0; b < batch; ++b) {
    // A zero count would make the last-token row of that sequence the previous sequence's (or row -1).
    if (counts[b] < 1) throw BadArgument("counts[" + std::to_string(b) + "] is " + std::to_string(counts[b]) + ", must be >= 1");
    if (static_cast<int64_t>(caches[b]->len) + counts[b] > kIntMax) throw BadArgument("a KV cache would exceed 2^31-1 tokens");
    sum += counts[b];
  }
  if (sum != static_cast<int64_t>(tokens.ElementLength())) {
    throw BadArgument("counts sum to " + std::to_string(sum) + " but tokenIds has " +
                      std::to_string(tokens.ElementLength()) + " tokens");
  }
  CheckTokens(tokens.Data(), tokens.ElementLength(), m->config().vocab, "tokenIds");
  auto out = Typed<float>(info[4], "logits", static_cast<int64_t>(batch) * m->config().vocab);
  m->Extend(caches, tokens.Data(), counts, out.Data());
  return info.Env().Undefined();
}

// extendInvariant(model, caches, tokenIds, counts, logits[, hidden]): Extend on the panel copy of the
// weights (packForDecode first); `hidden` receives each row's final-normed hidden state. Checks every argument itself, since a wrong length here would write past
// the logits or read past the tokens.
Napi::Value ExtendInvariant(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  if ((info.Length() != 5 && info.Length() != 6) || !info[1].IsArray())
    throw Napi::TypeError::New(env, "engine: extendInvariant(model, caches[], tokenIds, counts, logits[, hidden])");
  ModelPtr& m = GetModel(info[0]);
  Napi::Array arr = info[1].As<Napi::Array>();
  std::vector<KvCache*> caches(arr.Length());
  for (uint32_t i = 0; i < arr.Length(); ++i) {
    CacheHandle& h = GetCache(arr.Get(i));
    if (h.model != m) throw Napi::TypeError::New(env, "engine: extendInvariant got a KV cache of another model");
    caches[i] = h.cache.get();
  }
  auto tokens = Typed<int32_t>(info[2], "tokenIds");
  auto counts = Typed<int32_t>(info[3], "counts");
  auto out = Typed<float>(info[4], "logits");
  if (tokens.TypedArrayType() != napi_int32_array || counts.TypedArrayType() != napi_int32_array ||
      out.TypedArrayType() != napi_float32_array)
    throw Napi::TypeError::New(env, "engine: extendInvariant needs Int32Array tokenIds and counts, Float32Array logits");
  if (counts.ElementLength() != caches.size() || caches.empty())
    throw Napi::RangeError::New(env, "engine: extendInvariant needs one count per cache (and at least one cache)");
  size_t total = 0;
  for (size_t b = 0; b < caches.size(); ++b) {
    if (counts[b] <= 0) throw Napi::RangeError::New(env, "engine: extendInvariant counts must be positive");
    total += static_cast<size_t>(counts[b]);
  }
  const int vocab = m->config().vocab;
  if (tokens.ElementLength() != total)
    throw Napi::RangeError::New(env, "engine: extendInvariant tokenIds length is not the sum of counts");
  for (size_t t = 0; t < total; ++t)
    if (tokens[t] < 0 || tokens[t] >= vocab) throw Napi::RangeError::New(env, "engine: token id outside the vocabulary");
  if (out.ElementLength() != caches.size() * static_cast<size_t>(vocab))
    throw Napi::RangeError::New(env, "engine: extendInvariant logits must hold caches.length * vocab floats");
  float* hidden = nullptr;
  if (info.Length() == 6 && !info[5].IsUndefined()) {
    auto h = Typed<float>(info[5], "hidden");
    if (h.TypedArrayType() != napi_float32_array ||
        h.ElementLength() != caches.size() * static_cast<size_t>(m->config().hidden))
      throw Napi::RangeError::New(env, "engine: extendInvariant hidden must be a Float32Array of caches.length * hidden");
    hidden = h.Data();
  }
  m->Extend(caches, tokens.Data(), counts.Data(), out.Data(), true, hidden);
  return env.Undefined();
}

// packForDecode(model, weightsVersion) -> whether it (re)packed the panel copy of the weights.
Napi::Value PackForDecode(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  ModelPtr& m = GetModel(info[0]);
  if (info.Length() < 2 || !info[1].IsNumber())
    throw Napi::TypeError::New(env, "engine: packForDecode(model, weightsVersion: number)");
  const double v = info[1].As<Napi::Number>().DoubleValue();
  if (!(v >= 0) || v != static_cast<double>(static_cast<int64_t>(v)) || v > 9007199254740991.0)
    throw Napi::RangeError::New(env, "engine: packForDecode weightsVersion must be a non-negative integer");
  return Napi::Boolean::New(env, m->PackForDecode(static_cast<int64_t>(v)));
}

Napi::Value SetThreads(const Napi::CallbackInfo& info) {
  const int n = static_cast<int>(Integer(info[0], "threads", 0, 4096));
#if defined(AGENTRL_HAVE_OPENMP)
  if (n > 0) omp_set_num_threads(n);
  return Napi::Number::New(info.Env(), omp_get_max_threads());
#else
  (void)n;
  return Napi::Number::New(info.Env(), 1);
#endif
}

void InitEngine(Napi::Env env, Napi::Object exports) {
  exports.Set("createModel", Napi::Function::New(env, Guard<kEngineCodes, CreateModel>, "createModel"));
  exports.Set("buffers", Napi::Function::New(env, Guard<kEngineCodes, Buffers>, "buffers"));
  exports.Set("enableTraining", Napi::Function::New(env, Guard<kEngineCodes, EnableTraining>, "enableTraining"));
  exports.Set("optimizerBuffers", Napi::Function::New(env, Guard<kEngineCodes, OptimizerBuffers>, "optimizerBuffers"));
  exports.Set("memoryBytes", Napi::Function::New(env, Guard<kEngineCodes, MemoryBytes>, "memoryBytes"));
  exports.Set("initParams", Napi::Function::New(env, Guard<kEngineCodes, InitParams>, "initParams"));
  exports.Set("forward", Napi::Function::New(env, Guard<kEngineCodes, Forward>, "forward"));
  exports.Set("backward", Napi::Function::New(env, Guard<kEngineCodes, Backward>, "backward"));
  exports.Set("crossEntropy", Napi::Function::New(env, Guard<kEngineCodes, CrossEntropy>, "crossEntropy"));
  exports.Set("logits", Napi::Function::New(env, Guard<kEngineCodes, Logits>, "logits"));
  exports.Set("zeroGrad", Napi::Function::New(env, Guard<kEngineCodes, ZeroGrad>, "zeroGrad"));
  exports.Set("gradNormSquared", Napi::Function::New(env, Guard<kEngineCodes, GradNormSquared>, "gradNormSquared"));
  exports.Set("adamw", Napi::Function::New(env, Guard<kEngineCodes, AdamW>, "adamw"));
  exports.Set("createCache", Napi::Function::New(env, Guard<kEngineCodes, CreateCache>, "createCache"));
  exports.Set("cacheLength", Napi::Function::New(env, Guard<kEngineCodes, CacheLength>, "cacheLength"));
  exports.Set("cacheTruncate", Napi::Function::New(env, Guard<kEngineCodes, CacheTruncate>, "cacheTruncate"));
  exports.Set("extend", Napi::Function::New(env, Guard<kEngineCodes, Extend>, "extend"));
  exports.Set("extendInvariant", Napi::Function::New(env, Guard<kEngineCodes, ExtendInvariant>, "extendInvariant"));
  exports.Set("packForDecode", Napi::Function::New(env, Guard<kEngineCodes, PackForDecode>, "packForDecode"));
  exports.Set("setThreads", Napi::Function::New(env, Guard<kEngineCodes, SetThreads>, "setThreads"));
  exports.Set("backend", Napi::String::New(env, "cpu"));
  InitEngineBench(env, exports);
  InitEngineSampler(env, exports);
}

}  // namespace

AGENTRL_REGISTER_MODULE(engine, InitEngine);

}  // namespace agentrl::engine
