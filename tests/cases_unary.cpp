// Gradient-check cases for core/ops/unary.cpp.
#include "gradcheck.h"

namespace rpb::testing {

namespace {

using Fn = std::function<Tensor(const Tensor&)>;

// The standard shapes for one unary op: a matrix, size-1 dims, 0-D, x used twice,
// and the op applied to a reshape view of the input.
void add_standard(CaseList& cases, const std::string& name, OpKind op, const Fn& f, Generator& gen, double lo,
                  double hi, bool away_from_zero = false) {
  auto in = [&](const Shape& s) { return away_from_zero ? input_away_from(gen, s, 0.0, 0.05) : input(gen, s, lo, hi); };
  cases.push_back({name + " [3, 4]", op, {in({3, 4})}, [f](const std::vector<Tensor>& x) { return f(x[0]); }});
  cases.push_back({name + " [1, 5, 1]", op, {in({1, 5, 1})}, [f](const std::vector<Tensor>& x) { return f(x[0]); }});
  cases.push_back({name + " 0-D", op, {in({})}, [f](const std::vector<Tensor>& x) { return f(x[0]); }});
  cases.push_back({name + " [1]", op, {in({1})}, [f](const std::vector<Tensor>& x) { return f(x[0]); }});
  cases.push_back({name + " x * f(x)", op, {in({2, 3})},
                   [f](const std::vector<Tensor>& x) { return mul(x[0], f(x[0])); }});
  cases.push_back({name + " of a reshape view", op, {in({2, 6})},
                   [f](const std::vector<Tensor>& x) { return f(reshape(x[0], {3, 2, 2})); }});
}

}  // namespace

void add_unary_cases(CaseList& cases) {
  Generator gen(101);
  add_standard(cases, "exp", OpKind::Exp, [](const Tensor& x) { return exp(x); }, gen, -2.0, 2.0);
  add_standard(cases, "log", OpKind::Log, [](const Tensor& x) { return log(x); }, gen, 0.2, 3.0);
  add_standard(cases, "sqrt", OpKind::Sqrt, [](const Tensor& x) { return sqrt(x); }, gen, 0.2, 3.0);
  add_standard(cases, "tanh", OpKind::Tanh, [](const Tensor& x) { return tanh(x); }, gen, -2.0, 2.0);
  add_standard(cases, "sigmoid", OpKind::Sigmoid, [](const Tensor& x) { return sigmoid(x); }, gen, -3.0, 3.0);
  add_standard(cases, "relu", OpKind::Relu, [](const Tensor& x) { return relu(x); }, gen, -1.0, 1.0, true);
  add_standard(cases, "gelu_erf", OpKind::GeluErf, [](const Tensor& x) { return gelu(x, GeluApprox::erf); }, gen,
               -3.0, 3.0);
  add_standard(cases, "gelu_tanh", OpKind::GeluTanh, [](const Tensor& x) { return gelu(x, GeluApprox::tanh); }, gen,
               -3.0, 3.0);
  // Chains: each op's backward fed by another op's gradient.
  cases.push_back({"log(sigmoid(x)) + tanh(x)", OpKind::Log, {input(gen, {4, 3}, -2.0, 2.0)},
                   [](const std::vector<Tensor>& x) { return add(log(sigmoid(x[0])), tanh(x[0])); }});
  cases.push_back({"sqrt(exp(x))", OpKind::Sqrt, {input(gen, {5}, -1.0, 1.0)},
                   [](const std::vector<Tensor>& x) { return sqrt(exp(x[0])); }});
  cases.push_back({"gelu_tanh of large |x|", OpKind::GeluTanh, {input(gen, {2, 4}, -6.0, 6.0)},
                   [](const std::vector<Tensor>& x) { return gelu(x[0], GeluApprox::tanh); }});
  cases.push_back({"gelu_erf of large |x|", OpKind::GeluErf, {input(gen, {2, 4}, -6.0, 6.0)},
                   [](const std::vector<Tensor>& x) { return gelu(x[0], GeluApprox::erf); }});
}

}  // namespace rpb::testing
