// The position-scheme registry (nn/position/scheme.h): every registered scheme has a golden case and a float64
// gradient-check case that pass, the rows read consistently, what reads the registry (names, lengths, per-layer
// tables, parameter counts) follows it, and no scheme's name is written outside its own files.
#include <doctest/doctest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <set>

#include "core/text.h"
#include "nn/grid_model.h"
#include "nn/position.h"
#include "nn/transformer.h"
#include "scheme_cases.h"
#include "tensor_checks.h"
#include "test_util.h"

using namespace rpb;
using namespace rpb::nn;
using rpb::testing::contains;
using rpb::testing::error_of;

namespace rpb::testing {
std::vector<SchemeCase>& scheme_cases() {
  static std::vector<SchemeCase> cases;
  return cases;
}
}  // namespace rpb::testing

TEST_CASE("every registered scheme has a golden case and a gradient-check case, and both pass") {
  const std::vector<testing::SchemeCase>& cases = testing::scheme_cases();
  std::set<std::string> registered;
  for (const SchemeInfo& s : schemes()) {
    registered.insert(s.name);
    INFO("scheme: ", s.name);
    const auto it = std::find_if(cases.begin(), cases.end(), [&](const auto& c) { return c.scheme == s.name; });
    REQUIRE_MESSAGE(it != cases.end(), "no golden or gradient-check case for the registered scheme ", std::string(s.name),
                    " (register one beside its tests: RPB_SCHEME_CASE, tests/scheme_cases.h)");
    REQUIRE(it->golden);
    REQUIRE(it->gradcheck);
    it->golden();
    testing::check_gradients(it->gradcheck());
  }
  // And no case for a scheme that is not registered (a renamed or removed one), nor two for one.
  for (const testing::SchemeCase& c : cases) CHECK_MESSAGE(registered.count(c.scheme) == 1, c.scheme);
  CHECK(cases.size() == registered.size());
}

TEST_CASE("registry rows: unique names per dims, builders for every scheme but the window ones") {
  std::set<std::pair<std::string, int64_t>> seen;
  for (const SchemeInfo& s : schemes()) {
    INFO("scheme: ", s.name);
    CHECK(seen.insert({s.name, s.dims}).second);
    CHECK((s.dims == 0 || s.dims == 1 || s.dims == 2));
    CHECK(s.label != nullptr);
    CHECK(static_cast<bool>(s.validate));
    CHECK(!s.make == (s.kind == PositionKind::window));
    CHECK((s.window_bias != WindowBias::none) == (s.kind == PositionKind::window));
    CHECK((s.length_option != nullptr) == (s.max_length(PositionOptions{}) > 0));
    // A 1-D row says its bidirectional form or why it has none (model.causal = false); a 2-D row neither.
    if (s.fits(1)) CHECK((s.bidirectional == nullptr) != (s.causal_only == nullptr));
    else CHECK((s.bidirectional == nullptr && s.causal_only == nullptr));
  }
  // The lists follow the ranks, and each dims' list holds exactly the rows that fit it.
  for (std::size_t i = 1; i < schemes().size(); ++i) CHECK(schemes()[i - 1].rank < schemes()[i].rank);
  for (const int64_t dims : {int64_t{1}, int64_t{2}}) {
    std::vector<std::string> fitting;
    for (const SchemeInfo& s : schemes())
      if (s.fits(dims)) fitting.emplace_back(s.name);
    CHECK(scheme_names(dims) == fitting);
  }
  CHECK(find_scheme("none", 1) == find_scheme("none", 2));
  CHECK(find_scheme("swin", 1) == nullptr);
  CHECK(find_scheme("t5", 2) == nullptr);
}

TEST_CASE("a built scheme answers to its row: kind, name and whether it learns") {
  for (const SchemeInfo& s : schemes()) {
    if (!s.make) continue;
    for (const int64_t dims : {int64_t{1}, int64_t{2}}) {
      if (s.dims != 0 && s.dims != dims) continue;
      INFO("scheme: ", s.name, ", dims ", dims);
      PositionOptions o;
      o.scheme = s.name;
      o.dims = dims;
      o.heads = 2;
      o.train_length = 16;  // fire's L0
      o.d_model = 8;
      o.head_dim = 4;
      o.max_positions = 8;
      o.max_side = 3;
      o.max_relative_position = 2;
      for (const bool learnable : {false, true}) {
        o.learnable_lambda = learnable;
        Generator gen(0);
        const auto scheme = make_position_scheme(o, gen);
        CHECK(&scheme->info() == &s);
        CHECK(scheme->name() == s.name);
        CHECK(scheme->kind() == s.kind);
        CHECK(scheme->learned() == s.learned(o));
        CHECK(scheme->parameter_count() == s.parameters(o));
      }
    }
  }
}

TEST_CASE("option errors carry the field: config keys and command-line flags are found without reading text") {
  PositionOptions o;
  o.scheme = "t5";
  o.causal = false;
  o.num_buckets = 6;
  o.max_distance = 1;
  try {
    validate(o);
    FAIL("no error");
  } catch (const OptionError& e) {
    CHECK(e.field() == "max_distance");
    CHECK(e.detail() == "max_distance 1 must be above max_exact 1 (num_buckets/4)");
    CHECK(contains(e.what(), "t5: max_distance 1 must be above"));
  }
  o.scheme = "t6";
  try {
    validate(o);
    FAIL("no error");
  } catch (const OptionError& e) {
    CHECK(e.field() == "scheme");
  }
}

TEST_CASE("models read the registry: per-layer tables, the longest length and the position parameters") {
  TransformerOptions o;
  o.vocab = 7;
  o.d_model = 8;
  o.heads = 2;
  o.layers = 3;
  o.d_ff = 8;
  o.share_position = false;
  o.position.num_buckets = 8;
  o.position.max_distance = 16;
  o.position.max_positions = 12;
  o.position.train_length = 12;  // fire's L0
  for (const std::string& scheme : scheme_names(1)) {
    for (const bool learnable : {false, true}) {
      INFO("scheme: ", scheme, ", learnable lambda: ", learnable);
      o.position.scheme = scheme;
      o.position.learnable_lambda = learnable;
      Generator gen(1);
      const LanguageModel lm(o, gen);
      const PositionOptions po = position_options_for(o);
      const SchemeInfo& info = scheme_info(po);
      const bool per_layer = info.per_layer && info.learned(po);
      CHECK((lm.position() == nullptr) == per_layer);
      // One module per layer, or one for all (a built scheme's count is its row's: the test above).
      CHECK(position_parameter_count(lm) == (per_layer ? 3 : 1) * info.parameters(po));
      CHECK(lm.max_length() == info.max_length(po));
    }
  }
  // The 2-D window schemes' position parameters are the window attention's table or bias MLP.
  o.causal = false;
  o.position.scheme = "swin";
  WindowOptions w;
  w.window = 2;
  Generator gen(2);
  const GridModel swin(o, w, gen);
  CHECK(position_parameter_count(swin) == 3 * 9 * 2);  // 3 layers of a (3 x 3, heads) table
  CHECK(swin.max_side() == 0);
}

TEST_CASE("models count their parameters without being built, for every scheme, and refuse overflowing sizes") {
  TransformerOptions o;
  o.vocab = 11;
  o.d_model = 12;
  o.heads = 3;
  o.layers = 3;
  o.d_ff = 20;
  o.position.num_buckets = 8;
  o.position.max_distance = 16;
  o.position.max_positions = 12;
  o.position.max_side = 5;
  o.position.max_relative_position = 2;
  o.position.train_length = 12;  // fire's L0
  for (const std::string& scheme : scheme_names(1))
    for (const bool share : {false, true})
      for (const bool tie : {false, true})
        for (const bool learnable : {false, true}) {
          INFO("scheme: ", scheme, ", share ", share, ", tie ", tie, ", learnable ", learnable);
          o.position.scheme = scheme;
          o.share_position = share;
          o.tie_head = tie;
          o.position.learnable_lambda = learnable;
          Generator gen(3);
          CHECK(LanguageModel::parameter_count(o) == LanguageModel(o, gen).parameter_count());
        }
  o.causal = false;
  WindowOptions w;
  w.window = 3;
  w.cpb_hidden = 16;
  for (const std::string& scheme : scheme_names(2)) {
    INFO("scheme: ", scheme);
    o.position.scheme = scheme;
    Generator gen(4);
    CHECK(GridModel::parameter_count(o, w) == GridModel(o, w, gen).parameter_count());
  }
  o.causal = true;
  o.position.scheme = "learned";
  o.d_model = int64_t{1} << 32;
  o.heads = 1;
  o.position.max_positions = int64_t{1} << 32;
  CHECK(contains(error_of([&] { LanguageModel::parameter_count(o); }), "overflows"));
}

// ---- a scheme is its file: its name as a string nowhere else ----

namespace scheme_literal_test {

namespace fs = std::filesystem;

// The string literals of C++ source `text`, comments skipped, each with its line.
std::vector<std::pair<std::string, int>> string_literals(const std::string& text) {
  std::vector<std::pair<std::string, int>> out;
  int line = 1;
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (c == '\n') ++line;
    if (c == '/' && i + 1 < text.size() && text[i + 1] == '/') {
      while (i < text.size() && text[i] != '\n') ++i;
      ++line;
    } else if (c == '/' && i + 1 < text.size() && text[i + 1] == '*') {
      for (i += 2; i + 1 < text.size() && !(text[i] == '*' && text[i + 1] == '/'); ++i) line += text[i] == '\n';
      ++i;
    } else if (c == 'R' && i + 2 < text.size() && text[i + 1] == '"' && text[i + 2] == '(') {
      const std::size_t end = text.find(")\"", i + 3);  // raw strings: rpb's hold no scheme names, none )" inside
      if (end == std::string::npos) break;
      line += static_cast<int>(std::count(text.begin() + i, text.begin() + end, '\n'));
      i = end + 1;
    } else if (c == '\'' && i + 2 < text.size()) {
      i += text[i + 1] == '\\' ? 3 : 2;  // a character literal ('"', '\'')
    } else if (c == '"') {
      std::string s;
      for (++i; i < text.size() && text[i] != '"'; ++i) {
        if (text[i] == '\\' && i + 1 < text.size()) s += text[i++];
        s += text[i];
      }
      out.emplace_back(s, line);
    }
  }
  return out;
}

std::string read_text(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

// A library file may name a scheme when it is the scheme's own (its stem the name, or the name and '_' and more:
// rope_scaling.cpp is rope's), or when the word is something else there. Each exception says why.
struct Allowed {
  const char* file;
  const char* literal;
  const char* why;
};
constexpr Allowed kAllowed[] = {
    {"nn/position/scheme.h", "t5", "PositionOptions' default scheme"},
    {"train/config/config.cpp", "swin", "[grid]'s default scheme when position.scheme is not set"},
    {"train/sweep/results_json.cpp", "learned", "a results.json field: the learned part of the passkey accuracy"},
    {"cli/plot_request.cpp", "learned", "a figure request's field: the learned part of a metric"},
};

bool own_file(const fs::path& rel, const std::string& scheme) {
  if (rel.parent_path() != "nn/position") return false;
  const std::string stem = rel.stem().string();
  // swin.cpp holds swin_v2's row beside swin's: a file's stem and '_' may begin the name too.
  return stem == scheme || stem.rfind(scheme + "_", 0) == 0 || scheme.rfind(stem + "_", 0) == 0;
}

}  // namespace scheme_literal_test

TEST_CASE("a scheme's name is a string only in its own files: not in the rest of the library, not in test lists") {
  using namespace scheme_literal_test;
  std::set<std::string> names;
  for (const SchemeInfo& s : schemes()) names.insert(s.name);
  // "none" also names the absent value of many choices (untrained, rope_scaling, a window bias).
  names.erase("none");
  std::vector<std::string> found;
  const fs::path root = RPB_SOURCE_DIR;
  for (const char* dir : {"core", "nn", "optim", "train", "cli"})
    for (const auto& e : fs::recursive_directory_iterator(root / dir)) {
      const fs::path rel = fs::relative(e.path(), root);
      if (!e.is_regular_file() || (rel.extension() != ".cpp" && rel.extension() != ".h" && rel.extension() != ".cuh"))
        continue;
      for (const auto& found_literal : string_literals(read_text(e.path()))) {
        const std::string& literal = found_literal.first;  // not a structured binding: clang 14 cannot capture one
        const int line = found_literal.second;
        if (!names.count(literal) || own_file(rel, literal)) continue;
        const bool allowed = std::any_of(std::begin(kAllowed), std::end(kAllowed), [&](const Allowed& a) {
          return rel == a.file && literal == a.literal;
        });
        if (!allowed) found.push_back(rel.string() + ":" + std::to_string(line) + " \"" + literal + "\"");
      }
    }
  // Tests: a list of three or more scheme names (a hand copy of the registry) in one statement.
  for (const auto& e : fs::directory_iterator(root / "tests")) {
    if (e.path().extension() != ".cpp") continue;
    const auto literals = string_literals(read_text(e.path()));
    for (std::size_t i = 0; i + 2 < literals.size(); ++i)
      if (names.count(literals[i].first) && names.count(literals[i + 1].first) && names.count(literals[i + 2].first) &&
          literals[i + 2].second - literals[i].second <= 1)
        found.push_back(fs::relative(e.path(), root).string() + ":" + std::to_string(literals[i].second) +
                        " a hand list of schemes from \"" + literals[i].first + "\"");
  }
  const std::string listed = "scheme names outside their files:\n" + join(found, "\n");
  CHECK_MESSAGE(found.empty(), listed);
  // The scanner finds what it must: a literal after a comment and an escaped quote, none inside a comment.
  const auto probe = string_literals("// \"t5\"\nx = \"a\\\"b\"; /* \"rope\" */ f(\"alibi\", 'x');");
  REQUIRE(probe.size() == 2);
  CHECK(probe[0].first == "a\\\"b");
  CHECK(probe[1] == std::pair<std::string, int>{"alibi", 2});
}
