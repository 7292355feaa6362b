// rpb/cli/eval_report.cpp: an evaluation's record, its tables, and its line in the run's train.log.
#include "cli/eval_report.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <iomanip>
#include <memory>
#include <optional>
#include <sstream>

#include "nn/position.h"
#include "train/checkpoint/data_identity.h"
#include "train/config/run_identity.h"
#include "train/data/task_registry.h"
#include "train/io/provenance.h"
#include "train/run/log_file_sink.h"
#include "train/run/log_format.h"
#include "train/run/run_folder.h"

namespace fs = std::filesystem;

namespace rpb {

namespace {

// A line of the evaluation in the run's train.log (appended with one write, like the run's own lines).
void log_in_run(const std::string& run_dir, const std::string& line) {
  auto sink = std::make_shared<LogFileSink>((fs::path(run_dir) / kTrainLogFileName).string());
  spdlog::logger log("eval", sink);
  log.set_pattern(log_pattern());
  log.info("{}", line);
}

}  // namespace

EvalRecord make_eval_record(const Run& run, const std::vector<LengthResult>& results, const std::string& file,
                            int64_t step, const std::string& sha256) {
  const nn::PositionOptions po = run.config().position();
  EvalRecord r;
  r.checkpoint = fs::path(file).filename().string();
  r.step = step;
  r.checkpoint_sha256 = sha256;
  r.config_digest = config_digest(run.config());
  r.run = run.config().name;
  r.scheme = po.scheme;
  r.untrained = nn::scheme_info(po).row_table ? nn::untrained_name(po.untrained) : "";
  if (po.rope_scaling != nn::RopeScaling::none) {
    r.rope_scaling = nn::rope_scaling_name(po.rope_scaling);
    r.rope_factor = nn::resolved_rope_factor(po.rope_factor, po.max_eval_multiplier);
    r.rope_factor_per_length = po.rope_factor_per_length;
    if (po.rope_factor_per_length) {  // the longest length's factor: its sample's tokens over L0's
      int64_t longest = 0;
      for (const LengthResult& l : results) longest = std::max(longest, l.length);
      const RunConfig& c = run.config();
      const int64_t tokens = data::sequence_tokens(c.task.kind, longest, c.model.causal);
      r.rope_factor = nn::per_length_rope_factor(tokens, po.train_length);
    }
  }
  r.task = run.describe();
  r.train_length = run.config().length;
  r.max_length = nn::scheme_info(po).max_length(po);
  r.optimal_perplexity = run.optimal_perplexity();
  r.lengths = results;
  r.options.stride = run.config().dims() == 1 ? run.config().eval_stride : 0;
  r.text_sha256 = run.data_identity().text_sha256;
  // `rpb eval` sets what it verified.
  r.text = text_match_name(r.text_sha256.empty() ? TextMatch::generated : TextMatch::same);
  r.provenance = current_provenance();
  return r;
}

namespace {

// Passkey retrieval's accuracy per tenth of depth (rows) and length (columns): the needle-in-a-haystack picture.
void print_depth_grid(const EvalRecord& r, std::ostream& out) {
  out << "\nAccuracy (%) by depth of the key (rows: tenths of the context, from its start) and length:\n\n| depth |";
  for (const LengthResult& l : r.lengths) out << " " << l.length << " |";
  out << "\n|---|";
  for (std::size_t i = 0; i < r.lengths.size(); ++i) out << "---|";
  out << "\n";
  for (int64_t b = 0; b < kDepthBins; ++b) {
    out << "| " << std::fixed << std::setprecision(1) << static_cast<double>(b) / kDepthBins << "-"
        << static_cast<double>(b + 1) / kDepthBins << " |";
    for (const LengthResult& l : r.lengths) {
      if (static_cast<std::size_t>(b) < l.depth_accuracy.size()) out << " " << 100 * l.depth_accuracy[b] << " |";
      else out << " n/a |";
    }
    out << "\n";
  }
  out << "\n" << (r.lengths.empty() ? 0 : r.lengths.front().samples_per_depth)
      << " samples per depth and length; greedy decoding of the answer after the query, exact match.\n";
}

}  // namespace

namespace {

// What an evaluation scores, from its lengths: a token stream's perplexity, passkey retrieval's accuracy, or an
// algorithmic task's per-token accuracy and exact match.
enum class Scored { tokens, retrieval, algorithmic };

Scored scored_kind(const EvalRecord& r) {
  const auto any = [&](auto has) { return std::any_of(r.lengths.begin(), r.lengths.end(), has); };
  if (any([](const LengthResult& l) { return l.token_accuracy.has_value(); })) return Scored::algorithmic;
  return any([](const LengthResult& l) { return l.accuracy.has_value(); }) ? Scored::retrieval : Scored::tokens;
}

// The algorithmic task's score: its per-token accuracy's mean over the lengths past training (past_training_mean).
std::optional<double> length_score(const EvalRecord& r) {
  std::vector<std::optional<double>> values;
  std::vector<int64_t> multipliers;
  for (const LengthResult& l : r.lengths) values.push_back(l.token_accuracy), multipliers.push_back(l.multiplier);
  return past_training_mean(values, multipliers);
}

void print_caption(const EvalRecord& r, Scored kind, std::ostream& out) {
  if (kind == Scored::algorithmic)
    out << "\nThe scored targets' NLL and perplexity, per-token accuracy and exact match (greedy decoding) on the "
           "held-out test samples, trained at lengths up to " << r.train_length << ", checkpoint " << r.checkpoint
        << " (step " << r.step << "), " << (r.lengths.empty() ? 0 : r.lengths.front().samples)
        << " samples at each length";
  else if (kind == Scored::retrieval)
    out << "\nThe answer's NLL and perplexity and greedy decoding's accuracy on the held-out test samples, trained at "
           "length " << r.train_length << ", checkpoint " << r.checkpoint << " (step " << r.step << "), "
        << r.tokens() << " answer tokens scored at each length";
  else
    out << "\nPerplexity on the held-out test split, trained at length " << r.train_length << ", checkpoint "
        << r.checkpoint << " (step " << r.step << "), " << r.tokens() << " tokens scored at each length";
}

}  // namespace

void print_eval_table(const EvalRecord& r, std::ostream& out) {
  // A text task's tokens stand for bytes of text: bits per byte compare runs with different tokenizers.
  const bool bytes = std::any_of(r.lengths.begin(), r.lengths.end(), [](const LengthResult& l) { return l.bytes > 0; });
  const Scored kind = scored_kind(r);
  const int64_t accuracies = kind == Scored::algorithmic ? 2 : kind == Scored::retrieval ? 1 : 0;
  out << "| length | x train | NLL (nats) | perplexity |" << (bytes ? " bits per byte |" : "")
      << (kind == Scored::algorithmic ? " token accuracy (%) | exact match (%) |"
                                      : kind == Scored::retrieval ? " accuracy (%) |" : "")
      << "\n|---|---|---|---|" << (bytes ? "---|" : "") << (accuracies == 2 ? "---|---|" : accuracies ? "---|" : "")
      << "\n";
  for (const LengthResult& l : r.lengths) {
    out << "| " << l.length << " | " << l.multiplier << "x | ";
    if (l.nll) {
      out << std::fixed << std::setprecision(4) << *l.nll << " | " << *l.perplexity() << " |";
      if (bytes) out << " " << *l.bits_per_byte() << " |";
      out << std::setprecision(1);
      if (kind == Scored::algorithmic) out << " " << 100 * l.token_accuracy.value_or(std::nan("")) << " |";
      if (accuracies) out << " " << 100 * l.accuracy.value_or(std::nan("")) << " |";
      out << "\n";
    } else {
      out << "n/a | n/a (" << r.scheme << " positions end at " << r.max_length << ") |" << (bytes ? " n/a |" : "");
      for (int64_t i = 0; i < accuracies; ++i) out << " n/a |";
      out << "\n";
    }
  }
  if (kind == Scored::retrieval) print_depth_grid(r, out);
  if (const std::optional<double> score = length_score(r); kind == Scored::algorithmic && score)
    out << "\nScore: " << std::fixed << std::setprecision(1) << 100 * *score
        << "% per-token accuracy, the mean over the lengths past training (Delétang et al.'s range evaluation).\n";
  print_caption(r, kind, out);  // what the table shows, under it: the task's description is a long line
  if (r.options.asked("blockwise")) out << ", with blockwise causal attention (blocks of " << r.train_length << ")";
  if (r.text == "other") out << ", on another text than the training text (sha256 " << r.text_sha256 << ")";
  if (r.text == "unverified") out << " (the text could not be verified: the checkpoint records no training text)";
  out << ".\nProtocol: " << eval_protocol_text(r.options.stride);
  if (r.options.stride > 0)
    out << " (windows of each length advanced by S = " << r.options.stride
        << ", each scoring its last S targets: every token once, with at least the length - S tokens of context)";
  else if (kind == Scored::retrieval)
    out << " (each sample scored whole, its key and query within one forward)";
  else if (kind == Scored::algorithmic)
    out << " (each sample scored whole in one forward)";
  else
    out << " (each length's tokens scored in blocks of that length, each from its own start)";
  out << ".\nTask: " << r.task << "\n";
  if (!r.rope_scaling.empty())
    out << "RoPE scaling: " << r.rope_scaling << ", factor "
        << (r.rope_factor_per_length ? "L / L0 at each length, up to " : "") << nn::value_text(r.rope_factor) << "\n";
  if (r.optimal_perplexity)
    out << "optimal perplexity (exp of the entropy rate): " << std::fixed << std::setprecision(4)
        << *r.optimal_perplexity << "\n";
  out.unsetf(std::ios::fixed);
}

void print_attention_tables(const EvalRecord& r, std::ostream& out) {
  for (const LengthResult& l : r.lengths) {
    out << "\nAttention at length " << l.length << " (" << l.multiplier << "x): ";
    if (l.attention.empty()) {
      out << (!l.nll ? "n/a (the model cannot run at this length)\n"
                     : "not measured\n");
      continue;
    }
    out << "mean distance (positions; on a grid, cells) and entropy (nats) per head, over the evaluation's sample\n\n"
        << "| layer | head | mean distance | entropy |\n|---|---|---|---|\n";
    for (std::size_t a = 0; a < l.attention.mean_distance.size(); ++a)
      for (std::size_t h = 0; h < l.attention.mean_distance[a].size(); ++h)
        out << "| " << a << " | " << h << " | " << std::fixed << std::setprecision(3)
            << l.attention.mean_distance[a][h] << " | " << l.attention.entropy[a][h] << " |\n";
  }
  out.unsetf(std::ios::fixed);
}

std::string record_evaluation(const std::string& run_dir, const EvalRecord& record) {
  const std::string path = write_eval_record(run_dir, record);
  std::ostringstream line;
  line << "evaluation of " << record.checkpoint << " (" << record.tokens() << " tokens) recorded in "
       << fs::path(path).lexically_relative(run_dir).string() << ": perplexity";
  for (const LengthResult& l : record.lengths)
    line << " " << l.length << "=" << (l.perplexity() ? fmt::format("{:.4f}", *l.perplexity()) : "n/a");
  log_in_run(run_dir, line.str());
  spdlog::info("evaluation recorded in {}", path);
  return path;
}

}  // namespace rpb
