// Configs stay typed after the boundary (issue 25): sweep methods hold typed settings parsed when the config is
// read, derive_config re-validates typed settings through the readers, and a key added to the identity later
// leaves the digest of a run that does not set it as it was.
#include <doctest/doctest.h>

#include <algorithm>

#include "test_util.h"
#include "train/config/run_identity.h"

namespace config_typed_test {

using namespace rpb;
using rpb::testing::contains;
using rpb::testing::error_of;

// `text` without its line `line` (with its newline); `line` must be there.
std::string without_line(const std::string& text, const std::string& line) {
  const auto at = text.find(line + "\n");
  REQUIRE(at != std::string::npos);
  return text.substr(0, at) + text.substr(at + line.size() + 1);
}

TEST_CASE("config typed: sweep methods hold typed settings, parsed when the config is read") {
  const RunConfig c = parse_config(
      "[sweep]\nmethods = [\"t5@max_distance=64@untrained=nearest\", \"sinusoidal@optim.lr=1e-3\", "
      "\"learned@run.eval_multipliers=[1, 2]\", \"rope@model.tie_head=false\"]\n",
      "s.toml");
  REQUIRE(c.sweep.methods.size() == 4);
  const SweepMethod& t5 = c.sweep.methods[0];
  CHECK(t5.scheme == "t5");
  REQUIRE(t5.settings.size() == 2);
  CHECK(t5.settings[0].key == "position.max_distance");
  CHECK(std::get<int64_t>(t5.settings[0].value.value) == 64);
  CHECK(t5.settings[1].key == "position.untrained");
  CHECK(std::get<std::string>(t5.settings[1].value.value) == "nearest");
  CHECK(t5.segments() == std::vector<std::string>{"t5", "max_distance=64", "untrained=nearest"});  // one per setting
  const ConfigSetting& lr = c.sweep.methods[1].settings.at(0);
  CHECK(lr.key == "optim.lr");
  CHECK(std::get<double>(lr.value.value) == 1e-3);
  CHECK(lr.text == "1e-3");
  // A label shows a value as the method writes it.
  CHECK(c.sweep.methods[1].label() == "Sinusoidal, optim.lr 1e-3");
  const auto& lengths = std::get<std::vector<SettingValue>>(c.sweep.methods[2].settings.at(0).value.value);
  REQUIRE(lengths.size() == 2);
  CHECK(std::get<int64_t>(lengths[1].value) == 2);
  CHECK(std::get<bool>(c.sweep.methods[3].settings.at(0).value.value) == false);

  // A value that is not TOML, or not a value a key takes, is refused with the config, not when the sweep runs.
  CHECK(contains(error_of([] { parse_config("[sweep]\nmethods = [\"t5@max_distance=[1\"]\n", "s.toml"); }),
                 "sweep method \"t5@max_distance=[1\": the value is not TOML"));
  CHECK(contains(error_of([] { parse_config("[sweep]\nmethods = [\"t5@max_distance={a=1}\"]\n", "s.toml"); }),
                 "sweep method \"t5@max_distance={a=1}\": expected a boolean, a number, a string or an array of "
                 "them, found a table"));
}

TEST_CASE("config typed: derive_config sets typed values and checks them as a file's") {
  const RunConfig base = parse_config("[optim]\nlr = 0.001\n", "base.toml");
  const RunConfig derived = derive_config(base, {{"optim.lr", {0.01}, "0.01"}, {"model.layers", {int64_t{3}}, "3"}},
                                          "the test");
  CHECK(derived.text == parse_config("[optim]\nlr = 0.001\n", "base.toml", {"optim.lr=0.01", "model.layers=3"}).text);
  CHECK(derived.optim.schedule.lr == 0.01);
  CHECK(derived.model.layers == 3);
  CHECK(derived.source == "base.toml");
  CHECK(base.optim.schedule.lr == 0.001);  // the base is left as it was
  CHECK(contains(error_of([&] { derive_config(base, {{"run.steps", {int64_t{0}}, "0"}}, "the test"); }),
                 "the test: run.steps = 0: expected an integer in [1, "));
  CHECK(contains(error_of([&] { derive_config(base, {{"run.steps", {std::string("ten")}, "ten"}}, "the test"); }),
                 "the test: run.steps = \"ten\": expected an integer"));
  // A typed config is enough: one built in code derives as the file of its values would (its weight decay is
  // optim::AdamOptions' 0, where a config's AdamW defaults to 0.01).
  CHECK(derive_config(RunConfig{}, {}, "the test").text == parse_config("[optim]\nweight_decay = 0.0\n", "e").text);
  // A check across keys runs on the derived config: a cosine's warm-up of run.steps or more is refused.
  const std::string warmup = error_of([&] {
    derive_config(base, {{"optim.schedule", {std::string("cosine")}, "cosine"}, {"optim.warmup_steps", {int64_t{1000}}, "1000"}},
                  "the test");
  });
  CHECK(contains(warmup, "the test: optim.warmup_steps = 1000: expected fewer warm-up steps than run.steps = 1000"));
  // Derived configs read their settings alone, never the base's document again.
  const ConfigReads before = config_reads();
  derive_config(base, {{"model.layers", {int64_t{3}}, "3"}}, "the test");
  CHECK(config_reads().documents == before.documents);
  CHECK(config_reads().texts == before.texts);
  CHECK(config_reads().derived == before.derived + 1);
  // The settings of one run cannot set the sweep's own keys.
  CHECK(contains(error_of([&] { derive_config(base, {{"sweep.seeds", {std::vector<SettingValue>{{int64_t{1}}}}, "[1]"}},
                                              "the test"); }),
                 "sweep.seeds"));
}

TEST_CASE("config typed: a key added to the identity later changes no digest of a run that does not set it") {
  // As if position.rope_base had come after the identity froze, with 10000 as the value every earlier run used.
  const std::vector<AddedKey> added = {{"position.rope_base", "10000.0"}};
  const RunConfig plain = parse_config("", "plain.toml");
  const std::string frozen = without_line(identity_text(plain), "rope_base = 10000.0");
  CHECK(identity_text(plain, added) == frozen);
  CHECK(identity_text(parse_config("[position]\nrope_base = 10000\n", "default.toml"), added) == frozen);
  const std::string set = identity_text(parse_config("[position]\nrope_base = 500\n", "set.toml"), added);
  CHECK(set != frozen);
  CHECK(contains(set, "rope_base = 500.0\n"));
  // A misspelt key would never count (identity_text passes over a key the config lacks), so the keys added are keys
  // of the effective config.
  CHECK(identity_text(plain, {{"position.rope_bsae", "10000.0"}}) == identity_text(plain, {}));
  const std::vector<std::string> keys = accepted_keys("", "empty");
  for (const AddedKey& k : added) {
    CAPTURE(k.key);
    CHECK(std::find(keys.begin(), keys.end(), std::string(k.key)) != keys.end());
  }
}

}  // namespace config_typed_test
