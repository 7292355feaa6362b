// The emulated CUDA backend: the kernel bodies of core/cuda/kernels/ driven by the host launcher, over host memory
// that stands for the device's. Always built: it is how every scripts/test.sh checks the CUDA kernels' arithmetic
// and reduction order on a machine without a GPU (CudaBackendKind::emulated).
#include <cstdlib>
#include <cstring>
#include <memory>

#include "core/cuda/backend_impl.h"
#include "core/cuda/caching_allocator.h"
#include "core/cuda/exec_host.h"

namespace rpb::cuda {

namespace {

class EmulatedBackend final : public BackendImpl<HostExec> {
 public:
  CudaBackendKind kind() const override { return CudaBackendKind::emulated; }
  std::string describe() const override {
    return "emulated: the CUDA kernels' code run on the host (set_cuda_emulation or RPB_CUDA_EMULATE=1)";
  }
  void* allocate(std::size_t bytes) override {
    void* p = cache_.get(bytes);
    RPB_CHECK(p != nullptr, "cuda", "out of memory allocating ", bytes, " bytes (emulated device)");
    return p;
  }
  void release(void* p, std::size_t bytes) override { cache_.put(p, bytes); }
  std::size_t empty_cache() override { return cache_.empty(); }
  std::size_t cached_bytes() const override { return cache_.idle_bytes(); }
  void copy(void* dst, Device, const void* src, Device, std::size_t bytes) override {
    if (bytes > 0) std::memmove(dst, src, bytes);
  }
  void synchronize() override {}
  void gemm(DType d, const Gemm& g, const void* a, const void* b, void* c) override {
    dispatch_float(d, "matmul", [&](auto t) {
      using T = typename decltype(t)::type;
      exec_.each(g.batch * g.m * g.n, GemmBody<T>{g, static_cast<const T*>(a), static_cast<const T*>(b),
                                                  static_cast<T*>(c)});
    });
  }

 private:
  CachingAllocator cache_{[](std::size_t n) { return std::aligned_alloc(256, n); }, [](void* p) { std::free(p); }};
};

}  // namespace

/// core/cuda/select.cpp's factory for the emulated backend.
Backend* make_emulated_backend() { return new EmulatedBackend; }

}  // namespace rpb::cuda
