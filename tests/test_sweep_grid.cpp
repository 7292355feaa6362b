// [[sweep.grid]] (issue 26): a grid expands to the cartesian product of its methods and values, each point the
// method a user would write by hand (same name, run folder and identity); keys a listed scheme does not read,
// duplicates, empty lists and too many runs are refused at the key; results.json rows carry typed settings.
#include <doctest/doctest.h>

#include <filesystem>
#include <map>

#include "test_util.h"
#include "train/config/run_identity.h"
#include "train/sweep/results_json.h"
#include "train/sweep/sweep.h"

namespace sweep_grid_test {

namespace fs = std::filesystem;
using namespace rpb;
using rpb::testing::contains;
using rpb::testing::error_of;

const std::string kTwoByTwo =
    "[sweep]\n[[sweep.grid]]\nmethods = [\"t5\"]\n\"optim.lr\" = [1e-3, 3e-3]\nmax_distance = [64, 128]\n";

std::vector<std::string> names_of(const RunConfig& c) {
  std::vector<std::string> names;
  for (const SweepMethod& m : c.sweep.methods) names.push_back(m.name());
  return names;
}

// The message of the error parsing `text` throws ("" when it parses).
std::string grid_error(const std::string& text) {
  return error_of([&] { parse_config(text, "g.toml"); });
}

TEST_CASE("sweep grid: the cartesian product, in order, with typed settings") {
  const RunConfig c = parse_config(kTwoByTwo, "g.toml");
  REQUIRE(c.sweep.methods.size() == 4);
  // With grids and no sweep.methods, the sweep is the grids' points alone; keys in sorted order, the last fastest.
  CHECK(names_of(c) == std::vector<std::string>{"t5@max_distance=64@optim.lr=0.001", "t5@max_distance=64@optim.lr=0.003",
                                                "t5@max_distance=128@optim.lr=0.001",
                                                "t5@max_distance=128@optim.lr=0.003"});
  const SweepMethod& p = c.sweep.methods[1];
  CHECK(p.scheme == "t5");
  REQUIRE(p.settings.size() == 2);
  CHECK(p.settings[0].key == "position.max_distance");
  CHECK(std::get<int64_t>(p.settings[0].value.value) == 64);
  CHECK(p.settings[1].key == "optim.lr");
  CHECK(std::get<double>(p.settings[1].value.value) == 3e-3);
  CHECK(p.label() == "T5 bias, max_distance 64, optim.lr 0.003");

  // Unquoted dotted keys (a table optim holding lr) read the same; sweep.methods come first; two grids in order.
  const RunConfig two = parse_config(
      "[sweep]\nmethods = [\"alibi\"]\n[[sweep.grid]]\nmethods = [\"t5\", \"shaw\"]\noptim.lr = [0.01]\n"
      "[[sweep.grid]]\nmethods = [\"t5\"]\nuntrained = [\"nearest\"]\n\"model.tie_head\" = [false]\n",
      "g.toml");
  CHECK(names_of(two) == std::vector<std::string>{"alibi", "t5@optim.lr=0.01", "shaw@optim.lr=0.01",
                                                  "t5@model.tie_head=false@untrained=nearest"});

  // The effective text (stored in checkpoints) reads back to the same methods, quoted and nested keys side by side.
  const RunConfig mixed = parse_config(
      "[sweep]\n[[sweep.grid]]\nmethods = [\"t5\"]\n\"optim.lr\" = [0.01]\noptim.warmup_steps = [0, 2]\n", "g.toml");
  CHECK(names_of(mixed) ==
        std::vector<std::string>{"t5@optim.lr=0.01@optim.warmup_steps=0", "t5@optim.lr=0.01@optim.warmup_steps=2"});
  CHECK(names_of(parse_stored_config(mixed.text, "stored")) == names_of(mixed));
}

TEST_CASE("sweep grid: a point and the same hand-written method share their name, run folder and identity") {
  const RunConfig grid = parse_config(kTwoByTwo, "g.toml");
  const RunConfig hand = parse_config(
      "[sweep]\nmethods = [\"t5@max_distance=128@optim.lr=0.003\"]\n", "h.toml");
  REQUIRE(grid.sweep.methods.size() == 4);
  const SweepMethod& point = grid.sweep.methods[3];
  const SweepMethod& written = hand.sweep.methods.at(0);
  CHECK(point.text == written.text);  // the run folder: <out_dir>/<name>/<task>/<method>/seed<k>
  CHECK(point.scheme == written.scheme);
  REQUIRE(point.settings.size() == written.settings.size());
  for (std::size_t i = 0; i < point.settings.size(); ++i) {
    CHECK(point.settings[i].key == written.settings[i].key);
    CHECK(setting_text(point.settings[i].value) == setting_text(written.settings[i].value));
  }
  const RunConfig a = run_config(grid, {"markov", point, 0, "sw/s/markov/" + point.name(), "seed0"});
  const RunConfig b = run_config(hand, {"markov", written, 0, "sw/s/markov/" + written.name(), "seed0"});
  CHECK(config_digest(a) == config_digest(b));
  CHECK(a.optim.schedule.lr == 3e-3);
  CHECK(a.model.position.max_distance == 128);
}

TEST_CASE("sweep grid: setting_text writes values as a method name does") {
  CHECK(setting_text({1e-3}) == "0.001");
  CHECK(setting_text({int64_t{64}}) == "64");
  CHECK(setting_text({1.0}) == "1.0");
  CHECK(setting_text({true}) == "true");
  CHECK(setting_text({std::string("nearest")}) == "nearest");
  CHECK(setting_text({std::string("true")}) == "'true'");  // a bare true would read as a boolean
  CHECK(setting_text({std::vector<SettingValue>{{int64_t{1}}, {int64_t{2}}}}) == "[1, 2]");
}

TEST_CASE("sweep grid: a key a listed scheme does not read is refused, naming the key and who reads it") {
  std::string e = grid_error("[sweep]\n[[sweep.grid]]\nmethods = [\"t5\", \"alibi\"]\nmax_distance = [64, 128]\n");
  CHECK(contains(e, "g.toml:4:16: sweep.grid[0].max_distance: alibi does not read position.max_distance"));
  CHECK(contains(e, "sweep it for t5 in a [[sweep.grid]] of their own"));
  e = grid_error("[sweep]\n[[sweep.grid]]\nmethods = [\"t5\"]\n\"grid.window\" = [2, 4]\n");
  CHECK(contains(e, "sweep.grid[0].grid.window: t5 does not read grid.window"));
  e = grid_error("[task]\nkind = \"grid2d\"\n[sweep]\n[[sweep.grid]]\nmethods = [\"swin\"]\n\"grid.cpb_hidden\" = [8]\n");
  CHECK(contains(e, "swin does not read grid.cpb_hidden: its runs would be the same for every value; sweep it for "
                    "swin_v2"));
  e = grid_error("[task]\nkind = \"grid2d\"\n[sweep]\n[[sweep.grid]]\nmethods = [\"swin\"]\n\"model.tie_head\" = [false]\n");
  CHECK(contains(e, "swin does not read model.tie_head: its runs would be the same for every value; no scheme of the "
                    "sweep reads it"));
  // Read by every scheme, or by the window schemes on a 2-D task: accepted.
  CHECK(grid_error("[sweep]\n[[sweep.grid]]\nmethods = [\"t5\", \"alibi\"]\n\"model.layers\" = [1, 2]\n").empty());
  CHECK(grid_error("[run]\nlength = 8\neval_multipliers = [1]\n[task]\nkind = \"grid2d\"\n[sweep]\n[[sweep.grid]]\n"
                   "methods = [\"swin\", \"swin_v2\"]\n"
                   "\"grid.window\" = [2, 4]\n")
            .empty());
  // A method that sets the key itself.
  CHECK(contains(grid_error("[sweep]\n[[sweep.grid]]\nmethods = [\"t5@max_distance=64\"]\nmax_distance = [32]\n"),
                 "the method \"t5@max_distance=64\" sets position.max_distance itself"));
}

TEST_CASE("sweep grid: duplicates, empty lists, unknown keys and the sweep's own keys are refused at the key") {
  CHECK(contains(grid_error("[sweep]\n[[sweep.grid]]\nmethods = [\"t5\"]\n\"optim.lr\" = [1e-3, 0.001]\n"),
                 "g.toml:4:21: sweep.grid[0].optim.lr = 0.001: listed twice (elements 1 and 2); expected each "
                 "value once"));
  CHECK(contains(grid_error("[sweep]\n[[sweep.grid]]\nmethods = [\"t5\"]\n\"optim.lr\" = []\n"),
                 "sweep.grid[0].optim.lr = []: expected at least one value"));
  CHECK(contains(grid_error("[sweep]\n[[sweep.grid]]\nmethods = [\"t5\"]\n\"optim.lr\" = 0.01\n"),
                 "sweep.grid[0].optim.lr = 0.01: expected a list of the values to sweep"));
  CHECK(contains(grid_error("[sweep]\n[[sweep.grid]]\nmethods = [\"t5\"]\nmax_distance = [64]\n"
                            "\"position.max_distance\" = [128]\n"),
                 "sets position.max_distance again (as max_distance)"));
  CHECK(contains(grid_error("[sweep]\n[[sweep.grid]]\nmethods = [\"t5\"]\n\"optim.lrr\" = [0.01]\n"),
                 "sweep.grid[0].optim.lrr = [ 0.01 ]: unknown key optim.lrr (did you mean optim.lr?)"));
  CHECK(contains(grid_error("[sweep]\n[[sweep.grid]]\nmethods = [\"t5\"]\n\"run.seed\" = [1, 2]\n"),
                 "a grid cannot sweep run.seed: sweep.seeds names the seeds"));
  CHECK(contains(grid_error("[sweep]\n[[sweep.grid]]\nmethods = [\"t5\"]\nscheme = [\"alibi\"]\n"),
                 "a grid cannot sweep position.scheme"));
  CHECK(contains(grid_error("[sweep]\n[[sweep.grid]]\nmethods = [\"t5\", \"t5\"]\nmax_distance = [64]\n"),
                 "sweep.grid[0].methods"));
  CHECK(contains(grid_error("[sweep]\n[[sweep.grid]]\n\"optim.lr\" = [0.01]\n"),
                 "sweep.grid[0].methods: expected the methods the grid sweeps"));
  CHECK(contains(grid_error("[sweep]\n[[sweep.grid]]\nmethods = [\"t5\"]\n"),
                 "expected at least one key to sweep beside methods"));
  CHECK(contains(grid_error("[sweep]\ngrid = 3\n"), "sweep.grid: expected [[sweep.grid]] tables"));
  CHECK(contains(grid_error("[sweep]\n[[sweep.grid]]\nmethods = [\"t5\"]\n\"optim.lr\" = [{a = 1}]\n"),
                 "sweep.grid[0].optim.lr: expected a boolean, a number, a string or an array of them, found a table"));
  // A point equal to a listed method or to another grid's point, in any order of its settings.
  CHECK(contains(grid_error("[sweep]\nmethods = [\"t5@optim.lr=1e-3@max_distance=64\"]\n[[sweep.grid]]\n"
                            "methods = [\"t5\"]\n\"optim.lr\" = [1e-3]\nmax_distance = [64]\n"),
                 "the point \"t5@max_distance=64@optim.lr=0.001\" sets what the method "
                 "\"t5@optim.lr=1e-3@max_distance=64\" of sweep.methods sets: each method once"));
  CHECK(contains(grid_error("[sweep]\n[[sweep.grid]]\nmethods = [\"t5\"]\n\"optim.lr\" = [1e-3]\n"
                            "[[sweep.grid]]\nmethods = [\"t5\"]\n\"optim.lr\" = [0.001, 0.002]\n"),
                 "sweep.grid[1].methods"));
  // A value setting_text cannot put in a method name.
  CHECK(contains(grid_error("[sweep]\n[[sweep.grid]]\nmethods = [\"t5\"]\n\"run.name\" = [\"a@b\"]\n"),
                 "a grid cannot sweep run.name"));
  CHECK(contains(grid_error("[sweep]\n[[sweep.grid]]\nmethods = [\"t5\"]\nuntrained = [\"a@b\"]\n"),
                 "sweep.grid[0].untrained: the value 'a@b' has an '@'"));
}

TEST_CASE("sweep grid: too many runs are refused") {
  std::string values = "[";
  for (int i = 1; i <= 100; ++i) values += (i > 1 ? ", " : "") + std::to_string(i);
  values += "]";
  CHECK(contains(grid_error("[sweep]\n[[sweep.grid]]\nmethods = [\"t5\"]\n\"run.steps\" = " + values +
                            "\n\"run.batch\" = " + values + "\n"),
                 "sweep.grid[0].run.steps: the grids make more than 4096 methods"));
  // 100 points x 50 seeds.
  std::string seeds = "[";
  for (int i = 0; i < 50; ++i) seeds += (i > 0 ? ", " : "") + std::to_string(i);
  seeds += "]";
  CHECK(contains(grid_error("[sweep]\nseeds = " + seeds + "\n[[sweep.grid]]\nmethods = [\"t5\"]\n\"run.steps\" = " +
                            values + "\n"),
                 "100 methods (100 of them [[sweep.grid]] points) x 1 tasks x 50 seeds make 5000 runs; expected at "
                 "most 4096"));
}

TEST_CASE("sweep grid: results.json rows carry typed settings, rows without them still read") {
  SweepResults r;
  r.name = "s";
  r.train_length = 8;
  r.multipliers = {1};
  r.seeds = {0};
  SweepResultsRow plain;
  plain.task = "markov";
  plain.method = plain.label = "t5";
  plain.perplexity = {{2.5}};
  plain.nll = {{0.9}};
  plain.tokens = {{64}};
  plain.attention = {{AttentionDiagnostics{}}};
  plain.runs = {SweepRunRecord{"runs/s/markov/t5/seed0", std::string(64, 'a'), "step_00000004.h5", ""}};
  SweepResultsRow point = plain;
  point.method = "t5@max_distance=64@optim.lr=0.001@untrained=nearest";
  point.settings = {{"position.max_distance", {int64_t{64}}, "64"},
                    {"optim.lr", {1e-3}, "1e-3"},
                    {"position.untrained", {std::string("nearest")}, "nearest"},
                    {"run.eval_multipliers", {std::vector<SettingValue>{{int64_t{1}}, {int64_t{2}}}}, "[1, 2]"}};
  r.rows = {plain, point};
  Json json = sweep_results_object(r);
  CHECK(json["rows"][0]["settings"] == Json::object());
  CHECK(json["rows"][1]["settings"].dump() ==
        "{\"position.max_distance\":64,\"optim.lr\":0.001,\"position.untrained\":\"nearest\","
        "\"run.eval_multipliers\":[1,2]}");
  const Json parsed = parse_json(json_text(json), "results");  // through the text, as a reader sees it
  const SweepResults back = sweep_results_from_json(parsed, "results");
  REQUIRE(back.rows.size() == 2);
  CHECK(back.rows[0].settings.empty());
  const std::vector<ConfigSetting>& s = back.rows[1].settings;
  REQUIRE(s.size() == 4);
  CHECK(s[0].key == "position.max_distance");
  CHECK(std::get<int64_t>(s[0].value.value) == 64);
  CHECK(s[1].key == "optim.lr");
  CHECK(std::get<double>(s[1].value.value) == 1e-3);
  CHECK(s[1].text == "0.001");
  CHECK(std::get<std::string>(s[2].value.value) == "nearest");
  CHECK(std::get<std::vector<SettingValue>>(s[3].value.value).size() == 2);
  // Written before settings were: no "settings" key.
  for (Json& row : json["rows"]) row.erase("settings");
  CHECK(sweep_results_from_json(json, "old").rows[1].settings.empty());
  // A value of another type names the key.
  json["rows"][1]["settings"] = {{"optim.lr", {{"a", 1}}}};
  CHECK(contains(error_of([&] { sweep_results_from_json(json, "bad"); }),
                 "bad: key rows[1].settings.optim.lr: expected a boolean, a number, a string or an array of them"));
}

// Every checkpoint below `root` with its last write time.
std::map<std::string, fs::file_time_type> checkpoints(const fs::path& root) {
  std::map<std::string, fs::file_time_type> out;
  for (const auto& e : fs::recursive_directory_iterator(root))
    if (e.path().extension() == ".h5") out[e.path().string()] = e.last_write_time();
  return out;
}

TEST_CASE("sweep grid: a 2 x 2 grid trains 4 runs and reuses them on rerun") {
  rpb::testing::TempDir tmp("sweep_grid");
  const RunConfig c = parse_config(
      rpb::testing::tiny_sweep_config(tmp.path, "g", "[1]") + "[position]\nscheme = \"t5\"\nnum_buckets = 8\n"
          "[optim]\nwarmup_steps = 1\n" +
          "[sweep]\nseeds = [0]\n[[sweep.grid]]\nmethods = [\"t5\"]\n\"optim.lr\" = [1e-3, 3e-3]\nmax_distance = [16, 32]\n",
      "grid.toml");
  const SweepResult first = run_sweep(c);
  REQUIRE(first.rows.size() == 4);
  const auto trained = checkpoints(tmp.path);
  CHECK(trained.size() == 4);  // one final checkpoint per run
  for (const SweepMethod& m : c.sweep.methods)
    CHECK(fs::exists(tmp.path / "g" / "markov" / m.name() / "seed0" / "step_00000003.h5"));
  const SweepResults table = sweep_results(first);
  CHECK(std::get<double>(table.rows[2].settings.at(1).value.value) == 1e-3);
  CHECK(std::get<int64_t>(table.rows[2].settings.at(0).value.value) == 32);

  const SweepResult second = run_sweep(c);  // reuses: no checkpoint written again, the same numbers
  CHECK(checkpoints(tmp.path) == trained);
  REQUIRE(second.rows.size() == 4);
  for (std::size_t i = 0; i < 4; ++i) CHECK(second.rows[i].ppl == first.rows[i].ppl);
}

TEST_CASE("sweep: a method with evaluation settings beside trained ones evaluates the runs of the method without them") {
  rpb::testing::TempDir tmp("sweep_shared");
  // Listed first, the evaluation row still trains the shared folder as "t5@optim.lr=0.01" would: its stored
  // config has no position.untrained, and only that folder exists.
  const RunConfig c = parse_config(
      rpb::testing::tiny_sweep_config(tmp.path, "s", "[1, 4]") + "[position]\nscheme = \"t5\"\nnum_buckets = 8\n"
          "[optim]\nwarmup_steps = 1\n[sweep]\nseeds = [0]\n"
          "methods = [\"t5@optim.lr=0.01@untrained=nearest\", \"t5@optim.lr=0.01\"]\n",
      "shared.toml");
  const SweepResult r = run_sweep(c);
  REQUIRE(r.rows.size() == 2);
  const fs::path run = tmp.path / "s" / "markov" / "t5@optim.lr=0.01" / "seed0";
  CHECK(r.rows[0].runs[0].folder == run.string());
  CHECK(r.rows[1].runs[0].folder == run.string());
  CHECK(!fs::exists(tmp.path / "s" / "markov" / "t5@optim.lr=0.01@untrained=nearest"));
  CHECK(checkpoints(tmp.path).size() == 1);
  CHECK(contains(rpb::testing::file_text(run / "config.toml"), "untrained = 'keep'"));
  CHECK(r.rows[0].ppl != r.rows[1].ppl);  // at 4x the untrained buckets are read, or their nearest trained one
}

}  // namespace sweep_grid_test
