// rpb/cli/inspect_svg.cpp: the bias pictures of `rpb inspect --svg` (see inspect_svg.h), drawn with cli/svg.h.
#include "cli/inspect_svg.h"

#include <algorithm>
#include <cmath>

#include "cli/svg.h"
#include "core/error.h"
#include "nn/position.h"

namespace rpb {

namespace {

constexpr double kLeft = 90, kPlotW = 560, kPlotH = 300, kTop = 56, kBottom = 64, kLegendW = 240;
constexpr int64_t kMaxGridSide = 16;  // heatmaps cover offsets up to +-15 per axis: 31 x 31 cells per head

struct BiasModule {
  std::string path;
  const nn::PositionScheme* scheme;
};

std::vector<BiasModule> bias_modules(const nn::Module& model) {
  std::vector<BiasModule> out;
  for (const auto& [path, m] : model.named_modules())
    if (const auto* s = dynamic_cast<const nn::PositionScheme*>(m); s && s->kind() == nn::PositionKind::additive_bias)
      out.push_back({path, s});
  return out;
}

std::string additive_scheme_names() {
  std::string names;
  for (const nn::SchemeInfo& s : nn::schemes())
    if (s.kind == nn::PositionKind::additive_bias) names += (names.empty() ? "" : ", ") + std::string(s.name);
  return names;
}

// One 1-D module: bias[h][d] for a key d positions before the query, d = 0 .. distances - 1.
std::vector<std::vector<double>> line_bias(const nn::PositionScheme& s, int64_t distances) {
  // One query at position distances - 1 over keys 0 .. distances - 1: key j lies d = distances - 1 - j back.
  const Tensor b = s.bias(nn::Positions::line(1, distances, distances - 1));  // (H, 1, distances)
  const std::vector<double> v = b.to_vector();
  const int64_t heads = b.size(0);
  std::vector<std::vector<double>> out(static_cast<std::size_t>(heads), std::vector<double>(distances));
  for (int64_t h = 0; h < heads; ++h)
    for (int64_t j = 0; j < distances; ++j) out[h][distances - 1 - j] = v[static_cast<std::size_t>(h * distances + j)];
  return out;
}

void draw_line_panel(svg::Document& d, const BiasModule& m, int64_t train_length, int64_t distances, double top) {
  const std::vector<std::vector<double>> bias = line_bias(*m.scheme, distances);
  double lo = INFINITY, hi = -INFINITY;
  for (const auto& head : bias)
    for (const double v : head) lo = std::min(lo, v), hi = std::max(hi, v);
  if (!(hi > lo)) lo -= 0.5, hi += 0.5;
  const double pad = (hi - lo) * 0.05;
  const svg::Axis x{0, static_cast<double>(distances - 1), kLeft, kLeft + kPlotW};
  const svg::Axis y{lo - pad, hi + pad, top + kPlotH, top};
  d.text(kLeft, top - 18, m.path + ": " + m.scheme->title() + " (bias a query adds to a key d positions back)",
         "start", 15);
  const double trained = x(static_cast<double>(std::min(train_length, distances) - 1));
  d.rect(kLeft, top, trained - kLeft, kPlotH, "#f0e6c8", "fill-opacity=\"0.6\"");
  d.text(kLeft + 6, top + 16, "trained: d < " + std::to_string(train_length), "start", 11);
  d.y_axis(y, kLeft, {svg::linear_ticks(y.lo, y.hi), {}}, kPlotW, "bias (added to the score)");
  for (const double t : svg::linear_ticks(x.lo, x.hi)) {
    d.line(x(t), top + kPlotH, x(t), top + kPlotH + 5, "#333");
    d.text(x(t), top + kPlotH + 18, svg::tick_label(t), "middle");
  }
  d.text(kLeft + kPlotW / 2, top + kPlotH + 40, "distance d = query - key (positions)", "middle", 13);
  d.rect(kLeft, top, kPlotW, kPlotH, "none", "stroke=\"#333\"");
  for (std::size_t h = 0; h < bias.size(); ++h) {
    std::vector<double> xs, ys;
    for (std::size_t i = 0; i < bias[h].size(); ++i)
      xs.push_back(x(static_cast<double>(i))), ys.push_back(y(bias[h][i]));
    d.polyline(xs, ys, svg::color(h), 1.8);
    const double ly = top + 12 + 20 * static_cast<double>(h);
    d.line(kLeft + kPlotW + 20, ly, kLeft + kPlotW + 44, ly, svg::color(h), 2);
    const std::string note = m.scheme->head_note(static_cast<int64_t>(h));
    d.text(kLeft + kPlotW + 52, ly + 4, "head " + std::to_string(h) + (note.empty() ? "" : " (" + note + ")"));
  }
}

// One 2-D module: a heatmap per head of the bias over key - query offsets (dy, dx) in [1 - side, side - 1].
void draw_grid_panel(svg::Document& d, const BiasModule& m, int64_t side, double top) {
  const RelativeBias rb = m.scheme->relative_bias(nn::Positions::grid(side, side));
  RPB_CHECK(rb.defined(), "inspect", m.path, " has no relative bias over a grid");
  const std::vector<double> v = rb.table.to_vector();
  const int64_t heads = rb.table.size(0), n = 2 * side - 1;
  const double cell = 220.0 / static_cast<double>(n);
  d.text(kLeft, top - 18, m.path + ": " + m.scheme->title() + " (rows dy, columns dx = key - query; red > 0 > blue)",
         "start", 15);
  for (int64_t h = 0; h < heads; ++h) {
    const double x0 = kLeft + static_cast<double>(h % 4) * 260, y0 = top + static_cast<double>(h / 4) * 270;
    double scale = 0, lo = INFINITY, hi = -INFINITY;
    for (int64_t i = 0; i < n * n; ++i) {
      const double b = v[static_cast<std::size_t>(h * n * n + i)];
      scale = std::max(scale, std::abs(b)), lo = std::min(lo, b), hi = std::max(hi, b);
    }
    for (int64_t i = 0; i < n * n; ++i)
      d.rect(x0 + static_cast<double>(i % n) * cell, y0 + static_cast<double>(i / n) * cell, cell + 0.3, cell + 0.3,
             svg::diverging(scale > 0 ? v[static_cast<std::size_t>(h * n * n + i)] / scale : 0));
    d.rect(x0, y0, cell * static_cast<double>(n), cell * static_cast<double>(n), "none", "stroke=\"#333\"");
    d.text(x0, y0 + cell * static_cast<double>(n) + 16,
           "head " + std::to_string(h) + ": " + svg::tick_label(lo, 3) + " .. " + svg::tick_label(hi, 3), "start", 11);
  }
}

}  // namespace

void write_bias_svg(const nn::Module& model, const RunConfig& config, const std::string& path,
                    const OutputOptions& output) {
  const std::vector<BiasModule> modules = bias_modules(model);
  const nn::PositionOptions po = config.position();
  if (modules.empty())
    throw Error("inspect --svg: position scheme " + po.scheme + " enters the model as " +
                nn::kind_name(nn::scheme_info(po).kind) + " and adds no bias to draw (--svg draws the schemes " +
                additive_scheme_names() + "); no file written");
  const bool grid = po.dims == 2 || config.dims() == 2;
  const int64_t distances = std::clamp<int64_t>(4 * config.length, 16, 4096);
  const int64_t side = std::clamp<int64_t>(config.length, 2, kMaxGridSide);
  const int64_t heads = config.model.heads;
  const double panel = grid ? kTop + 270 * static_cast<double>((heads + 3) / 4) + 20 : kTop + kPlotH + kBottom;
  const double width = grid ? kLeft + 4 * 260 : kLeft + kPlotW + kLegendW;
  svg::Document d(width, panel * static_cast<double>(modules.size()));
  for (std::size_t i = 0; i < modules.size(); ++i) {
    const double top = static_cast<double>(i) * panel + kTop;
    if (grid) draw_grid_panel(d, modules[i], side, top);
    else draw_line_panel(d, modules[i], config.length, distances, top);
  }
  write_output_file(path, d.str(), output);
}

}  // namespace rpb
