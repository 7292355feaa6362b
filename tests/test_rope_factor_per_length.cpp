// position.rope_factor_per_length (nn/position/rope.cpp): RoPE scaling with the factor of each forward over T
// positions s = max(1, T / L0), YaRN's "Dynamic Scaling", beside the one fixed factor: unscaled at the train length,
// the fixed factor L / L0's rotation at length L, ntk per length as dynamic NTK at factor 1, its refusals, its sweep
// label and its eval record; an algorithmic task's L0 in tokens.
#include <doctest/doctest.h>

#include <cmath>

#include "core/core.h"
#include "nn/position.h"
#include "test_util.h"
#include "train/config/config.h"
#include "train/data/task_registry.h"
#include "train/run/eval_record.h"

namespace rope_per_length_test {

using namespace rpb;
using namespace rpb::nn;
using rpb::testing::contains;
using rpb::testing::error_of;

constexpr int64_t kPerLengthL0 = 16, kPerLengthHeadDim = 8;

PositionOptions per_length_options(RopeScaling scaling, bool per_length, double factor = 0) {
  PositionOptions o;
  o.scheme = "rope";
  o.head_dim = kPerLengthHeadDim;
  o.rope_scaling = scaling;
  o.rope_factor = factor;
  o.rope_factor_per_length = per_length;
  o.train_length = kPerLengthL0;
  o.max_eval_multiplier = 8;
  return o;
}

// The rotation the scheme of `o`, in evaluation mode, applies to `x` (B, heads, T, head_dim) from position 0.
std::vector<double> per_length_rotation(const PositionOptions& o, const Tensor& x) {
  Generator gen(1);
  const std::shared_ptr<PositionScheme> s = make_position_scheme(o, gen);
  s->eval();
  return s->rotate(x, 0).to_vector();
}

Tensor per_length_queries(int64_t t) {
  Generator gen(7);
  return randn({2, 2, t, kPerLengthHeadDim}, gen);
}

}  // namespace rope_per_length_test

using namespace rope_per_length_test;

TEST_CASE("rope_factor_per_length: unscaled up to L0, and at length L the rotation of the fixed factor L / L0") {
  for (const RopeScaling scaling : {RopeScaling::linear, RopeScaling::ntk, RopeScaling::yarn}) {
    CAPTURE(rope_scaling_name(scaling));
    // At the train length and below: the frequencies as trained, to the bit (yarn's attention factor 1 at s = 1).
    for (const int64_t t : {int64_t{5}, kPerLengthL0}) {
      CAPTURE(t);
      CHECK(per_length_rotation(per_length_options(scaling, true), per_length_queries(t)) ==
            per_length_rotation(per_length_options(RopeScaling::none, false), per_length_queries(t)));
    }
    // At 2 L0 and 5 L0: the fixed factors 2 and 5, to the bit; not the fixed factor of the longest length, 8.
    for (const int64_t m : {int64_t{2}, int64_t{5}}) {
      CAPTURE(m);
      const Tensor x = per_length_queries(m * kPerLengthL0);
      const std::vector<double> per_length = per_length_rotation(per_length_options(scaling, true), x);
      CHECK(per_length == per_length_rotation(per_length_options(scaling, false, static_cast<double>(m)), x));
      CHECK(per_length != per_length_rotation(per_length_options(scaling, false), x));
    }
    // Between multiples the factor is the ratio itself: 40 positions read s = 2.5.
    CHECK(per_length_rotation(per_length_options(scaling, true), per_length_queries(40)) ==
          per_length_rotation(per_length_options(scaling, false, 2.5), per_length_queries(40)));
  }
}

TEST_CASE("rope_factor_per_length: ntk per length is dynamic NTK at factor 1, up to the rounding of T / L0") {
  for (const int64_t t : {int64_t{24}, int64_t{64}, int64_t{100}}) {
    CAPTURE(t);
    const Tensor x = per_length_queries(t);
    const std::vector<double> ntk = per_length_rotation(per_length_options(RopeScaling::ntk, true), x);
    const std::vector<double> dynamic = per_length_rotation(per_length_options(RopeScaling::dynamic, false, 1.0), x);
    REQUIRE(ntk.size() == dynamic.size());
    double worst = 0;
    for (std::size_t i = 0; i < ntk.size(); ++i) worst = std::max(worst, std::abs(ntk[i] - dynamic[i]));
    CHECK(worst < 1e-4);
    CHECK(ntk != per_length_rotation(per_length_options(RopeScaling::none, false), x));  // scaled past L0
  }
}

TEST_CASE("rope_factor_per_length: refused without a scaling to set, with dynamic, beside a factor, in a fine-tune") {
  const auto refusal = [](PositionOptions o) { return error_of([&] { validate(o); }); };
  CHECK(contains(refusal(per_length_options(RopeScaling::none, true)), "rope_scaling is \"none\""));
  CHECK(contains(refusal(per_length_options(RopeScaling::dynamic, true)), "already sets its base per length"));
  CHECK(contains(refusal(per_length_options(RopeScaling::yarn, true, 4)), "rope_factor is 4"));
  PositionOptions fine_tune = per_length_options(RopeScaling::yarn, true);
  fine_tune.rope_scaling_trained = true;
  CHECK(contains(refusal(fine_tune), "fine-tune"));
  PositionOptions no_length = per_length_options(RopeScaling::linear, true);
  no_length.train_length = 0;
  CHECK(contains(refusal(no_length), "original length L0"));
  // Another scheme refuses the key. An algorithmic task's L0 is its training sample's tokens, not run.length.
  CHECK(contains(error_of([] {
                   parse_config("[position]\nscheme = \"t5\"\nrope_factor_per_length = true\n", "t5.toml");
                 }),
                 "rope scheme only"));
  const std::string reverse = "[run]\nlength = 8\n[model]\ncausal = false\n[position]\nscheme = \"rope\"\n"
                              "rope_scaling = \"ntk\"\nrope_factor_per_length = true\n"
                              "[task]\nkind = \"reverse_string\"\n";
  const RunConfig encoder = parse_config(reverse, "reverse.toml");
  CHECK(encoder.model.position.train_length == 16);  // 8 symbols and 8 blanks
  CHECK(encoder.model.position.train_length == data::sequence_tokens("reverse_string", 8, false));
  CHECK(parse_config(reverse, "r.toml", {"model.causal=true"}).model.position.train_length ==
        data::sequence_tokens("reverse_string", 8, true));
  // On a language-model task it is an evaluation setting: the run's identity is rope's.
  const RunConfig markov = parse_config(
      "[run]\nlength = 16\n[position]\nscheme = \"rope\"\nrope_scaling = \"yarn\"\nrope_factor_per_length = true\n",
      "rope.toml");
  CHECK(markov.model.position.rope_factor_per_length);
  CHECK(contains(markov.text, "rope_factor_per_length = true"));
}

TEST_CASE("rope_factor_per_length: the sweep label says s = L / L0, the eval record keeps it and reads it back") {
  const RunConfig sweep = parse_config(
      "[run]\nlength = 16\neval_multipliers = [1, 8]\n[position]\nscheme = \"rope\"\n[sweep]\nmethods = "
      "[\"rope@rope_scaling=ntk@rope_factor_per_length=true\", \"rope@rope_scaling=ntk\"]\n",
      "sweep.toml");
  REQUIRE(sweep.sweep.methods.size() == 2);
  CHECK(sweep.sweep.methods[0].label(8) == "RoPE + NTK (s = L / L0)");
  CHECK(sweep.sweep.methods[1].label(8) == "RoPE + NTK (s = 8)");

  EvalRecord r;
  r.checkpoint = "step_00000010.h5";
  r.scheme = "rope";
  r.lengths = {{64, 1, 1.5, 128, {}}};
  r.rope_scaling = "ntk";
  r.rope_factor = 8;
  CHECK(!contains(eval_record_json(r), "per_length"));  // absent when false
  r.rope_factor_per_length = true;
  r.options.position = {position_setting("rope_scaling", RopeScaling::ntk),
                        position_setting("rope_factor_per_length", true)};
  CHECK(eval_record_name(r) == "step_00000010-128-rope_ntk-per_length.json");
  const EvalRecord back = eval_record_from_json(eval_record_object(r), "r", "x.json");
  CHECK(back.rope_factor_per_length);
  CHECK(back.options == r.options);
  Json j = eval_record_object(r);
  j["rope_factor_per_length"] = false;
  CHECK(contains(error_of([&] { eval_record_from_json(j, "r", "x.json"); }), "expected true"));
}
