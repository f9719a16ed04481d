// `cpuKernels` namespace of the addon: which ISA level of the engine's CPU kernels runs
// (cpu/cpu_kernels.h). Loading the addon applies AGENTRL_CPU_KERNELS, so a bad value fails the
// load with the reason, before any kernel runs.
#include <napi.h>

#include <stdexcept>
#include <string>
#include <vector>

#include "engine/cpu/cpu_kernels.h"
#include "registry.h"

namespace agentrl::engine {
namespace {

[[noreturn]] void Fail(Napi::Env env, const std::string& message) {
  Napi::Error e = Napi::Error::New(env, "agentrl: " + message);
  e.Set("code", Napi::String::New(env, "CPU_KERNELS_UNAVAILABLE"));
  throw e;
}

Napi::Array Strings(Napi::Env env, const std::vector<std::string>& xs) {
  Napi::Array out = Napi::Array::New(env, xs.size());
  for (size_t i = 0; i < xs.size(); ++i) out.Set(static_cast<uint32_t>(i), xs[i]);
  return out;
}

// info() -> { active, supported, compiled }
Napi::Value Info(const Napi::CallbackInfo& info) {
  const cpu::CpuKernelsInfo k = cpu::CpuKernels();
  Napi::Object out = Napi::Object::New(info.Env());
  out.Set("active", k.active);
  out.Set("supported", Strings(info.Env(), k.supported));
  out.Set("compiled", Strings(info.Env(), k.compiled));
  return out;
}

// select(path): switches the active level; the reason when it cannot.
Napi::Value Select(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  if (info.Length() < 1 || !info[0].IsString()) {
    Napi::TypeError e = Napi::TypeError::New(env, "agentrl: cpuKernels.select(path) takes a string");
    e.Set("code", Napi::String::New(env, "CPU_KERNELS_UNAVAILABLE"));
    throw e;
  }
  try {
    cpu::SetCpuKernels(info[0].As<Napi::String>().Utf8Value());
  } catch (const std::invalid_argument& err) {
    Fail(env, err.what());
  }
  return Info(info);
}

void InitCpuKernels(Napi::Env env, Napi::Object exports) {
  try {
    cpu::ApplyCpuKernelsEnv();
  } catch (const std::invalid_argument& err) {
    Fail(env, err.what());
  }
  exports.Set("info", Napi::Function::New(env, Info, "info"));
  exports.Set("select", Napi::Function::New(env, Select, "select"));
}

}  // namespace
}  // namespace agentrl::engine

AGENTRL_REGISTER_MODULE(cpuKernels, agentrl::engine::InitCpuKernels);
