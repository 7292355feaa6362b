#include "parity.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <sstream>

namespace rpb::testing {

CaseRun run_case(const GradCase& c, DType dtype, Device device, uint64_t upstream_seed) {
  std::vector<Tensor> inputs;
  for (const Tensor& x : c.inputs) {
    Tensor t = x.detach();
    if (t.is_floating()) t = t.to(dtype);
    t = t.to(device);
    if (x.requires_grad()) t.requires_grad_();
    inputs.push_back(t);
  }
  const Tensor out = c.fn(inputs);
  Generator gen(upstream_seed);
  const Tensor upstream = rand(out.shape(), gen, DType::f64, -1.0, 1.0).to(dtype).to(device);
  backward(out, upstream);
  CaseRun run{out.detach().to(Device::cpu), {}};
  for (const Tensor& t : inputs) run.grads.push_back(t.requires_grad() && t.grad().defined() ? t.grad().to(Device::cpu) : Tensor());
  return run;
}

Closeness close(const Tensor& got, const Tensor& ref, double ulps) {
  Closeness c;
  if (got.shape() != ref.shape() || got.dtype() != ref.dtype()) {
    std::ostringstream os;
    os << "got " << dtype_name(got.dtype()) << " " << got.shape() << ", expected " << dtype_name(ref.dtype()) << " "
       << ref.shape();
    return {false, os.str()};
  }
  const std::vector<double> a = got.to_vector(), b = ref.to_vector();
  double scale = 1;  // values below 1 are held to ulps x eps absolute
  for (double v : b) scale = std::max(scale, std::fabs(v));
  const double eps = ref.dtype() == DType::f32 ? std::numeric_limits<float>::epsilon() : std::numeric_limits<double>::epsilon();
  const double tol = ulps * eps * scale;
  std::size_t worst = 0;
  double worst_err = -1;
  for (std::size_t i = 0; i < a.size(); ++i) {
    const bool both_nan = std::isnan(a[i]) && std::isnan(b[i]);
    const double err = both_nan ? 0.0 : (a[i] == b[i] ? 0.0 : std::fabs(a[i] - b[i]));
    if (!(err <= worst_err)) {
      worst_err = err;
      worst = i;
    }
  }
  if (a.empty() || worst_err <= tol) return c;
  std::ostringstream os;
  os.precision(17);
  os << "element " << worst << ": got " << a[worst] << ", expected " << b[worst] << " (difference " << worst_err
     << ", tolerance " << ulps << " ulp x " << scale << " = " << tol << ")";
  return {false, os.str()};
}

bool same_bits(const Tensor& a, const Tensor& b) {
  if (a.shape() != b.shape() || a.dtype() != b.dtype()) return false;
  const Tensor ha = a.to(Device::cpu), hb = b.to(Device::cpu);
  return std::memcmp(ha.raw_data(), hb.raw_data(), static_cast<std::size_t>(a.numel()) * dtype_size(a.dtype())) == 0;
}

double tolerance_ulps(OpKind op) {
  const std::string_view family = op_info(op).family;
  if (family == "elementwise" || family == "unary" || family == "layout" || family == "index" || family == "select" ||
      family == "dropout")
    return 32;
  if (family == "matmul" || family == "attention") return 256;  // the fused attention's products are in tiles
  return 128;  // reduce, softmax, norm, loss
}

}  // namespace rpb::testing
