#include "gpu/gpu_library.h"

#include <dlfcn.h>

#include <cstdlib>
#include <mutex>
#include <stdexcept>
#include <string>

#include "gpu/gpu_probe.h"

#ifndef AGENTRL_BUILT_BACKENDS
#define AGENTRL_BUILT_BACKENDS "cpu"
#endif

namespace agentrl::gpu {
namespace {

struct Loaded {
  LibraryState state;
  void* handle = nullptr;
};

std::string AddonDir() {
  Dl_info info{};
  if (dladdr(reinterpret_cast<void*>(&AddonDir), &info) == 0 || info.dli_fname == nullptr) return ".";
  std::string path(info.dli_fname);
  auto slash = path.rfind('/');
  return slash == std::string::npos ? "." : path.substr(0, slash);
}

bool BuiltIn(const char* name) {
  std::string list = std::string(",") + AGENTRL_BUILT_BACKENDS + ",";
  return list.find(std::string(",") + name + ",") != std::string::npos;
}

Loaded LoadOne(Backend backend) {
  Loaded out;
  out.state.compiled = BuiltIn(Name(backend));
  if (!out.state.compiled) {
    out.state.detail = std::string("not compiled in (rebuild with ") +
                       (backend == Backend::kCuda ? "nvcc on PATH" : "hipcc installed") + ")";
    return out;
  }
  // AGENTRL_CUDA_LIBRARY / AGENTRL_HIP_LIBRARY: load that object instead (e.g. a HIP-CPU build of
  // the same sources, scripts/hip-cpu-check.sh, or an object built on a GPU machine).
  const char* env_path = std::getenv(backend == Backend::kCuda ? "AGENTRL_CUDA_LIBRARY" : "AGENTRL_HIP_LIBRARY");
  std::string path = env_path && *env_path ? std::string(env_path) : AddonDir() + "/agentrl_" + Name(backend) + ".so";
  out.handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (out.handle == nullptr) {
    const char* err = dlerror();
    out.state.detail = std::string("cannot load ") + path + ": " + (err ? err : "unknown error");
    return out;
  }
  out.state.loaded = true;
  auto probe = reinterpret_cast<agentrl_gpu_probe_fn>(dlsym(out.handle, "agentrl_gpu_probe"));
  if (probe == nullptr) {
    out.state.detail = path + " has no agentrl_gpu_probe";
    return out;
  }
  char msg[256] = {0};
  int n = probe(msg, sizeof(msg));
  out.state.devices = n > 0 ? n : 0;
  out.state.detail = msg;
  return out;
}

Loaded& Slot(Backend backend) {
  static Loaded slots[2];
  static std::once_flag once[2];
  int i = backend == Backend::kCuda ? 0 : 1;
  std::call_once(once[i], [&] { slots[i] = LoadOne(backend); });
  return slots[i];
}

}  // namespace

const char* Name(Backend backend) { return backend == Backend::kCuda ? "cuda" : "hip"; }

const LibraryState& State(Backend backend) { return Slot(backend).state; }

bool HasSymbol(Backend backend, const char* name) {
  Loaded& slot = Slot(backend);
  return slot.handle != nullptr && dlsym(slot.handle, name) != nullptr;
}

void* Symbol(Backend backend, const char* name) {
  Loaded& slot = Slot(backend);
  if (slot.state.devices <= 0) {
    throw std::runtime_error(std::string(Name(backend)) + " backend cannot run here: " + slot.state.detail);
  }
  void* sym = dlsym(slot.handle, name);
  if (sym == nullptr) throw std::runtime_error(std::string(Name(backend)) + " backend lacks symbol " + name);
  return sym;
}

}  // namespace agentrl::gpu
