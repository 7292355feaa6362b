// Gradient-check cases for core/ops/elementwise.cpp.
#include "gradcheck.h"

namespace rpb::testing {

namespace {
using Fn2 = Tensor (*)(const Tensor&, const Tensor&);
}

void add_elementwise_cases(CaseList& cases) {
  Generator gen(11);
  const std::pair<OpKind, Fn2> binaries[] = {{OpKind::Add, add}, {OpKind::Sub, sub}, {OpKind::Mul, mul}, {OpKind::Div, div}};
  // Shape pairs: equal, suffix broadcast, size-1 dims on both sides, a scalar, a length-1 sequence.
  const std::pair<Shape, Shape> shapes[] = {
      {{3, 4}, {3, 4}}, {{2, 3, 4}, {4}}, {{2, 1, 4}, {3, 1}}, {{2, 3}, {}}, {{1, 5}, {1, 1}}, {{4, 1, 3}, {4, 2, 3}}};
  for (auto [op, fn] : binaries) {
    for (const auto& [sa, sb] : shapes) {
      // div's denominator stays away from zero.
      Tensor b = op == OpKind::Div ? input(gen, sb, 0.5, 2.0) : input(gen, sb);
      cases.push_back({std::string(op_name(op)) + " " + sa.to_string() + " with " + sb.to_string(), op,
                       {input(gen, sa), b}, [fn = fn](const std::vector<Tensor>& in) { return fn(in[0], in[1]); }});
    }
    // Reused input: f(x, x), and one operand that does not require grad.
    Tensor x = op == OpKind::Div ? input(gen, {2, 3}, 0.5, 2.0) : input(gen, {2, 3});
    cases.push_back({std::string(op_name(op)) + " reused input", op, {x},
                     [fn = fn](const std::vector<Tensor>& in) { return fn(in[0], fn(in[0], in[0])); }});
    Tensor c = rand({3}, gen, DType::f64, 0.5, 2.0);  // a constant
    cases.push_back({std::string(op_name(op)) + " with a constant operand", op, {input(gen, {2, 3}), c},
                     [fn = fn](const std::vector<Tensor>& in) { return fn(in[1], in[0]); }});
  }
  cases.push_back({"mul through a reshape view", OpKind::Mul, {input(gen, {2, 6}), input(gen, {3, 4})},
                   [](const std::vector<Tensor>& in) { return mul(reshape(in[0], {3, 4}), in[1]); }});
  cases.push_back({"neg", OpKind::Neg, {input(gen, {2, 3})}, [](const std::vector<Tensor>& in) { return -in[0]; }});
  cases.push_back({"neg 0-D", OpKind::Neg, {input(gen, {})}, [](const std::vector<Tensor>& in) { return neg(in[0]); }});
  cases.push_back({"add_scalar", OpKind::AddScalar, {input(gen, {3, 1, 2})},
                   [](const std::vector<Tensor>& in) { return 2.5 - in[0] + 1.0; }});
  cases.push_back({"mul_scalar", OpKind::MulScalar, {input(gen, {4})},
                   [](const std::vector<Tensor>& in) { return in[0] * -3.0 / 2.0; }});
  cases.push_back({"mul_scalar reused", OpKind::MulScalar, {input(gen, {2, 2})},
                   [](const std::vector<Tensor>& in) { return mul(in[0] * 3.0, in[0]); }});
  for (double p : {2.0, 3.0, -1.0, 0.5, 1.7, -2.5}) {
    cases.push_back({"pow " + std::to_string(p), OpKind::PowScalar, {input(gen, {2, 3}, 0.3, 2.0)},
                     [p](const std::vector<Tensor>& in) { return pow(in[0], p); }});
  }
  cases.push_back({"scalar / x", OpKind::PowScalar, {input(gen, {5}, 0.5, 2.0)},
                   [](const std::vector<Tensor>& in) { return 2.0 / in[0]; }});
}

}  // namespace rpb::testing
