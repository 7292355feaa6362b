#include "train/commands.h"

#include <spdlog/spdlog.h>

#include <filesystem>
#include <iomanip>
#include <iostream>
#include <sstream>

#include "nn/position.h"
#include "train/checkpoint.h"
#include "train/extrapolate.h"
#include "train/inspect.h"
#include "train/trainer.h"

namespace fs = std::filesystem;

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

int cmd_train(const std::string& config_path, bool resume, const std::vector<std::string>& overrides) {
  const RunConfig cfg = load_config(config_path, overrides);
  Run run(cfg);
  const TrainSummary s = run.train(resume);
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

}  // namespace rpb
