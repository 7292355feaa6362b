// rpb/train/data/algorithmic_regular.cpp: Delétang et al.'s regular tasks (parity check, modular arithmetic, cycle
// navigation), as google-deepmind/neural_networks_chomsky_hierarchy @ 2a0eecc6bc090619e9db423961bef8a542854b49
// tasks/regular/*.py generate them (the randomized_positional_encodings repository carries the same tasks). Each
// answer is one output position. The draws are rpb's generator's, in the order the reference draws them; its own
// random streams (jax keys, numpy) are not reproduced, so the samples are the same distribution, not the same bits.
#include <string>
#include <vector>

#include "train/data/algorithmic_detail.h"

namespace rpb::data::algorithmic_detail {

namespace {

std::vector<std::string> bit_names(int64_t) { return {"0", "1"}; }

int64_t one_output(int64_t) { return 1; }

// parity_check.py: uniform bits; the answer is their sum mod 2 (0: even, 1: odd), as the bit of that value.
void parity(int64_t length, int64_t, Generator& gen, AlgorithmicInstance& out) {
  out.input = uniform_symbols(length, 2, gen);
  int32_t sum = 0;
  for (const int32_t b : out.input) sum ^= b;
  out.output = {sum};
  out.scored = 1;
}

// modular_arithmetic.py with modulus 5 (the randomized_positional_encodings TASK_BUILDERS' value): ids 0..4 the
// residues, 5 '+', 6 '-', 7 '*' (the reference's '_' at 8 is never drawn and has no id here). An even length loses
// its last position (length - 1, as the reference); the residues are drawn first (length / 2 + 1 of them), then the
// operators, uniform over {+, *, -} (the reference's list after its fix of the exhausted generator in the
// randomized_positional_encodings repository). The answer is the expression with * before + and -, mod 5.
constexpr int32_t kModulus = 5, kPlus = 5, kMinus = 6, kTimes = 7;

std::vector<std::string> modular_names(int64_t) { return {"0", "1", "2", "3", "4", "+", "-", "*"}; }

int32_t evaluate_modular(const std::vector<int32_t>& e) {
  int64_t total = 0, term = e[0], sign = 1;
  for (std::size_t i = 1; i + 1 < e.size(); i += 2) {
    const int32_t op = e[i], v = e[i + 1];
    if (op == kTimes) {
      term = term * v % kModulus;
    } else {
      total += sign * term;
      sign = op == kPlus ? 1 : -1;
      term = v;
    }
  }
  total += sign * term;
  return static_cast<int32_t>(((total % kModulus) + kModulus) % kModulus);
}

void modular(int64_t length, int64_t, Generator& gen, AlgorithmicInstance& out) {
  const int64_t n = length % 2 == 0 ? length - 1 : length;
  const std::vector<int32_t> values = uniform_symbols(n / 2 + 1, kModulus, gen);
  const std::vector<int32_t> ops = uniform_symbols(n / 2, 3, gen);  // 0: +, 1: *, 2: - (the reference's order)
  const int32_t op_id[] = {kPlus, kTimes, kMinus};
  out.input.clear();
  for (int64_t i = 0; i < n; ++i)
    out.input.push_back(i % 2 == 0 ? values[static_cast<std::size_t>(i / 2)]
                                   : op_id[ops[static_cast<std::size_t>(i / 2)]]);
  out.output = {evaluate_modular(out.input)};
  out.scored = 1;
}

// cycle_navigation.py: moves uniform over ids 0, 1, 2 (-1, stay, +1) on a cycle of 5 from 0; the answer is the final
// place, ids 3..7 (places 0..4: the reference's output classes, given ids of their own after the moves').
constexpr int32_t kCycle = 5, kFirstPlace = 3;

std::vector<std::string> cycle_names(int64_t) { return {"-1", "0", "+1", "p0", "p1", "p2", "p3", "p4"}; }

void cycle(int64_t length, int64_t, Generator& gen, AlgorithmicInstance& out) {
  out.input = uniform_symbols(length, 3, gen);
  int64_t place = 0;
  for (const int32_t m : out.input) place += m - 1;
  out.output = {static_cast<int32_t>(kFirstPlace + ((place % kCycle) + kCycle) % kCycle)};
  out.scored = 1;
}

constexpr const char* kRegularReference = "google-deepmind/neural_networks_chomsky_hierarchy@2a0eecc tasks/regular/";

}  // namespace

std::vector<AlgorithmicSpec> regular_specs() {
  return {
      {.name = "parity_check", .summary = "Delétang et al.'s parity of a bit string (regular); one output position",
       .reference = kRegularReference, .encoder = true, .decoder = true, .literature = Framing::encoder,
       .min_length = 1, .token_names = bit_names, .instance = parity, .output_length = one_output},
      {.name = "modular_arithmetic",
       .summary = "Delétang et al.'s + - * expression over residues mod 5, * first (regular); one "
                  "output position",
       .reference = kRegularReference, .encoder = true, .decoder = true, .literature = Framing::encoder,
       .min_length = 1, .token_names = modular_names, .instance = modular, .output_length = one_output},
      {.name = "cycle_navigation",
       .summary = "Delétang et al.'s moves -1, 0, +1 on a cycle of 5 from place 0: the final place "
                  "(regular); one output position",
       .reference = kRegularReference, .encoder = true, .decoder = true, .literature = Framing::encoder,
       .min_length = 1, .token_names = cycle_names, .instance = cycle, .output_length = one_output},
  };
}

}  // namespace rpb::data::algorithmic_detail
