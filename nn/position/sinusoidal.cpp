// sinusoidal: Vaswani et al.'s fixed table, added to the token embeddings (interleaved):
// PE[p, 2i] = sin(p / 10000^(2i/d)), PE[p, 2i+1] = cos(p / 10000^(2i/d)).
#include <cmath>

#include "nn/position/common.h"

namespace rpb::nn {

namespace {

using position_detail::from_doubles;

class SinusoidalScheme final : public PositionScheme {
 public:
  explicit SinusoidalScheme(const PositionOptions& o) : o_(o) {}

  Tensor embed(const Positions& p) const override {
    check(p, "sinusoidal");
    return sinusoidal_table(p.q_len, o_.d_model, p.q_offset, inv_freq.dtype()).to(inv_freq.device());  // (q_len, d_model)
  }

 private:
  PositionOptions o_;

  static std::vector<double> frequencies(int64_t d) {
    std::vector<double> f(static_cast<std::size_t>(d / 2));
    for (int64_t i = 0; i < d / 2; ++i) f[i] = std::pow(10000.0, -2.0 * static_cast<double>(i) / static_cast<double>(d));
    return f;
  }

 public:
  // 10000^(-2i/d): not needed by embed(), which computes in double, but held as a (non-persistent)
  // buffer so that Module::to(dtype) sets the dtype of the embeddings.
  Tensor inv_freq = register_buffer("inv_freq", from_doubles({o_.d_model / 2}, frequencies(o_.d_model), o_.dtype),
                                    /*persistent=*/false);  // (d_model / 2)
};

}  // namespace

namespace {

void validate_sinusoidal(const PositionOptions& o) {
  RPB_CHECK_OPTION(o.d_model >= 1 && o.d_model % 2 == 0, "sinusoidal", "d_model", "d_model ", o.d_model,
                   " must be even and at least 2 (sin and cos per frequency)");
}
std::shared_ptr<PositionScheme> make_sinusoidal(const PositionOptions& o, Generator&) {
  return std::make_shared<SinusoidalScheme>(o);
}

// The registry row (nn/position/scheme.h).
const SchemeRegistrar sinusoidal_row({.name = "sinusoidal", .dims = 1, .kind = PositionKind::absolute, .label = "Sinusoidal",
     .description = "Vaswani et al.'s fixed sinusoids added to the tokens", .per_layer = false,
     .parameters = position_detail::no_parameters, .max_length = position_detail::unbounded, .length_option = nullptr,
     .validate = validate_sinusoidal, .make = make_sinusoidal, .window_bias = WindowBias::none,
     .embedding = EmbeddingRecipe::scaled, .rank = 20,
     .bidirectional = "unchanged: absolute positions added to the tokens"});

}  // namespace

Tensor sinusoidal_table(int64_t length, int64_t d, int64_t offset, DType dtype) {
  RPB_CHECK(length >= 1, "sinusoidal_table", "length ", length, " must be at least 1");
  RPB_CHECK(d >= 2 && d % 2 == 0, "sinusoidal_table", "d ", d, " must be even and at least 2");
  RPB_CHECK(offset >= 0, "sinusoidal_table", "offset ", offset, " must be at least 0");
  RPB_CHECK(dtype != DType::i64, "sinusoidal_table", "dtype must be float32 or float64, got ", dtype_name(dtype));
  std::vector<double> v(static_cast<std::size_t>(length * d));
  for (int64_t i = 0; i < d / 2; ++i) {
    const double denom = std::pow(10000.0, 2.0 * static_cast<double>(i) / static_cast<double>(d));
    for (int64_t r = 0; r < length; ++r) {
      const double angle = static_cast<double>(offset + r) / denom;
      v[static_cast<std::size_t>(r * d + 2 * i)] = std::sin(angle);
      v[static_cast<std::size_t>(r * d + 2 * i + 1)] = std::cos(angle);
    }
  }
  return from_doubles({length, d}, v, dtype);
}

}  // namespace rpb::nn
