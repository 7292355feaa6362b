#include "core/rng.h"

#include <cmath>
#include <numbers>

#include "core/ops/kernels.h"

namespace rpb {

namespace {
uint64_t rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }

template <typename Draw>
Tensor fill_with(const Shape& shape, DType dtype, const char* op, Draw draw) {
  Tensor t = Tensor::empty(shape, dtype);
  dispatch_float(dtype, op, [&](auto tag) {
    using T = typename decltype(tag)::type;
    T* p = t.mutable_data<T>();
    for (int64_t i = 0; i < t.numel(); ++i) p[i] = static_cast<T>(draw());
  });
  return t;
}
}  // namespace

void Generator::seed_(uint64_t seed) {
  uint64_t x = seed;
  for (auto& w : s_) w = splitmix64(x);
}

void Generator::set_state(const State& s) {
  RPB_CHECK(s[0] | s[1] | s[2] | s[3], "generator", "the all-zero state is invalid for xoshiro256**");
  s_ = s;
}

uint64_t Generator::next_u64() {
  const uint64_t result = rotl(s_[1] * 5, 7) * 9;
  const uint64_t t = s_[1] << 17;
  s_[2] ^= s_[0];
  s_[3] ^= s_[1];
  s_[1] ^= s_[2];
  s_[0] ^= s_[3];
  s_[2] ^= t;
  s_[3] = rotl(s_[3], 45);
  return result;
}

double Generator::uniform() { return static_cast<double>(next_u64() >> 11) * 0x1.0p-53; }

double Generator::normal() {
  const double u1 = 1.0 - uniform();  // (0, 1]: log stays finite
  const double u2 = uniform();
  return std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * std::numbers::pi * u2);
}

Tensor randn(const Shape& shape, Generator& gen, DType dtype, double mean, double std) {
  return fill_with(shape, dtype, "randn", [&] { return mean + std * gen.normal(); });
}

Tensor rand(const Shape& shape, Generator& gen, DType dtype, double lo, double hi) {
  return fill_with(shape, dtype, "rand", [&] { return lo + (hi - lo) * gen.uniform(); });
}

Tensor trunc_normal(const Shape& shape, Generator& gen, DType dtype, double mean, double std, double a, double b) {
  RPB_CHECK(a < b, "trunc_normal", "empty interval [", a, ", ", b, "]");
  RPB_CHECK(std > 0 && mean + 6 * std > a && mean - 6 * std < b, "trunc_normal", "interval [", a, ", ", b,
            "] lies more than 6 std from mean ", mean, " (std ", std, "): rejection would not end");
  return fill_with(shape, dtype, "trunc_normal", [&] {
    for (;;) {
      const double v = mean + std * gen.normal();
      if (v >= a && v <= b) return v;
    }
  });
}

Tensor randint(const Shape& shape, int64_t n, Generator& gen) {
  RPB_CHECK(n > 0, "randint", "upper bound ", n, " must be positive");
  Tensor t = Tensor::empty(shape, DType::i64);
  int64_t* p = t.mutable_data<int64_t>();
  // Lemire-free simple rejection keeps the draw unbiased.
  const uint64_t un = static_cast<uint64_t>(n), limit = UINT64_MAX - UINT64_MAX % un;
  for (int64_t i = 0; i < t.numel(); ++i) {
    uint64_t r;
    do r = gen.next_u64();
    while (r >= limit);
    p[i] = static_cast<int64_t>(r % un);
  }
  return t;
}

}  // namespace rpb
