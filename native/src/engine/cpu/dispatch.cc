// The public kernel names (sgemm.h, panel_gemm.h, ops.h, sampler.h, and kernels/policy_loss.h's CPU entry
// points), compiled at the build's baseline: each
// forwards through the table of the active ISA level. Levels are chosen by CPUID through the
// compiler's __builtin_cpu_supports, which also asks the OS (XGETBV) whether it saves the AVX and
// AVX-512 register state: libgcc 12's __cpu_indicator_init reports avx* only when XCR0 has the
// YMM bits (0x6), avx512* only when it has the opmask and ZMM bits too (0xe6).
#include <atomic>
#include <initializer_list>
#include <cstdlib>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "engine/cpu/cpu_kernels.h"
#include "engine/cpu/kernel_table.h"
#include "engine/cpu/ops.h"
#include "engine/cpu/panel_gemm.h"
#include "engine/cpu/sampler.h"
#include "engine/cpu/sgemm.h"
#include "kernels/policy_loss.h"

namespace agentrl::engine::cpu {
namespace isa_portable {
const KernelTable& Kernels();
}
#if defined(AGENTRL_CPU_KERNELS_AVX2)
namespace isa_avx2 {
const KernelTable& Kernels();
}
#endif
#if defined(AGENTRL_CPU_KERNELS_AVX512)
namespace isa_avx512 {
const KernelTable& Kernels();
}
#endif

namespace {

struct Level {
  const char* name;
  const KernelTable* table;  // null: not compiled into this binary
  std::string missing;       // CPU features this machine lacks for it ("" = it runs here)
};

// The CPU features each level's compile flags allow the compiler to use (native/CMakeLists.txt).
std::string Missing(std::initializer_list<std::pair<const char*, bool>> features) {
  std::string out;
  for (const auto& [name, has] : features) {
    if (!has) out += (out.empty() ? "" : ", ") + std::string(name);
  }
  return out;
}

// Best first. Each level's compile flags (CMakeLists.txt) and the features checked here match.
std::vector<Level> Levels() {
  std::vector<Level> out;
#if defined(__x86_64__) || defined(__i386__)
  __builtin_cpu_init();
  const std::string v3 = Missing({{"avx2", __builtin_cpu_supports("avx2")},
                                  {"fma", __builtin_cpu_supports("fma")},
                                  {"f16c", __builtin_cpu_supports("f16c")},
                                  {"bmi", __builtin_cpu_supports("bmi")},
                                  {"bmi2", __builtin_cpu_supports("bmi2")}});
  const std::string v4 = Missing({{"avx512f", __builtin_cpu_supports("avx512f")},
                                  {"avx512bw", __builtin_cpu_supports("avx512bw")},
                                  {"avx512dq", __builtin_cpu_supports("avx512dq")},
                                  {"avx512vl", __builtin_cpu_supports("avx512vl")}});
  const std::string v4_all = v3.empty() ? v4 : v4.empty() ? v3 : v3 + ", " + v4;
#else
  const std::string v3 = "an x86-64 CPU", v4_all = v3;
#endif
#if defined(AGENTRL_CPU_KERNELS_AVX512)
  out.push_back({"avx512", &isa_avx512::Kernels(), v4_all});
#else
  out.push_back({"avx512", nullptr, v4_all});
#endif
#if defined(AGENTRL_CPU_KERNELS_AVX2)
  out.push_back({"avx2", &isa_avx2::Kernels(), v3});
#else
  out.push_back({"avx2", nullptr, v3});
#endif
  out.push_back({"portable", &isa_portable::Kernels(), ""});
  return out;
}

const std::vector<Level>& AllLevels() {
  static const std::vector<Level> levels = Levels();
  return levels;
}

std::atomic<const KernelTable*> g_active{nullptr};

const KernelTable* Best() {
  for (const Level& l : AllLevels())
    if (l.table && l.missing.empty()) return l.table;
  return &isa_portable::Kernels();
}

inline const KernelTable& Active() {
  const KernelTable* t = g_active.load(std::memory_order_relaxed);
  if (!t) {
    t = Best();
    g_active.store(t, std::memory_order_relaxed);
  }
  return *t;
}

std::string Join(const std::vector<std::string>& xs) {
  std::string out;
  for (const auto& x : xs) out += (out.empty() ? "" : ", ") + x;
  return out;
}

}  // namespace

CpuKernelsInfo CpuKernels() {
  CpuKernelsInfo info;
  info.active = Active().name;
  for (const Level& l : AllLevels()) {
    if (!l.table) continue;
    info.compiled.push_back(l.name);
    if (l.missing.empty()) info.supported.push_back(l.name);
  }
  return info;
}

void SetCpuKernels(const std::string& path) {
  const CpuKernelsInfo info = CpuKernels();
  const std::string runs = " (this CPU runs: " + Join(info.supported) + ")";
  for (const Level& l : AllLevels()) {
    if (path != l.name) continue;
    if (!l.table)
      throw std::invalid_argument("this build has no " + path + " kernels (compiled: " + Join(info.compiled) + ")" +
                                  runs);
    if (!l.missing.empty())
      throw std::invalid_argument("this CPU cannot run the " + path + " kernels: it lacks " + l.missing + runs);
    g_active.store(l.table, std::memory_order_relaxed);
    return;
  }
  throw std::invalid_argument("'" + path + "' is not a CPU kernel path; valid choices: avx512, avx2, portable" + runs);
}

void ApplyCpuKernelsEnv() {
  const char* env = std::getenv("AGENTRL_CPU_KERNELS");
  if (!env || !*env) return;
  try {
    SetCpuKernels(env);
  } catch (const std::invalid_argument& e) {
    throw std::invalid_argument(std::string("AGENTRL_CPU_KERNELS=") + env + ": " + e.what() +
                                "; set it to one of those, or unset it to use the best");
  }
}

const KernelTable& ActiveKernels() { return Active(); }

// ---- the public names -----------------------------------------------------------------------

void Sgemm(bool trans_a, bool trans_b, int m, int n, int k, float alpha, const float* a, int lda, const float* b,
           int ldb, float beta, float* c, int ldc) {
  Active().sgemm(trans_a, trans_b, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
}

void SgemmSmallM(bool trans_a, bool trans_b, int m, int n, int k, float alpha, const float* a, int lda,
                 const float* b, int ldb, float beta, float* c, int ldc) {
  Active().sgemm_small_m(trans_a, trans_b, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
}

void SgemmSerial(bool trans_a, bool trans_b, int m, int n, int k, float alpha, const float* a, int lda,
                 const float* b, int ldb, float beta, float* c, int ldc, bool allow_small_m) {
  Active().sgemm_serial(trans_a, trans_b, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc, allow_small_m);
}

void PackPanels(const float* w, int n, int k, float* dst) { Active().pack_panels(w, n, k, dst); }

void PanelGemm(int m, int n, int k, const float* a, int lda, const float* w, const float* panels, bool accumulate,
               float* c, int ldc) {
  Active().panel_gemm(m, n, k, a, lda, w, panels, accumulate, c, ldc);
}

void RmsNormForward(const float* x, const float* w, float* y, float* rstd, int rows, int n, float eps) {
  Active().rms_norm_forward(x, w, y, rstd, rows, n, eps);
}

void RmsNormBackward(const float* x, const float* w, const float* rstd, const float* dy, float* dx, float* dw,
                     int rows, int n, bool accumulate_dx) {
  Active().rms_norm_backward(x, w, rstd, dy, dx, dw, rows, n, accumulate_dx);
}

void Rope(float* x, const int32_t* pos, int rows, int heads, int d, int stride, const float* cos_table,
          const float* sin_table, bool inverse) {
  Active().rope(x, pos, rows, heads, d, stride, cos_table, sin_table, inverse);
}

void AttentionForward(const float* q, const float* k, const float* v, float* out, float* lse, const int32_t* cu,
                      int num_seqs, int total, const AttnShape& s) {
  Active().attention_forward(q, k, v, out, lse, cu, num_seqs, total, s);
}

void AttentionBackward(const float* q, const float* k, const float* v, const float* out, const float* dout,
                       const float* lse, float* dq, float* dk, float* dv, const int32_t* cu, int num_seqs,
                       int total, const AttnShape& s) {
  Active().attention_backward(q, k, v, out, dout, lse, dq, dk, dv, cu, num_seqs, total, s);
}

void AttentionCached(const float* q, float* out, const int32_t* seq_of, const int32_t* pos, int total,
                     const float* const* k_cache_t, const int32_t* cache_cap, const float* const* v_cache,
                     const AttnShape& s) {
  Active().attention_cached(q, out, seq_of, pos, total, k_cache_t, cache_cap, v_cache, s);
}

void AdamWUpdate(float* p, float* m, float* v, const float* g, size_t begin, size_t end, float grad_scale, float beta1,
                 float beta2, float step_size, float bc2_sqrt, float eps, float decay) {
  Active().adamw_update(p, m, v, g, begin, end, grad_scale, beta1, beta2, step_size, bc2_sqrt, eps, decay);
}

void ExpF32(const float* x, float* out, size_t n) { Active().exp_f32(x, out, n); }

void SwigluForward(const float* g, const float* u, float* act, size_t n) { Active().swiglu_forward(g, u, act, n); }

void SwigluBackward(const float* g, const float* u, float* dg, float* du, size_t n) {
  Active().swiglu_backward(g, u, dg, du, n);
}

float SoftmaxXentRow(float* z, int vocab, int target, float scale) {
  return Active().softmax_xent_row(z, vocab, target, scale);
}

void ExpF64(const double* x, double* out, size_t n) { Active().exp_f64(x, out, n); }

TemperedRow TemperedProbs(const float* logits, size_t n, double t, double* probs) {
  return Active().tempered_probs(logits, n, t, probs);
}

}  // namespace agentrl::engine::cpu

namespace agentrl::kernels {

Metrics PolicyLossCpu(const LossConfig& c, const TokenInputs& in, const float* logits, int64_t V, float* dlogits,
                      float* logp_out, float* entropy_out) {
  return engine::cpu::ActiveKernels().policy_loss(c, in, logits, V, dlogits, logp_out, entropy_out);
}

Metrics FusedLinearCpu(const LossConfig& c, const TokenInputs& in, const float* hidden, const float* weight, int64_t H,
                       int64_t V, float* dhidden, float* dweight, float* logp_out, int64_t* workspace_bytes,
                       bool accumulate_dweight) {
  return engine::cpu::ActiveKernels().fused_linear(c, in, hidden, weight, H, V, dhidden, dweight, logp_out,
                                                   workspace_bytes, accumulate_dweight);
}

}  // namespace agentrl::kernels
