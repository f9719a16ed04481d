// Errors of the parallel components (mpi_module.cc, nccl_module.cc): a bad argument, a library that
// is not available here, and the entry-point guard that turns each into a JS error with a `code`
// (DIST_INVALID_ARGUMENT, DIST_UNAVAILABLE, DIST_NATIVE_FAILURE) and the component's prefix.
#pragma once
#include <napi.h>

#include <stdexcept>
#include <string>

namespace agentrl::parallel {

struct BadArgument : std::invalid_argument {
  using std::invalid_argument::invalid_argument;
};
struct Unavailable : std::runtime_error {
  using std::runtime_error::runtime_error;
};

inline Napi::Error WithCode(Napi::Env env, const std::string& message, const char* code) {
  Napi::Error e = Napi::Error::New(env, message);
  e.Set("code", Napi::String::New(env, code));
  return e;
}

/** Wraps entry point F: every failure surfaces as a JS error `<kPrefix>message` with a code. */
template <const char* kPrefix, Napi::Value (*F)(const Napi::CallbackInfo&)>
Napi::Value Guard(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  try {
    return F(info);
  } catch (const Napi::Error&) {
    throw;
  } catch (const std::invalid_argument& e) {
    throw WithCode(env, std::string(kPrefix) + e.what(), "DIST_INVALID_ARGUMENT");
  } catch (const Unavailable& e) {
    throw WithCode(env, std::string(kPrefix) + e.what(), "DIST_UNAVAILABLE");
  } catch (const std::exception& e) {
    throw WithCode(env, std::string(kPrefix) + e.what(), "DIST_NATIVE_FAILURE");
  }
}

}  // namespace agentrl::parallel
