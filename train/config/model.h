// rpb/train/config/model.h: the model a run config describes: its options, its parameter count and the model
// itself, built without the task's data.
#pragma once

#include <cstdint>
#include <memory>

#include "nn/module.h"
#include "nn/transformer.h"
#include "train/config/config.h"

namespace rpb {

/// The options of `config`'s model for a task of `vocab` token ids: [model] and [position], with the vocabulary
/// and the attention direction of the task (causal for the 1-D tasks, bidirectional on grids).
nn::TransformerOptions model_options(const RunConfig& config, int64_t vocab);

/// The parameters of `config`'s model for `vocab` (nn::LanguageModel or nn::GridModel::parameter_count), counted
/// without building it.
int64_t model_parameter_count(const RunConfig& config, int64_t vocab);

/// `config`'s model alone, initialised from run.seed as a Run's is, without its task's data: what
/// `rpb inspect` loads a checkpoint into.
std::unique_ptr<nn::Module> make_model(const RunConfig& config, int64_t vocab);

}  // namespace rpb
