// N-API surface of the engine: a model handle (External) plus typed-array entry points. Arguments
// are validated in TS (packages/engine/src/native.ts) before they get here; these checks only keep
// a wrong call from corrupting memory. Every entry point turns C++ exceptions into JS errors.
#include <napi.h>

#include <memory>
#include <string>

#include "engine/model.h"
#include "registry.h"

#if defined(AGENTRL_HAVE_OPENMP)
#include <omp.h>
#endif

namespace agentrl::engine {

void InitEngineBench(Napi::Env env, Napi::Object exports);  // bench.cc

namespace {

using ModelPtr = std::shared_ptr<Model>;

struct CacheHandle {
  ModelPtr model;
  std::unique_ptr<KvCache> cache;
};

ModelPtr& GetModel(const Napi::Value& v) {
  if (!v.IsExternal()) throw Napi::TypeError::New(v.Env(), "engine: expected a model handle");
  return *v.As<Napi::External<ModelPtr>>().Data();
}

CacheHandle& GetCache(const Napi::Value& v) {
  if (!v.IsExternal()) throw Napi::TypeError::New(v.Env(), "engine: expected a KV cache handle");
  return *v.As<Napi::External<CacheHandle>>().Data();
}

template <typename T>
Napi::TypedArrayOf<T> Typed(const Napi::Value& v, const char* what) {
  if (!v.IsTypedArray()) throw Napi::TypeError::New(v.Env(), std::string("engine: expected a typed array for ") + what);
  return v.As<Napi::TypedArrayOf<T>>();
}

int GetInt(const Napi::Object& o, const char* key) { return o.Get(key).As<Napi::Number>().Int32Value(); }

// Wraps model-owned memory in an ArrayBuffer that keeps the model alive while JS holds a view.
Napi::ArrayBuffer View(Napi::Env env, const ModelPtr& model, float* data, size_t floats) {
  auto* keep = new ModelPtr(model);
  return Napi::ArrayBuffer::New(
      env, data, floats * sizeof(float), [](Napi::Env, void*, ModelPtr* hint) { delete hint; }, keep);
}

Napi::Value CreateModel(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  Napi::Object o = info[0].As<Napi::Object>();
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
  auto model = std::make_shared<Model>(c);
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
  Napi::Object out = Napi::Object::New(env);
  out.Set("handle", Napi::External<ModelPtr>::New(env, new ModelPtr(model), [](Napi::Env, ModelPtr* p) { delete p; }));
  out.Set("tensors", tensors);
  out.Set("numFloats", static_cast<double>(model->num_params()));
  return out;
}

Napi::Value Buffers(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  ModelPtr& m = GetModel(info[0]);
  Napi::Object out = Napi::Object::New(env);
  out.Set("params", View(env, m, m->params(), m->num_params()));
  out.Set("grads", View(env, m, m->grads(), m->num_params()));
  out.Set("adamM", View(env, m, m->adam_m(), m->num_params()));
  out.Set("adamV", View(env, m, m->adam_v(), m->num_params()));
  return out;
}

Napi::Value InitParams(const Napi::CallbackInfo& info) {
  GetModel(info[0])->InitParams(static_cast<uint64_t>(info[1].As<Napi::Number>().Int64Value()),
                                info[2].As<Napi::Number>().FloatValue());
  return info.Env().Undefined();
}

Napi::Value Forward(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  ModelPtr& m = GetModel(info[0]);
  auto tokens = Typed<int32_t>(info[1], "tokenIds");
  auto cu = Typed<int32_t>(info[2], "cuSeqlens");
  const bool recompute = info[3].ToBoolean();
  const int total = static_cast<int>(tokens.ElementLength());
  const float* hidden = m->Forward(tokens.Data(), cu.Data(), static_cast<int>(cu.ElementLength()) - 1, total, recompute);
  const size_t n = static_cast<size_t>(total) * m->config().hidden;
  auto out = Napi::Float32Array::New(env, n);
  std::memcpy(out.Data(), hidden, n * sizeof(float));
  return out;
}

Napi::Value Backward(const Napi::CallbackInfo& info) {
  ModelPtr& m = GetModel(info[0]);
  auto dh = Typed<float>(info[1], "dHidden");
  const float* dlm = info[2].IsTypedArray() ? info[2].As<Napi::Float32Array>().Data() : nullptr;
  m->Backward(dh.Data(), dlm);
  return info.Env().Undefined();
}

Napi::Value CrossEntropy(const Napi::CallbackInfo& info) {
  ModelPtr& m = GetModel(info[0]);
  auto targets = Typed<int32_t>(info[1], "targets");
  return Napi::Number::New(info.Env(), m->CrossEntropyBackward(targets.Data(), info[2].As<Napi::Number>().FloatValue()));
}

Napi::Value Logits(const Napi::CallbackInfo& info) {
  ModelPtr& m = GetModel(info[0]);
  auto out = Typed<float>(info[1], "logits");
  m->Logits(out.Data());
  return info.Env().Undefined();
}

Napi::Value ZeroGrad(const Napi::CallbackInfo& info) {
  GetModel(info[0])->ZeroGrad();
  return info.Env().Undefined();
}

Napi::Value GradNormSquared(const Napi::CallbackInfo& info) {
  return Napi::Number::New(info.Env(), GetModel(info[0])->GradNormSquared());
}

Napi::Value AdamW(const Napi::CallbackInfo& info) {
  auto f = [&](int i) { return info[i].As<Napi::Number>().FloatValue(); };
  GetModel(info[0])->AdamW(f(1), f(2), f(3), f(4), f(5), info[6].As<Napi::Number>().Int64Value(), f(7));
  return info.Env().Undefined();
}

Napi::Value CreateCache(const Napi::CallbackInfo& info) {
  ModelPtr& m = GetModel(info[0]);
  auto* handle = new CacheHandle{m, m->NewCache()};
  return Napi::External<CacheHandle>::New(info.Env(), handle, [](Napi::Env, CacheHandle* p) { delete p; });
}

Napi::Value CacheLength(const Napi::CallbackInfo& info) {
  return Napi::Number::New(info.Env(), GetCache(info[0]).cache->len);
}

Napi::Value CacheTruncate(const Napi::CallbackInfo& info) {
  CacheHandle& c = GetCache(info[0]);
  const int n = info[1].As<Napi::Number>().Int32Value();
  if (n < 0 || n > c.cache->len) throw Napi::RangeError::New(info.Env(), "engine: cache truncation out of range");
  c.cache->len = n;
  return info.Env().Undefined();
}

Napi::Value Extend(const Napi::CallbackInfo& info) {
  ModelPtr& m = GetModel(info[0]);
  Napi::Array arr = info[1].As<Napi::Array>();
  std::vector<KvCache*> caches(arr.Length());
  for (uint32_t i = 0; i < arr.Length(); ++i) caches[i] = GetCache(arr.Get(i)).cache.get();
  auto tokens = Typed<int32_t>(info[2], "tokenIds");
  auto counts = Typed<int32_t>(info[3], "counts");
  auto out = Typed<float>(info[4], "logits");
  m->Extend(caches, tokens.Data(), counts.Data(), out.Data());
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
#if defined(AGENTRL_HAVE_OPENMP)
  const int n = info[0].As<Napi::Number>().Int32Value();
  if (n > 0) omp_set_num_threads(n);
  return Napi::Number::New(info.Env(), omp_get_max_threads());
#else
  return Napi::Number::New(info.Env(), 1);
#endif
}

// Wraps an entry point so C++ exceptions surface as JS errors with the engine's message.
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

void InitEngine(Napi::Env env, Napi::Object exports) {
  exports.Set("createModel", Napi::Function::New(env, Guard<CreateModel>, "createModel"));
  exports.Set("buffers", Napi::Function::New(env, Guard<Buffers>, "buffers"));
  exports.Set("initParams", Napi::Function::New(env, Guard<InitParams>, "initParams"));
  exports.Set("forward", Napi::Function::New(env, Guard<Forward>, "forward"));
  exports.Set("backward", Napi::Function::New(env, Guard<Backward>, "backward"));
  exports.Set("crossEntropy", Napi::Function::New(env, Guard<CrossEntropy>, "crossEntropy"));
  exports.Set("logits", Napi::Function::New(env, Guard<Logits>, "logits"));
  exports.Set("zeroGrad", Napi::Function::New(env, Guard<ZeroGrad>, "zeroGrad"));
  exports.Set("gradNormSquared", Napi::Function::New(env, Guard<GradNormSquared>, "gradNormSquared"));
  exports.Set("adamw", Napi::Function::New(env, Guard<AdamW>, "adamw"));
  exports.Set("createCache", Napi::Function::New(env, Guard<CreateCache>, "createCache"));
  exports.Set("cacheLength", Napi::Function::New(env, Guard<CacheLength>, "cacheLength"));
  exports.Set("cacheTruncate", Napi::Function::New(env, Guard<CacheTruncate>, "cacheTruncate"));
  exports.Set("extend", Napi::Function::New(env, Guard<Extend>, "extend"));
  exports.Set("extendInvariant", Napi::Function::New(env, Guard<ExtendInvariant>, "extendInvariant"));
  exports.Set("packForDecode", Napi::Function::New(env, Guard<PackForDecode>, "packForDecode"));
  exports.Set("setThreads", Napi::Function::New(env, Guard<SetThreads>, "setThreads"));
  exports.Set("backend", Napi::String::New(env, "cpu"));
  InitEngineBench(env, exports);
}

}  // namespace

AGENTRL_REGISTER_MODULE(engine, InitEngine);

}  // namespace agentrl::engine
