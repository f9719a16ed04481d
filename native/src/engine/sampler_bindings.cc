// The sampler's native entry points (packages/engine/src/sampling.ts): the O(vocabulary) loops of
// sampleToken, each computing exactly what its JavaScript original did, in the same order. The exps
// and the argmax run on the active CPU kernel level (cpu/sampler.cc); the walks below are sequential
// by nature (each step depends on the last rounding) and need no SIMD. The sort of the kept prefix,
// Math.log and the top-k / top-p decisions stay in JS.
#include <napi.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>

#include "engine/cpu/ops.h"
#include "engine/cpu/sampler.h"
#include "engine/engine_args.h"

namespace agentrl::engine {
namespace {

/** A number that may be NaN or infinite (the walks carry the JS values through unchanged). */
double AnyNumber(const Napi::Value& v, const char* what) {
  if (!v.IsNumber()) throw BadArgument(std::string(what) + " must be a number");
  return v.As<Napi::Number>().DoubleValue();
}

/** `n`, the row length: an integer in [0, probs.length]. */
size_t RowLength(const Napi::Value& v, const Napi::TypedArrayOf<double>& probs) {
  return static_cast<size_t>(Integer(v, "n", 0, static_cast<int64_t>(probs.ElementLength())));
}

// expF64(x, out): out[i] = Math.exp(x[i]) (the kernel's own test surface).
Napi::Value ExpF64(const Napi::CallbackInfo& info) {
  auto x = Typed<double>(info[0], "x");
  auto out = Typed<double>(info[1], "out", static_cast<int64_t>(x.ElementLength()));
  cpu::ExpF64(x.Data(), out.Data(), x.ElementLength());
  return info.Env().Undefined();
}

// temperedProbs(logits, t, probs) -> { sum, max, argmax }: probs[i] = exp(logits[i] / t - max / t).
Napi::Value TemperedProbs(const Napi::CallbackInfo& info) {
  auto logits = Typed<float>(info[0], "logits");
  const double t = AnyNumber(info[1], "t");
  if (!(t > 0)) throw BadArgument("temperedProbs: t must be > 0 (the sampler passes 1 for temperature 0)");
  auto probs = Typed<double>(info[2], "probs");
  const size_t n = logits.ElementLength();
  if (probs.ElementLength() < n) {
    throw BadArgument("temperedProbs: probs has " + std::to_string(probs.ElementLength()) +
                      " elements, fewer than the " + std::to_string(n) + " logits");
  }
  const cpu::TemperedRow row = cpu::TemperedProbs(logits.Data(), n, t, probs.Data());
  Napi::Object out = Napi::Object::New(info.Env());
  out.Set("sum", row.sum);
  out.Set("max", row.max);
  out.Set("argmax", static_cast<double>(row.argmax));
  return out;
}

// drawInIdOrder(probs, n, r) -> the first i with r - probs[0] - ... - probs[i] <= 0, or -1.
Napi::Value DrawInIdOrder(const Napi::CallbackInfo& info) {
  auto probs = Typed<double>(info[0], "probs");
  const size_t n = RowLength(info[1], probs);
  double r = AnyNumber(info[2], "r");
  const double* p = probs.Data();
  for (size_t i = 0; i < n; ++i) {
    r -= p[i];
    if (r <= 0) return Napi::Number::New(info.Env(), static_cast<double>(i));
  }
  return Napi::Number::New(info.Env(), -1);
}

// collectAtLeast(probs, n, tau, values) -> { n, mass }: the probs >= tau in id order into values,
// their count and their sum in that order.
Napi::Value CollectAtLeast(const Napi::CallbackInfo& info) {
  auto probs = Typed<double>(info[0], "probs");
  const size_t n = RowLength(info[1], probs);
  const double tau = AnyNumber(info[2], "tau");
  auto values = Typed<double>(info[3], "values");
  if (values.ElementLength() < n) throw BadArgument("collectAtLeast: values must hold at least n elements");
  const double* p = probs.Data();
  double* v = values.Data();
  size_t kept = 0;
  double mass = 0;
  for (size_t i = 0; i < n; ++i) {
    if (p[i] >= tau) {
      v[kept++] = p[i];
      mass += p[i];
    }
  }
  Napi::Object out = Napi::Object::New(info.Env());
  out.Set("n", static_cast<double>(kept));
  out.Set("mass", mass);
  return out;
}

// nthEqual(probs, n, p, rank) -> the id of the rank-th (from 0) entry equal to p, or -1.
Napi::Value NthEqual(const Napi::CallbackInfo& info) {
  auto probs = Typed<double>(info[0], "probs");
  const size_t n = RowLength(info[1], probs);
  const double target = AnyNumber(info[2], "p");
  int64_t rank = Integer(info[3], "rank", 0, kIntMax);
  const double* p = probs.Data();
  for (size_t i = 0; i < n; ++i) {
    if (p[i] == target && rank-- == 0) return Napi::Number::New(info.Env(), static_cast<double>(i));
  }
  return Napi::Number::New(info.Env(), -1);
}

// ---- the training step's element-wise kernels (cpu/elementwise.cc), their test surface ----------
// Each kernel beside the loop it replaced in model.cc, compiled here at the baseline as model.cc is:
// test/native-expf.test.ts asserts the two give the same bits on every CPU kernel level.

// expF32(x, out, libm): out[i] = expf(x[i]) by the active level's kernel, or by glibc's std::exp.
Napi::Value ExpF32(const Napi::CallbackInfo& info) {
  auto x = Typed<float>(info[0], "x");
  auto out = Typed<float>(info[1], "out", static_cast<int64_t>(x.ElementLength()));
  const size_t n = x.ElementLength();
  if (info[2].ToBoolean().Value()) {
    for (size_t i = 0; i < n; ++i) out.Data()[i] = std::exp(x.Data()[i]);
  } else {
    cpu::ExpF32(x.Data(), out.Data(), n);
  }
  return info.Env().Undefined();
}

// swiglu(g, u, act, reference) and swigluBackward(g, u, dg, du, reference): dg holds da on entry.
Napi::Value Swiglu(const Napi::CallbackInfo& info) {
  auto g = Typed<float>(info[0], "g");
  const int64_t n = static_cast<int64_t>(g.ElementLength());
  auto u = Typed<float>(info[1], "u", n);
  auto act = Typed<float>(info[2], "act", n);
  const float* gp = g.Data();
  const float* up = u.Data();
  float* ap = act.Data();
  if (info[3].ToBoolean().Value()) {
    for (int64_t i = 0; i < n; ++i) ap[i] = gp[i] * (1.0f / (1.0f + std::exp(-gp[i]))) * up[i];
  } else {
    cpu::SwigluForward(gp, up, ap, static_cast<size_t>(n));
  }
  return info.Env().Undefined();
}

Napi::Value SwigluBackward(const Napi::CallbackInfo& info) {
  auto g = Typed<float>(info[0], "g");
  const int64_t n = static_cast<int64_t>(g.ElementLength());
  auto u = Typed<float>(info[1], "u", n);
  auto dgv = Typed<float>(info[2], "dg", n);
  auto duv = Typed<float>(info[3], "du", n);
  const float* gp = g.Data();
  const float* up = u.Data();
  float* dg = dgv.Data();
  float* du = duv.Data();
  if (info[4].ToBoolean().Value()) {
    for (int64_t i = 0; i < n; ++i) {
      const float sg = 1.0f / (1.0f + std::exp(-gp[i]));
      const float da = dg[i];
      du[i] = da * gp[i] * sg;
      dg[i] = da * up[i] * sg * (1.0f + gp[i] * (1.0f - sg));
    }
  } else {
    cpu::SwigluBackward(gp, up, dg, du, static_cast<size_t>(n));
  }
  return info.Env().Undefined();
}

// softmaxXentRow(z, target, scale, reference) -> loss; z becomes the row's gradient.
Napi::Value SoftmaxXentRow(const Napi::CallbackInfo& info) {
  auto zv = Typed<float>(info[0], "z");
  const int vocab = static_cast<int>(zv.ElementLength());
  if (vocab < 1) throw BadArgument("softmaxXentRow: z is empty");
  const int target = static_cast<int>(Integer(info[1], "target", 0, vocab - 1));
  const float scale = static_cast<float>(AnyNumber(info[2], "scale"));
  float* z = zv.Data();
  if (!info[3].ToBoolean().Value()) return Napi::Number::New(info.Env(), cpu::SoftmaxXentRow(z, vocab, target, scale));
  float mx = -INFINITY;
  for (int j = 0; j < vocab; ++j) mx = std::max(mx, z[j]);
  float sum = 0.0f;
  for (int j = 0; j < vocab; ++j) sum += std::exp(z[j] - mx);
  const float lse = mx + std::log(sum);
  const float loss = lse - z[target];
  for (int j = 0; j < vocab; ++j) z[j] = std::exp(z[j] - lse) * scale;
  z[target] -= scale;
  return Napi::Number::New(info.Env(), loss);
}

}  // namespace

void InitEngineSampler(Napi::Env env, Napi::Object exports) {
  exports.Set("expF64", Napi::Function::New(env, Guard<kEngineCodes, ExpF64>, "expF64"));
  exports.Set("temperedProbs", Napi::Function::New(env, Guard<kEngineCodes, TemperedProbs>, "temperedProbs"));
  exports.Set("drawInIdOrder", Napi::Function::New(env, Guard<kEngineCodes, DrawInIdOrder>, "drawInIdOrder"));
  exports.Set("collectAtLeast", Napi::Function::New(env, Guard<kEngineCodes, CollectAtLeast>, "collectAtLeast"));
  exports.Set("nthEqual", Napi::Function::New(env, Guard<kEngineCodes, NthEqual>, "nthEqual"));
  exports.Set("expF32", Napi::Function::New(env, Guard<kEngineCodes, ExpF32>, "expF32"));
  exports.Set("swiglu", Napi::Function::New(env, Guard<kEngineCodes, Swiglu>, "swiglu"));
  exports.Set("swigluBackward", Napi::Function::New(env, Guard<kEngineCodes, SwigluBackward>, "swigluBackward"));
  exports.Set("softmaxXentRow", Napi::Function::New(env, Guard<kEngineCodes, SoftmaxXentRow>, "softmaxXentRow"));
}

}  // namespace agentrl::engine
