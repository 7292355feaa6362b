#include "train/inspect.h"

#include <algorithm>
#include <cmath>
#include <iomanip>
#include <map>
#include <sstream>

#include "nn/position.h"
#include "train/checkpoint.h"
#include "train/config.h"
#include "train/workload.h"

namespace rpb {

namespace {

struct Stats {
  double mean = 0, std = 0, min = 0, max = 0;
};

Stats stats_of(const Tensor& t) {
  Stats s;
  const std::vector<double> v = t.to_vector();
  if (v.empty()) return s;
  s.min = *std::min_element(v.begin(), v.end());
  s.max = *std::max_element(v.begin(), v.end());
  for (double x : v) s.mean += x;
  s.mean /= static_cast<double>(v.size());
  for (double x : v) s.std += (x - s.mean) * (x - s.mean);
  s.std = std::sqrt(s.std / static_cast<double>(v.size()));
  return s;
}

// A bar from the centre: left for negative values, right for positive, scaled to `scale`.
std::string bar(double v, double scale, int half = 20) {
  const int n = scale > 0 ? static_cast<int>(std::lround(std::abs(v) / scale * half)) : 0;
  std::string left(static_cast<std::size_t>(half), ' '), right(static_cast<std::size_t>(half), ' ');
  for (int i = 0; i < std::min(n, half); ++i) (v < 0 ? left[static_cast<std::size_t>(half - 1 - i)] : right[static_cast<std::size_t>(i)]) = '#';
  return left + "|" + right;
}

std::string range_text(int64_t lo, int64_t hi, bool open_lo, bool open_hi) {
  std::ostringstream os;
  if (open_lo) os << "<= " << hi;
  else if (open_hi) os << ">= " << lo;
  else if (lo == hi) os << lo;
  else os << lo << ".." << hi;
  return os.str();
}

// Rows of a table-indexed scheme: for each table row, the relative positions (key - query) it covers.
struct RowRange {
  int64_t lo = 0, hi = 0;
  bool open_lo = false, open_hi = false, used = false;
};

std::vector<RowRange> t5_ranges(const nn::PositionOptions& p, bool causal) {
  std::vector<RowRange> r(static_cast<std::size_t>(p.num_buckets));
  const int64_t R = 4 * p.max_distance;
  for (int64_t rp = -R; rp <= (causal ? 0 : R); ++rp) {
    RowRange& x = r[static_cast<std::size_t>(nn::t5_bucket(rp, !causal, p.num_buckets, p.max_distance))];
    if (!x.used) x.lo = x.hi = rp, x.used = true;
    x.lo = std::min(x.lo, rp);
    x.hi = std::max(x.hi, rp);
    if (rp == -R) x.open_lo = true;
    if (!causal && rp == R) x.open_hi = true;
  }
  if (causal) r[0].open_hi = true, r[0].hi = 0;  // every future key falls in bucket 0 (masked anyway)
  return r;
}

std::vector<RowRange> shaw_ranges(int64_t K) {
  std::vector<RowRange> r(static_cast<std::size_t>(2 * K + 1));
  for (int64_t k = 0; k <= 2 * K; ++k) r[static_cast<std::size_t>(k)] = {k - K, k - K, k == 0, k == 2 * K, true};
  return r;
}

void print_table_per_head(std::ostream& out, const std::string& name, const Tensor& table,
                          const std::vector<RowRange>& ranges, const std::string& what) {
  const int64_t rows = table.size(0), heads = table.size(1);
  out << "\n" << name << " " << table.shape() << ": " << what << "\n";
  for (int64_t h = 0; h < heads; ++h) {
    double scale = 0;
    for (int64_t b = 0; b < rows; ++b) scale = std::max(scale, std::abs(table.at({b, h})));
    out << "  head " << h << "\n    " << std::setw(5) << "row" << "  " << std::setw(16) << "key - query" << "  "
        << std::setw(10) << "bias" << "\n";
    // Rows in order of the relative positions they cover.
    std::vector<int64_t> order;
    for (int64_t b = 0; b < rows; ++b)
      if (ranges[static_cast<std::size_t>(b)].used) order.push_back(b);
    std::sort(order.begin(), order.end(), [&](int64_t a, int64_t b) {
      return ranges[static_cast<std::size_t>(a)].lo < ranges[static_cast<std::size_t>(b)].lo;
    });
    for (int64_t b : order) {
      const RowRange& r = ranges[static_cast<std::size_t>(b)];
      const double v = table.at({b, h});
      out << "    " << std::setw(5) << b << "  " << std::setw(16) << range_text(r.lo, r.hi, r.open_lo, r.open_hi) << "  "
          << std::setw(10) << std::fixed << std::setprecision(4) << v << "  " << bar(v, scale) << "\n";
    }
    out.unsetf(std::ios::fixed);
  }
}

// A 2-D relative-position table ((2R+1)^2, heads), row (dy + R) * (2R+1) + (dx + R) with dy, dx =
// query - key per axis (Swin's layout), as one text heatmap per head.
void print_heatmaps(std::ostream& out, const std::string& name, const Tensor& table, const std::string& what) {
  const int64_t rows = table.size(0), heads = table.size(1);
  const int64_t side = static_cast<int64_t>(std::llround(std::sqrt(static_cast<double>(rows))));
  if (side * side != rows || side % 2 == 0) return;
  const int64_t R = side / 2;
  static const std::string shades = " .:-=+*#%@";
  out << "\n" << name << " " << table.shape() << ": " << what << "\n  rows dy = -" << R << ".." << R
      << " (query - key, down), columns dx = -" << R << ".." << R << " (right); darker = larger bias\n";
  for (int64_t h = 0; h < heads; ++h) {
    double lo = INFINITY, hi = -INFINITY;
    for (int64_t i = 0; i < rows; ++i) lo = std::min(lo, table.at({i, h})), hi = std::max(hi, table.at({i, h}));
    out << "  head " << h << " (min " << std::setprecision(4) << lo << ", max " << hi << ")\n";
    for (int64_t dy = 0; dy < side; ++dy) {
      out << "    ";
      for (int64_t dx = 0; dx < side; ++dx) {
        const double v = table.at({dy * side + dx, h});
        const auto k = hi > lo ? static_cast<std::size_t>((v - lo) / (hi - lo) * static_cast<double>(shades.size() - 1) + 0.5) : 0;
        out << shades[std::min(k, shades.size() - 1)] << shades[std::min(k, shades.size() - 1)];
      }
      out << (dy == R ? "   <- dy = 0" : "") << "\n";
    }
  }
}

}  // namespace

void inspect_checkpoint(const std::string& file, std::ostream& out) {
  const Checkpoint c = load_checkpoint(file);
  const RunConfig cfg = parse_config(c.config_text, file + " (stored config)");
  // The parameters must be the ones the stored config's model has (names, shapes, dtypes), as
  // `rpb eval` requires: the tables below are read by the config's num_buckets, K and window.
  check_params(c, make_workload(cfg)->model().named_parameters(), file);
  const nn::PositionOptions& p = cfg.model.position;
  out << "checkpoint " << file << "\n  step " << c.step << " of " << cfg.steps << ", rpb " << c.library_version
      << ", format version " << kCheckpointFormatVersion << "\n  model: d_model " << cfg.model.d_model << ", heads "
      << cfg.model.heads << ", layers " << cfg.model.layers << ", d_ff " << cfg.model.d_ff << "; position scheme "
      << p.scheme << (cfg.model.share_position ? "" : " (one per layer)") << "\n  task: " << cfg.task.kind
      << ", train length " << cfg.length << "; optimizer " << c.optim.kind << " at step " << c.optim.step << "\n";

  out << "\nconfig:\n";
  std::istringstream cs(c.config_text);
  for (std::string line; std::getline(cs, line);) out << "  " << line << "\n";

  out << "\nmetrics: " << c.metrics.size() << " logged steps";
  if (!c.metrics.empty()) {
    const auto best = std::min_element(c.metrics.begin(), c.metrics.end(),
                                       [](const MetricsRow& a, const MetricsRow& b) { return a.loss < b.loss; });
    double tps = 0;
    for (const MetricsRow& m : c.metrics) tps += m.tokens_per_sec;
    out << std::setprecision(5) << "\n  loss " << c.metrics.front().loss << " (step " << c.metrics.front().step
        << ") -> " << c.metrics.back().loss << " (step " << c.metrics.back().step << "), lowest " << best->loss
        << " (step " << best->step << ")\n  last lr " << c.metrics.back().lr << ", last grad norm "
        << c.metrics.back().grad_norm << ", mean " << std::setprecision(6) << tps / static_cast<double>(c.metrics.size())
        << " tokens/s";
  }
  out << "\n\nparameters (" << c.params.size() << "):\n";
  std::size_t w = 4;
  for (const auto& [name, t] : c.params) w = std::max(w, name.size());
  out << "  " << std::left << std::setw(static_cast<int>(w)) << "name" << "  " << std::setw(14) << "shape"
      << std::right << std::setw(11) << "mean" << std::setw(11) << "std" << std::setw(11) << "min" << std::setw(11)
      << "max" << "\n";
  int64_t total = 0;
  for (const auto& [name, t] : c.params) {
    const Stats s = stats_of(t);
    total += t.numel();
    out << "  " << std::left << std::setw(static_cast<int>(w)) << name << "  " << std::setw(14) << t.shape().to_string()
        << std::right << std::fixed << std::setprecision(4) << std::setw(11) << s.mean << std::setw(11) << s.std
        << std::setw(11) << s.min << std::setw(11) << s.max << "\n";
    out.unsetf(std::ios::fixed);
  }
  out << "  total " << total << " parameters\n";

  for (const auto& [name, t] : c.params) {
    const auto ends_with = [&name = name](const std::string& suffix) {
      return name.size() >= suffix.size() && name.compare(name.size() - suffix.size(), suffix.size(), suffix) == 0;
    };
    const bool t5 = ends_with("pos.t5.table"), shaw = ends_with("pos.shaw.table");
    if (t5)
      print_table_per_head(out, name, t, t5_ranges(p, true),
                           "T5 buckets (causal, " + std::to_string(p.num_buckets) + " buckets, max_distance " +
                               std::to_string(p.max_distance) + "); future keys share bucket 0 and are masked");
    if (shaw)
      print_table_per_head(out, name, t, shaw_ranges(p.max_relative_position),
                           "Shaw clipped positions, K = " + std::to_string(p.max_relative_position));
    if (name.find("relative_position_bias_table") != std::string::npos)
      print_heatmaps(out, name, t, "Swin V1 window table, window " + std::to_string(cfg.grid.window));
    if (ends_with("pos.clipped2d.table"))
      print_heatmaps(out, name, t, "clipped 2-D table, K = " + std::to_string(p.max_relative_position));
    if (ends_with("pos.log_decay.lambda")) {
      out << "\n" << name << " " << t.shape() << ": bias = -lambda_h * log(1 + |i - j|)\n";
      for (int64_t h = 0; h < t.numel(); ++h) {
        out << "  head " << h << ": lambda " << std::setprecision(5) << t.at({h}) << "; bias at distance";
        for (int64_t d : {1, 4, 16, 64, 256}) out << " " << d << ": " << -t.at({h}) * std::log1p(static_cast<double>(d));
        out << "\n";
      }
    }
  }
}

}  // namespace rpb
