// rpb/cli/plot.cpp: `rpb plot` (see plot.h).
#include "cli/plot.h"

#include <spdlog/fmt/fmt.h>
#include <sys/stat.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <iostream>
#include <memory>
#include <optional>
#include <set>

#include "cli/plot_request.h"
#include "cli/python_runner.h"
#include "core/error.h"
#include "core/text.h"
#include "nn/position.h"
#include "train/config/config.h"
#include "train/io/input_file.h"
#include "train/io/json_text.h"
#include "train/run/output_file.h"
#include "train/run/run_folder.h"
#include "train/sweep/results_json.h"

namespace fs = std::filesystem;

namespace rpb {

namespace {

constexpr std::size_t kMaxMetricsBytes = std::size_t(256) << 20;  // a metrics.csv read for its header
constexpr std::size_t kMaxConfigBytes = std::size_t(1) << 20;     // a run folder's config.toml

InputOptions input_options(const std::string& what, std::size_t max_bytes) {
  InputOptions o;
  o.what = what;
  o.max_bytes = max_bytes;
  return o;
}

// One PATH: a run (its metrics.csv) or a sweep (its results.json).
struct Input {
  bool run = false;
  std::string given;  // as on the command line
  std::string file;   // metrics.csv or results.json, absolute
  std::string folder; // the run folder (runs)
};

bool has_entry(const fs::path& p) {
  struct stat st{};
  return ::lstat(p.c_str(), &st) == 0;
}

Input classify(const std::string& path) {
  struct stat st{};
  if (::stat(path.c_str(), &st) != 0) throw Error("plot: " + printable(path) + ": no such file or folder");
  const fs::path p = fs::absolute(path);
  if (S_ISDIR(st.st_mode)) {
    if (has_entry(p / kResultsJsonName)) return {false, path, (p / kResultsJsonName).string(), ""};
    if (has_entry(p / kMetricsFileName)) return {true, path, (p / kMetricsFileName).string(), p.string()};
    throw Error("plot: " + printable(path) + ": a folder with neither " + kResultsJsonName + " (a sweep folder) nor " +
                kMetricsFileName + " (a run folder)");
  }
  if (p.filename() == kMetricsFileName) return {true, path, p.string(), p.parent_path().string()};
  if (p.extension() == ".json") return {false, path, p.string(), ""};
  throw Error("plot: " + printable(path) + ": expected a run folder, a sweep folder or a results.json");
}

template <typename T>
[[noreturn]] void unknown_value(const std::string& flag, const T& value, const std::set<T>& known) {
  std::vector<std::string> list;
  for (const T& k : known) list.push_back(fmt::format("{}", k));
  throw UsageError("plot " + flag + " " + printable(fmt::format("{}", value)) + ": not in the results (they hold: " +
                   (list.empty() ? std::string("none") : join(list, ", ")) + ")");
}

// What the results hold, for checking the filters.
struct Held {
  std::set<std::string> tasks, methods, metrics, against{"length"};
  std::set<int64_t> lengths;
};

void note_row(const Json& row, Held& held) {
  for (const SweepMetric& m : sweep_metrics())
    if (row_holds(row, m)) held.metrics.insert(m.key);
  if (const auto it = row.find("settings"); it != row.end() && it->is_object())
    for (const auto& item : it->items()) held.against.insert(item.key());
  if (row.contains("position_loss")) held.against.insert("position");  // the per-token loss by position
}

// Reads every results.json (as rpb reads results: a regular file, within its bound, of a known format) and checks
// the filters against what they hold.
void check_sweeps(const std::vector<Input>& inputs, const PlotArgs& a) {
  Held held;
  for (const Input& in : inputs) {
    const std::string what = "sweep results";
    const Json json = read_json_file(in.file, what, kMaxSweepResultsBytes);
    const SweepResults r = sweep_results_from_json(json, what + " " + in.file);
    for (const SweepResultsRow& row : r.rows) held.tasks.insert(row.task), held.methods.insert(row.method);
    for (const int64_t m : r.multipliers) held.lengths.insert(m * r.train_length);
    for (const Json& row : json.at("rows")) note_row(row, held);
  }
  for (const std::string& t : a.tasks) if (!held.tasks.count(t)) unknown_value("--tasks", t, held.tasks);
  for (const std::string& m : a.methods) if (!held.methods.count(m)) unknown_value("--methods", m, held.methods);
  for (const int64_t l : a.lengths) if (!held.lengths.count(l)) unknown_value("--lengths", l, held.lengths);
  for (const std::string& m : a.metrics) if (!held.metrics.count(m)) unknown_value("--metric", m, held.metrics);
  if (!a.against.empty() && !held.against.count(a.against)) unknown_value("--against", a.against, held.against);
  if (a.against == "position" && !a.metrics.empty())
    throw UsageError("plot --metric with --against position: that figure draws the per-token loss by position");
}

// How the sweep folder's results.json lists a run: the row of the run's own method (the one its folder is named
// after: the method it was trained as), and whether any row lists it.
struct Listing {
  std::optional<SweepResultsRow> own;
  bool listed = false;
};

// How the run in `dir` with `seed` is listed by its sweep folder's results.json (<sweep>/<task>/<method folder>/
// seed<k>, the layout run_sweep gives it): rows whose "runs" name the run's folder (as the sweep named it: its path
// below the sweep folder is the recorded folder's tail). An evaluation-only method shares its scheme's folder
// ("t5@untrained=nearest", "rope@rope_scaling=yarn" evaluate the runs of "t5", "rope") and is never the run's own:
// the run was trained as the method its folder names, whichever methods the folder's last sweep listed. Nothing
// for a run trained alone, or when that results.json is missing or unreadable.
Listing listing_of(const fs::path& dir, uint64_t seed) {
  const fs::path sweep = dir.parent_path().parent_path().parent_path();
  const fs::path file = sweep / kResultsJsonName;
  if (sweep.empty() || !has_entry(file)) return {};
  SweepResults results;
  try {
    results = read_sweep_results(file.string());
  } catch (const Error&) {
    return {};
  }
  const auto parts = [](const fs::path& p) { return std::vector<fs::path>(p.begin(), p.end()); };
  const std::vector<fs::path> below = parts(dir.lexically_relative(sweep));
  const std::string method_folder = dir.parent_path().filename().string();
  Listing found;
  for (const SweepResultsRow& row : results.rows)
    for (std::size_t s = 0; s < row.runs.size() && s < results.seeds.size(); ++s) {
      const std::vector<fs::path> recorded = parts(row.runs[s].folder);
      if (results.seeds[s] == seed && recorded.size() >= below.size() &&
          std::equal(below.begin(), below.end(), recorded.end() - std::ptrdiff_t(below.size()))) {
        found.listed = true;
        if (row.method == method_folder) found.own = row;
      }
    }
  return found;
}

// The run in `folder` as its curves show it, from its config.toml (read the typed way): its scheme; for a sweep's
// run (listed by its sweep's results.json, listing_of) labelled "<the method it was trained as>/seed0", in the
// colour of that method's row (its scheme's where the sweep has no such row: only an evaluation-only method of it),
// else labelled by its folder's name in its scheme's own colour.
CurveRun curve_run(const std::string& folder, const std::string& metrics_csv) {
  const std::string path = (fs::path(folder) / kConfigFileName).string();
  RunConfig config;
  try {
    config = parse_stored_config(read_input_file(path, input_options("run config", kMaxConfigBytes)), path);
  } catch (const Error& e) {
    throw Error("plot: cannot read the run's config (the scheme its curves are drawn in): " + e.message());
  }
  fs::path dir = fs::path(folder).lexically_normal();
  if (dir.filename().empty()) dir = dir.parent_path();  // "run/"
  const std::string scheme = config.model.position.scheme;
  const Listing listing = listing_of(dir, config.seed);
  const std::string trained_as = dir.parent_path().filename().string();
  if (listing.own) return {trained_as + "/" + dir.filename().string(), scheme, metrics_csv, listing.own->method};
  if (listing.listed) return {trained_as + "/" + dir.filename().string(), scheme, metrics_csv, scheme};
  return {dir.filename().string(), scheme, metrics_csv, scheme};
}

// Each run's curves: its metrics.csv checked (a regular file starting with rpb's header, with a tokens column when
// --x tokens), labelled by its folder's name ("<method>/seed0" for a sweep's run), or by its path when labels repeat.
std::vector<CurveRun> read_runs(const std::vector<Input>& inputs, const std::string& x) {
  std::vector<CurveRun> runs;
  for (const Input& in : inputs) {
    const std::string text = read_input_file(in.file, input_options("metrics", kMaxMetricsBytes));
    const std::string header = text.substr(0, text.find('\n'));
    if (header.rfind("step,train_loss", 0) != 0)
      throw Error("metrics " + printable(in.file) + ": expected rpb's metrics.csv header (step,train_loss,...), " +
                  "found \"" + printable(header, 80) + "\"");
    if (x == "tokens" && (header + ",").find(",tokens,") == std::string::npos)
      throw Error("metrics " + printable(in.file) + ": no tokens column (a run trained before metrics.csv had one): "
                  "draw it against the step (--x step)");
    runs.push_back(curve_run(in.folder, in.file));
  }
  for (std::size_t i = 0; i < runs.size(); ++i)
    for (std::size_t j = 0; j < runs.size(); ++j)
      if (i != j && runs[i].label == runs[j].label) runs[i].label = inputs[i].given;
  return runs;
}

YLimits parse_ylim(const std::string& text) {
  if (text.empty()) return std::nullopt;
  const std::size_t comma = text.find(',');
  const auto fail = [&] {
    throw UsageError("plot --ylim " + printable(text) + ": expected LO,HI, two finite numbers with LO < HI and HI - LO "
                     "between 1e-300 and 1e300 (what an axis can be drawn over)");
  };
  if (comma == std::string::npos) fail();
  double lo = 0, hi = 0;
  try {
    std::size_t used_lo = 0, used_hi = 0;
    lo = std::stod(text.substr(0, comma), &used_lo);
    hi = std::stod(text.substr(comma + 1), &used_hi);
    if (used_lo != comma || used_hi != text.size() - comma - 1) fail();
  } catch (const std::logic_error&) {
    fail();
  }
  // The span bounds keep the axis's ticks and padding finite (a span of -1e308 to 1e308 overflows a double).
  if (!std::isfinite(lo) || !std::isfinite(hi) || !(lo < hi) || !(hi - lo >= 1e-300 && hi - lo <= 1e300)) fail();
  return std::make_pair(lo, hi);
}

// The options that only one kind of figure reads, refused for the other.
void check_kind_options(const PlotArgs& a, bool runs) {
  const auto refuse = [&](const char* flag) {
    throw UsageError(std::string("plot ") + flag + (runs ? " applies to sweeps (results.json), not to run folders"
                                                         : " applies to run folders (curves), not to sweeps"));
  };
  if (runs) {
    if (!a.tasks.empty()) refuse("--tasks");
    if (!a.methods.empty()) refuse("--methods");
    if (!a.lengths.empty()) refuse("--lengths");
    if (!a.metrics.empty()) refuse("--metric");
    if (!a.against.empty()) refuse("--against");
  } else if (!a.x.empty()) {
    refuse("--x");
  }
}

}  // namespace

int run_plot(const PlotArgs& a, std::ostream& out_stream) {
  RPB_CHECK(!a.paths.empty(), "plot", "expected a run folder, a sweep folder or a results.json");
  std::vector<Input> inputs;
  for (const std::string& p : a.paths) inputs.push_back(classify(p));
  const bool runs = inputs.front().run;
  for (const Input& in : inputs)
    if (in.run != runs)
      throw UsageError("plot: " + printable(inputs.front().given) + " and " + printable(in.given) +
                       " mix a run folder (training curves) with a sweep (its results): draw them with two commands");
  check_kind_options(a, runs);
  const YLimits ylim = parse_ylim(a.ylim);
  const std::string out = a.out.empty() ? (runs ? "curves.pdf" : "results.pdf") : a.out;
  OutputOptions rules{"--out", {}};
  for (const Input& in : inputs) {
    rules.inputs.push_back({runs ? "metrics file" : "sweep results", in.file});
    if (runs) rules.inputs.push_back({"run config", (fs::path(in.folder) / kConfigFileName).string()});
  }
  // --request without --out writes nothing: no output to check (python/rpb_plot's API asks so for a figure it keeps).
  const bool writes = !(a.request && a.out.empty());
  if (writes) check_output_file(out, rules);  // before any input is read: a refusal costs nothing
  const std::string format = writes ? figure_format(out, "--out") : "";
  nlohmann::ordered_json request;
  if (runs) {
    const std::string x = a.x.empty() ? "step" : a.x;
    request = plot_request("curves", curves_block(read_runs(inputs, x), x, ylim));
  } else {
    check_sweeps(inputs, a);
    SweepFigure f{{}, a.tasks, a.methods, a.lengths, a.metrics, ylim, a.against.empty() ? "length" : a.against};
    for (const Input& in : inputs) f.results.push_back(in.file);
    request = plot_request("sweep", sweep_block(f));
  }
  if (a.request) {  // python/rpb_plot's plot_sweep and plot_curves draw it
    request["outputs"] = writes ? nlohmann::ordered_json::array({{{"path", fs::absolute(out).string()}, {"format", format}}})
                                : nlohmann::ordered_json::array();
    out_stream << request.dump() << "\n";
    return 0;
  }
  try {
    draw_figures(std::move(request), {{out, &rules}});
  } catch (const PlotUnavailable& e) {
    throw Error("plot: " + e.message());  // the user asked for the figure: exit 1, with the install hint
  }
  out_stream << "figure: " << printable(out) << "\n";
  return 0;
}

CommandRunner add_plot_command(CLI::App& cmd) {
  auto a = std::make_shared<PlotArgs>();
  cmd.add_option("path", a->paths,
                 "run folders (their metrics.csv: training curves), or sweep folders / results.json files (the "
                 "sweep's figure)")
      ->required();
  cmd.add_option("--out", a->out,
                 "the figure: .pdf, .png or .svg (default curves.pdf or results.pdf here); a new or replaced regular "
                 "file, never a link, a device, an input or a file rpb manages in a run or sweep folder");
  // Each list flag takes one comma-separated word (and may repeat), so a PATH after it stays a PATH.
  cmd.add_option("--tasks", a->tasks, "sweeps: the tasks to draw (comma-separated; default all)")
      ->delimiter(',')
      ->allow_extra_args(false);
  cmd.add_option("--methods", a->methods,
                 "sweeps: the methods to draw, as results.json names them (t5@untrained=nearest)")
      ->delimiter(',')
      ->allow_extra_args(false);
  cmd.add_option("--lengths", a->lengths, "sweeps: the evaluation lengths to draw, in tokens (comma-separated)")
      ->delimiter(',')
      ->allow_extra_args(false);
  std::vector<std::string> metrics;
  for (const SweepMetric& m : sweep_metrics()) metrics.push_back(m.key);
  cmd.add_option("--metric", a->metrics,
                 "sweeps: the metrics to draw, of " + join(metrics, ", ") + " (default every one the results hold)")
      ->delimiter(',')
      ->allow_extra_args(false)
      ->check(CLI::IsMember(metrics));
  cmd.add_option("--ylim", a->ylim, "the y axis limits LO,HI");
  cmd.add_option("--x", a->x, "curves: against step (default) or tokens (metrics.csv's tokens column)")
      ->check(CLI::IsMember(std::vector<std::string>{"step", "tokens"}));
  cmd.add_option("--against", a->against,
                 "sweeps: draw each metric against length (default) or a swept setting of the results (optim.lr); "
                 "position: the per-token loss by position at each task's longest length measured");
  cmd.add_flag("--request", a->request,
               "print the figure's plot request (JSON, for python/rpb_plot) on one line instead of drawing it");
  return [a] { return run_plot(*a, std::cout); };
}

}  // namespace rpb
