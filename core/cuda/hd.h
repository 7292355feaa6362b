// rpb/core/cuda/hd.h: what a kernel body needs to compile as both CUDA device code (nvcc) and host code (g++):
// the RPB_HD qualifier and the math it calls.
//
// A kernel body in core/cuda/kernels/ is a functor whose operator() is RPB_HD. nvcc compiles it into the GPU's
// kernels (core/cuda/backend_gpu.cu); g++ compiles the same text for the host launcher (core/cuda/exec_host.h), so
// the tests of every scripts/test.sh run each kernel's arithmetic and reduction order on a machine without a GPU.
// Transcendentals differ between the two (CUDA's expf is within 2 ulp, glibc's is correctly rounded), which the
// GPU parity test's tolerances allow; additions and their order are the same on both.
#pragma once

#include <cmath>
#include <cstdint>
#include <limits>

#if defined(__CUDACC__)
#define RPB_HD __host__ __device__
#define RPB_DEVICE_CODE_ENABLED 1
#else
#define RPB_HD
#endif

namespace rpb::cuda {

/// Threads per block of every kernel: a power of two, which the tree reductions need.
inline constexpr int kBlock = 256;

// ---- math, overloaded for float and double, the device's intrinsics under nvcc and <cmath> on the host ----
#if defined(__CUDA_ARCH__)
RPB_HD inline float m_exp(float x) { return ::expf(x); }
RPB_HD inline double m_exp(double x) { return ::exp(x); }
RPB_HD inline float m_log(float x) { return ::logf(x); }
RPB_HD inline double m_log(double x) { return ::log(x); }
RPB_HD inline float m_sqrt(float x) { return ::sqrtf(x); }
RPB_HD inline double m_sqrt(double x) { return ::sqrt(x); }
RPB_HD inline float m_tanh(float x) { return ::tanhf(x); }
RPB_HD inline double m_tanh(double x) { return ::tanh(x); }
RPB_HD inline float m_erf(float x) { return ::erff(x); }
RPB_HD inline double m_erf(double x) { return ::erf(x); }
RPB_HD inline float m_pow(float x, float p) { return ::powf(x, p); }
RPB_HD inline double m_pow(double x, double p) { return ::pow(x, p); }
RPB_HD inline bool m_isnan(float x) { return ::isnan(x); }
RPB_HD inline bool m_isnan(double x) { return ::isnan(x); }
RPB_HD inline bool m_isfinite(float x) { return ::isfinite(x); }
RPB_HD inline bool m_isfinite(double x) { return ::isfinite(x); }
#else
inline float m_exp(float x) { return std::exp(x); }
inline double m_exp(double x) { return std::exp(x); }
inline float m_log(float x) { return std::log(x); }
inline double m_log(double x) { return std::log(x); }
inline float m_sqrt(float x) { return std::sqrt(x); }
inline double m_sqrt(double x) { return std::sqrt(x); }
inline float m_tanh(float x) { return std::tanh(x); }
inline double m_tanh(double x) { return std::tanh(x); }
inline float m_erf(float x) { return std::erf(x); }
inline double m_erf(double x) { return std::erf(x); }
inline float m_pow(float x, float p) { return std::pow(x, p); }
inline double m_pow(double x, double p) { return std::pow(x, p); }
inline bool m_isnan(float x) { return std::isnan(x); }
inline bool m_isnan(double x) { return std::isnan(x); }
inline bool m_isfinite(float x) { return std::isfinite(x); }
inline bool m_isfinite(double x) { return std::isfinite(x); }
#endif

template <typename T>
RPB_HD inline T m_inf() {
  return std::numeric_limits<T>::infinity();
}

}  // namespace rpb::cuda
