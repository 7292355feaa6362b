// FIRE (nn/position/fire.cpp): its bias against the reference module for fixed weights, its three forms (the
// tape's full bias, the table over offsets below the threshold, the fused kernel's tiles past it) against each other,
// the gradient of every learned part, and core's tile-computed bias in fused_attention. Its golden and gradient cases
// register as its scheme case (tests/scheme_cases.h RPB_SCHEME_CASE).
#include <doctest/doctest.h>

#include <cmath>
#include <map>

#include "core/core.h"
#include "core/parallel.h"
#include "gradcheck.h"
#include "nn/position.h"
#include "nn/transformer.h"
#include "scheme_cases.h"
#include "tensor_checks.h"
#include "test_util.h"

using namespace rpb;

namespace fire_test {

using nn::Positions;
using nn::PositionOptions;

// The weights the golden values were computed with (tests/python/fire_reference.py prints them).
const std::map<std::string, std::vector<double>> kWeights = {
    {"c", {0.3}},
    {"multiplier", {0.9}},
    {"hidden.weight", {1.5, -2.0, 0.7}},
    {"hidden.bias", {-0.5, 1.0, 0.2}},
    {"out.weight", {0.8, -1.2, 0.5, -0.3, 0.9, 1.1}},
    {"out.bias", {0.1, -0.2}}};

PositionOptions options(DType dtype = DType::f64) {
  PositionOptions o;
  o.scheme = "fire";
  o.heads = 2;
  o.fire_hidden = 3;
  o.fire_length = 3;  // L0: the threshold is |0.9 x 3| = 2.7
  o.dtype = dtype;
  return o;
}

std::shared_ptr<nn::PositionScheme> fixed_fire(DType dtype = DType::f64) {
  Generator gen(0);
  auto s = nn::make_position_scheme(options(dtype), gen);
  for (auto& [name, p] : s->named_parameters()) {
    const std::vector<double>& v = kWeights.at(name);
    REQUIRE(static_cast<std::size_t>(p.numel()) == v.size());
    const Tensor t = Tensor::from_vector<double>(p.shape(), v).to(p.dtype());
    p.copy_(t);
  }
  return s;
}

// The bias the reference module gives at seq_length 6 (float32), heads x queries x keys.
const std::vector<double> kReference = {
    -1, 0.346654594, 1.02782989, 1.47676897, 1.85975349, 2.19370317,
    0.346654594, -1, 0.346654594, 1.02782989, 1.47676897, 1.85975349,
    1.02782989, 0.346654594, -1, 0.346654594, 1.02782989, 1.47676897,
    1.34999764, 0.93500042, 0.21459958, -1, 0.21459958, 0.93500042,
    1.349998, 1.06179595, 0.723962069, -0.0849211439, -1, -0.0849211439,
    1.34999835, 1.13375533, 0.885760784, 0.59505856, -0.2125853, -1,
    0.920000017, 0.415557265, 0.423487484, 0.516171694, 0.59523946, 0.664184034,
    0.415557265, 0.920000017, 0.415557265, 0.423487484, 0.516171694, 0.59523946,
    0.423487484, 0.415557265, 0.920000017, 0.415557265, 0.423487484, 0.516171694,
    0.489999533, 0.404322624, 0.465036094, 0.920000017, 0.465036094, 0.404322624,
    0.489999592, 0.430499792, 0.360753536, 0.577261388, 0.920000017, 0.577261388,
    0.489999652, 0.445355952, 0.394157112, 0.334141195, 0.625077367, 0.920000017};

// The formula, in double: f_h(psi(i - j) / (psi(max(i, L)) + eps)), with c and the multiplier m (L = |m L0|).
double formula(int64_t h, int64_t i, int64_t j, double c = 0.3, double m = 0.9) {
  const double l = std::abs(m * 3.0);
  auto psi = [&](double x) { return std::log(std::abs(c * x) + 1.0); };
  const double x = psi(static_cast<double>(i - j)) / (psi(std::max(static_cast<double>(i), l)) + 1e-6);
  const auto& w1 = kWeights.at("hidden.weight");
  const auto& b1 = kWeights.at("hidden.bias");
  const auto& w2 = kWeights.at("out.weight");
  double y = kWeights.at("out.bias")[h];
  for (std::size_t k = 0; k < 3; ++k) y += w2[h * 3 + k] * std::max(0.0, w1[k] * x + b1[k]);
  return y;
}

void check_close(const Tensor& a, const Tensor& b, double tol) { CHECK(testing::max_abs_diff(a, b) <= tol); }

void golden() {
  // float32 as the reference computes it.
  const Tensor b32 = fixed_fire(DType::f32)->bias(Positions::line(6, 6, 0));  // (2, 6, 6)
  check_close(b32.to(DType::f64), Tensor::from_vector<double>({2, 6, 6}, kReference), 2e-6);
  // float64 against the formula, at a KV-cache offset: queries 2 .. 5 (two below the threshold 2.7, two past it).
  const Tensor b64 = fixed_fire()->bias(Positions::line(4, 6, 2));
  std::vector<double> want;
  for (int64_t h = 0; h < 2; ++h)
    for (int64_t i = 2; i < 6; ++i)
      for (int64_t j = 0; j < 6; ++j) want.push_back(formula(h, i, j));
  check_close(b64, Tensor::from_vector<double>({2, 4, 6}, want), 1e-12);
}

// Every learned part (c, the multiplier, the MLP) through the full bias with rows on both sides of the threshold,
// and through the table over offsets below it.
testing::GradCase gradcheck() {
  auto s = fixed_fire();
  std::vector<Tensor> params;
  for (auto& [name, p] : s->named_parameters()) params.push_back(p);
  Generator gen(31);
  const Tensor scores = testing::input(gen, {2, 4, 6}).detach();
  return {"fire c, multiplier, mlp", OpKind::Linear, params, [s, scores](const std::vector<Tensor>&) {
            const Tensor full = softmax(add(scores, s->bias(Positions::line(4, 6, 2))), -1);  // (2, 4, 6)
            const RelativeBias rel = s->relative_bias(Positions::line(2, 3, 0));              // rows 0, 1 <= 2.7
            REQUIRE(rel.table.defined());
            return concat({reshape(full, {-1}), reshape(tanh(rel.table), {-1})}, 0);
          }};
}

}  // namespace fire_test

RPB_SCHEME_CASE(fire, fire_test::golden, fire_test::gradcheck);

using namespace fire_test;

TEST_CASE("fire: the table over offsets and the fused kernel's tiles equal the full bias on their sides of the threshold") {
  for (const DType dtype : {DType::f64, DType::f32}) {
    CAPTURE(dtype_name(dtype));
    const double tol = dtype == DType::f64 ? 1e-12 : 2e-6;
    auto s = fixed_fire(dtype);
    // Below the threshold (queries 0 .. 2 <= 2.7): a table over offsets, with gradients recorded or not.
    const Positions below = Positions::line(3, 3, 0);
    const RelativeBias table = s->relative_bias(below);
    REQUIRE(table.table.defined());
    check_close(nn::full_bias(table, 3, 3, 0, dtype), s->bias(below), tol);
    // Past it: tiles, which learn when gradients are recorded and are a constant when not.
    const Positions past = Positions::line(5, 40, 35);
    CHECK(s->relative_bias(past).tiles->parameters().size() == 6);
    NoGradGuard no_grad;
    const RelativeBias tiles = s->relative_bias(past);
    REQUIRE(tiles.tiles != nullptr);
    CHECK_FALSE(tiles.table.defined());
    check_close(nn::full_bias(tiles, 5, 40, 35, dtype), s->bias(past), tol);
  }
}

TEST_CASE("fire: the c and multiplier gradients are the formula's derivatives") {
  // d/dc and d/dm of sum over (h, i, j) of the bias, by central differences of the formula in double.
  auto s = fixed_fire();
  const Positions p = Positions::line(6, 6, 0);
  backward(sum(s->bias(p)));
  const auto params = s->named_parameters();
  auto total = [](double c, double m) {
    double sum_all = 0;
    for (int64_t h = 0; h < 2; ++h)
      for (int64_t i = 0; i < 6; ++i)
        for (int64_t j = 0; j < 6; ++j) sum_all += formula(h, i, j, c, m);
    return sum_all;
  };
  const double e = 1e-6;
  CHECK(params[0].first == "c");
  CHECK(params[1].first == "multiplier");
  CHECK(params[0].second.grad().at({0}) ==
        doctest::Approx((total(0.3 + e, 0.9) - total(0.3 - e, 0.9)) / (2 * e)).epsilon(1e-6));
  const double dm = (total(0.3, 0.9 + e) - total(0.3, 0.9 - e)) / (2 * e);
  CHECK(dm != 0);  // rows 0 .. 2 read the threshold
  CHECK(params[1].second.grad().at({0}) == doctest::Approx(dm).epsilon(1e-6));
}

namespace fire_test {
// A small language model with FIRE whose threshold is 8 tokens, and a bias large enough to matter.
nn::TransformerOptions past_threshold_model() {
  nn::TransformerOptions o;
  o.vocab = 13;
  o.d_model = 16;
  o.heads = 2;
  o.layers = 2;
  o.d_ff = 32;
  o.position.scheme = "fire";
  o.position.fire_length = 8;
  o.position.init_std = 0.5;
  return o;
}
}  // namespace fire_test

TEST_CASE("fire: a model past its threshold gives the same logits on the fused and the reference paths") {
  nn::TransformerOptions o = past_threshold_model();  // queries 8 .. 47 are past the threshold
  const Tensor tokens = Tensor::indices({2, 48}, [] {
    std::vector<int64_t> v(96);
    for (std::size_t i = 0; i < v.size(); ++i) v[i] = static_cast<int64_t>((i * 7 + 3) % 13);
    return v;
  }());
  Tensor logits[2];
  for (const bool fused : {true, false}) {
    o.fused_attention = fused;
    Generator gen(5);
    nn::LanguageModel lm(o, gen);
    NoGradGuard no_grad;
    logits[fused] = lm.forward(tokens);
  }
  check_close(logits[1], logits[0], 2e-5);
  // The bias matters: without it (init_std 0 keeps every MLP weight at zero) the logits differ.
  o.position.init_std = 0;
  Generator gen(5);
  nn::LanguageModel flat(o, gen);
  NoGradGuard no_grad;
  CHECK(testing::max_abs_diff(flat.forward(tokens), logits[1]) > 1e-3);
}

namespace fire_test {
// A bias computed per tile from a formula (0.1 h + 0.01 i - 0.02 j), for the kernel tests below.
class FormulaTiles final : public BiasTiles {
 public:
  explicit FormulaTiles(int64_t heads) : heads_(heads) {}
  int64_t heads() const override { return heads_; }
  void add(int64_t h, int64_t i0, int64_t rows, int64_t j0, int64_t cols, float* s, int64_t ld) const override {
    fill(h, i0, rows, j0, cols, s, ld);
  }
  void add(int64_t h, int64_t i0, int64_t rows, int64_t j0, int64_t cols, double* s, int64_t ld) const override {
    fill(h, i0, rows, j0, cols, s, ld);
  }

 private:
  template <typename T>
  static void fill(int64_t h, int64_t i0, int64_t rows, int64_t j0, int64_t cols, T* s, int64_t ld) {
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t c = 0; c < cols; ++c)
        s[r * ld + c] += static_cast<T>(0.1 * h + 0.01 * (i0 + r) - 0.02 * (j0 + c));
  }
  int64_t heads_;
};
}  // namespace fire_test

TEST_CASE("fused_attention with tiles equals the composite with the same bias, forward and q, k, v gradients") {
  Generator gen(41);
  // 130 keys: two key tiles; a KV-cache offset so the tiles see absolute query positions.
  const int64_t B = 2, H = 3, Tq = 70, Tk = 130, dh = 4, offset = Tk - Tq;
  const Tensor q = testing::input(gen, {B, H, Tq, dh}), k = testing::input(gen, {B, H, Tk, dh}),
               v = testing::input(gen, {B, H, Tk, dh});
  const auto tiles = std::make_shared<FormulaTiles>(H);
  const AttentionSpec spec{0.5, true, offset};
  const Tensor g = testing::input(gen, {B, H, Tq, dh}).detach();
  auto run = [&](bool fused) {
    for (const Tensor* t : {&q, &k, &v}) t->zero_grad();
    Tensor out;
    if (fused) {
      out = fused_attention(q, k, v, RelativeBias(tiles), Tensor(), Tensor(), spec);
    } else {
      const Tensor bias = nn::full_bias(RelativeBias(tiles), Tq, Tk, offset, DType::f64);
      out = nn::scaled_dot_product_attention(q, k, v, bias, nn::causal_mask(Tq, Tk, offset), 0.5);
    }
    backward(sum(mul(out, g)));
    return std::vector<Tensor>{out.detach(), q.grad(), k.grad(), v.grad()};
  };
  const std::vector<Tensor> fused = run(true), composite = run(false);
  for (std::size_t i = 0; i < fused.size(); ++i) check_close(fused[i], composite[i], 1e-12);
  CHECK(testing::contains(testing::error_of([&] {
                   fused_attention(q, k, v, RelativeBias(std::make_shared<FormulaTiles>(2)), Tensor(), Tensor(), spec);
                 }),
                 "the bias tiles hold 2 heads, the attention has 3"));
}

TEST_CASE("fire: the fused kernel's tiles learn - every parameter's gradient equals the composite's") {
  // 150 queries from position 0 (three query tiles, two key tiles): rows 0 .. 2 sit below the threshold 2.7, so
  // the multiplier's gradient flows through the normaliser there, and the rest past it.
  for (const int64_t offset : {int64_t{0}, int64_t{37}}) {
    CAPTURE(offset);
    Generator gen(43);
    const int64_t B = 2, H = 2, Tq = 150 - offset, Tk = 150, dh = 4;
    const Tensor q = testing::input(gen, {B, H, Tq, dh}), k = testing::input(gen, {B, H, Tk, dh}),
                 v = testing::input(gen, {B, H, Tk, dh});
    const Tensor g = testing::input(gen, {B, H, Tq, dh}).detach();
    auto s = fixed_fire();
    const Positions p = Positions::line(Tq, Tk, offset);
    const AttentionSpec spec{0.5, true, offset};
    auto run = [&](bool fused) {
      for (const Tensor* t : {&q, &k, &v}) t->zero_grad();
      for (auto& [name, t] : s->named_parameters()) t.zero_grad();
      Tensor out;
      if (fused) {
        const RelativeBias tiles = s->relative_bias(p);
        REQUIRE(tiles.tiles != nullptr);
        REQUIRE(tiles.tiles->parameters().size() == 6);
        out = fused_attention(q, k, v, tiles, Tensor(), Tensor(), spec);
      } else {
        out = nn::scaled_dot_product_attention(q, k, v, s->bias(p), nn::causal_mask(Tq, Tk, offset), 0.5);
      }
      backward(sum(mul(out, g)));
      std::vector<Tensor> r{out.detach(), q.grad(), k.grad(), v.grad()};
      for (auto& [name, t] : s->named_parameters()) r.push_back(t.grad());
      return r;
    };
    const std::vector<Tensor> fused = run(true), composite = run(false);
    REQUIRE(fused.size() == 10);
    for (std::size_t i = 0; i < fused.size(); ++i) {
      CAPTURE(i);
      REQUIRE(composite[i].defined());
      // Not zero, but for out.bias (9: a per-head constant, which softmax cancels) and, when every query is past
      // the threshold, the multiplier's (5).
      const bool zero = i == 9 || (i == 5 && offset > 0);
      CHECK((testing::max_abs_diff(composite[i], Tensor::zeros(composite[i].shape(), DType::f64)) > 1e-6) != zero);
      check_close(fused[i], composite[i], 1e-10);
    }
    // Without gradients the tiles are a constant again.
    NoGradGuard no_grad;
    CHECK(s->relative_bias(p).tiles->parameters().empty());
  }
}

TEST_CASE("fire: the tiles' gradient sums are the same bits run to run and for any thread count") {
  Generator gen(44);
  const int64_t B = 3, H = 2, T = 200, dh = 8;
  auto input = [&] { return testing::input(gen, {B, H, T, dh}).detach().to(DType::f32); };
  const Tensor q = input(), k = input(), v = input();
  auto s = fixed_fire(DType::f32);
  auto grads = [&] {
    for (auto& [name, t] : s->named_parameters()) t.zero_grad();
    backward(sum(fused_attention(q, k, v, s->relative_bias(Positions::line(T, T, 0)), Tensor(), Tensor(),
                                 AttentionSpec{0.35, true, 0})));
    std::vector<std::vector<double>> r;
    for (auto& [name, t] : s->named_parameters()) r.push_back(t.grad().to_vector());
    return r;
  };
  const auto first = grads();
  CHECK(grads() == first);
  const int threads = num_threads();
  set_num_threads(1);
  const auto serial = grads();
  set_num_threads(threads);
  CHECK(serial == first);
}

TEST_CASE("fire: a model trained past its threshold gets the same gradients on the fused and the reference paths") {
  // Queries 8 .. 39 are past the threshold: the fused path learns through the tiles.
  nn::TransformerOptions o = past_threshold_model();
  std::vector<int64_t> ids(80);
  for (std::size_t i = 0; i < ids.size(); ++i) ids[i] = static_cast<int64_t>((i * 5 + 1) % 13);
  const Tensor tokens = Tensor::indices({2, 40}, ids);
  std::vector<std::vector<double>> grads[2];
  for (const bool fused : {true, false}) {
    o.fused_attention = fused;
    Generator gen(6);
    nn::LanguageModel lm(o, gen);
    lm.to(DType::f64);
    backward(sum(lm.forward(tokens)));
    for (auto& [name, p] : lm.named_parameters()) grads[fused].push_back(p.grad().to_vector());
  }
  REQUIRE(grads[0].size() == grads[1].size());
  for (std::size_t i = 0; i < grads[0].size(); ++i) {
    CAPTURE(i);
    REQUIRE(grads[0][i].size() == grads[1][i].size());
    for (std::size_t j = 0; j < grads[0][i].size(); ++j) CHECK(grads[1][i][j] == doctest::Approx(grads[0][i][j]).epsilon(1e-9));
  }
}
