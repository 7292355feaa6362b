// rpb/cli/results.h: `rpb results`, a sweep's tables printed again from its results.json: the terminal table
// `rpb extrapolate` printed after the sweep (markdown), or its results.tex (latex). The docs' results tables are
// this command's output over bench/figures/*/results.json (tests/tools/docs_tables.py checks them).
#pragma once

#include <iostream>
#include <string>

#include "cli/command.h"

namespace rpb {

/// Prints the tables of the sweep results at `path` (read_sweep_results, train/sweep/results_json.h) to `out`:
/// `format` "markdown" format_table's text (train/sweep/results.h), "latex" results_tex's (train/sweep/results_tex.h);
/// returns 0. Throws rpb::Error naming the file (and the key) for a file rpb cannot read as sweep results.
int run_results_command(const std::string& path, const std::string& format, std::ostream& out = std::cout);

/// Adds `rpb results`'s arguments to `cmd` (the registry's row in cli/commands.cpp).
CommandRunner add_results_command(CLI::App& cmd);

}  // namespace rpb
