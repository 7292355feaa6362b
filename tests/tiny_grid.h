// A tiny grid model's options, shared by the CPU tests (tests/test_grid_model.cpp) and the CUDA tests
// (tests/cuda/test_models.cpp): 3 tokens, d_model 8, 2 heads, 2 layers, bidirectional, windows of 2.
#pragma once

#include <string>

#include "nn/grid_model.h"
#include "nn/transformer.h"

namespace rpb::testing {

inline nn::TransformerOptions tiny_grid(const std::string& scheme) {
  nn::TransformerOptions o;
  o.vocab = 3;
  o.d_model = 8;
  o.heads = 2;
  o.layers = 2;
  o.d_ff = 8;
  o.causal = false;
  o.position.scheme = scheme;
  o.position.max_side = 4;
  o.position.max_relative_position = 2;
  return o;
}

inline nn::WindowOptions tiny_windows() {
  nn::WindowOptions w;
  w.window = 2;
  w.cpb_hidden = 4;
  return w;
}

}  // namespace rpb::testing
