// rpb/nn/window_attention.h: Swin's (shifted) window attention with its relative position bias (V1 table, V2
// continuous MLP): the `swin` and `swin_v2` rows of the position-scheme registry (nn/position/scheme.h).
//
// Conventions (microsoft/Swin-Transformer models/swin_transformer.py and swin_transformer_v2.py; seed 004;
// docs/references.md 1.3), each also written where it is implemented in nn/window_attention.cpp:
//   grids       (B, H, W, C), row-major: token t of an H x W grid is the cell (t / W, t % W) ("raster order").
//   windows     window_partition views (B, H/wh, wh, W/ww, ww, C), permutes (0, 1, 3, 2, 4, 5) and flattens to
//               (B * nW, wh * ww, C): windows in raster order over the grid of windows, tokens in raster order
//               inside a window. window_reverse is its inverse.
//   index       Swin V1 relative_position_index: query - key per axis, shifted by (Wh - 1, Ww - 1), then
//               row * (2Ww - 1) + column, in [0, (2Wh - 1)(2Ww - 1) - 1]. The opposite sign to T5.
//   shift       torch.roll(x, -shift) on axes (1, 2) before attention and +shift after; inside the rolled grid the
//               9 regions of Swin's img_mask (slices (0, -ws), (-ws, -shift), (-shift, None) per axis) may not
//               attend to each other: a -100.0 (not -inf) additive bias between different regions.
//   clamp       Swin's SwinTransformerBlock: if min(H, W) <= window, the window becomes min(H, W) and the shift 0
//               (square windows, exactly Swin); a non-square window is clamped per axis as timm's
//               _calc_window_shift (an axis with extent <= its window takes the extent and no shift).
//   padding     H and W are padded with zeros at the bottom/right to multiples of the window (as Swin's detection
//               code does before the roll); unlike Swin, padded keys are masked (-inf), so real queries never
//               attend to padding.
#pragma once

#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "core/rng.h"
#include "nn/attention_stats.h"
#include "nn/layers.h"
#include "nn/module.h"
#include "nn/position/scheme.h"

namespace rpb::nn {

// ---- window helpers (differentiable: built from reshape, permute, slice and concat) ----

/// Swin's window_partition: x (B, H, W, C) -> (B * nW, wh * ww, C) with nW = (H / wh) * (W / ww); H and W must be
/// multiples of the window. A view (B, H/wh, wh, W/ww, ww, C) permuted (0, 1, 3, 2, 4, 5).
Tensor window_partition(const Tensor& x, int64_t wh, int64_t ww);

/// Swin's window_reverse, the inverse of window_partition: windows (B * nW, wh * ww, C) (or (B * nW, wh, ww, C))
/// -> (B, H, W, C).
Tensor window_reverse(const Tensor& windows, int64_t wh, int64_t ww, int64_t H, int64_t W);

/// torch.roll(x, shifts=(shift_h, shift_w), dims=(1, 2)) of x (B, H, W, C): out[:, i, j] = x[:, (i - shift_h) mod H,
/// (j - shift_w) mod W]. Any integer shifts (negative roll the other way).
Tensor roll2d(const Tensor& x, int64_t shift_h, int64_t shift_w);

// ---- Swin's index, shift mask and V2 coordinates ----

/// Seed 004's 1-D index (n, n): query - key + n - 1, in [0, 2n - 2] (Swin's index in 1-D).
Tensor relative_index_1d(int64_t n);

/// Swin V1 relative_position_index (seed 004): (N, N) i64 with N = wh * ww,
/// index[q][k] = (qy - ky + wh - 1) * (2ww - 1) + (qx - kx + ww - 1).
Tensor swin_relative_position_index(int64_t wh, int64_t ww);

/// Swin's attn_mask for a shifted window over an H x W grid (H, W multiples of the window; 0 <= shift < window per
/// axis): (nW, N, N) of 0 (same region) or -100.0 (different regions), regions labelled as Swin's img_mask. An axis
/// with shift 0 is a single region (all zeros when both shifts are 0).
Tensor swin_shift_mask(int64_t H, int64_t W, int64_t wh, int64_t ww, int64_t shift_h, int64_t shift_w,
                       DType dtype = DType::f32);

/// Swin V2 relative_coords_table flattened to ((2wh - 1) * (2ww - 1), 2), rows in the order of the V1 table
/// (row = (dy + wh - 1) * (2ww - 1) + dx + ww - 1), channels (dy, dx): arange(-(w - 1), w) per axis, divided by
/// (pretrained - 1) if pretrained > 0 else (w - 1), times 8, then sign(x) * log2(|x| + 1) / log2(8).
/// An axis of extent 1 without a pretrained size has only the coordinate 0 (Swin V2 would divide 0 by 0).
Tensor swin_relative_coords_table(int64_t wh, int64_t ww, int64_t pretrained_h = 0, int64_t pretrained_w = 0,
                                  DType dtype = DType::f32);

// ---- window attention ----

struct WindowAttentionOptions {
  int64_t dim = 0;    // channels C
  int64_t heads = 1;  // must divide dim
  int64_t window_h = 7, window_w = 7;
  int64_t shift_h = 0, shift_w = 0;  // 0 <= shift < window (Swin: window / 2 in every other block)
  WindowBias bias = WindowBias::table;
  /// continuous: the window size the MLP coordinates were normalized by (Swin V2's pretrained_window_size;
  /// 0 = this window). Set it to the training window to transfer a model to another window.
  int64_t pretrained_window_h = 0, pretrained_window_w = 0;
  int64_t cpb_hidden = 512;  // continuous: hidden width of cpb_mlp
  /// The factor of the scores q k^T (model.attn_scale); 0: head_dim^-0.5 (Swin's qk_scale = None), as in
  /// nn::AttentionOptions::scale.
  double scale = 0;
  double init_std = 0.02;    // trunc_normal std of the Linear weights and of the table
  /// The fused kernel (core/ops.h fused_attention, reading the bias per (dy, dx) offset) or the reference path
  /// (the (B, nW * heads, N, N) bias and scores materialized).
  bool fused = true;
};

/// The window and shift a forward uses for one H x W grid (after Swin's clamp) and the padded extents.
struct WindowGeometry {
  int64_t wh = 0, ww = 0;            // effective window
  int64_t shift_h = 0, shift_w = 0;  // effective shift
  int64_t Hp = 0, Wp = 0;            // H and W rounded up to multiples of the window
};

/// Swin V2's cpb_mlp: Linear(2, hidden, bias) -> ReLU -> Linear(hidden, heads, no bias). The two Linears are
/// registered as "0" and "2" as in V2's nn.Sequential, so parameter names match its state dict
/// ("cpb_mlp.0.weight", "cpb_mlp.0.bias", "cpb_mlp.2.weight").
class ContinuousPositionBiasMLP : public Module {
 public:
  ContinuousPositionBiasMLP(int64_t hidden, int64_t heads, Generator& gen, double init_std);
  static int64_t parameter_count(int64_t hidden, int64_t heads);
  using Module::parameter_count;
  /// coords (..., 2) -> (..., heads), before V2's 16 * sigmoid.
  Tensor forward(const Tensor& coords) const;

  std::shared_ptr<Linear> fc1;  // weight (hidden, 2), bias (hidden)
  std::shared_ptr<Linear> fc2;  // weight (heads, hidden), no bias
};

/// Swin's (shifted) window multi-head self-attention over (B, H, W, C) grids: qkv = Linear(dim, 3dim),
/// proj = Linear(dim, dim), scores q k^T * scale (options.scale; head_dim^-0.5 by default) plus a relative position
/// bias per window:
///   "table"      Swin V1: a learned ((2Wh - 1)(2Ww - 1), heads) table read at relative_position_index;
///   "continuous" Swin V2: 16 * sigmoid(cpb_mlp(relative_coords_table))[relative_position_index]; V1's scaled
///                dot product is kept (not V2's cosine attention with a learned logit scale), to isolate the bias;
///   "none"       no position bias.
/// Shifted windows add Swin's -100 region mask; padded keys are masked. Attention and projection dropout are not
/// implemented (Swin's defaults are 0).
///
/// Diagnostics (AttentionStatsSource): each real cell's attention over the keys of its window, the distance
/// between cells measured on the unrolled grid (a pair across the roll's wrap is in two regions and weighs
/// e^-100 against its own region); padded cells are neither keys nor counted queries.
class WindowAttention : public Module, public Positional, public AttentionStatsSource {
 public:
  /// Throws an rpb::Error naming the offending option (heads not dividing dim, bad bias name, shift >= window, ...).
  WindowAttention(const WindowAttentionOptions& options, Generator& gen);
  /// The parameters of a WindowAttention(options), counted without building it.
  static int64_t parameter_count(const WindowAttentionOptions& options);
  using Module::parameter_count;

  /// x (B, H, W, C) -> (B, H, W, C): pads to multiples of the (clamped) window, rolls by -shift, partitions, attends
  /// per window with the bias (and Swin's region mask when shifted, padded keys masked), reverses, rolls back, crops.
  Tensor forward(const Tensor& x) const;

  /// The core of forward() on an already padded grid (the test hook for padding): padded (B, Hp, Wp, C) whose real
  /// cells are [0, H) x [0, W) (Hp, Wp as geometry(H, W) gives; the rest, whatever it holds, is masked as keys) ->
  /// (B, Hp, Wp, C) including the outputs at padded cells (which forward() crops).
  Tensor attend_windows(const Tensor& padded, int64_t H, int64_t W) const;

  /// The effective window, shift and padded extents for an H x W grid (Swin's clamp; see the file comment).
  WindowGeometry geometry(int64_t H, int64_t W) const;

  /// The additive position bias (heads, N, N) of the current window, N = window_h * window_w; undefined for "none".
  Tensor relative_position_bias() const;
  /// The same for a window wh x ww no larger than the table's ("table") or of any size ("continuous").
  Tensor relative_position_bias(int64_t wh, int64_t ww) const;
  /// The same bias per offset, as fused_attention reads it on a wh x ww grid (RelativeBias with grid {wh, ww}):
  /// (heads, (2wh - 1)(2ww - 1)), column (dy + wh - 1) * (2ww - 1) + dx + ww - 1 for key - query = (dy, dx)
  /// (Swin's index counts query - key, so this is its table read in reverse offset order). Undefined for "none".
  RelativeBias relative_position_bias_offsets(int64_t wh, int64_t ww) const;

  /// The bias table's entries, or the bias MLP's parameters.
  int64_t position_parameter_count() const override;
  /// "table": the table per head as a heatmap over (dy, dx).
  std::string report(const std::string& prefix) const override;

  /// Changes the window, keeping the shift (which must stay below the new window), and rebuilds the
  /// relative_position_index (and relative_coords_table) buffers. "continuous": any window (the MLP is evaluated on
  /// the new coordinates, normalized by pretrained_window if set, as Swin V2). "table": a window no larger than the
  /// one the table was built for (the smaller window reads the rows of its offsets; a larger one would need V1's
  /// bicubic table interpolation, which is not implemented).
  void set_window(int64_t wh, int64_t ww);
  /// set_window with a new shift.
  void set_window(int64_t wh, int64_t ww, int64_t shift_h, int64_t shift_w);

  const WindowAttentionOptions& options() const { return o_; }
  int64_t heads() const override { return o_.heads; }
  int64_t head_dim() const { return o_.dim / o_.heads; }
  /// The factor of q k^T: options.scale, or head_dim^-0.5 when it is 0.
  double scale() const { return scale_; }

 private:
  WindowAttentionOptions o_;
  int64_t table_wh_, table_ww_;  // the window the V1 table was sized for
  double scale_;                 // scale(), resolved once from o_.scale and head_dim()

 public:
  std::shared_ptr<Linear> qkv;   // weight (3dim, dim), bias (3dim)
  std::shared_ptr<Linear> proj;  // weight (dim, dim), bias (dim)
  /// "table" only (undefined otherwise); trunc_normal(std init_std).
  Tensor relative_position_bias_table;  // ((2Wh-1)*(2Ww-1), heads), Wh x Ww the construction window
  /// "continuous" only (null otherwise).
  std::shared_ptr<ContinuousPositionBiasMLP> cpb_mlp;
  /// "continuous" only: non-persistent buffer (derived from the window).
  Tensor relative_coords_table;  // ((2Wh-1)*(2Ww-1), 2)
  /// "table" and "continuous": non-persistent buffer of row indices into the table (for "table" after a smaller
  /// set_window: rows of the construction-size table).
  Tensor relative_position_index;  // (Wh*Ww, Wh*Ww) i64

 private:
  Tensor attend(const Tensor& padded, int64_t H, int64_t W, const WindowGeometry& g) const;
  Tensor index_for(int64_t wh, int64_t ww) const;
  Tensor coords_for(int64_t wh, int64_t ww) const;
  Tensor window_bias(const WindowGeometry& g, DType dtype) const;
  Tensor key_padding_mask(int64_t H, int64_t W, const WindowGeometry& g) const;
  std::vector<int64_t> padded_keys(int64_t H, int64_t W, const WindowGeometry& g) const;
  Tensor window_padding(int64_t B, int64_t H, int64_t W, const WindowGeometry& g) const;
  Tensor region_mask(const WindowGeometry& g, DType dtype) const;
  Tensor window_cells(const WindowGeometry& g) const;
  void record_stats(const Tensor& packed, int64_t H, int64_t W, const WindowGeometry& g) const;
  void rebuild_buffers();

  // Derived constant tensors keyed by their arguments (window, shift, grid, dtype); cleared by set_window.
  mutable std::mutex cache_mutex_;
  mutable std::map<std::vector<int64_t>, Tensor> cache_;
  template <typename Make>
  Tensor cached(std::vector<int64_t> key, Make&& make) const;
};

}  // namespace rpb::nn
