#include "nn/transformer.h"

#include <cmath>

#include "core/checked.h"

namespace rpb::nn {

void validate(const TransformerOptions& o) {
  RPB_CHECK(o.vocab > 0, "model", "vocab must be positive, got ", o.vocab);
  RPB_CHECK(o.d_model > 0, "model", "d_model must be positive, got ", o.d_model);
  RPB_CHECK(o.heads > 0 && o.d_model % o.heads == 0, "model", "heads ", o.heads, " must divide d_model ", o.d_model);
  RPB_CHECK(o.layers > 0, "model", "layers must be positive, got ", o.layers);
  RPB_CHECK(o.d_ff > 0, "model", "d_ff must be positive, got ", o.d_ff);
  RPB_CHECK(o.dropout >= 0 && o.dropout < 1, "model", "dropout must lie in [0, 1), got ", o.dropout);
  RPB_CHECK(o.attn_scale >= 0, "model", "attn_scale must be >= 0 (0: 1/sqrt(head_dim)), got ", o.attn_scale);
  if (const SchemeInfo* s = find_scheme(o.position.scheme, 1); !o.causal && s && s->causal_only)
    throw Error("model: position.scheme " + o.position.scheme + " has no bidirectional form (causal = false): " +
                s->causal_only);
}

namespace {
bool scaled(const TransformerOptions& o, int64_t dims) {
  return resolve_recipe(o.embedding, o.position.scheme, dims) == EmbeddingRecipe::scaled;
}
}  // namespace

std::shared_ptr<Embedding> make_token_embedding(const TransformerOptions& o, int64_t dims, Generator& gen) {
  if (!scaled(o, dims)) return std::make_shared<Embedding>(o.vocab, o.d_model, gen, o.init_std);
  const double d = static_cast<double>(o.d_model);
  return std::make_shared<Embedding>(o.vocab, o.d_model, gen, 1.0 / std::sqrt(d), std::sqrt(d));
}

double head_init_std(const TransformerOptions& o, int64_t dims) {
  return scaled(o, dims) ? 1.0 / std::sqrt(static_cast<double>(o.d_model)) : o.init_std;
}

bool ties_head(const TransformerOptions& o) { return o.tie_head && !scaled(o, 1); }

PositionOptions position_options_for(const TransformerOptions& model, int64_t dims) {
  PositionOptions p = model.position;
  p.dims = dims;
  p.heads = model.heads;
  p.d_model = model.d_model;
  p.head_dim = model.heads > 0 ? model.d_model / model.heads : 0;
  p.causal = dims == 1 && model.causal;
  const SchemeInfo* s = find_scheme(p.scheme, dims);
  if (s && s->kind == PositionKind::absolute && s->learned(p) &&
      resolve_recipe(model.embedding, p.scheme, dims) == EmbeddingRecipe::scaled && model.d_model > 0)
    p.init_std = 1.0 / std::sqrt(static_cast<double>(model.d_model));  // fairseq's learned positions
  return p;
}

namespace {

AttentionOptions attention_options(const TransformerOptions& o) {
  AttentionOptions a;
  a.d_model = o.d_model;
  a.heads = o.heads;
  a.causal = o.causal;
  a.scale = o.attn_scale;
  a.dropout = o.dropout;
  a.init_std = o.init_std;
  a.out_init_std = o.init_std / std::sqrt(2.0 * static_cast<double>(o.layers));  // GPT-2's residual scaling
  a.fused = o.fused_attention;
  return a;
}

// Absolute, rotary and fixed schemes are one module; learned biases may be one per layer.
bool positions_per_layer(const TransformerOptions& o) {
  const PositionOptions po = position_options_for(o);
  const SchemeInfo& info = scheme_info(po);
  return !o.share_position && info.per_layer && info.learned(po);
}

}  // namespace

TransformerBlock::TransformerBlock(const TransformerOptions& o, Generator& init_gen, Generator& dropout_gen,
                                   bool own_position)
    : ln1(register_module("ln1", std::make_shared<LayerNorm>(o.d_model))),
      attn(register_module("attn", std::make_shared<MultiHeadAttention>(attention_options(o), init_gen, dropout_gen))),
      ln2(register_module("ln2", std::make_shared<LayerNorm>(o.d_model))),
      mlp(register_module("mlp", std::make_shared<MLP>(o.d_model, o.d_ff, o.dropout, init_gen, dropout_gen, o.gelu,
                                                      o.init_std, attention_options(o).out_init_std))) {
  if (own_position) {
    position = make_position_scheme(position_options_for(o), init_gen);
    pos_ = register_module("pos", std::make_shared<ModuleDict>());
    pos_->insert(position->name(), position);
  }
}

Tensor TransformerBlock::forward(const Tensor& x, const AttentionPositions& pos, const Tensor& key_padding_mask,
                                 LayerCache* cache) const {
  Tensor h = add(x, attn->forward(ln1->forward(x), pos, key_padding_mask, cache));
  return add(h, mlp->forward(ln2->forward(h)));
}

TransformerStack::TransformerStack(const TransformerOptions& o, Generator& init_gen)
    : options_((validate(o), o)), dropout_gen_(std::make_unique<Generator>(init_gen.next_u64())) {
  tok = register_module("tok", make_token_embedding(o, 1, init_gen));
  const bool per_layer = positions_per_layer(o);
  if (!per_layer) {
    position_ = make_position_scheme(position_options_for(o), init_gen);
    pos_ = register_module("pos", std::make_shared<ModuleDict>());
    pos_->insert(position_->name(), position_);
  }
  blocks = register_module("blocks", std::make_shared<ModuleList>());
  std::vector<const PositionScheme*> own;
  for (int64_t i = 0; i < o.layers; ++i)
    own.push_back(blocks->push_back(std::make_shared<TransformerBlock>(o, init_gen, *dropout_gen_, per_layer))
                      ->position.get());
  ln_f = register_module("ln_f", std::make_shared<LayerNorm>(o.d_model));
  plan_ = per_layer ? PositionPlan::per_layer(own, nullptr) : PositionPlan::shared(position_.get(), o.layers);
}

int64_t TransformerStack::max_length() const {
  const PositionOptions po = position_options_for(options_);
  return scheme_info(po).max_length(po);
}

std::vector<MultiHeadAttention*> TransformerStack::attention_layers() const {
  std::vector<MultiHeadAttention*> out;
  for (std::size_t i = 0; i < blocks->size(); ++i) out.push_back(blocks->at<TransformerBlock>(i).attn.get());
  return out;
}

namespace {

// A seed from a batch of tokens (B, T): splitmix64 over its shape and its ids, in order.
uint64_t batch_seed(const Tensor& tokens) {
  const Tensor host = tokens.to(Device::cpu);
  uint64_t h = 0x9E3779B97F4A7C15ull;
  const auto mix = [&](uint64_t v) {
    uint64_t state = h + v;
    h = splitmix64(state);
  };
  mix(static_cast<uint64_t>(host.size(0)));
  mix(static_cast<uint64_t>(host.size(1)));
  const int64_t* ids = host.data<int64_t>();
  for (int64_t i = 0; i < host.numel(); ++i) mix(static_cast<uint64_t>(ids[i]));
  return h;
}

}  // namespace

std::vector<int64_t> draw_positions(int64_t n, int64_t range, Generator& gen) {
  RPB_CHECK(n >= 1 && n <= range, "positions", "cannot draw ", n, " distinct positions from [0, ", range, ")");
  std::vector<int64_t> out;
  out.reserve(static_cast<std::size_t>(n));
  for (int64_t t = 0; t < range && static_cast<int64_t>(out.size()) < n; ++t)
    if (static_cast<double>(range - t) * gen.uniform() < static_cast<double>(n - static_cast<int64_t>(out.size())))
      out.push_back(t);
  return out;
}

Tensor TransformerStack::hidden(const Tensor& tokens, const Tensor& key_padding_mask, KVCache* cache,
                                std::shared_ptr<const std::vector<int64_t>> at) const {
  RPB_CHECK(tokens.dim() == 2 && tokens.dtype() == DType::i64, "transformer", "tokens must be (B, T) int64, got ",
            dtype_name(tokens.dtype()), " ", tokens.shape());
  const int64_t T = tokens.size(1);
  RPB_CHECK(T > 0, "transformer", "empty sequence ", tokens.shape());
  if (cache && cache->layers.size() != blocks->size()) cache->layers.assign(blocks->size(), LayerCache{});
  const int64_t offset = cache ? cache->length() : 0;
  const PositionOptions& po = options_.position;
  if (!at && !cache && po.randomized && (is_training() || !po.contiguous_eval)) {
    RPB_CHECK(T <= po.randomized_max, "transformer", is_training() ? "a training" : "an evaluation", " sequence of ",
              T, " tokens needs as many positions of the position.randomized_max = ", po.randomized_max,
              " it draws them from", is_training() ? "" : " (position.contiguous_eval reads 0 .. T - 1 instead)");
    // Training draws from the dropout generator; evaluation from one seeded by the batch's tokens, so that an
    // evaluation is reproducible and every method reads the same positions for the same batch.
    Generator batch(is_training() ? 0 : batch_seed(tokens));
    at = std::make_shared<const std::vector<int64_t>>(
        draw_positions(T, po.randomized_max, is_training() ? *dropout_gen_ : batch));
  }
  RPB_CHECK(!at || (!cache && static_cast<int64_t>(at->size()) == T), "transformer", "explicit positions (",
            at ? at->size() : 0, ") for ", T, " tokens, and no KV cache");
  const Positions p = at ? Positions::explicit_line(at) : Positions::line(T, offset + T, offset);
  const Tensor x0 = plan_.embed(tok->forward(tokens.to(tok->weight.device())), p);  // (B, T, d)
  const bool fused = blocks->size() > 0 && blocks->at<TransformerBlock>(0).attn->uses_fused();
  const std::vector<AttentionPositions> pos = plan_.attention(p, fused);
  const Tensor padding = key_padding_mask.defined() ? key_padding_mask.to(x0.device()) : key_padding_mask;
  Tensor x = x0;
  for (std::size_t i = 0; i < blocks->size(); ++i)
    x = blocks->at<TransformerBlock>(i).forward(x, pos[i], padding, cache ? &cache->layers[i] : nullptr);
  return ln_f->forward(x);
}

LanguageModel::LanguageModel(const TransformerOptions& o, Generator& init_gen) : TransformerStack(o, init_gen) {
  if (!ties_head(o))
    head = register_module("head", std::make_shared<Linear>(o.d_model, o.vocab, false, init_gen, head_init_std(o, 1)));
}

int64_t LanguageModel::parameter_count(const TransformerOptions& o) {
  const char* op = "model";
  const PositionOptions po = position_options_for(o);
  const int64_t position = scheme_info(po).parameters(po);
  const bool per_layer = positions_per_layer(o);
  int64_t block = checked_mul(2, LayerNorm::parameter_count(o.d_model), op, "parameters");
  block = checked_add(block, MultiHeadAttention::parameter_count(attention_options(o)), op, "parameters");
  block = checked_add(block, MLP::parameter_count(o.d_model, o.d_ff), op, "parameters");
  if (per_layer) block = checked_add(block, position, op, "parameters");
  int64_t n = checked_add(Embedding::parameter_count(o.vocab, o.d_model), per_layer ? 0 : position, op, "parameters");
  n = checked_add(n, checked_mul(o.layers, block, op, "parameters"), op, "parameters");
  n = checked_add(n, LayerNorm::parameter_count(o.d_model), op, "parameters");
  return checked_add(n, ties_head(o) ? 0 : Linear::parameter_count(o.d_model, o.vocab, false), op, "parameters");
}

Tensor LanguageModel::forward(const Tensor& tokens, KVCache* cache) const {
  RPB_CHECK(!cache || options().causal, "model", "a KV cache needs causal attention: a bidirectional model (causal = "
            "false) reads every token at once");
  return logits(hidden(tokens, Tensor(), cache));
}

Tensor LanguageModel::logits(const Tensor& h) const {
  return head ? head->forward(h) : linear(h, tok->weight);  // tied: the embedding is the (vocab, d) weight
}

Tensor LanguageModel::forward_at(const Tensor& tokens, std::shared_ptr<const std::vector<int64_t>> at) const {
  RPB_CHECK(at != nullptr, "model", "forward_at needs the positions");
  return logits(hidden(tokens, Tensor(), nullptr, std::move(at)));
}

Tensor LanguageModel::loss(const Tensor& tokens, const Tensor& targets) const {
  RPB_CHECK(targets.shape() == tokens.shape(), "model", "targets ", targets.shape(), " differ from tokens ",
            tokens.shape());
  const Tensor logits = forward(tokens);
  return cross_entropy(logits, targets.to(logits.device()));
}

Encoder::Encoder(const TransformerOptions& o, Generator& init_gen) : TransformerStack(o, init_gen) {
  RPB_CHECK(!o.causal, "model", "an encoder needs bidirectional attention (causal = false)");
}

Tensor Encoder::forward(const Tensor& tokens, const Tensor& key_padding_mask) const {
  return hidden(tokens, key_padding_mask, nullptr);
}

}  // namespace rpb::nn
