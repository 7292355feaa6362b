// Attention diagnostics (nn/attention_stats.h): mean attention distance and entropy per head, against a closed form
// and against probabilities computed explicitly here, on the fused and the reference paths, on a line and a grid.
#include <doctest/doctest.h>

#include <cmath>

#include "core/core.h"
#include "nn/attention.h"
#include "nn/attention_stats.h"
#include "nn/grid_model.h"
#include "nn/transformer.h"
#include "scheme_cases.h"
#include "test_util.h"
#include "tensor_checks.h"

using namespace rpb;
using rpb::testing::max_abs_diff;
using namespace rpb::nn;
using rpb::testing::contains;
using rpb::testing::error_of;

namespace {

// The inputs of an attention call over q and k with scale 1 and nothing else.
AttentionInputs stats_inputs(const Tensor& q, const Tensor& k) {
  AttentionInputs in;
  in.q = q, in.k = k;
  return in;
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
    AttentionInputs in = stats_inputs(Tensor::zeros({1, H, 1, dh}), Tensor::zeros({1, H, i + 1, dh}));
    in.causal = true, in.q_offset = i;
    accumulate_attention_stats(in, s);
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
  for (const std::string& name : rpb::testing::one_scheme_per_kind(1)) {  // absolute, rotary, additive, none
    const char* scheme = name.c_str();
    const rpb::nn::PositionKind kind = rpb::nn::find_scheme(name, 1)->kind;
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
    const MultiHeadAttention& attn = *fused.blocks->at<TransformerBlock>(0).attn;
    const Positions p = Positions::line(12, 12, 0);
    Tensor x = fused.tok->forward(tokens);
    if (kind == rpb::nn::PositionKind::absolute) x = add(x, fused.position()->embed(p));
    auto [q, k] = project_qk(attn, fused.blocks->at<TransformerBlock>(0).ln1->forward(x));
    Tensor bias;
    if (kind == rpb::nn::PositionKind::rotary) q = fused.position()->rotate(q, 0), k = fused.position()->rotate_key(k, 0);
    if (kind == rpb::nn::PositionKind::additive_bias) bias = fused.position()->bias(p);
    check_close(a[0], explicit_stats(explicit_probs(q, k, attn.scale(), bias, true), 0), 1e-5);
  }
}

TEST_CASE("attention stats: count_only counts the chosen queries alone, as written out, and checks their shape") {
  Generator gen(5), tg(9);
  LanguageModel lm(small_options("t5", true, true), gen);
  lm.eval();
  const Tensor tokens = randint({2, 12}, 7, tg);
  Tensor answer = Tensor::zeros({2, 12}, DType::i64);  // the last three queries of each row, as passkey counts
  for (int64_t b = 0; b < 2; ++b)
    for (int64_t i = 9; i < 12; ++i) answer.mutable_data<int64_t>()[b * 12 + i] = 1;
  NoGradGuard no_grad;
  std::vector<AttentionStats> a;
  {
    AttentionStatsRecorder recorder(lm.attention_layers());
    recorder.count_only(answer);
    lm.forward(tokens);
    a = recorder.layers();
    recorder.count_only(Tensor::zeros({3, 12}, DType::i64));
    const std::string wrong = error_of([&] { lm.forward(tokens); });
    CAPTURE(wrong);
    CHECK(contains(wrong, "the queries counted [3, 12] are not (B, Tq) for q [2, 2, 12, 8]"));
  }
  CHECK(a[0].queries(1) == 6);
  const MultiHeadAttention& attn = *lm.blocks->at<TransformerBlock>(0).attn;
  auto [q, k] = project_qk(attn, lm.blocks->at<TransformerBlock>(0).ln1->forward(lm.tok->forward(tokens)));
  const Tensor probs = explicit_probs(q, k, attn.scale(), lm.position()->bias(Positions::line(12, 12, 0)), true);
  const HeadMeans last = explicit_stats(slice(probs, 2, 9, 12), 0, 9);
  check_close(a[0], last, 1e-5);
  CHECK(std::abs(a[0].mean_distance(0) - explicit_stats(probs, 0).distance[0]) > 1e-3);  // not every query's mean
  AttentionStats none(2);
  CHECK(contains(error_of([&] { none.count_only(Tensor::zeros({2, 12})); }), "are not a (B, Tq) i64 tensor"));
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
    const auto pos = make_position_scheme(position_options_for(small_options(scheme, true, false), 2), none);
    const Tensor h = reshape(fused.blocks->at<GridBlock>(0).ln1->forward(fused.tok->forward(tokens)), {2, 15, 16});
    const MultiHeadAttention& attn = *fused.blocks->at<GridBlock>(0).attn;
    const auto [q, k] = project_qk(attn, h);
    const Tensor probs = explicit_probs(q, k, attn.scale(), pos->bias(Positions::grid(3, 5)), false);
    check_close(a[0], explicit_stats(probs, 5), 1e-5);
    CHECK(a[0].mean_distance(0) > 1.0);  // bidirectional over 15 cells: not a line's distance of a causal model
  }
}

namespace {

// Swin's region of a rolled coordinate r on an axis of extent n with window w and shift s (img_mask's slices
// (0, -w), (-w, -s), (-s, None)); one region without a shift.
int region(int64_t r, int64_t n, int64_t w, int64_t s) {
  if (s == 0) return 0;
  return r < n - w ? 0 : r < n - s ? 1 : 2;
}

// Window attention's diagnostics written out cell by cell on the grid x (B, H, W, C): a real cell (y, x) sits at
// (y - shift, x - shift) mod the padded extents after the roll and attends to the real cells of its window there,
// with the window bias at their rolled offset and -100 between regions; distances between the original cells.
HeadMeans explicit_window_stats(const WindowAttention& wa, const Tensor& x) {
  const int64_t B = x.size(0), H = x.size(1), W = x.size(2), C = x.size(3), nh = wa.heads(), dh = wa.head_dim();
  const WindowGeometry g = wa.geometry(H, W);
  const std::vector<double> qkv = wa.qkv->forward(x).to_vector();  // (B, H, W, 3, heads, dh)
  const Tensor bias_t = wa.relative_position_bias(g.wh, g.ww);       // (heads, N, N) or undefined
  const std::vector<double> bias = bias_t.defined() ? bias_t.to_vector() : std::vector<double>();
  const int64_t n = g.wh * g.ww;
  auto at = [&](int64_t b, int64_t y, int64_t xx, int64_t which, int64_t h, int64_t c) {
    return qkv[static_cast<std::size_t>((((b * H + y) * W + xx) * 3 + which) * C + h * dh + c)];
  };
  HeadMeans m{std::vector<double>(nh, 0.0), std::vector<double>(nh, 0.0)};
  const double count = static_cast<double>(B * H * W);
  for (int64_t b = 0; b < B; ++b)
    for (int64_t h = 0; h < nh; ++h)
      for (int64_t qy = 0; qy < H; ++qy)
        for (int64_t qx = 0; qx < W; ++qx) {
          const int64_t qr = ((qy - g.shift_h) % g.Hp + g.Hp) % g.Hp, qc = ((qx - g.shift_w) % g.Wp + g.Wp) % g.Wp;
          std::vector<double> score, dist;
          for (int64_t ky = 0; ky < H; ++ky)
            for (int64_t kx = 0; kx < W; ++kx) {
              const int64_t kr = ((ky - g.shift_h) % g.Hp + g.Hp) % g.Hp, kc = ((kx - g.shift_w) % g.Wp + g.Wp) % g.Wp;
              if (kr / g.wh != qr / g.wh || kc / g.ww != qc / g.ww) continue;  // another window
              double s = 0;
              for (int64_t c = 0; c < dh; ++c) s += at(b, qy, qx, 0, h, c) * at(b, ky, kx, 1, h, c);
              s /= std::sqrt(static_cast<double>(dh));
              const int64_t qi = (qr % g.wh) * g.ww + qc % g.ww, ki = (kr % g.wh) * g.ww + kc % g.ww;
              if (!bias.empty()) s += bias[static_cast<std::size_t>((h * n + qi) * n + ki)];
              if (region(qr, g.Hp, g.wh, g.shift_h) != region(kr, g.Hp, g.wh, g.shift_h) ||
                  region(qc, g.Wp, g.ww, g.shift_w) != region(kc, g.Wp, g.ww, g.shift_w))
                s -= 100.0;
              score.push_back(s);
              dist.push_back(std::hypot(double(qy - ky), double(qx - kx)));
            }
          const double mx = *std::max_element(score.begin(), score.end());
          double z = 0;
          for (const double s : score) z += std::exp(s - mx);
          for (std::size_t j = 0; j < score.size(); ++j) {
            const double p = std::exp(score[j] - mx) / z;
            m.distance[h] += p * dist[j] / count;
            if (p > 0) m.entropy[h] -= p * std::log(p) / count;
          }
        }
  return m;
}

}  // namespace

TEST_CASE("attention stats: Swin window attention, cell by cell on the unrolled grid, padded cells left out") {
  struct Case {
    WindowBias bias;
    int64_t H, W, shift;
  };
  // 6 x 7 pads to 8 x 8 (and rolls by 2 when shifted); 8 x 8 has no padding.
  using B = WindowBias;
  for (const Case& c : {Case{B::table, 6, 7, 2}, Case{B::continuous, 6, 7, 2}, Case{B::table, 8, 8, 2},
                        Case{B::none, 6, 7, 0}, Case{B::table, 5, 5, 0}}) {
    for (const bool fused : {true, false}) {
      INFO("bias: ", window_bias_name(c.bias));
      CAPTURE(c.H);
      CAPTURE(c.W);
      CAPTURE(c.shift);
      CAPTURE(fused);
      WindowAttentionOptions o;
      o.dim = 16, o.heads = 2, o.window_h = o.window_w = 4, o.shift_h = o.shift_w = c.shift, o.bias = c.bias;
      o.cpb_hidden = 8, o.fused = fused, o.init_std = 0.5;  // large weights: peaked, unequal attention
      Generator gen(11), xg(12);
      WindowAttention wa(o, gen);
      const Tensor x = randn({2, c.H, c.W, 16}, xg);
      NoGradGuard no_grad;
      const Tensor plain = wa.forward(x);
      std::vector<AttentionStats> a;
      {
        AttentionStatsRecorder recorder({&wa});
        CHECK(max_abs_diff(wa.forward(x), plain) == 0);  // recording leaves the output as it was
        a = recorder.layers();
      }
      CHECK(wa.stats_sink() == nullptr);
      CHECK(a[0].queries(1) == 2 * c.H * c.W);  // real cells only
      check_close(a[0], explicit_window_stats(wa, x), 1e-6);
      CHECK(a[0].mean_distance(0) > 0.5);
      CHECK(a[0].mean_distance(0) < std::hypot(3.0, 3.0));  // inside a 4 x 4 window
    }
  }
  // A model's two blocks (the second shifted) are both recorded.
  Generator g(0), tg(1);
  GridModel swin(small_options("swin", true, false), WindowOptions{}, g);
  swin.eval();
  NoGradGuard no_grad;
  AttentionStatsRecorder recorder(swin.attention_layers(), 6);
  swin.forward(randint({2, 6, 6}, 7, tg));
  REQUIRE(recorder.layers().size() == 2);
  CHECK(recorder.layers()[1].queries(0) == 2 * 36);
  CHECK(recorder.layers()[1].mean_distance(1) > 0);
}

TEST_CASE("attention stats: errors name the op and the shapes") {
  AttentionStats s(2);
  CHECK(contains(error_of([&] {
          accumulate_attention_stats(stats_inputs(Tensor::zeros({1, 3, 4, 2}), Tensor::zeros({1, 3, 4, 2})), s);
        }),
        "attention stats: q [1, 3, 4, 2] has not the stats' 2 heads"));
  AttentionStats grid(2, 3);
  CHECK(contains(error_of([&] {
          accumulate_attention_stats(stats_inputs(Tensor::zeros({1, 2, 4, 2}), Tensor::zeros({1, 2, 4, 2})), grid);
        }),
        "are not the cells of a grid of width 3"));
  const Tensor q = Tensor::zeros({2, 2, 4, 2});
  AttentionInputs bad = stats_inputs(q, q);
  bad.score_bias = Tensor::zeros({3, 4, 4});
  CHECK(contains(error_of([&] { accumulate_attention_stats(bad, s); }),
                 "score bias [3, 4, 4] is not (G, 4, 4) with G dividing the batch 2"));
  bad = stats_inputs(q, q);
  bad.cells = Tensor::zeros({1, 4, 2});
  CHECK(contains(error_of([&] { accumulate_attention_stats(bad, s); }), "(or the cells are not i64)"));
  bad = stats_inputs(q, q);
  bad.query_padding = Tensor::zeros({2, 3});
  CHECK(contains(error_of([&] { accumulate_attention_stats(bad, s); }), "query padding [2, 3] is not (B, Tq)"));
  CHECK(contains(error_of([&] { s.add(2, 0, 0); }), "head 2 is not in [0, 2)"));
  CHECK(s.mean_distance(0) == 0);  // no query counted
}
