// rpb/core/cuda/exec_device.cuh: the GPU launcher of rpb's kernel bodies (nvcc only). Elementwise bodies run one
// thread per element over a grid-stride loop; a row body runs on one block of kBlock threads per row, whose
// reductions follow core/cuda/block_reduce.h in shared memory. The host launcher (exec_host.h) replays the same
// order, so the tests here check what runs there.
#pragma once

#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>

#include "core/cuda/block_reduce.h"
#include "core/error.h"

namespace rpb::cuda {

/// Throws rpb::Error naming `what` when a CUDA call failed.
inline void check_cuda(cudaError_t e, const char* what) {
  RPB_CHECK(e == cudaSuccess, "cuda", what, " failed: ", cudaGetErrorName(e), ": ", cudaGetErrorString(e));
}

/// The block context a row body sees on the GPU. Every thread of the block calls each reduction (uniform control
/// flow); each returns the block's result to all of them.
class DeviceRowCtx : public RowReductions<DeviceRowCtx> {
 public:
  __device__ explicit DeviceRowCtx(unsigned char* scratch) : scratch_(scratch) {}

  template <typename Op, typename T, typename G>
  __device__ T reduce(int64_t n, const G& g) {
    T* part = reinterpret_cast<T*>(scratch_);
    const int t = threadIdx.x;
    T p = Op::template identity<T>();
    for (int64_t j = t; j < n; j += kBlock) p = Op::combine(p, g(j));
    part[t] = p;
    __syncthreads();
    for (int s = kBlock / 2; s > 0; s >>= 1) {
      if (t < s) part[t] = Op::combine(part[t], part[t + s]);
      __syncthreads();
    }
    const T r = part[0];
    __syncthreads();  // the scratch is free again for the next reduction
    return r;
  }
  template <typename G>
  __device__ void each(int64_t n, const G& g) {
    for (int64_t j = threadIdx.x; j < n; j += kBlock) g(j);
  }
  __device__ void sync() { __syncthreads(); }

 private:
  unsigned char* scratch_;
};

template <typename F>
__global__ void __launch_bounds__(kBlock) k_each(int64_t n, F f) {
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride) f(i);
}

template <typename F>
__global__ void __launch_bounds__(kBlock) k_rows(int64_t n, F f) {
  __shared__ alignas(16) unsigned char scratch[kBlock * 16];  // the widest partial: ArgMax<double>
  DeviceRowCtx ctx(scratch);
  for (int64_t r = blockIdx.x; r < n; r += gridDim.x) {
    f(r, ctx);
    __syncthreads();
  }
}

template <typename F>
__global__ void __launch_bounds__(kBlock) k_tiles(int64_t n, F f) {
  __shared__ alignas(16) unsigned char scratch[kBlock * 16];
  extern __shared__ double tile_shared[];  // the body's tiles
  DeviceRowCtx ctx(scratch);
  for (int64_t b = blockIdx.x; b < n; b += gridDim.x) {
    f(b, ctx, reinterpret_cast<unsigned char*>(tile_shared));
    __syncthreads();
  }
}

/// The dynamic shared memory one block may take: the H100's and H200's 227 KB less k_tiles' static scratch.
inline constexpr int64_t kMaxTileShared = 227 * 1024 - kBlock * 16;

/// Launches kernel bodies on the current device's stream.
struct DeviceExec {
  cudaStream_t stream = nullptr;

  template <typename F>
  void each(int64_t n, const F& f) {
    if (n <= 0) return;
    const int64_t grid = std::min<int64_t>((n + kBlock - 1) / kBlock, 1 << 16);
    k_each<<<static_cast<unsigned>(grid), kBlock, 0, stream>>>(n, f);
    check_cuda(cudaGetLastError(), "an elementwise kernel launch");
  }
  template <typename F>
  void rows(int64_t n, const F& f) {
    if (n <= 0) return;
    const int64_t grid = std::min<int64_t>(n, 1 << 20);
    k_rows<<<static_cast<unsigned>(grid), kBlock, 0, stream>>>(n, f);
    check_cuda(cudaGetLastError(), "a row kernel launch");
  }
  template <typename F>
  void tiles(int64_t n, int64_t shared_bytes, const F& f) {
    if (n <= 0) return;
    RPB_CHECK(shared_bytes <= kMaxTileShared, "cuda", "a tile kernel needs ", shared_bytes,
              " bytes of shared memory per block, over the ", kMaxTileShared, " an H100 has");
    check_cuda(cudaFuncSetAttribute(k_tiles<F>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                    static_cast<int>(shared_bytes)),
               "raising a tile kernel's shared memory");
    const int64_t grid = std::min<int64_t>(n, 1 << 20);
    k_tiles<<<static_cast<unsigned>(grid), kBlock, static_cast<size_t>(shared_bytes), stream>>>(n, f);
    check_cuda(cudaGetLastError(), "a tile kernel launch");
  }
};

}  // namespace rpb::cuda
