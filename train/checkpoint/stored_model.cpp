#include "train/checkpoint/stored_model.h"

#include <algorithm>

#include "core/checked.h"
#include "core/text.h"
#include "train/config/memory.h"
#include "train/config/model.h"
#include "train/config/run_identity.h"
#include "train/data/task_registry.h"

namespace rpb {

namespace {

int64_t stored_parameters(const Checkpoint& c, const std::string& file) {
  int64_t n = 0;
  for (const auto& [name, t] : c.params) n = checked_add(n, t.numel(), ("checkpoint " + file).c_str(), "/params");
  return n;
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
}

std::unique_ptr<nn::Module> load_stored_model(const Checkpoint& c, const RunConfig& config, int64_t vocab,
                                              const std::string& file) {
  std::unique_ptr<nn::Module> model = make_model(config, vocab);
  load_parameters(c, *model, file);
  model->eval();  // reading a checkpoint never changes it: no forward marks table rows as trained, no dropout
  return model;
}

}  // namespace rpb
