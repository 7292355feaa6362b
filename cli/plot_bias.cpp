// rpb/cli/plot_bias.cpp: the bias request of `rpb inspect --plot` (see plot_bias.h).
#include "cli/plot_bias.h"

#include <algorithm>
#include <cmath>

#include "cli/plot_request.h"
#include "cli/python_runner.h"
#include "core/autograd.h"
#include "core/error.h"
#include "nn/position.h"
#include "nn/position/table_scheme.h"

namespace rpb {

namespace {

using nlohmann::ordered_json;

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

// The rows a table scheme's training read; empty for a scheme without a table, or a table that records none (a
// checkpoint written before rpb recorded them): then every value counts as trained.
std::vector<bool> trained_rows(const nn::PositionScheme& s) {
  const auto* table = dynamic_cast<const nn::TableScheme*>(&s);
  if (!table) return {};
  std::vector<bool> flags = table->trained_rows();
  return std::find(flags.begin(), flags.end(), true) == flags.end() ? std::vector<bool>{} : flags;
}

ordered_json common_fields(const BiasModule& m, const RunConfig& config, int64_t heads) {
  ordered_json notes = ordered_json::array();
  for (int64_t h = 0; h < heads; ++h) notes.push_back(m.scheme->head_note(h));
  const bool table = m.scheme->info().row_table;
  return {{"untrained_rows", table ? ordered_json(nn::untrained_name(config.position().untrained)) : ordered_json()},
          {"head_notes", notes}};
}

// One 1-D module: one query at position distances - 1 over keys 0 .. distances - 1; key j lies d = distances - 1 - j
// back.
ordered_json line_module(const BiasModule& m, const RunConfig& config, int64_t distances) {
  const nn::Positions p = nn::Positions::line(1, distances, distances - 1);
  const Tensor b = m.scheme->bias(p);  // (H, 1, distances)
  const std::vector<double> v = b.to_vector();
  const int64_t heads = b.size(0);
  const std::vector<bool> flags = trained_rows(*m.scheme);
  const std::vector<double> rows = flags.empty() ? std::vector<double>{} : m.scheme->index(p).to_vector();
  ordered_json values = ordered_json::array(), trained = ordered_json::array(), ds = ordered_json::array();
  for (int64_t h = 0; h < heads; ++h) {
    ordered_json head = ordered_json::array();
    for (int64_t d = 0; d < distances; ++d)
      head.push_back(v[static_cast<std::size_t>(h * distances + distances - 1 - d)]);
    values.push_back(std::move(head));
  }
  for (int64_t d = 0; d < distances; ++d) {
    ds.push_back(d);
    const auto row = flags.empty() ? 0 : static_cast<std::size_t>(rows[static_cast<std::size_t>(distances - 1 - d)]);
    trained.push_back(flags.empty() || (row < flags.size() && flags[row]));
  }
  ordered_json out = {{"name", m.path}, {"query", distances - 1}, {"distances", ds}, {"values", values},
                      {"trained", trained}};
  out.update(common_fields(m, config, heads));
  return out;
}

// One 2-D module: the bias over query - key offsets (dy, dx) of a side x side grid, per head (the 1-D path's sign,
// Swin's convention). The relative bias's table runs over key - query offsets (for_grid_offsets), so the offset
// (dy, dx) reads its entry at (-dy, -dx).
ordered_json grid_module(const BiasModule& m, const RunConfig& config, int64_t side) {
  const nn::Positions p = nn::Positions::grid(side, side);
  const RelativeBias rb = m.scheme->relative_bias(p);
  RPB_CHECK(rb.defined(), "inspect", m.path, " has no relative bias over a grid");
  const std::vector<double> v = rb.table.to_vector();  // (heads, n * n): key - query dy from 1 - side, then dx
  const int64_t heads = rb.table.size(0), n = 2 * side - 1, cells = side * side;
  // Which offsets read a trained row: each (query, key) pair's row, by its offset.
  const std::vector<bool> flags = trained_rows(*m.scheme);
  std::vector<bool> offset_trained(static_cast<std::size_t>(n * n), true);
  if (!flags.empty()) {
    const std::vector<double> rows = m.scheme->index(p).to_vector();  // (cells, cells)
    for (int64_t q = 0; q < cells; ++q)
      for (int64_t k = 0; k < cells; ++k) {
        const int64_t dy = q / side - k / side, dx = q % side - k % side;
        const auto row = static_cast<std::size_t>(rows[static_cast<std::size_t>(q * cells + k)]);
        const auto at = static_cast<std::size_t>((dy + side - 1) * n + dx + side - 1);
        offset_trained[at] = row < flags.size() && flags[row];
      }
  }
  ordered_json offsets = ordered_json::array(), values = ordered_json::array(), trained = ordered_json::array();
  for (int64_t i = 0; i < n; ++i) offsets.push_back(i - (side - 1));
  for (int64_t h = 0; h < heads; ++h) {
    ordered_json head = ordered_json::array();
    for (int64_t y = 0; y < n; ++y) {
      ordered_json row = ordered_json::array();
      for (int64_t x = 0; x < n; ++x)
        row.push_back(v[static_cast<std::size_t>(h * n * n + (n - 1 - y) * n + (n - 1 - x))]);
      head.push_back(std::move(row));
    }
    values.push_back(std::move(head));
  }
  for (int64_t y = 0; y < n; ++y) {
    ordered_json row = ordered_json::array();
    for (int64_t x = 0; x < n; ++x)
      row.push_back(static_cast<bool>(offset_trained[static_cast<std::size_t>(y * n + x)]));
    trained.push_back(std::move(row));
  }
  ordered_json out = {{"name", m.path}, {"dy", offsets}, {"dx", offsets}, {"values", values}, {"trained", trained}};
  out.update(common_fields(m, config, heads));
  return out;
}

}  // namespace

ordered_json bias_block(const nn::Module& model, const RunConfig& config, const std::string& flag,
                        const std::string& title) {
  const std::vector<BiasModule> modules = bias_modules(model);
  const nn::PositionOptions po = config.position();
  if (modules.empty())
    throw Error("inspect " + flag + ": position scheme " + po.scheme + " enters the model as " +
                nn::kind_name(nn::scheme_info(po).kind) + " and adds no bias to draw (" + flag + " draws the schemes " +
                additive_scheme_names() + "); no file written");
  const NoGradGuard no_grad;  // reading the bias records nothing (no training forward: the trained rows stay as stored)
  const bool grid = po.dims == 2 || config.dims() == 2;
  const int64_t distances = std::clamp<int64_t>(4 * config.length, 16, 4096);
  const int64_t side = std::clamp<int64_t>(config.length, 2, kMaxGridSide);
  ordered_json list = ordered_json::array();
  for (const BiasModule& m : modules)
    list.push_back(grid ? grid_module(m, config, side) : line_module(m, config, distances));
  return {{"dims", grid ? 2 : 1}, {"scheme", po.scheme}, {"title", title}, {"train_length", config.length},
          {"modules", list}};
}

void draw_bias(const nn::Module& model, const RunConfig& config, const std::string& title, const std::string& path,
               const OutputOptions& output) {
  draw_figures(plot_request("bias", bias_block(model, config, output.flag, title)), {{path, &output}});
}

}  // namespace rpb
