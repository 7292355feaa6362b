// rpb/train/data/algorithmic_detail.h: what the files of the algorithmic tasks share (train/data/algorithmic.h): the
// draws their generators are built from, and each family's specs.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/rng.h"
#include "train/data/algorithmic.h"

namespace rpb::data::algorithmic_detail {

/// `n` symbols uniform in [0, alphabet), drawn in order.
std::vector<int32_t> uniform_symbols(int64_t n, int64_t alphabet, Generator& gen);
/// A uniform integer in [lo, hi] (lo <= hi).
int64_t uniform_between(Generator& gen, int64_t lo, int64_t hi);
/// The names "0", "1", ... of an alphabet of `n` symbols.
std::vector<std::string> numbered_names(int64_t n);
/// Output lengths of L: L, L + 1, 2 L.
inline int64_t same_length(int64_t length) { return length; }
inline int64_t plus_one(int64_t length) { return length + 1; }
inline int64_t twice(int64_t length) { return 2 * length; }

/// Each family's specs, in their registry order (algorithmic_regular.cpp, algorithmic_context_free.cpp,
/// algorithmic_context_sensitive.cpp, algorithmic_decoder.cpp).
std::vector<AlgorithmicSpec> regular_specs();
std::vector<AlgorithmicSpec> context_free_specs();
std::vector<AlgorithmicSpec> context_sensitive_specs();
std::vector<AlgorithmicSpec> decoder_specs();

}  // namespace rpb::data::algorithmic_detail
