// rpb/train/data/data_detail.h: what the data files share (internal to train/data/).
#pragma once

#include <cstdint>

namespace rpb::data::detail {

// Stream ids of derive_seed.
constexpr uint64_t kTableStream = 0, kTrainStream = 1, kValidStream = 2, kTestStream = 3, kBatchStream = 0xBA7C4;

}  // namespace rpb::data::detail
