// The buffer argument of the sum reductions (mpi.allreduceSum, nccl.allreduceSum): a Float32Array or
// a Float64Array, reduced in its own precision.
#pragma once
#include <napi.h>

#include <cstddef>
#include <string>

#include "napi_args.h"
#include "parallel/guard.h"

namespace agentrl::parallel {

struct FloatBuffer {
  void* data = nullptr;
  size_t count = 0;  // elements
  bool f64 = false;  // Float64Array, else Float32Array
};

/** `v` as a FloatBuffer; anything but a Float32Array or a Float64Array is refused with a BadArgument. */
inline FloatBuffer FloatArg(const Napi::Value& v, const std::string& what) {
  if (v.IsTypedArray() && v.As<Napi::TypedArray>().TypedArrayType() == napi_float64_array) {
    auto a = args::Typed<BadArgument, double>(v, what);
    return {a.Data(), a.ElementLength(), true};
  }
  if (v.IsTypedArray() && v.As<Napi::TypedArray>().TypedArrayType() != napi_float32_array) {
    throw BadArgument(what + " has the wrong dtype: expected a Float32Array or a Float64Array");
  }
  auto a = args::Typed<BadArgument, float>(v, what);
  return {a.Data(), a.ElementLength(), false};
}

}  // namespace agentrl::parallel
