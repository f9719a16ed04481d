// The kernels bench's bandwidth baselines (policy_loss.h): plain memory streams, compiled at the
// build's baseline like the rest of the addon outside the ISA-level kernels.
#include <cstring>

#include "kernels/policy_loss.h"

namespace agentrl::kernels {

void CopyFloats(const float* src, float* dst, int64_t n) {
  constexpr int64_t kBlock = 1 << 16;
#pragma omp parallel for schedule(static)
  for (int64_t b = 0; b < (n + kBlock - 1) / kBlock; ++b) {
    int64_t a = b * kBlock, e = a + kBlock < n ? a + kBlock : n;
    std::memcpy(dst + a, src + a, sizeof(float) * (e - a));
  }
}

void ScaleFloats(float* data, int64_t n, float factor) {
#pragma omp parallel for simd schedule(static)
  for (int64_t i = 0; i < n; ++i) data[i] *= factor;
}

}  // namespace agentrl::kernels
