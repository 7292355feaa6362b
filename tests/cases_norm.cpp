// Gradient-check cases for core/ops/norm.cpp.
#include "gradcheck.h"

namespace rpb::testing {

void add_norm_cases(CaseList& cases) {
  Generator gen(303);
  auto affine = [](double eps) {
    return [eps](const std::vector<Tensor>& x) { return layer_norm(x[0], x[1], x[2], eps); };
  };
  const OpKind op = OpKind::LayerNorm;
  cases.push_back({"layer_norm [3, 5] weight and bias", op, {input(gen, {3, 5}), input(gen, {5}), input(gen, {5})},
                   affine(1e-5)});
  cases.push_back({"layer_norm [2, 3, 4] weight and bias", op,
                   {input(gen, {2, 3, 4}, -2, 2), input(gen, {4}), input(gen, {4})}, affine(1e-5)});
  cases.push_back({"layer_norm [1, 1, 6] weight and bias, eps 0.1", op,
                   {input(gen, {1, 1, 6}), input(gen, {6}), input(gen, {6})}, affine(0.1)});
  cases.push_back({"layer_norm [6] 1-D", op, {input(gen, {6}), input(gen, {6}), input(gen, {6})}, affine(1e-5)});
  cases.push_back({"layer_norm [3, 1] length-1 axis", op, {input(gen, {3, 1}), input(gen, {1}), input(gen, {1})},
                   affine(1e-5)});
  cases.push_back({"layer_norm [4, 6] no affine", op, {input(gen, {4, 6})},
                   [](const std::vector<Tensor>& x) { return layer_norm(x[0], Tensor(), Tensor()); }});
  cases.push_back({"layer_norm [3, 4] weight only", op, {input(gen, {3, 4}), input(gen, {4})},
                   [](const std::vector<Tensor>& x) { return layer_norm(x[0], x[1], Tensor()); }});
  cases.push_back({"layer_norm [3, 4] bias only", op, {input(gen, {3, 4}), input(gen, {4})},
                   [](const std::vector<Tensor>& x) { return layer_norm(x[0], Tensor(), x[1]); }});
  // A constant weight and bias: only x needs a gradient.
  const Tensor w = rand({5}, gen, DType::f64, 0.5, 1.5);
  const Tensor b = rand({5}, gen, DType::f64, -1.0, 1.0);
  cases.push_back({"layer_norm [2, 5] constant affine", op, {input(gen, {2, 5})},
                   [w, b](const std::vector<Tensor>& x) { return layer_norm(x[0], follow(w, x[0]), follow(b, x[0])); }});
  // Only the affine parameters need gradients.
  const Tensor xc = rand({4, 3}, gen, DType::f64, -1.0, 1.0);
  cases.push_back({"layer_norm [4, 3] constant input", op, {input(gen, {3}), input(gen, {3})},
                   [xc](const std::vector<Tensor>& x) { return layer_norm(follow(xc, x[0]), x[0], x[1]); }});
  cases.push_back({"layer_norm(x) * x", op, {input(gen, {3, 4}), input(gen, {4}), input(gen, {4})},
                   [](const std::vector<Tensor>& x) { return mul(layer_norm(x[0], x[1], x[2]), x[0]); }});
  cases.push_back({"layer_norm with the weight used as bias too", op, {input(gen, {2, 4}), input(gen, {4})},
                   [](const std::vector<Tensor>& x) { return layer_norm(x[0], x[1], x[1]); }});
  cases.push_back({"layer_norm of a reshape view", op, {input(gen, {12}), input(gen, {4}), input(gen, {4})},
                   [](const std::vector<Tensor>& x) { return layer_norm(reshape(x[0], {3, 4}), x[1], x[2]); }});
}

}  // namespace rpb::testing
