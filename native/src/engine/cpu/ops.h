// Element-wise and attention kernels of the engine's CPU backend. All tensors are row-major fp32.
#pragma once
#include <cstddef>
#include <cstdint>

#include "engine/cpu/isa.h"

namespace agentrl::engine::cpu {

struct AttnShape {
  int heads, kv_heads, head_dim;
  float scale;
};

AGENTRL_ISA_BEGIN

// y[t] = x[t] * rstd[t] * w, rstd[t] = 1 / sqrt(mean(x[t]^2) + eps); rows of width n.
void RmsNormForward(const float* x, const float* w, float* y, float* rstd, int rows, int n, float eps);
// dx (+)= backward of RmsNorm; dw += sum over rows. accumulate_dx adds into dx instead of writing it.
void RmsNormBackward(const float* x, const float* w, const float* rstd, const float* dy, float* dx, float* dw,
                     int rows, int n, bool accumulate_dx);

// Rotates each head of x[t] (row stride `stride`, `heads` heads of dim d) by position pos[t], HF
// rotate_half convention; inverse rotates by -angle (the backward of the rotation).
void Rope(float* x, const int32_t* pos, int rows, int heads, int d, int stride, const float* cos_table,
          const float* sin_table, bool inverse);

// One AdamW update of elements [begin, end): m, v the moments, p *= decay then p -= step_size * m /
// (sqrt(v) / bc2_sqrt + eps), on g * grad_scale. Element-wise, so the result does not depend on the
// thread count; `c + a * b` is one FMA on the avx2 and avx512 levels (as under -march=native before).
void AdamWUpdate(float* p, float* m, float* v, const float* g, size_t begin, size_t end, float grad_scale, float beta1,
                 float beta2, float step_size, float bc2_sqrt, float eps, float decay);

// Causal attention inside each packed sequence [cu[s], cu[s+1]). q: [T, heads*d], k,v: [T, kv*d];
// out: [T, heads*d]; lse: [heads, T] (log-sum-exp of each score row, for the backward).
void AttentionForward(const float* q, const float* k, const float* v, float* out, float* lse, const int32_t* cu,
                      int num_seqs, int total, const AttnShape& s);
// dq, dk, dv are written (not accumulated). Scores are recomputed from q, k and lse.
void AttentionBackward(const float* q, const float* k, const float* v, const float* out, const float* dout,
                       const float* lse, float* dq, float* dk, float* dv, const int32_t* cu, int num_seqs,
                       int total, const AttnShape& s);

// Decode/prefill attention against per-sequence caches: token t of the batch belongs to sequence
// seq_of[t], sits at position pos[t] and attends to cached keys [0, pos[t]]. Keys are cached
// transposed, [kv_heads][head_dim][cap] (cap = cache_cap[seq]), so a query's scores against all
// keys are head_dim contiguous, vectorised row updates; values are [cap][kv_heads * head_dim].
void AttentionCached(const float* q, float* out, const int32_t* seq_of, const int32_t* pos, int total,
                     const float* const* k_cache_t, const int32_t* cache_cap, const float* const* v_cache,
                     const AttnShape& s);

// out[i] = expf(x[i]) with glibc's bits (expf_simd.h), vectorised on the avx2 and avx512 levels.
void ExpF32(const float* x, float* out, size_t n);
// SwiGLU's activation, element-wise over n: act = g * sigmoid(g) * u, sigmoid(x) = 1 / (1 + expf(-x)).
// elementwise.cc, with the operations (and glibc's expf bits) of the loops it replaced in model.cc.
void SwigluForward(const float* g, const float* u, float* act, size_t n);
// Its backward: reads da from dg, writes dg = da * u * s * (1 + g * (1 - s)) and du = da * g * s.
void SwigluBackward(const float* g, const float* u, float* dg, float* du, size_t n);
// One row of softmax cross-entropy over z[0..vocab): returns logsumexp(z) - z[target] and overwrites
// z with its gradient times scale (softmax(z) * scale, minus scale at the target). The exps' sum
// runs in index order in float, as the loop it replaced.
float SoftmaxXentRow(float* z, int vocab, int target, float scale);

AGENTRL_ISA_END
}  // namespace agentrl::engine::cpu
