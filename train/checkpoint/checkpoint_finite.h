// rpb/train/checkpoint/checkpoint_finite.h: non-finite values (NaN, +-inf) in a checkpoint's parameters, buffers and optimizer
// state. A diverged or edited checkpoint loads (load_checkpoint checks its structure, not its numbers); what reads
// its numbers as a model's (`rpb eval`, `rpb generate`, `train --resume`) refuses it with check_finite, and
// `rpb inspect`, the tool for diagnosing a diverged run, lists them with non_finite_datasets.
#pragma once

#include <string>
#include <vector>

#include "train/checkpoint/checkpoint.h"

namespace rpb {

/// One float dataset holding non-finite values.
struct NonFiniteDataset {
  std::string dataset;  // "/params/blocks.0.ln1.weight", "/optim/exp_avg/head.weight" (names made printable)
  std::string index;    // the first non-finite value's index, row-major: "[3]", "[1, 7]", "[]" for a scalar
  double value = 0;     // that value (NaN, inf or -inf)
  int64_t count = 0;    // non-finite values in the dataset
  int64_t numel = 0;    // values in the dataset
  /// "/params/blocks.0.ln1.weight[3] is nan (1 of 64 values non-finite)".
  std::string line() const;
};

/// The float datasets of /params, /buffers and /optim that hold a non-finite value, in the file's order (params,
/// buffers, optimizer tensors). Integer datasets are finite by nature.
std::vector<NonFiniteDataset> non_finite_datasets(const Checkpoint& c);

/// Throws rpb::Error "checkpoint <file>: /params/x[3] is nan (1 of 64 values non-finite)[; and N more datasets];
/// a model with non-finite numbers is not evaluated, resumed or sampled (... `rpb inspect <file>` lists ...)" when
/// any dataset holds a non-finite value.
void check_finite(const Checkpoint& c, const std::string& file);

}  // namespace rpb
