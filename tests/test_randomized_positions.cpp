// Randomized positions (position.randomized, Ruoss et al. 2023): the draws are sorted, distinct and uniform (chi-square
// tests over many draws), every 1-D scheme reads explicit positions on both attention paths alike (the fused kernel
// reads the bias at the positions' offsets, the reference path its expansion), 0 .. T - 1 given explicitly is the
// plain forward, a relative scheme is blind to a shift of every position, and the config refuses what cannot work.
#include <doctest/doctest.h>

#include <cmath>
#include <fstream>
#include <map>
#include <memory>
#include <numeric>

#include "core/core.h"
#include "nn/attention.h"
#include "nn/transformer.h"
#include "path_models.h"
#include "tensor_checks.h"
#include "config_errors.h"
#include "test_util.h"
#include "train/config/config.h"

using namespace rpb;
using namespace rpb::nn;
using rpb::testing::contains;
using rpb::testing::error_of;
using rpb::testing::config_file_error;
using rpb::testing::scaled_error;

namespace randomized_positions_test {

// The chi-square statistic of `observed` counts against `expected` ones.
double chi_square(const std::vector<double>& observed, const std::vector<double>& expected) {
  double x = 0;
  for (std::size_t i = 0; i < observed.size(); ++i) x += (observed[i] - expected[i]) * (observed[i] - expected[i]) / expected[i];
  return x;
}

// The chi-square quantile of `df` degrees of freedom at 1 - 1e-4, by Wilson and Hilferty's approximation (z = 3.719):
// a correct sampler fails one run in ten thousand.
double chi_square_bound(double df) {
  const double z = 3.719, a = 2.0 / (9.0 * df);
  return df * std::pow(1 - a + z * std::sqrt(a), 3);
}

// The attention tests' models (tests/path_models.h), with 512 learned positions (the positions below reach 127) and
// tables and MLPs of std 0.5: a value read at the wrong position shows.
TransformerOptions randomized_options(const std::string& scheme, bool fused, bool causal = true) {
  TransformerOptions o = rpb::testing::path_model_options(scheme, causal, fused);
  o.position.max_positions = 512;
  o.position.fire_length = 16;
  o.position.init_std = 0.5;
  return o;
}

std::shared_ptr<const std::vector<int64_t>> positions(std::vector<int64_t> v) {
  return std::make_shared<const std::vector<int64_t>>(std::move(v));
}

}  // namespace randomized_positions_test

using namespace randomized_positions_test;

TEST_CASE("randomized positions: draws are sorted, distinct, in range, and uniform over positions and subsets") {
  Generator gen(3);
  const int64_t n = 7, range = 40, draws = 20000;
  std::vector<double> counts(static_cast<std::size_t>(range), 0);
  for (int64_t d = 0; d < draws; ++d) {
    const std::vector<int64_t> p = draw_positions(n, range, gen);
    REQUIRE(static_cast<int64_t>(p.size()) == n);
    for (std::size_t i = 0; i < p.size(); ++i) {
      CHECK(p[i] >= 0);
      CHECK(p[i] < range);
      if (i > 0) CHECK(p[i] > p[i - 1]);
      counts[static_cast<std::size_t>(p[i])] += 1;
    }
  }
  // Each position is in a subset with probability n / range.
  const std::vector<double> expected(counts.size(), static_cast<double>(draws * n) / range);
  CHECK(chi_square(counts, expected) < chi_square_bound(range - 1));
  // Every subset of 2 of 6 positions equally likely (15 of them).
  std::map<std::pair<int64_t, int64_t>, double> subsets;
  for (int d = 0; d < 15000; ++d) {
    const std::vector<int64_t> p = draw_positions(2, 6, gen);
    subsets[{p[0], p[1]}] += 1;
  }
  REQUIRE(subsets.size() == 15);
  std::vector<double> observed;
  for (const auto& [pair, count] : subsets) observed.push_back(count);
  CHECK(chi_square(observed, std::vector<double>(15, 1000.0)) < chi_square_bound(14));
  // All of the range when n == range; refused past it.
  const std::vector<int64_t> all = draw_positions(5, 5, gen);
  CHECK(all == std::vector<int64_t>{0, 1, 2, 3, 4});
  CHECK(contains(error_of([&] { draw_positions(6, 5, gen); }), "cannot draw 6 distinct positions from [0, 5)"));
}

TEST_CASE("randomized positions: the fused kernel at explicit positions equals the composite, values and gradients") {
  Generator gen(5);
  const int64_t B = 2, H = 3, T = 9, dh = 4;
  const std::vector<int64_t> at{0, 3, 4, 9, 17, 18, 25, 31, 40};
  const int64_t span = at.back() + 1;
  for (const bool causal : {true, false}) {
    INFO("causal: ", causal);
    const Tensor q = randn({B, H, T, dh}, gen).requires_grad_(), k = randn({B, H, T, dh}, gen).requires_grad_();
    const Tensor v = randn({B, H, T, dh}, gen).requires_grad_();
    const Tensor table = randn({H, 2 * span - 1}, gen).requires_grad_(), g = randn({B, H, T, dh}, gen);
    RelativeBias bias(table);
    bias.positions = at;
    const Tensor out = fused_attention(q, k, v, bias, Tensor(), Tensor(), AttentionSpec{0.5, causal, 0});
    backward(sum(mul(out, g)));
    const std::vector<Tensor> fused_grads{q.grad(), k.grad(), v.grad(), table.grad()};
    for (const Tensor* t : {&q, &k, &v, &table}) t->zero_grad();
    // The reference: the bias expanded at the pairs' offsets, full[h, i, j] = table[h, at[j] - at[i] + S - 1].
    const Tensor full = expand_relative_bias_at(table, at);
    CHECK(full.shape() == Shape{H, T, T});
    CHECK(full.to_vector()[1] == table.to_vector()[static_cast<std::size_t>(3 - 0 + span - 1)]);  // (h 0, i 0, j 1)
    const Tensor mask = causal ? causal_mask(T, T, 0) : Tensor();
    const Tensor ref = scaled_dot_product_attention(q, k, v, full, mask, 0.5);
    backward(sum(mul(ref, g)));
    CHECK(scaled_error(out, ref) <= 1e-5);
    const std::vector<Tensor> ref_grads{q.grad(), k.grad(), v.grad(), table.grad()};
    for (std::size_t i = 0; i < ref_grads.size(); ++i) CHECK(scaled_error(fused_grads[i], ref_grads[i]) <= 1e-5);
  }
  // Positions that do not ascend, or do not match the tokens, are refused.
  const Tensor q = randn({1, 1, 3, 2}, gen);
  RelativeBias bad(randn({1, 9}, gen));
  bad.positions = {0, 4, 2};
  CHECK(contains(error_of([&] { fused_attention(q, q, q, bad, Tensor(), Tensor(), AttentionSpec{1, true, 0}); }),
                 "explicit positions must ascend strictly"));
  bad.positions = {0, 4};
  CHECK(contains(error_of([&] { fused_attention(q, q, q, bad, Tensor(), Tensor(), AttentionSpec{1, true, 0}); }),
                 "explicit positions need Tq == Tk == their count"));
}

TEST_CASE("randomized positions: every 1-D scheme reads explicit positions alike on both paths, and 0..T-1 is plain") {
  Generator data(7);
  const Tensor tokens = randint({2, 12}, 11, data), targets = randint({2, 12}, 11, data);
  const auto at = positions({1, 5, 6, 20, 21, 22, 40, 63, 64, 90, 100, 127});
  std::vector<int64_t> plain(12);
  std::iota(plain.begin(), plain.end(), 0);
  for (const std::string& scheme : scheme_names(1)) {
    for (const bool causal : {true, false}) {
      const SchemeInfo& info = *find_scheme(scheme, 1);
      if (!causal && info.causal_only) continue;
      INFO("scheme: ", scheme, ", causal: ", causal);
      std::vector<Tensor> logits, grads;
      for (const bool fused : {true, false}) {
        Generator gen(9);
        LanguageModel lm(randomized_options(scheme, fused, causal), gen);
        const Tensor l = lm.forward_at(tokens, at);
        backward(cross_entropy(l, targets));
        logits.push_back(l.detach());
        for (const auto& [name, p] : lm.named_parameters())
          if (p.grad().defined()) grads.push_back(p.grad());
        // The explicit positions 0 .. T - 1 are the plain forward's.
        lm.eval();
        NoGradGuard no_grad;
        CHECK(scaled_error(lm.forward_at(tokens, positions(plain)), lm.forward(tokens)) <= 1e-6);
      }
      CHECK(scaled_error(logits[0], logits[1]) <= 1e-5);
      REQUIRE(grads.size() % 2 == 0);
      const std::size_t half = grads.size() / 2;
      for (std::size_t i = 0; i < half; ++i) CHECK(scaled_error(grads[i], grads[half + i]) <= 1e-4);
    }
  }
}

TEST_CASE("randomized positions: a relative scheme is blind to a shift of every position, an absolute one is not") {
  Generator data(8);
  const Tensor tokens = randint({1, 6}, 11, data);
  const auto at = positions({0, 2, 3, 7, 8, 12});
  const auto shifted = positions({30, 32, 33, 37, 38, 42});
  for (const std::string& scheme : scheme_names(1)) {
    INFO("scheme: ", scheme);
    Generator gen(9);
    LanguageModel lm(randomized_options(scheme, true), gen);
    lm.eval();
    NoGradGuard no_grad;
    const double moved = scaled_error(lm.forward_at(tokens, shifted), lm.forward_at(tokens, at));
    const SchemeInfo& info = *find_scheme(scheme, 1);
    // FIRE's normaliser reads the query's position itself, the absolute schemes their rows; xPos's centre cancels
    // between a query's scale and a key's.
    const bool relative = info.kind != PositionKind::absolute && scheme != "fire";
    if (relative) CHECK(moved <= 1e-5);
    else CHECK(moved > 1e-4);
  }
}

TEST_CASE("randomized positions: training forwards draw and resume, evaluation draws per batch or reads 0..T-1") {
  Generator gen(10);
  TransformerOptions o = randomized_options("rope", true);
  o.position.randomized = true;
  o.position.randomized_max = 64;
  LanguageModel lm(o, gen);
  Generator data(11);
  const Tensor tokens = randint({2, 10}, 11, data);
  NoGradGuard no_grad;
  const Generator::State before = lm.dropout_generator().state();
  const Tensor a = lm.forward(tokens), b = lm.forward(tokens);
  CHECK(a.to_vector() != b.to_vector());  // two training forwards, two draws
  lm.dropout_generator().set_state(before);
  CHECK(lm.forward(tokens).to_vector() == a.to_vector());  // the draw is the dropout generator's: it resumes
  // Evaluation draws as the reference does, from the batch's tokens: the same batch, the same positions.
  lm.eval();
  const Tensor e = lm.forward(tokens);
  CHECK(e.to_vector() == lm.forward(tokens).to_vector());
  Generator same(10), again(10);  // the same initial weights: randomized positions change no parameter
  LanguageModel plain(randomized_options("rope", true), same);
  plain.eval();
  CHECK(scaled_error(e, plain.forward(tokens)) > 1e-4);
  o.position.contiguous_eval = true;  // evaluation at 0 .. T - 1
  LanguageModel contiguous(o, again);
  contiguous.eval();
  CHECK(scaled_error(contiguous.forward(tokens), plain.forward(tokens)) <= 1e-6);
  o.position.contiguous_eval = false;
  o.position.randomized_max = 8;
  LanguageModel short_range(o, gen);
  CHECK(contains(error_of([&] { short_range.forward(tokens); }), "a training sequence of 10 tokens needs as many"));
  short_range.eval();
  CHECK(contains(error_of([&] { short_range.forward(tokens); }),
                 "an evaluation sequence of 10 tokens needs as many positions of the position.randomized_max = 8"));
}


TEST_CASE("randomized positions: the config refuses what cannot work, naming the key") {
  CHECK(config_file_error("[position]\nscheme = \"rope\"\nrandomized = true\n").empty());
  CHECK(contains(config_file_error("[position]\nscheme = \"none\"\nrandomized = true\n"),
                 "position.randomized = true: invalid for scheme none: randomized = true applies to the"));
  CHECK(contains(config_file_error("[position]\nscheme = \"rope\"\nrandomized_max = 512\n"),
                 "randomized_max = 512 is the range randomized positions are drawn from, and randomized is false"));
  CHECK(contains(config_file_error(
                     "[position]\nscheme = \"learned\"\nrandomized = true\nmax_positions = 1024\n"),
                 "max_positions 1024 must hold every position randomized positions draw, randomized_max = 2048"));
  CHECK(contains(config_file_error("[position]\nscheme = \"rope\"\ncontiguous_eval = true\n"),
                 "contiguous_eval = true applies to randomized positions, and randomized is false"));
  // The reference draws at evaluation too: the longest evaluation sample must fit in L_max, or evaluate contiguously.
  const std::string longer = "[run]\nlength = 64\neval_multipliers = [1, 8]\neval_tokens = 512\n[position]\n"
                             "scheme = \"t5\"\nrandomized = true\nrandomized_max = 256\n";
  CHECK(contains(config_file_error(longer),
                 "position.randomized_max = 256: an evaluation sample of 512 tokens (8 x run.length 64) draws as many "
                 "distinct positions, as the reference evaluates"));
  CHECK(config_file_error(longer + "contiguous_eval = true\n").empty());
  CHECK(contains(config_file_error(
                     "[run]\nlength = 64\n[position]\nscheme = \"t5\"\nrandomized = true\nrandomized_max = 32\n"),
                 "position.randomized_max = 32: a training sample of 64 tokens (run.length 64) draws as many "
                 "distinct positions: expected at least that, found 32"));
}
