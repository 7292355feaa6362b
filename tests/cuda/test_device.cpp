// Device tensors, the caching allocator and the kernels' fixed orders, on the CUDA backend (a GPU, or the emulated
// one: see main.cpp).
#include <doctest/doctest.h>

#include <cmath>
#include <string>
#include <vector>

#include "core/core.h"
#include "core/cuda/backend.h"
#include "core/cuda/kernels/index.h"
#include "optim/adam.h"
#include "optim/clip.h"
#include "optim/sgd.h"

namespace rpb {

namespace {

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

Tensor on_cuda(const std::vector<float>& v) { return Tensor::from_vector<float>({static_cast<int64_t>(v.size())}, v).to(Device::cuda); }

}  // namespace

TEST_CASE("a tensor moves between devices only when asked, and keeps its values and dtype") {
  const Tensor h = Tensor::from_vector<double>({2, 3}, {1, 2, 3, 4, 5, 6});
  const Tensor d = h.to(Device::cuda);
  CHECK(d.device() == Device::cuda);
  CHECK(d.dtype() == DType::f64);
  CHECK(d.shape() == h.shape());
  CHECK(d.to(Device::cuda).shares_storage(d));
  CHECK(d.to_vector() == h.to_vector());
  CHECK(d.at({1, 2}) == 6);
  CHECK(d.to(DType::f32).device() == Device::cuda);
  CHECK(d.to(DType::f32).to_vector() == h.to_vector());
  CHECK(d.to(DType::i64).to(Device::cpu).to_vector() == h.to_vector());
  const Tensor c = d.clone();
  CHECK_FALSE(c.shares_storage(d));
  c.fill_(2.5);
  CHECK(c.to_vector() == std::vector<double>(6, 2.5));
  CHECK(d.to_vector() == h.to_vector());
  Tensor z = Tensor::zeros({2, 3}, DType::f32, Device::cuda);
  z.copy_(h);  // host float64 into device float32
  CHECK(z.to_vector() == h.to_vector());
  CHECK(Tensor::scalar(4, DType::f32, Device::cuda).item() == 4);
  CHECK(reshape(d, {3, 2}).shares_storage(d));
  CHECK(reshape(d, {3, 2}).device() == Device::cuda);
}

TEST_CASE("host code cannot read a cuda tensor's elements by mistake") {
  const Tensor d = on_cuda({1, 2});
  const std::string e = error_of([&] { (void)d.data<float>(); });
  CHECK(e.find("cuda tensor") != std::string::npos);
  CHECK(e.find("to(Device::cpu)") != std::string::npos);
}

TEST_CASE("an op with inputs on two devices names the op and both devices") {
  const Tensor a = on_cuda({1, 2, 3});
  const Tensor b = Tensor::from_vector<float>({3}, {1, 2, 3});
  for (const auto& op : std::vector<std::pair<std::string, std::function<void()>>>{
           {"add", [&] { (void)add(a, b); }},
           {"matmul", [&] { (void)matmul(reshape(a, {1, 3}), reshape(b, {3, 1})); }},
           {"index_select", [&] { (void)index_select(reshape(a, {3, 1}), Tensor::indices({1}, {0})); }},
           {"where", [&] { (void)where(b, a, a); }}}) {
    const std::string& what = op.first;
    const std::string e = error_of(op.second);
    INFO(std::string(what + ": " + e));
    CHECK(e.find(what) != std::string::npos);
    CHECK(e.find("cuda") != std::string::npos);
    CHECK(e.find("cpu") != std::string::npos);
  }
}

TEST_CASE("an index out of range on cuda gets the CPU's message") {
  const Tensor table = Tensor::zeros({4, 2}, DType::f32, Device::cuda);
  const std::string e = error_of([&] { (void)index_select(table, Tensor::indices({3}, {1, 7, 2}).to(Device::cuda)); });
  CHECK(e.find("index 7 at flat position 1 is out of range [0, 4)") != std::string::npos);
  const std::string ce = error_of([&] {
    (void)cross_entropy(Tensor::zeros({2, 3}, DType::f32, Device::cuda), Tensor::indices({2}, {0, 3}).to(Device::cuda));
  });
  CHECK(ce.find("target value 3 at position [1] is out of range [0, 3)") != std::string::npos);
}

TEST_CASE("device memory: freed blocks return to the cache and are reused, and the limit applies before allocating") {
  release_cached_memory(Device::cuda);
  const std::size_t live0 = live_memory_bytes(Device::cuda), host0 = live_memory_bytes(Device::cpu);
  {
    const Tensor t = Tensor::empty({1 << 18}, DType::f32, Device::cuda);
    CHECK(live_memory_bytes(Device::cuda) == live0 + (std::size_t{1} << 20));
    CHECK(live_memory_bytes(Device::cpu) == host0);  // the host's counters are apart
  }
  CHECK(live_memory_bytes(Device::cuda) == live0);
  const std::size_t cached = cached_memory_bytes(Device::cuda);
  CHECK(cached >= (std::size_t{1} << 20));
  {
    const Tensor t = Tensor::empty({1 << 18}, DType::f32, Device::cuda);  // the same size: the cached block
    CHECK(cached_memory_bytes(Device::cuda) == cached - (std::size_t{1} << 20));
  }
  CHECK(release_cached_memory(Device::cuda) >= (std::size_t{1} << 20));
  CHECK(cached_memory_bytes(Device::cuda) == 0);
  set_memory_limit(live0 + 1000, Device::cuda);
  const std::string e = error_of([] { (void)Tensor::empty({1000}, DType::f32, Device::cuda); });
  set_memory_limit(0, Device::cuda);
  CHECK(e.find("memory limit") != std::string::npos);
  CHECK(e.find("on cuda") != std::string::npos);
}

TEST_CASE("a sum on cuda adds in the documented order: strided partials per thread, then the block's tree") {
  Generator gen(5);
  const Tensor x = rand({1000}, gen, DType::f32, -1, 1);
  const std::vector<double> v = x.to_vector();
  std::vector<float> part(cuda::kBlock, 0.0f);
  for (int t = 0; t < cuda::kBlock; ++t)
    for (std::size_t j = t; j < v.size(); j += cuda::kBlock) part[t] += static_cast<float>(v[j]);
  for (int s = cuda::kBlock / 2; s > 0; s >>= 1)
    for (int t = 0; t < s; ++t) part[t] += part[t + s];
  const double got = sum(x.to(Device::cuda)).item();
  CHECK(got == static_cast<double>(part[0]));  // bit for bit, on the GPU as on the host
}

TEST_CASE("max on cuda propagates NaN and sends the gradient to the first maximal element") {
  Tensor x = on_cuda({1, 5, 3, 5, 2});
  x.requires_grad_();
  const Tensor m = max(x);
  CHECK(m.item() == 5);
  backward(m);
  CHECK(x.grad().to_vector() == std::vector<double>{0, 1, 0, 0, 0});
  const Tensor n = on_cuda({1, NAN, 3, NAN});
  CHECK(std::isnan(max(n).item()));
}

TEST_CASE("embedding gradients with repeated indices sum in index order: the CPU's bits on cuda") {
  Generator gen(9);
  const Tensor table = rand({50, 16}, gen, DType::f32, -1, 1);
  std::vector<int64_t> idx(300);
  for (auto& i : idx) i = static_cast<int64_t>(gen.next_u64() % 50);
  const Tensor index = Tensor::indices({300}, idx);
  const Tensor up = rand({300, 16}, gen, DType::f32, -1, 1);
  Tensor grads[2];
  for (Device d : {Device::cpu, Device::cuda}) {
    Tensor t = table.to(d).clone().requires_grad_();
    backward(index_select(t, index.to(d)), up.to(d));
    grads[d == Device::cuda] = t.grad().to(Device::cpu);
  }
  CHECK(grads[0].to_vector() == grads[1].to_vector());
}

TEST_CASE("Philox-4x32-10 gives Random123's known answers") {
  const uint32_t cases[3][10] = {
      {0, 0, 0, 0, 0, 0, 0x6627e8d5u, 0xe169c58du, 0xbc57ac4cu, 0x9b00dbd8u},
      {0xffffffffu, 0xffffffffu, 0xffffffffu, 0xffffffffu, 0xffffffffu, 0xffffffffu, 0x408f276du, 0x41c83b0eu,
       0xa20bc7c6u, 0x6d5451fdu},
      {0x243f6a88u, 0x85a308d3u, 0x13198a2eu, 0x03707344u, 0xa4093822u, 0x299f31d0u, 0xd16cfe09u, 0x94fdccebu,
       0x5001e420u, 0x24126ea1u}};
  for (const auto& k : cases) {
    uint32_t c[4] = {k[0], k[1], k[2], k[3]};
    cuda::philox4x32_10(c, k[4], k[5]);
    CHECK(c[0] == k[6]);
    CHECK(c[1] == k[7]);
    CHECK(c[2] == k[8]);
    CHECK(c[3] == k[9]);
  }
}

TEST_CASE("dropout on cuda: masks keyed by the generator, reproducible, about 1 - p kept and scaled to keep the mean") {
  const Tensor x = Tensor::ones({20000}, DType::f32, Device::cuda);
  Generator a(3), b(3);
  const Tensor ya = dropout(x, 0.25, a), yb = dropout(x, 0.25, b), yc = dropout(x, 0.25, a);
  CHECK(ya.to_vector() == yb.to_vector());
  CHECK(ya.to_vector() != yc.to_vector());  // the generator moved on: the next step's mask
  int kept = 0;
  for (double v : ya.to_vector()) {
    CHECK((v == 0 || std::fabs(v - 1 / 0.75) < 1e-6));
    kept += v != 0;
  }
  CHECK(std::abs(kept - 15000) < 300);  // 5 standard deviations of the binomial
  Tensor w = Tensor::full({20000}, 2.0, DType::f32, Device::cuda).requires_grad_();
  Generator g(3);
  const Tensor y = dropout(w, 0.25, g);
  backward(sum(y));
  CHECK(w.grad().to_vector() == mul_scalar(ya, 1.0).to_vector());  // the same mask: 0 or 1 / (1 - p)
}

TEST_CASE("Adam, AdamW, SGD with momentum and gradient clipping on cuda follow the CPU's updates") {
  Generator gen(21);
  const Tensor w0 = rand({7, 5}, gen, DType::f32, -1, 1), b0 = rand({5}, gen, DType::f32, -1, 1);
  const auto run = [&](Device d, int which) {
    Tensor w = w0.to(d).clone().requires_grad_(), b = b0.to(d).clone().requires_grad_();
    nn::NamedTensors params = {{"w", w}, {"b", b}};
    std::unique_ptr<optim::Optimizer> opt;
    if (which == 0) opt = std::make_unique<optim::Adam>(params, optim::AdamOptions{.weight_decay = 0.1});
    if (which == 1) opt = std::make_unique<optim::Adam>(params, optim::AdamOptions{.weight_decay = 0.1, .decoupled = false});
    if (which == 2) opt = std::make_unique<optim::SGD>(params, optim::SGDOptions{.momentum = 0.9, .weight_decay = 0.01});
    Generator xs(4);
    for (int step = 0; step < 3; ++step) {
      const Tensor x = rand({3, 7}, xs, DType::f32, -1, 1).to(d);
      backward(sum(tanh(add(matmul(x, w), b))));
      optim::clip_grad_norm(opt->params(), 0.5);
      opt->step(0.05);
      opt->zero_grad();
    }
    return std::vector<Tensor>{w.detach().to(Device::cpu), b.detach().to(Device::cpu)};
  };
  for (int which = 0; which < 3; ++which) {
    INFO(std::string("optimizer " + std::to_string(which)));
    const auto cpu = run(Device::cpu, which), gpu = run(Device::cuda, which);
    for (std::size_t i = 0; i < cpu.size(); ++i) {
      const std::vector<double> a = cpu[i].to_vector(), g = gpu[i].to_vector();
      for (std::size_t k = 0; k < a.size(); ++k) CHECK(std::fabs(a[k] - g[k]) <= 1e-5);
    }
  }
}

TEST_CASE("the fused attention on cuda refuses a bias over a grid, and inputs on two devices, with what to do") {
  const Tensor q = Tensor::zeros({1, 1, 4, 4}, DType::f32, Device::cuda);
  const Tensor rel = Tensor::zeros({1, 9}, DType::f32, Device::cuda);
  const std::string e = error_of([&] { (void)fused_attention(q, q, q, RelativeBias(rel, {2, 2}), {}, {}, AttentionSpec{}); });
  CHECK(e.find("a bias over a grid has no CUDA kernel") != std::string::npos);
  CHECK(e.find("composite path") != std::string::npos);
  const std::string mixed = error_of([&] {
    (void)fused_attention(q, q, q, RelativeBias(Tensor::zeros({1, 7}, DType::f32)), {}, {}, AttentionSpec{});
  });
  CHECK(mixed.find("fused_attention") != std::string::npos);
  CHECK(mixed.find("cpu") != std::string::npos);
}

}  // namespace rpb
