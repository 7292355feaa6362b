// rpb/train/data/sampling.h: the random draws the tasks are built from: derived seeds, Gamma and Dirichlet samples,
// unbiased uniform integers. Deterministic for a generator's state.
#pragma once

#include <cstdint>
#include <vector>

#include "core/rng.h"

namespace rpb::data {

/// An independent seed for stream `id` of a source seeded with `seed` (splitmix64 finalizer).
inline uint64_t derive_seed(uint64_t seed, uint64_t id) {
  uint64_t state = seed + 0x9E3779B97F4A7C15ull * id;  // splitmix64 adds the last gamma
  return splitmix64(state);
}

/// A Gamma(shape, 1) sample in log space (Marsaglia-Tsang; for shape < 1 the boost
/// G(a) = G(a+1) U^(1/a) is applied as a log, so tiny shapes do not underflow to log 0).
double sample_log_gamma(double shape, Generator& gen);
/// A symmetric Dirichlet(concentration) sample of `k` components (normalized Gamma draws).
std::vector<double> sample_dirichlet(int64_t k, double concentration, Generator& gen);
/// A uniform integer in [0, n) without modulo bias (n >= 1).
uint64_t uniform_index(Generator& gen, uint64_t n);

}  // namespace rpb::data
