// rpb/cli/eval.cpp: `rpb eval` (its record and tables: cli/eval_report.cpp).
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

#include "cli/common_options.h"
#include "cli/eval_report.h"
#include "core/text.h"
#include "nn/limits.h"
#include "nn/position.h"
#include "train/checkpoint/checkpoint.h"
#include "train/checkpoint/data_identity.h"
#include "train/checkpoint/stored_model.h"
#include "train/config/run_identity.h"
#include "train/data/kjv.h"
#include "train/data/task_registry.h"
#include "train/data/tokenizer.h"
#include "train/io/input_file.h"
#include "train/run/checkpoint_path.h"
#include "train/run/log_file_sink.h"
#include "train/run/log_format.h"
#include "train/run/output_file.h"
#include "train/run/run_folder.h"
#include "train/trainer.h"

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

// The position options asked (--untrained, --rope-scaling, --blockwise, ...) set on the stored config and checked as
// the config reader checks them: an option the scheme does not read is refused naming its key
// (PositionOptionInfo::refused_elsewhere), as a value the scheme refuses.
void apply_position_settings(RunConfig& cfg, const std::vector<nn::PositionSetting>& settings) {
  if (settings.empty()) return;
  std::string flags;
  for (const nn::PositionSetting& s : settings) {
    s.apply(cfg.model.position);
    flags += " " + s.flag_text();
  }
  try {
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
  apply_position_settings(cfg, o.position);
  // Evaluation runs where --device says, the CPU by default: a checkpoint is the same file from either device.
  cfg.device = o.device == "cuda" ? Device::cuda : Device::cpu;
  if (o.stride) apply_stride(cfg, *o.stride);
  if (o.tokens == 0) return;
  const data::HeldOut held_out = data::task_info(cfg.task.kind).held_out;
  if (held_out != data::HeldOut::eval_tokens && held_out != data::HeldOut::data)  // no token count to choose
    throw UsageError("eval --tokens applies to token streams; a " + cfg.task.kind + " run scores " +
                     (held_out == data::HeldOut::grids     ? "run.eval_tokens cells at every grid side"
                      : held_out == data::HeldOut::samples ? "task.passkey_samples samples per tenth of depth"
                                                           : "task.eval_samples samples at every length"));
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

// What `o` asks that changes the record (train/run/eval_record.h EvalRecordOptions), which names its file.
EvalRecordOptions record_options(const EvalOptions& o, const EvalRecord& record) {
  EvalRecordOptions r;
  r.lengths = o.lengths;
  r.position = o.position;
  r.diagnostics = o.diagnostics;
  if (record.text == text_match_name(TextMatch::other)) r.other_text = record.text_sha256;
  r.stride = record.options.stride;  // the protocol scored (make_eval_record), asked or the stored config's
  return r;
}

}  // namespace

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

int cmd_eval(const std::string& checkpoint, const std::vector<int64_t>& lengths, const std::string& kjv_path) {
  EvalOptions o;
  o.checkpoint = checkpoint;
  o.lengths = lengths;
  o.kjv_path = kjv_path;
  return cmd_eval(o);
}

namespace {

// What eval --tokens does per task: "markov and lag generate a test stream long enough (grid2d: the cells scored)",
// from the task registry's held-out rules.
std::string tokens_help() {
  std::vector<std::string> generated, grids;
  for (const data::TaskInfo& t : data::tasks()) {
    if (t.held_out == data::HeldOut::eval_tokens) generated.emplace_back(t.name);
    if (t.held_out == data::HeldOut::grids) grids.emplace_back(t.name);
  }
  return join(generated, " and ") + " generate a test stream long enough (" + join(grids, ", ") + ": the cells scored)";
}

// One position option's flag (a row with an eval_name): what the command line gave.
struct PositionFlag {
  const nn::PositionOptionInfo* option;
  std::string text;     // the value given (not a boolean's)
  bool on = false;      // a boolean's bare flag
  CLI::Option* cli = nullptr;
};

// --untrained, --rope-scaling, --rope-factor, --blockwise, ...: a flag per option row with an eval_name, its help and
// its check from the row (the schemes that read it, what it sets, the values it accepts).
void add_position_flags(CLI::App& cmd, std::vector<PositionFlag>& flags) {
  const std::vector<const nn::PositionOptionInfo*> rows = nn::eval_options();
  flags.reserve(rows.size());  // the options below keep pointers into it
  for (const nn::PositionOptionInfo* o : rows) {
    PositionFlag& f = flags.emplace_back(PositionFlag{o, "", false, nullptr});
    const bool bare = std::holds_alternative<bool nn::PositionOptions::*>(o->member);  // a flag that sets it true
    const std::string help = join(nn::schemes_reading(*o), ", ") + ": " + o->doc + " (position." + o->key +
                             (bare ? " = true" : "") + "); default: the stored config's";
    if (bare) {
      f.cli = cmd.add_flag(nn::option_flag_name(*o), f.on, help);
      continue;
    }
    const CLI::Validator check(
        [o](const std::string& text) {
          return nn::parse_option_value(*o, text) ? std::string() : "expected " + nn::accepted_values(*o) + ", found " + text;
        },
        nn::accepted_values(*o));
    const std::string type = nn::option_type(*o);
    f.cli = cmd.add_option(nn::option_flag_name(*o), f.text, help)
                ->check(check)
                ->type_name(type == "integer" ? "INT" : type == "real" ? "FLOAT" : "TEXT");
  }
}

}  // namespace

CommandRunner add_eval_command(CLI::App& cmd) {
  struct Args {
    EvalOptions eval;
    std::vector<PositionFlag> position;
    std::string max_memory;
  };
  auto a = std::make_shared<Args>();
  add_checkpoint_argument(cmd, a->eval.checkpoint);
  cmd.add_option("--lengths", a->eval.lengths,
                 "comma-separated lengths (multiples of the train length), each once, at most 64")
      ->delimiter(',')
      ->check(CLI::Range(int64_t{1}, nn::limits::kMaxSequence));
  cmd.add_option("--data,--kjv-path", a->eval.kjv_path,
                 "the text to evaluate on (kjv runs: default checkpoints/data/kjv.txt; " +
                     join(data::task_names_with(&data::TaskInfo::stores_tokenizer), ", ") +
                     " runs: the corpus, a file or a folder, encoded with the checkpoint's tokenizer; default: the "
                     "run's task.path); it must be the training text (its SHA-256 is checked) unless --other-text");
  cmd.add_flag("--other-text", a->eval.other_text,
               join(data::task_names_with(&data::TaskInfo::reads_text), ", ") +
                   " runs: evaluate on a text other than the one the checkpoint was trained on (kjv: the same "
                   "characters; the record names its SHA-256 and that it is not the training text)");
  cmd.add_option("--tokens", a->eval.tokens,
                 "target tokens scored at every length (rounded down to a multiple of the longest), instead of "
                 "run.eval_tokens; " + tokens_help())
      ->check(CLI::Range(int64_t{1}, run_limits::kMaxTokens));
  cmd.add_option("--stride", a->eval.stride,
                 "sliding-window evaluation: windows of each length advanced by this many tokens, each scoring its "
                 "last S targets (every token once, with at least length - S tokens of context; S = the length is "
                 "nonoverlapping); 0: nonoverlapping segments; default: the stored config's run.eval_stride")
      ->check(CLI::Range(int64_t{0}, nn::limits::kMaxSequence));
  add_position_flags(cmd, a->position);
  add_device_option(cmd, a->eval.device,
                    "where to evaluate: cpu (the default, whatever device trained the checkpoint) or cuda");
  cmd.add_flag("--json", a->eval.json, "print the JSON record instead of the table");
  cmd.add_flag("--diagnostics", a->eval.diagnostics,
               "after the perplexity table, print each length's attention per layer and head: mean distance and "
               "entropy (measured even when the stored run.eval_diagnostics is false)");
  cmd.add_flag("--no-record", a->eval.no_record, "do not write the record into the run folder's eval/");
  cmd.add_option("--out", a->eval.out,
                 "also write the JSON record to this file (any checkpoint, in a run folder or not): a new or replaced "
                 "regular file, never a link, a device, an input file or a file rpb manages in a run folder");
  add_memory_option(cmd, a->max_memory);
  return [a] {
    apply_memory_option(a->max_memory);
    for (const PositionFlag& f : a->position)
      if (f.cli->count() > 0)
        a->eval.position.push_back({f.option, f.on ? nn::PositionValue(true) : *nn::parse_option_value(*f.option, f.text)});
    return cmd_eval(a->eval);
  };
}

}  // namespace rpb
