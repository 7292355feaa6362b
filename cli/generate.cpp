// rpb/cli/generate.cpp: `rpb generate` (the decoding itself is nn/generate.h).
#include "cli/generate.h"

#include <spdlog/spdlog.h>

#include <chrono>
#include <iostream>

#include "cli/common_options.h"
#include "core/text.h"
#include "core/unicode.h"
#include "nn/generate.h"
#include "train/checkpoint/checkpoint.h"
#include "train/checkpoint/checkpoint_finite.h"
#include "train/checkpoint/data_identity.h"
#include "train/checkpoint/stored_model.h"
#include "train/config/memory.h"
#include "train/data/passkey.h"
#include "train/data/passkey_prompt.h"
#include "train/data/kjv.h"
#include "train/data/task.h"
#include "train/data/task_registry.h"
#include "train/data/tokenizer.h"
#include "train/run/checkpoint_path.h"

namespace rpb {

std::vector<int64_t> parse_token_prompt(const std::string& prompt, int64_t vocab) {
  std::vector<int64_t> ids;
  std::size_t i = 0;
  while (i < prompt.size()) {
    if (prompt[i] == ' ' || prompt[i] == ',') {
      ++i;
      continue;
    }
    const std::size_t end = prompt.find_first_of(" ,", i);
    const std::string word = prompt.substr(i, end == std::string::npos ? std::string::npos : end - i);
    i = end == std::string::npos ? prompt.size() : end;
    const bool digits = word.size() <= 18 && word.find_first_not_of("0123456789") == std::string::npos;
    RPB_CHECK(digits && std::stoll(word) < vocab, "--prompt", "expected token ids in [0, ", vocab,
              ") separated by spaces or commas, found \"", printable(word, 40), "\"");
    ids.push_back(std::stoll(word));
  }
  RPB_CHECK(!ids.empty(), "--prompt", "expected at least one token id in [0, ", vocab, "), found \"",
            printable(prompt, 40), "\"");
  return ids;
}

namespace {

// A kjv prompt's characters as ids of the task's vocabulary.
std::vector<int64_t> encode_kjv_prompt(const data::KjvTask& task, const std::string& prompt) {
  RPB_CHECK(!prompt.empty(), "--prompt", "expected at least one character of the kjv text, found an empty prompt");
  std::vector<int64_t> ids;
  for (std::size_t i = 0; i < prompt.size(); ++i) {
    const std::size_t id = task.chars().find(prompt[i]);
    RPB_CHECK(id != std::string::npos, "--prompt", "character \"", printable(prompt.substr(i, 1)), "\" at byte ", i,
              " is not in the kjv vocabulary of ", task.vocab(), " characters (\"", printable(task.chars()), "\")");
    ids.push_back(static_cast<int64_t>(id));
  }
  return ids;
}

// A text prompt as ids of a stored tokenizer (a text run's).
std::vector<int64_t> encode_text_prompt(const data::Tokenizer& tokenizer, const std::string& prompt) {
  RPB_CHECK(!prompt.empty(), "--prompt", "expected some text, found an empty prompt");
  const std::vector<int32_t> ids = tokenizer.encode(prompt);
  return {ids.begin(), ids.end()};
}


// What turns ids into output: kjv characters or a tokenizer's text (escaped for the terminal; a character whose
// bytes span tokens is printed once whole; bytes that are not UTF-8 print as U+FFFD, as Python's errors="replace"
// decodes them), or ids. With a tokenizer, the ids from `passkey` on (a passkey_text
// model's digits and markers) print as the digits and data::passkey_marker_text's markers.
struct Printer {
  const data::KjvTask* kjv = nullptr;
  const data::Tokenizer* tokenizer = nullptr;
  int64_t passkey = -1;  // the first of the passkey task's own ids past the tokenizer's; -1: none
  bool first = true;
  std::string pending;  // a tokenizer's bytes not yet printed: the start of a character
  void operator()(int64_t id) {
    if (kjv) {
      std::cout << terminal_text(std::string(1, kjv->chars()[static_cast<std::size_t>(id)]));
    } else if (tokenizer && passkey >= 0 && id >= passkey) {
      finish();
      const int64_t extra = id - passkey;
      std::cout << (extra < data::kPasskeyKeyMarker ? std::string(1, static_cast<char>('0' + extra))
                                                    : data::passkey_marker_text(extra));
    } else if (tokenizer) {
      pending += tokenizer->token_bytes(static_cast<int32_t>(id));
      const std::size_t n = data::printable_prefix(pending);
      std::cout << terminal_text(replace_invalid_utf8(pending.substr(0, n)));
      pending.erase(0, n);
    } else {
      std::cout << (first ? "" : " ") << id;
    }
    first = false;
    std::cout.flush();
  }
  void finish() {
    if (!pending.empty()) std::cout << terminal_text(replace_invalid_utf8(pending));  // an incomplete character
    pending.clear();
  }
};

}  // namespace

int cmd_generate(const GenerateRequest& r) {
  const CheckpointRef ref = resolve_checkpoint(r.checkpoint);
  StoredCheckpoint stored = read_stored_checkpoint(ref.file, !ref.run_dir.empty());
  if (stored.edited()) spdlog::warn("generate: {}", edited_config_warning(stored));
  const Checkpoint& c = stored.checkpoint;
  RunConfig& cfg = stored.config;
  RPB_CHECK(cfg.dims() == 1, "generate", ref.file, ": a ", cfg.task.kind,
            " model predicts the cells of a grid, not a sequence; generate runs models of the 1-D tasks (",
            join(data::task_names(1), ", "), ")");
  RPB_CHECK(cfg.model.causal, "generate", ref.file, ": a bidirectional model (model.causal = false, the encoder "
            "framing of ", cfg.task.kind, ") reads its whole input at once and answers at blanks in one forward; "
            "generate decodes a causal model token by token. rpb eval scores it");
  cfg.task.kjv_path = r.kjv_path;  // the user's text, never the path stored in the file; nothing is written
  cfg.task.generate_missing = false;
  RunConfig sized = cfg;  // the estimate of one forward over the whole generated sequence
  sized.eval_batch = 1;
  const int64_t longest = static_cast<int64_t>(r.prompt.size()) + r.tokens;  // at most one token per prompt byte
  sized.eval_multipliers = {std::max<int64_t>(1, (longest + cfg.length - 1) / cfg.length)};
  const int64_t vocab = checkpoint_vocab(c, cfg, ref.file);
  check_stored_model(c, cfg, vocab, ref.file);  // first: a config that does not fit the file's parameters says so
  check_memory(estimate_memory(sized, vocab, MemoryUse::generate), memory_budget(), "generate");
  check_finite(c, ref.file);
  std::unique_ptr<nn::Module> module = load_stored_model(c, cfg, vocab, ref.file);
  auto& model = dynamic_cast<nn::LanguageModel&>(*module);
  std::unique_ptr<data::Task> task;
  std::unique_ptr<data::Tokenizer> tokenizer;
  const data::TaskInfo& row = data::task_info(cfg.task.kind);
  if (row.stores_tokenizer) {  // the checkpoint holds the tokenizer: no text is read
    RPB_CHECK(!c.data.tokenizer.empty(), "generate", ref.file, ": a ", cfg.task.kind,
              " run's checkpoint without its tokenizer (/data/tokenizer_model)");
    // Its ids against the model's embedding: check_stored_model, above.
    tokenizer = data::load_tokenizer(c.data.tokenizer, ref.file + ": /data/tokenizer_model");
  } else if (row.reads_text) {  // the vocabulary is the text's characters
    task = data::make_task(cfg.task);
    check_data_identity(c.data, data_identity(*task), ref.file, r.other_text, "generate");
    RPB_CHECK(task->vocab() == model.options().vocab, "generate", "the kjv text ", task->describe(), " has ",
              task->vocab(), " characters, but ", ref.file, " was trained on ", model.options().vocab,
              " (pass the text it was trained on with --kjv-path)");
  }
  const auto* kjv = dynamic_cast<const data::KjvTask*>(task.get());
  std::vector<int64_t> prompt;
  try {
    prompt = kjv                          ? encode_kjv_prompt(*kjv, r.prompt)
             : tokenizer && row.retrieval ? data::encode_passkey_prompt(*tokenizer, r.prompt, cfg.task.passkey_digits)
             : tokenizer                  ? encode_text_prompt(*tokenizer, r.prompt)
                                          : parse_token_prompt(r.prompt, model.options().vocab);
  } catch (const Error& e) {
    throw UsageError(e.message(), e.location());  // the command line's prompt: exit 2, no source path unless -v
  }
  nn::GenerateOptions o;
  o.tokens = r.tokens;
  o.sampling = {r.temperature, r.top_k, r.seed};
  o.use_cache = !r.no_cache;
  nn::check_generation_length(model, static_cast<int64_t>(prompt.size()) + r.tokens);
  Printer print;
  print.kjv = kjv;
  print.tokenizer = tokenizer.get();
  if (tokenizer && row.retrieval) print.passkey = tokenizer->vocab();
  for (int64_t id : prompt) print(id);
  const auto t0 = std::chrono::steady_clock::now();
  nn::generate(model, prompt, o, [&](int64_t id) { print(id); });
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  print.finish();
  std::cout << std::endl;  // before the log line on stderr
  spdlog::info("{} tokens after a prompt of {} in {:.3f} s ({:.0f} tokens/s, {})", r.tokens, prompt.size(), secs,
               secs > 0 ? static_cast<double>(r.tokens) / secs : 0.0, o.use_cache ? "KV cache" : "no cache");
  return 0;
}

namespace {

// "kjv, text, passkey_text: text (passkey_text: ...); markov, lag, passkey: token ids separated by spaces or commas",
// from the task registry's 1-D rows.
std::string prompt_help() {
  std::vector<std::string> text, tokens, retrieval;
  for (const data::TaskInfo& t : data::tasks()) {
    if (t.dims == 1) (t.reads_text ? text : tokens).emplace_back(t.name);
    if (t.dims == 1 && t.reads_text && t.retrieval) retrieval.emplace_back(t.name);
  }
  const std::string markers = retrieval.empty() ? "" : " (" + join(retrieval, ", ") + ": " +
      data::passkey_marker_text(data::kPasskeyKeyMarker) + " and " +
      data::passkey_marker_text(data::kPasskeyQueryMarker) + " followed by digits write the key "
      "and the question)";
  return join(text, ", ") + ": text" + markers + "; " + join(tokens, ", ") +
         ": token ids separated by spaces or commas";
}

}  // namespace

CommandRunner add_generate_command(CLI::App& cmd) {
  struct Args {
    GenerateRequest request;
    std::string max_memory;
  };
  auto a = std::make_shared<Args>();
  GenerateRequest& r = a->request;
  add_checkpoint_argument(cmd, r.checkpoint);
  cmd.add_option("--prompt", r.prompt, prompt_help())->required();
  cmd.add_option("--tokens", r.tokens, "new tokens (may pass the train length; not the scheme's longest length)")
      ->check(CLI::Range(int64_t{0}, int64_t{1} << 16));
  cmd.add_option("--temperature", r.temperature, "softmax temperature; 0: greedy (argmax)")
      ->check(CLI::Range(0.0, 1e6));
  cmd.add_option("--top-k", r.top_k, "sample among the k most likely tokens (0: all)")
      ->check(CLI::Range(int64_t{0}, int64_t{1} << 16));
  cmd.add_option("--seed", r.seed, "seed of the sampling draws (the same seed gives the same tokens)");
  cmd.add_flag("--no-cache", r.no_cache, "recompute the whole sequence for every token (slow; to compare)");
  cmd.add_option("--data,--kjv-path", r.kjv_path,
                 "kjv runs: the text whose characters are the vocabulary (default checkpoints/data/kjv.txt); it must "
                 "be the training text (its characters and SHA-256 are checked) unless --other-text. A run of " +
                     join(data::task_names_with(&data::TaskInfo::stores_tokenizer), ", ") +
                     " needs none: its checkpoint holds its tokenizer");
  cmd.add_flag("--other-text", r.other_text,
               "kjv runs: read the vocabulary from a text other than the one the checkpoint was trained on (the same "
               "characters)");
  add_memory_option(cmd, a->max_memory);
  return [a] {
    apply_memory_option(a->max_memory);
    return cmd_generate(a->request);
  };
}

}  // namespace rpb
