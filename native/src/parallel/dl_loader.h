// Run-time loading shared by the collective bindings (mpi_module.cc, nccl_module.cc): the library
// names to try (an environment variable overrides the defaults), dlopen of the first that loads with
// each failure kept for the message, and a symbol table that resolves function pointers and global
// objects by name and collects the names it could not find. The addon links none of these libraries,
// so it loads, and CI builds it, on machines that have neither the libraries nor their headers.
#pragma once
#include <dlfcn.h>

#include <cstdlib>
#include <string>
#include <vector>

namespace agentrl::parallel::dl {

/** The library names to try: `env_var`'s value alone when it is set and not empty, else `defaults`. */
inline std::vector<std::string> Candidates(const char* env_var, std::vector<std::string> defaults) {
  if (const char* env = std::getenv(env_var); env != nullptr && *env != '\0') return {env};
  return defaults;
}

/** The first library that loaded (`handle` null if none did) and why the ones tried before it failed. */
struct Opened {
  void* handle = nullptr;
  std::string name;
  std::string errors;  // "dlerror(); dlerror(); ..." of each candidate that failed
};

/** dlopens the candidates in order and keeps the first that loads. */
inline Opened OpenFirst(const std::vector<std::string>& candidates, int flags) {
  Opened o;
  for (const auto& c : candidates) {
    o.handle = dlopen(c.c_str(), flags);
    if (o.handle != nullptr) {
      o.name = c;
      return o;
    }
    const char* e = dlerror();
    o.errors += (o.errors.empty() ? "" : "; ") + std::string(e != nullptr ? e : c + ": cannot load");
  }
  return o;
}

/**
 * Resolves symbols into typed pointers: `syms(m.Barrier, "MPI_Barrier")`. A name that is not there
 * leaves the pointer null and is remembered, so one message can list every missing symbol.
 * `From(lib)` switches the library the next names are looked up in (NCCL, then its GPU runtime).
 */
class Symbols {
 public:
  explicit Symbols(void* lib) : lib_(lib) {}

  template <typename F>
  Symbols& operator()(F& out, const char* name) {
    out = reinterpret_cast<F>(dlsym(lib_, name));
    if (out == nullptr) missing_.emplace_back(name);
    return *this;
  }
  template <typename F>
  Symbols& operator()(F& out, const std::string& name) {
    return (*this)(out, name.c_str());
  }

  Symbols& From(void* lib) {
    lib_ = lib;
    return *this;
  }

  bool Complete() const { return missing_.empty(); }

  /** The names not found, comma-separated. */
  std::string Missing() const {
    std::string list;
    for (const auto& s : missing_) list += (list.empty() ? "" : ", ") + s;
    return list;
  }

 private:
  void* lib_;
  std::vector<std::string> missing_;
};

}  // namespace agentrl::parallel::dl
