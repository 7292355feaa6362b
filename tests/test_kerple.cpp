// kerple_power (nn/position/kerple_power.cpp): its bias, projection and gradients against KERPLE's
// ParallelKerplePower (tests/python/kerple_golden.py prints the numbers), its initialisation, its fused form (the
// relative bias) against its full bias, and a model trained through either attention kernel. Its golden and
// gradient-check cases register as its scheme case (tests/scheme_cases.h RPB_SCHEME_CASE).
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>

#include "core/core.h"
#include "gradcheck.h"
#include "nn/position.h"
#include "nn/transformer.h"
#include "scheme_cases.h"
#include "tensor_checks.h"
#include "test_util.h"

using namespace rpb;

namespace kerple_test {

using nn::Positions;
using nn::PositionOptions;

PositionOptions options(int64_t heads, DType dtype) {
  PositionOptions o;
  o.scheme = "kerple_power";
  o.heads = heads;
  o.dtype = dtype;
  return o;
}

// The scheme with p and a set (then projected, as after an optimizer step): the golden script's parameters.
std::shared_ptr<nn::PositionScheme> with_parameters(DType dtype, const std::vector<double>& p,
                                                    const std::vector<double>& a) {
  Generator gen(0);
  auto s = nn::make_position_scheme(options(static_cast<int64_t>(p.size()), dtype), gen);
  const auto params = s->named_parameters();
  REQUIRE(params.size() == 2);
  REQUIRE(params[0].first == "p");
  REQUIRE(params[1].first == "a");
  params[0].second.copy_(Tensor::from_vector<double>({static_cast<int64_t>(p.size())}, p));
  params[1].second.copy_(Tensor::from_vector<double>({static_cast<int64_t>(a.size())}, a));
  s->project_parameters();
  return s;
}

const std::vector<double> kP = {0.7, 1.3, 2.5}, kA = {0.5, -0.2, 1.25};

void golden() {
  const auto s = with_parameters(DType::f32, kP, kA);
  // The reference's clamp: p in [0.01, 2], a >= 0.01 (float32).
  CHECK(s->named_parameters()[0].second.to_vector() ==
        std::vector<double>{0.699999988079071, 1.2999999523162842, 2.0});
  CHECK(s->named_parameters()[1].second.to_vector() == std::vector<double>{0.5, 0.009999999776482582, 1.25});
  // The last query's row of each head, keys 0 .. 5 (kerple_golden.py, float32).
  const Tensor b = s->bias(Positions::line(6, 6, 0));  // (3, 6, 6)
  REQUIRE(b.shape() == Shape{3, 6, 6});
  const std::vector<std::vector<double>> want = {
      {-1.54258466, -1.31950784, -1.07883465, -0.812252402, -0.5, 0},
      {-0.08103282, -0.0606286563, -0.0417116731, -0.0246228874, -0.00999999978, 0},
      {-31.25, -20, -11.25, -5, -1.25, 0}};
  for (int64_t h = 0; h < 3; ++h)
    for (int64_t j = 0; j < 6; ++j) {
      const double got = b.at({h, 5, j}), w = want[h][j];
      const std::string where = "head " + std::to_string(h) + ", key " + std::to_string(j);
      CHECK_MESSAGE(std::abs(got - w) <= 2e-6 * std::max(1.0, std::abs(w)), where);
    }
  // Every causal entry (j <= i) is -a |i - j|^p; the keys after the query read |i - j| too (the reference's tril
  // writes 0 there, which the causal mask hides either way).
  const std::vector<double> p = {0.7, 1.3, 2.0}, a = {0.5, 0.01, 1.25};
  for (int64_t h = 0; h < 3; ++h)
    for (int64_t i = 0; i < 6; ++i)
      for (int64_t j = 0; j < 6; ++j) {
        const double d = static_cast<double>(i > j ? i - j : j - i);
        const double w = d == 0 ? 0.0 : -a[h] * std::pow(d, p[h]);
        CHECK(std::abs(b.at({h, i, j}) - w) <= 3e-6 * std::max(1.0, std::abs(w)));
      }
}

testing::GradCase gradcheck() {
  const auto s = with_parameters(DType::f64, {0.6, 1.7}, {0.4, 0.9});
  s->to(DType::f64);
  Generator gen(31);
  const Tensor scores = testing::input(gen, {2, 4, 5}).detach();
  const auto params = s->named_parameters();
  return {"kerple_power p and a", OpKind::Mul, {params[0].second, params[1].second},
          [s, scores](const std::vector<Tensor>&) {
            return softmax(add(scores, s->bias(Positions::line(4, 5, 1))), -1);
          }};
}

}  // namespace kerple_test

RPB_SCHEME_CASE(kerple_power, kerple_test::golden, kerple_test::gradcheck);

using namespace kerple_test;

TEST_CASE("kerple_power: the gradients of p and a are the reference's, the projected p included") {
  const auto s = with_parameters(DType::f64, kP, kA);
  // w = sin(0, 1, 2, ...) over (3, 6, 6), on the causal entries (the reference's tril gives the others no gradient).
  std::vector<double> w(3 * 6 * 6);
  for (std::size_t n = 0; n < w.size(); ++n) {
    const int64_t i = static_cast<int64_t>(n / 6) % 6, j = static_cast<int64_t>(n % 6);
    w[n] = j <= i ? std::sin(static_cast<double>(n)) : 0.0;
  }
  backward(sum(mul(s->bias(Positions::line(6, 6, 0)), Tensor::from_vector<double>({3, 6, 6}, w))));
  const auto params = s->named_parameters();
  testing::check_values(params[0].second.grad(), {4.46737851001, 0.256763850838, -103.901978772}, 1e-9);
  testing::check_values(params[1].second.grad(), {2.44639137916, 25.2627687332, -54.1568599465}, 1e-9);
}

TEST_CASE("kerple_power: p = 2 U(0, 1) then a = U(0, 1) per head, projected, as the reference draws them") {
  Generator gen(7);
  const auto s = nn::make_position_scheme(options(4, DType::f64), gen);
  Generator again(7);
  std::vector<double> p(4), a(4);
  for (double& x : p) x = std::clamp(2 * again.uniform(), 0.01, 2.0);
  for (double& x : a) x = std::max(again.uniform(), 0.01);
  CHECK(s->named_parameters()[0].second.to_vector() == p);
  CHECK(s->named_parameters()[1].second.to_vector() == a);
  CHECK(s->parameter_count() == 8);
  CHECK(s->learned());
}

TEST_CASE("kerple_power: the relative bias the fused kernel reads is the full bias, at an offset too") {
  const auto s = with_parameters(DType::f64, {0.6, 1.7}, {0.4, 0.9});
  for (const int64_t offset : {0, 3}) {
    const Positions q = Positions::line(4, 7, offset);
    const Tensor full = s->bias(q);  // (2, 4, 7)
    const RelativeBias rel = s->relative_bias(q);
    REQUIRE(rel.table.defined());
    REQUIRE(rel.table.shape() == Shape{2, 4 + 7 - 1});
    // Entry m of the row holds key - query = m - (offset + q_len - 1).
    for (int64_t h = 0; h < 2; ++h)
      for (int64_t r = 0; r < 4; ++r)
        for (int64_t c = 0; c < 7; ++c)
          CHECK(rel.table.at({h, c - (offset + r) + (offset + 4 - 1)}) == full.at({h, r, c}));
  }
}

TEST_CASE("kerple_power: a language model trains to the same loss and gradients through either attention kernel") {
  nn::TransformerOptions o;
  o.vocab = 11;
  o.d_model = 8;
  o.heads = 2;
  o.layers = 2;
  o.d_ff = 16;
  o.dropout = 0.0;
  o.position.scheme = "kerple_power";
  o.share_position = false;  // a module per layer
  std::vector<std::vector<double>> grads[2];
  for (const bool fused : {false, true}) {
    o.fused_attention = fused;
    Generator gen(5);
    nn::LanguageModel lm(o, gen);
    lm.to(DType::f64);
    Generator data(6);
    std::vector<int64_t> ids(2 * 2 * 9);
    for (int64_t& t : ids) t = static_cast<int64_t>(data.next_u64() % 11);
    const Tensor x = Tensor::indices({2, 9}, std::vector<int64_t>(ids.begin(), ids.begin() + 18));
    const Tensor y = Tensor::indices({2, 9}, std::vector<int64_t>(ids.begin() + 18, ids.end()));
    backward(lm.loss(x, y));
    for (const auto& [name, p] : lm.named_parameters())
      if (name.ends_with("kerple_power.a") || name.ends_with("kerple_power.p"))
        grads[fused].push_back(p.grad().to_vector());
  }
  REQUIRE(grads[0].size() == 4);  // a and p of each layer's own module
  for (std::size_t i = 0; i < grads[0].size(); ++i)
    for (std::size_t j = 0; j < grads[0][i].size(); ++j) {
      CHECK(grads[0][i][j] != 0);
      CHECK(std::abs(grads[0][i][j] - grads[1][i][j]) <= 1e-10 * std::max(1.0, std::abs(grads[0][i][j])));
    }
}
