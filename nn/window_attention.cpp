// rpb/nn/window_attention.cpp: Swin window attention (V1 table and V2 continuous bias).
//
// References: microsoft/Swin-Transformer models/swin_transformer.py (V1: window_partition, window_reverse,
// WindowAttention, SwinTransformerBlock's attn_mask and clamp) and models/swin_transformer_v2.py (cpb_mlp,
// relative_coords_table); seed 004 for the index; docs/references.md section 1.3.
//
// Like the position schemes, constant tables (indices, masks, coordinates) are computed exactly in int64 or
// double and then stored in the dtype of the module's own parameters or buffers, so Module::to(f64) turns
// everything to float64 for the gradient checks.
#include "nn/window_attention.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "core/checked.h"
#include "core/ops.h"
#include "nn/attention.h"
#include "nn/init.h"
#include "nn/position/report.h"
#include "nn/window_common.h"

namespace rpb::nn {

using namespace window_detail;

int64_t ContinuousPositionBiasMLP::parameter_count(int64_t hidden, int64_t heads) {
  return checked_add(Linear::parameter_count(2, hidden, true), Linear::parameter_count(hidden, heads, false),
                     "cpb_mlp", "parameters");
}

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
  RPB_CHECK(o.scale >= 0 && std::isfinite(o.scale), op, "scale ", o.scale, " must be finite and >= 0 (0: head_dim^-0.5)");
  RPB_CHECK(o.bias == WindowBias::table || o.bias == WindowBias::continuous || o.bias == WindowBias::none, op, "bias ",
            static_cast<int>(o.bias), " is not a WindowBias (expected one of: table, continuous, none)");
  if (o.bias == WindowBias::continuous) {
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

int64_t WindowAttention::parameter_count(const WindowAttentionOptions& o) {
  const char* op = "window_attention";
  int64_t n = checked_add(Linear::parameter_count(o.dim, 3 * o.dim, true), Linear::parameter_count(o.dim, o.dim, true),
                          op, "parameters");
  if (o.bias == WindowBias::table)
    n = checked_add(n, checked_mul(checked_mul(2 * o.window_h - 1, 2 * o.window_w - 1, op, "table"), o.heads, op, "table"),
                    op, "parameters");
  if (o.bias == WindowBias::continuous)
    n = checked_add(n, ContinuousPositionBiasMLP::parameter_count(o.cpb_hidden, o.heads), op, "parameters");
  return n;
}

WindowAttention::WindowAttention(const WindowAttentionOptions& options, Generator& gen)
    : o_(validated(options)),
      table_wh_(o_.window_h),
      table_ww_(o_.window_w),
      scale_(attention_scale(o_.scale, head_dim())),
      qkv(register_module("qkv", std::make_shared<Linear>(o_.dim, 3 * o_.dim, true, gen, o_.init_std))),
      proj(register_module("proj", std::make_shared<Linear>(o_.dim, o_.dim, true, gen, o_.init_std))),
      relative_position_bias_table(
          o_.bias == WindowBias::table
              ? register_parameter("relative_position_bias_table",
                                   trunc_normal_table({(2 * o_.window_h - 1) * (2 * o_.window_w - 1), o_.heads}, gen,
                                                      o_.init_std))
              : Tensor()),
      cpb_mlp(o_.bias == WindowBias::continuous
                  ? register_module("cpb_mlp",
                                    std::make_shared<ContinuousPositionBiasMLP>(o_.cpb_hidden, o_.heads, gen, o_.init_std))
                  : nullptr),
      relative_coords_table(o_.bias == WindowBias::continuous
                                ? register_buffer("relative_coords_table",
                                                  swin_relative_coords_table(o_.window_h, o_.window_w,
                                                                             o_.pretrained_window_h,
                                                                             o_.pretrained_window_w),
                                                  /*persistent=*/false)
                                : Tensor()),
      relative_position_index(o_.bias != WindowBias::none
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
  if (o_.bias == WindowBias::table) {
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
  if (o_.bias == WindowBias::none) return Tensor();
  const Tensor idx = index_for(wh, ww);  // (N, N) i64
  if (o_.bias == WindowBias::table) {
    // V1: table[index.view(-1)].view(N, N, nH).permute(2, 0, 1)
    return permute(index_select(relative_position_bias_table, idx), {2, 0, 1});  // (heads, N, N)
  }
  // V2: 16 * sigmoid(cpb_mlp(relative_coords_table).view(-1, nH)[index].view(N, N, nH).permute(2, 0, 1)). The
  // sigmoid is applied to the (rows, heads) table before the lookup: elementwise, so the same values, cheaper.
  const Tensor table = mul_scalar(sigmoid(cpb_mlp->forward(coords_for(wh, ww))), 16.0);  // (rows, heads)
  return permute(index_select(table, idx), {2, 0, 1});                                    // (heads, N, N)
}

RelativeBias WindowAttention::relative_position_bias_offsets(int64_t wh, int64_t ww) const {
  check_window("window_attention", wh, ww);
  if (o_.bias == WindowBias::none) return RelativeBias();
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
  const Tensor table = o_.bias == WindowBias::table ? relative_position_bias_table
                                          : mul_scalar(sigmoid(cpb_mlp->forward(coords_for(wh, ww))), 16.0);
  return RelativeBias(permute(index_select(table, rows), {1, 0}), {wh, ww});  // (R, heads) -> (heads, R)
}

int64_t WindowAttention::position_parameter_count() const {
  if (relative_position_bias_table.defined()) return relative_position_bias_table.numel();
  return cpb_mlp ? cpb_mlp->parameter_count() : 0;
}

std::string WindowAttention::report(const std::string& prefix) const {
  if (!relative_position_bias_table.defined()) return "";
  return report::heatmaps(prefix + "relative_position_bias_table", relative_position_bias_table,
                          "Swin V1 window table, window " + std::to_string(table_wh_));
}

// The per-window additive bias (1, nW * heads, N, N) (windows outer, heads inner, as the (B, nW * heads, N, dh)
// layout of attend()): the position bias plus Swin's -100 region mask when shifted; undefined when neither.
Tensor WindowAttention::window_bias(const WindowGeometry& g, DType dtype) const {
  const int64_t n = g.wh * g.ww, nW = (g.Hp / g.wh) * (g.Wp / g.ww), h = o_.heads;
  const Tensor pos = relative_position_bias(g.wh, g.ww);  // (heads, N, N) or undefined
  const Device dev = qkv->weight.device();                // the masks are made on the host and moved there
  Tensor shift = region_mask(g, dtype);                   // (nW, 1, N, N) or undefined
  if (shift.defined()) shift = reshape(shift.to(dev), {nW, 1, n, n});
  if (!pos.defined() && !shift.defined()) return Tensor();
  if (nW == 1 && !shift.defined()) return reshape(pos, {1, h, n, n});
  Tensor b;
  if (pos.defined() && shift.defined()) {
    b = add(reshape(pos, {1, h, n, n}), shift);  // attn + bias.unsqueeze(0), then + mask per window
  } else if (pos.defined()) {
    b = add(reshape(pos, {1, h, n, n}), Tensor::zeros({nW, 1, 1, 1}, pos.dtype(), dev));  // the same bias per window
  } else {
    b = add(shift, Tensor::zeros({1, h, 1, 1}, dtype, dev));  // the same mask per head
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

// (B * nW, N) i64: padded_keys for every batch entry (windows are the batch); undefined without padding.
Tensor WindowAttention::window_padding(int64_t B, int64_t H, int64_t W, const WindowGeometry& g) const {
  if (g.Hp == H && g.Wp == W) return Tensor();
  return cached({6, B, H, W, g.Hp, g.Wp, g.wh, g.ww, g.shift_h, g.shift_w}, [&] {
    const int64_t n = g.wh * g.ww, nW = (g.Hp / g.wh) * (g.Wp / g.ww);
    const std::vector<int64_t> keys = padded_keys(H, W, g);
    std::vector<int64_t> v;
    for (int64_t b = 0; b < B; ++b) v.insert(v.end(), keys.begin(), keys.end());
    return Tensor::indices({B * nW, n}, v);
  });
}

// (nW, N, N): Swin's region mask of a shifted window; undefined without a shift.
Tensor WindowAttention::region_mask(const WindowGeometry& g, DType dtype) const {
  if (g.shift_h == 0 && g.shift_w == 0) return Tensor();
  return cached({7, g.Hp, g.Wp, g.wh, g.ww, g.shift_h, g.shift_w, static_cast<int64_t>(dtype)},
                [&] { return swin_shift_mask(g.Hp, g.Wp, g.wh, g.ww, g.shift_h, g.shift_w, dtype); });
}

// (nW, N, 2) i64: the cell (row, column) of the padded grid that token t of window w holds, undoing the roll:
// rolled[r, c] = padded[(r + shift_h) mod Hp, (c + shift_w) mod Wp].
Tensor WindowAttention::window_cells(const WindowGeometry& g) const {
  return cached({8, g.Hp, g.Wp, g.wh, g.ww, g.shift_h, g.shift_w}, [&] {
    const int64_t n = g.wh * g.ww, nw = g.Wp / g.ww, nW = (g.Hp / g.wh) * nw;
    std::vector<int64_t> v;
    v.reserve(static_cast<std::size_t>(nW * n * 2));
    for (int64_t w = 0; w < nW; ++w)
      for (int64_t t = 0; t < n; ++t) {
        v.push_back(mod((w / nw) * g.wh + t / g.ww + g.shift_h, g.Hp));
        v.push_back(mod((w % nw) * g.ww + t % g.ww + g.shift_w, g.Wp));
      }
    return Tensor::indices({nW, n, 2}, v);
  });
}

// The diagnostics of one forward: q and k of packed (B * nW, N, 3, heads, dh) per window, with the window's bias,
// region mask and padding, the padded cells left out as queries.
void WindowAttention::record_stats(const Tensor& packed, int64_t H, int64_t W, const WindowGeometry& g) const {
  const int64_t BnW = packed.size(0), n = packed.size(1), h = o_.heads, dh = head_dim();
  const Tensor qkv5 = permute(packed, {2, 0, 3, 1, 4});  // (3, B * nW, heads, N, dh)
  auto part = [&](int i) { return reshape(slice(qkv5, 0, i, i + 1), {BnW, h, n, dh}); };
  const int64_t B = BnW / ((g.Hp / g.wh) * (g.Wp / g.ww));
  const Tensor padding = window_padding(B, H, W, g);
  AttentionInputs in;
  in.q = part(0), in.k = part(1), in.scale = scale_, in.relative = relative_position_bias_offsets(g.wh, g.ww);
  in.key_padding = in.query_padding = padding;
  in.score_bias = region_mask(g, packed.dtype());
  in.cells = window_cells(g);
  accumulate_attention_stats(in, *stats_);
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
  // V1: q = q * scale (qk_scale or head_dim^-0.5: scale_); attn = q @ k^T + bias (+ mask). Scaling the product
  // instead of q is the same value.
  Tensor merged;  // (attn @ v).transpose(1, 2).reshape(B_, N, C)
  if (stats_) record_stats(packed, H, W, g);
  // The fused kernel's CUDA version attends over a line only: on a GPU, windows take the composite path.
  if (o_.fused && !xp.is_cuda()) {
    const Tensor shift = region_mask(g, xp.dtype()), padding = window_padding(B, H, W, g);
    // Windows are the batch, window b % nW as the shift mask's G = nW rows expect; the kernel reads q, k and v
    // where the projection wrote them and writes (B * nW, N, heads, dh), the layout proj reads.
    AttentionSpec spec{scale_, false, 0};
    spec.packed_qkv = true;
    merged = reshape(
        fused_attention(packed, Tensor(), Tensor(), relative_position_bias_offsets(g.wh, g.ww), padding, shift, spec),
        {B * nW, n, C});
  } else {
    // .permute(2, 0, 3, 1, 4) -> (3, B * nW, heads, N, dh); each of q, k, v as (B, nW * heads, N, dh), so one
    // (nW * heads, N, N) bias and key mask serve every batch entry through broadcasting.
    const Tensor qkv5 = permute(packed, {2, 0, 3, 1, 4});
    auto part = [&](int i) { return reshape(slice(qkv5, 0, i, i + 1), {B, nW * h, n, dh}); };
    Tensor bias = window_bias(g, xp.dtype()), mask = key_padding_mask(H, W, g);
    if (bias.defined()) bias = bias.to(xp.device());
    if (mask.defined()) mask = mask.to(xp.device());
    const Tensor out = scaled_dot_product_attention(part(0), part(1), part(2), bias, mask, scale_);
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
  if (o_.bias == WindowBias::none) return;
  // set_ points the registered buffers' handles at new contents (another shape), so the handles the members and
  // the buffer list share stay valid.
  relative_position_index.set_(o_.bias == WindowBias::table
                                   ? table_index(o_.window_h, o_.window_w, table_wh_, table_ww_)
                                   : swin_relative_position_index(o_.window_h, o_.window_w));
  if (o_.bias == WindowBias::continuous)
    relative_coords_table.set_(swin_relative_coords_table(o_.window_h, o_.window_w, o_.pretrained_window_h,
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
  if (o.bias == WindowBias::table)
    RPB_CHECK(wh <= table_wh_ && ww <= table_ww_, "window_attention", "set_window(", wh, ", ", ww,
              "): bias 'table' was built for a ", table_wh_, " x ", table_ww_,
              " window and cannot grow (Swin V1 interpolates the table bicubically; use bias 'continuous')");
  o_ = o;
  rebuild_buffers();
}

}  // namespace rpb::nn
