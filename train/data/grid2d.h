// rpb/train/data/grid2d.h: the 2-D neighbour task, whose optimal perplexity is exact.
//
// Inputs X are grids of uniform tokens. Each target Y[r, c] is T[X[r, c-1], X[r-1, c]] — a
// random table of the left and upper neighbours (a neighbour outside the grid reads a border
// symbol) — except that with probability `noise` it is a fresh uniform token. The best any
// model can do given X is to know T: per cell the cross-entropy is then exactly
//   H = -(1 - e + e/V) log(1 - e + e/V) - (V - 1) (e/V) log(e/V),
// at every cell of every grid size. A model must find "the cell one to the left and the cell
// one up" wherever it stands: a 2-D relative-offset task, which windows cut at their borders
// unless they shift.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/rng.h"
#include "core/tensor.h"
#include "train/data/task.h"

namespace rpb::data {

struct Grid2DOptions {
  int64_t vocab = 8;         // V: input and output tokens
  double noise = 0.1;        // e: probability of a uniform target instead of the table's
  uint64_t seed = 0;         // the table T and the held-out grids
  int64_t eval_cells = 1 << 14;  // cells scored at every evaluation size
};

class Grid2DTask {
 public:
  /// Throws rpb::Error naming the option (task.vocab, task.noise, task.eval_cells) when out of range.
  explicit Grid2DTask(const Grid2DOptions& options);

  int64_t vocab() const { return o_.vocab; }
  /// Nats per cell of the Bayes-optimal predictor (closed form, above).
  double entropy_per_cell() const;
  double optimal_perplexity() const;
  std::string describe() const;
  /// The table T: (V+1) x (V+1) entries, index left * (V+1) + up, the border symbol being V.
  const std::vector<int32_t>& table() const { return table_; }

  /// `batch` grids of h x w drawn from `gen`: x and y are (batch, h, w) i64.
  void sample(int64_t batch, int64_t h, int64_t w, Generator& gen, Tensor& x, Tensor& y) const;
  /// Held-out grids of side x side: `cells` / side^2 of them (at least one; `cells` 0: eval_cells), from a
  /// generator derived from the seed, the split and the side, so every call returns the same grids.
  void eval_grids(int64_t side, Tensor& x, Tensor& y, Split split = Split::test, int64_t cells = 0) const;

 private:
  Grid2DOptions o_;
  std::vector<int32_t> table_;
};

}  // namespace rpb::data
