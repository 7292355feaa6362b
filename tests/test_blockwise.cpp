// Blockwise causal attention (core/ops.h AttentionSpec::block): the fused kernel against the reference path with
// the explicit mask (nn::causal_mask with a block), values and gradients in float64, and the key tiles it skips.
#include <doctest/doctest.h>

#include <cmath>

#include "core/core.h"
#include "nn/attention.h"
#include "test_util.h"
#include "tensor_checks.h"

using namespace rpb;
using rpb::testing::max_abs_diff;
using rpb::testing::all_finite;

namespace blockwise_tests {

}  // namespace blockwise_tests

TEST_CASE("block_first_key: the start of the block before the query's own") {
  CHECK(block_first_key(0, 4) == 0);
  CHECK(block_first_key(7, 4) == 0);
  CHECK(block_first_key(8, 4) == 4);
  CHECK(block_first_key(13, 4) == 8);
  CHECK(block_first_key(13, 0) == 0);
  const Tensor m = nn::causal_mask(2, 12, 9, 4);  // queries at 9 and 10: keys 4 .. 9 and 4 .. 10
  const std::vector<double> v = m.to_vector();
  for (int64_t j = 0; j < 12; ++j) {
    CHECK(v[j] == (j < 4 || j > 9 ? 1 : 0));
    CHECK(v[12 + j] == (j < 4 || j > 10 ? 1 : 0));
  }
}

TEST_CASE("blockwise fused attention equals the reference path with the explicit mask (float64, gradients too)") {
  using namespace blockwise_tests;
  // 300 queries after a cache of 40 over 340 keys: several query and key tiles, blocks across tile edges.
  Generator gen(23);
  const int64_t B = 2, H = 2, Tq = 300, Tk = 340, dh = 4, off = Tk - Tq;
  const Tensor q = randn({B, H, Tq, dh}, gen, DType::f64).requires_grad_();
  const Tensor k = randn({B, H, Tk, dh}, gen, DType::f64).requires_grad_();
  const Tensor v = randn({B, H, Tk, dh}, gen, DType::f64).requires_grad_();
  const Tensor rel = randn({H, Tq + Tk - 1}, gen, DType::f64).requires_grad_();
  const Tensor g = randn({B, H, Tq, dh}, gen, DType::f64);
  for (const int64_t block : {50, 130}) {
    CAPTURE(block);
    auto grads = [&](const Tensor& out) {
      for (const Tensor* t : {&q, &k, &v, &rel}) t->zero_grad();
      backward(sum(mul(out, g)));
      return std::vector<Tensor>{out.detach(), q.grad(), k.grad(), v.grad(), rel.grad()};
    };
    AttentionSpec spec{0.5, true, off};
    spec.block = block;
    const std::vector<Tensor> fused = grads(fused_attention(q, k, v, rel, Tensor(), Tensor(), spec));
    const std::vector<Tensor> ref = grads(nn::scaled_dot_product_attention(
        q, k, v, nn::expand_relative_bias(rel, Tq, Tk), nn::causal_mask(Tq, Tk, off, block), 0.5));
    for (std::size_t i = 0; i < fused.size(); ++i) {
      CAPTURE(i);
      CHECK(max_abs_diff(fused[i], ref[i]) <= 1e-11);
    }
    // The block changes the result (the test would prove little otherwise).
    const Tensor causal = fused_attention(q, k, v, rel, Tensor(), Tensor(), {0.5, true, off});
    CHECK(max_abs_diff(fused[0], causal.detach()) > 1e-3);
  }
}

TEST_CASE("blockwise fused attention never reads the key tiles before a query tile's window") {
  using namespace blockwise_tests;
  // 512 queries in tiles of 64, blocks of 64: the query tiles from 128 on start their window at 64 or later, so
  // NaN values at keys 0 .. 63 must not reach them (a tile read and masked would give 0 x NaN = NaN).
  Generator gen(29);
  const int64_t T = 512;
  const Tensor q = randn({1, 1, T, 4}, gen), k = randn({1, 1, T, 4}, gen);
  Tensor v = randn({1, 1, T, 4}, gen);
  float* pv = v.mutable_data<float>();
  for (int64_t i = 0; i < 64 * 4; ++i) pv[i] = NAN;
  AttentionSpec spec{0.5, true, 0};
  spec.block = 64;
  const Tensor out = fused_attention(q, k, v, Tensor(), Tensor(), Tensor(), spec);
  CHECK(all_finite(slice(out, 2, 128, T)));
  CHECK(!all_finite(slice(out, 2, 0, 128)));  // the first two blocks attend them
  CHECK(testing::contains(testing::error_of([&] {
                            fused_attention(q, k, v, Tensor(), Tensor(), Tensor(), {0.5, false, 0, false, 64});
                          }),
                          "block 64"));
}
