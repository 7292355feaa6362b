// Passkey retrieval (task.kind = "passkey", train/data/passkey.h): the sample layout and its depth bins, the held-out
// samples, the scoring of a model that reads the key exactly (accuracy 1, NLL 0) and of one that does not, greedy
// decoding's exact match from one forward against KV-cache decoding, and the task through config, trainer and records.
#include <doctest/doctest.h>

#include <cmath>
#include <filesystem>
#include <numeric>
#include <regex>
#include <fstream>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "core/autograd.h"
#include "nn/transformer.h"
#include "test_util.h"
#include "train/checkpoint/checkpoint.h"
#include "train/config/config.h"
#include "train/data/eval_segments.h"
#include "train/data/passkey.h"
#include "train/run/eval_record.h"
#include "train/sweep/results.h"
#include "train/sweep/results_json.h"
#include "train/sweep/sweep.h"
#include "train/trainer.h"

namespace passkey_test {

namespace fs = std::filesystem;
using namespace rpb;
using rpb::testing::contains;
using rpb::testing::error_of;
using rpb::testing::TempDir;

data::TaskOptions passkey_options(int64_t digits = 3) {
  data::TaskOptions o;
  o.kind = "passkey";
  o.vocab = 4;
  o.order = 1;
  o.seed = 3;
  o.train_tokens = 1000;
  o.eval_tokens = 300;
  o.passkey_digits = digits;
  o.passkey_samples = 2;
  return o;
}

// A run config of a tiny passkey model: K digits at `length`, `extra` keys appended to [run].
RunConfig passkey_run(const std::string& out_dir, const std::string& extra = "", int64_t digits = 2,
                      int64_t length = 16) {
  return parse_config("[run]\nname = \"pk\"\nout_dir = \"" + out_dir + "\"\nsteps = 300\nbatch = 16\nlength = " +
                          std::to_string(length) + "\nlog_every = 100\neval_every = 100\neval_multipliers = [1, 2]\n"
                          "eval_diagnostics = false\n" + extra +
                          "[model]\nd_model = 32\nheads = 2\nlayers = 2\nd_ff = 64\n"
                          "[position]\nscheme = \"t5\"\nnum_buckets = 16\nmax_distance = 32\n"
                          "[task]\nkind = \"passkey\"\nvocab = 4\norder = 1\npasskey_digits = " +
                          std::to_string(digits) + "\npasskey_samples = 20\ntrain_tokens = 4096\neval_tokens = 512\n"
                          "[optim]\nlr = 1e-2\nwarmup_steps = 10\n",
                      "pk.toml");
}

}  // namespace passkey_test

using namespace passkey_test;

TEST_CASE("passkey: a sample's layout, golden") {
  const data::PasskeyTask task(passkey_options());
  CHECK(task.vocab() == 4 + 12);
  CHECK(task.entropy_rate() == 0.0);
  CHECK(task.optimal_perplexity() == 1.0);
  Generator gen(7);
  std::vector<int64_t> s(21);
  const int64_t place = task.sample(task.filler_stream(), 20, -1, gen, s.data());
  // L = 20, K = 3: filler 13, places P = 14; the key block at `place`, the query at 17, the answer at 18..20.
  const data::PasskeyLayout lay{20, 3};
  CHECK(lay.places() == 14);
  CHECK(lay.filler() == 13);
  CHECK(lay.query() == 17);
  CHECK(place == 6);
  CHECK(s == std::vector<int64_t>{2, 0, 1, 0, 1, 1, 14, 12, 8, 8, 2, 1, 3, 0, 1, 2, 0, 15, 12, 8, 8});
  CHECK(task.decode({1, 1, 14, 12, 8, 8, 2, 15, 12, 8, 8}) == "1 1 <key> 844 2 <query> 844");
  // The key's digits are its block's and the answer's; every filler token is a filler id.
  for (int64_t i = 0; i < 17; ++i)
    if (i < place || i > place + 3) CHECK(s[i] < 4);
  CHECK(s[place] == task.key_marker());
  CHECK(s[17] == task.query_marker());
  for (int64_t d = 0; d < 3; ++d) CHECK(s[place + 1 + d] == s[18 + d]);
}

TEST_CASE("passkey: depth bins split the places into ten nonempty tenths") {
  for (int64_t length = data::passkey_min_length(1); length < 60; ++length) {
    const data::PasskeyLayout lay{length, 1};
    int64_t next = 0;
    for (int64_t b = 0; b < data::kPasskeyDepthBins; ++b) {
      const auto [lo, hi] = lay.bin_places(b);
      CHECK(lo == next);
      CHECK(hi > lo);
      for (int64_t p = lo; p < hi; ++p) CHECK(lay.bin_of(p) == b);
      next = hi;
    }
    CHECK(next == lay.places());
  }
  CHECK(data::passkey_min_length(5) == 20);
}

TEST_CASE("passkey: the description counts the filler streams built, and says which an evaluation did not build") {
  data::TaskOptions o = passkey_options();
  CHECK(contains(data::PasskeyTask(o).describe(),
                 "filler streams: train 1000 tokens, valid 300 tokens, test 300 tokens)"));
  o.use = data::DataUse::evaluate;
  CHECK(contains(data::PasskeyTask(o).describe(),
                 "filler streams: train not built, valid not built, test 300 tokens)"));
}

TEST_CASE("passkey: held-out samples are fixed, sample k in depth bin k mod 10, only the answer scored") {
  const data::PasskeyTask task(passkey_options());
  Tensor in, tg, in2, tg2, vin, vtg;
  task.held_out(data::Split::test, 24, in, tg);
  task.held_out(data::Split::test, 24, in2, tg2);
  task.held_out(data::Split::valid, 24, vin, vtg);
  REQUIRE(in.shape() == Shape{20, 24});
  CHECK(in.to_vector() == in2.to_vector());
  CHECK(tg.to_vector() == tg2.to_vector());
  CHECK(in.to_vector() != vin.to_vector());
  const data::PasskeyLayout lay{24, 3};
  for (int64_t k = 0; k < 20; ++k) {
    const int64_t* x = in.data<int64_t>() + k * 24;
    const int64_t* y = tg.data<int64_t>() + k * 24;
    int64_t place = -1;
    for (int64_t i = 0; i < 24; ++i)
      if (x[i] == task.key_marker()) place = i;
    REQUIRE(place >= 0);
    CHECK(lay.bin_of(place) == k % data::kPasskeyDepthBins);
    for (int64_t t = 0; t < 24; ++t) {
      if (t < lay.query()) CHECK(y[t] == data::kUnscoredTarget);
      else CHECK(y[t] == x[place + 1 + (t - lay.query())]);
    }
    CHECK(x[lay.query()] == task.query_marker());
  }
}

TEST_CASE("passkey: a model that reads the key exactly scores accuracy 1 and NLL 0, others less") {
  const data::PasskeyTask task(passkey_options());
  Tensor in, tg;
  task.held_out(data::Split::test, 20, in, tg);
  const int64_t n = in.size(0), length = 20, vocab = task.vocab();
  // The optimum: all of the answer's probability on the key's digit (a logit margin of 200: exp(-200) is 0 in double).
  std::vector<float> z(static_cast<std::size_t>(n * length * vocab), 0.0f);
  for (int64_t r = 0; r < n; ++r)
    for (int64_t t = 0; t < length; ++t) {
      const int64_t y = tg.data<int64_t>()[r * length + t];
      if (y >= 0) z[static_cast<std::size_t>((r * length + t) * vocab + y)] = 200.0f;
    }
  const Tensor exact = Tensor::from_vector<float>({n, length, vocab}, z);
  const data::PasskeyScore s = data::score_passkey(exact, tg, 3);
  CHECK(s.nll == 0.0);
  CHECK(std::count(s.exact.begin(), s.exact.end(), true) == n);
  // One digit of sample 4 wrong: that sample alone fails, and its NLL is 200 nats there.
  const int64_t y = tg.data<int64_t>()[4 * length + 18];
  z[static_cast<std::size_t>((4 * length + 18) * vocab + (y + 1) % vocab)] = 400.0f;
  const data::PasskeyScore wrong = data::score_passkey(Tensor::from_vector<float>({n, length, vocab}, z), tg, 3);
  CHECK(std::count(wrong.exact.begin(), wrong.exact.end(), true) == n - 1);
  CHECK_FALSE(wrong.exact[4]);
  CHECK(wrong.nll == doctest::Approx(200.0));
  // A tie goes to the first id, as greedy decoding's argmax: uniform logits are exact only where every digit is id 0.
  const data::PasskeyScore uniform =
      data::score_passkey(Tensor::zeros({n, length, vocab}), tg, 3);
  CHECK(std::count(uniform.exact.begin(), uniform.exact.end(), true) == 0);
  CHECK(uniform.nll == doctest::Approx(static_cast<double>(n * 3) * std::log(static_cast<double>(vocab))));
}

TEST_CASE("passkey: the one-forward exact match is greedy decoding's, checked with the KV cache") {
  TempDir dir("passkey_greedy");
  Run run(passkey_run(dir.path.string()));
  run.train(false);
  const std::vector<LengthResult> results = run.evaluate();
  REQUIRE(results.size() == 2);
  REQUIRE(results[0].accuracy.has_value());
  // Trained for 300 steps the model answers some samples and misses others: the comparison below can fail.
  CHECK(*results[0].accuracy > 0.1);
  CHECK(*results[0].accuracy < 1.0);
  auto& lm = dynamic_cast<nn::LanguageModel&>(run.model());
  lm.eval();
  data::TaskOptions o = run.config().task;
  const data::PasskeyTask task(o);
  for (const LengthResult& r : results) {
    Tensor in, tg;
    task.held_out(data::Split::test, r.length, in, tg);
    const data::PasskeyLayout lay{r.length, 2};
    int64_t decoded_exact = 0;
    std::vector<int64_t> per_bin(data::kPasskeyDepthBins, 0);
    NoGradGuard no_grad;
    for (int64_t k = 0; k < in.size(0); ++k) {
      nn::KVCache cache;
      const Tensor prompt = slice(slice(in, 0, k, k + 1), 1, 0, lay.query() + 1);  // through the query marker
      Tensor logits = lm.forward(prompt, &cache);
      bool exact = true;
      for (int64_t d = 0; d < 2; ++d) {
        const int64_t vocab = logits.size(2), last = logits.size(1) - 1;
        const float* z = logits.data<float>() + last * vocab;
        const int64_t next = std::max_element(z, z + vocab) - z;
        exact = exact && next == tg.data<int64_t>()[k * r.length + lay.query() + d];
        logits = lm.forward(Tensor::indices({1, 1}, {next}), &cache);
      }
      decoded_exact += exact;
      per_bin[static_cast<std::size_t>(k % data::kPasskeyDepthBins)] += exact;
    }
    INFO("length ", r.length);
    CHECK(static_cast<double>(decoded_exact) / static_cast<double>(in.size(0)) == doctest::Approx(*r.accuracy));
    for (int64_t b = 0; b < data::kPasskeyDepthBins; ++b)
      CHECK(static_cast<double>(per_bin[b]) / 20.0 == doctest::Approx(r.depth_accuracy[b]));
  }
}

TEST_CASE("passkey: metrics.csv holds the validation accuracy, and a run resumed midway ends as it did") {
  TempDir dir("passkey_resume");
  const auto read = [](const fs::path& p) {
    std::ifstream f(p, std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(f), {});
  };
  Run whole(passkey_run(dir.path.string(), "checkpoint_every = 100\n"));
  whole.train(false);
  const fs::path run_dir = whole.dir();
  // metrics.csv without its last two columns (tokens_per_sec and elapsed_s: wall-clock times).
  const auto untimed = [&](const fs::path& p) {
    std::string out, line;
    std::istringstream in(read(p));
    while (std::getline(in, line)) out += line.substr(0, line.rfind(',', line.rfind(',') - 1)) + "\n";
    return out;
  };
  const std::string csv = untimed(run_dir / "metrics.csv");
  CHECK(csv.rfind("step,train_loss,valid_loss@16,valid_accuracy@16,lr,", 0) == 0);
  const Checkpoint end = load_checkpoint((run_dir / "step_00000300.h5").string());
  REQUIRE(end.metrics.size() == 3);
  CHECK(end.metrics.back().valid_accuracy.size() == 1);
  // Resumed from step 200: the rows of the checkpoint (accuracy included) and the steps after it, bit for bit.
  Run again(passkey_run(dir.path.string(), "checkpoint_every = 100\n"));
  again.train(true, (run_dir / "step_00000200.h5").string());
  CHECK(untimed(run_dir / "metrics.csv") == csv);
  const Checkpoint resumed = load_checkpoint((run_dir / "step_00000300.h5").string());
  REQUIRE(resumed.metrics.size() == end.metrics.size());
  for (std::size_t i = 0; i < end.metrics.size(); ++i)
    CHECK(resumed.metrics[i].valid_accuracy == end.metrics[i].valid_accuracy);
  CHECK(whole.evaluate()[1].accuracy == again.evaluate()[1].accuracy);
  // rpb eval of the run: the accuracy table and its depth grid; --tokens means nothing here (a usage error, exit 2).
  const auto eval = rpb::testing::run_rpb("eval " + run_dir.string());
  CHECK(eval.code == 0);
  CHECK(contains(eval.out, "| length | x train | NLL (nats) | perplexity | accuracy (%) |"));
  CHECK(contains(eval.out, "| 0.9-1.0 |"));
  const auto tokens = rpb::testing::run_rpb("eval " + run_dir.string() + " --tokens 64");
  CHECK(tokens.code == 2);
  CHECK(contains(tokens.out, "task.passkey_samples samples per tenth of depth"));
}

TEST_CASE("passkey: config errors name the key") {
  CHECK(contains(error_of([] { passkey_run("x", "", 5, 16); }), "run.length"));
  CHECK(contains(error_of([] { passkey_run("x", "eval_stride = 4\n"); }), "whole samples"));
  // The passkey keys stay out of other tasks' configs.
  const RunConfig markov = parse_config("[task]\nkind = \"markov\"\n", "m.toml");
  CHECK_FALSE(contains(markov.text, "passkey_digits"));
  CHECK(contains(passkey_run("x").text, "passkey_digits = 2"));
}

TEST_CASE("passkey: a sweep prints accuracy against length with its spread, and results.json holds the depth grids") {
  TempDir dir("passkey_sweep");
  RunConfig c = passkey_run(dir.path.string());
  c = parse_config(c.text + "\n[sweep]\nmethods = [\"t5\", \"alibi\"]\nseeds = [0, 1]\n", "sweep.toml");
  const SweepResult r = run_sweep(c);
  REQUIRE(r.rows.size() == 2);
  const std::string table = format_table(r);
  CHECK(contains(table, "| Method | Position params | Learned | Accuracy at train length | 2x |\n"));
  CHECK(std::regex_search(table, std::regex("\\| T5 bias \\| [0-9]+ \\| [0-2]/2 \\| [0-9.]+ ± [0-9.]+ \\|")));
  write_results(r, (dir.path / "results").string());
  const SweepResults json = read_sweep_results((dir.path / "results" / "results.json").string());
  REQUIRE(json.rows.size() == 2);
  for (const SweepResultsRow& row : json.rows) {
    REQUIRE(row.depth_accuracy.size() == 2);  // per seed
    for (const auto& seed : row.depth_accuracy) {
      REQUIRE(seed.size() == 2);  // per length
      for (const std::vector<double>& grid : seed) CHECK(grid.size() == static_cast<std::size_t>(kDepthBins));
    }
    // The grid's mean is the accuracy: every depth bin holds task.passkey_samples samples.
    const std::vector<double>& grid = row.depth_accuracy[1][0];
    CHECK(std::accumulate(grid.begin(), grid.end(), 0.0) / kDepthBins == doctest::Approx(*row.accuracy[1][0]));
  }
}
