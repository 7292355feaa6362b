// rpb/train/data/algorithmic_context_free.cpp: Delétang et al.'s deterministic context-free tasks that rpb runs
// (reverse string, stack manipulation), as google-deepmind/neural_networks_chomsky_hierarchy @
// 2a0eecc6bc090619e9db423961bef8a542854b49 tasks/dcf/*.py generate them, in the order they draw (the draws are rpb's
// generator's: the same distribution, not the same bits).
#include <string>
#include <vector>

#include "train/data/algorithmic_detail.h"

namespace rpb::data::algorithmic_detail {

namespace {

// reverse_string.py (a DuplicateString with the string flipped): uniform symbols of task.alphabet (the reference's
// vocab_size; 2 in the randomized_positional_encodings TASK_BUILDERS); the answer is the string reversed.
void reverse(int64_t length, int64_t alphabet, Generator& gen, AlgorithmicInstance& out) {
  out.input = uniform_symbols(length, alphabet, gen);
  out.output.assign(out.input.rbegin(), out.input.rend());
  out.scored = length;
}

// stack_manipulation.py: ids 0, 1 the stack's symbols, 2 POP, 3 PUSH 0, 4 PUSH 1, 5 the termination token (the
// reference's output class 2, given an id of its own). A stack of s ~ U[1, L - 1] symbols (bottom to top), then
// L - s actions uniform over POP, PUSH 0, PUSH 1, a POP of an empty stack ignored; at L = 1, one symbol and no
// action. The answer is the final stack top to bottom and the termination token; the output is padded with 0 to L + 1
// positions, and the padding is not scored (the reference's accuracy mask), though the loss reads it.
constexpr int32_t kPop = 2, kPush0 = 3, kStackEnd = 5;

std::vector<std::string> stack_names(int64_t) { return {"0", "1", "POP", "PUSH0", "PUSH1", "END"}; }

void stack(int64_t length, int64_t, Generator& gen, AlgorithmicInstance& out) {
  std::vector<int32_t> st;
  if (length == 1) {
    out.input = uniform_symbols(1, 2, gen);
    st = out.input;
  } else {
    const int64_t s = uniform_between(gen, 1, length - 1);
    out.input = uniform_symbols(s, 2, gen);
    st = out.input;
    const std::vector<int32_t> actions = uniform_symbols(length - s, 3, gen);
    for (const int32_t a : actions) {
      const int32_t action = kPop + a;
      out.input.push_back(action);
      if (action == kPop) {
        if (!st.empty()) st.pop_back();
      } else {
        st.push_back(action - kPush0);
      }
    }
  }
  out.output.assign(st.rbegin(), st.rend());
  out.output.push_back(kStackEnd);
  out.scored = static_cast<int64_t>(out.output.size());
  out.output.resize(static_cast<std::size_t>(length + 1), 0);
}

constexpr const char* kContextFreeReference = "google-deepmind/neural_networks_chomsky_hierarchy@2a0eecc tasks/dcf/";

}  // namespace

std::vector<AlgorithmicSpec> context_free_specs() {
  return {
      {.name = "reverse_string",
       .summary = "Delétang et al.'s string reversed (deterministic context-free; task.alphabet "
                  "symbols, 2 by default); also Kazemnejad et al.'s reverse",
       .reference = kContextFreeReference, .encoder = true, .decoder = true, .literature = Framing::encoder,
       .min_length = 1, .default_alphabet = 2, .token_names = numbered_names, .instance = reverse,
       .output_length = same_length},
      {.name = "stack_manipulation",
       .summary = "Delétang et al.'s stack of bits and POP / PUSH actions: the final stack, top "
                  "first (deterministic context-free)",
       .reference = kContextFreeReference, .encoder = true, .decoder = true, .literature = Framing::encoder,
       .min_length = 1, .token_names = stack_names, .instance = stack, .output_length = plus_one},
  };
}

}  // namespace rpb::data::algorithmic_detail
