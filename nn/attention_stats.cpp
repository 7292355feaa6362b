#include "nn/attention_stats.h"

#include <algorithm>
#include <cmath>

#include "core/parallel.h"
#include "nn/attention.h"

namespace rpb::nn {

AttentionStats::AttentionStats(int64_t heads, int64_t grid_width)
    : grid_width_(grid_width),
      distance_sum_(static_cast<std::size_t>(std::max<int64_t>(heads, 0)), 0.0),
      entropy_sum_(distance_sum_.size(), 0.0),
      queries_(distance_sum_.size(), 0) {
  RPB_CHECK(heads >= 0 && grid_width >= 0, "attention stats", "heads ", heads, " and grid width ", grid_width,
            " must be >= 0");
}

void AttentionStats::add(int64_t head, double distance, double entropy, int64_t queries) {
  RPB_CHECK(head >= 0 && head < heads() && queries >= 0, "attention stats", "head ", head, " is not in [0, ", heads(),
            ") or queries ", queries, " < 0");
  const auto h = static_cast<std::size_t>(head);
  distance_sum_[h] += distance;
  entropy_sum_[h] += entropy;
  queries_[h] += queries;
}

int64_t AttentionStats::queries(int64_t head) const {
  RPB_CHECK(head >= 0 && head < heads(), "attention stats", "head ", head, " is not in [0, ", heads(), ")");
  return queries_[static_cast<std::size_t>(head)];
}

double AttentionStats::mean_distance(int64_t head) const {
  const int64_t n = queries(head);
  return n > 0 ? distance_sum_[static_cast<std::size_t>(head)] / static_cast<double>(n) : 0.0;
}

double AttentionStats::entropy(int64_t head) const {
  const int64_t n = queries(head);
  return n > 0 ? entropy_sum_[static_cast<std::size_t>(head)] / static_cast<double>(n) : 0.0;
}

namespace {

// Where the bias of (query i, key j) is read and how far apart the two are.
struct RowGeometry {
  int64_t Tq = 0, Tk = 0, q_offset = 0;
  int64_t width = 0;      // grid columns; 0 on a line
  int64_t bias_rows = 0;  // a relative bias over a grid: its rows (grid {bias_rows, width})
  double distance(int64_t i, int64_t j) const {
    if (width == 0) return std::abs(static_cast<double>(q_offset + i - j));
    const auto dy = static_cast<double>(i / width - j / width), dx = static_cast<double>(i % width - j % width);
    return std::sqrt(dy * dy + dx * dx);
  }
  // The RelativeBias column of (i, j), in core/ops/attention.cpp's layout: j - i + Tq - 1 on a line; on a grid
  // (dy + rows - 1) (2 width - 1) + dx + width - 1 with dy, dx = key - query per axis.
  int64_t column(int64_t i, int64_t j) const {
    if (bias_rows == 0) return j - i + Tq - 1;
    return (j / width - i / width + bias_rows - 1) * (2 * width - 1) + j % width - i % width + width - 1;
  }
};

RowGeometry row_geometry(const AttentionInputs& in, const AttentionStats& stats) {
  RowGeometry g{in.q.size(2), in.k.size(2), in.q_offset, stats.grid_width(), 0};
  const std::vector<int64_t>& grid = in.relative.grid;
  if (in.full_bias.defined() || !in.relative.defined() || grid.empty()) return g;
  RPB_CHECK(grid.size() == 2 && grid[1] == g.width && grid[0] * grid[1] == g.Tq && g.Tq == g.Tk, "attention stats",
            "a relative bias over a grid needs a 2-D grid of the stats' width ", g.width, " covering the ", g.Tq,
            " queries; got ", grid.size(), " extents");
  g.bias_rows = grid[0];
  return g;
}

void check_inputs(const AttentionInputs& in, const AttentionStats& stats) {
  const Tensor &q = in.q, &k = in.k;
  RPB_CHECK(q.dim() == 4 && k.dim() == 4 && q.size(0) == k.size(0) && q.size(1) == k.size(1) &&
                q.size(3) == k.size(3),
            "attention stats", "q ", q.shape(), " and k ", k.shape(), " are not (B, H, Tq, dh) and (B, H, Tk, dh)");
  RPB_CHECK(q.size(1) == stats.heads(), "attention stats", "q ", q.shape(), " has not the stats' ", stats.heads(),
            " heads");
  if (stats.grid_width() > 0)
    RPB_CHECK(q.size(2) == k.size(2) && q.size(2) % stats.grid_width() == 0 && in.q_offset == 0, "attention stats",
              "q ", q.shape(), " and k ", k.shape(), " are not the cells of a grid of width ", stats.grid_width());
  if (in.full_bias.defined())
    RPB_CHECK(in.full_bias.shape() == Shape({q.size(1), q.size(2), k.size(2)}), "attention stats", "bias ",
              in.full_bias.shape(), " is not (H, Tq, Tk) for q ", q.shape(), " and k ", k.shape());
  if (in.key_padding.defined())
    RPB_CHECK(in.key_padding.shape() == Shape({q.size(0), k.size(2)}), "attention stats", "key padding ",
              in.key_padding.shape(), " is not (B, Tk) for k ", k.shape());
}

// Sums of one (batch, head) item over its queries.
struct ItemSums {
  double distance = 0, entropy = 0;
  int64_t queries = 0;
};

// The probabilities of a row from its scores s (masked keys -inf): p_j = exp(s_j - m) / Z, and
// -sum_j p_j log p_j = m + log Z - sum_j p_j s_j, summed over the unmasked keys only.
void add_row(const std::vector<double>& s, const RowGeometry& g, int64_t i, ItemSums& sums) {
  double m = -INFINITY;
  for (const double v : s) m = std::max(m, v);
  if (m == -INFINITY) return;  // every key masked
  double z = 0, ps = 0, pd = 0;
  for (int64_t j = 0; j < g.Tk; ++j) {
    if (s[j] == -INFINITY) continue;
    const double e = std::exp(s[j] - m);
    z += e, ps += e * s[j], pd += e * g.distance(i, j);
  }
  sums.distance += pd / z;
  sums.entropy += m + std::log(z) - ps / z;
  ++sums.queries;
}

}  // namespace

void accumulate_attention_stats(const AttentionInputs& in, AttentionStats& stats) {
  check_inputs(in, stats);
  const RowGeometry g = row_geometry(in, stats);
  const int64_t B = in.q.size(0), H = in.q.size(1), dh = in.q.size(3);
  const Tensor q = in.q.to(DType::f64), k = in.k.to(DType::f64);
  const Tensor full = in.full_bias.defined() ? in.full_bias.to(DType::f64) : Tensor();
  const Tensor rel = !full.defined() && in.relative.defined() ? in.relative.table.to(DType::f64) : Tensor();
  const Tensor pad = in.key_padding.defined() ? in.key_padding.to(DType::i64) : Tensor();
  const int64_t R = rel.defined() ? rel.size(1) : 0;
  std::vector<ItemSums> items(static_cast<std::size_t>(B * H));
  parallel_for(B * H, [&](int64_t begin, int64_t end) {
    std::vector<double> s(static_cast<std::size_t>(g.Tk));
    for (int64_t item = begin; item < end; ++item) {
      const int64_t b = item / H, h = item % H;
      const double* qp = q.data<double>() + item * g.Tq * dh;
      const double* kp = k.data<double>() + item * g.Tk * dh;
      for (int64_t i = 0; i < g.Tq; ++i) {
        for (int64_t j = 0; j < g.Tk; ++j) {
          const bool masked = (in.causal && j > g.q_offset + i) || (pad.defined() && pad.data<int64_t>()[b * g.Tk + j]);
          if (masked) {
            s[j] = -INFINITY;
            continue;
          }
          double dot = 0;
          for (int64_t c = 0; c < dh; ++c) dot += qp[i * dh + c] * kp[j * dh + c];
          s[j] = in.scale * dot;
          if (full.defined()) s[j] += full.data<double>()[(h * g.Tq + i) * g.Tk + j];
          else if (rel.defined()) s[j] += rel.data<double>()[h * R + g.column(i, j)];
        }
        add_row(s, g, i, items[static_cast<std::size_t>(item)]);
      }
    }
  });
  // Items are added in batch order, so the sums do not depend on the thread count.
  for (int64_t item = 0; item < B * H; ++item) {
    const ItemSums& it = items[static_cast<std::size_t>(item)];
    stats.add(item % H, it.distance, it.entropy, it.queries);
  }
}

AttentionStatsRecorder::AttentionStatsRecorder(std::vector<MultiHeadAttention*> layers, int64_t grid_width)
    : layers_(std::move(layers)) {
  stats_.reserve(layers_.size());
  for (MultiHeadAttention* layer : layers_) {
    RPB_CHECK(layer != nullptr, "attention stats", "a recorder needs attention layers, got a null one");
    RPB_CHECK(layer->stats_sink() == nullptr, "attention stats", "a layer is already recorded by another recorder");
    stats_.emplace_back(layer->heads(), grid_width);
  }
  for (std::size_t i = 0; i < layers_.size(); ++i) layers_[i]->set_stats_sink(&stats_[i]);
}

AttentionStatsRecorder::~AttentionStatsRecorder() {
  for (MultiHeadAttention* layer : layers_) layer->set_stats_sink(nullptr);
}

}  // namespace rpb::nn
