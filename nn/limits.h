// rpb/nn/limits.h: the largest sizes a model and its position scheme accept: one source for config validation
// (train/config/config.cpp), `rpb bias` (cli/bias.cpp), `rpb schemes` and nn::validate(). The position options'
// ranges reach the config and the command line through their descriptors (nn/position/options.h).
//
// The bounds are about overflow and sanity, not memory (a separate estimate refuses what does not fit the
// machine). With every size inside them, each tensor a run builds counts at most 2^58 elements:
// batch (2^16) x heads (2^10) x positions^2 (2^32) for the attention scores, batch x positions x d_ff
// (2^52) for the feed-forward activations, layers x d_model x d_ff (2^46) for the parameters; so its byte
// size fits an int64 too. Positions and distances stay below 2^40, so a sum or difference of two of them, or
// a product with a factor below 2^22, cannot overflow.
#pragma once

#include <cstdint>

namespace rpb::nn::limits {

/// An inclusive range of an integer option.
struct Range {
  int64_t lo, hi;
  bool contains(int64_t v) const { return v >= lo && v <= hi; }
};

/// A range of a real option: [lo, hi], open at an end when lo_open or hi_open.
struct RealRange {
  double lo, hi;
  bool lo_open = false, hi_open = false;
  bool contains(double v) const { return (lo_open ? v > lo : v >= lo) && (hi_open ? v < hi : v <= hi); }
};

/// The most positions one sequence holds, in training or in evaluation: the tokens of a line, the cells of a
/// grid, the cells of one attention window (2^16).
inline constexpr int64_t kMaxSequence = int64_t{1} << 16;
/// The largest position index, offset or distance a scheme computes with (2^40; t5's max_distance at most).
inline constexpr int64_t kMaxPosition = int64_t{1} << 40;

// [model]
inline constexpr Range d_model{1, int64_t{1} << 16};
inline constexpr Range heads{1, 1024};
inline constexpr Range layers{1, 1024};
inline constexpr Range d_ff{1, int64_t{1} << 20};

// [position]
inline constexpr Range num_buckets{2, int64_t{1} << 16};        // t5 (its own checks ask for more)
inline constexpr Range max_distance{1, kMaxPosition};           // t5
inline constexpr Range max_relative_position{1, int64_t{1} << 20};  // shaw, clipped2d: K
inline constexpr Range randomized_max{1, kMaxSequence};   // every 1-D scheme: L_max of randomized positions
inline constexpr Range max_positions{1, int64_t{1} << 24};      // learned
inline constexpr double kMaxLambda = 1e6;                       // log_decay: lambda in [0, kMaxLambda]
inline constexpr RealRange lambda{0.0, kMaxLambda};             // log_decay
inline constexpr RealRange rope_base{1.0, 1e12, true};          // rope: (1, 1e12]
inline constexpr RealRange rope_factor{0.0, 1e6};               // rope scaling: [0, 1e6] (0: the default; else >= 1)
inline constexpr RealRange yarn_beta{0.0, 1e6, true};           // yarn's beta_fast and beta_slow: (0, 1e6]
inline constexpr RealRange yarn_attention_factor{0.0, 1e3};     // yarn: [0, 1e3] (0: the default)
inline constexpr Range xpos_scale_base{1, int64_t{1} << 24};    // xpos
inline constexpr RealRange init_std{0.0, 10.0, true};           // the learned tables: (0, 10]
inline constexpr Range fire_length{0, kMaxPosition};            // fire: L0 (0: run.length)
inline constexpr Range fire_hidden{1, int64_t{1} << 12};         // fire: the MLP's width

// [grid]
inline constexpr Range max_side{1, int64_t{1} << 16};  // learned2d
inline constexpr Range window{1, 256};                 // swin, swin_v2: a window of window^2 <= kMaxSequence cells
inline constexpr Range cpb_hidden{1, int64_t{1} << 16};  // swin_v2

}  // namespace rpb::nn::limits
