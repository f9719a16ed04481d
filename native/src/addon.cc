#include <napi.h>

#include "gpu/gpu_library.h"
#include "registry.h"

#ifndef AGENTRL_BUILT_BACKENDS
#define AGENTRL_BUILT_BACKENDS "cpu"
#endif

namespace {

// `modules()` lists the registered components, so the TS loader can say what was compiled in.
Napi::Value Modules(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  auto& entries = agentrl::Registry();
  Napi::Array out = Napi::Array::New(env, entries.size());
  for (size_t i = 0; i < entries.size(); ++i) out.Set(static_cast<uint32_t>(i), entries[i].name);
  return out;
}

// `backends()`: what was compiled in and what can run here. Loading a GPU object probes its runtime,
// which can take a moment the first time; it never throws (the reason goes into `detail`).
Napi::Value Backends(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  Napi::Array out = Napi::Array::New(env, 3);
  Napi::Object cpu = Napi::Object::New(env);
  cpu.Set("name", "cpu");
  cpu.Set("compiled", true);
  cpu.Set("runnable", true);
  cpu.Set("devices", 1);
#ifdef AGENTRL_HAVE_OPENMP
  cpu.Set("detail", "OpenMP");
#else
  cpu.Set("detail", "single-threaded (no OpenMP)");
#endif
  out.Set(0u, cpu);
  uint32_t i = 1;
  for (auto backend : {agentrl::gpu::Backend::kCuda, agentrl::gpu::Backend::kHip}) {
    const auto& st = agentrl::gpu::State(backend);
    Napi::Object o = Napi::Object::New(env);
    o.Set("name", agentrl::gpu::Name(backend));
    o.Set("compiled", st.compiled);
    o.Set("runnable", st.devices > 0);
    o.Set("devices", st.devices);
    o.Set("detail", st.detail);
    // The C ABI entry points this object exports: listBackends() turns them into per-operation answers.
    Napi::Array symbols = Napi::Array::New(env);
    for (const char* sym : {"agentrl_policy_loss", "agentrl_fused_linear", "agentrl_engine_create",
                            "agentrl_engine_extend", "agentrl_engine_sample", "agentrl_engine_policy_loss"}) {
      if (agentrl::gpu::HasSymbol(backend, sym)) symbols.Set(symbols.Length(), sym);
    }
    o.Set("symbols", symbols);
    out.Set(i++, o);
  }
  return out;
}

Napi::Object Init(Napi::Env env, Napi::Object exports) {
  exports.Set("modules", Napi::Function::New(env, Modules, "modules"));
  exports.Set("backends", Napi::Function::New(env, Backends, "backends"));
  exports.Set("builtBackends", Napi::String::New(env, AGENTRL_BUILT_BACKENDS));
  for (const auto& entry : agentrl::Registry()) {
    Napi::Object ns = Napi::Object::New(env);
    entry.init(env, ns);
    exports.Set(entry.name, ns);
  }
  return exports;
}

}  // namespace

NODE_API_MODULE(agentrl, Init)
