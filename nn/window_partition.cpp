// rpb/nn/window_partition.cpp: Swin's window helpers, relative position index, shift mask and V2 coordinates
// (declared in nn/window_attention.h).
//
// Reference: microsoft/Swin-Transformer models/swin_transformer.py and swin_transformer_v2.py; seed 004.
#include <cmath>

#include "core/ops.h"
#include "nn/position/common.h"
#include "nn/window_attention.h"
#include "nn/window_common.h"

namespace rpb::nn {

namespace {

using namespace window_detail;
using position_detail::from_doubles;

// Swin's img_mask label along one axis of extent n (a multiple of the window w) for shift s: the slices
// (0, -w), (-w, -s), (-s, None) are labelled 0, 1, 2. With s = 0 Python's slice(-0, None) would be the whole
// axis; Swin builds no mask then, and we treat the axis as a single region.
int64_t region(int64_t i, int64_t n, int64_t w, int64_t s) {
  if (s == 0) return 0;
  if (i < n - w) return 0;
  if (i < n - s) return 1;
  return 2;
}

}  // namespace

// ---- window helpers ----

// Swin: x.view(B, H // ws, ws, W // ws, ws, C).permute(0, 1, 3, 2, 4, 5).contiguous().view(-1, ws, ws, C), then
// viewed (-1, ws * ws, C) by the block; we return the flattened windows directly.
Tensor window_partition(const Tensor& x, int64_t wh, int64_t ww) {
  check_grid("window_partition", x);
  check_window("window_partition", wh, ww);
  const int64_t B = x.size(0), H = x.size(1), W = x.size(2), C = x.size(3);
  RPB_CHECK(H % wh == 0, "window_partition", "grid height ", H, " is not a multiple of window_h ", wh);
  RPB_CHECK(W % ww == 0, "window_partition", "grid width ", W, " is not a multiple of window_w ", ww);
  const Tensor v = reshape(x, {B, H / wh, wh, W / ww, ww, C});
  return reshape(permute(v, {0, 1, 3, 2, 4, 5}), {B * (H / wh) * (W / ww), wh * ww, C});
}

// Swin: windows.view(B, H // ws, W // ws, ws, ws, -1).permute(0, 1, 3, 2, 4, 5).contiguous().view(B, H, W, -1).
Tensor window_reverse(const Tensor& windows, int64_t wh, int64_t ww, int64_t H, int64_t W) {
  RPB_CHECK(windows.defined(), "window_reverse", "windows are undefined");
  check_window("window_reverse", wh, ww);
  RPB_CHECK(H >= 1 && W >= 1 && H % wh == 0 && W % ww == 0, "window_reverse", "grid ", H, " x ", W,
            " is not a positive multiple of the window ", wh, " x ", ww);
  const bool flat = windows.dim() == 3 && windows.size(1) == wh * ww;
  const bool square = windows.dim() == 4 && windows.size(1) == wh && windows.size(2) == ww;
  RPB_CHECK(flat || square, "window_reverse", "windows ", windows.shape(), " are neither (B*nW, ", wh * ww,
            ", C) nor (B*nW, ", wh, ", ", ww, ", C)");
  const int64_t nW = (H / wh) * (W / ww);
  RPB_CHECK(windows.size(0) % nW == 0, "window_reverse", "windows ", windows.shape(), " do not hold a multiple of the ",
            nW, " windows of a ", H, " x ", W, " grid");
  const int64_t B = windows.size(0) / nW, C = windows.size(-1);
  const Tensor v = reshape(windows, {B, H / wh, W / ww, wh, ww, C});
  return reshape(permute(v, {0, 1, 3, 2, 4, 5}), {B, H, W, C});
}

// torch.roll along one axis by s (normalized to [0, n)): out = concat(x[n - s:], x[:n - s]).
Tensor roll2d(const Tensor& x, int64_t shift_h, int64_t shift_w) {
  check_grid("roll2d", x);
  Tensor y = x;
  for (int axis : {1, 2}) {
    const int64_t n = y.size(axis);
    const int64_t s = mod(axis == 1 ? shift_h : shift_w, n);
    if (s == 0) continue;
    y = concat({slice(y, axis, n - s, n), slice(y, axis, 0, n - s)}, axis);
  }
  return y;
}

// ---- Swin's index, shift mask and V2 coordinates ----

// Seed 004 / Swin V1: coords_flatten[:, :, None] - coords_flatten[:, None, :] (query - key), += (Wh - 1, Ww - 1),
// channel 0 *= 2Ww - 1, summed.
Tensor swin_relative_position_index(int64_t wh, int64_t ww) {
  check_window("swin_relative_position_index", wh, ww);
  return table_index(wh, ww, wh, ww);
}

// Seed 004 (the Swin index in 1-D): coords[:, None] - coords[None, :] is query - key, shifted by n - 1.
Tensor relative_index_1d(int64_t n) {
  RPB_CHECK(n >= 1, "relative_index_1d", "n ", n, " must be at least 1");
  std::vector<int64_t> v(static_cast<std::size_t>(n * n));
  for (int64_t i = 0; i < n; ++i)
    for (int64_t j = 0; j < n; ++j) v[static_cast<std::size_t>(i * n + j)] = i - j + n - 1;
  return Tensor::indices({n, n}, v);
}

// SwinTransformerBlock.__init__: img_mask labels cnt = 3 * h_region + w_region, window_partition, then
// mask_windows.unsqueeze(1) - mask_windows.unsqueeze(2) != 0 -> -100.0, == 0 -> 0.0.
Tensor swin_shift_mask(int64_t H, int64_t W, int64_t wh, int64_t ww, int64_t shift_h, int64_t shift_w, DType dtype) {
  const char* op = "swin_shift_mask";
  check_window(op, wh, ww);
  RPB_CHECK(H >= 1 && H % wh == 0, op, "grid height ", H, " is not a positive multiple of window_h ", wh);
  RPB_CHECK(W >= 1 && W % ww == 0, op, "grid width ", W, " is not a positive multiple of window_w ", ww);
  RPB_CHECK(shift_h >= 0 && shift_h < wh, op, "shift_h ", shift_h, " must lie in [0, window_h ", wh, ")");
  RPB_CHECK(shift_w >= 0 && shift_w < ww, op, "shift_w ", shift_w, " must lie in [0, window_w ", ww, ")");
  RPB_CHECK(dtype != DType::i64, op, "dtype must be float32 or float64");
  const int64_t nh = H / wh, nw = W / ww, n = wh * ww;
  std::vector<double> v(static_cast<std::size_t>(nh * nw * n * n));
  std::vector<int64_t> label(static_cast<std::size_t>(n));
  for (int64_t a = 0; a < nh; ++a)
    for (int64_t b = 0; b < nw; ++b) {
      for (int64_t t = 0; t < n; ++t) {
        const int64_t r = a * wh + t / ww, c = b * ww + t % ww;
        label[t] = 3 * region(r, H, wh, shift_h) + region(c, W, ww, shift_w);
      }
      double* m = v.data() + (a * nw + b) * n * n;
      // attn_mask[w, i, j] = mask_windows[w, j] - mask_windows[w, i]: only its being non-zero matters.
      for (int64_t i = 0; i < n; ++i)
        for (int64_t j = 0; j < n; ++j) m[i * n + j] = label[j] != label[i] ? -100.0 : 0.0;
    }
  return from_doubles({nh * nw, n, n}, v, dtype);
}

// Swin V2 WindowAttention.__init__: relative_coords_h = arange(-(Wh - 1), Wh), stacked with the w coordinates by
// meshgrid (ij) into (1, 2Wh - 1, 2Ww - 1, 2); divided by (pretrained - 1) or (window - 1); *= 8;
// sign(x) * log2(|x| + 1) / log2(8). V2 computes in float32; we compute in double, then round to `dtype`.
Tensor swin_relative_coords_table(int64_t wh, int64_t ww, int64_t pretrained_h, int64_t pretrained_w, DType dtype) {
  const char* op = "swin_relative_coords_table";
  check_window(op, wh, ww);
  RPB_CHECK(pretrained_h == 0 || pretrained_h >= 2, op, "pretrained_window_h ", pretrained_h,
            " must be 0 (this window) or at least 2 (coordinates are divided by pretrained_window_h - 1)");
  RPB_CHECK(pretrained_w == 0 || pretrained_w >= 2, op, "pretrained_window_w ", pretrained_w,
            " must be 0 (this window) or at least 2 (coordinates are divided by pretrained_window_w - 1)");
  RPB_CHECK(dtype != DType::i64, op, "dtype must be float32 or float64");
  // V2 tests pretrained_window_size[0] > 0 and then divides both axes by the pretrained size.
  const bool pre = pretrained_h > 0 || pretrained_w > 0;
  RPB_CHECK(!pre || (pretrained_h > 0 && pretrained_w > 0), op, "pretrained_window_h ", pretrained_h,
            " and pretrained_window_w ", pretrained_w, " must both be 0 or both be set");
  const double div_h = static_cast<double>(pre ? pretrained_h - 1 : wh - 1);
  const double div_w = static_cast<double>(pre ? pretrained_w - 1 : ww - 1);
  auto f = [](double x, double div) {
    if (div == 0.0) return 0.0;  // extent-1 axis: only the coordinate 0
    const double y = x / div * 8.0;
    const double sign = y > 0 ? 1.0 : (y < 0 ? -1.0 : 0.0);
    return sign * std::log2(std::abs(y) + 1.0) / std::log2(8.0);
  };
  const int64_t rh = 2 * wh - 1, rw = 2 * ww - 1;
  std::vector<double> v(static_cast<std::size_t>(rh * rw * 2));
  for (int64_t i = 0; i < rh; ++i)
    for (int64_t j = 0; j < rw; ++j) {
      v[(i * rw + j) * 2 + 0] = f(static_cast<double>(i - (wh - 1)), div_h);
      v[(i * rw + j) * 2 + 1] = f(static_cast<double>(j - (ww - 1)), div_w);
    }
  return from_doubles({rh * rw, 2}, v, dtype);
}

}  // namespace rpb::nn
