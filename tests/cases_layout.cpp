// Gradient-check cases for core/ops/layout.cpp.
#include "gradcheck.h"

namespace rpb::testing {

void add_layout_cases(CaseList& cases) {
  Generator gen(31);
  cases.push_back({"reshape with -1", OpKind::Reshape, {input(gen, {2, 6})},
                   [](const std::vector<Tensor>& in) { return reshape(in[0], {3, -1, 2}); }});
  cases.push_back({"reshape reused", OpKind::Reshape, {input(gen, {4})},
                   [](const std::vector<Tensor>& in) { return mul(reshape(in[0], {2, 2}), reshape(in[0], {2, 2})); }});
  cases.push_back({"reshape to 0-D", OpKind::Reshape, {input(gen, {1, 1})},
                   [](const std::vector<Tensor>& in) { return reshape(in[0], {}); }});
  const std::pair<Shape, std::vector<int>> perms[] = {
      {{2, 3}, {1, 0}}, {{2, 3, 4}, {0, 2, 1}}, {{2, 3, 4}, {2, 0, 1}}, {{2, 1, 3, 2}, {0, 2, 1, 3}}, {{5}, {0}}};
  for (const auto& [s, p] : perms)
    cases.push_back({"permute " + s.to_string(), OpKind::Permute, {input(gen, s)},
                     [p = p](const std::vector<Tensor>& in) { return permute(in[0], p); }});
  cases.push_back({"transpose reused", OpKind::Permute, {input(gen, {3, 3})},
                   [](const std::vector<Tensor>& in) { return add(in[0], transpose(in[0], 0, 1)); }});
  cases.push_back({"concat axis 0", OpKind::Concat, {input(gen, {2, 3}), input(gen, {1, 3})},
                   [](const std::vector<Tensor>& in) { return concat({in[0], in[1]}, 0); }});
  cases.push_back({"concat last axis, reused", OpKind::Concat, {input(gen, {2, 2, 1}), input(gen, {2, 2, 3})},
                   [](const std::vector<Tensor>& in) { return concat({in[0], in[1], in[0]}, -1); }});
  Tensor constant = rand({2, 2}, gen, DType::f64);
  cases.push_back({"concat with a constant", OpKind::Concat, {input(gen, {2, 3}), constant},
                   [](const std::vector<Tensor>& in) { return concat({in[1], in[0]}, 1); }});
  cases.push_back({"slice middle axis", OpKind::Slice, {input(gen, {2, 5, 3})},
                   [](const std::vector<Tensor>& in) { return slice(in[0], 1, 1, 4); }});
  cases.push_back({"slice negative bounds", OpKind::Slice, {input(gen, {6})},
                   [](const std::vector<Tensor>& in) { return slice(in[0], 0, -4, -1); }});
  cases.push_back({"split and recombine", OpKind::Slice, {input(gen, {3, 4})}, [](const std::vector<Tensor>& in) {
                     std::vector<Tensor> p = split(in[0], {1, 3}, 1);
                     return mul(p[0], p[1]);
                   }});
}

}  // namespace rpb::testing
