// On-device sampling (see device_ops.h Sample): one block per logits row; only the token id and its
// logprob leave the device. It follows the CPU engine's sampleToken (packages/engine/src/sampling.ts)
// step for step, in float64 as there:
//   p_j = exp(z_j / t - max / t), sum, logprob = z / t - (max / t + log sum) (t = 1 when greedy);
//   greedy: the argmax (lowest id on ties);
//   no top-k / top-p cut: u * sum walked over p in id order (per-thread chunks, then the chunk);
//   a cut: the candidates {p >= tau} for the largest tau (bisection on float bits) whose set holds
//   top-k tokens or top-p mass (with the CPU's 1e-9 slack), sorted by (p desc, id asc) with a
//   bitonic sort in the row's scratch, then thread 0 runs the CPU's sequential loop over the sorted
//   prefix: the cut (cum += v / sum until cum >= top_p, at most top-k), kept mass, u * kept walk.
// The uniform comes from the request's own host-side stream, so the draws are the CPU engine's for
// the same logits up to libm's last bit of exp/log and the tree order of `sum` (a token differs only
// when u falls within ~1e-16 of a boundary).
#include <cfloat>
#include <climits>
#include <cmath>
#include <cstring>

#include "engine/cuda/device_ops.h"
#include "gpu/block_reduce.h"
#include "gpu/gpu_compat.h"

namespace agentrl::engine::gpu {
namespace {

using agentrl::gpu::BlockReduce;
using agentrl::gpu::SumOp;

constexpr int kThreads = 256;

__device__ inline double FloatBits(unsigned b) {
  float f;
  memcpy(&f, &b, sizeof f);
  return static_cast<double>(f);
}

// a before b in the CPU's candidate order: probability descending, id ascending among equals.
__device__ inline bool Before(double pa, int ia, double pb, int ib) { return pa > pb || (pa == pb && ia < ib); }

// Compacts {j : p_j >= tau} into (cv, ci) in id order, pads to a power of two with sentinels and
// sorts it by Before. Returns the candidate count.
__device__ int SortedCandidates(const double* p, int vocab, double tau, double* cv, int* ci, int* ish) {
  const int tid = threadIdx.x;
  const int chunk = (vocab + kThreads - 1) / kThreads;
  const int b0 = tid * chunk < vocab ? tid * chunk : vocab;
  const int b1 = b0 + chunk < vocab ? b0 + chunk : vocab;
  int mine = 0;
  for (int j = b0; j < b1; ++j) mine += p[j] >= tau;
  ish[tid] = mine;
  __syncthreads();
  if (tid == 0) {
    int run = 0;
    for (int i = 0; i < kThreads; ++i) {
      const int c = ish[i];
      ish[i] = run;
      run += c;
    }
    ish[kThreads] = run;
  }
  __syncthreads();
  const int n = ish[kThreads];
  int at = ish[tid];
  for (int j = b0; j < b1; ++j) {
    if (p[j] >= tau) {
      cv[at] = p[j];
      ci[at] = j;
      ++at;
    }
  }
  int n2 = 1;
  while (n2 < n) n2 <<= 1;
  for (int i = n + tid; i < n2; i += kThreads) {
    cv[i] = -1.0;
    ci[i] = INT_MAX;
  }
  __syncthreads();
  for (int k = 2; k <= n2; k <<= 1) {
    for (int j = k >> 1; j > 0; j >>= 1) {
      for (int i = tid; i < n2; i += kThreads) {
        const int l = i ^ j;
        if (l <= i) continue;
        const bool first = (i & k) == 0;  // this half keeps Before-order, the other its reverse
        const bool swap = first ? Before(cv[l], ci[l], cv[i], ci[i]) : Before(cv[i], ci[i], cv[l], ci[l]);
        if (swap) {
          const double tv = cv[i];
          const int ti = ci[i];
          cv[i] = cv[l];
          ci[i] = ci[l];
          cv[l] = tv;
          ci[l] = ti;
        }
      }
      __syncthreads();
    }
  }
  return n;
}

// params: [rows][4] = temperature, top_k, top_p, u; out: [rows][2] = token, logprob.
__global__ void SampleKernel(const float* logits, int vocab, int cand_stride, const double* params, double* out,
                             double* probs_all, double* cand_v, int* cand_i) {
  __shared__ double sh[kThreads];
  __shared__ int ish[kThreads + 1];
  __shared__ float fsh[kThreads];
  __shared__ double r_owner;
  __shared__ int owner;
  __shared__ int token;
  const int64_t row = blockIdx.x;
  const float* z = logits + row * vocab;
  double* p = probs_all + row * vocab;
  double* cv = cand_v + row * cand_stride;
  int* ci = cand_i + row * cand_stride;
  const int tid = threadIdx.x;
  const double temperature = params[row * 4], top_p = params[row * 4 + 2], u = params[row * 4 + 3];
  const int top_k = static_cast<int>(params[row * 4 + 1]);
  // The first maximum in id order (the CPU's strict `z > max` scan).
  float best = -INFINITY;
  int arg = INT_MAX;
  for (int j = tid; j < vocab; j += kThreads) {
    if (z[j] > best || (arg == INT_MAX && z[j] == best)) {
      best = z[j];
      arg = j;
    }
  }
  fsh[tid] = best;
  ish[tid] = arg;
  __syncthreads();
  for (int s = kThreads / 2; s > 0; s >>= 1) {
    if (tid < s) {
      const float b = fsh[tid + s];
      const int bi = ish[tid + s];
      if (b > fsh[tid] || (b == fsh[tid] && bi < ish[tid])) {
        fsh[tid] = b;
        ish[tid] = bi;
      }
    }
    __syncthreads();
  }
  const int argmax = ish[0] < vocab ? ish[0] : 0;
  if (tid == 0) token = argmax;
  const double t = temperature > 0 ? temperature : 1.0;
  const double scaled = static_cast<double>(fsh[0]) / t;
  __syncthreads();
  double sum = 0;
  for (int j = tid; j < vocab; j += kThreads) {
    const double e = exp(static_cast<double>(z[j]) / t - scaled);
    p[j] = e;
    sum += e;
  }
  sum = BlockReduce(sum, sh, SumOp());
  const double log_z = scaled + log(sum);
  const int limit = top_k > 0 && top_k < vocab ? top_k : vocab;
  if (temperature <= 0) {
    // greedy: the argmax, set above
  } else if (limit == vocab && top_p >= 1) {
    // Id order: u * sum less each chunk's mass, then the owner thread walks its chunk.
    const int chunk = (vocab + kThreads - 1) / kThreads;
    const int b0 = tid * chunk < vocab ? tid * chunk : vocab;
    const int b1 = b0 + chunk < vocab ? b0 + chunk : vocab;
    double cs = 0;
    for (int j = b0; j < b1; ++j) cs += p[j];
    sh[tid] = cs;
    __syncthreads();
    if (tid == 0) {
      double r = u * sum;
      owner = -1;  // token stays the argmax: the CPU's answer when rounding leaves r above the last token
      for (int i = 0; i < kThreads; ++i) {
        if (r - sh[i] <= 0 && sh[i] > 0) {
          owner = i;
          break;
        }
        r -= sh[i];
      }
      r_owner = r;
    }
    __syncthreads();
    if (tid == owner) {
      double r = r_owner;
      int last = b1 - 1;
      for (int j = b0; j < b1; ++j) {
        r -= p[j];
        if (r <= 0) {
          last = j;
          break;
        }
      }
      token = last;
    }
  } else {
    // The largest tau (on the float grid) whose candidate set is enough, as the CPU's keptPrefix.
    const double need_mass = top_p < 1 ? top_p * sum * (1 - 1e-9) : INFINITY;
    unsigned lo = 0, hi = 0x3f800001u;  // tau 0 keeps everything; just above 1.0 keeps nothing
    while (hi - lo > 1) {
      const unsigned mid = lo + (hi - lo) / 2;
      const double tau = FloatBits(mid);
      double n = 0, mass = 0;
      for (int j = tid; j < vocab; j += kThreads) {
        if (p[j] >= tau) {
          n += 1;
          mass += p[j];
        }
      }
      n = BlockReduce(n, sh, SumOp());
      mass = BlockReduce(mass, sh, SumOp());
      if (n >= limit || mass >= need_mass) {
        lo = mid;
      } else {
        hi = mid;
      }
    }
    for (int attempt = 0; attempt < 2; ++attempt) {
      // The slack can let through a set whose exact sums do not reach top_p: then everything.
      const int n = SortedCandidates(p, vocab, attempt == 0 ? FloatBits(lo) : 0.0, cv, ci, ish);
      if (tid == 0) {
        int kept = -1;
        if (top_p < 1) {
          double cum = 0;
          const int upto = limit < n ? limit : n;
          for (int i = 0; i < upto; ++i) {
            cum += cv[i] / sum;
            if (cum >= top_p) {
              kept = i + 1;
              break;
            }
          }
        }
        if (kept < 0 && n >= limit) kept = limit;
        owner = kept;
        if (kept > 0) {
          double kept_sum = 0;
          for (int i = 0; i < kept; ++i) kept_sum += cv[i];
          double r = u * kept_sum;
          int at = kept - 1;
          for (int i = 0; i < kept; ++i) {
            r -= cv[i];
            if (r <= 0) {
              at = i;
              break;
            }
          }
          token = ci[at];
        }
      }
      __syncthreads();
      if (owner > 0) break;
    }
  }
  __syncthreads();
  if (tid == 0) {
    out[row * 2] = static_cast<double>(token);
    out[row * 2 + 1] = static_cast<double>(z[token]) / t - log_z;
  }
}

}  // namespace

int SampleCandidateStride(int vocab) {
  int n2 = 1;
  while (n2 < vocab) n2 <<= 1;
  return n2;
}

void Sample(const float* logits, int rows, int vocab, const double* params, double* out, double* probs,
            double* cand_v, int32_t* cand_i) {
  if (rows == 0) return;
  AGENTRL_LAUNCH(SampleKernel, rows, kThreads, 0, logits, vocab, SampleCandidateStride(vocab), params, out, probs,
                 cand_v, cand_i);
  agentrl::gpu::Check(gpuGetLastError(), "sample");
}

}  // namespace agentrl::engine::gpu
