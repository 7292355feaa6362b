// Models on cuda against the CPU: language models with every 1-D position scheme, forward and backward, through the
// fused attention (its CUDA kernel against the CPU's) and through the composite path; grid models with every 2-D
// scheme (Swin's windows attend through the composite path on a GPU).
#include <doctest/doctest.h>

#include <cmath>
#include <string>

#include "core/core.h"
#include "nn/grid_model.h"
#include "nn/position/scheme.h"
#include "nn/transformer.h"
#include "tiny_grid.h"

namespace rpb {

namespace {

struct ModelRun {
  double loss = 0;
  std::vector<std::pair<std::string, Tensor>> grads;
};

ModelRun run_model(const std::string& scheme, Device device, bool fused) {
  Generator gen(12);
  nn::TransformerOptions o;
  o.vocab = 11;
  o.d_model = 16;
  o.heads = 2;
  o.layers = 2;
  o.d_ff = 32;
  o.position.scheme = scheme;
  o.position.fire_length = 5;  // FIRE's threshold L0: queries 5 .. 8 are past it (the fused path's learning tiles)
  o.fused_attention = fused;
  nn::LanguageModel lm(o, gen);
  lm.to(device);
  Generator data(3);
  const Tensor tokens = randint({2, 9}, o.vocab, data).to(device);
  const Tensor loss = lm.loss(tokens, tokens);
  backward(loss);
  ModelRun r{loss.item(), {}};
  for (const auto& [name, p] : lm.named_parameters())
    r.grads.emplace_back(name, p.grad().defined() ? p.grad().to(Device::cpu) : Tensor());
  return r;
}

}  // namespace

TEST_CASE("a language model with every 1-D position scheme trains on cuda as on the CPU: loss and every gradient") {
  for (const std::string& scheme : nn::scheme_names(1))
   for (const bool fused : {true, false}) {
    INFO(std::string("scheme " + scheme + (fused ? ", fused attention" : ", composite attention")));
    ModelRun cpu, gpu;
    try {
      cpu = run_model(scheme, Device::cpu, fused);
      gpu = run_model(scheme, Device::cuda, fused);
    } catch (const Error& e) {
      FAIL_CHECK(std::string(std::string("threw: ") + e.what()));
      continue;
    }
    CHECK(gpu.loss == doctest::Approx(cpu.loss).epsilon(1e-5));
    REQUIRE(gpu.grads.size() == cpu.grads.size());
    for (std::size_t i = 0; i < cpu.grads.size(); ++i) {
      INFO(std::string("gradient of " + cpu.grads[i].first));
      REQUIRE(gpu.grads[i].second.defined() == cpu.grads[i].second.defined());
      if (!cpu.grads[i].second.defined()) continue;
      const std::vector<double> a = cpu.grads[i].second.to_vector(), b = gpu.grads[i].second.to_vector();
      double scale = 1e-3;
      for (double v : a) scale = std::max(scale, std::fabs(v));
      double worst = 0;
      for (std::size_t k = 0; k < a.size(); ++k) worst = std::max(worst, std::fabs(a[k] - b[k]));
      CHECK(worst <= 1e-4 * scale);
    }
  }
}

}  // namespace rpb

namespace rpb {

TEST_CASE("a model whose heads are too wide for the fused CUDA kernel attends through the composite path on cuda") {
  nn::TransformerOptions o;
  o.vocab = 11;
  o.d_model = 128;
  o.heads = 2;  // head dim 64: over the fused kernel's 51 in float64
  o.layers = 1;
  o.d_ff = 32;
  o.position.scheme = "t5";
  double loss[2];
  for (const Device device : {Device::cpu, Device::cuda}) {
    Generator gen(13);
    nn::LanguageModel lm(o, gen);
    lm.to(DType::f64);
    lm.to(device);
    Generator data(4);
    const Tensor tokens = randint({2, 9}, o.vocab, data).to(device);
    loss[device == Device::cuda] = lm.loss(tokens, tokens).item();
  }
  CHECK(loss[1] == doctest::Approx(loss[0]).epsilon(1e-12));
}

}  // namespace rpb

namespace rpb {

TEST_CASE("a grid model with every 2-D position scheme trains on cuda as on the CPU, Swin's windows through the composite path") {
  for (const std::string& scheme : nn::scheme_names(2)) {
    INFO(std::string("scheme " + scheme));
    const nn::TransformerOptions o = testing::tiny_grid(scheme);
    const nn::WindowOptions w = testing::tiny_windows();
    double loss[2];
    std::vector<std::vector<double>> grads[2];
    for (const Device device : {Device::cpu, Device::cuda}) {
      Generator gen(14);
      nn::GridModel m(o, w, gen);
      m.to(DType::f64);
      m.to(device);
      Generator data(5);
      const Tensor x = randint({2, 4, 4}, 3, data), y = randint({2, 4, 4}, 3, data);
      const Tensor l = m.loss(x, y);
      backward(l);
      const int d = device == Device::cuda;
      loss[d] = l.item();
      for (const auto& [name, p] : m.named_parameters())
        grads[d].push_back(p.grad().defined() ? p.grad().to_vector() : std::vector<double>());
    }
    CHECK(loss[1] == doctest::Approx(loss[0]).epsilon(1e-12));
    REQUIRE(grads[0].size() == grads[1].size());
    for (std::size_t i = 0; i < grads[0].size(); ++i) {
      REQUIRE(grads[0][i].size() == grads[1][i].size());
      for (std::size_t k = 0; k < grads[0][i].size(); ++k) CHECK(std::fabs(grads[0][i][k] - grads[1][i][k]) <= 1e-10);
    }
  }
}

}  // namespace rpb
