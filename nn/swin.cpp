// rpb/nn/swin.cpp: Swin window attention (V1 table and V2 continuous bias) and the 2-D position schemes.
//
// References: microsoft/Swin-Transformer models/swin_transformer.py (V1: window_partition, window_reverse,
// WindowAttention, SwinTransformerBlock's attn_mask and clamp) and models/swin_transformer_v2.py (cpb_mlp,
// relative_coords_table); seed 004 for the index; docs/references.md section 1.3.
//
// Like nn/position.cpp, constant tables (indices, masks, distances, coordinates) are computed exactly in int64 or
// double and then stored in the dtype of the module's own parameters or buffers, so Module::to(f64) turns
// everything to float64 for the gradient checks.
#include "nn/swin.h"

#include "nn/last_value_cache.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "core/ops.h"
#include "nn/attention.h"
#include "nn/init.h"
#include "nn/position.h"

namespace rpb::nn {

namespace {

Tensor from_doubles(const Shape& shape, const std::vector<double>& values, DType dtype) {
  Tensor t = Tensor::from_vector<double>(shape, values);
  return dtype == DType::f64 ? t : t.to(dtype);
}

int64_t mod(int64_t a, int64_t n) { return ((a % n) + n) % n; }

// Swin's img_mask label along one axis of extent n (a multiple of the window w) for shift s: the slices
// (0, -w), (-w, -s), (-s, None) are labelled 0, 1, 2. With s = 0 Python's slice(-0, None) would be the whole
// axis; Swin builds no mask then, and we treat the axis as a single region.
int64_t region(int64_t i, int64_t n, int64_t w, int64_t s) {
  if (s == 0) return 0;
  if (i < n - w) return 0;
  if (i < n - s) return 1;
  return 2;
}

void check_window(const char* op, int64_t wh, int64_t ww) {
  RPB_CHECK(wh >= 1, op, "window_h ", wh, " must be at least 1");
  RPB_CHECK(ww >= 1, op, "window_w ", ww, " must be at least 1");
}

void check_grid(const char* op, const Tensor& x) {
  RPB_CHECK(x.defined(), op, "the grid is undefined");
  RPB_CHECK(x.dim() == 4, op, "expected a (B, H, W, C) grid, got ", x.shape());
}

// The row of the V1 table for the offset (dy, dx) of a table sized for a twh x tww window (seed 004).
int64_t table_row(int64_t dy, int64_t dx, int64_t twh, int64_t tww) { return (dy + twh - 1) * (2 * tww - 1) + dx + tww - 1; }

// (N, N) rows of a table sized for twh x tww, for a window wh x ww no larger: query - key per axis.
Tensor table_index(int64_t wh, int64_t ww, int64_t twh, int64_t tww) {
  const int64_t n = wh * ww;
  std::vector<int64_t> v(static_cast<std::size_t>(n * n));
  for (int64_t q = 0; q < n; ++q)
    for (int64_t k = 0; k < n; ++k) v[q * n + k] = table_row(q / ww - k / ww, q % ww - k % ww, twh, tww);
  return Tensor::indices({n, n}, v);
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

// ---- window attention ----

ContinuousPositionBiasMLP::ContinuousPositionBiasMLP(int64_t hidden, int64_t heads, Generator& gen, double init_std)
    : fc1(register_module("0", std::make_shared<Linear>(2, hidden, true, gen, init_std))),
      fc2(register_module("2", std::make_shared<Linear>(hidden, heads, false, gen, init_std))) {
  // Swin V2's _init_weights: trunc_normal_(std=.02) on every Linear weight, zero biases.
  init::trunc_normal_(fc1->weight, gen, init_std);
  init::trunc_normal_(fc2->weight, gen, init_std);
}

Tensor ContinuousPositionBiasMLP::forward(const Tensor& coords) const { return fc2->forward(relu(fc1->forward(coords))); }

namespace {

const WindowAttentionOptions& validated(const WindowAttentionOptions& o) {
  const char* op = "window_attention";
  RPB_CHECK(o.dim >= 1, op, "dim ", o.dim, " must be at least 1");
  RPB_CHECK(o.heads >= 1, op, "heads ", o.heads, " must be at least 1");
  RPB_CHECK(o.dim % o.heads == 0, op, "heads ", o.heads, " must divide dim ", o.dim);
  check_window(op, o.window_h, o.window_w);
  RPB_CHECK(o.shift_h >= 0 && o.shift_h < o.window_h, op, "shift_h ", o.shift_h, " must lie in [0, window_h ",
            o.window_h, ") (Swin: shift_size must in 0-window_size)");
  RPB_CHECK(o.shift_w >= 0 && o.shift_w < o.window_w, op, "shift_w ", o.shift_w, " must lie in [0, window_w ",
            o.window_w, ")");
  RPB_CHECK(o.bias == "table" || o.bias == "continuous" || o.bias == "none", op, "bias '", o.bias,
            "' is unknown (expected one of: table, continuous, none)");
  if (o.bias == "continuous") {
    RPB_CHECK(o.cpb_hidden >= 1, op, "cpb_hidden ", o.cpb_hidden, " must be at least 1");
    RPB_CHECK((o.pretrained_window_h == 0 && o.pretrained_window_w == 0) ||
                  (o.pretrained_window_h >= 2 && o.pretrained_window_w >= 2),
              op, "pretrained_window_h ", o.pretrained_window_h, " and pretrained_window_w ", o.pretrained_window_w,
              " must both be 0 (this window) or both at least 2");
  }
  RPB_CHECK(std::isfinite(o.init_std) && o.init_std >= 0, op, "init_std ", o.init_std,
            " must be finite and non-negative");
  return o;
}

Tensor trunc_normal_table(const Shape& shape, Generator& gen, double std) {
  Tensor t = Tensor::zeros(shape);
  init::trunc_normal_(t, gen, std);
  return t;
}

// Points a registered buffer's handle at new contents (another shape), as Module::to does for dtypes, so the
// handle the module's member and its buffer list share stays valid.
void replace_contents(const Tensor& dst, const Tensor& src) {
  TensorImpl& d = dst.impl();
  d.storage = src.impl().storage;
  d.offset = src.impl().offset;
  d.shape = src.shape();
  d.dtype = src.dtype();
}

}  // namespace

template <typename Make>
Tensor WindowAttention::cached(std::vector<int64_t> key, Make&& make) const {
  std::lock_guard<std::mutex> lock(cache_mutex_);
  auto it = cache_.find(key);
  if (it != cache_.end()) return it->second;
  if (cache_.size() >= 64) cache_.clear();  // grids of many sizes: keep the cache small
  Tensor t = make();
  cache_.emplace(std::move(key), t);
  return t;
}

WindowAttention::WindowAttention(const WindowAttentionOptions& options, Generator& gen)
    : o_(validated(options)),
      table_wh_(o_.window_h),
      table_ww_(o_.window_w),
      qkv(register_module("qkv", std::make_shared<Linear>(o_.dim, 3 * o_.dim, true, gen, o_.init_std))),
      proj(register_module("proj", std::make_shared<Linear>(o_.dim, o_.dim, true, gen, o_.init_std))),
      relative_position_bias_table(
          o_.bias == "table"
              ? register_parameter("relative_position_bias_table",
                                   trunc_normal_table({(2 * o_.window_h - 1) * (2 * o_.window_w - 1), o_.heads}, gen,
                                                      o_.init_std))
              : Tensor()),
      cpb_mlp(o_.bias == "continuous"
                  ? register_module("cpb_mlp",
                                    std::make_shared<ContinuousPositionBiasMLP>(o_.cpb_hidden, o_.heads, gen, o_.init_std))
                  : nullptr),
      relative_coords_table(o_.bias == "continuous"
                                ? register_buffer("relative_coords_table",
                                                  swin_relative_coords_table(o_.window_h, o_.window_w,
                                                                             o_.pretrained_window_h,
                                                                             o_.pretrained_window_w),
                                                  /*persistent=*/false)
                                : Tensor()),
      relative_position_index(o_.bias != "none"
                                  ? register_buffer("relative_position_index",
                                                    swin_relative_position_index(o_.window_h, o_.window_w),
                                                    /*persistent=*/false)
                                  : Tensor()) {
  // Swin V1/V2 _init_weights: trunc_normal_(std=.02) on Linear weights, zero biases (Linear zeroes its biases).
  init::trunc_normal_(qkv->weight, gen, o_.init_std);
  init::trunc_normal_(proj->weight, gen, o_.init_std);
}

WindowGeometry WindowAttention::geometry(int64_t H, int64_t W) const {
  RPB_CHECK(H >= 1 && W >= 1, "window_attention", "grid ", H, " x ", W, " must have at least one cell");
  WindowGeometry g{o_.window_h, o_.window_w, o_.shift_h, o_.shift_w, 0, 0};
  if (g.wh == g.ww) {
    // SwinTransformerBlock: "if window size is larger than input resolution, we don't partition windows".
    const int64_t m = std::min(H, W);
    if (m <= g.wh) {
      g.wh = g.ww = m;
      g.shift_h = g.shift_w = 0;
    }
  } else {
    // timm's _calc_window_shift, per axis.
    if (H <= g.wh) {
      g.wh = H;
      g.shift_h = 0;
    }
    if (W <= g.ww) {
      g.ww = W;
      g.shift_w = 0;
    }
  }
  g.Hp = (H + g.wh - 1) / g.wh * g.wh;
  g.Wp = (W + g.ww - 1) / g.ww * g.ww;
  return g;
}

Tensor WindowAttention::index_for(int64_t wh, int64_t ww) const {
  if (wh == o_.window_h && ww == o_.window_w) return relative_position_index;
  if (o_.bias == "table") {
    RPB_CHECK(wh <= table_wh_ && ww <= table_ww_, "window_attention", "window ", wh, " x ", ww,
              " is larger than the ", table_wh_, " x ", table_ww_,
              " the bias table (bias 'table') was built for; use bias 'continuous' to change windows freely");
    return cached({0, wh, ww}, [&] { return table_index(wh, ww, table_wh_, table_ww_); });
  }
  return cached({1, wh, ww}, [&] { return swin_relative_position_index(wh, ww); });
}

Tensor WindowAttention::coords_for(int64_t wh, int64_t ww) const {
  if (wh == o_.window_h && ww == o_.window_w) return relative_coords_table;
  const DType dt = relative_coords_table.dtype();
  return cached({2, wh, ww, static_cast<int64_t>(dt)}, [&] {
    return swin_relative_coords_table(wh, ww, o_.pretrained_window_h, o_.pretrained_window_w, dt);
  });
}

Tensor WindowAttention::relative_position_bias() const { return relative_position_bias(o_.window_h, o_.window_w); }

Tensor WindowAttention::relative_position_bias(int64_t wh, int64_t ww) const {
  check_window("window_attention", wh, ww);
  if (o_.bias == "none") return Tensor();
  const Tensor idx = index_for(wh, ww);  // (N, N) i64
  if (o_.bias == "table") {
    // V1: table[index.view(-1)].view(N, N, nH).permute(2, 0, 1)
    return permute(index_select(relative_position_bias_table, idx), {2, 0, 1});  // (heads, N, N)
  }
  // V2: 16 * sigmoid(cpb_mlp(relative_coords_table).view(-1, nH)[index].view(N, N, nH).permute(2, 0, 1)). The
  // sigmoid is applied to the (rows, heads) table before the lookup: elementwise, so the same values, cheaper.
  const Tensor table = mul_scalar(sigmoid(cpb_mlp->forward(coords_for(wh, ww))), 16.0);  // (rows, heads)
  return permute(index_select(table, idx), {2, 0, 1});                                    // (heads, N, N)
}

Tensor WindowAttention::relative_position_bias_offsets(int64_t wh, int64_t ww) const {
  check_window("window_attention", wh, ww);
  if (o_.bias == "none") return Tensor();
  // The table row of each (dy, dx) offset, read off the (N, N) index at any pair with that offset.
  const Tensor idx = index_for(wh, ww);  // (N, N) i64; outside cached(), whose lock index_for takes too
  const Tensor rows = cached({5, wh, ww}, [&] {
    const int64_t n = wh * ww;
    const int64_t* pi = idx.data<int64_t>();
    std::vector<int64_t> v(static_cast<std::size_t>((2 * wh - 1) * (2 * ww - 1)));
    for (int64_t i = 0; i < n; ++i)
      for (int64_t j = 0; j < n; ++j)
        v[static_cast<std::size_t>((j / ww - i / ww + wh - 1) * (2 * ww - 1) + (j % ww - i % ww + ww - 1))] =
            pi[i * n + j];
    return Tensor::indices({static_cast<int64_t>(v.size())}, v);
  });
  const Tensor table = o_.bias == "table" ? relative_position_bias_table
                                          : mul_scalar(sigmoid(cpb_mlp->forward(coords_for(wh, ww))), 16.0);
  return permute(index_select(table, rows), {1, 0});  // (R, heads) -> (heads, R)
}

// The per-window additive bias (1, nW * heads, N, N) (windows outer, heads inner, as the (B, nW * heads, N, dh)
// layout of attend()): the position bias plus Swin's -100 region mask when shifted; undefined when neither.
Tensor WindowAttention::window_bias(const WindowGeometry& g, DType dtype) const {
  const int64_t n = g.wh * g.ww, nW = (g.Hp / g.wh) * (g.Wp / g.ww), h = o_.heads;
  const Tensor pos = relative_position_bias(g.wh, g.ww);  // (heads, N, N) or undefined
  Tensor shift;                                           // (nW, 1, N, N) or undefined
  if (g.shift_h > 0 || g.shift_w > 0)
    shift = cached({3, g.Hp, g.Wp, g.wh, g.ww, g.shift_h, g.shift_w, static_cast<int64_t>(dtype)}, [&] {
      return reshape(swin_shift_mask(g.Hp, g.Wp, g.wh, g.ww, g.shift_h, g.shift_w, dtype), {nW, 1, n, n});
    });
  if (!pos.defined() && !shift.defined()) return Tensor();
  if (nW == 1 && !shift.defined()) return reshape(pos, {1, h, n, n});
  Tensor b;
  if (pos.defined() && shift.defined()) {
    b = add(reshape(pos, {1, h, n, n}), shift);  // attn + bias.unsqueeze(0), then + mask per window
  } else if (pos.defined()) {
    b = add(reshape(pos, {1, h, n, n}), Tensor::zeros({nW, 1, 1, 1}, pos.dtype()));  // the same bias per window
  } else {
    b = add(shift, Tensor::zeros({1, h, 1, 1}, dtype));  // the same mask per head
  }
  return reshape(b, {1, nW * h, n, n});
}

// (nW, N) flattened: 1 at keys that are padding (rows >= H or columns >= W of the padded grid, after the roll by
// -shift and the partition).
std::vector<int64_t> WindowAttention::padded_keys(int64_t H, int64_t W, const WindowGeometry& g) const {
  const int64_t n = g.wh * g.ww, nw = g.Wp / g.ww, nW = (g.Hp / g.wh) * nw;
  std::vector<int64_t> v(static_cast<std::size_t>(nW * n), 0);
  for (int64_t r = 0; r < g.Hp; ++r)
    for (int64_t c = 0; c < g.Wp; ++c) {
      // rolled[r, c] = padded[(r + shift_h) mod Hp, (c + shift_w) mod Wp] (torch.roll by -shift)
      const int64_t pr = mod(r + g.shift_h, g.Hp), pc = mod(c + g.shift_w, g.Wp);
      if (pr < H && pc < W) continue;
      v[static_cast<std::size_t>(((r / g.wh) * nw + c / g.ww) * n + (r % g.wh) * g.ww + c % g.ww)] = 1;
    }
  return v;
}

// (1, nW * heads, 1, N) i64: padded_keys repeated per head; undefined without padding.
Tensor WindowAttention::key_padding_mask(int64_t H, int64_t W, const WindowGeometry& g) const {
  if (g.Hp == H && g.Wp == W) return Tensor();
  return cached({4, H, W, g.Hp, g.Wp, g.wh, g.ww, g.shift_h, g.shift_w}, [&] {
    const int64_t n = g.wh * g.ww, nW = (g.Hp / g.wh) * (g.Wp / g.ww), h = o_.heads;
    const std::vector<int64_t> keys = padded_keys(H, W, g);
    std::vector<int64_t> v;
    v.reserve(static_cast<std::size_t>(nW * h * n));
    for (int64_t w = 0; w < nW; ++w)
      for (int64_t k = 0; k < h; ++k) v.insert(v.end(), keys.begin() + w * n, keys.begin() + (w + 1) * n);
    return Tensor::indices({1, nW * h, 1, n}, v);
  });
}

Tensor WindowAttention::forward(const Tensor& x) const {
  check_grid("window_attention", x);
  RPB_CHECK(x.size(3) == o_.dim, "window_attention", "grid ", x.shape(), " does not end in dim ", o_.dim);
  const int64_t B = x.size(0), H = x.size(1), W = x.size(2), C = x.size(3);
  const WindowGeometry g = geometry(H, W);
  Tensor xp = x;  // zeros at the bottom and right (Swin's detection code: F.pad(x, (0, 0, 0, pad_r, 0, pad_b)))
  if (g.Hp > H) xp = concat({xp, Tensor::zeros({B, g.Hp - H, W, C}, x.dtype())}, 1);
  if (g.Wp > W) xp = concat({xp, Tensor::zeros({B, g.Hp, g.Wp - W, C}, x.dtype())}, 2);
  Tensor y = attend(xp, H, W, g);
  if (g.Hp > H) y = slice(y, 1, 0, H);
  if (g.Wp > W) y = slice(y, 2, 0, W);
  return y;
}

Tensor WindowAttention::attend_windows(const Tensor& padded, int64_t H, int64_t W) const {
  check_grid("window_attention", padded);
  const WindowGeometry g = geometry(H, W);
  RPB_CHECK(padded.size(1) == g.Hp && padded.size(2) == g.Wp && padded.size(3) == o_.dim, "window_attention",
            "padded grid ", padded.shape(), " is not (B, ", g.Hp, ", ", g.Wp, ", ", o_.dim, ") for a ", H, " x ", W,
            " grid with the window ", g.wh, " x ", g.ww);
  return attend(padded, H, W, g);
}

// SwinTransformerBlock.forward (roll, partition, attn, reverse, roll back) with WindowAttention.forward inside.
Tensor WindowAttention::attend(const Tensor& xp, int64_t H, int64_t W, const WindowGeometry& g) const {
  RPB_CHECK(xp.dtype() == qkv->weight.dtype(), "window_attention", "grid is ", dtype_name(xp.dtype()),
            " but the module is ", dtype_name(qkv->weight.dtype()), " (convert one with Module::to)");
  const int64_t B = xp.size(0), C = o_.dim, h = o_.heads, dh = head_dim();
  const int64_t n = g.wh * g.ww, nW = (g.Hp / g.wh) * (g.Wp / g.ww);
  const Tensor shifted = roll2d(xp, -g.shift_h, -g.shift_w);         // torch.roll(x, (-shift, -shift), (1, 2))
  const Tensor windows = window_partition(shifted, g.wh, g.ww);       // (B * nW, N, C)
  // qkv(x).reshape(B_, N, 3, nH, C // nH)
  const Tensor packed = reshape(qkv->forward(windows), {B * nW, n, 3, h, dh});
  // V1: q = q * head_dim^-0.5; attn = q @ k^T + bias (+ mask). Scaling the product instead of q is the same value.
  const double scale = 1.0 / std::sqrt(static_cast<double>(dh));
  Tensor merged;  // (attn @ v).transpose(1, 2).reshape(B_, N, C)
  if (o_.fused) {
    Tensor shift, padding;
    if (g.shift_h > 0 || g.shift_w > 0)
      shift = cached({7, g.Hp, g.Wp, g.wh, g.ww, g.shift_h, g.shift_w, static_cast<int64_t>(xp.dtype())},
                     [&] { return swin_shift_mask(g.Hp, g.Wp, g.wh, g.ww, g.shift_h, g.shift_w, xp.dtype()); });
    if (g.Hp != H || g.Wp != W)
      padding = cached({6, B, H, W, g.Hp, g.Wp, g.wh, g.ww, g.shift_h, g.shift_w}, [&] {
        const std::vector<int64_t> keys = padded_keys(H, W, g);
        std::vector<int64_t> v;
        for (int64_t b = 0; b < B; ++b) v.insert(v.end(), keys.begin(), keys.end());
        return Tensor::indices({B * nW, n}, v);
      });
    // Windows are the batch, window b % nW as the shift mask's G = nW rows expect; the kernel reads q, k and v
    // where the projection wrote them and writes (B * nW, N, heads, dh), the layout proj reads.
    AttentionSpec spec{scale, false, 0, g.ww};
    spec.packed_qkv = true;
    merged = reshape(
        fused_attention(packed, Tensor(), Tensor(), relative_position_bias_offsets(g.wh, g.ww), padding, shift, spec),
        {B * nW, n, C});
  } else {
    // .permute(2, 0, 3, 1, 4) -> (3, B * nW, heads, N, dh); each of q, k, v as (B, nW * heads, N, dh), so one
    // (nW * heads, N, N) bias and key mask serve every batch entry through broadcasting.
    const Tensor qkv5 = permute(packed, {2, 0, 3, 1, 4});
    auto part = [&](int i) { return reshape(slice(qkv5, 0, i, i + 1), {B, nW * h, n, dh}); };
    const Tensor out = scaled_dot_product_attention(part(0), part(1), part(2), window_bias(g, xp.dtype()),
                                                    key_padding_mask(H, W, g), scale);
    merged = reshape(permute(reshape(out, {B * nW, h, n, dh}), {0, 2, 1, 3}), {B * nW, n, C});
  }
  const Tensor y = window_reverse(proj->forward(merged), g.wh, g.ww, g.Hp, g.Wp);  // (B, Hp, Wp, C)
  return roll2d(y, g.shift_h, g.shift_w);                                         // reverse cyclic shift
}

void WindowAttention::rebuild_buffers() {
  {
    std::lock_guard<std::mutex> lock(cache_mutex_);
    cache_.clear();
  }
  if (o_.bias == "none") return;
  replace_contents(relative_position_index, o_.bias == "table"
                                                ? table_index(o_.window_h, o_.window_w, table_wh_, table_ww_)
                                                : swin_relative_position_index(o_.window_h, o_.window_w));
  if (o_.bias == "continuous")
    replace_contents(relative_coords_table,
                     swin_relative_coords_table(o_.window_h, o_.window_w, o_.pretrained_window_h,
                                                o_.pretrained_window_w, relative_coords_table.dtype()));
}

void WindowAttention::set_window(int64_t wh, int64_t ww) { set_window(wh, ww, o_.shift_h, o_.shift_w); }

void WindowAttention::set_window(int64_t wh, int64_t ww, int64_t shift_h, int64_t shift_w) {
  WindowAttentionOptions o = o_;
  o.window_h = wh;
  o.window_w = ww;
  o.shift_h = shift_h;
  o.shift_w = shift_w;
  validated(o);
  if (o.bias == "table")
    RPB_CHECK(wh <= table_wh_ && ww <= table_ww_, "window_attention", "set_window(", wh, ", ", ww,
              "): bias 'table' was built for a ", table_wh_, " x ", table_ww_,
              " window and cannot grow (Swin V1 interpolates the table bicubically; use bias 'continuous')");
  o_ = o;
  rebuild_buffers();
}

// ---- 2-D position schemes ----

namespace {

void check_hw(const std::string& scheme, int64_t H, int64_t W) {
  RPB_CHECK(H >= 1 && W >= 1, scheme.c_str(), "grid ", H, " x ", W, " must have at least one cell");
}


/// learned2d: one learned vector per cell of a (max_h, max_w) grid; an H x W grid reads its top-left H x W corner.
class Learned2D final : public Position2D {
 public:
  Learned2D(const Position2DOptions& o, Generator& gen) : o_(o) { init::trunc_normal_(table, gen, o.init_std); }
  std::string name() const override { return "learned2d"; }
  bool additive() const override { return false; }
  bool absolute() const override { return true; }

  Tensor embed(int64_t H, int64_t W) const override {
    check_hw("learned2d", H, W);
    RPB_CHECK(H <= o_.max_h, "learned2d", "grid height ", H, " is beyond the table's max_h ", o_.max_h,
              "; this scheme cannot extrapolate");
    RPB_CHECK(W <= o_.max_w, "learned2d", "grid width ", W, " is beyond the table's max_w ", o_.max_w,
              "; this scheme cannot extrapolate");
    const Tensor idx = cache_.get({H, W, static_cast<int64_t>(DType::i64)}, [&] {
      std::vector<int64_t> v(static_cast<std::size_t>(H * W));
      for (int64_t r = 0; r < H; ++r)
        for (int64_t c = 0; c < W; ++c) v[r * W + c] = r * o_.max_w + c;
      return Tensor::indices({H * W}, v);
    });
    return index_select(reshape(table, {o_.max_h * o_.max_w, o_.dim}), idx);  // (H * W, dim)
  }

 private:
  Position2DOptions o_;
  LastValueCache cache_;

 public:
  Tensor table = register_parameter("table", Tensor::zeros({o_.max_h, o_.max_w, o_.dim}));  // (max_h, max_w, dim)
};

/// sinusoidal2d: [sinusoidal_table(H, dim/2)[row], sinusoidal_table(W, dim/2)[column]] (the repo's interleaved
/// sin/cos per frequency; MAE's get_2d_sincos_pos_embed instead puts the column half first and blocks sin | cos).
class Sinusoidal2D final : public Position2D {
 public:
  explicit Sinusoidal2D(const Position2DOptions& o) : o_(o) {}
  std::string name() const override { return "sinusoidal2d"; }
  bool additive() const override { return false; }
  bool absolute() const override { return true; }

  Tensor embed(int64_t H, int64_t W) const override {
    check_hw("sinusoidal2d", H, W);
    return cache_.get({H, W, static_cast<int64_t>(dtype_carrier.dtype())}, [&] {
      const int64_t half = o_.dim / 2;
      const std::vector<double> rows = sinusoidal_table(H, half, 0, DType::f64).to_vector();
      const std::vector<double> cols = sinusoidal_table(W, half, 0, DType::f64).to_vector();
      std::vector<double> v(static_cast<std::size_t>(H * W * o_.dim));
      for (int64_t r = 0; r < H; ++r)
        for (int64_t c = 0; c < W; ++c) {
          double* p = v.data() + (r * W + c) * o_.dim;
          std::copy_n(rows.data() + r * half, half, p);
          std::copy_n(cols.data() + c * half, half, p + half);
        }
      return from_doubles({H * W, o_.dim}, v, dtype_carrier.dtype());
    });
  }

 private:
  Position2DOptions o_;
  LastValueCache cache_;

 public:
  // Holds no information: a non-persistent buffer whose dtype (set by Module::to) is the embeddings' dtype.
  Tensor dtype_carrier = register_buffer("dtype_carrier", Tensor::zeros({1}), /*persistent=*/false);  // (1)
};

/// alibi2d: -slope_h * Euclidean distance between the query and key cells.
class Alibi2D final : public Position2D {
 public:
  explicit Alibi2D(const Position2DOptions& o) : o_(o) {}
  std::string name() const override { return "alibi2d"; }
  bool additive() const override { return true; }
  bool absolute() const override { return false; }

  Tensor bias(int64_t H, int64_t W) const override {
    check_hw("alibi2d", H, W);
    const Tensor neg_dist = cache_.get({H, W, static_cast<int64_t>(slopes.dtype())}, [&] {
      const int64_t n = H * W;
      std::vector<double> v(static_cast<std::size_t>(n * n));
      for (int64_t p = 0; p < n; ++p)
        for (int64_t q = 0; q < n; ++q) {
          const double dy = static_cast<double>(p / W - q / W), dx = static_cast<double>(p % W - q % W);
          v[p * n + q] = -std::sqrt(dy * dy + dx * dx);
        }
      return from_doubles({1, n, n}, v, slopes.dtype());
    });  // (1, N, N)
    return mul(reshape(slopes, {o_.heads, 1, 1}), neg_dist);  // (heads, N, N)
  }
  Tensor relative_bias(int64_t H, int64_t W) const override {
    check_hw("alibi2d", H, W);
    const Tensor neg_dist = rel_cache_.get({H, W, static_cast<int64_t>(slopes.dtype())}, [&] {
      std::vector<double> v;
      for (int64_t dy = 1 - H; dy < H; ++dy)
        for (int64_t dx = 1 - W; dx < W; ++dx)
          v.push_back(-std::sqrt(static_cast<double>(dy * dy) + static_cast<double>(dx * dx)));
      return from_doubles({1, static_cast<int64_t>(v.size())}, v, slopes.dtype());
    });                                                   // (1, R)
    return mul(reshape(slopes, {o_.heads, 1}), neg_dist);  // (heads, R)
  }

 private:
  Position2DOptions o_;
  LastValueCache cache_, rel_cache_;

 public:
  Tensor slopes = register_buffer("slopes", from_doubles({o_.heads}, alibi_slopes(o_.heads), DType::f32),
                                  /*persistent=*/false);  // (heads)
};

/// clipped2d: a learned ((2K+1)^2, heads) table read at the clipped 2-D offset (query - key per axis).
class Clipped2D final : public Position2D {
 public:
  Clipped2D(const Position2DOptions& o, Generator& gen) : o_(o) { init::trunc_normal_(table, gen, o.init_std); }
  std::string name() const override { return "clipped2d"; }
  bool additive() const override { return true; }
  bool absolute() const override { return false; }

  Tensor bias(int64_t H, int64_t W) const override {
    check_hw("clipped2d", H, W);
    const Tensor idx =
        cache_.get({H, W, static_cast<int64_t>(DType::i64)}, [&] { return clipped_relative_index_2d(H, W, o_.max_relative_position); });
    return permute(index_select(table, idx), {2, 0, 1});  // (N, N, heads) -> (heads, N, N)
  }
  Tensor relative_bias(int64_t H, int64_t W) const override {
    check_hw("clipped2d", H, W);
    const Tensor rows = rel_cache_.get({H, W}, [&] {
      const int64_t K = o_.max_relative_position;
      std::vector<int64_t> v;
      for (int64_t dy = 1 - H; dy < H; ++dy)  // key - query; the table is read at query - key = (-dy, -dx)
        for (int64_t dx = 1 - W; dx < W; ++dx)
          v.push_back((std::clamp(-dy, -K, K) + K) * (2 * K + 1) + std::clamp(-dx, -K, K) + K);
      return Tensor::indices({static_cast<int64_t>(v.size())}, v);
    });
    return permute(index_select(table, rows), {1, 0});  // (R, heads) -> (heads, R)
  }

 private:
  Position2DOptions o_;
  LastValueCache cache_, rel_cache_;

 public:
  Tensor table = register_parameter(
      "table", Tensor::zeros({(2 * o_.max_relative_position + 1) * (2 * o_.max_relative_position + 1),
                              o_.heads}));  // ((2K+1)^2, heads)
};

/// none: no position information.
class None2D final : public Position2D {
 public:
  std::string name() const override { return "none"; }
  bool additive() const override { return false; }
  bool absolute() const override { return false; }
};

std::string joined_2d_names() {
  std::string s;
  for (const std::string& n : position_2d_names()) s += (s.empty() ? "" : ", ") + n;
  return s;
}

void validate(const Position2DOptions& o) {
  const auto& names = position_2d_names();
  RPB_CHECK(std::find(names.begin(), names.end(), o.name) != names.end(), "position2d", "unknown name '", o.name,
            "' (expected one of: ", joined_2d_names(), ")");
  const char* s = o.name.c_str();
  if (o.name == "alibi2d" || o.name == "clipped2d") RPB_CHECK(o.heads >= 1, s, "heads ", o.heads, " must be at least 1");
  if (o.name == "learned2d") {
    RPB_CHECK(o.dim >= 1, s, "dim ", o.dim, " must be at least 1");
    RPB_CHECK(o.max_h >= 1, s, "max_h ", o.max_h, " must be at least 1");
    RPB_CHECK(o.max_w >= 1, s, "max_w ", o.max_w, " must be at least 1");
  }
  if (o.name == "sinusoidal2d")
    RPB_CHECK(o.dim >= 4 && o.dim % 4 == 0, s, "dim ", o.dim,
              " must be a positive multiple of 4 (half the channels per axis, sin and cos per frequency)");
  if (o.name == "clipped2d")
    RPB_CHECK(o.max_relative_position >= 1, s, "max_relative_position ", o.max_relative_position,
              " must be at least 1 (K: offsets are clipped to [-K, K] per axis)");
  if (o.name == "learned2d" || o.name == "clipped2d")
    RPB_CHECK(std::isfinite(o.init_std) && o.init_std >= 0, s, "init_std ", o.init_std,
              " must be finite and non-negative");
}

}  // namespace

Tensor Position2D::bias(int64_t H, int64_t W) const {
  RPB_FAIL("position2d", "scheme '", name(), "' has no bias(): only additive schemes (alibi2d, clipped2d) add to the scores");
}

Tensor Position2D::relative_bias(int64_t H, int64_t W) const { return Tensor(); }

Tensor Position2D::embed(int64_t H, int64_t W) const {
  RPB_FAIL("position2d", "scheme '", name(),
           "' has no embed(): only absolute schemes (learned2d, sinusoidal2d) add embeddings to the tokens");
}

const std::vector<std::string>& position_2d_names() {
  static const std::vector<std::string> names{"learned2d", "sinusoidal2d", "alibi2d", "clipped2d", "none"};
  return names;
}

std::shared_ptr<Position2D> make_position_2d(const Position2DOptions& options, Generator& gen) {
  validate(options);
  const std::string& s = options.name;
  if (s == "learned2d") return std::make_shared<Learned2D>(options, gen);
  if (s == "sinusoidal2d") return std::make_shared<Sinusoidal2D>(options);
  if (s == "alibi2d") return std::make_shared<Alibi2D>(options);
  if (s == "clipped2d") return std::make_shared<Clipped2D>(options, gen);
  return std::make_shared<None2D>();  // "none": validate() accepted the name
}

// Swin's sign (query - key) on each axis, clipped to [-K, K] and shifted by K, then row * (2K + 1) + column.
Tensor clipped_relative_index_2d(int64_t H, int64_t W, int64_t max_relative_position) {
  check_hw("clipped_relative_index_2d", H, W);
  const int64_t k = max_relative_position;
  RPB_CHECK(k >= 1, "clipped_relative_index_2d", "max_relative_position ", k, " must be at least 1");
  const int64_t n = H * W;
  std::vector<int64_t> v(static_cast<std::size_t>(n * n));
  for (int64_t p = 0; p < n; ++p)
    for (int64_t q = 0; q < n; ++q) {
      const int64_t dy = std::clamp(p / W - q / W, -k, k) + k, dx = std::clamp(p % W - q % W, -k, k) + k;
      v[p * n + q] = dy * (2 * k + 1) + dx;
    }
  return Tensor::indices({n, n}, v);
}

}  // namespace rpb::nn
