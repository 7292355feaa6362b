// Broadcasting binary ops and scalar ops: forward and backward side by side.
#include <algorithm>
#include <cmath>

#include "core/ops.h"
#include "core/ops/kernels.h"

namespace rpb {

namespace {

void check_same_float(const char* op, const Tensor& a, const Tensor& b) {
  RPB_CHECK(a.dtype() == b.dtype(), op, "dtype mismatch: ", dtype_name(a.dtype()), " ", a.shape(), " vs ",
            dtype_name(b.dtype()), " ", b.shape());
  RPB_CHECK(a.is_floating(), op, "expected float tensors, got ", dtype_name(a.dtype()));
}

// out = f(a, b) over the broadcast shape. `f(o, x, y)` assigns to the Eigen map `o`;
// x and y are Eigen arrays or scalars, so each inner run is one vectorized expression.
template <typename F>
Tensor broadcast_binary(const char* op, cuda::BinaryFn fn, const Tensor& a, const Tensor& b, F f) {
  check_same_float(op, a, b);
  const Shape os = broadcast_shapes(a.shape(), b.shape(), op);
  if (cuda::on_cuda(op, {&a, &b})) {
    Tensor out = Tensor::empty(os, a.dtype(), Device::cuda);
    cuda::backend(op).binary(fn, a.dtype(), a.raw_data(), b.raw_data(), out.raw_mutable_data(),
                             cuda::broadcast_plan(os, {a.shape(), b.shape()}));
    return out;
  }
  Tensor out = Tensor::empty(os, a.dtype());
  dispatch_float(a.dtype(), op, [&](auto tag) {
    using T = typename decltype(tag)::type;
    using Arr = Eigen::Array<T, Eigen::Dynamic, 1>;
    const T* pa = a.data<T>();
    const T* pb = b.data<T>();
    T* po = out.mutable_data<T>();
    // Same shapes, or one operand a row repeated over the other's rows (a Linear's bias): blocks of rows.
    const bool a_full = a.shape() == os, b_full = b.shape() == os;
    const auto is_row = [&](const Shape& s) {
      return s.size() <= os.size() && s.numel() > 0 && std::equal(s.begin(), s.end(), os.end() - s.size());
    };
    if (a_full && b_full) {
      for_blocks(os.numel(), [&](int64_t begin, int64_t end) {
        ArrayMap<T> o(po + begin, end - begin);
        f(o, ConstArrayMap<T>(pa + begin, end - begin), ConstArrayMap<T>(pb + begin, end - begin));
      });
      return;
    }
    if ((a_full && is_row(b.shape())) || (b_full && is_row(a.shape()))) {
      const int64_t row = a_full ? b.numel() : a.numel(), rows = os.numel() / row;
      for_blocks(rows, [&](int64_t r0, int64_t r1) {
        for (int64_t r = r0; r < r1; ++r) {
          ArrayMap<T> o(po + r * row, row);
          f(o, ConstArrayMap<T>(pa + (a_full ? r * row : 0), row), ConstArrayMap<T>(pb + (b_full ? r * row : 0), row));
        }
      }, std::max<int64_t>(1, kElementBlock / row));
      return;
    }
    for_each_broadcast_run<2>(os, {a.shape(), b.shape()}, [&](int64_t oo, const auto& off, const auto& st, int64_t n) {
      ArrayMap<T> o(po + oo, n);
      if (st[0] == 1 && st[1] == 1) f(o, ConstArrayMap<T>(pa + off[0], n), ConstArrayMap<T>(pb + off[1], n));
      else if (st[1] == 1) f(o, pa[off[0]], ConstArrayMap<T>(pb + off[1], n));
      else if (st[0] == 1) f(o, ConstArrayMap<T>(pa + off[0], n), pb[off[1]]);
      else f(o, Arr::Constant(n, pa[off[0]]), Arr::Constant(n, pb[off[1]]));
    });
  });
  return out;
}

}  // namespace

// ---- internal helpers (kernels.h) ----

void add_inplace(const Tensor& dst, const Tensor& src) {
  check_same_float("add_inplace", dst, src);
  RPB_CHECK(dst.shape() == src.shape(), "add_inplace", "shapes ", dst.shape(), " and ", src.shape(), " differ");
  if (cuda::on_cuda("add_inplace", {&dst, &src})) {
    cuda::backend("add_inplace").binary(cuda::BinaryFn::add, dst.dtype(), dst.raw_data(), src.raw_data(),
                                        dst.raw_mutable_data(), cuda::broadcast_plan(dst.shape(), {dst.shape(), src.shape()}));
    return;
  }
  dispatch_float(dst.dtype(), "add_inplace", [&](auto tag) {
    using T = typename decltype(tag)::type;
    T* pd = dst.mutable_data<T>();
    const T* ps = src.data<T>();
    for_blocks(dst.numel(), [&](int64_t begin, int64_t end) {
      ArrayMap<T>(pd + begin, end - begin) += ConstArrayMap<T>(ps + begin, end - begin);
    });
  });
}

Tensor expand(const Tensor& x, const Shape& shape) {
  if (x.shape() == shape) return x;
  if (x.is_cuda()) {
    Tensor out = Tensor::empty(shape, x.dtype(), Device::cuda);
    cuda::backend("expand").strided_copy(x.dtype(), x.raw_data(), 0, out.raw_mutable_data(), 0,
                                         cuda::copy_plan(shape, broadcast_strides(x.shape(), shape),
                                                         contiguous_strides(shape)));
    return out;
  }
  Tensor out = Tensor::empty(shape, x.dtype());
  dispatch_float(x.dtype(), "expand", [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* px = x.data<T>();
    T* po = out.mutable_data<T>();
    for_each_broadcast_run<1>(shape, {x.shape()}, [&](int64_t oo, const auto& off, const auto& st, int64_t n) {
      if (st[0] == 1) ArrayMap<T>(po + oo, n) = ConstArrayMap<T>(px + off[0], n);
      else ArrayMap<T>(po + oo, n).setConstant(px[off[0]]);
    });
  });
  return out;
}

// ---- binary ops ----

Tensor add(const Tensor& a, const Tensor& b) {
  Tensor out = broadcast_binary("add", cuda::BinaryFn::add, a, b, [](auto& o, const auto& x, const auto& y) { o = x + y; });
  if (autograd::should_record({&a, &b}))
    autograd::record(OpKind::Add, out, {&a, &b}, [sa = a.shape(), sb = b.shape()](const Tensor& g, InputGrads& gi) {
      if (gi.needed(0)) gi.set(0, sum_to(g, sa));
      if (gi.needed(1)) gi.set(1, sum_to(g, sb));
    });
  return out;
}

Tensor sub(const Tensor& a, const Tensor& b) {
  Tensor out = broadcast_binary("sub", cuda::BinaryFn::sub, a, b, [](auto& o, const auto& x, const auto& y) { o = x - y; });
  if (autograd::should_record({&a, &b}))
    autograd::record(OpKind::Sub, out, {&a, &b}, [sa = a.shape(), sb = b.shape()](const Tensor& g, InputGrads& gi) {
      if (gi.needed(0)) gi.set(0, sum_to(g, sa));
      if (gi.needed(1)) gi.set(1, sum_to(neg(g), sb));
    });
  return out;
}

Tensor mul(const Tensor& a, const Tensor& b) {
  Tensor out = broadcast_binary("mul", cuda::BinaryFn::mul, a, b, [](auto& o, const auto& x, const auto& y) { o = x * y; });
  if (autograd::should_record({&a, &b})) {
    // Save only the factor each needed gradient reads.
    Tensor saved_a = b.requires_grad() ? a.detach() : Tensor();
    Tensor saved_b = a.requires_grad() ? b.detach() : Tensor();
    autograd::record(OpKind::Mul, out, {&a, &b},
                     [saved_a, saved_b, sa = a.shape(), sb = b.shape()](const Tensor& g, InputGrads& gi) {
                       if (gi.needed(0)) gi.set(0, sum_to(mul(g, saved_b), sa));
                       if (gi.needed(1)) gi.set(1, sum_to(mul(g, saved_a), sb));
                     });
  }
  return out;
}

Tensor div(const Tensor& a, const Tensor& b) {
  Tensor out = broadcast_binary("div", cuda::BinaryFn::div, a, b, [](auto& o, const auto& x, const auto& y) { o = x / y; });
  if (autograd::should_record({&a, &b}))
    autograd::record(OpKind::Div, out, {&a, &b},
                     [sa = a.shape(), b = b.detach(), a = b.requires_grad() ? a.detach() : Tensor()](
                         const Tensor& g, InputGrads& gi) {
                       const Tensor g_over_b = div(g, b);
                       if (gi.needed(0)) gi.set(0, sum_to(g_over_b, sa));
                       // d(a/b)/db = -a/b^2
                       if (gi.needed(1)) gi.set(1, sum_to(neg(div(mul(g_over_b, a), b)), b.shape()));
                     });
  return out;
}

// ---- unary and scalar ops ----

Tensor neg(const Tensor& x) {
  Tensor out = map_unary("neg", cuda::UnaryFn::neg, 0, x, [](auto& o, const auto& v) { o = -v; });
  if (autograd::should_record({&x}))
    autograd::record(OpKind::Neg, out, {&x}, [](const Tensor& g, InputGrads& gi) { gi.set(0, neg(g)); });
  return out;
}

Tensor add_scalar(const Tensor& x, double s) {
  Tensor out = map_unary("add_scalar", cuda::UnaryFn::add_scalar, s, x, [s](auto& o, const auto& v) { o = v + static_cast<ScalarOf<decltype(v)>>(s); });
  if (autograd::should_record({&x}))
    autograd::record(OpKind::AddScalar, out, {&x}, [](const Tensor& g, InputGrads& gi) { gi.set(0, g); });
  return out;
}

Tensor mul_scalar(const Tensor& x, double s) {
  Tensor out = map_unary("mul_scalar", cuda::UnaryFn::mul_scalar, s, x, [s](auto& o, const auto& v) { o = v * static_cast<ScalarOf<decltype(v)>>(s); });
  if (autograd::should_record({&x}))
    autograd::record(OpKind::MulScalar, out, {&x}, [s](const Tensor& g, InputGrads& gi) { gi.set(0, mul_scalar(g, s)); });
  return out;
}

Tensor pow(const Tensor& x, double p) {
  Tensor out;
  if (p == 2.0) out = map_unary("pow", cuda::UnaryFn::square, p, x, [](auto& o, const auto& v) { o = v.square(); });
  else if (p == -1.0) out = map_unary("pow", cuda::UnaryFn::inverse, p, x, [](auto& o, const auto& v) { o = v.inverse(); });
  else if (p == 0.5) out = map_unary("pow", cuda::UnaryFn::sqrt, p, x, [](auto& o, const auto& v) { o = v.sqrt(); });
  else out = map_unary("pow", cuda::UnaryFn::pow, p, x, [p](auto& o, const auto& v) { o = v.pow(static_cast<ScalarOf<decltype(v)>>(p)); });
  if (autograd::should_record({&x}))
    autograd::record(OpKind::PowScalar, out, {&x}, [x = x.detach(), p](const Tensor& g, InputGrads& gi) {
      gi.set(0, mul(g, mul_scalar(pow(x, p - 1.0), p)));
    });
  return out;
}

// ---- operators ----

Tensor operator+(const Tensor& a, const Tensor& b) { return add(a, b); }
Tensor operator-(const Tensor& a, const Tensor& b) { return sub(a, b); }
Tensor operator*(const Tensor& a, const Tensor& b) { return mul(a, b); }
Tensor operator/(const Tensor& a, const Tensor& b) { return div(a, b); }
Tensor operator-(const Tensor& x) { return neg(x); }
Tensor operator+(const Tensor& x, double s) { return add_scalar(x, s); }
Tensor operator+(double s, const Tensor& x) { return add_scalar(x, s); }
Tensor operator-(const Tensor& x, double s) { return add_scalar(x, -s); }
Tensor operator-(double s, const Tensor& x) { return add_scalar(neg(x), s); }
Tensor operator*(const Tensor& x, double s) { return mul_scalar(x, s); }
Tensor operator*(double s, const Tensor& x) { return mul_scalar(x, s); }
Tensor operator/(const Tensor& x, double s) { return mul_scalar(x, 1.0 / s); }
Tensor operator/(double s, const Tensor& x) { return mul_scalar(pow(x, -1.0), s); }

}  // namespace rpb
