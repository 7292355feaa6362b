#include "nn/grid_model.h"

#include <algorithm>

namespace rpb::nn {

const std::vector<std::string>& grid_scheme_names() {
  static const std::vector<std::string> names = {"swin",     "swin_v2",   "learned2d", "sinusoidal2d",
                                                 "alibi2d", "clipped2d", "none"};
  return names;
}

bool is_window_scheme(const std::string& s) { return s == "swin" || s == "swin_v2"; }

namespace {

void validate(const GridModelOptions& o) {
  const auto& names = grid_scheme_names();
  RPB_CHECK(std::find(names.begin(), names.end(), o.scheme) != names.end(), "grid model", "unknown 2-D scheme '",
            o.scheme, "'");
  RPB_CHECK(o.vocab > 0 && o.d_model > 0 && o.layers > 0 && o.d_ff > 0, "grid model",
            "vocab, d_model, layers and d_ff must be positive");
  RPB_CHECK(o.heads > 0 && o.d_model % o.heads == 0, "grid model", "heads ", o.heads, " must divide d_model ",
            o.d_model);
  RPB_CHECK(!is_window_scheme(o.scheme) || o.window >= 1, "grid model", "grid.window must be >= 1, got ", o.window);
}

}  // namespace

GridBlock::GridBlock(const GridModelOptions& o, int64_t index, Generator& init_gen, Generator& dropout_gen)
    : ln1(register_module("ln1", std::make_shared<LayerNorm>(o.d_model))) {
  if (is_window_scheme(o.scheme)) {
    WindowAttentionOptions w;
    w.dim = o.d_model;
    w.heads = o.heads;
    w.window_h = w.window_w = o.window;
    // Swin: blocks alternate between regular and shifted windows (shift = window / 2).
    w.shift_h = w.shift_w = (o.shift && index % 2 == 1) ? o.window / 2 : 0;
    w.bias = o.scheme == "swin" ? "table" : "continuous";
    // Swin V2 normalizes coordinates by the window it was trained with, so a larger window reads
    // log-spaced coordinates beyond the trained range instead of rescaling them.
    w.pretrained_window_h = w.pretrained_window_w = o.scheme == "swin_v2" ? o.window : 0;
    w.cpb_hidden = o.cpb_hidden;
    w.init_std = o.init_std;
    w.fused = o.fused_attention;
    window_attn = register_module("window_attn", std::make_shared<WindowAttention>(w, init_gen));
  } else {
    AttentionOptions a;
    a.d_model = o.d_model;
    a.heads = o.heads;
    a.causal = false;
    a.fused = o.fused_attention;
    a.dropout = o.dropout;
    a.init_std = a.out_init_std = o.init_std;
    attn = register_module("attn", std::make_shared<MultiHeadAttention>(a, init_gen, dropout_gen));
  }
  ln2 = register_module("ln2", std::make_shared<LayerNorm>(o.d_model));
  mlp = register_module("mlp", std::make_shared<MLP>(o.d_model, o.d_ff, o.dropout, init_gen, dropout_gen, GeluApprox::tanh,
                                                     o.init_std, o.init_std));
}

Tensor GridBlock::forward(const Tensor& x, const Position2D* pos) const {
  const int64_t B = x.size(0), H = x.size(1), W = x.size(2), d = x.size(3);
  const Tensor h = ln1->forward(x);
  Tensor a;
  if (window_attn) {
    a = window_attn->forward(h);
  } else {
    PositionBias bias;
    if (pos && pos->additive()) {
      if (attn->uses_fused()) {
        bias.relative = pos->relative_bias(H, W);  // (heads, (2H - 1)(2W - 1))
        bias.grid_width = W;
      }
      if (!bias.relative.defined()) bias.full = pos->bias(H, W);  // (heads, N, N)
    }
    a = reshape(attn->forward(reshape(h, {B, H * W, d}), nullptr, bias, Tensor(), nullptr), {B, H, W, d});
  }
  const Tensor y = add(x, a);
  return add(y, mlp->forward(ln2->forward(y)));
}

GridModel::GridModel(const GridModelOptions& o, Generator& init_gen)
    : o_((validate(o), o)), dropout_gen_(std::make_unique<Generator>(init_gen.next_u64())) {
  tok = register_module("tok", std::make_shared<Embedding>(o.vocab, o.d_model, init_gen, o.init_std));
  if (!is_window_scheme(o.scheme)) {
    Position2DOptions p;
    p.name = o.scheme;
    p.heads = o.heads;
    p.dim = o.d_model;
    p.max_h = p.max_w = o.max_side;
    p.max_relative_position = o.max_relative_position;
    p.init_std = o.init_std;
    position_ = make_position_2d(p, init_gen);
    pos_ = register_module("pos", std::make_shared<ModuleDict>());
    pos_->insert(position_->name(), position_);
  }
  blocks = register_module("blocks", std::make_shared<ModuleList>());
  for (int64_t i = 0; i < o.layers; ++i)
    blocks->push_back(std::make_shared<GridBlock>(o, i, init_gen, *dropout_gen_));
  ln_f = register_module("ln_f", std::make_shared<LayerNorm>(o.d_model));
  head = register_module("head", std::make_shared<Linear>(o.d_model, o.vocab, true, init_gen, o.init_std));
}

Tensor GridModel::forward(const Tensor& tokens) const {
  RPB_CHECK(tokens.dim() == 3 && tokens.dtype() == DType::i64, "grid model", "tokens must be (B, H, W) int64, got ",
            dtype_name(tokens.dtype()), " ", tokens.shape());
  const int64_t H = tokens.size(1), W = tokens.size(2);
  Tensor x = tok->forward(tokens);  // (B, H, W, d)
  if (position_ && position_->absolute())
    x = add(x, reshape(position_->embed(H, W), {H, W, o_.d_model}));
  for (std::size_t i = 0; i < blocks->size(); ++i) x = blocks->at<GridBlock>(i).forward(x, position_.get());
  return head->forward(ln_f->forward(x));  // (B, H, W, vocab)
}

Tensor GridModel::loss(const Tensor& tokens, const Tensor& targets) const {
  RPB_CHECK(targets.shape() == tokens.shape(), "grid model", "targets ", targets.shape(), " differ from tokens ",
            tokens.shape());
  return cross_entropy(forward(tokens), targets);
}

void GridModel::set_window(int64_t side) {
  RPB_CHECK(is_window_scheme(o_.scheme), "grid model", "set_window: scheme ", o_.scheme, " has no windows");
  for (std::size_t i = 0; i < blocks->size(); ++i) {
    WindowAttention& w = *blocks->at<GridBlock>(i).window_attn;
    const int64_t shift = (o_.shift && i % 2 == 1) ? side / 2 : 0;
    w.set_window(side, side, shift, shift);
  }
}

int64_t GridModel::max_side() const { return o_.scheme == "learned2d" ? o_.max_side : 0; }

}  // namespace rpb::nn
