// Reading a checkpoint never changes its state (issue 24): `inspect` reports the same trained rows with and without
// drawing the bias, and the bias pictures carry the learned values (log-decay's lambdas), not the configured ones.
#include <doctest/doctest.h>

#include <filesystem>
#include <string>
#include <vector>

#include "cli/inspect_svg.h"
#include "core/autograd.h"
#include "test_util.h"
#include "train/config/config.h"
#include "train/workload.h"

namespace rpb_test_inspect_state {

using rpb::testing::CommandResult;
using rpb::testing::contains;
using rpb::testing::run_rpb;
using rpb::testing::TempDir;

// The line of `report` that starts with `prefix`.
std::string line_of(const std::string& report, const std::string& prefix) {
  const std::size_t at = report.find(prefix);
  return at == std::string::npos ? "" : report.substr(at, report.find('\n', at) - at);
}

}  // namespace rpb_test_inspect_state

using namespace rpb_test_inspect_state;

TEST_CASE("inspect --svg reports the rows training read, as inspect without it does") {
  TempDir dir("inspect_state");
  std::string args = std::string(RPB_SOURCE_DIR) + "/configs/t5.toml";
  for (const std::string& o : rpb::testing::tiny_t5_overrides(dir.path, "t5", 4))
    if (o.rfind("position.", 0) != 0) args += " --set '" + o + "'";
  REQUIRE(run_rpb("train " + args + " --set position.num_buckets=32 --set position.max_distance=128").code == 0);
  const std::string run = dir.file("t5");
  const CommandResult plain = run_rpb("inspect " + run), drawn = run_rpb("inspect " + run + " --svg " + dir.file("b.svg"));
  REQUIRE(plain.code == 0);
  REQUIRE(drawn.code == 0);
  const std::string trained = line_of(plain.out, "pos.t5.trained: ");
  CHECK(contains(trained, "16 of 32 rows never read in training: 16 17 18"));
  CHECK(line_of(drawn.out, "pos.t5.trained: ") == trained);
  CHECK(run_rpb("inspect " + run).out == plain.out);  // and nothing of it changed the file
}

TEST_CASE("the log-decay bias picture labels each head with its learned lambda") {
  TempDir dir("inspect_lambda");
  const rpb::RunConfig cfg = rpb::parse_config(
      "[model]\nd_model = 8\nheads = 2\nlayers = 1\nd_ff = 8\n[position]\nscheme = \"log_decay\"\nlambda = 0.3\n"
      "learnable_lambda = true\n[run]\nlength = 8\neval_multipliers = [1]\n",
      "log_decay");
  const auto model = rpb::make_model(cfg, 5);
  for (const auto& [name, t] : model->named_parameters())
    if (name.ends_with("lambda")) {
      rpb::NoGradGuard no_grad;
      t.copy_(rpb::Tensor::from_vector<float>({2}, {2.02f, 2.12f}));
    }
  rpb::write_bias_svg(*model, cfg, dir.file("b.svg"), {"--svg", {}});
  const std::string svg = rpb::testing::file_text(dir.file("b.svg"));
  CHECK(contains(svg, "head 0 (lambda 2.02)"));
  CHECK(contains(svg, "head 1 (lambda 2.12)"));
  CHECK_FALSE(contains(svg, "lambda 0.3"));
}
