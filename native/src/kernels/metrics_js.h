// The policy-loss metrics as the JS object every binding returns (CPU kernels and the device engine).
#pragma once

#include <napi.h>

#include "kernels/policy_loss.h"

namespace agentrl::kernels {

inline Napi::Object MetricsToJs(Napi::Env env, const Metrics& m) {
  Napi::Object r = Napi::Object::New(env);
  r.Set("loss", m.loss);
  r.Set("tokens", m.tokens);
  r.Set("clipFracLow", m.clip_low);
  r.Set("clipFracHigh", m.clip_high);
  r.Set("clipFracDual", m.clip_dual);
  r.Set("approxKl", m.approx_kl);
  r.Set("ppoKl", m.ppo_kl);
  r.Set("entropy", m.entropy);
  return r;
}

}  // namespace agentrl::kernels
