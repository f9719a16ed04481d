// agentrl_gpu_probe for both GPU objects: how many devices the runtime sees, or why it cannot start.
#include <cstdio>

#include "gpu/gpu_compat.h"
#include "gpu/gpu_probe.h"

extern "C" __attribute__((visibility("default"))) int agentrl_gpu_probe(char* msg, int msg_len) {
  int count = 0;
  gpuError_t err = gpuGetDeviceCount(&count);
  if (err != gpuSuccess) {
    std::snprintf(msg, msg_len, "compiled, but the %s runtime found no usable device: %s", AGENTRL_GPU_NAME,
                  gpuGetErrorString(err));
    return -1;
  }
  if (count == 0) {
    std::snprintf(msg, msg_len, "compiled, but no %s device is present", AGENTRL_GPU_NAME);
    return 0;
  }
  gpuDeviceProp prop;
  if (gpuGetDeviceProperties(&prop, 0) == gpuSuccess) {
    std::snprintf(msg, msg_len, "%d device(s), first: %s", count, prop.name);
  } else {
    std::snprintf(msg, msg_len, "%d device(s)", count);
  }
  return count;
}
