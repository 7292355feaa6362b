#include "gradcheck.h"

#include <algorithm>
#include <cmath>
#include <sstream>

namespace rpb::testing {

Tensor input(Generator& gen, const Shape& shape, double lo, double hi) {
  return rand(shape, gen, DType::f64, lo, hi).requires_grad_();
}

Tensor input_away_from(Generator& gen, const Shape& shape, double avoid, double gap) {
  Tensor t = rand(shape, gen, DType::f64, -1.0, 1.0);
  double* p = t.mutable_data<double>();
  for (int64_t i = 0; i < t.numel(); ++i) p[i] = avoid + (p[i] >= 0 ? p[i] + gap : p[i] - gap);
  return t.requires_grad_();
}

namespace {
double dot(const Tensor& a, const Tensor& b) {
  const double* pa = a.data<double>();
  const double* pb = b.data<double>();
  double s = 0;
  for (int64_t i = 0; i < a.numel(); ++i) s += pa[i] * pb[i];
  return s;
}
}  // namespace

GradcheckResult gradcheck(const GradCase& c, double eps, double atol, double rtol) {
  GradcheckResult r;
  std::ostringstream rep;
  for (const Tensor& t : c.inputs) t.zero_grad();
  tape().clear();
  Tensor out = c.fn(c.inputs);
  for (const Node& n : tape().nodes()) r.op_recorded |= n.op == c.op;
  if (!out.requires_grad()) {
    tape().clear();
    r.ok = false;
    r.report = "the output does not require grad";
    return r;
  }
  Generator gen(1234);
  const Tensor upstream = randn(out.shape(), gen, DType::f64);
  backward(out, upstream);
  std::vector<Tensor> analytic;
  for (const Tensor& t : c.inputs) analytic.push_back(t.requires_grad() ? t.grad() : Tensor());

  NoGradGuard no_grad;
  for (std::size_t k = 0; k < c.inputs.size(); ++k) {
    const Tensor& x = c.inputs[k];
    if (!x.requires_grad()) continue;
    if (!analytic[k].defined()) {
      r.ok = false;
      rep << "input " << k << ": no gradient reached it\n";
      continue;
    }
    double* px = x.mutable_data<double>();
    const double* pa = analytic[k].data<double>();
    int bad = 0;
    for (int64_t i = 0; i < x.numel(); ++i) {
      const double orig = px[i];
      px[i] = orig + eps;
      const double fp = dot(c.fn(c.inputs), upstream);
      px[i] = orig - eps;
      const double fm = dot(c.fn(c.inputs), upstream);
      px[i] = orig;
      const double numeric = (fp - fm) / (2 * eps);
      const double err = std::abs(pa[i] - numeric);
      if (!(err <= atol + rtol * std::abs(numeric))) {
        r.ok = false;
        if (bad++ < 5)
          rep << "input " << k << " " << x.shape() << " element " << i << ": analytic " << pa[i] << " numeric "
              << numeric << " (|diff| " << err << ")\n";
      }
    }
    if (bad > 5) rep << "input " << k << ": " << bad << " mismatching elements in all\n";
  }
  for (const Tensor& t : c.inputs) t.zero_grad();
  r.report = rep.str();
  return r;
}

CaseList all_cases() {
  CaseList cases;
  add_elementwise_cases(cases);
  add_unary_cases(cases);
  add_matmul_cases(cases);
  add_reduce_cases(cases);
  add_layout_cases(cases);
  add_index_cases(cases);
  add_select_cases(cases);
  add_softmax_cases(cases);
  add_norm_cases(cases);
  add_dropout_cases(cases);
  add_loss_cases(cases);
  add_attention_cases(cases);
  return cases;
}

}  // namespace rpb::testing
