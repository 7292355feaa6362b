// Figures through python/rpb_plot/ (cli/python_runner.h, cli/plot.h, cli/plot_request.h), tested against the
// stand-in tests/plot_stub/rpb_plot/, which checks the request's fields, copies it for the test to read
// (RPB_PLOT_STUB_LOG) and writes a stub file to each output, or exits with RPB_PLOT_STUB_EXIT (3: matplotlib missing).
#include <doctest/doctest.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <sys/sysmacros.h>

#include <nlohmann/json.hpp>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "cli/plot_request.h"
#include "cli/python_runner.h"
#include "cli/schemes.h"
#include "test_util.h"
#include "train/config/config.h"
#include "train/sweep/results.h"
#include "train/sweep/results_json.h"

namespace rpb_test_plot {

namespace fs = std::filesystem;
using nlohmann::ordered_json;
using rpb::testing::contains;
using rpb::testing::file_text;
using rpb::testing::run_rpb;
using rpb::testing::ScopedEnv;
using rpb::testing::TempDir;

// A sweep folder holding results.csv and results.json of two methods on markov, seeds 0 and 1, lengths 64 .. 256.
fs::path sweep_folder(const TempDir& dir) {
  rpb::SweepResult r;
  r.name = "s";
  r.train_length = 64;
  r.multipliers = {1, 2, 4};
  r.seeds = {0, 1};
  for (const char* scheme : {"t5", "learned"}) {
    rpb::MethodResult m;
    m.task = "markov";
    m.method = {scheme, scheme, {}};
    m.lengths = {64, 128, 256};
    const bool learned = std::string(scheme) == "learned";
    for (int s = 0; s < 2; ++s) {
      m.ppl.push_back({8.0 + s, learned ? std::nullopt : std::optional<double>(9.0), std::nullopt});
      m.nll.push_back({2.0, learned ? std::nullopt : std::optional<double>(2.2), std::nullopt});
      m.tokens.push_back({100, 100, 0});
    }
    r.rows.push_back(m);
  }
  const fs::path folder = dir.path / "sweep";
  fs::create_directories(folder);
  rpb::write_results(r, folder.string());
  return folder;
}

// A run folder with a metrics.csv of `header` and two rows, and a config.toml of `config` unless empty (and no
// checkpoint): enough for curves.
fs::path run_folder(const TempDir& dir, const std::string& name, const std::string& header,
                    const std::string& config = "[position]\nscheme = \"t5\"\n") {
  const fs::path folder = dir.path / name;
  fs::create_directories(folder);
  std::ofstream(folder / "metrics.csv") << header << "\n1,2.5,0.1,1,16,1000,0.5\n2,2.4,0.1,1,32,1000,1.0\n";
  if (!config.empty()) std::ofstream(folder / "config.toml") << config;
  return folder;
}

const std::string kHeader = "step,train_loss,lr,grad_norm,tokens,tokens_per_sec,elapsed_s";

ordered_json logged(const TempDir& dir) { return ordered_json::parse(file_text(dir.file("request.json"))); }

bool no_temp_files(const fs::path& dir) {
  for (const auto& e : fs::recursive_directory_iterator(dir))
    if (contains(e.path().filename().string(), ".tmp.")) return false;
  return true;
}

// The plot requests in the temporary folder ("rpb-plot-*"), which rpb no longer writes.
std::vector<std::string> plot_request_files() {
  std::vector<std::string> names;
  for (const auto& e : fs::directory_iterator(fs::temp_directory_path()))
    if (e.path().filename().string().rfind("rpb-plot-", 0) == 0) names.push_back(e.path().filename().string());
  return names;
}

}  // namespace rpb_test_plot

using namespace rpb_test_plot;

TEST_CASE("plot runner: the module writes a temp file in the output's folder, which rpb renames over the output") {
  TempDir dir("plot_runner");
  const ScopedEnv stub("RPB_PYTHON_DIR", rpb::testing::kPlotStubDir);
  const rpb::OutputOptions rules{"--out", {}};
  const std::string out = dir.file("f.png");
  std::ofstream(out) << "old";
  const std::string csv = (run_folder(dir, "r", kHeader) / "metrics.csv").string();
  rpb::draw_figures(rpb::plot_request("curves", rpb::curves_block({{"r", "t5", csv, "r"}}, "step", std::nullopt)),
                    {{out, &rules}});
  CHECK(file_text(out).substr(1, 3) == "PNG");
  CHECK(no_temp_files(dir.path));
}

TEST_CASE("plot runner: a bad request, a missing matplotlib, a missing module and no Python are named") {
  TempDir dir("plot_runner_errors");
  const ScopedEnv stub("RPB_PYTHON_DIR", rpb::testing::kPlotStubDir);
  const rpb::OutputOptions rules{"--out", {}};
  const std::string out = dir.file("f.pdf");
  std::ofstream(out) << "old";
  const auto draw = [&] {
    rpb::draw_figures(rpb::plot_request("curves", rpb::curves_block({}, "step", std::nullopt)), {{out, &rules}});
  };
  const std::string bad = rpb::testing::error_of(draw);
  CHECK(contains(bad, "exited with code 2 (a bad request):\nrpb_plot stub: bad request: curves.runs"));
  {
    const ScopedEnv missing("RPB_PLOT_STUB_EXIT", "3");
    CHECK_THROWS_WITH_AS(draw(), doctest::Contains("matplotlib is missing: install it with `apt-get install "
                                                   "python3-matplotlib` (scripts/deps.sh does)"),
                         rpb::PlotUnavailable);
  }
  {
    const ScopedEnv failing("RPB_PLOT_STUB_EXIT", "1");
    CHECK_THROWS_WITH_AS(draw(), doctest::Contains("exited with code 1:\nrpb_plot stub: exit 1"), rpb::Error);
  }
  {
    const ScopedEnv elsewhere("RPB_PYTHON_DIR", dir.path.c_str());
    CHECK_THROWS_AS(draw(), rpb::PlotUnavailable);
    CHECK(contains(rpb::testing::error_of(draw), "the plotting package " + dir.file("rpb_plot") + " is missing"));
  }
  {
    const ScopedEnv no_python("RPB_PYTHON", dir.file("no_python").c_str());
    CHECK_THROWS_AS(draw(), rpb::PlotUnavailable);
  }
  CHECK(file_text(out) == "old");
  CHECK(no_temp_files(dir.path));
  CHECK(rpb::figure_format("a/b.PDF", "--out") == "pdf");
  CHECK(rpb::figure_format("b.svg", "--out") == "svg");
  CHECK_THROWS_WITH_AS(rpb::figure_format("b.jpg", "--out"),
                       doctest::Contains("--out b.jpg: expected a file name ending in .pdf, .png or .svg"),
                       rpb::UsageError);
  CHECK_THROWS_AS(rpb::figure_format("b", "--out"), rpb::UsageError);
}

TEST_CASE("rpb plot: run folders give a curves request with labels, schemes and --x, a run without tokens is named") {
  TempDir dir("plot_curves");
  const ScopedEnv stub("RPB_PYTHON_DIR", rpb::testing::kPlotStubDir);
  const ScopedEnv log("RPB_PLOT_STUB_LOG", dir.file("request.json").c_str());
  const fs::path t5 = run_folder(dir, "t5", kHeader);
  const fs::path alibi = run_folder(dir, "alibi@lr", kHeader, "[position]\nscheme = \"alibi\"\n");
  const std::string out = dir.file("c.pdf");
  auto r = run_rpb("plot " + t5.string() + " " + (alibi / "metrics.csv").string() + " --out " + out +
                   " --x tokens --ylim 1,3.5");
  REQUIRE_MESSAGE(r.code == 0, r.out);
  CHECK(contains(r.out, "figure: " + out));
  CHECK(file_text(out).substr(0, 4) == "%PDF");
  const ordered_json q = logged(dir);
  CHECK(q.at("kind") == "curves");
  CHECK(q.at("curves").at("x") == "tokens");
  CHECK(q.at("curves").at("ylim") == ordered_json({1.0, 3.5}));
  const ordered_json& runs = q.at("curves").at("runs");
  REQUIRE(runs.size() == 2);
  CHECK(runs[0].at("label") == "t5");
  CHECK(runs[0].at("scheme") == "t5");  // its config's position.scheme
  CHECK(runs[0].at("method") == "t5");
  CHECK(runs[1].at("label") == "alibi@lr");
  CHECK(runs[1].at("method") == "alibi");  // a run no results.json lists: its scheme's own colour
  CHECK(runs[1].at("scheme") == "alibi");
  CHECK(runs[0].at("metrics_csv") == fs::absolute(t5 / "metrics.csv").string());

  // A sweep's run: its method is the row of its sweep folder's results.json listing its folder (never read from a
  // folder name: without that results.json it is a run of its scheme); labelled "<method>/seed1", styled as the
  // method (the sweep figure's); the scheme comes from the config ("t5@max_distance=64" does not say it is t5's).
  const std::string seed_config = "[run]\nname = \"seed1\"\nseed = 1\n[position]\nscheme = \"t5\"\n";
  const fs::path seed1 = run_folder(dir, "grid/markov/t5@max_distance=64/seed1", kHeader, seed_config);
  const fs::path other = run_folder(dir, "lone", kHeader, "[position]\nscheme = \"alibi\"\n");
  r = run_rpb("plot " + seed1.string() + " " + other.string() + " --out " + out);
  REQUIRE_MESSAGE(r.code == 0, r.out);
  const ordered_json unlisted = logged(dir).at("curves").at("runs");
  CHECK(unlisted[0].at("label") == "seed1");
  CHECK(unlisted[0].at("method") == "t5");
  ordered_json listing = ordered_json::parse(file_text(sweep_folder(dir) / "results.json"));
  listing["rows"][1]["method"] = "t5@max_distance=64";  // seeds 0 and 1; the folders as the sweep named them
  listing["rows"][1]["runs"][1]["folder"] = "elsewhere/grid/markov/t5@max_distance=64/seed1";
  std::ofstream(dir.path / "grid" / "results.json") << listing.dump();
  r = run_rpb("plot " + seed1.string() + " " + other.string() + " --out " + out);
  REQUIRE_MESSAGE(r.code == 0, r.out);
  const ordered_json runs2 = logged(dir).at("curves").at("runs");
  CHECK(runs2[0].at("label") == "t5@max_distance=64/seed1");
  CHECK(runs2[0].at("method") == "t5@max_distance=64");
  CHECK(runs2[0].at("scheme") == "t5");
  CHECK(runs2[1].at("method") == "alibi");
  CHECK(runs2[1].at("scheme") == "alibi");
  // --request prints the request instead of drawing (python/rpb_plot's plot_curves draws it): the same runs.
  r = run_rpb("plot " + seed1.string() + " " + other.string() + " --out " + dir.file("p.png") + " --request");
  REQUIRE_MESSAGE(r.code == 0, r.out);
  const ordered_json printed = ordered_json::parse(r.out.substr(r.out.find('{')));
  CHECK(printed.at("curves").at("runs") == runs2);
  CHECK(printed.at("outputs") == ordered_json::array({{{"path", dir.file("p.png")}, {"format", "png"}}}));
  CHECK(!fs::exists(dir.file("p.png")));
  // Without its config a run has no scheme: refused, naming the file.
  const fs::path bare = run_folder(dir, "t5_bare", kHeader, "");
  r = run_rpb("plot " + bare.string() + " --out " + out);
  CHECK(r.code == 1);
  CHECK(contains(r.out, "cannot read the run's config"));
  CHECK(contains(r.out, (bare / "config.toml").string()));

  const fs::path old = run_folder(dir, "old", "step,train_loss,lr,grad_norm,tokens_per_sec,elapsed_s");
  r = run_rpb("plot " + old.string() + " --out " + dir.file("o.pdf") + " --x tokens");
  CHECK(r.code == 1);
  CHECK(contains(r.out, "no tokens column (a run trained before metrics.csv had one): draw it against the step"));
  CHECK(run_rpb("plot " + old.string() + " --out " + dir.file("o.pdf")).code == 0);
  r = run_rpb("plot " + old.string() + " --out " + dir.file("o.pdf") + " --tasks markov");
  CHECK(r.code == 2);
  CHECK(contains(r.out, "--tasks applies to sweeps (results.json), not to run folders"));
  r = run_rpb("plot " + old.string() + " --out " + dir.file("o.pdf") + " --ylim 3,1");
  CHECK(r.code == 2);
  CHECK(contains(r.out, "--ylim 3,1: expected LO,HI, two finite numbers with LO < HI"));
  // A span no axis can be drawn over (it overflowed in the module's ticks), refused before the module runs.
  for (const char* ylim : {"-1e308,1e308", "5e-324,1e-323"}) {
    r = run_rpb("plot " + old.string() + " --out " + dir.file("o.pdf") + " --ylim=" + ylim);
    CHECK(r.code == 2);
    CHECK(contains(r.out, std::string("--ylim ") + ylim + ": expected LO,HI, two finite numbers with LO < HI and "
                          "HI - LO between 1e-300 and 1e300"));
  }
  // A run listed only by an evaluation-only method of its folder (the folder's last sweep had
  // "t5@untrained=nearest" and not "t5"): labelled as the method it was trained as, never as that row's.
  const fs::path plain = run_folder(dir, "grid/markov/t5/seed1", kHeader, seed_config);
  listing["rows"][1]["method"] = "t5@untrained=nearest";
  listing["rows"][1]["runs"][1]["folder"] = "elsewhere/grid/markov/t5/seed1";
  std::ofstream(dir.path / "grid" / "results.json", std::ios::trunc) << listing.dump();
  r = run_rpb("plot " + plain.string() + " --out " + out);
  REQUIRE_MESSAGE(r.code == 0, r.out);
  const ordered_json runs3 = logged(dir).at("curves").at("runs");
  CHECK(runs3[0].at("label") == "t5/seed1");
  CHECK(runs3[0].at("method") == "t5");
}

TEST_CASE("rpb plot: a sweep's request carries its filters, checked against the results, mixing kinds exits 2") {
  TempDir dir("plot_sweep");
  const ScopedEnv stub("RPB_PYTHON_DIR", rpb::testing::kPlotStubDir);
  const ScopedEnv log("RPB_PLOT_STUB_LOG", dir.file("request.json").c_str());
  const fs::path sweep = sweep_folder(dir);
  const std::string out = dir.file("s.svg");
  auto r = run_rpb("plot " + sweep.string() + " --out " + out +
                   " --tasks markov --methods t5,learned --lengths 64,128 --metric perplexity");
  REQUIRE_MESSAGE(r.code == 0, r.out);
  const ordered_json q = logged(dir);
  CHECK(q.at("kind") == "sweep");
  CHECK(!q.contains("curves"));
  const ordered_json& s = q.at("sweep");
  CHECK(s.at("results") == ordered_json({fs::absolute(sweep / "results.json").string()}));
  CHECK(s.at("tasks") == ordered_json({"markov"}));
  CHECK(s.at("methods") == ordered_json({"t5", "learned"}));
  CHECK(s.at("lengths") == ordered_json({64, 128}));
  CHECK(s.at("metrics") == ordered_json({"perplexity"}));
  CHECK(s.at("ylim").is_null());
  CHECK(s.at("against") == "length");
  // The metrics the module may draw: rpb's one list (train/sweep/results_json.h), which --metric checks against.
  std::vector<std::string> keys;
  for (const auto& m : s.at("known_metrics")) keys.push_back(m.at("key"));
  CHECK(keys == std::vector<std::string>{"perplexity", "mean_attention_distance", "attention_entropy", "bits_per_byte",
                                         "accuracy", "accuracy_every_seed", "token_accuracy"});
  CHECK(s.at("known_metrics")[2] == ordered_json{{"key", "attention_entropy"}, {"label", "attention entropy"},
                                                 {"unit", "nats"}, {"log", false}, {"field", "attention"},
                                                 {"entry", "entropy_overall"}, {"optimum", ""}, {"learned", ""},
                                                 {"lower", 0.0}, {"upper", nullptr}, {"scale", 1.0}, {"on_request", false}});
  CHECK(s.at("known_metrics")[3] == ordered_json{{"key", "bits_per_byte"}, {"label", "loss"},
                                                 {"unit", "bits per byte"}, {"log", false}, {"field", "bits_per_byte"},
                                                 {"entry", ""}, {"optimum", ""}, {"learned", ""}, {"lower", 0.0},
                                                 {"upper", nullptr}, {"scale", 1.0}, {"on_request", false}});
  // Accuracy is stored 0-1 (results.json, as the tables read it) and drawn in %, as the tables write it.
  CHECK(s.at("known_metrics")[4] == ordered_json{{"key", "accuracy"}, {"label", "exact-match accuracy"}, {"unit", "%"},
                                                 {"log", false}, {"field", "accuracy"}, {"entry", ""},
                                                 {"optimum", ""}, {"learned", "learned"}, {"lower", 0.0},
                                                 {"upper", 1.0}, {"scale", 100.0}, {"on_request", false}});
  // Over every seed, learned or not: drawn on request only (--metric accuracy_every_seed), marked as such.
  CHECK(s.at("known_metrics")[5].at("on_request") == true);
  CHECK(s.at("known_metrics")[5].at("learned") == "");
  CHECK(s.at("known_metrics")[5].at("label") == "exact-match accuracy, every seed (learned or not)");
  // An algorithmic task's per-token accuracy, over every seed.
  CHECK(s.at("known_metrics")[6].at("field") == "token_accuracy");
  CHECK(s.at("known_metrics")[6].at("learned") == "");
  CHECK(contains(run_rpb("plot --help").out,
                 "perplexity, mean_attention_distance, attention_entropy, bits_per_byte, accuracy"));
  CHECK(q.at("styles").at("schemes")[3].at("name") == "t5");
  CHECK(q.at("styles").at("schemes") == rpb::schemes_json().at("schemes"));  // one encoding: dims [1], [2], [1, 2]
  // A list flag takes one comma-separated word: the PATH after it stays a PATH (and a flag may repeat).
  r = run_rpb("plot --methods t5 --methods learned " + sweep.string() + " --out " + out);
  REQUIRE_MESSAGE(r.code == 0, r.out);
  CHECK(logged(dir).at("sweep").at("methods") == ordered_json({"t5", "learned"}));

  struct Case {
    std::string args, message;
  };
  const fs::path run = run_folder(dir, "t5", kHeader);
  for (const Case& c : std::vector<Case>{
           {"--tasks lag", "--tasks lag: not in the results (they hold: markov)"},
           {"--methods rope", "--methods rope: not in the results (they hold: learned, t5)"},
           {"--lengths 96", "--lengths 96: not in the results (they hold: 64, 128, 256)"},
           {"--metric attention_entropy", "--metric attention_entropy: not in the results (they hold: perplexity)"},
           {"--metric accuracy", "--metric accuracy: not in the results (they hold: perplexity)"},
           {"--metric ppl",
            "--metric: ppl not in {perplexity,mean_attention_distance,attention_entropy,bits_per_byte,accuracy,"
            "accuracy_every_seed,token_accuracy}"},
           {"--against optim.lr", "--against optim.lr: not in the results (they hold: length)"},
           {"--x tokens", "--x applies to run folders (curves), not to sweeps"},
           {run.string(), "mix a run folder (training curves) with a sweep (its results)"}}) {
    CAPTURE(c.args);
    r = run_rpb("plot " + sweep.string() + " --out " + dir.file("x.pdf") + " " + c.args);
    CHECK(r.code == 2);
    CHECK(contains(r.out, c.message));
    CHECK(!fs::exists(dir.file("x.pdf")));
  }
  // A swept setting in the rows ("settings", from [[sweep.grid]]) may be drawn against.
  ordered_json json = ordered_json::parse(file_text(sweep / "results.json"));
  json["rows"][0]["settings"] = {{"optim.lr", 0.001}};
  std::ofstream(dir.file("grid.json")) << json.dump();
  r = run_rpb("plot " + dir.file("grid.json") + " --out " + dir.file("g.pdf") + " --against optim.lr");
  REQUIRE_MESSAGE(r.code == 0, r.out);
  CHECK(logged(dir).at("sweep").at("against") == "optim.lr");
}

TEST_CASE("rpb plot --out: never an input, a run's or a sweep's own file or a device, without matplotlib exit 1") {
  TempDir dir("plot_out");
  const ScopedEnv stub("RPB_PYTHON_DIR", rpb::testing::kPlotStubDir);
  const fs::path sweep = sweep_folder(dir);
  const fs::path run = run_folder(dir, "run", kHeader);
  std::ofstream(run / "config.toml") << "# config_digest = x\n";
  const std::string dev = dir.file("full");
  REQUIRE(::mknod(dev.c_str(), S_IFCHR | 0666, makedev(1, 7)) == 0);
  const std::string json = (sweep / "results.json").string(), csv = (run / "metrics.csv").string();
  const std::string json_text = file_text(json), csv_text = file_text(csv);
  struct Case {
    std::string args, message;
  };
  for (const Case& c : std::vector<Case>{
           {sweep.string() + " --out " + json, "--out " + json + ": is the sweep results this command reads"},
           {sweep.string() + " --out " + (sweep / "results.pdf").string(), "is a result file of the sweep folder"},
           {sweep.string() + " --out " + dev, "--out " + dev + ": is a character device"},
           {sweep.string() + " --out " + dir.file("s.eps"), "expected a file name ending in .pdf, .png or .svg"},
           {run.string() + " --out " + csv, "--out " + csv + ": is the metrics file this command reads"},
           {run.string() + " --out " + (run / "config.toml").string(), "is the run config this command reads"},
           {run.string() + " --out " + (run / "latest").string(), "is the checkpoint pointer in the run folder"}}) {
    CAPTURE(c.args);
    const auto r = run_rpb("plot " + c.args);
    CHECK(r.code == 2);
    CHECK(contains(r.out, c.message));
  }
  CHECK(file_text(json) == json_text);
  CHECK(file_text(csv) == csv_text);
  CHECK(!fs::exists(sweep / "results.pdf"));
  CHECK(fs::is_character_file(dev));
  const ScopedEnv missing("RPB_PLOT_STUB_EXIT", "3");
  const auto r = run_rpb("plot " + sweep.string() + " --out " + dir.file("s.pdf"));
  CHECK(r.code == 1);
  CHECK(contains(r.out, "matplotlib is missing: install it with `apt-get install python3-matplotlib`"));
  CHECK(!fs::exists(dir.file("s.pdf")));
  CHECK(no_temp_files(dir.path));
}

TEST_CASE("sweep figures: sweep.figures picks the formats, without matplotlib the sweep warns and its results stand") {
  TempDir dir("plot_sweep_figures");
  const ScopedEnv stub("RPB_PYTHON_DIR", rpb::testing::kPlotStubDir);
  const ScopedEnv log("RPB_PLOT_STUB_LOG", dir.file("request.json").c_str());
  const fs::path sweep = sweep_folder(dir);
  CHECK(rpb::draw_sweep_figures(sweep.string(), {"png", "svg"}));
  CHECK(fs::exists(sweep / "results.png"));
  CHECK(fs::exists(sweep / "results.svg"));
  CHECK(!fs::exists(sweep / "results.pdf"));
  const ordered_json q = logged(dir);
  CHECK(q.at("sweep").at("results") == ordered_json({fs::absolute(sweep / "results.json").string()}));
  CHECK(q.at("sweep").at("tasks").empty());
  CHECK(q.at("outputs").size() == 2);
  CHECK(!rpb::draw_sweep_figures(sweep.string(), {}));
  {
    const ScopedEnv missing("RPB_PLOT_STUB_EXIT", "3");
    fs::remove(sweep / "results.png");
    CHECK(!rpb::draw_sweep_figures(sweep.string(), {"png"}));  // a warning, no throw
    CHECK(!fs::exists(sweep / "results.png"));
  }
  const std::string base = "[run]\nlength = 4\neval_multipliers = [1]\n[sweep]\n";
  CHECK(rpb::parse_config(base, "s.toml").sweep.figures == std::vector<std::string>{"svg", "pdf"});
  CHECK(rpb::parse_config(base + "figures = false\n", "s.toml").sweep.figures.empty());
  CHECK(rpb::parse_config(base + "figures = true\n", "s.toml").sweep.figures == std::vector<std::string>{"svg", "pdf"});
  CHECK(rpb::parse_config(base + "figures = [\"png\"]\n", "s.toml").sweep.figures == std::vector<std::string>{"png"});
  CHECK(contains(rpb::testing::error_of([&] { rpb::parse_config(base + "figures = [\"eps\"]\n", "s.toml"); }),
                 "sweep.figures"));
}

TEST_CASE("temp files of killed plots and result writes: the next write of the same file removes them, and only them") {
  TempDir dir("plot_dead_temps");
  const ScopedEnv stub("RPB_PYTHON_DIR", rpb::testing::kPlotStubDir);
  const fs::path sweep = sweep_folder(dir);
  const std::string dead = std::to_string(rpb::testing::dead_pid());
  // What a kill -9 leaves: each write's temp file under its process's pid (one a link, never followed).
  const std::vector<std::string> left = {".results.csv.tmp." + dead, ".results.json.tmp." + dead,
                                         ".results.tex.tmp." + dead, ".results.svg.tmp." + dead,
                                         ".results.svg.tmp.99999999999"};  // past any pid
  for (const std::string& name : left) std::ofstream(sweep / name) << "partial";
  std::ofstream(dir.path / "precious") << "precious";
  fs::remove(sweep / left[1]);
  fs::create_symlink(dir.path / "precious", sweep / left[1]);
  // Kept: a live process's (pid 1), a folder, another file's, look-alikes.
  const std::vector<std::string> kept = {".results.svg.tmp.1", ".results.json.tmp.1x", "results.svg.tmp." + dead,
                                         ".notes.tmp." + dead, ".results.svg.tmp.", ".results.csv.tmp.0" + dead};
  for (const std::string& name : kept) std::ofstream(sweep / name) << "keep";
  fs::create_directory(sweep / (".results.pdf.tmp." + dead));
  sweep_folder(dir);  // the results written again
  CHECK(rpb::draw_sweep_figures(sweep.string(), {"svg"}));
  for (const std::string& name : left) CHECK_MESSAGE(!fs::exists(fs::symlink_status(sweep / name)), name);
  for (const std::string& name : kept) CHECK_MESSAGE(file_text(sweep / name) == "keep", name);
  CHECK(fs::is_directory(sweep / (".results.pdf.tmp." + dead)));
  CHECK(file_text(dir.path / "precious") == "precious");
  CHECK(fs::exists(sweep / "results.svg"));
}

TEST_CASE("a killed rpb plot leaves no request file, and the next plot of its output removes the figure's temp file") {
  TempDir dir("plot_killed");
  const ScopedEnv stub("RPB_PYTHON_DIR", rpb::testing::kPlotStubDir);
  const fs::path run = run_folder(dir, "r", kHeader);
  // A module that starts its figure (the temp file, as the real one writes it) and hangs until killed.
  const std::string pid_file = dir.file("module.pid");
  const std::string hang = dir.file("hang.py");
  std::ofstream(hang) << "#!/usr/bin/python3\nimport json, os, sys, time\nreq = json.load(sys.stdin)\n"
                         "open(req['outputs'][0]['path'], 'w').write('partial')\n"
                         "open('" << pid_file << "', 'w').write(str(os.getpid()))\ntime.sleep(60)\n";
  fs::permissions(hang, fs::perms::owner_all);
  const auto before = plot_request_files();
  pid_t rpb = 0;
  {
    const ScopedEnv hanging("RPB_PYTHON", hang.c_str());
    rpb = rpb::testing::spawn_rpb({"plot", run.string(), "--out", dir.file("f.svg")});
  }
  for (int i = 0; i < 500 && file_text(pid_file).empty(); ++i) ::usleep(20000);
  REQUIRE(!file_text(pid_file).empty());
  ::kill(rpb, SIGKILL);
  int status = 0;
  ::waitpid(rpb, &status, 0);
  ::kill(std::stoi(file_text(pid_file)), SIGKILL);
  const fs::path temp = dir.path / (".f.svg.tmp." + std::to_string(rpb));
  CHECK(file_text(temp) == "partial");  // what the kill left
  CHECK(plot_request_files() == before);  // the request was never a file
  CHECK(run_rpb("plot " + run.string() + " --out " + dir.file("f.svg")).code == 0);
  CHECK(!fs::exists(temp));
  CHECK(fs::exists(dir.file("f.svg")));
}

TEST_CASE("plot runner: the request goes to the module on its standard input, never into a temp file") {
  TempDir dir("plot_request_input");
  const ScopedEnv stub("RPB_PYTHON_DIR", rpb::testing::kPlotStubDir);
  const ScopedEnv log("RPB_PLOT_STUB_LOG", dir.file("request.json").c_str());
  const auto before = plot_request_files();
  const std::string csv = (run_folder(dir, "r", kHeader) / "metrics.csv").string();
  const rpb::OutputOptions rules{"--out", {}};
  rpb::draw_figures(rpb::plot_request("curves", rpb::curves_block({{"r", "t5", csv, "r"}}, "step", std::nullopt)),
                    {{dir.file("f.svg"), &rules}});
  const ordered_json q = logged(dir);
  CHECK(q.at("outputs").at(0).at("direct") == true);
  CHECK(q.at("outputs").at(0).at("name") == fs::absolute(dir.file("f.svg")).string());
  CHECK(plot_request_files() == before);
}

TEST_CASE("plot fixtures: tests/data/plot/results_grid.json has rows as rpb writes them, named as a grid names them") {
  TempDir dir("plot_fixture");
  const std::string path = std::string(RPB_SOURCE_DIR) + "/tests/data/plot/results_grid.json";
  const rpb::SweepResults fixture = rpb::read_sweep_results(path);  // the current format, every key it holds
  CHECK(fixture.format == rpb::kSweepResultsFormat);
  // Each row has exactly the keys of a row rpb writes.
  const ordered_json written = ordered_json::parse(file_text(sweep_folder(dir) / "results.json"));
  std::vector<std::string> keys;
  for (const auto& item : written.at("rows")[0].items()) keys.push_back(item.key());
  const ordered_json committed = ordered_json::parse(file_text(path));  // named: the loop reads into it
  for (const auto& row : committed.at("rows")) {
    std::vector<std::string> have;
    for (const auto& item : row.items()) have.push_back(item.key());
    CHECK(have == keys);
  }
  // The grid points are the methods a [[sweep.grid]] of the same values makes: names, schemes and settings.
  const rpb::RunConfig cfg = rpb::parse_config(
      "[run]\nlength = 16\neval_multipliers = [1, 4]\n[[sweep.grid]]\nmethods = [\"t5\"]\nmax_distance = [64, 128]\n"
      "\"optim.lr\" = [0.001, 0.003, 0.01]\n",
      "grid.toml");
  REQUIRE(cfg.sweep.methods.size() + 1 == fixture.rows.size());
  for (std::size_t i = 0; i < cfg.sweep.methods.size(); ++i) {
    const rpb::SweepMethod& m = cfg.sweep.methods[i];
    const rpb::SweepResultsRow& row = fixture.rows[i + 1];
    CHECK(row.method == m.name());
    CHECK(row.scheme == m.scheme);
    REQUIRE(row.settings.size() == m.settings.size());
    for (std::size_t k = 0; k < m.settings.size(); ++k) {
      bool found = false;
      for (const rpb::ConfigSetting& s : row.settings)
        found = found || (s.key == m.settings[k].key && s.text == m.settings[k].text);
      CHECK_MESSAGE(found, m.name() << " " << m.settings[k].key);
    }
  }
}
