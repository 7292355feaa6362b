// sinusoidal2d: [sinusoidal_table(H, d/2)[row], sinusoidal_table(W, d/2)[column]] added to the tokens (the
// repo's interleaved sin/cos per frequency; MAE's get_2d_sincos_pos_embed instead puts the column half first
// and blocks sin | cos).
#include <algorithm>

#include "nn/last_value_cache.h"
#include "nn/position/common.h"

namespace rpb::nn {

namespace {

class Sinusoidal2D final : public PositionScheme {
 public:
  explicit Sinusoidal2D(const PositionOptions& o) : o_(o) {}

  Tensor embed(const Positions& p) const override {
    check(p, "sinusoidal2d");
    const int64_t H = p.height, W = p.width;
    return cache_.get({H, W, static_cast<int64_t>(dtype_carrier.dtype())}, [&] {
      const int64_t half = o_.d_model / 2;
      const std::vector<double> rows = sinusoidal_table(H, half, 0, DType::f64).to_vector();
      const std::vector<double> cols = sinusoidal_table(W, half, 0, DType::f64).to_vector();
      std::vector<double> v(static_cast<std::size_t>(H * W * o_.d_model));
      for (int64_t r = 0; r < H; ++r)
        for (int64_t c = 0; c < W; ++c) {
          double* q = v.data() + (r * W + c) * o_.d_model;
          std::copy_n(rows.data() + r * half, half, q);
          std::copy_n(cols.data() + c * half, half, q + half);
        }
      return position_detail::from_doubles({H * W, o_.d_model}, v, dtype_carrier.dtype());
    }).to(dtype_carrier.device());  // made on the host, used where the model is
  }

 private:
  PositionOptions o_;
  LastValueCache cache_;

 public:
  // Holds no information: a non-persistent buffer whose dtype (set by Module::to) is the embeddings' dtype.
  Tensor dtype_carrier = register_buffer("dtype_carrier", Tensor::zeros({1}, o_.dtype), /*persistent=*/false);  // (1)
};

}  // namespace

namespace {

void validate_sinusoidal2d(const PositionOptions& o) {
  RPB_CHECK_OPTION(o.d_model >= 4 && o.d_model % 4 == 0, "sinusoidal2d", "d_model", "d_model ", o.d_model,
                   " must be a positive multiple of 4 (half the channels per axis, sin and cos per frequency)");
}
std::shared_ptr<PositionScheme> make_sinusoidal2d(const PositionOptions& o, Generator&) {
  return std::make_shared<Sinusoidal2D>(o);
}

// The registry row (nn/position/scheme.h).
const SchemeRegistrar sinusoidal2d_row({.name = "sinusoidal2d", .dims = 2, .kind = PositionKind::absolute, .label = "Sinusoidal 2-D (global)",
     .description = "sinusoids of the row and the column", .per_layer = false,
     .parameters = position_detail::no_parameters, .max_length = position_detail::unbounded, .length_option = nullptr,
     .validate = validate_sinusoidal2d, .make = make_sinusoidal2d, .window_bias = WindowBias::none,
     .embedding = EmbeddingRecipe::scaled, .rank = 130});

}  // namespace

}  // namespace rpb::nn
