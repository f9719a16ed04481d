// This ISA level's kernel table (compiled once per level with the kernels, see isa.h).
#include "engine/cpu/kernel_table.h"

#include "engine/cpu/ops.h"
#include "engine/cpu/panel_gemm.h"
#include "engine/cpu/sampler.h"
#include "engine/cpu/sgemm.h"
#include "kernels/policy_loss.h"

namespace agentrl::engine::cpu {
AGENTRL_ISA_BEGIN

double PeakFma(long iters, double* flops);

#define AGENTRL_ISA_STR_(x) #x
#define AGENTRL_ISA_STR(x) AGENTRL_ISA_STR_(x)

const KernelTable& Kernels() {
  static const KernelTable table{AGENTRL_ISA_STR(AGENTRL_CPU_ISA),
                                 Sgemm,
                                 SgemmSmallM,
                                 SgemmSerial,
                                 PackPanels,
                                 PanelGemm,
                                 RmsNormForward,
                                 RmsNormBackward,
                                 Rope,
                                 AttentionForward,
                                 AttentionBackward,
                                 AttentionCached,
                                 AdamWUpdate,
                                 ExpF32,
                                 SwigluForward,
                                 SwigluBackward,
                                 SoftmaxXentRow,
                                 kernels::AGENTRL_ISA_NS::PolicyLossCpu,
                                 kernels::AGENTRL_ISA_NS::FusedLinearCpu,
                                 ExpF64,
                                 TemperedProbs,
                                 PeakFma};
  return table;
}

AGENTRL_ISA_END
}  // namespace agentrl::engine::cpu
