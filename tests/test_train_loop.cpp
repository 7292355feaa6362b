// The training loop: validation (run.eval_every), the interval-mean loss, metrics.csv, progress times, and an
// interrupt by a signal (in-process: a gradient hook raises it; tests/test_interrupt.cpp sends it to rpb train).
#include <doctest/doctest.h>
#include <hdf5.h>
#include <signal.h>
#include <spdlog/fmt/fmt.h>

#include <bit>
#include <filesystem>
#include <sstream>

#include "cli/inspect.h"
#include "run_checks.h"
#include "test_util.h"
#include "train/config/run_identity.h"
#include "train/interrupt.h"
#include "train/progress.h"
#include "train/run/latest.h"
#include "train/run/metrics_csv.h"
#include "train/trainer.h"

namespace fs = std::filesystem;
using namespace rpb;
using rpb::testing::TempDir;
using rpb::testing::check_same_bits;
using rpb::testing::csv_without_times;
using rpb::testing::contains;
using rpb::testing::error_of;
using rpb::testing::file_text;
using rpb::testing::temp_files;

namespace {

// A tiny markov run with dropout on; `run_keys` go into [run] ("eval_every = 4\n").
std::string loop_config(const fs::path& out, const std::string& run_keys, const std::string& kind = "markov") {
  const bool grid = kind == "grid2d";
  std::ostringstream os;
  os << "[run]\nname = \"loop\"\nout_dir = \"" << out.string() << "\"\nsteps = 24\nbatch = 4\nlength = "
     << (grid ? 4 : 16) << "\nlog_every = 5\ncheckpoint_every = 0\neval_multipliers = [1, 2]\neval_tokens = 256\n"
     << run_keys << "[model]\nd_model = 16\nheads = 2\nlayers = 1\nd_ff = 32\ndropout = 0.1\n"
     << (grid ? "[grid]\nwindow = 2\n" : "[position]\nscheme = \"t5\"\nnum_buckets = 8\nmax_distance = 32\n")
     << "[task]\nkind = \"" << kind << "\"\nvocab = 5\n"
     << (grid ? "" : "order = 1\ntrain_tokens = 4096\neval_tokens = 2048\n")
     << "[optim]\nlr = 1e-2\nschedule = \"cosine\"\nwarmup_steps = 2\n";
  return os.str();
}

// The run `name` of loop_config, with `overrides` ("run.log_every=1").
RunConfig loop_run(const fs::path& out, const std::string& run_keys, const std::string& name,
                   std::vector<std::string> overrides = {}) {
  overrides.push_back("run.name=\"" + name + "\"");
  return parse_config(loop_config(out, run_keys), "loop.toml", overrides);
}


}  // namespace

TEST_CASE("train loop: validation scores the valid split without changing the training, at eval_every and the end") {
  TempDir tmp("valid");
  Run plain(loop_run(tmp.path, "", "plain"));
  plain.train(false);
  Run validated(loop_run(tmp.path, "eval_every = 4\nvalid_multipliers = [1, 2]\nvalid_tokens = 128\n", "valid"));
  validated.train(false);
  // Validation draws nothing from the training's generators: the parameters are bit-identical.
  check_same_bits(plain.model().named_parameters(), validated.model().named_parameters(), "/params");
  const Checkpoint c = load_checkpoint(read_latest(validated.dir()));
  std::vector<int64_t> validated_steps;
  for (const MetricsRow& r : c.metrics)
    if (!r.valid_loss.empty()) {
      validated_steps.push_back(r.step);
      REQUIRE(r.valid_loss.size() == 2);
      CHECK(r.valid_loss[0].first == 16);
      CHECK(r.valid_loss[1].first == 32);
      CHECK((r.valid_loss[0].second > 0 && r.valid_loss[0].second < 10));
    }
  CHECK(validated_steps == std::vector<int64_t>{4, 8, 12, 16, 20, 24});
  // The same segments every time: a second run validates to the same bits.
  Run again(loop_run(tmp.path, "eval_every = 4\nvalid_multipliers = [1, 2]\nvalid_tokens = 128\n", "again"));
  again.train(false);
  CHECK(csv_without_times(fs::path(again.dir()) / "metrics.csv") ==
        csv_without_times(fs::path(validated.dir()) / "metrics.csv"));
  const std::string log = file_text(fs::path(validated.dir()) / "train.log");
  CHECK(contains(log, "step 24/24 valid: length 16 loss "));
  // Rows at every log_every step and at every validation: 4 5 8 10 12 15 16 20 24.
  CHECK(c.metrics.size() == 9);
  // inspect shows the validations per length, and the config's digest.
  std::ostringstream report;
  inspect_checkpoint(read_latest(validated.dir()), report);
  CHECK(contains(report.str(), "valid loss at length 16: "));
  CHECK(contains(report.str(), "valid loss at length 32: "));
  CHECK(contains(report.str(), "(step 24), lowest "));
  CHECK(contains(report.str(), ", 6 validations"));
  CHECK(contains(report.str(), "config digest " + config_digest(validated.config())));
}

TEST_CASE("train loop: a grid2d run validates on its own held-out grids") {
  TempDir tmp("gridvalid");
  Run run(parse_config(loop_config(tmp.path, "eval_every = 12\nvalid_tokens = 64\n", "grid2d"), "g.toml"));
  run.train(false);
  const std::string csv = file_text(fs::path(run.dir()) / "metrics.csv");
  CHECK(contains(csv, "step,train_loss,valid_loss@4,lr,"));
  const Checkpoint c = load_checkpoint(read_latest(run.dir()));
  CHECK(c.metrics.back().valid_loss.size() == 1);
}

TEST_CASE("train loop: the logged loss is the mean of the steps since the previous row") {
  TempDir tmp("mean");
  Run each(loop_run(tmp.path, "", "each", {"run.log_every=1"}));
  each.train(false);
  Run fives(loop_run(tmp.path, "", "fives"));
  const TrainSummary summary = fives.train(false);
  const auto per_step = load_checkpoint(read_latest(each.dir())).metrics;
  const auto rows = load_checkpoint(read_latest(fives.dir())).metrics;
  REQUIRE(per_step.size() == 24);
  REQUIRE(rows.size() == 5);  // 5 10 15 20 24
  int64_t from = 0;
  for (const MetricsRow& r : rows) {
    double sum = 0;
    for (int64_t s = from; s < r.step; ++s) sum += per_step[static_cast<std::size_t>(s)].loss;
    CAPTURE(r.step);
    CHECK(std::bit_cast<uint64_t>(r.loss) == std::bit_cast<uint64_t>(sum / static_cast<double>(r.step - from)));
    from = r.step;
  }
  // The line that ends the run reports the last row's loss (steps 21 to 24), not the last step's, and says so.
  REQUIRE(per_step.back().loss != rows.back().loss);
  CHECK(std::bit_cast<uint64_t>(summary.last_loss) == std::bit_cast<uint64_t>(rows.back().loss));
  CHECK(contains(file_text(fs::path(fives.dir()) / "train.log"),
                 fmt::format("run fives: finished at step 24 (train loss {:.4f}, the mean over the last log interval "
                             "as in metrics.csv); checkpoint ", rows.back().loss)));
}

TEST_CASE("train loop: SIGINT in a step saves that step, resumed, the run and metrics.csv match an uninterrupted one") {
  TempDir tmp("sigint");
  const std::string keys = "eval_every = 4\n";
  const std::vector<std::string> every10 = {"run.checkpoint_every=10"};
  Run straight(loop_run(tmp.path, keys, "straight", every10));
  straight.train(false);
  Run cut(loop_run(tmp.path, keys, "cut", every10));
  {
    const InterruptHandlers handlers;
    cut.on_gradients([](int64_t step, const std::vector<optim::NamedParam>&) {
      if (step == 7) ::raise(SIGINT);  // mid-interval (rows at 5 and 8) and before the first checkpoint
    });
    int signal = 0;
    try {
      cut.train(false);
    } catch (const Interrupted& e) {
      signal = e.signal();
      CHECK(e.exit_code() == 130);
    }
    CHECK(signal == SIGINT);
  }
  CHECK(read_latest(cut.dir()) == (fs::path(cut.dir()) / "step_00000007.h5").string());
  CHECK(temp_files(cut.dir()).empty());
  CHECK(file_text(fs::path(cut.dir()) / "lock").empty());  // released
  const std::string log = file_text(fs::path(cut.dir()) / "train.log");
  CHECK(contains(log, "interrupted at step 7; resume with: build/rpb train loop.toml --resume"));
  CHECK(pending_interrupt() == 0);  // forgotten with the handlers

  Run resumed(loop_run(tmp.path, keys, "cut", every10));
  resumed.train(true);
  check_same_bits(straight.model().named_parameters(), resumed.model().named_parameters(), "/params");
  CHECK(csv_without_times(fs::path(resumed.dir()) / "metrics.csv") ==
        csv_without_times(fs::path(straight.dir()) / "metrics.csv"));
}

TEST_CASE("train loop: metrics rows keep their valid losses and elapsed time, files without them still load") {
  TempDir tmp("rows");
  Run run(loop_run(tmp.path, "eval_every = 10\nvalid_multipliers = [1, 2]\nvalid_tokens = 64\n", "rows"));
  run.train(false);
  const std::string file = read_latest(run.dir());
  const Checkpoint c = load_checkpoint(file);
  CHECK(c.metrics.back().elapsed_s > 0);
  CHECK(c.metrics[1].valid_loss.size() == 2);  // step 10
  CHECK(c.metrics[0].valid_loss.empty());      // step 5
  {
    const hid_t f = H5Fopen(file.c_str(), H5F_ACC_RDWR, H5P_DEFAULT);
    REQUIRE(f >= 0);
    for (const char* d : {"/metrics/elapsed_s", "/metrics/valid_loss@16", "/metrics/valid_loss@32"})
      CHECK(H5Ldelete(f, d, H5P_DEFAULT) >= 0);
    H5Fclose(f);
  }
  const Checkpoint old = load_checkpoint(file);
  REQUIRE(old.metrics.size() == c.metrics.size());
  CHECK(old.metrics.back().elapsed_s == 0);
  CHECK(old.metrics[1].valid_loss.empty());
  CHECK(std::bit_cast<uint64_t>(old.metrics[1].loss) == std::bit_cast<uint64_t>(c.metrics[1].loss));
}

TEST_CASE("train loop: metrics.csv lines leave empty cells where a row has no validation") {
  const std::vector<int64_t> lengths = {64, 128};
  CHECK(metrics_csv_header(lengths) ==
        "step,train_loss,valid_loss@64,valid_loss@128,lr,grad_norm,tokens,tokens_per_sec,elapsed_s\n");
  MetricsRow r{50, 2.5, 0.001, 0.25, 1000, 12.5};
  CHECK(metrics_csv_line(r, lengths, 256) == "50,2.5,,,0.001,0.25,12800,1000,12.5\n");  // 50 steps of 256 tokens
  r.valid_loss = {{128, 2.75}};
  CHECK(metrics_csv_line(r, lengths, 256) == "50,2.5,,2.75,0.001,0.25,12800,1000,12.5\n");
}

TEST_CASE("train loop: durations print as h:mm:ss") {
  CHECK(format_duration(0) == "0:00:00");
  CHECK(format_duration(245.4) == "0:04:05");
  CHECK(format_duration(27 * 3600) == "27:00:00");
  CHECK(format_duration(std::nan("")) == "?");
}

TEST_CASE("train loop: the validation keys are checked, naming the key, what was expected and what was found") {
  TempDir tmp("validkeys");
  const auto err = [&](const std::string& keys) {
    return error_of([&] { parse_config(loop_config(tmp.path, keys), "v.toml"); });
  };
  CHECK(contains(err("eval_every = -1\n"), "run.eval_every"));
  CHECK(contains(err("eval_every = 2\nvalid_multipliers = [0]\n"), "run.valid_multipliers"));
  CHECK(contains(err("eval_every = 2\nvalid_tokens = 10\n"),
                 "run.valid_multipliers: the longest validation length 1 x run.length 16 = 16 scores at least 16 "
                 "tokens, over run.valid_tokens = 10"));
  CHECK(contains(err("eval_every = 2\nvalid_multipliers = [1, 256]\nvalid_tokens = 65536\n"),
                 "the markov valid stream has task.eval_tokens = 2048"));
  CHECK(err("valid_tokens = 10\n").empty());  // no validation: nothing to check
}

TEST_CASE("evaluate: attention diagnostics per layer and head on the test split, perplexities unchanged by them") {
  TempDir tmp("diag");
  Run on(loop_run(tmp.path, "", "on"));
  Run off(loop_run(tmp.path, "eval_diagnostics = false\n", "off"));
  const std::vector<LengthResult> a = on.evaluate(), b = off.evaluate();
  REQUIRE(a.size() == 2);
  REQUIRE(b.size() == 2);
  for (std::size_t i = 0; i < 2; ++i) {
    CAPTURE(i);
    CHECK(std::bit_cast<uint64_t>(*a[i].nll) == std::bit_cast<uint64_t>(*b[i].nll));  // the scored forwards are today's
    CHECK(b[i].attention.empty());
    REQUIRE(a[i].attention.mean_distance.size() == 1);  // one layer
    REQUIRE(a[i].attention.mean_distance[0].size() == 2);  // two heads
    CHECK(a[i].attention.entropy[0][1] > 0);
    CHECK(*a[i].attention.mean_distance_overall() < a[i].length);
  }
  CHECK(std::bit_cast<uint64_t>(*on.evaluate()[1].attention.entropy_overall()) ==
        std::bit_cast<uint64_t>(*a[1].attention.entropy_overall()));  // the same sample every time
  // Grids: global attention measures over the whole grid's cells, window attention (swin, 2 x 2 windows) within
  // a window, where no two cells lie more than sqrt(2) apart.
  for (const char* scheme : {"alibi2d", "swin"}) {
    CAPTURE(scheme);
    Run grid(parse_config(loop_config(tmp.path, "", "grid2d"), "g.toml",
                          {std::string("run.name=") + scheme, std::string("position.scheme=") + scheme}));
    const std::vector<LengthResult> g = grid.evaluate();
    REQUIRE(g.size() == 2);
    REQUIRE(!g[1].attention.empty());
    CHECK(g[1].attention.mean_distance.size() == 1);  // one block
    const double d = *g[1].attention.mean_distance_overall();
    if (std::string(scheme) == "swin") CHECK((d > 0.1 && d < std::sqrt(2.0)));
    else CHECK(d > 1.0);  // 8 x 8 grid, bidirectional
  }
}
