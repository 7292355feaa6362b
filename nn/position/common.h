// rpb/nn/position/common.h: helpers the scheme files share (internal to nn/position).
//
// Conventions of every scheme:
//   - Row r of a bias or an index belongs to query position i = q_offset + r and column c to key position j = c
//     (a line), or to cells r and c in raster order (a grid).
//   - Additive biases are (heads, q_len, k_len); table lookups are permute(index_select(table, index), {2, 0, 1}),
//     so a table's gradient is the scatter-add (the per-row sum) of the score gradient over every (query, key)
//     pair that picked that row.
//   - A scheme's outputs take the dtype of its own parameters or buffers, so Module::to(f64) turns the whole
//     scheme to float64 (gradient checks). Integer indices are computed exactly and constant tables (distances,
//     cos/sin, sinusoids) in double, then stored in that dtype.
#pragma once

#include <charconv>
#include <cmath>
#include <string>
#include <vector>

#include "core/checked.h"
#include "core/ops.h"
#include "nn/limits.h"
#include "nn/position.h"

namespace rpb::nn::position_detail {

/// Registry rows' helpers (SchemeInfo): no trained values, no longest length, no options of its own, and a table
/// of `rows` values per head.
inline int64_t no_parameters(const PositionOptions&) { return 0; }
inline int64_t unbounded(const PositionOptions&) { return 0; }
inline void no_options(const PositionOptions&) {}
inline int64_t per_head(const PositionOptions& o, int64_t rows) { return checked_mul(rows, o.heads, "position", "table"); }

/// A tensor of `shape` holding `values` (computed in double), stored in `dtype`.
inline Tensor from_doubles(const Shape& shape, const std::vector<double>& values, DType dtype) {
  Tensor t = Tensor::from_vector<double>(shape, values);
  return dtype == DType::f64 ? t : t.to(dtype);
}

/// The shortest text that reads back as `x` ("0.0625"); -0 prints as 0.
inline std::string shortest(double x) {
  char buf[32];
  const auto r = std::to_chars(buf, buf + sizeof buf, x + 0.0);
  return std::string(buf, r.ptr);
}

/// The lengths of a line of positions: one query and one key at least, limits::kMaxSequence at most, a
/// non-negative offset, and the last query at most limits::kMaxPosition (so no position arithmetic overflows).
inline void check_line(const char* op, int64_t q_len, int64_t k_len, int64_t q_offset) {
  RPB_CHECK(q_len >= 1 && q_len <= limits::kMaxSequence, op, "q_len ", q_len, " must be in [1, ", limits::kMaxSequence,
            "] (the number of query positions)");
  RPB_CHECK(k_len >= 1 && k_len <= limits::kMaxSequence, op, "k_len ", k_len, " must be in [1, ", limits::kMaxSequence,
            "] (the number of key positions)");
  RPB_CHECK(q_offset >= 0, op, "q_offset ", q_offset,
            " must be at least 0 (the position of the first query, e.g. the KV-cache length)");
  RPB_CHECK(q_offset <= limits::kMaxPosition - q_len, op, "q_offset ", q_offset, " + q_len ", q_len,
            " must be at most ", limits::kMaxPosition, " (2^40, the largest position)");
}

/// Throws rpb::OptionError naming `field` when `value` is above `hi` (the option's limit in nn/limits.h; the
/// lower ends are the schemes' own checks, which give their reasons).
inline void check_at_most(const char* op, const char* field, int64_t value, int64_t hi) {
  RPB_CHECK_OPTION(value <= hi, op, field, field, " ", value, " must be at most ", hi);
}

/// init_std of the schemes with learned tables: finite and non-negative.
inline void check_init_std(const PositionOptions& o) {
  RPB_CHECK_OPTION(std::isfinite(o.init_std) && o.init_std >= 0, o.scheme.c_str(), "init_std", "init_std ",
                   o.init_std, " must be finite and non-negative");
}

/// The options of the clipped-offset tables (shaw, clipped2d): K = max_relative_position in [1, its limit], and
/// init_std. `per_axis` (", per axis" for a grid) ends the reason given for K >= 1.
inline void check_clipped_table(const PositionOptions& o, const char* per_axis) {
  RPB_CHECK_OPTION(o.max_relative_position >= 1, o.scheme.c_str(), "max_relative_position", "max_relative_position ",
                   o.max_relative_position, " must be at least 1 (K: offsets are clipped to [-K, K]", per_axis, ")");
  check_at_most(o.scheme.c_str(), "max_relative_position", o.max_relative_position, limits::max_relative_position.hi);
  check_init_std(o);
}

/// (1, q_len, k_len) table of f(|i - j|) over a line, in `dtype`; f is evaluated once per distance. At explicit
/// positions (p.at), i and j are theirs.
template <typename F>
Tensor distance_table(const Positions& p, DType dtype, F&& f) {
  std::vector<double> v(static_cast<std::size_t>(p.q_len * p.k_len));
  if (p.at) {
    for (int64_t r = 0; r < p.q_len; ++r)
      for (int64_t c = 0; c < p.k_len; ++c) {
        const int64_t d = p.key_position(c) - p.query_position(r);
        v[static_cast<std::size_t>(r * p.k_len + c)] = f(static_cast<double>(d < 0 ? -d : d));
      }
    return from_doubles({1, p.q_len, p.k_len}, v, dtype);
  }
  // i - j takes the q_len + k_len - 1 values from lo = q_offset - (k_len - 1) up, whatever the offset.
  const int64_t lo = p.q_offset - (p.k_len - 1);
  std::vector<double> by_difference(static_cast<std::size_t>(p.q_len + p.k_len - 1));
  for (std::size_t m = 0; m < by_difference.size(); ++m) {
    const int64_t d = lo + static_cast<int64_t>(m);
    by_difference[m] = f(static_cast<double>(d < 0 ? -d : d));
  }
  for (int64_t r = 0; r < p.q_len; ++r)
    for (int64_t c = 0; c < p.k_len; ++c)
      v[static_cast<std::size_t>(r * p.k_len + c)] = by_difference[static_cast<std::size_t>(p.q_offset + r - c - lo)];
  return from_doubles({1, p.q_len, p.k_len}, v, dtype);
}

/// (1, q_len + k_len - 1) row of f(r) over the relative positions r = key - query of a line's relative bias,
/// entry m holding r = m - (q_offset + q_len - 1), in `dtype`.
template <typename F>
Tensor offset_row(const Positions& p, DType dtype, F&& f) {
  std::vector<double> v(static_cast<std::size_t>(p.q_len + p.k_len - 1));
  for (std::size_t m = 0; m < v.size(); ++m) v[m] = f(static_cast<int64_t>(m) - (p.q_offset + p.q_len - 1));
  return from_doubles({1, static_cast<int64_t>(v.size())}, v, dtype);
}

/// The (dy, dx) = key - query offsets of a grid's relative bias, in its column order: dy from 1 - H to H - 1,
/// then dx from 1 - W to W - 1.
template <typename F>
void for_grid_offsets(const Positions& p, F&& f) {
  for (int64_t dy = 1 - p.height; dy < p.height; ++dy)
    for (int64_t dx = 1 - p.width; dx < p.width; ++dx) f(dy, dx);
}

}  // namespace rpb::nn::position_detail
