// alibi2d: B[h, p, q] = -slope_h * sqrt((py - qy)^2 + (px - qx)^2), the Euclidean distance between the query
// and key cells, slopes = alibi_slopes(heads): blind to direction.
#include <cmath>

#include "nn/last_value_cache.h"
#include "nn/position/common.h"

namespace rpb::nn {

namespace {

using position_detail::from_doubles;

class Alibi2D final : public PositionScheme {
 public:
  explicit Alibi2D(const PositionOptions& o) : o_(o) {}

  Tensor bias(const Positions& p) const override {
    check(p, "alibi2d");
    const int64_t W = p.width, n = p.q_len;
    const Tensor neg_dist = cache_.get({p.height, W, static_cast<int64_t>(slopes.dtype())}, [&] {
      std::vector<double> v(static_cast<std::size_t>(n * n));
      for (int64_t a = 0; a < n; ++a)
        for (int64_t b = 0; b < n; ++b) {
          const double dy = static_cast<double>(a / W - b / W), dx = static_cast<double>(a % W - b % W);
          v[a * n + b] = -std::sqrt(dy * dy + dx * dx);
        }
      return from_doubles({1, n, n}, v, slopes.dtype());
    });                                                         // (1, N, N)
    return mul(reshape(slopes, {o_.heads, 1, 1}), neg_dist.to(slopes.device()));  // (heads, N, N)
  }
  RelativeBias relative_bias(const Positions& p) const override {
    check(p, "alibi2d");
    const Tensor neg_dist = rel_cache_.get({p.height, p.width, static_cast<int64_t>(slopes.dtype())}, [&] {
      std::vector<double> v;
      position_detail::for_grid_offsets(p, [&](int64_t dy, int64_t dx) {
        v.push_back(-std::sqrt(static_cast<double>(dy * dy) + static_cast<double>(dx * dx)));
      });
      return from_doubles({1, static_cast<int64_t>(v.size())}, v, slopes.dtype());
    });                                                                                   // (1, R)
    return RelativeBias(mul(reshape(slopes, {o_.heads, 1}), neg_dist.to(slopes.device())),
                        {p.height, p.width});  // (heads, R)
  }

 private:
  PositionOptions o_;
  LastValueCache cache_, rel_cache_;

 public:
  Tensor slopes = register_buffer("slopes", from_doubles({o_.heads}, alibi_slopes(o_.heads), o_.dtype),
                                  /*persistent=*/false);  // (heads)
};

}  // namespace

namespace {

std::shared_ptr<PositionScheme> make_alibi2d(const PositionOptions& o, Generator&) {
  return std::make_shared<Alibi2D>(o);
}

// The registry row (nn/position/scheme.h).
const SchemeRegistrar alibi2d_row({.name = "alibi2d", .dims = 2, .kind = PositionKind::additive_bias, .label = "ALiBi 2-D (global)",
     .description = "-slope_h * the Euclidean distance between cells", .per_layer = false,
     .parameters = position_detail::no_parameters, .max_length = position_detail::unbounded, .length_option = nullptr,
     .validate = position_detail::no_options, .make = make_alibi2d, .window_bias = WindowBias::none, .rank = 140});

}  // namespace

}  // namespace rpb::nn
