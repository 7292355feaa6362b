// rpb/train/data/sampling.cpp: Gamma, Dirichlet and unbiased uniform draws.
#include "train/data/sampling.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "core/error.h"

namespace rpb::data {

uint64_t uniform_index(Generator& gen, uint64_t n) {
  RPB_CHECK(n >= 1, "uniform_index", "n must be >= 1, got ", n);
  const uint64_t threshold = (0 - n) % n;  // 2^64 mod n: values below it would bias the low residues
  for (;;) {
    const uint64_t r = gen.next_u64();
    if (r >= threshold) return r % n;
  }
}

double sample_log_gamma(double shape, Generator& gen) {
  RPB_CHECK(shape > 0 && std::isfinite(shape), "gamma", "shape must be positive and finite, got ", shape);
  if (shape < 1) {
    const double u = 1.0 - gen.uniform();  // (0, 1]
    return sample_log_gamma(shape + 1, gen) + std::log(u) / shape;
  }
  // Marsaglia & Tsang (2000), "A simple method for generating gamma variables".
  const double d = shape - 1.0 / 3.0;
  const double c = 1.0 / std::sqrt(9.0 * d);
  for (;;) {
    const double x = gen.normal();
    double v = 1.0 + c * x;
    if (v <= 0) continue;
    v = v * v * v;
    const double u = 1.0 - gen.uniform();
    const double x2 = x * x;
    if (u < 1.0 - 0.0331 * x2 * x2) return std::log(d * v);
    if (std::log(u) < 0.5 * x2 + d * (1.0 - v + std::log(v))) return std::log(d * v);
  }
}

std::vector<double> sample_dirichlet(int64_t k, double concentration, Generator& gen) {
  RPB_CHECK(k >= 1, "dirichlet", "k must be >= 1, got ", k);
  std::vector<double> p(static_cast<size_t>(k));
  double mx = -std::numeric_limits<double>::infinity();
  for (auto& x : p) {
    x = sample_log_gamma(concentration, gen);
    mx = std::max(mx, x);
  }
  double sum = 0;
  for (auto& x : p) sum += (x = std::exp(x - mx));
  for (auto& x : p) x /= sum;
  return p;
}

}  // namespace rpb::data
