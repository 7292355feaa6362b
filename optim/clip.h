// rpb/optim/clip.h: gradient-norm clipping and the non-finite-gradient check.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "optim/optimizer.h"

namespace rpb::optim {

/// The global L2 norm over every parameter's gradient (summed in double; parameters without a gradient are
/// skipped): what clip_grad_norm measures, without clipping (a run with optim.grad_clip = 0 logs it).
double global_grad_norm(const std::vector<NamedParam>& params);

/// torch.nn.utils.clip_grad_norm_: the global L2 norm over every parameter's gradient
/// (summed in double; parameters without a gradient are skipped). When norm > max_norm
/// (> 0) the gradients are scaled by max_norm / (norm + 1e-6). Returns the norm before
/// clipping. A non-finite norm leaves the gradients untouched and is returned as is, for
/// the caller to report. A gradient shared with another tensor is replaced by a scaled
/// copy rather than scaled through the alias.
double clip_grad_norm(const std::vector<NamedParam>& params, double max_norm);

/// The name of the first parameter (in order) whose gradient holds a NaN or an Inf;
/// nullopt when every gradient is finite (or absent).
std::optional<std::string> first_non_finite_grad(const std::vector<NamedParam>& params);

}  // namespace rpb::optim
