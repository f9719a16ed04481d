// Argument checks shared by the addon's entry points (engine/bindings.cc, kernels/kernels_module.cc, parallel/):
// each throws E, the component's std::invalid_argument subclass, which its entry-point guard turns
// into a JS error with the component's INVALID_ARGUMENT code. Numbers are checked for finiteness
// and range before any cast (a NaN cast to an integer is undefined behaviour).
#pragma once
#include <napi.h>

#include <cmath>
#include <cstdint>
#include <string>

namespace agentrl::args {

// The N-API element type and JS class name of each C++ element type the entry points take.
template <typename T>
struct TypedArrayKind;
#define AGENTRL_TYPED_ARRAY_KIND(T, TYPE, NAME)              \
  template <>                                                \
  struct TypedArrayKind<T> {                                 \
    static constexpr napi_typedarray_type kType = TYPE;      \
    static constexpr const char* kName = NAME;               \
  };
AGENTRL_TYPED_ARRAY_KIND(float, napi_float32_array, "Float32Array")
AGENTRL_TYPED_ARRAY_KIND(double, napi_float64_array, "Float64Array")
AGENTRL_TYPED_ARRAY_KIND(int32_t, napi_int32_array, "Int32Array")
AGENTRL_TYPED_ARRAY_KIND(uint8_t, napi_uint8_array, "Uint8Array")
AGENTRL_TYPED_ARRAY_KIND(uint16_t, napi_uint16_array, "Uint16Array")
#undef AGENTRL_TYPED_ARRAY_KIND

/** A typed array of element type T and, when `length` >= 0, exactly `length` elements. */
template <typename E, typename T>
Napi::TypedArrayOf<T> Typed(const Napi::Value& v, const std::string& what, int64_t length = -1) {
  if (!v.IsTypedArray()) throw E(what + " must be a typed array (" + TypedArrayKind<T>::kName + ")");
  if (v.As<Napi::TypedArray>().TypedArrayType() != TypedArrayKind<T>::kType) {
    throw E(what + " has the wrong dtype: expected a " + TypedArrayKind<T>::kName);
  }
  auto a = v.As<Napi::TypedArrayOf<T>>();
  if (length >= 0 && static_cast<int64_t>(a.ElementLength()) != length) {
    throw E(what + " has " + std::to_string(a.ElementLength()) + " elements, expected " + std::to_string(length));
  }
  return a;
}

/** A finite number (NaN and infinities refused). */
template <typename E>
double Finite(const Napi::Value& v, const std::string& what) {
  if (!v.IsNumber()) throw E(what + " must be a number");
  const double d = v.As<Napi::Number>().DoubleValue();
  if (!std::isfinite(d)) throw E(what + " must be finite, got " + std::to_string(d));
  return d;
}

/** An integer in [lo, hi] (fractions, NaN and infinities refused). */
template <typename E>
int64_t IntegerIn(const Napi::Value& v, const std::string& what, int64_t lo, int64_t hi) {
  const double d = Finite<E>(v, what);
  if (d != std::floor(d) || d < static_cast<double>(lo) || d > static_cast<double>(hi)) {
    throw E(what + " must be an integer in [" + std::to_string(lo) + ", " + std::to_string(hi) + "], got " +
            std::to_string(d));
  }
  return static_cast<int64_t>(d);
}

}  // namespace agentrl::args
