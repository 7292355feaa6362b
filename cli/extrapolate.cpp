// rpb/cli/extrapolate.cpp: `rpb extrapolate`.
#include "cli/extrapolate.h"

#include <iostream>
#include <memory>

#include "cli/command_line.h"
#include "cli/common_options.h"
#include "cli/plot_request.h"
#include "train/config/config.h"
#include "train/data/task_registry.h"
#include "train/dist/distributed.h"
#include "train/interrupt.h"
#include "train/sweep/results.h"
#include "train/sweep/sweep.h"

namespace rpb {

int cmd_extrapolate(const std::string& config_path, const std::vector<std::string>& overrides, bool overwrite) {
  const RunConfig cfg = load_config(config_path, overrides);
  const InterruptHandlers handlers;
  const SweepResult r = run_sweep(cfg, overwrite, resume_hint("extrapolate", config_path, overrides));
  if (dist::rank() != 0) return 0;  // a distributed sweep: rank 0 writes the results
  const std::string dir = cfg.run_dir();
  {
    const DeferInterrupts defer;  // the result files are written whole
    write_results(r, dir);
  }
  if (const int sig = pending_interrupt()) throw Interrupted(sig);
  // The figures after the results: a figure that cannot be drawn (no matplotlib) leaves the results whole.
  const bool drawn = draw_sweep_figures(dir, cfg.sweep.figures);
  std::string files = "csv,json,tex";
  for (const std::string& f : drawn ? cfg.sweep.figures : std::vector<std::string>{}) files += "," + f;
  std::cout << format_table(r) << "\nResults: " << dir << "/results.{" << files << "}\n";
  return 0;
}

CommandRunner add_extrapolate_command(CLI::App& cmd) {
  struct Args {
    std::string config;
    std::vector<std::string> overrides;
    std::string max_memory;
    bool overwrite = false;
    std::string device;
  };
  auto a = std::make_shared<Args>();
  cmd.add_option("config", a->config, "configs/extrapolation*.toml")->required();
  add_device_option(cmd, a->device, "where every run trains and evaluates: cpu or cuda (run.device)");
  cmd.add_option("--set", a->overrides, "override a config key (repeatable)");
  cmd.footer("Tasks (task.kind, sweep.tasks):\n" + data::task_help());
  add_overwrite_option(cmd, a->overwrite);
  add_memory_option(cmd, a->max_memory);
  return [a] {
    apply_memory_option(a->max_memory);
    apply_device_option(a->device, a->overrides);
    return cmd_extrapolate(a->config, a->overrides, a->overwrite);
  };
}

}  // namespace rpb
