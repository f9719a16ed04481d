// The one native-boundary guard of the addon: every N-API entry point of every component (engine,
// engineGpu, kernels, mpi, nccl) runs inside Guarded(), which turns whatever it throws into a JS
// Error with the component's `code` and message prefix, never a crash. A component names its codes
// once (ErrorCodes); its argument checks (napi_args.h) throw std::invalid_argument subclasses, a
// backend or library that cannot run here throws Unavailable. Handle() checks the N-API type tag of
// an External, so one handle kind passed for another is refused by name.
#pragma once
#include <napi.h>

#include <exception>
#include <new>
#include <stdexcept>
#include <string>

namespace agentrl {

/** A backend, device object or library that is not usable here. */
struct Unavailable : std::runtime_error {
  using std::runtime_error::runtime_error;
};

/** A component's message prefix and the `code` of each kind of failure. */
struct ErrorCodes {
  const char* prefix;       // e.g. "engine: " ("" for none)
  const char* invalid;      // std::invalid_argument, and node-addon-api's own conversion errors
  const char* unavailable;  // Unavailable
  const char* failure;      // anything else, out of memory included
};

/** What a failure becomes in JS: its code and its message. */
struct Failure {
  const char* code;
  std::string message;
};

/** The code and message of the exception `e` (from std::current_exception()). */
inline Failure Classify(const ErrorCodes& codes, std::exception_ptr e) {
  try {
    std::rethrow_exception(e);
  } catch (const std::invalid_argument& x) {
    return {codes.invalid, std::string(codes.prefix) + x.what()};
  } catch (const Unavailable& x) {
    return {codes.unavailable, std::string(codes.prefix) + x.what()};
  } catch (const std::bad_alloc&) {
    return {codes.failure, std::string(codes.prefix) + "out of memory"};
  } catch (const std::exception& x) {
    return {codes.failure, std::string(codes.prefix) + x.what()};
  } catch (...) {
    return {codes.failure, std::string(codes.prefix) + "unknown native failure"};
  }
}

inline Napi::Error ErrorWithCode(Napi::Env env, const std::string& message, const char* code) {
  Napi::Error e = Napi::Error::New(env, message);
  e.Set("code", Napi::String::New(env, code));
  return e;
}

/** Runs `body` (returning a Napi::Value); any failure is rethrown as a JS Error with a code. */
template <typename F>
Napi::Value Guarded(Napi::Env env, const ErrorCodes& codes, F&& body) {
  try {
    return body();
  } catch (const Napi::Error& e) {
    // node-addon-api's own errors (a failed conversion) keep their message and get a code.
    Napi::Error out = e;
    if (!out.Value().Has("code")) out.Set("code", Napi::String::New(env, codes.invalid));
    throw out;
  } catch (...) {
    const Failure f = Classify(codes, std::current_exception());
    throw ErrorWithCode(env, f.message, f.code);
  }
}

/** An entry point F of a component with `kCodes`: `Napi::Function::New(env, Guard<kCodes, F>, name)`. */
template <const ErrorCodes& kCodes, Napi::Value (*F)(const Napi::CallbackInfo&)>
Napi::Value Guard(const Napi::CallbackInfo& info) {
  return Guarded(info.Env(), kCodes, [&] { return F(info); });
}

/** The T behind an External tagged `tag`; anything else is refused with E naming `what`. */
template <typename E, typename T>
T& Handle(const Napi::Value& v, const napi_type_tag& tag, const char* what) {
  if (!v.IsExternal()) throw E(std::string("expected ") + what + ", got a non-handle value");
  bool ok = false;
  if (napi_check_object_type_tag(v.Env(), v, &tag, &ok) != napi_ok || !ok) {
    throw E(std::string("expected ") + what + ", got another kind of handle");
  }
  return *v.As<Napi::External<T>>().Data();
}

}  // namespace agentrl
