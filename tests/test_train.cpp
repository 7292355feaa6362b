// train/: resumable runs, evaluation and the rpb train/eval/inspect/extrapolate commands.
#include <doctest/doctest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <regex>

#include "test_util.h"
#include "train/run/latest.h"
#include "train/sweep/results_json.h"
#include "train/sweep/sweep.h"
#include "train/trainer.h"

namespace fs = std::filesystem;
using namespace rpb;
using rpb::testing::TempDir;
using rpb::testing::contains;
using rpb::testing::error_of;
using rpb::testing::run_rpb;

namespace {


// A tiny run: dropout on, so the dropout generator's state matters for resuming.
std::string tiny_config(const fs::path& out, const std::string& scheme = "t5") {
  return "[run]\nname = \"tiny\"\nout_dir = \"" + out.string() +
         "\"\nsteps = 30\nbatch = 4\nlength = 16\nlog_every = 5\ncheckpoint_every = 10\n"
         "eval_multipliers = [1, 2, 4]\neval_tokens = 256\n"
         "[model]\nd_model = 16\nheads = 2\nlayers = 1\nd_ff = 32\ndropout = 0.1\n"
         "[position]\nscheme = \"" + scheme + "\"\nnum_buckets = 8\nmax_distance = 32\nmax_positions = 16\n"
         "[task]\nkind = \"markov\"\nvocab = 5\norder = 1\ntrain_tokens = 4096\neval_tokens = 2048\n"
         "[optim]\nlr = 1e-2\nschedule = \"cosine\"\nwarmup_steps = 5\n"
         "[[optim.group]]\npattern = \"*pos.*\"\nweight_decay = 0.0\n"
         "[sweep]\nmethods = [\"t5\", \"learned\"]\nseeds = [0]\n";
}

std::vector<std::vector<double>> params_of(nn::Module& m) {
  std::vector<std::vector<double>> v;
  for (const auto& [name, t] : m.named_parameters()) v.push_back(t.to_vector());
  return v;
}

}  // namespace

TEST_CASE("train: a run saved at step k and resumed to N ends bit-identical to an uninterrupted run") {
  TempDir tmp("resume");
  const std::string text = tiny_config(tmp.path);
  Run straight(parse_config(text, "tiny.toml", {"run.name=\"straight\""}));
  straight.train(false);

  {
    // A run killed right after its step-10 checkpoint: later files never got written.
    Run first(parse_config(text, "tiny.toml", {"run.name=\"split\""}));
    first.train(false);
    for (const char* f : {"step_00000020.h5", "step_00000030.h5"}) fs::remove(fs::path(first.dir()) / f);
    write_latest(first.dir(), "step_00000010.h5");
  }
  Run second(parse_config(text, "tiny.toml", {"run.name=\"split\""}));
  const TrainSummary s = second.train(true);
  CHECK(s.resumed);
  CHECK(s.step == 30);
  CHECK(params_of(second.model()) == params_of(straight.model()));
  const Checkpoint a = load_checkpoint(read_latest(straight.dir())), b = load_checkpoint(read_latest(second.dir()));
  REQUIRE(a.metrics.size() == b.metrics.size());
  for (std::size_t i = 0; i < a.metrics.size(); ++i) {
    CHECK(a.metrics[i].step == b.metrics[i].step);
    CHECK(a.metrics[i].loss == b.metrics[i].loss);  // bit-identical, not approximately
    CHECK(a.metrics[i].grad_norm == b.metrics[i].grad_norm);
  }
  CHECK(a.optim.step == b.optim.step);
}

TEST_CASE("train: no run is overwritten, and a resume refuses a changed model") {
  TempDir tmp("overwrite");
  const std::string text = tiny_config(tmp.path);
  Run(parse_config(text, "tiny.toml", {"run.steps=6"})).train(false);
  CHECK(contains(error_of([&] { Run(parse_config(text, "tiny.toml")).train(false); }), "already holds checkpoints"));
  CHECK(contains(error_of([&] { Run(parse_config(text, "tiny.toml", {"model.d_ff=64"})).train(true); }),
                 "the config differs"));
  // Extending the run takes --extend.
  CHECK(contains(error_of([&] { Run(parse_config(text, "tiny.toml", {"run.steps=8"})).train(true); }),
                 "run.steps: 6 -> 8"));
  CHECK(Run(parse_config(text, "tiny.toml", {"run.steps=8"})).train(true, {}, {.extend = true}).step == 8);
}

TEST_CASE("train: evaluation scores every length, learned positions are n/a past their table") {
  TempDir tmp("eval");
  Run run(parse_config(tiny_config(tmp.path, "learned"), "tiny.toml"));
  run.train(false);
  const std::vector<LengthResult> r = run.evaluate();
  REQUIRE(r.size() == 3);
  CHECK(r[0].length == 16);
  REQUIRE(r[0].perplexity());
  CHECK(*r[0].perplexity() > 1.0);
  CHECK(*r[0].perplexity() < 5.0 * 1.5);  // vocab 5: better than a little above uniform
  CHECK_FALSE(r[1].nll.has_value());      // 32 > max_positions 16
  CHECK(contains(error_of([&] { run.evaluate({24}); }), "not a positive multiple of the train length 16"));
}

TEST_CASE("train: rpb train, eval, inspect and extrapolate from the command line") {
  TempDir tmp("cli");
  const rpb::testing::ScopedEnv stub("RPB_PYTHON_DIR", rpb::testing::kPlotStubDir);  // the figures: a stand-in module
  const fs::path cfg = tmp.path / "tiny.toml";
  std::ofstream(cfg) << tiny_config(tmp.path);

  auto r = run_rpb("train " + cfg.string());
  CHECK(r.code == 0);
  CHECK(contains(r.out, "| 16 | 1x |"));
  const std::string latest = read_latest((tmp.path / "tiny").string());
  REQUIRE(!latest.empty());
  CHECK(fs::exists(tmp.path / "tiny" / "train.log"));

  r = run_rpb("eval " + latest + " --lengths 16,64");
  CHECK(r.code == 0);
  CHECK(contains(r.out, "| 64 | 4x |"));

  r = run_rpb("inspect " + latest);
  CHECK(r.code == 0);
  CHECK(contains(r.out, "pos.t5.table"));
  CHECK(contains(r.out, "head 1"));
  CHECK(contains(r.out, "blocks.0.attn.qkv.weight"));

  r = run_rpb("train " + cfg.string() + " --set model.heads=3");
  CHECK(r.code == 1);
  CHECK(contains(r.out, "--set model.heads=3"));
  r = run_rpb("train " + (tmp.path / "missing.toml").string());  // a run error, like any bad file
  CHECK(r.code == 1);
  CHECK(contains(r.out, "missing.toml: no such file"));
  r = run_rpb("inspect " + cfg.string());  // not an HDF5 file
  CHECK(r.code == 1);
  CHECK(contains(r.out, "cannot open as HDF5"));

  r = run_rpb("extrapolate " + cfg.string() + " --set run.name=\"sweep\" --set run.steps=10");
  CHECK(r.code == 0);
  CHECK(contains(r.out, "| Method | Position params | PPL at train length | 2x | 4x |"));
  CHECK(contains(r.out, "| T5 bias | 16 |"));
  CHECK(contains(r.out, "| Learned PE | 256 |"));
  CHECK(contains(r.out, "n/a"));
  for (const char* f : {"results.csv", "results.json", "results.svg", "results.pdf"})  // sweep.figures' default
    CHECK(fs::exists(tmp.path / "sweep" / f));
  CHECK(contains(r.out, "/results.{csv,json,tex,svg,pdf}"));
  // Attention diagnostics: per seed and length in results.json, their mean over layers and heads in results.csv
  // (empty where learned positions cannot run).
  const std::string csv = rpb::testing::file_text(tmp.path / "sweep" / "results.csv");
  CHECK(contains(csv, ",nll,tokens,mean_attention_distance,protocol,eval_stride,bytes,bits_per_byte,accuracy,"
                      "run_folder,"));
  CHECK(std::regex_search(
      csv, std::regex("\nmarkov,t5,16,[0-9]+,4,64,[0-9.]+,[0-9.]*,[0-9.]+,[0-9]+,[0-9.]+,nonoverlapping,,,,,/")));
  CHECK(std::regex_search(csv, std::regex("\nmarkov,learned,256,[0-9]+,4,64,,[0-9.]*,,,,nonoverlapping,,,,,/")));
  const rpb::SweepResults json = rpb::read_sweep_results((tmp.path / "sweep" / "results.json").string());
  REQUIRE(json.rows.size() == 2);
  CHECK(json.multipliers == std::vector<int64_t>{1, 2, 4});
  for (const rpb::SweepResultsRow& row : json.rows) {
    CAPTURE(row.method);
    REQUIRE(row.attention.size() == 1);  // one seed
    CHECK(!row.attention[0][0].empty());
    CHECK(row.attention[0][0].mean_distance_overall() == row.distance_mean()[0]);
    CHECK(row.attention[0][2].empty() == (row.method == "learned"));  // learned: 1x only
    CHECK(row.perplexity[0][2].has_value() == (row.method != "learned"));
  }
  // A second call reuses the finished runs.
  r = run_rpb("extrapolate " + cfg.string() + " --set run.name=\"sweep\" --set run.steps=10");
  CHECK(r.code == 0);
  CHECK(contains(r.out, "finished earlier, reusing"));
}

TEST_CASE("extrapolate: mean and std over seeds skip undefined values") {
  const auto ms = mean_std({2.0, 4.0, std::nullopt});
  REQUIRE(ms);
  CHECK(ms->first == 3.0);
  CHECK(ms->second == doctest::Approx(std::sqrt(2.0)));
  CHECK_FALSE(mean_std({std::nullopt}).has_value());
}
