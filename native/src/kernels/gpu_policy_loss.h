// C ABI between the addon and agentrl_cuda.so / agentrl_hip.so for the policy loss. Pointers are host
// memory: the GPU object copies in, runs the two row kernels, and copies dlogits and logp back.
// (A device-pointer entry for the engine's GPU path belongs beside it once the engine runs on GPU.)
#pragma once
#include <cstdint>

#include "kernels/token_math.h"

extern "C" {

struct AgentrlPolicyLossArgs {
  agentrl::kernels::LossConfig config;
  agentrl::kernels::TokenInputs tokens;
  const void* logits;  // [T, V]
  int32_t logits_bf16;  // 0: fp32, 1: bf16 (uint16 storage)
  int64_t V;
  float* dlogits;  // [T, V] fp32 output
  float* logp;     // [T]
  float* entropy;  // [T] or null
  agentrl::kernels::Metrics metrics;  // out
};

/** 0 on success; otherwise writes the reason into err. */
typedef int (*agentrl_policy_loss_fn)(AgentrlPolicyLossArgs* args, char* err, int err_len);
}
