// rpb/cli/train.cpp: `rpb train`.
#include "cli/train.h"

#include <spdlog/spdlog.h>

#include <iostream>
#include <memory>

#include "cli/command_line.h"
#include "cli/common_options.h"
#include "cli/eval_report.h"
#include "train/data/task_registry.h"
#include "train/interrupt.h"
#include "train/trainer.h"

namespace rpb {

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

CommandRunner add_train_command(CLI::App& cmd) {
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

}  // namespace rpb
