// rpb/cli/plot.h: `rpb plot PATH... [--out FILE] [filters]`, runs' training curves or a sweep's figure, drawn by
// python/rpb_plot/ (cli/python_runner.h).
#pragma once

#include <cstdint>
#include <ostream>
#include <string>
#include <vector>

#include "cli/command.h"

namespace rpb {

/// The arguments of `rpb plot`.
struct PlotArgs {
  /// Run folders (their metrics.csv: training curves), or sweep folders and results.json files (the sweep's figure);
  /// one kind per command.
  std::vector<std::string> paths;
  std::string out;                   // the figure (.pdf, .png, .svg); "": curves.pdf or results.pdf here
  std::vector<std::string> tasks;    // sweeps: task kinds to draw (default all)
  std::vector<std::string> methods;  // sweeps: method names as results.json writes them
  std::vector<int64_t> lengths;      // sweeps: evaluation lengths in tokens
  std::vector<std::string> metrics;  // sweeps: keys of sweep_metrics() (train/sweep/results_json.h)
  std::string ylim;                  // "LO,HI"
  std::string x;                     // curves: "step" (default) or "tokens"
  std::string against;               // sweeps: "length" (default) or a swept setting ("optim.lr")
  bool request = false;              // print the plot request (outputs: `out`) instead of drawing it
};

/// Checks the inputs (each a regular file, read within its bound; a results.json must parse, a metrics.csv must
/// start with its header) and the options against them, then draws the figure into `out`, written as the output
/// rules say (train/run/output_file.h: never an input, a run folder's file or a non-regular file; atomically) and
/// names it on `out_stream`; with `request`, writes the request (python/rpb_plot's) on `out_stream` instead. Throws
/// rpb::UsageError (exit 2) for a bad command line: run folders mixed with sweeps, an option of the other kind, a
/// filter value the inputs do not hold; rpb::Error for a bad input, and with matplotlib's install hint when it is
/// missing.
int run_plot(const PlotArgs& args, std::ostream& out_stream);

/// Adds `rpb plot`'s arguments to `cmd` (its row in cli/commands.cpp).
CommandRunner add_plot_command(CLI::App& cmd);

}  // namespace rpb
