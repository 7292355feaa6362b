// rpb/nn/last_value_cache.h: keeps the most recent derived tensor (a bucket index, a distance
// table, a mask) so repeated forwards at one size reuse it instead of rebuilding O(T^2) work.
#pragma once

#include <cstdint>
#include <mutex>
#include <vector>

#include "core/tensor.h"

namespace rpb::nn {

/// Only the last key is kept: training runs at one size, and decoding moves one coordinate per
/// step, where rebuilding is cheap. Guarded by a mutex since one module may serve several threads.
class LastValueCache {
 public:
  /// The tensor for `key`, built by make() when the key differs from the last one.
  template <typename Make>
  Tensor get(const std::vector<int64_t>& key, Make&& make) const {
    std::lock_guard<std::mutex> lock(mutex_);
    if (!value_.defined() || key != key_) {
      value_ = make();
      key_ = key;
    }
    return value_;
  }

 private:
  mutable std::mutex mutex_;
  mutable Tensor value_;
  mutable std::vector<int64_t> key_;
};

}  // namespace rpb::nn
