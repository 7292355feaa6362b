#include "nn/position_plan.h"

namespace rpb::nn {

namespace {

// An additive bias at explicit positions: the scheme's table over their span's offsets, read at the pairs' offsets by
// the fused kernel (`relative`) or expanded here; a scheme without such a table (fire) gives its full bias.
PositionBias bias_at(const PositionScheme* s, const Positions& p, bool relative) {
  PositionBias b;
  const RelativeBias table = s->relative_bias_at(p);
  if (!table.defined()) b.full = s->bias(p);
  else if (relative) b.relative = table;
  else b.full = expand_relative_bias_at(table.table, table.positions);
  return b;
}

AttentionPositions positions_of(const PositionScheme* s, const Positions& p, bool relative) {
  AttentionPositions a;
  if (!s) return a;
  if (s->kind() == PositionKind::rotary) a.rotary = s, a.at = p.at;
  a.block = s->attention_block();
  if (s->kind() != PositionKind::additive_bias) return a;
  if (p.at) {
    a.bias = bias_at(s, p, relative);
    return a;
  }
  if (relative) a.bias.relative = s->relative_bias(p);
  if (!a.bias.relative.defined()) a.bias.full = s->bias(p);
  return a;
}

}  // namespace

PositionPlan PositionPlan::shared(const PositionScheme* scheme, int64_t layers) {
  PositionPlan plan;
  plan.layers_.assign(static_cast<std::size_t>(layers), scheme);
  plan.embedding_ = scheme;
  plan.shared_ = true;
  return plan;
}

PositionPlan PositionPlan::per_layer(std::vector<const PositionScheme*> layers, const PositionScheme* embedding) {
  PositionPlan plan;
  plan.layers_ = std::move(layers);
  plan.embedding_ = embedding;
  return plan;
}

Tensor PositionPlan::embed(const Tensor& x, const Positions& p) const {
  if (!embedding_ || embedding_->kind() != PositionKind::absolute) return x;
  Tensor e;  // (positions, d)
  if (p.at) {  // explicit positions: the rows of the embeddings of their span
    const Tensor rows = Tensor::indices({p.q_len}, *p.at);
    const Tensor span = embedding_->embed(Positions::line(p.span(), p.span()));
    e = index_select(span, rows.to(span.device()));
  } else {
    e = embedding_->embed(p);
  }
  if (x.dim() > 3) {                // a grid (B, H, W, d): the embeddings of its cells as (H, W, d)
    std::vector<int64_t> cells(x.shape().begin() + 1, x.shape().end());
    e = reshape(e, cells);
  }
  return add(x, e);
}

std::vector<AttentionPositions> PositionPlan::attention(const Positions& p, bool relative) const {
  std::vector<AttentionPositions> out;
  out.reserve(layers_.size());
  for (std::size_t i = 0; i < layers_.size(); ++i)
    out.push_back(shared_ && i > 0 ? out[0] : positions_of(layers_[i], p, relative));
  return out;
}

}  // namespace rpb::nn
