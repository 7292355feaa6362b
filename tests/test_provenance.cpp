// Provenance: the commit rpb is built from, the provenance block of results.json, results.csv and eval records, the
// commit in checkpoints and `inspect`, a table number traced back to its checkpoint, and eval record names built from
// every option that changes the record.
#include <doctest/doctest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <sstream>

#include "test_util.h"
#include "train/checkpoint/checkpoint.h"
#include "train/io/provenance.h"
#include "train/io/sha256.h"
#include "train/io/version.h"
#include "train/run/eval_record.h"
#include "train/sweep/results.h"
#include "train/sweep/results_json.h"

namespace rpb::provenance_tests {

namespace fs = std::filesystem;
using rpb::testing::contains;
using rpb::testing::file_text;
using rpb::testing::run_rpb;
using rpb::testing::TempDir;

// The first line a shell command prints ("" when it fails).
std::string first_line_of(const std::string& command) {
  FILE* p = popen(command.c_str(), "r");
  if (!p) return "";
  char buf[256] = {};
  std::string out = fgets(buf, sizeof buf, p) ? buf : "";
  if (pclose(p) != 0) return "";
  while (!out.empty() && out.back() == '\n') out.pop_back();
  return out;
}

TEST_CASE("provenance: the build's commit is the source tree's HEAD (-dirty marked), dates are ISO 8601 UTC") {
  const std::string commit = build_commit();
  CHECK(std::regex_match(commit, std::regex("[0-9a-f]{40}(-dirty)?|unknown")));
  const std::string head = first_line_of("git -C '" RPB_SOURCE_DIR "' rev-parse HEAD 2>/dev/null");
  if (!head.empty()) CHECK(commit.substr(0, 40) == head);  // a build inside git knows its commit
  CHECK(std::regex_match(utc_now_iso8601(), std::regex("20[0-9]{2}-[01][0-9]-[0-3][0-9]T[0-2][0-9]:[0-5][0-9]:[0-6][0-9]Z")));
  const Provenance p = current_provenance();
  CHECK(p.rpb_version == version());
  CHECK(p.commit == commit);
  CHECK(shell_command({"build/rpb", "eval", "my run", "it's", ""}) == "build/rpb eval 'my run' 'it'\\''s' ''");
  const Json j = provenance_object({"0.1.0", "abc", "rpb x", "2025-01-31T12:34:56Z"});
  CHECK(j.dump() == R"({"rpb_version":"0.1.0","commit":"abc","command":"rpb x","date":"2025-01-31T12:34:56Z"})");
  const Provenance back = provenance_from_json(JsonIn(j, "test"));
  CHECK(back.commit == "abc");
  CHECK(back.date == "2025-01-31T12:34:56Z");
}

TEST_CASE("eval record names: every option has its place, no two option sets share a file") {
  // Every combination of the options, each member set or not: all names differ.
  std::set<std::string> names;
  int combinations = 0;
  for (int bits = 0; bits < 32; ++bits, ++combinations) {
    EvalRecordOptions o;
    if (bits & 1) o.lengths = {64, 1024};
    if (bits & 2) o.position.push_back(nn::position_setting("untrained", nn::Untrained::nearest));
    if (bits & 4) o.diagnostics = true;
    if (bits & 8) o.other_text = std::string(64, 'a');
    if (bits & 16) o.position.push_back(nn::position_setting("blockwise", true));
    names.insert(eval_record_name("runs/t5/step_00000600.h5", 8192, o));
  }
  CHECK(names.size() == static_cast<std::size_t>(combinations));
  CHECK(names.count("step_00000600-8192.json"));  // no option: the name `rpb train` writes
  CHECK(names.count("step_00000600-8192-L64_1024-nearest-diag-textaaaaaaaaaaaa.json"));
  CHECK(names.count("step_00000600-8192-L64_1024-nearest-diag-textaaaaaaaaaaaa-blockwise.json"));
  EvalRecordOptions keep;
  keep.position = {nn::position_setting("untrained", nn::Untrained::keep)};  // asked for explicitly: another record than the stored config's "nearest" would give
  CHECK(eval_record_name("step_00000600.h5", 8192, keep) == "step_00000600-8192-keep.json");
}

TEST_CASE("eval records: --json and --diagnostics write separate files, records carry the provenance") {
  TempDir tmp("prov_eval");
  const fs::path cfg = tmp.path / "tiny.toml";
  // eval_diagnostics off: --diagnostics changes the record.
  std::ofstream(cfg) << "[run]\nname = \"tiny\"\nout_dir = \"" << tmp.path.string()
                     << "\"\nsteps = 4\nbatch = 4\nlength = 16\nlog_every = 2\neval_multipliers = [1, 2]\n"
                        "eval_tokens = 128\neval_diagnostics = false\n"
                        "[model]\nd_model = 16\nheads = 2\nlayers = 1\nd_ff = 32\n"
                        "[task]\nkind = \"markov\"\nvocab = 5\norder = 1\ntrain_tokens = 4096\neval_tokens = 1024\n";
  REQUIRE(run_rpb("train " + cfg.string()).code == 0);
  const fs::path run = tmp.path / "tiny", eval = run / "eval";
  REQUIRE(run_rpb("eval " + run.string() + " --json").code == 0);
  REQUIRE(run_rpb("eval " + run.string() + " --diagnostics").code == 0);
  const EvalRecord plain = read_eval_record((eval / "step_00000004-128.json").string());
  const EvalRecord diag = read_eval_record((eval / "step_00000004-128-diag.json").string());
  CHECK(plain.lengths[0].attention.empty());
  CHECK(!diag.lengths[0].attention.empty());
  CHECK(diag.options.diagnostics);
  CHECK(diag.provenance.commit == build_commit());
  CHECK(diag.provenance.rpb_version == version());
  CHECK(contains(diag.provenance.command, " eval " + run.string() + " --diagnostics"));
  CHECK(std::regex_match(diag.provenance.date, std::regex("[0-9-]{10}T[0-9:]{8}Z")));
  const Json j = Json::parse(file_text(eval / "step_00000004-128-diag.json"));
  CHECK(j["format"] == "rpb-eval-4");
  CHECK(j["options"].dump() == R"({"lengths":null,"untrained":null,"diagnostics":true,"other_text":null,"stride":null})");
  // An rpb-eval-2 record (no provenance, no options) still reads: its options are those its name showed.
  Json old = j;
  old["format"] = "rpb-eval-2";
  old.erase("provenance");
  old.erase("options");
  old["default_lengths"] = false;
  std::ofstream(tmp.file("old.json")) << old.dump();
  const EvalRecord back = read_eval_record(tmp.file("old.json"));
  CHECK(back.provenance.empty());
  CHECK(back.options.lengths == std::vector<int64_t>{16, 32});
  CHECK(!back.options.diagnostics);
}

TEST_CASE("results.json: rpb-results-3 (no scheme) and -2 (no provenance, no runs) still read, runs match the seeds") {
  TempDir tmp("prov_results");
  SweepResults r;
  r.name = "s";
  r.train_length = 16;
  r.multipliers = {1};
  r.seeds = {3};
  SweepResultsRow row;
  row.task = "markov";
  row.method = row.label = row.scheme = "t5";
  row.perplexity = {{2.0}};
  row.nll = {{0.69}};
  row.tokens = {{64}};
  row.attention = {{{}}};
  row.runs = {{"out/s/markov/t5/seed3", std::string(64, '1'), "step_00000004.h5", std::string(64, '2')}};
  r.rows = {row};
  const Json good = sweep_results_object(r);
  const auto read = [&](const Json& j) {
    std::ofstream(tmp.file("results.json"), std::ios::trunc) << j.dump();
    return read_sweep_results(tmp.file("results.json"));
  };
  CHECK(read(good).rows[0].runs[0].checkpoint == "step_00000004.h5");
  CHECK(read(good).rows[0].scheme == "t5");
  Json j = good;
  j["rows"][0].erase("scheme");
  CHECK_THROWS_WITH_AS(read(j), doctest::Contains("rows[0]"), Error);  // the current format's rows carry it
  j["format"] = "rpb-results-3";
  CHECK(read(j).rows[0].scheme.empty());
  CHECK(read(j).rows[0].runs[0].checkpoint == "step_00000004.h5");
  j = good;
  j["rows"][0]["runs"][0]["seed"] = 4;
  CHECK_THROWS_WITH_AS(read(j), doctest::Contains("key rows[0].runs[0].seed: expected seed 3"), Error);
  j = good;
  j["rows"][0]["runs"].erase(0);
  CHECK_THROWS_WITH_AS(read(j), doctest::Contains("key rows[0].runs: expected 1 runs (one per seed), found 0"), Error);
  j = good;
  j["format"] = "rpb-results-2";
  j.erase("provenance");
  j["rows"][0].erase("runs");
  const SweepResults old = read(j);
  CHECK(old.provenance.empty());
  CHECK(old.rows[0].runs.empty());
  CHECK(old.rows[0].perplexity == r.rows[0].perplexity);
}

// The cells of a results.csv line (RFC 4180: a field in double quotes may hold commas and doubled quotes).
std::vector<std::string> csv_cells(const std::string& line) {
  std::vector<std::string> cells(1);
  bool quoted = false;
  for (std::size_t i = 0; i < line.size(); ++i) {
    const char c = line[i];
    if (quoted && c == '"' && i + 1 < line.size() && line[i + 1] == '"') cells.back() += '"', ++i;
    else if (c == '"') quoted = !quoted;
    else if (c == ',' && !quoted) cells.emplace_back();
    else cells.back() += c;
  }
  return cells;
}

TEST_CASE("provenance: a number of the sweep's table traces back to its checkpoint by SHA-256") {
  TempDir tmp("prov_trace");
  const fs::path cfg = tmp.path / "sweep.toml";
  std::ofstream(cfg) << "[run]\nname = \"sweep\"\nout_dir = \"" << tmp.path.string()
                     << "\"\nsteps = 6\nbatch = 4\nlength = 16\nlog_every = 3\neval_multipliers = [1, 2]\n"
                        "eval_tokens = 128\n[model]\nd_model = 16\nheads = 2\nlayers = 1\nd_ff = 32\n"
                        "[task]\nkind = \"markov\"\nvocab = 5\norder = 1\ntrain_tokens = 4096\neval_tokens = 1024\n"
                        "[sweep]\nmethods = [\"t5\", \"alibi\"]\nseeds = [0, 7]\n";
  const auto sweep = run_rpb("extrapolate " + cfg.string());
  REQUIRE_MESSAGE(sweep.code == 0, sweep.out);
  const SweepResults results = read_sweep_results((tmp.path / "sweep" / "results.json").string());
  CHECK(results.format == "rpb-results-7");
  CHECK(results.provenance.commit == build_commit());
  CHECK(contains(results.provenance.command, " extrapolate " + cfg.string()));
  // The table's number: alibi's perplexity at 2x, seed 7.
  const SweepResultsRow& row = results.rows.at(1);
  REQUIRE(row.method == "alibi");
  CHECK(row.scheme == "alibi");
  REQUIRE(row.runs.size() == 2);
  const double number = row.perplexity.at(1).at(1).value();
  const SweepRunRecord& run = row.runs[1];
  CHECK(fs::path(run.folder).filename() == "seed7");
  const fs::path checkpoint = fs::path(run.folder) / run.checkpoint;
  // Its checkpoint is the file whose bytes have that SHA-256, and was written by this rpb's commit.
  CHECK(sha256_file(checkpoint.string()) == run.checkpoint_sha256);
  const Checkpoint c = load_checkpoint(checkpoint.string());
  CHECK(c.config_digest == run.config_digest);
  CHECK(c.commit == build_commit());
  CHECK(contains(run_rpb("inspect " + checkpoint.string()).out, "(commit " + std::string(build_commit()) + ")"));
  // Evaluating that checkpoint again gives the number.
  const auto again = run_rpb("eval " + checkpoint.string() + " --json --no-record 2>/dev/null; exit $?");  // stdout alone
  REQUIRE(again.code == 0);
  const Json record = Json::parse(again.out);
  CHECK(record["checkpoint_sha256"] == run.checkpoint_sha256);
  CHECK(record["lengths"][1]["perplexity"].get<double>() == number);
  // results.csv's row of that number names the same run and checkpoint, and the same provenance.
  std::istringstream csv(file_text(tmp.path / "sweep" / "results.csv"));
  std::string line;
  std::getline(csv, line);
  const std::vector<std::string> header = csv_cells(line);
  std::map<std::string, std::string> at;
  int matches = 0;
  while (std::getline(csv, line)) {
    const std::vector<std::string> cells = csv_cells(line);
    REQUIRE(cells.size() == header.size());
    std::map<std::string, std::string> row_at;
    for (std::size_t i = 0; i < header.size(); ++i) row_at[header[i]] = cells[i];
    if (row_at["method"] == "alibi" && row_at["seed"] == "7" && row_at["multiplier"] == "2") at = row_at, ++matches;
  }
  REQUIRE(matches == 1);
  CHECK(std::stod(at["perplexity"]) == doctest::Approx(number).epsilon(1e-9));
  CHECK(at["run_folder"] == run.folder);
  CHECK(at["checkpoint"] == run.checkpoint);
  CHECK(at["checkpoint_sha256"] == run.checkpoint_sha256);
  CHECK(at["config_digest"] == run.config_digest);
  CHECK(at["commit"] == build_commit());
  CHECK(at["date"] == results.provenance.date);
  CHECK(at["command"] == results.provenance.command);
}

}  // namespace rpb::provenance_tests
