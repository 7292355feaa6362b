#include "cli/bias.h"

#include <cmath>
#include <iostream>
#include <memory>
#include <cstdio>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include "core/core.h"
#include "nn/limits.h"
#include "nn/position.h"
#include "nn/position/options.h"
#include "nn/position/table_scheme.h"
#include "train/io/json_text.h"

namespace rpb {

namespace {

// An integer flag of `rpb bias`, the option field it sets (as an OptionError names it), its value and its range:
// the config's limits for the same keys (the option descriptors, nn/limits.h), one sequence's length, and positions
// up to the largest. In the order they are checked.
struct IntFlag {
  std::string field;
  std::string flag;
  int64_t value;
  nn::limits::Range range;
};

std::vector<IntFlag> int_flags(const BiasOptions& o) {
  namespace L = nn::limits;
  std::vector<IntFlag> flags;
  for (const nn::PositionOptionInfo& d : nn::position_option_table())
    if (const auto* m = std::get_if<int64_t nn::PositionOptions::*>(&d.member); m && d.bias_flag)
      flags.push_back({d.key, nn::option_flag_name(d), o.position.**m, d.range});
  flags.push_back({"heads", "--heads", o.position.heads, L::heads});
  flags.push_back({"query_length", "--query-length", o.query_length, {1, L::kMaxSequence}});
  flags.push_back({"key_length", "--key-length", o.key_length, {1, L::kMaxSequence}});
  flags.push_back({"query_offset", "--query-offset", o.query_offset, {0, L::kMaxPosition}});
  return flags;
}

// The flag that sets each PositionOptions field `rpb bias` exposes, so a usage error points at what the user typed.
std::string flag_for(const std::string& field) {
  if (const nn::PositionOptionInfo* d = nn::find_position_option(field); d && d->bias_flag)
    return nn::option_flag_name(*d);
  if (field == "heads") return "--heads";
  if (field == "scheme") return "--scheme";
  return "";
}

// The most values one `rpb bias` prints as a table (a 128 x 128 matrix): what is still useful on a terminal.
constexpr int64_t kMaxPrinted = int64_t{1} << 14;
// The most values `rpb bias --json` writes (a 2048 x 2048 matrix): JSON is read by programs (a 300 x 300 T5 bucket
// matrix is routine to check against another implementation), so the bound is what is safe to write, not a screenful.
// At most about 25 bytes of text per value, 100 MB in all, and nlohmann's 16-byte values while it is built: a few
// hundred MB at the most and about a second to write (the double tensor computed, 32 MiB, besides).
constexpr int64_t kMaxJsonValues = int64_t{1} << 22;

// "" when every integer flag is in its range and the last query is a position; else what is wrong, naming the
// flag, its value and the range.
std::string check_flags(const BiasOptions& o) {
  for (const IntFlag& f : int_flags(o))
    if (const int64_t v = f.value; !f.range.contains(v))
      return f.flag + " " + std::to_string(v) + ": expected an integer in [" +
             std::to_string(f.range.lo) + ", " + std::to_string(f.range.hi) + "]";
  if (o.query_offset > nn::limits::kMaxPosition - o.query_length)
    return "--query-offset " + std::to_string(o.query_offset) + " + --query-length " + std::to_string(o.query_length) +
           " is past the largest position " + std::to_string(nn::limits::kMaxPosition) + " (2^40)";
  return "";
}

// "" when the matrix `rpb bias` prints (per head when `per_head`) holds at most kMaxPrinted values, or with --json
// kMaxJsonValues.
std::string check_printed(const BiasOptions& o, bool per_head) {
  const int64_t heads = per_head ? o.position.heads : 1;
  const int64_t most = o.json ? kMaxJsonValues : kMaxPrinted;
  if (heads * o.query_length * o.key_length <= most) return "";  // each at most 2^16 (heads 2^10): no overflow
  return (per_head ? std::to_string(heads) + (heads == 1 ? " head x " : " heads x ") : std::string()) +
         std::to_string(o.query_length) + " queries x " + std::to_string(o.key_length) + " keys = " +
         std::to_string(heads * o.query_length * o.key_length) + " values; at most " + std::to_string(most) +
         (o.json ? " are written as JSON (e.g. 2048 x 2048)" : " are printed (e.g. 128 x 128; --json writes up to " +
                                                                  std::to_string(kMaxJsonValues) + ")") +
         ": lower --query-length, --key-length" + (per_head ? " or --heads" : "");
}

// x as a JSON number: an integral value as an integer (2, not nlohmann's 2.0; -0 as 0), others as the shortest text
// that reads back to the same double (what --json printed before it went through nlohmann).
Json json_value(double x) {
  const double r = x + 0.0;
  if (r == std::trunc(r) && std::fabs(r) < 0x1p53) return static_cast<int64_t>(r);
  return r;
}

std::string fixed4(double x) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%8.4f", x + 0.0);
  return buf;
}

// A (rows, cols) i64 matrix as [[a,b],[c,d]].
Json json_matrix(const Tensor& m) {
  const auto v = m.to_vector();
  const int64_t rows = m.size(0), cols = m.size(1);
  Json out = Json::array();
  for (int64_t r = 0; r < rows; ++r) {
    Json row = Json::array();
    for (int64_t c = 0; c < cols; ++c) row.push_back(static_cast<int64_t>(v[r * cols + c]));
    out.push_back(std::move(row));
  }
  return out;
}

// A (heads, rows, cols) float tensor as [[[...]]].
Json json_bias(const Tensor& b) {
  const auto v = b.to_vector();
  const int64_t heads = b.size(0), rows = b.size(1), cols = b.size(2);
  Json out = Json::array();
  for (int64_t h = 0; h < heads; ++h) {
    Json head = Json::array();
    for (int64_t r = 0; r < rows; ++r) {
      Json row = Json::array();
      for (int64_t c = 0; c < cols; ++c) row.push_back(json_value(v[(h * rows + r) * cols + c]));
      head.push_back(std::move(row));
    }
    out.push_back(std::move(head));
  }
  return out;
}

std::string range(int64_t first, int64_t count) {
  return std::to_string(first) + ".." + std::to_string(first + count - 1);
}

std::string axes(const BiasOptions& o) {
  return "rows: queries " + range(o.query_offset, o.query_length) + ", columns: keys " + range(0, o.key_length);
}

// What a scheme without a matrix does, by how it enters the model.
const char* kind_sentence(nn::PositionKind k) {
  switch (k) {
    case nn::PositionKind::absolute: return "absolute position embeddings added to the token embeddings";
    case nn::PositionKind::rotary: return "rotary embeddings that rotate queries and keys by their positions";
    case nn::PositionKind::additive_bias: return "a learned bias added to the attention scores (its values need a trained checkpoint)";
    default: return "no position information";
  }
}

// A table scheme's (q, k) row index, and what it selects.
void print_index(const nn::PositionScheme& scheme, const Tensor& index, const BiasOptions& o, std::ostream& out) {
  out << scheme.title() << " (" << scheme.title_options() << "; " << axes(o) << "):\n";
  const auto v = index.to_vector();
  const int64_t q = o.query_length, k = o.key_length;
  for (int64_t r = 0; r < q; ++r) {
    for (int64_t c = 0; c < k; ++c) {
      char buf[24];
      std::snprintf(buf, sizeof buf, "%4lld", static_cast<long long>(v[r * k + c]));
      out << buf;
    }
    out << "\n";
  }
  const int64_t rows = dynamic_cast<const nn::TableScheme&>(scheme).table.size(0);
  out << "Each index selects a row of the learned (" << rows
      << ", heads) table; the bias values need a trained checkpoint.\n";
}

// A fixed bias (heads, q, k), head by head.
void print_bias(const nn::PositionScheme& scheme, const Tensor& bias, const BiasOptions& o, std::ostream& out) {
  const auto v = bias.to_vector();
  const int64_t q = o.query_length, k = o.key_length, heads = o.position.heads;
  out << scheme.title() << " (" << heads << (heads == 1 ? " head" : " heads") << "; " << axes(o) << "):\n";
  for (int64_t h = 0; h < heads; ++h) {
    out << "head " << h << " (" << scheme.head_note(h) << "):\n";
    for (int64_t r = 0; r < q; ++r) {
      for (int64_t c = 0; c < k; ++c) out << fixed4(v[(h * q + r) * k + c]);
      out << "\n";
    }
  }
}

// The fixed input of a learned function (q, k) (fire), and what turns it into a bias.
void print_function_input(const nn::PositionScheme& scheme, const Tensor& input, const BiasOptions& o,
                          std::ostream& out) {
  const auto v = input.to_vector();
  const int64_t q = o.query_length, k = o.key_length;
  out << scheme.title() << " (" << scheme.title_options() << "; " << axes(o) << "):\n"
      << "the input of the learned function at the start of training, psi(i - j) / (psi(max(i, L)) + eps):\n";
  for (int64_t r = 0; r < q; ++r) {
    for (int64_t c = 0; c < k; ++c) out << fixed4(v[r * k + c]);
    out << "\n";
  }
  out << "Each value is the input of a learned MLP that gives one bias per head; the bias values need a trained "
         "checkpoint (rpb inspect draws them).\n";
}

}  // namespace

int run_bias_command(const BiasOptions& o, std::ostream& out, std::ostream& err) {
  if (const std::string e = check_flags(o); !e.empty()) {
    err << "rpb bias: " << e << "\n";
    return 2;
  }
  nn::PositionOptions po = o.position;
  po.dims = 1;
  po.dtype = DType::f64;  // the fixed biases as computed in double, from their definitions
  // The dimensions of the embedding schemes do not change what is printed (they have no bias matrix).
  po.d_model = 64;
  po.head_dim = 64;
  po.train_length = o.key_length;  // fire without --fire-length: as if trained at the printed length

  std::shared_ptr<nn::PositionScheme> scheme;
  try {
    nn::validate(po);
    const nn::SchemeInfo& info = nn::scheme_info(po);
    const bool learned = info.learned(po);
    if (info.kind == nn::PositionKind::additive_bias)  // the others print one sentence
      if (const std::string e = check_printed(o, !learned); !e.empty()) {
        err << "rpb bias: " << e << "\n";
        return 2;
      }
    // The learned values are not printed: a one-head table gives the same index (a learned function, FIRE's, keeps
    // --heads, which its title names).
    if (learned && info.row_table) po.heads = 1;
    Generator gen(0);
    scheme = nn::make_position_scheme(po, gen);
  } catch (const OptionError& e) {
    const std::string flag = flag_for(e.field());
    err << "rpb bias: " << e.message() << (flag.empty() ? "" : " (set by " + flag + ")") << "\n";
    return 2;
  }

  const nn::Positions p = nn::Positions::line(o.query_length, o.key_length, o.query_offset);
  const Tensor index = scheme->index(p);  // (q, k) i64 for the table schemes, else undefined
  const bool fixed_bias = scheme->kind() == nn::PositionKind::additive_bias && !scheme->learned();
  const Tensor bias = fixed_bias ? scheme->bias(p) : Tensor();  // (H, q, k)
  const Tensor input = scheme->function_input(p);                 // (q, k) f64 for a learned function, else undefined

  if (o.json) {
    Json j = {{"scheme", scheme->name()}, {"kind", nn::kind_name(scheme->kind())}};
    if (index.defined()) j["buckets"] = json_matrix(index);
    if (bias.defined()) j["bias"] = json_bias(bias);
    if (input.defined()) j["function_input"] = json_bias(reshape(input, {1, o.query_length, o.key_length}))[0];
    out << j.dump() << "\n";  // compact: one line
    return 0;
  }
  if (index.defined()) print_index(*scheme, index, o, out);
  else if (bias.defined()) print_bias(*scheme, bias, o, out);
  else if (input.defined()) print_function_input(*scheme, input, o, out);
  else out << o.position.scheme << ": " << kind_sentence(scheme->kind()) << "; it has no bias matrix.\n";
  return 0;
}

std::function<int()> add_bias_command(CLI::App& cmd) {
  auto o = std::make_shared<BiasOptions>();
  cmd.add_option("--scheme", o->position.scheme, join(nn::scheme_names(1), " | "));
  cmd.add_option("--heads", o->position.heads, "attention heads");
  cmd.add_flag("--causal", o->position.causal, "t5: causal buckets (bidirectional without this flag)");
  for (const nn::PositionOptionInfo& d : nn::position_option_table()) {
    if (!d.bias_flag) continue;
    const std::string help = join(nn::schemes_reading(d, 1), ", ") + ": " + d.doc;
    // Only integer and real options carry a bias flag (tests/test_position_options.cpp).
    if (const auto* i = std::get_if<int64_t nn::PositionOptions::*>(&d.member))
      cmd.add_option(nn::option_flag_name(d), o->position.**i, help);
    else
      cmd.add_option(nn::option_flag_name(d), o->position.*std::get<double nn::PositionOptions::*>(d.member), help);
  }
  cmd.add_option("--query-length", o->query_length, "number of queries (rows)");
  cmd.add_option("--key-length", o->key_length, "number of keys (columns)");
  cmd.add_option("--query-offset", o->query_offset, "position of the first query (a KV cache's length)");
  cmd.add_flag("--json", o->json, "print one JSON object");
  return [o] { return run_bias_command(*o, std::cout); };  // 2 on a bad option value
}

}  // namespace rpb
