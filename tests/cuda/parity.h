// tests/cuda/parity.h: running a gradient-check case (tests/gradcheck.h) on a device and comparing two runs.
#pragma once

#include <string>
#include <vector>

#include "core/core.h"
#include "gradcheck.h"

namespace rpb::testing {

/// One run of a case: its output and the gradient of every input that requires grad (undefined for the others),
/// all moved to the host.
struct CaseRun {
  Tensor out;
  std::vector<Tensor> grads;
};

/// Runs case `c` with its inputs converted to `dtype` and moved to `device`, then backward from the output with
/// the upstream gradient `upstream` (the output's shape; its values are the case's, the same on every device).
CaseRun run_case(const GradCase& c, DType dtype, Device device, uint64_t upstream_seed);

/// Whether every |got - ref| is within `ulps` x the dtype's epsilon x max(1, the largest |ref|); names the worst
/// element when not.
struct Closeness {
  bool ok = true;
  std::string report;
};
Closeness close(const Tensor& got, const Tensor& ref, double ulps);

/// True when both tensors hold the same bits.
bool same_bits(const Tensor& a, const Tensor& b);

/// The stated tolerance of an op's CUDA kernel against its CPU op, in units of the dtype's epsilon times
/// max(1, the tensor's largest magnitude): 32 for element-by-element ops (CUDA's and glibc's transcendentals and
/// Eigen's vectorized ones differ by a few ulp, nvcc fuses a multiply and an add, and gelu's 1 + tanh(u) cancels
/// near u = -8, where Eigen's float tanh is exactly -1 and CUDA's is not); 128 for the ops whose terms are summed in
/// another order (block trees on the GPU, Eigen's vectorized sums on the CPU); 256 for products (cuBLAS's
/// blocking against OpenBLAS's, and the fused attention's per-thread sums against Eigen's blocked ones).
double tolerance_ulps(OpKind op);

}  // namespace rpb::testing
