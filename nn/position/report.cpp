#include "nn/position/report.h"

#include <algorithm>
#include <cmath>
#include <iomanip>
#include <sstream>

namespace rpb::nn::report {

namespace {

// A bar from the centre: left for negative values, right for positive, scaled to `scale`.
std::string bar(double v, double scale, int half = 20) {
  const int n = scale > 0 ? static_cast<int>(std::lround(std::abs(v) / scale * half)) : 0;
  std::string left(static_cast<std::size_t>(half), ' '), right(static_cast<std::size_t>(half), ' ');
  for (int i = 0; i < std::min(n, half); ++i)
    (v < 0 ? left[static_cast<std::size_t>(half - 1 - i)] : right[static_cast<std::size_t>(i)]) = '#';
  return left + "|" + right;
}

std::string range_text(const RowSpan& r) {
  std::ostringstream os;
  if (r.open_lo) os << "<= " << r.hi;
  else if (r.open_hi) os << ">= " << r.lo;
  else if (r.lo == r.hi) os << r.lo;
  else os << r.lo << ".." << r.hi;
  return os.str();
}

}  // namespace

std::string table_per_head(const std::string& name, const Tensor& table, const std::vector<RowSpan>& spans,
                           const std::string& what) {
  std::ostringstream out;
  const int64_t rows = table.size(0), heads = table.size(1);
  out << "\n" << name << " " << table.shape() << ": " << what << "\n";
  // Rows in order of the relative positions they cover.
  std::vector<int64_t> order;
  for (int64_t b = 0; b < rows; ++b)
    if (spans[static_cast<std::size_t>(b)].used) order.push_back(b);
  std::sort(order.begin(), order.end(), [&](int64_t a, int64_t b) {
    return spans[static_cast<std::size_t>(a)].lo < spans[static_cast<std::size_t>(b)].lo;
  });
  for (int64_t h = 0; h < heads; ++h) {
    double scale = 0;
    for (int64_t b = 0; b < rows; ++b) scale = std::max(scale, std::abs(table.at({b, h})));
    out << "  head " << h << "\n    " << std::setw(5) << "row" << "  " << std::setw(16) << "key - query" << "  "
        << std::setw(10) << "bias" << "\n";
    for (int64_t b : order) {
      const double v = table.at({b, h});
      out << "    " << std::setw(5) << b << "  " << std::setw(16) << range_text(spans[static_cast<std::size_t>(b)])
          << "  " << std::setw(10) << std::fixed << std::setprecision(4) << v << "  " << bar(v, scale) << "\n";
    }
    out.unsetf(std::ios::fixed);
  }
  return out.str();
}

std::string heatmaps(const std::string& name, const Tensor& table, const std::string& what) {
  const int64_t rows = table.size(0), heads = table.size(1);
  const int64_t side = static_cast<int64_t>(std::llround(std::sqrt(static_cast<double>(rows))));
  if (side * side != rows || side % 2 == 0) return "";
  const int64_t R = side / 2;
  static const std::string shades = " .:-=+*#%@";
  std::ostringstream out;
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
        const auto k =
            hi > lo ? static_cast<std::size_t>((v - lo) / (hi - lo) * static_cast<double>(shades.size() - 1) + 0.5) : 0;
        out << shades[std::min(k, shades.size() - 1)] << shades[std::min(k, shades.size() - 1)];
      }
      out << (dy == R ? "   <- dy = 0" : "") << "\n";
    }
  }
  return out.str();
}

}  // namespace rpb::nn::report
