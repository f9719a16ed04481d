// The tensor-core (bf16 mma.sync) attention, opt-in beside attention.cu's fp32 SIMT kernels:
// AGENTRL_GPU_ATTENTION=mma (read once per process; default simt). Same contract as
// AttentionForward / AttentionBackward in device_ops.h (fp32 in and out, lse [heads, T], packed
// sequences causal within each, GQA); the products run in bf16 with fp32 accumulation, so results
// agree with SIMT to bf16 precision, not bit for bit. attention_mma.cu says what it does and does not.
#pragma once
#include <cstdint>

#include "engine/cuda/device_ops.h"

namespace agentrl::engine::gpu {

// True when AGENTRL_GPU_ATTENTION=mma and the kernels can take this call: a CUDA build, a device
// of compute capability >= 8.0 running kernels built for >= sm_80 (not compute_75 PTX JIT-compiled),
// head_dim 64 or 128, 16-byte aligned q / k / v / dout. Throws on
// a value of AGENTRL_GPU_ATTENTION other than simt / mma.
bool MmaAttentionApplies(const AttnShape& s, const float* q, const float* k, const float* v, const float* dout);
void MmaAttentionForward(const float* q, const float* k, const float* v, float* out, float* lse, const int32_t* cu,
                         const int32_t* seq_of, int total, const AttnShape& s);
// delta [heads, T] = rowsum(dout * out), already computed (attention.cu's DeltaKernel).
void MmaAttentionBackward(const float* q, const float* k, const float* v, const float* dout, const float* lse,
                          const float* delta, float* dq, float* dk, float* dv, const int32_t* cu,
                          const int32_t* seq_of, int total, const AttnShape& s);

}  // namespace agentrl::engine::gpu
