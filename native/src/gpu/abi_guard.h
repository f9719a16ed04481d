// The C ABI entry points of the GPU objects return 0, 2 ("invalid:" + message: bad input, mapped to
// the caller's invalid-argument error) or 1 (anything else), with the message in err.
#pragma once
#include <cstdio>
#include <exception>

#include "kernels/token_math.h"

namespace agentrl::gpu {

template <typename F>
int AbiGuard(char* err, int err_len, F&& body) {
  try {
    body();
    return 0;
  } catch (const agentrl::kernels::InvalidArgument& e) {
    std::snprintf(err, err_len, "invalid:%s", e.what());
    return 2;
  } catch (const std::exception& e) {
    std::snprintf(err, err_len, "%s", e.what());
    return 1;
  }
}

}  // namespace agentrl::gpu
