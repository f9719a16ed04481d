// Host <-> device copies and device allocations of the GPU objects, counted: every copy between
// the two goes through CopyToDevice / CopyToHost and every allocation of the engine and the loss
// through DeviceMalloc, so `agentrl_engine_transfers` can tell what crossed the bus and how often
// memory was allocated (the device tests assert that a training step moves O(T) bytes, not the
// [T, H] hidden states, and that a repeated step allocates nothing).
#pragma once
#include <atomic>
#include <cstddef>
#include <cstdint>

#include "gpu/gpu_compat.h"

namespace agentrl::gpu {

struct TransferCounts {
  std::atomic<int64_t> to_device{0}, to_host{0}, allocations{0};
};

/** This object's running totals, in bytes, since it was loaded. */
inline TransferCounts& Transfers() {
  static TransferCounts counts;
  return counts;
}

inline gpuError_t DeviceMalloc(void** p, size_t bytes) {
  Transfers().allocations += 1;
  return gpuMalloc(p, bytes);
}

inline gpuError_t CopyToDevice(void* dst, const void* src, size_t bytes) {
  Transfers().to_device += static_cast<int64_t>(bytes);
  return gpuMemcpy(dst, src, bytes, gpuMemcpyHostToDevice);
}

inline gpuError_t CopyToHost(void* dst, const void* src, size_t bytes) {
  Transfers().to_host += static_cast<int64_t>(bytes);
  return gpuMemcpy(dst, src, bytes, gpuMemcpyDeviceToHost);
}

}  // namespace agentrl::gpu
