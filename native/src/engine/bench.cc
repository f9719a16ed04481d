// Microbenchmarks the engine's benchmark reports against: the machine's fp32 FMA peak and the raw
// SGEMM rate on given shapes, both over the same OpenMP threads the model uses.
#include <napi.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "engine/cpu/cpu_kernels.h"
#include "engine/cpu/panel_gemm.h"
#include "engine/cpu/sgemm.h"
#if defined(AGENTRL_HAVE_OPENMP)
#include <omp.h>
#endif

namespace agentrl::engine {
namespace {

// Bench entry points check their arguments too: a JS RangeError with a code, never a crash.
[[noreturn]] void BenchFail(Napi::Env env, const std::string& message) {
  Napi::Error e = Napi::RangeError::New(env, "engine: " + message);
  e.Set("code", Napi::String::New(env, "ENGINE_INVALID_ARGUMENT"));
  throw e;
}

int64_t BenchInt(const Napi::Value& v, const char* what, int64_t lo, int64_t hi) {
  const double d = v.IsNumber() ? v.As<Napi::Number>().DoubleValue() : std::nan("");
  if (!(d >= static_cast<double>(lo) && d <= static_cast<double>(hi)) || d != std::floor(d)) {
    BenchFail(v.Env(), std::string(what) + " must be an integer in [" + std::to_string(lo) + ", " +
                           std::to_string(hi) + "]");
  }
  return static_cast<int64_t>(d);
}

// Argument i of a bench entry `fn` as a Float32Array of exactly `want` elements, or a RangeError naming it.
float* BenchFloats(const Napi::CallbackInfo& info, int i, const char* fn, const char* what, double want) {
  if (!info[i].IsTypedArray() || info[i].As<Napi::TypedArray>().TypedArrayType() != napi_float32_array)
    BenchFail(info.Env(), std::string(fn) + " " + what + " must be a Float32Array");
  Napi::Float32Array arr = info[i].As<Napi::Float32Array>();
  if (static_cast<double>(arr.ElementLength()) != want)
    BenchFail(info.Env(), std::string(fn) + " " + what + " must have " + std::to_string(static_cast<int64_t>(want)) +
                              " elements, not " + std::to_string(arr.ElementLength()));
  return arr.Data();
}

double Now() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// peakGflops(iters) -> { gflops, threads, isa }: all threads run the active CPU kernel level's FMA
// loop (cpu/peak_fma.cc) at once, timed from a barrier (every worker awake) to the end of the
// slowest, which is the concurrent ceiling; `isa` names that level.
Napi::Value PeakGflops(const Napi::CallbackInfo& info) {
  const long iters = static_cast<long>(BenchInt(info[0], "iters", 1, int64_t{1} << 40));
  int threads = 1;
  double sink = 0, start = 0, stop = 0, flops = 0;
  const cpu::KernelTable& kernels = cpu::ActiveKernels();
#if defined(AGENTRL_HAVE_OPENMP)
#pragma omp parallel reduction(+ : sink)
  {
#pragma omp single
    threads = omp_get_num_threads();
#pragma omp barrier
#pragma omp master
    start = Now();
    double mine = 0;  // every thread does the same work
    sink += kernels.peak_fma(iters, &mine);
#pragma omp barrier
#pragma omp master
    {
      stop = Now();
      flops = mine;
    }
  }
#else
  start = Now();
  sink += kernels.peak_fma(iters, &flops);
  stop = Now();
#endif
  const double gflops = flops * threads / (stop - start) / 1e9;
  Napi::Object out = Napi::Object::New(info.Env());
  out.Set("gflops", gflops);
  out.Set("threads", threads);
  out.Set("sink", sink);
  out.Set("isa", kernels.name);
  return out;
}

// gemmSeconds(m, n, k, transA, transB, reps) -> median seconds of one C = op(A) op(B).
Napi::Value GemmSeconds(const Napi::CallbackInfo& info) {
  const int m = static_cast<int>(BenchInt(info[0], "m", 1, 65536));
  const int n = static_cast<int>(BenchInt(info[1], "n", 1, 65536));
  const int k = static_cast<int>(BenchInt(info[2], "k", 1, 65536));
  const bool ta = info[3].ToBoolean(), tb = info[4].ToBoolean();
  const int reps = static_cast<int>(BenchInt(info[5], "reps", 1, 1000));
  const double most = std::max({static_cast<double>(m) * k, static_cast<double>(k) * n, static_cast<double>(m) * n});
  if (most > (1 << 28)) BenchFail(info.Env(), "gemmSeconds operands are limited to 2^28 floats each");
  std::vector<float> a(static_cast<size_t>(m) * k, 0.5f), b(static_cast<size_t>(k) * n, 0.25f), c(static_cast<size_t>(m) * n);
  cpu::Sgemm(ta, tb, m, n, k, 1.0f, a.data(), ta ? m : k, b.data(), tb ? k : n, 0.0f, c.data(), n);
  std::vector<double> times;
  for (int r = 0; r < reps; ++r) {
    const double t0 = Now();
    cpu::Sgemm(ta, tb, m, n, k, 1.0f, a.data(), ta ? m : k, b.data(), tb ? k : n, 0.0f, c.data(), n);
    times.push_back(Now() - t0);
  }
  std::sort(times.begin(), times.end());
  return Napi::Number::New(info.Env(), times[times.size() / 2]);
}

// gemm(transA, transB, m, n, k, alpha, a, b, beta, c, smallM) -> c: one product on the active CPU
// kernel path, operands packed (lda = k or m, ldb = n or k, ldc = n), into c in place. `smallM`
// takes SgemmSmallM (decode's batch-dependent path) instead of Sgemm. Tests compare each path's
// products with a float64 reference and with each other through it.
Napi::Value Gemm(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  const int m = static_cast<int>(BenchInt(info[2], "m", 1, 65536));
  const int n = static_cast<int>(BenchInt(info[3], "n", 1, 65536));
  const int k = static_cast<int>(BenchInt(info[4], "k", 1, 65536));
  const bool ta = info[0].ToBoolean(), tb = info[1].ToBoolean();
  if (!info[5].IsNumber() || !info[8].IsNumber()) BenchFail(env, "gemm alpha and beta must be numbers");
  const float alpha = info[5].As<Napi::Number>().FloatValue(), beta = info[8].As<Napi::Number>().FloatValue();
  auto floats = [&](int i, const char* what, double want) { return BenchFloats(info, i, "gemm", what, want); };
  const float* a = floats(6, "a", static_cast<double>(m) * k);
  const float* b = floats(7, "b", static_cast<double>(k) * n);
  float* c = floats(9, "c", static_cast<double>(m) * n);
  (info[10].ToBoolean() ? cpu::SgemmSmallM : cpu::Sgemm)(ta, tb, m, n, k, alpha, a, ta ? m : k, b, tb ? k : n, beta,
                                                          c, n);
  return info[9];
}

// packPanels(w, n, k) -> panels: the PackPanels copy of a [n, k] weight (PanelFloats(n, k) floats,
// 64-byte aligned), on the active CPU kernel path.
Napi::Value PackPanels(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  const int n = static_cast<int>(BenchInt(info[1], "n", 1, 1 << 20));
  const int k = static_cast<int>(BenchInt(info[2], "k", 1, 65536));
  const float* w = BenchFloats(info, 0, "packPanels", "w", static_cast<double>(n) * k);
  // The kernels load panels with aligned loads: a view at a 64-byte aligned offset of a larger buffer.
  const size_t floats = cpu::PanelFloats(n, k);
  Napi::ArrayBuffer buffer = Napi::ArrayBuffer::New(env, (floats + 16) * sizeof(float));
  const size_t offset = (64 - reinterpret_cast<uintptr_t>(buffer.Data()) % 64) % 64;
  Napi::Float32Array panels = Napi::Float32Array::New(env, floats, buffer, offset);
  cpu::PackPanels(w, n, k, panels.Data());
  return panels;
}

// panelGemm(m, n, k, a, w, panels, c, accumulate) -> c: C = A W^T (+ C when accumulate) by PanelGemm
// on the active CPU kernel path, `panels` the packPanels copy of W [n, k], into c in place. Tests
// compare it with the packed Sgemm bit for bit; the panel bench times it.
Napi::Value PanelGemm(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  const int m = static_cast<int>(BenchInt(info[0], "m", 1, 65536));
  const int n = static_cast<int>(BenchInt(info[1], "n", 1, 1 << 20));
  const int k = static_cast<int>(BenchInt(info[2], "k", 1, 65536));
  auto floats = [&](int i, const char* what, double want) { return BenchFloats(info, i, "panelGemm", what, want); };
  const float* a = floats(3, "a", static_cast<double>(m) * k);
  const float* w = floats(4, "w", static_cast<double>(n) * k);
  const float* panels = floats(5, "panels", static_cast<double>(cpu::PanelFloats(n, k)));
  float* c = floats(6, "c", static_cast<double>(m) * n);
  if (reinterpret_cast<uintptr_t>(panels) % 64 != 0)
    BenchFail(env, "panelGemm panels must be 64-byte aligned: pass packPanels' result, not a copy or subarray");
  cpu::PanelGemm(m, n, k, a, k, w, panels, info[7].ToBoolean(), c, n);
  return info[6];
}

// copyGBps(megabytes, reps) -> { gbps, threads }: the machine's copy bandwidth (STREAM convention:
// bytes read + bytes written per second), each OpenMP thread copying its own slice of a buffer far
// larger than the caches, the median of `reps` passes.
Napi::Value CopyGBps(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  if (info.Length() < 2 || !info[0].IsNumber() || !info[1].IsNumber())
    throw Napi::TypeError::New(env, "engine: copyGBps(megabytes, reps)");
  const double mb = info[0].As<Napi::Number>().DoubleValue();
  const int reps = info[1].As<Napi::Number>().Int32Value();
  if (!(mb >= 1 && mb <= 4096) || reps < 1 || reps > 1000)
    throw Napi::RangeError::New(env, "engine: copyGBps needs 1..4096 MB and 1..1000 reps");
  const size_t n = static_cast<size_t>(mb * (1 << 20) / sizeof(float));
  std::vector<float> src(n, 1.0f), dst(n, 0.0f);
  int threads = 1;
  std::vector<double> times;
  for (int r = 0; r <= reps; ++r) {
    const double t0 = Now();
#pragma omp parallel
    {
#if defined(AGENTRL_HAVE_OPENMP)
      const int t = omp_get_thread_num(), nt = omp_get_num_threads();
#pragma omp single
      threads = nt;
#else
      const int t = 0, nt = 1;
#endif
      const size_t chunk = (n + nt - 1) / nt, b = std::min(n, t * chunk), e = std::min(n, b + chunk);
      std::copy(src.begin() + b, src.begin() + e, dst.begin() + b);
    }
    if (r > 0) times.push_back(Now() - t0);  // the first pass faults the pages in
  }
  std::sort(times.begin(), times.end());
  Napi::Object out = Napi::Object::New(env);
  out.Set("gbps", 2.0 * n * sizeof(float) / times[times.size() / 2] / 1e9);
  out.Set("threads", threads);
  return out;
}

}  // namespace

void InitEngineBench(Napi::Env env, Napi::Object exports) {
  exports.Set("peakGflops", Napi::Function::New(env, PeakGflops, "peakGflops"));
  exports.Set("gemmSeconds", Napi::Function::New(env, GemmSeconds, "gemmSeconds"));
  exports.Set("gemm", Napi::Function::New(env, Gemm, "gemm"));
  exports.Set("packPanels", Napi::Function::New(env, PackPanels, "packPanels"));
  exports.Set("panelGemm", Napi::Function::New(env, PanelGemm, "panelGemm"));
  exports.Set("copyGBps", Napi::Function::New(env, CopyGBps, "copyGBps"));
}

}  // namespace agentrl::engine
