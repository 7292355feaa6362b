// tests/tensor_checks.h: doctest checks of tensors against written-out values, and the float64 gradient
// check of a whole module, shared by the test files.
#pragma once

#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <string>
#include <vector>

#include "core/rng.h"
#include "gradcheck.h"
#include "nn/module.h"

namespace rpb::testing {

/// Every element of t (row-major) within `tol` of `want`.
inline void check_values(const Tensor& t, const std::vector<double>& want, double tol = 0.0) {
  const std::vector<double> got = t.to_vector();
  REQUIRE(got.size() == want.size());
  for (std::size_t i = 0; i < got.size(); ++i) {
    INFO("element " << i << ": got " << got[i] << ", want " << want[i]);
    CHECK(std::abs(got[i] - want[i]) <= tol);
  }
}

/// The largest |a - b| over the elements of two tensors of one shape.
inline double max_abs_diff(const Tensor& a, const Tensor& b) {
  REQUIRE(a.shape() == b.shape());
  const std::vector<double> x = a.to_vector(), y = b.to_vector();
  double worst = 0;
  for (std::size_t i = 0; i < x.size(); ++i) worst = std::max(worst, std::abs(x[i] - y[i]));
  return worst;
}

/// max |a - b| / max(1, max |b|): the error of `a` relative to the reference `b`'s scale (two tensors of one shape).
inline double scaled_error(const Tensor& a, const Tensor& b) {
  REQUIRE(a.shape() == b.shape());
  const std::vector<double> x = a.to_vector(), y = b.to_vector();
  double worst = 0, scale = 1;
  for (std::size_t i = 0; i < x.size(); ++i) {
    worst = std::max(worst, std::abs(x[i] - y[i]));
    scale = std::max(scale, std::abs(y[i]));
  }
  return worst / scale;
}

/// True when no element is NaN or infinite.
inline bool all_finite(const Tensor& t) {
  for (const double v : t.to_vector())
    if (!std::isfinite(v)) return false;
  return true;
}

/// Redraws every float32 parameter of `m` ~ N(0, std) from `gen`: a model whose positions matter (the init's 0.02
/// would leave position tables, and any error in their offsets, almost invisible).
inline void randomize(nn::Module& m, Generator& gen, double std = 0.5) {
  for (auto& [name, p] : m.named_parameters()) {
    const std::vector<double> v = randn(p.shape(), gen, DType::f64, 0.0, std).to_vector();
    float* d = p.mutable_data<float>();
    for (std::size_t i = 0; i < v.size(); ++i) d[i] = static_cast<float>(v[i]);
  }
}

/// The case that gradient-checks `m` in float64: its parameters (and `extra` inputs) are the checked inputs of
/// f(), which must record `op`. Converts m to float64.
inline GradCase module_case(nn::Module& m, std::function<Tensor()> f, const std::string& what, OpKind op,
                            std::vector<Tensor> extra = {}) {
  m.to(DType::f64);
  GradCase c{what, op, std::move(extra), [f](const std::vector<Tensor>&) { return f(); }};
  for (const auto& [name, t] : m.named_parameters()) c.inputs.push_back(t);
  return c;
}

/// Runs a gradient-check case: it must record its op and pass.
inline void check_gradients(const GradCase& c) {
  const GradcheckResult r = gradcheck(c);
  INFO(c.name);
  CHECK(r.op_recorded);
  CHECK_MESSAGE(r.ok, r.report);
}

}  // namespace rpb::testing
