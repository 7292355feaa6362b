// Fine-tunes (run.init_from, `rpb train --init-from`): weights only from a parent checkpoint, a run of its own whose
// identity holds the parent's SHA-256 and, for rope, the scaling it trains with; sweep rows that continue another
// method's runs.
#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "test_util.h"
#include "train/config/run_identity.h"
#include "train/io/sha256.h"
#include "train/sweep/sweep.h"
#include "train/trainer.h"

using namespace rpb;
using rpb::testing::contains;
using rpb::testing::error_of;
namespace fs = std::filesystem;

namespace {

// A tiny rope run in <dir>/<name>: `steps` steps of batch 2 at length 8 (d_model 8, one layer, markov over 5 tokens).
std::string tiny_rope(const fs::path& dir, const std::string& name, int64_t steps) {
  return "[run]\nname = \"" + name + "\"\nout_dir = \"" + dir.string() + "\"\nsteps = " + std::to_string(steps) +
         "\nbatch = 2\nlength = 8\nlog_every = 1\neval_multipliers = [1, 4]\neval_tokens = 64\n"
         "eval_diagnostics = false\n[model]\nd_model = 8\nheads = 2\nlayers = 1\nd_ff = 16\n[position]\n"
         "scheme = \"rope\"\n[task]\nkind = \"markov\"\nvocab = 5\norder = 1\ntrain_tokens = 1024\neval_tokens = 512\n"
         "[optim]\nwarmup_steps = 1\n";
}

// The value of `column` in the last row of a metrics.csv.
std::string last_value(const fs::path& csv, const std::string& column) {
  std::ifstream in(csv);
  std::vector<std::vector<std::string>> rows;
  for (std::string line; std::getline(in, line);) {
    if (line.empty()) continue;
    std::vector<std::string> cells;
    std::stringstream ss(line);
    for (std::string cell; std::getline(ss, cell, ',');) cells.push_back(cell);
    rows.push_back(cells);
  }
  REQUIRE(rows.size() >= 2);
  const auto at = std::find(rows[0].begin(), rows[0].end(), column);
  REQUIRE(at != rows[0].end());
  return rows.back().at(static_cast<std::size_t>(at - rows[0].begin()));
}

}  // namespace

TEST_CASE("fine-tune config: init_from, init_sha256 and finetune_length read, checked and in the identity") {
  const std::string base = tiny_rope("out", "ft", 2);
  const RunConfig plain = parse_config(base, "ft.toml");
  CHECK(!contains(plain.text, "init_from"));  // unset: the stored text of runs that are not fine-tunes is unchanged
  CHECK(!contains(plain.text, "finetune_length"));
  CHECK(plain.train_length() == 8);
  const std::string sha(64, 'a');
  const RunConfig ft = parse_config(base, "ft.toml", {"run.init_from=\"parent.h5\"", "run.init_sha256=\"" + sha + "\"",
                                                      "run.finetune_length=32"});
  CHECK(ft.init_from == "parent.h5");
  CHECK(ft.train_length() == 32);
  CHECK(ft.length == 8);  // evaluation lengths stay multiples of the parent's length
  CHECK(ft.model.position.rope_scaling_trained);
  // The parent's path is not part of the identity, its bytes (init_sha256) and the training length are.
  const RunConfig moved =
      parse_config(base, "ft.toml", {"run.init_from=\"elsewhere/p.h5\"", "run.init_sha256=\"" + sha + "\"",
                                     "run.finetune_length=32"});
  CHECK(config_digest(moved) == config_digest(ft));
  const RunConfig other = parse_config(base, "ft.toml", {"run.init_from=\"parent.h5\"",
                                                         "run.init_sha256=\"" + std::string(64, 'b') + "\"",
                                                         "run.finetune_length=32"});
  CHECK(config_digest(other) != config_digest(ft));
  CHECK(config_digest(parse_config(base, "ft.toml", {"run.init_from=\"parent.h5\"", "run.init_sha256=\"" + sha + "\""})) !=
        config_digest(ft));
  // A fine-tune trains with its rope scaling: the scaling keys join its identity (a plain rope run's stay out).
  const std::vector<std::string> scaled = {"run.init_from=\"parent.h5\"", "run.init_sha256=\"" + sha + "\"",
                                           "position.rope_scaling=\"yarn\"", "position.rope_factor=4"};
  CHECK(config_digest(parse_config(base, "ft.toml", scaled)) !=
        config_digest(parse_config(base, "ft.toml", {scaled[0], scaled[1]})));
  CHECK(config_digest(parse_config(base, "r.toml", {scaled[2], scaled[3]})) == config_digest(plain));
  // Refusals name the key and say why.
  CHECK(contains(error_of([&] { parse_config(base, "ft.toml", {"run.init_sha256=\"" + sha + "\""}); }),
                 "run.init_sha256"));
  CHECK(contains(error_of([&] { parse_config(base, "ft.toml", {"run.finetune_length=32"}); }), "run.init_from"));
  CHECK(contains(error_of([&] { parse_config(base, "ft.toml", {"run.init_from=\"p.h5\"", "run.init_sha256=\"abc\""}); }),
                 "64 lowercase hexadecimal digits"));
  CHECK(contains(error_of([&] {
                   parse_config(base, "ft.toml", {"run.init_from=\"p.h5\"", "position.rope_scaling=\"linear\""});
                 }),
                 "position.rope_factor"));
  // Learned positions cannot train past their table.
  CHECK(contains(error_of([&] {
                   parse_config(base, "ft.toml", {"position.scheme=\"learned\"", "position.max_positions=8",
                                                  "run.init_from=\"p.h5\"", "run.finetune_length=16"});
                 }),
                 "run.finetune_length = 16"));
}

TEST_CASE("fine-tune: starts from the parent's parameters with a fresh optimizer, at its own length, pinned to the "
          "parent's bytes") {
  rpb::testing::TempDir tmp("finetune");
  Run parent(parse_config(tiny_rope(tmp.path, "parent", 3), "parent.toml"));
  const TrainSummary ps = parent.train(false);
  const std::string parent_file = (fs::path(parent.dir()) / ps.checkpoint).string();
  const nn::NamedTensors parent_params = parent.model().named_parameters();

  const RunConfig ft_config =
      parse_config(tiny_rope(tmp.path, "ft", 2), "ft.toml", {"run.init_from=\"" + parent_file + "\"",
                                                             "run.finetune_length=32", "optim.lr=0.001"});
  Run ft(ft_config);
  CHECK(ft.config().init_sha256 == sha256_file(parent_file));  // recorded by the run
  CHECK(ft.config().init_sha256 == ps.checkpoint_sha256);
  bool compared = false;
  ft.on_gradients([&](int64_t step, const std::vector<optim::NamedParam>& params) {
    if (step != 1) return;
    for (const optim::NamedParam& p : params)
      for (const auto& [name, t] : parent_params)
        if (name == p.name) CHECK(t.to_vector() == p.param.to_vector());
    compared = true;
  });
  const TrainSummary s = ft.train(false);
  CHECK(compared);
  CHECK(s.step == 2);  // its own steps, from 0
  const Checkpoint c = load_checkpoint((fs::path(ft.dir()) / s.checkpoint).string());
  CHECK(c.optim.step == 2);  // a fresh optimizer
  CHECK(contains(c.config_text, "init_sha256 = '" + ps.checkpoint_sha256 + "'"));
  CHECK(contains(c.config_text, "finetune_length = 32"));
  CHECK(last_value(fs::path(ft.dir()) / "metrics.csv", "tokens") == std::to_string(2 * 2 * 32));  // tokens: 2 x (2 x 32)
  CHECK(contains(rpb::testing::file_text(fs::path(ft.dir()) / "train.log"), "fine-tune: parameters and buffers from"));

  // Resumed with the same parent: its identity matches (the digest is recomputed), and it takes no step.
  Run again(ft_config);
  CHECK(again.train(true).step == 2);
  // Another parent behind the same path: the resumed fine-tune is refused, naming run.init_sha256.
  Run other(parse_config(tiny_rope(tmp.path, "other", 3), "other.toml", {"run.seed=7"}));
  const TrainSummary os = other.train(false);
  fs::copy_file(fs::path(other.dir()) / os.checkpoint, parent_file, fs::copy_options::overwrite_existing);
  CHECK(contains(error_of([&] { Run(ft_config).train(true); }), "run.init_sha256"));
  // A config that pins the parent reads it when it trains, and refuses another file before the run folder exists.
  Run pinned(parse_config(tiny_rope(tmp.path, "pinned", 2), "p.toml",
                          {"run.init_from=\"" + parent_file + "\"", "run.init_sha256=\"" + ps.checkpoint_sha256 + "\""}));
  CHECK(contains(error_of([&] { pinned.train(false); }), "pins the fine-tune"));
  CHECK(!fs::exists(tmp.path / "pinned"));
  // A parent of another architecture is refused before anything trains, naming the dataset.
  const std::string wide = error_of([&] {
    Run(parse_config(tiny_rope(tmp.path, "wide", 2), "w.toml",
                     {"model.d_model=16", "run.init_from=\"" + parent_file + "\""}));
  });
  CHECK(contains(wide, "/params/"));
  CHECK(!fs::exists(tmp.path / "wide"));
}

TEST_CASE("fine-tune sweep rows continue the run of the method they name, with the same task and seed") {
  rpb::testing::TempDir tmp("finetune_sweep");
  const std::string head = rpb::testing::tiny_sweep_config(tmp.path, "s", "[1, 4]");
  const std::string ft = "rope@rope_scaling=linear@rope_factor=4@run.init_from=rope@run.finetune_length=16@run.steps=2";
  const RunConfig c = parse_config(head + "[sweep]\nseeds = [0]\nmethods = [\"" + ft + "\", \"rope\"]\n", "sweep.toml");
  CHECK(c.sweep.methods[0].label() == "RoPE + PI (s = 4), fine-tuned from rope at length 16, "
                                      "run.steps 2");
  const ConfigReads before = config_reads();
  const SweepResult r = run_sweep(c);
  const ConfigReads trained = config_reads();
  REQUIRE(r.rows.size() == 2);
  const fs::path ft_run = tmp.path / "s" / "markov" / ft / "seed0";
  const std::string stored = rpb::testing::file_text(ft_run / "config.toml");
  CHECK(contains(stored, "init_sha256 = '" + r.rows[1].runs[0].checkpoint_sha256 + "'"));  // the rope run's final one
  CHECK(contains(stored, "rope_scaling = 'linear'"));  // trained with the scaling
  CHECK(r.rows[0].runs[0].folder == ft_run.string());
  CHECK(r.rows[0].ppl != r.rows[1].ppl);
  // Rerun: every run reused, the same numbers.
  CHECK(run_sweep(c).rows[0].ppl == r.rows[0].ppl);
  // Config text is parsed once per file read, and only for the checkpoints read: training parses the parent's stored
  // config once (the fine-tune starts from its weights); the rerun, reusing both runs, reads the rope run's final
  // checkpoint twice (its own reuse, and as the fine-tune's parent) and the fine-tune's once. The sweep file was
  // parsed before (parse_config above). A whole document is read into a typed config once per text parsed: each
  // run's config is derived from the sweep's typed one by its settings (run_config), and the fine-tune's parent
  // digest is set so (derive_config), neither reading a document again.
  const ConfigReads reused = config_reads();
  CHECK(trained.texts - before.texts == 1);
  CHECK(reused.texts - trained.texts == 3);
  CHECK(trained.documents - before.documents == trained.texts - before.texts);
  CHECK(reused.documents - trained.documents == reused.texts - trained.texts);
  MESSAGE("configs derived by settings: ", trained.derived - before.derived, " training, ",
          reused.derived - trained.derived, " reusing");
  // A parent that is not in the sweep is refused before anything trains.
  const std::string missing = error_of([&] {
    run_sweep(parse_config(head + "[sweep]\nmethods = [\"rope@run.init_from=fire2@run.steps=2\"]\n", "bad.toml"));
  });
  CHECK(contains(missing, "names neither a method of sweep.methods nor a scheme"));
}

TEST_CASE("fine-tune: rpb train --init-from beside a run.init_sha256 in the file reads them as one config") {
  rpb::testing::TempDir tmp("finetune_flag");
  const TrainSummary ps = Run(parse_config(tiny_rope(tmp.path, "parent", 3), "parent.toml")).train(false);
  const std::string parent_file = (tmp.path / "parent" / ps.checkpoint).string();
  // The file pins the parent by its digest; the path comes from the flag.
  const fs::path config = tmp.path / "ft.toml";
  std::string text = tiny_rope(tmp.path, "ft", 2);
  text.insert(text.find("[run]\n") + 6, "init_sha256 = \"" + ps.checkpoint_sha256 + "\"\n");
  std::ofstream(config) << text;
  const rpb::testing::CommandResult r =
      rpb::testing::run_rpb("train " + config.string() + " --init-from " + parent_file);
  CHECK_MESSAGE(r.code == 0, r.out);
  CHECK(contains(r.out, "fine-tune: parameters and buffers from " + parent_file));
  // Another file under the flag: refused by the pin, naming the flag's path and both digests.
  Run other(parse_config(tiny_rope(tmp.path, "other", 3), "other.toml", {"run.seed=7"}));
  const std::string other_file = (fs::path(other.dir()) / other.train(false).checkpoint).string();
  const rpb::testing::CommandResult o =
      rpb::testing::run_rpb("train " + config.string() + " --set run.name=ft2 --init-from " + other_file);
  CHECK(o.code == 1);
  CHECK(contains(o.out, "run.init_from = " + other_file + " has SHA-256 "));
  CHECK(contains(o.out, "pins the fine-tune to the parent " + ps.checkpoint_sha256));
  CHECK(!contains(o.out, "is not set"));
  CHECK(!fs::exists(tmp.path / "ft2"));
}
