// Reading a checkpoint never changes its state (issue 24): `inspect` reports the same trained rows with and without
// drawing the bias, and the bias figure's request carries the learned values (log-decay's lambdas), not the
// configured ones.
#include <doctest/doctest.h>

#include <filesystem>
#include <string>
#include <vector>

#include "cli/plot_bias.h"
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

TEST_CASE("inspect --plot reports the rows training read, as inspect without it does") {
  TempDir dir("inspect_state");
  const rpb::testing::ScopedEnv stub("RPB_PYTHON_DIR", rpb::testing::kPlotStubDir);
  std::string args = std::string(RPB_SOURCE_DIR) + "/configs/t5.toml";
  for (const std::string& o : rpb::testing::tiny_t5_overrides(dir.path, "t5", 4))
    if (o.rfind("position.", 0) != 0) args += " --set '" + o + "'";
  REQUIRE(run_rpb("train " + args + " --set position.num_buckets=32 --set position.max_distance=128").code == 0);
  const std::string run = dir.file("t5");
  const CommandResult plain = run_rpb("inspect " + run), drawn = run_rpb("inspect " + run + " --plot " + dir.file("b.pdf"));
  REQUIRE(plain.code == 0);
  REQUIRE(drawn.code == 0);
  const std::string trained = line_of(plain.out, "pos.t5.trained: ");
  CHECK(contains(trained, "16 of 32 rows never read in training: 16 17 18"));
  CHECK(line_of(drawn.out, "pos.t5.trained: ") == trained);
  CHECK(run_rpb("inspect " + run).out == plain.out);  // and nothing of it changed the file
}

TEST_CASE("the log-decay bias request labels each head with its learned lambda") {
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
  const nlohmann::ordered_json block = rpb::bias_block(*model, cfg, "--plot", "log_decay");
  REQUIRE(block.at("modules").size() == 1);
  const nlohmann::ordered_json& notes = block.at("modules")[0].at("head_notes");
  REQUIRE(notes.size() == 2);
  CHECK(contains(notes[0].get<std::string>(), "lambda 2.02"));
  CHECK(contains(notes[1].get<std::string>(), "lambda 2.12"));
  CHECK_FALSE(contains(notes.dump(), "lambda 0.3"));
}
