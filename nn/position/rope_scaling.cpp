// rpb/nn/position/rope_scaling.cpp: see rope_scaling.h. Each function transcribes its HF counterpart (commit in the
// header); in float32 every tensor operation rounds to float, as torch's float32 kernels do.
#include "nn/position/rope_scaling.h"

#include <algorithm>
#include <cmath>
#include <numbers>

#include "core/error.h"
#include "core/text.h"

namespace rpb::nn {

const char* rope_scaling_name(RopeScaling s) { return enum_name(kRopeScalingNames, s); }

std::vector<std::string> rope_scaling_names() { return enum_names(kRopeScalingNames); }

const char* rope_scaling_label(RopeScaling s) {
  static constexpr EnumName<RopeScaling> labels[] = {{RopeScaling::none, ""},
                                                     {RopeScaling::linear, "PI"},
                                                     {RopeScaling::ntk, "NTK"},
                                                     {RopeScaling::dynamic, "dynamic NTK"},
                                                     {RopeScaling::yarn, "YaRN"}};
  return enum_name(labels, s);
}

RopeScaling rope_scaling_from_name(const std::string& name) {
  const std::optional<RopeScaling> s = enum_value(kRopeScalingNames, name);
  RPB_CHECK_OPTION(s.has_value(), "rope", "rope_scaling", "rope_scaling '", printable(name), "': expected ",
                   join(rope_scaling_names(), ", "));
  return *s;
}

namespace {

// A value of type T held in memory: the compiler may not fuse a product into a later sum (-march=native offers
// FMA), so each float32 operation rounds as torch's does.
template <typename T>
T held(T x) {
  volatile T v = x;
  return v;
}

// The arithmetic of one mode: float32 (torch's float tensors) or double.
template <typename T>
struct Hf {
  // _compute_default_rope_parameters: 1.0 / (base ** (torch.arange(0, dim, 2, dtype=torch.int64).float() / dim)),
  // the Python base meeting a float tensor as a float.
  static std::vector<T> positional(int64_t dim, T base) {
    std::vector<T> p(static_cast<std::size_t>(dim / 2));
    for (int64_t i = 0; i < dim / 2; ++i)
      p[i] = held(std::pow(base, held(static_cast<T>(2 * i) / static_cast<T>(dim))));
    return p;
  }
  static std::vector<T> inverse(const std::vector<T>& p) {
    std::vector<T> f(p.size());
    for (std::size_t i = 0; i < p.size(); ++i) f[i] = held(T(1) / p[i]);
    return f;
  }

  // _compute_dynamic_ntk_parameters past L0: seq_len is HF's int64 tensor torch.max(position_ids) + 1, so
  // base * ((factor * seq_len / L0) - (factor - 1)) ** (dim / (dim - 2)) is float32 arithmetic on a 0-dim tensor,
  // whose pow torch computes in double and rounds (as it does base ** exponents below, the base a 0-dim tensor).
  static T dynamic_base(const RopeScalingParams& p, int64_t seq_len) {
    const auto d = static_cast<double>(p.head_dim);
    T x = held(static_cast<T>(p.factor) * static_cast<T>(seq_len));
    x = held(x / static_cast<T>(p.original_length));
    x = held(x - static_cast<T>(p.factor - 1));
    x = held(static_cast<T>(std::pow(static_cast<double>(x), d / (d - 2))));
    return held(static_cast<T>(p.base) * x);
  }
  // base ** (arange / dim) with `base` a 0-dim tensor: each power in double, rounded.
  static std::vector<T> positional_tensor_base(int64_t dim, T base) {
    std::vector<T> p(static_cast<std::size_t>(dim / 2));
    for (int64_t i = 0; i < dim / 2; ++i)
      p[i] = held(static_cast<T>(
          std::pow(static_cast<double>(base), static_cast<double>(held(static_cast<T>(2 * i) / static_cast<T>(dim))))));
    return p;
  }

  // _compute_yarn_parameters.
  static std::vector<T> yarn(const RopeScalingParams& p) {
    const auto d = static_cast<double>(p.head_dim);
    const auto correction_dim = [&](double rotations) {
      return d * std::log(static_cast<double>(p.original_length) / (rotations * 2 * std::numbers::pi)) /
             (2 * std::log(p.base));
    };
    const double low = std::max(std::floor(correction_dim(p.beta_fast)), 0.0);
    double high = std::min(std::ceil(correction_dim(p.beta_slow)), d - 1);
    if (low == high) high += 0.001;  // HF: "Prevent singularity"
    const std::vector<T> pos = positional(p.head_dim, static_cast<T>(p.base));
    const T s = static_cast<T>(p.factor), span = static_cast<T>(high - low);
    std::vector<T> f(pos.size());
    for (std::size_t i = 0; i < pos.size(); ++i) {
      const T extrapolation = held(T(1) / pos[i]);
      const T interpolation = held(T(1) / held(s * pos[i]));
      const T ramp = std::clamp(held(held(static_cast<T>(i) - static_cast<T>(low)) / span), T(0), T(1));
      const T keep = held(T(1) - ramp);  // inv_freq_extrapolation_factor
      f[i] = held(held(interpolation * held(T(1) - keep)) + held(extrapolation * keep));
    }
    return f;
  }

  static std::vector<T> frequencies(const RopeScalingParams& p, int64_t total_length) {
    const auto d = static_cast<double>(p.head_dim);
    switch (p.kind) {
      case RopeScaling::none:
        break;
      case RopeScaling::linear: {
        std::vector<T> f = inverse(positional(p.head_dim, static_cast<T>(p.base)));
        for (T& v : f) v = held(v / static_cast<T>(p.factor));
        return f;
      }
      case RopeScaling::ntk:
        return inverse(positional(p.head_dim, static_cast<T>(p.base * std::pow(p.factor, d / (d - 2)))));
      case RopeScaling::dynamic: {
        if (total_length > p.original_length)
          return inverse(positional_tensor_base(p.head_dim, dynamic_base(p, total_length)));
        // seq_len = max_position_embeddings, a Python int: the base in double, 1 for an integral factor.
        const double L0 = static_cast<double>(p.original_length);
        const double base = p.base * std::pow(p.factor * L0 / L0 - (p.factor - 1), d / (d - 2));
        return inverse(positional(p.head_dim, static_cast<T>(base)));
      }
      case RopeScaling::yarn:
        return yarn(p);
    }
    RPB_CHECK(false, "rope", "rope_frequencies: no HF form for scaling ", rope_scaling_name(p.kind));
    return {};
  }
};

}  // namespace

RopeFrequencies rope_frequencies(const RopeScalingParams& p, int64_t total_length, bool single) {
  const bool ntk_like = p.kind == RopeScaling::ntk || p.kind == RopeScaling::dynamic;
  RPB_CHECK(p.head_dim >= (ntk_like ? 4 : 2) && p.head_dim % 2 == 0, "rope", "rope_scaling ",
            rope_scaling_name(p.kind), " needs an even head_dim of at least ", ntk_like ? 4 : 2, ", got ", p.head_dim);
  RPB_CHECK(p.factor >= 1, "rope", "rope_factor ", p.factor, " must be at least 1");
  RopeFrequencies out;
  if (single) {
    const std::vector<float> f = Hf<float>::frequencies(p, total_length);
    out.inv_freq.assign(f.begin(), f.end());
  } else {
    out.inv_freq = Hf<double>::frequencies(p, total_length);
  }
  if (p.kind == RopeScaling::yarn)
    out.attention_factor = p.attention_factor > 0 ? p.attention_factor : 0.1 * std::log(p.factor) + 1.0;
  return out;
}

}  // namespace rpb::nn
