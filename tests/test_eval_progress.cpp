// Long evaluations show their progress as training does (issue 24): a line per interval while the sizes are scored,
// from a thread of their own so that one long forward still shows its time, for `rpb eval`, the evaluation at the
// end of `train` and a sweep's (all Run::evaluate), without changing a number.
#include <doctest/doctest.h>
#include <spdlog/sinks/ostream_sink.h>
#include <spdlog/spdlog.h>

#include <chrono>
#include <memory>
#include <sstream>
#include <string>
#include <thread>

#include "test_util.h"
#include "train/eval_progress.h"
#include "train/trainer.h"

using namespace rpb;
using namespace rpb::testing;  // TempDir, contains

namespace eval_progress_test {

// The default logger, while it lives, writes its lines (every level) to `text`.
struct CapturedLog {
  std::ostringstream text;
  std::shared_ptr<spdlog::logger> previous = spdlog::default_logger();
  CapturedLog() {
    auto logger = std::make_shared<spdlog::logger>("captured", std::make_shared<spdlog::sinks::ostream_sink_mt>(text));
    logger->set_level(spdlog::level::debug);
    logger->set_pattern("%v");
    spdlog::set_default_logger(logger);
  }
  ~CapturedLog() { spdlog::set_default_logger(previous); }
  CapturedLog(const CapturedLog&) = delete;
  CapturedLog& operator=(const CapturedLog&) = delete;
};

// A tiny untrained run of `kind` (markov: lengths 16 and 32; grid2d: sides 4 and 8), never trained: evaluated only.
RunConfig tiny(const TempDir& tmp, const std::string& kind) {
  const bool grid = kind == "grid2d";
  const std::string text =
      "[run]\nname = \"progress\"\nout_dir = \"" + tmp.path.string() + "\"\nsteps = 2\nbatch = 4\nlength = " +
      (grid ? "4" : "16") + "\neval_multipliers = [1, 2]\neval_tokens = 256\neval_batch = 2\n" +
      "[model]\nd_model = 16\nheads = 2\nlayers = 1\nd_ff = 32\n" +
      (grid ? "[grid]\nwindow = 2\n" : "[position]\nscheme = \"t5\"\nnum_buckets = 8\nmax_distance = 32\n") +
      "[task]\nkind = \"" + kind + "\"\nvocab = 5\n" + (grid ? "" : "order = 1\ntrain_tokens = 4096\neval_tokens = 2048\n") +
      "[optim]\nwarmup_steps = 1\n";
  return parse_config(text, "progress.toml");
}

}  // namespace eval_progress_test

using namespace eval_progress_test;

TEST_CASE("eval progress: every evaluation through Run::evaluate logs its progress, and its numbers do not change") {
  TempDir tmp("eval_progress");
  for (const std::string kind : {"markov", "grid2d"}) {
    CAPTURE(kind);
    Run run(tiny(tmp, kind));
    const std::vector<LengthResult> quiet = run.evaluate();  // the default: a line every 10 s, so none here
    ProgressContext context;
    context.prefix = "[2/5]";
    context.eval_log_every_s = 0;  // a line at every batch
    run.set_context(context);
    std::string text;
    std::vector<LengthResult> shown;
    {
      const CapturedLog log;
      shown = run.evaluate();
      text = log.text.str();
    }
    CAPTURE(text);
    const std::string unit = kind == "grid2d" ? "cells" : "tokens", size = kind == "grid2d" ? "side" : "length";
    REQUIRE(quiet.size() == 2);
    REQUIRE(shown.size() == 2);
    for (std::size_t i = 0; i < 2; ++i) {
      CHECK(*shown[i].nll == *quiet[i].nll);  // bit for bit
      // Two batches at least at each size (eval_batch = 2): the first half-way or earlier, the last at 100%.
      const std::string head = "[2/5] eval " + size + " " + std::to_string(quiet[i].length) + " (" +
                               std::to_string(i + 1) + "/2): ";
      CHECK(contains(text, head + std::to_string(quiet[i].tokens) + "/" + std::to_string(quiet[i].tokens) + " " +
                               unit + " (100%), elapsed "));
      CHECK(contains(text, head + std::to_string(quiet[i].tokens / 2) + "/" + std::to_string(quiet[i].tokens) + " " +
                               unit + " (50%), elapsed "));
    }
  }
}

TEST_CASE("eval progress: a forward that takes long still shows the time, and a short evaluation logs nothing") {
  const CapturedLog log;
  {
    EvalProgress progress(*spdlog::default_logger(), "", 3, false, 0);
    progress.begin(0, 65536, 65536);
    std::this_thread::sleep_for(std::chrono::milliseconds(400));  // one forward of 65536 tokens, scoring nothing yet
  }
  CHECK(contains(log.text.str(), "eval length 65536 (1/3): 0/65536 tokens (0%), elapsed 0:00:00, ETA of this length ?"));
  const auto before = log.text.str().size();
  {
    EvalProgress progress(*spdlog::default_logger(), "", 1, true, 10);
    progress.begin(0, 8, 640);
    progress.advance(640);
    progress.measuring_attention();
  }
  CHECK(log.text.str().size() == before);
}
