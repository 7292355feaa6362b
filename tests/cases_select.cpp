// Gradient-check cases for core/ops/select.cpp.
#include "gradcheck.h"

namespace rpb::testing {

void add_select_cases(CaseList& cases) {
  Generator gen(41);
  auto fill = [&](const std::string& name, Tensor x, Tensor mask, double value) {
    cases.push_back({"masked_fill " + name, OpKind::MaskedFill, {x, mask},
                     [value](const std::vector<Tensor>& in) { return masked_fill(in[0], in[1], value); }});
  };
  fill("same-shape i64 mask", input(gen, {3, 4}), Tensor::indices({3, 4}, {0, 1, 0, 0, 1, 1, 0, 0, 0, 0, 0, 1}), 0.5);
  fill("broadcast i64 mask", input(gen, {2, 3, 4}), Tensor::indices({3, 4}, {0, 1, 0, 0, 1, 1, 0, 0, 0, 0, 0, 1}),
       -2.0);
  fill("broadcast f64 mask with size-1 dims", input(gen, {2, 3, 4}),
       Tensor::from_vector<double>({2, 1, 4}, {1, 0, 0, 1, 0, 0, 1, 0}), 3.0);
  fill("all filled", input(gen, {2, 3}), Tensor::indices({1}, {1}), 0.0);
  // A -1e9 fill is zeroed again by a constant product, so the central difference does not
  // cancel against 1e9-sized terms.
  {
    Tensor mask = Tensor::indices({2, 1, 3}, {1, 0, 0, 0, 1, 1});
    Tensor keep = Tensor::from_vector<double>({2, 1, 3}, {0, 1, 1, 1, 0, 0});
    cases.push_back({"masked_fill -1e9 (causal-mask style)", OpKind::MaskedFill, {input(gen, {2, 2, 3}), mask, keep},
                     [](const std::vector<Tensor>& in) { return masked_fill(in[0], in[1], -1e9) * in[2]; }});
  }

  auto sel = [&](const std::string& name, Tensor cond, Tensor a, Tensor b) {
    cases.push_back({"where " + name, OpKind::Where, {cond, a, b},
                     [](const std::vector<Tensor>& in) { return where(in[0], in[1], in[2]); }});
  };
  sel("same shapes", Tensor::indices({2, 3}, {1, 0, 0, 1, 1, 0}), input(gen, {2, 3}), input(gen, {2, 3}));
  sel("cond broadcast", Tensor::indices({4}, {1, 0, 0, 1}), input(gen, {2, 3, 4}), input(gen, {2, 3, 4}));
  sel("a broadcast", Tensor::from_vector<double>({2, 3}, {1, 0, 1, 1, 0, 0}), input(gen, {3}), input(gen, {2, 3}));
  sel("b broadcast", Tensor::from_vector<double>({2, 3}, {1, 0, 1, 0, 0, 1}), input(gen, {2, 3}), input(gen, {2, 1}));
  sel("all three broadcast", Tensor::indices({2, 1, 4}, {1, 0, 0, 1, 0, 1, 1, 0}), input(gen, {2, 3, 1}),
      input(gen, {1, 3, 4}));
  sel("cond and a broadcast", Tensor::indices({3, 1}, {0, 1, 1}), input(gen, {1, 4}), input(gen, {3, 4}));
  sel("0-D b", Tensor::indices({2, 2}, {1, 0, 0, 1}), input(gen, {2, 2}), input(gen, {}));
  cases.push_back({"where reused input where(c, x, x*x)", OpKind::Where,
                   {Tensor::indices({3, 4}, {1, 0, 0, 1, 1, 1, 0, 0, 0, 1, 0, 1}), input(gen, {3, 4})},
                   [](const std::vector<Tensor>& in) { return where(in[0], in[1], in[1] * in[1]); }});
  cases.push_back({"where reused input broadcast where(c, x, x)", OpKind::Where,
                   {Tensor::indices({2, 1}, {1, 0}), input(gen, {3})},
                   [](const std::vector<Tensor>& in) { return where(in[0], in[1], in[1]); }});
}

}  // namespace rpb::testing
