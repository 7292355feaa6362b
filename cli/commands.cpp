#include "cli/commands.h"

#include <spdlog/spdlog.h>

#include <filesystem>
#include <iomanip>
#include <iostream>
#include <sstream>

#include "cli/bias.h"
#include "cli/demo.h"
#include "cli/extrapolate.h"
#include "cli/inspect.h"
#include "cli/results.h"
#include "nn/position.h"
#include "train/checkpoint.h"
#include "train/trainer.h"

namespace rpb {

namespace {

void print_lengths(const Run& run, const std::vector<LengthResult>& results, std::ostream& out) {
  const nn::PositionOptions po = run.config().position();
  const int64_t limit = nn::scheme_info(po).max_length(po);
  out << "Perplexity on the held-out test split (" << run.describe() << "), trained at length "
      << run.config().length << ":\n\n| length | x train | NLL (nats) | perplexity |\n|---|---|---|---|\n";
  for (const LengthResult& r : results) {
    out << "| " << r.length << " | " << r.multiplier << "x | ";
    if (r.nll) out << std::fixed << std::setprecision(4) << *r.nll << " | " << *r.perplexity() << " |\n";
    else out << "n/a | n/a (" << po.scheme << " positions end at " << limit << ") |\n";
  }
  if (const auto opt = run.optimal_perplexity())
    out << "\noptimal perplexity (exp of the entropy rate): " << std::fixed << std::setprecision(4) << *opt << "\n";
  out.unsetf(std::ios::fixed);
}

}  // namespace

int cmd_train(const std::string& config_path, bool resume, const std::string& resume_from,
              const std::vector<std::string>& overrides) {
  const RunConfig cfg = load_config(config_path, overrides);
  Run run(cfg);
  const TrainSummary s = run.train(resume, resume_from);
  if (s.stopped_non_finite) {
    spdlog::error("training stopped at step {}: a non-finite loss or gradient (see {}/train.log)", s.step, run.dir());
    return 1;
  }
  print_lengths(run, run.evaluate(), std::cout);
  return 0;
}

int cmd_eval(const std::string& checkpoint, const std::vector<int64_t>& lengths) {
  const Checkpoint c = load_checkpoint(checkpoint);
  const RunConfig cfg = parse_config(c.config_text, checkpoint + " (stored config)");
  Run run(cfg);
  run.restore(c, checkpoint);
  print_lengths(run, run.evaluate(lengths), std::cout);
  return 0;
}

int cmd_extrapolate(const std::string& config_path, const std::vector<std::string>& overrides) {
  const RunConfig cfg = load_config(config_path, overrides);
  const SweepResult r = run_sweep(cfg);
  const std::string dir = cfg.run_dir();
  write_results(r, dir);
  std::cout << format_table(r) << "\nResults: " << dir << "/results.{csv,json,svg}\n";
  return 0;
}

int cmd_inspect(const std::string& checkpoint) {
  inspect_checkpoint(checkpoint, std::cout);
  return 0;
}

namespace {

CommandRunner add_train(CLI::App& cmd) {
  struct Args {
    std::string config;
    bool resume = false;
    std::string resume_from;
    std::vector<std::string> overrides;
  };
  auto a = std::make_shared<Args>();
  cmd.add_option("config", a->config, "configs/*.toml")->required()->check(CLI::ExistingFile);
  cmd.add_flag("--resume", a->resume, "continue the run from its latest checkpoint");
  cmd.add_option("--resume-from", a->resume_from,
                 "continue the run from this checkpoint of its folder (step_*.h5), and point `latest` at it")
      ->check(CLI::ExistingFile);
  cmd.add_option("--set", a->overrides, "override a config key: --set model.d_model=256 (repeatable)");
  return [a] { return cmd_train(a->config, a->resume, a->resume_from, a->overrides); };
}

CommandRunner add_eval(CLI::App& cmd) {
  struct Args {
    std::string checkpoint;
    std::vector<int64_t> lengths;
  };
  auto a = std::make_shared<Args>();
  cmd.add_option("checkpoint", a->checkpoint, "a checkpoint .h5 file")->required()->check(CLI::ExistingFile);
  cmd.add_option("--lengths", a->lengths, "comma-separated lengths (multiples of the train length)")
      ->delimiter(',')
      ->check(CLI::Range(int64_t{1}, int64_t{1} << 24));
  return [a] { return cmd_eval(a->checkpoint, a->lengths); };
}

CommandRunner add_extrapolate(CLI::App& cmd) {
  struct Args {
    std::string config;
    std::vector<std::string> overrides;
  };
  auto a = std::make_shared<Args>();
  cmd.add_option("config", a->config, "configs/extrapolation*.toml")->required()->check(CLI::ExistingFile);
  cmd.add_option("--set", a->overrides, "override a config key (repeatable)");
  return [a] { return cmd_extrapolate(a->config, a->overrides); };
}

CommandRunner add_inspect(CLI::App& cmd) {
  auto checkpoint = std::make_shared<std::string>();
  cmd.add_option("checkpoint", *checkpoint, "a checkpoint .h5 file")->required()->check(CLI::ExistingFile);
  return [checkpoint] { return cmd_inspect(*checkpoint); };
}

}  // namespace

const std::vector<Command>& commands() {
  static const std::vector<Command> table = {
      {"demo", "Train a small MLP on two spirals with rpb's autograd engine", add_demo_command},
      {"bias", "Print a position scheme's bucket/index matrix, or its bias if it is fixed", add_bias_command},
      {"train", "Train a model from a TOML config (checkpoints in its run folder)", add_train},
      {"eval", "Perplexity of a checkpoint at several lengths", add_eval},
      {"extrapolate", "Train every position scheme and print perplexity against length", add_extrapolate},
      {"inspect", "Report a checkpoint: config, metrics, parameters, bias tables", add_inspect},
  };
  return table;
}

}  // namespace rpb
