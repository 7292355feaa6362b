// rpb/train/config/model.cpp: see model.h.
#include "train/config/model.h"

#include "nn/grid_model.h"

namespace rpb {

nn::TransformerOptions model_options(const RunConfig& config, int64_t vocab) {
  nn::TransformerOptions m = config.model;
  m.vocab = vocab;
  m.causal = config.dims() == 1 && config.model.causal;  // a grid model attends bidirectionally
  return m;
}

int64_t model_parameter_count(const RunConfig& config, int64_t vocab) {
  const nn::TransformerOptions m = model_options(config, vocab);
  return config.dims() == 2 ? nn::GridModel::parameter_count(m, config.grid) : nn::LanguageModel::parameter_count(m);
}

std::unique_ptr<nn::Module> make_model(const RunConfig& config, int64_t vocab) {
  Generator init_gen(config.seed);
  if (config.dims() == 2) return std::make_unique<nn::GridModel>(model_options(config, vocab), config.grid, init_gen);
  return std::make_unique<nn::LanguageModel>(model_options(config, vocab), init_gen);
}

}  // namespace rpb
