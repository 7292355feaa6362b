// shaw: a learned (2K+1, heads) scalar table indexed by clip(key - query, -K, K) + K, the scalar form of
// tensor2tensor's `_generate_relative_positions_matrix` (seed 002). Init normal(0, init_std).
#include <algorithm>

#include "nn/position/common.h"
#include "nn/position/table_scheme.h"

namespace rpb::nn {

namespace {

class ShawScheme final : public TableScheme {
 public:
  ShawScheme(const PositionOptions& o, Generator& gen) : TableScheme(o, 2 * o.max_relative_position + 1, gen, false) {}

  std::string title() const override { return "shaw index clip(key - query, -K, K) + K"; }
  std::string title_options() const override { return "K = " + std::to_string(o_.max_relative_position); }

  // Row k reads key - query = k - K; the first and the last row also every offset beyond.
  std::vector<report::RowSpan> row_spans() const override {
    const int64_t K = o_.max_relative_position;
    std::vector<report::RowSpan> r(static_cast<std::size_t>(2 * K + 1));
    for (int64_t k = 0; k <= 2 * K; ++k) r[static_cast<std::size_t>(k)] = {k - K, k - K, k == 0, k == 2 * K, true};
    return r;
  }

 private:
  Tensor make_index(const Positions& p) const override {
    return shaw_index(p.q_len, p.k_len, p.q_offset, o_.max_relative_position);
  }
  std::vector<int64_t> relative_rows(const Positions& p) const override {
    const int64_t K = o_.max_relative_position;
    std::vector<int64_t> v(static_cast<std::size_t>(p.q_len + p.k_len - 1));
    for (std::size_t m = 0; m < v.size(); ++m)
      v[m] = std::clamp(static_cast<int64_t>(m) - (p.q_offset + p.q_len - 1), -K, K) + K;
    return v;
  }
  std::string report_title() const override {
    return "Shaw clipped positions, K = " + std::to_string(o_.max_relative_position);
  }
};

}  // namespace

namespace {

void validate_shaw(const PositionOptions& o) { position_detail::check_clipped_table(o, ""); }
std::shared_ptr<PositionScheme> make_shaw(const PositionOptions& o, Generator& gen) {
  return std::make_shared<ShawScheme>(o, gen);
}

// The registry row (nn/position/scheme.h).
const SchemeRegistrar shaw_row({.name = "shaw", .dims = 1, .kind = PositionKind::additive_bias, .label = "Shaw (clipped)",
     .description = "a learned bias per key - query clipped to [-K, K]", .per_layer = true,
     .parameters = [](const PositionOptions& o) { return position_detail::per_head(o, 2 * o.max_relative_position + 1); },
     .max_length = position_detail::unbounded, .length_option = nullptr, .validate = validate_shaw,
     .make = make_shaw, .window_bias = WindowBias::none, .row_table = true, .rank = 50,
     .reads = {"max_relative_position", "init_std"},
     .bidirectional = "clip(key - query, -K, K) of either sign, as tensor2tensor's encoder reads it"});

}  // namespace

// tensor2tensor `_generate_relative_positions_matrix`: distance_mat[i][j] = j - i (key - query), clipped to
// [-K, K] and shifted by K. Seed 002's prose table shows i - j, but its code (and tensor2tensor) compute
// j - i; we follow the code, which is also T5's sign.
Tensor shaw_index(int64_t q_len, int64_t k_len, int64_t q_offset, int64_t max_relative_position) {
  position_detail::check_line("shaw_index", q_len, k_len, q_offset);
  const int64_t k = max_relative_position;
  RPB_CHECK(k >= 1, "shaw_index", "max_relative_position ", k, " must be at least 1");
  std::vector<int64_t> v(static_cast<std::size_t>(q_len * k_len));
  for (int64_t r = 0; r < q_len; ++r)
    for (int64_t c = 0; c < k_len; ++c)
      v[static_cast<std::size_t>(r * k_len + c)] = std::clamp(c - (q_offset + r), -k, k) + k;
  return Tensor::indices({q_len, k_len}, v);
}

}  // namespace rpb::nn
