// The GPU backend: the kernel bodies of core/cuda/kernels/ launched on an NVIDIA GPU (DeviceExec), device memory
// through the caching allocator, and the products through cuBLAS. Built when CMake's RPB_CUDA is on.
#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <dlfcn.h>

#include <memory>
#include <sstream>
#include <string>

#include "core/cuda/backend_impl.h"
#include "core/cuda/caching_allocator.h"
#include "core/cuda/exec_device.cuh"

namespace rpb::cuda {

namespace {

const char* cublas_name(cublasStatus_t s) {
  switch (s) {
    case CUBLAS_STATUS_SUCCESS: return "CUBLAS_STATUS_SUCCESS";
    case CUBLAS_STATUS_NOT_INITIALIZED: return "CUBLAS_STATUS_NOT_INITIALIZED";
    case CUBLAS_STATUS_ALLOC_FAILED: return "CUBLAS_STATUS_ALLOC_FAILED";
    case CUBLAS_STATUS_INVALID_VALUE: return "CUBLAS_STATUS_INVALID_VALUE";
    case CUBLAS_STATUS_ARCH_MISMATCH: return "CUBLAS_STATUS_ARCH_MISMATCH";
    case CUBLAS_STATUS_EXECUTION_FAILED: return "CUBLAS_STATUS_EXECUTION_FAILED";
    case CUBLAS_STATUS_NOT_SUPPORTED: return "CUBLAS_STATUS_NOT_SUPPORTED";
    default: return "a cuBLAS error";
  }
}

void check_cublas(cublasStatus_t s, const char* what) {
  RPB_CHECK(s == CUBLAS_STATUS_SUCCESS, "cuda", what, " failed: ", cublas_name(s));
}

// cuBLAS is loaded when the GPU backend starts, not when rpb starts: a CUDA build then runs on a machine without
// cuBLAS (or without a GPU) as the CPU build does, and a CPU run does not map its 500 MB of libraries (40 MB of
// resident memory at start-up, which rpb eval's memory test measured).
struct Cublas {
  decltype(&cublasCreate_v2) create = nullptr;
  decltype(&cublasSetMathMode) set_math_mode = nullptr;
  decltype(&cublasSgemmStridedBatched) sgemm = nullptr;
  decltype(&cublasDgemmStridedBatched) dgemm = nullptr;

  Cublas() {
    const std::string name = "libcublas.so." + std::to_string(CUBLAS_VER_MAJOR);
    void* lib = dlopen(name.c_str(), RTLD_NOW | RTLD_LOCAL);
    RPB_CHECK(lib != nullptr, "cuda", "cannot load ", name, " (cuBLAS, for the products on the GPU): ", dlerror(),
              "; add CUDA's library folder to LD_LIBRARY_PATH");
    create = reinterpret_cast<decltype(create)>(symbol(lib, "cublasCreate_v2", name));
    set_math_mode = reinterpret_cast<decltype(set_math_mode)>(symbol(lib, "cublasSetMathMode", name));
    sgemm = reinterpret_cast<decltype(sgemm)>(symbol(lib, "cublasSgemmStridedBatched", name));
    dgemm = reinterpret_cast<decltype(dgemm)>(symbol(lib, "cublasDgemmStridedBatched", name));
  }
  static void* symbol(void* lib, const char* what, const std::string& name) {
    void* f = dlsym(lib, what);
    RPB_CHECK(f != nullptr, "cuda", name, " has no ", what);
    return f;
  }
};

class GpuBackend final : public BackendImpl<DeviceExec> {
 public:
  GpuBackend() {
    check_cuda(cudaSetDevice(0), "cudaSetDevice(0)");
    check_cuda(cudaGetDeviceProperties(&props_, 0), "cudaGetDeviceProperties");
    check_cublas(cublas_.create(&blas_), "cublasCreate");
  }
  ~GpuBackend() override = default;  // lives until the process ends: storages may outlive static destructors

  CudaBackendKind kind() const override { return CudaBackendKind::gpu; }
  std::string describe() const override {
    std::ostringstream os;
    os << "gpu: " << props_.name << ", " << static_cast<double>(props_.totalGlobalMem) / (1 << 30)
       << " GiB, compute capability " << props_.major << "." << props_.minor;
    return os.str();
  }
  void* allocate(std::size_t bytes) override {
    void* p = cache_.get(bytes);
    if (p == nullptr) {
      std::size_t free = 0, total = 0;
      cudaMemGetInfo(&free, &total);
      RPB_FAIL("cuda", "out of device memory allocating ", bytes, " bytes (", free, " of ", total,
               " bytes free on ", props_.name, ")");
    }
    return p;
  }
  void release(void* p, std::size_t bytes) override { cache_.put(p, bytes); }
  std::size_t empty_cache() override { return cache_.empty(); }
  std::size_t cached_bytes() const override { return cache_.idle_bytes(); }
  void copy(void* dst, Device dst_dev, const void* src, Device src_dev, std::size_t bytes) override {
    if (bytes == 0) return;
    const cudaMemcpyKind kind = dst_dev == Device::cpu
                                    ? (src_dev == Device::cpu ? cudaMemcpyHostToHost : cudaMemcpyDeviceToHost)
                                    : (src_dev == Device::cpu ? cudaMemcpyHostToDevice : cudaMemcpyDeviceToDevice);
    check_cuda(cudaMemcpy(dst, src, bytes, kind), "cudaMemcpy");
  }
  void synchronize() override { check_cuda(cudaDeviceSynchronize(), "cudaDeviceSynchronize"); }

  // The column-major call of column_major (core/cuda/backend.h): B first, m and n swapped.
  void gemm(DType d, const Gemm& g, const void* a, const void* b, void* c) override {
    check_cublas(cublas_.set_math_mode(blas_, cuda_tf32() ? CUBLAS_TF32_TENSOR_OP_MATH : CUBLAS_DEFAULT_MATH),
                 "cublasSetMathMode");
    const ColumnMajorGemm cm = column_major(g);
    const cublasOperation_t op1 = cm.trans_first ? CUBLAS_OP_T : CUBLAS_OP_N;
    const cublasOperation_t op2 = cm.trans_second ? CUBLAS_OP_T : CUBLAS_OP_N;
    const auto i = [](int64_t v) { return static_cast<int>(v); };
    if (d == DType::f32) {
      const float one = 1, beta = cm.accumulate ? 1.0f : 0.0f;
      check_cublas(cublas_.sgemm(blas_, op1, op2, i(cm.m), i(cm.n), i(cm.k), &one, static_cast<const float*>(b),
                                 i(cm.ld_first), cm.stride_first, static_cast<const float*>(a), i(cm.ld_second),
                                 cm.stride_second, &beta, static_cast<float*>(c), i(cm.ldc), cm.stride_c, i(cm.batch)),
                   "cublasSgemmStridedBatched");
    } else if (d == DType::f64) {
      const double one = 1, beta = cm.accumulate ? 1.0 : 0.0;
      check_cublas(cublas_.dgemm(blas_, op1, op2, i(cm.m), i(cm.n), i(cm.k), &one, static_cast<const double*>(b),
                                 i(cm.ld_first), cm.stride_first, static_cast<const double*>(a), i(cm.ld_second),
                                 cm.stride_second, &beta, static_cast<double*>(c), i(cm.ldc), cm.stride_c,
                                 i(cm.batch)),
                   "cublasDgemmStridedBatched");
    } else {
      RPB_FAIL("matmul", "expected a float32 or float64 tensor, got ", dtype_name(d));
    }
  }

 private:
  cudaDeviceProp props_{};
  Cublas cublas_;
  cublasHandle_t blas_ = nullptr;
  CachingAllocator cache_{[](std::size_t n) -> void* {
                            void* p = nullptr;
                            if (cudaMalloc(&p, n) != cudaSuccess) {
                              cudaGetLastError();  // clear the sticky-free out-of-memory error
                              return nullptr;
                            }
                            return p;
                          },
                          [](void* p) { cudaFree(p); }};
};

}  // namespace

/// core/cuda/select.cpp's factory for the GPU backend: null, with the reason in *why, when no device answers.
Backend* make_gpu_backend(std::string* why) {
  int count = 0;
  const cudaError_t e = cudaGetDeviceCount(&count);
  if (e != cudaSuccess || count == 0) {
    *why = e != cudaSuccess ? std::string("cudaGetDeviceCount: ") + cudaGetErrorString(e) : "no CUDA device found";
    return nullptr;
  }
  return new GpuBackend;
}

/// The CUDA toolkit this build was compiled with.
std::string gpu_build_description() {
  std::ostringstream os;
  os << "CUDA " << CUDART_VERSION / 1000 << "." << (CUDART_VERSION % 1000) / 10;
#ifdef RPB_CUDA_ARCHITECTURES
  os << " (sm_" << RPB_CUDA_ARCHITECTURES << ")";
#endif
  return os.str();
}

}  // namespace rpb::cuda
