// rpb/train/data/algorithmic_decoder.cpp: the decoder-only papers' tasks: Kazemnejad et al. 2023's copy and addition
// (McGill-NLP/length-generalization @ 40f8a445f976d795ff0e19fc2b7530e36386eabc), Zoology's multi-query associative
// recall (HazyResearch/zoology @ dbcb60d2bd10a3cc7a89ee60c446c44900a4687f zoology/data/multiquery_ar.py) and flip-flop
// language modelling (Liu et al. 2023, the synthseq/flipflop dataset card). rpb's generator draws them, in the order
// the references do where they say it; Kazemnejad et al.'s text prompts ("Copy: ... [SEP]", "Compute ... ? The answer
// is") are the decoder framing's ids alone here: the input, a separator, the answer, an end token.
#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "core/error.h"
#include "train/data/algorithmic_detail.h"
#include "train/data/eval_segments.h"
#include "train/data/sampling.h"

namespace rpb::data::algorithmic_detail {

namespace {

// copy (scripts/dataset_builders/make_copy_dataset.py, split cmc): L tokens uniform over task.alphabet (their pool of
// 100 one-token symbols); the answer is the same tokens.
void copy(int64_t length, int64_t alphabet, Generator& gen, AlgorithmicInstance& out) {
  out.input = uniform_symbols(length, alphabet, gen);
  out.output = out.input;
  out.scored = length;
}

// addition (make_addition_dataset.py, classic format without a scratchpad): decimal numbers written most significant
// digit first, ids 0..9 the digits and 10 '+'. A number of d digits is uniform over [10^(d-1), 10^d), or [0, 10) at
// d = 1, as theirs. L is the digits of the longer operand; the other takes d ~ U[1, L] digits, and a fair coin says
// which comes first. (Their splits bin (d_a, d_b) uniformly over a square of digit counts; one L per batch is rpb's
// curriculum, so the longer operand sets the length here.) The answer is the sum, most significant digit first.
constexpr int32_t kPlusDigit = 10;

std::vector<std::string> addition_names(int64_t) {
  std::vector<std::string> n = numbered_names(10);
  n.emplace_back("+");
  return n;
}

// Two numbers of at most L digits and '+'.
int64_t addition_input(int64_t length) { return 2 * length + 1; }

std::vector<int32_t> decimal(int64_t digits, Generator& gen) {
  std::vector<int32_t> v = uniform_symbols(digits, 10, gen);  // most significant first
  if (digits > 1) v[0] = static_cast<int32_t>(1 + uniform_index(gen, 9));
  return v;
}

void addition(int64_t length, int64_t, Generator& gen, AlgorithmicInstance& out) {
  const int64_t other = uniform_between(gen, 1, length);
  const bool longer_first = uniform_index(gen, 2) == 0;
  std::vector<int32_t> a = decimal(longer_first ? length : other, gen), b = decimal(longer_first ? other : length, gen);
  out.input = a;
  out.input.push_back(kPlusDigit);
  out.input.insert(out.input.end(), b.begin(), b.end());
  std::vector<int32_t> sum;  // least significant first
  int32_t carry = 0;
  for (std::size_t i = 0; i < std::max(a.size(), b.size()); ++i) {
    const int32_t s = (i < a.size() ? a[a.size() - 1 - i] : 0) + (i < b.size() ? b[b.size() - 1 - i] : 0) + carry;
    sum.push_back(s % 10);
    carry = s / 10;
  }
  if (carry) sum.push_back(1);
  while (sum.size() > 1 && sum.back() == 0) sum.pop_back();
  out.output.assign(sum.rbegin(), sum.rend());
  out.scored = static_cast<int64_t>(out.output.size());
}

// mqar (multiquery_ar with its defaults power_a = 0.01, num_passes = 1, random_non_queries = True): L key-value
// pairs in N = 16 L tokens (the (N, pairs) of Zoology's ICLR'24 figure-2 configs: (64, 4), (128, 8), (256, 16)) over
// V = task.alphabet ids (their vocab_size, 8192). Keys are distinct draws from [1, V/2), values distinct draws from
// [V/2, V); the context is k1 v1 ... kL vL. Key i is asked again at position 2L + 2 g_i, its gap g_i drawn without
// replacement from [0, 7L) with weight (g + 1)^(a - 1) (a power law: near gaps likelier); the target at that position
// is its value, the only scored and only trained targets. Every other position holds a token uniform over [0, V)
// (random_non_queries: the slot after a query too, so the value is never shown after it).
constexpr int64_t kMqarTokensPerPair = 16;
constexpr double kMqarPower = 0.01;

int64_t mqar_length(int64_t pairs) { return kMqarTokensPerPair * pairs; }
int64_t mqar_max_pairs(int64_t alphabet) { return alphabet / 2 - 1; }

// `n` distinct ids of [lo, hi), in the order drawn.
std::vector<int32_t> distinct(int64_t n, int64_t lo, int64_t hi, Generator& gen) {
  std::vector<int32_t> out;
  while (static_cast<int64_t>(out.size()) < n) {
    const auto v = static_cast<int32_t>(lo + static_cast<int64_t>(uniform_index(gen, static_cast<uint64_t>(hi - lo))));
    if (std::find(out.begin(), out.end(), v) == out.end()) out.push_back(v);
  }
  return out;
}

void mqar(int64_t pairs, int64_t alphabet, Generator& gen, AlgorithmicSample& out) {
  const int64_t n = mqar_length(pairs), context = 2 * pairs, space = (n - context) / 2;
  RPB_CHECK(pairs <= mqar_max_pairs(alphabet), "mqar", pairs, " pairs need ", pairs, " distinct keys in [1, ",
            alphabet / 2, "): task.alphabet ", alphabet, " holds ", mqar_max_pairs(alphabet));
  const std::vector<int32_t> keys = distinct(pairs, 1, alphabet / 2, gen), values = distinct(pairs, alphabet / 2,
                                                                                             alphabet, gen);
  std::vector<double> cdf(static_cast<std::size_t>(space));
  double total = 0;
  for (int64_t g = 0; g < space; ++g) cdf[static_cast<std::size_t>(g)] = total += std::pow(g + 1.0, kMqarPower - 1);
  std::vector<int64_t> gaps;
  while (static_cast<int64_t>(gaps.size()) < pairs) {  // successive draws, a repeat drawn again
    const double u = gen.uniform() * total;
    const auto g = static_cast<int64_t>(std::upper_bound(cdf.begin(), cdf.end(), u) - cdf.begin());
    if (g < space && std::find(gaps.begin(), gaps.end(), g) == gaps.end()) gaps.push_back(g);
  }
  out.inputs = uniform_symbols(n, alphabet, gen);  // the filler; the pairs and the queries overwrite their places
  out.targets.assign(static_cast<std::size_t>(n), static_cast<int32_t>(kUnscoredTarget));
  out.scored.assign(static_cast<std::size_t>(n), 0);
  for (int64_t i = 0; i < pairs; ++i) {
    const auto k = static_cast<std::size_t>(i);
    out.inputs[2 * k] = keys[k];
    out.inputs[2 * k + 1] = values[k];
    const auto q = static_cast<std::size_t>(context + 2 * gaps[k]);
    out.inputs[q] = keys[k];
    out.targets[q] = values[k];
    out.scored[q] = 1;
  }
}

// flip_flop: ids 0 'w' (write), 1 'r' (read), 2 'i' (ignore), 3 and 4 the bits 0 and 1. L instructions, each followed
// by a bit: the first is w and the last r (so every read has a write before it), the others i with probability 0.8 and
// w or r with 0.1 each (FFL(0.8), the dataset's train distribution); the bit after w or i is uniform, after r the bit
// of the latest w. The model reads the 2L tokens but the last and predicts each next one; the bits after r are the
// targets scored, and the only ones trained (Liu et al. train on every next token, most of them coin flips: rpb trains
// on the deterministic ones alone, as the other decoder tasks train on their answer).
constexpr int32_t kWrite = 0, kRead = 1, kIgnore = 2, kBit0 = 3;
constexpr double kIgnoreProbability = 0.8;

std::vector<std::string> flip_flop_names(int64_t) { return {"w", "r", "i", "0", "1"}; }

int64_t flip_flop_length(int64_t instructions) { return 2 * instructions - 1; }

void flip_flop(int64_t instructions, int64_t, Generator& gen, AlgorithmicSample& out) {
  std::vector<int32_t> tokens;
  int32_t reg = 0;
  for (int64_t k = 0; k < instructions; ++k) {
    int32_t op = k == 0 ? kWrite : k + 1 == instructions ? kRead : kIgnore;
    if (k > 0 && k + 1 < instructions) {
      const double u = gen.uniform();
      op = u < kIgnoreProbability ? kIgnore : u < (1 + kIgnoreProbability) / 2 ? kWrite : kRead;
    }
    const int32_t bit = op == kRead ? reg : static_cast<int32_t>(uniform_index(gen, 2));
    if (op == kWrite) reg = bit;
    tokens.push_back(op);
    tokens.push_back(kBit0 + bit);
  }
  const std::size_t t = tokens.size() - 1;
  out.inputs.assign(tokens.begin(), tokens.end() - 1);
  out.targets.assign(t, static_cast<int32_t>(kUnscoredTarget));
  out.scored.assign(t, 0);
  for (std::size_t p = 0; p < t; ++p)
    if (tokens[p] == kRead) {
      out.targets[p] = tokens[p + 1];
      out.scored[p] = 1;
    }
}

constexpr const char* kKazemnejad = "McGill-NLP/length-generalization@40f8a44 scripts/dataset_builders/";

}  // namespace

std::vector<AlgorithmicSpec> decoder_specs() {
  return {
      {.name = "copy", .summary = "Kazemnejad et al.'s copy of L tokens (task.alphabet symbols, 100 by default)",
       .reference = kKazemnejad, .encoder = true, .decoder = true, .literature = Framing::decoder, .min_length = 1,
       .default_alphabet = 100, .token_names = numbered_names, .instance = copy, .output_length = same_length},
      {.name = "addition",
       .summary = "Kazemnejad et al.'s sum of two decimal numbers, most significant digit first; L "
                  "digits in the longer",
       .reference = kKazemnejad, .encoder = false, .decoder = true, .literature = Framing::decoder, .min_length = 1,
       .token_names = addition_names, .instance = addition, .output_length = plus_one, .input_length = addition_input},
      {.name = "mqar",
       .summary = "Zoology's multi-query associative recall: L key-value pairs, each key asked "
                  "again later, in 16 L tokens of task.alphabet ids (8192 by default)",
       .reference = "HazyResearch/zoology@dbcb60d zoology/data/multiquery_ar.py", .encoder = false, .decoder = true,
       .literature = Framing::decoder, .min_length = 1, .default_alphabet = 8192, .token_names = numbered_names,
       .sequence = mqar, .sequence_length = mqar_length, .max_length = mqar_max_pairs},
      {.name = "flip_flop",
       .summary = "Liu et al.'s flip-flop language: L write / read / ignore instructions with bits, "
                  "each read answering the latest write",
       .reference = "synthseq/flipflop dataset card (FFL(0.8))", .encoder = false, .decoder = true,
       .literature = Framing::decoder, .min_length = 2, .token_names = flip_flop_names, .sequence = flip_flop,
       .sequence_length = flip_flop_length},
  };
}

}  // namespace rpb::data::algorithmic_detail
