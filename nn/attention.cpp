#include "nn/attention.h"

#include <cmath>

#include "core/checked.h"
#include "core/dispatch.h"

namespace rpb::nn {

Tensor scaled_dot_product_attention(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& bias,
                                    const Tensor& mask, double scale, const Dropout* dropout) {
  RPB_CHECK(q.dim() == 4 && k.dim() == 4 && v.dim() == 4, "attention", "expected (B, H, T, dh) tensors, got q ",
            q.shape(), " k ", k.shape(), " v ", v.shape());
  RPB_CHECK(k.shape() == v.shape() && q.size(-1) == k.size(-1), "attention", "q ", q.shape(), ", k ", k.shape(),
            " and v ", v.shape(), " do not fit");
  Tensor scores = matmul(q, k, false, true);  // (B, H, Tq, Tk)
  if (scale != 1.0) scores = mul_scalar(scores, scale);
  if (bias.defined()) scores = add(scores, bias);
  if (mask.defined()) scores = masked_fill(scores, mask, -INFINITY);
  Tensor probs = softmax(scores, -1);
  if (dropout) probs = dropout->forward(probs);
  return matmul(probs, v);  // (B, H, Tq, dh)
}

Tensor causal_mask(int64_t q_len, int64_t k_len, int64_t q_offset, int64_t block) {
  Tensor m = Tensor::empty({q_len, k_len}, DType::i64);
  int64_t* p = m.mutable_data<int64_t>();
  for (int64_t i = 0; i < q_len; ++i) {
    const int64_t first = block_first_key(q_offset + i, block);
    for (int64_t j = 0; j < k_len; ++j) p[i * k_len + j] = j > q_offset + i || j < first;
  }
  return m;
}

namespace {

// The composite path's mask, built on the host: causal (and blockwise), key padding, or either forbidding as one
// (B, 1, T, Tk) i64 mask; undefined when neither applies.
Tensor composite_mask(bool causal, const Tensor& key_padding_mask, int64_t B, int64_t T, int64_t Tk, int64_t offset,
                      int64_t block) {
  Tensor mask;
  if (causal) mask = causal_mask(T, Tk, offset, block);
  if (!key_padding_mask.defined()) return mask;
  const Tensor kp = reshape(key_padding_mask.to(Device::cpu), {B, 1, 1, Tk});
  if (!mask.defined()) return kp;
  Tensor both = Tensor::empty({B, 1, T, Tk}, DType::i64);
  const int64_t* pc = mask.data<int64_t>();
  int64_t* pb = both.mutable_data<int64_t>();
  const Tensor kpi = kp.to(DType::i64);
  const int64_t* pk = kpi.data<int64_t>();
  for (int64_t b = 0; b < B; ++b)
    for (int64_t i = 0; i < T * Tk; ++i) pb[b * T * Tk + i] = pc[i] || pk[b * Tk + i % Tk];
  return both;
}

// Whether the fused kernel on x's device reads `bias`: the CUDA kernel reads no bias at explicit positions, which the
// composite path expands there (full_bias).
bool kernel_reads(const PositionBias& bias, const Tensor& x) { return bias.relative.positions.empty() || !x.is_cuda(); }

}  // namespace

Tensor full_bias(const RelativeBias& bias, int64_t q_len, int64_t k_len, int64_t q_offset, DType dtype) {
  RPB_CHECK(bias.grid.empty(), "attention", "a relative bias over a grid has no line form (its grid ",
            bias.grid.size(), "-D)");
  if (!bias.positions.empty()) {
    RPB_CHECK(static_cast<int64_t>(bias.positions.size()) == q_len && q_len == k_len && q_offset == 0, "attention",
              "a bias at ", bias.positions.size(), " explicit positions read by ", q_len, " queries and ", k_len,
              " keys at offset ", q_offset);
    return expand_relative_bias_at(bias.table, bias.positions);
  }
  if (!bias.tiles) return expand_relative_bias(bias.table, q_len, k_len);
  RPB_CHECK(bias.tiles->parameters().empty(), "attention",
            "a bias computed by tiles that learns (FIRE past its threshold) takes its gradient only in the fused "
            "kernel; its full form is the scheme's bias()");
  const int64_t heads = bias.tiles->heads();
  Tensor full = Tensor::zeros({heads, q_len, k_len}, dtype);
  dispatch_float(dtype, "attention", [&](auto tag) {
    using T = typename decltype(tag)::type;
    T* p = full.mutable_data<T>();
    for (int64_t h = 0; h < heads; ++h) bias.tiles->add(h, q_offset, q_len, 0, k_len, p + h * q_len * k_len, k_len);
  });
  return full;
}

double attention_scale(double scale, int64_t head_dim) {
  return scale > 0 ? scale : 1.0 / std::sqrt(static_cast<double>(head_dim));
}

int64_t MultiHeadAttention::parameter_count(const AttentionOptions& o) {
  return checked_add(Linear::parameter_count(o.d_model, 3 * o.d_model, true),
                     Linear::parameter_count(o.d_model, o.d_model, true), "attention", "parameters");
}

MultiHeadAttention::MultiHeadAttention(const AttentionOptions& o, Generator& init_gen, Generator& dropout_gen)
    : qkv(register_module("qkv", std::make_shared<Linear>(o.d_model, 3 * o.d_model, true, init_gen, o.init_std))),
      out(register_module("out", std::make_shared<Linear>(o.d_model, o.d_model, true, init_gen, o.out_init_std))),
      attn_drop(register_module("attn_drop", std::make_shared<Dropout>(o.dropout, dropout_gen))),
      resid_drop(register_module("resid_drop", std::make_shared<Dropout>(o.dropout, dropout_gen))),
      heads_(o.heads),
      head_dim_(o.heads > 0 ? o.d_model / o.heads : 0),
      causal_(o.causal),
      fused_(o.fused) {
  RPB_CHECK(o.heads > 0 && o.d_model % o.heads == 0, "attention", "heads ", o.heads, " must divide d_model ",
            o.d_model);
  scale_ = attention_scale(o.scale, head_dim_);
}

bool MultiHeadAttention::uses_fused() const {
  // Dropout on the attention probabilities needs them materialized; a head too wide for a CUDA block's shared
  // memory attends through the composite path.
  return fused_ && !(attn_drop->p() > 0 && attn_drop->is_training()) &&
         fused_attention_supported(qkv->weight.device(), qkv->weight.dtype(), head_dim_);
}

Tensor MultiHeadAttention::forward(const Tensor& x, const AttentionPositions& pos, const Tensor& key_padding_mask,
                                   LayerCache* cache) const {
  RPB_CHECK(x.dim() == 3 && x.size(2) == heads_ * head_dim_, "attention", "input ", x.shape(), " is not (B, T, ",
            heads_ * head_dim_, ")");
  const int64_t B = x.size(0), T = x.size(1), d = x.size(2);
  const int64_t offset = cache && cache->k.defined() ? cache->k.size(2) : 0;
  RPB_CHECK(pos.bias.relative.grid.empty() || (uses_fused() && !x.is_cuda()), "attention",
            "a relative bias over a grid needs the fused path on the CPU; pass the full bias when fused attention is "
            "off, dropout is active or the model is on cuda");
  if (key_padding_mask.defined())
    RPB_CHECK(key_padding_mask.dim() == 2 && key_padding_mask.size(0) == B && key_padding_mask.size(1) == T + offset,
              "attention", "key padding mask ", key_padding_mask.shape(), " is not (B, Tk) = (", B, ", ", T + offset,
              ")");
  RPB_CHECK(pos.block == 0 || causal_, "attention", "blockwise attention (block ", pos.block, ") needs causal attention");
  const Tensor packed = reshape(qkv->forward(x), {B, T, 3, heads_, head_dim_});  // a view of the (B, T, 3d) output
  Tensor h;  // (B, T, H, dh)
  RPB_CHECK(!pos.at || !cache, "attention", "explicit positions (randomized, a training forward's) take no KV cache");
  if (!cache && !pos.rotary && uses_fused() && !pos.bias.full.defined() && !stats_ && kernel_reads(pos.bias, x)) {
    h = attend_packed(packed, pos, key_padding_mask);
  } else {
    h = permute(attend_heads(split_heads(packed, pos, offset, cache), pos, key_padding_mask, offset), {0, 2, 1, 3});
  }
  return resid_drop->forward(out->forward(reshape(h, {B, T, d})));
}

Tensor MultiHeadAttention::attend_packed(const Tensor& packed, const AttentionPositions& pos,
                                         const Tensor& key_padding_mask) const {
  // The kernel reads q, k and v where the projection wrote them and writes what the output projection reads.
  AttentionSpec spec{scale_, causal_, 0};
  spec.packed_qkv = true;
  spec.block = pos.block;
  return fused_attention(packed, Tensor(), Tensor(), pos.bias.relative, key_padding_mask, Tensor(), spec);
}

MultiHeadAttention::Heads MultiHeadAttention::split_heads(const Tensor& packed, const AttentionPositions& pos,
                                                          int64_t offset, LayerCache* cache) const {
  const int64_t B = packed.size(0), T = packed.size(1);
  // (B, T, 3, H, dh) -> three (B, H, T, dh)
  const Tensor qkv5 = permute(packed, {2, 0, 3, 1, 4});
  auto part = [&](int i) { return reshape(slice(qkv5, 0, i, i + 1), {B, heads_, T, head_dim_}); };
  Heads h{part(0), part(1), part(2)};
  // xPos's keys depend on how many there are (its centre): the cache keeps them unrotated, all rotated below.
  const bool rotate_all_keys = pos.rotary && pos.rotary->rotates_all_keys();
  if (pos.rotary && pos.at) {  // randomized positions: no cache (forward refuses one)
    h.q = pos.rotary->rotate_at(h.q, *pos.at);
    h.k = pos.rotary->rotate_key_at(h.k, *pos.at);
    return h;
  }
  if (pos.rotary) {
    h.q = pos.rotary->rotate(h.q, offset);
    if (!rotate_all_keys) h.k = pos.rotary->rotate_key(h.k, offset);
  }
  if (cache) {
    if (cache->k.defined()) {
      h.k = concat({cache->k, h.k}, 2);
      h.v = concat({cache->v, h.v}, 2);
    }
    cache->k = h.k;
    cache->v = h.v;
  }
  if (rotate_all_keys) h.k = pos.rotary->rotate_key(h.k, 0);
  return h;
}

Tensor MultiHeadAttention::attend_heads(const Heads& h, const AttentionPositions& pos, const Tensor& key_padding_mask,
                                        int64_t offset) const {
  const PositionBias& bias = pos.bias;
  const int64_t B = h.q.size(0), T = h.q.size(2), Tk = h.k.size(2);
  if (stats_) {
    AttentionInputs in;
    in.q = h.q, in.k = h.k, in.scale = scale_, in.full_bias = bias.full, in.relative = bias.relative;
    if (!bias.relative.positions.empty()) {  // at explicit positions: measured on the expanded bias
      in.full_bias = full_bias(bias.relative, T, Tk, offset, h.q.dtype());
      in.relative = RelativeBias();
    }
    in.causal = causal_, in.q_offset = offset, in.key_padding = key_padding_mask, in.block = pos.block;
    accumulate_attention_stats(in, *stats_);
  }
  if (uses_fused() && !bias.full.defined() && kernel_reads(bias, h.q)) {  // on the CPU or CUDA (core/ops/attention.cpp)
    AttentionSpec spec{scale_, causal_, offset};
    spec.block = pos.block;
    return fused_attention(h.q, h.k, h.v, bias.relative, key_padding_mask, Tensor(), spec);
  }
  const Tensor full = bias.full.defined() || !bias.relative.defined()
                          ? bias.full
                          : full_bias(bias.relative, T, Tk, offset, h.q.dtype()).to(h.q.device());
  Tensor mask = composite_mask(causal_, key_padding_mask, B, T, Tk, offset, pos.block);
  if (mask.defined()) mask = mask.to(h.q.device());
  return scaled_dot_product_attention(h.q, h.k, h.v, full, mask, scale_, attn_drop.get());
}

}  // namespace rpb::nn
