// rpb/nn/grid_model.h: a bidirectional transformer over 2-D token grids, with Swin's (shifted) window
// attention (the window schemes) or global attention plus a 2-D position scheme; one output per cell.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "nn/position_plan.h"
#include "nn/transformer.h"
#include "nn/window_attention.h"

namespace rpb::nn {

/// The windows of the window schemes (swin, swin_v2): [grid] in a run config.
struct WindowOptions {
  int64_t window = 4;       // square window side
  bool shift = true;        // every other block shifts its windows by window / 2 (Swin)
  int64_t cpb_hidden = 256; // swin_v2: hidden width of the bias MLP (Swin V2 uses 512)
};

/// Pre-LN block: x + attn(ln1(x)); x + mlp(ln2(x)) on (B, H, W, d) grids.
class GridBlock : public Module {
 public:
  /// Block `index` of a model with `model`'s sizes and the 2-D scheme `scheme`.
  GridBlock(const TransformerOptions& model, const SchemeInfo& scheme, const WindowOptions& windows, int64_t index,
            Generator& init_gen, Generator& dropout_gen);
  /// x (B, H, W, d); `pos` is what the model's PositionPlan gives this layer (global attention only).
  Tensor forward(const Tensor& x, const AttentionPositions& pos) const;

  std::shared_ptr<LayerNorm> ln1;
  std::shared_ptr<WindowAttention> window_attn;    // window schemes
  std::shared_ptr<MultiHeadAttention> attn;        // global schemes
  std::shared_ptr<LayerNorm> ln2;
  std::shared_ptr<MLP> mlp;
};

/// tokens (B, H, W) i64 -> logits (B, H, W, vocab). Parameter names: tok.weight, pos.<scheme>.*,
/// blocks.<i>.{ln1, window_attn | attn, ln2, mlp}.*, ln_f.*, head.weight, head.bias.
///
/// Reads of `model`: vocab, d_model, heads, layers, d_ff, dropout, init_std, embedding, gelu, fused_attention and
/// position (a 2-D scheme: scheme_names(2)); attention is bidirectional (`causal` must be false) and the head untied.
class GridModel : public Module {
 public:
  GridModel(const TransformerOptions& model, const WindowOptions& windows, Generator& init_gen);
  /// The parameters of GridModel(model, windows), counted without building it (throws on overflow).
  static int64_t parameter_count(const TransformerOptions& model, const WindowOptions& windows);
  using Module::parameter_count;
  /// tokens (B, H, W) -> logits (B, H, W, vocab), on the model's device (the token ids move there).
  Tensor forward(const Tensor& tokens) const;
  /// Mean cross-entropy of the per-cell logits against targets (B, H, W), on the model's device.
  Tensor loss(const Tensor& tokens, const Tensor& targets) const;
  /// Window schemes: runs every block with a window of `side` (swin_v2 at any size; swin only smaller).
  void set_window(int64_t side);
  /// The largest grid side the model can run (learned2d: max_side); 0 when unbounded.
  int64_t max_side() const;
  /// Each block's attention, global or windowed, in order: what an AttentionStatsRecorder watches, with the grid's
  /// width (window attention places its cells itself, on the unrolled grid).
  std::vector<AttentionStatsSource*> attention_layers() const;
  const TransformerOptions& options() const { return o_; }
  Generator& dropout_generator() const { return *dropout_gen_; }

  std::shared_ptr<Embedding> tok;
  std::shared_ptr<ModuleList> blocks;
  std::shared_ptr<LayerNorm> ln_f;
  std::shared_ptr<Linear> head;

 private:
  TransformerOptions o_;
  WindowOptions windows_;
  const SchemeInfo* scheme_;
  std::unique_ptr<Generator> dropout_gen_;
  std::shared_ptr<ModuleDict> pos_;
  std::shared_ptr<PositionScheme> position_;
  PositionPlan plan_;
};

}  // namespace rpb::nn
