// rpb/nn/position_plan.h: the one place where a model applies position information.
//
// A scheme enters a model in one of four ways (its registry row's kind): absolute embeddings added to the
// tokens, an additive bias on the attention scores, a rotation of queries and keys, or nothing (window
// schemes live inside the window attention). A PositionPlan knows which scheme each attention layer reads,
// and turns the positions of one forward into what the model adds to its tokens and what each layer's
// attention reads; models call it instead of asking schemes themselves.
#pragma once

#include <vector>

#include "nn/attention.h"
#include "nn/position/scheme.h"

namespace rpb::nn {

class PositionPlan {
 public:
  PositionPlan() = default;
  /// One scheme read by all `layers` (or null): its bias is computed once per forward and shared, so a learned
  /// table's gradient sums over the layers (T5's choice).
  static PositionPlan shared(const PositionScheme* scheme, int64_t layers);
  /// A scheme per layer (null where a layer has none), each computing its own bias per forward. A model may
  /// give several layers the same scheme; `embedding` is the scheme whose embeddings the tokens get (or null).
  static PositionPlan per_layer(std::vector<const PositionScheme*> layers, const PositionScheme* embedding);

  /// x (B, ..., d) plus the embeddings of positions `p` (reshaped to x's trailing shape) for an absolute
  /// scheme; x itself otherwise.
  Tensor embed(const Tensor& x, const Positions& p) const;
  /// What each layer's attention reads for queries and keys at `p`: the bias of additive schemes (their
  /// per-offset form when `relative` and the scheme has one, else the full matrix) and the rotary scheme.
  std::vector<AttentionPositions> attention(const Positions& p, bool relative) const;

 private:
  std::vector<const PositionScheme*> layers_;
  const PositionScheme* embedding_ = nullptr;
  bool shared_ = false;
};

}  // namespace rpb::nn
