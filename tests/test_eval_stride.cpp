// Sliding-window evaluation (run.eval_stride, `rpb eval --stride`; the ALiBi paper's second protocol): windows of the
// evaluation length advanced by S score the nonoverlapping protocol's tokens once each; S = L is that protocol bit for
// bit; records, results and the sweep say which protocol each number used, and a stride row reuses its scheme's runs.
#include <doctest/doctest.h>
#include <spdlog/sinks/ostream_sink.h>
#include <spdlog/spdlog.h>

#include <cmath>
#include <filesystem>
#include <map>
#include <memory>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "core/autograd.h"
#include "nn/transformer.h"
#include "test_util.h"
#include "train/config/config.h"
#include "train/data/eval_segments.h"
#include "train/data/task.h"
#include "train/run/eval_record.h"
#include "train/sweep/results.h"
#include "train/sweep/results_json.h"
#include "train/sweep/results_tex.h"
#include "train/sweep/sweep.h"
#include "train/trainer.h"
#include "train/workload.h"

namespace eval_stride_test {

namespace fs = std::filesystem;
using rpb::testing::contains;
using rpb::testing::error_of;
using rpb::testing::TempDir;

// A tiny untrained markov model at `length` (init_std 0.3: logits that differ from token to token), `run` extra keys.
rpb::RunConfig tiny(const std::string& run, const std::string& out_dir = "unused", int length = 8) {
  return rpb::parse_config(
      "[run]\nname = \"stride\"\nout_dir = \"" + out_dir + "\"\nsteps = 3\nbatch = 2\nlength = " +
          std::to_string(length) + "\nlog_every = 1\n"
      "eval_diagnostics = false\n" + run +
          "[model]\nd_model = 16\nheads = 2\nlayers = 1\nd_ff = 32\ninit_std = 0.3\n"
          "[position]\nscheme = \"alibi\"\n"
          "[task]\nkind = \"markov\"\nvocab = 5\norder = 1\ntrain_tokens = 1024\neval_tokens = 512\n"
          "[optim]\nwarmup_steps = 1\n",
      "stride.toml");
}

// Whether two i64 tensors hold the same shape and values.
bool same_i64(const rpb::Tensor& a, const rpb::Tensor& b) {
  if (a.shape() != b.shape()) return false;
  for (int64_t i = 0; i < a.numel(); ++i)
    if (a.data<int64_t>()[i] != b.data<int64_t>()[i]) return false;
  return true;
}

// The default logger, while it lives, writes its lines to `text`.
struct LogCapture {
  std::ostringstream text;
  std::shared_ptr<spdlog::logger> previous = spdlog::default_logger();
  LogCapture() {
    auto logger = std::make_shared<spdlog::logger>("stride", std::make_shared<spdlog::sinks::ostream_sink_mt>(text));
    logger->set_level(spdlog::level::debug);
    logger->set_pattern("%v");
    spdlog::set_default_logger(logger);
  }
  ~LogCapture() { spdlog::set_default_logger(previous); }
  LogCapture(const LogCapture&) = delete;
  LogCapture& operator=(const LogCapture&) = delete;
};

}  // namespace eval_stride_test

using namespace eval_stride_test;

TEST_CASE("eval stride: the windows score every target of the nonoverlapping protocol once, with L - S context") {
  const std::vector<int32_t> stream(200, 1);
  for (const int64_t L : {1, 4, 8, 16})
    for (int64_t S = 1; S <= L; ++S) {
      CAPTURE(L);
      CAPTURE(S);
      const auto windows = rpb::data::make_eval_windows(200, L, {1}, 100, S);
      const rpb::data::EvalPlan plan = rpb::data::make_eval_plan(200, L, {1}, 100);
      REQUIRE(windows.size() == 1);
      const rpb::data::EvalWindows& w = windows[0];
      CHECK(w.tokens == plan.tokens_scored);
      std::vector<int> times(static_cast<std::size_t>(w.tokens), 0);
      int64_t total = 0;
      for (int64_t k = 0; k < w.count(); ++k) {
        const int64_t end = w.end(k), start = end - L;
        CHECK(start >= 0);
        CHECK(w.scored(k) == (k == 0 ? L : std::min(S, w.tokens - (end - w.scored(k)))));
        for (int64_t t = end - w.scored(k); t < end; ++t) {
          ++times[static_cast<std::size_t>(t)];
          CHECK(t - start >= (k == 0 ? 0 : L - S));  // the context before target t inside its window
        }
        total += w.scored(k);
      }
      CHECK(total == plan.tokens_scored);
      CHECK(std::count(times.begin(), times.end(), 1) == w.tokens);  // each once, none twice or never
    }
  // S = L: the windows are the nonoverlapping segments, input for input and target for target.
  std::vector<int32_t> counting(100);
  for (std::size_t i = 0; i < counting.size(); ++i) counting[i] = static_cast<int32_t>(i);
  const auto segments = rpb::data::make_eval_segments(counting, 8, {1, 2}, 64);
  const auto windows = rpb::data::make_eval_windows(100, 8, {1, 2}, 64, 8);
  rpb::Tensor in, tg;
  rpb::data::eval_window_batch(counting, windows[0], 0, windows[0].count(), in, tg);
  CHECK(same_i64(in, segments[0].inputs));
  CHECK(same_i64(tg, segments[0].targets));
  // A window past the first marks the targets it does not score.
  const auto sliding = rpb::data::make_eval_windows(100, 8, {1}, 64, 3);
  rpb::data::eval_window_batch(counting, sliding[0], 1, 2, in, tg);
  const int64_t* t = tg.data<int64_t>();
  const int64_t* x = in.data<int64_t>();
  CHECK(x[0] == 3);  // window 1 starts at 3, its targets 4 .. 11, the last 3 (9, 10, 11) scored
  for (int j = 0; j < 5; ++j) CHECK(t[j] == rpb::data::kUnscoredTarget);
  CHECK(t[5] == 9);
  CHECK(t[7] == 11);
}

TEST_CASE("eval stride: a stride of 0, above the length or on a grid is refused naming run.eval_stride") {
  CHECK(contains(error_of([] { rpb::data::make_eval_windows(200, 8, {1, 2}, 64, 9); }),
                 "run.eval_stride 9 does not fit the evaluation length 8"));
  CHECK(contains(error_of([] { rpb::data::make_eval_windows(200, 8, {1}, 64, 0); }), "run.eval_stride 0"));
  const std::string above = error_of([] { tiny("eval_multipliers = [2, 4]\neval_stride = 17\n"); });
  CHECK(contains(above, "run.eval_stride = 17"));
  CHECK(contains(above, "expected at most the shortest evaluation length 16"));
  CHECK(tiny("eval_multipliers = [2, 4]\neval_stride = 16\n").eval_stride == 16);
  const std::string grid = error_of([] {
    rpb::parse_config("[run]\nlength = 4\neval_multipliers = [1, 2]\neval_stride = 2\n[task]\nkind = \"grid2d\"\n",
                      "g.toml");
  });
  CHECK(contains(grid, "run.eval_stride = 2"));
  CHECK(contains(grid, "grid2d task evaluates whole grids"));
  // Written into the effective config (and so a checkpoint's) only when set: a config without it keeps its text.
  CHECK(!contains(tiny("").text, "eval_stride"));
  CHECK(contains(tiny("eval_stride = 4\n").text, "eval_stride = 4"));
  CHECK(rpb::parse_config(tiny("eval_stride = 4\n").text, "again").eval_stride == 4);
}

TEST_CASE("eval stride: the NLL is the mean of the per-token NLLs of the model run on each window by hand") {
  const rpb::RunConfig cfg = tiny("eval_multipliers = [1]\neval_tokens = 24\neval_batch = 2\neval_stride = 3\n");
  auto workload = rpb::make_workload(cfg);
  const auto results = workload->evaluate({1}, rpb::data::Split::test, 0, nullptr);
  REQUIRE(results.size() == 1);
  REQUIRE(results[0].nll);
  CHECK(results[0].tokens == 24);
  // N = 24 targets, L = 8, S = 3: windows end at 8, 11, 14, 17, 20, 23 and 24 (the last advanced by 1), so they start
  // at these tokens and score their last `scored` targets: 8 + 5 x 3 + 1 = 24.
  const std::vector<std::pair<int64_t, int64_t>> windows = {{0, 8}, {3, 3}, {6, 3}, {9, 3}, {12, 3}, {15, 3}, {16, 1}};
  const auto task = rpb::data::make_task(cfg.task);
  const std::vector<int32_t> stream = task->test_stream().to_vector();
  auto& model = dynamic_cast<rpb::nn::LanguageModel&>(workload->model());
  model.eval();
  rpb::NoGradGuard no_grad;
  double total = 0;
  int64_t scored = 0;
  for (const auto& [start, count] : windows) {
    rpb::Tensor in = rpb::Tensor::empty({1, 8}, rpb::DType::i64);
    for (int64_t j = 0; j < 8; ++j) in.mutable_data<int64_t>()[j] = stream[static_cast<std::size_t>(start + j)];
    const rpb::Tensor logits = model.forward(in);  // (1, 8, vocab)
    const int64_t vocab = logits.size(-1);
    const float* z = logits.data<float>();
    for (int64_t j = 8 - count; j < 8; ++j) {
      double lse = 0;
      for (int64_t v = 0; v < vocab; ++v) lse += std::exp(static_cast<double>(z[j * vocab + v]));
      const int32_t target = stream[static_cast<std::size_t>(start + j + 1)];
      total += std::log(lse) - static_cast<double>(z[j * vocab + target]);
      ++scored;
    }
  }
  REQUIRE(scored == 24);
  CHECK(*results[0].nll == doctest::Approx(total / 24).epsilon(1e-6));
  // The nonoverlapping protocol scores the same 24 tokens with less context: another number.
  auto plain = rpb::make_workload(tiny("eval_multipliers = [1]\neval_tokens = 24\neval_batch = 2\n"));
  const double nonoverlapping = *plain->evaluate({1}, rpb::data::Split::test, 0, nullptr)[0].nll;
  CHECK(std::abs(nonoverlapping - total / 24) > 1e-4);
}

TEST_CASE("eval stride: S = L gives the nonoverlapping numbers bit for bit, and the progress counts scored tokens") {
  TempDir tmp("eval_stride_same");
  const std::string lengths = "eval_multipliers = [1, 2, 4]\neval_tokens = 192\neval_batch = 3\n";
  // Length 6, not a power of two: weights counted in tokens rather than windows would round otherwise.
  rpb::Run plain(tiny(lengths, tmp.path.string(), 6));
  rpb::Run same(tiny(lengths + "eval_stride = 6\n", tmp.path.string(), 6));
  const auto a = plain.evaluate(), b = same.evaluate();
  REQUIRE(a.size() == 3);
  REQUIRE(b.size() == 3);
  CHECK(*a[0].nll == *b[0].nll);  // length 6 = S: the same windows, batches and sums
  CHECK(*a[1].nll != *b[1].nll);  // length 12: windows advanced by 6, a protocol of its own
  CHECK(b[2].tokens == a[2].tokens);
  // The progress counts the tokens scored, not the tokens run through the model (4x as many at length 24).
  rpb::ProgressContext context;
  context.eval_log_every_s = 0;
  same.set_context(context);
  std::string text;
  {
    const LogCapture log;
    same.evaluate();
    text = log.text.str();
  }
  CAPTURE(text);
  // Length 24, eval_batch 3: window 0 scores 24 targets, windows 1 and 2 their last 6 each (72 tokens run).
  CHECK(contains(text, "eval length 24 (3/3): 36/192 tokens (19%)"));
  CHECK(contains(text, "eval length 24 (3/3): 192/192 tokens (100%)"));
  CHECK(!std::regex_search(text, std::regex("/192 tokens \\((10[1-9]|1[1-9][0-9]|[2-9][0-9][0-9])%\\)")));  // never past 100%
}

TEST_CASE("eval stride: the record's options, name and protocol round trip, an older record reads nonoverlapping") {
  rpb::EvalRecord r;
  r.checkpoint = "step_00000600.h5";
  r.checkpoint_sha256 = std::string(64, 'a');
  r.config_digest = std::string(64, 'b');
  r.run = "t5";
  r.scheme = "t5";
  r.task = "markov: test";
  r.train_length = 64;
  rpb::LengthResult l;
  l.length = 64;
  l.multiplier = 1;
  l.nll = 2.0;
  l.tokens = 8192;
  r.lengths = {l};
  CHECK(rpb::eval_record_name(r) == "step_00000600-8192.json");
  r.options.stride = 32;
  CHECK(rpb::eval_record_name(r) == "step_00000600-8192-S32.json");
  r.options.lengths = {64};
  r.options.diagnostics = true;
  CHECK(rpb::eval_record_name(r) == "step_00000600-8192-L64-diag-S32.json");
  const rpb::Json j = rpb::eval_record_object(r);
  CHECK(j["protocol"] == "sliding_window");
  CHECK(j["options"]["stride"] == 32);
  const rpb::EvalRecord back = rpb::eval_record_from_json(j, "record", "x.json");
  CHECK(back.options == r.options);
  CHECK(rpb::eval_record_name(back) == rpb::eval_record_name(r));
  r.options.stride = 0;
  CHECK(rpb::eval_record_object(r)["protocol"] == "nonoverlapping");
  CHECK(rpb::eval_record_object(r)["options"]["stride"].is_null());
  // rpb-eval-3 had no protocol: nonoverlapping.
  rpb::Json old = j;
  old["format"] = "rpb-eval-3";
  old.erase("protocol");
  old["options"].erase("stride");
  CHECK(rpb::eval_record_from_json(old, "old", "x.json").options.stride == 0);
  rpb::Json wrong = j;
  wrong["protocol"] = "nonoverlapping";
  CHECK(contains(error_of([&] { rpb::eval_record_from_json(wrong, "record", "x.json"); }),
                 "disagrees with options.stride"));
}

TEST_CASE("eval stride: a sweep's stride row reuses its scheme's runs and its results say the protocol") {
  TempDir tmp("eval_stride_sweep");
  rpb::RunConfig c = rpb::parse_config(
      rpb::testing::tiny_sweep_config(tmp.path, "s", "[1, 2]") +
          "[optim]\nwarmup_steps = 1\n[sweep]\nseeds = [0]\nfigures = false\n"
          "methods = [\"alibi@run.eval_stride=4\", \"alibi\"]\n",
      "sweep.toml");
  REQUIRE(c.sweep.methods.size() == 2);
  CHECK(c.sweep.methods[0].label() == "ALiBi, sliding window stride 4");
  const rpb::SweepResult r = rpb::run_sweep(c);
  REQUIRE(r.rows.size() == 2);
  // One run trained (by the first row), evaluated twice: no folder of the stride method's own.
  CHECK(r.rows[0].runs[0].folder == r.rows[1].runs[0].folder);
  CHECK(r.rows[0].runs[0].checkpoint_sha256 == r.rows[1].runs[0].checkpoint_sha256);
  CHECK(fs::exists(tmp.path / "s" / "markov" / "alibi" / "seed0"));
  CHECK(!fs::exists(tmp.path / "s" / "markov" / "alibi@run.eval_stride=4"));
  CHECK(r.rows[0].eval_stride == 4);
  CHECK(r.rows[1].eval_stride == 0);
  CHECK(r.rows[0].ppl[0][1] != r.rows[1].ppl[0][1]);

  rpb::write_results(r, (tmp.path / "out").string());
  const rpb::SweepResults json = rpb::read_sweep_results((tmp.path / "out" / "results.json").string());
  CHECK(json.rows[0].eval_stride == 4);
  CHECK(json.rows[1].eval_stride == 0);
  const std::string text = rpb::testing::file_text(tmp.path / "out" / "results.json");
  CHECK(contains(text, "\"protocol\": \"sliding_window\""));
  CHECK(contains(text, "\"eval_stride\": 4"));
  CHECK(contains(text, "\"protocol\": \"nonoverlapping\""));
  const std::string csv = rpb::testing::file_text(tmp.path / "out" / "results.csv");
  CHECK(contains(csv, "\nmarkov,alibi@run.eval_stride=4,"));
  CHECK(contains(csv, ",sliding_window,4,"));
  CHECK(contains(csv, ",nonoverlapping,,"));
  CHECK(contains(rpb::testing::file_text(tmp.path / "out" / "results.tex"),
                 "sliding-window evaluation, stride 4; ALiBi, nonoverlapping evaluation."));
  CHECK(contains(rpb::format_table(r), "Protocol: by row: alibi@run.eval_stride=4 sliding window, stride 4; alibi "
                                       "nonoverlapping segments\n"));
  // An rpb-results-4 file (no protocol) reads as nonoverlapping.
  rpb::Json old = rpb::sweep_results_object(json);
  old["format"] = "rpb-results-4";
  for (auto& row : old["rows"]) row.erase("protocol"), row.erase("eval_stride");
  CHECK(rpb::sweep_results_from_json(old, "old").rows[0].eval_stride == 0);
}
