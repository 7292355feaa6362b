// rpb/nn/position/scheme.h: what a position scheme is, and the registry of schemes.
//
// Every scheme, 1-D or 2-D, is one file of its own (nn/position/<name>.cpp) that holds its code and its registry
// row, registered by a static SchemeRegistrar there: no central list names it (registry.cpp collects the rows and
// orders them by SchemeInfo::rank; CMakeLists.txt links nn whole-archive, so the linker keeps every scheme file
// although nothing refers to it). The row says how the scheme enters a model, whether it learns, how far it can
// run, the options it reads, its label in result tables, and how to check its options and build it. Config
// validation, the command line, `rpb bias`, `rpb inspect` and the sweep all read the row; `rpb schemes --json`
// prints the rows for the other languages (python/rpb_torch.py builds its models from them, python/rpb_plot its
// figures). The options a config sets are described once, in nn/position/options.h.
//
// Adding a scheme: its file nn/position/<name>.cpp (the class, its validate and make, and `const SchemeRegistrar
// registered({...})`), its golden and gradient-check case (tests/scheme_cases.h RPB_SCHEME_CASE, in a test file of
// its own or beside its relatives; tests/test_scheme_registry.cpp fails naming a registered scheme without one),
// and, for a 1-D scheme, its forward in python/rpb_torch.py (@scheme("<name>"); its test names a missing one).
// An option of its own: a PositionOptions field, one row of nn/position/options.cpp's table, and the key in the
// row's `reads`. A figure colour is optional (python/rpb_plot/theme.py SCHEME_STYLES; else one from the name).
//
// Positions: a line of queries at q_offset .. q_offset + q_len - 1 over keys at 0 .. k_len - 1 (a KV cache
// sets q_offset to the cached length), or the cells of an H x W grid in raster order (token t is the cell
// (t / W, t % W)), as queries and as keys.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/enum_names.h"
#include "core/ops.h"
#include "core/rng.h"
#include "nn/module.h"
#include "nn/position/rope_scaling.h"
#include "nn/position/untrained.h"

namespace rpb::nn {

/// How a model makes its token embeddings (model.embedding). Each scheme trains with its published recipe unless
/// the config chooses one for every scheme.
enum class EmbeddingRecipe {
  scheme,  // the scheme's own: its registry row's `embedding`
  gpt2,    // tokens ~ N(0, model.init_std), added as they are (GPT-2: learned positions, the bias and rotary schemes)
  scaled   // tokens ~ N(0, d_model^-1/2) times sqrt(d_model), learned positions ~ N(0, d_model^-1/2), and an
           // output projection of its own ~ N(0, d_model^-1/2): token and position signals of the same size
           // (Vaswani et al. 2017, section 3.4; fairseq's transformer_lm, which the ALiBi paper's sinusoidal
           // baseline used; see ties_head in nn/transformer.h)
};

/// model.embedding's names: "scheme", "gpt2", "scaled".
inline constexpr EnumName<EmbeddingRecipe> kEmbeddingRecipeNames[] = {
    {EmbeddingRecipe::scheme, "scheme"}, {EmbeddingRecipe::gpt2, "gpt2"}, {EmbeddingRecipe::scaled, "scaled"}};
/// The name of `recipe` in kEmbeddingRecipeNames: the value of model.embedding.
const char* recipe_name(EmbeddingRecipe recipe);

/// The bias inside Swin's window attention (WindowAttentionOptions::bias).
enum class WindowBias {
  none,       // no position bias
  table,      // Swin V1: a learned table per relative offset inside the window
  continuous  // Swin V2: a bias MLP of log-spaced relative coordinates
};
/// "none", "table", "continuous".
const char* window_bias_name(WindowBias bias);

/// How a scheme enters a model.
enum class PositionKind {
  none,           // nothing
  absolute,       // embed(): added to the token embeddings
  additive_bias,  // bias() or relative_bias(): added to the attention scores before softmax
  rotary,         // rotate(): applied to queries and keys
  window          // a bias inside Swin's window attention (nn/window_attention.h), not a module of its own
};

/// "none", "absolute", "additive_bias", "rotary", "window".
const char* kind_name(PositionKind kind);

/// The options of a model's position scheme ([position] in a run config; `max_side` is [grid]'s). The options a
/// config sets are described in nn/position/options.h; dims, heads, d_model, head_dim and causal come from the model
/// (nn/transformer.h position_options_for).
struct PositionOptions {
  std::string scheme = "t5";  // a registered name (scheme_names(dims))
  int64_t dims = 1;           // 1: a sequence model, 2: a grid model (only schemes of that many dims apply)
  int64_t heads = 1;          // additive schemes: one bias per head
  int64_t d_model = 0;        // absolute schemes: the token width
  int64_t head_dim = 0;       // rope
  bool causal = true;                   // t5: causal or bidirectional buckets
  int64_t num_buckets = 32;             // t5
  int64_t max_distance = 128;           // t5
  int64_t max_relative_position = 16;   // shaw and clipped2d: K
  double lambda = 0.3;                  // log_decay
  bool learnable_lambda = false;        // log_decay
  int64_t max_positions = 512;          // learned
  double rope_base = 10000.0;           // rope, xpos
  RopeScaling rope_scaling = RopeScaling::none;  // rope: the frequencies past the training length
                                                 // (nn/position/rope_scaling.h); an evaluation setting
  double rope_factor = 0;               // rope scaling's factor s; 0: max_eval_multiplier
  bool rope_factor_per_length = false;  // rope scaling: s = max(1, T / train_length) for a forward over T positions
                                        // (each evaluation length L: s = L / L0), instead of one factor; an
                                        // evaluation setting
  bool rope_scaling_trained = false;    // rope: training forwards read the scaling too (a fine-tune, run.init_from);
                                        // else they read the unscaled frequencies, the scaling being an evaluation
                                        // setting. Set by the config reader, not a config key
  double yarn_beta_fast = 32;           // yarn: the rotations where the ramp starts (HF beta_fast)
  double yarn_beta_slow = 1;            // yarn: the rotations where it ends (HF beta_slow)
  double yarn_attention_factor = 0;     // yarn: what cos and sin are multiplied by; 0: 0.1 ln s + 1
  int64_t xpos_scale_base = 512;        // xpos: B, the positions over which the decay zeta^(n/B) acts
  bool blockwise = false;               // xpos: blockwise causal attention in evaluation, blocks of train_length
  int64_t max_side = 16;                // learned2d: the largest grid side
  int64_t fire_length = 0;              // fire: L0, the threshold's starting length L = |m L0| (0: train_length)
  int64_t fire_hidden = 32;             // fire: the width of the MLP 1 -> fire_hidden -> heads
  int64_t train_length = 0;             // the run's training length (run.length; a grid's side), which schemes that
                                        // scale with it read; 0 when unknown (`rpb bias` without --train-length).
                                        // Set by the config reader, not a config key of its own
  int64_t max_eval_multiplier = 0;      // the largest evaluation multiplier of the evaluation being run
                                        // (run.eval_multipliers, or `rpb eval --lengths` / run.length): rope scaling's
                                        // factor when rope_factor is 0. Set by the config reader and `rpb eval`,
                                        // not a config key; 0 when unknown
  Untrained untrained = Untrained::keep;  // the table schemes (SchemeInfo::row_table): what evaluation reads at a
                                          // row no training forward read
  double init_std = 0.02;               // learned tables (t5, shaw, learned: normal; learned2d, clipped2d:
                                        // trunc_normal); under the scaled embedding recipe, learned and learned2d
                                        // start at d_model^-1/2 instead
                                        // (nn/transformer.h position_options_for sets it)
  DType dtype = DType::f32;             // of every table and buffer the scheme builds
  bool randomized = false;              // every 1-D scheme: training forwards read a sorted random subset of
                                        // [0, randomized_max) as their positions (Ruoss et al. 2023;
                                        // nn/transformer.h draw_positions)
  int64_t randomized_max = 2048;        // L_max: the positions the subsets are drawn from
  bool contiguous_eval = false;         // with randomized: evaluation forwards read 0 .. T - 1 instead of drawing (the
                                        // reference draws at test time too); an evaluation setting
};

/// Where queries and keys sit (see the file comment).
struct Positions {
  int64_t q_len = 0, k_len = 0, q_offset = 0;  // a line, or the grid's cell count
  int64_t height = 0, width = 0;                // a grid's extents
  bool on_grid = false;
  /// A line's explicit positions (randomized positions, position.randomized: a training forward's sorted random
  /// subset of [0, randomized_max)): token t, as query and as key, sits at (*at)[t]; q_len == k_len == its size and
  /// q_offset 0. Null: the line's positions 0, 1, ... (q_offset ...).
  std::shared_ptr<const std::vector<int64_t>> at;

  /// q_len queries at q_offset .. over k_len keys at 0 ...
  static Positions line(int64_t q_len, int64_t k_len, int64_t q_offset = 0) {
    return {q_len, k_len, q_offset, 0, 0, false, nullptr};
  }
  /// Tokens at explicit positions `at` (ascending, distinct, from 0 up), as queries and as keys.
  static Positions explicit_line(std::shared_ptr<const std::vector<int64_t>> at) {
    const auto n = static_cast<int64_t>(at->size());
    return {n, n, 0, 0, 0, false, std::move(at)};
  }
  /// The cells of a height x width grid.
  static Positions grid(int64_t height, int64_t width) {
    return {height * width, height * width, 0, height, width, true, nullptr};
  }
  /// Token t's position as a query: (*at)[t], or q_offset + t.
  int64_t query_position(int64_t t) const { return at ? (*at)[static_cast<std::size_t>(t)] : q_offset + t; }
  /// Token t's position as a key: (*at)[t], or t.
  int64_t key_position(int64_t t) const { return at ? (*at)[static_cast<std::size_t>(t)] : t; }
  /// The positions' span from 0: the last position + 1 (explicit), or k_len.
  int64_t span() const { return at ? at->back() + 1 : k_len; }
  bool is_grid() const { return on_grid; }
  int64_t dims() const { return is_grid() ? 2 : 1; }
};

/// A module that carries position information: every PositionScheme, and Swin's window attention (its bias
/// table or bias MLP). Reports and parameter counts find them by walking the module tree.
class Positional {
 public:
  virtual ~Positional() = default;
  /// The number of trained values that encode position.
  virtual int64_t position_parameter_count() const = 0;
  /// What it has learned, as lines of text for `rpb inspect` (like torch's extra_repr); "" when its
  /// parameters' statistics say it all. `prefix` is the module's path with a trailing dot ("pos.t5.").
  virtual std::string report(const std::string& prefix) const { return ""; }
};

struct SchemeInfo;

/// A position scheme. A scheme answers only for its kind: the other methods throw naming it.
class PositionScheme : public Module, public Positional {
 public:
  /// Its registry row.
  const SchemeInfo& info() const { return *info_; }
  std::string name() const;
  PositionKind kind() const;
  /// True when the scheme has trained parameters.
  bool learned() const { return parameter_count() > 0; }
  int64_t position_parameter_count() const override { return parameter_count(); }

  /// absolute: (q_len, d_model) embeddings of the queries' positions.
  virtual Tensor embed(const Positions& p) const;
  /// additive_bias: (heads, q_len, k_len).
  virtual Tensor bias(const Positions& p) const;
  /// additive_bias: the same bias per relative position, as fused_attention reads it (core/ops.h RelativeBias):
  /// on a line (heads, q_len + k_len - 1), on a grid (heads, (2H - 1)(2W - 1)) with grid {H, W}. Differentiable
  /// in the scheme's parameters. Undefined for schemes without such a form.
  virtual RelativeBias relative_bias(const Positions& p) const;
  /// rotary: x (B, heads, T, head_dim) rotated for positions offset .. offset + T - 1 (the queries).
  virtual Tensor rotate(const Tensor& x, int64_t offset) const;
  /// rotary: x (B, heads, T, head_dim) rotated for the explicit positions `at` (T of them; randomized positions),
  /// as queries and, by rotate_key_at, as keys.
  virtual Tensor rotate_at(const Tensor& x, const std::vector<int64_t>& at) const;
  virtual Tensor rotate_key_at(const Tensor& x, const std::vector<int64_t>& at) const { return rotate_at(x, at); }
  /// additive_bias at explicit positions (p.at): the bias as fused_attention reads it there, a table over the
  /// offsets of a line of p.span() positions with RelativeBias::positions = *p.at; undefined for a scheme whose bias
  /// is no function of key - query alone (fire: bias(p) reads p.at). The default is relative_bias over that line.
  virtual RelativeBias relative_bias_at(const Positions& p) const;
  /// rotary: the keys x (B, heads, T, head_dim) at positions offset .. offset + T - 1, rotated: rotate(x, offset)
  /// unless the scheme treats keys differently (xPos scales keys down where it scales queries up).
  virtual Tensor rotate_key(const Tensor& x, int64_t offset) const { return rotate(x, offset); }
  /// rotary: true when a key's rotation depends on how many keys there are (xPos's centre): a KV cache then keeps
  /// its keys unrotated, and each forward rotates all of them, rotate_key(keys, 0).
  virtual bool rotates_all_keys() const { return false; }
  /// The block of blockwise causal attention (core/ops.h AttentionSpec::block) the attention layers use now: 0,
  /// or xPos's train length in evaluation with position.blockwise.
  virtual int64_t attention_block() const { return 0; }
  /// Schemes that read a table: the (q_len, k_len) i64 row each score reads; undefined otherwise.
  virtual Tensor index(const Positions& p) const;
  /// Schemes whose bias is a learned function of a fixed input (fire): the (q_len, k_len) f64 input each score's
  /// bias is computed from, with the parameters as they are; undefined otherwise.
  virtual Tensor function_input(const Positions& p) const { return Tensor(); }

  /// What `rpb bias` prints above the scheme's matrix: a title ("t5 buckets of key - query") and the options it
  /// depends on ("causal, 32 buckets, max_distance 128"; may be empty).
  virtual std::string title() const;
  virtual std::string title_options() const { return ""; }
  /// additive_bias: what sets head h's bias ("slope 0.0625"); empty when nothing per head.
  virtual std::string head_note(int64_t head) const { return ""; }

 protected:
  PositionScheme() = default;
  /// Throws unless `p` has the scheme's dims and valid extents; `op` names the caller. Explicit positions (p.at)
  /// only where the caller reads them (`explicit_positions`).
  void check(const Positions& p, const char* op, bool explicit_positions = false) const;

 private:
  const SchemeInfo* info_ = nullptr;
  friend std::shared_ptr<PositionScheme> make_position_scheme(const PositionOptions& options, Generator& gen);
};

/// Builds a scheme from checked options (the registry's `make`).
using SchemeFactory = std::shared_ptr<PositionScheme>(const PositionOptions& options, Generator& gen);

/// One row of the registry.
struct SchemeInfo {
  const char* name;         // the config value (position.scheme) and the module's name ("pos.<name>")
  int64_t dims;             // 1 or 2; 0: either (none)
  PositionKind kind;
  const char* label;        // in result tables ("T5 bias")
  const char* description;  // one line for help texts
  /// With model.share_position = false, each layer owns one (when it has parameters: t5, shaw, learnable
  /// log_decay); otherwise one module serves every layer.
  bool per_layer;
  /// The number of trained values of the module built from `o` (0 for window schemes: their bias belongs to the
  /// window attention, WindowAttention::parameter_count). Computed without building anything.
  int64_t (*parameters)(const PositionOptions& o);
  /// The longest length (1-D) or grid side (2-D) it can run at; 0 when unbounded.
  int64_t (*max_length)(const PositionOptions& o);
  /// The option that bounds max_length ("max_positions"), or null.
  const char* length_option;
  /// Checks the scheme's own options, throwing rpb::OptionError naming the field.
  void (*validate)(const PositionOptions& o);
  /// Builds it (null for window schemes, which the window attention builds).
  SchemeFactory* make;
  /// Window schemes: WindowAttentionOptions::bias (table or continuous); none for the others.
  WindowBias window_bias;
  /// The token embedding it is published with (never EmbeddingRecipe::scheme): scaled for the sinusoids (Vaswani et
  /// al.; fairseq), whose +-1 values would swamp tokens at std 0.02; gpt2 for the rest, learned absolute positions
  /// included (GPT-2 and ViT, their references; measured against the scaled recipe in docs/schemes.md).
  EmbeddingRecipe embedding = EmbeddingRecipe::gpt2;
  /// True for the schemes that read a learned table at one row per relative position (t5, shaw, clipped2d), so that
  /// rows can go untrained: they record the rows training read, and position.untrained applies to them.
  bool row_table = false;
  /// Its place in every list of names (config choices, sweep defaults, help, `rpb schemes`): rows sort by rank.
  /// The rows registered before ranks existed hold 10, 20, ..., in the order the registry listed them then.
  int rank = 0;
  /// The [position] (or [grid]) keys of nn/position/options.h its module reads, besides the ones a row property
  /// implies (untrained: row_table); `rpb schemes --json` lists them in the option table's order.
  std::vector<std::string> reads = {};
  /// 1-D rows: its form in a bidirectional model (model.causal = false, the encoder framing of the algorithmic tasks,
  /// train/data/algorithmic.h), one line for `rpb schemes`; null when it has none, and then `causal_only` says why
  /// and a bidirectional model refuses it (validate(TransformerOptions) in nn/transformer.h). A 1-D row sets exactly
  /// one of the two (tests/test_scheme_registry.cpp); 2-D rows attend bidirectionally always and set neither.
  const char* bidirectional = nullptr;
  const char* causal_only = nullptr;

  /// True when a model of `model_dims` (1 or 2) accepts it.
  bool fits(int64_t model_dims) const { return dims == 0 || dims == model_dims; }
  /// True when the scheme built from `o` has trained parameters (window schemes: their bias table or MLP).
  bool learned(const PositionOptions& o) const { return kind == PositionKind::window || parameters(o) > 0; }
};

/// (H, Tq, Tk): the full bias of a relative one over a line, full[h, i, j] = relative[h, j - i + Tq - 1]
/// (a recorded index_select: the gradient flows to `relative`).
Tensor expand_relative_bias(const Tensor& relative, int64_t q_len, int64_t k_len);

/// (H, T, T): the full bias of a relative one at explicit positions `at` (T of them, spanning S), full[h, i, j] =
/// relative[h, at[j] - at[i] + S - 1] over relative (H, 2 S - 1) (a recorded index_select).
Tensor expand_relative_bias_at(const Tensor& relative, const std::vector<int64_t>& at);

/// Registers a row: `const SchemeRegistrar registered({...});` at namespace scope in the scheme's file. Rows
/// registered after the registry was first read, or twice under one name and dims, abort with a message naming
/// the scheme (a registration at static-initialisation time is always before).
struct SchemeRegistrar {
  explicit SchemeRegistrar(SchemeInfo row);
};

/// Every row, in the registry's order (by rank).
const std::vector<SchemeInfo>& schemes();
/// The names of the schemes a model of `dims` (1 or 2) accepts, in the registry's order.
std::vector<std::string> scheme_names(int64_t dims);
/// The row of `name` for a model of `dims`, or null.
const SchemeInfo* find_scheme(const std::string& name, int64_t dims);
/// The row of options.scheme for options.dims; throws rpb::OptionError (field "scheme") naming the choices.
const SchemeInfo& scheme_info(const PositionOptions& options);

/// Checks every option the scheme reads (field "scheme", "heads", or the scheme's own), throwing
/// rpb::OptionError; allocates nothing.
void validate(const PositionOptions& options);

/// Validates `options` and builds the scheme, drawing its tables from `gen`. Window schemes throw (they live in
/// the window attention).
std::shared_ptr<PositionScheme> make_position_scheme(const PositionOptions& options, Generator& gen);

/// The recipe a model with `choice` (model.embedding) and a scheme of `dims` uses: `choice`, or with
/// EmbeddingRecipe::scheme the scheme's own; throws rpb::OptionError for an unknown scheme.
EmbeddingRecipe resolve_recipe(EmbeddingRecipe choice, const std::string& scheme, int64_t dims);

/// The trained values that encode position in the module tree below `root` (each Positional module's count).
int64_t position_parameter_count(const Module& root);

}  // namespace rpb::nn
