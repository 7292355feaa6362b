// rpb/nn/window_common.h: checks and index helpers shared by nn/window_attention.cpp and
// nn/window_partition.cpp (internal to nn).
#pragma once

#include <cstdint>
#include <vector>

#include "core/tensor.h"

namespace rpb::nn::window_detail {

inline int64_t mod(int64_t a, int64_t n) { return ((a % n) + n) % n; }

inline void check_window(const char* op, int64_t wh, int64_t ww) {
  RPB_CHECK(wh >= 1, op, "window_h ", wh, " must be at least 1");
  RPB_CHECK(ww >= 1, op, "window_w ", ww, " must be at least 1");
}

inline void check_grid(const char* op, const Tensor& x) {
  RPB_CHECK(x.defined(), op, "the grid is undefined");
  RPB_CHECK(x.dim() == 4, op, "expected a (B, H, W, C) grid, got ", x.shape());
}

/// The row of the V1 table for the offset (dy, dx) = query - key of a table sized for a twh x tww window (seed 004).
inline int64_t table_row(int64_t dy, int64_t dx, int64_t twh, int64_t tww) {
  return (dy + twh - 1) * (2 * tww - 1) + dx + tww - 1;
}

/// (N, N) rows of a table sized for twh x tww, for a window wh x ww no larger: query - key per axis.
inline Tensor table_index(int64_t wh, int64_t ww, int64_t twh, int64_t tww) {
  const int64_t n = wh * ww;
  std::vector<int64_t> v(static_cast<std::size_t>(n * n));
  for (int64_t q = 0; q < n; ++q)
    for (int64_t k = 0; k < n; ++k) v[q * n + k] = table_row(q / ww - k / ww, q % ww - k % ww, twh, tww);
  return Tensor::indices({n, n}, v);
}

}  // namespace rpb::nn::window_detail
