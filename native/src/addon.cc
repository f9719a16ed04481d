#include <napi.h>

#include "registry.h"

namespace {

// `modules()` lists the registered components, so the TS loader can say what was compiled in.
Napi::Value Modules(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  auto& entries = agentrl::Registry();
  Napi::Array out = Napi::Array::New(env, entries.size());
  for (size_t i = 0; i < entries.size(); ++i) out.Set(static_cast<uint32_t>(i), entries[i].name);
  return out;
}

Napi::Object Init(Napi::Env env, Napi::Object exports) {
  exports.Set("modules", Napi::Function::New(env, Modules, "modules"));
  for (const auto& entry : agentrl::Registry()) {
    Napi::Object ns = Napi::Object::New(env);
    entry.init(env, ns);
    exports.Set(entry.name, ns);
  }
  return exports;
}

}  // namespace

NODE_API_MODULE(agentrl, Init)
