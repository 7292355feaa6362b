// alibi: B[h,i,j] = -m_h * |i - j|, symmetric (the x-transformers bidirectional form; under a causal mask it
// equals fairseq's +m_h * j up to a per-row shift, which softmax ignores), with the paper's get_slopes. Not
// scaled by 1/sqrt(d).
#include <bit>
#include <cmath>

#include "nn/last_value_cache.h"
#include "nn/position/common.h"

namespace rpb::nn {

namespace {

using position_detail::distance_table;
using position_detail::from_doubles;
using position_detail::offset_row;

class AlibiScheme final : public PositionScheme {
 public:
  explicit AlibiScheme(const PositionOptions& o) : o_(o) {}

  Tensor bias(const Positions& p) const override {
    check(p, "alibi");
    const Tensor neg_dist = cache_.get({p.q_len, p.k_len, p.q_offset, static_cast<int64_t>(slopes.dtype())}, [&] {
      return distance_table(p, slopes.dtype(), [](double d) { return -d; });
    });  // (1, q, k): -|i - j|
    return mul(reshape(slopes, {o_.heads, 1, 1}), neg_dist.to(slopes.device()));  // (H, q, k)
  }
  RelativeBias relative_bias(const Positions& p) const override {
    check(p, "alibi");
    const Tensor neg_dist = rel_cache_.get({p.q_len, p.k_len, p.q_offset, static_cast<int64_t>(slopes.dtype())}, [&] {
      return offset_row(p, slopes.dtype(), [](int64_t r) { return -static_cast<double>(r < 0 ? -r : r); });
    });                                                                // (1, R): -|r|
    return RelativeBias(mul(reshape(slopes, {o_.heads, 1}), neg_dist.to(slopes.device())));  // (H, R)
  }

  std::string title() const override { return "alibi bias -m_h * |i - j|"; }
  std::string head_note(int64_t head) const override {
    return "slope " + position_detail::shortest(alibi_slopes(o_.heads)[static_cast<std::size_t>(head)]);
  }

 private:
  PositionOptions o_;
  LastValueCache cache_, rel_cache_;

 public:
  // Fixed by the head count, so not saved in checkpoints.
  Tensor slopes = register_buffer("slopes", from_doubles({o_.heads}, alibi_slopes(o_.heads), o_.dtype),
                                  /*persistent=*/false);  // (H)
};

// get_slopes_power_of_2(n): start = 2^(-2^-(log2(n) - 3)) = 2^(-8/n), slopes start * start^i.
std::vector<double> alibi_slopes_power_of_2(int64_t n) {
  const double start = std::pow(2.0, -std::pow(2.0, -(std::log2(static_cast<double>(n)) - 3.0)));
  const double ratio = start;
  std::vector<double> s;
  for (int64_t i = 0; i < n; ++i) s.push_back(start * std::pow(ratio, static_cast<double>(i)));
  return s;
}

}  // namespace

namespace {

std::shared_ptr<PositionScheme> make_alibi(const PositionOptions& o, Generator&) {
  return std::make_shared<AlibiScheme>(o);
}

// The registry row (nn/position/scheme.h).
const SchemeRegistrar alibi_row({.name = "alibi", .dims = 1, .kind = PositionKind::additive_bias, .label = "ALiBi",
     .description = "-m_h * |i - j| with the ALiBi paper's slopes", .per_layer = false,
     .parameters = position_detail::no_parameters, .max_length = position_detail::unbounded, .length_option = nullptr,
     .validate = position_detail::no_options, .make = make_alibi, .window_bias = WindowBias::none, .rank = 70,
     .bidirectional = "symmetric: -m_h * |i - j| on both sides (x-transformers' bidirectional form)"});

}  // namespace

// The paper's get_slopes: a power of two n gets the geometric sequence 2^(-8/n), 2^(-16/n), ..., 2^-8;
// otherwise the c = 2^floor(log2 n) slopes of get_slopes(c) are followed by the first n - c of every
// other slope of get_slopes(2c) (the interleaved ones, which fall between the first c).
std::vector<double> alibi_slopes(int64_t heads) {
  RPB_CHECK(heads >= 1, "alibi_slopes", "heads ", heads, " must be at least 1");
  const int64_t c = static_cast<int64_t>(std::bit_floor(static_cast<uint64_t>(heads)));
  if (c == heads) return alibi_slopes_power_of_2(heads);
  std::vector<double> s = alibi_slopes_power_of_2(c);
  const std::vector<double> finer = alibi_slopes(2 * c);
  for (int64_t i = 0; i < heads - c; ++i) s.push_back(finer[static_cast<std::size_t>(2 * i)]);  // [0::2][:n-c]
  return s;
}

}  // namespace rpb::nn
