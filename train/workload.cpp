#include "train/workload.h"

#include <filesystem>

#include "train/data/batch_sampler.h"
#include "train/data/sampling.h"
#include "train/data/task_options.h"
#include "train/data/task_registry.h"

namespace rpb {

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
  const uint64_t per_step = data::derive_seed(seed ^ kDropoutStream, static_cast<uint64_t>(step));
  dropout.seed_(data::derive_seed(per_step, static_cast<uint64_t>(shard.index)));
}

Tensor lm_shard_loss(nn::LanguageModel& lm, const Tensor& inputs, const Tensor& targets, uint64_t seed, int64_t step,
                     const Shard& shard) {
  shard_dropout(lm.dropout_generator(), seed, step, shard);
  return lm.loss(shard_rows(inputs, shard), shard_rows(targets, shard));
}

void save_token_state(Checkpoint& c, const Generator& dropout, const data::BatchSampler::State& sampler, int64_t vocab) {
  c.rng = {{"dropout", dropout.state()}, {"sampler", sampler.rng}};
  c.counters = {{"sampler_batches", sampler.batches_drawn}, {"vocab", vocab}};
}

data::BatchSampler::State load_token_state(const Checkpoint& c, Generator& dropout, const std::string& file) {
  data::BatchSampler::State ss;
  bool have_dropout = false, have_sampler = false;
  for (const auto& [name, st] : c.rng) {
    if (name == "dropout") dropout.set_state(st), have_dropout = true;
    if (name == "sampler") ss.rng = st, have_sampler = true;
  }
  RPB_CHECK(have_dropout && have_sampler, "checkpoint", file, ": missing /rng/dropout or /rng/sampler");
  for (const auto& [name, v] : c.counters)
    if (name == "sampler_batches") ss.batches_drawn = v;
  return ss;
}

data::TaskOptions workload_task_options(const RunConfig& c) {
  data::TaskOptions o = c.task;
  if (o.use != data::DataUse::train) o.token_cache.clear();
  else if (o.token_cache.empty()) o.token_cache = (std::filesystem::path(c.out_dir) / ".token_cache").string();
  return o;
}

std::unique_ptr<Workload> make_workload(const RunConfig& config) {
  if (config.dims() == 2) return make_grid_workload(config);
  const data::TaskInfo& task = data::task_info(config.task.kind);
  if (task.algorithmic) return make_algorithmic_workload(config);
  return task.retrieval ? make_passkey_workload(config) : make_lm_workload(config);
}

}  // namespace rpb
