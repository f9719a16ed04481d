// N-API surface of the policy-loss kernels (`addon.kernels`). The TS layer (@agentrl/kernels)
// validates every argument first; the checks here are a second line so a bad call from elsewhere
// still gets a JS error, never a crash. C++ exceptions become JS errors with a `code`.
#include <napi.h>

#include <cmath>
#include <limits>
#include <stdexcept>
#include <string>

#include "gpu/gpu_library.h"
#include "kernels/gpu_fused_linear.h"
#include "kernels/gpu_policy_loss.h"
#include "kernels/metrics_js.h"
#include "kernels/policy_loss.h"
#include "napi_args.h"
#include "napi_guard.h"
#include "registry.h"

namespace agentrl::kernels {
namespace {

using BackendUnavailable = agentrl::Unavailable;

constexpr ErrorCodes kKernelsCodes{"", "KERNELS_INVALID_ARGUMENT", "KERNELS_BACKEND_UNAVAILABLE",
                                   "KERNELS_NATIVE_FAILURE"};

template <typename T>
Napi::TypedArrayOf<T> Typed(const Napi::Object& o, const char* name, int64_t length) {
  return args::Typed<InvalidArgument, T>(o.Get(name), name, length);
}

double Finite(const Napi::Value& v, const char* name) { return args::Finite<InvalidArgument>(v, name); }

int64_t IntIn(const Napi::Value& v, const char* name, int64_t lo, int64_t hi) {
  return args::IntegerIn<InvalidArgument>(v, name, lo, hi);
}

constexpr int64_t kMaxDim = std::numeric_limits<int32_t>::max();

int64_t Int(const Napi::Object& o, const char* name) { return IntIn(o.Get(name), name, -kMaxDim, kMaxDim); }

double Num(const Napi::Object& o, const char* name, double fallback) {
  Napi::Value v = o.Get(name);
  return v.IsUndefined() ? fallback : Finite(v, name);
}

int64_t IntOr(const Napi::Object& o, const char* name, int64_t fallback, int64_t lo, int64_t hi) {
  Napi::Value v = o.Get(name);
  return v.IsUndefined() ? fallback : IntIn(v, name, lo, hi);
}

LossConfig ConfigFrom(const Napi::Value& v) {
  if (!v.IsObject()) throw InvalidArgument("config must be an object");
  const Napi::Object o = v.As<Napi::Object>();
  LossConfig c;
  c.temperature = static_cast<float>(Num(o, "temperature", 1));
  c.clip_low = static_cast<float>(Num(o, "clipLow", 0.2));
  c.clip_high = static_cast<float>(Num(o, "clipHigh", 0.28));
  c.dual_clip = static_cast<float>(Num(o, "dualClip", 0));
  c.max_log_ratio = static_cast<float>(Num(o, "maxLogRatio", 20));
  // The enum's range is checked before the cast: an out-of-range Aggregation would pick no weight.
  c.aggregation = static_cast<Aggregation>(IntOr(o, "aggregation", 0, 0, 3));
  c.sequence_ratio = Num(o, "sequenceRatio", 0) != 0;
  c.horizon = Num(o, "horizon", 0);
  c.token_count = IntOr(o, "tokenCount", -1, -1, int64_t{1} << 53);
  c.seq_count = IntOr(o, "seqCount", -1, -1, int64_t{1} << 53);
  c.entropy = Num(o, "entropy", 0) != 0;
  if (!(c.temperature > 0)) throw InvalidArgument("config.temperature must be > 0");
  if (c.aggregation == Aggregation::kSeqMeanTokenSumNorm && !(c.horizon > 0)) {
    throw InvalidArgument("config.horizon must be > 0 for seq-mean-token-sum-norm");
  }
  return c;
}

/** Token inputs with lengths and the cu_seqlens invariants checked (targets are range-checked too). */
TokenInputs TokensFrom(const Napi::Object& o, int64_t T, int64_t V) {
  TokenInputs in;
  in.T = T;
  auto targets = Typed<int32_t>(o, "targets", T);
  in.targets = targets.Data();
  in.old_logp = Typed<float>(o, "oldLogprobs", T).Data();
  in.adv = Typed<float>(o, "advantages", T).Data();
  in.mask = Typed<uint8_t>(o, "lossMask", T).Data();
  auto cu = Typed<int32_t>(o, "cuSeqlens", -1);
  if (cu.ElementLength() < 1 || cu[0] != 0 || cu[cu.ElementLength() - 1] != T) {
    throw InvalidArgument("cuSeqlens must start at 0 and end at T");
  }
  for (size_t i = 1; i < cu.ElementLength(); ++i)
    if (cu[i] < cu[i - 1]) throw InvalidArgument("cuSeqlens must be non-decreasing");
  in.S = static_cast<int64_t>(cu.ElementLength()) - 1;
  in.cu_seqlens = cu.Data();
  for (int64_t t = 0; t < T; ++t)
    if (in.targets[t] < 0 || in.targets[t] >= V) throw InvalidArgument("targets[" + std::to_string(t) + "] is out of range");
  return in;
}

// Every kernels entry point takes one argument object; the shared guard (napi_guard.h) does the rest.
template <typename F>
Napi::Value Guard(const Napi::CallbackInfo& info, F&& body) {
  Napi::Env env = info.Env();
  return Guarded(env, kKernelsCodes, [&]() -> Napi::Value {
    if (info.Length() < 1 || !info[0].IsObject()) throw InvalidArgument("expected one argument object");
    return body(env, info[0].As<Napi::Object>());
  });
}

/** A validated policy-loss call: plain pointers into the JS typed arrays, no N-API needed to run it. */
struct PolicyLossCall {
  LossConfig config;
  TokenInputs tokens;
  const void* logits = nullptr;
  bool bf16 = false;
  int64_t V = 0;
  float* dlogits = nullptr;
  float* logp = nullptr;
  float* entropy = nullptr;
  std::string backend;
};

PolicyLossCall PreparePolicyLoss(const Napi::Object& o) {
  PolicyLossCall call;
  const int64_t V = Int(o, "vocabSize");
  if (V < 1) throw InvalidArgument("vocabSize must be >= 1");
  const int64_t T = Typed<int32_t>(o, "targets", -1).ElementLength();
  call.V = V;
  call.config = ConfigFrom(o.Get("config"));
  call.tokens = TokensFrom(o, T, V);
  call.bf16 = o.Get("bf16").ToBoolean();
  call.logits = call.bf16 ? static_cast<const void*>(Typed<uint16_t>(o, "logits", T * V).Data())
                          : static_cast<const void*>(Typed<float>(o, "logits", T * V).Data());
  call.dlogits = Typed<float>(o, "dlogits", T * V).Data();
  call.logp = Typed<float>(o, "logp", T).Data();
  call.entropy = call.config.entropy ? Typed<float>(o, "entropy", T).Data() : nullptr;
  call.backend = o.Get("backend").ToString().Utf8Value();
  if (call.backend != "cpu" && call.backend != "cuda" && call.backend != "hip") {
    throw InvalidArgument("backend must be cpu, cuda or hip");
  }
  if (call.backend == "cpu" && call.bf16) {
    throw InvalidArgument("logits: bf16 is supported on the cuda and hip backends only");
  }
  return call;
}

/** Runs a prepared call; touches no JS value, so it can run on a worker thread. */
Metrics RunPolicyLoss(const PolicyLossCall& call) {
  if (call.backend == "cpu") {
    return PolicyLossCpu(call.config, call.tokens, static_cast<const float*>(call.logits), call.V, call.dlogits,
                         call.logp, call.entropy);
  }
  auto which = call.backend == "cuda" ? gpu::Backend::kCuda : gpu::Backend::kHip;
  void* sym;
  try {
    sym = gpu::Symbol(which, "agentrl_policy_loss");
  } catch (const std::exception& e) {
    throw BackendUnavailable(e.what());
  }
  AgentrlPolicyLossArgs args{call.config, call.tokens, call.logits, call.bf16 ? 1 : 0, call.V,
                             call.dlogits,  call.logp,   call.entropy, {}};
  char err[512] = {0};
  int rc = reinterpret_cast<agentrl_policy_loss_fn>(sym)(&args, err, sizeof(err));
  if (rc == 2) throw InvalidArgument(err + 8);  // strip "invalid:"
  if (rc != 0) throw std::runtime_error(err);
  return args.metrics;
}

Napi::Value PolicyLoss(const Napi::CallbackInfo& info) {
  return Guard(info, [](Napi::Env env, Napi::Object o) -> Napi::Value {
    return MetricsToJs(env, RunPolicyLoss(PreparePolicyLoss(o)));
  });
}

/**
 * The same call on the libuv thread pool, returning a promise: the event loop keeps serving rollouts
 * and tool calls meanwhile. The argument object is referenced until the promise settles, which keeps
 * its typed arrays alive; the caller must not write to them before then.
 */
class PolicyLossWorker : public Napi::AsyncWorker {
 public:
  PolicyLossWorker(Napi::Env env, Napi::Object args, PolicyLossCall call)
      : Napi::AsyncWorker(env, "agentrl:policyLoss"), deferred_(Napi::Promise::Deferred::New(env)),
        args_(Napi::Persistent(args)), call_(std::move(call)) {}

  Napi::Promise Promise() const { return deferred_.Promise(); }

  void Execute() override {
    try {
      metrics_ = RunPolicyLoss(call_);
    } catch (...) {
      const Failure f = Classify(kKernelsCodes, std::current_exception());
      code_ = f.code;
      SetError(f.message);
    }
  }

  void OnOK() override { deferred_.Resolve(MetricsToJs(Env(), metrics_)); }

  void OnError(const Napi::Error& e) override {
    Napi::Error err = Napi::Error::New(Env(), e.Message());
    err.Set("code", Napi::String::New(Env(), code_));
    deferred_.Reject(err.Value());
  }

 private:
  Napi::Promise::Deferred deferred_;
  Napi::ObjectReference args_;
  PolicyLossCall call_;
  Metrics metrics_;
  std::string code_ = "KERNELS_NATIVE_FAILURE";
};

Napi::Value PolicyLossAsync(const Napi::CallbackInfo& info) {
  return Guard(info, [](Napi::Env env, Napi::Object o) -> Napi::Value {
    auto* worker = new PolicyLossWorker(env, o, PreparePolicyLoss(o));
    Napi::Promise promise = worker->Promise();
    worker->Queue();  // the worker deletes itself after OnOK / OnError
    return promise;
  });
}

/** What the device entry reports beside the loss: its schedule and its time on device buffers. */
struct GpuRun {
  int32_t precision = 0, repeat = 1, passes = 0;
  double device_seconds = 0;
};

/** The device fused-linear loss (kernels/cuda/fused_linear.cu) on host arrays: copies in and out. */
Metrics FusedLinearGpu(const std::string& backend, const LossConfig& c, const TokenInputs& in, const float* hidden,
                       const float* weight, int64_t H, int64_t V, float* dh, float* dw, float* logp, int64_t* ws,
                       bool accumulate, GpuRun* run) {
  if (backend != "cuda" && backend != "hip") throw InvalidArgument("backend must be cpu, cuda or hip");
  void* sym;
  try {
    sym = gpu::Symbol(backend == "cuda" ? gpu::Backend::kCuda : gpu::Backend::kHip, "agentrl_fused_linear");
  } catch (const std::exception& e) {
    throw BackendUnavailable(e.what());
  }
  AgentrlFusedLinearArgs args{c,       in, hidden, weight, H, V, dh, dw, accumulate ? 1 : 0, logp, nullptr, {}, 0,
                              run->precision, run->repeat};
  char err[512] = {0};
  const int rc = reinterpret_cast<agentrl_fused_linear_fn>(sym)(&args, err, sizeof(err));
  if (rc == 2) throw InvalidArgument(err + 8);  // strip "invalid:"
  if (rc != 0) throw std::runtime_error(err);
  *ws = args.workspace_bytes;
  run->passes = args.passes;
  run->device_seconds = args.device_seconds;
  return args.metrics;
}

Napi::Value FusedLinear(const Napi::CallbackInfo& info) {
  return Guard(info, [](Napi::Env env, Napi::Object o) -> Napi::Value {
    const int64_t V = Int(o, "vocabSize"), H = Int(o, "hiddenSize");
    if (V < 1 || H < 1) throw InvalidArgument("vocabSize and hiddenSize must be >= 1");
    const int64_t T = Typed<int32_t>(o, "targets", -1).ElementLength();
    LossConfig c = ConfigFrom(o.Get("config"));
    TokenInputs in = TokensFrom(o, T, V);
    const float* hidden = Typed<float>(o, "hidden", T * H).Data();
    const float* weight = Typed<float>(o, "weight", V * H).Data();
    float* dh = Typed<float>(o, "dHidden", T * H).Data();
    float* dw = Typed<float>(o, "dWeight", V * H).Data();
    float* logp = Typed<float>(o, "logp", T).Data();
    int64_t ws = 0;
    const std::string backend = o.Has("backend") ? o.Get("backend").ToString().Utf8Value() : "cpu";
    // GPU backends only: precision 'fp32' (default) | 'bf16', and repeat >= 1 runs on the uploaded
    // buffers (the GPU bench's device-only time, median of the runs).
    GpuRun run;
    if (o.Has("precision")) {
      const std::string p = o.Get("precision").ToString().Utf8Value();
      if (p != "fp32" && p != "bf16") throw InvalidArgument("precision must be fp32 or bf16, got " + p);
      run.precision = p == "bf16" ? 1 : 0;
    }
    if (o.Has("repeat")) {
      run.repeat = static_cast<int32_t>(Int(o, "repeat"));
      if (run.repeat < 1 || run.repeat > 1000) throw InvalidArgument("repeat must be 1 .. 1000");
    }
    Metrics m = backend == "cpu"
                    ? FusedLinearCpu(c, in, hidden, weight, H, V, dh, dw, logp, &ws, o.Get("accumulate").ToBoolean())
                    : FusedLinearGpu(backend, c, in, hidden, weight, H, V, dh, dw, logp, &ws,
                                     o.Get("accumulate").ToBoolean(), &run);
    Napi::Object r = MetricsToJs(env, m);
    r.Set("workspaceBytes", static_cast<double>(ws));
    if (backend != "cpu") {
      r.Set("passes", run.passes);
      r.Set("deviceSeconds", run.device_seconds);
    }
    return r;
  });
}

Napi::Value CopyBandwidth(const Napi::CallbackInfo& info) {
  return Guard(info, [](Napi::Env env, Napi::Object o) -> Napi::Value {
    auto src = Typed<float>(o, "src", -1);
    auto dst = Typed<float>(o, "dst", src.ElementLength());
    CopyFloats(src.Data(), dst.Data(), static_cast<int64_t>(src.ElementLength()));
    return env.Undefined();
  });
}

Napi::Value ScaleInPlace(const Napi::CallbackInfo& info) {
  return Guard(info, [](Napi::Env env, Napi::Object o) -> Napi::Value {
    auto data = Typed<float>(o, "data", -1);
    ScaleFloats(data.Data(), static_cast<int64_t>(data.ElementLength()), static_cast<float>(Num(o, "factor", 1)));
    return env.Undefined();
  });
}

void Init(Napi::Env env, Napi::Object exports) {
  exports.Set("scaleFloats", Napi::Function::New(env, ScaleInPlace, "scaleFloats"));
  exports.Set("policyLoss", Napi::Function::New(env, PolicyLoss, "policyLoss"));
  exports.Set("policyLossAsync", Napi::Function::New(env, PolicyLossAsync, "policyLossAsync"));
  exports.Set("fusedLinear", Napi::Function::New(env, FusedLinear, "fusedLinear"));
  exports.Set("copyFloats", Napi::Function::New(env, CopyBandwidth, "copyFloats"));
}

}  // namespace
}  // namespace agentrl::kernels

AGENTRL_REGISTER_MODULE(kernels, agentrl::kernels::Init);
