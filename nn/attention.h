// rpb/nn/attention.h: scaled dot-product attention with an additive position bias, and
// multi-head self-attention with a fused QKV projection and a KV cache.
#pragma once

#include "nn/attention_stats.h"
#include "nn/layers.h"
#include "nn/position.h"

namespace rpb::nn {

/// softmax(q k^T * scale + bias, masked) v.
///   q (B, H, Tq, dh), k and v (B, H, Tk, dh);
///   bias: additive, broadcastable to (B, H, Tq, Tk), or undefined; added after the scale
///         (T5 and ALiBi biases are never scaled by 1/sqrt(d));
///   mask: non-zero where attention is forbidden, broadcastable to (B, H, Tq, Tk), or undefined;
///         a fully masked row yields zeros;
///   dropout: applied to the attention probabilities, may be null.
/// Returns (B, H, Tq, dh).
Tensor scaled_dot_product_attention(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& bias,
                                    const Tensor& mask, double scale, const Dropout* dropout = nullptr);

/// The factor of q k^T for an attention option `scale` (AttentionOptions::scale, WindowAttentionOptions::scale):
/// `scale`, or 1/sqrt(head_dim) when it is 0.
double attention_scale(double scale, int64_t head_dim);

/// (Tq, Tk) i64 causal mask: 1 where key j lies after query q_offset + i, and with `block` > 0 (blockwise causal
/// attention, core/ops.h AttentionSpec::block) also where j lies before block_first_key(q_offset + i, block).
Tensor causal_mask(int64_t q_len, int64_t k_len, int64_t q_offset, int64_t block = 0);

/// An additive position bias in one of its two forms.
struct PositionBias {
  RelativeBias relative;  // per relative position, as fused_attention reads it (core/ops.h)
  Tensor full;            // (H, Tq, Tk): materialized, for the reference path and schemes without a relative form
  bool defined() const { return relative.defined() || full.defined(); }
};

/// The position information one attention layer reads (nn/position_plan.h decides it).
struct AttentionPositions {
  PositionBias bias;                       // additive schemes: added to the scores
  const PositionScheme* rotary = nullptr;  // rotary schemes: rotates queries and keys
  /// Randomized positions (a training forward's): the rotary scheme rotates queries and keys at these positions;
  /// an additive bias carries them in its relative form. Null: 0 .. T - 1 (from the cache's length).
  std::shared_ptr<const std::vector<int64_t>> at;
  int64_t block = 0;  // > 0: blockwise causal attention in blocks of this many positions (PositionScheme::attention_block)
};


/// (H, Tq, Tk): the full bias of a line bias in either relative form (a table over offsets, or tiles computed for
/// queries at q_offset .. over keys at 0 ..), in `dtype` (the tiles' output; a table keeps its own).
Tensor full_bias(const RelativeBias& bias, int64_t q_len, int64_t k_len, int64_t q_offset, DType dtype);

/// Cached keys and values of one attention layer (incremental decoding).
struct LayerCache {
  Tensor k;  // (B, H, Tcached, dh)
  Tensor v;  // (B, H, Tcached, dh)
};

struct AttentionOptions {
  int64_t d_model = 128;
  int64_t heads = 4;
  bool causal = true;
  /// Multiplies q k^T; 0 means 1/sqrt(head_dim). T5 uses 1 ("Mesh TensorFlow initialization").
  double scale = 0.0;
  double dropout = 0.0;
  double init_std = 0.02;
  double out_init_std = 0.02;
  /// The fused kernel (core/ops.h fused_attention) unless attention dropout is active; false keeps the
  /// reference path (scores, bias, mask and probabilities materialized as (B, H, T, T)).
  bool fused = true;
};

/// Multi-head self-attention: qkv = Linear(d, 3d) fused, out = Linear(d, d).
class MultiHeadAttention : public Module, public AttentionStatsSource {
 public:
  MultiHeadAttention(const AttentionOptions& options, Generator& init_gen, Generator& dropout_gen);
  /// The parameters of a MultiHeadAttention(options), counted without building it.
  static int64_t parameter_count(const AttentionOptions& options);
  using Module::parameter_count;

  /// x (B, T, d) -> (B, T, d).
  ///   pos: the additive bias (already computed, maybe shared across layers) and the rotary scheme that rotates
  ///        q and k here, either or both empty;
  ///   key_padding_mask: (B, Tk) non-zero at padded keys, or undefined;
  ///   cache: when given, new keys and values are appended and queries sit at offset cache->k's length.
  Tensor forward(const Tensor& x, const AttentionPositions& pos, const Tensor& key_padding_mask,
                 LayerCache* cache) const;
  /// True when forward runs the fused kernel (fused and no active attention dropout).
  bool uses_fused() const;

  int64_t heads() const override { return heads_; }
  int64_t head_dim() const { return head_dim_; }
  double scale() const { return scale_; }

  // Diagnostics (AttentionStatsSource): accumulate_attention_stats over this forward's q, k, bias and masks; the
  // output is the same up to rounding (the fused kernel then reads q, k and v unpacked).

  std::shared_ptr<Linear> qkv;   // (3d, d)
  std::shared_ptr<Linear> out;   // (d, d)
  std::shared_ptr<Dropout> attn_drop;
  std::shared_ptr<Dropout> resid_drop;

 private:
  // forward's code paths (nn/attention.cpp): the packed fused kernel, or q, k and v split by head (rotated, cached)
  // and attended by the fused kernel or the composite ops.
  struct Heads {
    Tensor q;  // (B, H, Tq, dh)
    Tensor k;  // (B, H, Tk, dh)
    Tensor v;  // (B, H, Tk, dh)
  };
  /// The packed projection (B, T, 3, H, dh) straight through the fused kernel -> (B, T, H, dh).
  Tensor attend_packed(const Tensor& packed, const AttentionPositions& pos, const Tensor& key_padding_mask) const;
  /// q, k and v of the packed projection, rotated and joined to the cache's keys and values.
  Heads split_heads(const Tensor& packed, const AttentionPositions& pos, int64_t offset, LayerCache* cache) const;
  /// Attention of the heads -> (B, H, Tq, dh): the fused kernel, or the composite ops over the full bias and mask.
  Tensor attend_heads(const Heads& h, const AttentionPositions& pos, const Tensor& key_padding_mask,
                      int64_t offset) const;

  int64_t heads_, head_dim_;
  bool causal_;
  bool fused_;
  double scale_;
};

}  // namespace rpb::nn
