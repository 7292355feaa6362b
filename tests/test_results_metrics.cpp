// The sweep's per-length metrics besides perplexity (train/sweep/sweep.h MethodResult): a text task's bits per byte
// and passkey's accuracy, in the terminal table, results.csv, results.json (rpb-results-6, read back; rpb-results-5
// still read) and results.tex.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "core/error.h"
#include "test_util.h"
#include "train/config/config.h"
#include "train/sweep/results.h"
#include "train/sweep/results_json.h"
#include "train/sweep/results_tex.h"

namespace results_metrics_test {

using namespace rpb;
using rpb::testing::contains;
using rpb::testing::error_of;
using rpb::testing::file_text;
using rpb::testing::TempDir;

using Values = std::vector<std::optional<double>>;
const std::optional<double> na;

// nll * tokens / (bytes ln 2): bits per byte as LengthResult defines it.
double bpb(double nll, int64_t tokens, int64_t bytes) {
  return nll * static_cast<double>(tokens) / (static_cast<double>(bytes) * std::log(2.0));
}

MethodResult method(const std::string& task, const std::string& scheme, const std::vector<Values>& nll) {
  MethodResult m;
  m.task = task;
  m.method = {scheme, scheme, {}};
  m.position_params = 16;
  m.lengths = {64, 128, 256};
  m.nll = nll;
  m.ppl = nll;
  for (auto& seed : m.ppl)
    for (auto& x : seed)
      if (x) x = std::exp(*x);
  for (const Values& seed : nll) {
    m.tokens.emplace_back();
    for (const auto& x : seed) m.tokens.back().push_back(x ? 1000 : 0);
  }
  return m;
}

// Bytes where nll is defined: 2600 for every length.
void with_bytes(MethodResult& m) {
  for (const Values& seed : m.nll) {
    m.bytes.emplace_back();
    for (const auto& x : seed) m.bytes.back().push_back(x ? 2600 : 0);
  }
}

// Passkey accuracies [seed][length], each with a depth grid (the accuracy, lower at the middle bins) of 8 samples.
void with_accuracy(MethodResult& m, const std::vector<Values>& accuracy) {
  m.accuracy = accuracy;
  for (const Values& seed : accuracy) {
    m.depth_accuracy.emplace_back();
    m.samples_per_depth.emplace_back();
    for (const auto& a : seed) {
      std::vector<double> depths;
      for (int64_t b = 0; a && b < kDepthBins; ++b) depths.push_back(b == 4 || b == 5 ? *a / 2 : *a);
      m.depth_accuracy.back().push_back(depths);
      m.samples_per_depth.back().push_back(a ? 8 : 0);
    }
  }
}

// Three seeds on three tasks: text (bytes; learned positions n/a at 4x), passkey (t5 learned by seeds 0 and 1,
// seed 1 exactly at kLearnedAccuracy; alibi by none, seed 2 just below it) and markov (neither metric).
SweepResult sample() {
  SweepResult r;
  r.name = "s";
  r.train_length = 64;
  r.multipliers = {1, 2, 4};
  r.seeds = {0, 1, 2};
  MethodResult text_t5 = method("text", "t5", {{1.2, 1.3, 1.5}, {1.25, 1.35, 1.6}, {1.1, 1.2, 1.4}});
  with_bytes(text_t5);
  MethodResult text_learned = method("text", "learned", {{1.3, na, na}, {1.4, na, na}, {1.35, na, na}});
  with_bytes(text_learned);
  MethodResult passkey_t5 = method("passkey", "t5", {{0.1, 0.5, 1.0}, {0.1, 0.6, 1.1}, {1.0, 1.5, 2.0}});
  with_accuracy(passkey_t5, {{0.97, 0.8, 0.4}, {0.95, 0.9, 0.5}, {0.5, 0.1, 0.0}});
  MethodResult passkey_alibi = method("passkey", "alibi", {{0.8, 0.9, 1.0}, {1.5, 1.6, 1.7}, {0.2, 0.3, 0.4}});
  with_accuracy(passkey_alibi, {{0.6, 0.5, 0.4}, {0.3, 0.2, 0.1}, {0.949, 0.9, 0.95}});
  MethodResult markov = method("markov", "t5", {{2.0, 2.1, 2.2}, {2.0, 2.1, 2.2}, {2.0, 2.1, 2.2}});
  r.rows = {text_t5, text_learned, passkey_t5, passkey_alibi, markov};
  return r;
}

// The lines of `text` from the first line holding `from` to the first blank line after it.
std::string block_from(const std::string& text, const std::string& from) {
  const std::size_t start = text.find(from);
  if (start == std::string::npos) return "";
  const std::size_t begin = text.rfind('\n', start) + 1, end = text.find("\n\n", start);
  return text.substr(begin, end == std::string::npos ? std::string::npos : end - begin + 1);
}

TEST_CASE("sweep metrics: MethodResult's bits per byte is nll x tokens / (bytes ln 2), learned seeds reach 95%") {
  const SweepResult r = sample();
  const MethodResult& text = r.rows[0];
  CHECK(text.has_bytes());
  CHECK(!text.has_accuracy());
  CHECK(text.bits_per_byte(1, 2) == bpb(1.6, 1000, 2600));
  CHECK(text.bits_per_byte_column(0) == Values{bpb(1.2, 1000, 2600), bpb(1.25, 1000, 2600), bpb(1.1, 1000, 2600)});
  CHECK(r.rows[1].bits_per_byte_column(2) == Values{na, na, na});  // learned positions: n/a at 4x
  CHECK(!r.rows[4].has_bytes());
  CHECK(r.rows[4].bits_per_byte(0, 0) == na);
  const MethodResult& passkey = r.rows[2];
  CHECK(passkey.has_accuracy());
  CHECK(passkey.accuracy_column(1) == Values{0.8, 0.9, 0.1});
  CHECK(learned_seeds(passkey.accuracy) == std::vector<bool>{true, true, false});  // 0.95 is learned
  CHECK(learned_seeds(r.rows[3].accuracy) == std::vector<bool>{false, false, false});  // 0.949 is not
  const auto stats = accuracy_stats(passkey.accuracy);
  REQUIRE(stats.size() == 3);
  CHECK(stats[0]->first == doctest::Approx((0.97 + 0.95 + 0.5) / 3));  // every seed at the train length
  CHECK(stats[1]->first == doctest::Approx(0.85));                     // the learned seeds past it
  CHECK(stats[1]->second == doctest::Approx(std::sqrt(0.005)));
  CHECK(!accuracy_stats(r.rows[3].accuracy)[1]);
  CHECK(accuracy_stats(r.rows[3].accuracy)[0]);
}

TEST_CASE("sweep table: a text task's bits per byte table and a passkey task's accuracy table") {
  const std::string table = format_table(sample());
  CAPTURE(table);
  CHECK(block_from(table, "| Method | Position params | Bits per byte at train length") ==
        "| Method | Position params | Bits per byte at train length | 2x | 4x |\n"
        "|---|---|---|---|---|\n"
        "| T5 bias | 16 | 0.657 ± 0.042 | 0.712 ± 0.042 | 0.832 ± 0.055 |\n"
        "| Learned PE | 16 | 0.749 ± 0.028 | n/a | n/a |\n");
  CHECK(contains(table, "\nBits per byte: text (of the text the scored tokens stand for: NLL x tokens / (bytes x ln "
                        "2), mean ± std; comparable across tokenizers)\n"));
  CHECK(block_from(table, "| Method | Position params | Learned |") ==
        "| Method | Position params | Learned | Accuracy at train length | 2x | 4x |\n"
        "|---|---|---|---|---|---|\n"
        "| T5 bias | 16 | 2/3 | 80.7 ± 26.6 | 85.0 ± 7.1 | 45.0 ± 7.1 |\n"
        "| ALiBi | 16 | 0/3 | 61.6 ± 32.5 | not learned | not learned |\n");
  CHECK(contains(table, "\nAccuracy: passkey (accuracy of greedy decoding of the answer, % mean ± std; past the train "
                        "length over the seeds that learned the task (>= 95% at the train length))\n"));
  CHECK(contains(table, "Task: passkey (train length 64, 3 seeds, perplexity of the answer tokens, mean ± std)\n"));
  CHECK(contains(table, "Task: text (train length 64, 3 seeds, perplexity mean ± std)\n"));
  // Each task's tables in order: perplexity, its task line, then bits per byte or accuracy; markov has neither.
  const std::size_t text_line = table.find("Task: text"), bpb_table = table.find("Bits per byte at train length");
  const std::size_t passkey_ppl = table.find("| PPL at train length", bpb_table);
  const std::size_t accuracy = table.find("| Learned |"), markov = table.find("Task: markov");
  CHECK(text_line < bpb_table);
  CHECK(bpb_table < passkey_ppl);
  CHECK(passkey_ppl < table.find("Task: passkey"));
  CHECK(table.find("Task: passkey") < accuracy);
  CHECK(accuracy < markov);
  CHECK(table.find("Bits per byte", passkey_ppl) == std::string::npos);  // passkey and markov have no bytes
  CHECK(table.find("Accuracy", markov) == std::string::npos);
  // One seed: the mean alone, a row whose one seed did not learn says so past the train length.
  SweepResult one = sample();
  one.seeds = {2};
  const auto keep_last = [](auto& v) { v.erase(v.begin(), v.begin() + std::min<std::ptrdiff_t>(2, v.size())); };
  for (MethodResult& m : one.rows) {
    for (auto* v : {&m.ppl, &m.nll, &m.accuracy}) keep_last(*v);
    for (auto* v : {&m.tokens, &m.bytes}) keep_last(*v);
  }
  const std::string single = format_table(one);
  CAPTURE(single);
  CHECK(contains(single, "| T5 bias | 16 | 0.610 | 0.666 | 0.777 |\n"));
  CHECK(contains(single, "| T5 bias | 16 | 0/1 | 50.0 | not learned | not learned |\n"));
  CHECK(contains(single, "| ALiBi | 16 | 0/1 | 94.9 | not learned | not learned |\n"));
}

// The cells of results.csv's line that starts with `prefix`.
std::vector<std::string> csv_line(const std::string& csv, const std::string& prefix) {
  std::istringstream in(csv);
  for (std::string line; std::getline(in, line);)
    if (line.rfind(prefix, 0) == 0) {
      std::vector<std::string> cells;
      std::istringstream fields(line);
      for (std::string cell; std::getline(fields, cell, ',');) cells.push_back(cell);
      if (!line.empty() && line.back() == ',') cells.emplace_back();
      return cells;
    }
  return {};
}

// x as results.csv writes it (10 significant digits).
std::string ten_digits(double x) {
  std::ostringstream os;
  os.precision(10);
  os << x;
  return os.str();
}

TEST_CASE("results.csv: bytes, bits_per_byte and accuracy after eval_stride, on the seed and the aggregated rows") {
  TempDir dir("metrics_csv");
  write_results(sample(), dir.path.string());
  const std::string csv = file_text(dir.path / "results.csv");
  CAPTURE(csv);
  const std::vector<std::string> header = csv_line(csv, "task,");
  REQUIRE(header.size() > 16);
  CHECK(header[12] == "eval_stride");
  CHECK(header[13] == "bytes");
  CHECK(header[14] == "bits_per_byte");
  CHECK(header[15] == "accuracy");
  CHECK(header[16] == "run_folder");
  const auto cells = [&](const std::string& prefix) {
    const std::vector<std::string> line = csv_line(csv, prefix);
    REQUIRE_MESSAGE(line.size() == header.size(), prefix);
    return std::vector<std::string>(line.begin() + 13, line.begin() + 16);
  };
  CHECK(cells("text,t5,16,1,4,256,") == std::vector<std::string>{"2600", ten_digits(bpb(1.6, 1000, 2600)), ""});
  CHECK(cells("text,learned,16,0,2,128,") == std::vector<std::string>{"", "", ""});  // n/a
  CHECK(cells("passkey,t5,16,2,2,128,") == std::vector<std::string>{"", "", "0.1"});
  CHECK(cells("markov,t5,16,0,1,64,") == std::vector<std::string>{"", "", ""});
  // The aggregated rows: bits per byte over the seeds; accuracy past the train length over the learned seeds only.
  const double mean = (bpb(1.2, 1000, 2600) + bpb(1.25, 1000, 2600) + bpb(1.1, 1000, 2600)) / 3;
  CHECK(cells("text,t5,16,mean,1,64,") == std::vector<std::string>{"2600", ten_digits(mean), ""});
  CHECK(cells("text,t5,16,std,1,64,")[0] == "0");
  CHECK(cells("passkey,t5,16,mean,1,64,") == std::vector<std::string>{"", "", ten_digits((0.97 + 0.95 + 0.5) / 3)});
  CHECK(cells("passkey,t5,16,mean,2,128,") == std::vector<std::string>{"", "", "0.85"});
  CHECK(cells("passkey,t5,16,std,2,128,")[2] == ten_digits(std::sqrt(0.005)));
  CHECK(cells("passkey,alibi,16,mean,2,128,") == std::vector<std::string>{"", "", ""});  // not learned: no number
  CHECK(!cells("passkey,alibi,16,mean,1,64,")[2].empty());
}

TEST_CASE("results.json: rpb-results-7 rows carry bytes, bits per byte, accuracy and depth grids, or null") {
  const SweepResults results = sweep_results(sample());
  const Json j = Json::parse(json_text(sweep_results_object(results)));
  CHECK(j["format"] == "rpb-results-7");
  const Json& text = j["rows"][0];
  CHECK(text["bytes"] == Json::parse("[[2600, 2600, 2600], [2600, 2600, 2600], [2600, 2600, 2600]]"));
  CHECK(text["bits_per_byte"][1][2].get<double>() == bpb(1.6, 1000, 2600));  // exactly
  CHECK(text["bits_per_byte_stats"]["mean"][0].get<double>() ==
        doctest::Approx((bpb(1.2, 1000, 2600) + bpb(1.25, 1000, 2600) + bpb(1.1, 1000, 2600)) / 3));
  CHECK(j["rows"][1]["bytes"][0] == Json::parse("[2600, null, null]"));  // null where nll is
  CHECK(j["rows"][1]["bits_per_byte"][0][0].get<double>() == bpb(1.3, 1000, 2600));
  CHECK(j["rows"][1]["bits_per_byte"][0][1].is_null());
  CHECK(j["rows"][1]["bits_per_byte_stats"]["mean"][2].is_null());
  for (const char* key : {"accuracy", "depth_accuracy", "samples_per_depth", "accuracy_stats", "learned"})
    CHECK_MESSAGE(text[key].is_null(), key);
  const Json& passkey = j["rows"][2];
  for (const char* key : {"bytes", "bits_per_byte", "bits_per_byte_stats"}) CHECK_MESSAGE(passkey[key].is_null(), key);
  CHECK(passkey["accuracy"] == Json::parse("[[0.97, 0.8, 0.4], [0.95, 0.9, 0.5], [0.5, 0.1, 0.0]]"));
  CHECK(passkey["learned"] == Json::parse("[true, true, false]"));
  CHECK(passkey["depth_accuracy"][0][1] == Json::parse("[0.8, 0.8, 0.8, 0.8, 0.4, 0.4, 0.8, 0.8, 0.8, 0.8]"));
  CHECK(passkey["samples_per_depth"] == Json::parse("[[8, 8, 8], [8, 8, 8], [8, 8, 8]]"));
  CHECK(passkey["accuracy_stats"]["mean"][1].get<double>() == doctest::Approx(0.85));
  CHECK(j["rows"][3]["learned"] == Json::parse("[false, false, false]"));
  CHECK(j["rows"][3]["accuracy_stats"]["mean"][0].is_number());
  CHECK(j["rows"][3]["accuracy_stats"]["mean"][1].is_null());  // no learned seed: no number past the train length
  for (const char* key : {"bytes", "bits_per_byte", "bits_per_byte_stats", "accuracy", "depth_accuracy",
                          "samples_per_depth", "accuracy_stats", "learned"})
    CHECK_MESSAGE(j["rows"][4][key].is_null(), key);  // markov: every one null, every key there
}

TEST_CASE("results.json: rpb-results-6 reads back equal, rpb-results-5 reads without the metrics") {
  TempDir dir("metrics_json");
  SweepResults written = sweep_results(sample());
  written.rows[2].depth_accuracy[0][0][3] = std::nan("");  // written as null, read back as NaN
  const std::string text = json_text(sweep_results_object(written));
  std::ofstream(dir.file("results.json")) << text;
  const SweepResults back = read_sweep_results(dir.file("results.json"));
  REQUIRE(back.rows.size() == written.rows.size());
  for (std::size_t i = 0; i < back.rows.size(); ++i) {
    CAPTURE(i);
    CHECK(back.rows[i].bytes == written.rows[i].bytes);
    CHECK(back.rows[i].accuracy == written.rows[i].accuracy);
    CHECK(back.rows[i].samples_per_depth == written.rows[i].samples_per_depth);
    CHECK(back.rows[i].learned() == written.rows[i].learned());
    CHECK(back.rows[i].bits_per_byte_mean() == written.rows[i].bits_per_byte_mean());
  }
  CHECK(std::isnan(back.rows[2].depth_accuracy[0][0][3]));
  CHECK(back.rows[2].depth_accuracy[0][1] == written.rows[2].depth_accuracy[0][1]);
  CHECK(back.rows[0].depth_accuracy[0][0].empty());
  CHECK(json_text(sweep_results_object(back)) == text);
  CHECK(results_tex(back) == results_tex(written));

  // rpb-results-5: rows without the keys (bytes 0, no accuracy); the perplexities as written.
  Json old = Json::parse(text);
  old["format"] = "rpb-results-5";
  for (Json& row : old["rows"])
    for (const char* key : {"bytes", "bits_per_byte", "bits_per_byte_stats", "accuracy", "depth_accuracy",
                            "samples_per_depth", "accuracy_stats", "learned"})
      row.erase(key);
  const SweepResults five = sweep_results_from_json(old, "old");
  CHECK(five.format == "rpb-results-5");
  REQUIRE(five.rows.size() == 5);
  CHECK(!five.rows[0].has_bytes());
  CHECK(!five.rows[2].has_accuracy());
  CHECK(five.rows[0].bits_per_byte(0, 0) == na);
  CHECK(five.rows[2].perplexity == written.rows[2].perplexity);
  CHECK(five.rows[0].bytes == std::vector<std::vector<int64_t>>(3, std::vector<int64_t>(3, 0)));
  CHECK(Json::parse(json_text(sweep_results_object(five)))["rows"][2]["accuracy"].is_null());
}

TEST_CASE("sweep metrics: a row with evaluation settings learned the task as its trained run did (trained_accuracy)") {
  // A RoPE scaling costs accuracy at the train length (0.90, 0.93), but the rope runs it evaluates learned the task
  // (1.0 as trained) but seed 2's (0.5): seeds 0 and 1 count past the train length, whatever the row's own 1x says.
  SweepResult r = sample();
  MethodResult scaled = method("passkey", "rope", {{0.2, 0.3, 0.4}, {0.2, 0.3, 0.4}, {0.1, 0.2, 0.3}});
  with_accuracy(scaled, {{0.90, 0.8, 0.6}, {0.93, 0.9, 0.8}, {0.99, 0.2, 0.1}});
  scaled.trained_accuracy = {1.0, 1.0, 0.5};
  r.rows = {scaled};
  CHECK(learned_seeds(scaled.accuracy, scaled.trained_accuracy) == std::vector<bool>{true, true, false});
  CHECK(learned_seeds(scaled.accuracy) == std::vector<bool>{false, false, true});  // its own first length
  const auto stats = accuracy_stats(scaled.accuracy, scaled.trained_accuracy);
  CHECK(stats[0]->first == doctest::Approx((0.90 + 0.93 + 0.99) / 3));  // every seed at the train length
  CHECK(stats[2]->first == doctest::Approx(0.7));                       // seeds 0 and 1 past it
  const std::string table = format_table(r);
  CAPTURE(table);
  CHECK(contains(table, "| RoPE | 16 | 2/3 | 94.0 ± 4.6 | 85.0 ± 7.1 | 70.0 ± 14.1 |"));
  CHECK_THROWS_WITH(learned_seeds(scaled.accuracy, {1.0}), doctest::Contains("1 trained accuracies for 3 seeds"));

  TempDir dir("metrics_trained");
  const SweepResults written = sweep_results(r);
  const std::string text = json_text(sweep_results_object(written));
  std::ofstream(dir.file("results.json")) << text;
  const SweepResults back = read_sweep_results(dir.file("results.json"));
  CHECK(back.rows[0].trained_accuracy == Values{1.0, 1.0, 0.5});
  CHECK(back.rows[0].learned() == std::vector<bool>{true, true, false});
  CHECK(json_text(sweep_results_object(back)) == text);
  Json json = Json::parse(text);
  CHECK(json["rows"][0]["learned"] == Json::parse("[true, true, false]"));  // what the figures read
  json["rows"][0].erase("trained_accuracy");  // written before it existed: the row's own first length
  CHECK(sweep_results_from_json(json, "old").rows[0].learned() == std::vector<bool>{false, false, true});
  json["rows"][0]["trained_accuracy"] = Json::parse("[1.0]");
  CHECK(contains(error_of([&] { sweep_results_from_json(json, "bad"); }), "trained_accuracy: expected 3 seeds, found 1"));
  CHECK(Json::parse(json_text(sweep_results_object(sweep_results(sample()))))["rows"][2]["trained_accuracy"].is_null());
}

TEST_CASE("results.json: damaged metrics are refused naming the key") {
  const Json good = sweep_results_object(sweep_results(sample()));
  Json j = good;
  j["rows"][0].erase("bytes");
  CHECK(contains(error_of([&] { sweep_results_from_json(j, "r"); }), "r: key rows[0].bytes is missing"));
  j = good;
  j["rows"][2]["accuracy"].erase(2);
  CHECK(contains(error_of([&] { sweep_results_from_json(j, "r"); }),
                 "r: key rows[2].accuracy: expected 3 seeds, found 2"));
  j = good;
  j["rows"][2]["depth_accuracy"][1][2].erase(0);
  CHECK(contains(error_of([&] { sweep_results_from_json(j, "r"); }),
                 "r: key rows[2].depth_accuracy[1][2]: expected 10 depth bins, found 9"));
  j = good;
  j["rows"][0]["bytes"][0][1] = -5;
  CHECK(contains(error_of([&] { sweep_results_from_json(j, "r"); }),
                 "r: key rows[0].bytes[0][1]: expected null or a count >= 0, found -5"));
  j = good;
  j["rows"][3]["samples_per_depth"][0] = "8";
  CHECK(contains(error_of([&] { sweep_results_from_json(j, "r"); }), "r: key rows[3].samples_per_depth[0]"));
  j = good;
  j["format"] = "rpb-results-8";
  CHECK(contains(error_of([&] { sweep_results_from_json(j, "r"); }),
                 "\"rpb-results-8\", rpb reads \"rpb-results-7\", \"rpb-results-6\", \"rpb-results-5\", \"rpb-results-4\""));
}

// The table environment of `tex` whose \label is `label`.
std::string tex_table(const std::string& tex, const std::string& label) {
  const std::size_t at = tex.find("\\label{" + label + "}");
  if (at == std::string::npos) return "";
  const std::size_t begin = tex.rfind("\\begin{table}", at), end = tex.find("\\end{table}", at);
  return tex.substr(begin, end - begin);
}

TEST_CASE("results.tex: a bits per byte table for a text task, an accuracy table for a passkey task") {
  const std::string tex = results_tex(sweep_results(sample()));
  CAPTURE(tex);
  const std::string bits = tex_table(tex, "tab:s-text-bits-per-byte");
  CHECK(contains(bits, "\\caption{text (trained at 64 tokens): bits per byte against evaluation length; mean $\\pm$ "
                       "std over 3 seeds. Bits per byte of the text the scored tokens stand for"));
  CHECK(contains(bits, "\\begin{tabular}{lrrrr}"));
  CHECK(contains(bits, "\\multicolumn{3}{c}{Bits per byte at evaluation length (tokens)}"));
  // Bold at 1x, where it leads Learned PE (0.749 +- 0.028) by more than 0.042; alone past it (n/a there): not bold.
  CHECK(contains(bits, "T5 bias & 16 & $\\mathbf{0.657 \\pm 0.042}$ & $0.712 \\pm 0.042$ & "
                       "$0.832 \\pm 0.055$ \\\\\n"));
  CHECK(contains(bits, "Learned PE & 16 & $0.749 \\pm 0.028$ & n/a & n/a \\\\\n"));
  CHECK(contains(bits, "n/a: the method cannot run at that length."));
  const std::string accuracy = tex_table(tex, "tab:s-passkey-accuracy");
  CHECK(contains(accuracy, "\\caption{passkey (trained at 64 tokens): accuracy (\\%, greedy decoding of the answer) "
                           "against evaluation length; mean $\\pm$ std over 3 seeds. At the training length over every "
                           "seed"));
  CHECK(contains(accuracy, "\\begin{tabular}{lrrrrr}"));
  CHECK(contains(accuracy, "     & & & \\multicolumn{3}{c}{Accuracy (\\%) at evaluation length (tokens)} \\\\\n"
                           "    \\cmidrule(l){4-6}\n"));
  CHECK(contains(accuracy, "Method & Position params & Learned & 64 & 128 & 256 \\\\"));
  // 80.7 leads 61.6 by less than 32.5 at 1x; past it ALiBi learned nothing: none bold.
  CHECK(contains(accuracy, "T5 bias & 16 & 2/3 & $80.7 \\pm 26.6$ & $85.0 \\pm 7.1$ & $45.0 \\pm 7.1$ \\\\\n"));
  CHECK(contains(accuracy, "ALiBi & 16 & 0/3 & $61.6 \\pm 32.5$ & not learned & not learned \\\\\n"));
  CHECK(contains(accuracy, "Higher is better"));
  CHECK(contains(accuracy, "(accuracy $\\geq$ 95\\% at the training length; Learned: how many did)"));
  CHECK(!contains(accuracy, "n/a"));
  CHECK(contains(tex, "\\caption{passkey (trained at 64 tokens): perplexity of the answer tokens against evaluation "
                      "length"));
  CHECK(contains(tex, "\\caption{text (trained at 64 tokens): perplexity against evaluation length"));
  CHECK(tex_table(tex, "tab:s-markov-bits-per-byte").empty());
  CHECK(tex_table(tex, "tab:s-markov-accuracy").empty());
  CHECK(tex_table(tex, "tab:s-text-accuracy").empty());
  CHECK(tex_table(tex, "tab:s-passkey-bits-per-byte").empty());
}

TEST_CASE("sweep metrics: a text sweep's rows carry the bytes scored, and its table the bits per byte") {
  TempDir dir("metrics_text_sweep");
  std::filesystem::create_directory(dir.path / "c");
  for (int i = 0; i < 30; ++i)
    std::ofstream(dir.path / "c" / ("doc" + std::to_string(100 + i) + ".txt")) << "Document number " << i << ".\n";
  const std::string config = "[run]\nname = \"s\"\nout_dir = \"" + dir.path.string() +
                             "/out\"\nsteps = 2\nbatch = 2\nlength = 8\neval_multipliers = [1, 2]\neval_tokens = 16\n"
                             "eval_diagnostics = false\n[model]\nd_model = 8\nheads = 2\nlayers = 1\nd_ff = 16\n"
                             "[task]\nkind = \"text\"\npath = \"" + (dir.path / "c").string() +
                             "\"\ntokenizer = \"chars\"\nvalid_fraction = 0.2\ntest_fraction = 0.2\n"
                             "[sweep]\nmethods = [\"alibi\"]\nseeds = [0]\n";
  const SweepResult r = run_sweep(parse_config(config, "sweep.toml"));
  REQUIRE(r.rows.size() == 1);
  const MethodResult& m = r.rows[0];
  REQUIRE(m.bytes.size() == 1);
  REQUIRE(m.bytes[0].size() == 2);
  CHECK(m.bytes[0][0] == m.tokens[0][0]);  // chars of ASCII text: a byte a token
  CHECK(m.bytes[0][1] == m.bytes[0][0]);   // every length scores the same tokens
  CHECK(m.bits_per_byte(0, 1) == bpb(*m.nll[0][1], m.tokens[0][1], m.bytes[0][1]));
  CHECK(!m.has_accuracy());
  CHECK(m.depth_accuracy == std::vector<std::vector<std::vector<double>>>(1, std::vector<std::vector<double>>(2)));
  CHECK(contains(format_table(r), "| Method | Position params | Bits per byte at train length | 2x |\n"));
}

}  // namespace results_metrics_test
