// The CUDA side of fused_attention (core/ops/attention_cuda.cpp), called by core/ops/attention.cpp once it has
// checked the shapes.
#pragma once

#include "core/cuda/backend.h"
#include "core/ops.h"

namespace rpb {

/// fused_attention of inputs on Device::cuda; `c` holds the checked shapes, layout and masks' flags (its pointers
/// are filled here). When `backward` is given, it receives the rule fused_attention records (the inputs are q, k, v,
/// the table, then the tiles' parameters, as fused_attention_inputs lists them).
Tensor fused_attention_cuda(const Tensor& q, const Tensor& k, const Tensor& v, const RelativeBias& bias,
                            const Tensor& key_padding, const Tensor& score_bias, cuda::AttentionCall c,
                            BackwardFn* backward);

// ---- shared by the CPU and CUDA halves (defined in core/ops/attention.cpp) ----
/// The input slot of the tiles' first parameter on the tape (after q, k, v and the table).
inline constexpr int kFirstTileParameter = 4;
/// True when one of `tiles`' parameters (null: none) needs its gradient.
bool tile_grads_needed(const BiasTiles* tiles, const InputGrads& gi);
/// Sets the tiles' parameters' gradients from `acc` (heads, grad_slots()), summed over the batch.
void set_tile_grads(const BiasTiles& tiles, const std::vector<double>& acc, InputGrads& gi);

}  // namespace rpb
