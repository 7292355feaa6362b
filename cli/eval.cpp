// rpb/cli/eval.cpp: `rpb eval`, and the evaluation table and record `rpb train` shares.
#include "cli/eval.h"

#include <spdlog/spdlog.h>
#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <iomanip>
#include <iostream>
#include <set>

#include "core/text.h"
#include "nn/position.h"
#include "train/checkpoint/checkpoint.h"
#include "train/checkpoint/data_identity.h"
#include "train/checkpoint/stored_model.h"
#include "train/config/run_identity.h"
#include "train/data/task.h"
#include "train/data/task_registry.h"
#include "train/data/tokenizer.h"
#include "train/io/input_file.h"
#include "train/run/checkpoint_path.h"
#include "train/run/log_file_sink.h"
#include "train/run/log_format.h"
#include "train/run/output_file.h"
#include "train/run/run_folder.h"

namespace fs = std::filesystem;

namespace rpb {

namespace {

// --stride S: the stored config's run.eval_stride replaced, checked against the task and the lengths evaluated.
void apply_stride(RunConfig& cfg, int64_t stride) {
  cfg.eval_stride = stride;
  if (stride == 0) return;
  RPB_CHECK(cfg.dims() == 1, "eval", "--stride ", stride, " (run.eval_stride): sliding-window evaluation scores a "
            "token stream; the ", cfg.task.kind, " task evaluates whole grids");
  const int64_t shortest = *std::min_element(cfg.eval_multipliers.begin(), cfg.eval_multipliers.end()) * cfg.length;
  RPB_CHECK(stride <= shortest, "eval", "--stride ", stride, " (run.eval_stride) is longer than the evaluation length ",
            shortest, ": expected 1 to the shortest length evaluated (a window advances by at most its length), "
            "or 0 for nonoverlapping segments");
}

// --rope-scaling and --rope-factor on the stored config: refused for a scheme without rotary frequencies (naming the
// key), and checked as the config reader checks them.
void apply_rope_scaling_options(RunConfig& cfg, const EvalOptions& o) {
  if (o.rope_scaling.empty() && o.rope_factor == 0) return;
  std::string flags;
  if (!o.rope_scaling.empty()) flags += " --rope-scaling " + o.rope_scaling;
  if (o.rope_factor != 0) flags += " --rope-factor " + rope_factor_text(o.rope_factor);
  try {
    if (!o.rope_scaling.empty()) cfg.model.position.rope_scaling = nn::rope_scaling_from_name(o.rope_scaling);
    if (o.rope_factor != 0) cfg.model.position.rope_factor = o.rope_factor;
    nn::validate(cfg.position());
  } catch (const OptionError& e) {
    throw Error("eval" + flags + ": position." + e.field() + ": " + e.detail());
  }
}

// The stored config, made to evaluate at the lengths and token count asked for: `--lengths` become the multipliers
// (so the memory estimate and the held-out stream check cover them before anything is built) and `--tokens` the
// token count, with a generated test stream (markov, lag: data::HeldOut::eval_tokens) long enough to hold it.
void apply_eval_options(RunConfig& cfg, const EvalOptions& o) {
  if (!o.lengths.empty()) {
    cfg.eval_multipliers.clear();
    for (int64_t l : o.lengths) {
      RPB_CHECK(l > 0 && l % cfg.length == 0, "eval", "length ", l, " is not a positive multiple of the train length ",
                cfg.length);
      cfg.eval_multipliers.push_back(l / cfg.length);
    }
  }
  // rope scaling's default factor: the largest multiplier of this evaluation (rope_scaling.h).
  cfg.model.position.max_eval_multiplier = *std::max_element(cfg.eval_multipliers.begin(), cfg.eval_multipliers.end());
  if (!o.untrained.empty()) {
    try {
      cfg.model.position.untrained = nn::untrained_from_name(o.untrained);
      nn::validate(cfg.position());
    } catch (const OptionError& e) {
      throw Error("eval --untrained " + o.untrained + ": " + e.detail());
    }
  }
  // Evaluation runs where --device says, the CPU by default: a checkpoint is the same file from either device.
  cfg.device = o.device == "cuda" ? Device::cuda : Device::cpu;
  if (o.stride) apply_stride(cfg, *o.stride);
  apply_rope_scaling_options(cfg, o);
  if (o.blockwise) {
    try {
      cfg.model.position.blockwise = true;
      nn::validate(cfg.position());
    } catch (const OptionError& e) {
      throw Error("eval --blockwise: " + e.detail());
    }
  }
  if (o.tokens == 0) return;
  const data::HeldOut held_out = data::task_info(cfg.task.kind).held_out;
  if (held_out == data::HeldOut::grids || held_out == data::HeldOut::samples)  // no token count to choose
    throw UsageError("eval --tokens applies to token streams; a " + cfg.task.kind + " run scores " +
                     (held_out == data::HeldOut::grids ? "run.eval_tokens cells at every grid side"
                                                       : "task.passkey_samples samples per tenth of depth"));
  int64_t longest = 0;
  for (int64_t m : cfg.eval_multipliers) longest = std::max(longest, m * cfg.length);
  RPB_CHECK(o.tokens >= longest, "eval", "--tokens ", o.tokens, " is fewer than the longest length ", longest,
            ": every length scores the same tokens, at least one segment of the longest");
  cfg.eval_tokens = o.tokens;
  if (data::task_info(cfg.task.kind).held_out == data::HeldOut::eval_tokens && cfg.task.eval_tokens < o.tokens + 1)
    cfg.task.eval_tokens = o.tokens + 1;  // the stream is generated: a longer one starts with the same tokens
}

// --lengths as given: each length once (a repeated one would be scored and recorded twice), at most
// run_limits::kMaxLengths of them.
void check_lengths_option(const std::vector<int64_t>& lengths) {
  if (lengths.size() > run_limits::kMaxLengths)
    throw UsageError("eval --lengths: expected at most " + std::to_string(run_limits::kMaxLengths) +
                     " lengths, found " + std::to_string(lengths.size()));
  std::set<int64_t> seen;
  for (const int64_t l : lengths)
    if (!seen.insert(l).second)
      throw UsageError("eval --lengths: " + std::to_string(l) + " is listed twice; expected each length once");
}

// The text a run of a task that reads one is scored on, checked before the task reads it, so that what cannot be a
// text (a FIFO, a device, a socket, a missing path) is refused naming what the user gave: --data PATH (rpb::Error),
// or, without it, the stored config's task.path of a run of one's own text (rpb::UsageError naming --data: the way on
// is a flag). A folder passes: a text run reads a folder of files (a kjv run refuses it, naming the kjv text).
void check_text_path(const std::string& path, const std::string& recorded_in) {
  struct stat st{};
  const bool found = ::stat(path.c_str(), &st) == 0;
  if (found && (S_ISREG(st.st_mode) || S_ISDIR(st.st_mode))) return;
  const std::string what = !found ? (errno == ENOENT ? "does not exist" : std::strerror(errno))
                                  : "is " + mode_kind(st.st_mode);
  if (!recorded_in.empty())
    throw UsageError("eval: " + printable(recorded_in) + " was trained on task.path " + printable(path) +
                     " (its stored config's; a relative path reads from the current folder), which " + what +
                     " now; pass the text to evaluate on with --data PATH");
  throw Error("eval --data " + printable(path) + ": " + what + "; expected the text to evaluate on: a regular file (or, "
              "for a run of one's own text, a folder of files)");
}

// The text `cfg` (a run of `task`, which reads one) is scored on, set in cfg.task: --data's; or without it, kjv's
// default path, or for a run of one's own text (a stored tokenizer) the stored config's task.path, which must hold
// the text whose digest checkpoint `file` records (compared once it is read: check_data_identity). Returns the path.
std::string set_eval_text(RunConfig& cfg, const data::TaskInfo& task, const EvalOptions& o, const std::string& file) {
  if (!o.kjv_path.empty()) check_text_path(o.kjv_path, "");
  if (!task.stores_tokenizer) {
    cfg.task.*task.text_path = o.kjv_path;  // kjv: "" reads the default path, never the stored one
    return data::kjv_text_path(o.kjv_path);
  }
  if (!o.kjv_path.empty()) {
    cfg.task.*task.text_path = o.kjv_path;
    cfg.task.path_key = "eval --data";
    return o.kjv_path;
  }
  // A stored tokenizer comes with the text's digest (/data, read_data_identity), which check_data_identity compares.
  const std::string& recorded = cfg.task.*task.text_path;
  check_text_path(recorded, file);
  return recorded;
}

// A line of the evaluation in the run's train.log (appended with one write, like the run's own lines).
void log_in_run(const std::string& run_dir, const std::string& line) {
  auto sink = std::make_shared<LogFileSink>((fs::path(run_dir) / kTrainLogFileName).string());
  spdlog::logger log("eval", sink);
  log.set_pattern(log_pattern());
  log.info("{}", line);
}

// What `o` asks that changes the record (train/run/eval_record.h EvalRecordOptions), which names its file.
EvalRecordOptions record_options(const EvalOptions& o, const EvalRecord& record) {
  EvalRecordOptions r;
  r.lengths = o.lengths;
  r.untrained = o.untrained;
  r.rope_scaling = o.rope_scaling;
  r.rope_factor = o.rope_factor;
  r.blockwise = o.blockwise;
  r.diagnostics = o.diagnostics;
  if (record.text == text_match_name(TextMatch::other)) r.other_text = record.text_sha256;
  r.stride = record.options.stride;  // the protocol scored (make_eval_record), asked or the stored config's
  return r;
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

void print_eval_table(const EvalRecord& r, std::ostream& out) {
  // A text task's tokens stand for bytes of text: bits per byte compare runs with different tokenizers.
  const bool bytes = std::any_of(r.lengths.begin(), r.lengths.end(), [](const LengthResult& l) { return l.bytes > 0; });
  const bool accuracy =  // passkey retrieval's
      std::any_of(r.lengths.begin(), r.lengths.end(), [](const LengthResult& l) { return l.accuracy.has_value(); });
  out << "| length | x train | NLL (nats) | perplexity |" << (bytes ? " bits per byte |" : "")
      << (accuracy ? " accuracy (%) |" : "") << "\n|---|---|---|---|" << (bytes ? "---|" : "")
      << (accuracy ? "---|" : "") << "\n";
  for (const LengthResult& l : r.lengths) {
    out << "| " << l.length << " | " << l.multiplier << "x | ";
    if (l.nll) {
      out << std::fixed << std::setprecision(4) << *l.nll << " | " << *l.perplexity() << " |";
      if (bytes) out << " " << *l.bits_per_byte() << " |";
      if (accuracy) out << " " << std::setprecision(1) << 100 * l.accuracy.value_or(std::nan("")) << " |";
      out << "\n";
    } else {
      out << "n/a | n/a (" << r.scheme << " positions end at " << r.max_length << ") |" << (bytes ? " n/a |" : "")
          << (accuracy ? " n/a |" : "") << "\n";
    }
  }
  if (accuracy) print_depth_grid(r, out);
  // What the table shows, under it: the task's description is a long line.
  if (accuracy)
    out << "\nThe answer's NLL and perplexity and greedy decoding's accuracy on the held-out test samples, trained at "
           "length " << r.train_length << ", checkpoint " << r.checkpoint << " (step " << r.step << "), "
        << r.tokens() << " answer tokens scored at each length";
  else
    out << "\nPerplexity on the held-out test split, trained at length " << r.train_length << ", checkpoint "
        << r.checkpoint << " (step " << r.step << "), " << r.tokens() << " tokens scored at each length";
  if (r.options.blockwise) out << ", with blockwise causal attention (blocks of " << r.train_length << ")";
  if (r.text == "other") out << ", on another text than the training text (sha256 " << r.text_sha256 << ")";
  if (r.text == "unverified") out << " (the text could not be verified: the checkpoint records no training text)";
  out << ".\nProtocol: " << eval_protocol_text(r.options.stride);
  if (r.options.stride > 0)
    out << " (windows of each length advanced by S = " << r.options.stride
        << ", each scoring its last S targets: every token once, with at least the length - S tokens of context)";
  else if (accuracy)
    out << " (each sample scored whole, its key and query within one forward)";
  else
    out << " (each length's tokens scored in blocks of that length, each from its own start)";
  out << ".\nTask: " << r.task << "\n";
  if (!r.rope_scaling.empty())
    out << "RoPE scaling: " << r.rope_scaling << ", factor " << rope_factor_text(r.rope_factor) << "\n";
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

int cmd_eval(const EvalOptions& o) {
  check_lengths_option(o.lengths);
  const CheckpointRef ref = resolve_checkpoint(o.checkpoint);
  // --out is checked before the checkpoint is read, and again with the text once the stored config says it is read.
  OutputOptions out{"--out", {{"checkpoint", ref.file}}};
  if (!o.out.empty()) check_output_file(o.out, out);
  StoredCheckpoint stored = read_stored_checkpoint(ref.file, !ref.run_dir.empty(), FileDigest::sha256);
  if (stored.edited()) spdlog::warn("eval: {}", edited_config_warning(stored));
  const Checkpoint& c = stored.checkpoint;
  RunConfig& cfg = stored.config;
  const data::TaskInfo& task = data::task_info(cfg.task.kind);
  if (task.stores_tokenizer) {  // one's own corpus, encoded by the checkpoint's tokenizer
    if (c.data.tokenizer.empty())
      throw Error("eval: " + ref.file + ": a " + cfg.task.kind + " run's checkpoint without its tokenizer "
                  "(/data/tokenizer_model)");
    cfg.task.stored_tokenizer = std::make_shared<const data::TokenizerRecord>(c.data.tokenizer);
  }
  cfg.task.generate_missing = false;  // the task's data is read, never written
  if (task.reads_text) {
    out.inputs.push_back({std::string(task.name) + " text", set_eval_text(cfg, task, o, ref.file)});
    if (!o.out.empty()) check_output_file(o.out, out);
  }
  apply_eval_options(cfg, o);
  if (o.diagnostics) cfg.eval_diagnostics = true;
  check_stored_model(c, cfg, checkpoint_vocab(c, cfg, ref.file), ref.file);
  std::unique_ptr<Run> built;
  try {
    built = std::make_unique<Run>(cfg, Parallel::ranks, RunPurpose::evaluate);  // the test split and the model only
  } catch (const Error& e) {
    if (o.tokens == 0) throw;
    throw Error("eval --tokens " + std::to_string(o.tokens) + " (run.eval_tokens below): " + e.message());
  }
  Run& run = *built;
  const DataVerdict text = check_data_identity(c.data, run.data_identity(), ref.file, o.other_text, "eval");
  run.restore(c, ref.file);
  // Grids score run.eval_tokens cells (set above), not an exact token count.
  EvalRecord record = make_eval_record(run, run.evaluate({}, cfg.dims() == 1 ? o.tokens : 0), ref.file, c.step,
                                       c.file_sha256);
  record.text = text_match_name(text.match);
  record.options = record_options(o, record);
  if (o.json) {
    std::cout << eval_record_json(record);
  } else {
    print_eval_table(record, std::cout);
    if (o.diagnostics) print_attention_tables(record, std::cout);
  }
  std::cout.flush();
  if (!o.out.empty()) {  // before the run folder's record: a failed --out leaves the folder as it was
    write_output_file(o.out, eval_record_json(record), out);
    spdlog::info("evaluation record written to {}", printable(o.out));
  }
  if (!ref.run_dir.empty() && !o.no_record) record_evaluation(ref.run_dir, record);
  return 0;
}

}  // namespace rpb
