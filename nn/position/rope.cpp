// rope: x * cos + rotate_half(x) * sin (HF LLaMA / GPT-NeoX): the two halves of the last axis are rotated as
// pairs (x[k], x[k + d/2]) by the angle p * inv_freq[k], inv_freq = base^(-2k/head_dim), so cos and sin repeat
// the frequencies for both halves.
#include <cmath>

#include "nn/last_value_cache.h"
#include "nn/position/common.h"

namespace rpb::nn {

namespace {

using position_detail::from_doubles;

class RopeScheme final : public PositionScheme {
 public:
  explicit RopeScheme(const PositionOptions& o) : o_(o) {}

  Tensor rotate(const Tensor& x, int64_t offset) const override {
    RPB_CHECK(x.defined(), "rope", "x is undefined");
    RPB_CHECK(x.dim() >= 2 && x.size(-1) == o_.head_dim, "rope", "x ", x.shape(),
              " must end in (T, head_dim) with head_dim ", o_.head_dim, " (expected (B, heads, T, head_dim))");
    RPB_CHECK(x.dtype() == inv_freq.dtype(), "rope", "x is ", dtype_name(x.dtype()), " but the scheme is ",
              dtype_name(inv_freq.dtype()), " (convert one with Module::to)");
    RPB_CHECK(offset >= 0, "rope", "offset ", offset, " must be at least 0");
    const int64_t t = x.size(-2), half = o_.head_dim / 2;
    RPB_CHECK(t >= 1, "rope", "x ", x.shape(), " has no positions (T = 0)");
    const std::vector<int64_t> key{t, o_.head_dim, offset, static_cast<int64_t>(x.dtype())};
    const Tensor cos_t = cos_cache_.get(key, [&] { return table(t, offset, false); });
    const Tensor sin_t = sin_cache_.get(key, [&] { return table(t, offset, true); });
    const std::vector<Tensor> halves = split(x, {half, half}, -1);   // x1, x2: (..., T, d/2)
    const Tensor rotated = concat({neg(halves[1]), halves[0]}, -1);  // rotate_half(x) = (-x2, x1)
    return add(mul(x, cos_t), mul(rotated, sin_t));                  // (..., T, d)
  }

 private:
  // (T, head_dim) cos or sin of (offset + t) * inv_freq[k mod d/2]. As HF, the angle is formed in the
  // scheme's dtype (float32 positions times float32 frequencies), its cos/sin then rounded to that dtype.
  Tensor table(int64_t t, int64_t offset, bool sine) const {
    const int64_t d = o_.head_dim, half = d / 2;
    const std::vector<double> f = inv_freq.to_vector();
    std::vector<double> v(static_cast<std::size_t>(t * d));
    const bool single = inv_freq.dtype() == DType::f32;
    for (int64_t r = 0; r < t; ++r)
      for (int64_t k = 0; k < half; ++k) {
        double value;
        if (single) {
          const float angle = static_cast<float>(offset + r) * static_cast<float>(f[k]);
          value = sine ? std::sin(angle) : std::cos(angle);
        } else {
          const double angle = static_cast<double>(offset + r) * f[k];
          value = sine ? std::sin(angle) : std::cos(angle);
        }
        v[static_cast<std::size_t>(r * d + k)] = v[static_cast<std::size_t>(r * d + k + half)] = value;
      }
    return from_doubles({t, d}, v, inv_freq.dtype());
  }

  static std::vector<double> frequencies(int64_t d, double base) {
    std::vector<double> f(static_cast<std::size_t>(d / 2));
    for (int64_t i = 0; i < d / 2; ++i) f[i] = std::pow(base, -2.0 * static_cast<double>(i) / static_cast<double>(d));
    return f;
  }

  PositionOptions o_;
  LastValueCache cos_cache_, sin_cache_;  // keyed (T, head_dim, offset, dtype)

 public:
  // base^(-2i/head_dim), i = 0 .. head_dim/2 - 1 (computed in double, then rounded to the dtype).
  Tensor inv_freq = register_buffer("inv_freq", from_doubles({o_.head_dim / 2}, frequencies(o_.head_dim, o_.rope_base),
                                                             o_.dtype),
                                    /*persistent=*/false);  // (head_dim / 2)
};

}  // namespace

namespace scheme_files {
void validate_rope(const PositionOptions& o) {
  RPB_CHECK_OPTION(o.head_dim >= 2 && o.head_dim % 2 == 0, "rope", "head_dim", "head_dim ", o.head_dim,
                   " must be even and at least 2 (rotate_half pairs the two halves)");
  RPB_CHECK_OPTION(std::isfinite(o.rope_base) && o.rope_base > 0, "rope", "rope_base", "rope_base ", o.rope_base,
                   " must be positive");
}
std::shared_ptr<PositionScheme> make_rope(const PositionOptions& o, Generator&) {
  return std::make_shared<RopeScheme>(o);
}
}  // namespace scheme_files

}  // namespace rpb::nn
