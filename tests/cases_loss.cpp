// Gradient-check cases for core/ops/loss.cpp.
#include "gradcheck.h"

namespace rpb::testing {

namespace {

auto ce(const Tensor& target, int64_t ignore_index = -100) {
  return [target, ignore_index](const std::vector<Tensor>& x) { return cross_entropy(x[0], follow(target, x[0]), ignore_index); };
}

}  // namespace

void add_loss_cases(CaseList& cases) {
  Generator gen(505);
  const OpKind op = OpKind::CrossEntropy;
  cases.push_back({"cross_entropy [4, 5]", op, {input(gen, {4, 5}, -2, 2)}, ce(Tensor::indices({4}, {0, 4, 2, 2}))});
  cases.push_back({"cross_entropy [6, 3] with ignored targets", op, {input(gen, {6, 3}, -2, 2)},
                   ce(Tensor::indices({6}, {1, -100, 0, 2, -100, 1}))});
  cases.push_back({"cross_entropy [5, 4] ignore_index 2", op, {input(gen, {5, 4}, -2, 2)},
                   ce(Tensor::indices({5}, {2, 3, 0, 2, 1}), 2)});
  cases.push_back({"cross_entropy [2, 3, 4] logits, [2, 3] target", op, {input(gen, {2, 3, 4}, -3, 3)},
                   ce(Tensor::indices({2, 3}, {0, 1, 2, 3, -100, 1}))});
  cases.push_back({"cross_entropy [5] logits, 0-D target", op, {input(gen, {5}, -2, 2)},
                   ce(Tensor::indices({}, {3}))});
  cases.push_back({"cross_entropy [3, 1] one class", op, {input(gen, {3, 1}, -2, 2)},
                   ce(Tensor::indices({3}, {0, 0, 0}))});
  cases.push_back({"cross_entropy [1, 4] one row", op, {input(gen, {1, 4}, -2, 2)}, ce(Tensor::indices({1}, {1}))});
  cases.push_back({"cross_entropy with every target ignored", op, {input(gen, {3, 4}, -2, 2)},
                   ce(Tensor::indices({3}, {-100, -100, -100}))});
  const Tensor t = Tensor::indices({3}, {2, 0, 1});
  cases.push_back({"cross_entropy(x) + cross_entropy(x * x)", op, {input(gen, {3, 4}, -2, 2)},
                   [t](const std::vector<Tensor>& x) {
                     const Tensor target = follow(t, x[0]);
                     return add(cross_entropy(x[0], target), cross_entropy(mul(x[0], x[0]), target));
                   }});
  cases.push_back({"cross_entropy of a reshape view", op, {input(gen, {12}, -2, 2)},
                   [t](const std::vector<Tensor>& x) { return cross_entropy(reshape(x[0], {3, 4}), follow(t, x[0])); }});
  cases.push_back({"cross_entropy of log_softmax", op, {input(gen, {3, 4}, -2, 2)},
                   [t](const std::vector<Tensor>& x) { return cross_entropy(log_softmax(x[0], -1), follow(t, x[0])); }});
}

}  // namespace rpb::testing
