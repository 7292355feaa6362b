// Per-token loss by position (train/data/position_loss.h, LengthResult::position_loss): its arithmetic, that its
// targets pool to the evaluation's own NLL in both protocols and in an algorithmic task, that it is measured only
// with the attention diagnostics, and that eval records and results.json carry it and refuse it malformed.
#include <doctest/doctest.h>

#include <cmath>
#include <numeric>
#include <string>
#include <vector>

#include "test_util.h"
#include "train/config/config.h"
#include "train/data/position_loss.h"
#include "train/run/eval_record.h"
#include "train/sweep/results_json.h"
#include "train/workload.h"

namespace position_loss_test {

using rpb::testing::contains;
using rpb::testing::error_of;
using rpb::data::PositionLoss;

// A tiny untrained model (init_std 0.3: logits that differ from token to token) on `task`, `run` extra keys.
const char* const kMarkovTask = "kind = \"markov\"\nvocab = 5\norder = 1\ntrain_tokens = 1024\neval_tokens = 512\n";

rpb::RunConfig position_loss_config(const std::string& run, const std::string& task = kMarkovTask) {
  return rpb::parse_config("[run]\nname = \"p\"\nout_dir = \"unused\"\nsteps = 3\nbatch = 2\nlength = 8\n" + run +
                               "[model]\nd_model = 16\nheads = 2\nlayers = 1\nd_ff = 32\ninit_std = 0.3\n"
                               "[position]\nscheme = \"alibi\"\n[task]\n" + task,
                           "p.toml");
}

// Every target's NLL summed, and the targets: the overall mean is their ratio.
double position_loss_sum(const PositionLoss& p) { return std::accumulate(p.sum.begin(), p.sum.end(), 0.0); }
int64_t position_loss_targets(const PositionLoss& p) {
  return std::accumulate(p.targets.begin(), p.targets.end(), int64_t{0});
}

// The pooled mean of `p` (its sums over its targets) against `nll`, relative.
void check_pools_to(const PositionLoss& p, double nll) {
  REQUIRE(position_loss_targets(p) > 0);
  CHECK(std::abs(position_loss_sum(p) / static_cast<double>(position_loss_targets(p)) - nll) <= 1e-5 * nll);
}

}  // namespace position_loss_test

using namespace position_loss_test;

TEST_CASE("position loss: each target's NLL at its column, unscored ones skipped, means, pooling and bins") {
  // Two rows of 3 positions over a vocabulary of 2; row 1's position 2 is unscored.
  const std::vector<float> z = {0, 0, 1, 0, 0, 2, /* row 1 */ 3, 0, 0, 0, 5, 5};
  const rpb::Tensor logits = rpb::Tensor::from_vector<float>({2, 3, 2}, z);
  const rpb::Tensor targets = rpb::Tensor::from_vector<int64_t>({2, 3}, {0, 1, 1, 1, 0, -100});
  PositionLoss p;
  p.add(logits, targets, -100);
  const double l2 = std::log(2.0);
  const auto nll = [](double own, double other) { return std::log(std::exp(own) + std::exp(other)) - own; };
  REQUIRE(p.sum.size() == 3);
  CHECK(p.targets == std::vector<int64_t>{2, 2, 1});
  CHECK(p.sum[0] == doctest::Approx(l2 + nll(0, 3)));
  CHECK(p.sum[1] == doctest::Approx(nll(0, 1) + l2));
  CHECK(p.sum[2] == doctest::Approx(nll(2, 0)));
  CHECK(*p.means()[2] == doctest::Approx(nll(2, 0)));
  CHECK(rpb::data::token_nll(z.data() + 2, 2, 1) == doctest::Approx(nll(0, 1)));
  // Pooling adds position by position; the longer sets the size; a position without targets has no mean.
  PositionLoss q;
  q.add(4, 1.5);
  p += q;
  CHECK(p.targets == std::vector<int64_t>{2, 2, 1, 0, 1});
  CHECK(!p.means()[3].has_value());
  CHECK(position_loss_targets(p) == 6);
  // Bins: 5 positions in at most 2 bins of width 3, the last shorter; at most 8: width 1, the positions themselves.
  const rpb::data::BinnedPositionLoss b = rpb::data::binned(p, 2);
  CHECK(b.width == 3);
  REQUIRE(b.loss.size() == 2);
  CHECK(*b.loss[0] == doctest::Approx((p.sum[0] + p.sum[1] + p.sum[2]) / 5));
  CHECK(*b.loss[1] == doctest::Approx(1.5));
  CHECK(rpb::data::binned(p, 8).loss.size() == 5);
  CHECK(contains(error_of([&] { p.add(logits, rpb::Tensor::from_vector<int64_t>({2, 3}, {0, 1, 2, 0, 0, 0}), -100); }),
                 "outside the vocabulary of 2"));
}

TEST_CASE("position loss: measured with the diagnostics, pooling to the evaluation's NLL in both protocols") {
  const std::string keys = "eval_multipliers = [1, 4]\neval_tokens = 64\neval_batch = 2\n";
  for (const std::string& stride : {std::string(""), std::string("eval_stride = 4\n")}) {
    CAPTURE(stride);
    auto w = rpb::make_workload(position_loss_config(keys + stride));
    const auto results = w->evaluate({1, 4}, rpb::data::Split::test, 0, nullptr);
    REQUIRE(results.size() == 2);
    for (const rpb::LengthResult& r : results) {
      CAPTURE(r.length);
      REQUIRE(static_cast<int64_t>(r.position_loss.sum.size()) == r.length);
      CHECK(position_loss_targets(r.position_loss) == r.tokens);
      check_pools_to(r.position_loss, *r.nll);
    }
    // Nonoverlapping: every position holds one target per segment. Sliding: the first window scores every position,
    // the others their last 4 only.
    const rpb::data::PositionLoss& at32 = results[1].position_loss;
    if (stride.empty()) {
      CHECK(at32.targets == std::vector<int64_t>(32, 2));
    } else {
      CHECK(at32.targets[0] == 1);
      CHECK(at32.targets[31] > at32.targets[0]);
    }
  }
  // Not measured on the valid split, nor without the diagnostics.
  auto w = rpb::make_workload(position_loss_config(keys));
  CHECK(w->evaluate({1}, rpb::data::Split::valid, 0, nullptr)[0].position_loss.empty());
  auto off = rpb::make_workload(position_loss_config(keys + "eval_diagnostics = false\n"));
  CHECK(off->evaluate({1}, rpb::data::Split::test, 0, nullptr)[0].position_loss.empty());
}

TEST_CASE("position loss: an algorithmic task's scored targets, at the positions of the answer") {
  auto w = rpb::make_workload(position_loss_config("eval_multipliers = [1, 2]\neval_batch = 4\n",
                                                   "kind = \"reverse_string\"\neval_samples = 6\n"));
  const auto results = w->evaluate({1, 2}, rpb::data::Split::test, 0, nullptr);
  for (const rpb::LengthResult& r : results) {
    CAPTURE(r.length);
    CHECK(position_loss_targets(r.position_loss) == r.tokens);
    check_pools_to(r.position_loss, *r.nll);
    // Decoder framing: the input and its separator hold no scored target; the answer's L and the end token do.
    const std::vector<int64_t>& t = r.position_loss.targets;
    for (int64_t i = 0; i < r.length; ++i) CHECK(t[static_cast<std::size_t>(i)] == 0);
    CHECK(t.back() == 6);
  }
}

TEST_CASE("position loss: eval records and results.json carry it, and refuse it malformed") {
  rpb::EvalRecord r;
  r.checkpoint = "step_00000010.h5";
  r.scheme = "alibi";
  rpb::LengthResult l{8, 1, 1.5, 3, {}};
  r.lengths = {l};
  CHECK(!contains(rpb::eval_record_json(r), "position_loss"));  // absent where not measured
  r.lengths[0].position_loss.add(0, 1.0);
  r.lengths[0].position_loss.add(0, 2.0);
  r.lengths[0].position_loss.add(2, 1.5);
  const rpb::EvalRecord back = rpb::eval_record_from_json(rpb::eval_record_object(r), "r", "x.json");
  CHECK(back.lengths[0].position_loss.targets == std::vector<int64_t>{2, 0, 1});
  CHECK(back.lengths[0].position_loss.sum == std::vector<double>{3.0, 0.0, 1.5});
  const auto refusal = [&](const std::string& key, const rpb::Json& value) {
    rpb::Json j = rpb::eval_record_object(r);
    j["lengths"][0]["position_loss"][key] = value;
    return error_of([&] { rpb::eval_record_from_json(j, "r.json", "x.json"); });
  };
  CHECK(contains(refusal("targets", {2, 0}), "of the same length"));
  CHECK(contains(refusal("targets", {2, -1, 1}), "at least 0"));
  CHECK(contains(refusal("loss", {1.5, 1.0, 1.5}), "expected null where no target was scored"));
  CHECK(contains(refusal("loss", {1.5, nullptr, -1.0}), "finite loss of at least 0"));
  CHECK(contains(refusal("loss", {1.5, nullptr, -1.0}), "position_loss"));

  // results.json: the seeds pooled and binned per length, null where not measured; read back.
  rpb::MethodResult m;
  m.task = "markov";
  m.method.scheme = "alibi";
  m.lengths = {8, 16};
  m.ppl = {{2.0, 3.0}, {2.0, 3.0}};
  m.nll = {{0.7, 1.1}, {0.7, 1.1}};
  m.tokens = {{8, 8}, {8, 8}};
  m.position_loss = {{{}, r.lengths[0].position_loss}, {{}, r.lengths[0].position_loss}};
  rpb::SweepResult sweep{"s", 8, {1, 2}, {0, 1}, {m}, {}, rpb::kLearnedAccuracy};
  const rpb::Json json = rpb::sweep_results_object(rpb::sweep_results(sweep));
  const rpb::Json& row = json["rows"][0]["position_loss"];
  CHECK(row[0].is_null());
  CHECK(row[1]["bin"] == 1);
  CHECK(row[1]["loss"].dump() == "[1.5,null,1.5]");
  const rpb::SweepResults read = rpb::sweep_results_from_json(json, "results.json");
  REQUIRE(read.rows[0].position_loss.size() == 2);
  CHECK(read.rows[0].position_loss[1]->loss.size() == 3);
  rpb::Json bad = json;
  bad["rows"][0]["position_loss"][1]["bin"] = 0;
  CHECK(contains(error_of([&] { rpb::sweep_results_from_json(bad, "results.json"); }), "at least 1 position"));
}
