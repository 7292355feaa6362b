#include "nn/position/untrained.h"

#include <algorithm>
#include <deque>
#include <limits>

#include "core/error.h"
#include "core/text.h"

namespace rpb::nn {

const char* untrained_name(Untrained u) { return enum_name(kUntrainedNames, u); }

std::vector<std::string> untrained_names() { return enum_names(kUntrainedNames); }

Untrained untrained_from_name(const std::string& name) {
  const std::optional<Untrained> u = enum_value(kUntrainedNames, name);
  RPB_CHECK_OPTION(u.has_value(), "position", "untrained", "untrained '", printable(name),
                   "': expected keep or nearest");
  return *u;
}

namespace {

constexpr int64_t kOpenFar = std::numeric_limits<int64_t>::max();

// A row's positions as distances from the query on its side: [near, far] (far = kOpenFar when the span is open).
struct Side {
  int64_t row, near, far;
};

}  // namespace

std::vector<int64_t> nearest_trained_rows(const std::vector<report::RowSpan>& spans, const std::vector<bool>& trained) {
  RPB_CHECK(spans.size() == trained.size(), "untrained rows", spans.size(), " row spans for ", trained.size(), " rows");
  std::vector<int64_t> out(spans.size());
  for (std::size_t r = 0; r < spans.size(); ++r) out[r] = static_cast<int64_t>(r);
  std::vector<Side> past, future;
  for (std::size_t r = 0; r < spans.size(); ++r) {
    const report::RowSpan& s = spans[r];
    if (!s.used) continue;
    const auto row = static_cast<int64_t>(r);
    if (s.hi <= 0) past.push_back({row, -s.hi, s.open_lo ? kOpenFar : -s.lo});
    else future.push_back({row, s.lo, s.open_hi ? kOpenFar : s.hi});
  }
  for (std::vector<Side>* side : {&past, &future}) {
    std::sort(side->begin(), side->end(), [](const Side& a, const Side& b) { return a.near < b.near; });
    const auto n = static_cast<std::ptrdiff_t>(side->size());
    // The nearest trained row before (nearer the query) and after each row, in distance order.
    std::vector<std::ptrdiff_t> before(side->size(), -1), after(side->size(), -1);
    for (std::ptrdiff_t i = 0, last = -1; i < n; ++i) {
      before[i] = last;
      if (trained[(*side)[i].row]) last = i;
    }
    for (std::ptrdiff_t i = n - 1, next = -1; i >= 0; --i) {
      after[i] = next;
      if (trained[(*side)[i].row]) next = i;
    }
    for (std::ptrdiff_t i = 0; i < n; ++i) {
      const Side& r = (*side)[i];
      if (trained[r.row]) continue;
      const int64_t gap_before = before[i] < 0 ? kOpenFar : r.near - (*side)[before[i]].far;
      const int64_t gap_after = after[i] < 0 || r.far == kOpenFar ? kOpenFar : (*side)[after[i]].near - r.far;
      if (before[i] >= 0 && gap_before <= gap_after) out[r.row] = (*side)[before[i]].row;
      else if (after[i] >= 0) out[r.row] = (*side)[after[i]].row;
    }
  }
  return out;
}

std::vector<int64_t> nearest_trained_rows_2d(int64_t radius, const std::vector<bool>& trained) {
  const int64_t side = 2 * radius + 1;
  RPB_CHECK(radius >= 0 && static_cast<int64_t>(trained.size()) == side * side, "untrained rows", trained.size(),
            " rows for a 2-D table of radius ", radius, " (expected (2R + 1)^2)");
  std::vector<int64_t> out(trained.size(), -1);
  std::deque<int64_t> queue;
  for (int64_t r = 0; r < side * side; ++r)
    if (trained[static_cast<std::size_t>(r)]) out[static_cast<std::size_t>(r)] = r, queue.push_back(r);
  if (queue.empty()) {
    for (int64_t r = 0; r < side * side; ++r) out[static_cast<std::size_t>(r)] = r;
    return out;
  }
  while (!queue.empty()) {
    const int64_t r = queue.front();
    queue.pop_front();
    const int64_t y = r / side, x = r % side;
    const int64_t next[4][2] = {{y - 1, x}, {y, x - 1}, {y, x + 1}, {y + 1, x}};
    for (const auto& [ny, nx] : next) {
      if (ny < 0 || ny >= side || nx < 0 || nx >= side) continue;
      const int64_t n = ny * side + nx;
      if (out[static_cast<std::size_t>(n)] >= 0) continue;
      out[static_cast<std::size_t>(n)] = out[static_cast<std::size_t>(r)];
      queue.push_back(n);
    }
  }
  return out;
}

}  // namespace rpb::nn
