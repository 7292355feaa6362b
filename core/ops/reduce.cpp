// Reductions over axes: sum, mean, max. Forward and backward side by side.
#include <algorithm>
#include <cmath>
#include <limits>

#include "core/ops.h"
#include "core/ops/kernels.h"

namespace rpb {

std::vector<int> normalize_axes(const Shape& s, std::vector<int> axes, const char* op) {
  if (axes.empty()) {
    for (int d = 0; d < s.size(); ++d) axes.push_back(d);
    return axes;
  }
  for (int& a : axes) {
    RPB_CHECK(a >= -s.size() && a < s.size(), op, "axis ", a, " out of range for shape ", s);
    if (a < 0) a += s.size();
  }
  std::sort(axes.begin(), axes.end());
  RPB_CHECK(std::adjacent_find(axes.begin(), axes.end()) == axes.end(), op, "repeated axis in reduction of ", s);
  return axes;
}

Shape keepdim_shape(const Shape& s, const std::vector<int>& axes) {
  Shape k = s;
  for (int a : axes) k[a] = 1;
  return k;
}

namespace {

Shape dropped_shape(const Shape& s, const std::vector<int>& axes) {
  Shape r;
  for (int d = 0; d < s.size(); ++d)
    if (!std::binary_search(axes.begin(), axes.end(), d)) r.push_back(s[d]);
  return r;
}

// Splits sorted axes into runs of consecutive axes: each run reduces as one block.
std::vector<std::pair<int, int>> axis_runs(const std::vector<int>& axes) {
  std::vector<std::pair<int, int>> runs;  // [first, last]
  for (int a : axes) {
    if (!runs.empty() && runs.back().second + 1 == a) runs.back().second = a;
    else runs.emplace_back(a, a);
  }
  return runs;
}

// (outer, n, inner) of the block of axes [first, last] of s.
void block_dims(const Shape& s, int first, int last, int64_t& outer, int64_t& n, int64_t& inner) {
  outer = n = inner = 1;
  for (int d = 0; d < first; ++d) outer *= s[d];
  for (int d = first; d <= last; ++d) n *= s[d];
  for (int d = last + 1; d < s.size(); ++d) inner *= s[d];
}

// Sums x over the sorted `axes`, keeping them as size-1 dims.
Tensor sum_keepdim(const Tensor& x, const std::vector<int>& axes) {
  if (axes.empty()) return x.clone();  // a 0-D input: the result must still be a new tensor
  if (x.is_cuda()) {  // every axis at once, one block per output element
    Tensor out = Tensor::empty(keepdim_shape(x.shape(), axes), x.dtype(), Device::cuda);
    if (out.numel() > 0)
      cuda::backend("sum").reduce_sum(x.dtype(), x.raw_data(), out.raw_mutable_data(),
                                      cuda::reduce_plan(x.shape(), axes));
    return out;
  }
  Tensor cur = x;
  Shape shape = x.shape();
  for (auto [first, last] : axis_runs(axes)) {
    int64_t outer, n, inner;
    block_dims(shape, first, last, outer, n, inner);
    for (int d = first; d <= last; ++d) shape[d] = 1;
    Tensor out = Tensor::empty(shape, x.dtype());
    dispatch_float(x.dtype(), "sum", [&](auto tag) {
      using T = typename decltype(tag)::type;
      const T* px = cur.data<T>();
      T* po = out.mutable_data<T>();
      for (int64_t o = 0; o < outer; ++o) {
        if (inner == 1) {
          po[o] = ConstArrayMap<T>(px + o * n, n).sum();
          continue;
        }
        // Columns in fixed blocks over the pool; each column still adds its n rows in order, so the bits do
        // not depend on the split (a Linear's bias gradient sums 2048 rows of 384 columns).
        for_blocks(inner, [&](int64_t c0, int64_t c1) {
          ArrayMap<T> acc(po + o * inner + c0, c1 - c0);
          acc = ConstArrayMap<T>(px + o * n * inner + c0, c1 - c0);
          for (int64_t k = 1; k < n; ++k) acc += ConstArrayMap<T>(px + (o * n + k) * inner + c0, c1 - c0);
        }, std::max<int64_t>(64, kElementBlock / std::max<int64_t>(n, 1)));
      }
    });
    cur = out;
  }
  return cur;
}

}  // namespace

Tensor sum_to(const Tensor& g, const Shape& shape) {
  if (g.shape() == shape) return g;
  const int lead = g.dim() - shape.size();
  RPB_CHECK(lead >= 0, "sum_to", "cannot reduce shape ", g.shape(), " to ", shape);
  std::vector<int> axes;
  for (int d = 0; d < g.dim(); ++d) {
    if (d < lead) axes.push_back(d);
    else if (shape[d - lead] == 1 && g.shape()[d] != 1) axes.push_back(d);
    else RPB_CHECK(shape[d - lead] == g.shape()[d], "sum_to", "cannot reduce shape ", g.shape(), " to ", shape);
  }
  return reshape(sum_keepdim(g, axes), to_dims(shape));
}

Tensor sum(const Tensor& x, std::vector<int> axes, bool keepdim) {
  RPB_CHECK(x.is_floating(), "sum", "expected a float tensor, got ", dtype_name(x.dtype()), " ", x.shape());
  axes = normalize_axes(x.shape(), std::move(axes), "sum");
  Tensor kept = sum_keepdim(x, axes);
  Tensor out = keepdim ? kept : reshape(kept.detach(), to_dims(dropped_shape(x.shape(), axes)));
  if (autograd::should_record({&x}))
    autograd::record(OpKind::Sum, out, {&x}, [sx = x.shape(), sk = kept.shape()](const Tensor& g, InputGrads& gi) {
      gi.set(0, expand(reshape(g, to_dims(sk)), sx));
    });
  return out;
}

Tensor mean(const Tensor& x, std::vector<int> axes, bool keepdim) {
  RPB_CHECK(x.is_floating(), "mean", "expected a float tensor, got ", dtype_name(x.dtype()), " ", x.shape());
  axes = normalize_axes(x.shape(), std::move(axes), "mean");
  int64_t count = 1;
  for (int a : axes) count *= x.shape()[a];
  RPB_CHECK(count > 0, "mean", "mean over an empty axis of shape ", x.shape());
  Tensor kept;
  {
    NoGradGuard no_grad;
    kept = mul_scalar(sum_keepdim(x, axes), 1.0 / static_cast<double>(count));
  }
  Tensor out = keepdim ? kept : reshape(kept, to_dims(dropped_shape(x.shape(), axes)));
  if (autograd::should_record({&x}))
    autograd::record(OpKind::Mean, out, {&x},
                     [sx = x.shape(), sk = kept.shape(), count](const Tensor& g, InputGrads& gi) {
                       gi.set(0, expand(mul_scalar(reshape(g, to_dims(sk)), 1.0 / static_cast<double>(count)), sx));
                     });
  return out;
}

namespace {

// Max over one block of consecutive axes, keepdim; records the first maximal index per group.
Tensor max_block(const Tensor& x, int first, int last) {
  int64_t outer, n, inner;
  block_dims(x.shape(), first, last, outer, n, inner);
  RPB_CHECK(n > 0, "max", "max over an empty axis of shape ", x.shape());
  Shape ks = x.shape();
  for (int d = first; d <= last; ++d) ks[d] = 1;
  const bool rec = autograd::should_record({&x});
  const Device dev = x.device();
  Tensor out = Tensor::empty(ks, x.dtype(), dev);
  Tensor arg = rec ? Tensor::empty(ks, DType::i64, dev) : Tensor();
  std::vector<int> axes;
  for (int d = first; d <= last; ++d) axes.push_back(d);
  if (dev == Device::cuda && out.numel() > 0)
    cuda::backend("max").reduce_max(x.dtype(), x.raw_data(), out.raw_mutable_data(),
                                    rec ? arg.device_data<int64_t>() : nullptr, cuda::reduce_plan(x.shape(), axes));
  if (dev == Device::cpu) dispatch_float(x.dtype(), "max", [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* px = x.data<T>();
    T* po = out.mutable_data<T>();
    // NaN propagates, as in torch, through Eigen's vectorized NaN-propagating max.
    using MaxOp = Eigen::internal::scalar_max_op<T, T, Eigen::PropagateNaN>;
    for (int64_t o = 0; o < outer; ++o) {
      const T* base = px + o * n * inner;
      if (inner == 1) {
        po[o] = ConstArrayMap<T>(base, n).template maxCoeff<Eigen::PropagateNaN>();
        continue;
      }
      ArrayMap<T> acc(po + o * inner, inner);
      acc = ConstArrayMap<T>(base, inner);
      for (int64_t k = 1; k < n; ++k) acc = acc.binaryExpr(ConstArrayMap<T>(base + k * inner, inner), MaxOp());
    }
    if (!rec) return;
    int64_t* pa = arg.mutable_data<int64_t>();
    for (int64_t o = 0; o < outer; ++o)
      for (int64_t i = 0; i < inner; ++i) {
        const T* base = px + o * n * inner + i;
        const T best = po[o * inner + i];
        int64_t k = 0;  // the first element equal to the maximum (or the first NaN)
        while (k + 1 < n && !(base[k * inner] == best || (std::isnan(best) && std::isnan(base[k * inner])))) ++k;
        pa[o * inner + i] = k;
      }
  });
  if (rec)
    autograd::record(OpKind::Max, out, {&x}, [arg, sx = x.shape(), outer, n, inner](const Tensor& g, InputGrads& gi) {
      if (cuda::on_cuda("max", {&g, &arg})) {
        Tensor gx = Tensor::empty(sx, g.dtype(), Device::cuda);
        cuda::backend("max").max_backward(g.dtype(), g.raw_data(), arg.device_data<int64_t>(), gx.raw_mutable_data(),
                                          outer, n, inner);
        gi.set(0, gx);
        return;
      }
      Tensor gx = Tensor::zeros(sx, g.dtype());
      dispatch_float(g.dtype(), "max", [&](auto tag) {
        using T = typename decltype(tag)::type;
        const T* pg = g.data<T>();
        const int64_t* pa = arg.data<int64_t>();
        T* px = gx.mutable_data<T>();
        for (int64_t o = 0; o < outer; ++o)
          for (int64_t i = 0; i < inner; ++i) px[(o * n + pa[o * inner + i]) * inner + i] = pg[o * inner + i];
      });
      gi.set(0, gx);
    });
  return out;
}

}  // namespace

Tensor max(const Tensor& x, std::vector<int> axes, bool keepdim) {
  RPB_CHECK(x.is_floating(), "max", "expected a float tensor, got ", dtype_name(x.dtype()), " ", x.shape());
  if (x.dim() == 0) return reshape(max_block(reshape(x, {1}), 0, 0), {});
  axes = normalize_axes(x.shape(), std::move(axes), "max");
  // Each block of consecutive axes is one recorded Max node; several blocks compose.
  Tensor cur = x;
  for (auto [first, last] : axis_runs(axes)) cur = max_block(cur, first, last);
  return keepdim ? cur : reshape(cur, to_dims(dropped_shape(x.shape(), axes)));
}

}  // namespace rpb
