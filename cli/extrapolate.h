// rpb/cli/extrapolate.h: `rpb extrapolate`, the perplexity-vs-length sweep (train/sweep/sweep.h) and its results.
#pragma once

#include <string>
#include <vector>

#include "cli/command.h"

namespace rpb {

/// The perplexity-vs-length sweep: trains or reuses every run, prints the table, writes results.*. With `overwrite`
/// (--overwrite), a run folder trained with another config is moved aside and the run trained afresh.
int cmd_extrapolate(const std::string& config_path, const std::vector<std::string>& overrides, bool overwrite = false);

/// Adds `rpb extrapolate`'s arguments to `cmd` (the registry's row in cli/commands.cpp).
CommandRunner add_extrapolate_command(CLI::App& cmd);

}  // namespace rpb
