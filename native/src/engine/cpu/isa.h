// The engine's SIMD-bearing CPU kernels are compiled once per ISA level (native/CMakeLists.txt:
// avx512, avx2, portable), each compile with AGENTRL_CPU_ISA=<level>. Their headers declare the
// kernels between AGENTRL_ISA_BEGIN and AGENTRL_ISA_END, which in those compiles open the inner
// namespace isa_<level>: the three copies link side by side, and a kernel's calls to another
// kernel (PanelGemm to Sgemm, attention to SgemmSerial) stay on its own level. Everywhere else
// (AGENTRL_CPU_ISA unset) the macros are empty and the same names are the dispatcher's
// (dispatch.cc), which forwards each call to the level chosen at load time (cpu_kernels.h).
#pragma once

#if defined(AGENTRL_CPU_ISA)
#define AGENTRL_ISA_CAT_(a, b) a##b
#define AGENTRL_ISA_CAT(a, b) AGENTRL_ISA_CAT_(a, b)
#define AGENTRL_ISA_NS AGENTRL_ISA_CAT(isa_, AGENTRL_CPU_ISA)
#define AGENTRL_ISA_BEGIN namespace AGENTRL_ISA_NS {
#define AGENTRL_ISA_END }

// In a level's compile only that level's kernels are declared, so `engine::cpu::SgemmSerial` (the
// kernels' fused-linear loss calls it so) finds this level's through the using-directive.
namespace agentrl::engine::cpu {
namespace AGENTRL_ISA_NS {}
using namespace AGENTRL_ISA_NS;
}  // namespace agentrl::engine::cpu

namespace agentrl::engine::cpu {
AGENTRL_ISA_BEGIN
// a * b + c as this level's micro-kernels compute it: one rounding where the level has FMA, two
// (the product, then the sum) on portable x86-64, which has none. Code that must match the GEMMs'
// bits (cached attention against the training forward) uses this, not std::fma, whose software
// fallback on portable would round once where the portable GEMM rounds twice.
inline float MulAdd(float a, float b, float c) {
#if defined(__FMA__) || defined(__aarch64__)
  return __builtin_fmaf(a, b, c);
#else
  return c + a * b;
#endif
}
AGENTRL_ISA_END
}  // namespace agentrl::engine::cpu
#else
#define AGENTRL_ISA_BEGIN
#define AGENTRL_ISA_END
#endif
