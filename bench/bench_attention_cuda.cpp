// bench_attention_cuda: rpb's fused attention on the GPU (core/cuda/kernels/attention.h), the rpb side of
// bench/attention_gpu.py's table: causal attention, 4 heads of 32, batch 1, float32, with a learnable T5-style
// table over offsets (its gradient deterministic), ALiBi's constant table, or FIRE's learnable tiles; forward and
// forward+backward at 1,024, 4,096 and 16,384 tokens: median time, peak device memory beyond the inputs, TFLOP/s
// (4 T^2 dh H / 2 per forward, 2.5 times that for the backward, causal halves counted as the peers count them).
// One JSON line per measurement. Usage: bench_attention_cuda [--quick] [--emulate]
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "core/core.h"
#include "core/cuda/backend.h"
#include "nn/position/scheme.h"

using namespace rpb;
using Clock = std::chrono::steady_clock;

namespace {

struct Setup {
  Tensor q, k, v, table;
  std::shared_ptr<nn::PositionScheme> fire;
};

Setup setup(const std::string& bias, int64_t T) {
  Generator gen(1);
  const int64_t H = 4, dh = 32;
  auto x = [&] { return randn({1, H, T, dh}, gen).to(Device::cuda).requires_grad_(); };
  Setup s{x(), x(), x(), Tensor(), nullptr};
  if (bias == "t5") s.table = mul_scalar(randn({H, 2 * T - 1}, gen), 0.1).to(Device::cuda).requires_grad_();
  if (bias == "alibi") {
    std::vector<double> t(static_cast<std::size_t>(H * (2 * T - 1)));
    for (int64_t h = 0; h < H; ++h)
      for (int64_t c = 0; c < 2 * T - 1; ++c) t[h * (2 * T - 1) + c] = -std::pow(2.0, -8.0 * (h + 1) / H) * std::abs(c - (T - 1));
    s.table = Tensor::from_vector<double>({H, 2 * T - 1}, t).to(DType::f32).to(Device::cuda);
  }
  if (bias == "fire") {
    nn::PositionOptions o;
    o.scheme = "fire";
    o.heads = H;
    o.fire_length = 512;  // trained at 512: every longer query is past the threshold
    Generator g(2);
    s.fire = nn::make_position_scheme(o, g);
    s.fire->to(Device::cuda);
  }
  return s;
}

void sync() { cuda::backend("bench_attention_cuda").synchronize(); }

double run(const Setup& s, int64_t T, bool with_backward) {
  sync();
  const auto t0 = Clock::now();
  const RelativeBias bias = s.fire ? s.fire->relative_bias(nn::Positions::line(T, T, 0)) : RelativeBias(s.table);
  const Tensor out = fused_attention(s.q, s.k, s.v, bias, Tensor(), Tensor(), AttentionSpec{1.0 / std::sqrt(32.0), true, 0});
  if (with_backward) backward(sum(out));
  sync();
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

}  // namespace

int main(int argc, char** argv) {
  bool quick = false;
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--quick")) quick = true;
    if (!std::strcmp(argv[i], "--emulate")) set_cuda_emulation(true);
  }
  if (!cuda_available()) {
    std::printf("{\"skipped\": \"no GPU answers and --emulate was not given\"}\n");
    return 0;
  }
  std::printf("{\"device\": \"%s\"}\n", cuda_device_description().c_str());
  const std::vector<int64_t> lengths = quick ? std::vector<int64_t>{256} : std::vector<int64_t>{1024, 4096, 16384};
  for (const std::string bias : {"t5", "alibi", "fire"})
    for (const int64_t T : lengths)
      for (const bool bwd : {false, true}) {
        const Setup s = setup(bias, T);
        run(s, T, bwd);  // warm-up
        std::vector<double> t;
        release_cached_memory(Device::cuda);
        reset_peak_memory(Device::cuda);
        const std::size_t base = live_memory_bytes(Device::cuda);
        for (int r = 0; r < (quick ? 2 : 5); ++r) t.push_back(run(s, T, bwd));
        std::sort(t.begin(), t.end());
        const double flops = 4.0 * T * T * 32 * 4 / 2 * (bwd ? 3.5 : 1.0);
        std::printf("{\"impl\": \"rpb\", \"bias\": \"%s\", \"T\": %lld, \"pass\": \"%s\", \"ms\": %.3f, "
                    "\"peak_mb\": %.1f, \"tflops\": %.2f, \"deterministic\": true}\n",
                    bias.c_str(), static_cast<long long>(T), bwd ? "fwd+bwd" : "fwd", 1e3 * t[t.size() / 2],
                    (peak_memory_bytes(Device::cuda) - base) / 1048576.0, flops / t[t.size() / 2] / 1e12);
        std::fflush(stdout);
      }
  return 0;
}
