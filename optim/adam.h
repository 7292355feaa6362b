// rpb/optim/adam.h: Adam and AdamW, with torch.optim's bias correction.
#pragma once

#include <cstdint>
#include <vector>

#include "optim/optimizer.h"

namespace rpb::optim {

struct AdamOptions {
  double beta1 = 0.9;
  double beta2 = 0.999;
  double eps = 1e-8;
  /// The default weight decay (for parameters no group rule matches).
  double weight_decay = 0.0;
  /// true: AdamW, decay decoupled from the gradient (p *= 1 - lr_eff*wd before the update);
  /// false: Adam with the L2 term wd*p added to the gradient.
  bool decoupled = true;
  /// Per-name groups; the first matching rule wins (see GroupRule).
  std::vector<GroupRule> groups = {};
};

/// Adam / AdamW as torch.optim.Adam / AdamW. Per parameter, with its own step count t
/// (from 1, counting only steps in which it had a gradient) and lr_eff = lr * lr_scale:
///   m = b1 m + (1-b1) g;  v = b2 v + (1-b2) g^2
///   p -= lr_eff * (m / (1-b1^t)) / (sqrt(v / (1-b2^t)) + eps)
/// Moments have the parameter's dtype (float32 or float64) and are created on the
/// parameter's first gradient; the update runs in place on the parameter's storage.
/// State slots: "exp_avg/<name>", "exp_avg_sq/<name>", "step/<name>" (0-d int64).
class Adam : public Optimizer {
 public:
  Adam(const nn::NamedTensors& params, AdamOptions options = {});
  void step(double lr) override;
  OptimizerState state() const override;
  void load_state(const OptimizerState& state) override;
  const AdamOptions& options() const { return options_; }

 private:
  struct Moments {
    Tensor exp_avg, exp_avg_sq;  // undefined until the parameter's first gradient
    int64_t step = 0;
  };
  AdamOptions options_;
  std::vector<Moments> moments_;  // one per parameter
};

}  // namespace rpb::optim
