#include "cli/demo.h"

#include <spdlog/spdlog.h>

#include <cmath>
#include <memory>
#include <numbers>

#include "core/core.h"
#include "nn/init.h"
#include "optim/sgd.h"

namespace rpb {

namespace {

// Two interleaved spirals, one per class, with a little Gaussian noise.
void make_spirals(int n, Generator& gen, Tensor& points, Tensor& labels) {
  std::vector<float> xy;
  std::vector<int64_t> y;
  for (int c = 0; c < 2; ++c)
    for (int i = 0; i < n; ++i) {
      const double r = 0.1 + 0.9 * i / n;
      const double t = 3.5 * std::numbers::pi * i / n + c * std::numbers::pi;
      xy.push_back(static_cast<float>(r * std::cos(t) + 0.02 * gen.normal()));
      xy.push_back(static_cast<float>(r * std::sin(t) + 0.02 * gen.normal()));
      y.push_back(c);
    }
  points = Tensor::from_vector<float>({2 * n, 2}, xy);  // (N, 2)
  labels = Tensor::indices({2 * n}, y);                 // (N,)
}

}  // namespace

DemoResult run_demo(const DemoOptions& o) {
  RPB_CHECK(o.steps > 0 && o.hidden > 0 && o.points_per_class > 0, "demo", "steps, hidden and points must be positive");
  Generator gen(o.seed);
  Tensor x, y;
  make_spirals(o.points_per_class, gen, x, y);

  const int64_t h = o.hidden;
  nn::NamedTensors params;
  auto param = [&](const std::string& name, const Shape& shape) {
    Tensor t = Tensor::zeros(shape).requires_grad_();
    if (shape.size() == 2) init::normal_(t, gen, 1.0 / std::sqrt(static_cast<double>(shape[0])));
    params.emplace_back(name, t);
    return t;
  };
  const Tensor w1 = param("fc1.weight", {2, h}), b1 = param("fc1.bias", {h});  // (2, H), (H)
  const Tensor w2 = param("fc2.weight", {h, h}), b2 = param("fc2.bias", {h});  // (H, H), (H)
  const Tensor w3 = param("fc3.weight", {h, 2}), b3 = param("fc3.bias", {2});  // (H, 2), (2)
  optim::SGD opt(params, {.momentum = o.momentum});

  auto forward = [&] {
    Tensor a = tanh(matmul(x, w1) + b1);
    a = tanh(matmul(a, w2) + b2);
    return matmul(a, w3) + b3;  // (N, 2) logits
  };

  DemoResult r;
  for (int step = 1; step <= o.steps; ++step) {
    opt.zero_grad();
    Tensor loss = cross_entropy(forward(), y);
    if (step == 1) r.initial_loss = loss.item();
    backward(loss);
    opt.step(o.lr);
    if (o.log_every > 0 && (step % o.log_every == 0 || step == 1))
      spdlog::info("demo step {:5d}/{}  loss {:.4f}", step, o.steps, loss.item());
  }
  NoGradGuard no_grad;
  const Tensor logits = forward();
  r.final_loss = cross_entropy(logits, y).item();
  int correct = 0;
  for (int64_t i = 0; i < logits.size(0); ++i)
    correct += (logits.at({i, 1}) > logits.at({i, 0})) == (y.data<int64_t>()[i] == 1);
  r.accuracy = static_cast<double>(correct) / static_cast<double>(logits.size(0));
  return r;
}

std::function<int()> add_demo_command(CLI::App& cmd) {
  auto o = std::make_shared<DemoOptions>();
  cmd.add_option("--steps", o->steps, "SGD steps")->check(CLI::Range(1, 100000000));
  cmd.add_option("--hidden", o->hidden, "hidden width")->check(CLI::Range(1, 65536));
  cmd.add_option("--lr", o->lr, "learning rate")->check(CLI::Range(1e-12, 1e3));
  cmd.add_option("--seed", o->seed, "random seed");
  cmd.add_option("--log-every", o->log_every, "steps between progress lines (0: none)")->check(CLI::Range(0, 100000000));
  return [o] {
    const DemoResult r = run_demo(*o);
    spdlog::info("demo done: loss {:.4f} -> {:.4f}, training accuracy {:.1f}%", r.initial_loss, r.final_loss,
                 100.0 * r.accuracy);
    return r.accuracy > 0.5 ? 0 : 1;
  };
}

}  // namespace rpb
