// The algorithmic tasks (train/data/algorithmic.h): every task's samples against the test's own answer for their
// input, the references' worked examples through that answer, both framings' layouts, the curriculum, the scores, and
// the config's checks of model.causal, the schemes and the lengths.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <map>
#include <set>

#include "config_errors.h"
#include "test_util.h"
#include "train/config/config.h"
#include "train/data/algorithmic.h"
#include "train/data/eval_segments.h"
#include "train/data/task_registry.h"
#include "train/sweep/results.h"
#include "train/sweep/results_json.h"

using namespace rpb;
using namespace rpb::testing;
using rpb::testing::config_file_error;

namespace algorithmic_test {

const data::AlgorithmicSpec& spec_of(const std::string& name) {
  const data::AlgorithmicSpec* s = data::find_algorithmic(name);
  REQUIRE_MESSAGE(s != nullptr, name);
  return *s;
}

// ---- the test's own answers, from the input alone

uint64_t little_endian_value(const std::vector<int32_t>& bits) {
  uint64_t v = 0;
  for (std::size_t i = bits.size(); i-- > 0;) v = 2 * v + static_cast<uint64_t>(bits[i]);
  return v;
}

std::vector<int32_t> little_endian_bits(uint64_t v) {
  std::vector<int32_t> bits;
  do {
    bits.push_back(static_cast<int32_t>(v & 1));
    v >>= 1;
  } while (v != 0);
  return bits;
}

// Modular arithmetic by recursive descent (expr := term (+|- term)*, term := value (* value)*), mod 5.
int64_t modular_answer(const std::vector<int32_t>& e) {
  std::size_t i = 0;
  const auto term = [&] {
    int64_t v = e[i++];
    while (i < e.size() && e[i] == 7) v = v * e[i + 1] % 5, i += 2;
    return v;
  };
  int64_t v = term();
  while (i < e.size()) {
    const bool plus = e[i++] == 5;
    const int64_t t = term();
    v = plus ? v + t : v - t;
  }
  return ((v % 5) + 5) % 5;
}

// The output positions (and the answer's length) task `name` must give for `in` at length L.
std::vector<int32_t> expected_output(const std::string& name, const std::vector<int32_t>& in, int64_t length,
                                     int64_t& scored) {
  std::vector<int32_t> out;
  if (name == "parity_check") {
    int32_t ones = 0;
    for (const int32_t b : in) ones += b;
    out = {ones % 2};
  } else if (name == "modular_arithmetic") {
    out = {static_cast<int32_t>(modular_answer(in))};
  } else if (name == "cycle_navigation") {
    int64_t place = 0;
    for (const int32_t m : in) place += m - 1;
    out = {static_cast<int32_t>(3 + ((place % 5) + 5) % 5)};
  } else if (name == "reverse_string") {
    out.assign(in.rbegin(), in.rend());
  } else if (name == "duplicate_string") {
    out = in;
    out.insert(out.end(), in.begin(), in.end());
  } else if (name == "bucket_sort") {
    out = in;
    std::stable_sort(out.begin(), out.end());
  } else if (name == "copy") {
    out = in;
  } else if (name == "stack_manipulation") {  // bits (bottom to top) until the first action
    std::vector<int32_t> st;
    for (const int32_t x : in) {
      if (x < 2) st.push_back(x);
      else if (x == 2 && !st.empty()) st.pop_back();
      else if (x > 2) st.push_back(x - 3);
    }
    out.assign(st.rbegin(), st.rend());
    out.push_back(5);
  } else if (name == "binary_addition") {
    const auto plus = std::find(in.begin(), in.end(), 2);
    const uint64_t sum = plus == in.end() ? little_endian_value(in)
                                          : little_endian_value({in.begin(), plus}) +
                                                little_endian_value({plus + 1, in.end()});
    out = little_endian_bits(sum);
    out.push_back(3);
  } else if (name == "addition") {  // most significant digit first, '+' is 10
    uint64_t a = 0, b = 0;
    bool second = false;
    for (const int32_t d : in) {
      if (d == 10) second = true;
      else (second ? b : a) = (second ? b : a) * 10 + static_cast<uint64_t>(d);
    }
    const std::string digits = std::to_string(a + b);
    for (const char c : digits) out.push_back(c - '0');
  } else {
    FAIL("no expected output for task ", name);
  }
  scored = static_cast<int64_t>(out.size());
  const int64_t positions = spec_of(name).output_length(length);
  REQUIRE(scored <= positions);
  out.resize(static_cast<std::size_t>(positions), 0);  // padding after a termination token
  return out;
}

// A sequence task's sample, checked from its tokens: mqar's queries read their pair's value, flip_flop's reads the
// latest write.
void check_sequence(const std::string& name, int64_t length, int64_t alphabet, const data::AlgorithmicSample& s) {
  const auto t = s.inputs.size();
  REQUIRE(s.targets.size() == t);
  REQUIRE(s.scored.size() == t);
  int64_t scored = 0;
  for (std::size_t p = 0; p < t; ++p) {
    CHECK((s.scored[p] == 1) == (s.targets[p] != data::kUnscoredTarget));  // only the scored targets train
    scored += s.scored[p];
  }
  if (name == "mqar") {
    CHECK(static_cast<int64_t>(t) == 16 * length);
    std::map<int32_t, int32_t> value_of;
    for (int64_t i = 0; i < length; ++i) {
      const int32_t k = s.inputs[static_cast<std::size_t>(2 * i)], v = s.inputs[static_cast<std::size_t>(2 * i + 1)];
      CHECK(k >= 1);
      CHECK(k < alphabet / 2);
      CHECK(v >= alphabet / 2);
      CHECK(v < alphabet);
      CHECK(value_of.emplace(k, v).second);  // distinct keys
    }
    CHECK(scored == length);
    std::set<int32_t> asked;
    for (std::size_t p = 0; p < t; ++p) {
      if (!s.scored[p]) continue;
      CHECK(static_cast<int64_t>(p) >= 2 * length);
      CHECK((p - 2 * static_cast<std::size_t>(length)) % 2 == 0);
      REQUIRE(value_of.count(s.inputs[p]) == 1);
      CHECK(s.targets[p] == value_of[s.inputs[p]]);
      asked.insert(s.inputs[p]);
    }
    CHECK(static_cast<int64_t>(asked.size()) == length);  // every key asked once
  } else if (name == "flip_flop") {
    CHECK(static_cast<int64_t>(t) == 2 * length - 1);
    CHECK(s.inputs[0] == 0);      // w first
    CHECK(s.inputs[t - 1] == 1);  // r last
    int32_t reg = -1;
    int64_t reads = 0;
    for (std::size_t p = 0; p < t; p += 2) {
      const int32_t op = s.inputs[p];
      const int32_t bit = p + 1 < t ? s.inputs[p + 1] : s.targets[p];
      CHECK((bit == 3 || bit == 4));
      if (op == 0) reg = bit;
      if (op == 1) {
        ++reads;
        CHECK(s.scored[p] == 1);
        CHECK(s.targets[p] == reg);
      }
    }
    CHECK(reads == scored);
  } else {
    FAIL("no sequence check for task ", name);
  }
}

// Samples of task `name` at `length` in `framing`, each checked against the test's answer and the framing's layout.
void check_framed_samples(const std::string& name, int64_t length, data::Framing framing, int samples) {
  const data::AlgorithmicSpec& spec = spec_of(name);
  data::TaskOptions o;
  o.kind = name;
  o.alphabet = name == "mqar" ? 64 : 0;  // a small vocabulary keeps mqar's repeats in view
  o.causal = framing == data::Framing::decoder;
  const data::AlgorithmicTask task(o);
  const int64_t a = task.alphabet();
  Generator gen(static_cast<uint64_t>(length));
  for (int i = 0; i < samples; ++i) {
    data::AlgorithmicSample s;
    task.sample(length, gen, s);
    CHECK(static_cast<int64_t>(s.inputs.size()) <= data::sample_length(spec, length, framing));
    for (const int32_t x : s.inputs) {
      CHECK(x >= 0);
      CHECK(x < task.vocab());
    }
    if (spec.sequence) {
      check_sequence(name, length, a, s);
      continue;
    }
    // Recover the input: the tokens before the first framing token.
    const auto first_framing = std::find_if(s.inputs.begin(), s.inputs.end(), [&](int32_t x) { return x >= a; });
    const std::vector<int32_t> input(s.inputs.begin(), first_framing);
    for (const int32_t x : input) CHECK(x < a);
    const int64_t n = static_cast<int64_t>(input.size());
    if (name == "addition") {  // the longer number has L digits, the other 1 to L
      CHECK(n >= length + 2);
      CHECK(n <= 2 * length + 1);
    } else {
      CHECK(n == (name == "modular_arithmetic" && length % 2 == 0 ? length - 1 : length));
    }
    int64_t scored = 0;
    const std::vector<int32_t> out = expected_output(name, input, length, scored);
    for (std::size_t p = 0; p < input.size(); ++p) {
      CHECK(s.targets[p] == data::kUnscoredTarget);
      CHECK(s.scored[p] == 0);
    }
    if (framing == data::Framing::encoder) {  // the blanks, each with its output position's target
      REQUIRE(s.inputs.size() == input.size() + out.size());
      for (std::size_t k = 0; k < out.size(); ++k) {
        CHECK(s.inputs[input.size() + k] == task.token(data::kBlankOffset));
        CHECK(s.targets[input.size() + k] == out[k]);
        CHECK(s.scored[input.size() + k] == (static_cast<int64_t>(k) < scored ? 1 : 0));
      }
    } else {  // the separator, the answer; the end token the last target
      REQUIRE(static_cast<int64_t>(s.inputs.size()) == n + 1 + scored);
      CHECK(s.inputs[input.size()] == task.token(data::kSeparatorOffset));
      for (int64_t k = 0; k < scored; ++k) {
        CHECK(s.targets[input.size() + k] == out[static_cast<std::size_t>(k)]);
        if (k > 0) CHECK(s.inputs[input.size() + k] == out[static_cast<std::size_t>(k - 1)]);
      }
      CHECK(s.targets.back() == task.token(data::kEndOffset));
      for (std::size_t p = input.size(); p < s.scored.size(); ++p) CHECK(s.scored[p] == 1);
    }
  }
}

}  // namespace algorithmic_test

using namespace algorithmic_test;

TEST_CASE("algorithmic tasks: the references' worked examples, through the test's answers") {
  int64_t scored = 0;
  // stack_manipulation.py's docstring: 0 1 1 0 PUSH 1 POP POP -> 1 1 0 (end) 0 0 0 0; 1 1 0 POP POP POP -> (end) ...
  CHECK(expected_output("stack_manipulation", {0, 1, 1, 0, 4, 2, 2}, 7, scored) ==
        std::vector<int32_t>{1, 1, 0, 5, 0, 0, 0, 0});
  CHECK(scored == 4);
  CHECK(expected_output("stack_manipulation", {1, 1, 0, 2, 2, 2}, 6, scored) ==
        std::vector<int32_t>{5, 0, 0, 0, 0, 0, 0});
  CHECK(scored == 1);
  // binary_addition.py's docstring: 001 + 01101 = 01011 (4 + 22 = 26), the termination token, zeros to L + 1 = 10
  // positions (the docstring shows one zero fewer than its code writes).
  CHECK(expected_output("binary_addition", {0, 0, 1, 2, 0, 1, 1, 0, 1}, 9, scored) ==
        std::vector<int32_t>{0, 1, 0, 1, 1, 3, 0, 0, 0, 0});
  CHECK(scored == 6);
  // 1001 + 000001 = 100101 (9 + 32 = 41)
  CHECK(expected_output("binary_addition", {1, 0, 0, 1, 2, 0, 0, 0, 0, 0, 1}, 11, scored) ==
        std::vector<int32_t>{1, 0, 0, 1, 0, 1, 3, 0, 0, 0, 0, 0});
  // modular_arithmetic.py: * before + and -, mod 5: 1 + 2 * 3 = 7 = 2; 1 - 1 - 1 = -1 = 4; 4 * 4 - 3 = 13 = 3.
  CHECK(expected_output("modular_arithmetic", {1, 5, 2, 7, 3}, 5, scored) == std::vector<int32_t>{2});
  CHECK(expected_output("modular_arithmetic", {1, 6, 1, 6, 1}, 5, scored) == std::vector<int32_t>{4});
  CHECK(expected_output("modular_arithmetic", {4, 7, 4, 6, 3}, 5, scored) == std::vector<int32_t>{3});
  // cycle_navigation.py: -1 -1 +1 0 from place 0 ends at place 4 (id 3 + 4).
  CHECK(expected_output("cycle_navigation", {0, 0, 2, 1}, 4, scored) == std::vector<int32_t>{7});
  // Kazemnejad et al.'s addition, most significant digit first: 957 + 68 = 1025.
  CHECK(expected_output("addition", {9, 5, 7, 10, 6, 8}, 3, scored) == std::vector<int32_t>{1, 0, 2, 5});
}

TEST_CASE("algorithmic tasks: every sample holds the answer to its input, laid out as its framing says") {
  for (const data::AlgorithmicSpec& spec : data::algorithmic_specs()) {
    const std::string name = spec.name;
    for (const data::Framing f : {data::Framing::encoder, data::Framing::decoder}) {
      if (!(f == data::Framing::encoder ? spec.encoder : spec.decoder)) continue;
      for (const int64_t length : {spec.min_length, int64_t{2}, int64_t{3}, int64_t{7}, int64_t{16}, int64_t{31}}) {
        if (length < spec.min_length || (name == "addition" && length > 18)) continue;  // the test adds in uint64
        INFO("task ", name, ", framing ", std::string(data::framing_name(f)), ", length ", length);
        check_framed_samples(name, length, f, 40);
      }
    }
  }
}

TEST_CASE("algorithmic tasks: draws follow the references' distributions") {
  Generator gen(5);
  data::AlgorithmicInstance in;
  // stack_manipulation: the stack's size is uniform over [1, L - 1] (its first action ends it).
  std::map<int64_t, int> stack_sizes;
  for (int i = 0; i < 4000; ++i) {
    spec_of("stack_manipulation").instance(5, 0, gen, in);
    stack_sizes[std::find_if(in.input.begin(), in.input.end(), [](int32_t x) { return x >= 2; }) - in.input.begin()]++;
  }
  CHECK(stack_sizes.size() == 4);
  for (const auto& entry : stack_sizes) {
    const int64_t size = entry.first;  // not a structured binding: clang 14 cannot capture one (INFO)
    const int c = entry.second;
    INFO("stack size ", size, ": ", c);
    CHECK(std::abs(c - 1000) < 150);
  }
  // binary_addition: the first number's bits uniform over [1, L - 2]; at L <= 2 no '+', n < 2^L - 1.
  std::map<int64_t, int> first_bits;
  for (int i = 0; i < 3000; ++i) {
    spec_of("binary_addition").instance(6, 0, gen, in);
    first_bits[std::find(in.input.begin(), in.input.end(), 2) - in.input.begin()]++;
  }
  CHECK(first_bits.size() == 4);
  for (int i = 0; i < 200; ++i) {
    spec_of("binary_addition").instance(2, 0, gen, in);
    CHECK(std::find(in.input.begin(), in.input.end(), 2) == in.input.end());
    CHECK(little_endian_value(in.input) <= 2);
  }
  // flip_flop: the inner instructions are i with probability 0.8, w and r 0.1 each.
  std::map<int32_t, int> ops;
  data::AlgorithmicSample s;
  for (int i = 0; i < 200; ++i) {
    spec_of("flip_flop").sequence(52, 5, gen, s);
    for (std::size_t p = 2; p + 2 < s.inputs.size(); p += 2) ops[s.inputs[p]]++;
  }
  const double total = ops[0] + ops[1] + ops[2];
  CHECK(ops[2] / total == doctest::Approx(0.8).epsilon(0.03));
  CHECK(ops[0] / total == doctest::Approx(0.1).epsilon(0.1));
  // mqar: near gaps likelier (the power law): the first query slot is asked more often than the last.
  int first = 0, last = 0;
  for (int i = 0; i < 400; ++i) {
    spec_of("mqar").sequence(4, 8192, gen, s);
    first += s.scored[8];
    last += s.scored[62];
  }
  CHECK(first > 4 * std::max(last, 1));
}

TEST_CASE("algorithmic tasks: held-out samples are fixed by the seed, split and length, and the curriculum resumes") {
  data::TaskOptions o;
  o.kind = "duplicate_string";
  o.eval_samples = 6;
  o.min_length = 2;
  o.causal = false;  // the encoder framing
  const data::AlgorithmicTask task(o);
  CHECK(task.vocab() == 2 + data::kFramingTokens);
  CHECK(task.entropy_rate() == 0.0);
  Tensor x1, y1, x2, y2;
  std::vector<uint8_t> s1, s2;
  task.held_out(data::Split::test, 5, x1, y1, s1);
  task.held_out(data::Split::test, 5, x2, y2, s2);
  CHECK(x1.shape() == Shape{6, 15});
  CHECK(x1.to_vector() == x2.to_vector());
  CHECK(s1 == s2);
  task.held_out(data::Split::valid, 5, x2, y2, s2);
  CHECK(x1.to_vector() != x2.to_vector());
  CHECK(task.decode({0, 1, 2, 3, 4}) == "0 1 <blank> <sep> <end>");

  data::AlgorithmicSampler a(task, 3, 6, 11), b(task, 3, 6, 11);
  std::set<int64_t> widths;
  Tensor xi, yi;
  for (int i = 0; i < 60; ++i) {
    a.next(xi, yi);
    CHECK(xi.size(0) == 3);
    CHECK(xi.size(1) % 3 == 0);  // duplicate: L inputs and 2 L blanks
    widths.insert(xi.size(1) / 3);
  }
  CHECK(widths == std::set<int64_t>{2, 3, 4, 5, 6});  // L uniform over [task.min_length, run.length]
  b.set_state(a.state());
  Tensor xa, ya, xb, yb;
  a.next(xa, ya);
  b.next(xb, yb);
  CHECK(xa.to_vector() == xb.to_vector());
  CHECK(ya.to_vector() == yb.to_vector());
}

TEST_CASE("algorithmic tasks: a decoder batch pads its shorter samples at the end, unscored") {
  data::AlgorithmicSample s1{{1, 2}, {-100, 7}, {0, 1}}, s2{{1, 2, 3, 4}, {-100, 5, 6, 7}, {0, 1, 1, 1}};
  Tensor x, y;
  std::vector<uint8_t> scored;
  data::stack_samples({s1, s2}, 9, x, y, &scored);
  CHECK(x.to_vector() == std::vector<double>{1, 2, 9, 9, 1, 2, 3, 4});
  CHECK(y.to_vector() == std::vector<double>{-100, 7, -100, -100, -100, 5, 6, 7});
  CHECK(scored == std::vector<uint8_t>{0, 1, 0, 0, 0, 1, 1, 1});
}

TEST_CASE("algorithmic scores: per-token accuracy pooled, exact match per sample, the scored targets' NLL") {
  // Two samples of three positions over a vocabulary of 2; the second position of each unscored.
  const Tensor logits = Tensor::from_vector<float>({2, 3, 2}, {2, 0, 5, 5, 0, 1,   // sample 0: 0, (tie), 1
                                                               0, 3, 1, 1, 4, 0});  // sample 1: 1, (tie), 0
  const Tensor targets = Tensor::from_vector<int64_t>({2, 3}, {0, -100, 1, 1, -100, 1});
  const data::AlgorithmicScore s = data::score_algorithmic(logits, targets, {1, 0, 1, 1, 0, 1});
  CHECK(s.samples == 2);
  CHECK(s.tokens == 4);
  CHECK(s.correct == 3);  // sample 1's last target is wrong
  CHECK(s.exact == 1);
  const double nll = std::log1p(std::exp(-2.0)) + std::log1p(std::exp(-1.0)) + std::log1p(std::exp(-3.0)) +
                     (4 + std::log1p(std::exp(-4.0)));
  CHECK(s.nll == doctest::Approx(nll).epsilon(1e-6));
  CHECK(contains(error_of([&] { data::score_algorithmic(logits, targets, {1, 0}); }), "algorithmic"));
}

TEST_CASE("algorithmic tasks: a framing its spec lacks is refused, naming the task and the literature's") {
  data::TaskOptions o;
  o.kind = "mqar";
  o.causal = false;  // the encoder framing
  CHECK(contains(error_of([&] { data::AlgorithmicTask task(o); }),
                 "task.kind mqar has no encoder framing (model.causal = false); its literature trains it in the "
                 "decoder's"));
  o.kind = "markov";
  o.causal = true;
  CHECK(contains(error_of([&] { data::AlgorithmicTask task(o); }), "not an algorithmic task"));
}


TEST_CASE("algorithmic config: model.causal against the task and the scheme, the lengths, the keys written") {
  const std::string encoder = "[model]\ncausal = false\n[task]\nkind = \"reverse_string\"\n";
  CHECK(config_file_error(encoder).empty());
  CHECK(contains(config_file_error("[model]\ncausal = false\n[task]\nkind = \"markov\"\n"),
                 "F:2:10: model.causal = false: false asks for a bidirectional model, and the markov task predicts "
                 "each next token, which a bidirectional model would read: expected true; the tasks with an encoder "
                 "framing are parity_check, modular_arithmetic"));
  CHECK(contains(config_file_error("[model]\ncausal = false\n[task]\nkind = \"flip_flop\"\n"),
                 "the flip_flop task has no encoder framing (its literature trains it in the decoder's)"));
  CHECK(contains(config_file_error(encoder + "[position]\nscheme = \"fire\"\n"),
                 "position.scheme = \"fire\": fire has no bidirectional form, which model.causal = false asks for: its "
                 "normaliser"));
  // A causal model takes fire on the same task.
  CHECK(config_file_error("[task]\nkind = \"reverse_string\"\n[position]\nscheme = \"fire\"\n").empty());
  CHECK(contains(config_file_error("[run]\nlength = 8\n[task]\nkind = \"copy\"\nmin_length = 9\n"),
                 "task.min_length = 9: is the shortest training length and run.length the longest: expected at most "
                 "8, found 9"));
  CHECK(contains(config_file_error("[task]\nkind = \"flip_flop\"\nmin_length = 1\n"),
                 "task.min_length = 1: the flip_flop task takes lengths of at least 2 (0: its shortest), found 1"));
  CHECK(contains(config_file_error("[run]\nlength = 8\neval_multipliers = [1, 4]\n[task]\nkind = \"mqar\"\n"
                                          "alphabet = 40\n"),
                 "a mqar sample of that length needs more than task.alphabet = 40 holds (at most length 19)"));
  // A learned table holds a whole sample: duplicate_string at run.length 20 reads 60 tokens.
  CHECK(contains(config_file_error("[run]\nlength = 20\n[model]\ncausal = false\n[position]\n"
                                          "scheme = \"learned\"\nmax_positions = 40\n[task]\n"
                                          "kind = \"duplicate_string\"\n"),
                 "the learned table needs at least 60 positions for run.length = 20 (a duplicate_string sample), got "
                 "40"));
  // The effective config holds the algorithmic keys for an algorithmic task only, and model.causal when false.
  const RunConfig c = parse_config(encoder + "alphabet = 3\n", "algo.toml");
  CHECK(contains(c.text, "causal = false"));
  CHECK(contains(c.text, "alphabet = 3"));
  CHECK(contains(c.text, "min_length = 0"));
  CHECK(contains(c.text, "eval_samples = 512"));
  CHECK(c.task.causal == false);
  const RunConfig markov = parse_config("[task]\nkind = \"markov\"\n", "markov.toml");
  CHECK(!contains(markov.text, "causal"));
  CHECK(!contains(markov.text, "min_length"));
  CHECK(!contains(markov.text, "alphabet"));
  const RunConfig parity = parse_config("[task]\nkind = \"parity_check\"\n", "parity.toml");
  CHECK(!contains(parity.text, "alphabet"));  // a fixed alphabet
}

TEST_CASE("algorithmic sweep: token accuracy with its score, exact match, in the table, results.json, csv and tex") {
  rpb::testing::TempDir dir("algorithmic_sweep");
  const std::string text = "[run]\nname = \"algo\"\nout_dir = \"" + dir.path.string() +
                           "\"\nsteps = 20\nbatch = 8\nlength = 4\nlog_every = 10\neval_multipliers = [1, 2, 3]\n"
                           "eval_batch = 16\n[model]\ncausal = false\nd_model = 16\nheads = 2\nlayers = 1\nd_ff = 32\n"
                           "[task]\nkind = \"reverse_string\"\neval_samples = 16\n[optim]\nlr = 1e-2\n"
                           "[sweep]\nmethods = [\"rope\", \"alibi\"]\nseeds = [0, 1]\n";
  const SweepResult r = run_sweep(parse_config(text, "algo.toml"));
  REQUIRE(r.rows.size() == 2);
  for (const MethodResult& m : r.rows) {
    CHECK(m.has_token_accuracy());
    CHECK(m.has_accuracy());  // the exact match
  }
  const std::string table = format_table(r);
  CHECK(contains(table, "| Method | Position params | Score | Token accuracy at train length | 2x | 3x |\n"));
  CHECK(contains(table, "| Method | Position params | Exact match at train length | 2x | 3x |\n"));
  CHECK(!contains(table, "Learned"));  // every seed counts: no learned threshold
  write_results(r, (dir.path / "results").string());
  const SweepResults json = read_sweep_results((dir.path / "results" / "results.json").string());
  REQUIRE(json.rows.size() == 2);
  for (std::size_t i = 0; i < 2; ++i) {
    const SweepResultsRow& row = json.rows[i];
    REQUIRE(row.token_accuracy.size() == 2);
    for (std::size_t s = 0; s < 2; ++s) {
      REQUIRE(row.token_accuracy[s].size() == 3);
      for (std::size_t j = 0; j < 3; ++j) CHECK(row.token_accuracy[s][j] == r.rows[i].token_accuracy[s][j]);
      // The score: the mean over the lengths past the train length.
      const double past = (*row.token_accuracy[s][1] + *row.token_accuracy[s][2]) / 2;
      CHECK(*row.score(s, json.multipliers) == doctest::Approx(past));
    }
    CHECK(row.learned() == std::vector<bool>{true, true});
  }
  CHECK(format_table(json) == table);  // rpb results prints what rpb extrapolate printed
  const std::string csv = rpb::testing::file_text((dir.path / "results" / "results.csv").string());
  CHECK(contains(csv, ",label,accuracy_every_seed,token_accuracy\n"));
  const std::string tex = rpb::testing::file_text((dir.path / "results" / "results.tex").string());
  CHECK(contains(tex, "Token accuracy (\\%)"));
  CHECK(contains(tex, "Exact match (\\%)"));
}

TEST_CASE("algorithmic tasks on the command line: train, eval's table and score, its refusals and settings") {
  rpb::testing::TempDir dir("algorithmic_cli");
  const std::string config = dir.file("copy.toml");
  std::ofstream(config) << "[run]\nname = \"copy\"\nout_dir = \"" << dir.path.string()
                        << "\"\nsteps = 10\nbatch = 4\nlength = 4\nlog_every = 5\neval_multipliers = [1, 2]\n"
                           "[model]\nd_model = 16\nheads = 2\nlayers = 1\nd_ff = 32\n[position]\nscheme = \"rope\"\n"
                           "randomized = true\nrandomized_max = 64\n[task]\nkind = \"copy\"\nalphabet = 10\n"
                           "eval_samples = 8\n";
  auto r = rpb::testing::run_rpb("train " + config);
  REQUIRE_MESSAGE(r.code == 0, r.out);
  const std::string run = (dir.path / "copy").string();
  r = rpb::testing::run_rpb("eval " + run + " --no-record");
  REQUIRE_MESSAGE(r.code == 0, r.out);
  CHECK(contains(r.out, "| length | x train | NLL (nats) | perplexity | token accuracy (%) | exact match (%) |"));
  CHECK(contains(r.out, "per-token accuracy, the mean over the lengths past training"));
  CHECK(contains(r.out, "8 samples at each length"));
  // Evaluation draws the positions per batch, seeded by its tokens: the same numbers twice.
  CHECK(rpb::testing::run_rpb("eval " + run + " --no-record").out == r.out);
  const auto contiguous = rpb::testing::run_rpb("eval " + run + " --no-record --contiguous-eval");
  CHECK(contiguous.code == 0);
  CHECK(contiguous.out != r.out);
  // A bidirectional model does not generate: refused before anything is printed.
  std::ofstream(dir.file("reverse.toml")) << "[run]\nname = \"rev\"\nout_dir = \"" << dir.path.string()
                                          << "\"\nsteps = 2\nbatch = 4\nlength = 4\neval_multipliers = [1]\n"
                                             "[model]\ncausal = false\nd_model = 16\nheads = 2\nlayers = 1\n"
                                             "d_ff = 32\n[task]\nkind = \"reverse_string\"\neval_samples = 4\n";
  REQUIRE(rpb::testing::run_rpb("train " + dir.file("reverse.toml")).code == 0);
  const auto generated = rpb::testing::run_rpb("generate " + (dir.path / "rev").string() + " --prompt \"0 1\"");
  CHECK(generated.code == 1);
  CHECK(contains(generated.out, "a bidirectional model (model.causal = false, the encoder framing of reverse_string)"));
  // A token count does not apply: every length scores task.eval_samples samples.
  r = rpb::testing::run_rpb("eval " + run + " --tokens 100");
  CHECK(r.code == 2);
  CHECK(contains(r.out, "eval --tokens applies to token streams; a copy run scores task.eval_samples samples"));
}
