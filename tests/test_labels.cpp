// Labels: what a sweep's results call its methods and tasks (train/sweep/labels.h), made in one place ([sweep]
// labels and task_labels, else defaults naming every evaluation setting in force) and escaped for each output.
#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "core/error.h"
#include "test_util.h"
#include "train/config/config.h"
#include "train/sweep/labels.h"
#include "train/sweep/results.h"
#include "train/sweep/results_json.h"
#include "train/sweep/results_tex.h"

namespace labels_test {

using namespace rpb;
using rpb::testing::contains;
using rpb::testing::file_text;
using rpb::testing::run_rpb;
using rpb::testing::TempDir;

std::string error_of(const std::string& text) {
  try {
    parse_config(text, "l.toml");
  } catch (const Error& e) {
    return e.message();
  }
  return "";
}

// The label of method `i` of the sweep `text` as its results name it.
std::string label_in(const std::string& text, std::size_t i) {
  const RunConfig base = parse_config(text, "l.toml");
  const SweepMethod& m = base.sweep.methods.at(i);
  return method_label(base, m, run_config(base, {"markov", m, 0, "out", "seed0"}));
}

const std::string kLengths = "[run]\neval_multipliers = [1, 2, 4, 8, 16]\n";

TEST_CASE("labels: a RoPE scaling is named with its factor in force, defaulted ones included") {
  const std::string sweep = kLengths + "[sweep]\nmethods = [\"rope\", \"rope@rope_scaling=yarn\", "
                                       "\"rope@rope_scaling=linear@rope_factor=4\", \"rope@rope_scaling=none\", "
                                       "\"xpos@blockwise=true\", \"t5@untrained=nearest\", \"alibi@optim.lr=3e-4\"]\n";
  CHECK(label_in(sweep, 0) == "RoPE");
  CHECK(label_in(sweep, 1) == "RoPE + YaRN (s = 16)");  // the factor the evaluation uses: the largest multiplier
  CHECK(label_in(sweep, 2) == "RoPE + PI (s = 4)");
  CHECK(label_in(sweep, 3) == "RoPE, rope_scaling none");
  CHECK(label_in(sweep, 4) == "xPos + blockwise");
  CHECK(label_in(sweep, 5) == "T5 bias, untrained nearest");
  CHECK(label_in(sweep, 6) == "ALiBi, optim.lr 3e-4");
  // A setting the sweep's config makes for every row is in force too: named where the scheme reads it.
  const std::string all = kLengths + "[position]\nscheme = \"rope\"\nrope_scaling = \"ntk\"\n[sweep]\n"
                                     "methods = [\"rope\", \"rope@optim.lr=3e-4\", \"rope@rope_factor=2\"]\n";
  CHECK(label_in(all, 0) == "RoPE + NTK (s = 16)");
  CHECK(label_in(all, 0) == label_in(kLengths + "[sweep]\nmethods = [\"rope@rope_scaling=ntk\"]\n", 0));
  CHECK(label_in(all, 1) == "RoPE + NTK (s = 16), optim.lr 3e-4");
  CHECK(label_in(all, 2) == "RoPE + NTK (s = 2)");
}

TEST_CASE("labels: sweep.labels and sweep.task_labels name methods and tasks, a bad one is refused naming it") {
  const std::string sweep = kLengths + "[sweep]\nmethods = [\"rope\", \"rope@rope_scaling=yarn\"]\n"
                                       "labels = { \"rope@rope_scaling=yarn\" = \"RoPE + YaRN\" }\n"
                                       "task_labels = { markov = \"Markov chain\" }\n";
  CHECK(label_in(sweep, 0) == "RoPE");
  CHECK(label_in(sweep, 1) == "RoPE + YaRN");
  CHECK(parse_config(sweep, "l.toml").sweep.task_labels.at("markov") == "Markov chain");
  CHECK(task_label({}, "passkey_text") == "passkey text");
  CHECK(task_label({{"text", "KJV"}}, "text") == "KJV");
  const std::string methods = "[sweep]\nmethods = [\"rope\"]\n";
  CHECK(contains(error_of(methods + "labels = { alibi = \"A\" }\n"),
                 "sweep.labels = a table: \"alibi\": expected a method of the sweep (rope)"));
  CHECK(contains(error_of(methods + "labels = { rope = \"\" }\n"), "\"rope\": expected 1 to 200 bytes of printable"));
  CHECK(contains(error_of(methods + "labels = { rope = \"a\\u0007b\" }\n"), "found \"a\\x07b\""));
  CHECK(contains(error_of(methods + "labels = { rope = 3 }\n"), "\"rope\": expected a string, found an integer"));
  CHECK(contains(error_of(methods + "task_labels = { lag = \"L\" }\n"), "expected a task of the sweep (markov)"));
  CHECK(contains(error_of(methods + "labels = 3\n"), ":3:10: labels = 3: expected a table [labels], found an integer"));
}

TEST_CASE("labels: escaped once per output, so that each prints the text as it is") {
  CHECK(escape_label("a|b\\c $x$", LabelFormat::markdown) == "a\\|b\\\\c $x$");
  CHECK(escape_label("a|b_c $x$", LabelFormat::latex) == latex_escape("a|b_c $x$"));
  CHECK(escape_label("a|b_c $x$", LabelFormat::text) == "a|b_c $x$");
}

TEST_CASE("labels: an rpb-results-6 file's labels are made again as they are made now") {
  TempDir dir("labels_old");
  SweepResult r;
  r.name = "s";
  r.train_length = 16;
  r.multipliers = {1, 4};
  r.seeds = {0};
  MethodResult m;
  m.task = "markov";
  m.method = {"rope@rope_scaling=yarn", "rope", {{"position.rope_scaling", {std::string("yarn")}, "yarn"}}};
  m.label = "custom | one";
  m.ppl = m.nll = {{2.0, 3.0}};
  m.tokens = {{64, 64}};
  m.lengths = {16, 64};
  r.rows = {m};
  r.task_labels = {{"markov", "Markov"}};
  write_results(r, dir.path.string());
  const std::string path = (dir.path / "results.json").string();
  const SweepResults now = read_sweep_results(path);
  CHECK(now.rows[0].label == "custom | one");
  CHECK(now.task_labels.at("markov") == "Markov");
  CHECK(contains(format_table(now), "| custom \\| one | 0 | 2.00 | 3.00 |"));
  CHECK(contains(format_table(now), "Task: Markov (train length 16"));
  CHECK(contains(results_tex(now), "\\caption{Markov (trained at 16 tokens)"));
  CHECK(contains(file_text(dir.path / "results.csv"), ",custom | one,,\n"));
  Json old = Json::parse(file_text(dir.path / "results.json"));
  old["format"] = "rpb-results-6";
  old.erase("task_labels");
  std::ofstream(path, std::ios::trunc) << old.dump();
  const SweepResults before = read_sweep_results(path);
  CHECK(before.rows[0].label == "RoPE + YaRN (s = 4)");  // every -6 label was a default one: made again
  CHECK(contains(format_table(before), "Task: markov (train length 16"));
}

TEST_CASE("labels: a sweep's table, results and figures request use [sweep] labels") {
  TempDir tmp("labels_sweep");
  const std::filesystem::path cfg = tmp.path / "sweep.toml";
  std::ofstream(cfg) << "[run]\nname = \"sw\"\nout_dir = \"" << tmp.path.string()
                     << "\"\nsteps = 2\nbatch = 2\nlength = 8\neval_multipliers = [1, 2]\neval_tokens = 32\n"
                        "[model]\nd_model = 8\nheads = 1\nlayers = 1\nd_ff = 16\n[task]\nkind = \"markov\"\n"
                        "vocab = 5\ntrain_tokens = 512\neval_tokens = 256\n[sweep]\nmethods = [\"rope\", "
                        "\"rope@rope_scaling=yarn\"]\nfigures = false\n"
                        "labels = { rope = \"RoPE (plain)\", \"rope@rope_scaling=yarn\" = \"RoPE, YaRN\" }\n"
                        "task_labels = { markov = \"order-1 chain\" }\n";
  const auto ran = run_rpb("extrapolate " + cfg.string());
  REQUIRE_MESSAGE(ran.code == 0, ran.out);
  CHECK(contains(ran.out, "| RoPE (plain) | 0 |"));
  CHECK(contains(ran.out, "| RoPE, YaRN | 0 |"));  // a key with '@' and '=': quoted in the stored config
  CHECK(contains(ran.out, "Task: order-1 chain (train length 8"));
  const SweepResults r = read_sweep_results((tmp.path / "sw" / "results.json").string());
  CHECK(r.rows[0].label == "RoPE (plain)");
  CHECK(r.task_labels.at("markov") == "order-1 chain");
  const std::string table = run_rpb("results " + (tmp.path / "sw" / "results.json").string()).out;
  CHECK(contains(table, "| RoPE (plain) | 0 |"));
  CHECK(contains(ran.out, table + "\nResults: "));  // what extrapolate printed
  // The figures' request carries them, so the module draws what the tables print.
  const auto req = run_rpb("plot " + (tmp.path / "sw").string() + " --out " + (tmp.path / "f.svg").string() +
                           " --request");
  REQUIRE_MESSAGE(req.code == 0, req.out);
  const Json labels = Json::parse(req.out.substr(req.out.find('{'))).at("sweep").at("labels");
  CHECK(labels == Json::parse(R"J([{"rows": ["RoPE (plain)", "RoPE, YaRN"],
                                   "tasks": {"markov": "order-1 chain"}}])J"));
}

}  // namespace labels_test
