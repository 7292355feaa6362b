#include "train/workload.h"

#include "train/data/task.h"

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

std::unique_ptr<Workload> make_workload(const RunConfig& config) {
  return config.dims() == 2 ? make_grid_workload(config) : make_lm_workload(config);
}

}  // namespace rpb
