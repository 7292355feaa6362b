#include "cli/inspect.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <iomanip>
#include <map>
#include <sstream>

#include "cli/common_options.h"
#include "cli/plot_bias.h"
#include "cli/python_runner.h"
#include "core/text.h"
#include "nn/position.h"
#include "train/checkpoint/checkpoint.h"
#include "train/checkpoint/checkpoint_finite.h"
#include "train/checkpoint/stored_model.h"
#include "train/config/config.h"
#include "train/config/memory.h"
#include "train/data/task_registry.h"
#include "train/data/tokenizer.h"
#include "train/run/checkpoint_path.h"

namespace rpb {

namespace {

struct Stats {
  double mean = 0, std = 0, min = 0, max = 0;
};

Stats stats_of(const Tensor& t) {
  Stats s;
  const std::vector<double> v = t.to_vector();
  if (v.empty()) return s;
  s.min = *std::min_element(v.begin(), v.end());
  s.max = *std::max_element(v.begin(), v.end());
  for (double x : v) s.mean += x;
  s.mean /= static_cast<double>(v.size());
  for (double x : v) s.std += (x - s.mean) * (x - s.mean);
  s.std = std::sqrt(s.std / static_cast<double>(v.size()));
  return s;
}

// The valid losses (run.eval_every) per length: first, last and lowest, with their steps; and a passkey run's valid
// accuracy alike (first, last and highest).
void print_valid_losses(const std::vector<MetricsRow>& rows, std::ostream& out) {
  const auto print = [&](const char* what, std::vector<std::pair<int64_t, double>> MetricsRow::*column, bool lowest) {
    std::map<int64_t, std::vector<std::pair<int64_t, double>>> by_length;  // length -> (step, value)
    for (const MetricsRow& m : rows)
      for (const auto& [length, value] : m.*column)
        if (std::isfinite(value)) by_length[length].emplace_back(m.step, value);
    for (const auto& [length, v] : by_length) {
      const auto best = std::min_element(v.begin(), v.end(), [&](const auto& a, const auto& b) {
        return lowest ? a.second < b.second : a.second > b.second;
      });
      out << std::setprecision(5) << "\n  valid " << what << " at length " << length << ": " << v.front().second
          << " (step " << v.front().first << ") -> " << v.back().second << " (step " << v.back().first << "), "
          << (lowest ? "lowest " : "highest ") << best->second << " (step " << best->first << "), " << v.size()
          << " validations";
    }
  };
  print("loss", &MetricsRow::valid_loss, true);
  print("accuracy", &MetricsRow::valid_accuracy, false);
}

void print_metrics(const Checkpoint& c, std::ostream& out) {
  out << "\nmetrics: " << c.metrics.size() << " logged steps";
  if (c.metrics.empty()) return;
  const auto best = std::min_element(c.metrics.begin(), c.metrics.end(),
                                     [](const MetricsRow& a, const MetricsRow& b) { return a.loss < b.loss; });
  double tps = 0;
  for (const MetricsRow& m : c.metrics) tps += m.tokens_per_sec;
  out << std::setprecision(5) << "\n  loss " << c.metrics.front().loss << " (step " << c.metrics.front().step
      << ") -> " << c.metrics.back().loss << " (step " << c.metrics.back().step << "), lowest " << best->loss
      << " (step " << best->step << ")\n  last lr " << c.metrics.back().lr << ", last grad norm "
      << c.metrics.back().grad_norm << ", mean " << std::setprecision(6) << tps / static_cast<double>(c.metrics.size())
      << " tokens/s";
  print_valid_losses(c.metrics, out);
}

// The stored config as it is, line by line, but without control bytes (a crafted file's strings could hold
// escape sequences) and with each line cut at 1000 bytes.
void print_config(const std::string& text, std::ostream& out) {
  out << "\nconfig:\n";
  std::istringstream cs(text);
  for (std::string line; std::getline(cs, line);) out << "  " << terminal_text(line, 1000) << "\n";
}

void print_parameters(const Checkpoint& c, std::ostream& out) {
  out << "\n\nparameters (" << c.params.size() << "):\n";
  std::vector<std::string> names;  // as the file holds them, escaped and cut
  for (const auto& [name, t] : c.params) names.push_back(printable(name, 100));
  std::size_t w = 4;
  for (const std::string& name : names) w = std::max(w, name.size());
  out << "  " << std::left << std::setw(static_cast<int>(w)) << "name" << "  " << std::setw(14) << "shape"
      << std::right << std::setw(11) << "mean" << std::setw(11) << "std" << std::setw(11) << "min" << std::setw(11)
      << "max" << "\n";
  int64_t total = 0;
  for (std::size_t i = 0; i < c.params.size(); ++i) {
    const Tensor& t = c.params[i].second;
    const Stats s = stats_of(t);
    total += t.numel();
    out << "  " << std::left << std::setw(static_cast<int>(w)) << names[i] << "  " << std::setw(14) << t.shape().to_string()
        << std::right << std::fixed << std::setprecision(4) << std::setw(11) << s.mean << std::setw(11) << s.std
        << std::setw(11) << s.min << std::setw(11) << s.max << "\n";
    out.unsetf(std::ios::fixed);
  }
  out << "  total " << total << " parameters\n";
}

// The digest of the stored config's identity, recomputed, beside the one the checkpoint recorded when it was
// written (root attribute config_digest): they differ when the stored config was edited since.
void print_digests(const StoredCheckpoint& s, std::ostream& out) {
  out << "  config digest " << s.digest << " (recomputed from the stored config; train/config/run_identity.h)";
  if (s.checkpoint.config_digest.empty()) {
    out << "\n  stored config_digest: none (a checkpoint of before digests)\n";
    return;
  }
  if (!s.edited()) {
    out << ", equal to the stored config_digest\n";
    return;
  }
  out << "\n  stored config_digest " << printable(s.checkpoint.config_digest, 100)
      << "\n  MISMATCH: the stored config_digest differs from the digest of the stored config: the config was "
         "edited after the checkpoint was written (eval, generate and train --resume read the edited config)\n";
  spdlog::warn("inspect: {}", edited_config_warning(s));
}

// The datasets holding NaN or inf (what `eval`, `generate` and `train --resume` refuse), or one line saying none.
void print_non_finite(const Checkpoint& c, std::ostream& out) {
  const std::vector<NonFiniteDataset> bad = non_finite_datasets(c);
  if (bad.empty()) {
    out << "\nnon-finite values: none\n";
    return;
  }
  out << "\nnon-finite values in " << bad.size() << " dataset" << (bad.size() > 1 ? "s" : "")
      << " (eval, generate and train --resume refuse this checkpoint):\n";
  for (const NonFiniteDataset& d : bad) out << "  " << d.line() << "\n";
}

// What the run's data was (train/checkpoint/data_identity.h): a kjv text by its digest and characters, or generated.
std::string data_line(const Checkpoint& c, const RunConfig& cfg) {
  if (!c.data.tokenizer.empty())  // parsed when the checkpoint was read
    return "text sha256 " + printable(c.data.text_sha256) + ", tokenizer " +
           data::load_tokenizer(c.data.tokenizer, "/data/tokenizer_model")->describe();
  if (!c.data.empty())
    return "kjv text sha256 " + printable(c.data.text_sha256) + ", " + std::to_string(c.data.vocab.size()) +
           " characters \"" + printable(c.data.vocab, 300) + "\"";
  const data::TaskInfo& task = data::task_info(cfg.task.kind);
  if (task.reads_text)
    return std::string(task.name) + " text not recorded (a checkpoint written before rpb recorded its text)";
  return "generated from the config ([task] and its seed)";
}

// The title of the bias figure: "T5 bias (t5), step_00000600.h5 at step 600 of 600, trained at length 64".
std::string bias_title(const Checkpoint& c, const RunConfig& cfg, const std::string& file) {
  const nn::PositionOptions p = cfg.position();
  return std::string(nn::scheme_info(p).label) + " (" + p.scheme + "), " +
         printable(std::filesystem::path(file).filename().string(), 100) + " at step " + std::to_string(c.step) +
         " of " + std::to_string(cfg.steps) + ", trained at length " + std::to_string(cfg.length);
}

}  // namespace

void inspect_checkpoint(const std::string& file, std::ostream& out, const std::string& plot_path,
                        const std::string& plot_flag) {
  const OutputOptions plot{plot_flag, {{"checkpoint", file}}};
  if (!plot_path.empty()) {  // before the checkpoint is read: a refusal costs nothing
    check_output_file(plot_path, plot);
    figure_format(plot_path, plot_flag);
  }
  const StoredCheckpoint stored = read_stored_checkpoint(file);
  const Checkpoint& c = stored.checkpoint;
  const RunConfig& cfg = stored.config;
  // The parameters must be the ones the stored config's model has (names, shapes, dtypes), as `rpb eval`
  // requires: the position modules below report them through the config's num_buckets, K and window. Only the
  // model is built, never the task's data, and only once the file holds as many parameters as it has.
  const int64_t vocab = checkpoint_vocab(c, cfg, file);
  check_stored_model(c, cfg, vocab, file);  // first: a config that does not fit the file's parameters says so
  check_memory(estimate_memory(cfg, vocab, MemoryUse::inspect), memory_budget(), "inspect");
  const std::unique_ptr<nn::Module> built = load_stored_model(c, cfg, vocab, file);
  const nn::Module& model = *built;
  if (!plot_path.empty())  // before the report: a refusal prints nothing else
    draw_bias(model, cfg, bias_title(c, cfg, file), plot_path, plot);
  const nn::PositionOptions& p = cfg.model.position;
  out << "checkpoint " << printable(file) << "\n  step " << c.step << " of " << cfg.steps << ", rpb "
      << printable(c.library_version) << " (commit "
      << (c.commit.empty() ? std::string("not recorded") : printable(c.commit)) << "), format version " << kCheckpointFormatVersion << "\n  model: d_model " << cfg.model.d_model << ", heads "
      << cfg.model.heads << ", layers " << cfg.model.layers << ", d_ff " << cfg.model.d_ff << "; position scheme "
      << p.scheme << (cfg.model.share_position ? "" : " (one per layer)") << "; token embedding "
      << nn::recipe_name(cfg.embedding_recipe())
      << (cfg.model.embedding == nn::EmbeddingRecipe::scheme ? " (the scheme's recipe)" : "") << "\n  task: " << cfg.task.kind
      << ", train length " << cfg.length << "; optimizer " << enum_name(kOptimizerKindNames, cfg.optim.kind)
      << " at step " << c.optim.step
      << "\n  data: " << data_line(c, cfg) << "\n";
  print_digests(stored, out);

  print_config(c.config_text, out);
  print_metrics(c, out);
  print_parameters(c, out);
  print_non_finite(c, out);
  // What each position module (a scheme, Swin's window attention) has learned.
  for (const auto& [path, m] : model.named_modules())
    if (const auto* pos = dynamic_cast<const nn::Positional*>(m)) out << pos->report(path + ".");
  if (!plot_path.empty()) out << "\nbias plot: " << printable(plot_path) << "\n";
}

int cmd_inspect(const std::string& checkpoint, const std::string& plot_path, const std::string& plot_flag) {
  inspect_checkpoint(resolve_checkpoint(checkpoint).file, std::cout, plot_path, plot_flag);
  return 0;
}

CommandRunner add_inspect_command(CLI::App& cmd) {
  struct Args {
    std::string checkpoint;
    std::string max_memory;
    std::string plot, svg;
  };
  auto a = std::make_shared<Args>();
  add_checkpoint_argument(cmd, a->checkpoint);
  CLI::Option* plot = cmd.add_option(
      "--plot", a->plot,
      "also draw each head's position bias (against distance d = query - key; 2-D: a heatmap per head) into this "
      "figure, .pdf, .png or .svg, with matplotlib: a new or replaced regular file, never a link, a device, the "
      "checkpoint or a file rpb manages in a run folder");
  cmd.add_option("--svg", a->svg, "the same as --plot (its earlier name)")->excludes(plot);
  add_memory_option(cmd, a->max_memory);
  return [a] {
    apply_memory_option(a->max_memory);
    return a->svg.empty() ? cmd_inspect(a->checkpoint, a->plot, "--plot") : cmd_inspect(a->checkpoint, a->svg, "--svg");
  };
}

}  // namespace rpb
