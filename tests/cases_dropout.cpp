// Gradient-check cases for core/ops/dropout.cpp. Each fn makes a fresh Generator,
// so every evaluation draws the same mask.
#include "gradcheck.h"

namespace rpb::testing {

void add_dropout_cases(CaseList& cases) {
  Generator gen(404);
  auto drop = [](double p, uint64_t seed) {
    return [p, seed](const std::vector<Tensor>& x) {
      Generator g(seed);
      return dropout(x[0], p, g, true);
    };
  };
  const OpKind op = OpKind::Dropout;
  cases.push_back({"dropout p=0.3 [4, 5]", op, {input(gen, {4, 5})}, drop(0.3, 1)});
  cases.push_back({"dropout p=0.5 [3, 3, 3]", op, {input(gen, {3, 3, 3})}, drop(0.5, 2)});
  cases.push_back({"dropout p=0.9 [6]", op, {input(gen, {6})}, drop(0.9, 3)});
  cases.push_back({"dropout [1]", op, {input(gen, {1})}, drop(0.2, 4)});
  cases.push_back({"dropout 0-D", op, {input(gen, {})}, drop(0.2, 5)});
  cases.push_back({"dropout(x) * x", op, {input(gen, {2, 5})}, [](const std::vector<Tensor>& x) {
                     Generator g(6);
                     return mul(dropout(x[0], 0.4, g, true), x[0]);
                   }});
  cases.push_back({"dropout of a reshape view", op, {input(gen, {2, 6})}, [](const std::vector<Tensor>& x) {
                     Generator g(7);
                     return dropout(reshape(x[0], {3, 4}), 0.25, g, true);
                   }});
  cases.push_back({"dropout twice from one generator", op, {input(gen, {3, 4})}, [](const std::vector<Tensor>& x) {
                     Generator g(8);
                     const Tensor a = dropout(x[0], 0.3, g, true);
                     return add(a, dropout(x[0], 0.3, g, true));
                   }});
}

}  // namespace rpb::testing
