// rpb/train/sweep/labels.h: what a sweep's results call its methods and tasks, made in one place and escaped in
// one place for every output: the terminal table (markdown), results.csv and results.json (the text as it is),
// results.tex (LaTeX) and the figures (drawn as plain text by python/rpb_plot/, no mathtext).
#pragma once

#include <string>

#include "train/config/config.h"

namespace rpb {

/// The label of sweep method `m` in the results of the sweep `base`: its [sweep] labels entry, else its default
/// label (SweepMethod::label) naming every evaluation setting in force for its runs, defaulted ones included: the
/// method's own settings, then those the sweep's config sets for every row (`run`: the method's run config,
/// run_config) that the method leaves, of the scheme it reads (position.rope_scaling with its rope_factor,
/// position.blockwise, position.untrained), and the RoPE factor the evaluation uses when none is set (the largest
/// of run.eval_multipliers): "rope@rope_scaling=yarn" is "RoPE + YaRN (s = 16)".
std::string method_label(const RunConfig& base, const SweepMethod& m, const RunConfig& run);

/// The name of `task` in the results of a sweep with `task_labels` ([sweep] task_labels): its entry, else the task's
/// registered name with each '_' a space ("passkey_text" -> "passkey text").
std::string task_label(const std::map<std::string, std::string>& task_labels, const std::string& task);

/// The outputs a label is written into.
enum class LabelFormat {
  text,      // results.csv (its fields quoted there), results.json, the figures' request: the label as it is
  markdown,  // a cell of the terminal table: '|' and '\' escaped with '\'
  latex      // results.tex: latex_escape (train/sweep/results_tex.h)
};

/// `label` as `format` writes it, printing as the text it is.
std::string escape_label(const std::string& label, LabelFormat format);

}  // namespace rpb
