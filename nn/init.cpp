#include "nn/init.h"

#include <cmath>

namespace rpb::init {

void normal_(const Tensor& t, Generator& gen, double std, double mean) { t.copy_(randn(t.shape(), gen, t.dtype(), mean, std)); }

void uniform_(const Tensor& t, Generator& gen, double lo, double hi) { t.copy_(rand(t.shape(), gen, t.dtype(), lo, hi)); }

void trunc_normal_(const Tensor& t, Generator& gen, double std, double mean, double a, double b) {
  t.copy_(trunc_normal(t.shape(), gen, t.dtype(), mean, std, a, b));
}

void kaiming_uniform_linear_(const Tensor& weight, Generator& gen) {
  RPB_CHECK(weight.dim() == 2, "kaiming_uniform_linear_", "expected an (out, in) weight, got ", weight.shape());
  const double bound = 1.0 / std::sqrt(static_cast<double>(weight.size(1)));
  uniform_(weight, gen, -bound, bound);
}

void zeros_(const Tensor& t) { t.fill_(0.0); }
void ones_(const Tensor& t) { t.fill_(1.0); }

}  // namespace rpb::init
