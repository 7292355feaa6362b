// The position-scheme registry (nn/position/scheme.h): every registered scheme has a golden case and a float64
// gradient-check case that pass, the rows read consistently, and what reads the registry (names, lengths,
// per-layer tables, parameter counts) follows it.
#include <doctest/doctest.h>

#include <algorithm>
#include <map>
#include <set>

#include "nn/grid_model.h"
#include "nn/position.h"
#include "nn/transformer.h"
#include "scheme_cases.h"
#include "tensor_checks.h"
#include "test_util.h"

using namespace rpb;
using namespace rpb::nn;
using rpb::testing::contains;
using rpb::testing::error_of;

namespace {

std::vector<testing::SchemeCase> all_scheme_cases() {
  std::vector<testing::SchemeCase> all = testing::position_1d_scheme_cases();
  for (auto* more : {&testing::position_2d_scheme_cases, &testing::window_scheme_cases})
    for (testing::SchemeCase& c : more()) all.push_back(std::move(c));
  return all;
}

}  // namespace

TEST_CASE("every registered scheme has a golden case and a gradient-check case, and both pass") {
  const std::vector<testing::SchemeCase> cases = all_scheme_cases();
  std::set<std::string> registered;
  for (const SchemeInfo& s : schemes()) {
    registered.insert(s.name);
    INFO("scheme: ", s.name);
    const auto it = std::find_if(cases.begin(), cases.end(), [&](const auto& c) { return c.scheme == s.name; });
    REQUIRE_MESSAGE(it != cases.end(), "no golden or gradient-check case for the registered scheme ", std::string(s.name),
                    " (add it to tests/scheme_cases.h's lists)");
    REQUIRE(it->golden);
    REQUIRE(it->gradcheck);
    it->golden();
    testing::check_gradients(it->gradcheck());
  }
  // And no case for a scheme that is not registered (a renamed or removed one).
  for (const testing::SchemeCase& c : cases) CHECK_MESSAGE(registered.count(c.scheme) == 1, c.scheme);
  CHECK(cases.size() == registered.size());
}

TEST_CASE("registry rows: unique names per dims, builders for every scheme but the window ones") {
  std::set<std::pair<std::string, int64_t>> seen;
  for (const SchemeInfo& s : schemes()) {
    INFO("scheme: ", s.name);
    CHECK(seen.insert({s.name, s.dims}).second);
    CHECK((s.dims == 0 || s.dims == 1 || s.dims == 2));
    CHECK(s.label != nullptr);
    CHECK(static_cast<bool>(s.validate));
    CHECK(!s.make == (s.kind == PositionKind::window));
    CHECK((s.window_bias != WindowBias::none) == (s.kind == PositionKind::window));
    CHECK((s.length_option != nullptr) == (s.max_length(PositionOptions{}) > 0));
  }
  CHECK(scheme_names(1) ==
        std::vector<std::string>{"learned", "sinusoidal", "rope", "t5", "shaw", "log_decay", "alibi", "xpos", "fire", "none"});
  CHECK(find_scheme("none", 1) == find_scheme("none", 2));
  CHECK(find_scheme("swin", 1) == nullptr);
  CHECK(find_scheme("t5", 2) == nullptr);
}

TEST_CASE("a built scheme answers to its row: kind, name and whether it learns") {
  for (const SchemeInfo& s : schemes()) {
    if (!s.make) continue;
    for (const int64_t dims : {int64_t{1}, int64_t{2}}) {
      if (s.dims != 0 && s.dims != dims) continue;
      INFO("scheme: ", s.name, ", dims ", dims);
      PositionOptions o;
      o.scheme = s.name;
      o.dims = dims;
      o.heads = 2;
      o.train_length = 16;  // fire's L0
      o.d_model = 8;
      o.head_dim = 4;
      o.max_positions = 8;
      o.max_side = 3;
      o.max_relative_position = 2;
      for (const bool learnable : {false, true}) {
        o.learnable_lambda = learnable;
        Generator gen(0);
        const auto scheme = make_position_scheme(o, gen);
        CHECK(&scheme->info() == &s);
        CHECK(scheme->name() == s.name);
        CHECK(scheme->kind() == s.kind);
        CHECK(scheme->learned() == s.learned(o));
        CHECK(scheme->parameter_count() == s.parameters(o));
      }
    }
  }
}

TEST_CASE("option errors carry the field: config keys and command-line flags are found without reading text") {
  PositionOptions o;
  o.scheme = "t5";
  o.causal = false;
  o.num_buckets = 6;
  o.max_distance = 1;
  try {
    validate(o);
    FAIL("no error");
  } catch (const OptionError& e) {
    CHECK(e.field() == "max_distance");
    CHECK(e.detail() == "max_distance 1 must be above max_exact 1 (num_buckets/4)");
    CHECK(contains(e.what(), "t5: max_distance 1 must be above"));
  }
  o.scheme = "t6";
  try {
    validate(o);
    FAIL("no error");
  } catch (const OptionError& e) {
    CHECK(e.field() == "scheme");
  }
}

TEST_CASE("models read the registry: per-layer tables, the longest length and the position parameters") {
  TransformerOptions o;
  o.vocab = 7;
  o.d_model = 8;
  o.heads = 2;
  o.layers = 3;
  o.d_ff = 8;
  o.share_position = false;
  o.position.num_buckets = 8;
  o.position.max_distance = 16;
  o.position.max_positions = 12;
  o.position.train_length = 12;  // fire's L0
  for (const std::string& scheme : scheme_names(1)) {
    for (const bool learnable : {false, true}) {
      INFO("scheme: ", scheme, ", learnable lambda: ", learnable);
      o.position.scheme = scheme;
      o.position.learnable_lambda = learnable;
      Generator gen(1);
      const LanguageModel lm(o, gen);
      const PositionOptions po = position_options_for(o);
      const SchemeInfo& info = scheme_info(po);
      const bool per_layer = info.per_layer && info.learned(po);
      CHECK((lm.position() == nullptr) == per_layer);
      // learned: a (12, 8) table; t5 and shaw: (8, 2) and (33, 2) tables per layer; log_decay: 2 per layer; fire:
      // c, the multiplier, a (32, 1) layer with 32 biases and a (2, 32) one with 2 per layer.
      const std::map<std::string, int64_t> want{{"learned", 96}, {"t5", 3 * 16}, {"shaw", 3 * 66},
                                                {"log_decay", learnable ? 3 * 2 : 0},
                                                {"fire", 3 * (2 + 32 + 32 + 2 * 32 + 2)}};
      CHECK(position_parameter_count(lm) == (want.count(scheme) ? want.at(scheme) : 0));
      CHECK(lm.max_length() == (scheme == "learned" ? 12 : 0));
    }
  }
  // The 2-D window schemes' position parameters are the window attention's table or bias MLP.
  o.causal = false;
  o.position.scheme = "swin";
  WindowOptions w;
  w.window = 2;
  Generator gen(2);
  const GridModel swin(o, w, gen);
  CHECK(position_parameter_count(swin) == 3 * 9 * 2);  // 3 layers of a (3 x 3, heads) table
  CHECK(swin.max_side() == 0);
}

TEST_CASE("models count their parameters without being built, for every scheme, and refuse overflowing sizes") {
  TransformerOptions o;
  o.vocab = 11;
  o.d_model = 12;
  o.heads = 3;
  o.layers = 3;
  o.d_ff = 20;
  o.position.num_buckets = 8;
  o.position.max_distance = 16;
  o.position.max_positions = 12;
  o.position.max_side = 5;
  o.position.max_relative_position = 2;
  o.position.train_length = 12;  // fire's L0
  for (const std::string& scheme : scheme_names(1))
    for (const bool share : {false, true})
      for (const bool tie : {false, true})
        for (const bool learnable : {false, true}) {
          INFO("scheme: ", scheme, ", share ", share, ", tie ", tie, ", learnable ", learnable);
          o.position.scheme = scheme;
          o.share_position = share;
          o.tie_head = tie;
          o.position.learnable_lambda = learnable;
          Generator gen(3);
          CHECK(LanguageModel::parameter_count(o) == LanguageModel(o, gen).parameter_count());
        }
  o.causal = false;
  WindowOptions w;
  w.window = 3;
  w.cpb_hidden = 16;
  for (const std::string& scheme : scheme_names(2)) {
    INFO("scheme: ", scheme);
    o.position.scheme = scheme;
    Generator gen(4);
    CHECK(GridModel::parameter_count(o, w) == GridModel(o, w, gen).parameter_count());
  }
  o.causal = true;
  o.position.scheme = "learned";
  o.d_model = int64_t{1} << 32;
  o.heads = 1;
  o.position.max_positions = int64_t{1} << 32;
  CHECK(contains(error_of([&] { LanguageModel::parameter_count(o); }), "overflows"));
}
