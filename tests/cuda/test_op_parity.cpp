// Every op of the registry on cuda against the CPU op: the gradient-check case table (tests/cases_*.cpp, one case
// list per op family, which tests/test_gradcheck.cpp already requires to cover every row of core/registry.h) run on
// both devices, outputs and input gradients compared within each op's stated tolerance (parity.h), in float64 and
// float32. An op with no CUDA kernel fails here: it throws instead of giving a result.
#include <doctest/doctest.h>

#include <cmath>
#include <map>
#include <string>

#include "parity.h"

namespace rpb::testing {

namespace {

// What a case that has no CUDA kernel must say on cuda, or "" when it has one: the fused attention's CUDA kernel
// attends over a line; a bias over a grid (Swin's windows) takes the composite path on a GPU.
std::string expected_cuda_error(const GradCase& c) {
  const bool grid = c.name.find("grid") != std::string::npos || c.name.find("lattice") != std::string::npos;
  return c.op == OpKind::FusedAttention && grid ? "a bias over a grid has no CUDA kernel" : "";
}

// dropout draws its masks from Philox on cuda, not from the CPU's generator, so its values are not the CPU's: its
// run must give a finite output and a finite gradient to every input that requires grad (test_device.cpp checks
// the masks themselves).
void check_dropout_run(const GradCase& c, const CaseRun& run) {
  for (double v : run.out.to_vector()) CHECK(std::isfinite(v));
  for (std::size_t i = 0; i < c.inputs.size(); ++i) {
    if (!c.inputs[i].requires_grad()) continue;
    REQUIRE(run.grads[i].defined());
    for (double v : run.grads[i].to_vector()) CHECK(std::isfinite(v));
  }
}

void check_against_cpu(const GradCase& c, DType dtype, std::map<OpKind, int>& passed) {
  INFO(std::string("case: " + c.name + " (" + op_name(c.op) + ", " + dtype_name(dtype) + ")"));
  if (const std::string expected = expected_cuda_error(c); !expected.empty()) {
    try {
      run_case(c, dtype, Device::cuda, 7);
      FAIL_CHECK("ran on cuda though it is listed as having no kernel: take it off the list");
    } catch (const Error& e) {
      CHECK_MESSAGE(std::string(e.what()).find(expected) != std::string::npos, e.what());
    }
    return;
  }
  const CaseRun cpu = run_case(c, dtype, Device::cpu, 7);
  CaseRun gpu;
  try {
    gpu = run_case(c, dtype, Device::cuda, 7);
  } catch (const Error& e) {
    FAIL_CHECK(std::string(std::string("threw on cuda: ") + e.what()));
    return;
  }
  if (c.op == OpKind::Dropout) {
    check_dropout_run(c, gpu);
    ++passed[c.op];
    return;
  }
  const double ulps = tolerance_ulps(c.op);
  bool ok = true;
  const Closeness out = close(gpu.out, cpu.out, ulps);
  CHECK_MESSAGE(out.ok, std::string("output: " + out.report));
  ok &= out.ok;
  for (std::size_t i = 0; i < cpu.grads.size(); ++i) {
    if (!cpu.grads[i].defined()) continue;
    REQUIRE(gpu.grads[i].defined());
    const Closeness g = close(gpu.grads[i], cpu.grads[i], ulps);
    CHECK_MESSAGE(g.ok, std::string("gradient of input " + std::to_string(i) + ": " + g.report));
    ok &= g.ok;
  }
  if (ok) ++passed[c.op];
}

}  // namespace

TEST_CASE("every op of the registry on cuda equals its CPU op, forward and backward, in float64 and float32") {
  const CaseList cases = all_cases();
  for (DType dtype : {DType::f64, DType::f32}) {
    std::map<OpKind, int> passed;
    for (const GradCase& c : cases) check_against_cpu(c, dtype, passed);
    for (const OpInfo& op : kOps) {
      INFO(std::string("op: " + std::string(op.name) + " (core/ops/" + std::string(op.family) + ".cpp), " + dtype_name(dtype)));
      CHECK_MESSAGE(passed[op.kind] > 0, "no case of this op passed on cuda");
    }
  }
}

TEST_CASE("every op on cuda gives the same bits on every run") {
  for (const GradCase& c : all_cases()) {
    if (!expected_cuda_error(c).empty()) continue;
    INFO(std::string("case: " + c.name));
    const CaseRun a = run_case(c, DType::f32, Device::cuda, 11), b = run_case(c, DType::f32, Device::cuda, 11);
    CHECK(same_bits(a.out, b.out));
    for (std::size_t i = 0; i < a.grads.size(); ++i)
      if (a.grads[i].defined()) CHECK(same_bits(a.grads[i], b.grads[i]));
  }
}

TEST_CASE("the tolerance check itself fails a wrong result") {
  const Tensor ref = Tensor::from_vector<float>({3}, {1.0f, -2.0f, 4.0f});
  const Tensor near = Tensor::from_vector<float>({3}, {1.0f, -2.0f, 4.0f + 4 * 4.76837158e-7f});
  const Tensor far = Tensor::from_vector<float>({3}, {1.0f, -2.001f, 4.0f});
  CHECK(close(near, ref, 16).ok);
  CHECK_FALSE(close(far, ref, 16).ok);
  CHECK_FALSE(close(Tensor::zeros({2}), ref, 16).ok);
  CHECK(same_bits(ref, ref.clone()));
  CHECK_FALSE(same_bits(ref, near));
}

}  // namespace rpb::testing
