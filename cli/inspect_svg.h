// rpb/cli/inspect_svg.h: `rpb inspect CKPT --svg FILE`, each head's position bias as a picture.
#pragma once

#include <string>

#include "nn/module.h"
#include "train/config/config.h"
#include "train/run/output_file.h"

namespace rpb {

/// Writes to `path` (write_output_file with `output`: atomically, refusing what it refuses) the bias of every
/// additive-bias position module of `model` (the registry's additive_bias schemes: t5, shaw, log_decay, alibi, alibi2d,
/// clipped2d): for a 1-D model, one panel per module with the bias a query adds to a key d positions back, one curve
/// per head, for d = 0 .. 4 x the train length, the trained distances (d < run.length) shaded; for a 2-D model, a
/// heatmap per head over the key - query offsets (dy, dx). Throws rpb::Error, writing nothing, when the config's scheme
/// adds no bias (naming how it enters the model and the schemes that do).
void write_bias_svg(const nn::Module& model, const RunConfig& config, const std::string& path,
                    const OutputOptions& output);

}  // namespace rpb
