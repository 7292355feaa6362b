// Mask-driven selection: masked_fill and where. Forward and backward side by side.
#include <algorithm>

#include "core/ops.h"
#include "core/ops/kernels.h"

namespace rpb {

// ---- masked_fill ----

namespace {

void record_masked_fill(const Tensor& x, const Tensor& mask, Tensor& out) {
  if (autograd::should_record({&x}))
    autograd::record(OpKind::MaskedFill, out, {&x},
                     [mask = mask.detach()](const Tensor& g, InputGrads& gi) { gi.set(0, masked_fill(g, mask, 0.0)); });
}

}  // namespace

Tensor masked_fill(const Tensor& x, const Tensor& mask, double value) {
  RPB_CHECK(x.is_floating(), "masked_fill", "input must be a float tensor, got ", dtype_name(x.dtype()), " ",
            x.shape());
  bool fits = mask.dim() <= x.dim();
  for (int d = 0; fits && d < mask.dim(); ++d) {
    const int64_t m = mask.shape()[d], e = x.shape()[d + x.dim() - mask.dim()];
    fits = m == e || m == 1;
  }
  RPB_CHECK(fits, "masked_fill", "mask ", mask.shape(), " does not broadcast to input ", x.shape());
  if (cuda::on_cuda("masked_fill", {&x, &mask})) {
    Tensor out = Tensor::empty(x.shape(), x.dtype(), Device::cuda);
    cuda::backend("masked_fill").masked_fill(x.dtype(), x.raw_data(), mask.dtype(), mask.raw_data(), value,
                                             out.raw_mutable_data(), cuda::broadcast_plan(x.shape(), {x.shape(), mask.shape()}));
    record_masked_fill(x, mask, out);
    return out;
  }
  Tensor out = Tensor::empty(x.shape(), x.dtype());
  dispatch_float(x.dtype(), "masked_fill", [&](auto tag) {
    using T = typename decltype(tag)::type;
    dispatch_all(mask.dtype(), "masked_fill", [&](auto mtag) {
      using M = typename decltype(mtag)::type;
      const T v = static_cast<T>(value);
      const T* px = x.data<T>();
      const M* pm = mask.data<M>();
      T* po = out.mutable_data<T>();
      for_each_broadcast_run<2>(x.shape(), {x.shape(), mask.shape()},
                                [&](int64_t oo, const auto& off, const auto& st, int64_t n) {
                                  ArrayMap<T> o(po + oo, n);
                                  ConstArrayMap<T> xs(px + off[0], n);
                                  if (st[1] == 1)
                                    o = (ConstArrayMap<M>(pm + off[1], n) != M(0)).select(T(v), xs);
                                  else if (pm[off[1]] != M(0))
                                    o.setConstant(v);
                                  else
                                    o = xs;
                                });
    });
  });
  record_masked_fill(x, mask, out);
  return out;
}

// ---- where ----

Tensor where(const Tensor& cond, const Tensor& a, const Tensor& b) {
  RPB_CHECK(a.dtype() == b.dtype() && a.is_floating(), "where", "a and b must share a float dtype, got ",
            dtype_name(a.dtype()), " ", a.shape(), " and ", dtype_name(b.dtype()), " ", b.shape());
  Shape so;
  {
    const int n = std::max({cond.dim(), a.dim(), b.dim()});
    for (int i = 0; i < n; ++i) {
      int64_t e = 1;
      bool ok = true;
      for (const Shape* s : {&cond.shape(), &a.shape(), &b.shape()}) {
        const int j = i - (n - s->size());
        const int64_t d = j >= 0 ? (*s)[j] : 1;
        if (d == 1) continue;
        ok &= e == 1 || e == d;
        e = d;
      }
      RPB_CHECK(ok, "where", "shapes cond ", cond.shape(), ", a ", a.shape(), " and b ", b.shape(),
                " do not broadcast");
      so.push_back(e);
    }
  }
  const Device dev = cuda::op_device("where", {&cond, &a, &b});
  Tensor out = Tensor::empty(so, a.dtype(), dev);
  if (dev == Device::cuda)
    cuda::backend("where").where(a.dtype(), cond.dtype(), cond.raw_data(), a.raw_data(), b.raw_data(),
                                 out.raw_mutable_data(), cuda::broadcast_plan(so, {cond.shape(), a.shape(), b.shape()}));
  else dispatch_float(a.dtype(), "where", [&](auto tag) {
    using T = typename decltype(tag)::type;
    using Arr = Eigen::Array<T, Eigen::Dynamic, 1>;
    dispatch_all(cond.dtype(), "where", [&](auto ctag) {
      using C = typename decltype(ctag)::type;
      const C* pc = cond.data<C>();
      const T* pa = a.data<T>();
      const T* pb = b.data<T>();
      T* po = out.mutable_data<T>();
      for_each_broadcast_run<3>(so, {cond.shape(), a.shape(), b.shape()},
                                [&](int64_t oo, const auto& off, const auto& st, int64_t n) {
                                  ArrayMap<T> o(po + oo, n);
                                  if (st[0] == 0) {  // one condition for the whole run: a copy or a fill
                                    const bool take_a = pc[off[0]] != C(0);
                                    const T* src = take_a ? pa + off[1] : pb + off[2];
                                    if ((take_a ? st[1] : st[2]) == 1) o = ConstArrayMap<T>(src, n);
                                    else o.setConstant(*src);
                                    return;
                                  }
                                  const auto c = ConstArrayMap<C>(pc + off[0], n) != C(0);
                                  if (st[1] == 1 && st[2] == 1)
                                    o = c.select(ConstArrayMap<T>(pa + off[1], n), ConstArrayMap<T>(pb + off[2], n));
                                  else if (st[1] == 1)
                                    o = c.select(ConstArrayMap<T>(pa + off[1], n), Arr::Constant(n, pb[off[2]]));
                                  else if (st[2] == 1)
                                    o = c.select(Arr::Constant(n, pa[off[1]]), ConstArrayMap<T>(pb + off[2], n));
                                  else
                                    o = c.select(Arr::Constant(n, pa[off[1]]), Arr::Constant(n, pb[off[2]]));
                                });
    });
  });
  if (autograd::should_record({&a, &b}))
    autograd::record(OpKind::Where, out, {&a, &b},
                     [cond = cond.detach(), sa = a.shape(), sb = b.shape()](const Tensor& g, InputGrads& gi) {
                       const Tensor zero = Tensor::zeros(Shape{}, g.dtype(), g.device());
                       if (gi.needed(0)) gi.set(0, sum_to(where(cond, g, zero), sa));
                       if (gi.needed(1)) gi.set(1, sum_to(where(cond, zero, g), sb));
                     });
  return out;
}

}  // namespace rpb
