// Which ISA level of the engine's CPU kernels runs (see isa.h): avx512 (the x86-64-v4 feature set),
// avx2 (AVX2 + FMA + F16C + BMI1/2, x86-64-v3) or portable (the build's baseline, no FMA on x86-64).
// The best level this CPU runs is chosen on first use; AGENTRL_CPU_KERNELS (ApplyCpuKernelsEnv, at
// addon load) or SetCpuKernels (tests) force one. Levels differ in rounding only where the portable
// path lacks FMA (see native/README.md); avx512 and avx2 compute the same bits.
#pragma once
#include <string>
#include <vector>

#include "engine/cpu/kernel_table.h"

namespace agentrl::engine::cpu {

struct CpuKernelsInfo {
  std::string active;
  std::vector<std::string> supported;  // compiled levels this CPU can run, best first
  std::vector<std::string> compiled;   // levels built into this binary, best first
};

CpuKernelsInfo CpuKernels();

// Switches every kernel to `path` (not while another thread runs one). Throws std::invalid_argument
// naming the valid choices and what this CPU supports when `path` is unknown, not compiled in, or
// needs instructions this CPU (or its OS) lacks: a clear error instead of SIGILL.
void SetCpuKernels(const std::string& path);

// Applies AGENTRL_CPU_KERNELS when it is set and not empty; throws like SetCpuKernels.
void ApplyCpuKernelsEnv();

// The active level's table (the bench's FMA loop; everything else calls the kernels by name).
const KernelTable& ActiveKernels();

}  // namespace agentrl::engine::cpu
