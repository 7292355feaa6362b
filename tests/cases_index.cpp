// Gradient-check cases for core/ops/index.cpp.
#include "gradcheck.h"

namespace rpb::testing {

void add_index_cases(CaseList& cases) {
  Generator gen(31);
  auto select = [&](const std::string& name, Tensor table, Tensor index) {
    cases.push_back({"index_select " + name, OpKind::IndexSelect, {table, index},
                     [](const std::vector<Tensor>& in) { return index_select(in[0], in[1]); }});
  };
  select("repeated indices", input(gen, {5, 3}), Tensor::indices({6}, {1, 3, 1, 0, 3, 1}));
  select("2-D index", input(gen, {4, 2}), Tensor::indices({2, 3}, {3, 0, 2, 2, 3, 1}));
  select("3-D table", input(gen, {4, 2, 3}), Tensor::indices({2, 2}, {2, 0, 2, 3}));
  select("1-D table", input(gen, {5}), Tensor::indices({3, 2}, {4, 4, 0, 1, 2, 4}));

  auto gath = [&](const std::string& name, Tensor x, int axis, Tensor index) {
    cases.push_back({"gather " + name, OpKind::Gather, {x, index},
                     [axis](const std::vector<Tensor>& in) { return gather(in[0], axis, in[1]); }});
  };
  gath("axis 0", input(gen, {3, 4}), 0, Tensor::indices({2, 4}, {2, 0, 1, 2, 2, 2, 0, 1}));
  gath("last axis", input(gen, {2, 3, 4}), -1, Tensor::indices({2, 3, 2}, {3, 3, 0, 1, 2, 0, 1, 1, 3, 2, 0, 0}));
  gath("middle axis, index smaller than x", input(gen, {2, 4, 3}), 1,
       Tensor::indices({1, 3, 2}, {3, 0, 1, 1, 3, 2}));
  gath("target pick (cross-entropy style)", input(gen, {4, 5}), 1, Tensor::indices({4, 1}, {4, 0, 2, 2}));
}

}  // namespace rpb::testing
