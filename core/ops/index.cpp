// Integer indexing: index_select (row lookup) and gather. Forward and backward side by side.
#include <cstring>

#include "core/ops.h"
#include "core/ops/kernels.h"

namespace rpb {

// ---- index_select ----

namespace {

void check_index_tensor(const char* op, const Tensor& index, const Tensor& x) {
  RPB_CHECK(index.dtype() == DType::i64, op, "index must be int64, got ", dtype_name(index.dtype()), " ",
            index.shape(), " (input ", x.shape(), ")");
}

// The first index of `index` outside [0, bound), as (flat position, value), or position -1: on a cuda tensor one
// reduction on the device and one copy of the answer.
std::pair<int64_t, int64_t> first_bad_index(const Tensor& index, int64_t bound) {
  if (index.is_cuda()) {
    const int64_t i = cuda::backend("index").first_out_of_range(index.device_data<int64_t>(), index.numel(), bound, -1);
    return {i, i >= 0 ? static_cast<int64_t>(reshape(index, {-1}).at({i})) : 0};
  }
  const int64_t* pi = index.data<int64_t>();
  for (int64_t i = 0; i < index.numel(); ++i)
    if (pi[i] < 0 || pi[i] >= bound) return {i, pi[i]};
  return {-1, 0};
}

}  // namespace

namespace {

void index_rows(const Tensor& table, const Tensor& index, const Tensor& out, int64_t row) {
  const int64_t n = index.numel();
  const int64_t* pi = index.data<int64_t>();
  const std::size_t row_bytes = static_cast<std::size_t>(row) * dtype_size(table.dtype());
  const char* pt = static_cast<const char*>(table.raw_data());
  char* po = static_cast<char*>(out.raw_mutable_data());
  for (int64_t i = 0; i < n; ++i) std::memcpy(po + i * row_bytes, pt + pi[i] * row_bytes, row_bytes);
}

// The table's gradient: g's rows scatter-added at their indices, repeated indices summed in index order.
Tensor index_select_backward(const Tensor& g, const Tensor& index, const Shape& st, int64_t row) {
  if (cuda::on_cuda("index_select", {&g, &index})) {
    Tensor gt = Tensor::empty(st, g.dtype(), Device::cuda);
    if (gt.numel() > 0)
      cuda::backend("index_select").index_select_backward(g.dtype(), g.raw_data(), index.device_data<int64_t>(),
                                                          gt.raw_mutable_data(), index.numel(), st[0], row);
    return gt;
  }
  Tensor gt = Tensor::zeros(st, g.dtype());
  dispatch_float(g.dtype(), "index_select", [&](auto tag) {
    using T = typename decltype(tag)::type;
    const int64_t* pi = index.data<int64_t>();
    const T* pg = g.data<T>();
    T* pt = gt.mutable_data<T>();
    // Serial in index order, so repeated indices sum deterministically.
    for (int64_t i = 0; i < index.numel(); ++i) ArrayMap<T>(pt + pi[i] * row, row) += ConstArrayMap<T>(pg + i * row, row);
  });
  return gt;
}

}  // namespace

Tensor index_select(const Tensor& table, const Tensor& index) {
  RPB_CHECK(table.is_floating(), "index_select", "table must be a float tensor, got ", dtype_name(table.dtype()),
            " ", table.shape());
  RPB_CHECK(table.dim() >= 1, "index_select", "table needs at least 1 dim, got ", table.shape());
  check_index_tensor("index_select", index, table);
  const int64_t V = table.shape()[0];
  Shape so = index.shape();
  for (int d = 1; d < table.dim(); ++d) so.push_back(table.shape()[d]);
  const int64_t row = V > 0 ? table.numel() / V : Shape(table.shape().begin() + 1, table.shape().end()).numel();
  const Device dev = cuda::op_device("index_select", {&table, &index});
  const auto [bad, value] = first_bad_index(index, V);
  RPB_CHECK(bad < 0, "index_select", "index ", value, " at flat position ", bad, " is out of range [0, ", V,
            ") for table ", table.shape(), " (index shape ", index.shape(), ")");
  Tensor out = Tensor::empty(so, table.dtype(), dev);
  if (dev == Device::cpu) index_rows(table, index, out, row);
  else if (out.numel() > 0)
    cuda::backend("index_select").index_select(table.dtype(), table.raw_data(), index.device_data<int64_t>(),
                                               out.raw_mutable_data(), index.numel(), row);
  if (autograd::should_record({&table}))
    autograd::record(OpKind::IndexSelect, out, {&table},
                     [index = index.detach(), st = table.shape(), row](const Tensor& g, InputGrads& gi) {
                       gi.set(0, index_select_backward(g, index, st, row));
                     });
  return out;
}

// ---- gather ----

namespace {

// Visits every element of an index of shape `is` in row-major order as f(i, x_off): x_off is the
// offset in x (shape xs) of the same multi-index with the axis coordinate zeroed, so the element
// gathered is x[x_off + index[i] * stride(axis)].
template <typename F>
void for_each_gather(const Shape& xs, const Shape& is, int axis, F&& f) {
  const int nd = is.size();
  const Shape xstr = contiguous_strides(xs);
  const int64_t total = is.numel();
  if (total == 0) return;
  const int last = nd - 1;
  const int64_t inner = is[last];
  const int64_t inner_step = last == axis ? 0 : xstr[last];
  std::array<int64_t, kMaxDims> idx{};
  int64_t base = 0;  // x offset of idx[0..last) with the axis coordinate zeroed
  for (int64_t i = 0; i < total; i += inner) {
    for (int64_t j = 0; j < inner; ++j) f(i + j, base + j * inner_step);
    for (int d = last - 1; d >= 0; --d) {
      const int64_t s = d == axis ? 0 : xstr[d];
      ++idx[d];
      base += s;
      if (idx[d] < is[d]) break;
      base -= s * is[d];
      idx[d] = 0;
    }
  }
}

cuda::GatherPlan gather_plan(const Shape& xs, const Shape& is, int axis) {
  cuda::GatherPlan p;
  p.nd = is.size();
  p.axis = axis;
  const Shape st = contiguous_strides(xs);
  for (int d = 0; d < p.nd; ++d) {
    p.ext[d] = is[d];
    p.xst[d] = st[d];
  }
  p.x_extent = xs[axis];
  return p;
}

// x's gradient: g scatter-added where each index entry points, in the order of the gathered axis.
Tensor gather_backward(const Tensor& g, const Tensor& index, const Shape& sx, int ax, int64_t stride) {
  if (cuda::on_cuda("gather", {&g, &index})) {
    Tensor gx = Tensor::empty(sx, g.dtype(), Device::cuda);
    if (gx.numel() > 0)
      cuda::backend("gather").gather_backward(g.dtype(), g.raw_data(), index.device_data<int64_t>(),
                                              gx.raw_mutable_data(), gather_plan(sx, index.shape(), ax), sx.begin());
    return gx;
  }
  Tensor gx = Tensor::zeros(sx, g.dtype());
  dispatch_float(g.dtype(), "gather", [&](auto tag) {
    using T = typename decltype(tag)::type;
    const int64_t* pi = index.data<int64_t>();
    const T* pg = g.data<T>();
    T* px = gx.mutable_data<T>();
    for_each_gather(sx, index.shape(), ax, [&](int64_t i, int64_t off) { px[off + pi[i] * stride] += pg[i]; });
  });
  return gx;
}

}  // namespace

Tensor gather(const Tensor& x, int axis, const Tensor& index) {
  RPB_CHECK(x.is_floating(), "gather", "input must be a float tensor, got ", dtype_name(x.dtype()), " ", x.shape());
  check_index_tensor("gather", index, x);
  RPB_CHECK(x.dim() >= 1 && index.dim() == x.dim(), "gather", "index ", index.shape(), " must have the rank of input ",
            x.shape());
  RPB_CHECK(axis >= -x.dim() && axis < x.dim(), "gather", "axis ", axis, " out of range for input ", x.shape());
  const int ax = x.shape().axis(axis);
  for (int d = 0; d < x.dim(); ++d)
    RPB_CHECK(d == ax || index.shape()[d] <= x.shape()[d], "gather", "index ", index.shape(),
              " exceeds input ", x.shape(), " along dim ", d, " (axis ", ax, ")");
  const int64_t extent = x.shape()[ax];
  const int64_t stride = contiguous_strides(x.shape())[ax];
  const Device dev = cuda::op_device("gather", {&x, &index});
  const auto [bad, value] = first_bad_index(index, extent);
  RPB_CHECK(bad < 0, "gather", "index ", value, " at flat position ", bad, " is out of range [0, ", extent,
            ") along axis ", ax, " of input ", x.shape(), " (index shape ", index.shape(), ")");
  Tensor out = Tensor::empty(index.shape(), x.dtype(), dev);
  if (dev == Device::cuda) {
    if (out.numel() > 0)
      cuda::backend("gather").gather(x.dtype(), x.raw_data(), index.device_data<int64_t>(), out.raw_mutable_data(),
                                     gather_plan(x.shape(), index.shape(), ax));
  } else {
    dispatch_float(x.dtype(), "gather", [&](auto tag) {
      using T = typename decltype(tag)::type;
      const T* px = x.data<T>();
      const int64_t* pi = index.data<int64_t>();
      T* po = out.mutable_data<T>();
      for_each_gather(x.shape(), index.shape(), ax, [&](int64_t i, int64_t off) { po[i] = px[off + pi[i] * stride]; });
    });
  }
  if (autograd::should_record({&x}))
    autograd::record(OpKind::Gather, out, {&x}, [index = index.detach(), sx = x.shape(), ax, stride](const Tensor& g, InputGrads& gi) {
      gi.set(0, gather_backward(g, index, sx, ax, stride));
    });
  return out;
}

}  // namespace rpb
