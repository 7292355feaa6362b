// The fused attention kernel (core/ops/attention.cpp) against the reference path
// (nn::scaled_dot_product_attention over the materialized bias): values, gradients,
// determinism and memory.
#include <doctest/doctest.h>

#include <cmath>
#include <cstring>

#include "core/core.h"
#include "core/parallel.h"
#include "nn/attention.h"
#include "nn/grid_model.h"
#include "nn/window_attention.h"
#include "nn/transformer.h"
#include "path_models.h"
#include "scheme_cases.h"
#include "tensor_checks.h"
#include "test_util.h"

using namespace rpb;
using namespace rpb::nn;
using rpb::testing::contains;
using rpb::testing::error_of;
using rpb::testing::scaled_error;

namespace {

bool bit_identical(const Tensor& a, const Tensor& b) {
  return a.shape() == b.shape() && a.dtype() == b.dtype() &&
         std::memcmp(a.data<float>(), b.data<float>(), a.numel() * dtype_size(a.dtype())) == 0;
}

Tensor leaf(Tensor t) { return t.requires_grad_(); }

struct AttentionGrads {
  Tensor out, dq, dk, dv, drel;
};

// Forward and backward of fused_attention with upstream gradient `g`.
AttentionGrads fused_run(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& rel, const Tensor& padding,
                         const Tensor& g, const AttentionSpec& spec) {
  for (const Tensor* t : {&q, &k, &v, &rel})
    if (t->defined()) t->zero_grad();
  const Tensor out = fused_attention(q, k, v, rel, padding, Tensor(), spec);
  backward(sum(mul(out, g)));
  return {out.detach(), q.grad(), k.grad(), v.grad(), rel.defined() ? rel.grad() : Tensor()};
}

TransformerOptions model_options(const std::string& scheme, bool causal, bool fused) {
  return testing::path_model_options(scheme, causal, fused);
}

// A forward value and the gradient of every named parameter, from one of the two paths.
using PathRun = std::pair<Tensor, NamedTensors>;

PathRun run_of(const Tensor& value, const Module& m) {
  NamedTensors grads;
  for (const auto& [name, p] : m.named_parameters()) grads.emplace_back(name, p.grad());
  return {value.detach(), grads};
}

// The fused run (first) agrees with the reference run to 1e-5 of the reference's scale, every gradient included.
void check_paths_agree(const PathRun& fused, const PathRun& reference) {
  CHECK(scaled_error(fused.first, reference.first) <= 1e-5);
  REQUIRE(fused.second.size() == reference.second.size());
  for (std::size_t i = 0; i < fused.second.size(); ++i) {
    INFO("parameter: ", fused.second[i].first);
    REQUIRE(fused.second[i].second.defined());
    CHECK(scaled_error(fused.second[i].second, reference.second[i].second) <= 1e-5);
  }
}

}  // namespace

TEST_CASE("fused attention equals the reference path at the op level, values and gradients (float32)") {
  // 200 queries over 230 keys: several 64 x 128 tiles, partial edge tiles, a cache offset and padding.
  Generator gen(11);
  const int64_t B = 2, H = 3, Tq = 200, Tk = 230, dh = 16;
  const Tensor q = leaf(randn({B, H, Tq, dh}, gen)), k = leaf(randn({B, H, Tk, dh}, gen));
  const Tensor v = leaf(randn({B, H, Tk, dh}, gen)), rel = leaf(randn({H, Tq + Tk - 1}, gen));
  const Tensor g = randn({B, H, Tq, dh}, gen);
  std::vector<int64_t> pad(B * Tk, 0);
  for (int64_t j = 180; j < Tk; ++j) pad[Tk + j] = 1;  // batch entry 1 pads its last 50 keys
  const Tensor padding = Tensor::indices({B, Tk}, pad);
  for (const bool causal : {true, false}) {
    INFO("causal: ", causal);
    const AttentionSpec spec{0.25, causal, Tk - Tq};
    const AttentionGrads f = fused_run(q, k, v, rel, padding, g, spec);

    for (const Tensor* t : {&q, &k, &v, &rel}) t->zero_grad();
    Tensor mask = reshape(padding, {B, 1, 1, Tk}).to(DType::f32);
    if (causal) mask = add(mask, causal_mask(Tq, Tk, Tk - Tq).to(DType::f32));  // non-zero where either forbids
    const Tensor ref = scaled_dot_product_attention(q, k, v, expand_relative_bias(rel, Tq, Tk), mask, 0.25);
    backward(sum(mul(ref, g)));

    CHECK(scaled_error(f.out, ref) <= 1e-5);
    CHECK(scaled_error(f.dq, q.grad()) <= 1e-5);
    CHECK(scaled_error(f.dk, k.grad()) <= 1e-5);
    CHECK(scaled_error(f.dv, v.grad()) <= 1e-5);
    CHECK(scaled_error(f.drel, rel.grad()) <= 1e-5);
  }
}

TEST_CASE("fused attention on a grid with a window mask equals the reference path (float32)") {
  Generator gen(12);
  const int64_t B = 4, H = 2, gh = 6, gw = 8, T = gh * gw, dh = 8, R = (2 * gh - 1) * (2 * gw - 1);
  const Tensor q = leaf(randn({B, H, T, dh}, gen)), k = leaf(randn({B, H, T, dh}, gen));
  const Tensor v = leaf(randn({B, H, T, dh}, gen)), rel = leaf(randn({H, R}, gen));
  const Tensor g = randn({B, H, T, dh}, gen);
  // Two windows: the second has Swin-style -100 entries between the left and right halves.
  Tensor window = Tensor::zeros({2, T, T});
  float* w = window.mutable_data<float>();
  for (int64_t i = 0; i < T; ++i)
    for (int64_t j = 0; j < T; ++j) w[T * T + i * T + j] = (i % gw < 4) != (j % gw < 4) ? -100.0f : 0.0f;
  const Tensor out = fused_attention(q, k, v, RelativeBias(rel, {gh, gw}), Tensor(), window, {0.3, false, 0});
  backward(sum(mul(out, g)));
  const Tensor dq = q.grad(), drel = rel.grad();
  for (const Tensor* t : {&q, &rel}) t->zero_grad();

  // The reference reads the (H, R) vector through the per-pair index (dy + gh - 1) * (2 gw - 1) + dx + gw - 1.
  std::vector<int64_t> idx(T * T);
  for (int64_t i = 0; i < T; ++i)
    for (int64_t j = 0; j < T; ++j)
      idx[i * T + j] = (j / gw - i / gw + gh - 1) * (2 * gw - 1) + (j % gw - i % gw + gw - 1);
  const Tensor full = permute(index_select(transpose(rel, 0, 1), Tensor::indices({T, T}, idx)), {2, 0, 1});
  // (B, H, T, T) bias: window b % 2 for batch entry b.
  const Tensor per_batch = concat({window, window}, 0);
  const Tensor bias = add(reshape(full, {1, H, T, T}), reshape(per_batch, {B, 1, T, T}));
  const Tensor ref = scaled_dot_product_attention(q, k, v, bias, Tensor(), 0.3);
  backward(sum(mul(ref, g)));
  CHECK(scaled_error(out, ref) <= 1e-5);
  CHECK(scaled_error(dq, q.grad()) <= 1e-5);
  CHECK(scaled_error(drel, rel.grad()) <= 1e-5);
}

TEST_CASE("fused and reference language models agree for every scheme, loss and every parameter gradient") {
  for (const std::string& scheme : scheme_names(1)) {
    for (const bool causal : {true, false}) {
      if (!causal && scheme == "learned") continue;  // covered causally; the table size is what differs
      if (!causal && find_scheme(scheme, 1)->causal_only) continue;  // no bidirectional form (fire)
      INFO("scheme: ", scheme, ", causal: ", causal);
      Generator gen_a(21), gen_b(21), data(22);
      const int64_t T = 150;
      const Tensor tokens = randint({2, T}, 11, data), targets = randint({2, T}, 11, data);
      std::vector<PathRun> runs;
      for (const bool fused : {true, false}) {
        Generator& gen = fused ? gen_a : gen_b;
        std::shared_ptr<TransformerStack> model;
        Tensor loss;
        if (causal) {
          auto lm = std::make_shared<LanguageModel>(model_options(scheme, true, fused), gen);
          loss = lm->loss(tokens, targets);
          model = lm;
        } else {
          auto enc = std::make_shared<Encoder>(model_options(scheme, false, fused), gen);
          const Tensor pad = Tensor::indices({2, T}, std::vector<int64_t>(2 * T, 0));
          const Tensor h = enc->forward(tokens, pad);
          loss = mean(mul(h, h));
          model = enc;
        }
        CHECK(model->blocks->at<TransformerBlock>(0).attn->uses_fused() == fused);
        backward(loss);
        runs.push_back(run_of(loss, *model));
      }
      check_paths_agree(runs[0], runs[1]);
    }
  }
}

TEST_CASE("relative_bias expands to exactly bias() for every additive scheme") {
  for (const std::string& scheme : testing::schemes_of_kind(nn::PositionKind::additive_bias)) {
    for (const bool causal : {true, false}) {
      INFO("scheme: ", scheme, ", causal: ", causal);
      Generator gen(31);
      PositionOptions o;
      o.scheme = scheme;
      o.heads = 3;
      o.causal = causal;
      o.train_length = 6;  // fire's L0
      o.num_buckets = 16;
      o.max_distance = 40;
      o.max_relative_position = 5;
      o.learnable_lambda = true;
      const auto pos = make_position_scheme(o, gen);
      for (const auto& [q_len, k_len, q_offset] : {std::array<int64_t, 3>{70, 70, 0}, {1, 90, 89}, {5, 30, 25}}) {
        const RelativeBias rel = pos->relative_bias(Positions::line(q_len, k_len, q_offset));
        if (rel.tiles) continue;  // computed per tile (fire past its threshold: tests/test_fire.cpp)
        REQUIRE(rel.table.shape() == Shape({3, q_len + k_len - 1}));
        CHECK(rel.grid.empty());
        CHECK(bit_identical(expand_relative_bias(rel.table, q_len, k_len),
                            pos->bias(Positions::line(q_len, k_len, q_offset))));
      }
    }
  }
  // Schemes without an additive bias have no relative form.
  Generator gen(32);
  PositionOptions o;
  o.scheme = "rope";
  o.heads = 2;
  o.head_dim = 4;
  CHECK_FALSE(make_position_scheme(o, gen)->relative_bias(Positions::line(4, 4, 0)).defined());
}

TEST_CASE("fused attention is bit-identical run to run and for 1 or 2 threads, gradients included") {
  Generator gen(41);
  const int64_t B = 3, H = 4, T = 300, dh = 32;
  const Tensor q = leaf(randn({B, H, T, dh}, gen)), k = leaf(randn({B, H, T, dh}, gen));
  const Tensor v = leaf(randn({B, H, T, dh}, gen)), rel = leaf(randn({H, 2 * T - 1}, gen));
  const Tensor g = randn({B, H, T, dh}, gen);
  const int saved = num_threads();
  std::vector<AttentionGrads> runs;
  for (const int threads : {2, 2, 1, 3}) {
    set_num_threads(threads);
    runs.push_back(fused_run(q, k, v, rel, Tensor(), g, {0.125, true, 0}));
  }
  set_num_threads(saved);
  for (std::size_t r = 1; r < runs.size(); ++r) {
    INFO("run ", r);
    CHECK(bit_identical(runs[r].out, runs[0].out));
    CHECK(bit_identical(runs[r].dq, runs[0].dq));
    CHECK(bit_identical(runs[r].dk, runs[0].dk));
    CHECK(bit_identical(runs[r].dv, runs[0].dv));
    CHECK(bit_identical(runs[r].drel, runs[0].drel));
  }
}

TEST_CASE("fused attention keeps O(L d) memory: no L x L tensor in forward or backward") {
  Generator gen(51);
  const int64_t H = 2, L = 4096, dh = 16;
  const Tensor q = leaf(randn({1, H, L, dh}, gen)), k = leaf(randn({1, H, L, dh}, gen));
  const Tensor v = leaf(randn({1, H, L, dh}, gen)), rel = leaf(randn({H, 2 * L - 1}, gen));
  const Tensor g = randn({1, H, L, dh}, gen);
  const std::size_t one_score_matrix = H * L * L * sizeof(float);  // 128 MiB; the reference path holds several
  reset_peak_memory();
  const std::size_t before = live_memory_bytes();
  const Tensor out = fused_attention(q, k, v, rel, Tensor(), Tensor(), {0.25, true, 0});
  backward(sum(mul(out, g)));
  const std::size_t used = peak_memory_bytes() - before;
  INFO("peak bytes above the inputs: ", used);
  const std::size_t one_activation = H * L * dh * sizeof(float);  // 512 KiB
  CHECK(used >= 4 * one_activation);  // the output and the q, k, v gradients are counted
  CHECK(used <= 8 * one_activation);  // and little else: a few (L, dh) tensors, the (L) log-sum-exp
  CHECK(used < one_score_matrix / 32);
}

TEST_CASE("fused attention stays finite on huge scores and masks whole rows to zeros") {
  Generator gen(61);
  for (const double magnitude : {1e4, 88.7, 3e38}) {
    INFO("score magnitude ", magnitude);
    const Tensor q = leaf(randn({1, 1, 4, 2}, gen)), k = leaf(randn({1, 1, 4, 2}, gen));
    const Tensor v = leaf(randn({1, 1, 4, 2}, gen));
    // Scores of +-magnitude from the bias alone: the scaled products vanish beside it.
    const Tensor rel = leaf(Tensor::from_vector<float>(
        {1, 7}, {float(magnitude), -float(magnitude), float(magnitude), 0, -float(magnitude), float(magnitude), 0}));
    const Tensor out = fused_attention(q, k, v, rel, Tensor(), Tensor(), {1e-30, false, 0});
    backward(sum(out));
    for (const Tensor& t : {out, q.grad(), k.grad(), v.grad(), rel.grad()})
      for (const double x : t.to_vector()) CHECK(std::isfinite(x));
  }
  const Tensor q = leaf(randn({1, 1, 3, 2}, gen)), k = leaf(randn({1, 1, 3, 2}, gen));
  const Tensor v = leaf(randn({1, 1, 3, 2}, gen));
  const Tensor out = fused_attention(q, k, v, Tensor(), Tensor::indices({1, 3}, {1, 1, 1}), Tensor(), {1.0, false, 0});
  backward(sum(out));
  for (const Tensor& t : {out, q.grad(), k.grad(), v.grad()})
    for (const double x : t.to_vector()) CHECK(x == 0.0);
}

TEST_CASE("fused attention rejects shapes that do not fit, naming the op and the shapes") {
  Generator gen(71);
  const Tensor q = randn({1, 2, 4, 3}, gen), k = randn({1, 2, 5, 3}, gen);
  CHECK(contains(error_of([&] { fused_attention(q, k, k, randn({2, 7}, gen), Tensor(), Tensor(), {}); }),
                 "fused_attention: rel_bias float32 [2, 7] is not float32 (H, R) = (2, 8)"));
  CHECK(contains(error_of([&] { fused_attention(q, k, randn({1, 2, 5, 4}, gen), Tensor(), Tensor(), Tensor(), {}); }),
                 "fused_attention: q [1, 2, 4, 3], k [1, 2, 5, 3] and v [1, 2, 5, 4] do not fit"));
  CHECK(contains(error_of([&] { fused_attention(q, q, q, RelativeBias(Tensor(), {3}), Tensor(), Tensor(), {}); }),
                 "a bias over the grid [3] needs Tq == Tk == 3 tokens and q_offset 0; got Tq 4, Tk 4"));
  CHECK(contains(error_of([&] { fused_attention(q, q, q, RelativeBias(Tensor(), {2, 3}), Tensor(), Tensor(), {}); }),
                 "bias grid [2, 3] has an extent below 1 or more cells than the 4 queries"));
  CHECK(contains(error_of([&] { fused_attention(q, k, k, Tensor(), Tensor::indices({1, 4}, {0, 0, 0, 0}), Tensor(), {}); }),
                 "key_padding [1, 4] is not (B, Tk) = (1, 5)"));
}

TEST_CASE("fused Swin window attention equals the reference path: shifts, padding, V1 table and V2 bias") {
  for (const WindowBias bias : {WindowBias::table, WindowBias::continuous, WindowBias::none}) {
    for (const int64_t shift : {0, 2}) {
      INFO("bias: ", window_bias_name(bias), ", shift: ", shift);
      std::vector<PathRun> runs;
      Generator data(81);
      const Tensor x = randn({2, 9, 7, 16}, data);  // 9 x 7 pads to 12 x 8 with 4 x 4 windows
      const Tensor g = randn({2, 9, 7, 16}, data);
      for (const bool fused : {true, false}) {
        Generator gen(82);
        WindowAttentionOptions o;
        o.dim = 16;
        o.heads = 2;
        o.window_h = o.window_w = 4;
        o.shift_h = o.shift_w = shift;
        o.bias = bias;
        o.cpb_hidden = 32;
        o.fused = fused;
        WindowAttention attn(o, gen);
        const Tensor y = attn.forward(x);
        backward(sum(mul(y, g)));
        runs.push_back(run_of(y, attn));
      }
      check_paths_agree(runs[0], runs[1]);
    }
  }
}

TEST_CASE("fused and reference grid models agree for every 2-D scheme, loss and every parameter gradient") {
  for (const std::string& scheme : scheme_names(2)) {
    INFO("scheme: ", scheme);
    Generator data(91);
    const Tensor tokens = randint({2, 7, 9}, 5, data), targets = randint({2, 7, 9}, 5, data);
    std::vector<PathRun> runs;
    for (const bool fused : {true, false}) {
      Generator gen(92);
      TransformerOptions o;
      o.vocab = 5;
      o.d_model = 16;
      o.heads = 2;
      o.d_ff = 24;
      o.causal = false;
      o.position.scheme = scheme;
      o.position.max_relative_position = 3;
      o.fused_attention = fused;
      WindowOptions w;
      w.window = 4;
      w.cpb_hidden = 16;
      GridModel model(o, w, gen);
      const Tensor loss = model.loss(tokens, targets);
      backward(loss);
      runs.push_back(run_of(loss, model));
    }
    check_paths_agree(runs[0], runs[1]);
  }
}

TEST_CASE("2-D relative_bias read through the grid index is exactly bias() for alibi2d and clipped2d") {
  for (const std::string name : {"alibi2d", "clipped2d"}) {
    INFO("scheme: ", name);
    Generator gen(93);
    PositionOptions o;
    o.scheme = name;
    o.dims = 2;
    o.heads = 3;
    o.max_relative_position = 2;
    const auto pos = make_position_scheme(o, gen);
    const int64_t H = 4, W = 5, N = H * W;
    const RelativeBias bias = pos->relative_bias(Positions::grid(H, W));
    const Tensor& rel = bias.table;
    REQUIRE(rel.shape() == Shape({3, (2 * H - 1) * (2 * W - 1)}));
    CHECK(bias.grid == std::vector<int64_t>{H, W});
    std::vector<int64_t> idx(N * N);
    for (int64_t i = 0; i < N; ++i)
      for (int64_t j = 0; j < N; ++j) idx[i * N + j] = (j / W - i / W + H - 1) * (2 * W - 1) + (j % W - i % W + W - 1);
    const Tensor full = permute(index_select(transpose(rel, 0, 1), Tensor::indices({N, N}, idx)), {2, 0, 1});
    CHECK(bit_identical(full, pos->bias(Positions::grid(H, W))));
  }
}
