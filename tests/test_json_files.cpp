// train/io/json_text.h, train/run/eval_record.h and train/sweep/results_json.h: the JSON rpb writes reads back as
// the same values (write -> read -> equal), n/a values as null (never NaN), and a damaged file is refused naming
// the file and the key.
#include <doctest/doctest.h>

#include <sys/stat.h>

#include <cmath>
#include <fstream>
#include <limits>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "core/error.h"
#include "test_util.h"
#include "train/io/json_text.h"
#include "train/run/eval_record.h"
#include "train/sweep/results_json.h"

namespace json_files_test {

using namespace rpb;
using rpb::testing::TempDir;

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// Equal doubles, NaN equal to NaN (a diagnostic rpb wrote as null reads back as NaN).
bool same(double a, double b) { return (std::isnan(a) && std::isnan(b)) || a == b; }

bool same(const AttentionDiagnostics& a, const AttentionDiagnostics& b) {
  if (a.mean_distance.size() != b.mean_distance.size() || a.entropy.size() != b.entropy.size()) return false;
  for (std::size_t l = 0; l < a.mean_distance.size(); ++l) {
    if (a.mean_distance[l].size() != b.mean_distance[l].size() || a.entropy[l].size() != b.entropy[l].size())
      return false;
    for (std::size_t h = 0; h < a.mean_distance[l].size(); ++h)
      if (!same(a.mean_distance[l][h], b.mean_distance[l][h]) || !same(a.entropy[l][h], b.entropy[l][h])) return false;
  }
  return true;
}

void check_same(const EvalRecord& a, const EvalRecord& b) {
  CHECK(a.checkpoint == b.checkpoint);
  CHECK(a.step == b.step);
  CHECK(a.checkpoint_sha256 == b.checkpoint_sha256);
  CHECK(a.config_digest == b.config_digest);
  CHECK(a.run == b.run);
  CHECK(a.scheme == b.scheme);
  CHECK(a.untrained == b.untrained);
  CHECK(a.task == b.task);
  CHECK(a.train_length == b.train_length);
  CHECK(a.max_length == b.max_length);
  CHECK(a.optimal_perplexity == b.optimal_perplexity);
  CHECK(a.options == b.options);
  CHECK(a.provenance.rpb_version == b.provenance.rpb_version);
  CHECK(a.provenance.commit == b.provenance.commit);
  CHECK(a.provenance.command == b.provenance.command);
  CHECK(a.provenance.date == b.provenance.date);
  CHECK(a.text == b.text);
  CHECK(a.text_sha256 == b.text_sha256);
  REQUIRE(a.lengths.size() == b.lengths.size());
  for (std::size_t i = 0; i < a.lengths.size(); ++i) {
    CHECK(a.lengths[i].length == b.lengths[i].length);
    CHECK(a.lengths[i].multiplier == b.lengths[i].multiplier);
    CHECK(a.lengths[i].nll == b.lengths[i].nll);
    CHECK(a.lengths[i].tokens == b.lengths[i].tokens);
    CHECK(same(a.lengths[i].attention, b.lengths[i].attention));
  }
}

// A record with every optional value absent (n/a lengths, no optimum, no max length) or, with `full`, present.
EvalRecord sample_record(bool full) {
  EvalRecord r;
  r.checkpoint = "step_00000600.h5";
  r.step = 600;
  r.checkpoint_sha256 = std::string(64, 'a');
  r.config_digest = std::string(64, 'b');
  r.run = "t5 \"quoted\"\n";
  r.scheme = "t5";
  r.task = "markov, vocab 5";
  r.train_length = 64;
  LengthResult a{64, 1, 1.0 / 3.0, 8192, {}}, b{128, 2, 0.1 + 0.2, 8192, {}}, c{1024, 16, std::nullopt, 0, {}};
  a.attention.mean_distance = {{3.25, 0.1}, {kNaN, 1e-300}};
  a.attention.entropy = {{1.125, 2.0 / 3.0}, {0.75, 1e300}};
  r.lengths = {a, b, c};
  if (full) {
    r.untrained = "nearest";
    r.max_length = 512;
    r.optimal_perplexity = std::exp(1.17);
    r.text = "other";
    r.text_sha256 = std::string(64, 'c');
    r.options = {.lengths = {64, 128, 1024},
                 .diagnostics = true,
                 .other_text = std::string(64, 'c'),
                 .stride = 32,
                 .position = {nn::position_setting("blockwise", true),  // the option table's order
                              nn::position_setting("untrained", nn::Untrained::nearest),
                              nn::position_setting("rope_scaling", nn::RopeScaling::yarn),
                              nn::position_setting("rope_factor", 8.0)}};
    r.provenance = {"0.1.0", std::string(40, 'd') + "-dirty", "rpb eval 'a b'", "2025-01-31T12:34:56Z"};
  }
  return r;
}

TEST_CASE("eval record: written, read back (read_eval_record) equal, n/a and NaN as null") {
  TempDir dir("json_eval");
  for (const bool full : {false, true}) {
    CAPTURE(full);
    const EvalRecord r = sample_record(full);
    const std::string path = write_eval_record(dir.path.string(), r);
    const std::string text = rpb::testing::file_text(path);
    const Json j = Json::parse(text);
    CHECK(j["lengths"][0]["attention"][2]["mean_distance"].is_null());  // NaN (layer 1, head 0)
    CHECK(j["lengths"][2]["nll"].is_null());                            // n/a
    CHECK(j["lengths"][2]["perplexity"].is_null());
    CHECK(j["optimal_perplexity"].is_null() == !full);
    CHECK(j["options"].contains("blockwise") == full);  // written only when asked
    CHECK(text.find("\"mean_distance\": null") != std::string::npos);
    CHECK(text.find("0.30000000000000004") != std::string::npos);  // the shortest text of 0.1 + 0.2
    const EvalRecord back = read_eval_record(path);
    check_same(back, r);
    CHECK(eval_record_json(back) == text);  // and it writes back the same text
  }
}

TEST_CASE("eval record: an rpb-eval-1 record (before nlohmann) reads, default_lengths from its file name") {
  TempDir dir("json_eval_v1");
  const std::string v1 =
      "{\n  \"format\": \"rpb-eval-1\",\n  \"checkpoint\": \"step_00000020.h5\",\n  \"step\": 20,\n"
      "  \"checkpoint_sha256\": \"ab\",\n  \"config_digest\": \"cd\",\n  \"run\": \"markov\",\n  \"scheme\": \"t5\",\n"
      "  \"untrained\": null,\n  \"task\": \"markov\",\n  \"train_length\": 16,\n  \"max_length\": null,\n"
      "  \"tokens\": 256,\n  \"optimal_perplexity\": 3.21,\n  \"entropy_rate\": 1.1662709371419244,\n"
      "  \"text\": \"generated\",\n  \"text_sha256\": null,\n  \"lengths\": [\n"
      "    {\"length\": 16, \"multiplier\": 1, \"nll\": 1.5, \"perplexity\": 4.4816890703380645, \"tokens\": 256, "
      "\"optimal_perplexity\": 3.21,\n     \"attention\": [\n"
      "      {\"layer\": 0, \"head\": 0, \"mean_distance\": 3.25, \"entropy\": 1.125}]}\n  ]\n}\n";
  for (const std::string name : {"step_00000020-256.json", "step_00000020-256-L16.json"}) {
    std::ofstream(dir.file(name)) << v1;
    const EvalRecord r = read_eval_record(dir.file(name));
    CHECK(r.default_lengths() == (name == "step_00000020-256.json"));
    CHECK(r.optimal_perplexity == 3.21);
    CHECK(r.lengths.at(0).attention.mean_distance == std::vector<std::vector<double>>{{3.25}});
  }
}

// A kjv record as rpb wrote it before it recorded the text scored (commit d177357's train/eval_record.cpp, built and
// run on its own): no "text", no "text_sha256".
const char* const kOldKjvRecord = R"({
  "format": "rpb-eval-1",
  "checkpoint": "step_00000020.h5",
  "step": 20,
  "checkpoint_sha256": "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa",
  "config_digest": "bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb",
  "run": "kjv",
  "scheme": "t5",
  "untrained": null,
  "task": "kjv: character-level King James Bible from checkpoints/data/kjv.txt, vocab 65 characters",
  "train_length": 16,
  "max_length": null,
  "tokens": 256,
  "optimal_perplexity": null,
  "entropy_rate": null,
  "lengths": [
    {"length": 16, "multiplier": 1, "nll": 1.5, "perplexity": 4.4816890703380645, "tokens": 256, "optimal_perplexity": null,
     "attention": [
      {"layer": 0, "head": 0, "mean_distance": 3.25, "entropy": 1.125}]},
    {"length": 32, "multiplier": 2, "nll": 0.30000000000000004, "perplexity": 1.3498588075760032, "tokens": 256, "optimal_perplexity": null,
     "attention": null}
  ]
}
)";

TEST_CASE("eval record: an rpb-eval-1 record without \"text\" (before rpb recorded it): unverified or generated") {
  TempDir dir("json_eval_v1_old");
  const std::string kjv = kOldKjvRecord;
  std::string markov = kjv;  // the same record of a generated task (the writer copies "task" as it is)
  const std::size_t task = markov.find("\"kjv: ") + 1;  // the value of "task"
  markov.replace(task, markov.find('"', task) - task, "markov: order-1 chain over 16 tokens");
  using Case = std::pair<std::string, std::string>;  // the record's text, the text it reads as
  for (const auto& [text, expected] : {Case{kjv, "unverified"}, Case{markov, "generated"}}) {
    std::ofstream(dir.file("step_00000020-256.json"), std::ios::trunc) << text;
    const EvalRecord r = read_eval_record(dir.file("step_00000020-256.json"));
    CHECK(r.text == expected);
    CHECK(r.text_sha256.empty());
    CHECK(r.default_lengths());
    CHECK(r.step == 20);
    REQUIRE(r.lengths.size() == 2);
    CHECK(r.lengths[1].nll == 0.1 + 0.2);
    CHECK(r.lengths[0].attention.entropy == std::vector<std::vector<double>>{{1.125}});
    CHECK(r.lengths[1].attention.empty());
  }
}

TEST_CASE("eval record: a damaged record is refused naming the file and the key") {
  TempDir dir("json_eval_bad");
  const std::string path = dir.file("r.json");
  const auto refusal = [&](const std::string& text) {
    std::ofstream(path, std::ios::trunc) << text;
    try {
      read_eval_record(path);
    } catch (const Error& e) {
      return e.message();
    }
    return std::string("no error");
  };
  Json good = eval_record_object(sample_record(true));
  Json j = good;
  j.erase("step");
  CHECK(refusal(j.dump()) == "eval record " + path + ": key step is missing");
  j = good;
  j["lengths"][2]["nll"] = "1.5";
  CHECK(refusal(j.dump()) == "eval record " + path + ": key lengths[2].nll: expected a number or null, found a string");
  j = good;
  j["step"] = 1.5;
  CHECK(refusal(j.dump()) ==
        "eval record " + path + ": key step: expected an integer, found a number with a fraction or an exponent");
  j = good;
  j["lengths"][0]["attention"][1]["head"] = 5;
  CHECK(refusal(j.dump()).find("key lengths[0].attention[1]: layer 0 head 5 out of order") != std::string::npos);
  j = good;
  j["format"] = "rpb-eval-9";
  CHECK(refusal(j.dump()).find(": key format: \"rpb-eval-9\", rpb reads \"rpb-eval-4\", \"rpb-eval-3\", \"rpb-eval-2\" and \"rpb-eval-1\"") !=
        std::string::npos);
  CHECK(refusal("{\"format\": ").find("eval record " + path + ": not valid JSON: parse error at line 1, column 12") == 0);
  CHECK(refusal("[]") == "eval record " + path + ": expected an object, found an array");
  CHECK(refusal(std::string(40, '[') + std::string(40, ']')) ==
        "eval record " + path + ": nested deeper than 32 arrays and objects");
  REQUIRE(::mkfifo(dir.file("fifo").c_str(), 0600) == 0);  // never waited on (train/io/input_file.h)
  CHECK_THROWS_WITH_AS(read_eval_record(dir.file("fifo")), doctest::Contains("is a FIFO, not a regular file"), Error);
}

SweepResults sample_results() {
  SweepResults r;
  r.name = "quick";
  r.train_length = 64;
  r.multipliers = {1, 2};
  r.seeds = {0, 18446744073709551615ull};
  SweepResultsRow m;
  m.task = "markov";
  m.method = "t5@buckets16";
  m.scheme = "t5";
  m.label = "T5 bias, num_buckets 16";
  m.position_params = 32;
  m.optimal_perplexity = 0.1 + 0.2;
  m.perplexity = {{4.5, std::nullopt}, {1.0 / 3.0, std::nullopt}};
  m.nll = {{1.5, std::nullopt}, {0.25, std::nullopt}};
  m.tokens = {{8192, 0}, {8192, 0}};
  AttentionDiagnostics a;
  a.mean_distance = {{1.5, kNaN}};
  a.entropy = {{0.5, 0.75}};
  m.attention = {{a, {}}, {{}, {}}};
  m.runs = {{"runs/quick/markov/t5@buckets16/seed0", std::string(64, 'e'), "step_00000600.h5", std::string(64, 'f')},
            {"runs/a,\"b\"/seed18446744073709551615", std::string(64, '0'), "step_00000010.h5", ""}};
  r.rows = {m, m};
  r.provenance = {"0.1.0", "unknown", "build/rpb extrapolate 'x y.toml'", "2025-01-31T12:34:56Z"};
  r.rows[1].optimal_perplexity.reset();
  r.rows[1].task = "kjv";
  return r;
}

void check_same(const SweepResults& a, const SweepResults& b) {
  CHECK(a.format == b.format);
  CHECK(a.name == b.name);
  CHECK(a.train_length == b.train_length);
  CHECK(a.multipliers == b.multipliers);
  CHECK(a.seeds == b.seeds);
  CHECK(a.provenance.commit == b.provenance.commit);
  CHECK(a.provenance.command == b.provenance.command);
  CHECK(a.provenance.date == b.provenance.date);
  CHECK(a.provenance.rpb_version == b.provenance.rpb_version);
  REQUIRE(a.rows.size() == b.rows.size());
  for (std::size_t i = 0; i < a.rows.size(); ++i) {
    const SweepResultsRow &x = a.rows[i], &y = b.rows[i];
    CHECK(x.task == y.task);
    CHECK(x.method == y.method);
    CHECK(x.scheme == y.scheme);
    CHECK(x.label == y.label);
    CHECK(x.position_params == y.position_params);
    CHECK(x.optimal_perplexity == y.optimal_perplexity);
    REQUIRE(x.runs.size() == y.runs.size());
    for (std::size_t s = 0; s < x.runs.size(); ++s) {
      CHECK(x.runs[s].folder == y.runs[s].folder);
      CHECK(x.runs[s].config_digest == y.runs[s].config_digest);
      CHECK(x.runs[s].checkpoint == y.runs[s].checkpoint);
      CHECK(x.runs[s].checkpoint_sha256 == y.runs[s].checkpoint_sha256);
    }
    CHECK(x.perplexity == y.perplexity);
    CHECK(x.nll == y.nll);
    CHECK(x.tokens == y.tokens);
    CHECK(x.perplexity_mean() == y.perplexity_mean());
    CHECK(x.perplexity_std() == y.perplexity_std());
    CHECK(x.distance_mean() == y.distance_mean());
    CHECK(x.distance_std() == y.distance_std());
    REQUIRE(x.attention.size() == y.attention.size());
    for (std::size_t s = 0; s < x.attention.size(); ++s) {
      REQUIRE(x.attention[s].size() == y.attention[s].size());
      for (std::size_t j = 0; j < x.attention[s].size(); ++j) CHECK(same(x.attention[s][j], y.attention[s][j]));
    }
  }
}

TEST_CASE("results.json: written, read back (read_sweep_results) equal, n/a and NaN as null") {
  TempDir dir("json_results");
  const SweepResults r = sample_results();
  // The means and stds over the seeds, derived from the perplexities and the attention (NaN and n/a skipped).
  using Values = std::vector<std::optional<double>>;
  CHECK(r.rows[0].perplexity_mean() == Values{2.4166666666666665, std::nullopt});
  CHECK(r.rows[0].perplexity_std() == Values{2.9462782549439482, std::nullopt});
  CHECK(r.rows[0].distance_mean() == Values{std::nullopt, std::nullopt});
  CHECK(r.rows[0].distance_std() == Values{std::nullopt, std::nullopt});
  const std::string text = json_text(sweep_results_object(r));
  std::ofstream(dir.file("results.json")) << text;
  CHECK(text.find("\"format\": \"rpb-results-7\"") != std::string::npos);
  const SweepResults back = read_sweep_results(dir.file("results.json"));
  check_same(back, r);
  CHECK(json_text(sweep_results_object(back)) == text);
  const Json j = Json::parse(text);
  CHECK(j["rows"][0]["perplexity"][0][1].is_null());  // n/a
  CHECK(j["rows"][0]["scheme"] == "t5");  // the method's scheme, read by python/rpb_plot/ (never parsed from its name)
  CHECK(j["rows"][0]["mean"] == Json::parse("[2.4166666666666665, null]"));
  CHECK(j["rows"][0]["std"] == Json::parse("[2.9462782549439482, null]"));
  CHECK(j["rows"][0]["mean_attention_distance"] == Json::parse(R"({"mean": [null, null], "std": [null, null]})"));
  CHECK(j["rows"][0]["tokens"][0][1].is_null());  // where nll is null
  CHECK(j["rows"][0]["attention"][0][0]["mean_distance"][0][1].is_null());
  CHECK(j["rows"][0]["attention"][0][0]["mean_distance_overall"].is_null());  // NaN: the mean of a NaN
}

TEST_CASE("results.json: a damaged file is refused naming the file and the key, an unversioned one reads") {
  TempDir dir("json_results_bad");
  const std::string path = dir.file("results.json");
  const auto read = [&](const Json& j) {
    std::ofstream(path, std::ios::trunc) << j.dump();
    return read_sweep_results(path);
  };
  const Json good = sweep_results_object(sample_results());
  Json j = good;
  j["rows"][1]["nll"][1].erase(1);
  CHECK_THROWS_WITH_AS(read(j), ("sweep results " + path + ": key rows[1].nll[1]: expected 2 lengths, found 1").c_str(),
                       Error);
  j = good;
  j["seeds"][1] = -1;
  CHECK_THROWS_WITH_AS(read(j),
                       ("sweep results " + path + ": key seeds[1]: expected an integer of at least 0, found an integer")
                           .c_str(),
                       Error);
  j = good;
  j["rows"][0]["attention"][0][0]["entropy"][0].erase(0);
  CHECK_THROWS_WITH_AS(read(j), doctest::Contains("key rows[0].attention[0][0]: \"mean_distance\" and \"entropy\""),
                       Error);
  j = good;
  j.erase("format");  // results.json before format 2
  CHECK(read(j).format.empty());
  CHECK(read(j).rows.size() == 2);
}

}  // namespace json_files_test
