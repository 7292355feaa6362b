// rpb/cli/plot_bias.h: `rpb inspect CKPT --plot FILE`, each head's position bias handed to python/rpb_plot/ as a
// plot request of kind "bias" (cli/python_runner.h).
#pragma once

#include <nlohmann/json.hpp>

#include <string>

#include "nn/module.h"
#include "train/config/config.h"
#include "train/run/output_file.h"

namespace rpb {

/// The "bias" block of a plot request for every additive-bias position module of `model` (the registry's
/// additive_bias schemes: t5, shaw, log_decay, alibi, alibi2d, clipped2d):
///   {"dims": 1 | 2, "scheme": "t5", "title": `title`, "train_length": run.length, "modules": [...]}
/// A 1-D module: {"name": its path, "distances": [0 .. 4 x the train length - 1, at least 16, at most 4096],
///   "values": [[the bias a query adds to a key d positions back, per distance] per head],
///   "trained": [per distance: false where the table row read there was never read in training (the table schemes
///   t5, shaw with rows recorded), else true], "untrained_rows": position.untrained ("keep", "nearest") for a table
///   scheme, else null, "head_notes": [what sets each head's bias, "slope 0.0625", "lambda 2.02", or ""]}.
/// A 2-D module: {"name", "dy": [1 - side .. side - 1], "dx": [the same], "values": [[[per dx] per dy] per head] over
///   the query - key offsets (as the 1-D distances; Swin's convention) of a side x side grid (side = the train length, at most 16), "trained": [[per dx] per dy],
///   "untrained_rows", "head_notes"}.
/// The values are what evaluation reads (with untrained = "nearest", the nearest trained row's). Throws rpb::Error
/// naming `flag` when the config's scheme adds no bias (how it enters the model, and the schemes that do).
nlohmann::ordered_json bias_block(const nn::Module& model, const RunConfig& config, const std::string& flag,
                                  const std::string& title);

/// Draws the bias of `model` into `path` (a new or replaced regular file that `output` accepts; .pdf, .png or .svg)
/// through python/rpb_plot/. Throws as bias_block and draw_figures (cli/python_runner.h) do, writing nothing.
void draw_bias(const nn::Module& model, const RunConfig& config, const std::string& title, const std::string& path,
               const OutputOptions& output);

}  // namespace rpb
