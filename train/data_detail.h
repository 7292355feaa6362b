// rpb/train/data_detail.h: what the data files share (internal to train/).
#pragma once

#include <cstdint>

namespace rpb::data::detail {

/// An independent seed for stream `id` of a source seeded with `seed` (splitmix64 finalizer).
inline uint64_t derive_seed(uint64_t seed, uint64_t id) {
  uint64_t z = seed + 0x9E3779B97F4A7C15ull * (id + 1);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

// Stream ids of derive_seed.
constexpr uint64_t kTableStream = 0, kTrainStream = 1, kValidStream = 2, kTestStream = 3, kBatchStream = 0xBA7C4;

}  // namespace rpb::data::detail
