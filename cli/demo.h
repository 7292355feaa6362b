// rpb/cli/demo.h: the engine demo run by `rpb demo` (and scripts/run.sh until the
// extrapolation table exists): a small MLP learns the two-spirals problem.
#pragma once

#include <CLI/CLI.hpp>

#include <cstdint>
#include <functional>

namespace rpb {

struct DemoOptions {
  int steps = 1500;
  int hidden = 64;
  int points_per_class = 256;
  double lr = 0.05;
  double momentum = 0.9;
  uint64_t seed = 0;
  int log_every = 250;  // 0: no progress lines
};

struct DemoResult {
  double initial_loss = 0;
  double final_loss = 0;
  double accuracy = 0;  // on the training points
};

/// Trains a 2-H-H-2 tanh MLP with full-batch SGD and cross-entropy; deterministic for a seed.
DemoResult run_demo(const DemoOptions& options);

/// `rpb demo`'s options on `cmd`; the runner trains, logs the result and exits 0 when accuracy passes 50%.
std::function<int()> add_demo_command(CLI::App& cmd);

}  // namespace rpb
