// rpb/core/dtype_dispatch.h: calling a generic lambda with a tensor's element type. Without Eigen, so the CUDA
// backend's sources (core/cuda/backend_impl.h, compiled by nvcc too) use the same dispatch as core/dispatch.h.
#pragma once

#include <utility>

#include "core/error.h"
#include "core/tensor.h"

namespace rpb {

/// Carries an element type into a generic lambda: `using T = typename decltype(tag)::type;`.
template <typename T>
struct TypeTag {
  using type = T;
};

/// Calls f(TypeTag<T>{}) with T = float or double; throws naming `op` for other dtypes. The usual call:
///   dispatch_float(g.dtype(), "op", [&](auto tag) { using T = typename decltype(tag)::type; ... });
template <typename F>
void dispatch_float(DType d, const char* op, F&& f) {
  switch (d) {
    case DType::f32: f(TypeTag<float>{}); return;
    case DType::f64: f(TypeTag<double>{}); return;
    default: RPB_FAIL(op, "expected a float32 or float64 tensor, got ", dtype_name(d));
  }
}

/// Like dispatch_float, with int64_t as well.
template <typename F>
void dispatch_all(DType d, const char* op, F&& f) {
  if (d == DType::i64) {
    f(TypeTag<int64_t>{});
    return;
  }
  dispatch_float(d, op, std::forward<F>(f));
}

}  // namespace rpb
