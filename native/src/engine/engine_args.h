// The engine's argument checks, shared by its CPU entry points (bindings.cc) and its device ones
// (gpu_bindings.cc), so both refuse the same bad calls with the same messages: the model config,
// token ids, cuSeqlens, AdamW's hyper-parameters. Each throws BadArgument, which the addon's guard
// (napi_guard.h) turns into a JS error with code ENGINE_INVALID_ARGUMENT.
#pragma once
#include <napi.h>

#include <cstdint>
#include <limits>
#include <stdexcept>
#include <string>

#include "engine/model.h"
#include "napi_args.h"
#include "napi_guard.h"

namespace agentrl::engine {

// A bad argument from JS: becomes a JS error with code ENGINE_INVALID_ARGUMENT.
struct BadArgument : std::invalid_argument {
  using std::invalid_argument::invalid_argument;
};

inline constexpr ErrorCodes kEngineCodes{"engine: ", "ENGINE_INVALID_ARGUMENT", "ENGINE_NATIVE_FAILURE",
                                         "ENGINE_NATIVE_FAILURE"};

inline constexpr int64_t kIntMax = std::numeric_limits<int32_t>::max();

template <typename T>
Napi::TypedArrayOf<T> Typed(const Napi::Value& v, const char* what, int64_t length = -1) {
  return args::Typed<BadArgument, T>(v, what, length);
}

inline double Number(const Napi::Value& v, const char* what) { return args::Finite<BadArgument>(v, what); }

inline int64_t Integer(const Napi::Value& v, const char* what, int64_t lo, int64_t hi) {
  return args::IntegerIn<BadArgument>(v, what, lo, hi);
}

/** createModel's config object: sizes >= 1, eps and ropeTheta > 0, heads a multiple of kvHeads. */
inline ModelConfig ConfigFromJs(const Napi::Value& v) {
  if (!v.IsObject()) throw BadArgument("createModel needs a config object");
  Napi::Object o = v.As<Napi::Object>();
  auto dim = [&](const char* key) { return static_cast<int>(Integer(o.Get(key), key, 1, kIntMax)); };
  ModelConfig c;
  c.vocab = dim("vocab");
  c.hidden = dim("hidden");
  c.intermediate = dim("intermediate");
  c.layers = dim("layers");
  c.heads = dim("heads");
  c.kv_heads = dim("kvHeads");
  c.head_dim = dim("headDim");
  c.eps = static_cast<float>(Number(o.Get("eps"), "eps"));
  c.rope_theta = static_cast<float>(Number(o.Get("ropeTheta"), "ropeTheta"));
  if (!(c.eps > 0) || !(c.rope_theta > 0)) throw BadArgument("eps and ropeTheta must be > 0");
  if (c.head_dim % 2 != 0) throw BadArgument("headDim must be even");
  if (c.heads % c.kv_heads != 0) throw BadArgument("heads must be a multiple of kvHeads");
  if (static_cast<int64_t>(c.heads) * c.head_dim > kIntMax || static_cast<int64_t>(c.vocab) * c.hidden > (1LL << 40)) {
    throw BadArgument("heads x headDim or vocab x hidden is too large");
  }
  c.qk_norm = o.Get("qkNorm").ToBoolean();
  c.qkv_bias = o.Get("qkvBias").ToBoolean();
  c.o_bias = o.Get("oBias").ToBoolean();
  c.tied = o.Get("tied").ToBoolean();
  return c;
}

/** tokens in [0, vocab) with a message naming the first bad one. */
inline void CheckTokens(const int32_t* t, size_t n, int vocab, const char* what) {
  for (size_t i = 0; i < n; ++i) {
    if (t[i] < 0 || t[i] >= vocab) {
      throw BadArgument(std::string(what) + "[" + std::to_string(i) + "] is " + std::to_string(t[i]) +
                        ", outside the vocabulary [0, " + std::to_string(vocab) + ")");
    }
  }
}

/** A packed batch's tokenIds and cuSeqlens: 1 to 2^31-1 tokens, cuSeqlens [0, ..., T] non-decreasing. */
inline void CheckPackedBatch(const Napi::TypedArrayOf<int32_t>& tokens, const Napi::TypedArrayOf<int32_t>& cu_array) {
  const size_t total = tokens.ElementLength();
  if (total < 1 || total > static_cast<size_t>(kIntMax)) throw BadArgument("tokenIds must hold 1 to 2^31-1 tokens");
  const int32_t* cu = cu_array.Data();
  const size_t ncu = cu_array.ElementLength();
  if (ncu < 2 || cu[0] != 0 || cu[ncu - 1] != static_cast<int32_t>(total)) {
    throw BadArgument("cuSeqlens must hold at least [0, T] and start at 0 and end at T = " + std::to_string(total));
  }
  for (size_t i = 1; i < ncu; ++i)
    if (cu[i] < cu[i - 1]) throw BadArgument("cuSeqlens must be non-decreasing (index " + std::to_string(i) + ")");
}

/** adamw(handle, lr, beta1, beta2, eps, weightDecay, step, gradScale), checked. */
struct AdamWArgs {
  float lr, beta1, beta2, eps, weight_decay, grad_scale;
  int64_t step;
};

inline AdamWArgs AdamWFromJs(const Napi::CallbackInfo& info) {
  const double lr = Number(info[1], "lr"), b1 = Number(info[2], "beta1"), b2 = Number(info[3], "beta2");
  const double eps = Number(info[4], "eps"), wd = Number(info[5], "weightDecay");
  const int64_t step = Integer(info[6], "step", 1, (1LL << 53));
  const double scale = Number(info[7], "gradScale");
  if (lr < 0 || wd < 0 || !(eps > 0)) throw BadArgument("lr and weightDecay must be >= 0 and eps > 0");
  if (!(b1 >= 0 && b1 < 1) || !(b2 >= 0 && b2 < 1)) throw BadArgument("beta1 and beta2 must be in [0, 1)");
  return {static_cast<float>(lr), static_cast<float>(b1), static_cast<float>(b2), static_cast<float>(eps),
          static_cast<float>(wd), static_cast<float>(scale), step};
}

}  // namespace agentrl::engine
