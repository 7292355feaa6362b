// softmax and log_softmax over any axis. Forward and backward side by side.
//
// The tensor is viewed as (outer, n, inner) with the softmax taken over n. When
// inner == 1 (the last axis) each group is a contiguous row; otherwise the k-th
// elements of `inner` neighbouring groups form a contiguous run, so the kernels
// sweep k and work on whole runs. Every group whose entries are all -inf gives
// zeros and a zero gradient.
#include <cmath>
#include <limits>

#include "core/ops.h"
#include "core/ops/kernels.h"

namespace rpb {

namespace {

struct Layout {
  int64_t outer = 1, n = 1, inner = 1;
};

Layout layout_of(const char* op, const Tensor& x, int axis) {
  RPB_CHECK(x.is_floating(), op, "expected a float tensor, got ", dtype_name(x.dtype()), " ", x.shape());
  RPB_CHECK(x.dim() >= 1, op, "needs at least one axis, got a 0-D tensor");
  RPB_CHECK(axis >= -x.dim() && axis < x.dim(), op, "axis ", axis, " out of range for shape ", x.shape());
  const int a = axis < 0 ? axis + x.dim() : axis;
  Layout l;
  for (int d = 0; d < a; ++d) l.outer *= x.shape()[d];
  l.n = x.shape()[a];
  for (int d = a + 1; d < x.dim(); ++d) l.inner *= x.shape()[d];
  return l;
}

template <typename T>
using Vec = Eigen::Array<T, Eigen::Dynamic, 1>;

template <typename T>
constexpr T kNegInf = -std::numeric_limits<T>::infinity();

template <typename T>
void softmax_forward(const T* px, T* py, const Layout& l, bool log) {
  const int64_t n = l.n, inner = l.inner;
  if (inner == 1) {
    for (int64_t r = 0; r < l.outer; ++r) {
      const ConstArrayMap<T> x(px + r * n, n);
      ArrayMap<T> y(py + r * n, n);
      const T m = x.maxCoeff();
      if (m == kNegInf<T>) {
        y.setZero();
        continue;
      }
      if (log) {
        y = x - (m + std::log((x - m).exp().sum()));
      } else {
        y = (x - m).exp();
        y *= T(1) / y.sum();
      }
    }
    return;
  }
  Vec<T> m(inner), s(inner);
  for (int64_t o = 0; o < l.outer; ++o) {
    const T* xb = px + o * n * inner;
    T* yb = py + o * n * inner;
    auto X = [&](int64_t k) { return ConstArrayMap<T>(xb + k * inner, inner); };
    auto Y = [&](int64_t k) { return ArrayMap<T>(yb + k * inner, inner); };
    m = X(0);
    for (int64_t k = 1; k < n; ++k) m = m.max(X(k));
    m = (m == kNegInf<T>).select(T(0), m);  // all -inf: shift by 0, so exp gives 0 rather than NaN
    s.setZero();
    if (log) {
      for (int64_t k = 0; k < n; ++k) s += (X(k) - m).exp();
      m += s.log();  // m now holds the logsumexp
      for (int64_t k = 0; k < n; ++k) Y(k) = (s == T(0)).select(T(0), X(k) - m);
    } else {
      for (int64_t k = 0; k < n; ++k) {
        Y(k) = (X(k) - m).exp();
        s += Y(k);
      }
      s = (s == T(0)).select(T(0), s.inverse());
      for (int64_t k = 0; k < n; ++k) Y(k) *= s;
    }
  }
}

// dx = y * (g - sum(g * y)).
template <typename T>
void softmax_backward(const T* pg, const T* py, T* pdx, const Layout& l) {
  const int64_t n = l.n, inner = l.inner;
  if (inner == 1) {
    for (int64_t r = 0; r < l.outer; ++r) {
      const ConstArrayMap<T> g(pg + r * n, n), y(py + r * n, n);
      ArrayMap<T> dx(pdx + r * n, n);
      const T dot = (g * y).sum();
      dx = y * (g - dot);
    }
    return;
  }
  Vec<T> dot(inner);
  for (int64_t o = 0; o < l.outer; ++o) {
    const int64_t base = o * n * inner;
    auto G = [&](int64_t k) { return ConstArrayMap<T>(pg + base + k * inner, inner); };
    auto Y = [&](int64_t k) { return ConstArrayMap<T>(py + base + k * inner, inner); };
    dot.setZero();
    for (int64_t k = 0; k < n; ++k) dot += G(k) * Y(k);
    for (int64_t k = 0; k < n; ++k) ArrayMap<T>(pdx + base + k * inner, inner) = Y(k) * (G(k) - dot);
  }
}

// dx = g - exp(y) * sum(g). A group whose output is all zeros came from an all -inf
// input (a real log_softmax of n > 1 entries cannot be all zeros) and gets zero gradient;
// for n == 1 the formula gives zero anyway.
template <typename T>
void log_softmax_backward(const T* pg, const T* py, T* pdx, const Layout& l) {
  const int64_t n = l.n, inner = l.inner;
  if (inner == 1) {
    for (int64_t r = 0; r < l.outer; ++r) {
      const ConstArrayMap<T> g(pg + r * n, n), y(py + r * n, n);
      ArrayMap<T> dx(pdx + r * n, n);
      if ((y == T(0)).all()) {
        dx.setZero();
        continue;
      }
      const T gs = g.sum();
      dx = g - y.exp() * gs;
    }
    return;
  }
  Vec<T> gs(inner), nonzero(inner);
  for (int64_t o = 0; o < l.outer; ++o) {
    const int64_t base = o * n * inner;
    auto G = [&](int64_t k) { return ConstArrayMap<T>(pg + base + k * inner, inner); };
    auto Y = [&](int64_t k) { return ConstArrayMap<T>(py + base + k * inner, inner); };
    gs.setZero();
    nonzero.setZero();
    for (int64_t k = 0; k < n; ++k) {
      gs += G(k);
      nonzero += (Y(k) != T(0)).template cast<T>();
    }
    for (int64_t k = 0; k < n; ++k)
      ArrayMap<T>(pdx + base + k * inner, inner) = (nonzero == T(0)).select(T(0), G(k) - Y(k).exp() * gs);
  }
}

Tensor softmax_impl(const char* op, OpKind kind, const Tensor& x, int axis) {
  const Layout l = layout_of(op, x, axis);
  const bool log = kind == OpKind::LogSoftmax;
  Tensor out = Tensor::empty(x.shape(), x.dtype(), x.device());
  if (x.is_cuda() && x.numel() > 0)
    cuda::backend(op).softmax(x.dtype(), x.raw_data(), out.raw_mutable_data(), l.outer, l.n, l.inner, log);
  else if (x.numel() > 0)
    dispatch_float(x.dtype(), op, [&](auto tag) {
      using T = typename decltype(tag)::type;
      softmax_forward<T>(x.data<T>(), out.mutable_data<T>(), l, log);
    });
  if (autograd::should_record({&x}))
    autograd::record(kind, out, {&x}, [y = out.detach(), l, log, op](const Tensor& g, InputGrads& gi) {
      Tensor dx = Tensor::empty(y.shape(), y.dtype(), y.device());
      if (cuda::on_cuda(op, {&g, &y}) && y.numel() > 0)
        cuda::backend(op).softmax_backward(y.dtype(), g.raw_data(), y.raw_data(), dx.raw_mutable_data(), l.outer, l.n,
                                           l.inner, log);
      else if (y.numel() > 0)
        dispatch_float(y.dtype(), op, [&](auto tag) {
          using T = typename decltype(tag)::type;
          if (log) log_softmax_backward<T>(g.data<T>(), y.data<T>(), dx.mutable_data<T>(), l);
          else softmax_backward<T>(g.data<T>(), y.data<T>(), dx.mutable_data<T>(), l);
        });
      gi.set(0, dx);
    });
  return out;
}

}  // namespace

Tensor softmax(const Tensor& x, int axis) { return softmax_impl("softmax", OpKind::Softmax, x, axis); }

Tensor log_softmax(const Tensor& x, int axis) { return softmax_impl("log_softmax", OpKind::LogSoftmax, x, axis); }

}  // namespace rpb
