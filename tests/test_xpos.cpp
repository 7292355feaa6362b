// xpos (nn/position/xpos.cpp): golden values from torchscale's XPOS (tests/python/xpos_golden.py), the float64
// gradient check (its scheme case, RPB_SCHEME_CASE), scores that depend on n - m only
// whatever the centre, KV-cache decoding under the centring rule, and blockwise causal attention in a model.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "core/core.h"
#include "gradcheck.h"
#include "nn/generate.h"
#include "nn/position.h"
#include "nn/transformer.h"
#include "scheme_cases.h"
#include "test_util.h"
#include "tensor_checks.h"

using namespace rpb;
using rpb::testing::max_abs_diff;
using rpb::testing::randomize;
using rpb::nn::PositionOptions;

namespace xpos_tests {

std::shared_ptr<nn::PositionScheme> make_xpos(int64_t head_dim, int64_t scale_base) {
  PositionOptions o;
  o.scheme = "xpos";
  o.head_dim = head_dim;
  o.xpos_scale_base = scale_base;
  Generator gen(0);
  return nn::make_position_scheme(o, gen);
}

// Every element within `rel` of `want`, relative to max(1, |want|).
void check_rel(const Tensor& got, const std::vector<double>& want, double rel) {
  const std::vector<double> g = got.to_vector();
  REQUIRE(g.size() == want.size());
  for (std::size_t i = 0; i < g.size(); ++i) {
    INFO("element " << i << ": got " << g[i] << ", want " << want[i]);
    CHECK(std::abs(g[i] - want[i]) <= rel * std::max(1.0, std::abs(want[i])));
  }
}

// tests/python/xpos_golden.py's input: x[t, c] = 0.1 (t + 1) - 0.05 c + 0.3 (c % 2), T = 5, d = 6.
Tensor golden_input() {
  std::vector<float> x;
  for (int t = 0; t < 5; ++t)
    for (int c = 0; c < 6; ++c) x.push_back(static_cast<float>(0.1 * (t + 1) - 0.05 * c + 0.3 * (c % 2)));
  return Tensor::from_vector<float>({1, 1, 5, 6}, x);
}

nn::TransformerOptions model_options(bool fused, int64_t scale_base, bool blockwise) {
  nn::TransformerOptions o;
  o.vocab = 11;
  o.d_model = 16;
  o.heads = 2;
  o.layers = 2;
  o.d_ff = 24;
  o.fused_attention = fused;
  o.dropout = 0.0;
  o.position.scheme = "xpos";
  o.position.xpos_scale_base = scale_base;
  o.position.blockwise = blockwise;
  o.position.train_length = 8;
  return o;
}

}  // namespace xpos_tests

namespace rpb::testing {

// xpos: torchscale's XPOS on tests/python/xpos_golden.py's input (float32; its printed numbers).
void golden_xpos() {
  using namespace xpos_tests;
  const auto s = make_xpos(6, 8);
  check_rel(s->named_buffers()[0].second, {0.285714298, 0.523809552, 0.761904836}, 1e-7);
  const Tensor x = golden_input();
  // Offset 0, T = 5: scale positions -3 .. 1 (min_pos = -(5) // 2), angle positions 0 .. 4.
  check_rel(s->rotate(x, 0),
               {0.159965202,  0.55987817,   0,           0.318603098,  -0.110735595,    0.166103393,
                -0.370123923, 0.562747002,  0.0983299837, 0.416420788, -0.000576497929, 0.267586261,
                -0.730901837, 0.0513519347, 0.170677274, 0.505882859,  0.101896398,     0.36254403,
                -0.487725019, -0.5870471,   0.220757276, 0.586315811,  0.197087362,     0.451283246,
                0.205878973,  -0.742725492, 0.251927942, 0.657331228,  0.285381794,     0.53409785},
               2e-6);
  check_rel(s->rotate_key(x, 0),
               {0.0625136048, 0.218797609,  0,            0.19616884,  -0.0903052017,   0.135457799,
                -0.197839558, 0.300800949,  0.0711660087, 0.301383227, -0.000503208663, 0.23356846,
                -0.534370005, 0.0375439376, 0.145200819,  0.430371374, 0.095199354,     0.338716149,
                -0.487725019, -0.5870471,   0.220757276,  0.586315811, 0.197087362,     0.451283246,
                0.281597614,  -1.01588678,  0.296130359,  0.772664428, 0.305457741,     0.571670413},
               2e-6);
  // Rows 3 and 4 of x at offset 4 (N = 6: scale positions 1, 2; angle positions 4, 5).
  const Tensor tail = slice(x, 2, 3, 5);
  check_rel(s->rotate(tail, 4),
               {0.197058365, -0.622125268, 0.178304374, 0.549654722, 0.189560398, 0.43661055, 0.629503846,
                -0.194998473, 0.203984544, 0.616419435, 0.274731368, 0.516841233},
               2e-6);
  check_rel(s->rotate_key(tail, 4),
               {0.269532949, -0.850931942, 0.209589094, 0.646095335, 0.202895522, 0.467325062, 1.17769384,
                -0.364808738, 0.281845152, 0.85170579, 0.314744264, 0.592115939},
               2e-6);
  // scale_base 512 at position 8191 (16 x 512): scale position 4095 after centring, finite both ways.
  const auto big = make_xpos(6, 512);
  const Tensor first = slice(x, 2, 0, 1);
  check_rel(big->rotate(first, 8191),
               {9.01067961e-06, -1.34678248e-05, 8.47760384e-05, -0.00141611649, 0.0118104378, 0.0167343095}, 2e-6);
  check_rel(big->rotate_key(first, 8191),
               {4546.95508, -6796.11182, 2.63270092, -43.9771767, 0.914940834, 1.29638743}, 2e-6);
}

// gradcheck: xpos through the queries' and the keys' rotation (float64), at an offset.
GradCase gradcheck_xpos() {
  const auto s = xpos_tests::make_xpos(6, 4);
  s->to(DType::f64);
  Generator gen(27);
  return {"xpos rotate and rotate_key", OpKind::Concat, {input(gen, {2, 2, 3, 6}), input(gen, {2, 2, 5, 6})},
          [s](const std::vector<Tensor>& in) {
            return add(s->rotate(in[0], 2), slice(s->rotate_key(in[1], 0), 2, 2, 5));
          }};
}

}  // namespace rpb::testing

RPB_SCHEME_CASE(xpos, rpb::testing::golden_xpos, rpb::testing::gradcheck_xpos);

TEST_CASE("xpos: q_n . k_m depends on n - m only, and the centre (how many positions) leaves it unchanged") {
  using namespace xpos_tests;
  const auto s = make_xpos(8, 16);
  s->to(DType::f64);
  Generator gen(5);
  const Tensor q = randn({1, 1, 1, 8}, gen, DType::f64), k = randn({1, 1, 1, 8}, gen, DType::f64);
  // The query at n among N positions (offset n, T = N - n) and the key at m among N (offset m as well).
  auto rows = [](const Tensor& x, int64_t t) { return add(Tensor::zeros({1, 1, t, 8}, DType::f64), x); };
  auto score = [&](int64_t n, int64_t m, int64_t length) {
    const Tensor qs = slice(s->rotate(rows(q, length - n), n), 2, 0, 1);
    const Tensor ks = slice(s->rotate_key(rows(k, length - m), m), 2, 0, 1);
    return sum(mul(qs, ks)).item();
  };
  const double base = score(7, 3, 10);
  CHECK(score(7, 3, 31) == doctest::Approx(base).epsilon(1e-12));   // another centre
  CHECK(score(20, 16, 40) == doctest::Approx(base).epsilon(1e-12));  // shifted by 13
  // The decay: with the rotation undone (angle 0 at n = m), q_n . k_n = q . k at any n.
  CHECK(score(9, 9, 12) == doctest::Approx(sum(mul(q, k)).item()).epsilon(1e-12));
}

TEST_CASE("xpos: KV-cache decoding equals the full forward (keys re-rotated with the current centre)") {
  using namespace xpos_tests;
  // scale_base 4 over 40 positions: centres 0.5 position apart change the scales by zeta^(1/8), far above the
  // tolerance, so caching rotated keys (the rope rule) would fail here.
  const int64_t T = 40;
  for (const bool fused : {true, false})
    for (const bool blockwise : {false, true}) {
      CAPTURE(fused);
      CAPTURE(blockwise);
      Generator gen(13);
      nn::LanguageModel lm(model_options(fused, 4, blockwise), gen);
      randomize(lm, gen);
      lm.eval();
      NoGradGuard no_grad;
      const Tensor tokens = randint({2, T}, 11, gen);
      const Tensor full = lm.forward(tokens);
      nn::KVCache cache;
      std::vector<std::pair<int64_t, int64_t>> chunks = {{0, 7}, {7, 12}};
      for (int64_t t = 12; t < T; ++t) chunks.push_back({t, t + 1});
      double worst = 0;
      for (const auto& [b, e] : chunks)
        worst = std::max(worst, max_abs_diff(lm.forward(slice(tokens, 1, b, e), &cache), slice(full, 1, b, e)));
      CHECK(worst <= 1e-4);
    }
}

TEST_CASE("xpos: blockwise attention in evaluation only, each query over its block and the one before") {
  using namespace xpos_tests;
  Generator gen(17);
  const Tensor tokens = randint({2, 40}, 11, gen);  // 5 blocks of the train length 8
  auto logits = [&](bool fused, bool blockwise, bool training, int64_t length) {
    Generator g(19);
    nn::LanguageModel lm(model_options(fused, 512, blockwise), g);
    randomize(lm, g);
    if (training) lm.train();
    else lm.eval();
    NoGradGuard no_grad;
    return lm.forward(slice(tokens, 1, 0, length));
  };
  // Up to two blocks every query sees every earlier key anyway; past them blockwise attention sees less.
  CHECK(max_abs_diff(logits(true, true, false, 16), logits(true, false, false, 16)) == 0);
  CHECK(max_abs_diff(logits(true, true, false, 40), logits(true, false, false, 40)) > 1e-3);
  // The fused kernel's mask equals the reference path's.
  CHECK(max_abs_diff(logits(true, true, false, 40), logits(false, true, false, 40)) <= 1e-5);
  // Training ignores it.
  CHECK(max_abs_diff(logits(true, true, true, 40), logits(true, false, true, 40)) == 0);
  // Its block is the train length, which it needs.
  PositionOptions o;
  o.scheme = "xpos";
  o.head_dim = 8;
  o.blockwise = true;
  CHECK(testing::contains(testing::error_of([&] { nn::validate(o); }), "train length"));
}
