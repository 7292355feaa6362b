// The fused attention's CUDA kernel (core/cuda/kernels/attention.h) against the CPU kernel (core/ops/attention.cpp):
// forward and every gradient, at lengths that are and are not multiples of the 64-token tile, causal or not, after
// a KV cache, blockwise, packed, with key padding; FIRE's learnable tiles; two runs bit-identical; memory O(L).
// The CPU kernel is itself checked against the composite attention and by the float64 gradient check.
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "core/core.h"
#include "nn/position/scheme.h"
#include "parity.h"

namespace rpb::testing {

namespace {

struct AttnRun {
  std::vector<Tensor> values;  // out, then the gradients of q, k, v and the table (or the tiles' parameters)
};

struct AttnCase {
  std::string name;
  int64_t B, H, Tq, Tk, dh;
  AttentionSpec spec;
  bool table = true, padding = false;
};

AttnRun run_attention(const AttnCase& c, DType dtype, Device device) {
  Generator gen(71);
  const bool packed = c.spec.packed_qkv;
  auto make = [&](const Shape& s) { return input(gen, s).to(dtype).to(device).detach().requires_grad_(); };
  const Tensor q = packed ? make({c.B, c.Tq, 3, c.H, c.dh}) : make({c.B, c.H, c.Tq, c.dh});
  const Tensor k = packed ? Tensor() : make({c.B, c.H, c.Tk, c.dh});
  const Tensor v = packed ? Tensor() : make({c.B, c.H, c.Tk, c.dh});
  const Tensor rel = c.table ? make({c.H, c.Tq + c.Tk - 1}) : Tensor();
  Tensor pad;
  if (c.padding) {
    std::vector<int64_t> m(static_cast<std::size_t>(c.B * c.Tk), 0);
    for (std::size_t i = 0; i < m.size(); i += 7) m[i] = 1;
    pad = Tensor::indices({c.B, c.Tk}, m).to(device);
  }
  const Tensor out = fused_attention(q, k, v, RelativeBias(rel), pad, Tensor(), c.spec);
  const Tensor up = input(gen, out.shape()).to(dtype).to(device);
  backward(sum(mul(out, up)));
  AttnRun r{{out.detach().to(Device::cpu)}};
  for (const Tensor* t : {&q, &k, &v, &rel})
    if (t->defined()) r.values.push_back(t->grad().to(Device::cpu));
  return r;
}

void check_runs(const AttnRun& gpu, const AttnRun& cpu, double ulps) {
  REQUIRE(gpu.values.size() == cpu.values.size());
  for (std::size_t i = 0; i < cpu.values.size(); ++i) {
    const Closeness cl = close(gpu.values[i], cpu.values[i], ulps);
    CHECK_MESSAGE(cl.ok, std::string("value " + std::to_string(i) + " (0: out, then q, k, v, table): " + cl.report));
  }
}

std::vector<AttnCase> cases() {
  std::vector<AttnCase> v;
  for (int64_t T : {64, 100, 150, 200}) {
    v.push_back({"causal " + std::to_string(T), 2, 2, T, T, 8, {0.35, true, 0}});
    v.push_back({"bidirectional, key padding " + std::to_string(T), 2, 2, T, T, 8, {0.35, false, 0}, true, true});
  }
  v.push_back({"after a KV cache: 70 queries at 60 over 130 keys", 1, 3, 70, 130, 4, {0.5, true, 60}});
  v.push_back({"no bias, scale 1", 1, 2, 130, 130, 16, {1.0, true, 0}, false});
  AttentionSpec blockwise{0.5, true, 0};
  blockwise.block = 64;
  v.push_back({"blockwise, blocks of 64 over 200 tokens", 1, 2, 200, 200, 8, blockwise});
  AttentionSpec packed{0.5, true, 0};
  packed.packed_qkv = true;
  v.push_back({"packed q, k, v over 90 tokens, key padding", 2, 2, 90, 90, 8, packed, true, true});
  return v;
}

// A FIRE scheme with a bias large enough to matter; the same weights for the same seed.
std::shared_ptr<nn::PositionScheme> fire(DType dtype, Device device) {
  nn::PositionOptions o;
  o.scheme = "fire";
  o.heads = 2;
  o.fire_hidden = 8;
  o.fire_length = 40;  // queries 40 .. 149 are past the threshold
  o.init_std = 0.5;
  o.dtype = dtype;
  Generator gen(9);
  auto s = nn::make_position_scheme(o, gen);
  s->to(device);
  return s;
}

AttnRun run_fire(DType dtype, Device device, int64_t offset) {
  Generator gen(72);
  const int64_t B = 2, H = 2, Tk = 150, Tq = Tk - offset, dh = 8;
  auto make = [&](const Shape& s) { return input(gen, s).to(dtype).to(device).detach().requires_grad_(); };
  const Tensor q = make({B, H, Tq, dh}), k = make({B, H, Tk, dh}), v = make({B, H, Tk, dh});
  auto s = fire(dtype, device);
  const RelativeBias tiles = s->relative_bias(nn::Positions::line(Tq, Tk, offset));
  REQUIRE(tiles.tiles != nullptr);
  const Tensor out = fused_attention(q, k, v, tiles, Tensor(), Tensor(), AttentionSpec{0.35, true, offset});
  backward(sum(mul(out, input(gen, out.shape()).to(dtype).to(device))));
  AttnRun r{{out.detach().to(Device::cpu), q.grad().to(Device::cpu), k.grad().to(Device::cpu),
             v.grad().to(Device::cpu)}};
  for (const auto& [name, p] : s->named_parameters()) r.values.push_back(p.grad().to(Device::cpu));
  return r;
}

}  // namespace

TEST_CASE("fused attention on cuda equals the CPU kernel at every length, mask and layout, forward and backward") {
  for (const AttnCase& c : cases())
    for (const DType dtype : {DType::f64, DType::f32}) {
      INFO(std::string(c.name + ", " + dtype_name(dtype)));
      check_runs(run_attention(c, dtype, Device::cuda), run_attention(c, dtype, Device::cpu), 256);
    }
}

TEST_CASE("fused attention on cuda: FIRE's tiles compute the bias and learn as on the CPU") {
  for (const int64_t offset : {int64_t{0}, int64_t{37}})
    for (const DType dtype : {DType::f64, DType::f32}) {
      INFO(std::string("offset " + std::to_string(offset) + ", " + dtype_name(dtype)));
      const AttnRun cpu = run_fire(dtype, Device::cpu, offset), gpu = run_fire(dtype, Device::cuda, offset);
      REQUIRE(cpu.values.size() == 10);
      // Values 4 .. 9: c, multiplier, the MLP's weights and biases, each a sum over every score.
      check_runs(gpu, cpu, dtype == DType::f64 ? 256 : 2048);
    }
}

TEST_CASE("fused attention on cuda gives the same bits on every run, the table's and FIRE's gradients included") {
  const AttnCase c{"causal 150", 2, 2, 150, 150, 8, {0.35, true, 0}};
  const AttnRun a = run_attention(c, DType::f32, Device::cuda), b = run_attention(c, DType::f32, Device::cuda);
  for (std::size_t i = 0; i < a.values.size(); ++i) CHECK(same_bits(a.values[i], b.values[i]));
  const AttnRun fa = run_fire(DType::f32, Device::cuda, 0), fb = run_fire(DType::f32, Device::cuda, 0);
  for (std::size_t i = 0; i < fa.values.size(); ++i) CHECK(same_bits(fa.values[i], fb.values[i]));
}

TEST_CASE("fused attention on cuda keeps O(L) memory: four times the tokens, about four times the peak") {
  auto peak = [](int64_t T) {
    Generator gen(73);
    const Tensor q = input(gen, {1, 2, T, 16}).to(DType::f32).to(Device::cuda).detach().requires_grad_();
    const Tensor rel = input(gen, {2, 2 * T - 1}).to(DType::f32).to(Device::cuda).detach().requires_grad_();
    reset_peak_memory(Device::cuda);
    const std::size_t before = live_memory_bytes(Device::cuda);
    backward(sum(fused_attention(q, q, q, RelativeBias(rel), Tensor(), Tensor(), AttentionSpec{0.25, true, 0})));
    return static_cast<double>(peak_memory_bytes(Device::cuda) - before);
  };
  const double small = peak(256), large = peak(1024);
  INFO(std::string("peak bytes at 256 tokens " + std::to_string(small) + ", at 1024 " + std::to_string(large)));
  CHECK(large < 5 * small);  // a (T, T) score matrix would make it 16 times
  CHECK(large > 3 * small);
}

}  // namespace rpb::testing

namespace rpb::testing {

TEST_CASE("fused attention on cuda refuses a head too wide for a block's shared memory, and says which") {
  CHECK(fused_attention_supported(Device::cpu, DType::f64, 4096));
  CHECK(fused_attention_supported(Device::cuda, DType::f32, 125));
  CHECK_FALSE(fused_attention_supported(Device::cuda, DType::f32, 126));
  CHECK(fused_attention_supported(Device::cuda, DType::f64, 51));
  CHECK_FALSE(fused_attention_supported(Device::cuda, DType::f64, 64));
  const Tensor q = Tensor::zeros({1, 1, 4, 64}, DType::f64, Device::cuda);
  std::string e;
  try {
    (void)fused_attention(q, q, q, RelativeBias(), Tensor(), Tensor(), AttentionSpec{});
  } catch (const Error& err) {
    e = err.what();
  }
  CHECK(e.find("head dim 64 in float64") != std::string::npos);
  CHECK(e.find("shared memory") != std::string::npos);
}

}  // namespace rpb::testing
