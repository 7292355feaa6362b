// optim/: Adam/AdamW, SGD, parameter groups, optimizer state, clipping, schedules.
#include <doctest/doctest.h>

#include <cmath>
#include <cstring>
#include <limits>

#include "core/core.h"
#include "optim/adam.h"
#include "optim/clip.h"
#include "optim/schedule.h"
#include "optim/sgd.h"
#include "test_util.h"

using namespace rpb;
using namespace rpb::optim;
using rpb::testing::contains;
using rpb::testing::error_of;

namespace {

// Sets p's gradient to exactly c (float64 constant) by backpropagating sum(p * c).
void set_grad(const Tensor& p, const std::vector<double>& c) {
  p.zero_grad();
  backward(sum(mul(p, Tensor::from_vector<double>(p.shape(), c).to(p.dtype()))));
}

Tensor scalar_param(double v) { return Tensor::from_vector<double>({1}, {v}).requires_grad_(); }

bool bit_equal(const Tensor& a, const Tensor& b) {
  return a.shape() == b.shape() && a.dtype() == b.dtype() &&
         std::memcmp(a.raw_data(), b.raw_data(), static_cast<std::size_t>(a.numel()) * dtype_size(a.dtype())) == 0;
}

// Runs the three gradients 0.5, 0.25, -1.0 through `opt` at lr 0.1 and returns p after each step.
std::vector<double> three_steps(Optimizer& opt, const Tensor& p) {
  std::vector<double> out;
  for (double g : {0.5, 0.25, -1.0}) {
    set_grad(p, {g});
    opt.step(0.1);
    out.push_back(p.item());
  }
  return out;
}

}  // namespace

// ---------------------------------------------------------------- Adam by hand

// p0 = 1, gradients 0.5, 0.25, -1.0, lr 0.1, beta1 0.9, beta2 0.999, eps 1e-8.
// t=1: m = 0.1*0.5 = 0.05;               v = 0.001*0.25 = 0.00025
//      m_hat = 0.05/0.1 = 0.5;           v_hat = 0.00025/0.001 = 0.25, sqrt 0.5
//      p = 1 - 0.1*0.5/(0.5+1e-8)                          = 0.900000001999999960
// t=2: m = 0.9*0.05 + 0.1*0.25 = 0.07;   v = 0.999*0.00025 + 0.001*0.0625 = 0.00031225
//      m_hat = 0.07/0.19 = 0.368421052631578947; v_hat = 0.00031225/0.001999 = 0.156203101550775388
//      p = 0.900000002 - 0.1*0.368421052631578947/(0.395225380... + 1e-8) = 0.806782040477461669
// t=3: m = 0.9*0.07 - 0.1 = -0.037;      v = 0.999*0.00031225 + 0.001*1 = 0.00131193775
//      m_hat = -0.037/0.271 = -0.136531365313653137; v_hat = 0.00131193775/0.002997001 = 0.437750187604208340
//      p = 0.806782040477 + 0.1*0.136531365313653137/(0.661626318... + 1e-8) = 0.827417742885410756
TEST_CASE("Adam: the first three steps match hand-computed values") {
  Tensor p = scalar_param(1.0);
  Adam opt({{"p", p}});
  const std::vector<double> got = three_steps(opt, p);
  CHECK(std::abs(got[0] - 0.900000001999999960) < 1e-12);
  CHECK(std::abs(got[1] - 0.806782040477461669) < 1e-12);
  CHECK(std::abs(got[2] - 0.827417742885410756) < 1e-12);
  CHECK(opt.steps_taken() == 3);
}

// AdamW, weight decay 0.1: the moments are those above (decay does not touch the gradient);
// before each update p *= 1 - lr*wd = 0.99.
// t=1: p = 1*0.99 - 0.1*0.5/(0.5+1e-8)                         = 0.890000001999999960
// t=2: p = 0.890000002*0.99 - 0.0932136... (same update as Adam) = 0.787882040457461669
// t=3: p = 0.787882040457*0.99 + 0.0206357... (same update)      = 0.800638922460836139
TEST_CASE("AdamW: decoupled weight decay matches hand-computed values") {
  Tensor p = scalar_param(1.0);
  Adam opt({{"p", p}}, {.weight_decay = 0.1});
  const std::vector<double> got = three_steps(opt, p);
  CHECK(std::abs(got[0] - 0.890000001999999960) < 1e-12);
  CHECK(std::abs(got[1] - 0.787882040457461669) < 1e-12);
  CHECK(std::abs(got[2] - 0.800638922460836139) < 1e-12);
}

// Adam with L2 (coupled), weight decay 0.1: the gradient becomes g + 0.1*p.
// t=1: g' = 0.5 + 0.1*1 = 0.6;  m = 0.06; v = 0.00036; m_hat = 0.6; v_hat = 0.36, sqrt 0.6
//      p = 1 - 0.1*0.6/(0.6+1e-8)                                         = 0.900000001666666639
// t=2: g' = 0.25 + 0.0900000001666666639 = 0.340000000166666664
//      m = 0.054 + 0.0340000000166666664 = 0.0880000000166666664
//      v = 0.999*0.00036 + 0.001*g'^2 = 0.00035964 + 0.000115600000113333 = 0.000475240000113333
//      m_hat = m/0.19 = 0.463157894824561402; v_hat = v/0.001999 = 0.237738869491412372
//      p = 0.900000001666666639 - 0.1*m_hat/(sqrt(v_hat)+1e-8)           = 0.805009765861319281
// t=3: g' = -1 + 0.0805009765861319281 = -0.919499023413868072
//      m = 0.9*m - 0.0919499023413868072 = -0.0127499023263868074
//      v = 0.999*v + 0.001*g'^2 = 0.00132024321417227710
//      m_hat = m/0.271 = -0.0470476100604679241; v_hat = v/0.002997001 = 0.440521445996273309
//      p = 0.805009765861319281 - 0.1*m_hat/(sqrt(v_hat)+1e-8)           = 0.812098260778676624
TEST_CASE("Adam (coupled L2): weight decay in the gradient matches hand-computed values") {
  Tensor p = scalar_param(1.0);
  Adam opt({{"p", p}}, {.weight_decay = 0.1, .decoupled = false});
  const std::vector<double> got = three_steps(opt, p);
  CHECK(std::abs(got[0] - 0.900000001666666639) < 1e-12);
  CHECK(std::abs(got[1] - 0.805009765861319281) < 1e-12);
  CHECK(std::abs(got[2] - 0.812098260778676624) < 1e-12);
}

TEST_CASE("Adam: a parameter without a gradient is skipped and keeps its own step count") {
  Tensor a = scalar_param(1.0), b = scalar_param(1.0);
  Adam opt({{"a", a}, {"b", b}}, {.weight_decay = 0.1});
  set_grad(a, {0.5});  // b has no gradient: unchanged, even by the decoupled decay
  opt.step(0.1);
  CHECK(b.item() == 1.0);
  CHECK(std::abs(a.item() - 0.890000001999999960) < 1e-12);
  // b's first gradient arrives on the optimizer's second step: its bias correction uses t = 1.
  opt.zero_grad();
  set_grad(b, {0.5});
  opt.step(0.1);
  CHECK(std::abs(b.item() - 0.890000001999999960) < 1e-12);
  CHECK(std::abs(a.item() - 0.890000001999999960) < 1e-12);  // a had no gradient this time
}

TEST_CASE("Adam: float32 and float64 updates agree") {
  Tensor p32 = Tensor::from_vector<float>({3}, {1.0f, -2.0f, 0.5f}).requires_grad_();
  Tensor p64 = Tensor::from_vector<double>({3}, {1.0, -2.0, 0.5}).requires_grad_();
  Adam o32({{"p", p32}}, {.weight_decay = 0.01}), o64({{"p", p64}}, {.weight_decay = 0.01});
  for (int s = 0; s < 5; ++s) {
    const std::vector<double> g = {0.3 * s - 0.5, 1.0, -0.25 * s};
    set_grad(p32, g);
    set_grad(p64, g);
    o32.step(0.05);
    o64.step(0.05);
  }
  CHECK(p32.dtype() == DType::f32);
  const std::vector<double> a = p32.to_vector(), b = p64.to_vector();
  for (int i = 0; i < 3; ++i) CHECK(a[i] == doctest::Approx(b[i]).epsilon(1e-5));
}

// ---------------------------------------------------------------- convergence

TEST_CASE("Adam: a quadratic converges to its target") {
  const Tensor target = Tensor::from_vector<double>({4}, {1.5, -2.0, 0.25, 3.0});
  Tensor p = Tensor::zeros({4}, DType::f64).requires_grad_();
  Adam opt({{"p", p}});
  for (int s = 0; s < 3000; ++s) {
    opt.zero_grad();
    backward(sum(pow(p - target, 2.0)));
    opt.step(learning_rate({.kind = ScheduleKind::cosine, .lr = 0.1, .total_steps = 3000, .min_lr_ratio = 0.01}, s));
  }
  const std::vector<double> got = p.to_vector(), want = target.to_vector();
  for (int i = 0; i < 4; ++i) CHECK(std::abs(got[i] - want[i]) < 1e-4);
}

TEST_CASE("Adam: a small linear regression recovers its weights and bias") {
  Generator gen(7);
  const Tensor X = randn({64, 3}, gen);                                          // (64, 3)
  const Tensor w_star = Tensor::from_vector<float>({3, 1}, {1.5f, -2.0f, 0.5f});  // (3, 1)
  const double b_star = 0.3;
  const Tensor y = matmul(X, w_star) + b_star;  // (64, 1)
  Tensor w = Tensor::zeros({3, 1}).requires_grad_();
  Tensor b = Tensor::zeros({1}).requires_grad_();
  Adam opt({{"linear.weight", w}, {"linear.bias", b}});
  double loss_value = 0;
  for (int s = 0; s < 1500; ++s) {
    opt.zero_grad();
    Tensor loss = mean(pow(add(matmul(X, w), b) - y, 2.0));
    loss_value = loss.item();
    backward(loss);
    opt.step(learning_rate({.kind = ScheduleKind::cosine, .lr = 0.05, .warmup_steps = 10, .total_steps = 1500}, s));
  }
  CHECK(loss_value < 1e-4);
  const std::vector<double> got = w.to_vector();
  CHECK(std::abs(got[0] - 1.5) < 1e-2);
  CHECK(std::abs(got[1] + 2.0) < 1e-2);
  CHECK(std::abs(got[2] - 0.5) < 1e-2);
  CHECK(std::abs(b.item() - b_star) < 1e-2);
}

// ---------------------------------------------------------------- SGD by hand

// p0 = 1, gradients 0.5, 0.25, -1.0, lr 0.1, momentum 0.9 (v = 0.9 v + g; p -= 0.1 v):
// t=1: v = 0.5;                 p = 1 - 0.05 = 0.95
// t=2: v = 0.45 + 0.25 = 0.7;   p = 0.95 - 0.07 = 0.88
// t=3: v = 0.63 - 1 = -0.37;    p = 0.88 + 0.037 = 0.917
// With L2 weight decay 0.1 (g' = g + 0.1 p):
// t=1: g' = 0.6;                       v = 0.6;                      p = 1 - 0.06 = 0.94
// t=2: g' = 0.25 + 0.094 = 0.344;      v = 0.54 + 0.344 = 0.884;     p = 0.94 - 0.0884 = 0.8516
// t=3: g' = -1 + 0.08516 = -0.91484;   v = 0.7956 - 0.91484 = -0.11924; p = 0.8516 + 0.011924 = 0.863524
TEST_CASE("SGD with momentum matches hand-computed steps") {
  Tensor p = scalar_param(1.0);
  SGD opt({{"p", p}}, {.momentum = 0.9});
  std::vector<double> got = three_steps(opt, p);
  CHECK(std::abs(got[0] - 0.95) < 1e-12);
  CHECK(std::abs(got[1] - 0.88) < 1e-12);
  CHECK(std::abs(got[2] - 0.917) < 1e-12);

  Tensor q = scalar_param(1.0);
  SGD opt_wd({{"q", q}}, {.momentum = 0.9, .weight_decay = 0.1});
  got = three_steps(opt_wd, q);
  CHECK(std::abs(got[0] - 0.94) < 1e-12);
  CHECK(std::abs(got[1] - 0.8516) < 1e-12);
  CHECK(std::abs(got[2] - 0.863524) < 1e-12);

  Tensor r = scalar_param(1.0);  // no momentum: p -= lr * g
  SGD plain({{"r", r}});
  got = three_steps(plain, r);
  CHECK(std::abs(got[2] - (1.0 - 0.05 - 0.025 + 0.1)) < 1e-12);
}

// ---------------------------------------------------------------- groups

TEST_CASE("glob_match: '*' spans dots, '?' is one character, the whole name must match") {
  CHECK(glob_match("*.bias", "fc1.bias"));
  CHECK(glob_match("*.bias", "blocks.0.attn.qkv.bias"));
  CHECK_FALSE(glob_match("*.bias", "bias"));
  CHECK_FALSE(glob_match("*.bias", "fc1.bias_table"));
  CHECK(glob_match("pos.*", "pos.t5.table"));
  CHECK_FALSE(glob_match("pos.*", "blocks.0.pos.table"));
  CHECK(glob_match("*.pos.*", "blocks.0.pos.table"));
  CHECK(glob_match("*ln*", "blocks.0.ln1.weight"));
  CHECK_FALSE(glob_match("*ln*", "blocks.0.attn.weight"));
  CHECK(glob_match("blocks.?.attn.*", "blocks.3.attn.w"));
  CHECK_FALSE(glob_match("blocks.?.attn.*", "blocks.10.attn.w"));
  CHECK(glob_match("a*b*c", "aXXbYbc"));
  CHECK_FALSE(glob_match("a*b*c", "aXbY"));
  CHECK(glob_match("*", ""));
  CHECK(glob_match("**", "x.y"));
  CHECK_FALSE(glob_match("?", ""));
  CHECK(glob_match("w", "w"));
  CHECK_FALSE(glob_match("w", "ww"));
  CHECK_FALSE(glob_match("ww", "w"));
}

TEST_CASE("groups: resolved by name, first matching rule wins, unmatched get the default") {
  const nn::NamedTensors params = {
      {"enc.weight", Tensor::ones({2}).requires_grad_()},      {"enc.bias", Tensor::ones({2}).requires_grad_()},
      {"enc.ln.weight", Tensor::ones({2}).requires_grad_()},   {"pos.t5.table", Tensor::ones({2}).requires_grad_()},
      {"blocks.0.pos.table", Tensor::ones({2}).requires_grad_()}, {"head.weight", Tensor::ones({2}).requires_grad_()},
  };
  Adam opt(params, {.weight_decay = 0.05,
                    .groups = {{"*.bias", 0.0}, {"*ln*", 0.0}, {"enc.*", 0.2}, {"pos.*", 0.0, 0.1},
                               {"*.pos.*", 0.0, 0.1}, {"unused.*", 0.3}}});
  const auto& ps = opt.params();
  REQUIRE(ps.size() == 6);
  CHECK(ps[0].weight_decay == 0.2);  // enc.weight: "enc.*"
  CHECK(ps[1].weight_decay == 0.0);  // enc.bias: "*.bias" comes before "enc.*"
  CHECK(ps[2].weight_decay == 0.0);  // enc.ln.weight: "*ln*" comes before "enc.*"
  CHECK(ps[3].weight_decay == 0.0);
  CHECK(ps[3].lr_scale == 0.1);
  CHECK(ps[4].lr_scale == 0.1);  // "*.pos.*"
  CHECK(ps[5].weight_decay == 0.05);  // no rule: the default
  CHECK(ps[5].lr_scale == 1.0);
  CHECK(ps[0].lr_scale == 1.0);
  const std::string text = opt.describe_groups();
  CHECK(contains(text, "rule 0 '*.bias': weight_decay 0, lr_scale 1: 1 tensor, 2 values: enc.bias\n"));
  CHECK(contains(text, "rule 4 '*.pos.*': weight_decay 0, lr_scale 0.1: 1 tensor, 2 values: blocks.0.pos.table"));
  CHECK(contains(text, "rule 5 'unused.*': weight_decay 0.3, lr_scale 1: no parameters"));
  CHECK(contains(text, "default: weight_decay 0.05, lr_scale 1: 1 tensor, 2 values: head.weight"));
  CHECK(opt.state().groups == text);
}

TEST_CASE("groups: '*.bias' gets no weight decay in AdamW") {
  Tensor w = Tensor::ones({2}, DType::f64).requires_grad_(), b = Tensor::ones({2}, DType::f64).requires_grad_();
  Adam opt({{"fc.weight", w}, {"fc.bias", b}}, {.weight_decay = 0.1, .groups = {{"*.bias", 0.0}}});
  set_grad(w, {0.0, 0.0});  // zero gradients: only the decay moves a parameter
  set_grad(b, {0.0, 0.0});
  opt.step(0.5);
  CHECK(w.to_vector() == std::vector<double>{0.95, 0.95});
  CHECK(b.to_vector() == std::vector<double>{1.0, 1.0});
}

TEST_CASE("groups: a parameter with lr_scale 0.1 moves 10x less on step 1") {
  for (const bool adam : {true, false}) {
    CAPTURE(adam);
    Tensor a = Tensor::from_vector<double>({2}, {1.0, -1.0}).requires_grad_();
    Tensor b = Tensor::from_vector<double>({2}, {1.0, -1.0}).requires_grad_();
    const nn::NamedTensors params = {{"a.w", a}, {"pos.w", b}};
    const std::vector<GroupRule> rules = {{"pos.*", 0.0, 0.1}};
    std::unique_ptr<Optimizer> opt;
    if (adam) opt = std::make_unique<Adam>(params, AdamOptions{.groups = rules});
    else opt = std::make_unique<SGD>(params, SGDOptions{.momentum = 0.9, .groups = rules});
    set_grad(a, {0.3, -0.7});
    set_grad(b, {0.3, -0.7});
    opt->step(0.01);
    const std::vector<double> da = a.to_vector(), db = b.to_vector();
    for (int i = 0; i < 2; ++i) {
      const double base = i == 0 ? 1.0 : -1.0;
      CHECK(std::abs(da[i] - base) > 1e-4);
      CHECK(std::abs((db[i] - base) - 0.1 * (da[i] - base)) < 1e-12);
    }
  }
}

TEST_CASE("optimizer: construction and step validate their inputs") {
  Tensor w = Tensor::ones({2}).requires_grad_();
  std::string e = error_of([&] { Adam({{"w", w}, {"w", Tensor::ones({2}).requires_grad_()}}); });
  CHECK(contains(e, "duplicate parameter name 'w'"));
  e = error_of([&] { Adam({{"w", w}, {"v", w}}); });
  CHECK(contains(e, "parameter 'v' shares its storage with parameter 'w'"));
  e = error_of([&] { SGD({{"frozen", Tensor::ones({2})}}); });
  CHECK(contains(e, "parameter 'frozen' is not a leaf that requires grad"));
  e = error_of([&] { SGD({{"derived", w * 2.0}}); });
  CHECK(contains(e, "parameter 'derived' is not a leaf"));
  tape().clear();  // w * 2.0 was recorded and never differentiated
  e = error_of([&] { Adam({}); });
  CHECK(contains(e, "empty parameter list"));
  e = error_of([&] { Adam({{"w", w}}, {.beta2 = 1.0}); });
  CHECK(contains(e, "beta2 must lie in [0, 1), got 1"));
  e = error_of([&] { SGD({{"w", w}}, {.momentum = 1.5}); });
  CHECK(contains(e, "momentum must lie in [0, 1), got 1.5"));
  e = error_of([&] { Adam({{"w", w}}, {.groups = {{"*.bias", -0.1}}}); });
  CHECK(contains(e, "group rule 0 '*.bias': weight_decay must be finite and >= 0, got -0.1"));
  Adam opt({{"w", w}});
  e = error_of([&] { opt.step(-1.0); });
  CHECK(contains(e, "adam: learning rate must be finite and >= 0, got -1"));
  CHECK(opt.steps_taken() == 0);
}

// ---------------------------------------------------------------- state

namespace {

// Three float32 parameters; "c" only gets a gradient on even steps (so per-parameter
// counts differ). The gradients depend on the parameters, as in training.
struct Toy {
  Tensor a = Tensor::from_vector<float>({2, 3}, {0.1f, -0.2f, 0.3f, 0.4f, -0.5f, 0.6f}).requires_grad_();
  Tensor b = Tensor::from_vector<float>({3}, {1.0f, 2.0f, -1.0f}).requires_grad_();
  Tensor c = Tensor::from_vector<float>({2}, {0.7f, -0.3f}).requires_grad_();
  nn::NamedTensors named() const { return {{"layer.weight", a}, {"layer.bias", b}, {"pos.table", c}}; }
  void copy_from(const Toy& o) {
    a.copy_(o.a);
    b.copy_(o.b);
    c.copy_(o.c);
  }
  void run(Optimizer& opt, int from, int to) {
    for (int s = from; s < to; ++s) {
      opt.zero_grad();
      Tensor loss = sum(pow(a - 0.25, 2.0)) + sum(exp(b * 0.1)) * 0.5;
      if (s % 2 == 0) loss = loss + sum(pow(c, 4.0));
      backward(loss);
      opt.step(0.01 * (1.0 + 0.1 * s));
    }
  }
};

void check_resume_is_bit_identical(const std::function<std::unique_ptr<Optimizer>(const nn::NamedTensors&)>& make) {
  Toy run;
  std::unique_ptr<Optimizer> opt = make(run.named());
  run.run(*opt, 0, 5);
  const OptimizerState saved = opt->state();
  Toy at5;
  at5.copy_from(run);
  run.run(*opt, 5, 10);

  Toy resumed;
  resumed.copy_from(at5);
  std::unique_ptr<Optimizer> opt2 = make(resumed.named());
  opt2->load_state(saved);
  CHECK(opt2->steps_taken() == 5);
  resumed.run(*opt2, 5, 10);
  CHECK(opt2->steps_taken() == 10);
  CHECK(bit_equal(resumed.a, run.a));
  CHECK(bit_equal(resumed.b, run.b));
  CHECK(bit_equal(resumed.c, run.c));
  CHECK_FALSE(bit_equal(resumed.a, at5.a));  // the last five steps did move the parameters
  const OptimizerState s1 = opt->state(), s2 = opt2->state();
  REQUIRE(s1.tensors.size() == s2.tensors.size());
  for (std::size_t i = 0; i < s1.tensors.size(); ++i) {
    CHECK(s1.tensors[i].first == s2.tensors[i].first);
    CHECK(bit_equal(s1.tensors[i].second, s2.tensors[i].second));
  }
}

}  // namespace

TEST_CASE("Adam state: save after 5 steps, resume in a fresh optimizer, 5 more steps are bit-identical") {
  check_resume_is_bit_identical([](const nn::NamedTensors& p) -> std::unique_ptr<Optimizer> {
    return std::make_unique<Adam>(p, AdamOptions{.weight_decay = 0.1, .groups = {{"pos.*", 0.0, 0.5}}});
  });
}

TEST_CASE("SGD state: save after 5 steps, resume, 5 more steps are bit-identical") {
  check_resume_is_bit_identical([](const nn::NamedTensors& p) -> std::unique_ptr<Optimizer> {
    return std::make_unique<SGD>(p, SGDOptions{.momentum = 0.9, .weight_decay = 0.01});
  });
}

TEST_CASE("Adam state: contents, and a fresh optimizer without the state diverges") {
  Toy t;
  Adam opt(t.named(), {.beta1 = 0.8});
  t.run(opt, 0, 3);
  const OptimizerState s = opt.state();
  CHECK(s.kind == "adam");
  CHECK(s.step == 3);
  REQUIRE(s.tensors.size() == 9);
  CHECK(s.tensors[0].first == "exp_avg/layer.weight");
  CHECK(s.tensors[1].first == "exp_avg_sq/layer.weight");
  CHECK(s.tensors[2].first == "step/layer.weight");
  CHECK(s.tensors[2].second.item() == 3);
  CHECK(s.tensors[8].first == "step/pos.table");
  CHECK(s.tensors[8].second.item() == 2);  // steps 0 and 2 only
  bool has_beta1 = false;
  for (const auto& [k, v] : s.scalars) has_beta1 |= k == "beta1" && v == 0.8;
  CHECK(has_beta1);
  // the saved state is a copy: stepping again does not change it
  const Tensor m0 = s.tensors[0].second.clone();
  t.run(opt, 3, 4);
  CHECK(bit_equal(m0, s.tensors[0].second));
}

TEST_CASE("load_state: errors name the tensor, expected and found, nothing changes on error") {
  Tensor w3 = Tensor::ones({3}).requires_grad_();
  Adam src({{"w", w3}});
  set_grad(w3, {1, 2, 3});
  src.step(0.1);
  const OptimizerState s = src.state();

  Tensor w4 = Tensor::ones({4}).requires_grad_();
  Adam dst({{"w", w4}});
  std::string e = error_of([&] { dst.load_state(s); });
  CHECK(contains(e, "adam.load_state: tensor 'exp_avg/w': expected shape [4] float32, found [3] float32"));
  CHECK(dst.steps_taken() == 0);

  Tensor w64 = Tensor::ones({3}, DType::f64).requires_grad_();
  Adam dst64({{"w", w64}});
  e = error_of([&] { dst64.load_state(s); });
  CHECK(contains(e, "tensor 'exp_avg/w': expected shape [3] float64, found [3] float32"));

  Adam other({{"v", Tensor::ones({3}).requires_grad_()}});
  e = error_of([&] { other.load_state(s); });
  CHECK(contains(e, "tensor 'exp_avg/w' names no parameter"));

  SGD sgd({{"w", Tensor::ones({3}).requires_grad_()}}, {.momentum = 0.9});
  e = error_of([&] { sgd.load_state(s); });
  CHECK(contains(e, "sgd.load_state: state of kind 'adam', expected 'sgd'"));

  OptimizerState partial = s;
  partial.tensors.erase(partial.tensors.begin() + 1);  // drop exp_avg_sq/w
  Adam same({{"w", Tensor::ones({3}).requires_grad_()}});
  e = error_of([&] { same.load_state(partial); });
  CHECK(contains(e, "no 'exp_avg_sq/w'"));

  OptimizerState unknown = s;
  unknown.tensors.emplace_back("velocity/w", Tensor::ones({3}));
  e = error_of([&] { same.load_state(unknown); });
  CHECK(contains(e, "tensor 'velocity/w' has unknown slot 'velocity'"));
  CHECK(same.steps_taken() == 0);
  same.load_state(s);
  CHECK(same.steps_taken() == 1);
}

// ---------------------------------------------------------------- clipping

TEST_CASE("clip_grad_norm: returns the global norm and clips to max_norm") {
  Tensor a = Tensor::zeros({2}).requires_grad_(), b = Tensor::zeros({1}, DType::f64).requires_grad_();
  Tensor none = Tensor::zeros({3}).requires_grad_();  // no gradient: ignored
  Adam opt({{"a", a}, {"b", b}, {"none", none}});
  set_grad(a, {3.0, 4.0});
  set_grad(b, {12.0});
  CHECK(clip_grad_norm(opt.params(), 100.0) == doctest::Approx(13.0));  // below max: untouched
  CHECK(a.grad().to_vector() == std::vector<double>{3.0, 4.0});
  const double norm = clip_grad_norm(opt.params(), 1.0);
  CHECK(norm == doctest::Approx(13.0).epsilon(1e-12));
  const double coef = 1.0 / (13.0 + 1e-6);
  CHECK(a.grad().to_vector()[1] == doctest::Approx(4.0 * coef).epsilon(1e-6));
  CHECK(b.grad().item() == doctest::Approx(12.0 * coef).epsilon(1e-12));
  CHECK(clip_grad_norm(opt.params(), 1.0) == doctest::Approx(1.0).epsilon(1e-5));
  CHECK(!none.grad().defined());
  CHECK(contains(error_of([&] { clip_grad_norm(opt.params(), 0.0); }), "max_norm must be finite and > 0, got 0"));
}

TEST_CASE("clip_grad_norm: a gradient shared by two parameters is scaled once for each") {
  Tensor a = Tensor::zeros({2}, DType::f64).requires_grad_(), b = Tensor::zeros({2}, DType::f64).requires_grad_();
  SGD opt({{"a", a}, {"b", b}});
  backward(sum(mul(a + b, Tensor::from_vector<double>({2}, {3.0, 4.0}))));  // both gradients (3, 4)
  REQUIRE(a.grad().shares_storage(b.grad()));  // add's backward hands both inputs one tensor
  CHECK(clip_grad_norm(opt.params(), 1.0) == doctest::Approx(std::sqrt(50.0)));
  const double coef = 1.0 / (std::sqrt(50.0) + 1e-6);
  CHECK(a.grad().to_vector()[0] == doctest::Approx(3.0 * coef).epsilon(1e-12));
  CHECK(b.grad().to_vector()[0] == doctest::Approx(3.0 * coef).epsilon(1e-12));
}

TEST_CASE("non-finite gradients: named by first_non_finite_grad, left alone by clip_grad_norm") {
  Tensor ok = Tensor::zeros({2}).requires_grad_(), bad = Tensor::zeros({3}).requires_grad_();
  Tensor later = Tensor::zeros({1}).requires_grad_();
  SGD opt({{"ok.weight", ok}, {"bad.weight", bad}, {"later", later}});
  set_grad(ok, {1.0, 2.0});
  set_grad(bad, {1.0, 2.0, 3.0});
  CHECK(!first_non_finite_grad(opt.params()).has_value());
  const double nan = std::numeric_limits<double>::quiet_NaN(), inf = std::numeric_limits<double>::infinity();
  set_grad(bad, {1.0, nan, 3.0});
  set_grad(later, {inf});
  const auto name = first_non_finite_grad(opt.params());
  REQUIRE(name.has_value());
  CHECK(*name == "bad.weight");
  CHECK(std::isnan(clip_grad_norm(opt.params(), 1.0)));
  CHECK(ok.grad().to_vector() == std::vector<double>{1.0, 2.0});  // untouched
  set_grad(bad, {1.0, 2.0, 3.0});
  CHECK(*first_non_finite_grad(opt.params()) == "later");
  CHECK(std::isinf(clip_grad_norm(opt.params(), 1.0)));
}

// ---------------------------------------------------------------- schedules

TEST_CASE("schedule: constant with linear warm-up") {
  const ScheduleOptions o{.kind = ScheduleKind::constant, .lr = 2.0, .warmup_steps = 4};
  CHECK(learning_rate(o, 0) == 0.5);
  CHECK(learning_rate(o, 1) == 1.0);
  CHECK(learning_rate(o, 3) == 2.0);
  CHECK(learning_rate(o, 4) == 2.0);
  CHECK(learning_rate(o, 1000) == 2.0);
  CHECK(learning_rate({.lr = 0.3}, 0) == 0.3);  // no warm-up
}

TEST_CASE("schedule: cosine after warm-up reaches the midpoint and the floor") {
  const ScheduleOptions o{
      .kind = ScheduleKind::cosine, .lr = 1.0, .warmup_steps = 10, .total_steps = 110, .min_lr_ratio = 0.1};
  CHECK(learning_rate(o, 0) == doctest::Approx(0.1));
  CHECK(learning_rate(o, 9) == doctest::Approx(1.0));
  CHECK(learning_rate(o, 10) == doctest::Approx(1.0));
  CHECK(learning_rate(o, 60) == doctest::Approx(0.55).epsilon(1e-12));  // halfway: (lr + min) / 2
  CHECK(learning_rate(o, 35) == doctest::Approx(0.1 + 0.9 * 0.5 * (1 + std::sqrt(0.5))).epsilon(1e-12));
  CHECK(learning_rate(o, 110) == doctest::Approx(0.1).epsilon(1e-12));
  CHECK(learning_rate(o, 500) == doctest::Approx(0.1).epsilon(1e-12));
  CHECK(learning_rate(o, 109) > learning_rate(o, 110));
}

TEST_CASE("schedule: invalid options raise errors naming the key") {
  CHECK(contains(error_of([] { learning_rate({.lr = 0.0}, 0); }), "schedule: lr must be finite and > 0, got 0"));
  CHECK(!enum_value(kScheduleKindNames, "linear").has_value());  // optim.schedule's names: the config refuses others
  CHECK(enum_value(kScheduleKindNames, "cosine") == ScheduleKind::cosine);
  CHECK(std::string(enum_name(kScheduleKindNames, ScheduleKind::constant)) == "constant");
  CHECK(contains(error_of([] { learning_rate({.warmup_steps = -1}, 0); }), "warmup_steps must be >= 0, got -1"));
  using K = ScheduleKind;
  CHECK(contains(error_of([] { learning_rate({.kind = K::cosine, .warmup_steps = 10, .total_steps = 10}, 0); }),
                 "total_steps (10) must exceed warmup_steps (10)"));
  CHECK(contains(error_of([] { learning_rate({.kind = K::cosine, .total_steps = 10, .min_lr_ratio = 1.5}, 0); }),
                 "min_lr_ratio must lie in [0, 1], got 1.5"));
  CHECK(contains(error_of([] { learning_rate({}, -1); }), "step must be >= 0, got -1"));
  CHECK(error_of([] { check_schedule({.kind = ScheduleKind::cosine, .total_steps = 1}); }).empty());
}
