// clipped2d: a learned ((2K+1)^2, heads) table (truncated-normal init) read at the clipped 2-D offset, with
// Swin's sign: dy, dx = query - key per axis, row (clip(dy, -K, K) + K) * (2K+1) + clip(dx, -K, K) + K.
#include <algorithm>

#include "nn/position/common.h"
#include "nn/position/table_scheme.h"

namespace rpb::nn {

namespace {

class Clipped2D final : public TableScheme {
 public:
  Clipped2D(const PositionOptions& o, Generator& gen)
      : TableScheme(o, (2 * o.max_relative_position + 1) * (2 * o.max_relative_position + 1), gen, true) {}

 private:
  Tensor make_index(const Positions& p) const override {
    return clipped_relative_index_2d(p.height, p.width, o_.max_relative_position);
  }
  std::vector<int64_t> relative_rows(const Positions& p) const override {
    const int64_t K = o_.max_relative_position;
    std::vector<int64_t> v;
    // (dy, dx) is key - query; the table is read at query - key = (-dy, -dx).
    position_detail::for_grid_offsets(p, [&](int64_t dy, int64_t dx) {
      v.push_back((std::clamp(-dy, -K, K) + K) * (2 * K + 1) + std::clamp(-dx, -K, K) + K);
    });
    return v;
  }
  std::string report_title() const override {
    return "clipped 2-D table, K = " + std::to_string(o_.max_relative_position);
  }
};

}  // namespace

namespace {

void validate_clipped2d(const PositionOptions& o) { position_detail::check_clipped_table(o, " per axis"); }
std::shared_ptr<PositionScheme> make_clipped2d(const PositionOptions& o, Generator& gen) {
  return std::make_shared<Clipped2D>(o, gen);
}

// The registry row (nn/position/scheme.h).
const SchemeRegistrar clipped2d_row({.name = "clipped2d", .dims = 2, .kind = PositionKind::additive_bias, .label = "Clipped 2-D table (global)",
     .description = "a learned bias per 2-D offset clipped to [-K, K]", .per_layer = false,
     .parameters = [](const PositionOptions& o) {
       const int64_t side = 2 * o.max_relative_position + 1;
       return position_detail::per_head(o, checked_mul(side, side, "position", "clipped2d table"));
     },
     .max_length = position_detail::unbounded, .length_option = nullptr, .validate = validate_clipped2d,
     .make = make_clipped2d, .window_bias = WindowBias::none, .row_table = true, .rank = 150,
     .reads = {"max_relative_position", "init_std"}});

}  // namespace

Tensor clipped_relative_index_2d(int64_t H, int64_t W, int64_t max_relative_position) {
  RPB_CHECK(H >= 1 && W >= 1, "clipped_relative_index_2d", "grid ", H, " x ", W, " must have at least one cell");
  const int64_t k = max_relative_position;
  RPB_CHECK(k >= 1, "clipped_relative_index_2d", "max_relative_position ", k, " must be at least 1");
  const int64_t n = H * W;
  std::vector<int64_t> v(static_cast<std::size_t>(n * n));
  for (int64_t p = 0; p < n; ++p)
    for (int64_t q = 0; q < n; ++q) {
      const int64_t dy = std::clamp(p / W - q / W, -k, k) + k, dx = std::clamp(p % W - q % W, -k, k) + k;
      v[p * n + q] = dy * (2 * k + 1) + dx;
    }
  return Tensor::indices({n, n}, v);
}

}  // namespace rpb::nn
