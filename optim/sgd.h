// rpb/optim/sgd.h: stochastic gradient descent with momentum and weight decay.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "core/tensor.h"

namespace rpb::optim {

/// A parameter with its module path (the checkpoint key), e.g. "blocks.0.attn.qkv.weight".
struct NamedParam {
  std::string name;
  Tensor param;
};

struct SGDOptions {
  double lr = 0.01;
  double momentum = 0.0;      // PyTorch's convention: v = momentum*v + g; p -= lr*v
  double weight_decay = 0.0;  // L2 term added to the gradient
};

/// Updates parameters in place from their .grad(); parameters without a gradient are skipped.
///
/// @code
/// rpb::Tensor w = rpb::Tensor::full({1}, 3.0).requires_grad_();
/// rpb::optim::SGD opt({{"w", w}}, {.lr = 0.1});
/// for (int step = 0; step < 100; ++step) {
///   opt.zero_grad();
///   rpb::backward(rpb::sum(w * w));  // minimum at 0
///   opt.step();
/// }
/// CHECK(std::abs(w.item()) < 1e-6);
/// @endcode
class SGD {
 public:
  SGD(std::vector<NamedParam> params, SGDOptions options);
  void step();
  void zero_grad();
  const std::vector<NamedParam>& params() const { return params_; }
  SGDOptions& options() { return options_; }

 private:
  std::vector<NamedParam> params_;
  std::vector<Tensor> velocity_;  // same shapes as params_; undefined until the first step with momentum
  SGDOptions options_;
};

}  // namespace rpb::optim
