// rpb/nn/position/registry.cpp: the one table of position schemes, and what reads it in nn.
//
// Adding a scheme: its file nn/position/<name>.cpp (defining scheme_files::make_<name> and, when it reads options
// of its own, scheme_files::validate_<name>), their names in the declarations below, one row of the table, and its
// tests (golden values and a gradient check: tests/test_scheme_registry.cpp fails for a registered scheme without
// them; tests/test_position.cpp's `wants` for a 1-D one). An option of its own: a PositionOptions field and a row of
// nn/position/options.h's table. A 1-D scheme also needs a builder in python/rpb_torch.py (its test names one missing).
#include <algorithm>
#include <string_view>

#include "core/checked.h"
#include "core/text.h"
#include "nn/position.h"
#include "nn/position/common.h"
#include "nn/position/options.h"

namespace rpb::nn {

namespace scheme_files {
// Defined each in nn/position/<name>.cpp.
using Validator = void(const PositionOptions& o);
SchemeFactory make_xpos;
Validator validate_xpos;
SchemeFactory make_learned, make_sinusoidal, make_rope, make_t5, make_shaw, make_log_decay, make_alibi, make_fire,
    make_learned2d, make_sinusoidal2d, make_alibi2d, make_clipped2d, make_none;
Validator validate_learned, validate_sinusoidal, validate_rope, validate_t5, validate_shaw, validate_log_decay, validate_fire,
    validate_learned2d, validate_sinusoidal2d, validate_clipped2d;
}  // namespace scheme_files

namespace {

void no_options(const PositionOptions&) {}
int64_t none(const PositionOptions&) { return 0; }
// A table of `rows` values per head.
int64_t per_head(const PositionOptions& o, int64_t rows) { return checked_mul(rows, o.heads, "position", "table"); }
int64_t unbounded(const PositionOptions&) { return 0; }

using K = PositionKind;
using R = EmbeddingRecipe;
using W = WindowBias;
using namespace scheme_files;

// The registry. Its order is the order of every list of names (config choices, sweep defaults, help).
// alibi and alibi2d read only `heads`, which validate() checks for every scheme; swin and swin_v2 read the
// window options ([grid]), which the grid model checks.
const std::vector<SchemeInfo>& scheme_rows() {
  static const std::vector<SchemeInfo> table = {
    // name, dims, kind, label, color (figures: the colour of the scheme's methods), marker,
    // description, per_layer, parameters, max_length, length_option, validate, make,
    // window_bias, embedding (default gpt2), row_table (default false)
    {"learned", 1, K::absolute, "Learned PE", "#8c564b", "v",
     "a learned table of absolute positions added to the tokens", false,
     [](const PositionOptions& o) { return checked_mul(o.max_positions, o.d_model, "position", "learned table"); },
     [](const PositionOptions& o) { return o.max_positions; }, "max_positions", validate_learned, make_learned,
     W::none},
    {"sinusoidal", 1, K::absolute, "Sinusoidal", "#e377c2", "P",
     "Vaswani et al.'s fixed sinusoids added to the tokens", false, none,
     unbounded, nullptr, validate_sinusoidal, make_sinusoidal, W::none, R::scaled},
    {"rope", 1, K::rotary, "RoPE", "#9467bd", "D",
     "rotary embeddings of queries and keys", false, none, unbounded, nullptr,
     validate_rope, make_rope, W::none},
    {"t5", 1, K::additive_bias, "T5 bias", "#1f77b4", "o",
     "T5's learned bias per log-spaced bucket of key - query", true,
     [](const PositionOptions& o) { return per_head(o, o.num_buckets); },
     unbounded, nullptr, validate_t5, make_t5, W::none, R::gpt2, true},
    {"shaw", 1, K::additive_bias, "Shaw (clipped)", "#ff7f0e", "s",
     "a learned bias per key - query clipped to [-K, K]", true,
     [](const PositionOptions& o) { return per_head(o, 2 * o.max_relative_position + 1); },
     unbounded, nullptr, validate_shaw, make_shaw, W::none, R::gpt2, true},
    {"log_decay", 1, K::additive_bias, "Log-decay", "#bcbd22", "X",
     "-lambda * log(1 + |i - j|), lambda fixed or learned per head",
     true, [](const PositionOptions& o) { return o.learnable_lambda ? o.heads : int64_t{0}; }, unbounded, nullptr, validate_log_decay,
     make_log_decay, W::none},
    {"alibi", 1, K::additive_bias, "ALiBi", "#2ca02c", "^",
     "-m_h * |i - j| with the ALiBi paper's slopes", false, none, unbounded,
     nullptr, no_options, make_alibi, W::none},
    {"xpos", 1, K::rotary, "xPos", "#393b79", "*",
     "rotary embeddings on interleaved pairs with a per-pair decay (Sun et al.)", false, none, unbounded, nullptr,
     validate_xpos, make_xpos, W::none},
    {"fire", 1, K::additive_bias, "FIRE", "#17becf", "H",
     "FIRE's learned MLP of log distance over the query's log position", true,
     [](const PositionOptions& o) {
       // c and the multiplier, the hidden layer (weight and bias), the output layer (weight and bias)
       const int64_t hidden = checked_mul(o.fire_hidden, 2, "position", "fire");
       return checked_add(checked_add(2 + hidden, o.heads, "position", "fire"),
                          checked_mul(o.fire_hidden, o.heads, "position", "fire"), "position", "fire");
     },
     unbounded, nullptr, validate_fire, make_fire, W::none},
    {"swin", 2, K::window, "Swin V1 table (windows)", "#d62728", "h",
     "Swin V1 window attention with a learned bias table", false,
     none, unbounded, nullptr, no_options, nullptr, W::table},
    {"swin_v2", 2, K::window, "Swin V2 continuous (windows)", "#17becf", "p",
     "Swin V2 window attention with a continuous bias MLP",
     false, none, unbounded, nullptr, no_options, nullptr, W::continuous},
    {"learned2d", 2, K::absolute, "Learned 2-D (global)", "#8c564b", "v",
     "a learned vector per grid cell added to the tokens", false,
     [](const PositionOptions& o) {
       return checked_mul(checked_mul(o.max_side, o.max_side, "position", "learned2d table"), o.d_model, "position",
                          "learned2d table");
     }, [](const PositionOptions& o) { return o.max_side; }, "max_side", validate_learned2d, make_learned2d,
     W::none},
    {"sinusoidal2d", 2, K::absolute, "Sinusoidal 2-D (global)", "#e377c2", "P",
     "sinusoids of the row and the column", false, none,
     unbounded, nullptr, validate_sinusoidal2d, make_sinusoidal2d, W::none, R::scaled},
    {"alibi2d", 2, K::additive_bias, "ALiBi 2-D (global)", "#2ca02c", "^",
     "-slope_h * the Euclidean distance between cells", false,
     none, unbounded, nullptr, no_options, make_alibi2d, W::none},
    {"clipped2d", 2, K::additive_bias, "Clipped 2-D table (global)", "#ff7f0e", "s",
     "a learned bias per 2-D offset clipped to [-K, K]",
     false, [](const PositionOptions& o) {
       const int64_t side = 2 * o.max_relative_position + 1;
       return per_head(o, checked_mul(side, side, "position", "clipped2d table"));
     }, unbounded, nullptr, validate_clipped2d, make_clipped2d, W::none, R::gpt2, true},
    {"none", 0, K::none, "NoPE (none)", "#7f7f7f", "x",
     "no position information", false, none, unbounded, nullptr, no_options,
     make_none, W::none},
  };
  return table;
}

}  // namespace

const char* kind_name(PositionKind k) {
  switch (k) {
    case PositionKind::none: return "none";
    case PositionKind::absolute: return "absolute";
    case PositionKind::additive_bias: return "additive_bias";
    case PositionKind::rotary: return "rotary";
    case PositionKind::window: return "window";
  }
  return "?";
}

const char* window_bias_name(WindowBias b) {
  switch (b) {
    case WindowBias::none: return "none";
    case WindowBias::table: return "table";
    case WindowBias::continuous: return "continuous";
  }
  return "?";
}

const char* recipe_name(EmbeddingRecipe r) { return enum_name(kEmbeddingRecipeNames, r); }

EmbeddingRecipe resolve_recipe(EmbeddingRecipe choice, const std::string& scheme, int64_t dims) {
  if (choice != EmbeddingRecipe::scheme) return choice;
  PositionOptions o;
  o.scheme = scheme;
  o.dims = dims;
  return scheme_info(o).embedding;
}

const std::vector<SchemeInfo>& schemes() { return scheme_rows(); }

std::vector<std::string> scheme_names(int64_t dims) {
  std::vector<std::string> names;
  for (const SchemeInfo& s : scheme_rows())
    if (s.fits(dims)) names.emplace_back(s.name);
  return names;
}

const SchemeInfo* find_scheme(const std::string& name, int64_t dims) {
  for (const SchemeInfo& s : scheme_rows())
    if (name == s.name && s.fits(dims)) return &s;
  return nullptr;
}

const SchemeInfo& scheme_info(const PositionOptions& o) {
  const SchemeInfo* s = find_scheme(o.scheme, o.dims);
  if (!s) {
    const std::vector<std::string> known = scheme_names(o.dims);
    const std::string near = closest(o.scheme, known);
    RPB_CHECK_OPTION(false, "position", "scheme", "unknown ", o.dims == 2 ? "2-D " : "", "scheme '",
                     printable(o.scheme), "' (expected one of: ", join(known, ", "), ")",
                     near.empty() ? "" : " (did you mean '" + near + "'?)");
  }
  return *s;
}

void validate(const PositionOptions& o) {
  RPB_CHECK_OPTION(o.dims == 1 || o.dims == 2, "position", "dims", "dims ", o.dims, " must be 1 or 2");
  const SchemeInfo& s = scheme_info(o);
  RPB_CHECK_OPTION(o.heads >= 1, s.name, "heads", "heads ", o.heads, " must be at least 1");
  position_detail::check_at_most(s.name, "heads", o.heads, limits::heads.hi);
  RPB_CHECK_OPTION(o.dtype != DType::i64, s.name, "dtype", "dtype must be float32 or float64");
  if (o.untrained != Untrained::keep && !s.row_table) {
    std::vector<std::string> tables;
    for (const SchemeInfo& t : scheme_rows())
      if (t.row_table) tables.emplace_back(t.name);
    // Swin's V1 table is one, but holds only the offsets inside a window, and every training window reads them all.
    const std::string why = s.kind == PositionKind::window
                                ? " reads its bias only inside a window, where every training window reads every offset"
                                : " has none";
    RPB_CHECK_OPTION(false, s.name, "untrained", "untrained = \"", untrained_name(o.untrained),
                     "\" applies to the schemes with a table row per relative position (", join(tables, ", "), "); ",
                     s.name, why);
  }
  if (std::string_view(s.name) != "rope") {
    // The rope scaling options are read by rope alone: set on another scheme, they are refused at their key.
    const PositionOptions defaults;
    for (const PositionOptionInfo& d : position_option_table())
      if (std::string_view(d.key).starts_with("rope_") || std::string_view(d.key).starts_with("yarn_"))
        if (d.key != std::string_view("rope_base"))
          RPB_CHECK_OPTION(option_value_text(d, o) == option_value_text(d, defaults), s.name, d.key, d.key, " = ",
                           option_value_text(d, o), " applies to the rope scheme only; ", s.name,
                           " has no rotary frequencies to scale");
  }
  RPB_CHECK_OPTION(!o.blockwise || std::string_view(s.name) == "xpos", s.name, "blockwise",
                   "blockwise = true applies to xpos (the evaluation its paper pairs it with); ", s.name, " has none");
  s.validate(o);
}

std::shared_ptr<PositionScheme> make_position_scheme(const PositionOptions& options, Generator& gen) {
  validate(options);
  const SchemeInfo& s = scheme_info(options);
  RPB_CHECK(s.make, s.name, "a window scheme lives in the window attention (nn/window_attention.h), not in a "
            "position module of its own");
  std::shared_ptr<PositionScheme> scheme = s.make(options, gen);
  scheme->info_ = &s;
  return scheme;
}

int64_t position_parameter_count(const Module& root) {
  int64_t n = 0;
  for (const auto& [path, m] : root.named_modules())
    if (const auto* p = dynamic_cast<const Positional*>(m)) n += p->position_parameter_count();
  return n;
}

// ---- PositionScheme: a scheme answers only for its own kind ----

std::string PositionScheme::name() const { return info().name; }
PositionKind PositionScheme::kind() const { return info().kind; }
std::string PositionScheme::title() const { return name(); }

void PositionScheme::check(const Positions& p, const char* op) const {
  RPB_CHECK(p.dims() == info().dims || info().dims == 0, op, "a ", info().dims, "-D scheme given ",
            p.is_grid() ? "a grid" : "a line", " of positions");
  if (p.is_grid()) {
    RPB_CHECK(p.height >= 1 && p.width >= 1, op, "grid ", p.height, " x ", p.width, " must have at least one cell");
    return;
  }
  position_detail::check_line(op, p.q_len, p.k_len, p.q_offset);
}

Tensor PositionScheme::embed(const Positions&) const {
  RPB_FAIL("position", "scheme '", name(), "' (kind ", kind_name(kind()),
           ") has no embed(): only absolute schemes add embeddings to the tokens");
}

Tensor PositionScheme::bias(const Positions&) const {
  RPB_FAIL("position", "scheme '", name(), "' (kind ", kind_name(kind()),
           ") has no bias(): only additive-bias schemes add to the scores");
}

RelativeBias PositionScheme::relative_bias(const Positions&) const { return RelativeBias(); }

Tensor PositionScheme::rotate(const Tensor&, int64_t) const {
  RPB_FAIL("position", "scheme '", name(), "' (kind ", kind_name(kind()),
           ") has no rotate(): only rotary schemes rotate queries and keys");
}

Tensor PositionScheme::index(const Positions&) const { return Tensor(); }

}  // namespace rpb::nn
