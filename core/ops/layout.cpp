// Shape and layout ops: reshape (a view), permute, concat, slice. Forward and backward side by side.
#include <algorithm>
#include <cstring>
#include <numeric>

#include "core/ops.h"
#include "core/ops/kernels.h"

namespace rpb {

namespace {

// Copies a block view: `rows` rows of `src_len` elements at stride `src_stride` into rows of
// stride `dst_stride` (both in elements) — the common kernel of concat, slice and its backward.
void copy_rows(const Tensor& src, int64_t src_off, int64_t src_stride, const Tensor& dst, int64_t dst_off,
               int64_t dst_stride, int64_t rows, int64_t len) {
  if (cuda::on_cuda("copy_rows", {&src, &dst})) {
    if (rows > 0 && len > 0)
      cuda::backend("copy_rows").strided_copy(src.dtype(), src.raw_data(), src_off, dst.raw_mutable_data(), dst_off,
                                              cuda::copy_plan(Shape{rows, len}, Shape{src_stride, 1},
                                                              Shape{dst_stride, 1}));
    return;
  }
  const std::size_t es = dtype_size(src.dtype());
  const char* ps = static_cast<const char*>(src.raw_data());
  char* pd = static_cast<char*>(dst.raw_mutable_data());
  for (int64_t r = 0; r < rows; ++r)
    std::memcpy(pd + (dst_off + r * dst_stride) * es, ps + (src_off + r * src_stride) * es, static_cast<std::size_t>(len) * es);
}

int64_t outer_of(const Shape& s, int axis) {
  int64_t o = 1;
  for (int d = 0; d < axis; ++d) o *= s[d];
  return o;
}
// out = x with its axes reordered by p, on the host: walks the output in order; the innermost output axis reads x
// at stride xs[p.back()].
void permute_host(const Tensor& x, const Tensor& out, const std::vector<int>& p, const Shape& os, const Shape& xs) {
  const int nd = x.dim();
  dispatch_all(x.dtype(), "permute", [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* px = x.data<T>();
    T* po = out.mutable_data<T>();
    if (out.numel() == 0) return;
    if (nd == 0) {
      po[0] = px[0];
      return;
    }
    const int64_t run = os[nd - 1], rs = xs[p[nd - 1]];
    std::array<int64_t, kMaxDims> idx{};
    int64_t in_off = 0;
    for (int64_t o = 0; o < out.numel(); o += run) {
      if (rs == 1) std::copy(px + in_off, px + in_off + run, po + o);
      else
        for (int64_t k = 0; k < run; ++k) po[o + k] = px[in_off + k * rs];
      for (int d = nd - 2; d >= 0; --d) {
        in_off += xs[p[d]];
        if (++idx[d] < os[d]) break;
        in_off -= xs[p[d]] * os[d];
        idx[d] = 0;
      }
    }
  });
}

int64_t inner_of(const Shape& s, int axis) {
  int64_t i = 1;
  for (int d = axis + 1; d < s.size(); ++d) i *= s[d];
  return i;
}

}  // namespace

Tensor reshape(const Tensor& x, const std::vector<int64_t>& dims) {
  Shape shape;
  int infer = -1;
  int64_t known = 1;
  for (std::size_t i = 0; i < dims.size(); ++i) {
    if (dims[i] == -1) {
      RPB_CHECK(infer < 0, "reshape", "more than one -1 in the target shape for input ", x.shape());
      infer = static_cast<int>(i);
      shape.push_back(0);
    } else {
      RPB_CHECK(dims[i] >= 0, "reshape", "negative extent ", dims[i], " in the target shape for input ", x.shape());
      shape.push_back(dims[i]);
      known *= dims[i];
    }
  }
  if (infer >= 0) {
    RPB_CHECK(known > 0 && x.numel() % known == 0, "reshape", "cannot infer -1: ", x.numel(),
              " elements of shape ", x.shape(), " do not divide into ", known);
    shape[infer] = x.numel() / known;
  }
  RPB_CHECK(shape.numel() == x.numel(), "reshape", "shape ", x.shape(), " (", x.numel(), " elements) cannot become ",
            shape, " (", shape.numel(), " elements)");
  auto impl = std::make_shared<TensorImpl>();
  impl->storage = x.impl().storage;
  impl->offset = x.impl().offset;
  impl->shape = shape;
  impl->dtype = x.dtype();
  Tensor out(std::move(impl));
  if (autograd::should_record({&x}))
    autograd::record(OpKind::Reshape, out, {&x},
                     [sx = x.shape()](const Tensor& g, InputGrads& gi) { gi.set(0, reshape(g, to_dims(sx))); });
  return out;
}

Tensor permute(const Tensor& x, const std::vector<int>& perm) {
  const int nd = x.dim();
  RPB_CHECK(static_cast<int>(perm.size()) == nd, "permute", "permutation of ", perm.size(), " axes for shape ", x.shape());
  std::vector<int> p(perm);
  for (int& a : p) {
    RPB_CHECK(a >= -nd && a < nd, "permute", "axis ", a, " out of range for shape ", x.shape());
    if (a < 0) a += nd;
  }
  std::vector<int> seen(p);
  std::sort(seen.begin(), seen.end());
  for (int i = 0; i < nd; ++i) RPB_CHECK(seen[i] == i, "permute", "not a permutation of the axes of ", x.shape());
  Shape os;
  for (int a : p) os.push_back(x.shape()[a]);
  Tensor out = Tensor::empty(os, x.dtype(), x.device());
  const Shape xs = contiguous_strides(x.shape());
  if (x.is_cuda() && out.numel() > 0) {
    Shape src;
    for (int a : p) src.push_back(xs[a]);
    cuda::backend("permute").strided_copy(x.dtype(), x.raw_data(), 0, out.raw_mutable_data(), 0,
                                          cuda::copy_plan(os, src, contiguous_strides(os)));
  } else if (!x.is_cuda()) {
    permute_host(x, out, p, os, xs);
  }
  if (autograd::should_record({&x})) {
    std::vector<int> inv(nd);
    for (int i = 0; i < nd; ++i) inv[p[i]] = i;
    autograd::record(OpKind::Permute, out, {&x}, [inv](const Tensor& g, InputGrads& gi) { gi.set(0, permute(g, inv)); });
  }
  return out;
}

Tensor transpose(const Tensor& x, int a, int b) {
  std::vector<int> perm(x.dim());
  std::iota(perm.begin(), perm.end(), 0);
  std::swap(perm[x.shape().axis(a)], perm[x.shape().axis(b)]);
  return permute(x, perm);
}

Tensor concat(const std::vector<Tensor>& xs, int axis) {
  RPB_CHECK(!xs.empty(), "concat", "no tensors to join");
  const Shape& s0 = xs[0].shape();
  const int ax = s0.axis(axis);
  Shape os = s0;
  os[ax] = 0;
  for (const Tensor& t : xs) {
    bool same = t.dim() == s0.size() && t.dtype() == xs[0].dtype();
    for (int d = 0; same && d < s0.size(); ++d) same = d == ax || t.shape()[d] == s0[d];
    RPB_CHECK(same, "concat", "along axis ", ax, ": ", dtype_name(t.dtype()), " ", t.shape(), " does not match ",
              dtype_name(xs[0].dtype()), " ", s0);
    os[ax] += t.shape()[ax];
  }
  Tensor out = Tensor::empty(os, xs[0].dtype(), cuda::op_device("concat", xs));
  const int64_t outer = outer_of(os, ax), inner = inner_of(os, ax);
  int64_t at = 0;
  for (const Tensor& t : xs) {
    const int64_t len = t.shape()[ax] * inner;
    copy_rows(t, 0, len, out, at, os[ax] * inner, outer, len);
    at += len;
  }
  bool rec = grad_enabled();
  if (rec) {
    rec = false;
    for (const Tensor& t : xs) rec |= t.requires_grad();
  }
  if (rec) {
    std::vector<int64_t> sizes;
    for (const Tensor& t : xs) sizes.push_back(t.shape()[ax]);
    autograd::record(OpKind::Concat, out, xs, [sizes, ax](const Tensor& g, InputGrads& gi) {
      int64_t start = 0;
      for (int i = 0; i < gi.size(); ++i) {
        if (gi.needed(i)) gi.set(i, slice(g, ax, start, start + sizes[i]));
        start += sizes[i];
      }
    });
  }
  return out;
}

Tensor slice(const Tensor& x, int axis, int64_t start, int64_t end) {
  const int ax = x.shape().axis(axis);
  const int64_t n = x.shape()[ax];
  if (start < 0) start += n;
  if (end < 0) end += n;
  RPB_CHECK(start >= 0 && start <= end && end <= n, "slice", "range [", start, ", ", end, ") outside [0, ", n,
            "] on axis ", ax, " of shape ", x.shape());
  Shape os = x.shape();
  os[ax] = end - start;
  Tensor out = Tensor::empty(os, x.dtype(), x.device());
  const int64_t outer = outer_of(os, ax), inner = inner_of(os, ax);
  copy_rows(x, start * inner, n * inner, out, 0, os[ax] * inner, outer, os[ax] * inner);
  if (autograd::should_record({&x}))
    autograd::record(OpKind::Slice, out, {&x}, [sx = x.shape(), ax, start, outer, inner](const Tensor& g, InputGrads& gi) {
      Tensor gx = Tensor::zeros(sx, g.dtype(), g.device());
      const int64_t len = g.shape()[ax] * inner;
      copy_rows(g, 0, len, gx, start * inner, sx[ax] * inner, outer, len);
      gi.set(0, gx);
    });
  return out;
}

std::vector<Tensor> split(const Tensor& x, const std::vector<int64_t>& sizes, int axis) {
  const int ax = x.shape().axis(axis);
  int64_t total = 0;
  for (int64_t s : sizes) {
    RPB_CHECK(s >= 0, "split", "negative size ", s);
    total += s;
  }
  RPB_CHECK(total == x.shape()[ax], "split", "sizes sum to ", total, " but axis ", ax, " of ", x.shape(), " has ",
            x.shape()[ax]);
  std::vector<Tensor> parts;
  int64_t start = 0;
  for (int64_t s : sizes) {
    parts.push_back(slice(x, ax, start, start + s));
    start += s;
  }
  return parts;
}

}  // namespace rpb
