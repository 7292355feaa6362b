// The 1-D position schemes (nn/position.h): golden values from the seed documents and docs/references.md,
// KV-cache offsets, float64 gradient checks and error messages. Each scheme's golden and gradient-check case
// registers itself (tests/scheme_cases.h RPB_SCHEME_CASE), and tests/test_scheme_registry.cpp runs them.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <vector>

#include "core/core.h"
#include "gradcheck.h"
#include "nn/position_plan.h"
#include "nn/transformer.h"
#include "scheme_cases.h"
#include "nn/position.h"
#include "nn/window_attention.h"
#include "test_util.h"

using namespace rpb;
using rpb::nn::PositionKind;
using rpb::nn::PositionOptions;
using rpb::testing::contains;
using rpb::testing::error_of;
using rpb::testing::flat;
using rpb::testing::Matrix;

namespace {

nn::Positions line(int64_t q_len, int64_t k_len, int64_t q_offset) { return nn::Positions::line(q_len, k_len, q_offset); }
// `length` queries from `offset` on (their keys are every position up to the last query).
nn::Positions at(int64_t length, int64_t offset) { return nn::Positions::line(length, offset + length, offset); }

// Every element of t (any shape whose trailing axes hold m's elements in order) within tol of m.
void check_close(const Tensor& t, const Matrix& m, double tol) {
  const std::vector<double> want = flat(m);
  const std::vector<double> got = t.to_vector();
  REQUIRE(got.size() == want.size());
  for (std::size_t i = 0; i < got.size(); ++i) {
    INFO("element " << i << ": got " << got[i] << ", want " << want[i]);
    CHECK(std::abs(got[i] - want[i]) <= tol);
  }
}

void check_equal(const Tensor& a, const Tensor& b) {
  REQUIRE(a.shape() == b.shape());
  CHECK(a.to_vector() == b.to_vector());
}

void check_near(const Tensor& a, const Tensor& b, double tol) {
  REQUIRE(a.shape() == b.shape());
  const auto va = a.to_vector(), vb = b.to_vector();
  for (std::size_t i = 0; i < va.size(); ++i) {
    INFO("element " << i << ": " << va[i] << " vs " << vb[i]);
    CHECK(std::abs(va[i] - vb[i]) <= tol);
  }
}

std::shared_ptr<nn::PositionScheme> make(PositionOptions o, uint64_t seed = 0) {
  Generator gen(seed);
  return nn::make_position_scheme(o, gen);
}

// T5 bucketing in float64: the same formula as HF, to compare the float32 implementation against.
int64_t t5_bucket_f64(int64_t rp, bool bidirectional, int64_t nb, int64_t max_distance) {
  int64_t ret = 0, n = 0;
  if (bidirectional) {
    nb /= 2;
    if (rp > 0) ret += nb;
    n = std::abs(rp);
  } else {
    n = std::max<int64_t>(-rp, 0);
  }
  const int64_t max_exact = nb / 2;
  if (n < max_exact) return ret + n;
  const double v = std::log(static_cast<double>(n) / max_exact) /
                   std::log(static_cast<double>(max_distance) / max_exact) * static_cast<double>(nb - max_exact);
  return ret + std::min<int64_t>(max_exact + static_cast<int64_t>(v), nb - 1);
}

}  // namespace

// ---------------------------------------------------------------- T5 buckets

// t5 buckets: seed 003 worked example (T=4, 8 buckets, max_distance 16, bidirectional)
static void golden_t5() {
  // relative position = key - query: [[0,1,2,3],[-1,0,1,2],...]; max_exact 2, so 2 and 3 log-bucket to 2.
  const Tensor b = nn::t5_buckets(4, 4, 0, /*bidirectional=*/true, 8, 16);
  CHECK(b.dtype() == DType::i64);
  CHECK(b.shape() == Shape{4, 4});
  check_close(b, {{0, 5, 6, 6}, {1, 0, 5, 6}, {2, 1, 0, 5}, {2, 2, 1, 0}}, 0.0);
}

TEST_CASE("t5 buckets: references.md test vectors, bidirectional (32, 128)") {
  const std::vector<std::pair<int64_t, int64_t>> cases{
      {0, 0},    {-1, 1},   {-7, 7},   {-8, 8},   {-12, 9},  {-16, 10}, {-23, 11}, {-32, 12}, {-46, 13},
      {-64, 14}, {-91, 15}, {-92, 15}, {-128, 15}, {-4000, 15}, {1, 17}, {8, 24},  {16, 26},  {64, 30},
      {91, 31},  {200, 31}};
  for (const auto& [offset_, bucket] : cases) {
    const int64_t offset = offset_;  // INFO captures it: clang 14 cannot capture a structured binding
    INFO("offset " << offset);
    CHECK(nn::t5_bucket(offset, true, 32, 128) == bucket);
  }
  // Every offset <= -91 saturates at 15 and every offset >= +91 at 31 (the clamp to nb-1 bites at 91, not 128).
  for (int64_t d = 91; d <= 3000; ++d) {
    INFO("distance " << d);
    CHECK(nn::t5_bucket(-d, true, 32, 128) == 15);
    CHECK(nn::t5_bucket(d, true, 32, 128) == 31);
  }
  CHECK(nn::t5_bucket(-90, true, 32, 128) == 14);
}

TEST_CASE("t5 buckets: references.md test vectors, causal (32, 128)") {
  for (int64_t offset = 1; offset <= 300; ++offset) CHECK(nn::t5_bucket(offset, false, 32, 128) == 0);
  const std::vector<std::pair<int64_t, int64_t>> cases{{0, 0},   {-15, 15}, {-16, 16}, {-19, 17},
                                                       {-31, 21}, {-64, 26}, {-113, 31}};
  for (const auto& [offset_, bucket] : cases) {
    const int64_t offset = offset_;  // INFO captures it: clang 14 cannot capture a structured binding
    INFO("offset " << offset);
    CHECK(nn::t5_bucket(offset, false, 32, 128) == bucket);
  }
  for (int64_t d = 113; d <= 3000; ++d) CHECK(nn::t5_bucket(-d, false, 32, 128) == 31);
  CHECK(nn::t5_bucket(-112, false, 32, 128) == 30);
}

TEST_CASE("t5 buckets: float32 equals a float64 reference on [-5000, 5000], in range and monotone") {
  // references.md: the float32 formula (torch's) and the same formula in float64 agree for every offset in
  // [-5000, 5000] at (32, 128), so a float64 reference is exact there. Also at the seed's (8, 16).
  for (const auto& sizes : std::vector<std::pair<int64_t, int64_t>>{{32, 128}, {8, 16}})
    for (bool bidi : {true, false}) {
      const int64_t nb = sizes.first, md = sizes.second;  // INFO captures them: not a structured binding (clang 14)
      int64_t prev_neg = -1, prev_pos = -1;
      for (int64_t d = 0; d <= 5000; ++d) {
        const int64_t neg = nn::t5_bucket(-d, bidi, nb, md);
        const int64_t pos = nn::t5_bucket(d, bidi, nb, md);
        INFO("num_buckets " << nb << " max_distance " << md << " bidirectional " << bidi << " distance " << d);
        CHECK(neg == t5_bucket_f64(-d, bidi, nb, md));
        CHECK(pos == t5_bucket_f64(d, bidi, nb, md));
        const int64_t half = bidi ? nb / 2 : nb;
        CHECK(neg >= 0);
        CHECK(neg < half);  // keys before the query: the lower half (all buckets when causal)
        if (bidi) {
          CHECK(pos >= (d > 0 ? half : 0));
          CHECK(pos < nb);
        } else {
          CHECK(pos == 0);
        }
        CHECK(neg >= prev_neg);  // buckets never decrease with distance
        CHECK(pos >= prev_pos);
        prev_neg = neg;
        prev_pos = pos;
      }
    }
}

TEST_CASE("t5 buckets: seed 001 exercise 4 (32 buckets, max_distance 128, bidirectional)") {
  // By hand: max_exact 8, 8 log buckets per half, log(128/8) = log 16 = 2.7726.
  //   1, 5: exact -> 1, 5.   10: 8 + floor(log(1.25)/2.7726*8 = 0.64) = 8.
  //   50: 8 + floor(log(6.25)/2.7726*8 = 5.29) = 13.   100: 8 + floor(log(12.5)/2.7726*8 = 7.29) = 15.
  // Key before the query (negative offset): 1, 5, 8, 13, 15; key after it: the same plus 16 = 17, 21, 24, 29, 31.
  const std::vector<int64_t> distances{1, 5, 10, 50, 100};
  const std::vector<int64_t> before{1, 5, 8, 13, 15}, after{17, 21, 24, 29, 31};
  for (std::size_t i = 0; i < distances.size(); ++i) {
    INFO("distance " << distances[i]);
    CHECK(nn::t5_bucket(-distances[i], true, 32, 128) == before[i]);
    CHECK(nn::t5_bucket(distances[i], true, 32, 128) == after[i]);
  }
}

TEST_CASE("t5 buckets at a query offset are the KV-cache rows of the full matrix") {
  for (bool bidi : {false, true}) {
    const Tensor full = nn::t5_buckets(10, 10, 0, bidi, 32, 128);
    check_equal(nn::t5_buckets(1, 10, 9, bidi, 32, 128), slice(full, 0, 9, 10));
    check_equal(nn::t5_buckets(4, 10, 3, bidi, 32, 128), slice(full, 0, 3, 7));
  }
  // Long distances through the offset: the query at 200 sees key 0 at offset -200 -> bucket 31 (causal).
  CHECK(nn::t5_buckets(1, 201, 200, false, 32, 128).at({0, 0}) == 31);
  CHECK(nn::t5_buckets(1, 201, 200, false, 32, 128).at({0, 200}) == 0);
}

// ---------------------------------------------------------------- Shaw and seed 004 indices

// shaw index: clip(key - query, -K, K) + K (tensor2tensor sign), K=2, T=5
static void golden_shaw() {
  const Tensor idx = nn::shaw_index(5, 5, 0, 2);
  CHECK(idx.dtype() == DType::i64);
  check_close(idx,
              {{2, 3, 4, 4, 4}, {1, 2, 3, 4, 4}, {0, 1, 2, 3, 4}, {0, 0, 1, 2, 3}, {0, 0, 0, 1, 2}}, 0.0);
  check_equal(nn::shaw_index(1, 5, 4, 2), slice(idx, 0, 4, 5));
  // The scheme's index() is the same matrix.
  PositionOptions o;
  o.scheme = "shaw";
  o.max_relative_position = 2;
  check_equal(make(o)->index(line(5, 5, 0)), idx);
}

TEST_CASE("seed 004: relative_index_1d (query - key + n - 1) and its table gradient") {
  check_close(nn::relative_index_1d(4), {{3, 2, 1, 0}, {4, 3, 2, 1}, {5, 4, 3, 2}, {6, 5, 4, 3}}, 0.0);
  const int64_t n = 5, heads = 3;
  const Tensor idx = nn::relative_index_1d(n);
  const auto v = idx.to_vector();
  CHECK(*std::min_element(v.begin(), v.end()) == 0);
  CHECK(*std::max_element(v.begin(), v.end()) == 2 * n - 2);

  // Gradient flow: sum of the (H, N, N) bias -> each table row receives the count of its index.
  Generator gen(4);
  Tensor table = randn({2 * n - 1, heads}, gen).requires_grad_();  // (2N-1, H)
  const Tensor bias = permute(index_select(table, idx), {2, 0, 1});  // (H, N, N)
  CHECK(bias.shape() == Shape{heads, n, n});
  backward(sum(bias));
  REQUIRE(table.grad().defined());
  for (int64_t r = 0; r < 2 * n - 1; ++r)
    for (int64_t h = 0; h < heads; ++h) {
      INFO("row " << r << " head " << h);
      CHECK(table.grad().at({r, h}) == static_cast<double>(n - std::abs(r - (n - 1))));
    }
}

// ---------------------------------------------------------------- ALiBi slopes

// alibi slopes: the paper's get_slopes for 1, 3, 8, 12 and 16 heads
static void golden_alibi() {
  auto check_log2 = [](int64_t heads, const std::vector<double>& want) {
    const std::vector<double> s = nn::alibi_slopes(heads);
    REQUIRE(s.size() == want.size());
    for (std::size_t i = 0; i < s.size(); ++i) {
      INFO(heads << " heads, slope " << i << " = " << s[i]);
      CHECK(std::abs(std::log2(s[i]) - want[i]) <= 1e-12);
    }
  };
  check_log2(8, {-1, -2, -3, -4, -5, -6, -7, -8});
  check_log2(16, {-0.5, -1, -1.5, -2, -2.5, -3, -3.5, -4, -4.5, -5, -5.5, -6, -6.5, -7, -7.5, -8});
  check_log2(12, {-1, -2, -3, -4, -5, -6, -7, -8, -0.5, -1.5, -2.5, -3.5});
  check_log2(1, {-8});
  // 3 heads: get_slopes(2) + get_slopes(4)[0::2][:1] = [2^-4, 2^-8] + [2^-2].
  check_log2(3, {-4, -8, -2});
}

// ---------------------------------------------------------------- seed 001: log-decay bias and attention

// log_decay: seed 001 worked example, 'The cat sat on mat', to 4 decimals
static void golden_log_decay() {
  // Q, K, V of the seed (5 tokens, d_k = 4); scores = Q K^T / sqrt(4) + B, softmax over keys, @ V.
  const Tensor q = Tensor::from_vector<float>(
      {5, 4}, {1, 0, 1, 0, 0, 2, 0, 1, 1, 1, 1, 0, 0, 0, 1, 1, 1, 0, 0, 1});
  const Tensor k = Tensor::from_vector<float>(
      {5, 4}, {0, 1, 0, 1, 1, 0, 1, 0, 1, 1, 0, 0, 0, 0, 1, 1, 1, 0, 0.5f, 0.5f});
  const Tensor v = Tensor::from_vector<float>(
      {5, 4}, {1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1, 0.5f, 0.5f, 0.5f, 0.5f});
  const double tol = 5e-5 + 2e-6;  // the seed rounds to 4 decimals; float32 adds ~1e-7

  PositionOptions o;
  o.scheme = "log_decay";
  o.lambda = 0.3;
  o.heads = 1;
  const auto scheme = make(o);
  const Tensor b = scheme->bias(line(5, 5, 0));  // (1, 5, 5)
  CHECK(b.shape() == Shape{1, 5, 5});
  CHECK(!b.requires_grad());  // a fixed lambda is a buffer
  check_close(b,
              {{0.0000, -0.2079, -0.3296, -0.4159, -0.4828},
               {-0.2079, 0.0000, -0.2079, -0.3296, -0.4159},
               {-0.3296, -0.2079, 0.0000, -0.2079, -0.3296},
               {-0.4159, -0.3296, -0.2079, 0.0000, -0.2079},
               {-0.4828, -0.4159, -0.3296, -0.2079, 0.0000}},
              tol);

  auto attend = [&](const Tensor& bias, Tensor& scores) {
    scores = add(mul_scalar(matmul(q, k, false, true), 0.5), bias);  // (1, 5, 5)
    return softmax(scores, -1);
  };
  Tensor scores;
  const Tensor w = attend(b, scores);
  check_close(scores,
              {{0.0000, 0.7921, 0.1704, 0.0841, 0.2672},
               {1.2921, 0.0000, 0.7921, 0.1704, -0.1659},
               {0.1704, 0.7921, 1.0000, 0.2921, 0.4204},
               {0.0841, 0.1704, -0.2079, 1.0000, 0.2921},
               {0.0172, 0.0841, 0.1704, 0.2921, 0.7500}},
              tol);
  check_close(w,
              {{0.1473, 0.3253, 0.1747, 0.1603, 0.1924},
               {0.4099, 0.1126, 0.2486, 0.1335, 0.0954},
               {0.1321, 0.2460, 0.3029, 0.1492, 0.1697},
               {0.1523, 0.1660, 0.1137, 0.3805, 0.1875},
               {0.1508, 0.1612, 0.1758, 0.1985, 0.3138}},
              tol);
  check_close(matmul(w, v),
              {{0.2435, 0.4215, 0.2709, 0.2565},
               {0.4576, 0.1603, 0.2963, 0.1812},
               {0.2170, 0.3309, 0.3877, 0.2341},
               {0.2460, 0.2597, 0.2074, 0.4743},
               {0.3077, 0.3181, 0.3326, 0.3554}},
              tol);

  // "Standard" tables: lambda 0 makes the bias zero.
  o.lambda = 0.0;
  const Tensor b0 = make(o)->bias(line(5, 5, 0));
  check_close(b0, Matrix(5, std::vector<double>(5, 0.0)), 0.0);
  Tensor scores0;
  const Tensor w0 = attend(b0, scores0);
  check_close(w0,
              {{0.1095, 0.2976, 0.1805, 0.1805, 0.2318},
               {0.4026, 0.0898, 0.2442, 0.1481, 0.1153},
               {0.1519, 0.2505, 0.2505, 0.1519, 0.1951},
               {0.1903, 0.1903, 0.1154, 0.3137, 0.1903},
               {0.1892, 0.1892, 0.1892, 0.1892, 0.2430}},
              tol);
  check_close(matmul(w0, v),
              {{0.2254, 0.4135, 0.2964, 0.2964},
               {0.4602, 0.1475, 0.3018, 0.2058},
               {0.2495, 0.3481, 0.3481, 0.2495},
               {0.2854, 0.2854, 0.2106, 0.4089},
               {0.3108, 0.3108, 0.3108, 0.3108}},
              tol);
  // The seed's difference table (biased minus standard weights).
  check_close(sub(w, w0),
              {{0.0378, 0.0276, -0.0058, -0.0203, -0.0394},
               {0.0073, 0.0228, 0.0044, -0.0146, -0.0200},
               {-0.0198, -0.0045, 0.0524, -0.0027, -0.0254},
               {-0.0380, -0.0243, -0.0017, 0.0668, -0.0028},
               {-0.0385, -0.0280, -0.0135, 0.0092, 0.0708}},
              tol);
}

// ---------------------------------------------------------------- the schemes

TEST_CASE("schemes: kinds, names, parameters and buffers") {
  PositionOptions o;
  o.heads = 4;
  o.d_model = 8;
  o.head_dim = 8;
  o.train_length = 16;  // fire's L0
  // Every 1-D scheme of the registry answers to its row. The names and shapes of the parameters are the checkpoint
  // format, which python/rpb_torch.py's strict load checks per scheme (tests/python/test_rpb_torch.py).
  for (const std::string& name : nn::scheme_names(1)) {
    INFO("scheme " << name);
    o.scheme = name;
    const nn::SchemeInfo& info = nn::scheme_info(o);
    const auto s = make(o);
    CHECK(s->name() == name);
    CHECK(s->kind() == info.kind);
    CHECK(s->learned() == info.learned(o));
    int64_t values = 0;
    for (const auto& [path, p] : s->named_parameters()) values += p.numel();
    CHECK(values == info.parameters(o));
    // Fixed state is rebuilt from the options; a table's record of the rows training read is saved.
    const bool table = info.row_table;
    const auto persistent = s->named_buffers(/*persistent_only=*/true);
    REQUIRE(persistent.size() == (table ? 1u : 0u));
    if (table) CHECK(persistent[0].first == "trained");
    CHECK(s->index(line(3, 3, 0)).defined() == table);
  }
  // A learnable lambda is a parameter, initialised to options.lambda.
  o.scheme = "log_decay";
  o.learnable_lambda = true;
  const auto s = make(o);
  REQUIRE(s->named_parameters().size() == 1);
  CHECK(s->named_parameters()[0].first == "lambda");
  CHECK(s->named_parameters()[0].second.to_vector() == std::vector<double>(4, static_cast<float>(0.3)));
  // The T5 table starts as Normal(0, init_std): small, not all equal.
  o.scheme = "t5";
  o.init_std = 0.02;
  const auto vals = make(o)->named_parameters()[0].second.to_vector();
  double sq = 0;
  for (double x : vals) sq += x * x;
  const double sd = std::sqrt(sq / vals.size());
  CHECK(sd > 0.01);
  CHECK(sd < 0.03);
}

TEST_CASE("schemes: a scheme answers only for its own kind") {
  PositionOptions o;
  o.scheme = "alibi";
  const auto alibi = make(o);
  CHECK(contains(error_of([&] { alibi->embed(at(4, 0)); }), "has no embed()"));
  CHECK(contains(error_of([&] { alibi->rotate(Tensor::zeros({1, 1, 2, 4}), 0); }), "has no rotate()"));
  o.scheme = "none";
  CHECK(contains(error_of([&] { make(o)->bias(line(2, 2, 0)); }), "has no bias()"));
}

TEST_CASE("t5 scheme: bias is the table looked up by the buckets, permuted to (H, q, k)") {
  PositionOptions o;
  o.scheme = "t5";
  o.heads = 3;
  o.causal = false;
  o.num_buckets = 8;
  o.max_distance = 16;
  const auto s = make(o, 7);
  const Tensor table = s->named_parameters()[0].second;  // (8, 3)
  const Tensor bias = s->bias(line(4, 4, 0));
  CHECK(bias.shape() == Shape{3, 4, 4});
  CHECK(bias.dtype() == DType::f32);
  CHECK(bias.requires_grad());
  const Tensor buckets = s->index(line(4, 4, 0));
  check_equal(buckets, nn::t5_buckets(4, 4, 0, true, 8, 16));
  for (int64_t h = 0; h < 3; ++h)
    for (int64_t i = 0; i < 4; ++i)
      for (int64_t j = 0; j < 4; ++j)
        CHECK(bias.at({h, i, j}) == table.at({static_cast<int64_t>(buckets.at({i, j})), h}));
  // index() hands out a copy: writing into it does not corrupt the cached buckets.
  Tensor mine = s->index(line(4, 4, 0));
  mine.fill_(0);
  check_equal(s->index(line(4, 4, 0)), buckets);
  check_equal(s->bias(line(4, 4, 0)), bias);
}

TEST_CASE("t5 scheme: the table's gradient is the per-bucket sum of the score gradient, summed over layers") {
  PositionOptions o;
  o.scheme = "t5";
  o.heads = 2;
  o.causal = true;
  o.num_buckets = 8;
  o.max_distance = 20;
  const auto s = make(o, 3);
  const Tensor table = s->named_parameters()[0].second;  // (8, 2)
  const int64_t t = 12;
  const Tensor buckets = s->index(line(t, t, 0));
  Generator gen(11);
  const Tensor g1 = randn({2, t, t}, gen), g2 = randn({2, t, t}, gen);

  // Two "layers" share the one table: each calls bias() and adds it to its scores.
  table.zero_grad();
  const Tensor layer1 = s->bias(line(t, t, 0)), layer2 = s->bias(line(t, t, 0));
  backward(add(sum(mul(layer1, g1)), sum(mul(layer2, g2))));
  REQUIRE(table.grad().defined());
  std::vector<double> want(8 * 2, 0.0);
  for (int64_t h = 0; h < 2; ++h)
    for (int64_t i = 0; i < t; ++i)
      for (int64_t j = 0; j < t; ++j)
        want[static_cast<std::size_t>(buckets.at({i, j})) * 2 + h] += g1.at({h, i, j}) + g2.at({h, i, j});
  const auto got = table.grad().to_vector();
  for (std::size_t i = 0; i < want.size(); ++i) {
    INFO("bucket " << i / 2 << " head " << i % 2);
    CHECK(std::abs(got[i] - want[i]) <= 1e-4);
  }
  // Causal: every future key (j > i) is bucket 0, so bucket 0's gradient includes the whole upper triangle.
  CHECK(buckets.at({0, t - 1}) == 0);
  table.zero_grad();
}

TEST_CASE("alibi and log_decay biases: golden values, per-head slopes, symmetric") {
  PositionOptions o;
  o.scheme = "alibi";
  o.heads = 2;  // slopes 2^-4, 2^-8
  const Tensor b = make(o)->bias(line(3, 4, 0));
  CHECK(b.shape() == Shape{2, 3, 4});
  CHECK(!b.requires_grad());
  check_close(b,
              {{0, -1.0 / 16, -2.0 / 16, -3.0 / 16},
               {-1.0 / 16, 0, -1.0 / 16, -2.0 / 16},
               {-2.0 / 16, -1.0 / 16, 0, -1.0 / 16},
               {0, -1.0 / 256, -2.0 / 256, -3.0 / 256},
               {-1.0 / 256, 0, -1.0 / 256, -2.0 / 256},
               {-2.0 / 256, -1.0 / 256, 0, -1.0 / 256}},
              1e-9);
  o.scheme = "log_decay";
  o.lambda = 0.5;
  const Tensor l = make(o)->bias(line(2, 3, 1));  // queries at 1, 2
  check_close(l,
              {{-0.5 * std::log(2.0), 0, -0.5 * std::log(2.0)},
               {-0.5 * std::log(3.0), -0.5 * std::log(2.0), 0},
               {-0.5 * std::log(2.0), 0, -0.5 * std::log(2.0)},
               {-0.5 * std::log(3.0), -0.5 * std::log(2.0), 0}},
              1e-6);
}

TEST_CASE("every bias scheme: bias(1, T, T-1) is the last row of bias(T, T, 0) (KV cache)") {
  for (const std::string& name : testing::schemes_of_kind(PositionKind::additive_bias))
    for (bool causal : {true, false}) {
      INFO("scheme " << name << " causal " << causal);
      PositionOptions o;
      o.scheme = name;
      o.heads = 3;
      o.causal = causal;
      o.train_length = 4;  // fire's L0
      o.max_relative_position = 3;
      const auto s = make(o, 5);
      const int64_t t = 9;
      const Tensor full = s->bias(line(t, t, 0));  // (H, T, T)
      // A bias computed by a learned function of its input (fire's MLP) is equal up to the rounding of products over
      // another number of rows; a table's or a formula's is equal bit for bit.
      const double tol = s->function_input(line(t, t, 0)).defined() ? 1e-6 : 0.0;
      check_near(s->bias(line(1, t, t - 1)), slice(full, 1, t - 1, t), tol);
      check_near(s->bias(line(3, t, 4)), slice(full, 1, 4, 7), tol);
      check_near(s->bias(line(t, t, 0)), full, tol);  // and back to the cached length
    }
}

// rope: golden rotations by hand (HF's rotate_half pairs)
static void golden_rope() {
  PositionOptions o;
  o.scheme = "rope";
  o.head_dim = 2;
  const auto s2 = make(o);
  // head_dim 2: inv_freq = [1]; x = (1, 0) at position 1 -> (cos 1, sin 1); at position 0 unchanged.
  const Tensor x = Tensor::from_vector<float>({1, 1, 2, 2}, {1, 0, 1, 0});
  check_close(s2->rotate(x, 0), {{1, 0}, {std::cos(1.0), std::sin(1.0)}}, 1e-6);
  // head_dim 4, base 100: inv_freq = [1, 0.1]; the pairs are (x[k], x[k + 2]) (rotate_half, not GPT-J's
  // interleaved pairs): out[k] = x[k] cos - x[k+2] sin, out[k+2] = x[k+2] cos + x[k] sin, angle p * inv_freq[k].
  o.head_dim = 4;
  o.rope_base = 100.0;
  const Tensor x4 = Tensor::from_vector<float>({1, 1, 1, 4}, {1, 2, 3, 4});
  check_close(make(o)->rotate(x4, 1),
              {{std::cos(1.0) - 3 * std::sin(1.0), 2 * std::cos(0.1) - 4 * std::sin(0.1),
                3 * std::cos(1.0) + std::sin(1.0), 4 * std::cos(0.1) + 2 * std::sin(0.1)}},
              1e-6);
}

TEST_CASE("rope: offsets equal slices of the full rotation, relative-only scores") {
  PositionOptions o;
  o.scheme = "rope";
  o.head_dim = 8;
  o.rope_base = 100.0;
  const auto s = make(o);
  const Tensor inv_freq = s->named_buffers()[0].second;
  check_close(inv_freq, {{1.0, std::pow(100.0, -0.25), std::pow(100.0, -0.5), std::pow(100.0, -0.75)}}, 1e-7);
  Generator gen(2);
  const Tensor q = randn({2, 3, 7, 8}, gen);  // (B, H, T, d)
  const Tensor full = s->rotate(q, 0);
  CHECK(full.shape() == q.shape());
  check_near(s->rotate(slice(q, 2, 6, 7), 6), slice(full, 2, 6, 7), 1e-6);
  check_near(s->rotate(slice(q, 2, 2, 5), 2), slice(full, 2, 2, 5), 1e-6);
  // A rotation keeps norms, and q_m . k_n depends on n - m only: shift both by 5 in float64.
  s->to(DType::f64);
  const Tensor a = randn({1, 1, 1, 8}, gen, DType::f64), b = randn({1, 1, 1, 8}, gen, DType::f64);
  auto dot = [&](int64_t m, int64_t n) { return sum(mul(s->rotate(a, m), s->rotate(b, n))).item(); };
  CHECK(dot(3, 1) == doctest::Approx(dot(8, 6)).epsilon(1e-12));
  CHECK(dot(0, 4) == doctest::Approx(dot(10, 14)).epsilon(1e-12));
  CHECK(sum(mul(s->rotate(a, 9), s->rotate(a, 9))).item() == doctest::Approx(sum(mul(a, a)).item()).epsilon(1e-12));
  CHECK(s->rotate(a, 3).dtype() == DType::f64);
}

// sinusoidal: Vaswani et al.'s table by hand, and the scheme's embeddings are its rows
static void golden_sinusoidal() {
  const Tensor pe = nn::sinusoidal_table(3, 4, 0);
  // PE[p, 2i] = sin(p / 10000^(2i/4)), PE[p, 2i+1] = cos(...): frequencies 1 and 1/100.
  check_close(pe,
              {{0, 1, 0, 1},
               {std::sin(1.0), std::cos(1.0), std::sin(0.01), std::cos(0.01)},
               {std::sin(2.0), std::cos(2.0), std::sin(0.02), std::cos(0.02)}},
              1e-7);
  PositionOptions o;
  o.scheme = "sinusoidal";
  o.d_model = 4;
  check_near(make(o)->embed(at(2, 1)), slice(pe, 0, 1, 3), 0.0);
}

// learned: the embeddings of positions p .. are the table's rows p .., exactly
static void golden_learned() {
  PositionOptions o;
  o.scheme = "learned";
  o.d_model = 3;
  o.max_positions = 6;
  const auto s = make(o, 5);
  const Tensor table = s->named_parameters()[0].second;  // (6, 3)
  check_equal(s->embed(at(3, 2)), slice(table, 0, 2, 5));
}

// none: nothing to add anywhere — no tensors, and a model's tokens and attention get nothing from it
static void golden_none() {
  PositionOptions o;
  o.scheme = "none";
  const auto s = make(o);
  CHECK(s->parameter_count() == 0);
  CHECK(s->named_buffers().empty());
  const nn::PositionPlan plan = nn::PositionPlan::shared(s.get(), 2);
  const Tensor x = Tensor::ones({1, 3, 4});
  CHECK(plan.embed(x, at(3, 0)).shares_storage(x));
  for (const nn::AttentionPositions& a : plan.attention(at(3, 0), true)) {
    CHECK_FALSE(a.bias.defined());
    CHECK(a.rotary == nullptr);
  }
}

// sinusoidal: the tokens' gradient flows through the sum with the fixed embeddings
static testing::GradCase gradcheck_sinusoidal() {
  PositionOptions o;
  o.scheme = "sinusoidal";
  o.d_model = 4;
  const auto s = make(o);
  s->to(DType::f64);
  Generator gen(26);
  return {"sinusoidal embeddings", OpKind::Add, {testing::input(gen, {5, 4})},
          [s](const std::vector<Tensor>& in) { return tanh(add(in[0], s->embed(at(5, 3)))); }};
}

// alibi: the scores' gradient flows through the fixed bias
static testing::GradCase gradcheck_alibi() {
  PositionOptions o;
  o.scheme = "alibi";
  o.heads = 3;
  const auto s = make(o);
  s->to(DType::f64);
  Generator gen(27);
  return {"alibi bias", OpKind::Add, {testing::input(gen, {3, 4, 6})},
          [s](const std::vector<Tensor>& in) { return softmax(add(in[0], s->bias(line(4, 6, 2))), -1); }};
}

// none: a language model without positions, through the fused attention
static testing::GradCase gradcheck_none() {
  nn::TransformerOptions o;
  o.vocab = 5;
  o.d_model = 4;
  o.heads = 2;
  o.layers = 1;
  o.d_ff = 4;
  o.position.scheme = "none";
  Generator gen(28);
  const auto lm = std::make_shared<nn::LanguageModel>(o, gen);
  lm->to(DType::f64);
  const Tensor tokens = randint({1, 4}, 5, gen), targets = randint({1, 4}, 5, gen);
  return {"language model without positions", OpKind::FusedAttention, {lm->blocks->at<nn::TransformerBlock>(0).attn->qkv->weight},
          [lm, tokens, targets](const std::vector<Tensor>&) { return lm->loss(tokens, targets); }};
}

TEST_CASE("absolute schemes: learned and sinusoidal offsets are slices") {
  PositionOptions o;
  o.d_model = 6;
  for (const char* name : {"sinusoidal", "learned"}) {
    INFO("scheme " << name);
    o.scheme = name;
    o.max_positions = 20;
    const auto s = make(o, 9);
    const Tensor full = s->embed(at(20, 0));  // (20, 6)
    CHECK(full.shape() == Shape{20, 6});
    check_equal(s->embed(at(1, 19)), slice(full, 0, 19, 20));
    check_equal(s->embed(at(5, 7)), slice(full, 0, 7, 12));
    s->to(DType::f64);
    CHECK(s->embed(at(3, 0)).dtype() == DType::f64);
  }
  check_near(make(o)->embed(at(20, 0)), make(o)->embed(at(20, 0)), 0.0);  // same seed, same table
  o.scheme = "sinusoidal";
  check_near(make(o)->embed(at(4, 2)), nn::sinusoidal_table(4, 6, 2), 0.0);
}

TEST_CASE("schemes follow Module::to: outputs in the dtype of their own parameters and buffers") {
  for (const std::string& name : testing::schemes_of_kind(PositionKind::additive_bias)) {
    INFO("scheme " << name);
    PositionOptions o;
    o.scheme = name;
    o.heads = 2;
    o.train_length = 4;  // fire's L0
    const auto s = make(o);
    const Tensor b32 = s->bias(line(4, 5, 1));  // fills the cache in float32
    CHECK(b32.dtype() == DType::f32);
    s->to(DType::f64);
    const Tensor b64 = s->bias(line(4, 5, 1));  // same key, new dtype: the cache must not hand back float32
    CHECK(b64.dtype() == DType::f64);
    check_near(b64, b32, 1e-6);
  }
}

// ---------------------------------------------------------------- float64 gradient checks

// gradcheck: t5 table shared by two layers
static testing::GradCase gradcheck_t5() {
  PositionOptions o;
  o.scheme = "t5";
  o.heads = 2;
  o.causal = false;
  o.num_buckets = 8;
  o.max_distance = 10;
  const auto s = make(o, 1);
  s->to(DType::f64);
  Generator gen(21);
  const Tensor s1 = testing::input(gen, {2, 5, 5}).detach(), s2 = testing::input(gen, {2, 5, 5}).detach();
  return {"t5 shared table", OpKind::IndexSelect, {s->named_parameters()[0].second},
          [s, s1, s2](const std::vector<Tensor>&) {
            // Layer 1 and layer 2 each add the bias to their scores (T5 shares layer 0's).
            const Tensor h1 = softmax(add(s1, s->bias(line(5, 5, 0))), -1);
            return softmax(add(mul(h1, s2), s->bias(line(5, 5, 0))), -1);
          }};
}

// gradcheck: shaw table
static testing::GradCase gradcheck_shaw() {
  PositionOptions o;
  o.scheme = "shaw";
  o.heads = 2;
  o.max_relative_position = 2;
  const auto s = make(o, 2);
  s->to(DType::f64);
  Generator gen(22);
  const Tensor scores = testing::input(gen, {2, 4, 6}).detach();
  return {"shaw table", OpKind::IndexSelect, {s->named_parameters()[0].second},
          [s, scores](const std::vector<Tensor>&) { return softmax(add(scores, s->bias(line(4, 6, 1))), -1); }};
}

// gradcheck: learnable log_decay lambda
static testing::GradCase gradcheck_log_decay() {
  PositionOptions o;
  o.scheme = "log_decay";
  o.heads = 3;
  o.learnable_lambda = true;
  o.lambda = 0.4;
  const auto s = make(o);
  s->to(DType::f64);
  Generator gen(23);
  const Tensor scores = testing::input(gen, {3, 5, 5}).detach();
  return {"log_decay lambda", OpKind::Mul, {s->named_parameters()[0].second},
          [s, scores](const std::vector<Tensor>&) { return softmax(add(scores, s->bias(line(5, 5, 0))), -1); }};
}

TEST_CASE("log_decay: a learnable lambda's gradient is -sum over (i, j) of log(1 + |i - j|) times the bias's") {
  PositionOptions o;
  o.scheme = "log_decay";
  o.heads = 3;
  o.learnable_lambda = true;
  const auto s = make(o);
  s->to(DType::f64);
  const Tensor lambda = s->named_parameters()[0].second;
  backward(sum(s->bias(line(3, 3, 0))));
  const double want = -(4 * std::log(2.0) + 2 * std::log(3.0));
  for (int64_t h = 0; h < 3; ++h) CHECK(lambda.grad().at({h}) == doctest::Approx(want).epsilon(1e-12));
}

// gradcheck: learned absolute table
static testing::GradCase gradcheck_learned() {
  PositionOptions o;
  o.scheme = "learned";
  o.d_model = 3;
  o.max_positions = 8;
  const auto s = make(o, 4);
  s->to(DType::f64);
  Generator gen(24);
  const Tensor tokens = testing::input(gen, {5, 3}).detach();
  return {"learned table", OpKind::IndexSelect, {s->named_parameters()[0].second},
          [s, tokens](const std::vector<Tensor>&) { return tanh(add(tokens, s->embed(at(5, 2)))); }};
}

// gradcheck: rope with respect to x
static testing::GradCase gradcheck_rope() {
  PositionOptions o;
  o.scheme = "rope";
  o.head_dim = 6;
  o.dtype = DType::f64;
  const auto s = make(o);
  // With the scalings that change the rotation at these positions (L0 2, factor 3): yarn's attention factor, and
  // dynamic's frequencies for the total length 7.
  o.train_length = 2;
  o.rope_factor = 3;
  o.rope_scaling = nn::RopeScaling::yarn;
  const auto yarn = make(o);
  o.rope_scaling = nn::RopeScaling::dynamic;
  const auto dynamic = make(o);
  Generator gen(25);
  return {"rope rotate (none, yarn, dynamic)", OpKind::Concat, {testing::input(gen, {2, 2, 3, 6})},
          [s, yarn, dynamic](const std::vector<Tensor>& in) {
            return concat({s->rotate(in[0], 4), yarn->rotate(in[0], 4), dynamic->rotate(in[0], 4)}, -1);
          }};
}

// ---------------------------------------------------------------- errors

TEST_CASE("position errors name the option, its value and what was expected") {
  PositionOptions o;
  o.scheme = "t5";
  o.causal = false;
  o.num_buckets = 31;
  std::string e = error_of([&] { make(o); });
  CHECK(contains(e, "num_buckets 31"));
  CHECK(contains(e, "even"));
  CHECK(contains(error_of([] { nn::t5_bucket(1, true, 7, 128); }), "num_buckets 7"));
  o.num_buckets = 3;
  o.causal = true;
  CHECK(error_of([&] { make(o); }).empty());  // causal buckets need not be even
  o.num_buckets = 1;
  CHECK(contains(error_of([&] { make(o); }), "num_buckets 1"));

  o.causal = false;
  o.num_buckets = 32;
  o.max_distance = 6;
  CHECK(contains(error_of([&] { make(o); }), "max_distance 6 must be above max_exact 8 (num_buckets/4)"));
  CHECK(contains(error_of([] { nn::t5_buckets(2, 2, 0, false, 32, 16); }),
                 "max_distance 16 must be above max_exact 16 (num_buckets/2)"));

  o = PositionOptions{};
  o.scheme = "learned";
  o.d_model = 4;
  o.max_positions = 512;
  const auto learned = make(o);
  e = error_of([&] { learned->embed(at(701, 0)); });
  CHECK(contains(e, "learned: position 700 is beyond the table of 512 positions (max_positions)"));
  CHECK(contains(e, "cannot extrapolate"));
  CHECK(contains(error_of([&] { learned->embed(at(1, 512)); }), "position 512"));
  CHECK(error_of([&] { learned->embed(at(1, 511)); }).empty());

  o.scheme = "t6";
  e = error_of([&] { make(o); });
  CHECK(contains(e, "unknown scheme 't6'"));
  for (const std::string& n : nn::scheme_names(1)) CHECK(contains(e, n));

  o = PositionOptions{};
  const auto t5 = make(o);
  CHECK(contains(error_of([&] { t5->bias(line(0, 4, 0)); }), "q_len 0"));
  CHECK(contains(error_of([&] { t5->bias(line(4, -1, 0)); }), "k_len -1"));
  CHECK(contains(error_of([&] { t5->index(line(4, 4, -2)); }), "q_offset -2"));
  CHECK(contains(error_of([] { nn::t5_buckets(0, 4, 0, true, 32, 128); }), "q_len 0"));
  CHECK(contains(error_of([] { nn::shaw_index(3, 0, 0, 2); }), "k_len 0"));
  CHECK(contains(error_of([] { nn::relative_index_1d(0); }), "n 0"));
  CHECK(contains(error_of([&] { learned->embed(at(0, 0)); }), "q_len 0"));
  CHECK(contains(error_of([] { nn::sinusoidal_table(-1, 4); }), "length -1"));
  o.scheme = "alibi";
  CHECK(contains(error_of([&] { make(o)->bias(line(2, 0, 0)); }), "k_len 0"));

  o = PositionOptions{};
  o.heads = 0;
  CHECK(contains(error_of([&] { make(o); }), "heads 0"));
  o.heads = 1;
  o.scheme = "shaw";
  o.max_relative_position = 0;
  CHECK(contains(error_of([&] { make(o); }), "max_relative_position 0"));
  o.scheme = "rope";
  o.head_dim = 7;
  CHECK(contains(error_of([&] { make(o); }), "head_dim 7"));
  o.head_dim = 8;
  const auto rope = make(o);
  CHECK(contains(error_of([&] { rope->rotate(Tensor::zeros({1, 2, 3, 6}), 0); }), "head_dim 8"));
  CHECK(contains(error_of([&] { rope->rotate(Tensor::zeros({1, 2, 3, 8}), -1); }), "offset -1"));
  o.scheme = "sinusoidal";
  o.d_model = 5;
  CHECK(contains(error_of([&] { make(o); }), "d_model 5"));
  o.scheme = "learned";
  o.d_model = 4;
  o.max_positions = 0;
  CHECK(contains(error_of([&] { make(o); }), "max_positions 0"));
  CHECK(contains(error_of([] { nn::alibi_slopes(0); }), "heads 0"));
}

RPB_SCHEME_CASE(learned, golden_learned, gradcheck_learned);
RPB_SCHEME_CASE(sinusoidal, golden_sinusoidal, gradcheck_sinusoidal);
RPB_SCHEME_CASE(rope, golden_rope, gradcheck_rope);
RPB_SCHEME_CASE(t5, golden_t5, gradcheck_t5);
RPB_SCHEME_CASE(shaw, golden_shaw, gradcheck_shaw);
RPB_SCHEME_CASE(log_decay, golden_log_decay, gradcheck_log_decay);
RPB_SCHEME_CASE(alibi, golden_alibi, gradcheck_alibi);
RPB_SCHEME_CASE(none, golden_none, gradcheck_none);
