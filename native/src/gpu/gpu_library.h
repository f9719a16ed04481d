// Loads agentrl_cuda.so / agentrl_hip.so (built beside agentrl.node when nvcc / hipcc were found) on
// first use. The addon links no GPU runtime, so it loads anywhere and reports why a backend cannot run.
#pragma once
#include <string>

namespace agentrl::gpu {

enum class Backend { kCuda, kHip };

struct LibraryState {
  bool compiled = false;  // the shared object was built (CMake said so)
  bool loaded = false;    // dlopen succeeded
  int devices = 0;        // devices the runtime reports (0 when it cannot start)
  std::string detail;     // device name, or why it cannot run
};

/** Loads (once) and probes the backend's shared object. Thread-safe. */
const LibraryState& State(Backend backend);

/** A symbol of a runnable backend; throws std::runtime_error saying why when it is not runnable. */
void* Symbol(Backend backend, const char* name);

/** Whether the loaded object exports `name` (whether or not a device is present). */
bool HasSymbol(Backend backend, const char* name);

const char* Name(Backend backend);

}  // namespace agentrl::gpu
