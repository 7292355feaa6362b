#include "cli/commands.h"

#include <spdlog/spdlog.h>

#include <filesystem>
#include <iomanip>
#include <iostream>
#include <sstream>

#include "cli/bias.h"
#include "cli/command_line.h"
#include "train/io/provenance.h"
#include "cli/demo.h"
#include "cli/eval.h"
#include "cli/generate.h"
#include "cli/inspect.h"
#include "cli/plot.h"
#include "cli/plot_request.h"
#include "cli/results.h"
#include "cli/schemes.h"
#include "core/text.h"
#include "nn/limits.h"
#include "nn/position.h"
#include "train/checkpoint/stored_model.h"
#include "train/config/memory.h"
#include "train/data/task_registry.h"
#include "train/dist/distributed.h"
#include "train/interrupt.h"
#include "train/run/checkpoint_path.h"
#include "train/sweep/results.h"
#include "train/sweep/sweep.h"
#include "train/trainer.h"

namespace rpb {

namespace {

// The command that goes on with an interrupted `rpb <verb> <config> [--set ...]`: the command line as it was run
// (cli/command_line.h), or, when rpb runs as a library, one made of the arguments.
std::string resume_hint(const std::string& verb, const std::string& config,
                        const std::vector<std::string>& overrides) {
  std::vector<std::string> argv = process_command();
  if (argv.empty()) {
    argv = {"rpb", verb, config};
    for (const std::string& o : overrides) argv.insert(argv.end(), {"--set", o});
  }
  return resume_command(argv, verb == "train", dist::size());
}

}  // namespace

int cmd_train(const std::string& config_path, bool resume, const std::string& resume_from,
              const std::vector<std::string>& overrides, bool extend, bool overwrite, const std::string& init_from) {
  RPB_CHECK(!extend || resume || !resume_from.empty(), "train",
            "--extend trains a run on past its run.steps: pass it with --resume or --resume-from");
  FlagSettings flags{{}, "--init-from"};  // read with the file: a run.init_sha256 there pins the checkpoint given
  if (!init_from.empty()) flags.settings.push_back({"run.init_from", SettingValue{init_from}, init_from});
  const RunConfig cfg = load_config(config_path, overrides, flags);
  const InterruptHandlers handlers;  // SIGINT, SIGTERM: a checkpoint, then exit 130 / 143 (train/interrupt.h)
  Run run(cfg);
  ProgressContext context;
  context.resume_command = resume_hint("train", config_path, overrides);
  run.set_context(context);
  const TrainSummary s = run.train(resume, resume_from, {.extend = extend, .overwrite = overwrite});
  if (run.shard().index != 0) return 0;  // data-parallel: rank 0 reports, evaluates, prints and records
  if (s.stopped_non_finite) {
    spdlog::error("training stopped at step {}: a non-finite loss or gradient (see {}/train.log)", s.step, run.dir());
    return 1;
  }
  const EvalRecord record = make_eval_record(run, run.evaluate(), s.checkpoint, s.step, s.checkpoint_sha256);
  print_eval_table(record, std::cout);
  std::cout.flush();
  record_evaluation(run.dir(), record);
  return 0;
}

int cmd_eval(const std::string& checkpoint, const std::vector<int64_t>& lengths, const std::string& kjv_path) {
  EvalOptions o;
  o.checkpoint = checkpoint;
  o.lengths = lengths;
  o.kjv_path = kjv_path;
  return cmd_eval(o);
}

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

int cmd_inspect(const std::string& checkpoint, const std::string& plot_path, const std::string& plot_flag) {
  inspect_checkpoint(resolve_checkpoint(checkpoint).file, std::cout, plot_path, plot_flag);
  return 0;
}

// --device cpu|cuda: run.device (train, extrapolate: an override of the config; eval: where to evaluate).
void add_device_option(CLI::App& cmd, std::string& value, const std::string& what) {
  cmd.add_option("--device", value, what)->check(CLI::IsMember({"cpu", "cuda"}));
}
// The --set override --device stands for, appended to `overrides` (after the user's --set, so it wins).
void apply_device_option(const std::string& device, std::vector<std::string>& overrides) {
  if (!device.empty()) overrides.push_back("run.device=\"" + device + "\"");
}

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

// --overwrite, on the commands that train.
void add_overwrite_option(CLI::App& cmd, bool& value) {
  cmd.add_flag("--overwrite", value,
               "move a run folder that may not be continued (trained with another config, see config_digest in its "
               "config.toml; for train without --resume, any checkpoint) aside to <folder>.old-<UTC time> (nothing "
               "is deleted) and train afresh");
}

void apply_memory_option(const std::string& value) {
  if (!value.empty()) set_memory_budget({parse_memory_size(value, "--max-memory"), "--max-memory " + printable(value, 40)});
  else if (const std::size_t available = available_memory()) set_memory_budget({available, "the available memory"});
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

CommandRunner add_train(CLI::App& cmd) {
  struct Args {
    std::string config;
    bool resume = false;
    std::string resume_from;
    std::vector<std::string> overrides;
    std::string max_memory;
    bool extend = false, overwrite = false;
    std::string init_from;
    std::string device;
  };
  auto a = std::make_shared<Args>();
  cmd.add_option("config", a->config, "configs/*.toml")->required();
  add_device_option(cmd, a->device, "where to train: cpu or cuda (run.device; cuda needs a CUDA build and a GPU)");
  cmd.add_flag("--resume", a->resume, "continue the run from its latest checkpoint");
  cmd.add_option("--init-from", a->init_from,
                 "a fine-tune: start from this checkpoint's parameters (weights only: a fresh optimizer, its own run "
                 "folder and identity, which records the checkpoint's SHA-256); sets run.init_from. Train at another "
                 "length with --set run.finetune_length=N");
  cmd.add_option("--resume-from", a->resume_from,
                 "continue the run from this checkpoint of its folder (step_*.h5), and point `latest` at it");
  cmd.add_option("--set", a->overrides, "override a config key: --set model.d_model=256 (repeatable)");
  cmd.footer("Tasks (task.kind):\n" + data::task_help());
  cmd.add_flag("--extend", a->extend,
               "with --resume: train the run on to a new run.steps; the learning-rate schedule keeps the run's original "
               "horizon (cosine stays at its floor min_lr_ratio x lr past it, warm-up is not repeated)");
  add_overwrite_option(cmd, a->overwrite);
  add_memory_option(cmd, a->max_memory);
  return [a] {
    apply_memory_option(a->max_memory);
    apply_device_option(a->device, a->overrides);
    return cmd_train(a->config, a->resume, a->resume_from, a->overrides, a->extend, a->overwrite, a->init_from);
  };
}

CommandRunner add_eval(CLI::App& cmd) {
  struct Args {
    EvalOptions eval;
    std::string max_memory;
  };
  auto a = std::make_shared<Args>();
  cmd.add_option("checkpoint", a->eval.checkpoint,
                 "a checkpoint .h5 file, a run folder (its latest checkpoint) or a run folder's `latest` file")
      ->required();
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
  cmd.add_option("--untrained", a->eval.untrained,
                 "t5, shaw, clipped2d: what evaluation reads at a table row training never read: keep (the row) or "
                 "nearest (its nearest trained row); default: the stored config's position.untrained")
      ->check(CLI::IsMember(nn::untrained_names()));
  cmd.add_option("--stride", a->eval.stride,
                 "sliding-window evaluation: windows of each length advanced by this many tokens, each scoring its "
                 "last S targets (every token once, with at least length - S tokens of context; S = the length is "
                 "nonoverlapping); 0: nonoverlapping segments; default: the stored config's run.eval_stride")
      ->check(CLI::Range(int64_t{0}, nn::limits::kMaxSequence));
  cmd.add_option("--rope-scaling", a->eval.rope_scaling,
                 "rope runs: the frequencies past the train length (position.rope_scaling): none, linear "
                 "(position interpolation), ntk (static NTK-aware), dynamic (dynamic NTK) or yarn, as Hugging Face "
                 "computes them; default: the stored config's")
      ->check(CLI::IsMember(nn::rope_scaling_names()));
  cmd.add_option("--rope-factor", a->eval.rope_factor,
                 "rope runs: the scaling factor (position.rope_factor, at least 1); default: the stored config's, "
                 "whose 0 means the largest evaluation length over the train length")
      ->check(CLI::Range(1.0, nn::limits::rope_factor.hi));
  cmd.add_flag("--blockwise", a->eval.blockwise,
               "xpos: blockwise causal attention, each query over its block of the train length and the one before "
               "(position.blockwise = true; default: the stored config's)");
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
    return cmd_eval(a->eval);
  };
}

CommandRunner add_extrapolate(CLI::App& cmd) {
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

CommandRunner add_inspect(CLI::App& cmd) {
  struct Args {
    std::string checkpoint;
    std::string max_memory;
    std::string plot, svg;
  };
  auto a = std::make_shared<Args>();
  cmd.add_option("checkpoint", a->checkpoint,
                 "a checkpoint .h5 file, a run folder (its latest checkpoint) or a run folder's `latest` file")
      ->required();
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

}  // namespace

const std::vector<Command>& commands() {
  static const std::vector<Command> table = {
      {"demo", "Train a small MLP on two spirals with rpb's autograd engine", add_demo_command},
      {"bias", "Print a position scheme's bucket/index matrix, or its bias if it is fixed", add_bias_command},
      {"schemes", "List the position schemes and their options (defaults, limits), from the registry",
       add_schemes_command},
      {"train", "Train a model from a TOML config (checkpoints in its run folder)", add_train},
      {"eval", "Perplexity of a checkpoint at several lengths (recorded in its run folder's eval/; a long one shows its progress on stderr)", add_eval},
      {"generate", "Generate tokens from a checkpoint (KV-cache decoding)", add_generate_command},
      {"extrapolate", "Train every position scheme and print perplexity against length", add_extrapolate},
      {"inspect", "Report a checkpoint: config, metrics, parameters, bias tables", add_inspect},
      {"plot", "Draw runs' training curves (their metrics.csv) or a sweep's figure (its results.json) with matplotlib",
       add_plot_command},
      {"results", "Print a sweep's tables again from its results.json (markdown, or LaTeX as results.tex)",
       add_results_command},
  };
  return table;
}

}  // namespace rpb
