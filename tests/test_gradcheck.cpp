// The registry-driven gradient check: every registered op has cases, and every case passes.
#include <doctest/doctest.h>

#include <map>

#include "gradcheck.h"

using namespace rpb;
using namespace rpb::testing;

TEST_CASE("every registered op passes the float64 gradient check") {
  const CaseList cases = all_cases();
  std::map<OpKind, int> per_op;
  for (const GradCase& c : cases) {
    INFO("case: ", c.name, " (op ", std::string(op_name(c.op)), ")");
    const GradcheckResult r = gradcheck(c);
    CHECK_MESSAGE(r.op_recorded, "the case never records op ", std::string(op_name(c.op)));
    CHECK_MESSAGE(r.ok, r.report);
    if (r.op_recorded) ++per_op[c.op];
  }
  for (const OpInfo& op : kOps) {
    INFO("op: ", std::string(op.name), " (core/ops/", std::string(op.family), ".cpp)");
    CHECK_MESSAGE(per_op[op.kind] > 0, "registered op has no gradcheck case");
  }
}

TEST_CASE("gradcheck itself catches a wrong backward rule") {
  // A deliberately wrong rule must fail, or the check above proves nothing.
  Generator gen(3);
  GradCase wrong{"wrong exp rule", OpKind::Exp, {input(gen, {3, 2})}, [](const std::vector<Tensor>& in) {
                   Tensor out;
                   {
                     NoGradGuard no_grad;
                     out = exp(in[0]);
                   }
                   if (autograd::should_record({&in[0]}))
                     autograd::record(OpKind::Exp, out, {&in[0]}, [](const Tensor& g, InputGrads& gi) {
                       gi.set(0, mul_scalar(g, 1.0));  // should be g * exp(x)
                     });
                   return out;
                 }};
  const GradcheckResult r = gradcheck(wrong);
  CHECK(r.op_recorded);
  CHECK_FALSE(r.ok);
}
