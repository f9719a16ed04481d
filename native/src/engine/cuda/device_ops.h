// The engine's device kernels (engine/cuda/*.cu), one host wrapper each, on device pointers and the
// default stream. Each mirrors a CPU kernel in engine/cpu/ops.h (same layouts, same conventions) so
// the device model (device_model.cu) reads like model.cc. Every reduction runs in a fixed order:
// the same inputs give the same bits on every call.
#pragma once
#include <cstdint>

namespace agentrl::engine::gpu {

void EmbedForward(const float* emb, const int32_t* tokens, float* x, int rows, int h);
// grad_emb[tokens[t]] += dx[t], rows summed in t order (one thread per column: no atomics).
void EmbedBackward(float* grad_emb, const int32_t* tokens, const float* dx, int rows, int h);
void RmsNormForward(const float* x, const float* w, float* y, float* rstd, int rows, int n, float eps);
void RmsNormBackward(const float* x, const float* w, const float* rstd, const float* dy, float* dx, float* dw,
                     int rows, int n, bool accumulate_dx);
void Rope(float* x, const int32_t* pos, int rows, int heads, int d, int stride, const float* cos_table,
          const float* sin_table, bool inverse);
// act = silu(g) * u
void SwigluForward(const float* g, const float* u, float* act, int64_t n);
// From da (in dg): dg = da * u * silu'(g), du = da * silu(g)... exactly model.cc's formulas.
void SwigluBackward(const float* g, const float* u, float* dg_inout, float* du, int64_t n);
void AddBias(float* y, const float* b, int rows, int n);
void ColumnSum(const float* x, float* out, int rows, int n);  // out += column sums, fixed order
void Add(float* y, const float* x, int64_t n);                // y += x
// Data-parallel gradients: acc += g then g = 0; g = float(acc) then acc = 0 (exact, order-free sums).
void AccumulateF64(double* acc, float* g, int64_t n);
void WriteBackF64(float* g, double* acc, int64_t n);
void GatherRows(const float* src, const int32_t* rows, float* dst, int n, int width);
void ScatterRows(const float* src, const int32_t* rows, float* dst, int n, int width);
// Per row: loss[i] = lse - z[tgt]; z := softmax(z) * scale, z[tgt] -= scale (model.cc's CE).
void SoftmaxCrossEntropy(float* z, const int32_t* rows, const int32_t* targets, float* loss, int n, int vocab,
                         float scale);
// Sum of squares, fixed blocks of 65536 in order; partial[b] (double) per block, count returned.
int SumSquaresPartials(const float* g, int64_t n, double* partial);
void AdamW(float* p, float* m, float* v, const float* g, int64_t n, float beta1, float beta2, float eps,
           float step_size, float bc2_sqrt, float decay, float grad_scale);

struct AttnShape {
  int heads, kv_heads, head_dim;
  float scale;
};
constexpr int kMaxHeadDim = 128;

// Causal attention inside each packed sequence; q [T, heads*d], k/v [T, kv*d], out like q, lse
// [heads, T]. Tiled with an online softmax: nothing T x T is stored. seq_of[t]: sequence of token t.
void AttentionForward(const float* q, const float* k, const float* v, float* out, float* lse, const int32_t* cu,
                      const int32_t* seq_of, int num_seqs, int total, const AttnShape& s);
// dq, dk, dv written (not accumulated); scores recomputed from q, k and lse. delta: [heads, T] scratch.
void AttentionBackward(const float* q, const float* k, const float* v, const float* out, const float* dout,
                       const float* lse, float* delta, float* dq, float* dk, float* dv, const int32_t* cu,
                       const int32_t* seq_of, int num_seqs, int total, const AttnShape& s);
// Device KV caches: k and v of layer l are [cap][kv*d] each; caches[b] points at that layer's pair.
struct CachePtrs {
  float* k;
  float* v;
};
void CacheWrite(const float* k, const float* v, const CachePtrs* caches, const int32_t* seq_of, const int32_t* pos,
                int total, int kd);
void AttentionCached(const float* q, float* out, const CachePtrs* caches, const int32_t* seq_of, const int32_t* pos,
                     int total, const AttnShape& s);

// On-device sampling, row b of logits [rows, vocab] with params[b] = {temperature, top_k, top_p, u}
// (top_k <= 0: none; u: the request's uniform in [0, 1)): the CPU engine's sampleToken in float64
// (see sampling.cu); out[b] = {token, logprob under softmax(z / temperature)}. Scratch: probs
// [rows, vocab], cand_v / cand_i [rows, SampleCandidateStride(vocab)].
int SampleCandidateStride(int vocab);
void Sample(const float* logits, int rows, int vocab, const double* params, double* out, double* probs,
            double* cand_v, int32_t* cand_i);

}  // namespace agentrl::engine::gpu
