// The position options' descriptors (nn/position/options.h): consistent with the registry and the limits, complete
// about which schemes read each option, and what the config reader reads.
#include <doctest/doctest.h>

#include <algorithm>
#include <set>
#include <variant>

#include "nn/position.h"
#include "nn/position/options.h"
#include "train/config/config.h"
#include "test_util.h"

using namespace rpb;
using namespace rpb::nn;

namespace position_options_test {

// Everything a scheme built from `o` holds and computes on a few positions: its parameters and buffers, and
// what its kind adds (an embedding, a bias, rotated keys, table rows).
std::vector<double> fingerprint(const PositionOptions& o) {
  Generator gen(5);
  const auto scheme = make_position_scheme(o, gen);
  std::vector<double> out;
  const auto add = [&](const Tensor& t) {
    if (!t.defined()) return;
    const auto v = t.to_vector();
    out.insert(out.end(), v.begin(), v.end());
  };
  for (const auto& [name, t] : scheme->named_parameters()) add(t);
  for (const auto& [name, t] : scheme->named_buffers()) add(t);
  const Positions p = o.dims == 2 ? Positions::grid(2, 3) : Positions::line(3, 5, 2);
  add(scheme->index(p));
  switch (scheme->kind()) {
    case PositionKind::absolute: add(scheme->embed(p)); break;
    case PositionKind::additive_bias: add(scheme->bias(p)); break;
    case PositionKind::rotary: {
      std::vector<double> x(2 * 4 * 4);
      for (std::size_t i = 0; i < x.size(); ++i) x[i] = 0.1 * static_cast<double>(i % 7) - 0.3;
      add(scheme->rotate(Tensor::from_vector<double>({1, 2, 4, 4}, x), 1));
      break;
    }
    default: break;
  }
  return out;
}

// `o` with the option `d` set to another value it accepts.
PositionOptions changed(PositionOptions o, const PositionOptionInfo& d) {
  std::visit(
      [&](auto member) {
        auto& v = o.*member;
        using T = std::remove_reference_t<decltype(v)>;
        if constexpr (std::is_same_v<T, int64_t>) v = v < d.range.hi ? v + 1 : v - 1;
        else if constexpr (std::is_same_v<T, double>) v = v * 1.5;
        else if constexpr (std::is_same_v<T, bool>) v = !v;
        else if constexpr (std::is_same_v<T, Untrained>)
          v = v == Untrained::keep ? Untrained::nearest : Untrained::keep;
        else v = v == RopeScaling::none ? RopeScaling::linear : RopeScaling::none;
      },
      d.member);
  return o;
}

}  // namespace position_options_test

TEST_CASE("position option descriptors: unique keys, registered readers, defaults inside their limits") {
  std::set<std::string> keys;
  const PositionOptions defaults;
  for (const PositionOptionInfo& d : position_option_table()) {
    INFO("option ", d.key);
    CHECK(keys.insert(d.key).second);
    CHECK(find_position_option(d.key) == &d);
    CHECK((std::string(d.table) == "position" || std::string(d.table) == "grid"));
    CHECK(std::any_of(schemes().begin(), schemes().end(), [&](const SchemeInfo& s) { return d.read_by(s); }));
    if (const auto* m = std::get_if<int64_t PositionOptions::*>(&d.member)) CHECK(d.range.contains(defaults.**m));
    if (const auto* m = std::get_if<double PositionOptions::*>(&d.member)) {
      CHECK(defaults.**m <= d.real.hi);
      CHECK((d.real.lo_open ? defaults.**m > d.real.lo : defaults.**m >= d.real.lo));
    }
    // `rpb bias` takes numbers (cli/bias.cpp add_bias_command), for the 1-D schemes it prints.
    if (d.bias_flag) {
      CHECK(!std::holds_alternative<Untrained PositionOptions::*>(d.member));
      CHECK((std::holds_alternative<int64_t PositionOptions::*>(d.member) ||
             std::holds_alternative<double PositionOptions::*>(d.member)));
      CHECK(std::any_of(schemes().begin(), schemes().end(),
                        [&](const SchemeInfo& s) { return d.read_by(s) && s.dims != 2; }));
    }
  }
  // The option that bounds a scheme's length is one of its options.
  for (const SchemeInfo& s : schemes()) {
    if (!s.length_option) continue;
    INFO("scheme ", s.name);
    const PositionOptionInfo* d = find_position_option(s.length_option);
    REQUIRE(d != nullptr);
    CHECK(d->read_by(s));
  }
  CHECK(find_position_option("max_side")->table == std::string("grid"));
  CHECK(accepted_values(*find_position_option("rope_base")) == "(1, 1e+12]");
  CHECK(accepted_values(*find_position_option("untrained")) == "\"keep\" or \"nearest\"");
}

TEST_CASE("position option descriptors: a scheme its read_by leaves out is unaffected by the option, or refuses it") {
  using position_options_test::changed;
  using position_options_test::fingerprint;
  for (const SchemeInfo& s : schemes()) {
    if (!s.make) continue;  // the window schemes: the window attention reads [grid]'s window options
    PositionOptions o;
    o.scheme = s.name;
    o.dims = s.dims == 0 ? 1 : s.dims;
    o.heads = 2;
    o.d_model = 8;
    o.head_dim = 4;
    o.train_length = 4;  // fire's L0
    o.dtype = DType::f64;
    const std::vector<double> base = fingerprint(o);
    for (const PositionOptionInfo& d : position_option_table()) {
      if (d.read_by(s)) continue;
      INFO("scheme ", s.name, ", option ", d.key);
      const PositionOptions other = changed(o, d);
      try {
        validate(other);
      } catch (const OptionError& e) {
        CHECK(e.field() == d.key);  // refused, naming it (position.untrained for a scheme without table rows)
        continue;
      }
      CHECK(fingerprint(other) == base);
    }
  }
}

TEST_CASE("the config reads every position option from its table") {
  const std::vector<std::string> line = accepted_keys("[position]\nscheme = \"alibi\"\n", "test.toml");
  const std::vector<std::string> grid = accepted_keys("[run]\nlength = 4\n[task]\nkind = \"grid2d\"\n", "test.toml");
  for (const PositionOptionInfo& d : position_option_table()) {
    INFO("option ", d.key);
    std::string key = d.table;
    key += '.';
    key += d.key;
    const auto& keys = std::string(d.table) == "grid" ? grid : line;
    CHECK(std::find(keys.begin(), keys.end(), key) != keys.end());
  }
}

TEST_CASE("position option values: every option's default reads back from its text, bounds and types refused") {
  const PositionOptions defaults;
  for (const PositionOptionInfo& d : position_option_table()) {
    INFO("option ", d.key);
    const PositionValue v = option_value(d, defaults);
    CHECK(v.index() == d.member.index());
    const std::optional<PositionValue> back = parse_option_value(d, value_text(v));
    // init_std's and rope_base's defaults lie inside their open ranges; every default is a value the option accepts.
    REQUIRE(back.has_value());
    CHECK(*back == v);
    PositionOptions set;
    position_setting(d.key, v).apply(set);
    CHECK(option_value_text(d, set) == option_value_text(d, defaults));
    CHECK(!parse_option_value(d, "").has_value());
    CHECK(!parse_option_value(d, value_text(v) + "x").has_value());
  }
  const PositionOptionInfo& factor = *find_position_option("rope_factor");
  CHECK(parse_option_value(factor, "2.5") == std::optional<PositionValue>(2.5));
  CHECK(!parse_option_value(factor, "1e7").has_value());  // above nn/limits.h's 1e6
  CHECK(!parse_option_value(factor, "-1").has_value());
  CHECK(!parse_option_value(*find_position_option("num_buckets"), "1").has_value());  // [2, 65536]
  CHECK(!parse_option_value(*find_position_option("num_buckets"), "32.5").has_value());
  CHECK(!parse_option_value(*find_position_option("rope_base"), "1").has_value());  // (1, 1e12]
  CHECK(!parse_option_value(*find_position_option("blockwise"), "1").has_value());
  CHECK(parse_option_value(*find_position_option("rope_scaling"), "yarn") ==
        std::optional<PositionValue>(RopeScaling::yarn));
  CHECK(!parse_option_value(*find_position_option("untrained"), "closest").has_value());
  CHECK(testing::contains(testing::error_of([] { position_setting("rope_factor", int64_t{8}); }), "rope_factor"));
  CHECK(testing::contains(testing::error_of([] { position_setting("no_such_key", true); }), "no_such_key"));
  CHECK(position_setting("rope_factor", 8.0).flag_text() == "--rope-factor 8");
  CHECK(position_setting("blockwise", true).flag_text() == "--blockwise");
}

TEST_CASE("rpb eval's position flags: the evaluation settings of the option table, each named apart in records") {
  std::set<std::string> names;
  for (const PositionOptionInfo* d : eval_options()) {
    INFO("option ", d->key);
    // An identity option changes what a run trains: evaluating a checkpoint with another value is another model.
    CHECK(d->role != OptionRole::identity);
    CHECK(names.insert(d->eval_name).second);
    // An evaluation setting read by some scheme; those that refuse it say why (refused_elsewhere), or read it.
    CHECK(!schemes_reading(*d).empty());
  }
  std::vector<std::string> keys;
  for (const PositionOptionInfo* d : eval_options()) keys.emplace_back(d->key);
  CHECK(keys == std::vector<std::string>{"blockwise", "contiguous_eval", "untrained", "rope_scaling", "rope_factor",
                                         "rope_factor_per_length"});
}
