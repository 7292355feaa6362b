// No config key is accepted and silently ignored (issue 24): every key the parser accepts (train/config/config.h
// accepted_keys), against every registered scheme (nn/position/registry.cpp) and every task, is refused for it, or
// honoured: setting it changes what the model and its data compute (the parameters, a forward, the first training
// loss, a test evaluation, the token streams), or it is one of the keys listed below with the reason it has no such
// effect. Keys shared by a sweep's schemes and tasks ([position] num_buckets for t5, [task] lag for lag, ...) apply
// where they mean something: for the others, the walk checks they change nothing, so the list below is exact.
// Cheap: tiny models, one forward and one loss each, no training.
#include <doctest/doctest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iomanip>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "core/autograd.h"
#include "nn/grid_model.h"
#include "nn/position.h"
#include "nn/position/options.h"
#include "nn/transformer.h"
#include "test_util.h"
#include "train/config/config.h"
#include "train/data/task_registry.h"
#include "train/workload.h"

namespace rpb_test_keys_honoured {

using rpb::testing::contains;
using rpb::testing::TempDir;

// One model to walk the keys against: a task and a scheme.
struct Combo {
  std::string task, scheme;
  const rpb::nn::SchemeInfo* info;
  rpb::RunConfig base;
};

// Keys read by the trainer or by evaluation alone, for every scheme and task alike (not what a model or its data
// compute); they are checked where they are used (tests of the trainer, the optimizers and `rpb eval`).
const std::set<std::string>& trainer_keys() {
  static const std::set<std::string> keys = {
      "run.name", "run.out_dir", "run.steps", "run.log_every", "run.checkpoint_every", "run.eval_multipliers",
      "run.eval_batch", "run.eval_every", "run.eval_diagnostics", "run.valid_multipliers", "run.valid_tokens",
      "run.on_nonfinite", "optim.kind", "optim.lr", "optim.schedule", "optim.warmup_steps", "optim.min_lr_ratio",
      "optim.beta1", "optim.beta2", "optim.eps", "optim.weight_decay", "optim.momentum", "optim.grad_clip",
      "optim.total_steps",
      // a fine-tune's parent and training length, read by the trainer (tests/test_finetune.cpp)
      "run.init_from", "run.init_sha256", "run.finetune_length",
      // where the run trains, read by the trainer (tests/test_train_device.cpp)
      "run.device"};
  return keys;
}

// Keys whose effect is not a different number by design, with the reason.
const std::map<std::string, std::string>& same_numbers_keys() {
  static const std::map<std::string, std::string> keys = {
      {"model.fused_attention", "the fused kernel or the reference path: the same numbers (tests/test_attention.cpp)"},
      {"position.scheme", "the scheme itself: the walk's other axis"},
      {"task.kind", "the task itself: the walk's other axis"},
  };
  return keys;
}

// Evaluation keys refused where they mean nothing (the parser's own checks), read by evaluation elsewhere.
const std::map<std::string, std::string>& evaluation_keys() {
  static const std::map<std::string, std::string> keys = {
      {"position.untrained", "\"nearest\""},  // the row-table schemes (SchemeInfo::row_table)
      {"grid.eval_window", "4"},              // the window schemes
      {"run.eval_stride", "1"},               // the token tasks (sliding-window evaluation, tests/test_eval_stride.cpp)
      {"position.rope_scaling", "\"yarn\""},  // rope (tests/test_rope_scaling.cpp)
      {"position.rope_factor", "4.0"},
      {"position.rope_factor_per_length", "true"},
      {"position.yarn_beta_fast", "16.0"},
      {"position.yarn_beta_slow", "2.0"},
      {"position.yarn_attention_factor", "1.5"},
      {"position.blockwise", "true"},         // xpos
      {"position.contiguous_eval", "true"},   // the 1-D schemes, with randomized positions
  };
  return keys;
}

// Whether the model or the data of `c` reads `key`: the specification the walk checks. Every key of accepted_keys()
// outside the three lists above must be answered here.
bool reads(const std::string& key, const Combo& c) {
  const std::string& s = c.scheme;
  const bool grid = c.task == "grid2d", window = c.info->kind == rpb::nn::PositionKind::window;
  const rpb::nn::PositionOptions po = c.base.position();
  const bool scaled = c.base.embedding_recipe() == rpb::nn::EmbeddingRecipe::scaled;
  static const std::set<std::string> every = {
      "model.d_model", "model.heads", "model.layers", "model.d_ff", "model.dropout", "model.attn_scale",
      "model.init_std", "model.gelu", "model.embedding", "run.seed", "run.batch", "run.length"};
  if (every.count(key)) return true;
  const rpb::data::TaskInfo& task = rpb::data::task_info(c.task);
  const bool markov_filler = task.retrieval && !task.reads_text;  // passkey: a Markov chain's streams
  // passkey scores task.passkey_samples per depth, an algorithmic task task.eval_samples
  if (key == "run.eval_tokens") return !task.retrieval && !task.algorithmic;
  // An algorithmic task's framing (model.causal; refused where the task or the scheme has no encoder framing, above)
  // and its keys: the alphabet where the spec leaves it free, the curriculum's shortest length, the held-out samples.
  if (key == "model.causal") return !grid;
  if (key == "position.randomized") return true;  // a 1-D scheme's training forwards draw their positions
  if (key == "task.alphabet") return task.algorithmic && task.algorithmic->default_alphabet > 0;
  if (key == "task.min_length" || key == "task.eval_samples") return task.algorithmic != nullptr;
  // Logits read the token embedding under the gpt2 recipe (nn/transformer.h); a grid model has its own head.
  if (key == "model.tie_head") return !grid && !scaled;
  if (key == "model.share_position") return !grid && c.info->per_layer && c.info->learned(po);
  // The position options: the table says which schemes read each (nn/position/options.h); learned positions of a
  // sequence model under the scaled recipe take fairseq's 1/sqrt(d_model) instead of init_std.
  if (key == "position.init_std" && scaled && !grid && c.info->kind == rpb::nn::PositionKind::absolute) return false;
  for (const rpb::nn::PositionOptionInfo& o : rpb::nn::position_option_table())
    if (key == std::string(o.table) + "." + o.key && !o.reads_if && !o.refused_elsewhere)
      return o.read_by(*c.info);
  if (key == "grid.window" || key == "grid.shift") return window;
  if (key == "grid.cpb_hidden") return s == "swin_v2";
  if (key == "task.vocab") return !task.reads_text && !task.algorithmic;  // text and passkey_text: bytes here
  if (key == "task.seed") return !task.reads_text || task.retrieval;  // passkey_text: its held-out samples' draws
  if (key == "task.order" || key == "task.concentration") return c.task == "markov" || markov_filler;
  if (key == "task.lag") return c.task == "lag";
  if (key == "task.noise") return c.task == "lag" || c.task == "grid2d";
  if (key == "task.train_tokens" || key == "task.eval_tokens")  // passkey: its filler's streams
    return task.held_out == rpb::data::HeldOut::eval_tokens || markov_filler;
  if (key == "task.passkey_digits" || key == "task.passkey_samples") return task.retrieval;
  if (key == "task.kjv_path") return c.task == "kjv";
  if (key == "task.path" || key == "task.documents" || key == "task.valid_fraction" || key == "task.test_fraction" ||
      key == "task.tokenizer")
    return task.stores_tokenizer;
  // SentencePiece's own keys: the base text config tokenizes bytes (tests/test_text_task.cpp trains SentencePiece)
  if (key == "task.sentencepiece_model" || key == "task.sentencepiece_sentences") return false;
  FAIL("config key " << key << " is accepted but not classified: say in tests/test_keys_honoured.cpp which schemes "
                        "and tasks read it (and make the others refuse it or ignore it by design)");
  return false;
}

// Another valid value of `key` than the base config's, as --set takes it.
std::string other_value(const std::string& key, const Combo& c, const std::string& other_text) {
  static const std::map<std::string, std::string> values = {
      {"model.d_model", "16"}, {"model.heads", "4"}, {"model.layers", "3"}, {"model.d_ff", "8"},
      {"model.dropout", "0.5"}, {"model.tie_head", "false"}, {"model.share_position", "false"},
      {"model.attn_scale", "1.0"}, {"model.init_std", "0.05"}, {"model.gelu", "\"erf\""},
      {"run.seed", "1"}, {"run.batch", "3"}, {"run.eval_tokens", "48"},
      {"position.num_buckets", "16"}, {"position.max_distance", "64"}, {"position.max_relative_position", "1"},
      {"position.lambda", "1.0"}, {"position.learnable_lambda", "true"}, {"position.max_positions", "128"},
      {"position.rope_base", "100.0"}, {"position.xpos_scale_base", "64"}, {"position.fire_length", "3"}, {"position.fire_hidden", "8"},
      {"position.init_std", "0.5"}, {"grid.window", "4"}, {"grid.shift", "false"},
      {"grid.cpb_hidden", "8"}, {"grid.max_side", "16"}, {"task.vocab", "7"}, {"task.seed", "5"},
      {"task.order", "1"}, {"task.concentration", "2.0"}, {"task.lag", "3"}, {"task.noise", "0.3"},
      {"task.train_tokens", "2048"}, {"task.eval_tokens", "2048"}, {"task.documents", "\"blank_lines\""},
      {"task.valid_fraction", "0.3"}, {"task.test_fraction", "0.3"}, {"task.tokenizer", "\"chars\""},
      {"task.sentencepiece_model", "\"bpe\""}, {"task.sentencepiece_sentences", "5000"},
      {"task.passkey_digits", "3"}, {"task.passkey_samples", "3"}, {"model.causal", "false"},
      {"task.alphabet", "90"}, {"task.min_length", "3"}, {"task.eval_samples", "3"},
      {"position.randomized", "true"}, {"position.randomized_max", "512"}};
  if (key == "model.embedding")
    return c.base.embedding_recipe() == rpb::nn::EmbeddingRecipe::scaled ? "\"gpt2\"" : "\"scaled\"";
  if (key == "run.length") return c.task == "grid2d" ? "3" : rpb::data::task_info(c.task).algorithmic ? "6" : "16";
  if (key == "task.kjv_path") return "\"" + other_text + "\"";
  if (key == "task.path") return "\"" + other_text + ".d\"";  // write_corpus's folder beside the other kjv text
  const auto it = values.find(key);
  REQUIRE_MESSAGE(it != values.end(), "no other value for " << key);
  return it->second;
}

// Values to 9 significant digits.
void print(std::ostream& os, const rpb::Tensor& t) {
  os << std::setprecision(9);
  for (const double v : t.to_vector()) os << v << ' ';
  os << '\n';
}
void print(std::ostream& os, const std::vector<int32_t>& stream) {
  os << stream.size() << ':';
  for (const int32_t v : stream) os << v << ' ';
  os << '\n';
}

// What the model and data of `cfg` compute: parameter names and shapes, a forward in evaluation mode (no dropout),
// the first training loss (training mode), a test evaluation and, for the token tasks, the streams.
std::string fingerprint(const rpb::RunConfig& cfg) {
  std::ostringstream os;
  const std::unique_ptr<rpb::Workload> w = rpb::make_workload(cfg);
  rpb::nn::Module& model = w->model();
  for (const auto& [name, t] : model.named_parameters()) os << name << t.shape() << ' ';
  rpb::NoGradGuard no_grad;
  model.eval();
  if (cfg.dims() == 2) {
    const int64_t side = cfg.length;
    std::vector<int64_t> ids(static_cast<std::size_t>(side * side));
    for (std::size_t i = 0; i < ids.size(); ++i) ids[i] = static_cast<int64_t>(i % 2);
    print(os, dynamic_cast<rpb::nn::GridModel&>(model).forward(rpb::Tensor::indices({1, side, side}, ids)));
  } else {
    std::vector<int64_t> ids(static_cast<std::size_t>(cfg.length));
    for (std::size_t i = 0; i < ids.size(); ++i) ids[i] = static_cast<int64_t>(i % 2);
    print(os, dynamic_cast<rpb::nn::LanguageModel&>(model).forward(rpb::Tensor::indices({1, cfg.length}, ids)));
  }
  model.train();
  // Three batches: an algorithmic task draws each batch's length (task.min_length bounds it).
  for (int64_t step = 1; step <= 3; ++step) os << std::setprecision(17) << w->next_loss({}, step).item() << '\n';
  for (const rpb::LengthResult& r : w->evaluate({1}, rpb::data::Split::test, 0, nullptr)) os << *r.nll << ' ' << r.tokens << '\n';
  if (cfg.dims() == 1) {
    const auto task = rpb::data::make_task(cfg.task);
    print(os, task->train_stream().to_vector());
    print(os, task->valid_stream().to_vector());
    print(os, task->test_stream().to_vector());
  }
  return os.str();
}

// A text in kjv's layout: 20 books of three verses (the test split, books 9 and 19, holds over 64 characters); and
// the same books as 20 files of the folder <path>.d, the text task's corpus.
void write_kjv(const std::string& path, const std::string& word) {
  std::ofstream f(path);
  std::filesystem::create_directories(path + ".d");
  for (int b = 0; b < 20; ++b) {
    std::ostringstream book;
    book << "Book " << char('A' + b) << " verse one of " << word << ".\nAnd the second verse!\nThe third verse, the last.\n";
    f << (b ? "\n" : "") << book.str();
    std::ofstream(path + ".d/book" + std::to_string(10 + b) + ".txt") << book.str();
  }
}

std::string base_text(const std::string& task, const std::string& scheme, const std::string& kjv_path) {
  const bool grid = task == "grid2d";
  std::string text = grid ? "[run]\nlength = 4\nbatch = 2\neval_multipliers = [1]\neval_tokens = 32\n"
                          : "[run]\nlength = 32\nbatch = 2\neval_multipliers = [1]\neval_tokens = 64\n";
  text += "out_dir = \"" + kjv_path + ".runs\"\n";  // the text task's token cache goes there, not into the working folder
  // An algorithmic task's length counts pairs or digits: mqar's 32 would be 512 tokens, past a learned table of 128;
  // at 24 even the one-answer tasks reach t5's log-spaced buckets (max_distance).
  if (rpb::data::task_info(task).algorithmic)
    text.replace(text.find("length = 32"), 11, task == "mqar" ? "length = 8" : "length = 24");
  text += "[model]\nd_model = 8\nheads = 2\nlayers = 2\nd_ff = 16\n[position]\nscheme = \"" + scheme + "\"\n";
  text += "[task]\nkind = \"" + task + "\"\nvocab = 5\ntrain_tokens = 1024\neval_tokens = 1024\n";
  if (task == "kjv") text += "kjv_path = \"" + kjv_path + "\"\n";
  const rpb::data::TaskInfo& row = rpb::data::task_info(task);
  if (row.stores_tokenizer) text += "path = \"" + kjv_path + ".d\"\nvalid_fraction = 0.2\ntest_fraction = 0.2\n";
  if (row.retrieval) text += "passkey_digits = 2\npasskey_samples = 2\n";
  if (row.algorithmic) text += "alphabet = 80\neval_samples = 4\n";  // mqar's 32 pairs need 66 ids or more
  text += "[grid]\nwindow = 2\nmax_side = 8\ncpb_hidden = 16\n";
  return text;
}

}  // namespace rpb_test_keys_honoured

using namespace rpb_test_keys_honoured;

namespace rpb_test_keys_honoured {

// What the walk counted: keys honoured (read and changing what the model computes), inert (neither) and refused.
struct WalkCounts {
  int honoured = 0, inert = 0, refused = 0;
};

// Walks every config key for every scheme of each task `walked` says yes to: a key is refused, or honoured (it
// changes the model's fingerprint exactly when reads() says it is read).
WalkCounts walk_keys(bool (*walked)(const rpb::data::TaskInfo&)) {
  TempDir dir("keys_honoured");
  const std::string text = dir.file("kjv.txt"), other_text = dir.file("other.txt");
  write_kjv(text, "Abel");
  write_kjv(other_text, "Seth");
  int honoured = 0, inert = 0, refused = 0;
  for (const std::string& task : rpb::data::task_names()) {
    if (!walked(rpb::data::task_info(task))) continue;
    for (const std::string& scheme : rpb::nn::scheme_names(rpb::data::task_dims(task))) {
      const std::string base = base_text(task, scheme, text);
      Combo c{task, scheme, rpb::nn::find_scheme(scheme, rpb::data::task_dims(task)), rpb::parse_config(base, "base")};
      const std::string before = fingerprint(c.base);
      for (const std::string& key : rpb::accepted_keys(base, "base")) {
        CAPTURE(task);
        CAPTURE(scheme);
        CAPTURE(key);
        if (trainer_keys().count(key) || same_numbers_keys().count(key)) continue;
        // Randomized positions: every 1-D scheme's (a 2-D scheme and none refuse them, and a table shorter than the
        // default L_max: learned's 512 rows); L_max only with them on.
        const int64_t rows = c.info->max_length(c.base.position());
        const bool randomizable = c.info->dims == 1 && (rows == 0 || rows >= rpb::nn::PositionOptions{}.randomized_max);
        if ((key == "position.randomized" && !randomizable) || key == "position.randomized_max") {
          CHECK_THROWS_AS(rpb::parse_config(base, "base", {key + "=" + other_value(key, c, other_text)}), rpb::Error);
          ++refused;
          continue;
        }
        if (key == "model.causal" && task != "grid2d") {  // a bidirectional model: an encoder framing and scheme only
          const rpb::data::AlgorithmicSpec* spec = rpb::data::task_info(task).algorithmic;
          if (!spec || !spec->encoder || c.info->causal_only) {
            CHECK_THROWS_AS(rpb::parse_config(base, "base", {"model.causal=false"}), rpb::Error);
            ++refused;
            continue;
          }
        }
        if (const auto e = evaluation_keys().find(key); e != evaluation_keys().end()) {
          // A position key's readers are the option table's (nn/position/options.h).
          const auto* option = key.rfind("position.", 0) == 0 ? rpb::nn::find_position_option(key.substr(9)) : nullptr;
          const rpb::data::TaskInfo& row = rpb::data::task_info(task);
          const bool applies = option                      ? option->read_by(*c.info)
                               : key == "run.eval_stride"  ? task != "grid2d" && !row.retrieval && !row.algorithmic
                               : key == "grid.eval_window" ? c.info->kind == rpb::nn::PositionKind::window
                                                           : false;
          if (applies) continue;  // read by evaluation (tests/test_untrained.cpp, the grid evaluations)
          CHECK_THROWS_AS(rpb::parse_config(base, "base", {key + "=" + e->second}), rpb::Error);
          ++refused;
          continue;
        }
        const bool read = reads(key, c);
        // Randomized positions move the first losses of a scheme with learned values only as far as those values
        // reach: both sides start from tables and MLPs of std 0.5 (FIRE's bias is 1e-4 at its default 0.02).
        const std::vector<std::string> start = key == "position.randomized" && c.info->learned(c.base.position())
                                                   ? std::vector<std::string>{"position.init_std=0.5"}
                                                   : std::vector<std::string>{};
        std::vector<std::string> set = start;
        set.push_back(key + "=" + other_value(key, c, other_text));
        const std::string after = fingerprint(rpb::parse_config(base, "base", set));
        const std::string reference = start.empty() ? before : fingerprint(rpb::parse_config(base, "base", start));
        if (read) {
          const bool changed = after != reference;
          CHECK_MESSAGE(changed, key << " is accepted for " << scheme << " on " << task
                                             << " but changes nothing the model or its data compute");
          ++honoured;
        } else {
          const bool same = after == reference;
          CHECK_MESSAGE(same, key << " changes what " << scheme << " on " << task
                                             << " computes: list it as read in reads()");
          ++inert;
        }
      }
    }
  }
  return {honoured, inert, refused};
}

bool walks_stream_or_grid(const rpb::data::TaskInfo& t) { return t.algorithmic == nullptr; }
bool walks_algorithmic(const rpb::data::TaskInfo& t) { return t.algorithmic != nullptr; }

}  // namespace rpb_test_keys_honoured

// Two cases, so that scripts/test.sh's sanitized suite can leave the second aside (the algorithmic tasks' walk is a
// third of its test time; every path it takes runs sanitized in the algorithmic tasks' own tests).
TEST_CASE("every config key is refused for a scheme and task, or honoured: it changes what the model computes") {
  const WalkCounts c = walk_keys(walks_stream_or_grid);
  // docs/reliability.md cites the counts
  MESSAGE("keys honoured ", c.honoured, ", inert ", c.inert, ", refused ", c.refused);
  CHECK(c.honoured > 500);  // 1559, 2225 inert and 800 refused at issue 45 (594, 522 and 53 when written)
  CHECK(c.inert > 400);
  CHECK(c.refused > 40);
}

TEST_CASE("every config key is refused or honoured for every scheme of every algorithmic task") {
  const WalkCounts c = walk_keys(walks_algorithmic);
  // docs/reliability.md cites the counts
  MESSAGE("keys honoured ", c.honoured, ", inert ", c.inert, ", refused ", c.refused);
  CHECK(c.honoured > 500);  // 2581, 4349 inert and 1422 refused when written (issue 45)
  CHECK(c.inert > 400);
  CHECK(c.refused > 40);
}

TEST_CASE("window attention honours model.attn_scale on both paths, as global attention does") {
  const std::string base = "[task]\nkind = \"grid2d\"\n[run]\nlength = 4\neval_multipliers = [1]\neval_tokens = 32\n"
                           "[model]\nd_model = 8\nheads = 2\nlayers = 2\nd_ff = 16\n[grid]\nwindow = 2\n"
                           "cpb_hidden = 16\n[position]\nscheme = ";
  for (const char* scheme : {"\"swin\"", "\"swin_v2\"", "\"alibi2d\""}) {
    for (const char* fused : {"true", "false"}) {
      CAPTURE(scheme);
      CAPTURE(fused);
      const std::vector<std::string> path = {std::string("model.fused_attention=") + fused};
      const rpb::RunConfig plain = rpb::parse_config(base + scheme + "\n", "base", path);
      std::vector<std::string> explicit_default = path, one = path;
      explicit_default.push_back("model.attn_scale=0.5");  // head_dim 4: the default 4^-0.5, set explicitly
      one.push_back("model.attn_scale=1.0");
      const std::string a = fingerprint(plain);
      CHECK(fingerprint(rpb::parse_config(base + scheme + "\n", "base", explicit_default)) == a);
      CHECK(fingerprint(rpb::parse_config(base + scheme + "\n", "base", one)) != a);
    }
  }
}
