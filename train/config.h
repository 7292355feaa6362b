// rpb/train/config.h: run configuration from TOML files (configs/*.toml).
//
// Every key is checked: an unknown key (with a did-you-mean), a wrong type or an
// out-of-range value is an error naming the file, line, key and value. Integers are
// accepted where a float is expected (the widening is exact); nothing else is coerced.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "nn/transformer.h"
#include "optim/adam.h"
#include "optim/schedule.h"
#include "optim/sgd.h"
#include "train/data.h"

namespace rpb {

struct OptimConfig {
  std::string kind = "adamw";  // adamw | adam | sgd
  optim::AdamOptions adam;
  optim::SGDOptions sgd;
  optim::ScheduleOptions schedule;  // holds the base lr
  double grad_clip = 1.0;           // global-norm clipping; 0 disables
};

/// The 2-D grid model's options ([grid]); task.kind = "grid2d" trains a GridModel on side x side
/// grids (run.length is the side) with position.scheme one of nn::grid_scheme_names().
struct GridConfig {
  int64_t window = 4;       // swin, swin_v2: window side
  bool shift = true;        // every other block shifts its windows by window / 2
  int64_t cpb_hidden = 256; // swin_v2: hidden width of the continuous bias MLP
  int64_t max_side = 16;    // learned2d: largest grid side
  int64_t eval_window = 0;  // swin, swin_v2: window used for evaluation (0: the trained one)
};

/// What `rpb extrapolate` sweeps: each method (position scheme) x task x seed is one run.
struct SweepConfig {
  std::vector<std::string> methods = {"learned", "sinusoidal", "rope", "t5", "shaw", "log_decay", "alibi", "none"};
  std::vector<uint64_t> seeds = {0};
  std::vector<std::string> tasks;  // task kinds; empty: the [task] table's kind only
  // A method "swin_v2@window8" evaluates the finished swin_v2 run with grid.eval_window = 8.
};

struct RunConfig {
  std::string name = "run";          // run folder: <out_dir>/<name>
  std::string out_dir = "checkpoints";
  uint64_t seed = 0;                 // model init, dropout and batch order
  int64_t steps = 1000;
  int64_t batch = 32;
  int64_t length = 64;               // train length L
  int64_t log_every = 50;
  int64_t checkpoint_every = 0;      // 0: only the final checkpoint
  std::vector<int64_t> eval_multipliers = {1, 2, 4, 8, 16};
  int64_t eval_tokens = 16384;       // held-out target tokens scored at every length
  int64_t eval_batch = 8;            // segments per evaluation forward
  std::string on_nonfinite = "stop"; // stop | skip: a non-finite loss or gradient stops the run or skips the step

  nn::TransformerOptions model;      // [model] and [position]
  data::TaskOptions task;            // [task]
  GridConfig grid;                   // [grid]
  OptimConfig optim;                 // [optim] and [[optim.group]]
  SweepConfig sweep;                 // [sweep]

  std::string source;                // the file it came from ("<string>" when parsed from text)
  std::string text;                  // the configuration as TOML, overrides applied (stored in checkpoints)
};

/// Reads and validates a config file; `overrides` are "key=value" strings (dotted keys,
/// TOML values: --set model.d_model=256 --set position.scheme="alibi").
RunConfig load_config(const std::string& path, const std::vector<std::string>& overrides = {});

/// The same from text; `source` names it in error messages.
RunConfig parse_config(const std::string& text, const std::string& source,
                       const std::vector<std::string>& overrides = {});

/// Levenshtein distance, for did-you-mean suggestions.
int edit_distance(const std::string& a, const std::string& b);

}  // namespace rpb
