// rpb/train/data/lag.h: the lag task: each token copies the one `lag` positions back, or is fresh noise.
#pragma once

#include <optional>
#include <string>

#include "train/data/task.h"

namespace rpb::data {

/// x_t = x_{t-lag} with probability 1-noise, else a uniform token (the first `lag` tokens are
/// uniform). Entropy rate per token after the first `lag`, with q = 1-noise+noise/V:
/// H = -q log q - (V-1)(noise/V) log(noise/V). A relative-offset task: the model must find the
/// token `lag` positions back wherever it stands.
class LagTask final : public Task {
 public:
  explicit LagTask(const TaskOptions& options);
  int64_t vocab() const override { return opt_.vocab; }
  std::string describe() const override;
  std::optional<double> entropy_rate() const override { return entropy_; }

 private:
  TaskOptions opt_;
  double entropy_ = 0;
};

}  // namespace rpb::data
