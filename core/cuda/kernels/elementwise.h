// rpb/core/cuda/kernels/elementwise.h: the per-element bodies of the CUDA backend: fill, cast, the unary functions
// and their gradients, broadcasting binary functions, strided copies, masked_fill and where. Each computes what
// its CPU op in core/ops/ computes, in the same arithmetic (the CPU's Eigen expressions, written out).
#pragma once

#include <cstdint>

#include "core/cuda/backend.h"
#include "core/cuda/hd.h"

namespace rpb::cuda {

inline constexpr double kSqrt1_2 = 0.70710678118654752440;      // 1/sqrt(2)
inline constexpr double kInvSqrt2Pi = 0.39894228040143267794;   // 1/sqrt(2*pi)
inline constexpr double kSqrt2OverPi = 0.79788456080286535588;  // sqrt(2/pi)
inline constexpr double kGeluC = 0.044715;

/// Offset of output position i in operand k of a broadcast plan.
RPB_HD inline void plan_offsets(const Strides& p, int64_t i, int64_t* off, int operands) {
  for (int k = 0; k < operands; ++k) off[k] = 0;
  for (int d = p.nd - 1; d >= 0; --d) {
    const int64_t e = p.ext[d], digit = i % e;
    i /= e;
    for (int k = 0; k < operands; ++k) off[k] += digit * p.st[k][d];
  }
}

template <typename T>
struct FillBody {
  T* p;
  T v;
  RPB_HD void operator()(int64_t i) const { p[i] = v; }
};

template <typename X, typename Y>
struct CastBody {
  const X* x;
  Y* y;
  RPB_HD void operator()(int64_t i) const { y[i] = static_cast<Y>(x[i]); }
};

template <typename T>
RPB_HD inline T unary_value(UnaryFn f, T x, T s) {
  switch (f) {
    case UnaryFn::neg: return -x;
    case UnaryFn::add_scalar: return x + s;
    case UnaryFn::mul_scalar: return x * s;
    case UnaryFn::pow: return m_pow(x, s);
    case UnaryFn::square: return x * x;
    case UnaryFn::inverse: return T(1) / x;
    case UnaryFn::exp: return m_exp(x);
    case UnaryFn::log: return m_log(x);
    case UnaryFn::sqrt: return m_sqrt(x);
    case UnaryFn::tanh: return m_tanh(x);
    case UnaryFn::sigmoid: return T(1) / (T(1) + m_exp(-x));
    case UnaryFn::relu: return x > T(0) ? x : T(0);
    case UnaryFn::gelu_erf: return T(0.5) * x * (T(1) + m_erf(x * T(kSqrt1_2)));
    case UnaryFn::gelu_tanh: return T(0.5) * x * (T(1) + m_tanh(T(kSqrt2OverPi) * (x + T(kGeluC) * (x * x * x))));
  }
  return x;
}

/// d f / dx times g, from the tensor the CPU's backward saves: y for exp, sqrt, tanh, sigmoid, relu; x otherwise.
template <typename T>
RPB_HD inline T unary_grad_value(UnaryFn f, T g, T s) {
  switch (f) {
    case UnaryFn::exp: return g * s;
    case UnaryFn::log: return g / s;
    case UnaryFn::sqrt: return T(0.5) * g / s;
    case UnaryFn::tanh: return g * (T(1) - s * s);
    case UnaryFn::sigmoid: return g * s * (T(1) - s);
    case UnaryFn::relu: return s > T(0) ? g : T(0);
    case UnaryFn::gelu_erf:
      return g * (T(0.5) * (T(1) + m_erf(s * T(kSqrt1_2))) + T(kInvSqrt2Pi) * s * m_exp(T(-0.5) * (s * s)));
    case UnaryFn::gelu_tanh: {
      const T t = m_tanh(T(kSqrt2OverPi) * (s + T(kGeluC) * (s * s * s)));
      return g * (T(0.5) * (T(1) + t) + T(0.5 * kSqrt2OverPi) * s * (T(1) - t * t) * (T(1) + T(3 * kGeluC) * (s * s)));
    }
    default: return g;  // neg, the scalar ops and pow differentiate through other ops (core/ops/elementwise.cpp)
  }
}

template <typename T>
struct UnaryBody {
  UnaryFn f;
  T s;
  const T* x;
  T* y;
  RPB_HD void operator()(int64_t i) const { y[i] = unary_value(f, x[i], s); }
};

template <typename T>
struct UnaryGradBody {
  UnaryFn f;
  const T* g;
  const T* saved;
  T* out;
  RPB_HD void operator()(int64_t i) const { out[i] = unary_grad_value(f, g[i], saved[i]); }
};

template <typename T>
struct BinaryBody {
  BinaryFn f;
  const T* a;
  const T* b;
  T* out;
  Strides plan;
  RPB_HD void operator()(int64_t i) const {
    int64_t off[2];
    plan_offsets(plan, i, off, 2);
    const T x = a[off[0]], y = b[off[1]];
    switch (f) {
      case BinaryFn::add: out[i] = x + y; break;
      case BinaryFn::sub: out[i] = x - y; break;
      case BinaryFn::mul: out[i] = x * y; break;
      case BinaryFn::div: out[i] = x / y; break;
    }
  }
};

/// Copies elements of type E (the bits of any dtype of that size).
template <typename E>
struct StridedCopyBody {
  const E* src;
  E* dst;
  Strides plan;
  RPB_HD void operator()(int64_t i) const {
    int64_t off[2];
    plan_offsets(plan, i, off, 2);
    dst[off[1]] = src[off[0]];
  }
};

template <typename T, typename M>
struct MaskedFillBody {
  const T* x;
  const M* mask;
  T value;
  T* out;
  Strides plan;
  RPB_HD void operator()(int64_t i) const {
    int64_t off[2];
    plan_offsets(plan, i, off, 2);
    out[i] = mask[off[1]] != M(0) ? value : x[off[0]];
  }
};

template <typename T, typename C>
struct WhereBody {
  const C* cond;
  const T* a;
  const T* b;
  T* out;
  Strides plan;
  RPB_HD void operator()(int64_t i) const {
    int64_t off[3];
    plan_offsets(plan, i, off, 3);
    out[i] = cond[off[0]] != C(0) ? a[off[1]] : b[off[2]];
  }
};

/// One block finds the first flat position whose index is out of range (and not `allowed`); writes it or -1.
struct FirstOutOfRangeBody {
  const int64_t* idx;
  int64_t n, bound, allowed;
  int64_t* result;
  template <typename Ctx>
  RPB_HD void operator()(int64_t, Ctx& ctx) const {
    const int64_t* ix = idx;
    const int64_t b = bound, a = allowed;
    const int64_t first = ctx.first(n, [=](int64_t j) { return (ix[j] < 0 || ix[j] >= b) && ix[j] != a; });
    int64_t* out = result;
    const int64_t total = n;
    ctx.each(1, [=](int64_t) { *out = first < total ? first : -1; });
  }
};

}  // namespace rpb::cuda
