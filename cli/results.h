// rpb/cli/results.h: what `rpb extrapolate` prints and writes from a sweep's results.
#pragma once

#include <string>

#include "cli/extrapolate.h"

namespace rpb {

/// The seed's table: Method | Position params | PPL at train length | 2x | ... (mean +- std over seeds).
std::string format_table(const SweepResult& r);
/// Writes results.csv, results.json and results.svg into `dir` (atomically, each).
void write_results(const SweepResult& r, const std::string& dir);

}  // namespace rpb
