// Passkey pilots: the accuracy that counts as learning the task is a setting ([sweep] learned_threshold), and where a
// seed did not learn it the tables, results.csv, results.json and the figures can show the accuracy over every seed,
// marked as such.
#include <doctest/doctest.h>

#include <sstream>
#include <string>

#include "core/error.h"
#include "test_util.h"
#include "train/config/config.h"
#include "train/sweep/results.h"
#include "train/sweep/results_json.h"
#include "train/sweep/results_tex.h"

namespace learned_threshold_test {

using namespace rpb;
using rpb::testing::contains;
using rpb::testing::file_text;
using rpb::testing::TempDir;

// A passkey sweep of two seeds at 1x and 2x: t5 at 60% and 100% at the train length, alibi at 40% and 50%.
SweepResult pilot(double threshold) {
  SweepResult r;
  r.name = "pilot";
  r.train_length = 16;
  r.multipliers = {1, 2};
  r.seeds = {0, 1};
  r.learned_threshold = threshold;
  const auto add = [&](const char* scheme, std::vector<std::vector<std::optional<double>>> accuracy) {
    MethodResult m;
    m.task = "passkey";
    m.method = {scheme, scheme, {}};
    m.lengths = {16, 32};
    m.ppl = m.nll = {{2.0, 3.0}, {2.0, 3.0}};
    m.tokens = {{10, 10}, {10, 10}};
    m.accuracy = std::move(accuracy);
    m.learned_threshold = threshold;
    r.rows.push_back(m);
  };
  add("t5", {{0.6, 0.3}, {1.0, 0.8}});
  add("alibi", {{0.4, 0.2}, {0.5, 0.1}});
  return r;
}

TEST_CASE("learned_threshold: sweep.learned_threshold is a share above 0 and at most 1, 0.95 unless set") {
  CHECK(parse_config("", "t.toml").sweep.learned_threshold == 0.95);
  CHECK(parse_config("[sweep]\nlearned_threshold = 0.5\n", "t.toml").sweep.learned_threshold == 0.5);
  for (const char* bad : {"0", "1.5", "-0.1", "\"half\""})
    CHECK_THROWS_WITH_AS(parse_config(std::string("[sweep]\nlearned_threshold = ") + bad + "\n", "t.toml"),
                         doctest::Contains("sweep.learned_threshold"), Error);
}

TEST_CASE("learned_threshold: which seeds count past the train length, as the tables say") {
  const std::string strict = format_table(pilot(0.95));
  CAPTURE(strict);
  CHECK(contains(strict, "| T5 bias | 0 | 1/2 | 80.0 ± 28.3 | 80.0 ± 0.0 |\n"));  // the seed at 100% only
  CHECK(contains(strict, "| ALiBi | 0 | 0/2 | 45.0 ± 7.1 | not learned |\n"));
  CHECK(contains(strict, "(>= 95% at the train length)"));
  const std::string pilot_table = format_table(pilot(0.5));
  CAPTURE(pilot_table);
  CHECK(contains(pilot_table, "| T5 bias | 0 | 2/2 | 80.0 ± 28.3 | 55.0 ± 35.4 |\n"));
  CHECK(contains(pilot_table, "| ALiBi | 0 | 1/2 | 45.0 ± 7.1 | 10.0 ± 0.0 |\n"));
  CHECK(contains(pilot_table, "(>= 50% at the train length)"));
  CHECK(contains(results_tex(sweep_results(pilot(0.5))), "(accuracy $\\geq$ 50\\% at the training length"));
}

TEST_CASE("learned_threshold: the accuracy over every seed, marked as such, where a seed did not learn the task") {
  TempDir dir("every_seed");
  const SweepResult r = pilot(0.95);
  const std::string table = format_table(r);
  CAPTURE(table);
  CHECK(contains(table, "| Method | Position params | Accuracy, every seed, at train length | 2x |\n"));
  CHECK(contains(table, "| T5 bias | 0 | 80.0 ± 28.3 | 55.0 ± 35.4 |\n"));
  CHECK(contains(table, "| ALiBi | 0 | 45.0 ± 7.1 | 15.0 ± 7.1 |\n"));
  CHECK(contains(table, "Accuracy, every seed: passkey (every seed's accuracy, learned or not"));
  CHECK(!contains(format_table(pilot(0.3)), "every seed"));  // every seed learned it: nothing to add
  write_results(r, dir.path.string());
  const std::string tex = file_text(dir.path / "results.tex");
  CHECK(contains(tex, "\\label{tab:pilot-passkey-accuracy-every-seed}"));
  CHECK(contains(tex, "Accuracy, every seed (\\%) at evaluation length (tokens)"));
  // results.csv: the aggregated rows' accuracy_every_seed (mean, then std); the accuracy column past 1x counts the
  // learned seed only.
  std::istringstream csv(file_text(dir.path / "results.csv"));
  std::string line, mean_2x;
  while (std::getline(csv, line))
    if (line.rfind("passkey,t5,0,mean,2,32,", 0) == 0) mean_2x = line;
  CAPTURE(mean_2x);
  const std::string before_tokens = mean_2x.substr(0, mean_2x.rfind(','));  // the last column: token_accuracy, empty
  CHECK(mean_2x.substr(mean_2x.rfind(',')) == ",");
  CHECK(before_tokens.substr(before_tokens.rfind(',')) == ",0.55");
  CHECK(contains(mean_2x, ",0.8,"));  // accuracy: the learned seed's
  // results.json: the threshold, read back; the stats over every seed.
  const Json j = Json::parse(file_text(dir.path / "results.json"));
  CHECK(j["learned_threshold"] == 0.95);
  CHECK(j["rows"][0]["accuracy_every_seed_stats"]["mean"][1].get<double>() == doctest::Approx(0.55));
  const SweepResults back = read_sweep_results((dir.path / "results.json").string());
  CHECK(back.learned_threshold == 0.95);
  CHECK(back.rows[1].learned() == std::vector<bool>{false, false});
  CHECK(format_table(back) == table);
}

}  // namespace learned_threshold_test
