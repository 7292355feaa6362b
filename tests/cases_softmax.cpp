// Gradient-check cases for core/ops/softmax.cpp.
#include <limits>

#include "gradcheck.h"

namespace rpb::testing {

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

using SoftmaxFn = Tensor (*)(const Tensor&, int);

void add_family(CaseList& cases, const std::string& name, OpKind op, SoftmaxFn f, Generator& gen) {
  auto one = [f](int axis) { return [f, axis](const std::vector<Tensor>& x) { return f(x[0], axis); }; };
  cases.push_back({name + " [3, 5] last axis", op, {input(gen, {3, 5}, -2, 2)}, one(-1)});
  cases.push_back({name + " [2, 3, 4] axis 1", op, {input(gen, {2, 3, 4}, -2, 2)}, one(1)});
  cases.push_back({name + " [4, 3] axis 0", op, {input(gen, {4, 3}, -2, 2)}, one(0)});
  cases.push_back({name + " [2, 1, 3] length-1 axis", op, {input(gen, {2, 1, 3}, -2, 2)}, one(1)});
  cases.push_back({name + " [3, 1] length-1 last axis", op, {input(gen, {3, 1}, -2, 2)}, one(-1)});
  cases.push_back({name + " [1] one element", op, {input(gen, {1}, -2, 2)}, one(0)});
  cases.push_back({name + " [6] 1-D", op, {input(gen, {6}, -3, 3)}, one(-1)});
  cases.push_back({name + "(x) + x", op, {input(gen, {2, 4}, -2, 2)},
                   [f](const std::vector<Tensor>& x) { return add(f(x[0], -1), x[0]); }});
  cases.push_back({name + "(x) * x over axis 0", op, {input(gen, {3, 2, 2}, -2, 2)},
                   [f](const std::vector<Tensor>& x) { return mul(f(x[0], 0), x[0]); }});
  cases.push_back({name + " of a reshape view", op, {input(gen, {2, 6}, -2, 2)},
                   [f](const std::vector<Tensor>& x) { return f(reshape(x[0], {3, 4}), -1); }});
  cases.push_back({name + " of a reshape view, axis 0", op, {input(gen, {12}, -2, 2)},
                   [f](const std::vector<Tensor>& x) { return f(reshape(x[0], {3, 2, 2}), 0); }});
  // Row 1 is fully masked (all -inf): zeros out, zero gradient.
  const Tensor row_mask = Tensor::from_vector<double>({3, 4}, {0, 0, 0, 0, -kInf, -kInf, -kInf, -kInf, 0, 0, 0, 0});
  cases.push_back({name + " with a fully -inf row", op, {input(gen, {3, 4}, -2, 2)},
                   [f, row_mask](const std::vector<Tensor>& x) { return f(add(x[0], follow(row_mask, x[0])), -1); }});
  // Over axis 1 of [2, 3, 2]: the group (0, :, 1) is fully masked.
  const Tensor col_mask =
      Tensor::from_vector<double>({2, 3, 2}, {0, -kInf, 0, -kInf, 0, -kInf, 0, 0, 0, 0, 0, 0});
  cases.push_back({name + " with a fully -inf group over axis 1", op, {input(gen, {2, 3, 2}, -2, 2)},
                   [f, col_mask](const std::vector<Tensor>& x) { return f(add(x[0], follow(col_mask, x[0])), 1); }});
}

}  // namespace

void add_softmax_cases(CaseList& cases) {
  Generator gen(202);
  add_family(cases, "softmax", OpKind::Softmax, &softmax, gen);
  add_family(cases, "log_softmax", OpKind::LogSoftmax, &log_softmax, gen);
  // Partly masked rows (an attention mask): masked entries get 0 and zero gradient.
  // (log_softmax would output -inf there, which a finite-difference check cannot compare.)
  const Tensor partial = Tensor::from_vector<double>({3, 4}, {0, -kInf, 0, -kInf, 0, 0, 0, -kInf, -kInf, -kInf, -kInf, 0});
  cases.push_back({"softmax with partly -inf rows", OpKind::Softmax, {input(gen, {3, 4}, -2, 2)},
                   [partial](const std::vector<Tensor>& x) { return softmax(add(x[0], follow(partial, x[0])), -1); }});
  const Tensor partial_ax0 = Tensor::from_vector<double>({3, 2, 2}, {-kInf, 0, 0, 0, 0, -kInf, 0, 0, -kInf, 0, 0, 0});
  cases.push_back({"softmax with partly -inf groups over axis 0", OpKind::Softmax, {input(gen, {3, 2, 2}, -2, 2)},
                   [partial_ax0](const std::vector<Tensor>& x) { return softmax(add(x[0], follow(partial_ax0, x[0])), 0); }});
  cases.push_back({"log_softmax(softmax(x))", OpKind::LogSoftmax, {input(gen, {2, 5}, -2, 2)},
                   [](const std::vector<Tensor>& x) { return log_softmax(softmax(x[0], -1), -1); }});
}

}  // namespace rpb::testing
