// rpb/train/data/algorithmic_context_sensitive.cpp: Delétang et al.'s context-sensitive tasks that rpb runs (duplicate
// string, binary addition, bucket sort), as google-deepmind/neural_networks_chomsky_hierarchy @
// 2a0eecc6bc090619e9db423961bef8a542854b49 tasks/cs/*.py generate them, in the order they draw (the draws are rpb's
// generator's: the same distribution, not the same bits).
#include <algorithm>
#include <string>
#include <vector>

#include "train/data/algorithmic_detail.h"

namespace rpb::data::algorithmic_detail {

namespace {

// duplicate_string.py: uniform symbols of task.alphabet (its vocab_size, 2 in the TASK_BUILDERS); the answer is the
// string twice.
void duplicate(int64_t length, int64_t alphabet, Generator& gen, AlgorithmicInstance& out) {
  out.input = uniform_symbols(length, alphabet, gen);
  out.output = out.input;
  out.output.insert(out.output.end(), out.input.begin(), out.input.end());
  out.scored = 2 * length;
}

// binary_addition.py: ids 0, 1 the bits, 2 '+', 3 the termination token (the reference's output class 2). Numbers are
// little-endian (least significant bit first). At L <= 2 the input is one number n ~ U[0, 2^L - 2] in L bits (the
// reference's np.random.randint(0, 2**length - 1): no '+') and the answer is n; else the first number takes
// a ~ U[1, L - 2] bits and the second L - 1 - a, each value uniform over [1, 2^bits - 1] written in its bits (high
// zeros included), joined by '+'. The answer is the sum without high zeros (0 is "0"), then the termination token,
// padded with 0 to L + 1 positions (the padding unscored, as the reference's accuracy mask; the loss reads it).
// Numbers longer than 64 bits are added as bit strings: the values are drawn bit by bit, rejecting 0.
constexpr int32_t kPlusBit = 2, kAdditionEnd = 3;

std::vector<std::string> binary_names(int64_t) { return {"0", "1", "+", "END"}; }

// `bits` uniform bits, little-endian, drawn again while all are 0: uniform over [1, 2^bits - 1].
std::vector<int32_t> nonzero_bits(int64_t bits, Generator& gen) {
  for (;;) {
    std::vector<int32_t> v = uniform_symbols(bits, 2, gen);
    if (std::any_of(v.begin(), v.end(), [](int32_t b) { return b != 0; })) return v;
  }
}

// The little-endian sum of little-endian bit strings, without high zeros ("0" for zero).
std::vector<int32_t> add_bits(const std::vector<int32_t>& a, const std::vector<int32_t>& b) {
  std::vector<int32_t> sum;
  int32_t carry = 0;
  for (std::size_t i = 0; i < std::max(a.size(), b.size()); ++i) {
    const int32_t s = (i < a.size() ? a[i] : 0) + (i < b.size() ? b[i] : 0) + carry;
    sum.push_back(s % 2);
    carry = s / 2;
  }
  if (carry) sum.push_back(1);
  while (sum.size() > 1 && sum.back() == 0) sum.pop_back();
  if (sum.empty()) sum.push_back(0);
  return sum;
}

void binary_addition(int64_t length, int64_t, Generator& gen, AlgorithmicInstance& out) {
  if (length <= 2) {
    const int64_t n = uniform_between(gen, 0, (int64_t{1} << length) - 2);
    out.input.clear();
    for (int64_t i = 0; i < length; ++i) out.input.push_back(static_cast<int32_t>((n >> i) & 1));
    out.output = add_bits(out.input, {});
  } else {
    const int64_t a = uniform_between(gen, 1, length - 2);
    const std::vector<int32_t> n = nonzero_bits(a, gen), m = nonzero_bits(length - 1 - a, gen);
    out.input = n;
    out.input.push_back(kPlusBit);
    out.input.insert(out.input.end(), m.begin(), m.end());
    out.output = add_bits(n, m);
  }
  out.output.push_back(kAdditionEnd);
  out.scored = static_cast<int64_t>(out.output.size());
  out.output.resize(static_cast<std::size_t>(length + 1), 0);
}

// bucket_sort.py: uniform symbols of task.alphabet (its vocab_size, "we use 5 in the paper"); the answer is the string
// sorted ascending.
void bucket_sort(int64_t length, int64_t alphabet, Generator& gen, AlgorithmicInstance& out) {
  out.input = uniform_symbols(length, alphabet, gen);
  out.output = out.input;
  std::sort(out.output.begin(), out.output.end());
  out.scored = length;
}

constexpr const char* kContextSensitiveReference =
    "google-deepmind/neural_networks_chomsky_hierarchy@2a0eecc tasks/cs/";

}  // namespace

std::vector<AlgorithmicSpec> context_sensitive_specs() {
  return {
      {.name = "duplicate_string",
       .summary = "Delétang et al.'s string written twice (context-sensitive; task.alphabet "
                  "symbols, 2 by default)",
       .reference = kContextSensitiveReference, .encoder = true, .decoder = true, .literature = Framing::encoder,
       .min_length = 1, .default_alphabet = 2, .token_names = numbered_names, .instance = duplicate,
       .output_length = twice},
      {.name = "binary_addition",
       .summary = "Delétang et al.'s sum of two little-endian binary numbers (context-sensitive)",
       .reference = kContextSensitiveReference, .encoder = true, .decoder = true, .literature = Framing::encoder,
       .min_length = 1, .token_names = binary_names, .instance = binary_addition, .output_length = plus_one},
      {.name = "bucket_sort",
       .summary = "Delétang et al.'s string sorted (context-sensitive; task.alphabet symbols, 5 by "
                  "default)",
       .reference = kContextSensitiveReference, .encoder = true, .decoder = true, .literature = Framing::encoder,
       .min_length = 1, .default_alphabet = 5, .token_names = numbered_names, .instance = bucket_sort,
       .output_length = same_length},
  };
}

}  // namespace rpb::data::algorithmic_detail
