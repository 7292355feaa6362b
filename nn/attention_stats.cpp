#include "nn/attention_stats.h"

#include <algorithm>
#include <cmath>

#include "core/parallel.h"

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

void AttentionStats::count_only(const Tensor& queries) {
  if (!queries.defined()) {
    counted_ = Tensor();
    return;
  }
  RPB_CHECK(queries.dim() == 2 && queries.dtype() == DType::i64, "attention stats", "the queries counted ",
            queries.shape(), " are not a (B, Tq) i64 tensor");
  counted_ = queries;
}

namespace {

// Where the bias of (query i, key j) is read and how far apart the two are.
struct RowGeometry {
  int64_t Tq = 0, Tk = 0, q_offset = 0;
  int64_t width = 0;                    // grid columns; 0 on a line
  int64_t bias_rows = 0, bias_cols = 0;  // a relative bias over a grid: its extents
  // The distance of (i, j); `cells` (T, 2): their grid cells, or null to place them by `width`.
  double distance(int64_t i, int64_t j, const int64_t* cells) const {
    double dy = 0, dx = 0;
    if (cells != nullptr) {
      dy = static_cast<double>(cells[2 * i] - cells[2 * j]), dx = static_cast<double>(cells[2 * i + 1] - cells[2 * j + 1]);
    } else if (width == 0) {
      return std::abs(static_cast<double>(q_offset + i - j));
    } else {
      dy = static_cast<double>(i / width - j / width), dx = static_cast<double>(i % width - j % width);
    }
    return std::sqrt(dy * dy + dx * dx);
  }
  // The RelativeBias column of (i, j), in core/ops/attention.cpp's layout: j - i + Tq - 1 on a line; on a grid
  // (dy + rows - 1) (2 cols - 1) + dx + cols - 1 with dy, dx = key - query per axis (tokens in raster order).
  int64_t column(int64_t i, int64_t j) const {
    if (bias_rows == 0) return j - i + Tq - 1;
    const int64_t c = bias_cols;
    return (j / c - i / c + bias_rows - 1) * (2 * c - 1) + j % c - i % c + c - 1;
  }
};

RowGeometry row_geometry(const AttentionInputs& in, const AttentionStats& stats) {
  RowGeometry g{in.q.size(2), in.k.size(2), in.q_offset, stats.grid_width(), 0, 0};
  const std::vector<int64_t>& grid = in.relative.grid;
  RPB_CHECK(in.relative.positions.empty(), "attention stats", "a bias at explicit positions (randomized, a training "
            "forward's) is not measured: evaluations read positions 0 .. T - 1");
  if (in.full_bias.defined() || !in.relative.defined() || grid.empty()) return g;
  RPB_CHECK(grid.size() == 2 && grid[0] * grid[1] == g.Tq && g.Tq == g.Tk, "attention stats",
            "a relative bias over a grid needs a 2-D grid covering the ", g.Tq, " queries and ", g.Tk, " keys; got ",
            grid.size(), " extents");
  g.bias_rows = grid[0];
  g.bias_cols = grid[1];
  return g;
}

// Checks that `t`, if defined, is (G, n1, n2) with G dividing the batch B.
void check_grouped(const char* what, const Tensor& t, int64_t n1, int64_t n2, int64_t B) {
  if (!t.defined()) return;
  RPB_CHECK(t.dim() == 3 && t.size(1) == n1 && t.size(2) == n2 && t.size(0) >= 1 && B % t.size(0) == 0,
            "attention stats", what, " ", t.shape(), " is not (G, ", n1, ", ", n2, ") with G dividing the batch ", B);
}

void check_inputs(const AttentionInputs& in, const AttentionStats& stats) {
  const Tensor &q = in.q, &k = in.k;
  RPB_CHECK(q.dim() == 4 && k.dim() == 4 && q.size(0) == k.size(0) && q.size(1) == k.size(1) &&
                q.size(3) == k.size(3),
            "attention stats", "q ", q.shape(), " and k ", k.shape(), " are not (B, H, Tq, dh) and (B, H, Tk, dh)");
  RPB_CHECK(q.size(1) == stats.heads(), "attention stats", "q ", q.shape(), " has not the stats' ", stats.heads(),
            " heads");
  const int64_t B = q.size(0), Tq = q.size(2), Tk = k.size(2);
  if (in.cells.defined()) {
    RPB_CHECK(Tq == Tk && in.q_offset == 0 && in.cells.dtype() == DType::i64, "attention stats", "cells ",
              in.cells.shape(), " place the tokens of a grid, but q ", q.shape(), " and k ", k.shape(),
              " are not the same tokens (or the cells are not i64)");
    check_grouped("cells", in.cells, Tq, 2, B);
  } else if (stats.grid_width() > 0) {
    RPB_CHECK(Tq == Tk && Tq % stats.grid_width() == 0 && in.q_offset == 0, "attention stats", "q ", q.shape(),
              " and k ", k.shape(), " are not the cells of a grid of width ", stats.grid_width());
  }
  if (in.full_bias.defined())
    RPB_CHECK(in.full_bias.shape() == Shape({q.size(1), Tq, Tk}), "attention stats", "bias ", in.full_bias.shape(),
              " is not (H, Tq, Tk) for q ", q.shape(), " and k ", k.shape());
  check_grouped("score bias", in.score_bias, Tq, Tk, B);
  if (in.key_padding.defined())
    RPB_CHECK(in.key_padding.shape() == Shape({B, Tk}), "attention stats", "key padding ", in.key_padding.shape(),
              " is not (B, Tk) for k ", k.shape());
  if (in.query_padding.defined())
    RPB_CHECK(in.query_padding.shape() == Shape({B, Tq}), "attention stats", "query padding ",
              in.query_padding.shape(), " is not (B, Tq) for q ", q.shape());
  if (stats.counted_queries().defined())
    RPB_CHECK(stats.counted_queries().shape() == Shape({B, Tq}), "attention stats", "the queries counted ",
              stats.counted_queries().shape(), " are not (B, Tq) for q ", q.shape());
}

// Sums of one (batch, head) item over its queries.
struct ItemSums {
  double distance = 0, entropy = 0;
  int64_t queries = 0;
};

// The probabilities of a row from its scores s (masked keys -inf): p_j = exp(s_j - m) / Z, and
// -sum_j p_j log p_j = m + log Z - sum_j p_j s_j, summed over the unmasked keys only.
void add_row(const std::vector<double>& s, const RowGeometry& g, int64_t i, const int64_t* cells, ItemSums& sums) {
  double m = -INFINITY;
  for (const double v : s) m = std::max(m, v);
  if (m == -INFINITY) return;  // every key masked
  double z = 0, ps = 0, pd = 0;
  for (int64_t j = 0; j < g.Tk; ++j) {
    if (s[j] == -INFINITY) continue;
    const double e = std::exp(s[j] - m);
    z += e, ps += e * s[j], pd += e * g.distance(i, j, cells);
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
  // Measured on the host, in float64, from the inputs on any device.
  auto host = [](const Tensor& t, DType d) { return t.defined() ? t.to(Device::cpu).to(d) : Tensor(); };
  const Tensor q = host(in.q, DType::f64), k = host(in.k, DType::f64);
  const Tensor full = host(in.full_bias, DType::f64);
  const Tensor rel = !full.defined() ? host(in.relative.table, DType::f64) : Tensor();
  const Tensor sb = host(in.score_bias, DType::f64);
  const Tensor kpad = host(in.key_padding, DType::i64);
  const Tensor qpad = host(in.query_padding, DType::i64);
  const Tensor& counted = stats.counted_queries();  // i64
  const Tensor& cells = in.cells;
  const int64_t R = rel.defined() ? rel.size(1) : 0;
  std::vector<ItemSums> items(static_cast<std::size_t>(B * H));
  parallel_for(B * H, [&](int64_t begin, int64_t end) {
    std::vector<double> s(static_cast<std::size_t>(g.Tk));
    for (int64_t item = begin; item < end; ++item) {
      const int64_t b = item / H, h = item % H;
      const double* qp = q.data<double>() + item * g.Tq * dh;
      const double* kp = k.data<double>() + item * g.Tk * dh;
      const double* sbp = sb.defined() ? sb.data<double>() + (b % sb.size(0)) * g.Tq * g.Tk : nullptr;
      const int64_t* cp = cells.defined() ? cells.data<int64_t>() + (b % cells.size(0)) * g.Tq * 2 : nullptr;
      for (int64_t i = 0; i < g.Tq; ++i) {
        if (qpad.defined() && qpad.data<int64_t>()[b * g.Tq + i]) continue;
        if (counted.defined() && counted.data<int64_t>()[b * g.Tq + i] == 0) continue;
        const int64_t first = block_first_key(g.q_offset + i, in.block);
        for (int64_t j = 0; j < g.Tk; ++j) {
          const bool masked = (in.causal && (j > g.q_offset + i || j < first)) ||
                              (kpad.defined() && kpad.data<int64_t>()[b * g.Tk + j]);
          if (masked) {
            s[j] = -INFINITY;
            continue;
          }
          double dot = 0;
          for (int64_t c = 0; c < dh; ++c) dot += qp[i * dh + c] * kp[j * dh + c];
          s[j] = in.scale * dot;
          if (full.defined()) s[j] += full.data<double>()[(h * g.Tq + i) * g.Tk + j];
          else if (rel.defined()) s[j] += rel.data<double>()[h * R + g.column(i, j)];
          if (sbp != nullptr) s[j] += sbp[i * g.Tk + j];
        }
        if (!full.defined() && in.relative.tiles) in.relative.tiles->add(h, g.q_offset + i, 1, 0, g.Tk, s.data(), g.Tk);
        add_row(s, g, i, cp, items[static_cast<std::size_t>(item)]);
      }
    }
  });
  // Items are added in batch order, so the sums do not depend on the thread count.
  for (int64_t item = 0; item < B * H; ++item) {
    const ItemSums& it = items[static_cast<std::size_t>(item)];
    stats.add(item % H, it.distance, it.entropy, it.queries);
  }
}

AttentionStatsRecorder::AttentionStatsRecorder(std::vector<AttentionStatsSource*> layers, int64_t grid_width)
    : layers_(std::move(layers)) {
  stats_.reserve(layers_.size());
  for (AttentionStatsSource* layer : layers_) {
    RPB_CHECK(layer != nullptr, "attention stats", "a recorder needs attention layers, got a null one");
    RPB_CHECK(layer->stats_sink() == nullptr, "attention stats", "a layer is already recorded by another recorder");
    stats_.emplace_back(layer->heads(), grid_width);
  }
  for (std::size_t i = 0; i < layers_.size(); ++i) layers_[i]->set_stats_sink(&stats_[i]);
}

void AttentionStatsRecorder::count_only(const Tensor& queries) {
  for (AttentionStats& s : stats_) s.count_only(queries);
}

AttentionStatsRecorder::~AttentionStatsRecorder() {
  for (AttentionStatsSource* layer : layers_) layer->set_stats_sink(nullptr);
}

}  // namespace rpb::nn
