#include "optim/clip.h"

#include <cmath>

#include "core/autograd.h"
#include "core/cuda/plan.h"
#include "core/dispatch.h"

namespace rpb::optim {

double global_grad_norm(const std::vector<NamedParam>& params) {
  double sq = 0.0;
  for (const NamedParam& np : params) {
    const Tensor g = np.param.grad();
    if (!g.defined()) continue;
    if (g.is_cuda()) {  // float64 partial sums on the device, in a fixed order (core/cuda/kernels/reduce.h)
      sq += cuda::backend("clip_grad_norm").sum_squares(g.dtype(), g.raw_data(), g.numel());
      continue;
    }
    dispatch_float(g.dtype(), "clip_grad_norm", [&](auto tag) {
      using T = typename decltype(tag)::type;
      sq += camap<T>(g).template cast<double>().square().sum();
    });
  }
  return std::sqrt(sq);
}

double clip_grad_norm(const std::vector<NamedParam>& params, double max_norm) {
  RPB_CHECK(std::isfinite(max_norm) && max_norm > 0, "clip_grad_norm", "max_norm must be finite and > 0, got ",
            max_norm);
  const double norm = global_grad_norm(params);
  if (!std::isfinite(norm) || norm <= max_norm) return norm;
  const double coef = max_norm / (norm + 1e-6);
  // scale_grad_ gives a gradient two parameters share (an add's backward) a scaled copy for each.
  for (const NamedParam& np : params) scale_grad_(np.param, coef);
  return norm;
}

std::optional<std::string> first_non_finite_grad(const std::vector<NamedParam>& params) {
  for (const NamedParam& np : params) {
    const Tensor g = np.param.grad();
    if (!g.defined()) continue;
    bool finite = true;
    if (g.is_cuda()) finite = cuda::backend("first_non_finite_grad").all_finite(g.dtype(), g.raw_data(), g.numel());
    else dispatch_float(g.dtype(), "first_non_finite_grad", [&](auto tag) {
      using T = typename decltype(tag)::type;
      finite = camap<T>(g).isFinite().all();
    });
    if (!finite) return np.name;
  }
  return std::nullopt;
}

}  // namespace rpb::optim
