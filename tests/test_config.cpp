// train/config: TOML configs, their errors and overrides.
#include <doctest/doctest.h>

#include <filesystem>
#include <set>

#include "core/text.h"
#include "test_util.h"
#include "train/config/config.h"
#include "train/config/toml_table.h"
#include "train/data/algorithmic.h"
#include "train/data/task_registry.h"

using namespace rpb;
using rpb::testing::contains;
using rpb::testing::error_of;

namespace {
std::string parse_error(const std::string& text, const std::vector<std::string>& overrides = {}) {
  return error_of([&] { parse_config(text, "test.toml", overrides); });
}
}  // namespace

TEST_CASE("config: every file in configs/ loads and validates") {
  int n = 0;
  for (const auto& e : std::filesystem::directory_iterator(std::filesystem::path(RPB_SOURCE_DIR) / "configs")) {
    if (e.path().extension() != ".toml") continue;
    INFO("config: ", e.path().string());
    CHECK_NOTHROW(load_config(e.path().string()));
    ++n;
  }
  CHECK(n >= 3);
}

TEST_CASE("config: every algorithmic task has a config of its own, in its literature's framing") {
  const std::filesystem::path dir = std::filesystem::path(RPB_SOURCE_DIR) / "configs" / "algorithmic";
  std::set<std::string> tasks;
  for (const rpb::data::TaskInfo& t : rpb::data::tasks()) {
    if (!t.algorithmic) continue;
    tasks.insert(t.name);
    const std::filesystem::path file = dir / (std::string(t.name) + ".toml");
    INFO("config: ", file.string());
    REQUIRE(std::filesystem::exists(file));
    const RunConfig c = load_config(file.string());
    CHECK(c.task.kind == t.name);
    CHECK(c.name == t.name);
    CHECK(c.model.causal == (t.algorithmic->literature == rpb::data::Framing::decoder));
  }
  // No config for a task that is not registered, or not algorithmic.
  for (const auto& e : std::filesystem::directory_iterator(dir)) {
    INFO("file: ", e.path().string());
    CHECK(tasks.count(e.path().stem().string()) == 1);
  }
  CHECK(tasks.size() == 12);
}

TEST_CASE("config: values land in the run, model, position, task and optim options") {
  const RunConfig c = parse_config(R"(
[run]
name = "x"
steps = 10
length = 32
eval_multipliers = [1, 2]
[model]
d_model = 64
heads = 8
gelu = "erf"
[position]
scheme = "alibi"
[task]
kind = "lag"
lag = 5
[optim]
kind = "adam"
lr = 3e-4
weight_decay = 0
[[optim.group]]
pattern = "*.bias"
weight_decay = 0.0
lr_scale = 2
[sweep]
methods = ["t5", "alibi"]
seeds = [1, 2, 3]
)",
                                   "test.toml");
  CHECK(c.name == "x");
  CHECK(c.steps == 10);
  CHECK(c.length == 32);
  CHECK(c.eval_multipliers == std::vector<int64_t>{1, 2});
  CHECK(c.model.d_model == 64);
  CHECK(c.model.heads == 8);
  CHECK(c.model.gelu == GeluApprox::erf);
  CHECK(c.model.position.scheme == "alibi");
  CHECK(c.task.kind == "lag");
  CHECK(c.task.lag == 5);
  CHECK(c.optim.kind == OptimizerKind::adam);
  CHECK_FALSE(c.optim.adam.decoupled);
  CHECK(c.optim.schedule.lr == doctest::Approx(3e-4));
  CHECK(c.optim.schedule.total_steps == 10);
  REQUIRE(c.optim.adam.groups.size() == 1);
  CHECK(c.optim.adam.groups[0].pattern == "*.bias");
  CHECK(c.optim.adam.groups[0].lr_scale == 2.0);
  REQUIRE(c.sweep.methods.size() == 2);
  CHECK(c.sweep.methods[0].name() == "t5");
  CHECK(c.sweep.methods[1].name() == "alibi");
  CHECK(c.sweep.seeds == std::vector<uint64_t>{1, 2, 3});
  // The stored text parses back to the same configuration.
  const RunConfig again = parse_config(c.text, "stored");
  CHECK(again.text == c.text);
  CHECK(again.model.d_model == 64);
}

TEST_CASE("config: errors name file:line, key, value and what was expected") {
  CHECK(parse_error("[model]\nd_modle = 64\n") == "test.toml:2:1: unknown key model.d_modle (did you mean model.d_model?)");
  CHECK(contains(parse_error("[modle]\n"), "unknown key modle (did you mean model?)"));
  CHECK(parse_error("[model]\nheads = \"4\"\n") ==
        "test.toml:2:9: model.heads = \"4\": expected an integer in [1, 1024], found a string");
  CHECK(contains(parse_error("[model]\nheads = 3\n"), "model.heads"));
  CHECK(contains(parse_error("[model]\nheads = 3\n"), "heads 3 must divide model.d_model 128"));
  CHECK(contains(parse_error("[optim]\nlr = 0\n"), "test.toml:2:6: optim.lr = 0: expected a value in (0, 1000]"));
  CHECK(contains(parse_error("[optim]\nlr = -1e-3\n"), "optim.lr = -0.001"));
  CHECK(contains(parse_error("[model]\ndropout = 1.0\n"), "model.dropout = 1.0: expected a value in [0, 1)"));
  CHECK(contains(parse_error("[run]\nsteps = 1.5\n"),
                 "run.steps = 1.5: expected an integer in [1, 1099511627776], found a float"));
  CHECK(contains(parse_error("[run]\nlength = 0\n"), "run.length = 0: expected an integer in [1, 65536]"));
  CHECK(contains(parse_error("[run]\neval_multipliers = [1, 0]\n"), "run.eval_multipliers = 0"));
  CHECK(contains(parse_error("[position]\nscheme = \"t6\"\n"), "expected one of"));
  CHECK(contains(parse_error("[position]\nscheme = \"t6\"\n"), "(did you mean \"t5\"?)"));
  // Scheme-specific checks are reported at [position] with the scheme's own message.
  CHECK(contains(parse_error("[model]\n[position]\nscheme = \"t5\"\nnum_buckets = 32\nmax_distance = 8\n"),
                 "max_distance"));
  CHECK(contains(parse_error("[position]\nscheme = \"learned\"\nmax_positions = 16\n[run]\nlength = 64\n"),
                 "position.max_positions = 16"));
  CHECK(contains(parse_error("[model\n"), "test.toml:1:"));
  CHECK(contains(parse_error("[model\n"), "TOML syntax error"));
  CHECK(contains(parse_error("model = 3\n"), "model = 3: expected a table [model], found an integer"));
  CHECK(contains(parse_error("[optim]\nwarmup_steps = 100\nschedule = \"cosine\"\n[run]\nsteps = 50\n"),
                 "optim.warmup_steps"));
  CHECK(contains(error_of([] { load_config("/nonexistent/x.toml"); }), "config /nonexistent/x.toml: no such file"));
}

TEST_CASE("config: --set overrides keys with TOML values") {
  const RunConfig c = parse_config("[model]\nd_model = 64\n", "test.toml",
                                   {"model.d_model=256", "position.scheme=\"rope\"", "run.eval_multipliers=[1,4]"});
  CHECK(c.model.d_model == 256);
  CHECK(c.model.position.scheme == "rope");
  CHECK(c.eval_multipliers == std::vector<int64_t>{1, 4});
  CHECK(contains(c.text, "d_model = 256"));
  CHECK(contains(parse_error("", {"model.d_model"}), "--set model.d_model: expected key=value"));
  // A bare word is a string; the schema still checks types.
  CHECK(parse_config("", "test.toml", {"position.scheme=rope"}).model.position.scheme == "rope");
  CHECK(contains(parse_error("", {"model.d_model=big"}), "model.d_model = \"big\": expected an integer"));
  CHECK(contains(parse_error("", {"model.d_model=[1,"}), "the value is not TOML"));
  CHECK(contains(parse_error("", {"model.nope=1"}), "unknown key model.nope"));
  CHECK(parse_error("", {"model.heads=0"}) == "--set model.heads=0: model.heads = 0: expected an integer in [1, 1024]");
  CHECK(contains(parse_error("", {"model.nope=1"}), "--set model.nope=1: unknown key model.nope"));
}

TEST_CASE("config: edit distance") {
  CHECK(edit_distance("kitten", "sitting") == 3);
  CHECK(edit_distance("", "abc") == 3);
  CHECK(edit_distance("same", "same") == 0);
}
