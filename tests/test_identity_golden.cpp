// Golden run identities (issue 25; the text, passkey and fine-tune records added before issue 44's refactor): the
// stored configs (RunConfig::text) and config digests of every task and every scheme of its dims, of fine-tunes and of
// the evaluation-setting rows of a sweep, of configs with optim groups, model.embedding = "scheme", optim.total_steps, sweep tables and
// legacy configs without model.embedding, of sweep runs (with their method labels) and of match_run's results, as
// recorded under tests/data/identity/ by the code of before configs stayed typed. Any byte that changes in a stored
// config or a digest would make rpb refuse (or silently reuse) existing run folders, so it fails here.
// RPB_WRITE_IDENTITY_GOLDEN=1 rewrites the records (only when the change of identity is intended).
#include <doctest/doctest.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "nn/position.h"
#include "scheme_cases.h"
#include "test_util.h"
#include "train/config/run_identity.h"

namespace identity_golden {

namespace fs = std::filesystem;
using namespace rpb;

const fs::path kDir = fs::path(RPB_SOURCE_DIR) / "tests" / "data" / "identity";
const std::vector<std::string> kTasks = {"markov", "lag", "kjv", "grid2d", "text", "passkey", "passkey_text"};
// What a task's config needs besides its kind: one's own text for the text tasks (a path; parsing reads no file).
std::string task_keys(const std::string& task) {
  return task == "text" || task == "passkey_text" ? "path = \"corpus.txt\"\n" : "";
}
// A grid's evaluation lengths within limits::kMaxSequence cells.
const std::string kGridRun = "[run]\nlength = 16\neval_multipliers = [1, 2, 4]\n";

// Compares `actual` with the record `name`, or writes it under RPB_WRITE_IDENTITY_GOLDEN.
void check_record(const std::string& name, const std::string& actual) {
  const fs::path file = kDir / (name + ".toml");
  if (std::getenv("RPB_WRITE_IDENTITY_GOLDEN")) {
    fs::create_directories(kDir);
    std::ofstream(file, std::ios::binary) << actual;
    return;
  }
  CAPTURE(name);
  REQUIRE(fs::exists(file));
  CHECK(rpb::testing::file_text(file) == actual);
}

// A stored config as rpb reads it back, with its digest on top; the stored text must read back as itself.
std::string record_of(const RunConfig& c) {
  const RunConfig stored = parse_stored_config(c.text, "stored");
  CHECK(stored.text == c.text);
  CHECK(config_digest(stored) == config_digest(c));
  return "# config_digest = " + config_digest(c) + "\n" + c.text;
}

std::string changes_of(const std::vector<ConfigChange>& changes) {
  std::string s;
  for (const ConfigChange& c : changes) s += "# change " + c.line() + "\n";
  return s;
}

// `text` without the line that starts with `prefix` (a key of an older rpb's stored config).
std::string drop_line(const std::string& text, const std::string& prefix) {
  const auto at = text.find("\n" + prefix);
  REQUIRE(at != std::string::npos);
  return text.substr(0, at + 1) + text.substr(text.find('\n', at + 1) + 1);
}

TEST_CASE("identity golden: every task and every scheme of its dims") {
  for (const std::string& task : kTasks)
    for (const std::string& scheme : nn::scheme_names(data::task_dims(task))) {
      const RunConfig c = parse_config((task == "grid2d" ? kGridRun : "") + "[task]\nkind = \"" + task + "\"\n" +
                                           task_keys(task) + "[position]\nscheme = \"" + scheme + "\"\n",
                                       task + ".toml");
      check_record("task-" + task + "-" + scheme, record_of(c));
    }
}

TEST_CASE("identity golden: groups, recipes, horizons, sweep tables, overrides and evaluation-only keys") {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"optim-groups", "[optim]\nweight_decay = 0.05\n[[optim.group]]\npattern = \"*.bias\"\nweight_decay = 0.0\n"
                       "[[optim.group]]\npattern = \"position.*\"\nlr_scale = 0.5\n"},
      {"embedding-scheme-sinusoidal", "[model]\nembedding = \"scheme\"\n[position]\nscheme = \"sinusoidal\"\n"},
      {"embedding-scheme-rope", "[model]\nembedding = \"scheme\"\n[position]\nscheme = \"rope\"\n"},
      {"embedding-scaled-t5", "[model]\nembedding = \"scaled\"\n[position]\nscheme = \"t5\"\n"},
      {"embedding-gpt2-sinusoidal", "[model]\nembedding = \"gpt2\"\n[position]\nscheme = \"sinusoidal\"\n"},
      {"embedding-scheme-grid2d", kGridRun + "[model]\nembedding = \"scheme\"\n[task]\nkind = \"grid2d\"\n[position]\n"
                                  "scheme = \"sinusoidal2d\"\n"},
      {"total-steps-set", "[run]\nsteps = 2000\n[optim]\nschedule = \"cosine\"\nwarmup_steps = 100\n"
                          "total_steps = 5000\n"},
      {"total-steps-default-cosine", "[run]\nsteps = 300\n[optim]\nschedule = \"cosine\"\nmin_lr_ratio = 0.1\n"},
      {"sweep-table", "[sweep]\nmethods = [\"t5\", \"t5@max_distance=64\", \"alibi\"]\nseeds = [0, 1, 2]\n"
                      "tasks = [\"markov\", \"lag\"]\n"},
      {"sweep-grid", kGridRun + "[task]\nkind = \"grid2d\"\n[sweep]\nmethods = [\"swin_v2@window8\", \"learned2d\"]\n"},
      {"evaluation-keys", "[run]\nname = \"elsewhere\"\nout_dir = \"o\"\nlog_every = 7\ncheckpoint_every = 50\n"
                          "eval_multipliers = [1, 2]\neval_tokens = 4096\neval_batch = 2\neval_every = 100\n"
                          "eval_diagnostics = false\nvalid_multipliers = [1, 2]\nvalid_tokens = 1024\n"
                          "[position]\nuntrained = \"nearest\"\n[task]\nkjv_path = \"elsewhere.txt\"\n"},
      {"identity-keys", "[run]\nseed = 7\nsteps = 20\nbatch = 4\nlength = 32\non_nonfinite = \"skip\"\n"
                        "[model]\nd_model = 64\nheads = 2\nlayers = 1\nd_ff = 128\ndropout = 0.1\ngelu = \"erf\"\n"
                        "[task]\nkind = \"lag\"\nseed = 3\n[optim]\nkind = \"sgd\"\nlr = 3e-4\nmomentum = 0.9\n"},
      {"grid-keys", kGridRun + "[task]\nkind = \"grid2d\"\n[grid]\nwindow = 4\nshift = false\neval_window = 8\n"
                    "[position]\nscheme = \"swin_v2\"\n"},
  };
  for (const auto& [name, text] : cases) check_record("config-" + name, record_of(parse_config(text, name + ".toml")));
  const RunConfig plain = parse_config("", "plain.toml");
  // The evaluation-only keys are no part of the identity: set, they leave the default config's digest.
  const auto evaluation =
      std::find_if(cases.begin(), cases.end(), [](const auto& c) { return c.first == "evaluation-keys"; });
  REQUIRE(evaluation != cases.end());
  CHECK(config_digest(parse_config(evaluation->second, "e.toml")) == config_digest(plain));
  const RunConfig set = parse_config("", "set.toml", {"optim.lr=3e-4", "model.d_model=64", "position.scheme=alibi"});
  check_record("config-overrides", record_of(set));
}

TEST_CASE("identity golden: legacy stored configs without model.embedding or later keys") {
  // One scheme per way of entering a model, and each embedding recipe (the key these configs lack).
  std::vector<std::string> schemes;
  for (const std::string& scheme : testing::one_scheme_per_kind(1))
    if (nn::find_scheme(scheme, 1)->kind != nn::PositionKind::none) schemes.push_back(scheme);
  for (const nn::SchemeInfo& s : nn::schemes())
    if (s.fits(1) && s.embedding != nn::EmbeddingRecipe::gpt2) schemes.emplace_back(s.name);
  for (const std::string& scheme : schemes) {
    const std::string now = parse_config("[position]\nscheme = \"" + scheme + "\"\n", "now.toml").text;
    std::string old = drop_line(now, "embedding = ");
    const RunConfig legacy = parse_stored_config(old, "old.toml");
    check_record("legacy-no-embedding-" + scheme, record_of(legacy));
    old = drop_line(drop_line(drop_line(old, "on_nonfinite = "), "eval_diagnostics = "), "fused_attention = ");
    check_record("legacy-older-" + scheme, record_of(parse_stored_config(old, "older.toml")));
  }
}

TEST_CASE("identity golden: sweep runs and their labels") {
  const RunConfig sweep = parse_config(
      "[run]\nname = \"s\"\nout_dir = \"sw\"\n[sweep]\nmethods = [\"t5\", \"t5@max_distance=64\", "
      "\"t5@untrained=nearest\", \"sinusoidal@optim.lr=1e-3\", \"rope@optim.warmup_steps=10@optim.lr=0.002\", "
      "\"alibi@model.embedding=\\\"scaled\\\"\", \"learned@run.eval_multipliers=[1, 2]\"]\n"
      "seeds = [0, 3]\ntasks = [\"markov\", \"lag\", \"kjv\"]\n",
      "sweep.toml");
  for (const std::string task : {"markov", "lag", "kjv"})
    for (std::size_t i = 0; i < sweep.sweep.methods.size(); ++i) {
      const SweepMethod& m = sweep.sweep.methods[i];
      const RunConfig run = run_config(sweep, {task, m, 3, "sw/s/" + task + "/" + m.name(), "seed3"});
      check_record("sweep-" + task + "-" + std::to_string(i),
                   "# method " + m.name() + "\n# label " + m.label() + "\n" + record_of(run));
    }
  const RunConfig grid = parse_config(kGridRun + "[task]\nkind = \"grid2d\"\n[sweep]\nmethods = [\"swin_v2@window8\", "
                                      "\"swin@window4\", \"learned2d@grid.max_side=40\", \"none\"]\n",
                                      "grid.toml");
  for (std::size_t i = 0; i < grid.sweep.methods.size(); ++i) {
    const SweepMethod& m = grid.sweep.methods[i];
    const RunConfig run = run_config(grid, {"grid2d", m, 0, "g/" + m.name(), "seed0"});
    check_record("sweep-grid2d-" + std::to_string(i),
                 "# method " + m.name() + "\n# label " + m.label() + "\n" + record_of(run));
  }
}

TEST_CASE("identity golden: fine-tunes and the evaluation-setting rows of a sweep") {
  // A fine-tune of its own (rpb train --init-from): the parent's digest, its training length and the rope scaling it
  // trains with are its identity.
  const std::string sha(64, 'a');
  check_record("finetune-rope-yarn",
               record_of(parse_config("[run]\ninit_from = \"parent.h5\"\ninit_sha256 = \"" + sha +
                                          "\"\nfinetune_length = 256\n[position]\nscheme = \"rope\"\n"
                                          "rope_scaling = \"yarn\"\nrope_factor = 4.0\n",
                                      "finetune.toml")));
  // configs/extrapolation_recent.toml's rows: rope scalings, xPos blockwise and scale base, sliding windows, and the
  // fine-tunes that continue the rope run of the same task and seed.
  const RunConfig sweep = parse_config(rpb::testing::file_text(fs::path(RPB_SOURCE_DIR) / "configs" /
                                                               "extrapolation_recent.toml"),
                                       "extrapolation_recent.toml", {"run.out_dir=\"sw\""});
  for (const std::string task : {"markov", "kjv"})
    for (std::size_t i = 0; i < sweep.sweep.methods.size(); ++i) {
      const SweepMethod& m = sweep.sweep.methods[i];
      const RunConfig run = run_config(sweep, {task, m, 1, "sw/r/" + task + "/" + m.name(), "seed1"});
      check_record("recent-" + task + "-" + std::to_string(i),
                   "# method " + m.name() + "\n# label " + m.label() + "\n" + record_of(run));
    }
}

TEST_CASE("identity golden: match_run and identity_changes") {
  const std::string base = "[run]\nsteps = 1000\n[optim]\nschedule = \"cosine\"\nwarmup_steps = 10\n";
  const RunConfig extended = parse_config(base + "total_steps = 1000\n", "ext.toml", {"run.steps=3000"});
  const RunConfig plain = parse_config(base, "plain.toml");
  const RunConfig longer = parse_config(base, "longer.toml", {"run.steps=2000"});
  const RunConfig other = parse_config(base, "other.toml", {"run.steps=2000", "optim.lr=0.01", "model.layers=3"});
  struct Match {
    std::string name;
    const RunConfig& stored;
    const RunConfig& config;
    bool extend;
  };
  for (const Match& c : {Match{"resume-extended", extended, plain, false}, Match{"extend", plain, longer, true},
                         Match{"steps-differ", plain, longer, false}, Match{"other", plain, other, true},
                         Match{"other-strict", extended, other, false}}) {
    const RunMatch m = match_run(c.stored.text, "stored.h5", c.config, c.extend);
    check_record("match-" + c.name, "# extended " + std::to_string(m.extended) + " from " +
                                        std::to_string(m.stored_steps) + "\n" + changes_of(m.changes) +
                                        record_of(m.config));
  }
  check_record("changes-plain-other", changes_of(identity_changes(plain, other)) +
                                          changes_of(identity_changes(other, extended)) +
                                          changes_of(identity_changes(plain, longer)));
}

}  // namespace identity_golden
