// rope: x * cos + rotate_half(x) * sin (HF LLaMA / GPT-NeoX): the two halves of the last axis are rotated as
// pairs (x[k], x[k + d/2]) by the angle p * inv_freq[k], inv_freq = base^(-2k/head_dim), so cos and sin repeat
// the frequencies for both halves. position.rope_scaling changes the frequencies past the training length and, for
// yarn, multiplies cos and sin by an attention factor (nn/position/rope_scaling.h). The scaling is an evaluation
// setting: training forwards read the unscaled frequencies, so a run trains the same weights whatever its scaling,
// unless the run is a fine-tune (PositionOptions::rope_scaling_trained, run.init_from), which trains with it.
//
// dynamic reads the total length of the sequence a forward scores: a call for T positions at `offset` (a KV cache's
// length) uses the frequencies for offset + T, as HF's update does from max(position_ids) + 1. Keys already in a
// KV cache keep the rotation they were given when they were computed, so decoding past L0 differs from the full
// forward (each key rotated for the length of the forward that made it), as in HF's generate. Unlike HF, rpb keeps
// no state between calls: HF keeps the largest length seen (max_seq_len_cached) until a sequence shorter than L0
// resets it, rpb computes the frequencies from each call's offset + T.
//
// rope_factor_per_length reads the same total length T for the factor of linear, ntk or yarn: s = max(1, T / L0), so
// an evaluation at length L reads the scaling at s = L / L0 and one at the train length the unscaled frequencies,
// which is YaRN's "Dynamic Scaling" (Peng et al. 2023, arXiv 2309.00071: s = max(1, l' / L) for the current
// sequence's length l', used to extend a model without fine-tuning). ntk per length is dynamic NTK at factor 1, up
// to the rounding of T / L0.
#include <cmath>

#include "nn/last_value_cache.h"
#include "nn/position/common.h"

namespace rpb::nn {

namespace {

using position_detail::from_doubles;

// base^(-2i/head_dim), i = 0 .. head_dim/2 - 1 (computed in double, then rounded to the dtype): unscaled rope.
std::vector<double> rope_unscaled(int64_t d, double base) {
  std::vector<double> f(static_cast<std::size_t>(d / 2));
  for (int64_t i = 0; i < d / 2; ++i) f[i] = std::pow(base, -2.0 * static_cast<double>(i) / static_cast<double>(d));
  return f;
}

// The scaling's parameters; with rope_factor_per_length, the factor of a forward over `total_length` positions:
// max(1, total_length / L0), so that each evaluation length L reads s = L / L0 and the train length the unscaled
// frequencies (0: the factor at the training length, 1).
RopeScalingParams scaling_params(const PositionOptions& o, int64_t total_length = 0) {
  const double factor = o.rope_factor_per_length ? per_length_rope_factor(total_length, o.train_length)
                                                 : resolved_rope_factor(o.rope_factor, o.max_eval_multiplier);
  return {o.rope_scaling, o.head_dim, o.rope_base, factor, o.train_length, o.yarn_beta_fast, o.yarn_beta_slow,
          o.yarn_attention_factor};
}

// The frequencies the scheme is built with: unscaled, or the scaling's at the training length (dynamic's there are
// the unscaled ones, in HF's arithmetic).
RopeFrequencies built_frequencies(const PositionOptions& o) {
  if (o.rope_scaling == RopeScaling::none) return {rope_unscaled(o.head_dim, o.rope_base), 1.0};
  return rope_frequencies(scaling_params(o, o.train_length), o.train_length, o.dtype == DType::f32);
}

class RopeScheme final : public PositionScheme {
 public:
  explicit RopeScheme(const PositionOptions& o) : o_(o), built_(built_frequencies(o)) {}

  Tensor rotate(const Tensor& x, int64_t offset) const override { return rotate_positions(x, offset, nullptr); }
  // Randomized positions: the rows of the angles at `at` (no cache: every training forward draws its own).
  Tensor rotate_at(const Tensor& x, const std::vector<int64_t>& at) const override {
    RPB_CHECK(static_cast<int64_t>(at.size()) == x.size(-2), "rope", at.size(), " positions for x ", x.shape());
    return rotate_positions(x, 0, &at);
  }

 private:
  Tensor rotate_positions(const Tensor& x, int64_t offset, const std::vector<int64_t>* at) const {
    RPB_CHECK(x.defined(), "rope", "x is undefined");
    RPB_CHECK(x.dim() >= 2 && x.size(-1) == o_.head_dim, "rope", "x ", x.shape(),
              " must end in (T, head_dim) with head_dim ", o_.head_dim, " (expected (B, heads, T, head_dim))");
    RPB_CHECK(x.dtype() == inv_freq.dtype(), "rope", "x is ", dtype_name(x.dtype()), " but the scheme is ",
              dtype_name(inv_freq.dtype()), " (convert one with Module::to)");
    RPB_CHECK(offset >= 0, "rope", "offset ", offset, " must be at least 0");
    const int64_t t = x.size(-2), half = o_.head_dim / 2;
    RPB_CHECK(t >= 1, "rope", "x ", x.shape(), " has no positions (T = 0)");
    const bool scaled = o_.rope_scaling != RopeScaling::none && (o_.rope_scaling_trained || !is_training());
    const std::vector<int64_t> key{t, o_.head_dim, offset, static_cast<int64_t>(x.dtype()), scaled};
    const Tensor cos_t = at ? table(t, offset, false, scaled, at)
                            : cos_cache_.get(key, [&] { return table(t, offset, false, scaled, nullptr); });
    const Tensor sin_t = at ? table(t, offset, true, scaled, at)
                            : sin_cache_.get(key, [&] { return table(t, offset, true, scaled, nullptr); });
    const std::vector<Tensor> halves = split(x, {half, half}, -1);   // x1, x2: (..., T, d/2)
    const Tensor rotated = concat({neg(halves[1]), halves[0]}, -1);  // rotate_half(x) = (-x2, x1)
    return add(mul(x, cos_t), mul(rotated, sin_t));                  // (..., T, d)
  }

  // (T, head_dim) cos or sin of (offset + t) * inv_freq[k mod d/2] (of at[t] * ... at explicit positions), times the
  // attention factor. As HF, the angle is formed in the scheme's dtype (float32 positions times float32
  // frequencies), its cos/sin then rounded to that dtype, and the factor multiplies the rounded value (HF: cos *
  // attention_scaling in float32). Unscaled (a training forward of a run that is not a fine-tune): the frequencies of
  // rope_scaling = "none", rounded as its inv_freq would be.
  Tensor table(int64_t t, int64_t offset, bool sine, bool scaled, const std::vector<int64_t>* at) const {
    const int64_t d = o_.head_dim, half = d / 2;
    const bool single = inv_freq.dtype() == DType::f32;
    std::vector<double> f = inv_freq.to_vector();
    double factor = built_.attention_factor;
    if (!scaled && o_.rope_scaling != RopeScaling::none) {
      f = rope_unscaled(d, o_.rope_base);
      if (single)
        for (double& v : f) v = static_cast<float>(v);
      factor = 1.0;
    } else if (o_.rope_scaling == RopeScaling::dynamic || o_.rope_factor_per_length) {
      const int64_t total = at ? at->back() + 1 : offset + t;
      const RopeFrequencies now = rope_frequencies(scaling_params(o_, total), total, single);
      f = now.inv_freq;
      factor = now.attention_factor;
    }
    std::vector<double> v(static_cast<std::size_t>(t * d));
    for (int64_t r = 0; r < t; ++r)
      for (int64_t k = 0; k < half; ++k) {
        const int64_t position = at ? (*at)[static_cast<std::size_t>(r)] : offset + r;
        double value;
        if (single) {
          const float angle = static_cast<float>(position) * static_cast<float>(f[k]);
          const float c = sine ? std::sin(angle) : std::cos(angle);
          volatile float scaled = c * static_cast<float>(factor);  // rounded: no fused multiply with what follows
          value = factor == 1.0 ? c : scaled;
        } else {
          const double angle = static_cast<double>(position) * f[k];
          value = (sine ? std::sin(angle) : std::cos(angle)) * factor;
        }
        v[static_cast<std::size_t>(r * d + k)] = v[static_cast<std::size_t>(r * d + k + half)] = value;
      }
    return from_doubles({t, d}, v, inv_freq.dtype()).to(inv_freq.device());
  }

  PositionOptions o_;
  RopeFrequencies built_;                 // the frequencies and attention factor at the training length
  LastValueCache cos_cache_, sin_cache_;  // keyed (T, head_dim, offset, dtype, scaled)

 public:
  // The frequencies at the training length (built_), rounded to the dtype; dynamic recomputes them per call.
  Tensor inv_freq = register_buffer("inv_freq", from_doubles({o_.head_dim / 2}, built_.inv_freq, o_.dtype),
                                    /*persistent=*/false);  // (head_dim / 2)
};

}  // namespace

namespace {

void validate_rope(const PositionOptions& o) {
  RPB_CHECK_OPTION(o.head_dim >= 2 && o.head_dim % 2 == 0, "rope", "head_dim", "head_dim ", o.head_dim,
                   " must be even and at least 2 (rotate_half pairs the two halves)");
  RPB_CHECK_OPTION(std::isfinite(o.rope_base) && o.rope_base > 0, "rope", "rope_base", "rope_base ", o.rope_base,
                   " must be positive");
  if (o.rope_scaling == RopeScaling::none) {
    RPB_CHECK_OPTION(!o.rope_factor_per_length, "rope", "rope_factor_per_length",
                     "rope_factor_per_length = true sets the factor of a rope scaling, and rope_scaling is \"none\"");
    return;
  }
  const char* scaling = rope_scaling_name(o.rope_scaling);
  if (o.rope_factor_per_length) {
    RPB_CHECK_OPTION(o.rope_scaling != RopeScaling::dynamic, "rope", "rope_factor_per_length",
                     "rope_factor_per_length = true with rope_scaling = \"dynamic\": dynamic NTK already sets its base "
                     "per length; use ntk for s = L / L0");
    RPB_CHECK_OPTION(o.rope_factor == 0, "rope", "rope_factor_per_length", "rope_factor_per_length = true sets the "
                     "factor per length, and rope_factor is ", o.rope_factor, " (leave it 0)");
    RPB_CHECK_OPTION(!o.rope_scaling_trained, "rope", "rope_factor_per_length", "rope_factor_per_length = true: a "
                     "fine-tune (run.init_from) trains at one factor, set by rope_factor");
    RPB_CHECK_OPTION(o.train_length >= 1, "rope", "rope_factor_per_length", "rope_factor_per_length = true needs "
                     "the original length L0 (run.length), which is unknown here");
  }
  RPB_CHECK_OPTION(o.rope_factor == 0 || o.rope_factor >= 1, "rope", "rope_factor", "rope_factor ", o.rope_factor,
                   " must be at least 1 (or 0: the largest evaluation multiplier)");
  RPB_CHECK_OPTION(o.rope_factor_per_length || resolved_rope_factor(o.rope_factor, o.max_eval_multiplier) >= 1,
                   "rope", "rope_factor",
                   "rope_scaling = \"", scaling, "\" needs a factor: rope_factor is 0 (the largest evaluation "
                   "multiplier) and no evaluation length is known; set rope_factor");
  const bool ntk_like = o.rope_scaling == RopeScaling::ntk || o.rope_scaling == RopeScaling::dynamic;
  RPB_CHECK_OPTION(!ntk_like || o.head_dim >= 4, "rope", "rope_scaling", "rope_scaling = \"", scaling,
                   "\" needs head_dim >= 4 (its exponent is d / (d - 2)), got ", o.head_dim);
  const bool needs_length = o.rope_scaling == RopeScaling::dynamic || o.rope_scaling == RopeScaling::yarn;
  RPB_CHECK_OPTION(!needs_length || o.train_length >= 1, "rope", "rope_scaling", "rope_scaling = \"", scaling,
                   "\" needs the original length L0 (run.length), which is unknown here");
}
std::shared_ptr<PositionScheme> make_rope(const PositionOptions& o, Generator&) {
  return std::make_shared<RopeScheme>(o);
}

// The registry row (nn/position/scheme.h).
const SchemeRegistrar rope_row({.name = "rope", .dims = 1, .kind = PositionKind::rotary, .label = "RoPE",
     .description = "rotary embeddings of queries and keys", .per_layer = false,
     .parameters = position_detail::no_parameters, .max_length = position_detail::unbounded, .length_option = nullptr,
     .validate = validate_rope, .make = make_rope, .window_bias = WindowBias::none, .rank = 30,
     .reads = {"rope_base", "rope_scaling", "rope_factor", "rope_factor_per_length", "yarn_beta_fast", "yarn_beta_slow", "yarn_attention_factor"},
     .bidirectional = "unchanged: the rotation makes scores depend on key - query of either sign"});

}  // namespace

}  // namespace rpb::nn
