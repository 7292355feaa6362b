// The CUDA side of fused_attention (core/ops/attention_cuda.cpp), called by core/ops/attention.cpp once it has
// checked the shapes.
#pragma once

#include "core/cuda/backend.h"
#include "core/ops.h"

namespace rpb {

/// fused_attention of inputs on Device::cuda; `c` holds the checked shapes, layout and masks' flags (its pointers
/// are filled here). Records the backward when a gradient is needed.
Tensor fused_attention_cuda(const Tensor& q, const Tensor& k, const Tensor& v, const RelativeBias& bias,
                            const Tensor& key_padding, const Tensor& score_bias, cuda::AttentionCall c);

}  // namespace rpb
