// Errors of the parallel components (mpi_module.cc, nccl_module.cc): a bad argument, a library that
// is not available here, and their entry-point guard: the addon's one guard (napi_guard.h) with the
// DIST_INVALID_ARGUMENT, DIST_UNAVAILABLE and DIST_NATIVE_FAILURE codes and the component's prefix.
#pragma once
#include <napi.h>

#include <stdexcept>

#include "napi_guard.h"

namespace agentrl::parallel {

struct BadArgument : std::invalid_argument {
  using std::invalid_argument::invalid_argument;
};
using Unavailable = agentrl::Unavailable;

template <const char* kPrefix>
inline constexpr ErrorCodes kDistCodes{kPrefix, "DIST_INVALID_ARGUMENT", "DIST_UNAVAILABLE", "DIST_NATIVE_FAILURE"};

/** Wraps entry point F: every failure surfaces as a JS error `<kPrefix>message` with a DIST_* code. */
template <const char* kPrefix, Napi::Value (*F)(const Napi::CallbackInfo&)>
Napi::Value Guard(const Napi::CallbackInfo& info) {
  return agentrl::Guard<kDistCodes<kPrefix>, F>(info);
}

}  // namespace agentrl::parallel
