#include "train/bias_cmd.h"

#include <charconv>
#include <cstdio>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "core/core.h"
#include "nn/position.h"

namespace rpb {

namespace {

const char* kind_name(nn::PositionKind k) {
  switch (k) {
    case nn::PositionKind::none: return "none";
    case nn::PositionKind::absolute: return "absolute";
    case nn::PositionKind::additive_bias: return "additive_bias";
    case nn::PositionKind::rotary: return "rotary";
  }
  return "?";
}

// The flag that sets the PositionOptions field a validation message names first ("t5: num_buckets 7 must
// be even ..." -> --num-buckets), so a usage error points at what the user typed.
std::string flag_for(const std::string& message) {
  static const std::vector<std::pair<std::string, std::string>> fields{
      {"num_buckets", "--num-buckets"}, {"max_distance", "--max-distance"},
      {"max_relative_position", "--max-relative-position"}, {"heads", "--heads"},
      {"lambda", "--lambda"}, {"scheme", "--scheme"}};
  std::size_t best = std::string::npos;
  std::string flag;
  for (const auto& [field, f] : fields) {
    const std::size_t at = message.find(field);
    if (at < best) {
      best = at;
      flag = f;
    }
  }
  return flag;
}

// Shortest text that reads back to the same double (JSON); -0 prints as 0.
std::string json_number(double x) {
  char buf[32];
  const auto r = std::to_chars(buf, buf + sizeof buf, x + 0.0);
  return std::string(buf, r.ptr);
}

std::string fixed4(double x) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%8.4f", x + 0.0);
  return buf;
}

// A (rows, cols) i64 matrix as [[a,b],[c,d]].
std::string json_matrix(const Tensor& m) {
  const auto v = m.to_vector();
  const int64_t rows = m.size(0), cols = m.size(1);
  std::string s = "[";
  for (int64_t r = 0; r < rows; ++r) {
    s += r ? ",[" : "[";
    for (int64_t c = 0; c < cols; ++c) {
      if (c) s += ',';
      s += std::to_string(static_cast<int64_t>(v[r * cols + c]));
    }
    s += "]";
  }
  return s + "]";
}

// A (heads, rows, cols) float tensor as [[[...]]].
std::string json_bias(const Tensor& b) {
  const auto v = b.to_vector();
  const int64_t heads = b.size(0), rows = b.size(1), cols = b.size(2);
  std::string s = "[";
  for (int64_t h = 0; h < heads; ++h) {
    s += h ? ",[" : "[";
    for (int64_t r = 0; r < rows; ++r) {
      s += r ? ",[" : "[";
      for (int64_t c = 0; c < cols; ++c) {
        if (c) s += ',';
        s += json_number(v[(h * rows + r) * cols + c]);
      }
      s += "]";
    }
    s += "]";
  }
  return s + "]";
}

std::string range(int64_t first, int64_t count) {
  return std::to_string(first) + ".." + std::to_string(first + count - 1);
}

}  // namespace

int run_bias_command(const BiasOptions& o, std::ostream& out, std::ostream& err) {
  const std::vector<std::tuple<const char*, int64_t, int64_t>> lengths{
      {"--query-length", o.query_length, 1}, {"--key-length", o.key_length, 1}, {"--query-offset", o.query_offset, 0}};
  for (const auto& [flag, value, least] : lengths)
    if (value < least) {
      err << "rpb bias: " << flag << " " << value << " must be at least " << least << "\n";
      return 2;
    }

  nn::PositionOptions po;
  po.scheme = o.scheme;
  po.heads = o.heads;
  po.causal = o.causal;
  po.num_buckets = o.num_buckets;
  po.max_distance = o.max_distance;
  po.max_relative_position = o.max_relative_position;
  po.lambda = o.lambda;
  // The dimensions of the embedding schemes do not change what is printed (they have no bias matrix).
  po.d_model = 64;
  po.head_dim = 64;

  std::shared_ptr<nn::PositionScheme> scheme;
  try {
    Generator gen(0);
    scheme = nn::make_position_scheme(po, gen);
  } catch (const Error& e) {
    const std::string msg = e.what();
    const std::string flag = flag_for(msg);
    err << "rpb bias: " << msg << (flag.empty() ? "" : " (set by " + flag + ")") << "\n";
    return 2;
  }
  // Print the fixed biases as computed in double: convert the scheme, then restore the full precision of
  // the buffers it built in float32 (lambda, the ALiBi slopes) from their definitions.
  scheme->to(DType::f64);
  for (const auto& [name, buffer] : scheme->named_buffers()) {
    if (o.scheme == "log_decay" && name == "lambda") buffer.fill_(o.lambda);
    if (o.scheme == "alibi" && name == "slopes")
      buffer.copy_(Tensor::from_vector<double>({o.heads}, nn::alibi_slopes(o.heads)));
  }

  const int64_t q = o.query_length, k = o.key_length, off = o.query_offset;
  const Tensor index = scheme->index(q, k, off);  // (q, k) i64 for t5 and shaw, else undefined
  const bool fixed_bias = scheme->kind() == nn::PositionKind::additive_bias && !scheme->learned();
  const Tensor bias = fixed_bias ? scheme->bias(q, k, off) : Tensor();  // (H, q, k)

  if (o.json) {
    out << "{\"scheme\":\"" << scheme->name() << "\",\"kind\":\"" << kind_name(scheme->kind()) << "\"";
    if (index.defined()) out << ",\"buckets\":" << json_matrix(index);
    if (bias.defined()) out << ",\"bias\":" << json_bias(bias);
    out << "}\n";
    return 0;
  }

  const std::string axes = "rows: queries " + range(off, q) + ", columns: keys " + range(0, k);
  if (index.defined()) {
    if (o.scheme == "t5")
      out << "t5 buckets of key - query (" << (o.causal ? "causal" : "bidirectional") << ", " << o.num_buckets
          << " buckets, max_distance " << o.max_distance << "; " << axes << "):\n";
    else
      out << "shaw index clip(key - query, -K, K) + K (K = " << o.max_relative_position << "; " << axes << "):\n";
    const auto v = index.to_vector();
    for (int64_t r = 0; r < q; ++r) {
      for (int64_t c = 0; c < k; ++c) {
        char buf[24];
        std::snprintf(buf, sizeof buf, "%4lld", static_cast<long long>(v[r * k + c]));
        out << buf;
      }
      out << "\n";
    }
    out << "Each index selects a row of the learned (" << (o.scheme == "t5" ? o.num_buckets : 2 * o.max_relative_position + 1)
        << ", heads) table; the bias values need a trained checkpoint.\n";
    return 0;
  }
  if (bias.defined()) {
    const auto v = bias.to_vector();
    const std::vector<double> slopes = o.scheme == "alibi" ? nn::alibi_slopes(o.heads) : std::vector<double>();
    out << o.scheme << " bias " << (o.scheme == "alibi" ? "-m_h * |i - j|" : "-lambda * log(1 + |i - j|)") << " ("
        << o.heads << (o.heads == 1 ? " head" : " heads") << "; " << axes << "):\n";
    for (int64_t h = 0; h < o.heads; ++h) {
      out << "head " << h << " (";
      if (o.scheme == "alibi")
        out << "slope " << json_number(slopes[h]);
      else
        out << "lambda " << json_number(o.lambda);
      out << "):\n";
      for (int64_t r = 0; r < q; ++r) {
        for (int64_t c = 0; c < k; ++c) out << fixed4(v[(h * q + r) * k + c]);
        out << "\n";
      }
    }
    return 0;
  }
  switch (scheme->kind()) {
    case nn::PositionKind::absolute:
      out << o.scheme << ": absolute position embeddings added to the token embeddings; it has no bias matrix.\n";
      break;
    case nn::PositionKind::rotary:
      out << o.scheme << ": rotary embeddings that rotate queries and keys by their positions; it has no bias matrix.\n";
      break;
    default:
      out << o.scheme << ": no position information; it has no bias matrix.\n";
      break;
  }
  return 0;
}

}  // namespace rpb
