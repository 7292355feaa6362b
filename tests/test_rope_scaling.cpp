// RoPE scaling (nn/position/rope_scaling.h): the frequencies and attention factor of linear, ntk, dynamic and yarn
// against Hugging Face's functions (transcribed in tests/python/hf_rope_scaling_golden.py, whose printed numbers are
// pasted below: transformers modeling_rope_utils.py @ ef46806), "none" as rope always was, dynamic's total length,
// the config keys and the eval record's options.
#include <doctest/doctest.h>

#include <cmath>
#include <cstring>
#include <filesystem>

#include "core/core.h"
#include "nn/position.h"
#include "test_util.h"
#include "train/config/config.h"
#include "train/config/run_identity.h"
#include "train/run/eval_record.h"
#include "train/sweep/sweep.h"

namespace rope_scaling_test {

using namespace rpb;
using namespace rpb::nn;
using rpb::testing::contains;
using rpb::testing::error_of;

// head_dim 16, base 10000, L0 64: the script's configuration.
RopeScalingParams hf_config(RopeScaling kind, double factor) {
  RopeScalingParams p;
  p.kind = kind;
  p.head_dim = 16;
  p.base = 10000.0;
  p.factor = factor;
  p.original_length = 64;
  return p;
}

// Equal to the bit as float32.
void check_floats(const std::vector<double>& actual, const std::vector<float>& expected) {
  REQUIRE(actual.size() == expected.size());
  for (std::size_t i = 0; i < expected.size(); ++i) {
    CAPTURE(i);
    CHECK(static_cast<float>(actual[i]) == expected[i]);
    CHECK(actual[i] == static_cast<double>(static_cast<float>(actual[i])));
  }
}

PositionOptions rope_options(RopeScaling scaling, double factor, int64_t head_dim = 16) {
  PositionOptions o;
  o.scheme = "rope";
  o.head_dim = head_dim;
  o.rope_scaling = scaling;
  o.rope_factor = factor;
  o.train_length = 64;
  return o;
}

// cos (at k) and sin (at k + d/2) of the rotation the scheme applies at `position`: the unit vectors e_k rotated.
std::pair<std::vector<double>, std::vector<double>> cos_sin(const PositionScheme& s, int64_t d, int64_t position) {
  std::vector<float> x(static_cast<std::size_t>(d / 2 * d), 0.0f);
  for (int64_t k = 0; k < d / 2; ++k) x[static_cast<std::size_t>(k * d + k)] = 1.0f;
  const std::vector<double> out = s.rotate(Tensor::from_vector<float>({d / 2, 1, 1, d}, x), position).to_vector();
  std::vector<double> c, sn;
  for (int64_t k = 0; k < d / 2; ++k) {
    c.push_back(out[static_cast<std::size_t>(k * d + k)]);
    sn.push_back(out[static_cast<std::size_t>(k * d + k + d / 2)]);
  }
  return {c, sn};
}

// The scheme of `o`, in evaluation mode: where a run that is not a fine-tune reads its scaling.
std::shared_ptr<PositionScheme> evaluating(const PositionOptions& o) {
  Generator gen(1);
  std::shared_ptr<PositionScheme> s = make_position_scheme(o, gen);
  s->eval();
  return s;
}

}  // namespace rope_scaling_test

using namespace rope_scaling_test;

TEST_CASE("rope scaling: linear, ntk, dynamic and yarn frequencies equal Hugging Face's to the bit") {
  using S = RopeScaling;
  // linear factor 4.0: attention factor 1.0
  check_floats(rope_frequencies(hf_config(S::linear, 4), 0, true).inv_freq,
               {2.500000000e-01f, 7.905694097e-02f, 2.500000037e-02f, 7.905694656e-03f, 2.499999944e-03f,
                7.905694656e-04f, 2.500000119e-04f, 7.905694656e-05f});
  // linear factor 3.0 (a division that rounds)
  check_floats(rope_frequencies(hf_config(S::linear, 3), 0, true).inv_freq,
               {3.333333433e-01f, 1.054092571e-01f, 3.333333507e-02f, 1.054092590e-02f, 3.333333181e-03f,
                1.054092660e-03f, 3.333333589e-04f, 1.054092645e-04f});
  // ntk factor 4.0 and 3.0 (static NTK-aware: base * s^(d/(d-2)))
  check_floats(rope_frequencies(hf_config(S::ntk, 4), 0, true).inv_freq,
               {1.000000000e+00f, 2.594128251e-01f, 6.729500741e-02f, 1.745718904e-02f, 4.528618418e-03f,
                1.174781588e-03f, 3.047533974e-04f, 7.905694656e-05f});
  check_floats(rope_frequencies(hf_config(S::ntk, 3), 0, true).inv_freq,
               {1.000000000e+00f, 2.702961266e-01f, 7.305999845e-02f, 1.974783279e-02f, 5.337762646e-03f,
                1.442776644e-03f, 3.899769217e-04f, 1.054092572e-04f});
  // dynamic factor 4.0 at seq_len 64 (L0: unscaled), 100 and 256; factor 3.0 at 100 and 256
  const std::vector<float> unscaled = {1.000000000e+00f, 3.162277639e-01f, 1.000000015e-01f, 3.162277862e-02f,
                                       9.999999776e-03f, 3.162277862e-03f, 1.000000047e-03f, 3.162277862e-04f};
  check_floats(rope_frequencies(hf_config(S::dynamic, 4), 64, true).inv_freq, unscaled);
  check_floats(rope_frequencies(hf_config(S::dynamic, 4), 10, true).inv_freq, unscaled);
  check_floats(rope_frequencies(hf_config(S::dynamic, 4), 100, true).inv_freq,
               {1.000000000e+00f, 2.672230005e-01f, 7.140812278e-02f, 1.908189245e-02f, 5.099120084e-03f,
                1.362601994e-03f, 3.641185758e-04f, 9.730085003e-05f});
  check_floats(rope_frequencies(hf_config(S::dynamic, 4), 256, true).inv_freq,
               {1.000000000e+00f, 2.192124426e-01f, 4.805410281e-02f, 1.053405832e-02f, 2.309196629e-03f,
                5.062046694e-04f, 1.109663717e-04f, 2.432521251e-05f});
  check_floats(rope_frequencies(hf_config(S::dynamic, 3), 100, true).inv_freq,
               {1.000000000e+00f, 2.745772302e-01f, 7.539264858e-02f, 2.070110478e-02f, 5.684051663e-03f,
                1.560711069e-03f, 4.285357136e-04f, 1.176661463e-04f});
  check_floats(rope_frequencies(hf_config(S::dynamic, 3), 256, true).inv_freq,
               {1.000000000e+00f, 2.275846004e-01f, 5.179474875e-02f, 1.178768650e-02f, 2.682695864e-03f,
                6.105402135e-04f, 1.389495592e-04f, 3.162277790e-05f});
  // yarn factor 4.0: attention factor 1.138629436111989; factor 3.0: 1.109861228866811
  RopeFrequencies yarn = rope_frequencies(hf_config(S::yarn, 4), 0, true);
  check_floats(yarn.inv_freq, {1.000000000e+00f, 2.371708155e-01f, 4.999999702e-02f, 7.905694656e-03f,
                               2.499999944e-03f, 7.905694656e-04f, 2.500000119e-04f, 7.905694656e-05f});
  CHECK(yarn.attention_factor == 1.138629436111989);
  yarn = rope_frequencies(hf_config(S::yarn, 3), 0, true);
  check_floats(yarn.inv_freq, {1.000000000e+00f, 2.459549159e-01f, 5.555555597e-02f, 1.054092497e-02f,
                               3.333333414e-03f, 1.054092660e-03f, 3.333333298e-04f, 1.054092572e-04f});
  CHECK(yarn.attention_factor == 1.109861228866811);
  // yarn factor 4, beta_fast 8, beta_slow 2, attention_factor 1.5
  RopeScalingParams p = hf_config(S::yarn, 4);
  p.beta_fast = 8;
  p.beta_slow = 2;
  p.attention_factor = 1.5;
  yarn = rope_frequencies(p, 0, true);
  check_floats(yarn.inv_freq, {1.000000000e+00f, 1.976423562e-01f, 2.500000037e-02f, 7.905694656e-03f,
                               2.499999944e-03f, 7.905694656e-04f, 2.500000119e-04f, 7.905694656e-05f});
  CHECK(yarn.attention_factor == 1.5);
  // yarn factor 16, head_dim 32, L0 256: attention factor 1.2772588722239782
  p = hf_config(S::yarn, 16);
  p.head_dim = 32;
  p.original_length = 256;
  yarn = rope_frequencies(p, 0, true);
  check_floats(yarn.inv_freq,
               {1.000000000e+00f, 4.870277643e-01f, 2.315239161e-01f, 1.063792035e-01f, 4.642856866e-02f,
                1.857734472e-02f, 6.211617030e-03f, 1.111424644e-03f, 6.249999860e-04f, 3.514633281e-04f,
                1.976423664e-04f, 1.111424644e-04f, 6.250000297e-05f, 3.514633136e-05f, 1.976423664e-05f,
                1.111424626e-05f});
  CHECK(yarn.attention_factor == 1.2772588722239782);
}

TEST_CASE("rope scaling: the built scheme rotates with HF's cos and sin, yarn's times its attention factor") {
  const auto yarn = evaluating(rope_options(RopeScaling::yarn, 4));
  // yarn factor 4: HF's cos * attention_scaling and sin * attention_scaling at position 100 (float32).
  const std::vector<double> cos_hf = {9.818616509e-01, 1.759349108e-01, 3.229855895e-01, 8.009582758e-01,
                                      1.103232265e+00, 1.135073066e+00, 1.138273716e+00, 1.138593912e+00};
  const std::vector<double> sin_hf = {-5.765628219e-01, -1.124955058e+00, -1.091859579e+00, 8.092854023e-01,
                                      2.817014456e-01, 8.992282301e-02, 2.846277133e-02, 9.001563303e-03};
  const auto [c, s] = cos_sin(*yarn, 16, 100);
  for (std::size_t k = 0; k < 8; ++k) {
    CAPTURE(k);
    CHECK(c[k] == doctest::Approx(cos_hf[k]).epsilon(3e-7));  // torch's vectorised cos/sin may differ by an ulp
    CHECK(s[k] == doctest::Approx(sin_hf[k]).epsilon(3e-7));
  }
  // The static scalings keep their frequencies in the inv_freq buffer.
  const auto linear = make_position_scheme(rope_options(RopeScaling::linear, 4), *std::make_unique<Generator>(1));
  CHECK(linear->named_buffers()[0].second.to_vector()[1] == static_cast<double>(7.905694097e-02f));
}

TEST_CASE("rope scaling: training forwards read the unscaled frequencies, a fine-tune's (rope_scaling_trained) the "
          "scaled ones") {
  PositionOptions o = rope_options(RopeScaling::yarn, 4);
  Generator gen(1);
  const auto trained = make_position_scheme(o, gen);  // modules start in training mode
  const auto plain = make_position_scheme(rope_options(RopeScaling::none, 0), gen);
  const auto scaled = evaluating(o);
  CHECK(cos_sin(*trained, 16, 100) == cos_sin(*plain, 16, 100));
  CHECK(cos_sin(*trained, 16, 100) != cos_sin(*scaled, 16, 100));
  trained->eval();  // the same module, evaluating: the scaling
  CHECK(cos_sin(*trained, 16, 100) == cos_sin(*scaled, 16, 100));
  o.rope_scaling_trained = true;
  const auto fine_tune = make_position_scheme(o, gen);
  CHECK(cos_sin(*fine_tune, 16, 100) == cos_sin(*scaled, 16, 100));
}

TEST_CASE("rope scaling none is rope as it was: base^(-2k/d) in double rounded once, whatever the factor keys say") {
  PositionOptions plain = rope_options(RopeScaling::none, 0, 8);
  PositionOptions keys = plain;
  keys.rope_factor = 8;
  keys.yarn_beta_fast = 4;
  keys.yarn_attention_factor = 2;
  keys.max_eval_multiplier = 16;
  Generator gen(3);
  const auto a = make_position_scheme(plain, gen), b = make_position_scheme(keys, gen);
  const std::vector<double> f = a->named_buffers()[0].second.to_vector();
  for (int64_t i = 0; i < 4; ++i) CHECK(f[i] == static_cast<double>(static_cast<float>(std::pow(10000.0, -i / 4.0))));
  const Tensor x = randn({2, 3, 70, 8}, gen);
  const std::vector<double> ra = a->rotate(x, 5).to_vector(), rb = b->rotate(x, 5).to_vector();
  CHECK(std::memcmp(ra.data(), rb.data(), ra.size() * sizeof(double)) == 0);
}

TEST_CASE("rope scaling dynamic: each call's frequencies are those of its total length offset + T") {
  const auto s = evaluating(rope_options(RopeScaling::dynamic, 4));
  const std::vector<double> f100 = rope_frequencies(hf_config(RopeScaling::dynamic, 4), 100, true).inv_freq;
  const std::vector<double> f64 = rope_frequencies(hf_config(RopeScaling::dynamic, 4), 64, true).inv_freq;
  // One query at position 99 (a KV cache of 99): total 100, HF's seq_len = max(position_ids) + 1.
  const auto [c, sn] = cos_sin(*s, 16, 99);
  // At position 10 alone (total 11 <= L0): the unscaled frequencies.
  const auto [c0, s0] = cos_sin(*s, 16, 10);
  for (std::size_t k = 0; k < 8; ++k) {
    CAPTURE(k);
    const float angle = 99.0f * static_cast<float>(f100[k]), angle0 = 10.0f * static_cast<float>(f64[k]);
    CHECK(c[k] == static_cast<double>(std::cos(angle)));
    CHECK(sn[k] == static_cast<double>(std::sin(angle)));
    CHECK(c0[k] == static_cast<double>(std::cos(angle0)));
  }
  // The full forward of 100 positions rotates its last row as that single call does; of 120, differently.
  Generator gen(4);
  const Tensor x = randn({1, 1, 120, 16}, gen);
  const Tensor last = slice(x, 2, 99, 100);
  CHECK(slice(s->rotate(slice(x, 2, 0, 100), 0), 2, 99, 100).to_vector() == s->rotate(last, 99).to_vector());
  CHECK(slice(s->rotate(x, 0), 2, 99, 100).to_vector() != s->rotate(last, 99).to_vector());
}

TEST_CASE("rope scaling config keys: read for rope, refused for other schemes, out of the stored text and identity") {
  const std::string rope = "[run]\nlength = 16\neval_multipliers = [1, 4]\n[position]\nscheme = \"rope\"\n";
  const RunConfig plain = parse_config(rope, "rope.toml");
  CHECK(plain.model.position.rope_scaling == RopeScaling::none);
  CHECK(plain.model.position.max_eval_multiplier == 4);
  CHECK(plain.model.position.train_length == 16);
  CHECK(!contains(plain.text, "rope_scaling"));  // left at its default: the stored text is as before the key
  const RunConfig yarn = parse_config(rope, "rope.toml", {"position.rope_scaling=\"yarn\"", "position.rope_factor=8",
                                                          "position.yarn_beta_fast=16.0"});
  CHECK(yarn.model.position.rope_scaling == RopeScaling::yarn);
  CHECK(yarn.model.position.rope_factor == 8);
  CHECK(yarn.model.position.yarn_beta_fast == 16);
  CHECK(contains(yarn.text, "rope_scaling = 'yarn'"));
  CHECK(config_digest(yarn) == config_digest(plain));  // an evaluation setting: the rope run's identity
  CHECK(parse_config(yarn.text, "stored").text == yarn.text);
  // A rope run's method that sets only them evaluates the rope runs.
  const RunConfig sweep =
      parse_config(rope + "[sweep]\nmethods = [\"rope\", \"rope@rope_scaling=yarn@rope_factor=4\"]\n", "sweep.toml");
  REQUIRE(sweep.sweep.methods.size() == 2);
  CHECK(sweep.sweep.methods[1].settings[0].key == "position.rope_scaling");
  CHECK(config_digest(run_config(sweep, {"markov", sweep.sweep.methods[1], 0, "out", "seed0"})) ==
        config_digest(run_config(sweep, {"markov", sweep.sweep.methods[0], 0, "out", "seed0"})));
  // Other schemes refuse them, naming the key; rope refuses a factor below 1 and an unknown name.
  const std::string t5 = "[position]\nscheme = \"t5\"\n";
  CHECK(contains(error_of([&] { parse_config(t5, "t5.toml", {"position.rope_scaling=\"linear\""}); }),
                 "position.rope_scaling"));
  CHECK(contains(error_of([&] { parse_config(t5, "t5.toml", {"position.rope_factor=2"}); }), "rope scheme only"));
  CHECK(contains(
      error_of([&] { parse_config(rope, "r.toml", {"position.rope_scaling=\"ntk\"", "position.rope_factor=0.5"}); }),
      "at least 1"));
  CHECK(contains(error_of([&] { parse_config(rope, "r.toml", {"position.rope_scaling=\"pi\""}); }), "yarn"));
  // The factor's default needs an evaluation length; dynamic and yarn need L0.
  PositionOptions o = rope_options(RopeScaling::yarn, 0);
  CHECK(contains(error_of([&] { validate(o); }), "needs a factor"));
  o.max_eval_multiplier = 8;
  o.train_length = 0;
  CHECK(contains(error_of([&] { validate(o); }), "original length L0"));
}

TEST_CASE("eval records: the rope scaling options in the file name and the JSON, absent in records without them") {
  EvalRecord r;
  r.checkpoint = "step_00000010.h5";
  r.scheme = "rope";
  r.lengths = {{64, 1, 1.5, 128, {}}};
  const std::string before = eval_record_json(r);
  CHECK(!contains(before, "rope_"));
  CHECK(eval_record_from_json(eval_record_object(r), "r", "x.json").rope_scaling.empty());  // none
  r.options.position = {position_setting("rope_scaling", RopeScaling::yarn), position_setting("rope_factor", 8.0)};
  r.rope_scaling = "yarn";
  r.rope_factor = 8;
  CHECK(eval_record_name(r) == "step_00000010-128-rope_yarn-factor8.json");
  const EvalRecord back = eval_record_from_json(eval_record_object(r), "r", "x.json");
  CHECK(back.options == r.options);
  CHECK(back.rope_scaling == "yarn");
  CHECK(back.rope_factor == 8);
  r.options.position[1] = position_setting("rope_factor", 2.5);
  CHECK(contains(eval_record_name(r), "-rope_yarn-factor2.5.json"));
}

TEST_CASE("rope scaling sweep rows evaluate the rope runs, which train without the scaling whichever row comes first") {
  rpb::testing::TempDir tmp("rope_scaling_sweep");
  const RunConfig c = parse_config(
      rpb::testing::tiny_sweep_config(tmp.path, "s", "[1, 2]") +
          "[sweep]\nseeds = [0]\nmethods = [\"rope@rope_scaling=linear@rope_factor=4\", \"rope\"]\n",
      "sweep.toml");
  const SweepResult result = run_sweep(c);
  REQUIRE(result.rows.size() == 2);
  const std::filesystem::path run = tmp.path / "s" / "markov" / "rope" / "seed0";
  CHECK(std::filesystem::exists(run / "step_00000003.h5"));
  CHECK(!std::filesystem::exists(tmp.path / "s" / "markov" / "rope@rope_scaling=linear@rope_factor=4"));
  CHECK(!contains(rpb::testing::file_text(run / "config.toml"), "rope_scaling = "));  // trained as plain rope
  CHECK(result.rows[0].ppl != result.rows[1].ppl);  // evaluated with and without the scaling
}
