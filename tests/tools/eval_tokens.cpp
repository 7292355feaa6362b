// A test tool: prints the held-out tokens `rpb eval CHECKPOINT --lengths L,...` scores, so another
// implementation (python/rpb_torch.py, tests/python/test_rpb_torch.py) can score exactly the same tokens.
// Usage: eval_tokens CHECKPOINT LENGTH[,LENGTH...] [KJV_PATH]
//        eval_tokens CHECKPOINT --encode FILE
// Prints the first N + 1 tokens of the task's test stream, space-separated on one line, where N is the
// number of target tokens every length scores (data::make_eval_plan); segment s of length l then has
// inputs tokens[s*l .. s*l+l-1] and targets tokens[s*l+1 .. s*l+l]. A text run's stream is encoded by the
// checkpoint's stored tokenizer, as `rpb eval` encodes it. With --encode, prints the ids the stored tokenizer gives
// the text of FILE (Tokenizer::encode: as `rpb generate` encodes a prompt, and the text task each document), so that
// rpb_torch.tokenizer can be held to them. Exits 2 with a message on bad input.
//
// An algorithmic task's checkpoint (train/data/algorithmic.h) has no stream: for each length the tool prints one line,
// "L inputs targets scored logits" with each a flat list of the held-out samples' (N, T) values as `rpb eval` scores
// them, and the stored model's (N, T, V) logits on them, comma-separated within the list (N = task.eval_samples):
// another implementation is held to rpb's logits, not only to the scores they give.
//
// With --at P0,P1,... (ascending, distinct), prints the first N test-stream tokens of a token task (N positions) on one
// line and the stored model's (1, N, V) logits with its tokens at those explicit positions (randomized positions,
// LanguageModel::forward_at) on the next.
//
// Why a tool and not Python: the stream comes from rpb's own generator (Markov tables, Dirichlet draws),
// which Python must not reimplement; the tool runs rpb's code, through the same calls as `rpb eval`.
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include "core/error.h"
#include "core/text.h"
#include "core/autograd.h"
#include "nn/transformer.h"
#include "train/checkpoint/checkpoint.h"
#include "train/checkpoint/stored_model.h"
#include "train/config/config.h"
#include "train/data/algorithmic.h"
#include "train/data/eval_segments.h"
#include "train/data/task.h"
#include "train/data/tokenizer.h"
#include "train/io/input_file.h"

namespace {

std::vector<int64_t> parse_lengths(const std::string& text, int64_t lowest = 1) {
  std::vector<int64_t> out;
  std::stringstream in(text);
  for (std::string item; std::getline(in, item, ',');) {
    std::size_t used = 0;
    int64_t v = 0;
    try {
      v = std::stoll(item, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (used == 0 || used != item.size() || v < lowest)
      throw rpb::Error("eval_tokens: \"" + rpb::printable(item) + "\" is not an integer of at least " +
                       std::to_string(lowest));
    out.push_back(v);
  }
  if (out.empty()) throw rpb::Error("eval_tokens: no lengths given");
  return out;
}

// The ids checkpoint `c`'s stored tokenizer gives the text of `path`, on one line.
int encode(const rpb::Checkpoint& c, const std::string& file, const std::string& path) {
  if (c.data.tokenizer.empty()) throw rpb::Error("eval_tokens --encode: " + file + " stores no tokenizer");
  if (path.empty()) throw rpb::Error("eval_tokens --encode: no text file given");
  const auto tokenizer = rpb::data::load_tokenizer(c.data.tokenizer, file + ": /data/tokenizer_model");
  rpb::InputOptions input;
  input.what = "eval_tokens --encode";
  input.max_bytes = std::size_t{1} << 20;
  std::string line;
  for (const int32_t id : tokenizer->encode(rpb::read_input_file(path, input))) {
    if (!line.empty()) line += ' ';
    line += std::to_string(id);
  }
  std::cout << line << "\n";
  return 0;
}

// "L inputs targets scored" per length: the held-out test samples of an algorithmic task.
int print_samples(const rpb::data::AlgorithmicTask& task, const std::vector<int64_t>& multipliers,
                  const rpb::Checkpoint& c, const rpb::RunConfig& cfg, const std::string& file) {
  const auto list = [](const std::vector<double>& values, bool integers) {
    std::ostringstream s;
    s.precision(9);
    for (std::size_t i = 0; i < values.size(); ++i) {
      if (i) s << ',';
      if (integers) s << static_cast<int64_t>(values[i]);
      else s << values[i];
    }
    return s.str();
  };
  const int64_t vocab = rpb::checkpoint_vocab(c, cfg, file);
  rpb::check_stored_model(c, cfg, vocab, file);
  const std::unique_ptr<rpb::nn::Module> model = rpb::load_stored_model(c, cfg, vocab, file);
  const auto& lm = dynamic_cast<const rpb::nn::LanguageModel&>(*model);
  rpb::NoGradGuard no_grad;
  const int64_t length = cfg.length;
  for (const int64_t m : multipliers) {
    rpb::Tensor inputs, targets;
    std::vector<uint8_t> scored;
    task.held_out(rpb::data::Split::test, m * length, inputs, targets, scored);
    const bool runs = lm.max_length() == 0 || inputs.size(1) <= lm.max_length();  // learned positions end
    std::cout << m * length << " " << list(inputs.to_vector(), true) << " " << list(targets.to_vector(), true) << " "
              << list(std::vector<double>(scored.begin(), scored.end()), true) << " "
              << (runs ? list(lm.forward(inputs).to_vector(), false) : "-") << "\n";
  }
  return 0;
}

// The first at.size() test tokens and the stored model's logits with them at positions `at`.
int print_at_positions(const rpb::Checkpoint& c, const rpb::RunConfig& cfg, const std::string& file,
                       const std::vector<int64_t>& at) {
  const auto task = rpb::data::make_task(cfg.task);
  const auto n = static_cast<int64_t>(at.size());
  if (static_cast<int64_t>(task->test_stream().size()) < n)
    throw rpb::Error("eval_tokens --at: the test stream holds fewer than " + std::to_string(n) + " tokens");
  const int64_t vocab = rpb::checkpoint_vocab(c, cfg, file);
  rpb::check_stored_model(c, cfg, vocab, file);
  const std::unique_ptr<rpb::nn::Module> model = rpb::load_stored_model(c, cfg, vocab, file);
  std::vector<int64_t> ids;
  for (int64_t i = 0; i < n; ++i) ids.push_back(task->test_stream()[i]);
  rpb::NoGradGuard no_grad;
  const rpb::Tensor logits = dynamic_cast<const rpb::nn::LanguageModel&>(*model).forward_at(
      rpb::Tensor::indices({1, n}, ids), std::make_shared<const std::vector<int64_t>>(at));
  std::ostringstream out;
  out.precision(9);
  for (std::size_t i = 0; i < ids.size(); ++i) out << (i ? " " : "") << ids[i];
  out << "\n";
  const std::vector<double> v = logits.to_vector();
  for (std::size_t i = 0; i < v.size(); ++i) out << (i ? " " : "") << v[i];
  std::cout << out.str() << "\n";
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3 || argc > 4) {
    std::cerr << "usage: eval_tokens CHECKPOINT LENGTH[,LENGTH...] [KJV_PATH]\n       eval_tokens CHECKPOINT --encode FILE\n"
                 "       eval_tokens CHECKPOINT --at POSITION[,POSITION...]\n";
    return 2;
  }
  try {
    const std::string file = argv[1];
    const rpb::Checkpoint c = rpb::load_checkpoint(file);
    if (std::string(argv[2]) == "--encode") return encode(c, file, argc == 4 ? argv[3] : "");
    rpb::RunConfig cfg = rpb::parse_config(c.config_text, file + " (stored config)");
    if (std::string(argv[2]) == "--at") {
      cfg.task.use = rpb::data::DataUse::evaluate;
      return print_at_positions(c, cfg, file, argc == 4 ? parse_lengths(argv[3], 0) : std::vector<int64_t>{});
    }
    cfg.task.kjv_path = argc == 4 ? argv[3] : "";
    if (!c.data.tokenizer.empty())  // a text run: its stored tokenizer, as `rpb eval`
      cfg.task.stored_tokenizer = std::make_shared<const rpb::data::TokenizerRecord>(c.data.tokenizer);
    cfg.task.generate_missing = false;  // as `rpb eval`: reading a checkpoint writes nothing
    std::vector<int64_t> multipliers;
    for (const int64_t l : parse_lengths(argv[2])) {
      if (l % cfg.length != 0)
        throw rpb::Error("eval_tokens: length " + std::to_string(l) + " is not a multiple of the train length " +
                         std::to_string(cfg.length));
      multipliers.push_back(l / cfg.length);
    }
    const auto task = rpb::data::make_task(cfg.task);
    if (const auto* algorithmic = dynamic_cast<const rpb::data::AlgorithmicTask*>(task.get()))
      return print_samples(*algorithmic, multipliers, c, cfg, file);
    const rpb::data::TokenStream& stream = task->test_stream();
    const rpb::data::EvalPlan plan =
        rpb::data::make_eval_plan(static_cast<int64_t>(stream.size()), cfg.length, multipliers, cfg.eval_tokens);
    std::string line;
    for (int64_t i = 0; i <= plan.tokens_scored; ++i) {  // piecewise: GCC 12 warns (-Wrestrict) on "" + string
      if (i) line += ' ';
      line += std::to_string(stream[i]);
    }
    std::cout << line << "\n";
    return 0;
  } catch (const std::exception& e) {
    std::cerr << rpb::terminal_text(e.what()) << "\n";
    return 2;
  }
}
