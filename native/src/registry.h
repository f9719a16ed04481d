// Components register their exports here; addon.cc calls every registered initialiser at load time.
// A component adds a file with `AGENTRL_REGISTER_MODULE(name, InitFn)` and needs no other edit.
#pragma once
#include <napi.h>

#include <vector>

namespace agentrl {

using ModuleInit = void (*)(Napi::Env env, Napi::Object exports);

struct ModuleEntry {
  const char* name;
  ModuleInit init;
};

inline std::vector<ModuleEntry>& Registry() {
  static std::vector<ModuleEntry> entries;
  return entries;
}

struct ModuleRegistrar {
  ModuleRegistrar(const char* name, ModuleInit init) { Registry().push_back({name, init}); }
};

}  // namespace agentrl

#define AGENTRL_REGISTER_MODULE(name, init) \
  static ::agentrl::ModuleRegistrar agentrl_registrar_##name(#name, init)
