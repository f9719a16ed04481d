// C ABI between the addon (engine/gpu_bindings.cc) and the engine's device model inside
// agentrl_cuda.so / agentrl_hip.so (engine/cuda/device_model.cu). The addon keeps a CPU Model of the
// same layout as the host mirror (HF tensor names, offsets, init); the device model holds the
// parameters, gradients, AdamW moments and activations in device memory and copies to and from the
// mirror only when asked (copy) or at the edges of a call: token ids in; hidden states and logits out
// only when the caller passes a host array for them (null: they stay on the device).
// Every function returns 0, or nonzero with the reason in err.
#pragma once
#include <cstddef>
#include <cstdint>

#include "kernels/token_math.h"

extern "C" {

struct AgentrlGpuModelConfig {
  int vocab, hidden, intermediate, layers, heads, kv_heads, head_dim;
  float eps, rope_theta;
  int qk_norm, qkv_bias, o_bias, tied;
  int precision;  // 0: fp32 matrix products, 1: bf16 tensor-core products with fp32 accumulation
};

constexpr int kAgentrlLayerSlots = 15;  // ln1 wq bq wk bk wv bv wo bo qn kn ln2 wg wu wd

struct AgentrlGpuLayout {
  AgentrlGpuModelConfig config;
  int64_t num_params, embed, norm, lm;  // lm < 0: tied
  const int64_t* layer_offsets;          // [layers * kAgentrlLayerSlots], -1 where absent
  int num_tensors;
  const int64_t* tensor_offset;
  const int64_t* tensor_numel;
  const int32_t* tensor_decay;
};

/** The device half of the fused-linear policy loss on the model's latest forward (see fused_linear.cu). */
struct AgentrlGpuPolicyLossArgs {
  agentrl::kernels::LossConfig config;
  agentrl::kernels::TokenInputs tokens;  // host arrays, O(T)
  float* logp;                           // [T] host out
  float* entropy;                        // [T] host out or null
  agentrl::kernels::Metrics metrics;     // out
  int64_t workspace_bytes;               // out: device bytes beyond inputs and outputs
};

typedef int (*agentrl_engine_create_fn)(const AgentrlGpuLayout* layout, void** model, char* err, int err_len);
typedef void (*agentrl_engine_destroy_fn)(void* model);
// which: 0 params, 1 grads, 2 adam m, 3 adam v; to_device: 1 host -> device, 0 device -> host
typedef int (*agentrl_engine_copy_fn)(void* model, int which, float* host, int to_device, char* err, int err_len);
// hidden_out: [T, H] host array, or null to keep the final-normed hidden states on the device only
// (what policy_loss and cross_entropy read).
typedef int (*agentrl_engine_forward_fn)(void* model, const int32_t* tokens, const int32_t* cu, int num_seqs,
                                         int total, int recompute, float* hidden_out, char* err, int err_len);
typedef int (*agentrl_engine_backward_fn)(void* model, const float* d_hidden, const float* d_lm_head, char* err,
                                          int err_len);
typedef int (*agentrl_engine_cross_entropy_fn)(void* model, const int32_t* targets, float scale, double* loss,
                                               char* err, int err_len);
typedef int (*agentrl_engine_logits_fn)(void* model, float* out, char* err, int err_len);
typedef int (*agentrl_engine_zero_grad_fn)(void* model, char* err, int err_len);
typedef int (*agentrl_engine_grad_norm_fn)(void* model, double* out, char* err, int err_len);
typedef int (*agentrl_engine_adamw_fn)(void* model, float lr, float beta1, float beta2, float eps, float wd,
                                       int64_t step, float grad_scale, char* err, int err_len);
typedef int (*agentrl_engine_cache_create_fn)(void* model, void** cache, char* err, int err_len);
typedef void (*agentrl_engine_cache_destroy_fn)(void* cache);
typedef int (*agentrl_engine_cache_length_fn)(void* cache);
typedef void (*agentrl_engine_cache_truncate_fn)(void* cache, int length);
// logits_out: [batch, V] host array, or null to keep them on the device for sample.
typedef int (*agentrl_engine_extend_fn)(void* model, void* const* caches, int batch, const int32_t* tokens,
                                        const int32_t* counts, float* logits_out, char* err, int err_len);
// Samples one token per row of the latest extend's logits on the device (engine/cuda/sampling.cu):
// params [rows][4] = temperature, top_k (<= 0: none), top_p, the request's uniform in [0, 1); out
// [rows][2] = token id, its logprob under softmax(logits / temperature). Logits stay on the device.
typedef int (*agentrl_engine_sample_fn)(void* model, int rows, const double* params, double* out, char* err,
                                        int err_len);
// The fused-linear policy loss on the latest forward's hidden states and the lm_head weight, then
// the backward through the whole model: nothing [T, V] is stored, and no [T, H] crosses to the host.
typedef int (*agentrl_engine_policy_loss_fn)(void* model, AgentrlGpuPolicyLossArgs* args, char* err, int err_len);
// Bytes copied host -> device and device -> host, and device allocations made, by this object since
// it was loaded (gpu/transfers.h).
typedef void (*agentrl_engine_transfers_fn)(int64_t* to_device, int64_t* to_host, int64_t* allocations);
// Which GEMM path runs ("cublasLt", "hipblasLt", or "fallback kernel (why)").
typedef int (*agentrl_engine_info_fn)(char* out, int out_len);

// Data-parallel gradients (@agentrl/parallel's DeviceGradientAllReduce). The addon's NCCL binding
// (parallel/nccl_module.cc) hands over ncclAllReduce itself (nccl.h's signature; RCCL's is the
// same) and a communicator, so this object links no NCCL. Buckets are ranges of the flat gradient
// (parameter offsets) in the order they start; together they cover [0, num_params) once each.
typedef int (*agentrl_nccl_allreduce_fn)(const void* send, void* recv, size_t count, int dtype, int op, void* comm,
                                         void* stream);
struct AgentrlGpuReduce {
  agentrl_nccl_allreduce_fn all_reduce;
  void* comm;
  // 1: every micro-batch's gradients are added into a float64 accumulator, which is all-reduced in
  // float64 and rounded once (bit-identical for any number of ranks); 0: the fp32 gradients are
  // all-reduced in place (no extra memory; the sum's order is NCCL's).
  int exact;
  int num_buckets;
  const int64_t* start;
  const int64_t* end;
  // A bucket is complete once the backward has finished this stage: num_layers for the final norm
  // and an untied lm_head, l for layer l, -1 for the embedding (the CPU engine's stages).
  const int32_t* stage;
};
typedef int (*agentrl_engine_reduce_setup_fn)(void* model, const AgentrlGpuReduce* spec, char* err, int err_len);
// exact: accumulator += gradients, gradients = 0 (a micro-batch before this rank's last); else nothing.
typedef int (*agentrl_engine_reduce_accumulate_fn)(void* model, char* err, int err_len);
// Arms the next backward: each bucket's all-reduce starts on a side stream as soon as its stage is done.
typedef int (*agentrl_engine_reduce_arm_fn)(void* model, char* err, int err_len);
// Starts the buckets the backward did not, makes the compute stream wait for them all and writes
// the sums into the gradients; started: how many buckets the backward had started.
typedef int (*agentrl_engine_reduce_finish_fn)(void* model, int* started, char* err, int err_len);
// Makes `device` current for the calling thread (device < 0: leaves it); count: the visible devices.
typedef int (*agentrl_engine_set_device_fn)(int device, int* count, char* err, int err_len);
}
