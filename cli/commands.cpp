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
#include "nn/limits.h"
#include "nn/position.h"
#include "core/text.h"
#include "train/checkpoint.h"
#include "train/memory.h"
#include "train/stored_model.h"
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

int cmd_eval(const std::string& checkpoint, const std::vector<int64_t>& lengths, const std::string& kjv_path) {
  const Checkpoint c = load_checkpoint(checkpoint);
  RunConfig cfg = parse_config(c.config_text, checkpoint + " (stored config)");
  // The task's data is the user's, never the file's: a stored kjv_path is not read, and nothing is written.
  cfg.task.kjv_path = kjv_path;
  cfg.task.generate_missing = false;
  check_stored_model(c, cfg, checkpoint_vocab(c, cfg, checkpoint), checkpoint);
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

int cmd_inspect(const std::string& checkpoint, const std::string& svg_path) {
  inspect_checkpoint(checkpoint, std::cout, svg_path);
  return 0;
}

namespace {

// --max-memory, on every command that builds a model.
void add_memory_option(CLI::App& cmd, std::string& value) {
  cmd.add_option("--max-memory", value,
                 "refuse a run whose estimated memory is larger: 8G, 512M, 1.5GiB (default: the available memory)")
      ->check(CLI::Validator(
          [](const std::string& text) {
            try {
              parse_memory_size(text, "--max-memory");
              return std::string();
            } catch (const Error&) {
              return "expected a size such as 8G, 512M or 1073741824, found \"" + printable(text, 40) + "\"";
            }
          },
          "SIZE"));
}

void apply_memory_option(const std::string& value) {
  if (!value.empty()) set_memory_budget({parse_memory_size(value, "--max-memory"), "--max-memory " + printable(value, 40)});
  else if (const std::size_t available = available_memory()) set_memory_budget({available, "the available memory"});
}

CommandRunner add_train(CLI::App& cmd) {
  struct Args {
    std::string config;
    bool resume = false;
    std::string resume_from;
    std::vector<std::string> overrides;
    std::string max_memory;
  };
  auto a = std::make_shared<Args>();
  cmd.add_option("config", a->config, "configs/*.toml")->required()->check(CLI::ExistingFile);
  cmd.add_flag("--resume", a->resume, "continue the run from its latest checkpoint");
  cmd.add_option("--resume-from", a->resume_from,
                 "continue the run from this checkpoint of its folder (step_*.h5), and point `latest` at it")
      ->check(CLI::ExistingFile);
  cmd.add_option("--set", a->overrides, "override a config key: --set model.d_model=256 (repeatable)");
  add_memory_option(cmd, a->max_memory);
  return [a] {
    apply_memory_option(a->max_memory);
    return cmd_train(a->config, a->resume, a->resume_from, a->overrides);
  };
}

CommandRunner add_eval(CLI::App& cmd) {
  struct Args {
    std::string checkpoint;
    std::vector<int64_t> lengths;
    std::string kjv_path;
    std::string max_memory;
  };
  auto a = std::make_shared<Args>();
  cmd.add_option("checkpoint", a->checkpoint, "a checkpoint .h5 file")->required()->check(CLI::ExistingFile);
  cmd.add_option("--lengths", a->lengths, "comma-separated lengths (multiples of the train length)")
      ->delimiter(',')
      ->check(CLI::Range(int64_t{1}, nn::limits::kMaxSequence));
  cmd.add_option("--kjv-path", a->kjv_path,
                 "kjv runs: the text to evaluate on (default checkpoints/data/kjv.txt; the checkpoint's own path is "
                 "never used)");
  add_memory_option(cmd, a->max_memory);
  return [a] {
    apply_memory_option(a->max_memory);
    return cmd_eval(a->checkpoint, a->lengths, a->kjv_path);
  };
}

CommandRunner add_extrapolate(CLI::App& cmd) {
  struct Args {
    std::string config;
    std::vector<std::string> overrides;
    std::string max_memory;
  };
  auto a = std::make_shared<Args>();
  cmd.add_option("config", a->config, "configs/extrapolation*.toml")->required()->check(CLI::ExistingFile);
  cmd.add_option("--set", a->overrides, "override a config key (repeatable)");
  add_memory_option(cmd, a->max_memory);
  return [a] {
    apply_memory_option(a->max_memory);
    return cmd_extrapolate(a->config, a->overrides);
  };
}

CommandRunner add_inspect(CLI::App& cmd) {
  struct Args {
    std::string checkpoint;
    std::string max_memory;
    std::string svg;
  };
  auto a = std::make_shared<Args>();
  cmd.add_option("checkpoint", a->checkpoint, "a checkpoint .h5 file")->required()->check(CLI::ExistingFile);
  cmd.add_option("--svg", a->svg, "also draw each head's position bias against distance into this SVG file");
  add_memory_option(cmd, a->max_memory);
  return [a] {
    apply_memory_option(a->max_memory);
    return cmd_inspect(a->checkpoint, a->svg);
  };
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
