// rpb/core/cuda/caching_allocator.h: device memory for tensors, as PyTorch's CUDA allocator keeps it: a freed block
// goes back to a pool keyed by its rounded size instead of to cudaFree, and the next request of that size takes it
// (a training step asks for the same sizes every step; cudaMalloc and cudaFree synchronize the device and cost
// tens of microseconds each). When the device is full, the idle blocks are freed and the request retried.
#pragma once

#include <cstddef>
#include <functional>
#include <map>
#include <mutex>

namespace rpb::cuda {

class CachingAllocator {
 public:
  using RawAlloc = std::function<void*(std::size_t)>;  // returns null when the device is full
  using RawFree = std::function<void(void*)>;

  CachingAllocator(RawAlloc alloc, RawFree free) : alloc_(std::move(alloc)), free_(std::move(free)) {}

  /// Sizes round up to 512 bytes below 1 MiB and to 128 KiB above, so near sizes share blocks.
  static std::size_t rounded(std::size_t bytes) {
    const std::size_t unit = bytes < (std::size_t{1} << 20) ? 512 : (std::size_t{128} << 10);
    return bytes == 0 ? unit : (bytes + unit - 1) / unit * unit;
  }
  /// A block of at least `bytes`, or null when the device has no room even after freeing the idle blocks.
  void* get(std::size_t bytes) {
    const std::size_t size = rounded(bytes);
    {
      std::lock_guard<std::mutex> lock(mu_);
      auto it = idle_.find(size);
      if (it != idle_.end()) {
        void* p = it->second;
        idle_.erase(it);
        idle_bytes_ -= size;
        return p;
      }
    }
    void* p = alloc_(size);
    if (p == nullptr) {
      empty();
      p = alloc_(size);
    }
    return p;
  }
  void put(void* p, std::size_t bytes) {
    if (p == nullptr) return;
    const std::size_t size = rounded(bytes);
    std::lock_guard<std::mutex> lock(mu_);
    idle_.emplace(size, p);
    idle_bytes_ += size;
  }
  /// Frees every idle block; returns their bytes.
  std::size_t empty() {
    std::lock_guard<std::mutex> lock(mu_);
    for (auto& [size, p] : idle_) free_(p);
    idle_.clear();
    const std::size_t n = idle_bytes_;
    idle_bytes_ = 0;
    return n;
  }
  std::size_t idle_bytes() const {
    std::lock_guard<std::mutex> lock(mu_);
    return idle_bytes_;
  }

 private:
  RawAlloc alloc_;
  RawFree free_;
  mutable std::mutex mu_;
  std::multimap<std::size_t, void*> idle_;
  std::size_t idle_bytes_ = 0;
};

}  // namespace rpb::cuda
