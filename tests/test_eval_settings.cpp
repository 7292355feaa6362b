// `rpb eval`'s position flags, one per evaluation setting of the option table (nn/position/options.h eval_name):
// each changes the evaluation as its config key does, names the record apart and reads back from it; a scheme that
// does not read one refuses it naming the key.
#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "nn/position/options.h"
#include "test_util.h"
#include "train/io/json_text.h"
#include "train/run/eval_record.h"

namespace eval_settings_test {

namespace fs = std::filesystem;
using namespace rpb;
using rpb::testing::contains;
using rpb::testing::run_rpb;
using rpb::testing::TempDir;

// A markov run of `scheme` trained briefly in `dir`/<scheme> (length 16): its folder.
fs::path trained(const fs::path& dir, const std::string& scheme) {
  const fs::path cfg = dir / (scheme + ".toml");
  std::ofstream(cfg) << "[run]\nname = \"" << scheme << "\"\nout_dir = \"" << dir.string()
                     << "\"\nsteps = 10\nbatch = 4\nlength = 16\nlog_every = 10\neval_multipliers = [1, 2]\n"
                        "eval_tokens = 64\n[model]\nd_model = 16\nheads = 2\nlayers = 1\nd_ff = 32\n"
                        "[position]\nscheme = \""
                     << scheme << "\"\n[task]\nkind = \"markov\"\nvocab = 5\norder = 1\ntrain_tokens = 2048\n"
                                  "eval_tokens = 512\n";
  REQUIRE(run_rpb("train " + cfg.string()).code == 0);
  return dir / scheme;
}

// The record `rpb eval <run> <flags>` wrote, by the name the settings give it; its options as JSON.
EvalRecord evaluated(const fs::path& run, const std::string& flags, const std::string& name, Json& options) {
  const testing::CommandResult r = run_rpb("eval " + run.string() + " " + flags);
  INFO(r.out);
  REQUIRE(r.code == 0);
  const fs::path file = run / "eval" / name;
  REQUIRE(fs::exists(file));
  options = Json::parse(testing::file_text(file))["options"];
  return read_eval_record(file.string());
}

}  // namespace eval_settings_test

using namespace eval_settings_test;

TEST_CASE("eval position flags: rope scaling and xpos blockwise name their records, which read back the settings") {
  TempDir tmp("eval_settings");
  const fs::path rope = trained(tmp.path, "rope"), xpos = trained(tmp.path, "xpos");
  // Every option row with an eval_name is a flag of `rpb eval`.
  const std::string help = run_rpb("eval --help").out;
  for (const nn::PositionOptionInfo* o : nn::eval_options()) CHECK(contains(help, nn::option_flag_name(*o)));

  Json options;
  const EvalRecord yarn =
      evaluated(rope, "--rope-factor 4 --rope-scaling yarn", "step_00000010-64-rope_yarn-factor4.json", options);
  CHECK(yarn.options.position == std::vector<nn::PositionSetting>{nn::position_setting("rope_scaling", nn::RopeScaling::yarn),
                                                                  nn::position_setting("rope_factor", 4.0)});
  CHECK(options["rope_scaling"] == "yarn");
  CHECK(options["rope_factor"] == 4.0);
  CHECK(!options.contains("blockwise"));
  CHECK(options["untrained"].is_null());
  CHECK(yarn.rope_scaling == "yarn");  // the scaling evaluated, at the top of the record
  CHECK(yarn.rope_factor == 4.0);

  // Half of the rope pair asked: the other is written as null beside it.
  const EvalRecord dynamic = evaluated(rope, "--rope-scaling dynamic", "step_00000010-64-rope_dynamic.json", options);
  CHECK(dynamic.options.position == std::vector<nn::PositionSetting>{nn::position_setting("rope_scaling", nn::RopeScaling::dynamic)});
  CHECK(options.contains("rope_factor"));
  CHECK(options["rope_factor"].is_null());
  CHECK(dynamic.rope_factor == 2.0);  // 0: the largest evaluation multiplier

  const EvalRecord block = evaluated(xpos, "--blockwise --lengths 16,32", "step_00000010-64-L16_32-blockwise.json",
                                     options);
  CHECK(block.options.position == std::vector<nn::PositionSetting>{nn::position_setting("blockwise", true)});
  CHECK(options["blockwise"] == true);
  CHECK(!options.contains("rope_scaling"));
  CHECK(contains(run_rpb("eval " + xpos.string() + " --blockwise --no-record").out,
                 "with blockwise causal attention (blocks of 16)"));
}

TEST_CASE("eval position flags: a value the scheme refuses names the flag and the key, a malformed one is a usage error") {
  TempDir tmp("eval_settings_bad");
  const fs::path rope = trained(tmp.path, "rope");
  const testing::CommandResult block = run_rpb("eval " + rope.string() + " --blockwise");
  CHECK(block.code == 1);
  CHECK(contains(block.out, "eval --blockwise: position.blockwise: "));
  CHECK(contains(block.out, "has no blockwise evaluation"));
  const testing::CommandResult factor = run_rpb("eval " + rope.string() + " --rope-scaling yarn --rope-factor 0.5");
  CHECK(factor.code == 1);
  CHECK(contains(factor.out, "eval --rope-scaling yarn --rope-factor 0.5: position.rope_factor: "));
  const testing::CommandResult text = run_rpb("eval " + rope.string() + " --rope-factor 8x");
  CHECK(text.code == 2);
  CHECK(contains(text.out, "[0, 1e+06]"));
  CHECK(run_rpb("eval " + rope.string() + " --rope-scaling sideways").code == 2);
  CHECK(!fs::exists(rope / "eval" / "step_00000010-64-blockwise.json"));  // nothing recorded for a refusal
}
