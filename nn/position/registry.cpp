// rpb/nn/position/registry.cpp: the registry of position schemes, collected from the rows the scheme files
// register (nn/position/scheme.h says how a scheme is added), and what reads it in nn.
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <string_view>

#include "core/checked.h"
#include "core/text.h"
#include "nn/position.h"
#include "nn/position/common.h"
#include "nn/position/options.h"

namespace rpb::nn {

namespace {

// The rows as registered, and whether the registry has been read (no row may join after).
struct Registrations {
  std::vector<SchemeInfo> rows;
  bool read = false;
};

Registrations& registrations() {
  static Registrations r;
  return r;
}

[[noreturn]] void refuse_registration(const SchemeInfo& row, const char* why) {
  std::fprintf(stderr, "rpb: position scheme '%s' (dims %lld): %s\n", row.name ? row.name : "?",
               static_cast<long long>(row.dims), why);
  std::abort();
}

// The registry, sorted by rank once, at its first reading (after static initialisation).
const std::vector<SchemeInfo>& scheme_rows() {
  static const std::vector<SchemeInfo> rows = [] {
    Registrations& r = registrations();
    r.read = true;
    std::vector<SchemeInfo> sorted = r.rows;
    std::stable_sort(sorted.begin(), sorted.end(),
                     [](const SchemeInfo& a, const SchemeInfo& b) { return a.rank < b.rank; });
    return sorted;
  }();
  return rows;
}

}  // namespace

SchemeRegistrar::SchemeRegistrar(SchemeInfo row) {
  Registrations& r = registrations();
  if (r.read) refuse_registration(row, "registered after the registry was read (register at namespace scope)");
  if (!row.name || !row.label || !row.description || !row.parameters || !row.max_length || !row.validate)
    refuse_registration(row, "a row needs its name, label, description, parameters, max_length and validate");
  for (const SchemeInfo& s : r.rows) {
    if (std::string_view(s.name) == row.name && (s.dims == 0 || row.dims == 0 || s.dims == row.dims))
      refuse_registration(row, "registered twice for the same dims");
    if (s.rank == row.rank) refuse_registration(row, "its rank is another scheme's (ranks order the lists)");
  }
  r.rows.push_back(std::move(row));
}

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
  // An option the scheme does not read is ignored, unless its row refuses it set away from its default on the other
  // schemes (the rope scaling keys, blockwise: evaluation settings that would change nothing there).
  const PositionOptions defaults;
  for (const PositionOptionInfo& d : position_option_table())
    if (d.refused_elsewhere && !d.read_by(s))
      RPB_CHECK_OPTION(option_value(d, o) == option_value(d, defaults), s.name, d.key, d.key, " = ",
                       option_value_text(d, o), " applies to the ", join(schemes_reading(d), ", "),
                       " scheme only; ", s.name, " ", d.refused_elsewhere);
  // L_max means something only with randomized positions on.
  RPB_CHECK_OPTION(o.randomized || o.randomized_max == defaults.randomized_max, s.name, "randomized_max",
                   "randomized_max = ", o.randomized_max, " is the range randomized positions are drawn from, and "
                   "randomized is false");
  RPB_CHECK_OPTION(o.randomized || !o.contiguous_eval, s.name, "contiguous_eval",
                   "contiguous_eval = true applies to randomized positions, and randomized is false");
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

void PositionScheme::check(const Positions& p, const char* op, bool explicit_positions) const {
  RPB_CHECK(p.dims() == info().dims || info().dims == 0, op, "a ", info().dims, "-D scheme given ",
            p.is_grid() ? "a grid" : "a line", " of positions");
  RPB_CHECK(!p.at || explicit_positions, op, "explicit positions reach a scheme through relative_bias_at, rotate_at "
            "and the embeddings of their span (nn/position_plan.cpp), not here");
  if (p.at) {
    RPB_CHECK(!p.at->empty() && p.q_len == p.k_len && p.q_len == static_cast<int64_t>(p.at->size()) &&
                  p.q_offset == 0, op, "explicit positions need q_len == k_len == their count and q_offset 0");
    position_detail::check_line(op, p.q_len, p.k_len, p.span() - 1);
  }
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

Tensor PositionScheme::rotate_at(const Tensor&, const std::vector<int64_t>&) const {
  RPB_FAIL("position", "scheme '", name(), "' (kind ", kind_name(kind()),
           ") has no rotate_at(): only rotary schemes rotate queries and keys");
}

RelativeBias PositionScheme::relative_bias_at(const Positions& p) const {
  RPB_CHECK(p.at && kind() == PositionKind::additive_bias, "position", "relative_bias_at of scheme '", name(),
            "' needs explicit positions and an additive bias");
  RelativeBias b = relative_bias(Positions::line(p.span(), p.span()));  // every offset of the positions' span
  if (!b.table.defined()) return RelativeBias();
  b.positions = *p.at;
  return b;
}

Tensor PositionScheme::index(const Positions&) const { return Tensor(); }

namespace {

// (H, Tq, Tk): relative (H, R) read at column column(i, j) for each query i and key j (a recorded index_select).
template <typename Column>
Tensor gather_columns(const Tensor& relative, int64_t q_len, int64_t k_len, Column column) {
  std::vector<int64_t> idx(static_cast<std::size_t>(q_len * k_len));
  for (int64_t i = 0; i < q_len; ++i)
    for (int64_t j = 0; j < k_len; ++j) idx[static_cast<std::size_t>(i * k_len + j)] = column(i, j);
  // (R, H) rows picked per (i, j) -> (Tq, Tk, H) -> (H, Tq, Tk)
  return permute(index_select(transpose(relative, 0, 1), Tensor::indices({q_len, k_len}, idx).to(relative.device())),
                 {2, 0, 1});
}

}  // namespace

Tensor expand_relative_bias_at(const Tensor& relative, const std::vector<int64_t>& at) {
  const auto n = static_cast<int64_t>(at.size());
  RPB_CHECK(n >= 1 && relative.dim() == 2 && relative.size(1) == 2 * at.back() + 1, "position", "relative bias ",
            relative.shape(), " is not (H, 2 S - 1) for positions spanning S = ", n ? at.back() + 1 : 0);
  return gather_columns(relative, n, n, [&](int64_t i, int64_t j) { return at[j] - at[i] + at.back(); });
}

Tensor expand_relative_bias(const Tensor& relative, int64_t q_len, int64_t k_len) {
  RPB_CHECK(relative.dim() == 2 && relative.size(1) == q_len + k_len - 1, "position", "relative bias ",
            relative.shape(), " is not (H, Tq + Tk - 1) for Tq ", q_len, " and Tk ", k_len);
  return gather_columns(relative, q_len, k_len, [&](int64_t i, int64_t j) { return j - i + q_len - 1; });
}


}  // namespace rpb::nn
