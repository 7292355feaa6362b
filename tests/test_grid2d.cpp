// train/grid2d: the 2-D neighbour task.
#include <doctest/doctest.h>

#include <cmath>

#include "test_util.h"
#include "train/data/grid2d.h"

using namespace rpb;
using namespace rpb::data;
using rpb::testing::contains;
using rpb::testing::error_of;

TEST_CASE("grid2d: targets follow the table of the left and upper neighbours, with the stated noise") {
  Grid2DOptions o;
  o.vocab = 5;
  o.noise = 0.2;
  const Grid2DTask task(o);
  Generator gen(1);
  Tensor x, y;
  task.sample(64, 12, 9, gen, x, y);
  CHECK(x.shape() == Shape{64, 12, 9});
  const int64_t* px = x.data<int64_t>();
  const int64_t* py = y.data<int64_t>();
  int64_t hits = 0;
  double nll = 0;
  const double V = 5, e = 0.2;
  for (int64_t b = 0; b < 64; ++b)
    for (int64_t r = 0; r < 12; ++r)
      for (int64_t c = 0; c < 9; ++c) {
        const int64_t* g = px + b * 108;
        const int64_t left = c > 0 ? g[r * 9 + c - 1] : 5, up = r > 0 ? g[(r - 1) * 9 + c] : 5;
        const int64_t want = task.table()[static_cast<std::size_t>(left * 6 + up)];
        const bool hit = py[b * 108 + r * 9 + c] == want;
        hits += hit;
        nll -= std::log(hit ? 1 - e + e / V : e / V);  // the Bayes-optimal predictor's loss
      }
  const double n = 64.0 * 108.0;
  CHECK(static_cast<double>(hits) / n == doctest::Approx(1 - e + e / V).epsilon(0.03));
  // The closed-form entropy is the optimal predictor's expected loss.
  CHECK(nll / n == doctest::Approx(task.entropy_per_cell()).epsilon(0.03));
  CHECK(task.optimal_perplexity() == doctest::Approx(std::exp(task.entropy_per_cell())));
}

TEST_CASE("grid2d: entropy in closed form, determinism, and held-out grids of equal cell counts") {
  Grid2DOptions o;
  o.vocab = 4;
  o.noise = 0.0;
  CHECK(Grid2DTask(o).entropy_per_cell() == 0.0);
  o.noise = 0.1;
  const double hit = 0.9 + 0.1 / 4, miss = 0.1 / 4;
  CHECK(Grid2DTask(o).entropy_per_cell() == doctest::Approx(-hit * std::log(hit) - 3 * miss * std::log(miss)));
  const Grid2DTask a(o), b(o);
  CHECK(a.table() == b.table());
  o.seed = 9;
  CHECK(Grid2DTask(o).table() != a.table());
  Tensor x1, y1, x2, y2;
  a.eval_grids(8, x1, y1);
  b.eval_grids(8, x2, y2);
  CHECK(x1.to_vector() == x2.to_vector());
  CHECK(y1.to_vector() == y2.to_vector());
  CHECK(x1.numel() == (1 << 14));
  a.eval_grids(32, x2, y2);
  CHECK(x2.numel() == (1 << 14));
  CHECK(x2.size(0) == 16);
}

TEST_CASE("grid2d: bad options name the key") {
  Grid2DOptions o;
  o.vocab = 1;
  CHECK(contains(error_of([&] { Grid2DTask t(o); }), "task.vocab must lie in [2, 4096], got 1"));
  o = {};
  o.noise = 1.0;
  CHECK(contains(error_of([&] { Grid2DTask t(o); }), "task.noise"));
}
