// Forward values, gradients against composites, stability and errors for the
// unary, softmax, layer_norm, dropout and cross_entropy ops, in float32 and float64.
#include <doctest/doctest.h>

#include <cmath>
#include <functional>
#include <limits>
#include <string>
#include <vector>

#include "core/core.h"
#include "test_util.h"
#include "tensor_checks.h"

using namespace rpb;
using rpb::testing::all_finite;
using rpb::testing::contains;
using rpb::testing::error_of;

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();
const DType kFloatTypes[] = {DType::f32, DType::f64};

double tol_of(DType dt) { return dt == DType::f32 ? 2e-6 : 1e-12; }

Tensor make(const Shape& shape, const std::vector<double>& values, DType dt) {
  return Tensor::from_vector<double>(shape, values).to(dt);
}

void check_relative(const Tensor& t, const std::vector<double>& expect, double tol) {
  const std::vector<double> v = t.to_vector();
  REQUIRE(v.size() == expect.size());
  for (std::size_t i = 0; i < v.size(); ++i) {
    CAPTURE(i);
    if (tol == 0) CHECK(v[i] == expect[i]);
    else CHECK(v[i] == doctest::Approx(expect[i]).epsilon(tol));
  }
}

void check_same(const Tensor& a, const Tensor& b, double tol) {
  REQUIRE(a.shape() == b.shape());
  check_relative(a, b.to_vector(), tol);
}

// Gradient of sum(f(x) * w) for a fixed weight w of f(x)'s shape (w = 1 when undefined).
Tensor grad_of(const std::function<Tensor(const Tensor&)>& f, const Tensor& x0, const Tensor& w = Tensor()) {
  Tensor x = x0.clone().requires_grad_();
  Tensor y = f(x);
  backward(y, w.defined() ? w : Tensor::ones(y.shape(), y.dtype()));
  return x.grad();
}


}  // namespace

// ---------------------------------------------------------------- unary

TEST_CASE("unary ops: forward values") {
  for (DType dt : kFloatTypes) {
    CAPTURE(dtype_name(dt));
    const double tol = tol_of(dt);
    const Tensor x = make({5}, {-2, -0.5, 0, 0.5, 2}, dt);
    check_relative(exp(x), {0.1353352832366127, 0.6065306597126334, 1.0, 1.6487212707001282, 7.38905609893065}, tol);
    check_relative(tanh(x), {-0.9640275800758169, -0.46211715726000974, 0.0, 0.46211715726000974, 0.9640275800758169},
                 tol);
    check_relative(sigmoid(x),
                 {0.11920292202211755, 0.3775406687981454, 0.5, 0.6224593312018546, 0.8807970779778823}, tol);
    check_relative(relu(x), {0, 0, 0, 0.5, 2}, tol);
    const Tensor p = make({2, 2}, {0.25, 1, 2, 10}, dt);
    check_relative(log(p), {-1.3862943611198906, 0.0, 0.6931471805599453, 2.302585092994046}, tol);
    check_relative(sqrt(p), {0.5, 1.0, 1.4142135623730951, 3.1622776601683795}, tol);
    CHECK(exp(x).dtype() == dt);
    CHECK(sqrt(p).shape() == Shape{2, 2});
  }
}

TEST_CASE("unary ops: extreme inputs stay finite where the function is") {
  for (DType dt : kFloatTypes) {
    CAPTURE(dtype_name(dt));
    const Tensor x = make({4}, {-1000, -50, 50, 1000}, dt);
    check_relative(sigmoid(x), {0, 1.9287498479639178e-22, 1, 1}, 1e-6);
    check_relative(tanh(x), {-1, -1, 1, 1}, 0);
    check_relative(gelu(x, GeluApprox::erf), {0, 0, 50, 1000}, 1e-6);
    check_relative(gelu(x, GeluApprox::tanh), {0, 0, 50, 1000}, 1e-6);
    CHECK(exp(make({1}, {-1000}, dt)).item() == 0.0);
  }
}

TEST_CASE("gelu: erf and tanh forms") {
  for (DType dt : kFloatTypes) {
    CAPTURE(dtype_name(dt));
    const double tol = tol_of(dt);
    const Tensor x = make({7}, {-3, -1, -0.5, 0, 0.5, 1, 3}, dt);
    check_relative(gelu(x, GeluApprox::erf), {-0.00404969409489031, -0.15865525393145707, -0.15426876936299344, 0.0,
                                            0.34573123063700656, 0.8413447460685429, 2.99595030590511},
                 tol);
    check_relative(gelu(x, GeluApprox::tanh), {-0.0036373920817729943, -0.15880800939172324, -0.15428599017485606, 0.0,
                                             0.34571400982514394, 0.8411919906082768, 2.996362607918227},
                 tol);
    CHECK(gelu(x).to_vector() == gelu(x, GeluApprox::erf).to_vector());  // erf is the default
  }
}

TEST_CASE("unary ops: gradients at known points") {
  for (DType dt : kFloatTypes) {
    CAPTURE(dtype_name(dt));
    const double tol = dt == DType::f32 ? 1e-5 : 1e-12;
    const Tensor x = make({4}, {-1, 0, 0.5, 1}, dt);
    check_relative(grad_of([](const Tensor& t) { return sigmoid(t); }, x),
                 {0.19661193324148185, 0.25, 0.2350037122015945, 0.19661193324148185}, tol);
    check_relative(grad_of([](const Tensor& t) { return tanh(t); }, x),
                 {0.41997434161402614, 1.0, 0.7864477329659274, 0.41997434161402614}, tol);
    check_relative(grad_of([](const Tensor& t) { return relu(t); }, x), {0, 0, 1, 1}, 0);
    check_relative(grad_of([](const Tensor& t) { return gelu(t, GeluApprox::erf); }, x),
                 {-0.08331547058768629, 0.5, 0.8674951246561629, 1.0833154705876864}, tol);
    check_relative(grad_of([](const Tensor& t) { return gelu(t, GeluApprox::tanh); }, x),
                 {-0.08296408384578255, 0.5, 0.8673699035346424, 1.0829640838457826}, tol);
    check_relative(grad_of([](const Tensor& t) { return exp(t); }, x),
                 {0.36787944117144233, 1.0, 1.6487212707001282, 2.718281828459045}, tol);
    const Tensor p = make({3}, {0.25, 1, 4}, dt);
    check_relative(grad_of([](const Tensor& t) { return log(t); }, p), {4, 1, 0.25}, tol);
    check_relative(grad_of([](const Tensor& t) { return sqrt(t); }, p), {1, 0.5, 0.25}, tol);
    // The upstream gradient multiplies in.
    check_relative(grad_of([](const Tensor& t) { return exp(t); }, make({2}, {0, 0}, dt), make({2}, {3, -2}, dt)),
                 {3, -2}, tol);
  }
}

TEST_CASE("unary ops record one node each, and nothing without grad") {
  tape().clear();
  Tensor x = Tensor::ones({3}).requires_grad_();
  const std::vector<std::pair<std::function<Tensor(const Tensor&)>, OpKind>> ops = {
      {[](const Tensor& t) { return exp(t); }, OpKind::Exp},
      {[](const Tensor& t) { return log(t); }, OpKind::Log},
      {[](const Tensor& t) { return sqrt(t); }, OpKind::Sqrt},
      {[](const Tensor& t) { return tanh(t); }, OpKind::Tanh},
      {[](const Tensor& t) { return sigmoid(t); }, OpKind::Sigmoid},
      {[](const Tensor& t) { return relu(t); }, OpKind::Relu},
      {[](const Tensor& t) { return gelu(t, GeluApprox::erf); }, OpKind::GeluErf},
      {[](const Tensor& t) { return gelu(t, GeluApprox::tanh); }, OpKind::GeluTanh},
  };
  for (const auto& op : ops) {  // not a structured binding: clang 14 cannot capture one (CAPTURE)
    const auto& f = op.first;
    const OpKind kind = op.second;
    CAPTURE(op_name(kind));
    Tensor y = f(x);
    REQUIRE(tape().size() == 1);
    CHECK(tape().nodes()[0].op == kind);
    CHECK(y.requires_grad());
    tape().clear();
    {
      NoGradGuard no_grad;
      CHECK_FALSE(f(x).requires_grad());
    }
    CHECK(tape().size() == 0);
  }
}

// ---------------------------------------------------------------- softmax

TEST_CASE("softmax and log_softmax: values") {
  for (DType dt : kFloatTypes) {
    CAPTURE(dtype_name(dt));
    const double tol = tol_of(dt);
    const Tensor x = make({3}, {1, 2, 3}, dt);
    check_relative(softmax(x), {0.09003057317038046, 0.24472847105479767, 0.6652409557748219}, tol);
    check_relative(log_softmax(x), {-2.40760596444438, -1.4076059644443801, -0.40760596444438013}, tol);
    // Shifting a row does not change it.
    check_relative(softmax(make({3}, {101, 102, 103}, dt)), {0.09003057317038046, 0.24472847105479767, 0.6652409557748219},
                 tol);
    // Over axis 0 of [[1, 2], [3, 4]]: each column is softmax([a, a + 2]).
    const Tensor m = make({2, 2}, {1, 2, 3, 4}, dt);
    check_relative(softmax(m, 0), {0.11920292202211755, 0.11920292202211755, 0.8807970779778823, 0.8807970779778823},
                 tol);
    check_relative(log_softmax(m, 0),
                 {-2.1269280110429727, -2.1269280110429727, -0.12692801104297263, -0.12692801104297263}, tol);
    check_relative(softmax(m, -1), {0.2689414213699951, 0.7310585786300049, 0.2689414213699951, 0.7310585786300049},
                 tol);
    // A length-1 axis gives ones (softmax) and zeros (log_softmax).
    check_relative(softmax(make({2, 1}, {-5, 7}, dt)), {1, 1}, 0);
    check_relative(log_softmax(make({2, 1}, {-5, 7}, dt)), {0, 0}, 0);
  }
}

TEST_CASE("softmax over a middle axis equals softmax of the transposed tensor, values and gradients") {
  for (DType dt : kFloatTypes) {
    CAPTURE(dtype_name(dt));
    Generator gen(17);
    const Tensor x = randn({2, 3, 4}, gen, dt);
    const Tensor w = randn({2, 3, 4}, gen, dt);
    const double tol = dt == DType::f32 ? 1e-5 : 1e-12;
    for (bool log : {false, true}) {
      CAPTURE(log);
      auto fused = [log](const Tensor& t) { return log ? log_softmax(t, 1) : softmax(t, 1); };
      auto via_last = [log](const Tensor& t) {
        const Tensor tt = transpose(t, 1, 2);
        return transpose(log ? log_softmax(tt, -1) : softmax(tt, -1), 1, 2);
      };
      check_same(fused(x), via_last(x), tol);
      check_same(grad_of(fused, x, w), grad_of(via_last, x, w), tol);
    }
  }
}

TEST_CASE("softmax equals its exp / sum composite, values and gradients") {
  for (DType dt : kFloatTypes) {
    CAPTURE(dtype_name(dt));
    Generator gen(5);
    const Tensor x = randn({3, 5}, gen, dt);
    const Tensor w = randn({3, 5}, gen, dt);
    const double tol = dt == DType::f32 ? 1e-5 : 1e-12;
    auto composite = [](const Tensor& t) {
      const Tensor e = exp(t);
      return div(e, sum(e, {-1}, true));
    };
    auto log_composite = [](const Tensor& t) { return sub(t, log(sum(exp(t), {-1}, true))); };
    check_same(softmax(x), composite(x), tol);
    check_same(log_softmax(x), log_composite(x), tol);
    check_same(grad_of([](const Tensor& t) { return softmax(t); }, x, w), grad_of(composite, x, w), tol);
    check_same(grad_of([](const Tensor& t) { return log_softmax(t); }, x, w), grad_of(log_composite, x, w), tol);
  }
}

TEST_CASE("softmax is stable for huge float32 logits") {
  const std::vector<std::vector<double>> rows = {
      {1e4, -1e4, 0}, {-1e4, 1e4, 1e4}, {88.7, -88.7, 0}, {88.7, 88.7, -88.7}, {3e38, -3e38, 3e38}, {-3e38, -3e38, -3e38}};
  for (const auto& r : rows) {
    CAPTURE(r[0]);
    for (int axis : {-1, 0}) {
      CAPTURE(axis);
      const Tensor x = axis == -1 ? make({1, 3}, r, DType::f32) : make({3, 1}, r, DType::f32);
      const Tensor y = softmax(x, axis);
      CHECK(all_finite(y));
      const std::vector<double> v = y.to_vector();
      CHECK(v[0] + v[1] + v[2] == doctest::Approx(1.0).epsilon(1e-6));
    }
  }
  check_relative(softmax(make({3}, {3e38, -3e38, 3e38}, DType::f32)), {0.5, 0, 0.5}, 1e-6);
  check_relative(softmax(make({3}, {1e4, -1e4, 0}, DType::f32)), {1, 0, 0}, 1e-6);
  check_relative(softmax(make({2}, {88.7, -88.7}, DType::f32)), {1, 0}, 1e-6);
  // log_softmax stays finite where the true value is representable.
  for (const auto& r : {std::vector<double>{1e4, -1e4, 0}, std::vector<double>{88.7, -88.7, 0}}) {
    const Tensor y = log_softmax(make({3}, r, DType::f32));
    CHECK(all_finite(y));
    CHECK(y.to_vector()[0] == doctest::Approx(0.0));
    CHECK(y.to_vector()[1] == doctest::Approx(r[1] - r[0]).epsilon(1e-6));
  }
}

TEST_CASE("a fully -inf row gives zeros and a finite zero gradient") {
  for (DType dt : kFloatTypes) {
    CAPTURE(dtype_name(dt));
    for (bool log : {false, true}) {
      CAPTURE(log);
      auto f = [log](int axis) {
        return [log, axis](const Tensor& t) { return log ? log_softmax(t, axis) : softmax(t, axis); };
      };
      // Row 0 is all -inf; row 1 is [1, 2, 3].
      const Tensor x = make({2, 3}, {-kInf, -kInf, -kInf, 1, 2, 3}, dt);
      const Tensor w = make({2, 3}, {1, -2, 3, 0.5, 1, -1}, dt);
      const Tensor y = f(-1)(x);
      CHECK(all_finite(y));
      const std::vector<double> v = y.to_vector();
      CHECK(v[0] == 0.0);
      CHECK(v[1] == 0.0);
      CHECK(v[2] == 0.0);
      CHECK(v[5] == doctest::Approx(log ? -0.40760596444438013 : 0.6652409557748219).epsilon(1e-6));
      const Tensor g = grad_of(f(-1), x, w);
      CHECK(all_finite(g));
      const std::vector<double> gv = g.to_vector();
      CHECK(gv[0] == 0.0);
      CHECK(gv[1] == 0.0);
      CHECK(gv[2] == 0.0);
      CHECK(std::abs(gv[3]) + std::abs(gv[4]) + std::abs(gv[5]) > 0.01);
      // The same over axis 0: column 1 is all -inf.
      const Tensor xt = make({3, 2}, {1, -kInf, 2, -kInf, 3, -kInf}, dt);
      const Tensor yt = f(0)(xt);
      CHECK(all_finite(yt));
      check_relative(yt, log ? std::vector<double>{-2.40760596444438, 0, -1.4076059644443801, 0, -0.40760596444438013, 0}
                           : std::vector<double>{0.09003057317038046, 0, 0.24472847105479767, 0, 0.6652409557748219, 0},
                   1e-6);
      const Tensor gt = grad_of(f(0), xt, make({3, 2}, {1, 2, -1, 3, 0.5, -4}, dt));
      CHECK(all_finite(gt));
      const std::vector<double> gtv = gt.to_vector();
      CHECK(gtv[1] == 0.0);
      CHECK(gtv[3] == 0.0);
      CHECK(gtv[5] == 0.0);
    }
  }
}

TEST_CASE("softmax: a partly -inf row puts zero probability and zero gradient on the masked entries") {
  for (DType dt : kFloatTypes) {
    CAPTURE(dtype_name(dt));
    const Tensor x = make({4}, {1, -kInf, 2, -kInf}, dt);
    check_relative(softmax(x), {0.2689414213699951, 0, 0.7310585786300049, 0}, 1e-6);
    const Tensor g = grad_of([](const Tensor& t) { return softmax(t); }, x, make({4}, {1, 5, -1, 7}, dt));
    // d/dx0 of sum(w * y) = y0 * (w0 - sum(w * y)) = p (1 - p) (w0 - w2)
    const double p = 0.2689414213699951;
    check_relative(g, {p * (1 - p) * 2, 0, -p * (1 - p) * 2, 0}, 1e-6);
  }
}

// ---------------------------------------------------------------- layer_norm

TEST_CASE("layer_norm: values") {
  for (DType dt : kFloatTypes) {
    CAPTURE(dtype_name(dt));
    const double tol = dt == DType::f32 ? 1e-6 : 1e-12;
    const Tensor x = make({4}, {1, 2, 3, 4}, dt);
    const std::vector<double> xhat = {-1.3416354199689269, -0.447211806656309, 0.447211806656309, 1.3416354199689269};
    check_relative(layer_norm(x, Tensor(), Tensor(), 1e-5), xhat, tol);
    const Tensor w = make({4}, {1, 2, -1, 0.5}, dt);
    const Tensor b = make({4}, {0, 1, 2, 3}, dt);
    check_relative(layer_norm(x, w, b),
                 {xhat[0] * 1 + 0, xhat[1] * 2 + 1, xhat[2] * -1 + 2, xhat[3] * 0.5 + 3}, tol);
    check_relative(layer_norm(x, w, Tensor()), {xhat[0], xhat[1] * 2, -xhat[2], xhat[3] * 0.5}, tol);
    check_relative(layer_norm(x, Tensor(), b), {xhat[0], xhat[1] + 1, xhat[2] + 2, xhat[3] + 3}, tol);
    // Rows normalise independently; a constant row becomes the bias; eps matters.
    const Tensor m = make({2, 1, 4}, {1, 2, 3, 4, 5, 5, 5, 5}, dt);
    check_relative(layer_norm(m, Tensor(), b), {xhat[0], xhat[1] + 1, xhat[2] + 2, xhat[3] + 3, 0, 1, 2, 3}, tol);
    check_relative(layer_norm(make({2}, {0, 2}, dt), Tensor(), Tensor(), 1.0), {-0.7071067811865475, 0.7071067811865475},
                 tol);
  }
}

TEST_CASE("layer_norm equals its mean/sub/mul/pow/add composite, values and gradients") {
  for (DType dt : kFloatTypes) {
    CAPTURE(dtype_name(dt));
    const double tol = dt == DType::f32 ? 5e-5 : 1e-10;
    Generator gen(29);
    const Tensor x0 = randn({3, 2, 6}, gen, dt, 0.5, 2.0);
    const Tensor w0 = randn({6}, gen, dt, 1.0, 0.5);
    const Tensor b0 = randn({6}, gen, dt);
    const Tensor up = randn({3, 2, 6}, gen, dt);
    const double eps = 1e-5;
    for (int affine = 0; affine < 4; ++affine) {
      const bool use_w = affine & 1, use_b = affine & 2;
      CAPTURE(use_w);
      CAPTURE(use_b);
      auto run = [&](bool fused) {
        Tensor x = x0.clone().requires_grad_();
        Tensor w = use_w ? w0.clone().requires_grad_() : Tensor();
        Tensor b = use_b ? b0.clone().requires_grad_() : Tensor();
        Tensor y;
        if (fused) {
          y = layer_norm(x, w, b, eps);
        } else {
          const Tensor xc = sub(x, mean(x, {-1}, true));
          const Tensor var = mean(pow(xc, 2.0), {-1}, true);
          y = mul(xc, pow(add_scalar(var, eps), -0.5));
          if (use_w) y = mul(y, w);
          if (use_b) y = add(y, b);
        }
        const Tensor out = y.detach();
        backward(y, up);
        return std::vector<Tensor>{out, x.grad(), use_w ? w.grad() : Tensor(), use_b ? b.grad() : Tensor()};
      };
      const auto f = run(true);
      const auto c = run(false);
      check_same(f[0], c[0], tol);
      check_same(f[1], c[1], tol);
      if (use_w) check_same(f[2], c[2], tol);
      if (use_b) check_same(f[3], c[3], tol);
    }
  }
}

TEST_CASE("layer_norm records one fused node and gradients only what requires grad") {
  tape().clear();
  Tensor x = Tensor::from_vector<float>({2, 3}, {1, 2, 4, -1, 0, 3}).requires_grad_();
  Tensor w = Tensor::ones({3});  // constant
  Tensor b = Tensor::zeros({3}).requires_grad_();
  Tensor y = layer_norm(x, w, b);
  REQUIRE(tape().size() == 1);
  CHECK(tape().nodes()[0].op == OpKind::LayerNorm);
  backward(sum(y));
  CHECK_FALSE(w.grad().defined());
  check_relative(b.grad(), {2, 2, 2}, 0);
  // sum of a normalised row does not depend on x.
  check_relative(x.grad(), {0, 0, 0, 0, 0, 0}, 1e-6);
}

// ---------------------------------------------------------------- dropout

TEST_CASE("dropout: same seed gives identical output, another seed another mask") {
  for (DType dt : kFloatTypes) {
    CAPTURE(dtype_name(dt));
    Generator data(1);
    const Tensor x = randn({64, 33}, data, dt);
    Generator g1(99), g2(99), g3(100);
    const Tensor a = dropout(x, 0.3, g1);
    const Tensor b = dropout(x, 0.3, g2);
    const Tensor c = dropout(x, 0.3, g3);
    CHECK(a.to_vector() == b.to_vector());
    CHECK(a.to_vector() != c.to_vector());
    CHECK(g1.state() == g2.state());
    // The generator advanced: a second call draws a new mask.
    CHECK(dropout(x, 0.3, g1).to_vector() != a.to_vector());
  }
}

TEST_CASE("dropout: identity for p = 0 and in evaluation") {
  Generator gen(4);
  Tensor x = Tensor::from_vector<float>({2, 2}, {1, -2, 3, 4}).requires_grad_();
  tape().clear();
  const auto before = gen.state();
  const Tensor y0 = dropout(x, 0.0, gen, true);
  const Tensor y1 = dropout(x, 0.7, gen, false);
  CHECK(y0.to_vector() == x.to_vector());
  CHECK(y1.to_vector() == x.to_vector());
  CHECK(y0.shares_storage(x));
  CHECK(tape().size() == 0);
  CHECK(gen.state() == before);  // no draws
}

TEST_CASE("dropout: drop fraction near p, kept values scaled, mean preserved, gradient is the mask") {
  for (DType dt : kFloatTypes) {
    CAPTURE(dtype_name(dt));
    for (double p : {0.1, 0.3, 0.75}) {
      CAPTURE(p);
      const int64_t n = 100000;
      Generator gen(7);
      Tensor x = Tensor::ones({n}, dt).requires_grad_();
      Tensor y = dropout(x, p, gen);
      const std::vector<double> v = y.to_vector();
      int64_t zeros = 0;
      double total = 0;
      bool scaled = true;
      for (double e : v) {
        if (e == 0) ++zeros;
        else scaled &= std::abs(e - 1.0 / (1.0 - p)) < 1e-6;
        total += e;
      }
      CHECK(scaled);
      CHECK(std::abs(static_cast<double>(zeros) / n - p) < 0.01);
      CHECK(std::abs(total / n - 1.0) < 0.03);
      backward(sum(y));
      CHECK(x.grad().to_vector() == v);  // x = 1, so the gradient is the scaled mask itself
    }
  }
}

// ---------------------------------------------------------------- cross_entropy

TEST_CASE("cross_entropy: values") {
  for (DType dt : kFloatTypes) {
    CAPTURE(dtype_name(dt));
    const double tol = tol_of(dt);
    const Tensor logits = make({2, 3}, {1, 2, 3, 0.5, -1, 2}, dt);
    const Tensor y = cross_entropy(logits, Tensor::indices({2}, {2, 0}));
    CHECK(y.dim() == 0);
    CHECK(y.dtype() == dt);
    CHECK(y.item() == doctest::Approx(1.0744586305507686).epsilon(tol));
    CHECK(cross_entropy(logits, Tensor::indices({2}, {2, -100})).item() ==
          doctest::Approx(0.40760596444438013).epsilon(tol));
    CHECK(cross_entropy(logits, Tensor::indices({2}, {2, 1}), 1).item() ==
          doctest::Approx(0.40760596444438013).epsilon(tol));
    CHECK(cross_entropy(make({3}, {1, 2, 3}, dt), Tensor::indices({}, {0})).item() ==
          doctest::Approx(2.40760596444438).epsilon(tol));
    // Huge logits stay finite.
    CHECK(cross_entropy(make({1, 3}, {1e4, -1e4, 0}, dt), Tensor::indices({1}, {2})).item() ==
          doctest::Approx(1e4).epsilon(1e-6));
  }
}

TEST_CASE("cross_entropy equals its log_softmax + one-hot NLL composite, values and gradients") {
  for (DType dt : kFloatTypes) {
    CAPTURE(dtype_name(dt));
    const double tol = dt == DType::f32 ? 1e-5 : 1e-12;
    Generator gen(11);
    const int64_t R = 6, C = 5;
    const Tensor x0 = randn({2, 3, C}, gen, dt, 0.0, 2.0);
    const std::vector<int64_t> t = {4, -100, 0, 2, 2, -100};
    std::vector<double> onehot(R * C, 0.0);
    int count = 0;
    for (int64_t r = 0; r < R; ++r)
      if (t[r] != -100) onehot[r * C + t[r]] = 1.0, ++count;
    const Tensor target = Tensor::indices({2, 3}, t);
    const Tensor oh = make({2, 3, C}, onehot, dt);
    for (double scale : {1.0, -2.5}) {  // the upstream gradient scales the result
      CAPTURE(scale);
      Tensor xf = x0.clone().requires_grad_();
      Tensor yf = cross_entropy(xf, target);
      backward(yf, Tensor::scalar(scale, dt));
      Tensor xc = x0.clone().requires_grad_();
      const Tensor logp = sub(xc, log(sum(exp(xc), {-1}, true)));
      Tensor yc = mul_scalar(neg(sum(mul(logp, oh))), 1.0 / count);
      const double yc_value = yc.item();
      backward(yc, Tensor::scalar(scale, dt));
      CHECK(yf.item() == doctest::Approx(yc_value).epsilon(tol));
      check_same(xf.grad(), xc.grad(), tol);
      // Ignored rows get exactly zero gradient; each counted row's gradient sums to zero.
      const std::vector<double> g = xf.grad().to_vector();
      for (int64_t r = 0; r < R; ++r) {
        double s = 0, a = 0;
        for (int64_t c = 0; c < C; ++c) s += g[r * C + c], a += std::abs(g[r * C + c]);
        CAPTURE(r);
        if (t[r] == -100) CHECK(a == 0.0);
        else {
          CHECK(std::abs(s) < 1e-6);
          CHECK(a > 0.0);
        }
      }
    }
  }
}

TEST_CASE("cross_entropy: every target ignored gives 0 and a zero gradient") {
  for (DType dt : kFloatTypes) {
    CAPTURE(dtype_name(dt));
    Tensor x = make({2, 3}, {1, 2, 3, 4, 5, 6}, dt).requires_grad_();
    Tensor y = cross_entropy(x, Tensor::indices({2}, {-100, -100}));
    CHECK(y.item() == 0.0);
    backward(y);
    check_relative(x.grad(), {0, 0, 0, 0, 0, 0}, 0);
  }
}

TEST_CASE("cross_entropy records one fused node") {
  tape().clear();
  Tensor x = Tensor::zeros({2, 4}).requires_grad_();
  Tensor y = cross_entropy(x, Tensor::indices({2}, {1, 3}));
  REQUIRE(tape().size() == 1);
  CHECK(tape().nodes()[0].op == OpKind::CrossEntropy);
  CHECK(y.item() == doctest::Approx(std::log(4.0)));
  backward(y);
  // (softmax - onehot) / 2 with a uniform softmax of 1/4.
  check_relative(x.grad(), {0.125, -0.375, 0.125, 0.125, 0.125, 0.125, 0.125, -0.375}, 1e-7);
}

// ---------------------------------------------------------------- errors

TEST_CASE("activation, softmax, norm, dropout and loss errors name the op") {
  auto has = [](const std::string& msg, std::initializer_list<const char*> parts) {
    CAPTURE(msg);
    REQUIRE_FALSE(msg.empty());
    for (const char* p : parts) {
      CAPTURE(p);
      CHECK(msg.find(p) != std::string::npos);
    }
  };
  const Tensor logits = Tensor::zeros({3, 5});
  has(error_of([&] { cross_entropy(logits, Tensor::indices({3}, {0, 7, 1})); }),
      {"cross_entropy", "7", "[1]", "[0, 5)"});
  has(error_of([&] { cross_entropy(logits, Tensor::indices({3}, {0, 1, -1})); }), {"cross_entropy", "-1", "[2]"});
  has(error_of([&] { cross_entropy(Tensor::zeros({2, 2, 5}), Tensor::indices({2, 2}, {0, 1, 2, 5})); }),
      {"cross_entropy", "5", "[1, 1]"});
  has(error_of([&] { cross_entropy(logits, Tensor::indices({5}, {0, 1, 2, 3, 4})); }),
      {"cross_entropy", "[5]", "[3, 5]"});
  has(error_of([&] { cross_entropy(logits, Tensor::zeros({3})); }), {"cross_entropy", "int64"});
  has(error_of([&] { cross_entropy(Tensor::indices({3}, {0, 1, 2}), Tensor::indices({}, {0})); }), {"cross_entropy"});

  Generator gen(0);
  has(error_of([&] { dropout(logits, 1.0, gen); }), {"dropout", "p must be in [0, 1)"});
  has(error_of([&] { dropout(logits, -0.1, gen); }), {"dropout", "-0.1"});
  has(error_of([&] { dropout(logits, 1.5, gen, false); }), {"dropout"});

  has(error_of([&] { layer_norm(logits, Tensor::ones({4}), Tensor()); }), {"layer_norm", "weight", "[4]", "[3, 5]"});
  has(error_of([&] { layer_norm(logits, Tensor(), Tensor::ones({3, 5})); }), {"layer_norm", "bias", "[3, 5]"});
  has(error_of([&] { layer_norm(logits, Tensor::ones({5}, DType::f64), Tensor()); }),
      {"layer_norm", "weight", "float64"});
  has(error_of([&] { layer_norm(Tensor::scalar(1.0), Tensor(), Tensor()); }), {"layer_norm"});

  has(error_of([&] { softmax(logits, 2); }), {"softmax", "axis 2", "[3, 5]"});
  has(error_of([&] { log_softmax(logits, -3); }), {"log_softmax", "axis -3"});
  has(error_of([&] { softmax(Tensor::indices({2}, {1, 2})); }), {"softmax", "int64"});

  const Tensor idx = Tensor::indices({2}, {1, 2});
  has(error_of([&] { exp(idx); }), {"exp", "int64"});
  has(error_of([&] { log(idx); }), {"log"});
  has(error_of([&] { relu(idx); }), {"relu"});
  has(error_of([&] { gelu(idx, GeluApprox::tanh); }), {"gelu_tanh"});
  has(error_of([&] { gelu(idx, GeluApprox::erf); }), {"gelu_erf"});
}
