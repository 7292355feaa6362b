// Attention diagnostics (nn/attention_stats.h): mean attention distance and entropy per head, against a closed form
// and against probabilities computed explicitly here, on the fused and the reference paths, on a line and a grid.
#include <doctest/doctest.h>

#include <cmath>

#include "core/core.h"
#include "nn/attention.h"
#include "nn/attention_stats.h"
#include "nn/grid_model.h"
#include "nn/transformer.h"
#include "test_util.h"

using namespace rpb;
using namespace rpb::nn;
using rpb::testing::contains;
using rpb::testing::error_of;

namespace {

double max_abs_diff(const Tensor& a, const Tensor& b) {
  REQUIRE(a.shape() == b.shape());
  const std::vector<double> x = a.to_vector(), y = b.to_vector();
  double worst = 0;
  for (std::size_t i = 0; i < x.size(); ++i) worst = std::max(worst, std::abs(x[i] - y[i]));
  return worst;
}

struct HeadMeans {
  std::vector<double> distance, entropy;  // (H)
};

// The per-head means of probs (B, H, Tq, Tk) computed directly: sum_j p dist and -sum_j p log p per query.
// `width` > 0: queries and keys are the cells of a grid of that width.
HeadMeans explicit_stats(const Tensor& probs, int64_t width, int64_t q_offset = 0) {
  const int64_t B = probs.size(0), H = probs.size(1), Tq = probs.size(2), Tk = probs.size(3);
  const std::vector<double> p = probs.to_vector();
  HeadMeans m{std::vector<double>(H, 0.0), std::vector<double>(H, 0.0)};
  for (int64_t b = 0; b < B; ++b)
    for (int64_t h = 0; h < H; ++h)
      for (int64_t i = 0; i < Tq; ++i)
        for (int64_t j = 0; j < Tk; ++j) {
          const double pij = p[((b * H + h) * Tq + i) * Tk + j];
          const double dist = width == 0 ? std::abs(double(q_offset + i - j))
                                         : std::hypot(double(i / width - j / width), double(i % width - j % width));
          m.distance[h] += pij * dist / double(B * Tq);
          if (pij > 0) m.entropy[h] -= pij * std::log(pij) / double(B * Tq);
        }
  return m;
}

// softmax(scale q k^T + bias, causal mask), (B, H, Tq, Tk), materialized.
Tensor explicit_probs(const Tensor& q, const Tensor& k, double scale, const Tensor& bias, bool causal) {
  Tensor scores = mul_scalar(matmul(q, k, false, true), scale);
  if (bias.defined()) scores = add(scores, bias);
  if (causal) scores = masked_fill(scores, causal_mask(q.size(2), k.size(2), 0), -INFINITY);
  return softmax(scores, -1);
}

// The q and k a layer's projection makes of h (B, T, d): two (B, H, T, dh).
std::pair<Tensor, Tensor> project_qk(const MultiHeadAttention& attn, const Tensor& h) {
  const int64_t B = h.size(0), T = h.size(1), H = attn.heads(), dh = attn.head_dim();
  const Tensor qkv5 = permute(reshape(attn.qkv->forward(h), {B, T, 3, H, dh}), {2, 0, 3, 1, 4});
  auto part = [&](int i) { return reshape(slice(qkv5, 0, i, i + 1), {B, H, T, dh}); };
  return {part(0), part(1)};
}

void check_close(const AttentionStats& s, const HeadMeans& m, double tol) {
  REQUIRE(s.heads() == static_cast<int64_t>(m.distance.size()));
  for (int64_t h = 0; h < s.heads(); ++h) {
    CAPTURE(h);
    CHECK(s.mean_distance(h) == doctest::Approx(m.distance[h]).epsilon(tol));
    CHECK(s.entropy(h) == doctest::Approx(m.entropy[h]).epsilon(tol));
  }
}

void check_same(const std::vector<AttentionStats>& a, const std::vector<AttentionStats>& b, double tol) {
  REQUIRE(a.size() == b.size());
  for (std::size_t l = 0; l < a.size(); ++l) {
    HeadMeans m;
    for (int64_t h = 0; h < b[l].heads(); ++h) m.distance.push_back(b[l].mean_distance(h)), m.entropy.push_back(b[l].entropy(h));
    CAPTURE(l);
    check_close(a[l], m, tol);
  }
}

TransformerOptions small_options(const char* scheme, bool fused, bool causal) {
  TransformerOptions o;
  o.vocab = 7;
  o.d_model = 16;
  o.heads = 2;
  o.layers = 2;
  o.d_ff = 32;
  o.causal = causal;
  o.fused_attention = fused;
  o.position.scheme = scheme;
  o.position.num_buckets = 8;
  o.position.max_distance = 16;
  o.position.max_relative_position = 3;
  return o;
}

}  // namespace

TEST_CASE("attention stats: uniform attention over keys 0..i has mean distance i/2 and entropy log(i + 1)") {
  const int64_t H = 2, T = 6, dh = 4;
  for (int64_t i = 0; i < T; ++i) {  // one query at position i over keys 0..i: q = k = 0, no bias
    AttentionStats s(H);
    accumulate_attention_stats({Tensor::zeros({1, H, 1, dh}), Tensor::zeros({1, H, i + 1, dh}), 1.0, {}, {}, true, i, {}},
                               s);
    CAPTURE(i);
    CHECK(s.queries(1) == 1);
    CHECK(s.mean_distance(1) == doctest::Approx(i / 2.0));
    CHECK(s.entropy(1) == doctest::Approx(std::log(i + 1.0)));
  }
  // A causal layer whose projection is zero: q = k = 0 for every query, so query i is uniform over 0..i.
  Generator gen(1), drop(2);
  AttentionOptions o;
  o.d_model = H * dh;
  o.heads = H;
  MultiHeadAttention attn(o, gen, drop);
  std::fill_n(attn.qkv->weight.mutable_data<float>(), attn.qkv->weight.numel(), 0.0f);
  std::fill_n(attn.qkv->bias.mutable_data<float>(), attn.qkv->bias.numel(), 0.0f);
  double distance = 0, entropy = 0;
  for (int64_t i = 0; i < T; ++i) distance += i / 2.0 / T, entropy += std::log(i + 1.0) / T;
  NoGradGuard no_grad;
  {
    AttentionStatsRecorder recorder({&attn});
    attn.forward(randn({3, T, H * dh}, gen), {}, Tensor(), nullptr);
    CHECK(recorder.layers()[0].queries(0) == 3 * T);
    CHECK(recorder.layers()[0].mean_distance(0) == doctest::Approx(distance));
    CHECK(recorder.layers()[0].entropy(1) == doctest::Approx(entropy));
    CHECK(attn.stats_sink() == &recorder.layers()[0]);
    CHECK(contains(error_of([&] { AttentionStatsRecorder again({&attn}); }), "already recorded"));
  }
  CHECK(attn.stats_sink() == nullptr);  // the recorder detached
}

TEST_CASE("attention stats: a language model's equal explicit probabilities, fused and reference alike") {
  for (const char* scheme : {"t5", "alibi", "rope", "sinusoidal"}) {
    CAPTURE(scheme);
    Generator g1(5), g2(5), tg(9);
    LanguageModel fused(small_options(scheme, true, true), g1), ref(small_options(scheme, false, true), g2);
    fused.eval(), ref.eval();
    const Tensor tokens = randint({2, 12}, 7, tg);
    NoGradGuard no_grad;
    const Tensor plain = fused.forward(tokens);
    std::vector<AttentionStats> a, b;
    {
      AttentionStatsRecorder rf(fused.attention_layers()), rr(ref.attention_layers());
      CHECK(max_abs_diff(fused.forward(tokens), plain) < 1e-5);  // recording leaves the output as it was
      ref.forward(tokens);
      a = rf.layers(), b = rr.layers();
    }
    CHECK(a.size() == 2);
    CHECK(a[1].queries(0) == 24);
    check_same(a, b, 1e-5);
    CHECK(max_abs_diff(fused.forward(tokens), plain) == 0);  // and detached, the forward is today's

    // Layer 0 from its input, with the probabilities written out.
    const MultiHeadAttention& attn = *fused.attention_layers()[0];
    const Positions p = Positions::line(12, 12, 0);
    Tensor x = fused.tok->forward(tokens);
    if (std::string(scheme) == "sinusoidal") x = add(x, fused.position()->embed(p));
    auto [q, k] = project_qk(attn, fused.blocks->at<TransformerBlock>(0).ln1->forward(x));
    Tensor bias;
    if (std::string(scheme) == "rope") q = fused.position()->rotate(q, 0), k = fused.position()->rotate(k, 0);
    if (std::string(scheme) == "t5" || std::string(scheme) == "alibi") bias = fused.position()->bias(p);
    check_close(a[0], explicit_stats(explicit_probs(q, k, attn.scale(), bias, true), 0), 1e-5);
  }
}

TEST_CASE("attention stats: a grid model's global attention, Euclidean distance between cells, fused and reference") {
  for (const char* scheme : {"alibi2d", "clipped2d", "none"}) {
    CAPTURE(scheme);
    Generator g1(3), g2(3), tg(4);
    GridModel fused(small_options(scheme, true, false), WindowOptions{}, g1);
    GridModel ref(small_options(scheme, false, false), WindowOptions{}, g2);
    fused.eval(), ref.eval();
    const Tensor tokens = randint({2, 3, 5}, 7, tg);  // (B, H, W): 15 cells, 5 per row
    NoGradGuard no_grad;
    std::vector<AttentionStats> a, b;
    {
      AttentionStatsRecorder rf(fused.attention_layers(), 5), rr(ref.attention_layers(), 5);
      fused.forward(tokens);
      ref.forward(tokens);
      a = rf.layers(), b = rr.layers();
    }
    check_same(a, b, 1e-5);
    if (std::string(scheme) != "alibi2d") continue;
    // Layer 0 written out: alibi2d adds -slope * the Euclidean distance, no embedding.
    Generator none(0);
    const auto pos = make_position_scheme(PositionOptions::for_model(small_options(scheme, true, false), 2), none);
    const Tensor h = reshape(fused.blocks->at<GridBlock>(0).ln1->forward(fused.tok->forward(tokens)), {2, 15, 16});
    const auto [q, k] = project_qk(*fused.attention_layers()[0], h);
    const Tensor probs = explicit_probs(q, k, fused.attention_layers()[0]->scale(), pos->bias(Positions::grid(3, 5)), false);
    check_close(a[0], explicit_stats(probs, 5), 1e-5);
    CHECK(a[0].mean_distance(0) > 1.0);  // bidirectional over 15 cells: not a line's distance of a causal model
  }
  Generator g(0);
  TransformerOptions swin = small_options("swin", true, false);
  CHECK(GridModel(swin, WindowOptions{}, g).attention_layers().empty());  // window attention records nothing
}

TEST_CASE("attention stats: errors name the op and the shapes") {
  AttentionStats s(2);
  CHECK(contains(error_of([&] {
          accumulate_attention_stats({Tensor::zeros({1, 3, 4, 2}), Tensor::zeros({1, 3, 4, 2}), 1.0, {}, {}, false, 0, {}}, s);
        }),
        "attention stats: q [1, 3, 4, 2] has not the stats' 2 heads"));
  AttentionStats grid(2, 3);
  CHECK(contains(error_of([&] {
          accumulate_attention_stats({Tensor::zeros({1, 2, 4, 2}), Tensor::zeros({1, 2, 4, 2}), 1.0, {}, {}, false, 0, {}},
                                     grid);
        }),
        "are not the cells of a grid of width 3"));
  CHECK(contains(error_of([&] { s.add(2, 0, 0); }), "head 2 is not in [0, 2)"));
  CHECK(s.mean_distance(0) == 0);  // no query counted
}
