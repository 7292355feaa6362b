// rpb/cli/results_svg.cpp: results.svg (see results_svg.h), drawn with cli/svg.h.
#include "cli/results_svg.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <iomanip>
#include <sstream>

#include "cli/svg.h"
#include "train/data/task.h"
#include "train/io/atomic_file.h"
#include "train/run/run_folder.h"

namespace rpb {

namespace {

constexpr double kLeft = 90, kPlotW = 540, kPlotH = 340, kTop = 56, kBottom = 70, kLegendW = 330;

// The geometry of one task's panel.
struct Panel {
  svg::Axis x, y;
  double top;
};

// What a picture plots against the evaluation length: the values of a row at length j over the seeds.
struct Measure {
  std::vector<std::optional<double>> (MethodResult::*column)(std::size_t) const;
  const char* title;  // "Perplexity"
  const char* axis;   // "perplexity"
  const char* na;     // the legend entry of a hollow marker
  bool optimum;       // draw the row's optimal perplexity
};

const Measure kPerplexity{&MethodResult::column, "Perplexity", "perplexity", "n/a: longer than the scheme's positions",
                          true};
const Measure kDistance{&MethodResult::distance_column, "Mean attention distance",
                        "mean attention distance (mean over layers and heads)",
                        "n/a: cannot run there, or not measured", false};

std::string fixed(double v, int digits) {
  std::ostringstream os;
  os << std::fixed << std::setprecision(digits) << v;
  return os.str();
}

// The y range of a task: every mean ± std and the optimum, with a little room.
std::pair<double, double> y_range(const SweepResult& r, const std::string& task, const Measure& measure) {
  double lo = INFINITY, hi = -INFINITY;
  for (const MethodResult& m : r.rows) {
    if (m.task != task) continue;
    for (std::size_t j = 0; j < r.multipliers.size(); ++j)
      if (const auto ms = mean_std((m.*measure.column)(j))) {
        const double low = ms->first - ms->second > 0 ? ms->first - ms->second : ms->first;
        lo = std::min(lo, low), hi = std::max(hi, ms->first + ms->second);
      }
    if (measure.optimum && m.optimal_ppl) lo = std::min(lo, *m.optimal_ppl), hi = std::max(hi, *m.optimal_ppl);
  }
  if (!std::isfinite(lo) || !(lo > 0)) return {1, 10};
  return {lo / 1.04, std::max(hi * 1.04, lo * 1.25)};
}

// The band, line and markers of one method; returns its n/a multipliers.
std::vector<int64_t> draw_method(svg::Document& d, const SweepResult& r, const MethodResult& m, const Panel& p,
                                 const Measure& measure, const char* c) {
  std::vector<int64_t> na;
  std::vector<double> xs, ys, lo, hi;
  auto flush = [&] {
    if (r.seeds.size() > 1 && xs.size() >= 2) {
      std::vector<double> px(xs), py(hi);
      px.insert(px.end(), xs.rbegin(), xs.rend());
      py.insert(py.end(), lo.rbegin(), lo.rend());
      d.polygon(px, py, c, 0.18);
    }
    d.polyline(xs, ys, c, 2);
    if (xs.size() == 1 && r.seeds.size() > 1) {  // a lone point (learned positions at 1x only): an error bar
      d.line(xs[0], lo[0], xs[0], hi[0], c, 2);
      for (const double y : {lo[0], hi[0]}) d.line(xs[0] - 6, y, xs[0] + 6, y, c, 2);
    }
    for (std::size_t i = 0; i < xs.size(); ++i) d.circle(xs[i], ys[i], xs.size() == 1 ? 6 : 4.5, c, "white");
    xs.clear(), ys.clear(), lo.clear(), hi.clear();
  };
  for (std::size_t j = 0; j < r.multipliers.size(); ++j) {
    const auto ms = mean_std((m.*measure.column)(j));
    const double x = p.x(static_cast<double>(r.multipliers[j]));
    if (!ms) {
      flush();
      na.push_back(r.multipliers[j]);
      d.circle(x, p.y.p0 - 6, 4.5, "white", c);  // hollow: no value at this length
      continue;
    }
    xs.push_back(x), ys.push_back(p.y(ms->first));
    hi.push_back(p.y(ms->first + ms->second));
    lo.push_back(p.y(ms->first - ms->second > p.y.lo ? ms->first - ms->second : p.y.lo));
  }
  flush();
  return na;
}

// The x axis: a tick per multiplier, "2x" over the length it stands for.
void x_axis(svg::Document& d, const SweepResult& r, const Panel& p, bool grid) {
  for (const int64_t mult : r.multipliers) {
    const double x = p.x(static_cast<double>(mult));
    d.line(x, p.top, x, p.y.p0, "#eeeeee");
    d.line(x, p.y.p0, x, p.y.p0 + 5, "#333");
    d.text(x, p.y.p0 + 18, std::to_string(mult) + "x", "middle");
    d.text(x, p.y.p0 + 32, std::to_string(mult * r.train_length), "middle", 11);
  }
  d.text((p.x.p0 + p.x.p1) / 2, p.y.p0 + 52,
         grid ? "evaluation grid side (cells; log2 scale)" : "evaluation length (tokens; log2 scale)", "middle", 13);
}

void draw_task(svg::Document& d, const SweepResult& r, const std::string& task, double top, const Measure& measure) {
  const auto [ylo, yhi] = y_range(r, task, measure);
  const double xlo = static_cast<double>(r.multipliers.front()), xhi = static_cast<double>(r.multipliers.back());
  const double pad = xhi > xlo ? 0.04 * (std::log2(xhi) - std::log2(xlo)) : 1;
  const Panel p{{std::exp2(std::log2(xlo) - pad), std::exp2(std::log2(xhi) + pad), kLeft, kLeft + kPlotW, true},
                {ylo, yhi, top + kPlotH, top, true}, top};
  const bool grid = data::task_dims(task) == 2;
  std::ostringstream title;
  title << measure.title << " vs evaluation " << (grid ? "grid side" : "length") << ", task " << task << " (trained at "
        << r.train_length << (r.seeds.size() > 1 ? "; mean ± std over " + std::to_string(r.seeds.size()) + " seeds)" : ")");
  d.text(kLeft, top - 18, title.str(), "start", 15);
  d.y_axis(p.y, kLeft, svg::log_ticks(ylo, yhi), kPlotW, measure.axis);
  x_axis(d, r, p, grid);
  d.rect(kLeft, top, kPlotW, kPlotH, "none", "stroke=\"#333\"");

  const double lx = kLeft + kPlotW + 20;
  double ly = top + 12;
  std::optional<double> optimal;
  bool any_na = false;
  std::size_t ci = 0;
  for (const MethodResult& m : r.rows) {
    if (m.task != task) continue;
    if (measure.optimum && m.optimal_ppl) optimal = m.optimal_ppl;
    const char* c = svg::color(ci++);
    const std::vector<int64_t> na = draw_method(d, r, m, p, measure, c);
    std::string label = m.method.label();
    if (!na.empty()) {
      any_na = true;
      label += " (n/a:";
      for (const int64_t mult : na) label += " " + std::to_string(mult) + "x";
      label += ")";
    }
    d.line(lx, ly, lx + 24, ly, c, 2);
    d.circle(lx + 12, ly, 4, c, "white");
    d.text(lx + 32, ly + 4, label);
    ly += 20;
  }
  if (optimal) {
    const double y = p.y(*optimal);
    d.line(kLeft, y, kLeft + kPlotW, y, "#000", 1.5, "stroke-dasharray=\"6 4\"");
    d.line(lx, ly, lx + 24, ly, "#000", 1.5, "stroke-dasharray=\"6 4\"");
    d.text(lx + 32, ly + 4, "optimal perplexity (" + fixed(*optimal, 3) + ")");
    ly += 20;
  }
  if (any_na) {
    d.circle(lx + 12, ly, 4.5, "white", "#555");
    d.text(lx + 32, ly + 4, measure.na);
    ly += 20;
  }
  if (r.seeds.size() > 1) {
    d.rect(lx, ly - 6, 24, 12, "#888888", "fill-opacity=\"0.18\"");
    d.text(lx + 32, ly + 4, "band: mean ± std over seeds");
  }
}

// One panel per task of `measure` against the evaluation length.
std::string picture(const SweepResult& r, const Measure& measure) {
  std::vector<std::string> tasks;
  for (const MethodResult& m : r.rows)
    if (std::find(tasks.begin(), tasks.end(), m.task) == tasks.end()) tasks.push_back(m.task);
  const double panel = kTop + kPlotH + kBottom;
  svg::Document d(kLeft + kPlotW + kLegendW, std::max<double>(1.0, static_cast<double>(tasks.size())) * panel);
  for (std::size_t t = 0; t < tasks.size(); ++t)
    if (!r.multipliers.empty()) draw_task(d, r, tasks[t], static_cast<double>(t) * panel + kTop, measure);
  return d.str();
}

}  // namespace

std::string results_svg(const SweepResult& r) { return picture(r, kPerplexity); }

std::string attention_svg(const SweepResult& r) { return picture(r, kDistance); }

void write_result_figures(const SweepResult& r, const std::string& dir) {
  write_file_atomically((std::filesystem::path(dir) / kResultsSvgName).string(), results_svg(r));
  write_file_atomically((std::filesystem::path(dir) / kAttentionSvgName).string(), attention_svg(r));
}

}  // namespace rpb
