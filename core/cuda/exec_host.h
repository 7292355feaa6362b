// rpb/core/cuda/exec_host.h: the host launcher of rpb's CUDA kernels (the emulated backend, CudaBackendKind::
// emulated). It calls the same kernel bodies the GPU runs, with the GPU's block size and reduction order
// (core/cuda/block_reduce.h): a block's threads are replayed one after another, phase by phase.
#pragma once

#include <array>
#include <cstdint>
#include <vector>

#include "core/cuda/block_reduce.h"

namespace rpb::cuda {

/// The block context a row body sees on the host: each reduction replays the kBlock threads' strided partials
/// and then the tree, so its result has the GPU's bits (up to the transcendental functions' rounding).
class HostRowCtx : public RowReductions<HostRowCtx> {
 public:
  template <typename Op, typename T, typename G>
  T reduce(int64_t n, const G& g) {
    std::array<T, kBlock> part;
    for (int t = 0; t < kBlock; ++t) {
      T p = Op::template identity<T>();
      for (int64_t j = t; j < n; j += kBlock) p = Op::combine(p, g(j));
      part[t] = p;
    }
    for (int s = kBlock / 2; s > 0; s >>= 1)
      for (int t = 0; t < s; ++t) part[t] = Op::combine(part[t], part[t + s]);
    return part[0];
  }
  /// g(j) for every j < n (the block's threads share them out on the GPU).
  template <typename G>
  void each(int64_t n, const G& g) {
    for (int64_t j = 0; j < n; ++j) g(j);
  }
  /// Orders the block's writes before its later reads (a __syncthreads on the GPU; nothing to do here).
  void sync() {}
};

/// Runs kernel bodies on the host: `each` calls an elementwise body once per element, `rows` a row body once per
/// row with a HostRowCtx standing for its thread block, `tiles` a tile body once per block with its shared memory.
struct HostExec {
  template <typename F>
  void each(int64_t n, const F& f) {
    for (int64_t i = 0; i < n; ++i) f(i);
  }
  template <typename F>
  void rows(int64_t n, const F& f) {
    HostRowCtx ctx;
    for (int64_t r = 0; r < n; ++r) f(r, ctx);
  }
  /// A tile body once per block, with `shared_bytes` of memory standing for the block's shared memory.
  template <typename F>
  void tiles(int64_t n, int64_t shared_bytes, const F& f) {
    std::vector<double> shared(static_cast<std::size_t>((shared_bytes + 7) / 8));
    HostRowCtx ctx;
    for (int64_t b = 0; b < n; ++b) f(b, ctx, reinterpret_cast<unsigned char*>(shared.data()));
  }
};

}  // namespace rpb::cuda
