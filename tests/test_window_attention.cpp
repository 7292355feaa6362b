// nn/window_attention.h: Swin's window attention (seed 004 golden cases, hand-computed windows, rolls and shift
// masks, a cell-by-cell reference of shifted, padded window attention, Swin V2 coordinates), float64 gradient
// checks and error messages. The swin and swin_v2 schemes' golden and gradient-check cases are
// window_scheme_cases() (tests/scheme_cases.h).
#include <doctest/doctest.h>

#include <cmath>
#include <set>
#include <vector>

#include "core/core.h"
#include "gradcheck.h"
#include "nn/grid_model.h"
#include "nn/init.h"
#include "nn/position.h"
#include "nn/window_attention.h"
#include "scheme_cases.h"
#include "tensor_checks.h"
#include "test_util.h"

using namespace rpb;
using rpb::testing::max_abs_diff;
using namespace rpb::nn;
using rpb::testing::contains;
using rpb::testing::error_of;
using rpb::testing::flat;
using rpb::testing::Matrix;
using rpb::testing::check_values;

namespace {


std::vector<double> iota(int64_t n) {
  std::vector<double> v(static_cast<std::size_t>(n));
  for (int64_t i = 0; i < n; ++i) v[i] = static_cast<double>(i);
  return v;
}

WindowAttentionOptions window_options(int64_t dim, int64_t heads, int64_t wh, int64_t ww, int64_t sh = 0,
                                      int64_t sw = 0, WindowBias bias = WindowBias::table) {
  WindowAttentionOptions o;
  o.dim = dim;
  o.heads = heads;
  o.window_h = wh;
  o.window_w = ww;
  o.shift_h = sh;
  o.shift_w = sw;
  o.bias = bias;
  return o;
}

// Swin's img_mask label along one axis (slices (0, -w), (-w, -s), (-s, None)); one region when s == 0.
int64_t swin_region(int64_t i, int64_t n, int64_t w, int64_t s) {
  if (s == 0 || i < n - w) return 0;
  return i < n - s ? 1 : 2;
}

// Swin's shifted-window attention with a V1 table, written out cell by cell in float64 without window_partition,
// roll2d or swin_shift_mask: a real query cell (i, j) sits at (r, c) = ((i - sh) mod Hp, (j - sw) mod Wp) of the
// rolled, zero-padded grid; it attends to the real cells in the same window, with the bias
// table[(dy + wh - 1)(2ww - 1) + dx + ww - 1] (dy, dx = query - key inside the window) plus -100 between different
// img_mask regions of the rolled grid. Padded cells are never keys. The scores are q k^T * `scale`, or
// q k^T / sqrt(head_dim) when `scale` is 0. Returns proj(attention) at the real cells.
Tensor reference_window_attention(const WindowAttention& m, const Tensor& x, int64_t wh, int64_t ww, int64_t sh,
                                  int64_t sw, double scale = 0) {
  const int64_t B = x.size(0), H = x.size(1), W = x.size(2), C = x.size(3);
  const int64_t heads = m.options().heads, dh = C / heads;
  const int64_t Hp = (H + wh - 1) / wh * wh, Wp = (W + ww - 1) / ww * ww;
  const std::vector<double> qkv = m.qkv->forward(x).to_vector();  // (B, H, W, 3C): [q | k | v], heads inside
  const std::vector<double> table = m.relative_position_bias_table.to_vector();
  auto at = [&](int64_t b, int64_t i, int64_t j, int64_t part, int64_t h, int64_t d) {
    return qkv[((b * H + i) * W + j) * 3 * C + part * C + h * dh + d];
  };
  std::vector<double> attn(static_cast<std::size_t>(B * H * W * C), 0.0);
  for (int64_t b = 0; b < B; ++b)
    for (int64_t i = 0; i < H; ++i)
      for (int64_t j = 0; j < W; ++j) {
        const int64_t r = ((i - sh) % Hp + Hp) % Hp, c = ((j - sw) % Wp + Wp) % Wp;
        const int64_t label = 3 * swin_region(r, Hp, wh, sh) + swin_region(c, Wp, ww, sw);
        std::vector<std::pair<int64_t, int64_t>> keys;
        std::vector<double> extra;  // position bias row and region mask, per key, head added below
        for (int64_t i2 = 0; i2 < H; ++i2)
          for (int64_t j2 = 0; j2 < W; ++j2) {
            const int64_t r2 = ((i2 - sh) % Hp + Hp) % Hp, c2 = ((j2 - sw) % Wp + Wp) % Wp;
            if (r2 / wh != r / wh || c2 / ww != c / ww) continue;
            keys.emplace_back(i2, j2);
            const int64_t label2 = 3 * swin_region(r2, Hp, wh, sh) + swin_region(c2, Wp, ww, sw);
            const int64_t dy = r % wh - r2 % wh, dx = c % ww - c2 % ww;
            extra.push_back(static_cast<double>((dy + wh - 1) * (2 * ww - 1) + dx + ww - 1));  // table row
            extra.push_back(label2 != label ? -100.0 : 0.0);
          }
        for (int64_t h = 0; h < heads; ++h) {
          std::vector<double> s(keys.size());
          double mx = -1e300;
          for (std::size_t k = 0; k < keys.size(); ++k) {
            double dot = 0;
            for (int64_t d = 0; d < dh; ++d) dot += at(b, i, j, 0, h, d) * at(b, keys[k].first, keys[k].second, 1, h, d);
            const auto row = static_cast<int64_t>(extra[2 * k]);
            s[k] = (scale > 0 ? dot * scale : dot / std::sqrt(static_cast<double>(dh))) + table[row * heads + h] +
                   extra[2 * k + 1];
            mx = std::max(mx, s[k]);
          }
          double z = 0;
          for (double& v : s) z += (v = std::exp(v - mx));
          for (int64_t d = 0; d < dh; ++d) {
            double o = 0;
            for (std::size_t k = 0; k < keys.size(); ++k) o += s[k] / z * at(b, keys[k].first, keys[k].second, 2, h, d);
            attn[((b * H + i) * W + j) * C + h * dh + d] = o;
          }
        }
      }
  return m.proj->forward(Tensor::from_vector<double>({B, H, W, C}, attn));
}

}  // namespace

// ---- seed 004 ----

// swin: seed 004's relative position index, by hand
static void golden_swin() {
  // 2x2 window written out by hand from the seed's construction: query - key per axis, + (1, 1), row * 3 + column.
  check_values(swin_relative_position_index(2, 2), flat({{4, 3, 1, 0}, {5, 4, 2, 1}, {7, 6, 4, 3}, {8, 7, 5, 4}}));
  // 3x3 (the seed's coordinate example): (0,0)->(0,0) = 2*5+2, (0,0)->(2,2) = 0, (2,2)->(0,0) = 4*5+4,
  // (0,1)->(1,0): dy = -1, dx = 1 -> 1*5 + 3.
  const Tensor i3 = swin_relative_position_index(3, 3);
  CHECK(i3.shape() == Shape{9, 9});
  CHECK(i3.at({0, 0}) == 12);
  CHECK(i3.at({0, 8}) == 0);
  CHECK(i3.at({8, 0}) == 24);
  CHECK(i3.at({1, 3}) == 8);
  // 7x7: range [0, 13 * 13 - 1].
  const std::vector<double> v7 = swin_relative_position_index(7, 7).to_vector();
  CHECK(v7.size() == 49u * 49u);
  CHECK(*std::min_element(v7.begin(), v7.end()) == 0);
  CHECK(*std::max_element(v7.begin(), v7.end()) == 168);
  // 4x8: 7 * 15 = 105 relative positions, every one used.
  const std::vector<double> v48 = swin_relative_position_index(4, 8).to_vector();
  CHECK(std::set<double>(v48.begin(), v48.end()).size() == 105u);
  CHECK(*std::max_element(v48.begin(), v48.end()) == 104);
  // The 1-D index of nn/position.h is the same construction on a 1 x n window.
  check_values(swin_relative_position_index(1, 5), relative_index_1d(5).to_vector());
}

TEST_CASE("swin table bias: shapes, init and the table gradient counts each index") {
  Generator gen(0);
  WindowAttention a(window_options(8, 4, 7, 7), gen);
  CHECK(a.relative_position_bias_table.shape() == Shape{169, 4});
  CHECK(a.relative_position_bias().shape() == Shape{4, 49, 49});
  // trunc_normal(std 0.02): 676 samples.
  const std::vector<double> t = a.relative_position_bias_table.to_vector();
  double ss = 0;
  for (double x : t) ss += x * x;
  CHECK(std::sqrt(ss / static_cast<double>(t.size())) == doctest::Approx(0.02).epsilon(0.15));
  // Names as Swin's state dict; the index is a non-persistent buffer.
  const auto params = a.named_parameters();
  REQUIRE(params.size() == 5);
  CHECK(params[0].first == "relative_position_bias_table");  // own parameters before the children's
  CHECK(params[1].first == "qkv.weight");
  CHECK(params[3].first == "proj.weight");
  CHECK(a.named_buffers(true).empty());
  REQUIRE(a.named_buffers().size() == 1);
  CHECK(a.named_buffers()[0].first == "relative_position_index");

  WindowAttention b(window_options(8, 2, 4, 8), gen);
  CHECK(b.relative_position_bias_table.shape() == Shape{105, 2});
  CHECK(b.relative_position_bias().shape() == Shape{2, 32, 32});

  // sum(bias) -> d/d table[row, h] = how many (query, key) pairs have that offset = (7 - |dy|)(7 - |dx|).
  backward(sum(a.relative_position_bias()));
  const Tensor g = a.relative_position_bias_table.grad();
  REQUIRE(g.defined());
  for (int64_t dy = -6; dy <= 6; ++dy)
    for (int64_t dx = -6; dx <= 6; ++dx) {
      const int64_t row = (dy + 6) * 13 + dx + 6;
      for (int64_t h = 0; h < 4; ++h) CHECK(g.at({row, h}) == (7 - std::abs(dy)) * (7 - std::abs(dx)));
    }
}

// ---- window helpers ----

TEST_CASE("window_partition and window_reverse: hand examples and round trip") {
  const std::vector<double> v16 = iota(16);
  const Tensor x = Tensor::from_vector<float>({1, 4, 4, 1}, std::vector<float>(v16.begin(), v16.end()));
  const Tensor w = window_partition(x, 2, 2);
  CHECK(w.shape() == Shape{4, 4, 1});
  check_values(w, flat({{0, 1, 4, 5}, {2, 3, 6, 7}, {8, 9, 12, 13}, {10, 11, 14, 15}}));
  // Non-square window, two batch entries (batch outer, windows inner).
  const std::vector<double> v = iota(24);
  const Tensor y = Tensor::from_vector<double>({2, 2, 6, 1}, v);
  const Tensor wy = window_partition(y, 2, 3);
  CHECK(wy.shape() == Shape{4, 6, 1});
  check_values(wy, flat({{0, 1, 2, 6, 7, 8}, {3, 4, 5, 9, 10, 11}, {12, 13, 14, 18, 19, 20}, {15, 16, 17, 21, 22, 23}}));
  check_values(window_reverse(wy, 2, 3, 2, 6), v);
  check_values(window_reverse(reshape(wy, {4, 2, 3, 1}), 2, 3, 2, 6), v);  // (B*nW, wh, ww, C) too
  // Round trip of a random grid.
  Generator gen(1);
  const Tensor r = randn({2, 6, 6, 3}, gen);
  CHECK(max_abs_diff(window_reverse(window_partition(r, 2, 3), 2, 3, 6, 6), r) == 0.0);
  CHECK(contains(error_of([&] { window_partition(r, 4, 3); }), "not a multiple of window_h 4"));
  CHECK(contains(error_of([&] { window_reverse(wy, 2, 3, 2, 5); }), "window_reverse"));
}

TEST_CASE("window roll2d: hand example, inverse and gradient") {
  const Tensor x = Tensor::from_vector<double>({1, 3, 4, 1}, iota(12));
  // torch.roll(x, (1, -1), (1, 2)): out[i][j] = x[(i - 1) mod 3][(j + 1) mod 4]
  check_values(roll2d(x, 1, -1), flat({{9, 10, 11, 8}, {1, 2, 3, 0}, {5, 6, 7, 4}}));
  check_values(roll2d(x, 3, -8), iota(12));  // full turns
  check_values(roll2d(roll2d(x, -2, 3), 2, -3), iota(12));
  Generator gen(2);
  rpb::testing::GradCase c{"roll2d", OpKind::Concat, {rpb::testing::input(gen, {2, 3, 4, 2})},
                           [](const std::vector<Tensor>& in) { return roll2d(in[0], -1, 2); }};
  const auto r = rpb::testing::gradcheck(c);
  CHECK(r.op_recorded);
  CHECK_MESSAGE(r.ok, r.report);
}

TEST_CASE("swin shift mask: 4x4 grid, window 2, shift 1, by hand") {
  // img_mask labels (rows and columns: [0, 2) -> 0, [2, 3) -> 1, [3, 4) -> 2; label = 3 * row + column):
  //   0 0 1 2
  //   0 0 1 2
  //   3 3 4 5
  //   6 6 7 8
  // Windows (raster order) hold the labels {0,0,0,0}, {1,2,1,2}, {3,3,6,6}, {4,5,7,8}.
  const double M = -100.0;
  const Matrix w0 = {{0, 0, 0, 0}, {0, 0, 0, 0}, {0, 0, 0, 0}, {0, 0, 0, 0}};
  const Matrix w1 = {{0, M, 0, M}, {M, 0, M, 0}, {0, M, 0, M}, {M, 0, M, 0}};
  const Matrix w2 = {{0, 0, M, M}, {0, 0, M, M}, {M, M, 0, 0}, {M, M, 0, 0}};
  const Matrix w3 = {{0, M, M, M}, {M, 0, M, M}, {M, M, 0, M}, {M, M, M, 0}};
  std::vector<double> want;
  for (const Matrix* m : {&w0, &w1, &w2, &w3}) {
    const auto f = flat(*m);
    want.insert(want.end(), f.begin(), f.end());
  }
  const Tensor mask = swin_shift_mask(4, 4, 2, 2, 1, 1);
  CHECK(mask.shape() == Shape{4, 4, 4});
  check_values(mask, want);
  // Shift along the width only: one region per column group, the rows all alike.
  check_values(swin_shift_mask(2, 4, 2, 2, 0, 1), [&] {
    auto a = flat(w0), b = flat(w1);
    a.insert(a.end(), b.begin(), b.end());
    return a;
  }());
  check_values(swin_shift_mask(4, 4, 2, 2, 0, 0), std::vector<double>(64, 0.0));
  CHECK(contains(error_of([] { swin_shift_mask(4, 4, 2, 2, 2, 1); }), "shift_h 2"));
  CHECK(contains(error_of([] { swin_shift_mask(5, 4, 2, 2, 1, 1); }), "window_h"));
}

// ---- window attention ----

TEST_CASE("swin shifted window attention equals Swin's, written out cell by cell") {
  Generator gen(3);
  WindowAttentionOptions o = window_options(4, 2, 2, 3, 1, 1);
  o.init_std = 0.5;  // scores far from uniform, so a wrong bias, mask or window would show
  WindowAttention a(o, gen);
  a.to(DType::f64);
  SUBCASE("shifted and padded (5 x 5 -> 6 x 6)") {
    const Tensor x = randn({2, 5, 5, 4}, gen, DType::f64);
    CHECK(max_abs_diff(a.forward(x), reference_window_attention(a, x, 2, 3, 1, 1)) < 1e-12);
  }
  SUBCASE("shifted, no padding") {
    const Tensor x = randn({1, 4, 6, 4}, gen, DType::f64);
    CHECK(max_abs_diff(a.forward(x), reference_window_attention(a, x, 2, 3, 1, 1)) < 1e-12);
  }
  SUBCASE("unshifted and padded") {
    a.set_window(2, 3, 0, 0);
    const Tensor x = randn({1, 3, 7, 4}, gen, DType::f64);
    CHECK(max_abs_diff(a.forward(x), reference_window_attention(a, x, 2, 3, 0, 0)) < 1e-12);
    // The reference with a shift is a different function: the comparison can fail.
    CHECK(max_abs_diff(a.forward(x), reference_window_attention(a, x, 2, 3, 1, 1)) > 1e-3);
  }
}

TEST_CASE("swin window attention with options.scale multiplies q k^T by it, fused and not") {
  WindowAttentionOptions o = window_options(4, 2, 2, 3, 1, 1);
  o.init_std = 0.5;
  Generator gen0(1);
  CHECK(WindowAttention(o, gen0).scale() == 1 / std::sqrt(2.0));  // 0: head_dim^-0.5
  o.scale = 0.25;  // head_dim 2: not its default 2^-0.5
  for (const bool fused : {true, false}) {
    INFO("fused ", fused);
    o.fused = fused;
    Generator gen(5);
    WindowAttention a(o, gen);
    a.to(DType::f64);
    CHECK(a.scale() == 0.25);
    const Tensor x = randn({2, 5, 5, 4}, gen, DType::f64);
    CHECK(max_abs_diff(a.forward(x), reference_window_attention(a, x, 2, 3, 1, 1, 0.25)) < 1e-12);
    // The default scale gives another function: the comparison can fail.
    CHECK(max_abs_diff(a.forward(x), reference_window_attention(a, x, 2, 3, 1, 1)) > 1e-3);
  }
  // The grid model passes model.attn_scale to its window attention, as to its global attention.
  TransformerOptions m;
  m.vocab = 3, m.d_model = 4, m.heads = 2, m.layers = 2, m.d_ff = 4, m.causal = false, m.attn_scale = 0.25;
  WindowOptions w;
  w.window = 2;
  w.cpb_hidden = 4;
  for (const std::string& scheme : testing::one_scheme_per_kind(2)) {  // window, absolute, additive, none
    INFO("scheme ", scheme);
    m.position.scheme = scheme;
    Generator gen(6);
    const GridModel g(m, w, gen);
    for (int64_t i = 0; i < m.layers; ++i) {
      const GridBlock& b = g.blocks->at<GridBlock>(i);
      CHECK((b.window_attn ? b.window_attn->scale() : b.attn->scale()) == 0.25);
    }
  }
}

TEST_CASE("swin shifted windows: different regions of one window do not attend to each other") {
  // 4x4 grid, window 2, shift 1: the rolled grid's bottom-right window holds the cells (3,3), (3,0), (0,3), (0,0),
  // one per region; its top-left window holds (1,1), (1,2), (2,1), (2,2), all in region 0.
  Generator gen(4);
  WindowAttentionOptions o = window_options(4, 2, 2, 2, 1, 1);
  o.init_std = 0.5;
  WindowAttention a(o, gen);
  a.to(DType::f64);
  const Tensor x = randn({1, 4, 4, 4}, gen, DType::f64);
  const Tensor y = a.forward(x);
  auto perturbed = [&](int64_t i, int64_t j) {
    Tensor x2 = x.clone();
    double* p = x2.mutable_data<double>();
    for (int64_t c = 0; c < 4; ++c) p[(i * 4 + j) * 4 + c] += 1.0;
    return a.forward(x2);
  };
  auto change_at = [&](const Tensor& y2, int64_t i, int64_t j) {
    double m = 0;
    for (int64_t c = 0; c < 4; ++c) m = std::max(m, std::abs(y2.at({0, i, j, c}) - y.at({0, i, j, c})));
    return m;
  };
  const Tensor y33 = perturbed(3, 3);
  CHECK(change_at(y33, 0, 0) < 1e-12);  // same window, region 8 vs region 4: probability ~ e^-100
  CHECK(change_at(y33, 3, 0) < 1e-12);
  CHECK(change_at(y33, 3, 3) > 1e-3);   // its own output does change
  const Tensor y11 = perturbed(1, 1);
  CHECK(change_at(y11, 2, 2) > 1e-6);   // same window, same region: attends
  CHECK(change_at(y11, 0, 0) < 1e-12);  // another window
  // Without the shift, (1, 1) and (2, 2) are in different windows.
  a.set_window(2, 2, 0, 0);
  const Tensor y0 = a.forward(x);
  Tensor x2 = x.clone();
  x2.mutable_data<double>()[(1 * 4 + 1) * 4] += 1.0;
  const Tensor y0p = a.forward(x2);
  double m = 0;
  for (int64_t c = 0; c < 4; ++c) m = std::max(m, std::abs(y0p.at({0, 2, 2, c}) - y0.at({0, 2, 2, c})));
  CHECK(m < 1e-12);
}

namespace {
// A 5 x 5 grid padded to 6 x 6: the real cells' outputs do not depend on what the padding holds.
void check_padding_is_masked(int64_t window, int64_t shift) {
  Generator gen(5);
  WindowAttentionOptions o = window_options(4, 2, window, window, shift, shift);
  o.init_std = 0.5;
  WindowAttention a(o, gen);
  a.to(DType::f64);
  const Tensor x = randn({2, 5, 5, 4}, gen, DType::f64);
  const Tensor y = a.forward(x);
  CHECK(y.shape() == Shape{2, 5, 5, 4});
  for (double v : y.to_vector()) CHECK(std::isfinite(v));
  const WindowGeometry g = a.geometry(5, 5);
  CHECK(g.Hp == 6);
  CHECK(g.Wp == 6);
  // The same grid padded with zeros and with garbage: the real cells' outputs agree.
  Tensor zero_pad = Tensor::zeros({2, 6, 6, 4}, DType::f64);
  Tensor junk_pad = randn({2, 6, 6, 4}, gen, DType::f64, 0.0, 10.0);
  for (int64_t b = 0; b < 2; ++b)
    for (int64_t i = 0; i < 5; ++i)
      for (int64_t j = 0; j < 5; ++j)
        for (int64_t c = 0; c < 4; ++c) {
          const double v = x.at({b, i, j, c});
          zero_pad.mutable_data<double>()[((b * 6 + i) * 6 + j) * 4 + c] = v;
          junk_pad.mutable_data<double>()[((b * 6 + i) * 6 + j) * 4 + c] = v;
        }
  const Tensor yz = slice(slice(a.attend_windows(zero_pad, 5, 5), 1, 0, 5), 2, 0, 5);
  const Tensor yj = slice(slice(a.attend_windows(junk_pad, 5, 5), 1, 0, 5), 2, 0, 5);
  CHECK(max_abs_diff(yz, y) < 1e-12);
  CHECK(max_abs_diff(yj, y) < 1e-12);
  // Whereas changing a real cell does change real outputs.
  junk_pad.mutable_data<double>()[((0 * 6 + 4) * 6 + 4) * 4] += 1.0;
  CHECK(max_abs_diff(slice(slice(a.attend_windows(junk_pad, 5, 5), 1, 0, 5), 2, 0, 5), y) > 1e-6);
  CHECK(contains(error_of([&] { a.attend_windows(x, 5, 5); }), "is not (B, 6, 6, 4)"));
}
}  // namespace

TEST_CASE("swin padding: padded keys get no attention") {
  SUBCASE("window 2, unshifted") { check_padding_is_masked(2, 0); }
  // Window 3 shifted by 1: the padded row lands in the img_mask region of the real row above it. (With window 2 and
  // shift 1, Swin's -100 region mask alone would already hide a padding of one row.)
  SUBCASE("window 3, shifted") { check_padding_is_masked(3, 1); }
}

TEST_CASE("swin window clamp: a grid no larger than the window is one window, unshifted") {
  Generator gen(6);
  WindowAttention a(window_options(4, 2, 7, 7, 3, 3), gen);
  auto check = [&](int64_t H, int64_t W, std::vector<int64_t> want) {
    const WindowGeometry g = a.geometry(H, W);
    INFO(H << " x " << W);
    CHECK(std::vector<int64_t>{g.wh, g.ww, g.shift_h, g.shift_w, g.Hp, g.Wp} == want);
  };
  check(4, 6, {4, 4, 0, 0, 4, 8});     // min(H, W) = 4 <= 7: window 4, no shift
  check(7, 9, {7, 7, 0, 0, 7, 14});    // min == window: clamped too (Swin's <=)
  check(8, 8, {7, 7, 3, 3, 14, 14});   // larger: window and shift kept, padded
  // Non-square windows clamp per axis (timm's _calc_window_shift).
  WindowAttention b(window_options(4, 2, 2, 4, 1, 2), gen);
  const WindowGeometry g = b.geometry(5, 3);
  CHECK(std::vector<int64_t>{g.wh, g.ww, g.shift_h, g.shift_w, g.Hp, g.Wp} ==
        std::vector<int64_t>{2, 3, 1, 0, 6, 3});
  // The clamped window reads its offsets' rows of the 7x7 table and runs.
  const Tensor bias4 = a.relative_position_bias(4, 4);
  CHECK(bias4.shape() == Shape{2, 16, 16});
  CHECK(bias4.at({1, 5, 0}) == a.relative_position_bias_table.at({(1 + 6) * 13 + 1 + 6, 1}));  // dy = dx = 1
  Generator g2(7);
  CHECK(a.forward(randn({1, 4, 6, 4}, g2)).shape() == Shape{1, 4, 6, 4});
  CHECK(b.forward(randn({2, 5, 3, 4}, g2)).shape() == Shape{2, 5, 3, 4});
}

// The 3 x 3 window's V2 coordinates with no pretrained size: d / 2 * 8 for d in -2..2, then
// sign * log2(|x| + 1) / 3: log2(9) / 3 = 1.0566416671474375, log2(5) / 3 = 0.7739760316291208; rows (dy, dx).
static std::vector<double> coords_3x3(std::vector<double>* axis_out = nullptr) {
  const std::vector<double> axis = {-1.0566416671474375, -0.7739760316291208, 0.0, 0.7739760316291208,
                                    1.0566416671474375};
  if (axis_out) *axis_out = axis;
  std::vector<double> want;
  for (double y : axis)
    for (double x : axis) {
      want.push_back(y);
      want.push_back(x);
    }
  return want;
}

// swin_v2: V2's log-spaced relative coordinates, by hand
static void golden_swin_v2() {
  const Tensor c3 = swin_relative_coords_table(3, 3, 0, 0, DType::f64);
  CHECK(c3.shape() == Shape{25, 2});
  check_values(c3, coords_3x3(), 1e-15);
  // Pretrained window 2: d / 1 * 8, so +-8 -> log2(9) / 3 and +-16 -> log2(17) / 3 = 1.3624876137501131.
  const Tensor c3p = swin_relative_coords_table(3, 3, 2, 2, DType::f64);
  CHECK(c3p.at({0, 0}) == doctest::Approx(-1.3624876137501131).epsilon(1e-14));
  CHECK(c3p.at({13, 1}) == doctest::Approx(1.0566416671474375).epsilon(1e-14));  // (dy, dx) = (0, 1)
  CHECK(c3p.at({13, 0}) == 0.0);
  // Rectangular: 2 x 4 normalizes each axis by its own window - 1: dy = 1 -> 1 / 1 * 8, dx = 3 -> 3 / 3 * 8,
  // dx = 1 -> 1 / 3 * 8 (log2(11 / 3) / 3 = 0.6248230393053803).
  const Tensor c24 = swin_relative_coords_table(2, 4, 0, 0, DType::f64);
  CHECK(c24.shape() == Shape{21, 2});
  CHECK(c24.at({20, 0}) == doctest::Approx(1.0566416671474375).epsilon(1e-14));
  CHECK(c24.at({20, 1}) == doctest::Approx(1.0566416671474375).epsilon(1e-14));
  CHECK(c24.at({18, 1}) == doctest::Approx(0.6248230393053803).epsilon(1e-14));
}

TEST_CASE("swin continuous bias: cpb_mlp and 16 * sigmoid") {
  std::vector<double> axis;
  const std::vector<double> want = coords_3x3(&axis);
  Generator gen(8);
  WindowAttentionOptions o = window_options(4, 2, 3, 3, 0, 0, WindowBias::continuous);
  o.cpb_hidden = 16;
  WindowAttention a(o, gen);
  const auto params = a.named_parameters();
  REQUIRE(params.size() == 7);
  CHECK(params[4].first == "cpb_mlp.0.weight");
  CHECK(params[4].second.shape() == Shape{16, 2});
  CHECK(params[5].first == "cpb_mlp.0.bias");
  CHECK(params[6].first == "cpb_mlp.2.weight");
  CHECK(params[6].second.shape() == Shape{2, 16});
  check_values(a.relative_coords_table, want, 1e-6);
  // bias[h, q, k] = 16 * sigmoid(mlp(coords[index[q, k]]))[h], computed here by hand from the weights.
  const Tensor bias = a.relative_position_bias();
  CHECK(bias.shape() == Shape{2, 9, 9});
  const Tensor w1 = a.cpb_mlp->fc1->weight, b1 = a.cpb_mlp->fc1->bias, w2 = a.cpb_mlp->fc2->weight;
  const int64_t q = 1, k = 5;  // q = (0, 1), k = (1, 2): dy = -1, dx = -1 -> row (1)(5) + 1 = 6
  CHECK(swin_relative_position_index(3, 3).at({q, k}) == 6);
  for (int64_t h = 0; h < 2; ++h) {
    double z = 0;
    for (int64_t u = 0; u < 16; ++u)
      z += w2.at({h, u}) * std::max(0.0, w1.at({u, 0}) * axis[1] + w1.at({u, 1}) * axis[1] + b1.at({u}));
    CHECK(bias.at({h, q, k}) == doctest::Approx(16.0 / (1.0 + std::exp(-z))).epsilon(1e-5));
  }
}

TEST_CASE("swin set_window: the continuous bias transfers to another window") {
  Generator gen(9);
  WindowAttentionOptions o = window_options(4, 2, 2, 2, 1, 1, WindowBias::continuous);
  o.cpb_hidden = 8;
  o.pretrained_window_h = o.pretrained_window_w = 2;
  o.init_std = 0.5;
  WindowAttention a(o, gen);
  const Tensor b2 = a.relative_position_bias().clone();  // (2, 4, 4)
  Generator g2(10);
  const Tensor x = randn({1, 6, 6, 4}, g2);
  CHECK(a.forward(x).shape() == Shape{1, 6, 6, 4});
  a.set_window(3, 3);
  CHECK(a.relative_position_index.shape() == Shape{9, 9});
  CHECK(a.relative_coords_table.shape() == Shape{25, 2});
  bool index_buffer_rebuilt = false;
  for (const auto& [name, t] : a.named_buffers())
    if (name == "relative_position_index") index_buffer_rebuilt = t.shape() == Shape{9, 9};
  CHECK(index_buffer_rebuilt);
  const Tensor b3 = a.relative_position_bias();
  CHECK(b3.shape() == Shape{2, 9, 9});
  // Offset (dy, dx) = (0, 1): q = (0, 1), k = (0, 0); the pretrained size keeps the coordinates, so the bias too.
  for (int64_t h = 0; h < 2; ++h) CHECK(b3.at({h, 1, 0}) == doctest::Approx(b2.at({h, 1, 0})).epsilon(1e-6));
  CHECK(a.forward(x).shape() == Shape{1, 6, 6, 4});  // 2 x 2 windows of 3 x 3, shifted
  // Without a pretrained size each window normalizes by its own extent, so the same offset reads another value.
  o.pretrained_window_h = o.pretrained_window_w = 0;
  Generator gen2(9);
  WindowAttention c(o, gen2);
  const Tensor c2 = c.relative_position_bias().clone();
  c.set_window(3, 3);
  CHECK(std::abs(c.relative_position_bias().at({0, 1, 0}) - c2.at({0, 1, 0})) > 1e-6);
  // The table bias shrinks (reading its rows) but cannot grow.
  WindowAttention t(window_options(4, 2, 3, 3), gen);
  t.set_window(2, 2, 1, 1);
  CHECK(t.relative_position_bias().shape() == Shape{2, 4, 4});
  CHECK(t.relative_position_bias().at({1, 1, 0}) == t.relative_position_bias_table.at({2 * 5 + 3, 1}));
  CHECK(t.forward(randn({1, 4, 4, 4}, g2)).shape() == Shape{1, 4, 4, 4});
  CHECK(contains(error_of([&] { t.set_window(4, 3); }), "bias 'table' was built for a 3 x 3 window"));
  CHECK(contains(error_of([&] { t.set_window(2, 2, 2, 0); }), "shift_h 2"));
}

// swin: the V1 table, shifted windows over a padded 5 x 6 grid with a 2 x 3 window
static testing::GradCase gradcheck_swin() {
  Generator gen(11);
  WindowAttentionOptions o = window_options(4, 2, 2, 3, 1, 1);
  o.init_std = 0.5;
  auto a = std::make_shared<WindowAttention>(o, gen);
  const Tensor x = rpb::testing::input(gen, {1, 5, 6, 4});
  return rpb::testing::module_case(*a, [a, x] { return a->forward(x); }, "window attention, table",
                                   OpKind::IndexSelect, {x});
}

// swin_v2: the continuous bias, shifted windows over a padded 3 x 4 grid with a 2 x 2 window
static testing::GradCase gradcheck_swin_v2() {
  Generator gen(12);
  WindowAttentionOptions o = window_options(4, 2, 2, 2, 1, 1, WindowBias::continuous);
  o.cpb_hidden = 4;
  o.pretrained_window_h = o.pretrained_window_w = 3;
  o.init_std = 0.5;
  auto a = std::make_shared<WindowAttention>(o, gen);
  // Non-zero first-layer biases: with Linear's zero init the centre coordinate (0, 0) sits on ReLU's kink.
  init::normal_(a->cpb_mlp->fc1->bias, gen, 0.5);
  const Tensor x = randn({1, 3, 4, 4}, gen, DType::f64);
  return rpb::testing::module_case(*a, [a, x] { return a->forward(x); }, "window attention, continuous",
                                   OpKind::Sigmoid);
}

TEST_CASE("swin window attention without a bias passes the float64 gradient check") {
  Generator gen(11);
  WindowAttentionOptions o = window_options(2, 1, 2, 2, 1, 1, WindowBias::none);
  o.init_std = 0.5;
  WindowAttention a(o, gen);
  const Tensor x = randn({1, 4, 4, 2}, gen, DType::f64);
  rpb::testing::check_gradients(
      rpb::testing::module_case(a, [&] { return a.forward(x); }, "window attention, none", OpKind::FusedAttention));
}

TEST_CASE("swin window attention errors name the option") {
  Generator gen(12);
  auto err = [&](WindowAttentionOptions o) { return error_of([&] { WindowAttention a(o, gen); }); };
  CHECK(contains(err(window_options(8, 3, 2, 2)), "heads 3 must divide dim 8"));
  CHECK(contains(err(window_options(8, 2, 2, 2, 0, 0, static_cast<WindowBias>(7))), "bias 7 is not a WindowBias"));
  CHECK(contains(err(window_options(8, 2, 2, 2, 2, 0)), "shift_h 2 must lie in [0, window_h 2)"));
  CHECK(contains(err(window_options(8, 2, 2, 2, 0, -1)), "shift_w -1"));
  CHECK(contains(err(window_options(8, 2, 2, 0)), "window_w 0"));
  WindowAttentionOptions o = window_options(8, 2, 2, 2, 0, 0, WindowBias::continuous);
  o.pretrained_window_h = o.pretrained_window_w = 1;
  CHECK(contains(err(o), "pretrained_window_h 1"));
  o.pretrained_window_h = o.pretrained_window_w = 0;
  o.cpb_hidden = 0;
  CHECK(contains(err(o), "cpb_hidden 0"));
  WindowAttention a(window_options(8, 2, 2, 2), gen);
  CHECK(contains(error_of([&] { a.forward(Tensor::zeros({1, 4, 4, 6})); }), "does not end in dim 8"));
  CHECK(contains(error_of([&] { a.forward(Tensor::zeros({4, 4, 8})); }), "(B, H, W, C)"));
  CHECK(contains(error_of([&] { a.forward(Tensor::zeros({1, 4, 4, 8}, DType::f64)); }), "Module::to"));
}

RPB_SCHEME_CASE(swin, golden_swin, gradcheck_swin);
RPB_SCHEME_CASE(swin_v2, golden_swin_v2, gradcheck_swin_v2);
