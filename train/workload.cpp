#include "train/workload.h"

#include "nn/grid_model.h"
#include "nn/transformer.h"
#include "train/data_detail.h"

namespace rpb {

nn::TransformerOptions model_options(const RunConfig& config, int64_t vocab) {
  nn::TransformerOptions m = config.model;
  m.vocab = vocab;
  m.causal = config.dims() == 1;
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

namespace {

std::optional<double> overall(const std::vector<std::vector<double>>& v) {
  double sum = 0;
  int64_t n = 0;
  for (const auto& layer : v)
    for (const double x : layer) sum += x, ++n;
  return n > 0 ? std::optional<double>(sum / static_cast<double>(n)) : std::nullopt;
}

}  // namespace

std::optional<double> AttentionDiagnostics::mean_distance_overall() const { return overall(mean_distance); }
std::optional<double> AttentionDiagnostics::entropy_overall() const { return overall(entropy); }

AttentionDiagnostics attention_diagnostics(const std::vector<nn::AttentionStats>& layers) {
  AttentionDiagnostics d;
  for (const nn::AttentionStats& s : layers) {
    d.mean_distance.emplace_back();
    d.entropy.emplace_back();
    for (int64_t h = 0; h < s.heads(); ++h) {
      d.mean_distance.back().push_back(s.mean_distance(h));
      d.entropy.back().push_back(s.entropy(h));
    }
  }
  return d;
}

Tensor shard_rows(const Tensor& batch, const Shard& shard) {
  if (shard.count == 1) return batch;
  const int64_t B = batch.size(0);
  RPB_CHECK(shard.count >= 1 && shard.index >= 0 && shard.index < shard.count && B % shard.count == 0, "train",
            "a batch of ", B, " rows does not split into ", shard.count, " equal shards (shard ", shard.index, ")");
  const int64_t rows = B / shard.count;
  return slice(batch, 0, shard.index * rows, (shard.index + 1) * rows);
}

void shard_dropout(Generator& dropout, uint64_t seed, int64_t step, const Shard& shard) {
  if (shard.count == 1) return;
  constexpr uint64_t kDropoutStream = 0xD209'0000ull;
  const uint64_t per_step = data::detail::derive_seed(seed ^ kDropoutStream, static_cast<uint64_t>(step));
  dropout.seed_(data::detail::derive_seed(per_step, static_cast<uint64_t>(shard.index)));
}

std::unique_ptr<Workload> make_workload(const RunConfig& config) {
  return config.dims() == 2 ? make_grid_workload(config) : make_lm_workload(config);
}

}  // namespace rpb
