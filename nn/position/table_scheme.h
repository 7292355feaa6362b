// rpb/nn/position/table_scheme.h: the schemes that read a learned (rows, heads) table at a row chosen by the
// relative position (t5, shaw, clipped2d): the table's gradient is the per-row sum of the score gradients
// (index_select's scatter-add).
//
// Each training forward (training mode, gradients on) marks in the buffer `trained` the rows that an unmasked
// score read, so a checkpoint records which rows were ever trained; with position.untrained = "nearest",
// evaluation reads each never-trained row's nearest trained row instead (nn/position/untrained.h).
#pragma once

#include <string>
#include <vector>

#include "nn/last_value_cache.h"
#include "nn/position/report.h"
#include "nn/position/scheme.h"

namespace rpb::nn {

class TableScheme : public PositionScheme {
 public:
  /// (q_len, k_len) i64: the table row each score reads (computed once per positions, then cloned).
  Tensor index(const Positions& p) const override;
  /// (heads, q_len, k_len): the table looked up by index(p).
  Tensor bias(const Positions& p) const override;
  /// The table row of each relative position, looked up: (heads, R).
  RelativeBias relative_bias(const Positions& p) const override;
  /// At explicit positions: the rows of every offset of their span, (heads, 2 S - 1), with the positions; a training
  /// forward marks as trained the rows of the offsets its unmasked pairs read, not the whole span's.
  RelativeBias relative_bias_at(const Positions& p) const override;
  /// The table per head: against the relative positions of its rows (1-D) or as a heatmap (2-D).
  std::string report(const std::string& prefix) const override;

  /// 1-D: for each row, the relative positions key - query that read it.
  virtual std::vector<report::RowSpan> row_spans() const;
  /// For each row, the row evaluation reads with position.untrained = "nearest": nn/position/untrained.h's nearest
  /// trained row by row_spans() (1-D) or in (dy, dx) (2-D), given which rows `trained` marks.
  std::vector<int64_t> nearest_rows(const std::vector<bool>& trained) const;
  /// The rows `trained` marks, as flags.
  std::vector<bool> trained_rows() const;

 protected:
  /// Registers "table" (rows, heads), drawn normal(0, init_std), or truncated normal (Swin's init) when `truncated`.
  TableScheme(const PositionOptions& o, int64_t rows, Generator& gen, bool truncated);
  /// The (q_len, k_len) i64 row index.
  virtual Tensor make_index(const Positions& p) const = 0;
  /// The row of each column of relative_bias(p): on a line column m is key - query = m - (q_offset + q_len - 1);
  /// on a grid, the (dy, dx) offsets in the order of position_detail::for_grid_offsets.
  virtual std::vector<int64_t> relative_rows(const Positions& p) const = 0;
  /// The header of the report ("T5 buckets (causal, 32 buckets, max_distance 128); ...").
  virtual std::string report_title() const = 0;

  PositionOptions o_;

 private:
  /// In a training forward, marks the rows the unmasked scores at `p` read (on a causal line, key - query <= 0).
  void note_trained(const Positions& p) const;
  /// Marks `rows` (in a training forward), when one is not yet marked.
  void mark_trained(const std::vector<int64_t>& rows) const;
  /// The table this forward reads: `table`, or in evaluation with untrained = "nearest" its rows as nearest_rows()
  /// picks them.
  Tensor read_table() const;

  LastValueCache cache_, rel_cache_, nearest_cache_;  // nearest_cache_: keyed by the trained flags

 public:
  Tensor table;    // (rows, heads)
  Tensor trained;  // (rows) 1 where a training forward read the row, else 0
};

}  // namespace rpb::nn
