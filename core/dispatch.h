// rpb/core/dispatch.h: what an elementwise kernel outside core needs (an optimizer's update, a norm
// over gradients): dtype dispatch (core/dtype_dispatch.h), Eigen maps over a tensor's elements, and fixed-block parallel loops.
// Public, but not in core/core.h (it brings in Eigen): include it where a kernel needs it. Core's own
// op helpers (broadcast iteration, gradient reduction) stay in the internal core/ops/kernels.h.
#pragma once

#include <Eigen/Core>
#include <algorithm>
#include <cstdint>
#include <utility>

#include "core/dtype_dispatch.h"
#include "core/error.h"
#include "core/parallel.h"
#include "core/tensor.h"

namespace rpb {

/// A tensor's elements (or a range of them) as a writable Eigen array, for vectorized expressions.
template <typename T>
using ArrayMap = Eigen::Map<Eigen::Array<T, Eigen::Dynamic, 1>>;
/// A read-only ArrayMap.
template <typename T>
using ConstArrayMap = Eigen::Map<const Eigen::Array<T, Eigen::Dynamic, 1>>;

/// Every element of `t` as a writable array (throws if T does not match t.dtype()). Writes go to
/// the storage, so views of `t` see them; nothing is recorded on the tape.
template <typename T>
ArrayMap<T> amap(const Tensor& t) {
  return ArrayMap<T>(t.mutable_data<T>(), t.numel());
}
/// Every element of `t` as a read-only array (throws if T does not match t.dtype()).
template <typename T>
ConstArrayMap<T> camap(const Tensor& t) {
  return ConstArrayMap<T>(t.data<T>(), t.numel());
}

/// Elements per block of for_blocks: 64 KiB of float32, a multiple of every SIMD width.
inline constexpr int64_t kElementBlock = 16384;

/// Calls f(begin, end) over [0, n) in fixed blocks of `block` items (the last may be shorter), spread over the
/// pool of core/parallel.h when there are several. The blocks do not depend on the thread count, so an
/// elementwise kernel takes the same vectorized path for every element (and gives the same bits) on any number
/// of threads. Below two blocks, one call covers everything.
template <typename F>
void for_blocks(int64_t n, F&& f, int64_t block = kElementBlock) {
  if (n < 2 * block) {
    if (n > 0) f(int64_t{0}, n);
    return;
  }
  parallel_for((n + block - 1) / block, [&](int64_t b0, int64_t b1) {
    for (int64_t b = b0; b < b1; ++b) f(b * block, std::min(n, (b + 1) * block));
  });
}

}  // namespace rpb
