// rpb/train/commands.h: the bodies of `rpb train`, `eval`, `extrapolate` and `inspect`.
// Each returns the process exit code; errors are thrown as rpb::Error and reported by main.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace rpb {

/// Trains the run `config_path` describes (with `overrides` applied), then evaluates it.
int cmd_train(const std::string& config_path, bool resume, const std::vector<std::string>& overrides);
/// Perplexity of a checkpoint at `lengths` (empty: the config's multiples of the train length).
int cmd_eval(const std::string& checkpoint, const std::vector<int64_t>& lengths);
/// The perplexity-vs-length sweep: trains or reuses every run, prints the table, writes results.*.
int cmd_extrapolate(const std::string& config_path, const std::vector<std::string>& overrides);
/// A readable report of a checkpoint.
int cmd_inspect(const std::string& checkpoint);

}  // namespace rpb
