// rpb/nn/transformer.h: pre-LN transformer blocks, a decoder-only language model and a
// bidirectional encoder, with every 1-D position scheme of nn/position.h.
#pragma once

#include <memory>
#include <vector>

#include "nn/attention.h"
#include "nn/position_plan.h"

namespace rpb::nn {

struct TransformerOptions {
  int64_t vocab = 64;
  int64_t d_model = 128;
  int64_t heads = 4;
  int64_t layers = 2;
  int64_t d_ff = 512;
  double dropout = 0.0;
  bool causal = true;             // decoder (true) or encoder (false) self-attention
  bool tie_head = true;           // language model: logits use the token embedding (under the gpt2 embedding
                                  // recipe; the scaled one has an output projection of its own: ties_head())
  bool share_position = true;     // one position module for all layers (T5's choice) or one per layer
  double attn_scale = 0.0;        // 0: 1/sqrt(head_dim)
  double init_std = 0.02;         // normal init of linear weights, and of token embeddings under the gpt2 recipe
  EmbeddingRecipe embedding = EmbeddingRecipe::scheme;  // how token embeddings are made (scheme.h)
  GeluApprox gelu = GeluApprox::tanh;
  bool fused_attention = true;    // the fused kernel (core/ops.h fused_attention) or the reference path
  PositionOptions position;       // dims, heads, d_model, head_dim and causal are filled from the above
                                  // (position_options_for)
};

/// The options of `model`'s scheme: model.position with dims, heads, d_model, head_dim and causal taken from the
/// model (a grid model, dims 2, attends bidirectionally), and init_std from the embedding recipe for the learned
/// absolute schemes.
PositionOptions position_options_for(const TransformerOptions& model, int64_t dims = 1);

/// Checks the options (heads divide d_model, positive sizes, dropout in [0, 1)); throws naming the key.
void validate(const TransformerOptions& options);

/// The token embedding of a model with `options` whose scheme has `dims` (1: a sequence, 2: a grid), as
/// options.embedding and the scheme's recipe make it: Embedding(vocab, d_model) with init std model.init_std (gpt2)
/// or d_model^-1/2 times sqrt(d_model) (scaled).
std::shared_ptr<Embedding> make_token_embedding(const TransformerOptions& options, int64_t dims, Generator& gen);

/// The init std of a model's output projection (an untied language-model head, the grid model's head):
/// model.init_std, or d_model^-1/2 under the scaled recipe (fairseq's output projection).
double head_init_std(const TransformerOptions& options, int64_t dims);

/// True when a language model's logits use the token embedding: model.tie_head under the gpt2 recipe. The scaled
/// recipe has an output projection of its own, as fairseq's transformer_lm (share_decoder_input_output_embed off):
/// tied to embeddings that enter times sqrt(d), the logits would start out predicting the input token itself.
bool ties_head(const TransformerOptions& options);

/// `n` distinct positions of [0, range), ascending, uniform over the subsets of that size (Knuth's selection
/// sampling, TAOCP vol. 2, 3.4.2 Algorithm S: one uniform draw per candidate until `n` are chosen). Needs n <= range.
std::vector<int64_t> draw_positions(int64_t n, int64_t range, Generator& gen);

/// Per-layer caches for incremental decoding.
struct KVCache {
  std::vector<LayerCache> layers;
  /// Tokens already processed (the next query's position).
  int64_t length() const { return layers.empty() || !layers[0].k.defined() ? 0 : layers[0].k.size(2); }
};

/// x + attn(ln1(x)); x + mlp(ln2(x)). With per-layer positions the block owns its scheme ("pos.<name>").
class TransformerBlock : public Module {
 public:
  TransformerBlock(const TransformerOptions& options, Generator& init_gen, Generator& dropout_gen, bool own_position);
  /// x (B, T, d); `pos` is what the stack's PositionPlan gives this layer.
  Tensor forward(const Tensor& x, const AttentionPositions& pos, const Tensor& key_padding_mask,
                 LayerCache* cache) const;

  std::shared_ptr<LayerNorm> ln1;
  std::shared_ptr<MultiHeadAttention> attn;
  std::shared_ptr<LayerNorm> ln2;
  std::shared_ptr<MLP> mlp;
  std::shared_ptr<PositionScheme> position;  // only with per-layer positions

 private:
  std::shared_ptr<ModuleDict> pos_;
};

/// Token embedding, position scheme, blocks and final LayerNorm: (B, T) tokens -> (B, T, d) states.
/// Parameter names: tok.weight, pos.<scheme>.*, blocks.<i>.{ln1,attn,ln2,mlp}.*, ln_f.*.
class TransformerStack : public Module {
 public:
  TransformerStack(const TransformerOptions& options, Generator& init_gen);

  /// tokens (B, T) i64 -> hidden states (B, T, d). With a cache, only the new tokens are given. `at`: the tokens'
  /// explicit positions (T, ascending, distinct; no cache); null: 0 .. T - 1, or with position.randomized a sorted
  /// random subset of [0, randomized_max) (Ruoss et al. 2023: one draw per forward, shared by the batch's sequences
  /// and by every layer), in training from the dropout generator, in evaluation (unless position.contiguous_eval)
  /// from a generator seeded by the batch's tokens.
  Tensor hidden(const Tensor& tokens, const Tensor& key_padding_mask = Tensor(), KVCache* cache = nullptr,
                std::shared_ptr<const std::vector<int64_t>> at = nullptr) const;

  const TransformerOptions& options() const { return options_; }
  /// The generator dropout draws from (its state belongs in checkpoints).
  Generator& dropout_generator() const { return *dropout_gen_; }
  /// The shared position scheme, or null when each layer owns one.
  const PositionScheme* position() const { return position_.get(); }
  /// The longest sequence the position scheme can run at (learned positions); 0 when unbounded.
  int64_t max_length() const;
  /// Each block's attention, in order (what an AttentionStatsRecorder watches).
  std::vector<MultiHeadAttention*> attention_layers() const;

  std::shared_ptr<Embedding> tok;
  std::shared_ptr<ModuleList> blocks;
  std::shared_ptr<LayerNorm> ln_f;

 private:
  TransformerOptions options_;
  std::unique_ptr<Generator> dropout_gen_;
  std::shared_ptr<ModuleDict> pos_;
  std::shared_ptr<PositionScheme> position_;
  PositionPlan plan_;
};

/// A language model: logits at every position. Causal (options.causal, the default): a decoder, each position
/// predicting the next token. Bidirectional (causal = false): every position reads the whole sequence, as the
/// encoder framing of the algorithmic tasks reads its answer at blank positions (train/data/algorithmic.h); a
/// bidirectional model takes no KV cache, and refuses a scheme without a bidirectional form (SchemeInfo::causal_only).
///
/// @code
/// rpb::Generator gen(0);
/// rpb::nn::TransformerOptions o;
/// o.vocab = 16; o.d_model = 32; o.heads = 4; o.layers = 2; o.d_ff = 64;
/// o.position.scheme = "alibi";
/// rpb::nn::LanguageModel lm(o, gen);
/// rpb::Tensor tokens = rpb::randint({2, 8}, 16, gen);   // (B, T)
/// CHECK(lm.forward(tokens).shape() == rpb::Shape{2, 8, 16});
/// rpb::Tensor loss = lm.loss(tokens, tokens);
/// rpb::backward(loss);
/// CHECK(lm.named_parameters()[0].first == "tok.weight");
/// @endcode
class LanguageModel : public TransformerStack {
 public:
  LanguageModel(const TransformerOptions& options, Generator& init_gen);
  /// The parameters of LanguageModel(options), counted without building it (throws on overflow); `options`
  /// must be valid (validate()).
  static int64_t parameter_count(const TransformerOptions& options);
  using Module::parameter_count;
  /// tokens (B, T) -> logits (B, T, vocab), on the model's device (the token ids move there from any device). With
  /// a cache, only the new tokens are given.
  Tensor forward(const Tensor& tokens, KVCache* cache = nullptr) const;
  /// tokens (B, T) at explicit positions `at` (T, ascending, distinct) -> logits (B, T, vocab).
  Tensor forward_at(const Tensor& tokens, std::shared_ptr<const std::vector<int64_t>> at) const;
  /// Mean cross-entropy of logits(tokens) against targets (B, T) (ignore_index -100), on the model's device.
  Tensor loss(const Tensor& tokens, const Tensor& targets) const;

  std::shared_ptr<Linear> head;  // only when the head is untied

 private:
  /// hidden states (B, T, d) -> logits (B, T, vocab): the head, or the tied token embedding.
  Tensor logits(const Tensor& h) const;
};

/// A bidirectional encoder: tokens -> hidden states, with an optional key padding mask.
class Encoder : public TransformerStack {
 public:
  Encoder(const TransformerOptions& options, Generator& init_gen);
  /// tokens (B, T), key_padding_mask (B, T) non-zero at padding (or undefined) -> (B, T, d).
  Tensor forward(const Tensor& tokens, const Tensor& key_padding_mask = Tensor()) const;
};

}  // namespace rpb::nn
