// tests/path_models.h: the small language models the tests compare the attention paths with (the fused kernel and
// the reference path): one option set every scheme runs with, each scheme's options set where they matter.
#pragma once

#include <string>

#include "nn/transformer.h"

namespace rpb::testing {

/// d_model 32, 4 heads, 2 layers; t5 with 16 buckets to 64, shaw clipped at 8, learnable log-decay, 256 learned
/// positions, FIRE's threshold at 64 (queries past it read their own normaliser).
inline nn::TransformerOptions path_model_options(const std::string& scheme, bool causal, bool fused) {
  nn::TransformerOptions o;
  o.vocab = 11;
  o.d_model = 32;
  o.heads = 4;
  o.layers = 2;
  o.d_ff = 48;
  o.causal = causal;
  o.fused_attention = fused;
  o.position.scheme = scheme;
  o.position.num_buckets = 16;
  o.position.max_distance = 64;
  o.position.max_relative_position = 8;
  o.position.learnable_lambda = true;
  o.position.max_positions = 256;
  o.position.fire_length = 64;
  return o;
}

}  // namespace rpb::testing
