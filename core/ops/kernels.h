// rpb/core/ops/kernels.h: internal helpers shared by the op families (broadcast iteration,
// gradient reduction, axis handling). Not part of the public API: code outside core/ uses
// core/dispatch.h (dtype dispatch, Eigen maps, for_blocks), which this header includes.
#pragma once

#include <Eigen/Core>
#include <algorithm>
#include <array>
#include <cstdint>
#include <type_traits>
#include <vector>

#include "core/cuda/plan.h"
#include "core/dispatch.h"
#include "core/tensor.h"

namespace rpb {

/// The scalar type of an Eigen expression or map (inside generic lambdas).
template <typename M>
using ScalarOf = typename std::decay_t<M>::Scalar;

/// out = f(x) for a float tensor: f(o, v) assigns an Eigen expression of the const map `v`
/// to the map `o` (one vectorized pass, no per-element calls). On a cuda tensor, the CUDA backend's `fn` (with
/// scalar `s`) computes the same function.
template <typename F>
Tensor map_unary(const char* op, cuda::UnaryFn fn, double s, const Tensor& x, F f) {
  RPB_CHECK(x.is_floating(), op, "expected a float tensor, got ", dtype_name(x.dtype()), " ", x.shape());
  if (x.is_cuda()) {
    Tensor out = Tensor::empty(x.shape(), x.dtype(), Device::cuda);
    cuda::backend(op).unary(fn, s, x.dtype(), x.raw_data(), out.raw_mutable_data(), x.numel());
    return out;
  }
  Tensor out = Tensor::empty(x.shape(), x.dtype());
  dispatch_float(x.dtype(), op, [&](auto tag) {
    using T = typename decltype(tag)::type;
    T* po = out.mutable_data<T>();
    const T* px = x.data<T>();
    for_blocks(x.numel(), [&](int64_t begin, int64_t end) {
      ArrayMap<T> o(po + begin, end - begin);
      const ConstArrayMap<T> v(px + begin, end - begin);
      f(o, v);
    });
  });
  return out;
}

/// Iterates `out_shape` with N inputs broadcast into it, in maximal inner runs.
/// Calls f(out_offset, in_offsets, in_inner_strides, run_length) where each
/// inner stride is 1 (contiguous) or 0 (the input is constant along the run).
/// Adjacent dims are coalesced first, so same-shape and suffix broadcasts become
/// a few long runs; the loop itself does no allocation.
template <std::size_t N, typename F>
void for_each_broadcast_run(const Shape& out_shape, const std::array<Shape, N>& in_shapes, F&& f) {
  const int nd = out_shape.size();
  if (out_shape.numel() == 0) return;
  // Per-dim strides of each input inside the output's index space (0 where broadcast).
  std::array<Shape, N> st;
  for (std::size_t k = 0; k < N; ++k) st[k] = broadcast_strides(in_shapes[k], out_shape);
  // Coalesce dims (drop size-1 dims, merge contiguous neighbours).
  std::array<int64_t, kMaxDims> ext{};
  std::array<std::array<int64_t, kMaxDims>, N> cst{};
  int m = 0;
  for (int d = 0; d < nd; ++d) {
    if (out_shape[d] == 1) continue;
    if (m > 0) {
      bool merge = true;
      for (std::size_t k = 0; k < N; ++k) merge &= cst[k][m - 1] == st[k][d] * out_shape[d];
      if (merge) {
        ext[m - 1] *= out_shape[d];
        for (std::size_t k = 0; k < N; ++k) cst[k][m - 1] = st[k][d];
        continue;
      }
    }
    ext[m] = out_shape[d];
    for (std::size_t k = 0; k < N; ++k) cst[k][m] = st[k][d];
    ++m;
  }
  if (m == 0) {  // every dim has extent 1
    std::array<int64_t, N> off{}, s1{};
    f(int64_t{0}, off, s1, int64_t{1});
    return;
  }
  // The innermost coalesced dim is the run; a run needs inner strides of 0 or 1.
  const int inner = m - 1;
  int64_t run = ext[inner];
  std::array<int64_t, N> run_stride{};
  bool unit = true;
  for (std::size_t k = 0; k < N; ++k) unit &= cst[k][inner] == 0 || cst[k][inner] == 1;
  int outer_dims = inner;
  if (!unit) {  // cannot happen for broadcasts of contiguous tensors; kept for safety
    run = 1;
    outer_dims = m;
  } else {
    for (std::size_t k = 0; k < N; ++k) run_stride[k] = cst[k][inner];
  }
  std::array<int64_t, kMaxDims> idx{};
  std::array<int64_t, N> off{};
  int64_t out_off = 0;
  const int64_t total = out_shape.numel();
  while (out_off < total) {
    f(out_off, off, run_stride, run);
    out_off += run;
    for (int d = outer_dims - 1; d >= 0; --d) {
      ++idx[d];
      for (std::size_t k = 0; k < N; ++k) off[k] += cst[k][d];
      if (idx[d] < ext[d]) break;
      for (std::size_t k = 0; k < N; ++k) off[k] -= cst[k][d] * ext[d];
      idx[d] = 0;
    }
  }
}

/// dst += src (same shape and dtype), vectorized. Used to accumulate gradients.
void add_inplace(const Tensor& dst, const Tensor& src);

/// x broadcast (copied) to `shape`.
Tensor expand(const Tensor& x, const Shape& shape);

/// A shape as the dims list reshape takes.
inline std::vector<int64_t> to_dims(const Shape& s) { return std::vector<int64_t>(s.begin(), s.end()); }

/// Sums a broadcast gradient back to `shape` (the reverse of expand).
Tensor sum_to(const Tensor& g, const Shape& shape);

/// Shape `s` with the axes in `axes` set to 1 (the keepdim shape of a reduction).
Shape keepdim_shape(const Shape& s, const std::vector<int>& axes);

/// Resolves negative axes, sorts them, rejects duplicates; empty means all axes.
std::vector<int> normalize_axes(const Shape& s, std::vector<int> axes, const char* op);

}  // namespace rpb
