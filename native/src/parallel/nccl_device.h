// What the engine's device backend (engine/gpu_bindings.cc) needs of an `addon.nccl` communicator
// to all-reduce device gradients itself: the loaded library's ncclAllReduce and the ncclComm_t.
#pragma once
#include <napi.h>

namespace agentrl::parallel {

struct NcclDeviceComm {
  void* all_reduce;  // ncclAllReduce, nccl.h's signature (see gpu_engine.h agentrl_nccl_allreduce_fn)
  void* comm;        // ncclComm_t
  int device;        // the device the communicator was made on
};

/** The communicator behind a handle from addon.nccl.initRank; throws a clear error for anything else. */
NcclDeviceComm NcclDeviceOf(const Napi::Value& handle);

}  // namespace agentrl::parallel
