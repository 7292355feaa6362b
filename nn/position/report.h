// rpb/nn/position/report.h: text pictures of learned position tables, for `rpb inspect` (internal to nn).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/tensor.h"

namespace rpb::nn::report {

/// The relative positions key - query that read one row of a 1-D table: lo .. hi, open at an end that runs on
/// without bound; `used` is false for a row no position reads.
struct RowSpan {
  int64_t lo = 0, hi = 0;
  bool open_lo = false, open_hi = false, used = false;
};

/// A (rows, heads) table per head, rows in the order of the positions they cover: row, its span, its value and
/// a bar from the centre. Starts with "\n<name> <shape>: <what>".
std::string table_per_head(const std::string& name, const Tensor& table, const std::vector<RowSpan>& spans,
                           const std::string& what);

/// A 2-D table ((2R+1)^2, heads), row (dy + R) * (2R+1) + (dx + R) with dy, dx = query - key per axis (Swin's
/// layout), as one text heatmap per head; "" when the row count is not an odd square.
std::string heatmaps(const std::string& name, const Tensor& table, const std::string& what);

}  // namespace rpb::nn::report
