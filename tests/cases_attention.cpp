// Gradient-check cases for core/ops/attention.cpp (fused attention with a relative bias over a line or a lattice).
#include "gradcheck.h"

namespace rpb::testing {

namespace {
// A mask or score bias the case holds, on q's device and (a float one) in q's dtype: the parity tests run the cases
// on cuda and in float32.
Tensor on_device_of(const Tensor& t, const Tensor& q) {
  if (!t.defined()) return t;
  return t.is_floating() ? t.to(q.dtype()).to(q.device()) : t.to(q.device());
}
}  // namespace

void add_attention_cases(CaseList& cases) {
  Generator gen(61);
  auto add = [&](const std::string& name, std::vector<Tensor> inputs, Tensor padding, Tensor score_bias,
                 AttentionSpec spec, std::vector<int64_t> grid = {}) {
    cases.push_back({"fused_attention " + name, OpKind::FusedAttention, std::move(inputs),
                     [padding, score_bias, spec, grid](const std::vector<Tensor>& in) {
                       const Tensor rel = in.size() > 3 ? in[3] : Tensor();
                       return fused_attention(in[0], in[1], in[2], RelativeBias(rel, grid), on_device_of(padding, in[0]),
                                              on_device_of(score_bias, in[0]), spec);
                     }});
  };
  // Inputs of unit scale, so softmax is far from one-hot and every gradient is sizeable.
  auto qkv = [&](int64_t B, int64_t H, int64_t Tq, int64_t Tk, int64_t dh) {
    return std::vector<Tensor>{input(gen, {B, H, Tq, dh}), input(gen, {B, H, Tk, dh}), input(gen, {B, H, Tk, dh})};
  };
  auto with_rel = [&](std::vector<Tensor> in, int64_t H, int64_t R) {
    in.push_back(input(gen, {H, R}));
    return in;
  };

  add("causal 1-D bias", with_rel(qkv(2, 3, 5, 5, 4), 3, 9), Tensor(), Tensor(), {0.5, true, 0});
  add("bidirectional 1-D bias, key padding", with_rel(qkv(2, 2, 4, 4, 3), 2, 7),
      Tensor::indices({2, 4}, {0, 0, 1, 0, 0, 0, 0, 1}), Tensor(), {0.7, false, 0});
  add("no bias, scale 1", qkv(1, 2, 3, 3, 2), Tensor(), Tensor(), {1.0, true, 0});
  add("queries after a cache (q_offset 4)", with_rel(qkv(1, 2, 2, 6, 3), 2, 7), Tensor(), Tensor(),
      {0.6, true, 4});
  {
    // A constant bias (ALiBi-style): only q, k and v are checked.
    std::vector<Tensor> in = qkv(1, 2, 4, 4, 2);
    in.push_back(Tensor::from_vector<double>({2, 7}, {-3, -2, -1, 0, -1, -2, -3, -1.5, -1, -.5, 0, -.5, -1, -1.5}));
    add("constant bias", in, Tensor(), Tensor(), {0.5, true, 0});
  }
  {
    // A 2 x 3 grid with Swin's -100 region mask on the second window of each pair.
    Tensor window = Tensor::zeros({2, 6, 6}, DType::f64);
    double* w = window.mutable_data<double>();
    for (int64_t i = 0; i < 6; ++i)
      for (int64_t j = 0; j < 6; ++j) w[36 + i * 6 + j] = (i % 3 == 2) != (j % 3 == 2) ? -100.0 : 0.0;
    add("2 x 3 grid bias, window mask", with_rel(qkv(4, 2, 6, 6, 3), 2, 15), Tensor(), window, {0.5, false, 0},
        {2, 3});
  }
  // A lattice of three axes (2 x 1 x 3): R = 3 * 1 * 5.
  add("2 x 1 x 3 lattice bias", with_rel(qkv(1, 2, 6, 6, 2), 2, 15), Tensor(), Tensor(), {0.5, false, 0}, {2, 1, 3});
  // More keys and queries than one tile (64 x 128), so the online softmax rescales across tiles.
  add("150 tokens, causal, several tiles", with_rel(qkv(1, 1, 150, 150, 2), 1, 299), Tensor(), Tensor(),
      {0.5, true, 0});
  add("150 tokens, bidirectional, several tiles", with_rel(qkv(1, 1, 150, 150, 2), 1, 299), Tensor(), Tensor(),
      {0.5, false, 0});
  {
    // Batch entry 1 has every key padded: its rows are zeros with zero gradients.
    Tensor padding = Tensor::indices({2, 3}, {0, 1, 0, 1, 1, 1});
    add("a fully masked batch entry", with_rel(qkv(2, 1, 3, 3, 2), 1, 5), padding, Tensor(), {1.0, false, 0});
  }
  {
    // Packed: q, k and v interleaved in one (B, T, 3, H, dh) projection, output (B, T, H, dh).
    AttentionSpec spec{0.5, true, 0};
    spec.packed_qkv = true;
    cases.push_back({"fused_attention packed qkv, causal 1-D bias, key padding", OpKind::FusedAttention,
                     {input(gen, {2, 5, 3, 2, 3}), input(gen, {2, 9})},
                     [spec](const std::vector<Tensor>& in) {
                       return fused_attention(in[0], Tensor(), Tensor(), in[1],
                                              on_device_of(Tensor::indices({2, 5}, {0, 0, 0, 1, 0, 0, 0, 0, 0, 0}), in[0]),
                                              Tensor(), spec);
                     }});
    cases.push_back({"fused_attention packed qkv on a 2 x 2 grid", OpKind::FusedAttention,
                     {input(gen, {1, 4, 3, 2, 2}), input(gen, {2, 9})},
                     [spec](const std::vector<Tensor>& in) {
                       AttentionSpec bidirectional = spec;
                       bidirectional.causal = false;
                       return fused_attention(in[0], Tensor(), Tensor(), RelativeBias(in[1], {2, 2}), Tensor(), Tensor(),
                                              bidirectional);
                     }});
  }
  {
    // Reused input: self-attention of one tensor as q, k and v.
    Tensor x = input(gen, {1, 2, 4, 3});
    Tensor rel = input(gen, {2, 7});
    cases.push_back({"fused_attention reused input (x, x, x)", OpKind::FusedAttention, {x, rel},
                     [](const std::vector<Tensor>& in) {
                       return fused_attention(in[0], in[0], in[0], in[1], Tensor(), Tensor(), {0.5, true, 0});
                     }});
  }
}

}  // namespace rpb::testing
