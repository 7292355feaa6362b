// rpb/nn/attention_stats.h: attention diagnostics. Per head, how far the keys a query attends to lie from it
// (the mean attention distance) and how spread its attention is (the entropy), accumulated over the queries of
// the forwards a recorder watches.
#pragma once

#include <cstdint>
#include <vector>

#include "core/ops.h"

namespace rpb::nn {

/// Per-head sums of one attention layer's diagnostics over the queries it saw. For query i with attention
/// probabilities p_ij over the keys j:
///   distance: sum_j p_ij dist(i, j), dist = |i - j| in positions on a line, the Euclidean distance between the
///             two cells on a grid (ViT's "mean attention distance");
///   entropy:  -sum_j p_ij log p_ij in nats.
/// A query whose keys are all masked is not counted.
class AttentionStats {
 public:
  /// Sums for `heads` heads; `grid_width` > 0 when queries and keys are the cells of a grid with that many columns
  /// in raster order, 0 on a line.
  explicit AttentionStats(int64_t heads = 0, int64_t grid_width = 0);

  int64_t heads() const { return static_cast<int64_t>(queries_.size()); }
  int64_t grid_width() const { return grid_width_; }
  /// Adds `queries` queries of `head` whose distances and entropies sum to `distance` and `entropy`.
  void add(int64_t head, double distance, double entropy, int64_t queries = 1);
  /// The queries counted for `head`.
  int64_t queries(int64_t head) const;
  /// The mean distance and entropy over the queries of `head` (0 when none was counted).
  double mean_distance(int64_t head) const;
  double entropy(int64_t head) const;
  /// From now on counts only the queries where `queries` (B, Tq) i64 is non-zero: in each attention
  /// call (whose batch and queries must be those), the query i of batch entry b when queries[b, i] != 0. Undefined
  /// (the default) counts every query. Passkey retrieval counts the answer's queries this way.
  void count_only(const Tensor& queries);
  /// The queries counted (count_only), or undefined when every query is.
  const Tensor& counted_queries() const { return counted_; }

 private:
  int64_t grid_width_ = 0;
  Tensor counted_;                    // (B, Tq) i64, or undefined: every query counts
  std::vector<double> distance_sum_;  // (H)
  std::vector<double> entropy_sum_;   // (H)
  std::vector<int64_t> queries_;      // (H)
};

/// What one attention call reads, for its diagnostics: softmax(scale q k^T + bias + score_bias + masks) row by row.
struct AttentionInputs {
  Tensor q;               // (B, H, Tq, dh), already rotated when the scheme is rotary
  Tensor k;               // (B, H, Tk, dh)
  double scale = 1.0;     // multiplies q k^T
  Tensor full_bias;       // (H, Tq, Tk), or undefined (then `relative` is read, if defined)
  RelativeBias relative;  // (H, R) per offset, as fused_attention reads it (core/ops.h)
  bool causal = false;    // key j is masked for query i when j > q_offset + i
  int64_t q_offset = 0;   // the position of the first query (keys start at 0)
  int64_t block = 0;      // with causal, > 0: blockwise causal attention (core/ops.h AttentionSpec::block)
  Tensor key_padding;     // (B, Tk) non-zero at masked keys, or undefined
  Tensor score_bias;      // (G, Tq, Tk) added to the scores of batch entry b from group b % G (Swin's region
                          // mask per window), or undefined
  Tensor query_padding;   // (B, Tq) non-zero at queries left out (padded cells), or undefined
  /// (G, T, 2) i64 with Tq = Tk = T: the grid cell (row, column) of token t of batch entry b, from group b % G,
  /// for the Euclidean distance (window attention: a window's tokens where they sit on the unrolled grid); or
  /// undefined, when the stats' geometry places the tokens.
  Tensor cells;
};

/// Adds the distance and entropy of every query of `in` (each batch entry and head) to `stats`, whose heads must
/// be q's and whose grid_width is the geometry of the positions unless `in.cells` places them. The probabilities are computed in double, a row
/// at a time: memory O(Tk) per thread, never (Tq, Tk).
void accumulate_attention_stats(const AttentionInputs& in, AttentionStats& stats);

/// An attention layer that can report its diagnostics: while a sink is set, each forward also adds the distance
/// and entropy of every query's attention to it (accumulate_attention_stats), and its output is what it would be
/// without. MultiHeadAttention and WindowAttention are ones; AttentionStatsRecorder sets and clears the sink.
class AttentionStatsSource {
 public:
  virtual ~AttentionStatsSource() = default;
  /// The heads a sink for this layer must have.
  virtual int64_t heads() const = 0;
  /// Null detaches.
  void set_stats_sink(AttentionStats* sink) { stats_ = sink; }
  AttentionStats* stats_sink() const { return stats_; }

 protected:
  AttentionStats* stats_ = nullptr;  // diagnostics sink, or null
};

/// Records the diagnostics of attention layers for its lifetime: attaches one AttentionStats per layer on
/// construction and detaches them on destruction (RAII). Not for layers that run forwards on several threads at
/// once.
///
/// @code
/// rpb::Generator gen(0);
/// rpb::nn::TransformerOptions o;
/// o.vocab = 16; o.d_model = 32; o.heads = 4; o.layers = 2; o.d_ff = 64;
/// o.position.scheme = "alibi";
/// rpb::nn::LanguageModel lm(o, gen);
/// lm.eval();
/// rpb::NoGradGuard no_grad;
/// rpb::nn::AttentionStatsRecorder recorder(lm.attention_layers());
/// lm.forward(rpb::randint({2, 8}, 16, gen));
/// CHECK(recorder.layers().size() == 2);
/// CHECK(recorder.layers()[0].queries(3) == 16);  // 2 sequences x 8 queries
/// CHECK(recorder.layers()[1].mean_distance(0) <= 7.0);
/// @endcode
class AttentionStatsRecorder {
 public:
  /// `grid_width` > 0: the layers attend over the cells of grids with that many columns (raster order); a layer
  /// that places its tokens itself (AttentionInputs::cells) ignores it.
  explicit AttentionStatsRecorder(std::vector<AttentionStatsSource*> layers, int64_t grid_width = 0);
  /// The same for layers of one derived type (LanguageModel::attention_layers()).
  template <typename Layer>
  explicit AttentionStatsRecorder(const std::vector<Layer*>& layers, int64_t grid_width = 0)
      : AttentionStatsRecorder(std::vector<AttentionStatsSource*>(layers.begin(), layers.end()), grid_width) {}
  ~AttentionStatsRecorder();
  AttentionStatsRecorder(const AttentionStatsRecorder&) = delete;
  AttentionStatsRecorder& operator=(const AttentionStatsRecorder&) = delete;

  /// The statistics so far, [layer].
  const std::vector<AttentionStats>& layers() const { return stats_; }
  /// Every layer's AttentionStats::count_only(queries).
  void count_only(const Tensor& queries);

 private:
  std::vector<AttentionStatsSource*> layers_;
  std::vector<AttentionStats> stats_;  // one per layer; never resized while attached
};

}  // namespace rpb::nn
