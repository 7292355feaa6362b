#include "train/checkpoint/stored_model.h"

#include <algorithm>

#include "core/checked.h"
#include "core/text.h"
#include "train/config/memory.h"
#include "train/config/model.h"
#include "train/config/run_identity.h"
#include "train/data/passkey.h"
#include "train/data/task_registry.h"
#include "train/data/tokenizer.h"

namespace rpb {

namespace {

// The token embedding's parameter (nn/transformer.h): a row per id.
constexpr const char* kEmbedding = "tok.weight";

int64_t stored_parameters(const Checkpoint& c, const std::string& file) {
  int64_t n = 0;
  for (const auto& [name, t] : c.params) n = checked_add(n, t.numel(), ("checkpoint " + file).c_str(), "/params");
  return n;
}

// A task that stores its tokenizer (text, passkey_text): the tokenizer's ids, and the digits and markers a retrieval
// task adds, must be the rows of the model's embedding, or the tokenizer is not the one the parameters learned. A
// missing tokenizer or embedding is left to the commands and to check_params, which name them.
void check_stored_tokenizer(const Checkpoint& c, const RunConfig& config, const std::string& file) {
  const data::TaskInfo& task = data::task_info(config.task.kind);
  const auto embedding =
      std::find_if(c.params.begin(), c.params.end(), [](const auto& p) { return p.first == kEmbedding; });
  if (!task.stores_tokenizer || c.data.tokenizer.empty() || embedding == c.params.end() ||
      embedding->second.dim() != 2)
    return;
  const int64_t ids = data::load_tokenizer(c.data.tokenizer, file + ": /data/tokenizer_model")->vocab();
  const int64_t added = task.retrieval ? data::kPasskeyExtraTokens : 0;
  const int64_t rows = embedding->second.shape()[0];
  RPB_CHECK(ids + added == rows, ("checkpoint " + file).c_str(), "the stored tokenizer (/data/tokenizer_model) has ",
            ids, " ids",
            added ? " and the " + config.task.kind + " task adds " + std::to_string(added) + " (" +
                        std::to_string(ids + added) + " in all)"
                  : "",
            ", but the model's embedding (/params/", kEmbedding, ") has ", rows,
            " rows: the tokenizer is not the one these parameters were trained with");
}

}  // namespace

StoredCheckpoint read_stored_checkpoint(const std::string& file, bool in_run_folder, FileDigest digest) {
  StoredCheckpoint s;
  s.checkpoint = load_checkpoint(file, in_run_folder, digest);
  s.config = parse_stored_config(s.checkpoint.config_text, file + " (stored config)");
  s.file = file;
  s.digest = config_digest(s.config);
  return s;
}

std::string edited_config_warning(const StoredCheckpoint& s) {
  return printable(s.file) + ": the stored config_digest " + printable(s.checkpoint.config_digest, 100) +
         " differs from the digest of the stored config " + s.digest +
         ": the config was edited after the checkpoint was written (eval, generate and train --resume read the "
         "edited config, not the one the parameters were trained with)";
}

int64_t checkpoint_vocab(const Checkpoint& c, const RunConfig& config, const std::string& file) {
  const std::string op = "checkpoint " + file;
  for (const auto& [name, value] : c.counters)
    if (name == "vocab") {
      RPB_CHECK(value >= 1 && value <= run_limits::kMaxVocab, op.c_str(), "/state vocab ", value, " is outside [1, ",
                run_limits::kMaxVocab, "]");
      return value;
    }
  if (!data::task_info(config.task.kind).data_vocab_bound) return config.task.vocab;
  // The parameter count grows with the vocabulary (the embedding rows), so at most one fits.
  const int64_t held = stored_parameters(c, file);
  for (int64_t v = 1; v <= vocab_bound(config); ++v)
    if (model_parameter_count(config, v) == held) return v;
  RPB_FAIL(op.c_str(), "no vocabulary of at most ", vocab_bound(config), " characters gives the stored config's model ",
           "the ", held, " parameters the file holds in /params");
}

void check_checkpoint_step(const Checkpoint& c, const RunConfig& config, const std::string& file) {
  RPB_CHECK(c.step >= 0 && c.step <= config.steps, ("checkpoint " + file).c_str(), "step ", c.step,
            " is outside [0, run.steps = ", config.steps, "] (a damaged file, or a run.steps below the run's step)");
}

void check_stored_model(const Checkpoint& c, const RunConfig& config, int64_t vocab, const std::string& file) {
  check_checkpoint_step(c, config, file);
  const int64_t want = model_parameter_count(config, vocab), held = stored_parameters(c, file);
  // A model near the file's size is built and compared parameter by parameter (check_params names each difference); one
  // far larger would only allocate memory the file cannot fill.
  const int64_t slack = std::max<int64_t>(held, int64_t{1} << 20);
  const nn::TransformerOptions& m = config.model;
  RPB_CHECK(want <= held + slack, ("checkpoint " + file).c_str(), "the stored config describes a model of ", want,
            " parameters (vocab ", vocab, ", d_model ", m.d_model, ", layers ", m.layers, ", d_ff ", m.d_ff,
            ", position ", config.model.position.scheme, "), far more than the ", held,
            " the file holds in /params; the config attribute and the "
            "parameters do not belong together");
  check_stored_tokenizer(c, config, file);
}

std::unique_ptr<nn::Module> load_stored_model(const Checkpoint& c, const RunConfig& config, int64_t vocab,
                                              const std::string& file) {
  std::unique_ptr<nn::Module> model = make_model(config, vocab);
  load_parameters(c, *model, file);
  model->eval();  // reading a checkpoint never changes it: no forward marks table rows as trained, no dropout
  return model;
}

}  // namespace rpb
