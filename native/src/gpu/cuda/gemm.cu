// Row-major GEMM for both GPU objects (see gpu/gemm.h). cuBLASLt / hipBLASLt are loaded with dlopen
// on first use, so neither library's headers nor its .so are needed to build, and the object loads
// on machines without them. The few types and enum values used are declared here by hand:
//  - CUDA: from cublasLt.h and cublas_api.h of CUDA 12.x/13.0 (cublasLtMatmulDescAttributes_t:
//    COMPUTE_TYPE 0, SCALE_TYPE 1, TRANSA 3, TRANSB 4; cublasLtMatmulPreferenceAttributes_t:
//    MAX_WORKSPACE_BYTES 1; cublasComputeType_t: 32F 68, 32F_FAST_16BF 75; cudaDataType CUDA_R_32F 0;
//    cublasOperation_t N 0, T 1; cublasLtMatmulAlgo_t is uint64_t[8]).
//  - HIP: from hipblaslt.h / hipblas-common.h of ROCm 6.x (hipblasLtMatmulDescAttributes_t: TRANSA 0,
//    TRANSB 1; PREF_MAX_WORKSPACE_BYTES 1; hipblasComputeType_t: 32F 2, 32F_FAST_16BF 5; HIP_R_32F 0;
//    hipblasOperation_t N 111, T 112; hipblasLtMatmulAlgo_t is {uint8_t data[16]; size_t}).
// Row-major C = op(A) op(B) is column-major C^T = op(B)^T op(A)^T: the call swaps A and B.
#include <dlfcn.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <initializer_list>
#include <mutex>
#include <string>

#include "gpu/gemm.h"
#include "gpu/gpu_compat.h"

namespace agentrl::gpu {
namespace {

#if defined(AGENTRL_GPU_IS_HIP)
constexpr const char* kLibs[] = {"libhipblaslt.so.1", "libhipblaslt.so.0", "libhipblaslt.so"};
constexpr const char* kPrefix = "hipblasLt";
constexpr int kOpN = 111, kOpT = 112, kCompute32F = 2, kCompute32FFast16BF = 5, kAttrTransA = 0, kAttrTransB = 1;
#else
constexpr const char* kLibs[] = {"libcublasLt.so.13", "libcublasLt.so.12", "libcublasLt.so"};
constexpr const char* kPrefix = "cublasLt";
constexpr int kOpN = 0, kOpT = 1, kCompute32F = 68, kCompute32FFast16BF = 75, kAttrTransA = 3, kAttrTransB = 4;
#endif
constexpr int kR32F = 0;               // CUDA_R_32F / HIP_R_32F
constexpr int kPrefMaxWorkspace = 1;   // *_MATMUL_PREF_MAX_WORKSPACE_BYTES
constexpr size_t kWorkspaceBytes = 32u << 20;

using Status = int;
using CreateFn = Status (*)(void** handle);
using DescCreateFn = Status (*)(void** desc, int compute, int scale_type);
using DescSetFn = Status (*)(void* desc, int attr, const void* buf, size_t size);
using DestroyFn = Status (*)(void* obj);
using LayoutCreateFn = Status (*)(void** layout, int type, uint64_t rows, uint64_t cols, int64_t ld);
using PrefCreateFn = Status (*)(void** pref);
using PrefSetFn = Status (*)(void* pref, int attr, const void* buf, size_t size);
// The heuristic result is opaque here: the library writes its own struct (at most ~100 bytes in
// either header); the algo sits at offset 0 and is passed back by pointer.
using HeuristicFn = Status (*)(void* handle, void* desc, void* a, void* b, void* c, void* d, void* pref, int requested,
                               void* results, int* returned);
using MatmulFn = Status (*)(void* handle, void* desc, const void* alpha, const void* A, void* adesc, const void* B,
                            void* bdesc, const void* beta, const void* C, void* cdesc, void* D, void* ddesc,
                            const void* algo, void* workspace, size_t workspace_bytes, gpuStream_t stream);

struct Lt {
  bool ok = false;
  std::string why;
  void* handle = nullptr;
  void* workspace = nullptr;
  DescCreateFn desc_create;
  DescSetFn desc_set;
  DestroyFn desc_destroy, layout_destroy, pref_destroy;
  LayoutCreateFn layout_create;
  PrefCreateFn pref_create;
  PrefSetFn pref_set;
  HeuristicFn heuristic;
  MatmulFn matmul;
  // Products the library ran, and those it refused (the kernel ran them instead): a refusal is not
  // an error, but on a GPU it is a slow path, so GemmPath() names the first one.
  std::atomic<long> ran{0}, refused{0};
  std::once_flag first_refusal;
  std::string refusal;
};

void LoadLt(Lt& lt) {
  const char* force = std::getenv("AGENTRL_GPU_GEMM");
  if (force && std::strcmp(force, "fallback") == 0) {
    lt.why = "AGENTRL_GPU_GEMM=fallback";
    return;
  }
  void* lib = nullptr;
  for (const char* name : kLibs) {
    lib = dlopen(name, RTLD_NOW | RTLD_LOCAL);
    if (lib) break;
  }
  if (!lib) {
    lt.why = std::string(kLibs[0]) + " not found";
    return;
  }
  auto sym = [&](const char* suffix) { return dlsym(lib, (std::string(kPrefix) + suffix).c_str()); };
  auto create = reinterpret_cast<CreateFn>(sym("Create"));
  lt.desc_create = reinterpret_cast<DescCreateFn>(sym("MatmulDescCreate"));
  lt.desc_set = reinterpret_cast<DescSetFn>(sym("MatmulDescSetAttribute"));
  lt.desc_destroy = reinterpret_cast<DestroyFn>(sym("MatmulDescDestroy"));
  lt.layout_create = reinterpret_cast<LayoutCreateFn>(sym("MatrixLayoutCreate"));
  lt.layout_destroy = reinterpret_cast<DestroyFn>(sym("MatrixLayoutDestroy"));
  lt.pref_create = reinterpret_cast<PrefCreateFn>(sym("MatmulPreferenceCreate"));
  lt.pref_set = reinterpret_cast<PrefSetFn>(sym("MatmulPreferenceSetAttribute"));
  lt.pref_destroy = reinterpret_cast<DestroyFn>(sym("MatmulPreferenceDestroy"));
  lt.heuristic = reinterpret_cast<HeuristicFn>(sym("MatmulAlgoGetHeuristic"));
  lt.matmul = reinterpret_cast<MatmulFn>(sym("Matmul"));
  if (!create || !lt.desc_create || !lt.desc_set || !lt.desc_destroy || !lt.layout_create || !lt.layout_destroy ||
      !lt.pref_create || !lt.pref_set || !lt.pref_destroy || !lt.heuristic || !lt.matmul) {
    lt.why = std::string(kPrefix) + ": a symbol is missing";
    return;
  }
  if (create(&lt.handle) != 0) {
    lt.why = std::string(kPrefix) + "Create failed";
    return;
  }
  if (gpuMalloc(&lt.workspace, kWorkspaceBytes) != gpuSuccess) {
    lt.why = "cannot allocate the GEMM workspace";
    return;
  }
  lt.ok = true;
}

Lt& Library() {
  static Lt lt;
  static std::once_flag once;
  std::call_once(once, [] { LoadLt(lt); });
  return lt;
}

// One product's descriptor, layouts and preference, destroyed with it whatever call failed.
struct LtObjects {
  Lt& lt;
  void *desc = nullptr, *la = nullptr, *lb = nullptr, *lc = nullptr, *pref = nullptr;
  ~LtObjects() {
    if (pref) lt.pref_destroy(pref);
    for (void* l : {lc, lb, la})
      if (l) lt.layout_destroy(l);
    if (desc) lt.desc_destroy(desc);
  }
};

// Returns 0 when the library ran the product, else the failing call's status; `stage` names that call.
Status LtRun(Lt& lt, bool ta, bool tb, int64_t m, int64_t n, int64_t k, float alpha, const float* A, int64_t lda,
             const float* B, int64_t ldb, float beta, float* C, int64_t ldc, int compute, const char** stage) {
  LtObjects o{lt};
  *stage = "MatmulDescCreate";
  Status status = lt.desc_create(&o.desc, compute, kR32F);
  if (status != 0) return status;
  *stage = "MatmulDescSetAttribute";
  const int opa = ta ? kOpT : kOpN, opb = tb ? kOpT : kOpN;
  if ((status = lt.desc_set(o.desc, kAttrTransA, &opa, sizeof(opa))) != 0) return status;
  if ((status = lt.desc_set(o.desc, kAttrTransB, &opb, sizeof(opb))) != 0) return status;
  *stage = "MatrixLayoutCreate";
  if ((status = lt.layout_create(&o.la, kR32F, ta ? k : m, ta ? m : k, lda)) != 0) return status;
  if ((status = lt.layout_create(&o.lb, kR32F, tb ? n : k, tb ? k : n, ldb)) != 0) return status;
  if ((status = lt.layout_create(&o.lc, kR32F, m, n, ldc)) != 0) return status;
  *stage = "MatmulPreference";
  if ((status = lt.pref_create(&o.pref)) != 0) return status;
  const uint64_t ws = kWorkspaceBytes;
  if ((status = lt.pref_set(o.pref, kPrefMaxWorkspace, &ws, sizeof(ws))) != 0) return status;
  *stage = "MatmulAlgoGetHeuristic";
  alignas(16) unsigned char result[1024] = {0};  // room for either library's heuristic struct
  int returned = 0;
  if ((status = lt.heuristic(lt.handle, o.desc, o.la, o.lb, o.lc, o.lc, o.pref, 1, result, &returned)) != 0)
    return status;
  if (returned < 1) return -1;  // no algorithm for this problem
#if defined(AGENTRL_HIP_CPU)
  // The check build's host stand-in computes at the call, not in stream order: drain first.
  (void)gpuDeviceSynchronize();
#endif
  *stage = "Matmul";
  return lt.matmul(lt.handle, o.desc, &alpha, A, o.la, B, o.lb, &beta, C, o.lc, C, o.lc, result, lt.workspace,
                   kWorkspaceBytes, 0);
}

// Column-major problem after the swap: D[m x n] = alpha op(A)[m x k] op(B)[k x n] + beta D.
bool LtMatmul(Lt& lt, bool ta, bool tb, int64_t m, int64_t n, int64_t k, float alpha, const float* A, int64_t lda,
              const float* B, int64_t ldb, float beta, float* C, int64_t ldc, GemmPrecision precision) {
  const int compute = precision == GemmPrecision::kBf16 ? kCompute32FFast16BF : kCompute32F;
  const char* stage = "";
  const Status status = LtRun(lt, ta, tb, m, n, k, alpha, A, lda, B, ldb, beta, C, ldc, compute, &stage);
  if (status == 0) {
    ++lt.ran;
    return true;
  }
  ++lt.refused;
  std::call_once(lt.first_refusal, [&] {
    char buf[200];
    std::snprintf(buf, sizeof buf, "first: %s%s status %d, column-major m %lld n %lld k %lld%s%s%s", kPrefix, stage,
                  status, static_cast<long long>(m), static_cast<long long>(n), static_cast<long long>(k),
                  ta ? " opA=T" : "", tb ? " opB=T" : "", precision == GemmPrecision::kBf16 ? " bf16" : " fp32");
    lt.refusal = buf;
  });
  return false;
}

constexpr int kTile = 16;

// x rounded to the nearest bf16 (ties to even), kept in a float: what a FAST_16BF product sees.
__device__ inline float RoundToBf16(float x) {
  unsigned u;
  memcpy(&u, &x, sizeof u);
  if ((u & 0x7f800000u) == 0x7f800000u) return x;  // inf and NaN as they are
  u += 0x7fffu + ((u >> 16) & 1u);
  u &= 0xffff0000u;
  memcpy(&x, &u, sizeof x);
  return x;
}

// The fallback: one 16 x 16 output tile per block through shared-memory tiles of A and B, fp32
// accumulation; bf16 rounds each input element to bf16 first, as cuBLASLt's COMPUTE_32F_FAST_16BF
// does, so the bf16 path is checkable (HIP-CPU) where the libraries are absent.
__global__ void GemmKernel(int ta, int tb, int64_t M, int64_t N, int64_t K, float alpha, const float* A, int64_t lda,
                           const float* B, int64_t ldb, float beta, float* C, int64_t ldc, int bf16) {
  __shared__ float as[kTile][kTile + 1];
  __shared__ float bs[kTile][kTile + 1];
  const int tx = threadIdx.x % kTile, ty = threadIdx.x / kTile;
  const int64_t row = static_cast<int64_t>(blockIdx.y) * kTile + ty;
  const int64_t col = static_cast<int64_t>(blockIdx.x) * kTile + tx;
  float acc = 0.f;
  for (int64_t k0 = 0; k0 < K; k0 += kTile) {
    const int64_t ka = k0 + tx, kb = k0 + ty;
    as[ty][tx] = (row < M && ka < K) ? (ta ? A[ka * lda + row] : A[row * lda + ka]) : 0.f;
    bs[ty][tx] = (col < N && kb < K) ? (tb ? B[col * ldb + kb] : B[kb * ldb + col]) : 0.f;
    if (bf16) {
      as[ty][tx] = RoundToBf16(as[ty][tx]);
      bs[ty][tx] = RoundToBf16(bs[ty][tx]);
    }
    __syncthreads();
    for (int i = 0; i < kTile; ++i) acc += as[ty][i] * bs[i][tx];
    __syncthreads();
  }
  if (row < M && col < N) {
    float* c = C + row * ldc + col;
    *c = beta == 0.f ? alpha * acc : alpha * acc + beta * *c;
  }
}

}  // namespace

void Gemm(bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K, float alpha, const float* A, int64_t lda,
          const float* B, int64_t ldb, float beta, float* C, int64_t ldc, GemmPrecision precision) {
  if (M == 0 || N == 0) return;
  Lt& lt = Library();
  if (lt.ok && K > 0 &&
      LtMatmul(lt, trans_b, trans_a, N, M, K, alpha, B, ldb, A, lda, beta, C, ldc, precision)) {
    return;
  }
  const dim3 grid(static_cast<unsigned>((N + kTile - 1) / kTile), static_cast<unsigned>((M + kTile - 1) / kTile));
  AGENTRL_LAUNCH(GemmKernel, grid, kTile * kTile, 0, trans_a ? 1 : 0, trans_b ? 1 : 0, M, N, K, alpha, A, lda, B, ldb,
                 beta, C, ldc, precision == GemmPrecision::kBf16 ? 1 : 0);
  Check(gpuGetLastError(), "gemm launch");
}

std::string GemmPath() {
  Lt& lt = Library();
  if (!lt.ok) return "fallback kernel (" + lt.why + ")";
  const long refused = lt.refused.load();
  if (refused == 0) return kPrefix;
  return std::string(kPrefix) + " (" + std::to_string(refused) + " of " + std::to_string(refused + lt.ran.load()) +
         " products fell back to the kernel; " + lt.refusal + ")";
}

}  // namespace agentrl::gpu
