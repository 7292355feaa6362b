// rpb/nn/init.h: parameter initialisers, in place and unrecorded (as torch.nn.init).
#pragma once

#include "core/rng.h"
#include "core/tensor.h"

namespace rpb::init {

/// Normal(0, std): GPT-2 style linear weights, and the T5 bucket table (std 0.02).
void normal_(const Tensor& t, Generator& gen, double std, double mean = 0.0);
/// Uniform [lo, hi).
void uniform_(const Tensor& t, Generator& gen, double lo, double hi);
/// torch.nn.init.trunc_normal_: Normal(mean, std) restricted to the absolute interval [a, b] (Swin tables).
void trunc_normal_(const Tensor& t, Generator& gen, double std, double mean = 0.0, double a = -2.0, double b = 2.0);
/// PyTorch's nn.Linear default for a (out, in) weight: U(-1/sqrt(in), 1/sqrt(in)).
void kaiming_uniform_linear_(const Tensor& weight, Generator& gen);
void zeros_(const Tensor& t);
void ones_(const Tensor& t);

}  // namespace rpb::init
