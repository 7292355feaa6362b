// rpb/nn/grid_model.h: a bidirectional transformer over 2-D token grids, with Swin's (shifted)
// window attention or global attention plus a 2-D position scheme; one output per cell.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "nn/attention.h"
#include "nn/swin.h"

namespace rpb::nn {

struct GridModelOptions {
  int64_t vocab = 8;   // input and output tokens per cell
  int64_t d_model = 64;
  int64_t heads = 4;
  int64_t layers = 2;
  int64_t d_ff = 256;
  double dropout = 0.0;
  double init_std = 0.02;
  /// swin (V1 table, window attention) | swin_v2 (continuous bias, window attention) |
  /// learned2d | sinusoidal2d | alibi2d | clipped2d | none (global attention over the whole grid).
  std::string scheme = "swin";
  int64_t window = 4;                  // swin, swin_v2: square window side
  bool shift = true;                   // swin, swin_v2: every other block shifts by window / 2
  int64_t cpb_hidden = 256;            // swin_v2: hidden width of the bias MLP (Swin V2 uses 512)
  int64_t max_side = 16;               // learned2d: the largest grid side
  int64_t max_relative_position = 8;   // clipped2d: K
  bool fused_attention = true;         // the fused kernel (core/ops.h fused_attention) or the reference path
};

/// The scheme names GridModel accepts.
const std::vector<std::string>& grid_scheme_names();
/// True for the windowed schemes (swin, swin_v2).
bool is_window_scheme(const std::string& scheme);

/// Pre-LN block: x + attn(ln1(x)); x + mlp(ln2(x)) on (B, H, W, d) grids.
class GridBlock : public Module {
 public:
  GridBlock(const GridModelOptions& o, int64_t index, Generator& init_gen, Generator& dropout_gen);
  /// `pos` is the model's global scheme (null for window attention).
  Tensor forward(const Tensor& x, const Position2D* pos) const;

  std::shared_ptr<LayerNorm> ln1;
  std::shared_ptr<WindowAttention> window_attn;    // windowed schemes
  std::shared_ptr<MultiHeadAttention> attn;        // global schemes
  std::shared_ptr<LayerNorm> ln2;
  std::shared_ptr<MLP> mlp;
};

/// tokens (B, H, W) i64 -> logits (B, H, W, vocab). Parameter names: tok.weight, pos.<scheme>.*,
/// blocks.<i>.{ln1, window_attn | attn, ln2, mlp}.*, ln_f.*, head.weight.
class GridModel : public Module {
 public:
  GridModel(const GridModelOptions& options, Generator& init_gen);
  Tensor forward(const Tensor& tokens) const;
  /// Mean cross-entropy of the per-cell logits against targets (B, H, W).
  Tensor loss(const Tensor& tokens, const Tensor& targets) const;
  /// Windowed schemes: runs every block with a window of `side` (swin_v2 at any size; swin only smaller).
  void set_window(int64_t side);
  /// The largest grid side the model can run (learned2d: max_side); 0 when unbounded.
  int64_t max_side() const;
  const GridModelOptions& options() const { return o_; }
  Generator& dropout_generator() const { return *dropout_gen_; }

  std::shared_ptr<Embedding> tok;
  std::shared_ptr<ModuleList> blocks;
  std::shared_ptr<LayerNorm> ln_f;
  std::shared_ptr<Linear> head;

 private:
  GridModelOptions o_;
  std::unique_ptr<Generator> dropout_gen_;
  std::shared_ptr<ModuleDict> pos_;
  std::shared_ptr<Position2D> position_;
};

}  // namespace rpb::nn
