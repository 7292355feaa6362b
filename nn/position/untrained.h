// rpb/nn/position/untrained.h: the rows of a learned position table that training never read, and what evaluation
// reads in their place (position.untrained).
//
// A table scheme (t5, shaw, clipped2d) reads one row per relative position. Trained at length L, a row that only
// offsets beyond L map to (T5's buckets past distance L, the clip rows of a clipped table wider than the trained
// grid) gets no gradient and keeps its initial value; at longer lengths it is read by many distant keys. With
// untrained = "nearest", evaluation reads the nearest trained row instead (per head: the whole row is copied).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/enum_names.h"
#include "nn/position/report.h"

namespace rpb::nn {

/// position.untrained.
enum class Untrained {
  keep,    // evaluation reads every row as trained (the references' behaviour)
  nearest  // a row no training forward read takes the values of the nearest trained row
};

/// position.untrained's names: "keep", "nearest".
inline constexpr EnumName<Untrained> kUntrainedNames[] = {{Untrained::keep, "keep"}, {Untrained::nearest, "nearest"}};
/// The name of `u` in kUntrainedNames.
const char* untrained_name(Untrained u);
/// Every name of kUntrainedNames, in its order.
std::vector<std::string> untrained_names();
/// The value named `name` (one of untrained_names()); throws rpb::OptionError (field "untrained") otherwise.
Untrained untrained_from_name(const std::string& name);

/// For each row of a 1-D table whose row r covers the relative positions (key - query) spans[r], the row evaluation
/// reads under Untrained::nearest: r itself when trained[r] or when no position maps to r; otherwise the trained row
/// on the same side of the query (key at or before it: hi <= 0; after it: lo > 0) whose positions are nearest to
/// r's, a tie going to the row nearer the query. A side with no trained row keeps its rows.
std::vector<int64_t> nearest_trained_rows(const std::vector<report::RowSpan>& spans, const std::vector<bool>& trained);

/// The same for a 2-D table of (2R+1)^2 rows in Swin's layout (row (dy + R)(2R + 1) + dx + R): the trained row
/// nearest in (dy, dx) by |ddy| + |ddx|, ties to the one found first by a breadth-first search from the trained rows in
/// row order (up, left, right, down). Where the trained rows form a box (every offset of the trained grid), this is
/// the offset clamped to the box. No trained row: every row keeps itself.
std::vector<int64_t> nearest_trained_rows_2d(int64_t radius, const std::vector<bool>& trained);

}  // namespace rpb::nn
