#include "train/data/grid2d.h"

#include <cmath>
#include <sstream>

#include "train/data/sampling.h"

namespace rpb::data {

namespace {
constexpr uint64_t kTableSalt = 0x67726964'7461626cull;  // "gridtabl"
constexpr uint64_t kEvalSalt = 0x67726964'6576616cull;   // "grideval"
constexpr uint64_t kValidSalt = 0x67726964'76616c64ull;  // "gridvald"
}  // namespace

Grid2DTask::Grid2DTask(const Grid2DOptions& o) : o_(o) {
  RPB_CHECK(o.vocab >= 2 && o.vocab <= 4096, "grid2d", "task.vocab must lie in [2, 4096], got ", o.vocab);
  RPB_CHECK(o.noise >= 0 && o.noise < 1, "grid2d", "task.noise must lie in [0, 1), got ", o.noise);
  RPB_CHECK(o.eval_cells >= 1, "grid2d", "task.eval_cells must be >= 1, got ", o.eval_cells);
  Generator gen(o.seed ^ kTableSalt);
  const uint64_t v = static_cast<uint64_t>(o.vocab);
  table_.resize((v + 1) * (v + 1));
  for (int32_t& t : table_) t = static_cast<int32_t>(uniform_index(gen, v));
}

double Grid2DTask::entropy_per_cell() const {
  const double v = static_cast<double>(o_.vocab), e = o_.noise;
  const double hit = 1 - e + e / v, miss = e / v;
  return -hit * std::log(hit) - (e > 0 ? (v - 1) * miss * std::log(miss) : 0.0);
}

double Grid2DTask::optimal_perplexity() const { return std::exp(entropy_per_cell()); }

std::string Grid2DTask::describe() const {
  std::ostringstream os;
  os << "grid2d: targets T[left, up] of uniform input grids over " << o_.vocab << " tokens with noise " << o_.noise
     << ", seed " << o_.seed << "; entropy " << entropy_per_cell() << " nats/cell (optimal perplexity "
     << optimal_perplexity() << "); " << o_.eval_cells << " held-out cells per size";
  return os.str();
}

void Grid2DTask::sample(int64_t batch, int64_t h, int64_t w, Generator& gen, Tensor& x, Tensor& y) const {
  RPB_CHECK(batch >= 1 && h >= 1 && w >= 1, "grid2d", "grid batch ", batch, " of ", h, " x ", w, " is empty");
  x = Tensor::empty({batch, h, w}, DType::i64);
  y = Tensor::empty({batch, h, w}, DType::i64);
  int64_t* px = x.mutable_data<int64_t>();
  int64_t* py = y.mutable_data<int64_t>();
  const uint64_t v = static_cast<uint64_t>(o_.vocab);
  const int64_t border = o_.vocab;
  for (int64_t i = 0; i < x.numel(); ++i) px[i] = static_cast<int64_t>(uniform_index(gen, v));
  for (int64_t b = 0; b < batch; ++b)
    for (int64_t r = 0; r < h; ++r)
      for (int64_t c = 0; c < w; ++c) {
        const int64_t* g = px + b * h * w;
        const int64_t left = c > 0 ? g[r * w + c - 1] : border, up = r > 0 ? g[(r - 1) * w + c] : border;
        int64_t target = table_[static_cast<std::size_t>(left * (o_.vocab + 1) + up)];
        if (gen.uniform() < o_.noise) target = static_cast<int64_t>(uniform_index(gen, v));
        py[b * h * w + r * w + c] = target;
      }
}

void Grid2DTask::eval_grids(int64_t side, Tensor& x, Tensor& y, Split split, int64_t cells) const {
  RPB_CHECK(side >= 1, "grid2d", "evaluation grid side must be >= 1, got ", side);
  const uint64_t salt = split == Split::test ? kEvalSalt : kValidSalt;
  Generator gen(o_.seed ^ salt ^ static_cast<uint64_t>(side) * 0x9E3779B97F4A7C15ull);
  sample(std::max<int64_t>(1, (cells > 0 ? cells : o_.eval_cells) / (side * side)), side, side, gen, x, y);
}

}  // namespace rpb::data
