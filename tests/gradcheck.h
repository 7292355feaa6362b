// tests/gradcheck.h: the float64 central-difference gradient check and the case table
// that the registry test iterates (one list of cases per op family).
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "core/core.h"

namespace rpb::testing {

/// One gradient-check case: `fn` maps `inputs` (float64) to an output; every
/// input with requires_grad is checked. `op` must appear on the tape when fn runs,
/// so a case cannot claim an op it does not exercise.
struct GradCase {
  std::string name;
  OpKind op;
  std::vector<Tensor> inputs;
  std::function<Tensor(const std::vector<Tensor>&)> fn;
};

using CaseList = std::vector<GradCase>;

/// A float64 input of `shape` with requires_grad, values uniform in [lo, hi).
Tensor input(Generator& gen, const Shape& shape, double lo = -1.0, double hi = 1.0);
/// Like input(), but values are kept at least `gap` away from each other within
/// the tensor and from zero-crossings where ops have kinks (relu, max ties).
Tensor input_away_from(Generator& gen, const Shape& shape, double avoid, double gap);

/// A constant a case's fn captures, in the dtype and on the device of the input `x` it meets: the CUDA parity test
/// (tests/cuda/) runs every case in float64 and float32 on the CPU and on cuda.
inline Tensor follow(const Tensor& constant, const Tensor& x) {
  const Tensor c = constant.is_floating() ? constant.to(x.dtype()) : constant;
  return c.to(x.device());
}

struct GradcheckResult {
  bool ok = true;
  bool op_recorded = false;
  std::string report;  // the worst mismatches, for the failure message
};

/// Runs one case: analytic gradients from backward() with a random upstream
/// gradient against central differences (eps 1e-6), passing when
/// |analytic - numeric| <= atol + rtol*|numeric| for every element.
GradcheckResult gradcheck(const GradCase& c, double eps = 1e-6, double atol = 1e-5, double rtol = 1e-3);

// Case lists, one per op family (tests/cases_<family>.cpp).
void add_elementwise_cases(CaseList& cases);
void add_unary_cases(CaseList& cases);
void add_matmul_cases(CaseList& cases);
void add_reduce_cases(CaseList& cases);
void add_layout_cases(CaseList& cases);
void add_index_cases(CaseList& cases);
void add_select_cases(CaseList& cases);
void add_softmax_cases(CaseList& cases);
void add_norm_cases(CaseList& cases);
void add_dropout_cases(CaseList& cases);
void add_loss_cases(CaseList& cases);
void add_attention_cases(CaseList& cases);

/// Every case of every family.
CaseList all_cases();

}  // namespace rpb::testing
