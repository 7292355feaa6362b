// rpb/core/rng.h: a seeded, saveable random generator (xoshiro256** seeded by splitmix64).
#pragma once

#include <array>
#include <cstdint>

#include "core/tensor.h"

namespace rpb {

/// One step of splitmix64 (Steele, Lea and Flood 2014): advances `state` by the golden gamma and returns its
/// finalizer's mix of it. Seeds the generator below; derived seeds and hashes of ids are built from it.
inline uint64_t splitmix64(uint64_t& state) {
  uint64_t z = (state += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

/// Deterministic across runs and platforms: the same seed gives the same stream,
/// and state()/set_state() resume it exactly (checkpoints store the state).
///
/// @code
/// rpb::Generator a(42);
/// a.next_u64();
/// const auto saved = a.state();
/// const uint64_t x = a.next_u64();
/// rpb::Generator b(7);
/// b.set_state(saved);
/// CHECK(b.next_u64() == x);
/// @endcode
class Generator {
 public:
  using State = std::array<uint64_t, 4>;

  explicit Generator(uint64_t seed = 0) { seed_(seed); }
  void seed_(uint64_t seed);

  uint64_t next_u64();
  /// Uniform in [0, 1) with 53 random bits.
  double uniform();
  /// Standard normal (Box-Muller; draws two uniforms per value, keeps no cache, so state() is complete).
  double normal();

  State state() const { return s_; }
  void set_state(const State& s);

 private:
  State s_{};
};

/// Normal(mean, std) samples.
Tensor randn(const Shape& shape, Generator& gen, DType dtype = DType::f32, double mean = 0.0, double std = 1.0);
/// Uniform [lo, hi) samples.
Tensor rand(const Shape& shape, Generator& gen, DType dtype = DType::f32, double lo = 0.0, double hi = 1.0);
/// Normal(mean, std) truncated to [a, b] by rejection. As torch.nn.init.trunc_normal_, a and b are
/// absolute bounds (so Swin's trunc_normal_(std=.02) with the default [-2, 2] hardly truncates).
Tensor trunc_normal(const Shape& shape, Generator& gen, DType dtype = DType::f32, double mean = 0.0, double std = 1.0,
                    double a = -2.0, double b = 2.0);
/// Uniform integers in [0, n) as an i64 tensor.
Tensor randint(const Shape& shape, int64_t n, Generator& gen);

}  // namespace rpb
