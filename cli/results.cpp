// rpb/cli/results.cpp: see results.h.
#include "cli/results.h"

#include <memory>

#include "train/sweep/results.h"
#include "train/sweep/results_json.h"
#include "train/sweep/results_tex.h"

namespace rpb {

int run_results_command(const std::string& path, const std::string& format, std::ostream& out) {
  const SweepResults r = read_sweep_results(path);
  out << (format == "latex" ? results_tex(r) : format_table(r));
  return 0;
}

CommandRunner add_results_command(CLI::App& cmd) {
  struct Args {
    std::string path;
    std::string format = "markdown";
  };
  auto a = std::make_shared<Args>();
  cmd.add_option("results", a->path, "a sweep's results.json (in its folder <run.out_dir>/<sweep.name>/)")->required();
  cmd.add_option("--format", a->format,
                 "markdown: the tables `rpb extrapolate` printed after the sweep; latex: its results.tex")
      ->check(CLI::IsMember({"markdown", "latex"}))
      ->capture_default_str();
  return [a] { return run_results_command(a->path, a->format); };
}

}  // namespace rpb
