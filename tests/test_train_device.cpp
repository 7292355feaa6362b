// run.device = "cuda" end to end through the CLI, on the emulated backend (RPB_CUDA_EMULATE=1 in the child's
// environment: the CUDA kernels' own code on the host): training agrees with the CPU's, a GPU checkpoint is the same
// file and evaluates on the CPU, a resumed run ends bit-identical to an uninterrupted one, and without a device
// `--device cuda` is a usage error naming run.device. On a GPU the same commands run there (docs/gpu.md).
#include <doctest/doctest.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <sstream>
#include <string>
#include <vector>

#include "test_util.h"
#include "train/checkpoint/checkpoint.h"

namespace fs = std::filesystem;
using rpb::testing::contains;
using rpb::testing::run_rpb;
using rpb::testing::TempDir;

namespace {

// The environment the child sees while alive: the emulated CUDA backend.
struct EmulatedCuda {
  EmulatedCuda() { setenv("RPB_CUDA_EMULATE", "1", 1); }
  ~EmulatedCuda() { unsetenv("RPB_CUDA_EMULATE"); }
};

std::string train_args(const fs::path& out, const std::string& name, int64_t steps, int64_t every,
                       const std::string& device) {
  std::string a = "train " + std::string(RPB_SOURCE_DIR) + "/configs/t5.toml";
  for (const std::string& o : rpb::testing::tiny_t5_overrides(out, name, steps, every)) a += " --set '" + o + "'";
  return a + " --set run.eval_diagnostics=false --device " + device;
}

// metrics.csv's train_loss column, in step order.
std::vector<double> losses(const fs::path& run) {
  std::istringstream in(rpb::testing::file_text(run / "metrics.csv"));
  std::string line;
  std::getline(in, line);  // the header: step,train_loss,...
  std::vector<double> out;
  while (std::getline(in, line)) out.push_back(std::stod(line.substr(line.find(',') + 1)));
  return out;
}

// Every parameter's values, in order.
std::vector<std::vector<double>> params_of(const fs::path& file) {
  std::vector<std::vector<double>> out;
  for (const auto& [name, t] : rpb::load_checkpoint(file.string()).params) out.push_back(t.to_vector());
  return out;
}

}  // namespace

TEST_CASE("train --device cuda: the CPU's losses, the same checkpoint file, evaluated on the CPU to the same perplexity") {
  TempDir d("device");
  const EmulatedCuda emulated;
  const auto gpu = run_rpb(train_args(d.path, "gpu", 6, 0, "cuda"));
  REQUIRE_MESSAGE(gpu.code == 0, gpu.out);
  const auto cpu = run_rpb(train_args(d.path, "cpu", 6, 0, "cpu"));
  REQUIRE_MESSAGE(cpu.code == 0, cpu.out);
  const std::vector<double> lg = losses(d.path / "gpu"), lc = losses(d.path / "cpu");
  REQUIRE(lg.size() == 6);
  REQUIRE(lc.size() == 6);
  for (std::size_t i = 0; i < lc.size(); ++i) CHECK(lg[i] == doctest::Approx(lc[i]).epsilon(1e-4));
  // The effective config records the device; the identity does not (a run may continue on the other device).
  CHECK(contains(rpb::testing::file_text(d.path / "gpu" / "config.toml"), "device = 'cuda'"));
  CHECK(contains(gpu.out, "device: emulated"));
  const auto eg = run_rpb("eval " + (d.path / "gpu").string() + " --no-record");
  const auto ec = run_rpb("eval " + (d.path / "cpu").string() + " --no-record");
  const auto eg_cuda = run_rpb("eval " + (d.path / "gpu").string() + " --no-record --device cuda");
  REQUIRE_MESSAGE(eg.code == 0, eg.out);
  REQUIRE_MESSAGE(ec.code == 0, ec.out);
  REQUIRE_MESSAGE(eg_cuda.code == 0, eg_cuda.out);
  const std::vector<std::vector<double>> pg = params_of(d.path / "gpu" / "step_00000006.h5"),
                                         pc = params_of(d.path / "cpu" / "step_00000006.h5");
  REQUIRE(pg.size() == pc.size());
  for (std::size_t i = 0; i < pc.size(); ++i)
    for (std::size_t k = 0; k < pc[i].size(); ++k) CHECK(std::fabs(pg[i][k] - pc[i][k]) <= 1e-4);
}

TEST_CASE("train --device cuda: a run resumed from its step-3 checkpoint ends bit-identical to the uninterrupted run") {
  TempDir d("device_resume");
  const EmulatedCuda emulated;
  const auto whole = run_rpb(train_args(d.path, "whole", 6, 3, "cuda"));
  REQUIRE_MESSAGE(whole.code == 0, whole.out);
  // The same run from its step-3 checkpoint, in a copy of its folder.
  fs::copy(d.path / "whole", d.path / "part", fs::copy_options::recursive);
  fs::remove(d.path / "part" / "step_00000006.h5");
  const auto part = run_rpb(train_args(d.path, "part", 6, 3, "cuda") + " --resume-from " +
                            (d.path / "part" / "step_00000003.h5").string());
  REQUIRE_MESSAGE(part.code == 0, part.out);
  CHECK(params_of(d.path / "part" / "step_00000006.h5") == params_of(d.path / "whole" / "step_00000006.h5"));
  CHECK(losses(d.path / "part") == losses(d.path / "whole"));
}

TEST_CASE("train --device cuda without a CUDA device is a usage error naming run.device and the way back") {
  TempDir d("device_none");
  const auto r = run_rpb(train_args(d.path, "none", 2, 0, "cuda"));
  if (contains(r.out, "CUDA device is available")) {
    CHECK(r.code == 2);
    CHECK(contains(r.out, "run.device = \"cuda\""));
    CHECK(contains(r.out, "--device cpu"));
  } else {
    MESSAGE("a CUDA device answered: the refusal is not tested here");
  }
  const auto bad = run_rpb(train_args(d.path, "bad", 2, 0, "tpu"));
  CHECK(bad.code == 2);
  CHECK(contains(bad.out, "--device"));
}
