// rpb/nn/position/rope_scaling.h: RoPE scaling (position.rope_scaling): the rotary frequencies and attention factor of
// a rope model run past its training length L0 (PositionOptions::train_length), as Hugging Face transformers
// computes them.
//
// Reference: huggingface/transformers src/transformers/modeling_rope_utils.py
// @ ef46806472a64b0013ed413781e3afed82bfa047
// (_compute_linear_scaling_rope_parameters, _compute_dynamic_ntk_parameters, _compute_yarn_parameters), and the
// dynamic update src/transformers/models/llama/modeling_llama.py @ 5dd4a63548857797727ae73eeb6a6e886ea02a3e
// (LlamaRotaryEmbedding._dynamic_frequency_update, later the dynamic_rope_update decorator of modeling_rope_utils.py,
// same rule). With s the factor, d = head_dim, b = rope_base:
//   none     b^(-2k/d), rpb's rope as it always was (computed in double, then rounded to the dtype)
//   linear   position interpolation (Chen et al. 2023): HF's b^(-2k/d) / s
//   ntk      static NTK-aware scaling: the frequencies at base b * s^(d/(d-2)) (bloc97, "NTK-Aware Scaled RoPE allows
//            LLaMA models to have extended (8k+) context size without any fine-tuning", reddit.com/r/LocalLLaMA
//            /comments/14lz7j5; HF has no static type)
//   dynamic  dynamic NTK: for a total length T > L0, the frequencies at base b * (s T / L0 - (s - 1))^(d/(d-2)); at
//            T <= L0 the unscaled ones. T is the length of the sequence a forward scores: q_offset + q_len (see
//            rope_frequencies)
//   yarn     YaRN (Peng et al. 2023): a linear ramp over the dimensions between floor(corr(beta_fast)) and
//            ceil(corr(beta_slow)), corr(r) = d ln(L0 / (2 pi r)) / (2 ln b), blends the interpolated (/ s) and the
//            original frequencies; cos and sin are multiplied by the attention factor (default 0.1 ln s + 1), so every
//            attention score is scaled by its square.
// In float32 the arithmetic follows HF's dtypes step by step (float32 tensors from an int64 arange, Python scalars
// rounded to float32 where they meet a tensor; dynamic's base from HF's int64 seq_len tensor, so in float32 too), so
// the frequencies equal HF's to the bit (tests/test_rope_scaling.cpp, from tests/python/hf_rope_scaling_golden.py).
// In float64 the same formulas run in double.
//
// The factor: position.rope_factor, or when 0 the largest evaluation multiplier of the evaluation being run
// (PositionOptions::max_eval_multiplier: run.eval_multipliers, or `rpb eval --lengths` over run.length), resolved by
// resolved_rope_factor; with position.rope_factor_per_length, max(1, T / L0) for each forward over T positions
// (nn/position/rope.cpp).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/enum_names.h"

namespace rpb::nn {

/// position.rope_scaling.
enum class RopeScaling {
  none,     // the rotary frequencies as trained
  linear,   // position interpolation: frequencies / factor
  ntk,      // static NTK-aware: base * factor^(d/(d-2))
  dynamic,  // dynamic NTK: the base grows with the current total length past L0
  yarn      // YaRN: per-dimension blend of interpolated and original frequencies, and an attention factor
};

/// position.rope_scaling's names: "none", "linear", "ntk", "dynamic", "yarn".
inline constexpr EnumName<RopeScaling> kRopeScalingNames[] = {{RopeScaling::none, "none"},
                                                              {RopeScaling::linear, "linear"},
                                                              {RopeScaling::ntk, "ntk"},
                                                              {RopeScaling::dynamic, "dynamic"},
                                                              {RopeScaling::yarn, "yarn"}};
/// The name of `s` in kRopeScalingNames.
const char* rope_scaling_name(RopeScaling s);
/// Every name of kRopeScalingNames, in its order.
std::vector<std::string> rope_scaling_names();
/// Its name in result labels and figures, as the papers name it: "PI" (linear: Chen et al. 2023's position
/// interpolation), "NTK" (ntk), "dynamic NTK", "YaRN"; "" for none.
const char* rope_scaling_label(RopeScaling s);
/// The value named `name`; throws rpb::OptionError (field "rope_scaling") naming the choices otherwise.
RopeScaling rope_scaling_from_name(const std::string& name);

/// What the frequencies depend on.
struct RopeScalingParams {
  RopeScaling kind = RopeScaling::none;
  int64_t head_dim = 0;           // d, even
  double base = 10000.0;          // b
  double factor = 1.0;            // s, resolved (>= 1)
  int64_t original_length = 0;    // L0 (dynamic, yarn)
  double beta_fast = 32, beta_slow = 1;  // yarn
  double attention_factor = 0;    // yarn; 0: 0.1 ln s + 1
};

/// The inverse frequencies (d/2 of them) and the factor cos and sin are multiplied by.
struct RopeFrequencies {
  std::vector<double> inv_freq;  // (d/2); in float32 mode each value is a float
  double attention_factor = 1.0;
};

/// The frequencies for a forward over a sequence of `total_length` positions (only dynamic reads it), computed as HF
/// does in float32 (`single`) or in double.
RopeFrequencies rope_frequencies(const RopeScalingParams& p, int64_t total_length, bool single);

/// position.rope_factor_per_length's factor for a forward over `total_length` positions of a model trained at
/// `original_length` (L0 >= 1): max(1, T / L0), so the train length reads the unscaled frequencies.
inline double per_length_rope_factor(int64_t total_length, int64_t original_length) {
  return total_length > original_length ? static_cast<double>(total_length) / static_cast<double>(original_length)
                                        : 1.0;
}

/// The factor a scaling uses: `rope_factor` when set (> 0), else `max_eval_multiplier` (0 when unknown).
inline double resolved_rope_factor(double rope_factor, int64_t max_eval_multiplier) {
  return rope_factor > 0 ? rope_factor : static_cast<double>(max_eval_multiplier);
}

}  // namespace rpb::nn
