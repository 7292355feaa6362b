#include "nn/grid_model.h"

#include <cmath>

#include "core/checked.h"

namespace rpb::nn {

namespace {

const TransformerOptions& validated(const TransformerOptions& o, const WindowOptions& w) {
  validate(o);
  RPB_CHECK(!o.causal, "grid model", "a grid model attends bidirectionally (causal = false)");
  const SchemeInfo& s = scheme_info(position_options_for(o, 2));
  RPB_CHECK(s.kind != PositionKind::window || w.window >= 1, "grid model", "grid.window must be >= 1, got ", w.window);
  return o;
}

WindowAttentionOptions window_options(const TransformerOptions& o, const SchemeInfo& scheme, const WindowOptions& w,
                                      int64_t index) {
  WindowAttentionOptions a;
  a.dim = o.d_model;
  a.heads = o.heads;
  a.window_h = a.window_w = w.window;
  // Swin: blocks alternate between regular and shifted windows (shift = window / 2).
  a.shift_h = a.shift_w = (w.shift && index % 2 == 1) ? w.window / 2 : 0;
  a.bias = scheme.window_bias;
  // Swin V2 normalizes coordinates by the window it was trained with, so a larger window reads log-spaced
  // coordinates beyond the trained range instead of rescaling them.
  a.pretrained_window_h = a.pretrained_window_w = a.bias == WindowBias::continuous ? w.window : 0;
  a.cpb_hidden = w.cpb_hidden;
  a.scale = o.attn_scale;  // as the global attention reads it (0: head_dim^-0.5)
  a.init_std = o.init_std;
  a.fused = o.fused_attention;
  return a;
}

// The blocks' attention with a global (not windowed) scheme: bidirectional.
AttentionOptions global_attention_options(const TransformerOptions& o) {
  AttentionOptions a;
  a.d_model = o.d_model;
  a.heads = o.heads;
  a.causal = false;
  a.scale = o.attn_scale;
  a.fused = o.fused_attention;
  a.dropout = o.dropout;
  a.init_std = a.out_init_std = o.init_std;
  return a;
}

}  // namespace

GridBlock::GridBlock(const TransformerOptions& o, const SchemeInfo& scheme, const WindowOptions& w, int64_t index,
                     Generator& init_gen, Generator& dropout_gen)
    : ln1(register_module("ln1", std::make_shared<LayerNorm>(o.d_model))) {
  if (scheme.kind == PositionKind::window) {
    window_attn = register_module("window_attn",
                                  std::make_shared<WindowAttention>(window_options(o, scheme, w, index), init_gen));
  } else {
    attn = register_module("attn", std::make_shared<MultiHeadAttention>(global_attention_options(o), init_gen,
                                                                        dropout_gen));
  }
  ln2 = register_module("ln2", std::make_shared<LayerNorm>(o.d_model));
  mlp = register_module("mlp", std::make_shared<MLP>(o.d_model, o.d_ff, o.dropout, init_gen, dropout_gen, o.gelu,
                                                     o.init_std, o.init_std));
}

Tensor GridBlock::forward(const Tensor& x, const AttentionPositions& pos) const {
  const int64_t B = x.size(0), H = x.size(1), W = x.size(2), d = x.size(3);
  const Tensor h = ln1->forward(x);
  const Tensor a = window_attn ? window_attn->forward(h)
                               : reshape(attn->forward(reshape(h, {B, H * W, d}), pos, Tensor(), nullptr), {B, H, W, d});
  const Tensor y = add(x, a);
  return add(y, mlp->forward(ln2->forward(y)));
}

GridModel::GridModel(const TransformerOptions& o, const WindowOptions& windows, Generator& init_gen)
    : o_(validated(o, windows)),
      windows_(windows),
      scheme_(&scheme_info(position_options_for(o, 2))),
      dropout_gen_(std::make_unique<Generator>(init_gen.next_u64())) {
  tok = register_module("tok", make_token_embedding(o, 2, init_gen));
  if (scheme_->kind != PositionKind::window) {
    position_ = make_position_scheme(position_options_for(o, 2), init_gen);
    pos_ = register_module("pos", std::make_shared<ModuleDict>());
    pos_->insert(position_->name(), position_);
  }
  blocks = register_module("blocks", std::make_shared<ModuleList>());
  for (int64_t i = 0; i < o.layers; ++i)
    blocks->push_back(std::make_shared<GridBlock>(o, *scheme_, windows, i, init_gen, *dropout_gen_));
  ln_f = register_module("ln_f", std::make_shared<LayerNorm>(o.d_model));
  head = register_module("head", std::make_shared<Linear>(o.d_model, o.vocab, true, init_gen, head_init_std(o, 2)));
  // Every layer computes the bias of the model's one scheme itself (a learned table's gradient is then summed
  // over the layers' lookups).
  plan_ = PositionPlan::per_layer(std::vector<const PositionScheme*>(static_cast<std::size_t>(o.layers), position_.get()),
                                  position_.get());
}

int64_t GridModel::parameter_count(const TransformerOptions& o, const WindowOptions& w) {
  const char* op = "grid model";
  const PositionOptions po = position_options_for(o, 2);
  const SchemeInfo& scheme = scheme_info(po);
  int64_t n = checked_add(Embedding::parameter_count(o.vocab, o.d_model), scheme.parameters(po), op, "parameters");
  // The blocks differ only in their windows' shift, which has no parameters.
  int64_t block = scheme.kind == PositionKind::window ? WindowAttention::parameter_count(window_options(o, scheme, w, 0))
                                                      : MultiHeadAttention::parameter_count(global_attention_options(o));
  block = checked_add(block, checked_mul(2, LayerNorm::parameter_count(o.d_model), op, "parameters"), op, "parameters");
  block = checked_add(block, MLP::parameter_count(o.d_model, o.d_ff), op, "parameters");
  n = checked_add(n, checked_mul(o.layers, block, op, "parameters"), op, "parameters");
  n = checked_add(n, LayerNorm::parameter_count(o.d_model), op, "parameters");
  return checked_add(n, Linear::parameter_count(o.d_model, o.vocab, true), op, "parameters");
}

Tensor GridModel::forward(const Tensor& tokens) const {
  RPB_CHECK(tokens.dim() == 3 && tokens.dtype() == DType::i64, "grid model", "tokens must be (B, H, W) int64, got ",
            dtype_name(tokens.dtype()), " ", tokens.shape());
  const Positions p = Positions::grid(tokens.size(1), tokens.size(2));
  Tensor x = plan_.embed(tok->forward(tokens.to(tok->weight.device())), p);  // (B, H, W, d)
  // A bias over the grid (a lattice) is read by the CPU's fused kernel; on a GPU the attention takes the full bias.
  const bool fused = blocks->size() > 0 && blocks->at<GridBlock>(0).attn &&
                     blocks->at<GridBlock>(0).attn->uses_fused() && device() == Device::cpu;
  const std::vector<AttentionPositions> pos = plan_.attention(p, fused);
  for (std::size_t i = 0; i < blocks->size(); ++i) x = blocks->at<GridBlock>(i).forward(x, pos[i]);
  return head->forward(ln_f->forward(x));  // (B, H, W, vocab)
}

Tensor GridModel::loss(const Tensor& tokens, const Tensor& targets) const {
  RPB_CHECK(targets.shape() == tokens.shape(), "grid model", "targets ", targets.shape(), " differ from tokens ",
            tokens.shape());
  const Tensor logits = forward(tokens);
  return cross_entropy(logits, targets.to(logits.device()));
}

void GridModel::set_window(int64_t side) {
  RPB_CHECK(scheme_->kind == PositionKind::window, "grid model", "set_window: scheme ", scheme_->name,
            " has no windows");
  for (std::size_t i = 0; i < blocks->size(); ++i) {
    WindowAttention& w = *blocks->at<GridBlock>(i).window_attn;
    const int64_t shift = (windows_.shift && i % 2 == 1) ? side / 2 : 0;
    w.set_window(side, side, shift, shift);
  }
}

std::vector<AttentionStatsSource*> GridModel::attention_layers() const {
  std::vector<AttentionStatsSource*> out;
  for (std::size_t i = 0; i < blocks->size(); ++i) {
    const GridBlock& b = blocks->at<GridBlock>(i);
    if (b.attn) out.push_back(b.attn.get());
    else out.push_back(b.window_attn.get());
  }
  return out;
}

int64_t GridModel::max_side() const {
  const PositionOptions po = position_options_for(o_, 2);
  return scheme_->max_length(po);
}

}  // namespace rpb::nn
