// Gradient-check cases for core/ops/reduce.cpp.
#include "gradcheck.h"

namespace rpb::testing {

void add_reduce_cases(CaseList& cases) {
  Generator gen(21);
  struct Axes {
    Shape shape;
    std::vector<int> axes;
    bool keepdim;
  };
  const Axes configs[] = {{{3, 4}, {}, false},     {{3, 4}, {1}, false},      {{3, 4}, {0}, true},
                          {{2, 3, 4}, {0, 2}, false}, {{2, 3, 4}, {-1, -2}, true}, {{1, 5, 1}, {1}, false},
                          {{4}, {0}, true},        {{}, {}, false},           {{2, 1, 3}, {1}, false}};
  for (const Axes& c : configs) {
    const std::string tag = c.shape.to_string() + " axes " + std::to_string(c.axes.size()) + (c.keepdim ? " keepdim" : "");
    cases.push_back({"sum " + tag, OpKind::Sum, {input(gen, c.shape)},
                     [c](const std::vector<Tensor>& in) { return sum(in[0], c.axes, c.keepdim); }});
    cases.push_back({"mean " + tag, OpKind::Mean, {input(gen, c.shape)},
                     [c](const std::vector<Tensor>& in) { return mean(in[0], c.axes, c.keepdim); }});
    // Distinct values (a shuffled grid, 0.01 apart) so no two candidates tie within eps.
    std::vector<double> v(static_cast<std::size_t>(c.shape.numel()));
    for (std::size_t i = 0; i < v.size(); ++i) v[i] = 0.01 * static_cast<double>(i) - 0.2;
    for (std::size_t i = v.size(); i-- > 1;) std::swap(v[i], v[gen.next_u64() % (i + 1)]);
    cases.push_back({"max " + tag, OpKind::Max, {Tensor::from_vector(c.shape, v).requires_grad_()},
                     [c](const std::vector<Tensor>& in) { return max(in[0], c.axes, c.keepdim); }});
  }
  cases.push_back({"sum of a reused input", OpKind::Sum, {input(gen, {3, 2})},
                   [](const std::vector<Tensor>& in) { return sum(mul(in[0], sum(in[0], {0}, true)), {1}); }});
  cases.push_back({"mean through a view", OpKind::Mean, {input(gen, {6})},
                   [](const std::vector<Tensor>& in) { return mean(reshape(in[0], {2, 3}), {1}); }});
}

}  // namespace rpb::testing
