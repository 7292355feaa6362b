// `rpb schemes`: the registry and the position options' descriptors as other languages read them.
#include <doctest/doctest.h>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <regex>
#include <set>
#include <stdexcept>
#include <string>
#include <variant>
#include <vector>

#include "nn/position.h"
#include "nn/position/options.h"
#include "test_util.h"

using rpb::testing::run_rpb;

namespace cli_schemes_test {

std::vector<std::string> strings(const nlohmann::json& array) {
  std::vector<std::string> out;
  for (const auto& v : array) out.push_back(v.get<std::string>());
  return out;
}

// The entry of `array` whose `field` is `name` (a scheme by "name", an option by "key").
const nlohmann::json& entry(const nlohmann::json& array, const char* field, const std::string& name) {
  for (const auto& v : array)
    if (v.at(field) == name) return v;
  throw std::runtime_error("no entry with " + std::string(field) + " " + name);
}

}  // namespace cli_schemes_test

TEST_CASE("rpb schemes --json lists every registered scheme with its row and its options") {
  using namespace rpb::nn;
  using cli_schemes_test::entry;
  using cli_schemes_test::strings;
  const auto r = run_rpb("schemes --json");
  REQUIRE(r.code == 0);
  const nlohmann::json j = nlohmann::json::parse(r.out);
  const auto& listed = j.at("schemes");
  REQUIRE(listed.size() == schemes().size());
  for (std::size_t i = 0; i < schemes().size(); ++i) {
    const SchemeInfo& s = schemes()[i];
    const auto& l = listed[i];
    INFO("scheme ", s.name);
    CHECK(l.at("name") == s.name);
    CHECK(l.at("dims") == (s.dims == 0 ? std::vector<int64_t>{1, 2} : std::vector<int64_t>{s.dims}));
    CHECK(l.at("kind") == kind_name(s.kind));
    CHECK(l.at("label") == s.label);
    CHECK(!l.contains("color"));  // presentation is the figures' (python/rpb_plot/theme.py SCHEME_STYLES)
    CHECK(l.at("per_layer") == s.per_layer);
    CHECK(l.at("row_table") == s.row_table);
    CHECK(l.at("embedding") == recipe_name(s.embedding));
    std::vector<std::string> keys;
    for (const PositionOptionInfo* o : options_of(s)) keys.emplace_back(o->key);
    CHECK(strings(l.at("options")) == keys);
  }
  CHECK(strings(entry(listed, "name", "t5").at("options")) ==
        std::vector<std::string>{"num_buckets", "max_distance", "randomized", "randomized_max", "contiguous_eval",
                                 "init_std", "untrained"});
  CHECK(strings(entry(listed, "name", "none").at("options")).empty());  // no positions to randomize

  const auto& options = j.at("options");
  REQUIRE(options.size() == position_option_table().size());
  const PositionOptions defaults;
  for (std::size_t i = 0; i < options.size(); ++i) {
    const PositionOptionInfo& o = position_option_table()[i];
    const auto& l = options[i];
    INFO("option ", o.key);
    CHECK(l.at("key") == o.key);
    CHECK(l.at("table") == o.table);
    CHECK(l.at("type") == option_type(o));
    CHECK(l.at("loaded") == o.loaded);
    CHECK(l.at("added") == o.added);
    CHECK(l.at("role") == option_role_name(o.role));
    if (const auto* m = std::get_if<int64_t PositionOptions::*>(&o.member)) {
      CHECK(l.at("default") == defaults.**m);
      CHECK(l.at("min") == o.range.lo);
      CHECK(l.at("max") == o.range.hi);
    }
  }
  const auto& buckets = entry(options, "key", "num_buckets");  // nn/limits.h's range, PositionOptions' default
  CHECK(buckets.at("default") == 32);
  CHECK(buckets.at("min") == 2);
  CHECK(buckets.at("max") == 65536);
  CHECK(buckets.at("bias_flag") == "--num-buckets");
  CHECK(strings(buckets.at("schemes")) == std::vector<std::string>{"t5"});
  const auto& rope_base = entry(options, "key", "rope_base");
  CHECK(rope_base.at("key") == "rope_base");
  CHECK(rope_base.at("min_open") == true);
  CHECK(rope_base.at("max") == 1e12);
  CHECK(entry(options, "key", "untrained").at("choices") == std::vector<std::string>{"keep", "nearest"});
}

TEST_CASE("rpb schemes prints every scheme and every option as text") {
  const auto r = run_rpb("schemes");
  REQUIRE(r.code == 0);
  for (const rpb::nn::SchemeInfo& s : rpb::nn::schemes())
    CHECK_MESSAGE(r.out.find(s.label) != std::string::npos, s.name);
  CHECK(r.out.find("  position.num_buckets = 32, an integer in [2, 65536], t5: number of buckets\n") !=
        std::string::npos);
  CHECK(r.out.find("  grid.max_side = 16, an integer in [1, 65536], learned2d:") != std::string::npos);
  CHECK(r.out.find("  position.untrained = \"keep\", \"keep\" or \"nearest\", t5, shaw, clipped2d:") !=
        std::string::npos);
}
